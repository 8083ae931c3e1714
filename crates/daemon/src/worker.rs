//! One worker (ARCHITECTURE.md "Workers"): its own TUN queue, raw ESP/AH
//! receivers that the kernel filters down to the SPIs this worker owns, its
//! socket in the UDP 4500 reuseport group, its own send sockets, and its
//! own copy of the SAD and SPD. It reads packets, asks its [`Datapath`]
//! what to do with each, and does it; this is where the clock is read (the
//! core takes `now`).
//!
//! Ownership, so that no SA state is ever shared between threads: see
//! [`crate::datapath`]. A packet read from another worker's TUN queue is
//! handed to the owner of its SAs through the owner's mailbox.
//!
//! Workers never wait on the control plane: configuration changes and
//! requests for counters arrive as messages, taken between batches.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use flowsec_ipsec::buf::DEFAULT_HEADROOM;
use flowsec_ipsec::{DropReason, PacketBuf};
use flowsec_setkey::SaLive;
use flowsec_wire::iana::IpProtocol;
use flowsec_wire::ip::IpVersion;
use flowsec_wire::udp_encap::NAT_T_PORT;

use crate::apply::WorkerChange;
use crate::channels::{Inbox, Mailbox, Msg};
use crate::datapath::{self, Datapath, Source, BIG_BUFFER};
use crate::fragid::{self, FragmentIds};
use crate::offload::{self, Coalescer, VnetHdr, VNET_HDR_LEN};
use crate::pcrypt::{Done, Pcrypt};
use crate::recv::{drain, drain_many, drain_raw_v6, drain_udp, header_checked};
use crate::send::{SendFds, Sender};
use crate::stats::{Report, SaReport, Stats};

mod hands;
use crate::steer::{self, RawKind};
use crate::sys;
use hands::{owned_copy, Hands};

/// Receive buffer of the raw and UDP sockets: room for a burst of ~5000
/// MTU-sized packets while the worker is busy with the TUN side.
pub(crate) const RECV_BUFFER: usize = 8 << 20;
/// How long a poll waits before checking for shutdown.
const POLL_MS: i32 = 200;
/// Spare handoff buffers a worker keeps.
const POOL: usize = 256;

/// Why a worker could not start, or stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum WorkerError {
    /// One of its sockets could not be set up: which step, and why.
    Setup {
        what: &'static str,
        source: std::io::Error,
    },
    /// poll(2) failed.
    Poll(std::io::Error),
    /// Reading its TUN queue failed: the device is gone.
    Tun(std::io::Error),
    /// The thread panicked.
    Panicked,
}

impl core::fmt::Display for WorkerError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            WorkerError::Setup { what, source } => write!(f, "{what}: {source}"),
            WorkerError::Poll(e) => write!(f, "poll: {e}"),
            WorkerError::Tun(e) => write!(f, "TUN device: {e}"),
            WorkerError::Panicked => f.write_str("panicked"),
        }
    }
}

impl std::error::Error for WorkerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WorkerError::Setup { source, .. } => Some(source),
            WorkerError::Poll(e) | WorkerError::Tun(e) => Some(e),
            WorkerError::Panicked => None,
        }
    }
}

/// The descriptors of one worker.
pub struct Io {
    /// Every worker's TUN queue (this one reads `tuns[index]`), shared so
    /// that a decapsulated packet can be written into the queue of the
    /// worker that owns its replies; closed once all workers are gone.
    pub tuns: Arc<Vec<OwnedFd>>,
    /// The TUN device's offloads (and whether `link` is open).
    pub opts: IoOptions,
    /// Raw receivers: (socket, IP version, protocol). With a fanout
    /// group they see only datagrams the kernel reassembled.
    pub raw: Vec<(OwnedFd, IpVersion, u8)>,
    /// This worker's sockets of the raw ESP/AH fanout groups
    /// (`crate::fanout`): whole IP packets, each taken once.
    pub fanout: Vec<(OwnedFd, IpVersion)>,
    /// This worker's socket of the UDP 4500 group (RFC 3948), if the port
    /// could be had.
    pub udp: Option<OwnedFd>,
    /// Likewise over IPv6.
    pub udp6: Option<OwnedFd>,
    pub send4: OwnedFd,
    /// `None` where the host has no IPv6.
    pub send6: Option<OwnedFd>,
    /// A packet socket for raw IP packets to neighbors whose link hop the
    /// control plane found (`crate::nexthop`); `None` with `--esp-send raw`.
    pub link: Option<OwnedFd>,
}

/// How the workers' descriptors are used, the same for every worker.
#[derive(Debug, Clone, Copy, Default)]
pub struct IoOptions {
    /// The TUN device speaks virtio headers (`--no-offload` turns it off).
    pub offload: bool,
    /// ... and took UDP segmentation offload (kernels since 6.2; only
    /// ever with `offload`).
    pub uso: bool,
    /// A packet socket for link hops (`--esp-send link`).
    pub send_link: bool,
}

impl Io {
    /// Open worker `index`'s descriptors (of `workers`); `udp` and `udp6`
    /// are its sockets of the 4500 groups, `fanout` its sockets of the raw
    /// ESP/AH groups, opened by the caller in worker order.
    pub fn open(
        tuns: Arc<Vec<OwnedFd>>,
        (index, workers): (usize, usize),
        (udp, udp6): (Option<OwnedFd>, Option<OwnedFd>),
        fanout: Vec<(OwnedFd, IpVersion)>,
        opts: IoOptions,
    ) -> Result<Io, WorkerError> {
        let setup =
            |what: &'static str, source: std::io::Error| WorkerError::Setup { what, source };
        let mut raw = Vec::new();
        let mut receiver = |kind: RawKind, version, protocol: u8| -> Result<(), WorkerError> {
            let fd = match version {
                IpVersion::V4 => sys::raw_receiver_v4(protocol),
                IpVersion::V6 => sys::raw_receiver_v6(protocol),
            }
            .map_err(|e| setup("raw receive socket", e))?;
            if workers > 1 {
                sys::attach_filter(fd.as_fd(), &steer::raw_filter(kind, workers, index))
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
                    tracing::warn!(target: "net", "no IPv6 ({e}): IPv4 outer headers only");
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
            sys::set_recv_buffer(fd.as_fd(), RECV_BUFFER)
                .map_err(|e| setup("receive buffer", e))?;
        }
        let send4 = sys::raw_sender_v4().map_err(|e| setup("raw send socket", e))?;
        let link = opts.send_link.then(sys::packet_sender).transpose();
        let link = link.map_err(|e| setup("packet send socket", e))?;
        // Marked, so that the routes into the TUN pass them by (and qdiscs
        // can tell them).
        for fd in [
            Some(&send4),
            send6.as_ref(),
            udp.as_ref(),
            udp6.as_ref(),
            link.as_ref(),
        ]
        .into_iter()
        .flatten()
        {
            sys::set_mark(fd.as_fd(), crate::routes::BYPASS_MARK)
                .map_err(|e| setup("SO_MARK", e))?;
        }
        Ok(Io {
            tuns,
            opts,
            raw,
            fanout,
            udp,
            udp6,
            send4,
            send6,
            link,
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
            sys::attach_reuseport_program(group[0].as_fd(), &steer::reuseport_program(workers))?;
        }
        Ok(group)
    });
    match group {
        Ok(group) => Some(group),
        Err(e) => {
            let family = if v6 { "IPv6" } else { "IPv4" };
            tracing::warn!(target: "net", "UDP port {NAT_T_PORT} ({family}): {e}: no ESP in UDP over {family}");
            None
        }
    }
}

/// Everything one worker thread owns.
pub struct Worker {
    /// Where IKE messages arriving on UDP 4500 go (the kernel steers them
    /// to worker 0), and acquires for trap policies; `None` without IKE.
    pub ike: Option<crate::channels::IkeSink>,
    /// ESP over TCP streams (RFC 9329) leaves through here.
    pub stream: Option<crate::channels::StreamSink>,
    pub index: usize,
    pub workers: usize,
    pub io: Io,
    /// Its databases and the decisions taken on them.
    pub dp: Datapath,
    pub rx: Inbox,
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

/// A worker's packet buffers, each large enough for any datagram.
struct Bufs {
    /// Reads from the TUN device, raw IPv6 and UDP sockets land here.
    buf: PacketBuf,
    /// Raw IPv4 receives land here, a batch per recvmmsg(2).
    many: Vec<PacketBuf>,
    /// Segments of a TCP super-packet (or of a UDP GRO batch) are built here.
    seg: PacketBuf,
}

impl Bufs {
    fn new() -> Self {
        let big = || PacketBuf::new(BIG_BUFFER, DEFAULT_HEADROOM);
        Bufs {
            buf: big(),
            many: (0..sys::MAX_BATCH).map(|_| big()).collect(),
            seg: big(),
        }
    }
}

/// What a worker polls, in this order: its TUN queue, the raw receivers,
/// the fanout sockets, UDP 4500 (IPv4, IPv6), the mailbox's eventfd.
struct PollSet {
    fds: Vec<i32>,
    ready: Vec<bool>,
    fanout_at: usize,
    udp_at: usize,
    udp6_at: usize,
    mailbox_at: usize,
}

impl PollSet {
    fn new(io: &Io, index: usize, wake: i32) -> Self {
        let mut fds = vec![io.tuns[index].as_raw_fd()];
        fds.extend(io.raw.iter().map(|(fd, _, _)| fd.as_raw_fd()));
        let fanout_at = fds.len();
        fds.extend(io.fanout.iter().map(|(fd, _)| fd.as_raw_fd()));
        let udp_at = fds.len();
        fds.extend(io.udp.as_ref().map(|fd| fd.as_raw_fd()));
        let udp6_at = fds.len();
        fds.extend(io.udp6.as_ref().map(|fd| fd.as_raw_fd()));
        let mailbox_at = fds.len();
        fds.push(wake);
        PollSet {
            ready: vec![false; fds.len()],
            fds,
            fanout_at,
            udp_at,
            udp6_at,
            mailbox_at,
        }
    }
}

/// Per-loop state of a worker.
struct State {
    send: Sender,
    stats: Stats,
    pool: Vec<PacketBuf>,
    /// Peers that were handed packets since they were last woken.
    to_wake: Vec<bool>,
    /// Decapsulated packets on their way into the TUN device.
    tun_out: TunOut,
    /// Pcrypt jobs in flight and their order.
    pcrypt: Pcrypt,
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
    pub fn run(mut self) -> Result<Stats, WorkerError> {
        let mut st = State {
            send: Sender::new(
                SendFds {
                    send4: self.io.send4.as_raw_fd(),
                    send6: self.io.send6.as_ref().map(|fd| fd.as_raw_fd()),
                    udp4: self.io.udp.as_ref().map(|fd| fd.as_raw_fd()),
                    udp6: self.io.udp6.as_ref().map(|fd| fd.as_raw_fd()),
                    link: self.io.link.as_ref().map(|fd| fd.as_raw_fd()),
                },
                self.mtu,
            )
            .with_stream(self.stream.clone()),
            stats: Stats::default(),
            pool: Vec::new(),
            to_wake: vec![false; self.workers],
            tun_out: TunOut {
                fds: self.io.tuns.iter().map(|fd| fd.as_raw_fd()).collect(),
                queue: self.index,
                gro: self
                    .io
                    .opts
                    .offload
                    .then(|| Coalescer::new(self.io.opts.uso)),
                mtu: self.mtu,
                ids: FragmentIds::default(),
            },
            pcrypt: Pcrypt::default(),
        };
        let mut bufs = Bufs::new();
        let mut poll = PollSet::new(&self.io, self.index, self.wake.as_raw_fd());
        while !self.stop.load(Ordering::Relaxed) {
            sys::poll_readable(&poll.fds, POLL_MS, &mut poll.ready).map_err(WorkerError::Poll)?;
            if poll.ready.contains(&true) {
                st.stats.wakeups += 1;
            }
            if poll.ready[poll.mailbox_at] {
                sys::clear_wake(self.wake.as_fd());
            }
            // Also when not woken: recycled buffers arrive without a wake.
            self.take_mail(&mut st);
            let now = self.start.elapsed();
            st.send.tick(now);
            self.receive(&poll, &mut bufs, now, &mut st);
            st.tun_out.flush(&mut st.stats);
            if poll.ready[0] {
                self.read_tun(&mut bufs, now, &mut st)?;
            }
            st.send.flush(&mut st.stats);
            for (k, wake) in st.to_wake.iter_mut().enumerate() {
                if std::mem::take(wake) {
                    self.peers[k].wake();
                }
            }
        }
        self.count_queue_full(&mut st.stats);
        Ok(st.stats)
    }

    /// What the kernel could not queue on this worker's fanout sockets
    /// since the last look (read, and reset, by PACKET_STATISTICS).
    fn count_queue_full(&self, stats: &mut Stats) {
        for (fd, _) in &self.io.fanout {
            let lost = sys::packet_drops(fd.as_fd()).unwrap_or(0);
            stats.esp_queue_full += u64::from(lost);
        }
    }

    /// Drain the raw receivers and UDP sockets that are ready, delivering
    /// what the datapath lets through and passing IKE messages on.
    fn receive(&mut self, poll: &PollSet, bufs: &mut Bufs, now: Duration, st: &mut State) {
        let mut hands = Hands {
            dp: &mut self.dp,
            ike: self.ike.as_ref(),
            peers: &self.peers,
            index: self.index,
            mtu: self.mtu,
        };
        for (k, (fd, version, protocol)) in self.io.raw.iter().enumerate() {
            if poll.ready[1 + k] {
                let mut f = |b: &mut PacketBuf| hands.inbound(b, None, now, st);
                match version {
                    IpVersion::V4 => drain_many(fd.as_fd(), &mut bufs.many, &mut f),
                    IpVersion::V6 => drain_raw_v6(fd.as_fd(), *protocol, &mut bufs.buf, &mut f),
                }
            }
        }
        for (k, (fd, _)) in self.io.fanout.iter().enumerate() {
            if poll.ready[poll.fanout_at + k] {
                drain_many(fd.as_fd(), &mut bufs.many, &mut |b: &mut PacketBuf| {
                    // Taken off the link: IP has not checked its header.
                    if !header_checked(b.as_slice()) {
                        st.stats.drops.count(DropReason::BadIpHeader);
                        return;
                    }
                    hands.inbound(b, None, now, st)
                });
            }
        }
        for (socket, at) in [(&self.io.udp, poll.udp_at), (&self.io.udp6, poll.udp6_at)] {
            if let (Some(udp), true) = (socket, poll.ready[at]) {
                drain_udp(udp.as_fd(), &mut bufs.buf, &mut bufs.seg, &mut |b, from| {
                    hands.inbound(b, Some(from), now, st)
                });
            }
        }
    }

    /// Drain the TUN queue: protect and send what the datapath decides.
    fn read_tun(
        &mut self,
        bufs: &mut Bufs,
        now: Duration,
        st: &mut State,
    ) -> Result<(), WorkerError> {
        let tun = self.io.tuns[self.index].as_raw_fd();
        let seg = &mut bufs.seg;
        drain(tun, &mut bufs.buf, |b| {
            if self.io.opts.offload {
                self.offloaded_from_tun(b, seg, now, st)
            } else {
                self.outbound(b, Source::TUN, now, st)
            }
        })
        .map_err(WorkerError::Tun)
    }

    fn take_mail(&mut self, st: &mut State) {
        while let Ok(msg) = self.rx.msgs.try_recv() {
            match msg {
                Msg::Apply(mut changes, done) => {
                    changes.retain(|c| match c {
                        WorkerChange::NextHop(pair, hop) => {
                            st.send.set_hop(*pair, *hop);
                            false
                        }
                        _ => true,
                    });
                    self.dp.db.apply(changes);
                    let _ = done.send(self.index);
                }
                Msg::Report(reply) => {
                    self.count_queue_full(&mut st.stats);
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
                    let _ = self.peers[from].hand(Msg::Recycle(buf));
                }
                Msg::Recycle(buf) => st.recycle(buf),
                // Pcrypt: another worker's packet, numbered by its owner.
                Msg::Seal { mut buf, job } => {
                    let now = self.start.elapsed();
                    let egress = self
                        .dp
                        .seal_assigned(&mut buf, job.numbered, now, &mut st.stats);
                    self.returned(job.owner, Done::Sealed { job, buf, egress }, st);
                }
                Msg::Stream(frames) => {
                    let now = self.start.elapsed();
                    for (from, esp) in frames {
                        let Some(mut b) = hands::owned_copy(&esp, self.mtu, st) else {
                            continue;
                        };
                        self.hands().inbound(&mut b, Some(&from), now, st);
                        st.recycle(b);
                    }
                }
                Msg::Open { mut buf, job } => {
                    let now = self.start.elapsed();
                    let (from, a) = (job.from, job.numbered);
                    let opened =
                        self.dp
                            .open_assigned(&mut buf, from.as_ref(), a, now, &mut st.stats);
                    self.returned(job.owner, Done::Opened { job, buf, opened }, st);
                }
            }
        }
        // Pcrypt: our jobs that other workers did.
        let mut any = false;
        while let Ok(done) = self.rx.done.try_recv() {
            let order = done.order();
            let done_in = match done {
                Done::Sealed { .. } => st.pcrypt.seal.complete(order, done),
                Done::Opened { .. } => st.pcrypt.open.complete(order, done),
            };
            any |= done_in;
        }
        if any {
            let now = self.start.elapsed();
            self.hands().release(now, st);
        }
    }

    /// Pcrypt: give a job back to its owner, through its return channel
    /// (never full: see `crate::pcrypt`).
    fn returned(&self, owner: usize, done: Done, st: &mut State) {
        st.stats.crypto_done += 1;
        if owner == self.index {
            // Not sent to ourselves; here for completeness.
            return;
        }
        // Cannot fail but when the owner is gone (the daemon is going
        // down): its window bounds what it awaits.
        if self.peers[owner].return_job(done) {
            st.to_wake[owner] = true;
        }
    }

    /// The parts of this worker that the packet steps borrow.
    fn hands(&mut self) -> Hands<'_> {
        Hands {
            dp: &mut self.dp,
            ike: self.ike.as_ref(),
            peers: &self.peers,
            index: self.index,
            mtu: self.mtu,
        }
    }

    fn report(&self, stats: &Stats) -> Report {
        let now = self.start.elapsed();
        Report {
            worker: self.index,
            stats: stats.clone(),
            sas: self
                .dp
                .db
                .sad
                .iter()
                .map(|sa| SaReport {
                    id: sa.id(),
                    live: SaLive::of(sa, now),
                    stats: *sa.stats(),
                    replay_window: sa.replay_window().size(),
                    worker: (sa.usage().packets > 0).then_some(self.index),
                    src: Some(sa.src()),
                })
                .collect(),
        }
    }

    /// A packet from a TUN device with offloads: behind its virtio header,
    /// a TCP or UDP super-packet to cut, or a packet whose checksum may be
    /// partial.
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
            let cut = offload::segment(b.as_slice(), &hdr, seg, |s| {
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
    /// another worker, or put together from fragments: `from`), as the
    /// datapath decides.
    fn outbound(&mut self, buf: &mut PacketBuf, from: Source, now: Duration, st: &mut State) {
        let latest_spd = self.spd_epoch.load(Ordering::Acquire);
        let stats = &mut st.stats;
        match self.dp.outbound(buf, from, now, latest_spd, stats) {
            // Larger than anything the TUN MTU lets in: fragmented after
            // ESP where it must be (RFC 4303 §3.3.4).
            datapath::Outbound::Send {
                egress,
                whole: true,
            } => st.send.fragmenting(buf.as_slice(), egress, stats),
            datapath::Outbound::Send { egress, .. } => {
                st.send.sealed(buf.as_slice(), egress, stats)
            }
            datapath::Outbound::Clear => self.send_clear(buf, st),
            datapath::Outbound::HandOff { to, whole } => {
                self.hand_off(to, buf.as_slice(), whole, st)
            }
            datapath::Outbound::Crypto { numbered, whole } => {
                self.hands().dispatch_seal(buf, numbered, whole, now, st)
            }
            datapath::Outbound::Acquire(reqid) => {
                if let Some(sink) = &self.ike {
                    sink.acquire(reqid);
                }
            }
            datapath::Outbound::Done => {}
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
        let Some(buf) = owned_copy(packet, self.mtu, st) else {
            st.stats.handoff_drops += 1;
            return;
        };
        let msg = Msg::Packet {
            buf,
            from: self.index,
            whole,
        };
        match self.peers[owner].hand(msg) {
            Ok(()) => {
                st.stats.handed_off += 1;
                st.to_wake[owner] = true;
            }
            Err(refused) => {
                st.stats.handoff_drops += 1;
                if let Msg::Packet { buf, .. } = refused {
                    st.recycle(buf);
                }
            }
        }
    }
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
