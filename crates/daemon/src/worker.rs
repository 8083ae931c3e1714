//! One worker (ARCHITECTURE.md "Workers"): its own TUN queue, raw ESP/AH
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

use std::net::IpAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use flowsec_ipsec::buf::{DEFAULT_HEADROOM, DEFAULT_TAILROOM};
use flowsec_ipsec::process::{self, Inbound};
use flowsec_ipsec::reassembly::Reassembler;
use flowsec_ipsec::spd::SaTemplate;
use flowsec_ipsec::{Action, Direction, DropReason, Flow, OpaqueLookup, PacketBuf, UdpEndpoints};
use flowsec_setkey::SaLive;
use flowsec_wire::iana::IpProtocol;
use flowsec_wire::ip::IpVersion;
use flowsec_wire::udp_encap::NAT_T_PORT;

use crate::apply::{apply_to, Databases, WorkerChange};
use crate::fragid::{self, FragmentIds};
use crate::offload::{self, Coalescer, VnetHdr, VNET_HDR_LEN};
use crate::recv::{drain, drain_many, drain_raw_v6, drain_udp};
use crate::send::{SendFds, Sender};
pub use crate::stats::{Report, SaReport, Stats};
use crate::steer::{self, RawKind};
use crate::sys;

/// Receive buffer of the raw and UDP sockets: room for a burst of ~5000
/// MTU-sized packets while the worker is busy with the TUN side.
const RECV_BUFFER: usize = 8 << 20;
/// How long a poll waits before checking for shutdown.
const POLL_MS: i32 = 200;
/// Messages a mailbox holds; a handoff to a full one is dropped (counted).
const MAILBOX: usize = 1024;
/// Spare handoff buffers a worker keeps.
const POOL: usize = 256;
/// How often a worker asks IKE for the SA of one trap policy.
const ACQUIRE_EVERY: Duration = Duration::from_secs(1);

/// What a worker is sent.
pub enum Msg {
    /// Apply these changes, in order, at once, then say so (with the
    /// worker's index).
    Apply(Vec<WorkerChange>, mpsc::Sender<usize>),
    /// Send a [`Report`] back.
    Report(mpsc::Sender<Report>),
    /// An outbound packet read by worker `from` for SAs this one owns;
    /// `whole`: a datagram reassembled from fragments (fragmented again
    /// after sealing where it must be).
    Packet {
        buf: PacketBuf,
        from: usize,
        whole: bool,
    },
    /// A handoff buffer coming back to its worker, for reuse.
    Recycle(PacketBuf),
}

/// What became of a message for a worker.
pub enum Delivery {
    /// In its mailbox.
    Sent,
    /// Its mailbox stayed full until the deadline: here it is back.
    Late(Msg),
    /// The worker is gone.
    Gone,
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
        Mailbox::with_capacity(MAILBOX)
    }

    /// A mailbox that holds `capacity` messages.
    pub fn with_capacity(
        capacity: usize,
    ) -> std::io::Result<(Mailbox, Receiver<Msg>, Arc<OwnedFd>)> {
        let (tx, rx) = mpsc::sync_channel(capacity);
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

    /// Deliver `msg` and wake the worker, waiting for room in the mailbox
    /// until `deadline` at most (control plane only; see [`crate::reach`]).
    pub fn send_by(&self, msg: Msg, deadline: Instant) -> Delivery {
        let mut msg = msg;
        loop {
            match self.tx.try_send(msg) {
                Ok(()) => {
                    self.wake();
                    return Delivery::Sent;
                }
                Err(TrySendError::Disconnected(_)) => return Delivery::Gone,
                Err(TrySendError::Full(back)) => {
                    self.wake();
                    if Instant::now() >= deadline {
                        return Delivery::Late(back);
                    }
                    msg = back;
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
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
        .map(|_| sys::udp_encap_socket(NAT_T_PORT, workers > 1, v6, true))
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
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
    };
    for a in [src, dst] {
        match a {
            IpAddr::V4(a) => eat(&a.octets()),
            IpAddr::V6(a) => eat(&a.octets()),
        }
    }
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
/// outermost tunnel's endpoints, or the packet's addresses when every step
/// is in transport mode.
fn owner_of(templates: &[SaTemplate], flow: &Flow, workers: usize) -> usize {
    // The outermost tunnel: the SA that carries sequence numbers on the
    // wire for every flow this policy sends, whatever the inner steps (an
    // IPComp or transport step inside keys on the packet's addresses and
    // would spread one tunnel SA over several workers).
    let (src, dst) = templates
        .iter()
        .rev()
        .find_map(|t| t.tunnel)
        .unwrap_or((flow.src, flow.dst));
    owner_of_endpoints(src, dst, workers)
}

/// Everything one worker thread owns.
pub struct Worker {
    /// Where IKE messages arriving on UDP 4500 go (the kernel steers them
    /// to worker 0), and acquires for trap policies; `None` without IKE.
    pub ike: Option<crate::ike::IkeSink>,
    /// When each reqid was last acquired.
    pub acquired: Vec<(u32, Duration)>,
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
    /// The epoch of the latest SPD change the control plane sent
    /// ([`crate::reach::Workers`]); `db.spd_epoch` is this worker's.
    pub spd_epoch: Arc<AtomicU64>,
}

/// Where an outbound packet comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Source {
    /// Another worker read it (it does not own the packet's SAs).
    handed: bool,
    /// Put together from fragments: for transport mode, or to look up a
    /// policy that depends on ports (RFC 4301 §7).
    whole: bool,
}

impl Source {
    /// This worker's TUN queue.
    const TUN: Source = Source {
        handed: false,
        whole: false,
    };
    /// Reassembled here.
    const REASSEMBLED: Source = Source {
        handed: false,
        whole: true,
    };
}

/// Datagrams a worker reassembles at once, at most (64 KiB each), in each
/// direction.
const REASSEMBLING: usize = 64;

/// Per-loop state of a worker.
struct State {
    send: Sender,
    stats: Stats,
    /// Fragments from the TUN device waiting for the rest of their datagram
    /// (transport mode), and where a completed one is put.
    frags: Reassembler,
    whole: PacketBuf,
    pool: Vec<PacketBuf>,
    /// Peers that were handed packets since they were last woken.
    to_wake: Vec<bool>,
}

impl State {
    /// Keep a handoff buffer for reuse, up to [`POOL`] of them (a refused
    /// hand-off of a reassembled datagram brings back a large one each
    /// time: the pool must not grow with them).
    fn recycle(&mut self, buf: PacketBuf) {
        if self.pool.len() < POOL {
            self.pool.push(buf);
        }
    }
}

impl Worker {
    /// Run until `stop`; returns the counters, or why the worker could not
    /// go on (the TUN device went away).
    pub fn run(mut self) -> Result<Stats, String> {
        let big = DEFAULT_HEADROOM + 65_536 + VNET_HDR_LEN + DEFAULT_TAILROOM;
        let mut st = State {
            send: Sender::new(
                SendFds {
                    send4: self.io.send4.as_raw_fd(),
                    send6: self.io.send6.as_ref().map(|fd| fd.as_raw_fd()),
                    udp4: self.io.udp.as_ref().map(|fd| fd.as_raw_fd()),
                    udp6: self.io.udp6.as_ref().map(|fd| fd.as_raw_fd()),
                },
                self.mtu,
            ),
            stats: Stats::default(),
            frags: Reassembler::new(REASSEMBLING),
            whole: PacketBuf::new(big, DEFAULT_HEADROOM),
            pool: Vec::new(),
            to_wake: vec![false; self.workers],
        };
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
            mtu: self.mtu,
            ids: FragmentIds::default(),
        };
        // Decapsulated fragments whose policy their ports decide.
        let mut inner_frags = InnerFragments {
            table: Reassembler::new(REASSEMBLING),
            whole: PacketBuf::new(big, DEFAULT_HEADROOM),
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
            let ike = self.ike.as_ref();
            // An IP packet from a raw socket, or (`from`) a UDP payload.
            let mut deliver =
                |b: &mut PacketBuf, from: Option<&UdpEndpoints>, stats: &mut Stats| {
                    let sad = &mut self.db.sad;
                    let decap = match from {
                        None => process::inbound(sad, b, now),
                        Some(from) => process::inbound_udp(sad, b, from, now),
                    };
                    if let (Ok(Inbound::Ike), Some(sink), Some(from)) = (decap, ike, from) {
                        return sink.message(b.as_slice(), from);
                    }
                    let me = (index, workers);
                    let frags = &mut inner_frags;
                    if let Some(queue) = inbound(&mut self.db, b, decap, now, stats, me, frags) {
                        tun_out.deliver(b.as_slice(), queue, stats);
                    }
                };
            for (k, (fd, version, protocol)) in self.io.raw.iter().enumerate() {
                if ready[1 + k] {
                    let mut f = |b: &mut PacketBuf| deliver(b, None, &mut st.stats);
                    match version {
                        IpVersion::V4 => drain_many(fd.as_raw_fd(), &mut many, &mut f),
                        IpVersion::V6 => drain_raw_v6(fd.as_raw_fd(), *protocol, &mut buf, &mut f),
                    }
                }
            }
            for (socket, at) in [(&self.io.udp, udp_at), (&self.io.udp6, udp6_at)] {
                if let (Some(udp), true) = (socket, ready[at]) {
                    drain_udp(udp.as_raw_fd(), &mut buf, &mut seg, &mut |b, from| {
                        deliver(b, Some(from), &mut st.stats)
                    });
                }
            }
            tun_out.flush(&mut st.stats);
            if ready[0] {
                let read = drain(tun, &mut buf, |b| {
                    if self.io.offload {
                        self.offloaded_from_tun(b, &mut seg, now, &mut st)
                    } else {
                        self.outbound(b, Source::TUN, now, &mut st)
                    }
                });
                if let Err(e) = read {
                    return Err(format!("TUN device: {e}"));
                }
            }
            st.send.flush(&mut st.stats);
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
                Msg::Apply(changes, done) => {
                    apply_to(&mut self.db, changes);
                    let _ = done.send(self.index);
                }
                Msg::Report(reply) => {
                    let _ = reply.send(self.report(&st.stats));
                }
                Msg::Packet {
                    mut buf,
                    from,
                    whole,
                } => {
                    let now = self.start.elapsed();
                    let source = Source {
                        handed: true,
                        whole,
                    };
                    self.outbound(&mut buf, source, now, st);
                    // Back to the worker that allocated it; dropped if its
                    // mailbox is full.
                    let _ = self.peers[from].tx.try_send(Msg::Recycle(buf));
                }
                Msg::Recycle(buf) => st.recycle(buf),
            }
        }
    }

    fn report(&self, stats: &Stats) -> Report {
        let now = self.start.elapsed();
        Report {
            worker: self.index,
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
    fn offloaded_from_tun(
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
                self.outbound(s, Source::TUN, now, st)
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
        self.outbound(b, Source::TUN, now, st)
    }

    /// Protect and send one packet from the TUN device (or handed over by
    /// another worker, or put together from fragments: `from`).
    fn outbound(&mut self, buf: &mut PacketBuf, from: Source, now: Duration, st: &mut State) {
        let stats = &mut st.stats;
        let flow = match Flow::of_packet(buf.as_slice()) {
            Ok(flow) => flow,
            Err(reason) => return stats.drops.count(reason),
        };
        let policy = if flow.fragment {
            match self.db.spd.lookup_opaque(Direction::Out, &flow) {
                OpaqueLookup::Decided(policy) => policy,
                // Its ports decide, and a later fragment has none: never
                // sent by a guess (RFC 4301 §7), but looked up whole.
                OpaqueLookup::NeedsPorts => return self.gather(buf, &flow, from, now, st),
            }
        } else {
            self.db.spd.lookup(Direction::Out, &flow)
        };
        let templates = match policy.map(|p| &p.action) {
            Some(Action::Protect(templates)) => templates,
            Some(Action::Discard) => return stats.drops.count(DropReason::PolicyDiscard),
            None if link_scope(&flow) => {
                stats.no_policy += 1;
                return;
            }
            // In the clear only by the latest policies: a worker that has
            // not taken a change yet cannot know that it still allows this.
            Some(Action::Bypass) | None
                if self.db.spd_epoch < self.spd_epoch.load(Ordering::Acquire) =>
            {
                return stats.drops.count(DropReason::PolicyStale)
            }
            Some(Action::Bypass) | None => return self.send_clear(buf, st),
        };
        let owner = owner_of(templates, &flow, self.workers);
        if owner != self.index {
            return self.pass_to(owner, buf, from, st);
        }
        let sealed = process::resolve(&self.db.sad, templates, &flow, now)
            .and_then(|bundle| process::outbound(&mut self.db.sad, &bundle, buf, now));
        let egress = match sealed {
            Ok(egress) => egress,
            // A fragment refused by a transport-mode step, untouched: put
            // its datagram together first (not one already reassembled).
            Err(DropReason::TransportFragment) if !from.whole => {
                return self.reassemble(buf, now, st)
            }
            Err(DropReason::NoOutboundSa) => {
                stats.drops.count(DropReason::NoOutboundSa);
                return self.acquire(templates_reqid(&self.db, &flow), now);
            }
            Err(reason) => return stats.drops.count(reason),
        };
        if from.whole {
            // Larger than anything the TUN MTU lets in: fragmented after
            // ESP where it must be (RFC 4303 §3.3.4).
            st.send.fragmenting(buf.as_slice(), egress, &mut st.stats);
        } else {
            st.send.sealed(buf.as_slice(), egress, &mut st.stats);
        }
    }

    /// A fragment whose policy its ports decide: all fragments of one
    /// datagram meet on one worker (a hash of their addresses, which every
    /// fragment carries), are reassembled there, and the datagram is looked
    /// up and sent whole.
    fn gather(
        &mut self,
        buf: &mut PacketBuf,
        flow: &Flow,
        from: Source,
        now: Duration,
        st: &mut State,
    ) {
        let owner = owner_of_endpoints(flow.src, flow.dst, self.workers);
        if owner != self.index {
            return self.pass_to(owner, buf, from, st);
        }
        st.stats.fragments_held += 1;
        self.reassemble(buf, now, st)
    }

    /// Hand `buf` to the worker that owns it, unless it was handed here
    /// already (the policies changed while it was in flight: dropped).
    fn pass_to(&mut self, owner: usize, buf: &PacketBuf, from: Source, st: &mut State) {
        if from.handed {
            st.stats.handoff_drops += 1;
        } else {
            self.hand_off(owner, buf.as_slice(), from.whole, st);
        }
    }

    /// Ask IKE for the SA of policy `reqid` (a trap), at most once a second
    /// per reqid.
    fn acquire(&mut self, reqid: Option<u32>, now: Duration) {
        let (Some(sink), Some(reqid)) = (&self.ike, reqid) else {
            return;
        };
        if let Some(at) = self.acquired.iter_mut().find(|(r, _)| *r == reqid) {
            if now < at.1 + ACQUIRE_EVERY {
                return;
            }
            at.1 = now;
        } else {
            if self.acquired.len() >= 64 {
                self.acquired.remove(0);
            }
            self.acquired.push((reqid, now));
        }
        sink.acquire(reqid);
    }

    /// A fragment that transport mode must not carry alone (RFC 4303
    /// §3.1.1), or whose policy depends on ports (RFC 4301 §7): into the
    /// reassembly table; the datagram it completes is looked up and
    /// protected whole (and fragmented again when sent, if it must be).
    fn reassemble(&mut self, frag: &PacketBuf, now: Duration, st: &mut State) {
        let before = st.frags.expired;
        // Sealing the last datagram moved its start: room again in front.
        st.whole.reset(DEFAULT_HEADROOM);
        let done = st.frags.push(frag.as_slice(), now, &mut st.whole);
        st.stats.fragments_expired += st.frags.expired - before;
        match done {
            Ok(true) => {
                st.stats.reassembled += 1;
                // Not a fragment now: looked up and sealed as any other
                // packet, on this worker (the owner: transport mode keys on
                // the addresses, the same in every fragment).
                let mut whole = std::mem::replace(&mut st.whole, PacketBuf::new(0, 0));
                self.outbound(&mut whole, Source::REASSEMBLED, now, st);
                st.whole = whole;
            }
            Ok(false) => {}
            Err(reason) => st.stats.drops.count(reason),
        }
    }

    /// Send a packet from the TUN device on as it is, through the marked raw
    /// socket, which the routes into the TUN do not apply to (a reassembled
    /// one as fragments again).
    fn send_clear(&self, buf: &PacketBuf, st: &mut State) {
        if st.send.clear(buf.as_slice(), &mut st.stats) {
            st.stats.bypassed += 1;
        }
    }

    fn hand_off(&self, owner: usize, packet: &[u8], whole: bool, st: &mut State) {
        let fresh = |room: usize| {
            PacketBuf::new(DEFAULT_HEADROOM + room + DEFAULT_TAILROOM, DEFAULT_HEADROOM)
        };
        let mut buf = st.pool.pop().unwrap_or_else(|| fresh(self.mtu));
        buf.reset(DEFAULT_HEADROOM);
        if buf.set(packet).is_err() || buf.tailroom() < DEFAULT_TAILROOM {
            // A reassembled datagram, larger than a handoff buffer: one of
            // its own (these are few: the mailbox bounds them).
            st.recycle(buf);
            buf = fresh(packet.len());
            if buf.set(packet).is_err() {
                st.stats.handoff_drops += 1;
                return;
            }
        }
        let msg = Msg::Packet {
            buf,
            from: self.index,
            whole,
        };
        match self.peers[owner].tx.try_send(msg) {
            Ok(()) => {
                st.stats.handed_off += 1;
                st.to_wake[owner] = true;
            }
            Err(TrySendError::Full(refused) | TrySendError::Disconnected(refused)) => {
                st.stats.handoff_drops += 1;
                if let Msg::Packet { buf, .. } = refused {
                    st.recycle(buf);
                }
            }
        }
    }
}

/// Check one packet from the network that the core decapsulated (`decap`)
/// against the inbound policies. `Some(queue)` if it
/// is to be delivered to the TUN device, through the queue of the worker
/// that owns its replies' outbound SAs: the TUN device sends a flow's
/// packets to the queue that last wrote the flow (its flow hash is
/// symmetric), so the replies are read by their owner and need no handoff.
/// `me` is (this worker, workers).
fn inbound(
    db: &mut Databases,
    buf: &mut PacketBuf,
    decap: Result<Inbound, DropReason>,
    now: Duration,
    stats: &mut Stats,
    me: (usize, usize),
    frags: &mut InnerFragments,
) -> Option<usize> {
    let mut drop = |reason: DropReason| {
        stats.drops.count(reason);
        None
    };
    let applied = match decap {
        Ok(Inbound::Decapsulated(applied)) => applied,
        // IKE went to the control thread before (with IKE on); without,
        // or a keepalive, it is dropped here.
        Ok(Inbound::NatKeepalive | Inbound::Ike) => return None,
        Err(reason) => return drop(reason),
    };
    let mut flow = match Flow::of_packet(buf.as_slice()) {
        Ok(flow) => flow,
        Err(_) => return drop(DropReason::BadInnerPacket),
    };
    // A gateway forwards what it decapsulates; a host keeps it.
    let inbound_opaque = |flow: &Flow| match db.spd.lookup_opaque(Direction::Fwd, flow) {
        OpaqueLookup::Decided(None) => db.spd.lookup_opaque(Direction::In, flow),
        decided => decided,
    };
    if flow.fragment && inbound_opaque(&flow) == OpaqueLookup::NeedsPorts {
        // RFC 4301 §7: its ports decide, and a later fragment has none.
        // It must have come through an SA that some candidate policy
        // allows; its datagram is then put together and checked whole.
        let allowed = [Direction::Fwd, Direction::In].into_iter().any(|d| {
            db.spd
                .candidates(d, &flow)
                .any(|p| process::check_inbound(&db.sad, Some(p), &applied).is_ok())
        });
        if !allowed {
            return drop(DropReason::NoInboundPolicy);
        }
        stats.fragments_held += 1;
        let before = frags.table.expired;
        frags.whole.reset(DEFAULT_HEADROOM);
        let done = frags.table.push(buf.as_slice(), now, &mut frags.whole);
        stats.fragments_expired += frags.table.expired - before;
        match done {
            Ok(true) => std::mem::swap(buf, &mut frags.whole),
            Ok(false) => return None,
            Err(reason) => return drop(reason),
        }
        flow = match Flow::of_packet(buf.as_slice()) {
            Ok(flow) => flow,
            Err(_) => return drop(DropReason::BadInnerPacket),
        };
    }
    let policy = if flow.fragment {
        match inbound_opaque(&flow) {
            OpaqueLookup::Decided(policy) => policy,
            OpaqueLookup::NeedsPorts => None,
        }
    } else {
        db.spd
            .lookup(Direction::Fwd, &flow)
            .or_else(|| db.spd.lookup(Direction::In, &flow))
    };
    let Some(policy) = policy else {
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
        fragment: flow.fragment,
    };
    Some(
        match db.spd.lookup(Direction::Out, &reply).map(|p| &p.action) {
            Some(Action::Protect(templates)) => owner_of(templates, &reply, me.1),
            _ => me.0,
        },
    )
}

/// Decapsulated fragments being put together before their policy check,
/// and where a completed datagram is built.
struct InnerFragments {
    table: Reassembler,
    whole: PacketBuf,
}

/// Writing decapsulated packets to the TUN device: directly, or through
/// the coalescer when the device takes offloads.
struct TunOut {
    /// Every worker's queue.
    fds: Vec<i32>,
    /// The queue the coalescer's group goes to.
    queue: usize,
    gro: Option<Coalescer>,
    /// The TUN MTU: a larger datagram (reassembled at either end) is
    /// written as fragments, which the kernel forwards (an IPv6 router
    /// would refuse a packet larger than the next link) or reassembles.
    mtu: usize,
    ids: FragmentIds,
}

impl TunOut {
    fn deliver(&mut self, packet: &[u8], queue: usize, stats: &mut Stats) {
        stats.delivered += 1;
        // Larger than the TUN MTU: a datagram reassembled at either end
        // (RFC 4301 §7). Only IPv6 strictly needs it (the kernel forwards
        // an IPv4 one without DF in fragments itself, and one with DF is
        // refused here and written whole), but both are split the same way.
        if packet.len() > self.mtu {
            let mut ids = std::mem::take(&mut self.ids);
            let split = fragid::split(packet, self.mtu, &mut ids, |f| self.write(f, queue, stats));
            self.ids = ids;
            // Refused (DF set, IPv4 options): written as it is, and the
            // kernel answers with ICMP where it must.
            if split.is_ok() {
                stats.refragmented += 1;
                return;
            }
        }
        self.write(packet, queue, stats)
    }

    fn write(&mut self, packet: &[u8], queue: usize, stats: &mut Stats) {
        if queue != self.queue {
            self.flush(stats);
            self.queue = queue;
        }
        let fd = self.fds[self.queue];
        match &mut self.gro {
            None => write_tun(fd, packet, false, stats),
            Some(gro) => gro.push(packet, &mut |b| write_tun(fd, b, true, stats)),
        }
    }

    /// Write what the coalescer holds (at the end of each batch).
    fn flush(&mut self, stats: &mut Stats) {
        let fd = self.fds[self.queue];
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

/// The reqid of the outbound policy `flow` matches, if it names one.
fn templates_reqid(db: &Databases, flow: &Flow) -> Option<u32> {
    match db.spd.lookup(Direction::Out, flow).map(|p| &p.action) {
        Some(Action::Protect(t)) => t.iter().map(|t| t.reqid).find(|r| *r != 0),
        _ => None,
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
            seen[k] += 1;
        }
        assert!(seen.iter().all(|&n| n > 30), "{seen:?}");
    }

    /// Every flow a policy sends through one tunnel SA has one owner, even
    /// when an inner step keys on the packet's addresses (two owners would
    /// use one sequence number, and one GCM nonce, twice).
    #[test]
    fn a_tunnel_sa_has_one_owner_whatever_the_inner_steps() {
        use flowsec_ipsec::spd::{Level, SaTemplate};
        use flowsec_ipsec::{Mode, Protocol};
        let (a, b): (IpAddr, IpAddr) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        let step = |protocol, mode, tunnel| SaTemplate {
            protocol,
            mode,
            tunnel,
            level: Level::Require,
            reqid: 0,
        };
        let bundle = [
            step(Protocol::IpComp, Mode::Transport, None),
            step(Protocol::Esp, Mode::Tunnel, Some((a, b))),
        ];
        let owners: std::collections::BTreeSet<usize> = (0..=255u8)
            .map(|i| {
                let flow = Flow {
                    src: IpAddr::from([10, 1, 0, i]),
                    dst: IpAddr::from([10, 2, 0, 255 - i]),
                    protocol: 6,
                    src_port: 1000,
                    dst_port: 2000,
                    fragment: false,
                };
                owner_of(&bundle, &flow, 4)
            })
            .collect();
        assert_eq!(owners.len(), 1, "{owners:?}");
        assert_eq!(owners.into_iter().next(), Some(owner_of_endpoints(a, b, 4)));
    }
}
