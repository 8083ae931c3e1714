//! IKE and ESP over TCP and TLS (RFC 9329) on a thread of its own.
//!
//! ```text
//! workers ─► Out::Esp (batched) ─┐                      ┌─► worker (SPI mod N): Msg::Stream
//! control ─► Out::Ike ───────────┼─► stream thread ─────┤   (opened as ESP in UDP is)
//!                                │   conns, listeners,  └─► control: IKE messages, reconnects
//!                                │   TLS (rustls)
//! ```
//!
//! The thread owns every connection: the ones it opens for IKE SAs that
//! run over TCP (it is the TCP Originator, RFC 9329 §6.1, and reconnects
//! them when they break) and the ones it accepts on `--tcp-listen` ports.
//! A connection is named as IKE names its ends: (our address, port 0) and
//! the peer's listening address for one we opened, the two sockets'
//! addresses for one we accepted; ESP SAs over TCP carry the same pair
//! (`flowsec_ipsec::EncapTransport::Tcp`), so a sealed packet finds its
//! connection by its endpoints.
//!
//! Writes are batched: every frame queued since the last loop leaves with
//! one write (or one TLS flush) per connection. Nothing here blocks: a
//! worker whose batch finds the channel full drops it (`stream_full`), a
//! connection whose queue is past [`OUT_LIMIT`] drops ESP (`backpressure`).
//! Hostile input is bounded: at most [`MAX_QUIET`] accepted connections
//! that have not sent a valid frame, each closed after [`QUIET_FOR`];
//! every frame is at most 64 KiB (the length field), one held per
//! connection.

mod conn;
pub mod tls;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use flowsec_ike::Transport;
use flowsec_ipsec::UdpEndpoints;
use flowsec_wire::tcp_encap::{length_field, StreamError};
use flowsec_wire::udp_encap::{classify, UdpEncap, NON_ESP_MARKER};

use crate::ike::IkeSink;
use crate::routes::BYPASS_MARK;
use crate::sys::{self, tcp};
use crate::worker::{Mailbox, Msg};
use conn::{Closed, Conn, Phase};
use tls::TlsConfigs;

/// Batches from the workers and messages from IKE waiting for the thread.
const QUEUE: usize = 1024;
/// Framed bytes a connection may hold unwritten; ESP beyond is dropped.
const OUT_LIMIT: usize = 4 << 20;
/// IKE messages are kept up to this (they are few and must not be lost
/// to a burst of ESP).
const OUT_LIMIT_IKE: usize = OUT_LIMIT + (1 << 20);
/// Accepted connections that have not yet sent a well-formed frame.
const MAX_QUIET: usize = 256;
/// Accepted connections in all: a frame that looks like ESP is enough to
/// leave the quiet ones (its ICV is checked by a worker, later), so this
/// bounds the rest.
const MAX_ACCEPTED: usize = 1024;
/// How long such a connection (or a connect, or a TLS handshake, in
/// progress) may stay quiet.
const QUIET_FOR: Duration = Duration::from_secs(10);
/// Accepted connections from one address.
const MAX_PER_ADDRESS: usize = 32;
/// An accepted connection that has read no frame for this long is closed
/// (the originator opens a new one when it has something to send; DPD
/// below this keeps an idle tunnel's connection).
const IDLE_FOR: Duration = Duration::from_secs(300);
/// How long the listeners rest after accept(2) failed (no descriptors).
const ACCEPT_PAUSE: Duration = Duration::from_millis(200);
/// Most bytes read from one connection per loop.
const READ_BUDGET: usize = 1 << 20;
/// A lost connection is opened again if it carried something this
/// recently; else at the next thing to send.
const REDIAL_IF_USED: Duration = Duration::from_secs(30);
/// Between two connects to one peer.
const REDIAL_EVERY: Duration = Duration::from_secs(1);

/// The counters of the stream thread (`flowsec ctl stats`, "tcp").
macro_rules! stream_counters {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// What the stream thread counted.
        #[derive(Debug, Default)]
        pub struct StreamCounters {
            $($(#[$doc])* pub $name: AtomicU64,)*
        }

        impl StreamCounters {
            /// Every counter by name.
            pub fn named(&self) -> Vec<(&'static str, u64)> {
                vec![$((stringify!($name), self.$name.load(Ordering::Relaxed))),*]
            }
        }
    };
}

stream_counters! {
    /// Connections accepted on a `--tcp-listen` port.
    accepted,
    /// Connections we opened (first connects and reconnects).
    connected,
    /// Connects that failed or timed out.
    connect_failed,
    /// Connections closed: by the peer, broken, or by us.
    closed,
    /// Accepted connections closed at once: [`MAX_QUIET`] quiet ones, or
    /// [`MAX_ACCEPTED`] in all, were open already.
    refused,
    /// Closed: quiet (no frame yet, or no connect, or no TLS handshake)
    /// for [`QUIET_FOR`], or accepted and idle for [`IDLE_FOR`].
    quiet_closed,
    /// Closed: the stream did not begin with "IKETCP" (RFC 9329 §4).
    bad_prefix,
    /// Closed: a frame length of 0 or 1 (§3: fatal).
    bad_length,
    /// Closed: the TLS layer refused the peer's bytes.
    tls_failed,
    /// Frames that are neither IKE, ESP nor a keepalive (too short).
    bad_frame,
    /// Empty frames (length 2) and NAT-keepalives: ignored (§3, §6.6).
    ignored,
    /// IKE messages read (to the control thread) and written.
    ike_in,
    ike_out,
    /// ESP packets read (to their worker) and written.
    esp_in,
    esp_out,
    /// ESP or IKE to send with no connection to its peer (a responder
    /// waits for the originator to reconnect): dropped.
    no_stream,
    /// ESP dropped: its connection's queue was full (the socket does not
    /// keep up).
    backpressure,
    /// ESP read for a worker whose mailbox was full: dropped.
    handoff_drops,
    /// Bytes read (the frames' messages), and written into the streams
    /// (with their length fields; TLS records aside).
    bytes_in,
    bytes_out,
}

/// What the workers and IKE hand the thread.
enum Out {
    /// Sealed ESP packets, each to the stream between its endpoints.
    Esp(Vec<(UdpEndpoints, Vec<u8>)>),
    /// An IKE message for the stream between `local` and `remote`.
    Ike {
        transport: Transport,
        local: SocketAddr,
        remote: SocketAddr,
        data: Vec<u8>,
    },
}

/// The way to the stream thread, for workers and the control thread.
#[derive(Clone)]
pub struct StreamSink {
    tx: SyncSender<Out>,
    /// IKE's own queue: a burst of ESP never crowds out its messages,
    /// which nothing resends over TCP.
    ike_tx: SyncSender<Out>,
    wake: Arc<OwnedFd>,
    counters: Arc<StreamCounters>,
}

impl StreamSink {
    /// A worker's sealed ESP packets of one loop; `Err` with the batch's
    /// size if the thread's queue is full (the packets are dropped).
    pub fn esp(&self, batch: Vec<(UdpEndpoints, Vec<u8>)>) -> Result<(), usize> {
        let n = batch.len();
        match self.tx.try_send(Out::Esp(batch)) {
            Ok(()) => {
                sys::wake(self.wake.as_raw_fd());
                Ok(())
            }
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => Err(n),
        }
    }

    /// An IKE message to send over the stream between `local` and
    /// `remote` (opened first if it is ours to open).
    pub fn ike(&self, transport: Transport, local: SocketAddr, remote: SocketAddr, data: Vec<u8>) {
        let out = Out::Ike {
            transport,
            local,
            remote,
            data,
        };
        if self.ike_tx.try_send(out).is_ok() {
            sys::wake(self.wake.as_raw_fd());
        }
    }

    /// The thread's counters.
    pub fn counters(&self) -> &StreamCounters {
        &self.counters
    }
}

/// The thread's end, before it starts.
pub struct StreamParts {
    rx: Receiver<Out>,
    ike_rx: Receiver<Out>,
    wake: Arc<OwnedFd>,
    counters: Arc<StreamCounters>,
    listeners: Vec<(TcpListener, u16)>,
    tls: TlsConfigs,
}

/// Open the listeners (`ports`, IPv4 and IPv6 where the host has it) and
/// the channel; the thread starts with [`StreamParts::spawn`].
pub fn open(ports: &[u16]) -> Result<(StreamSink, StreamParts), String> {
    let mut listeners = Vec::new();
    for &port in ports {
        for v6 in [false, true] {
            match tcp::tcp_listener(port, v6, BYPASS_MARK) {
                Ok(l) => listeners.push((l, port)),
                Err(e) if !v6 => return Err(format!("TCP port {port}: {e}")),
                Err(e) => tracing::warn!(target: "net", "TCP port {port} over IPv6: {e}"),
            }
        }
    }
    let tls = tls::configs()?;
    let (tx, rx) = mpsc::sync_channel(QUEUE);
    let (ike_tx, ike_rx) = mpsc::sync_channel(QUEUE);
    let wake = Arc::new(sys::eventfd().map_err(|e| format!("eventfd: {e}"))?);
    let counters = Arc::new(StreamCounters::default());
    let sink = StreamSink {
        tx,
        ike_tx,
        wake: Arc::clone(&wake),
        counters: Arc::clone(&counters),
    };
    Ok((
        sink,
        StreamParts {
            rx,
            ike_rx,
            wake,
            counters,
            listeners,
            tls,
        },
    ))
}

impl StreamParts {
    /// Start the thread: IKE messages go to `ike`, ESP to `workers` (by
    /// SPI, as the kernel steers ESP in UDP).
    pub fn spawn(
        self,
        ike: IkeSink,
        workers: Vec<Mailbox>,
        stop: Arc<AtomicBool>,
        start: Instant,
    ) -> std::io::Result<JoinHandle<()>> {
        let mut t = Streams {
            parts: self,
            ike,
            workers,
            conns: HashMap::new(),
            dialed: HashMap::new(),
            start,
            batches: Vec::new(),
            scratch: vec![0; 64 << 10],
            last_sweep: Duration::ZERO,
            accept_paused_until: Duration::ZERO,
        };
        std::thread::Builder::new()
            .name("flowsec-tcp".into())
            .spawn(move || t.run(&stop))
    }
}

/// A connection's name: our address, the peer's socket address.
type Key = (IpAddr, SocketAddr);

/// A peer we originate a stream to.
struct Dialed {
    transport: Transport,
    /// Something was queued for it last at.
    used: Duration,
    /// Last connect started at.
    tried: Duration,
    /// A connection to it broke, or a connect failed, since the last one
    /// opened: what IKE queued meanwhile is lost, so the next one that
    /// opens is a reconnect, which IKE is told of (it resends, §6.2).
    lost: bool,
}

struct Streams {
    parts: StreamParts,
    ike: IkeSink,
    workers: Vec<Mailbox>,
    conns: HashMap<Key, Conn>,
    dialed: HashMap<Key, Dialed>,
    start: Instant,
    /// ESP read this loop, per worker.
    batches: Vec<Vec<(UdpEndpoints, Vec<u8>)>>,
    scratch: Vec<u8>,
    last_sweep: Duration,
    /// accept(2) failed for want of descriptors: listeners rest until then.
    accept_paused_until: Duration,
}

fn count(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

impl Streams {
    fn run(&mut self, stop: &AtomicBool) {
        self.batches = vec![Vec::new(); self.workers.len().max(1)];
        let mut ready = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let mut fds: Vec<(i32, bool)> = vec![(self.parts.wake.as_raw_fd(), false)];
            let paused = self.start.elapsed() < self.accept_paused_until;
            // A listener that could not accept (no descriptors left) is
            // left out for a while: it would be readable, and poll would
            // spin (-1: poll ignores it).
            fds.extend(
                self.parts
                    .listeners
                    .iter()
                    .map(|(l, _)| (if paused { -1 } else { l.as_raw_fd() }, false)),
            );
            let keys: Vec<Key> = self.conns.keys().copied().collect();
            fds.extend(keys.iter().map(|k| {
                let c = &self.conns[k];
                (c.sock.as_raw_fd(), c.wants_write())
            }));
            if tcp::poll(&fds, 200, &mut ready).is_err() {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            let now = self.start.elapsed();
            if ready[0].read {
                sys::clear_wake(self.parts.wake.as_raw_fd());
            }
            self.take_out(now);
            let first = 1 + self.parts.listeners.len();
            for i in 0..self.parts.listeners.len() {
                if ready[1 + i].read {
                    self.accept(i, now);
                }
            }
            for (k, r) in keys.iter().zip(&ready[first..]) {
                if r.read || r.write || r.hup {
                    self.service(*k, *r, now);
                }
            }
            // Optimistic: what was queued this loop leaves now.
            let busy: Vec<Key> = self
                .conns
                .iter()
                .filter(|(_, c)| c.phase == Phase::Open && !c.out.is_empty())
                .map(|(k, _)| *k)
                .collect();
            for k in busy {
                self.flush(k);
            }
            self.deliver();
            if now >= self.last_sweep + Duration::from_secs(1) {
                self.last_sweep = now;
                self.sweep(now);
            }
        }
        // Going down: what IKE queued last (its DELETEs) still leaves.
        self.take_out(self.start.elapsed());
        let open: Vec<Key> = self.conns.keys().copied().collect();
        for k in open {
            self.flush(k);
        }
    }

    /// What the workers and IKE queued.
    fn take_out(&mut self, now: Duration) {
        // IKE's first: a message that opens a connection precedes the ESP
        // for it. At most a queue's worth a loop: workers that keep
        // filling it do not starve the reading side.
        let counters = Arc::clone(&self.parts.counters);
        let mut drained = false;
        for _ in 0..2 * QUEUE {
            let Some(out) = self
                .parts
                .ike_rx
                .try_recv()
                .ok()
                .or_else(|| self.parts.rx.try_recv().ok())
            else {
                drained = true;
                break;
            };
            match out {
                Out::Ike {
                    transport,
                    local,
                    remote,
                    data,
                } => {
                    let key = (local.ip(), remote);
                    if local.port() == 0 {
                        self.dialed
                            .entry(key)
                            .and_modify(|d| d.used = now)
                            .or_insert(Dialed {
                                transport,
                                used: now,
                                tried: Duration::ZERO,
                                lost: false,
                            });
                    }
                    let Some(c) = self.conn_for(key, now) else {
                        count(&counters.no_stream, 1);
                        continue;
                    };
                    let Some(len) = length_field(NON_ESP_MARKER.len() + data.len()) else {
                        continue;
                    };
                    if c.out.len() > OUT_LIMIT_IKE {
                        continue;
                    }
                    c.out.extend_from_slice(&len);
                    c.out.extend_from_slice(&NON_ESP_MARKER);
                    c.out.extend_from_slice(&data);
                    count(&counters.ike_out, 1);
                }
                Out::Esp(batch) => {
                    for (ep, packet) in batch {
                        let key = (ep.local.ip(), ep.remote);
                        if let Some(d) = self.dialed.get_mut(&key) {
                            d.used = now;
                        }
                        let Some(c) = self.conn_for(key, now) else {
                            count(&counters.no_stream, 1);
                            continue;
                        };
                        let Some(len) = length_field(packet.len()) else {
                            continue;
                        };
                        if c.out.len() > OUT_LIMIT {
                            count(&counters.backpressure, 1);
                            continue;
                        }
                        c.out.extend_from_slice(&len);
                        c.out.extend_from_slice(&packet);
                        count(&counters.esp_out, 1);
                    }
                }
            }
        }
        if !drained {
            // More waits: the next poll returns at once.
            sys::wake(self.parts.wake.as_raw_fd());
        }
    }

    /// The connection named `key`, opened now if it is ours to open
    /// (RFC 9329 §6.1: only the TCP Originator does) and not tried within
    /// [`REDIAL_EVERY`].
    fn conn_for(&mut self, key: Key, now: Duration) -> Option<&mut Conn> {
        if !self.conns.contains_key(&key) {
            let d = self.dialed.get_mut(&key)?;
            if d.tried != Duration::ZERO && now < d.tried + REDIAL_EVERY {
                return None;
            }
            d.tried = now.max(Duration::from_nanos(1));
            let transport = d.transport;
            let opened = tcp::tcp_connect(key.0, key.1, BYPASS_MARK).and_then(|sock| {
                Conn::originate(
                    sock,
                    SocketAddr::new(key.0, 0),
                    key.1,
                    transport,
                    &self.parts.tls,
                    now,
                )
            });
            match opened {
                Ok(c) => {
                    self.conns.insert(key, c);
                }
                Err(e) => {
                    count(&self.parts.counters.connect_failed, 1);
                    tracing::info!(target: "net", "tcp: connecting to {}: {e}", key.1);
                    if let Some(d) = self.dialed.get_mut(&key) {
                        d.lost = true;
                    }
                    return None;
                }
            }
        }
        self.conns.get_mut(&key)
    }

    fn accept(&mut self, i: usize, now: Duration) {
        let (listener, port) = &self.parts.listeners[i];
        let port = *port;
        loop {
            let (sock, peer) = match listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    // EMFILE, ENFILE, ENOBUFS: try again in a while.
                    count(&self.parts.counters.refused, 1);
                    self.accept_paused_until = now + ACCEPT_PAUSE;
                    return;
                }
            };
            let peer_ip = peer.ip().to_canonical();
            let accepted = self.conns.values().filter(|c| !c.originated);
            let (all, quiet, same) = accepted.fold((0, 0, 0), |(a, q, s), c| {
                let same = usize::from(c.remote.ip() == peer_ip);
                (a + 1, q + usize::from(!c.spoke), s + same)
            });
            if quiet >= MAX_QUIET
                || all >= MAX_ACCEPTED
                || same >= MAX_PER_ADDRESS
                || sock.set_nonblocking(true).is_err()
            {
                count(&self.parts.counters.refused, 1);
                continue;
            }
            let _ = sock.set_nodelay(true);
            let local = sock
                .local_addr()
                .map(|a| SocketAddr::new(a.ip().to_canonical(), port));
            let Ok(local) = local else { continue };
            let remote = SocketAddr::new(peer_ip, peer.port());
            let key = (local.ip(), remote);
            // One of ours to the same address and port (the peer connects
            // from its listening port): refused, never replaced.
            if self.conns.contains_key(&key) {
                count(&self.parts.counters.refused, 1);
                continue;
            }
            count(&self.parts.counters.accepted, 1);
            self.conns
                .insert(key, Conn::accepted(sock, local, remote, now));
        }
    }

    /// A connection that poll(2) says is ready.
    fn service(&mut self, key: Key, r: tcp::Ready, now: Duration) {
        let Some(c) = self.conns.get_mut(&key) else {
            return;
        };
        if c.phase == Phase::Connecting {
            if !(r.write || r.hup) {
                return;
            }
            if let Err(why) = c.connected() {
                count(&self.parts.counters.connect_failed, 1);
                return self.close(key, why);
            }
            count(&self.parts.counters.connected, 1);
            if let Some(d) = self.dialed.get_mut(&key) {
                if std::mem::take(&mut d.lost) {
                    // RFC 9329 §6.1: IKE speaks first on the new one.
                    self.ike.reconnected(c.local, c.remote);
                }
            }
        }
        if r.read || r.hup {
            let scratch = &mut self.scratch;
            // A connection that has sent no frame yet reads little: it
            // holds at most one partial frame until it has.
            let budget = if c.spoke { READ_BUDGET } else { 64 << 10 };
            if let Err(why) = c.read(scratch, budget, &self.parts.tls) {
                // Frames read before the end still count.
                self.frames(key, now);
                return self.close(key, why);
            }
            self.frames(key, now);
        }
        if self.conns.contains_key(&key) {
            self.flush(key);
        }
    }

    /// Hand on the frames a connection has read.
    fn frames(&mut self, key: Key, now: Duration) {
        let counters = Arc::clone(&self.parts.counters);
        let Some(c) = self.conns.get_mut(&key) else {
            return;
        };
        let workers = self.workers.len().max(1) as u32;
        let ignored_before = c.rx.empty;
        loop {
            let frame = match c.rx.next() {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) => {
                    let why = Closed::Framing(e);
                    return self.close(key, why);
                }
            };
            count(&counters.bytes_in, frame.len() as u64);
            c.last_frame = now;
            match classify(frame) {
                Ok(UdpEncap::Ike(msg)) => {
                    c.spoke = true;
                    count(&counters.ike_in, 1);
                    self.ike.message_on(c.transport, c.local, c.remote, msg);
                }
                Ok(UdpEncap::Esp(esp)) => {
                    c.spoke = true;
                    count(&counters.esp_in, 1);
                    let spi = u32::from_be_bytes([esp[0], esp[1], esp[2], esp[3]]);
                    let from = UdpEndpoints {
                        local: c.local,
                        remote: c.remote,
                        tos: 0,
                    };
                    self.batches[(spi % workers) as usize].push((from, esp.to_vec()));
                }
                Ok(UdpEncap::NatKeepalive) => count(&counters.ignored, 1),
                Err(_) => count(&counters.bad_frame, 1),
            }
        }
        count(&counters.ignored, c.rx.empty - ignored_before);
    }

    /// The ESP read this loop, to the workers that own its SAs.
    fn deliver(&mut self) {
        for (k, batch) in self.batches.iter_mut().enumerate() {
            if batch.is_empty() {
                continue;
            }
            let batch = std::mem::take(batch);
            let n = batch.len() as u64;
            if !self.workers[k].offer(Msg::Stream(batch)) {
                count(&self.parts.counters.handoff_drops, n);
            }
        }
    }

    fn flush(&mut self, key: Key) {
        let Some(c) = self.conns.get_mut(&key) else {
            return;
        };
        let before = c.out.len();
        let result = c.flush();
        let after = self.conns.get(&key).map_or(0, |c| c.out.len());
        count(
            &self.parts.counters.bytes_out,
            before.saturating_sub(after) as u64,
        );
        if let Err(why) = result {
            self.close(key, why);
        }
    }

    fn close(&mut self, key: Key, why: Closed) {
        let Some(c) = self.conns.remove(&key) else {
            return;
        };
        let counters = &self.parts.counters;
        count(&counters.closed, 1);
        match why {
            Closed::Broken => {}
            Closed::Tls => count(&counters.tls_failed, 1),
            Closed::Framing(StreamError::BadPrefix) => count(&counters.bad_prefix, 1),
            Closed::Framing(StreamError::BadLength) => count(&counters.bad_length, 1),
        }
        if c.originated {
            tracing::info!(target: "net", "tcp: connection to {} closed", c.remote);
            if let Some(d) = self.dialed.get_mut(&key) {
                d.lost = true;
            }
        }
    }

    /// Once a second: close quiet connections, and open again the ones
    /// we originated that broke while in use.
    fn sweep(&mut self, now: Duration) {
        let quiet: Vec<Key> = self
            .conns
            .iter()
            .filter(|(_, c)| {
                let starting =
                    c.phase == Phase::Connecting || c.handshaking() || (!c.originated && !c.spoke);
                (starting && now >= c.since + QUIET_FOR)
                    || (!c.originated && now >= c.last_frame + IDLE_FOR)
            })
            .map(|(k, _)| *k)
            .collect();
        for k in quiet {
            count(&self.parts.counters.quiet_closed, 1);
            self.close(k, Closed::Broken);
        }
        let lost: Vec<Key> = self
            .dialed
            .iter()
            .filter(|(k, d)| !self.conns.contains_key(k) && now < d.used + REDIAL_IF_USED)
            .map(|(k, _)| *k)
            .collect();
        for k in lost {
            let _ = self.conn_for(k, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::{Ipv4Addr, TcpStream};
    use std::sync::mpsc::Receiver;

    use super::*;
    use crate::ike::IkeIn;
    use crate::worker::Inbox;

    /// A stream thread on a free loopback port, talking to itself: it
    /// originates to its own listener. `None` (the test skips) where the
    /// sockets cannot be marked (SO_MARK needs CAP_NET_ADMIN).
    struct Rig {
        sink: StreamSink,
        ike: Receiver<IkeIn>,
        worker: Inbox,
        port: u16,
        stop: Arc<AtomicBool>,
        thread: Option<JoinHandle<()>>,
    }

    impl Rig {
        fn new() -> Option<Rig> {
            let port = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .ok()?
                .local_addr()
                .ok()?
                .port();
            let (sink, parts) = match open(&[port]) {
                Ok(x) => x,
                Err(e) => {
                    eprintln!("SKIP: stream thread test: {e} (needs CAP_NET_ADMIN for SO_MARK)");
                    return None;
                }
            };
            let (ike_sink, ike) = IkeSink::for_tests();
            let (mailbox, worker, _wake) = Mailbox::new().ok()?;
            let stop = Arc::new(AtomicBool::new(false));
            let thread = parts
                .spawn(ike_sink, vec![mailbox], Arc::clone(&stop), Instant::now())
                .ok()?;
            Some(Rig {
                sink,
                ike,
                worker,
                port,
                stop,
                thread: Some(thread),
            })
        }

        fn ends(&self) -> (SocketAddr, SocketAddr) {
            (
                SocketAddr::new(Ipv4Addr::LOCALHOST.into(), 0),
                SocketAddr::new(Ipv4Addr::LOCALHOST.into(), self.port),
            )
        }

        fn counter(&self, name: &str) -> u64 {
            let named = self.sink.counters().named();
            named
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(0, |(_, v)| *v)
        }
    }

    impl Drop for Rig {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::SeqCst);
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }

    /// IKE over the stream it opens, then ESP back to a worker by SPI.
    fn round_trip(transport: Transport) {
        let Some(rig) = Rig::new() else { return };
        let (local, remote) = rig.ends();
        let ike = b"an IKE message, not parsed here".to_vec();
        rig.sink.ike(transport, local, remote, ike.clone());
        let got = rig
            .ike
            .recv_timeout(Duration::from_secs(5))
            .expect("IKE arrives");
        let IkeIn::Message {
            transport: t,
            local: l,
            data,
            ..
        } = got
        else {
            panic!("not a message");
        };
        // The accepting side reports its own listening port, and how the
        // stream came (TLS sniffed from the first byte).
        assert_eq!((t, l.port(), data), (transport, rig.port, ike));
        let esp = [0x10, 0, 0, 1, 0, 0, 0, 7, 0xaa, 0xbb];
        let to = UdpEndpoints {
            local,
            remote,
            tos: 0,
        };
        rig.sink.esp(vec![(to, esp.to_vec())]).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match rig.worker.msgs.recv_timeout(Duration::from_millis(100)) {
                Ok(Msg::Stream(frames)) => {
                    assert_eq!(frames.len(), 1);
                    assert_eq!(frames[0].1, esp);
                    break;
                }
                Ok(_) => {}
                Err(_) => assert!(Instant::now() < deadline, "ESP never reached the worker"),
            }
        }
        assert_eq!((rig.counter("ike_out"), rig.counter("ike_in")), (1, 1));
        assert_eq!((rig.counter("esp_out"), rig.counter("esp_in")), (1, 1));
        assert_eq!(rig.counter("accepted"), 1);
    }

    #[test]
    fn ike_and_esp_over_tcp() {
        round_trip(Transport::Tcp);
    }

    #[test]
    fn ike_and_esp_over_tls() {
        round_trip(Transport::Tls);
    }

    #[test]
    fn a_wrong_prefix_is_closed_and_counted() {
        let Some(rig) = Rig::new() else { return };
        let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, rig.port)).unwrap();
        s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut b = [0u8; 1];
        let n = s.read(&mut b).unwrap_or(0);
        assert_eq!(n, 0, "closed by the thread");
        assert_eq!(rig.counter("bad_prefix"), 1);
    }
}
