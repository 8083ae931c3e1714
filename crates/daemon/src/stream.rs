//! IKE and ESP over TCP and TLS (RFC 9329) on a thread of its own.
//!
//! ```text
//! workers ─► Out::Esp (batched) ─┐                      ┌─► worker (SPI mod N): Msg::Stream
//! control ─► Out::Ike ───────────┼─► stream thread ─────┤   (opened as ESP in UDP is)
//!         ─► Out::Authenticated ─┘   conns, listeners,  └─► control: IKE messages (with
//!                                    TLS (rustls)            their connection), reconnects
//! ```
//!
//! The thread owns every connection: the ones it opens for IKE SAs that
//! run over TCP (it is the TCP Originator, RFC 9329 §6.1, and reconnects
//! them when they break) and the ones it accepts on `--tcp-listen` ports.
//! A connection is named as IKE names its ends: (our address, port 0) and
//! the peer's listening address for one we opened, the two sockets'
//! addresses for one we accepted; ESP SAs over TCP carry the same pair
//! (`flowsec_ipsec::EncapTransport::Tcp`), so a sealed packet finds its
//! connection by its endpoints. Each connection also has an id of its own
//! ([`ConnId`], never reused): an IKE message goes to the control thread
//! with it, and the answers come back to that connection only. Traffic
//! found by its endpoints goes to an accepted connection only once IKE has
//! authenticated a message on it (`Out::Authenticated`): a new connection
//! that reuses a closed one's address and port (a carrier-grade NAT) gets
//! none of the old one's SA traffic (issue 29 item 12).
//!
//! Writes are batched: every frame queued since the last loop leaves with
//! one write (or one TLS flush) per connection. Nothing here blocks: a
//! worker whose batch finds the channel full drops it (`stream_full`), a
//! connection whose queue is past [`OUT_LIMIT`] drops ESP (`backpressure`).
//!
//! Hostile input is bounded (issue 29 items 2 and 3): accepted connections
//! hold slots (`slots.rs`: the unauthenticated ones closed after seconds,
//! the oldest pushed out by a newcomer when all are taken, a limit per
//! address or IPv6 /64); every frame is at most 64 KiB (the length field),
//! one held per connection; a connection whose queued output (rustls'
//! included) is past its watermark is not read until it drains, the
//! unauthenticated ones at a small one, and all of these together within
//! [`UNPROVEN_BUDGET`] (and every connection within [`BUDGET`]), so a
//! peer that writes requests and never reads the answers holds little.

mod conn;
mod serve;
mod slots;
pub mod tls;

use core::fmt;
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use flowsec_ike::Transport;
use flowsec_ipsec::UdpEndpoints;
use flowsec_wire::tcp_encap::length_field;
use flowsec_wire::udp_encap::NON_ESP_MARKER;

use crate::channels::{
    count, stream_channel, ConnId, IkeSink, Mailbox, Out, StreamQueues, StreamSink,
    STREAM_QUEUE as QUEUE,
};
use crate::routes::BYPASS_MARK;
use crate::sys::{self, tcp};
use conn::{Conn, Phase};
use slots::Slots;
use tls::{TlsConfigs, TlsError};

/// Framed bytes a connection may hold unwritten; ESP beyond is dropped.
const OUT_LIMIT: usize = 4 << 20;
/// IKE messages are kept up to this (they are few and must not be lost
/// to a burst of ESP).
const OUT_LIMIT_IKE: usize = OUT_LIMIT + (1 << 20);
/// An unauthenticated connection: IKE queued up to this, no more.
const OUT_LIMIT_UNPROVEN: usize = 64 << 10;
/// A connection whose queued output is past this is not read until it
/// drains (what its peer sends waits in the kernel, under TCP's flow
/// control); an unauthenticated one past the second.
const WATERMARK: usize = 1 << 20;
const WATERMARK_UNPROVEN: usize = 16 << 10;
/// Bytes queued on all connections: past it, ESP is dropped.
const BUDGET: usize = 128 << 20;
/// Bytes queued on the unauthenticated ones: past it they are not read
/// and get no more IKE queued.
const UNPROVEN_BUDGET: usize = 16 << 20;
/// How long a connect, or a TLS handshake, may take.
const QUIET_FOR: Duration = Duration::from_secs(10);
/// How long the listeners rest after accept(2) failed (no descriptors).
const ACCEPT_PAUSE: Duration = Duration::from_millis(200);
/// Most bytes read from one connection per loop; from an unauthenticated
/// one, the second.
const READ_BUDGET: usize = 1 << 20;
const READ_BUDGET_UNPROVEN: usize = 16 << 10;
/// A lost connection is opened again if it carried something this
/// recently; else at the next thing to send.
const REDIAL_IF_USED: Duration = Duration::from_secs(30);
/// Between two connects to one peer.
const REDIAL_EVERY: Duration = Duration::from_secs(1);

/// Why IKE and ESP over TCP (RFC 9329) could not be set up.
#[derive(Debug)]
#[non_exhaustive]
pub enum StreamSetupError {
    /// A port could not be listened on over IPv4.
    Listen {
        /// The port.
        port: u16,
        /// Why.
        error: io::Error,
    },
    /// The TLS settings could not be made.
    Tls(TlsError),
    /// The thread's eventfd could not be made.
    Eventfd(io::Error),
    /// The thread could not be started.
    Spawn(io::Error),
}

impl fmt::Display for StreamSetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamSetupError::Listen { port, error } => write!(f, "TCP port {port}: {error}"),
            StreamSetupError::Tls(e) => e.fmt(f),
            StreamSetupError::Eventfd(e) => write!(f, "eventfd: {e}"),
            StreamSetupError::Spawn(e) => write!(f, "starting its thread: {e}"),
        }
    }
}

impl std::error::Error for StreamSetupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StreamSetupError::Listen { error: e, .. }
            | StreamSetupError::Eventfd(e)
            | StreamSetupError::Spawn(e) => Some(e),
            StreamSetupError::Tls(e) => Some(e),
        }
    }
}

/// The thread's end, before it starts.
pub struct StreamParts {
    queues: StreamQueues,
    listeners: Vec<(TcpListener, u16)>,
    tls: TlsConfigs,
}

/// Open the listeners (`ports`, IPv4 and IPv6 where the host has it) and
/// the channel; the thread starts with [`StreamParts::spawn`].
pub fn open(ports: &[u16]) -> Result<(StreamSink, StreamParts), StreamSetupError> {
    let mut listeners = Vec::new();
    for &port in ports {
        for v6 in [false, true] {
            match tcp::tcp_listener(port, v6, BYPASS_MARK) {
                Ok(l) => listeners.push((l, port)),
                Err(error) if !v6 => return Err(StreamSetupError::Listen { port, error }),
                Err(e) => tracing::warn!(target: "net", "TCP port {port} over IPv6: {e}"),
            }
        }
    }
    let tls = tls::configs().map_err(StreamSetupError::Tls)?;
    let wake = Arc::new(sys::eventfd().map_err(StreamSetupError::Eventfd)?);
    let (sink, queues) = stream_channel(wake);
    Ok((
        sink,
        StreamParts {
            queues,
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
            names: HashMap::new(),
            next_id: ConnId::FIRST,
            slots: Slots::default(),
            dialed: HashMap::new(),
            start,
            batches: Vec::new(),
            scratch: vec![0; 64 << 10],
            last_sweep: Duration::ZERO,
            accept_paused_until: Duration::ZERO,
            queued: 0,
            queued_unproven: 0,
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
    conns: HashMap<ConnId, Conn>,
    /// The connection open now under each name (at most one: TCP's
    /// four-tuple is unique while it is open).
    names: HashMap<Key, ConnId>,
    next_id: ConnId,
    /// The accepted connections' slots (`slots.rs`).
    slots: Slots,
    dialed: HashMap<Key, Dialed>,
    start: Instant,
    /// ESP read this loop, per worker.
    batches: Vec<Vec<(UdpEndpoints, Vec<u8>)>>,
    scratch: Vec<u8>,
    last_sweep: Duration,
    /// accept(2) failed for want of descriptors: listeners rest until then.
    accept_paused_until: Duration,
    /// Output queued on all connections, and on the unauthenticated ones
    /// (as of the loop's start, plus what was queued since).
    queued: usize,
    queued_unproven: usize,
}

impl Streams {
    fn run(&mut self, stop: &AtomicBool) {
        self.batches = vec![Vec::new(); self.workers.len().max(1)];
        let mut ready = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            self.account();
            let wake = self.parts.queues.wake.as_raw_fd();
            let mut fds = vec![tcp::Interest {
                fd: wake,
                read: true,
                write: false,
            }];
            let paused = self.start.elapsed() < self.accept_paused_until;
            // A listener that could not accept (no descriptors left) is
            // left out for a while: it would be readable, and poll would
            // spin (-1: poll ignores it).
            fds.extend(self.parts.listeners.iter().map(|(l, _)| tcp::Interest {
                fd: if paused { -1 } else { l.as_raw_fd() },
                read: true,
                write: false,
            }));
            let ids: Vec<ConnId> = self.conns.keys().copied().collect();
            fds.extend(ids.iter().map(|id| self.interest(*id)));
            if tcp::poll(&fds, 200, &mut ready).is_err() {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            let now = self.start.elapsed();
            if ready[0].read {
                sys::clear_wake(self.parts.queues.wake.as_fd());
            }
            self.take_out(now);
            let first = 1 + self.parts.listeners.len();
            for i in 0..self.parts.listeners.len() {
                if ready[1 + i].read {
                    self.accept(i, now);
                }
            }
            for (id, r) in ids.iter().zip(&ready[first..]) {
                if r.read || r.write || r.hup {
                    self.service(*id, *r, now);
                }
            }
            // Optimistic: what was queued this loop leaves now.
            let busy: Vec<ConnId> = self
                .conns
                .iter()
                .filter(|(_, c)| c.phase == Phase::Open && !c.out.is_empty())
                .map(|(id, _)| *id)
                .collect();
            for id in busy {
                self.flush(id);
            }
            self.deliver();
            if now >= self.last_sweep + Duration::from_secs(1) {
                self.last_sweep = now;
                self.sweep(now);
            }
        }
        // Going down: what IKE queued last (its DELETEs) still leaves.
        self.take_out(self.start.elapsed());
        let open: Vec<ConnId> = self.conns.keys().copied().collect();
        for id in open {
            self.flush(id);
        }
    }

    /// Whether a connection is ours or its peer authenticated: its
    /// traffic may come and go in bulk.
    fn trusted(&self, c: &Conn) -> bool {
        c.originated || self.slots.proven(c.id)
    }

    /// Count what is queued now (issue 29 item 2's budgets).
    fn account(&mut self) {
        let (mut all, mut unproven) = (0, 0);
        for c in self.conns.values() {
            all += c.queued();
            if !self.trusted(c) {
                unproven += c.queued();
            }
        }
        (self.queued, self.queued_unproven) = (all, unproven);
    }

    /// What to poll connection `id` for: read unless its output backs up
    /// (past its watermark, or the unauthenticated ones' budget spent by
    /// it among others: one with nothing queued is read, so a flood that
    /// spends the budget does not lock out a newcomer).
    fn interest(&self, id: ConnId) -> tcp::Interest {
        let c = &self.conns[&id];
        let read = match self.trusted(c) {
            true => c.queued() <= WATERMARK,
            false => {
                c.queued() == 0
                    || (c.queued() <= WATERMARK_UNPROVEN && self.queued_unproven <= UNPROVEN_BUDGET)
            }
        };
        if !read && !c.read_paused.replace(true) {
            count(&self.parts.queues.counters.read_paused, 1);
        }
        if read {
            c.read_paused.set(false);
        }
        tcp::Interest {
            fd: c.sock.as_raw_fd(),
            read,
            write: c.wants_write(),
        }
    }

    /// What the workers and IKE queued.
    fn take_out(&mut self, now: Duration) {
        // IKE's first: a message that opens a connection precedes the ESP
        // for it. At most a queue's worth a loop: workers that keep
        // filling it do not starve the reading side.
        let mut drained = false;
        for _ in 0..2 * QUEUE {
            let Some(out) = self
                .parts
                .queues
                .ike_rx
                .try_recv()
                .ok()
                .or_else(|| self.parts.queues.rx.try_recv().ok())
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
                    conn,
                } => self.take_ike(transport, (local, remote), data, conn, now),
                Out::Authenticated(id) => self.prove(id),
                Out::Esp(batch) => {
                    for (ep, packet) in batch {
                        let key = (ep.local.ip(), ep.remote);
                        if let Some(d) = self.dialed.get_mut(&key) {
                            d.used = now;
                        }
                        if let Some(id) = self.route(key, now) {
                            self.queue_esp(id, &packet);
                        }
                    }
                }
            }
        }
        if !drained {
            // More waits: the next poll returns at once.
            sys::wake(self.parts.queues.wake.as_fd());
        }
    }

    /// An IKE message from the control thread: on the connection it
    /// answers, or on the one that carries the pair's traffic.
    fn take_ike(
        &mut self,
        transport: Transport,
        (local, remote): (SocketAddr, SocketAddr),
        data: Vec<u8>,
        conn: Option<ConnId>,
        now: Duration,
    ) {
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
        let id = match conn {
            Some(id) if self.conns.contains_key(&id) => Some(id),
            // Closed since: its answer is for no one else (a new
            // connection under the same name is another peer's).
            Some(_) => {
                count(&self.parts.queues.counters.no_stream, 1);
                None
            }
            None => self.route(key, now),
        };
        if let Some(id) = id {
            self.queue_ike(id, &data);
        }
    }

    /// IKE authenticated a message on `id`: an accepted connection is
    /// established from now on.
    fn prove(&mut self, id: ConnId) {
        if self.slots.prove(id) {
            count(&self.parts.queues.counters.authenticated, 1);
            if let Some(c) = self.conns.get_mut(&id) {
                c.proven();
            }
        }
    }

    /// The connection that carries the traffic named `key`: ours (opened
    /// now if need be, RFC 9329 §6.1), or an accepted one whose peer
    /// authenticated on it; `None` (counted) if there is none.
    fn route(&mut self, key: Key, now: Duration) -> Option<ConnId> {
        if let Some(&id) = self.names.get(&key) {
            if self.trusted(&self.conns[&id]) {
                return Some(id);
            }
            count(&self.parts.queues.counters.not_authenticated, 1);
            return None;
        }
        let id = self.dial(key, now);
        if id.is_none() {
            count(&self.parts.queues.counters.no_stream, 1);
        }
        id
    }

    /// Frame an IKE message onto connection `id`, unless its queue, or
    /// the unauthenticated ones' budget, is spent.
    fn queue_ike(&mut self, id: ConnId, data: &[u8]) {
        let Some(len) = length_field(NON_ESP_MARKER.len() + data.len()) else {
            return;
        };
        let trusted = self.trusted(&self.conns[&id]);
        let counters = &self.parts.queues.counters;
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        let limit = if trusted {
            OUT_LIMIT_IKE
        } else {
            OUT_LIMIT_UNPROVEN
        };
        if c.queued() > limit {
            return count(&counters.ike_backpressure, 1);
        }
        // Over the budget, a connection with nothing queued still gets its
        // answer (one message each: bounded by the slots).
        if !trusted && self.queued_unproven > UNPROVEN_BUDGET && c.queued() > 0 {
            return count(&counters.over_budget, 1);
        }
        let n = len.len() + NON_ESP_MARKER.len() + data.len();
        c.out.extend_from_slice(&len);
        c.out.extend_from_slice(&NON_ESP_MARKER);
        c.out.extend_from_slice(data);
        self.queued += n;
        if !trusted {
            self.queued_unproven += n;
        }
        count(&counters.ike_out, 1);
    }

    /// Frame an ESP packet onto connection `id` (one that carries its
    /// SA's traffic), unless its queue or the budget is spent.
    fn queue_esp(&mut self, id: ConnId, packet: &[u8]) {
        let counters = &self.parts.queues.counters;
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        let Some(len) = length_field(packet.len()) else {
            return;
        };
        if c.queued() > OUT_LIMIT {
            return count(&counters.backpressure, 1);
        }
        if self.queued > BUDGET {
            return count(&counters.over_budget, 1);
        }
        c.out.extend_from_slice(&len);
        c.out.extend_from_slice(packet);
        self.queued += len.len() + packet.len();
        count(&counters.esp_out, 1);
    }
}

#[cfg(test)]
mod tests;
