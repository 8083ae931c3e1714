//! One worker (DESIGN.md "Data path"): its own TUN queue, raw ESP/AH
//! receivers that the kernel filters down to the SPIs this worker owns, its
//! socket in the UDP 4500 reuseport group, its own send sockets, and its
//! own copy of the SAD and SPD. It runs each packet through the sans-I/O
//! core; this is where the clock is read (the core takes `now`).
//!
//! Ownership, so that no SA state is ever shared between threads:
//! - inbound, worker `spi % n` owns an SA: the kernel steers its packets
//!   there ([`crate::steer`]), so its replay window has one writer;
//! - outbound, one worker owns all SAs between a pair of endpoints
//!   ([`owner_of_endpoints`]), so a sequence number (and with it a GCM or
//!   ChaCha nonce) is never used twice. A packet read from another
//!   worker's TUN queue is handed to the owner through its mailbox.
//!
//! Workers never wait on the control plane: configuration changes and
//! requests for counters arrive as messages, taken between batches.

use core::fmt;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use flowsec_ipsec::buf::{DEFAULT_HEADROOM, DEFAULT_TAILROOM};
use flowsec_ipsec::process::{self, Inbound};
use flowsec_ipsec::spd::SaTemplate;
use flowsec_ipsec::{Action, Direction, DropCounters, DropReason, Flow, PacketBuf, SaId, SaStats};
use flowsec_setkey::SaLive;
use flowsec_wire::iana::IpProtocol;
use flowsec_wire::ip::IpVersion;
use flowsec_wire::ipv4::{self, Ipv4Packet, Ipv4Repr};
use flowsec_wire::ipv6::{self, Ipv6Packet, Ipv6Repr};
use flowsec_wire::udp::{self, UdpPacket, UdpRepr};

use crate::apply::{apply_to, Databases, WorkerChange};
use crate::offload::{self, Coalescer, VnetHdr, VNET_HDR_LEN};
use crate::steer::{self, RawKind};
use crate::sys;

/// Packets taken from one source before looking at the others.
const BATCH: usize = 64;
/// The UDP port of ESP in UDP (RFC 3948 §2.1; the IKE NAT-T port).
pub const NAT_T_PORT: u16 = 4500;
/// Receive buffer of the raw and UDP sockets: room for a burst of ~5000
/// MTU-sized packets while the worker is busy with the TUN side.
const RECV_BUFFER: usize = 8 << 20;
/// How long a poll waits before checking for shutdown.
const POLL_MS: i32 = 200;
/// Messages a mailbox holds; a handoff to a full one is dropped (counted).
const MAILBOX: usize = 1024;
/// Spare handoff buffers a worker keeps.
const POOL: usize = 256;

/// Counters of one worker.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    /// Packets protected and sent.
    pub sent: u64,
    /// Packets received, verified and delivered to the TUN device.
    pub delivered: u64,
    /// Link-scope or multicast packets from the TUN device that no policy
    /// covers (router solicitations, MLD): dropped.
    pub no_policy: u64,
    /// Packets from the TUN device sent on in the clear: a BYPASS policy
    /// covers them, or no policy does (setkey's default). They were routed
    /// into the TUN by a wider PROTECT or DISCARD route.
    pub bypassed: u64,
    /// Outbound packets whose outer family this host cannot send.
    pub unsupported_outer: u64,
    /// Outbound packets passed to the worker that owns their SAs.
    pub handed_off: u64,
    /// Handoffs refused: the owner's mailbox was full, or the packet did
    /// not fit a handoff buffer.
    pub handoff_drops: u64,
    /// TCP super-packets read from the TUN device and cut into segments.
    pub tso_in: u64,
    /// TCP super-packets written to the TUN device (coalesced segments).
    pub gro_out: u64,
    /// Packets from the TUN device whose offload header or partial
    /// checksum could not be handled.
    pub offload_errors: u64,
    /// Send or TUN-write errors.
    pub io_errors: u64,
    /// Drops by named reason.
    pub drops: DropCounters,
}

impl Stats {
    /// Add `other`'s counts to these.
    pub fn add(&mut self, other: &Stats) {
        self.sent += other.sent;
        self.delivered += other.delivered;
        self.no_policy += other.no_policy;
        self.bypassed += other.bypassed;
        self.unsupported_outer += other.unsupported_outer;
        self.handed_off += other.handed_off;
        self.handoff_drops += other.handoff_drops;
        self.tso_in += other.tso_in;
        self.gro_out += other.gro_out;
        self.offload_errors += other.offload_errors;
        self.io_errors += other.io_errors;
        self.drops.add(&other.drops);
    }

    /// The plain counters by name (drops apart).
    pub fn named(&self) -> [(&'static str, u64); 11] {
        [
            ("sent", self.sent),
            ("delivered", self.delivered),
            ("no_policy", self.no_policy),
            ("bypassed", self.bypassed),
            ("unsupported_outer", self.unsupported_outer),
            ("handed_off", self.handed_off),
            ("handoff_drops", self.handoff_drops),
            ("tso_in", self.tso_in),
            ("gro_out", self.gro_out),
            ("offload_errors", self.offload_errors),
            ("io_errors", self.io_errors),
        ]
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} sent, {} delivered", self.sent, self.delivered)?;
        for (name, n) in self.named().into_iter().skip(2) {
            if n != 0 {
                write!(f, ", {name}={n}")?;
            }
        }
        for (reason, n) in self.drops.nonzero() {
            write!(f, ", {reason}={n}")?;
        }
        Ok(())
    }
}

/// One SA as a worker sees it.
#[derive(Debug, Clone)]
pub struct SaReport {
    /// Which SA.
    pub id: SaId,
    /// Sequence number, state, age, traffic.
    pub live: SaLive,
    /// Drops by this SA.
    pub stats: SaStats,
    /// Anti-replay window size.
    pub replay_window: u32,
}

/// A worker's answer to [`Msg::Report`].
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Its counters.
    pub stats: Stats,
    /// Its copy of each SA.
    pub sas: Vec<SaReport>,
}

/// What a worker is sent.
pub enum Msg {
    /// Apply these changes, in order, at once.
    Apply(Vec<WorkerChange>),
    /// Send a [`Report`] back.
    Report(mpsc::Sender<Report>),
    /// An outbound packet read by worker `from` for SAs this one owns.
    Packet { buf: PacketBuf, from: usize },
    /// A handoff buffer coming back to its worker, for reuse.
    Recycle(PacketBuf),
}

/// The way to reach one worker.
#[derive(Clone)]
pub struct Mailbox {
    tx: SyncSender<Msg>,
    wake: Arc<OwnedFd>,
}

impl Mailbox {
    /// A mailbox and the receiving end for the worker.
    pub fn new() -> std::io::Result<(Mailbox, Receiver<Msg>, Arc<OwnedFd>)> {
        let (tx, rx) = mpsc::sync_channel(MAILBOX);
        let wake = Arc::new(sys::eventfd()?);
        Ok((
            Mailbox {
                tx,
                wake: Arc::clone(&wake),
            },
            rx,
            wake,
        ))
    }

    /// Deliver `msg`, waiting while the mailbox is full (control plane
    /// only: the worker drains its mailbox on every loop), and wake the
    /// worker. False if the worker is gone.
    pub fn send(&self, msg: Msg) -> bool {
        let sent = self.tx.send(msg).is_ok();
        self.wake();
        sent
    }

    /// Make the worker look at its mailbox.
    pub fn wake(&self) {
        sys::wake(self.wake.as_raw_fd());
    }
}

/// The descriptors of one worker.
pub struct Io {
    /// Every worker's TUN queue (this one reads `tuns[index]`), shared so
    /// that a decapsulated packet can be written into the queue of the
    /// worker that owns its replies; closed once all workers are gone.
    pub tuns: Arc<Vec<OwnedFd>>,
    /// The TUN device speaks virtio headers (see [`crate::offload`]).
    pub offload: bool,
    /// Raw receivers: (socket, IP version, protocol).
    pub raw: Vec<(OwnedFd, IpVersion, u8)>,
    /// This worker's socket of the UDP 4500 group (RFC 3948), if the port
    /// could be had.
    pub udp: Option<OwnedFd>,
    /// Likewise over IPv6.
    pub udp6: Option<OwnedFd>,
    pub send4: OwnedFd,
    /// `None` where the host has no IPv6.
    pub send6: Option<OwnedFd>,
}

impl Io {
    /// Open worker `index`'s descriptors (of `workers`); `udp` and `udp6`
    /// are its sockets of the 4500 groups, opened by the caller in worker
    /// order.
    pub fn open(
        tuns: Arc<Vec<OwnedFd>>,
        index: usize,
        workers: usize,
        udp: Option<OwnedFd>,
        udp6: Option<OwnedFd>,
        offload: bool,
    ) -> Result<Io, String> {
        let setup = |what: &str, e: std::io::Error| format!("{what}: {e}");
        let mut raw = Vec::new();
        let mut receiver = |kind: RawKind, version, protocol: u8| -> Result<(), String> {
            let fd = match version {
                IpVersion::V4 => sys::raw_receiver_v4(protocol),
                IpVersion::V6 => sys::raw_receiver_v6(protocol),
            }
            .map_err(|e| setup("raw receive socket", e))?;
            if workers > 1 {
                sys::attach_filter(fd.as_raw_fd(), &steer::raw_filter(kind, workers, index))
                    .map_err(|e| setup("SO_ATTACH_FILTER", e))?;
            }
            raw.push((fd, version, protocol));
            Ok(())
        };
        let (esp, ah) = (IpProtocol::ESP.0, IpProtocol::AH.0);
        receiver(RawKind::V4Esp, IpVersion::V4, esp)?;
        receiver(RawKind::V4Ah, IpVersion::V4, ah)?;
        // IPv6 is optional: a host without it runs IPv4 only.
        let send6 = match sys::raw_sender_v6() {
            Ok(fd) => {
                receiver(RawKind::V6Esp, IpVersion::V6, esp)?;
                receiver(RawKind::V6Ah, IpVersion::V6, ah)?;
                Some(fd)
            }
            Err(e) => {
                if index == 0 {
                    eprintln!("flowsec: warning: no IPv6 ({e}): IPv4 outer headers only");
                }
                None
            }
        };
        for fd in raw
            .iter()
            .map(|(fd, _, _)| fd)
            .chain(udp.as_ref())
            .chain(udp6.as_ref())
        {
            sys::set_recv_buffer(fd.as_raw_fd(), RECV_BUFFER)
                .map_err(|e| setup("receive buffer", e))?;
        }
        let send4 = sys::raw_sender_v4().map_err(|e| setup("raw send socket", e))?;
        // Marked, so that the routes into the TUN pass them by.
        for fd in [Some(&send4), send6.as_ref(), udp.as_ref(), udp6.as_ref()]
            .into_iter()
            .flatten()
        {
            sys::set_mark(fd.as_raw_fd(), crate::routes::BYPASS_MARK)
                .map_err(|e| setup("SO_MARK", e))?;
        }
        Ok(Io {
            tuns,
            offload,
            raw,
            udp,
            udp6,
            send4,
            send6,
        })
    }
}

/// Open the UDP 4500 group of one family, one socket per worker in worker
/// order, with the program that steers each datagram to its SPI's owner.
/// `None` (with a warning) when the port is taken or the family missing:
/// ESP in UDP over that family is then refused.
pub fn open_udp_group(workers: usize, v6: bool) -> Option<Vec<OwnedFd>> {
    let group: std::io::Result<Vec<OwnedFd>> = (0..workers)
        .map(|_| sys::udp_encap_socket(NAT_T_PORT, workers > 1, v6))
        .collect();
    let group = group.and_then(|group| {
        if workers > 1 {
            sys::attach_reuseport_program(
                group[0].as_raw_fd(),
                &steer::reuseport_program(workers),
            )?;
        }
        Ok(group)
    });
    match group {
        Ok(group) => Some(group),
        Err(e) => {
            let family = if v6 { "IPv6" } else { "IPv4" };
            eprintln!("flowsec: warning: UDP port {NAT_T_PORT} ({family}): {e}: no ESP in UDP over {family}");
            None
        }
    }
}

/// The worker that owns the outbound SAs between `src` and `dst`: a hash
/// of the two addresses, the same in every worker.
pub fn owner_of_endpoints(src: IpAddr, dst: IpAddr, workers: usize) -> usize {
    if workers <= 1 {
        return 0;
    }
    // FNV-1a over both addresses.
    let mut h: u32 = 0x811c_9dc5;
    let mut eat = |a: IpAddr| {
        let bytes = match a {
            IpAddr::V4(a) => a.octets().to_vec(),
            IpAddr::V6(a) => a.octets().to_vec(),
        };
        for b in bytes {
            h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
    };
    eat(src);
    eat(dst);
    (h % workers as u32) as usize
}

/// Traffic that never leaves the link: not to be sent on in the clear.
fn link_scope(flow: &Flow) -> bool {
    match (flow.src, flow.dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            s.is_unspecified()
                || s.is_link_local()
                || d.is_multicast()
                || d.is_link_local()
                || d.is_broadcast()
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let link_local = |a: std::net::Ipv6Addr| a.segments()[0] & 0xffc0 == 0xfe80;
            s.is_unspecified() || link_local(s) || link_local(d) || d.is_multicast()
        }
        _ => true,
    }
}

/// The owner of the packet `flow` that `templates` protect: that of the
/// first SA's endpoints (tunnel endpoints, or the packet's addresses in
/// transport mode).
fn owner_of(templates: &[SaTemplate], flow: &Flow, workers: usize) -> usize {
    let (src, dst) = templates
        .first()
        .and_then(|t| t.tunnel)
        .unwrap_or((flow.src, flow.dst));
    owner_of_endpoints(src, dst, workers)
}

/// Everything one worker thread owns.
pub struct Worker {
    pub index: usize,
    pub workers: usize,
    pub io: Io,
    pub db: Databases,
    pub rx: Receiver<Msg>,
    pub wake: Arc<OwnedFd>,
    /// Every worker's mailbox, this one's included.
    pub peers: Vec<Mailbox>,
    /// Size of a handoff buffer's packet room (the TUN MTU).
    pub mtu: usize,
    pub stop: Arc<AtomicBool>,
    pub start: Instant,
}

/// Sealed packets waiting for one sendmmsg(2).
struct SendBatch<A> {
    bufs: Vec<Vec<u8>>,
    dsts: Vec<A>,
}

impl<A: Copy> SendBatch<A> {
    fn new() -> Self {
        SendBatch {
            bufs: Vec::new(),
            dsts: Vec::with_capacity(sys::MAX_BATCH),
        }
    }

    /// Queue a copy of `packet`; true when the batch is full.
    fn push(&mut self, packet: &[u8], dst: A) -> bool {
        let used = self.dsts.len();
        if used == self.bufs.len() {
            self.bufs.push(Vec::with_capacity(2048));
        }
        let b = &mut self.bufs[used];
        b.clear();
        b.extend_from_slice(packet);
        self.dsts.push(dst);
        self.dsts.len() == sys::MAX_BATCH
    }

    /// Send what is queued on `fd`.
    fn flush(&mut self, fd: i32, stats: &mut Stats) {
        if self.dsts.is_empty() {
            return;
        }
        let (sent, failed) = sys::send_many(fd, &self.bufs[..self.dsts.len()], &self.dsts);
        stats.sent += sent as u64;
        stats.io_errors += failed as u64;
        self.dsts.clear();
    }
}

/// Sealed ESP-in-UDP packets of one destination and size, gathered for one
/// sendmsg(2) with UDP_SEGMENT (UDP GSO): the segments of a TCP
/// super-packet travel the stack as one until the device (DESIGN.md: send
/// batch, UDP GSO).
#[derive(Default)]
struct UdpGso {
    /// The ESP payloads, back to back.
    buf: Vec<u8>,
    /// Size of each but the last.
    segment: usize,
    count: usize,
    dst: Option<SocketAddr>,
    src: Option<IpAddr>,
    tos: u8,
    /// A shorter payload ended the group.
    closed: bool,
}

/// The most datagrams one UDP_SEGMENT send carries (UDP_MAX_SEGMENTS in
/// older kernels).
const GSO_SEGMENTS: usize = 64;

impl UdpGso {
    fn push(&mut self, payload: &[u8], to: (SocketAddr, IpAddr, u8), fd: i32, stats: &mut Stats) {
        let (dst, src, tos) = to;
        let fits = self.count > 0
            && !self.closed
            && self.dst == Some(dst)
            && self.src == Some(src)
            && self.tos == tos
            && payload.len() <= self.segment
            && self.count < GSO_SEGMENTS
            && self.buf.len() + payload.len() <= 65_000;
        if !fits {
            self.flush(fd, stats);
            self.dst = Some(dst);
            self.src = Some(src);
            self.tos = tos;
            self.segment = payload.len();
        }
        self.buf.extend_from_slice(payload);
        self.count += 1;
        if payload.len() < self.segment {
            self.closed = true;
        }
    }

    fn flush(&mut self, fd: i32, stats: &mut Stats) {
        if let (Some(dst), Some(src), true) = (self.dst, self.src, self.count > 0) {
            let segment = if self.count > 1 {
                self.segment as u16
            } else {
                0
            };
            match sys::send_udp(fd, &self.buf, segment, dst, src, self.tos) {
                Ok(()) => stats.sent += self.count as u64,
                Err(_) => stats.io_errors += self.count as u64,
            }
        }
        self.buf.clear();
        self.count = 0;
        self.closed = false;
    }
}

/// Where a sealed packet goes when its SA is UDP-encapsulated: the ESP
/// payload, and (destination, source, traffic class); `None` for other
/// packets.
fn udp_parts(packet: &[u8]) -> Option<(&[u8], (SocketAddr, IpAddr, u8))> {
    let (l4, src, dst, tos): (usize, IpAddr, IpAddr, u8) = match packet.first()? >> 4 {
        4 if packet.len() >= 20 && packet[9] == IpProtocol::UDP.0 => {
            let p = Ipv4Packet::new_unchecked(packet);
            (
                usize::from(packet[0] & 0xf) * 4,
                p.src_addr().into(),
                p.dst_addr().into(),
                packet[1],
            )
        }
        6 if packet.len() >= 40 && packet[6] == IpProtocol::UDP.0 => {
            let p = Ipv6Packet::new_unchecked(packet);
            let tc = (packet[0] << 4) | (packet[1] >> 4);
            (40, p.src_addr().into(), p.dst_addr().into(), tc)
        }
        _ => return None,
    };
    let udp = packet.get(l4..l4 + udp::HEADER_LEN)?;
    if u16::from_be_bytes([udp[0], udp[1]]) != NAT_T_PORT {
        return None;
    }
    let port = u16::from_be_bytes([udp[2], udp[3]]);
    Some((
        &packet[l4 + udp::HEADER_LEN..],
        (SocketAddr::new(dst, port), src, tos),
    ))
}

/// Per-loop state of a worker.
struct State {
    gso4: UdpGso,
    gso6: UdpGso,
    out4: SendBatch<sys::Dest4>,
    out6: SendBatch<sys::Dest6>,
    stats: Stats,
    pool: Vec<PacketBuf>,
    /// Peers that were handed packets since they were last woken.
    to_wake: Vec<bool>,
}

impl Worker {
    /// Run until `stop`; returns the counters, or why the worker could not
    /// go on (the TUN device went away).
    pub fn run(mut self) -> Result<Stats, String> {
        let mut st = State {
            gso4: UdpGso::default(),
            gso6: UdpGso::default(),
            out4: SendBatch::new(),
            out6: SendBatch::new(),
            stats: Stats::default(),
            pool: Vec::new(),
            to_wake: vec![false; self.workers],
        };
        let big = DEFAULT_HEADROOM + 65_536 + VNET_HDR_LEN + DEFAULT_TAILROOM;
        let mut buf = PacketBuf::new(big, DEFAULT_HEADROOM);
        // Raw IPv4 receives land here, a batch per recvmmsg(2).
        let mut many: Vec<PacketBuf> = (0..sys::MAX_BATCH)
            .map(|_| PacketBuf::new(big, DEFAULT_HEADROOM))
            .collect();
        // Segments of a TCP super-packet are built here.
        let mut seg = PacketBuf::new(big, DEFAULT_HEADROOM);
        let tun = self.io.tuns[self.index].as_raw_fd();
        let mut tun_out = TunOut {
            fds: self.io.tuns.iter().map(|fd| fd.as_raw_fd()).collect(),
            queue: self.index,
            gro: self.io.offload.then(Coalescer::default),
        };
        // Poll order: the TUN, the raw receivers, UDP 4500, the mailbox.
        let mut fds = vec![tun];
        fds.extend(self.io.raw.iter().map(|(fd, _, _)| fd.as_raw_fd()));
        let udp_at = fds.len();
        fds.extend(self.io.udp.as_ref().map(|fd| fd.as_raw_fd()));
        let udp6_at = fds.len();
        fds.extend(self.io.udp6.as_ref().map(|fd| fd.as_raw_fd()));
        let mailbox_at = fds.len();
        fds.push(self.wake.as_raw_fd());
        let mut ready = vec![false; fds.len()];
        while !self.stop.load(Ordering::Relaxed) {
            sys::poll_readable(&fds, POLL_MS, &mut ready).map_err(|e| format!("poll: {e}"))?;
            if ready[mailbox_at] {
                sys::clear_wake(self.wake.as_raw_fd());
            }
            // Also when not woken: recycled buffers arrive without a wake.
            self.take_mail(&mut st);
            let now = self.start.elapsed();
            let (index, workers) = (self.index, self.workers);
            let mut deliver = |b: &mut PacketBuf, stats: &mut Stats| {
                if let Some(queue) = inbound(&mut self.db, b, now, stats, (index, workers)) {
                    tun_out.deliver(b.as_slice(), queue, stats);
                }
            };
            for (k, (fd, version, protocol)) in self.io.raw.iter().enumerate() {
                if ready[1 + k] {
                    let mut f = |b: &mut PacketBuf| deliver(b, &mut st.stats);
                    match version {
                        IpVersion::V4 => drain_many(fd.as_raw_fd(), &mut many, &mut f),
                        IpVersion::V6 => drain_raw_v6(fd.as_raw_fd(), *protocol, &mut buf, &mut f),
                    }
                }
            }
            if let (Some(udp), true) = (&self.io.udp, ready[udp_at]) {
                drain_udp(udp.as_raw_fd(), false, &mut buf, &mut seg, &mut |b| {
                    deliver(b, &mut st.stats)
                });
            }
            if let (Some(udp6), true) = (&self.io.udp6, ready[udp6_at]) {
                drain_udp(udp6.as_raw_fd(), true, &mut buf, &mut seg, &mut |b| {
                    deliver(b, &mut st.stats)
                });
            }
            tun_out.flush(&mut st.stats);
            if ready[0] {
                let read = drain(tun, &mut buf, |b| {
                    if self.io.offload {
                        self.from_offloading_tun(b, &mut seg, now, &mut st)
                    } else {
                        self.outbound(b, false, now, &mut st)
                    }
                });
                if let Err(e) = read {
                    return Err(format!("TUN device: {e}"));
                }
            }
            self.flush_sends(&mut st);
            for (k, wake) in st.to_wake.iter_mut().enumerate() {
                if std::mem::take(wake) {
                    self.peers[k].wake();
                }
            }
        }
        Ok(st.stats)
    }

    fn take_mail(&mut self, st: &mut State) {
        while let Ok(msg) = self.rx.try_recv() {
            match msg {
                Msg::Apply(changes) => apply_to(&mut self.db, changes),
                Msg::Report(reply) => {
                    let _ = reply.send(self.report(&st.stats));
                }
                Msg::Packet { mut buf, from } => {
                    let now = self.start.elapsed();
                    self.outbound(&mut buf, true, now, st);
                    // Back to the worker that allocated it; dropped if its
                    // mailbox is full.
                    let _ = self.peers[from].tx.try_send(Msg::Recycle(buf));
                }
                Msg::Recycle(buf) => {
                    if st.pool.len() < POOL {
                        st.pool.push(buf);
                    }
                }
            }
        }
    }

    fn report(&self, stats: &Stats) -> Report {
        let now = self.start.elapsed();
        Report {
            stats: stats.clone(),
            sas: self
                .db
                .sad
                .iter()
                .map(|sa| SaReport {
                    id: sa.id(),
                    live: SaLive::of(sa, now),
                    stats: *sa.stats(),
                    replay_window: sa.replay_window().size(),
                })
                .collect(),
        }
    }

    /// A packet from a TUN device with offloads: behind its virtio header,
    /// a TCP super-packet to cut, or a packet whose checksum may be partial.
    fn from_offloading_tun(
        &mut self,
        b: &mut PacketBuf,
        seg: &mut PacketBuf,
        now: Duration,
        st: &mut State,
    ) {
        let Some(hdr) = VnetHdr::parse(b.as_slice()) else {
            st.stats.offload_errors += 1;
            return;
        };
        b.trim_front(VNET_HDR_LEN);
        if hdr.is_gso() {
            let cut = offload::segment_tcp(b.as_slice(), &hdr, seg, |s| {
                self.outbound(s, false, now, st)
            });
            match cut {
                Ok(_) => st.stats.tso_in += 1,
                Err(_) => st.stats.offload_errors += 1,
            }
            return;
        }
        if hdr.needs_csum() && offload::complete_checksum(b.as_mut_slice(), &hdr).is_err() {
            st.stats.offload_errors += 1;
            return;
        }
        self.outbound(b, false, now, st)
    }

    /// Protect and send one packet from the TUN device (or handed over by
    /// another worker: `handed`).
    fn outbound(&mut self, buf: &mut PacketBuf, handed: bool, now: Duration, st: &mut State) {
        let stats = &mut st.stats;
        let flow = match Flow::of_packet(buf.as_slice()) {
            Ok(flow) => flow,
            Err(reason) => return stats.drops.count(reason),
        };
        let templates = match self.db.spd.lookup(Direction::Out, &flow).map(|p| &p.action) {
            Some(Action::Protect(templates)) => templates,
            Some(Action::Discard) => return stats.drops.count(DropReason::PolicyDiscard),
            Some(Action::Bypass) => return self.send_clear(buf, st),
            None if link_scope(&flow) => {
                stats.no_policy += 1;
                return;
            }
            None => return self.send_clear(buf, st),
        };
        let owner = owner_of(templates, &flow, self.workers);
        if owner != self.index {
            if handed {
                // The policy changed while the packet was in flight.
                stats.handoff_drops += 1;
            } else {
                self.hand_off(owner, buf.as_slice(), st);
            }
            return;
        }
        let sealed = process::resolve(&self.db.sad, templates, &flow, now)
            .and_then(|bundle| process::outbound(&mut self.db.sad, &bundle, buf, now));
        if let Err(reason) = sealed {
            return stats.drops.count(reason);
        }
        let packet = buf.as_slice();
        if let Some((payload, to)) = udp_parts(packet) {
            let (gso, fd) = match to.0 {
                SocketAddr::V4(_) => (&mut st.gso4, self.io.udp.as_ref()),
                SocketAddr::V6(_) => (&mut st.gso6, self.io.udp6.as_ref()),
            };
            if let Some(fd) = fd {
                return gso.push(payload, to, fd.as_raw_fd(), &mut st.stats);
            }
        }
        let full = match (packet.first().map(|b| b >> 4), &self.io.send6) {
            (Some(4), _) => {
                let dst = Ipv4Packet::new_unchecked(packet).dst_addr();
                st.out4.push(packet, dst.into())
            }
            (Some(6), Some(_)) => {
                let dst = Ipv6Packet::new_unchecked(packet).dst_addr();
                st.out6.push(packet, dst.into())
            }
            _ => {
                stats.unsupported_outer += 1;
                return;
            }
        };
        if full {
            self.flush_sends(st);
        }
    }

    /// Send a packet from the TUN device on as it is, through the marked raw
    /// socket, which the routes into the TUN do not apply to.
    fn send_clear(&self, buf: &PacketBuf, st: &mut State) {
        let packet = buf.as_slice();
        let full = match (packet.first().map(|b| b >> 4), &self.io.send6) {
            (Some(4), _) => {
                let dst = Ipv4Packet::new_unchecked(packet).dst_addr();
                st.out4.push(packet, dst.into())
            }
            (Some(6), Some(_)) => {
                let dst = Ipv6Packet::new_unchecked(packet).dst_addr();
                st.out6.push(packet, dst.into())
            }
            _ => {
                st.stats.unsupported_outer += 1;
                return;
            }
        };
        st.stats.bypassed += 1;
        if full {
            self.flush_sends(st);
        }
    }

    /// Send the queued packets (when a batch is full, and once per loop).
    fn flush_sends(&self, st: &mut State) {
        if let Some(fd) = &self.io.udp {
            st.gso4.flush(fd.as_raw_fd(), &mut st.stats);
        }
        if let Some(fd) = &self.io.udp6 {
            st.gso6.flush(fd.as_raw_fd(), &mut st.stats);
        }
        st.out4.flush(self.io.send4.as_raw_fd(), &mut st.stats);
        if let Some(send6) = &self.io.send6 {
            st.out6.flush(send6.as_raw_fd(), &mut st.stats);
        }
    }

    fn hand_off(&self, owner: usize, packet: &[u8], st: &mut State) {
        let mut buf = st.pool.pop().unwrap_or_else(|| {
            PacketBuf::new(
                DEFAULT_HEADROOM + self.mtu + DEFAULT_TAILROOM,
                DEFAULT_HEADROOM,
            )
        });
        buf.reset(DEFAULT_HEADROOM);
        if buf.set(packet).is_err() || buf.tailroom() < DEFAULT_TAILROOM {
            st.stats.handoff_drops += 1;
            st.pool.push(buf);
            return;
        }
        let msg = Msg::Packet {
            buf,
            from: self.index,
        };
        match self.peers[owner].tx.try_send(msg) {
            Ok(()) => {
                st.stats.handed_off += 1;
                st.to_wake[owner] = true;
            }
            Err(TrySendError::Full(Msg::Packet { buf, .. }))
            | Err(TrySendError::Disconnected(Msg::Packet { buf, .. })) => {
                st.stats.handoff_drops += 1;
                st.pool.push(buf);
            }
            Err(_) => st.stats.handoff_drops += 1,
        }
    }
}

/// Take up to four batches of whole packets from a raw IPv4 receiver
/// (recvmmsg), handing each to `f`. Errors are transient (queued ICMP
/// errors) and end the drain.
fn drain_many(fd: i32, many: &mut [PacketBuf], f: &mut impl FnMut(&mut PacketBuf)) {
    // The largest IPv4 packet; the buffers keep their tailroom beyond it.
    let limit = usize::from(u16::MAX);
    for _ in 0..4 {
        let got = sys::recv_many(fd, many, DEFAULT_HEADROOM, limit).unwrap_or(0);
        for b in many[..got].iter_mut().filter(|b| !b.is_empty()) {
            f(b);
        }
        if got < many.len() {
            return;
        }
    }
}

/// Like [`drain`] for a raw IPv6 receiver, which hands over only what
/// follows the IPv6 header: the header is rebuilt in the headroom from the
/// source and PKTINFO destination (extension headers the packet had are
/// not seen, and AH over them cannot verify: not supported).
fn drain_raw_v6(fd: i32, protocol: u8, buf: &mut PacketBuf, f: &mut impl FnMut(&mut PacketBuf)) {
    for _ in 0..BATCH {
        buf.reset(DEFAULT_HEADROOM);
        let spare = buf.spare_mut();
        let limit = (spare.len() - DEFAULT_TAILROOM).min(usize::from(u16::MAX));
        let Ok(Some((n, src, dst, tclass))) = sys::recv_raw_v6(fd, &mut spare[..limit]) else {
            return;
        };
        // Cannot fail: n is at most the spare room, and the headroom holds 40 bytes.
        let _ = buf.set_len(n);
        let Ok(hdr) = buf.prepend(ipv6::HEADER_LEN) else {
            return;
        };
        let repr = Ipv6Repr {
            src_addr: src,
            dst_addr: dst,
            next_header: IpProtocol(protocol),
            payload_len: n,
            hop_limit: 64,
            // The outer ECN bits matter on decapsulation (RFC 6040).
            traffic_class: tclass,
            flow_label: 0,
        };
        repr.emit(&mut Ipv6Packet::new_unchecked(hdr));
        f(buf);
    }
}

/// Read up to [`BATCH`] packets from `fd` into `buf`, handing each to `f`.
/// A read error other than "nothing waiting" is returned: on the TUN it
/// means the device is gone, and polling on would spin.
fn drain(fd: i32, buf: &mut PacketBuf, mut f: impl FnMut(&mut PacketBuf)) -> std::io::Result<()> {
    for _ in 0..BATCH {
        buf.reset(DEFAULT_HEADROOM);
        let spare = buf.spare_mut();
        let limit = spare.len() - DEFAULT_TAILROOM;
        match sys::read(fd, &mut spare[..limit])? {
            Some(n) if n > 0 => {
                // Cannot fail: n is at most the spare room.
                let _ = buf.set_len(n);
                f(buf);
            }
            _ => return Ok(()),
        }
    }
    Ok(())
}

/// Like [`drain`] for a UDP encapsulation socket, which hands over only
/// the UDP payload, several datagrams at once when the kernel coalesced
/// them (UDP GRO): each is handed to `f` on its own (coalesced ones built
/// in `seg`), behind the IP and UDP headers the core expects, rebuilt in
/// the headroom from the sender's and our address, with the outer TOS /
/// traffic class the socket reported (RFC 6040 needs its ECN bits). The UDP checksum is left
/// zero: the kernel verified it (IPv6), or there was none (RFC 3948 §2.1
/// over IPv4); the core does not look at it.
fn drain_udp(
    fd: i32,
    v6: bool,
    buf: &mut PacketBuf,
    seg: &mut PacketBuf,
    f: &mut impl FnMut(&mut PacketBuf),
) {
    for _ in 0..BATCH {
        buf.reset(DEFAULT_HEADROOM);
        let spare = buf.spare_mut();
        let limit = (spare.len() - DEFAULT_TAILROOM).min(usize::from(u16::MAX));
        let got = if v6 {
            sys::recv_udp_v6(fd, &mut spare[..limit])
        } else {
            sys::recv_udp_v4(fd, &mut spare[..limit])
        };
        let Ok(Some(d)) = got else {
            return;
        };
        // Cannot fail: the length is at most the spare room.
        let _ = buf.set_len(d.len);
        if d.segment == 0 || d.len <= d.segment {
            if with_udp_headers(buf, &d) {
                f(buf);
            }
            continue;
        }
        for chunk in buf.as_slice().chunks(d.segment) {
            seg.reset(DEFAULT_HEADROOM);
            if seg.set(chunk).is_ok() && with_udp_headers(seg, &d) {
                f(seg);
            }
        }
    }
}

/// Put the IP and UDP headers of datagram `d` in front of its payload in
/// `buf`; false if they do not fit (they always do: the headroom is larger).
fn with_udp_headers(buf: &mut PacketBuf, d: &sys::UdpDatagram) -> bool {
    let n = buf.len();
    let ip_len = match d.dst {
        IpAddr::V4(_) => ipv4::HEADER_LEN,
        IpAddr::V6(_) => ipv6::HEADER_LEN,
    };
    let Ok(hdr) = buf.prepend(ip_len + udp::HEADER_LEN) else {
        return false;
    };
    let (ip, rest) = hdr.split_at_mut(ip_len);
    match (d.src.ip(), d.dst) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => Ipv4Repr {
            src_addr: src,
            dst_addr: dst,
            next_header: IpProtocol::UDP,
            payload_len: udp::HEADER_LEN + n,
            hop_limit: 64,
            dscp_ecn: d.tos,
            dont_frag: false,
        }
        .emit(&mut Ipv4Packet::new_unchecked(ip)),
        (IpAddr::V6(src), IpAddr::V6(dst)) => Ipv6Repr {
            src_addr: src,
            dst_addr: dst,
            next_header: IpProtocol::UDP,
            payload_len: udp::HEADER_LEN + n,
            hop_limit: 64,
            traffic_class: d.tos,
            flow_label: 0,
        }
        .emit(&mut Ipv6Packet::new_unchecked(ip)),
        // The socket's family decides both.
        _ => return false,
    }
    UdpRepr {
        src_port: d.src.port(),
        dst_port: NAT_T_PORT,
        payload_len: n,
    }
    .emit(&mut UdpPacket::new_unchecked(rest));
    true
}

/// Verify and decapsulate one packet from the network. `Some(queue)` if it
/// is to be delivered to the TUN device, through the queue of the worker
/// that owns its replies' outbound SAs: the TUN device sends a flow's
/// packets to the queue that last wrote the flow (its flow hash is
/// symmetric), so the replies are read by their owner and need no handoff.
/// `me` is (this worker, workers).
fn inbound(
    db: &mut Databases,
    buf: &mut PacketBuf,
    now: Duration,
    stats: &mut Stats,
    me: (usize, usize),
) -> Option<usize> {
    let mut drop = |reason: DropReason| {
        stats.drops.count(reason);
        None
    };
    let applied = match process::inbound(&mut db.sad, buf, now) {
        Ok(Inbound::Decapsulated(applied)) => applied,
        // Not on a raw ESP/AH socket; IKE comes with the IKE issue.
        Ok(Inbound::NatKeepalive | Inbound::Ike) => return None,
        Err(reason) => return drop(reason),
    };
    let flow = match Flow::of_packet(buf.as_slice()) {
        Ok(flow) => flow,
        Err(_) => return drop(DropReason::BadInnerPacket),
    };
    // A gateway forwards what it decapsulates; a host keeps it.
    let Some(policy) = db
        .spd
        .lookup(Direction::Fwd, &flow)
        .or_else(|| db.spd.lookup(Direction::In, &flow))
    else {
        return drop(DropReason::NoInboundPolicy);
    };
    if let Err(reason) = process::check_inbound(&db.sad, Some(policy), &applied) {
        return drop(reason);
    }
    let reply = Flow {
        src: flow.dst,
        dst: flow.src,
        protocol: flow.protocol,
        src_port: flow.dst_port,
        dst_port: flow.src_port,
    };
    Some(
        match db.spd.lookup(Direction::Out, &reply).map(|p| &p.action) {
            Some(Action::Protect(templates)) => owner_of(templates, &reply, me.1),
            _ => me.0,
        },
    )
}

/// Writing decapsulated packets to the TUN device: directly, or through
/// the coalescer when the device takes offloads.
struct TunOut {
    /// Every worker's queue.
    fds: Vec<i32>,
    /// The queue the coalescer's group goes to.
    queue: usize,
    gro: Option<Coalescer>,
}

impl TunOut {
    fn deliver(&mut self, packet: &[u8], queue: usize, stats: &mut Stats) {
        stats.delivered += 1;
        if queue != self.queue {
            self.flush(stats);
            self.queue = queue;
        }
        let fd = self.fds[self.queue.min(self.fds.len() - 1)];
        match &mut self.gro {
            None => write_tun(fd, packet, false, stats),
            Some(gro) => gro.push(packet, &mut |b| write_tun(fd, b, true, stats)),
        }
    }

    /// Write what the coalescer holds (at the end of each batch).
    fn flush(&mut self, stats: &mut Stats) {
        let fd = self.fds[self.queue.min(self.fds.len() - 1)];
        if let Some(gro) = &mut self.gro {
            gro.flush(&mut |b| write_tun(fd, b, true, stats));
        }
    }
}

/// Write one packet (behind its virtio header if `vnet`).
fn write_tun(fd: i32, bytes: &[u8], vnet: bool, stats: &mut Stats) {
    // A super-packet: the virtio header names a GSO type.
    if vnet && VnetHdr::parse(bytes).is_some_and(|h| h.is_gso()) {
        stats.gro_out += 1;
    }
    if sys::write(fd, bytes).is_err() {
        stats.io_errors += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_ownership_is_stable_and_spreads() {
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        assert_eq!(owner_of_endpoints(a, a, 1), 0);
        let mut seen = [0usize; 4];
        for i in 0..=255u8 {
            let b = IpAddr::from([198, 51, 100, i]);
            let k = owner_of_endpoints(a, b, 4);
            assert_eq!(k, owner_of_endpoints(a, b, 4));
            seen[k] += 1;
        }
        assert!(seen.iter().all(|&n| n > 30), "{seen:?}");
    }
}
