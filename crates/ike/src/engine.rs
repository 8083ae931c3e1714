//! The IKE daemon's core: every IKE SA of this host, keyed by our SPI,
//! the dispatch of received messages to them, their timers, and the
//! user's commands (initiate, terminate, rekey).
//!
//! Sans-I/O: datagrams and `now` in; datagrams ([`Ike::poll_transmit`]),
//! [`Kernel`] calls, [`IkeEvent`]s ([`Ike::take_events`]) and the next
//! time to be polled ([`Ike::next_timeout`]) out. Nothing here reads a
//! clock, opens a socket or starts a thread.
//!
//! ```text
//!  handle(datagram) ─► IKE_SA_INIT request? ─► admit (COOKIE, per-address and global
//!                   │                          limits) ─► init_responder: a half-open IKE SA
//!                   └► our SPI ─► the IkeSa, borrowed in place ─► Host::open: ours? a
//!                      retransmitted request? SK open, rules::check
//!                         ├─ request:  message ID in order? ─► the exchange's responder
//!                         └─ response: answers our request?  ─► the task in flight goes on
//!                      ─► Then: the SA stays, goes, or a rekey adds one (Ike::then)
//!  poll(now) ─► retransmit / give up, rekey and lifetime timers, DPD, next queued task
//! ```

use core::time::Duration;
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;

use flowsec_crypto::Provider;
use flowsec_wire::iana::{ExchangeType, NotifyType};
use flowsec_wire::ike::{Header, IkeError, Message, PayloadType};

use crate::config::Config;
use crate::context::Cx;
use crate::counters::Counter;
use crate::event::IkeEvent;
use crate::exchange::RequestVerdict;
use crate::host::{notify, Host, Ike};
use crate::kernel::Kernel;
use crate::nat::follow_peer;
use crate::random::Random;
use crate::sa::{IkeState, Todo};
use crate::settings::Settings;
use flowsec_ipsec::SaId;

use crate::control::IkeSaInfo;
use crate::error::CommandError;
use crate::event::Reloaded;
use crate::stats::IkeStats;
use crate::table::{SaMut, SaTable, Slot, Then};
use crate::transport::{Arrival, Datagram, Transport};

impl Ike {
    /// The core for `config`, with `provider` for every algorithm and
    /// `rng` for every random value. Configured PRFs and key exchange
    /// groups that `provider` lacks are dropped, each with an event
    /// ([`crate::config::restrict_to`]).
    pub fn new(
        mut config: Config,
        provider: Provider,
        mut rng: Box<dyn Random>,
        settings: Settings,
    ) -> Ike {
        let mut events = crate::event_log::Events::default();
        for note in crate::config::restrict_to(&mut config, &provider) {
            events.push(IkeEvent::ConfigRestricted(note));
        }
        let cookies = crate::admit::CookieJar::new(rng.as_mut());
        let host = Host {
            conns: std::mem::take(&mut config.connections)
                .into_iter()
                .map(std::sync::Arc::new)
                .collect(),
            config,
            provider,
            rng,
            settings,
            out: VecDeque::new(),
            events,
            cookies,
            next_uid: 1,
            next_reqid: 1,
            policies: BTreeMap::new(),
            shadowed: Vec::new(),
            traps: BTreeMap::new(),
            holds: BTreeMap::new(),
            replacing: BTreeMap::new(),
            reauth_due: Vec::new(),
            redirect_due: Vec::new(),
            local_addrs: Vec::new(),
            gateway_load: BTreeMap::new(),
            lingering: Vec::new(),
            unix_at_zero: None,
            leases: Default::default(),
            stats: IkeStats::default(),
            counters: Default::default(),
        };
        Ike {
            host,
            sas: SaTable::default(),
        }
    }

    /// The wall clock: `unix` (since the Unix epoch) is the time at
    /// `now`. Certificates are checked against it; without it a peer's
    /// certificate is refused (the core never reads a clock itself). Call
    /// it at start and now and then (the daemon does on every loop), so
    /// that a clock step is followed.
    pub fn set_wall_clock(&mut self, now: Duration, unix: Duration) {
        self.host.unix_at_zero = unix.checked_sub(now);
    }

    /// Counters.
    pub fn stats(&self) -> &IkeStats {
        &self.host.stats
    }

    /// charon's counters, in total and per connection (vici
    /// `get-counters`).
    pub fn counters(&self) -> &crate::counters::Counters {
        &self.host.counters
    }

    /// Set charon's counters back to zero (vici `reset-counters`):
    /// connection `conn`'s, the totals (`None`), or all (`all`).
    pub fn reset_counters(&mut self, conn: Option<&str>, all: bool) {
        match all {
            true => self.host.counters.reset_all(),
            false => self.host.counters.reset(conn),
        }
    }

    /// The next datagram to send.
    pub fn poll_transmit(&mut self) -> Option<Datagram> {
        self.host.out.pop_front()
    }

    /// What happened since the last call, in order; each `Display`s as
    /// its log line (never a key).
    pub fn take_events(&mut self) -> Vec<IkeEvent> {
        self.host
            .events
            .take()
            .into_iter()
            .map(|l| l.event)
            .collect()
    }

    /// [`Ike::take_events`] with the IKE SA each happened in (for a log
    /// that prints strongSwan's `<name|id>`).
    pub fn take_logged(&mut self) -> Vec<crate::event_log::Logged> {
        self.host.events.take()
    }

    /// Bring up the children whose `start_action` is `start`, and install
    /// the trap policies of those with `trap`.
    pub fn start(&mut self, now: Duration, k: &mut dyn Kernel) {
        let all = self.host.conns.clone();
        crate::reload::start_connections(self, now, &all, k);
    }

    /// The connections it runs (not those a reload retired, whose IKE
    /// SAs are being deleted).
    pub fn connections(&self) -> &[crate::config::ConnRef] {
        &self.host.conns
    }

    /// The virtual IP pools of the configuration.
    pub fn pools(&self) -> &[crate::config::Pool] {
        &self.host.config.pools
    }

    /// The trap policies (`start_action = trap`): each child config with
    /// its connection, in reqid order.
    pub fn traps(&self) -> Vec<(crate::config::ConnRef, usize)> {
        self.host.traps.values().cloned().collect()
    }

    /// The certificates, keys and CRLs of the configuration.
    pub fn credentials(&self) -> &crate::cert::Credentials {
        &self.host.config.credentials
    }

    /// A packet matched the trap policy of `reqid` (the data plane found
    /// no SA for it): negotiate its Child SA, unless that is under way.
    pub fn acquire(&mut self, now: Duration, reqid: u32, k: &mut dyn Kernel) {
        let Some((conn, cj)) = self.host.traps.get(&reqid).cloned() else {
            return;
        };
        let busy = self.sas.values().any(|sa| {
            Arc::ptr_eq(&sa.conn, &conn)
                && (matches!(sa.state, IkeState::Connecting | IkeState::Authenticating)
                    && sa.exch.task().and_then(|t| t.first_child()) == Some(cj)
                    // A per-resource SA serves only its worker: with no
                    // fallback left, the others' traffic asks for one.
                    || sa.children.iter().any(|c| c.cfg == cj && c.cpu.is_none())
                    || sa.queue.contains(&Todo::CreateChild(cj))
                    || sa.exch.task().and_then(|t| t.child_cfg()) == Some(cj))
        });
        if busy {
            return;
        }
        let (conn, child) = (conn.name.clone(), conn.children[cj].name.clone());
        self.host.events.push(IkeEvent::Acquire {
            child: child.clone(),
            reqid,
        });
        if let Err(e) = self.initiate(now, Some(&conn), Some(&child), k) {
            self.host.events.push(IkeEvent::CommandFailed(e));
        }
    }

    /// Process one received IKE message (the non-ESP marker stripped),
    /// which arrived over UDP at `local` from `remote`.
    pub fn handle(
        &mut self,
        now: Duration,
        local: SocketAddr,
        remote: SocketAddr,
        data: &[u8],
        k: &mut dyn Kernel,
    ) {
        self.handle_on(now, Transport::Udp, local, remote, data, k)
    }

    /// [`Ike::handle`] for a message that arrived over `transport`: for a
    /// stream, `local` and `remote` name the connection (the TCP
    /// Originator's side with port 0).
    pub fn handle_on(
        &mut self,
        now: Duration,
        transport: Transport,
        local: SocketAddr,
        remote: SocketAddr,
        data: &[u8],
        k: &mut dyn Kernel,
    ) {
        self.host.stats.received += 1;
        let header = match Header::parse(data) {
            Ok(h) if h.major_version == 2 => h,
            _ => {
                self.host.stats.malformed += 1;
                self.host.counters.count(None, Counter::Invalid);
                return;
            }
        };
        let arrival = Arrival {
            transport,
            local,
            remote,
            header: &header,
            data,
        };
        if header.exchange == ExchangeType::IKE_SA_INIT {
            self.host
                .counters
                .count(None, Counter::incoming(header.exchange, header.response));
            if header.response {
                crate::initiate::on_init_response(self, now, &header, data, k);
            } else {
                crate::exchange::init_responder::init_request(self, now, arrival);
            }
            return;
        }
        // The SPI the sender's role says is ours (§3.1: the I flag).
        let ours = if header.initiator {
            header.spi_r
        } else {
            header.spi_i
        };
        let Some((at, mut sa)) = self.sas.find(ours) else {
            self.host.stats.unknown_spi += 1;
            self.host.counters.count(None, Counter::InvalidSpi);
            return;
        };
        let then = Cx::new(&mut self.host, now, k).receive(&mut sa, arrival);
        self.then(now, at, then, k);
    }

    /// Carry out what a handler of the SA at `at` said becomes of it,
    /// now that its borrow has ended.
    pub(crate) fn then(&mut self, now: Duration, at: Slot, then: Then, k: &mut dyn Kernel) {
        match then {
            Then::Stay => {}
            Then::Destroy(wishes) => {
                if let Some(mut sa) = self.sas.remove(at) {
                    let mut sa = SaMut::detached(&mut sa, self.sas.all());
                    crate::install::destroy(&mut Cx::new(&mut self.host, now, k), &mut sa);
                }
                crate::poll::revive(self, now, wishes, k);
            }
            Then::Revive(wishes) => crate::poll::revive(self, now, wishes, k),
            Then::Rekeyed { new, start } => {
                let new = self.sas.insert(*new);
                if start {
                    self.kick_at(now, new, k);
                }
                self.kick_at(now, at, k);
            }
        }
    }

    /// Start the queued tasks of the SA at `at`, if its window is free.
    pub(crate) fn kick_at(&mut self, now: Duration, at: Slot, k: &mut dyn Kernel) {
        if let Some(mut sa) = self.sas.borrow(at) {
            crate::timers::kick(&mut Cx::new(&mut self.host, now, k), &mut sa);
        }
    }

    /// Every IKE SA with its Child SAs, by unique id.
    pub fn list(&self, now: Duration) -> Vec<IkeSaInfo> {
        crate::control::list(self, now)
    }

    /// Delete the IKE SAs of connection `ike` (or the one with unique id
    /// `ike` as a number), or the Child SAs named `child`; how many.
    pub fn terminate(
        &mut self,
        now: Duration,
        ike: Option<&str>,
        child: Option<&str>,
        k: &mut dyn Kernel,
    ) -> Result<usize, CommandError> {
        let (sa, child_sa) = (Todo::DeleteIke, Todo::DeleteChild);
        crate::control::queue_for(self, now, ike, child, k, sa, child_sa)
    }

    /// Rekey the IKE SAs of `ike`, or the Child SAs named `child`.
    pub fn rekey(
        &mut self,
        now: Duration,
        ike: Option<&str>,
        child: Option<&str>,
        k: &mut dyn Kernel,
    ) -> Result<usize, CommandError> {
        let (sa, child_sa) = (Todo::RekeyIke, Todo::RekeyChild);
        crate::control::queue_for(self, now, ike, child, k, sa, child_sa)
    }

    /// Start `child` of connection `conn` (by name; either may be left
    /// out: the connection holding the child, or every child of the
    /// connection that starts with it): on an established IKE SA of the
    /// connection if there is one, else on a new IKE SA.
    pub fn initiate(
        &mut self,
        now: Duration,
        conn: Option<&str>,
        child: Option<&str>,
        k: &mut dyn Kernel,
    ) -> Result<(), CommandError> {
        crate::initiate::initiate(self, now, conn, child, k)
    }

    /// The data plane says SA `id` crossed its soft byte or packet limit
    /// (`rekey_bytes`, `rekey_packets`): rekey its Child SA.
    pub fn soft_expired(&mut self, now: Duration, id: SaId, k: &mut dyn Kernel) {
        crate::poll::soft_expired(self, now, id, k)
    }

    /// Whether some child has a volume limit (the daemon then watches the
    /// SAs' soft state for [`Ike::soft_expired`]).
    pub fn volume_limited(&self) -> bool {
        crate::poll::volume_limited(self)
    }

    /// Run `config` from now on (checked and parsed by the caller, as at
    /// start): see the module documentation.
    pub fn reload(&mut self, now: Duration, config: Config, k: &mut dyn Kernel) -> Reloaded {
        crate::reload::reload(self, now, config, k)
    }

    /// The TCP connection from `local` to `remote` that this host
    /// originated was lost and is open again (the daemon reconnects; RFC
    /// 9329 §6.1: only the TCP Originator does). The IKE SAs over it
    /// stay; each sends on the new connection at once, so that the peer
    /// learns it: the request still unanswered if there is one (§6.2: "MUST
    /// be retransmitted"), else an empty INFORMATIONAL (§6.1).
    pub fn reconnected(
        &mut self,
        now: Duration,
        local: SocketAddr,
        remote: SocketAddr,
        k: &mut dyn Kernel,
    ) {
        crate::streams::reconnected(self, now, local, remote, k)
    }

    /// Whether `data`, the message [`Ike::handle_on`] took last over a
    /// stream, proved its sender: it verified under an IKE SA's keys
    /// (the caller sees [`crate::IkeStats::verified`] rise) and that SA,
    /// carried by a stream, is established now (its peer authenticated,
    /// RFC 7296 §2.15). The daemon then counts the connection it came on
    /// as established and sends the SA's traffic on it (RFC 9329 §6.1:
    /// the newest connection a valid message came on); a message that
    /// only opened a half-open SA, or an EAP round, does not.
    pub fn stream_authenticated(&self, data: &[u8]) -> bool {
        crate::streams::stream_authenticated(self, data)
    }

    /// Send the clients of the established IKE SAs `select` matches to
    /// `gateway` (RFC 5685; vici `redirect`, `flowsec ctl redirect`): how
    /// many. Only clients that announced redirect, never an SA we
    /// initiated.
    pub fn redirect(
        &mut self,
        now: Duration,
        select: &crate::exchange::redirect::RedirectSelector,
        gateway: &crate::gateway::GatewayId,
        k: &mut dyn Kernel,
    ) -> Result<usize, CommandError> {
        crate::redirect::redirect(self, now, select, gateway, k)
    }

    /// `gateway` (one of a connection's `redirect_to`) holds `ike_sas` IKE
    /// SAs now, as the daemon read it (vici `stats`): new clients go to
    /// the least loaded.
    pub fn set_gateway_load(&mut self, gateway: &crate::gateway::GatewayId, ike_sas: u64) {
        self.host.gateway_load.insert(gateway.clone(), ike_sas);
    }

    /// This host's addresses (global scope, not the virtual IPs on the
    /// tunnel device), for the address lists MOBIKE sends (RFC 4555 §3.6).
    pub fn set_local_addresses(&mut self, addrs: Vec<std::net::IpAddr>) {
        self.host.local_addrs = addrs;
    }

    /// This host's addresses or routes changed (the daemon watches them):
    /// each IKE SA this host originated with MOBIKE asks `k` where the
    /// route to its peer leaves from now, and moves there if that is
    /// another address, telling the peer (RFC 4555 §3.5).
    pub fn roam(&mut self, now: Duration, k: &mut dyn Kernel) {
        crate::roam::roam_all(self, now, k)
    }

    /// Advance timers: retransmissions, lifetimes, rekeys, DPD, and start
    /// queued tasks.
    pub fn poll(&mut self, now: Duration, k: &mut dyn Kernel) {
        crate::poll::poll(self, now, k)
    }

    /// When [`Ike::poll`] should next be called.
    pub fn next_timeout(&self) -> Option<Duration> {
        crate::poll::next_timeout(self)
    }
}

impl Cx<'_> {
    /// A protected message for `sa` (its SPIs matched ours): checked,
    /// opened and dispatched to the task it is for.
    fn receive(&mut self, sa: &mut SaMut<'_>, arrival: Arrival<'_>) -> Then {
        let Arrival {
            transport,
            local,
            remote,
            header,
            data,
        } = arrival;
        // RFC 9329 §5: once over a stream, every message of the IKE SA is;
        // one that came another way is not ours to act on (nor the other
        // way round).
        if transport != sa.path.transport {
            self.host.stats.wrong_transport += 1;
            return Then::Stay;
        }
        let Some((msg, request_digest)) = self.open(sa, (local, remote), header, data) else {
            return Then::Stay;
        };
        let counted = Counter::incoming(header.exchange, header.response);
        self.host.counters.count(Some(&sa.conn.name), counted);
        if header.response {
            let Some(req) = sa.exch.answered(header.message_id, header.exchange) else {
                self.host.stats.bad_message_id += 1;
                return Then::Stay;
            };
            if let Some(e) = follow_peer(sa, local, remote, self.k) {
                self.host.report(sa, e);
            }
            let then = req.task.process(self, sa, msg);
            settled(self, sa, then)
        } else if sa.exch.classify(header.message_id) == RequestVerdict::Process {
            sa.exch.processing(request_digest);
            // A half-open SA never moves to another address: admit.rs
            // counts it at the address its IKE_SA_INIT came from, and its
            // peer has proved nothing yet (an EAP SA stays half-open over
            // several rounds). Only the NAT-T float to port 4500 (§2.23)
            // or a NAT's new port is followed; a peer moves once
            // established, as strongSwan's.
            let follows = sa.state != IkeState::HalfOpen || remote.ip() == sa.path.remote.ip();
            let before = sa.path.remote;
            if let Some(e) = follows
                .then(|| follow_peer(sa, local, remote, self.k))
                .flatten()
            {
                self.host.report(sa, e);
            }
            // RFC 9329 §6.2: our request still unanswered was lost with
            // the old connection; it goes again on the new one.
            if sa.path.transport.is_stream() && sa.path.remote != before {
                if let Some(data) = sa.exch.outstanding().map(<[Vec<u8>]>::to_vec) {
                    self.host.stats.retransmits += 1;
                    self.host
                        .push_all(sa.path.transport, sa.path.local, sa.path.remote, data);
                }
            }
            // The answer goes where the request came from (§2.11), once the
            // peer is authenticated: a half-open SA answers where its
            // IKE_SA_INIT came from, so that a forged source cannot make
            // it reflect (issue 29).
            let authenticated = sa.state != IkeState::HalfOpen;
            self.arrival = (authenticated && !transport.is_stream()).then_some((local, remote));
            let then = answer(self, sa, header.exchange, header.message_id, msg);
            self.arrival = None;
            settled(self, sa, then)
        } else {
            self.host.stats.bad_message_id += 1;
            Then::Stay
        }
    }

    /// The checks before any task sees a message of `sa` (RFC 7296 §2.1,
    /// §2.5, §3.14): ours, not a retransmitted request (answered again
    /// from the cache), integrity, the payload rules; a fragment (RFC 7383)
    /// is kept until its message is whole. `None`: dropped and counted, or
    /// waiting for more fragments. With the message, what tells a
    /// retransmission of it: the SHA-256 of its bytes (of its first
    /// fragment, as strongSwan keeps it).
    fn open(
        &mut self,
        sa: &mut SaMut<'_>,
        (local, remote): (SocketAddr, SocketAddr),
        header: &Header,
        data: &[u8],
    ) -> Option<(Message, [u8; 32])> {
        let fragment = header.next_payload == PayloadType::SKF;
        let mine = sa.spi_i == header.spi_i
            && sa.spi_r == header.spi_r
            && header.initiator != sa.initiator;
        if !mine || sa.keys.is_none() {
            self.host.stats.unknown_spi += 1;
            self.host.counters.count(None, Counter::InvalidSpi);
            return None;
        }
        if !header.response && sa.exch.classify(header.message_id) == RequestVerdict::Replay {
            // The same request again (§2.1): the same answer. Anything else
            // with its message ID is dropped. Of a fragmented request, its
            // first fragment asks for the answer again (RFC 7383 §2.6.1);
            // the others are the same retransmission.
            if fragment && crate::crypto::sk::fragment_number(data) != Some(1) {
                return None;
            }
            let Some(last) = sa.exch.cached_response(&digest(data)).map(<[_]>::to_vec) else {
                self.host.stats.bad_message_id += 1;
                return None;
            };
            // The answer goes back where the copy came from (strongSwan
            // does the same), and moves nothing (RFC 9329 §6.1: not a
            // valid message); over a stream the request came again because
            // its connection broke (§6.2). Anyone can replay a request from
            // any source: rate-limited, so that we reflect little.
            let to_peer = remote == sa.path.remote;
            if sa.exch.may_resend(self.now, to_peer) {
                self.host.stats.replayed += 1;
                self.host.push_all(sa.path.transport, local, remote, last);
            } else {
                self.host.stats.resend_limited += 1;
            }
            return None;
        }
        if fragment {
            let (msg, first) = self.defragment(sa, header, data)?;
            return self.checked(sa, header, msg, first).map(|m| (m, first));
        }
        let opened = sa.keys.as_ref().map(|keys| keys.inn.open(data));
        let msg = match opened {
            Some(Ok(m)) => m,
            Some(Err(crate::crypto::SkError::Integrity)) => {
                self.host.stats.bad_integrity += 1;
                self.host.counters.count(None, Counter::Invalid);
                return None;
            }
            Some(Err(crate::crypto::SkError::Inner(IkeError::UnsupportedCritical(ty))))
                if !header.response =>
            {
                // §2.5: answer with the type that was not understood.
                self.refuse(sa, header, digest(data), critical(ty));
                self.host.stats.malformed += 1;
                self.host.counters.count(None, Counter::Invalid);
                return None;
            }
            _ => {
                self.host.stats.malformed += 1;
                self.host.counters.count(None, Counter::Invalid);
                return None;
            }
        };
        sa.times.last_heard = self.now;
        self.host.stats.verified += 1;
        let request_digest = digest(data);
        self.checked(sa, header, msg, request_digest)
            .map(|m| (m, request_digest))
    }

    /// The payload rules (§3.14, rules.rs) for an authenticated message;
    /// a request that breaks them is answered with the notify they name.
    fn checked(
        &mut self,
        sa: &mut SaMut<'_>,
        header: &Header,
        msg: Message,
        request_digest: [u8; 32],
    ) -> Option<Message> {
        if let Err(n) = crate::rules::check(header.exchange, header.response, &msg.payloads) {
            self.host.stats.malformed += 1;
            self.refuse(sa, header, request_digest, notify(n, vec![]));
            return None;
        }
        Some(msg)
    }

    /// Answer the peer's request in `header` (if it is the next one) with
    /// the error notify `n`; a retransmission of the request (same
    /// `request_digest`) gets the same answer again.
    fn refuse(
        &mut self,
        sa: &mut SaMut<'_>,
        header: &Header,
        request_digest: [u8; 32],
        n: flowsec_wire::ike::Payload,
    ) {
        if !header.response && sa.exch.classify(header.message_id) == RequestVerdict::Process {
            sa.exch.processing(request_digest);
            self.respond(sa, header.exchange, header.message_id, vec![n]);
        }
    }

    /// A fragment (RFC 7383 §2.6) of a message `sa` expects (the peer's
    /// next request, or the answer to ours): verified and decrypted, then
    /// kept until its siblings are here; the whole message once they are,
    /// with the SHA-256 of its first fragment. Fragments of connections
    /// with `fragmentation = no`, of messages not expected, that do not
    /// verify or do not fit the bounds are dropped and counted.
    fn defragment(
        &mut self,
        sa: &mut SaMut<'_>,
        header: &Header,
        data: &[u8],
    ) -> Option<(Message, [u8; 32])> {
        use crate::fragmentation::{Added, Reassembly};
        let allowed = sa.conn.fragmentation.announced();
        let expected = match header.response {
            true => sa
                .exch
                .waiting(header.message_id, header.exchange)
                .is_some(),
            false => sa.exch.classify(header.message_id) == RequestVerdict::Process,
        };
        // Never over a stream (we do not send them there either).
        if !allowed || !expected || sa.path.transport.is_stream() {
            self.host.stats.fragments_dropped += 1;
            return None;
        }
        let opened = sa.keys.as_ref().map(|keys| keys.inn.open_fragment(data));
        let fragment = match opened {
            Some(Ok(f)) => f,
            Some(Err(crate::crypto::SkError::Integrity)) => {
                self.host.stats.bad_integrity += 1;
                return None;
            }
            _ => {
                self.host.stats.fragments_dropped += 1;
                return None;
            }
        };
        self.host.stats.fragments_received += 1;
        self.host.stats.verified += 1;
        sa.times.last_heard = self.now;
        let slot = &mut sa.reassembly[usize::from(header.response)];
        match Reassembly::add(slot, header.message_id, fragment, digest(data)) {
            Added::Incomplete | Added::Duplicate => None,
            Added::Refused => {
                self.host.stats.fragments_dropped += 1;
                None
            }
            Added::Complete {
                first,
                inner,
                digest,
            } => {
                self.host.stats.reassembled += 1;
                match flowsec_wire::ike::parse_payloads(first, &inner) {
                    Ok(payloads) => Some((
                        Message {
                            header: header.clone(),
                            payloads,
                        },
                        digest,
                    )),
                    // §2.5 (RFC 7296), as for a message in one piece.
                    Err(IkeError::UnsupportedCritical(ty)) => {
                        self.host.stats.malformed += 1;
                        self.refuse(sa, header, digest, critical(ty));
                        None
                    }
                    Err(_) => {
                        self.host.stats.malformed += 1;
                        None
                    }
                }
            }
        }
    }
}

/// A handler is done with `sa`: unless it goes, what waits in its queue
/// starts if the window is free (the exchanges never start the next task
/// themselves: the queue is the engine's).
fn settled(cx: &mut Cx<'_>, sa: &mut SaMut<'_>, then: Then) -> Then {
    if matches!(then, Then::Stay | Then::Revive(_)) {
        crate::timers::kick(cx, sa);
    }
    then
}

/// A request of the peer, in order (the responder's side): routed to what
/// answers it — the responder's wait of a half-open SA (IKE_AUTH), or the
/// exchange the request opens.
fn answer(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    exchange: ExchangeType,
    mid: u32,
    msg: Message,
) -> Then {
    match exchange {
        // A half-open SA answers what it waits for (IKE_AUTH and its EAP
        // rounds, whatever comes between IKE_SA_INIT and them).
        _ if sa.state == IkeState::HalfOpen && waits_for(sa, exchange) => {
            match sa.exch.take_passive() {
                Some(awaiting) => awaiting.answer(cx, sa, mid, msg),
                None => {
                    cx.stats.malformed += 1;
                    Then::Stay
                }
            }
        }
        // RFC 9370 §2.2.4: the next additional key exchange of a
        // CREATE_CHILD_SA we answered, or STATE_NOT_FOUND.
        ExchangeType::IKE_FOLLOWUP_KE if sa.state != IkeState::HalfOpen => {
            let wait = waits_for(sa, exchange).then(|| sa.exch.take_passive());
            match wait.flatten() {
                Some(wait) => wait.answer(cx, sa, mid, msg),
                None => crate::exchange::followup::unexpected(cx, sa, mid),
            }
        }
        ExchangeType::CREATE_CHILD_SA if sa.state == IkeState::Established => {
            crate::exchange::followup::drop_stale(cx, sa);
            crate::exchange::child_responder::child_request(cx, sa, mid, msg)
        }
        ExchangeType::CREATE_CHILD_SA => {
            // §2.25: rekeyed or being deleted: not now.
            let n = notify(NotifyType::TEMPORARY_FAILURE, vec![]);
            cx.respond(sa, exchange, mid, vec![n]);
            Then::Stay
        }
        ExchangeType::INFORMATIONAL if sa.state != IkeState::HalfOpen => {
            crate::exchange::info::informational_request(cx, sa, mid, msg)
        }
        _ => {
            cx.stats.malformed += 1;
            Then::Stay
        }
    }
}

/// Whether the responder's wait of `sa` is for a request of `exchange`.
fn waits_for(sa: &SaMut<'_>, exchange: ExchangeType) -> bool {
    sa.exch.passive().is_some_and(|a| a.exchange() == exchange)
}

/// UNSUPPORTED_CRITICAL_PAYLOAD naming `ty` (RFC 7296 §2.5).
fn critical(ty: PayloadType) -> flowsec_wire::ike::Payload {
    notify(NotifyType::UNSUPPORTED_CRITICAL_PAYLOAD, vec![ty.0])
}

/// SHA-256 of a message, to know a retransmitted request from another
/// one with the same message ID.
fn digest(data: &[u8]) -> [u8; 32] {
    flowsec_crypto::fixed::sha256(&[data])
}
