//! The `engine` backend (ARCHITECTURE.md "Crypto provider"): ESP
//! transforms that run on another core, reached through a bounded request
//! queue, standing in for the look-aside crypto engines of study S4 (this
//! kernel has no AF_ALG).
//! A call copies the packet into a request, queues it, waits for the
//! engine thread to seal or open it with the inner transform, and copies
//! it back: the per-call cost of offload (two copies, two queue hops and a
//! thread wake-up each way) is real, so `flowsec speed --backend engine`
//! shows where offload loses to doing the work inline.

use std::cell::RefCell;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;
use std::thread;

use crate::esp::EspTransform;
use crate::CryptoError;

/// Requests the queue holds before a caller waits to enqueue.
const QUEUE: usize = 256;

#[derive(Clone, Copy)]
enum Op {
    Seal,
    Open,
}

/// What the engine sends back: the buffer, and how the operation went.
type Done = (Vec<u8>, Result<(), CryptoError>);

struct Job {
    transform: Arc<dyn EspTransform>,
    op: Op,
    seq: u64,
    esn: bool,
    data: Vec<u8>,
    reply: SyncSender<Done>,
}

/// One engine: a thread and its request queue. The thread ends when the
/// last handle (and every transform made through it) is gone.
pub struct Engine {
    queue: SyncSender<Job>,
}

impl Engine {
    /// Start an engine thread.
    pub fn start() -> Arc<Engine> {
        let (tx, rx) = mpsc::sync_channel::<Job>(QUEUE);
        thread::Builder::new()
            .name("flowsec-engine".into())
            .spawn(move || serve(rx))
            .expect("spawning the crypto engine thread");
        Arc::new(Engine { queue: tx })
    }

    /// `inner`, run on this engine.
    pub fn wrap(self: &Arc<Self>, inner: Box<dyn EspTransform>) -> Box<dyn EspTransform> {
        Box::new(EngineEsp {
            inner: Arc::from(inner),
            queue: self.queue.clone(),
        })
    }
}

fn serve(rx: Receiver<Job>) {
    while let Ok(mut job) = rx.recv() {
        // A transform that panics fails its call, not the engine: every
        // later caller would wait forever on a dead thread.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match job.op {
            Op::Seal => job.transform.seal(job.seq, job.esn, &mut job.data),
            Op::Open => job.transform.open(job.seq, job.esn, &mut job.data),
        }))
        .unwrap_or(Err(CryptoError::EngineGone));
        // A caller that went away does not stop the engine.
        let _ = job.reply.send((job.data, result));
    }
}

/// Per calling thread: the request buffer and the reply channel, reused.
struct Caller {
    data: Vec<u8>,
    reply: (SyncSender<Done>, Receiver<Done>),
}

thread_local! {
    static CALLER: RefCell<Option<Caller>> = const { RefCell::new(None) };
}

struct EngineEsp {
    inner: Arc<dyn EspTransform>,
    queue: SyncSender<Job>,
}

impl EngineEsp {
    fn call(&self, op: Op, seq: u64, esn: bool, packet: &mut [u8]) -> Result<(), CryptoError> {
        CALLER.with(|cell| {
            let mut slot = cell.borrow_mut();
            let caller = slot.get_or_insert_with(|| Caller {
                data: Vec::new(),
                reply: mpsc::sync_channel(1),
            });
            let mut data = std::mem::take(&mut caller.data);
            data.clear();
            data.extend_from_slice(packet);
            let job = Job {
                transform: Arc::clone(&self.inner),
                op,
                seq,
                esn,
                data,
                reply: caller.reply.0.clone(),
            };
            self.queue.send(job).map_err(|_| CryptoError::EngineGone)?;
            let (data, result) = caller.reply.1.recv().map_err(|_| CryptoError::EngineGone)?;
            packet.copy_from_slice(&data);
            caller.data = data;
            result
        })
    }
}

impl EspTransform for EngineEsp {
    fn iv_len(&self) -> usize {
        self.inner.iv_len()
    }

    fn block_len(&self) -> usize {
        self.inner.block_len()
    }

    fn icv_len(&self) -> usize {
        self.inner.icv_len()
    }

    fn encrypts(&self) -> bool {
        self.inner.encrypts()
    }

    fn seal(&self, seq: u64, esn: bool, packet: &mut [u8]) -> Result<(), CryptoError> {
        self.call(Op::Seal, seq, esn, packet)
    }

    fn open(&self, seq: u64, esn: bool, packet: &mut [u8]) -> Result<(), CryptoError> {
        self.call(Op::Open, seq, esn, packet)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EncrId, IntegId, Provider};

    /// The engine gives the same bytes as the inline transform, both ways,
    /// from several threads at once.
    #[test]
    fn engine_transforms_match_inline_ones() {
        let key = [7u8; 20];
        let inline = Provider::rustcrypto()
            .esp(EncrId::AES_GCM_16, &key, IntegId::NONE, &[])
            .unwrap();
        let engine = Provider::engine(Provider::rustcrypto());
        let offloaded = Arc::new(
            engine
                .esp(EncrId::AES_GCM_16, &key, IntegId::NONE, &[])
                .unwrap(),
        );
        assert_eq!(offloaded.icv_len(), inline.icv_len());
        let packet = |n: usize| -> Vec<u8> {
            // SPI, sequence, IV room, payload, room for the ICV.
            let mut p = vec![0u8; 8 + inline.iv_len() + n + 2 + inline.icv_len()];
            p[..4].copy_from_slice(&0x1001u32.to_be_bytes());
            p[7] = 1;
            let payload_at = 8 + inline.iv_len();
            for (i, b) in p[payload_at..payload_at + n].iter_mut().enumerate() {
                *b = i as u8;
            }
            p[payload_at + n + 1] = 4; // next header (padding length 0)
            p
        };
        let mut a = packet(100);
        let mut b = a.clone();
        inline.seal(1, false, &mut a).unwrap();
        offloaded.seal(1, false, &mut b).unwrap();
        assert_eq!(a, b);
        // Opened, the payload and trailer are back (IV and ICV stay).
        let plain = 8 + inline.iv_len()..b.len() - inline.icv_len();
        offloaded.open(1, false, &mut b).unwrap();
        assert_eq!(b[plain.clone()], packet(100)[plain]);
        // Forged: refused through the engine too.
        let mut forged = a.clone();
        *forged.last_mut().unwrap() ^= 1;
        assert!(offloaded.open(1, false, &mut forged).is_err());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let o = Arc::clone(&offloaded);
                let p = packet(64 + t);
                std::thread::spawn(move || {
                    let plain = 8 + o.iv_len()..p.len() - o.icv_len();
                    for seq in 1..200u64 {
                        let mut x = p.clone();
                        o.seal(seq, false, &mut x).unwrap();
                        o.open(seq, false, &mut x).unwrap();
                        assert_eq!(x[plain.clone()], p[plain.clone()]);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}
