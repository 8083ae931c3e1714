//! The queues into the control thread's IKE (issue 29 item 16): one for
//! UDP port 4500 (worker 0 hands over what came behind the non-ESP
//! marker), one for the RFC 9329 streams, one for notices (acquires,
//! reconnects). A flood on one fills only its own queue: NAT-T IKE still
//! gets through a TCP flood, and a reconnect notice is never crowded out
//! by messages. Each queue's drops are counted by name (`ctl stats`,
//! "ike_queue").
//!
//! ```text
//! worker 0 (UDP 4500) ─► udp     (256)  ─┐
//! stream thread       ─► stream  (256)  ─┼─► control: every notice, then
//! workers, streams    ─► notices (1024) ─┘   UDP and stream in turn
//! ```

use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;

use flowsec_ike::Transport;
use flowsec_ipsec::UdpEndpoints;

use super::stream::ConnId;
use crate::sys;

/// IKE datagrams from UDP 4500 waiting for the control thread; more are
/// dropped (`udp_full`; the peer retransmits).
const UDP_QUEUE: usize = 256;
/// IKE messages from the streams waiting for it (`stream_full`).
const STREAM_QUEUE: usize = 256;
/// Acquires and reconnects: few (an acquire per policy per second, a
/// reconnect per peer per second), and each matters (`notices_full`).
const NOTICE_QUEUE: usize = 1024;
/// The largest IKE message passed on (RFC 7296 §2: at least 1280 must be
/// accepted; strongSwan's default `max_packet` is 10000).
pub(crate) const MAX_MESSAGE: usize = 10_000;

/// What the workers and the stream thread tell the control thread.
pub(crate) enum IkeIn {
    /// A received IKE message, the non-ESP marker stripped; `conn` is the
    /// stream connection it came on (`None`: UDP).
    Message {
        transport: Transport,
        local: SocketAddr,
        remote: SocketAddr,
        data: Vec<u8>,
        conn: Option<ConnId>,
    },
    /// Traffic hit the (trap) policy of `reqid` and found no SA.
    Acquire { reqid: u32 },
    /// A TCP connection we originated is open again (RFC 9329 §6.1).
    Reconnected {
        local: SocketAddr,
        remote: SocketAddr,
    },
}

/// What the queues dropped, by queue.
#[derive(Debug, Default)]
pub struct IkeQueueCounters {
    /// UDP 4500 IKE messages dropped: their queue was full.
    pub udp_full: AtomicU64,
    /// Stream IKE messages dropped: their queue was full.
    pub stream_full: AtomicU64,
    /// Acquires and reconnect notices dropped: their queue was full.
    pub notices_full: AtomicU64,
}

impl IkeQueueCounters {
    /// Every counter by name.
    pub fn named(&self) -> Vec<(&'static str, u64)> {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        vec![
            ("udp_full", get(&self.udp_full)),
            ("stream_full", get(&self.stream_full)),
            ("notices_full", get(&self.notices_full)),
        ]
    }
}

/// The workers' and the stream thread's end.
#[derive(Clone)]
pub struct IkeSink {
    udp: SyncSender<IkeIn>,
    stream: SyncSender<IkeIn>,
    notices: SyncSender<IkeIn>,
    wake: Arc<OwnedFd>,
    counters: Arc<IkeQueueCounters>,
}

/// The control thread's end.
pub(crate) struct IkeQueues {
    udp: Receiver<IkeIn>,
    stream: Receiver<IkeIn>,
    notices: Receiver<IkeIn>,
    pub counters: Arc<IkeQueueCounters>,
}

/// The three queues; `wake` is written when something is queued.
pub(crate) fn channel(wake: Arc<OwnedFd>) -> (IkeSink, IkeQueues) {
    let (udp, udp_rx) = mpsc::sync_channel(UDP_QUEUE);
    let (stream, stream_rx) = mpsc::sync_channel(STREAM_QUEUE);
    let (notices, notices_rx) = mpsc::sync_channel(NOTICE_QUEUE);
    let counters = Arc::new(IkeQueueCounters::default());
    let sink = IkeSink {
        udp,
        stream,
        notices,
        wake,
        counters: Arc::clone(&counters),
    };
    let queues = IkeQueues {
        udp: udp_rx,
        stream: stream_rx,
        notices: notices_rx,
        counters,
    };
    (sink, queues)
}

impl IkeSink {
    /// A sink and the control thread's end of it, for tests.
    #[cfg(test)]
    pub(crate) fn for_tests() -> (IkeSink, IkeQueues) {
        channel(Arc::new(sys::eventfd().expect("eventfd")))
    }

    /// An IKE message that arrived on port 4500 behind the non-ESP marker
    /// (RFC 3948 §2.2; the core took the marker off): pass it on, unless it
    /// is empty or larger than any IKE message may be.
    pub fn message(&self, ike: &[u8], from: &UdpEndpoints) {
        if ike.is_empty() || ike.len() > MAX_MESSAGE {
            return;
        }
        let msg = IkeIn::Message {
            transport: Transport::Udp,
            local: from.local,
            remote: from.remote,
            data: ike.to_vec(),
            conn: None,
        };
        self.send(&self.udp, msg, &self.counters.udp_full);
    }

    /// An IKE message that arrived over `transport` on the stream
    /// connection `conn`, which IKE names `local`, `remote`.
    pub fn stream_message(
        &self,
        conn: ConnId,
        transport: Transport,
        (local, remote): (SocketAddr, SocketAddr),
        ike: &[u8],
    ) {
        if ike.is_empty() || ike.len() > MAX_MESSAGE {
            return;
        }
        let msg = IkeIn::Message {
            transport,
            local,
            remote,
            data: ike.to_vec(),
            conn: Some(conn),
        };
        self.send(&self.stream, msg, &self.counters.stream_full);
    }

    /// The TCP connection from `local` (port 0: ours) to `remote` that
    /// this host originated is open again after it broke.
    pub fn reconnected(&self, local: SocketAddr, remote: SocketAddr) {
        let msg = IkeIn::Reconnected { local, remote };
        self.send(&self.notices, msg, &self.counters.notices_full);
    }

    /// Traffic for the policy of `reqid` found no SA: ask IKE for one
    /// (the caller limits how often).
    pub fn acquire(&self, reqid: u32) {
        let msg = IkeIn::Acquire { reqid };
        self.send(&self.notices, msg, &self.counters.notices_full);
    }

    fn send(&self, queue: &SyncSender<IkeIn>, msg: IkeIn, full: &AtomicU64) {
        match queue.try_send(msg) {
            Ok(()) => sys::wake(self.wake.as_fd()),
            Err(TrySendError::Full(_)) => {
                full.fetch_add(1, Ordering::Relaxed);
            }
            // The control thread is gone: the daemon is going down.
            Err(TrySendError::Disconnected(_)) => {}
        }
    }
}

impl IkeQueues {
    /// What waits, in the order to handle it: every notice, then UDP and
    /// stream messages in turn, at most a queue's worth of each (neither
    /// starves the other); and whether more waits.
    pub fn take(&self) -> (Vec<IkeIn>, bool) {
        let mut got: Vec<IkeIn> = self.notices.try_iter().take(NOTICE_QUEUE).collect();
        let (mut udp_done, mut stream_done) = (false, false);
        // One more turn than a full queue holds: a queue that was full
        // is then seen empty, unless it filled again meanwhile.
        for _ in 0..=UDP_QUEUE.max(STREAM_QUEUE) {
            match self.udp.try_recv() {
                Ok(m) => got.push(m),
                Err(_) => udp_done = true,
            }
            match self.stream.try_recv() {
                Ok(m) => got.push(m),
                Err(_) => stream_done = true,
            }
            if udp_done && stream_done {
                return (got, false);
            }
        }
        (got, true)
    }

    /// The next thing queued, waiting up to `timeout` (tests).
    #[cfg(test)]
    pub fn recv_timeout(&self, timeout: std::time::Duration) -> Option<IkeIn> {
        let until = std::time::Instant::now() + timeout;
        loop {
            let next = self
                .notices
                .try_recv()
                .or_else(|_| self.udp.try_recv())
                .or_else(|_| self.stream.try_recv());
            if let Ok(m) = next {
                return Some(m);
            }
            if std::time::Instant::now() >= until {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn ends(port: u16) -> (SocketAddr, SocketAddr) {
        (
            SocketAddr::new(Ipv4Addr::new(192, 0, 2, 1).into(), 4500),
            SocketAddr::new(Ipv4Addr::new(198, 51, 100, 7).into(), port),
        )
    }

    /// Issue 29 item 16: a flood of stream IKE fills the stream queue
    /// only; IKE over UDP 4500 and a reconnect notice still get through,
    /// and every drop is counted by its queue's name.
    #[test]
    fn a_stream_flood_crowds_out_neither_nat_t_nor_notices() {
        let (sink, queues) = IkeSink::for_tests();
        for i in 0..(STREAM_QUEUE + 100) {
            let conn = ConnId::for_tests(i as u64);
            sink.stream_message(conn, Transport::Tcp, ends(40000), b"IKE_SA_INIT");
        }
        let (local, remote) = ends(4500);
        let from = UdpEndpoints {
            local,
            remote,
            tos: 0,
        };
        sink.message(b"NAT-T IKE", &from);
        sink.reconnected(local, remote);
        let named = queues.counters.named();
        assert_eq!(
            named,
            vec![("udp_full", 0), ("stream_full", 100), ("notices_full", 0)]
        );
        let (got, more) = queues.take();
        assert!(!more);
        assert_eq!(got.len(), STREAM_QUEUE + 2);
        // The notice first, and the UDP message with the first of the
        // stream's.
        assert!(matches!(got[0], IkeIn::Reconnected { .. }));
        assert!(matches!(
            &got[1],
            IkeIn::Message { transport: Transport::Udp, data, conn: None, .. } if data == b"NAT-T IKE"
        ));
    }

    /// One loop takes at most a queue's worth of each: a flood that
    /// keeps one full does not keep the control thread in `take`.
    #[test]
    fn one_take_is_bounded_and_says_more_waits() {
        let (sink, queues) = IkeSink::for_tests();
        for i in 0..STREAM_QUEUE {
            sink.stream_message(ConnId::for_tests(i as u64), Transport::Tcp, ends(1), b"x");
        }
        let (local, remote) = ends(4500);
        let from = UdpEndpoints {
            local,
            remote,
            tos: 0,
        };
        for _ in 0..UDP_QUEUE {
            sink.message(b"y", &from);
        }
        let (got, _) = queues.take();
        assert_eq!(got.len(), UDP_QUEUE + STREAM_QUEUE);
        let (again, more) = queues.take();
        assert!(again.is_empty() && !more);
    }
}
