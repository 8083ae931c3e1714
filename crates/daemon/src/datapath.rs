//! The data path's decisions, without I/O: a worker reads a packet and
//! asks [`Datapath`] what to do with it; the answer is an action the worker
//! carries out with its sockets and TUN queues. Nothing
//! here reads the clock (`now` is an argument) or touches a descriptor, so
//! every decision is unit-tested directly (the tests at the bottom).
//!
//! ```text
//! outbound: packet from the TUN → flow → SPD (a fragment whose policy
//!           needs ports: gathered on one worker and reassembled first)
//!           → DISCARD: dropped · BYPASS or none: Clear
//!           → PROTECT: owner of its SAs? else HandOff
//!           → bundle → seal → Send(egress) · no SA: Acquire(reqid)
//!           · transport mode meets a fragment: reassembled, then again
//! inbound:  IP packet (raw socket) or UDP payload + endpoints
//!           → decapsulate → IKE behind the marker: Ike
//!           → inner flow (a fragment whose policy needs ports: reassembled)
//!           → inbound policy check → Deliver(queue of the replies' owner)
//! ```
//!
//! Ownership (ARCHITECTURE.md "Data path"): inbound, the kernel steers an
//! SA's packets to worker `spi % n`, so its replay window has one writer;
//! outbound, one worker owns all SAs between a pair of endpoints
//! ([`owner_of_endpoints`]), so a sequence number (and with it a GCM or
//! ChaCha nonce) is never used twice: a packet read by another worker is
//! handed to the owner, unless ([`Parallel::Flow`]) that worker has its
//! own per-resource SAs for the policy, which only it seals with. In
//! [`Parallel::Pcrypt`] the owner still numbers every packet and keeps
//! the replay window, and only the crypto moves.

use std::net::IpAddr;
use std::time::Duration;

use flowsec_ipsec::assigned::{self, Assigned, Opened};
use flowsec_ipsec::buf::{DEFAULT_HEADROOM, DEFAULT_TAILROOM};
use flowsec_ipsec::process::{self, Bundle};
use flowsec_ipsec::reassembly::Reassembler;
use flowsec_ipsec::spd::SaTemplate;
use flowsec_ipsec::Sealer;
use flowsec_ipsec::{
    Action, Direction, DropReason, Egress, Flow, OpaqueLookup, PacketBuf, Policy, Protocol,
    SealError, Spd, SpdCache, UdpEndpoints,
};

use crate::offload::VNET_HDR_LEN;
use crate::pcrypt::Numbered;
use crate::stats::Stats;

mod db;
pub use db::Databases;

/// Datagrams a worker reassembles at once, at most (64 KiB each), in each
/// direction.
const REASSEMBLING: usize = 64;
/// Room for the largest datagram reassembly can produce, with headroom for
/// the headers sealing adds and a virtio header.
pub const BIG_BUFFER: usize = DEFAULT_HEADROOM + 65_536 + VNET_HDR_LEN + DEFAULT_TAILROOM;
/// How often a worker asks IKE for the SA of one trap policy.
const ACQUIRE_EVERY: Duration = Duration::from_secs(1);
/// Trap policies whose last acquire a worker remembers.
const ACQUIRED: usize = 64;

/// How a gateway pair's traffic spreads over the workers (`flowsec up
/// --parallel`; study S5's three systems).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Parallel {
    /// One SA per policy at a time, sealed by the worker that owns the
    /// endpoint pair (Linux's default in S5): per-resource marks are
    /// ignored, the youngest SA of a set seals.
    Default,
    /// Per-resource SAs (RFC 9611, S5's flow-parallel system): a worker
    /// seals with its own SA of the policy's set where it has one, so the
    /// packet is not handed over; else the endpoint pair's owner seals
    /// with its own SA of the set, or the fallback SA. With one SA per
    /// policy this is the default mode exactly.
    #[default]
    Flow,
    /// Parallel crypto on one SA (Linux's pcrypt in S5): as in the default
    /// mode one worker owns the SA, numbers its packets and keeps its
    /// replay window, but the crypto of a tunnel-mode ESP SA runs on every
    /// worker in turn, and the owner sends or delivers the results in
    /// their order (`crate::pcrypt`, `flowsec_ipsec::assigned`).
    Pcrypt,
}

/// Where an outbound packet comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Source {
    /// Another worker read it (it does not own the packet's SAs).
    pub handed: bool,
    /// Put together from fragments: for transport mode, or to look up a
    /// policy that depends on ports (RFC 4301 §7).
    pub whole: bool,
}

impl Source {
    /// This worker's TUN queue.
    pub const TUN: Source = Source {
        handed: false,
        whole: false,
    };
    /// Reassembled here.
    pub const REASSEMBLED: Source = Source {
        handed: false,
        whole: true,
    };
}

/// What to do with a packet from the TUN device. Drops are counted in the
/// [`Stats`] given, and end as [`Outbound::Done`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outbound {
    /// The buffer holds the protected packet: send it where `egress` says.
    /// `whole`: a reassembled datagram, to be fragmented after IPsec where
    /// it does not fit (RFC 4303 §3.3.4).
    Send { egress: Egress, whole: bool },
    /// Send it on as it is, in the clear: a BYPASS policy, or none, covers
    /// it (setkey's default).
    Clear,
    /// Worker `to` owns its SAs (or gathers its fragments): hand it over.
    HandOff { to: usize, whole: bool },
    /// Pcrypt: numbered here, to be sealed by whichever worker's turn it
    /// is ([`Datapath::seal_assigned`]) and sent in order.
    Crypto { numbered: Numbered, whole: bool },
    /// No SA for its policy yet: dropped; ask IKE for policy `reqid` (at
    /// most once a second per reqid).
    Acquire(u32),
    /// Nothing more: held for reassembly, or dropped (counted).
    Done,
}

/// What to do with a packet from the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inbound {
    /// The buffer holds the packet to write to the TUN device, through the
    /// queue of this worker: the one that owns its replies' outbound SAs
    /// (the TUN device sends a flow's packets to the queue that last wrote
    /// the flow, so the replies need no handoff).
    Deliver(usize),
    /// The buffer holds an IKE message that came on the encapsulation port
    /// behind the non-ESP marker (RFC 3948 §2.2), marker removed.
    Ike,
    /// Pcrypt: its number passed this worker's replay window; to be opened
    /// by whichever worker's turn it is ([`Datapath::open_assigned`]) and
    /// finished here in order ([`Datapath::finish_inbound`]).
    Crypto(Numbered),
    /// Nothing more: a keepalive, a fragment held for reassembly, or a
    /// drop (counted).
    Done,
}

/// One worker's databases and the state its decisions keep: reassembly
/// tables, and when it last asked for each trap policy's SA.
pub struct Datapath {
    /// Its copy of the SAD and SPD (changes arrive between batches).
    pub db: Databases,
    index: usize,
    workers: usize,
    parallel: Parallel,
    /// Fragments from the TUN device waiting for the rest of their datagram.
    frags: Reassembler,
    /// Decapsulated fragments whose policy their ports decide.
    inner_frags: Reassembler,
    /// Where a completed datagram is built; swapped into the caller's buffer.
    whole: PacketBuf,
    /// (reqid, when it was last acquired).
    acquired: Vec<(u32, Duration)>,
    /// SPD lookups remembered per flow.
    spd_cache: SpdCache,
}

impl Datapath {
    /// Worker `index` of `workers`, with databases `db`, in the
    /// [`Parallel::Flow`] mode.
    pub fn new(index: usize, workers: usize, db: Databases) -> Self {
        Datapath {
            db,
            index,
            workers,
            parallel: Parallel::default(),
            frags: Reassembler::new(REASSEMBLING),
            inner_frags: Reassembler::new(REASSEMBLING),
            whole: PacketBuf::new(BIG_BUFFER, DEFAULT_HEADROOM),
            acquired: Vec::new(),
            spd_cache: SpdCache::default(),
        }
    }

    /// The same in another mode.
    pub fn with_parallel(self, parallel: Parallel) -> Self {
        Datapath { parallel, ..self }
    }

    /// Whom `resolve` chooses SAs for.
    fn sealer(&self) -> Sealer {
        match self.parallel {
            Parallel::Default | Parallel::Pcrypt => Sealer::Any,
            Parallel::Flow => Sealer::Worker {
                index: self.index as u32,
                of: self.workers as u32,
            },
        }
    }

    /// Whether this worker seals `bundle` itself though another owns the
    /// policy's endpoint pair: every SA of it that numbers its packets is
    /// this worker's own per-resource SA (the sealer admits no other
    /// worker's); IPComp numbers nothing, and every worker has its own
    /// copy of each SA's compressor.
    fn all_own(&self, bundle: &Bundle) -> bool {
        if self.parallel != Parallel::Flow {
            return false;
        }
        let mut own = false;
        for h in bundle.iter() {
            match self.db.sad.get(h) {
                Some(sa) if sa.cpu().is_some() => own = true,
                Some(sa) if sa.id().protocol == Protocol::IpComp => {}
                _ => return false,
            }
        }
        own
    }

    /// Decide, and where it is to be sent, seal, the packet in `buf` read
    /// by this worker's TUN queue or handed over (`from`). `latest_spd` is
    /// the epoch of the control plane's latest SPD change: a worker that
    /// has not taken it yet sends nothing in the clear. A fragment that
    /// completes a datagram leaves the datagram in `buf` (the buffers are
    /// swapped) and the answer is the datagram's.
    pub fn outbound(
        &mut self,
        buf: &mut PacketBuf,
        from: Source,
        now: Duration,
        latest_spd: u64,
        stats: &mut Stats,
    ) -> Outbound {
        let mut from = from;
        loop {
            match self.outbound_step(buf, from, now, latest_spd, stats) {
                Step::Decided(verdict) => return verdict,
                // Not a fragment now: looked up and sealed as any other
                // packet, on this worker (the owner of the endpoint pair,
                // which every fragment carries).
                Step::Reassemble if self.reassemble(buf, now, stats) => from = Source::REASSEMBLED,
                Step::Reassemble => return Outbound::Done,
            }
        }
    }

    /// One pass of a packet through the outbound path: its policy, what
    /// the policy says, and (to protect it) its SAs and the seal.
    fn outbound_step(
        &mut self,
        buf: &mut PacketBuf,
        from: Source,
        now: Duration,
        latest_spd: u64,
        stats: &mut Stats,
    ) -> Step {
        let flow = match Flow::of_packet(buf.as_slice()) {
            Ok(flow) => flow,
            Err(reason) => return dropped(stats, reason),
        };
        let policy = if flow.fragment {
            match self.db.spd.lookup_opaque(Direction::Out, &flow) {
                OpaqueLookup::Decided(policy) => policy,
                OpaqueLookup::NeedsPorts => return self.gather_fragment(&flow, from, stats),
            }
        } else {
            self.spd_cache.lookup(&self.db.spd, Direction::Out, &flow)
        };
        let spd_epoch = self.db.spd_epoch;
        let templates = match protect_with(policy, &flow, spd_epoch, latest_spd, stats) {
            Ok(templates) => templates,
            Err(step) => return step,
        };
        // Flow-parallel: a worker with its own SAs for the policy seals
        // here; everyone else hands the packet to the owner of the
        // endpoint pair, which seals with its own SAs, else the fallback.
        let sealer = self.sealer();
        let resolved = process::resolve_by(&self.db.sad, templates, &flow, now, sealer);
        let own = matches!(&resolved, Ok(bundle) if self.all_own(bundle));
        let owner = owner_of(templates, &flow, self.workers);
        if !own && owner != self.index {
            return Step::Decided(hand_off(owner, from, stats));
        }
        let pcrypt = self.parallel == Parallel::Pcrypt;
        let sealed = resolved.and_then(|bundle| {
            if pcrypt {
                if let Some(a) = assigned::reserve_outbound(&mut self.db.sad, &bundle, buf, now)? {
                    return Ok(Err(a));
                }
            }
            process::outbound(&mut self.db.sad, &bundle, buf, now).map(Ok)
        });
        match sealed {
            Ok(Ok(egress)) => Step::Decided(Outbound::Send {
                egress,
                whole: from.whole,
            }),
            Ok(Err(assigned)) => Step::Decided(Outbound::Crypto {
                numbered: self.numbered(assigned),
                whole: from.whole,
            }),
            // A fragment refused by a transport-mode step, untouched: put
            // its datagram together first.
            Err(SealError::Reassemble) if !from.whole => Step::Reassemble,
            // Reassembly produces whole datagrams only.
            Err(SealError::Reassemble) => dropped(stats, DropReason::BadFragment),
            Err(SealError::NoSa) => {
                stats.no_outbound_sa += 1;
                let reqid = templates.iter().map(|t| t.reqid).find(|r| *r != 0);
                Step::Decided(self.acquire(reqid, now))
            }
            Err(SealError::Drop(reason)) => dropped(stats, reason),
        }
    }

    /// A fragment whose policy its ports decide, which only the first
    /// fragment has: never sent by a guess (RFC 4301 §7), but gathered on
    /// one worker (the endpoint pair's owner) and looked up whole.
    fn gather_fragment(&self, flow: &Flow, from: Source, stats: &mut Stats) -> Step {
        let owner = owner_of_endpoints(flow.src, flow.dst, self.workers);
        if owner != self.index {
            return Step::Decided(hand_off(owner, from, stats));
        }
        stats.fragments_held += 1;
        Step::Reassemble
    }

    /// Pcrypt, owner: `a` with the generation of this worker's copy of
    /// its SA.
    fn numbered(&self, a: Assigned) -> Numbered {
        Numbered {
            assigned: a,
            generation: self.db.generations.get(&a.id).copied().unwrap_or(0),
        }
    }

    /// Pcrypt: whether this worker's copy of the SA of `n` is the
    /// installation that numbered it; if not, the packet is dropped and
    /// counted (`crypto_stale_sa`, `crate::pcrypt`).
    fn same_generation(&self, n: &Numbered, stats: &mut Stats) -> bool {
        let ours = self.db.generations.get(&n.assigned.id).copied();
        let same = ours.unwrap_or(0) == n.generation;
        if !same {
            stats.crypto_stale_sa += 1;
        }
        same
    }

    /// Pcrypt, any worker: seal the packet in `buf` under the number its
    /// SA's owner assigned; where it goes, or `None` (a drop, counted).
    pub fn seal_assigned(
        &mut self,
        buf: &mut PacketBuf,
        n: Numbered,
        now: Duration,
        stats: &mut Stats,
    ) -> Option<Egress> {
        if !self.same_generation(&n, stats) {
            return None;
        }
        match assigned::seal_assigned(&mut self.db.sad, n.assigned, buf, now) {
            Ok(egress) => Some(egress),
            Err(SealError::Drop(reason)) => {
                stats.drops.count(reason);
                None
            }
            // The SA went while the packet was on its way.
            Err(_) => {
                stats.no_outbound_sa += 1;
                None
            }
        }
    }

    /// Pcrypt, any worker: verify and decrypt the packet in `buf` (from a
    /// raw socket, or a UDP payload `from`) under the number its SA's
    /// owner checked; `None` for a drop (counted).
    pub fn open_assigned(
        &mut self,
        buf: &mut PacketBuf,
        from: Option<&UdpEndpoints>,
        n: Numbered,
        now: Duration,
        stats: &mut Stats,
    ) -> Option<Opened> {
        if !self.same_generation(&n, stats) {
            return None;
        }
        match assigned::open_assigned(&mut self.db.sad, buf, from, n.assigned, now) {
            Ok(opened) => Some(opened),
            Err(reason) => {
                stats.drops.count(reason);
                None
            }
        }
    }

    /// Pcrypt, the SA's owner, in the packets' order: commit the number
    /// of a packet another worker opened, then whatever headers are left
    /// and the inbound policy check, as [`Datapath::inbound`] goes on.
    pub fn finish_inbound(
        &mut self,
        buf: &mut PacketBuf,
        n: Numbered,
        opened: Opened,
        now: Duration,
        stats: &mut Stats,
    ) -> Inbound {
        // The SA replaced meanwhile: its window is another's.
        if !self.same_generation(&n, stats) {
            return Inbound::Done;
        }
        let sad = &mut self.db.sad;
        let first = match assigned::commit_inbound(sad, n.assigned, buf.len(), now) {
            Ok(h) => h,
            Err(reason) => return dropped_in(stats, reason),
        };
        let applied = match opened {
            Opened::Done { ipcomp } => assigned::applied(sad, first, ipcomp),
            Opened::More => match assigned::inbound_rest(sad, buf, first, now) {
                Ok(process::Inbound::Decapsulated(applied)) => Ok(applied),
                Ok(process::Inbound::Ike) => return Inbound::Ike,
                Ok(process::Inbound::NatKeepalive) => return Inbound::Done,
                Err(reason) => Err(reason),
            },
            Opened::Other(process::Inbound::Ike) => return Inbound::Ike,
            Opened::Other(_) => return Inbound::Done,
        };
        let applied = match applied {
            Ok(applied) => applied,
            Err(reason) => return dropped_in(stats, reason),
        };
        match self.inner_flow(buf, &applied, now, stats) {
            Ok(Some(flow)) => self.check_inner(&flow, &applied, now, stats),
            Ok(None) => Inbound::Done,
            Err(reason) => dropped_in(stats, reason),
        }
    }

    /// Put the fragment in `buf` into the outbound table: true when it
    /// completed its datagram, which is then in `buf`.
    fn reassemble(&mut self, buf: &mut PacketBuf, now: Duration, stats: &mut Stats) -> bool {
        let before = self.frags.expired;
        self.ready_whole();
        let done = self.frags.push(buf.as_slice(), now, &mut self.whole);
        stats.fragments_expired += self.frags.expired - before;
        match done {
            Ok(true) => {
                stats.reassembled += 1;
                std::mem::swap(buf, &mut self.whole);
                true
            }
            Ok(false) => false,
            Err(reason) => {
                stats.drops.count(reason);
                false
            }
        }
    }

    /// An empty `whole` buffer that holds any datagram (a swap may have
    /// left a smaller one here: a handed-over packet's).
    fn ready_whole(&mut self) {
        if self.whole.capacity() < BIG_BUFFER {
            self.whole = PacketBuf::new(BIG_BUFFER, DEFAULT_HEADROOM);
        }
        self.whole.reset(DEFAULT_HEADROOM);
    }

    /// Ask IKE for the SA of policy `reqid` (a trap), at most once a second
    /// per reqid.
    fn acquire(&mut self, reqid: Option<u32>, now: Duration) -> Outbound {
        let Some(reqid) = reqid else {
            return Outbound::Done;
        };
        if let Some(at) = self.acquired.iter_mut().find(|(r, _)| *r == reqid) {
            if now < at.1 + ACQUIRE_EVERY {
                return Outbound::Done;
            }
            at.1 = now;
        } else {
            if self.acquired.len() >= ACQUIRED {
                self.acquired.remove(0);
            }
            self.acquired.push((reqid, now));
        }
        Outbound::Acquire(reqid)
    }

    /// Verify and decapsulate the packet in `buf` from the network: an IP
    /// packet from a raw socket, or (`from`) a UDP payload and the
    /// endpoints its socket reported; then check it against the inbound
    /// policies (RFC 4301 §5.2).
    pub fn inbound(
        &mut self,
        buf: &mut PacketBuf,
        from: Option<&UdpEndpoints>,
        now: Duration,
        stats: &mut Stats,
    ) -> Inbound {
        if self.parallel == Parallel::Pcrypt {
            match assigned::check_inbound(&mut self.db.sad, buf, from, now) {
                Ok(Some(a)) => return Inbound::Crypto(self.numbered(a)),
                Ok(None) => {}
                Err(reason) => return dropped_in(stats, reason),
            }
        }
        let sad = &mut self.db.sad;
        let decap = match from {
            None => process::inbound(sad, buf, now),
            Some(from) => process::inbound_udp(sad, buf, from, now),
        };
        let applied = match decap {
            Ok(process::Inbound::Decapsulated(applied)) => applied,
            Ok(process::Inbound::Ike) => return Inbound::Ike,
            Ok(process::Inbound::NatKeepalive) => return Inbound::Done,
            Err(reason) => return dropped_in(stats, reason),
        };
        match self.inner_flow(buf, &applied, now, stats) {
            Ok(Some(flow)) => self.check_inner(&flow, &applied, now, stats),
            Ok(None) => Inbound::Done,
            Err(reason) => dropped_in(stats, reason),
        }
    }

    /// The flow of the decapsulated packet in `buf`; a fragment whose
    /// policy its ports decide is first put together with the rest of its
    /// datagram (`None` while parts are missing), the datagram then in
    /// `buf`.
    fn inner_flow(
        &mut self,
        buf: &mut PacketBuf,
        applied: &Bundle,
        now: Duration,
        stats: &mut Stats,
    ) -> Result<Option<Flow>, DropReason> {
        let flow = Flow::of_packet(buf.as_slice()).map_err(|_| DropReason::BadInnerPacket)?;
        if !flow.fragment || self.inbound_opaque(&flow) != OpaqueLookup::NeedsPorts {
            return Ok(Some(flow));
        }
        // RFC 4301 §7: its ports decide, and a later fragment has none. It
        // must have come through an SA that some candidate policy allows;
        // its datagram is then put together and checked whole.
        let db = &self.db;
        let allowed = [Direction::Fwd, Direction::In].into_iter().any(|d| {
            db.spd
                .candidates(d, &flow)
                .any(|p| process::check_inbound(&db.sad, Some(p), applied).is_ok())
        });
        if !allowed {
            return Err(DropReason::NoInboundPolicy);
        }
        stats.fragments_held += 1;
        let before = self.inner_frags.expired;
        self.ready_whole();
        let done = self.inner_frags.push(buf.as_slice(), now, &mut self.whole);
        stats.fragments_expired += self.inner_frags.expired - before;
        if !done? {
            return Ok(None);
        }
        std::mem::swap(buf, &mut self.whole);
        let whole = Flow::of_packet(buf.as_slice()).map_err(|_| DropReason::BadInnerPacket)?;
        Ok(Some(whole))
    }

    /// Check a decapsulated packet's flow against the forward, then the
    /// inbound policies, and pick the queue to deliver it through.
    fn check_inner(
        &mut self,
        flow: &Flow,
        applied: &Bundle,
        now: Duration,
        stats: &mut Stats,
    ) -> Inbound {
        let policy = if flow.fragment {
            match self.inbound_opaque(flow) {
                OpaqueLookup::Decided(policy) => policy,
                OpaqueLookup::NeedsPorts => None,
            }
        } else {
            inbound_policy(&mut self.spd_cache, &self.db.spd, flow)
        };
        let Some(policy) = policy else {
            return dropped_in(stats, DropReason::NoInboundPolicy);
        };
        if let Err(reason) = process::check_inbound(&self.db.sad, Some(policy), applied) {
            return dropped_in(stats, reason);
        }
        Inbound::Deliver(self.reply_owner(flow, now))
    }

    fn inbound_opaque(&self, flow: &Flow) -> OpaqueLookup<'_> {
        match self.db.spd.lookup_opaque(Direction::Fwd, flow) {
            OpaqueLookup::Decided(None) => self.db.spd.lookup_opaque(Direction::In, flow),
            decided => decided,
        }
    }

    /// The worker that owns the outbound SAs of `flow`'s replies (this one
    /// when they are not protected).
    fn reply_owner(&mut self, flow: &Flow, now: Duration) -> usize {
        let reply = Flow {
            src: flow.dst,
            dst: flow.src,
            protocol: flow.protocol,
            src_port: flow.dst_port,
            dst_port: flow.src_port,
            fragment: flow.fragment,
        };
        let policy = self.spd_cache.lookup(&self.db.spd, Direction::Out, &reply);
        let Some(Action::Protect(templates)) = policy.map(|p| &p.action) else {
            return self.index;
        };
        if self.parallel == Parallel::Flow {
            // This worker seals the replies itself if it has its own SAs.
            let resolved = process::resolve_by(&self.db.sad, templates, &reply, now, self.sealer());
            if matches!(&resolved, Ok(bundle) if self.all_own(bundle)) {
                return self.index;
            }
        }
        owner_of(templates, &reply, self.workers)
    }
}

/// A gateway forwards what it decapsulates; a host keeps it.
fn inbound_policy<'s>(cache: &mut SpdCache, spd: &'s Spd, flow: &Flow) -> Option<&'s Policy> {
    cache
        .lookup(spd, Direction::Fwd, flow)
        .or_else(|| cache.lookup(spd, Direction::In, flow))
}

/// The outcome of one pass over an outbound packet.
enum Step {
    Decided(Outbound),
    /// Take the fragment in the buffer into the reassembly table, and go
    /// again with the datagram if it completed one.
    Reassemble,
}

/// What outbound `policy` (none: `None`) says of `flow`: the templates of
/// the SAs to protect it with, or the verdict without them (`Err`). A
/// worker whose SPD (`spd_epoch`) is older than the latest change sent
/// (`latest_spd`) sends nothing in the clear.
fn protect_with<'p>(
    policy: Option<&'p Policy>,
    flow: &Flow,
    spd_epoch: u64,
    latest_spd: u64,
    stats: &mut Stats,
) -> Result<&'p [SaTemplate], Step> {
    match policy.map(|p| &p.action) {
        Some(Action::Protect(templates)) => Ok(templates.as_slice()),
        Some(Action::Discard) => Err(dropped(stats, DropReason::PolicyDiscard)),
        None if link_scope(flow) => {
            stats.no_policy += 1;
            Err(Step::Decided(Outbound::Done))
        }
        // In the clear only by the latest policies: a worker that has
        // not taken a change yet cannot know that it still allows this.
        Some(Action::Bypass) | None if spd_epoch < latest_spd => {
            Err(dropped(stats, DropReason::PolicyStale))
        }
        Some(Action::Bypass) | None => Err(Step::Decided(Outbound::Clear)),
    }
}

fn dropped(stats: &mut Stats, reason: DropReason) -> Step {
    stats.drops.count(reason);
    Step::Decided(Outbound::Done)
}

fn dropped_in(stats: &mut Stats, reason: DropReason) -> Inbound {
    stats.drops.count(reason);
    Inbound::Done
}

/// Hand a packet to its owner, unless it was handed here already: the
/// policies changed while it was in flight (dropped, counted).
fn hand_off(owner: usize, from: Source, stats: &mut Stats) -> Outbound {
    if from.handed {
        stats.handoff_drops += 1;
        return Outbound::Done;
    }
    Outbound::HandOff {
        to: owner,
        whole: from.whole,
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

#[cfg(test)]
mod tests;
