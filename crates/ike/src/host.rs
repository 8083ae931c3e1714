//! What the exchanges of every IKE SA share: [`Host`], this host's state
//! beside its IKE SAs, with sending (a request of ours, an answer, a
//! datagram), randomness, SPIs and names; and the payload helpers every
//! exchange reads messages with.

use core::time::Duration;
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;

use flowsec_crypto::Provider;
use flowsec_wire::iana::{ExchangeType, NotifyType, PayloadType};
use flowsec_wire::ike::{emit_payloads, first_type, Header, Message, Notify, Payload};

use crate::config::{Config, ConnRef};
use crate::error::{InitResponseError, NegotiationError};
use crate::event::IkeEvent;
use crate::random::Random;
use crate::sa::IkeSa;
use crate::settings::Settings;
use crate::stats::IkeStats;
use crate::table::Then;
use crate::transport::Datagram;

/// All IKE SAs of this host.
pub struct Ike {
    /// What the exchanges of every IKE SA share.
    pub(crate) host: Host,
    pub(crate) sas: crate::table::SaTable,
}

/// This host's state beside its IKE SAs: configuration, crypto and
/// randomness, what goes out (datagrams, events), counters, and the
/// reqids, policies and trap policies the IKE SAs' Child SAs share. A
/// handler works on one IKE SA borrowed from the table ([`crate::table::SaMut`]) and
/// on this.
pub(crate) struct Host {
    /// Secrets, credentials and pools; its `connections` are empty: they
    /// live in `conns`, shared with the IKE SAs made with them.
    pub(crate) config: Config,
    /// The connections it runs, in the configuration's order. A reload
    /// swaps them; an IKE SA keeps the one it was made with, so one that
    /// is no longer here is retired ([`crate::reload`]).
    pub(crate) conns: Vec<ConnRef>,
    pub(crate) provider: Provider,
    pub(crate) rng: Box<dyn Random>,
    pub(crate) settings: Settings,
    pub(crate) out: VecDeque<Datagram>,
    pub(crate) events: crate::event_log::Events,
    /// The COOKIE secrets (RFC 7296 §2.6), from `rng`.
    pub(crate) cookies: crate::admit::CookieJar,
    pub(crate) next_uid: u32,
    pub(crate) next_reqid: u32,
    /// The policies installed for each reqid.
    pub(crate) policies: BTreeMap<u32, Vec<flowsec_ipsec::Policy>>,
    /// Policies another reqid's took the place of (same direction and
    /// selector), in that order: each comes back when the one on top goes.
    pub(crate) shadowed: Vec<(u32, flowsec_ipsec::Policy)>,
    /// Trap policies (`start_action = trap`): reqid → (connection, child).
    pub(crate) traps: BTreeMap<u32, (ConnRef, usize)>,
    /// Policies of a replaced connection's Child SAs held as DISCARD once
    /// their SAs are gone, until the replacement's Child SA of the same
    /// name is up: reqid → (connection, child) by name ([`crate::reload`]).
    pub(crate) holds: BTreeMap<u32, Hold>,
    /// IKE SAs (our SPIs) whose `reauth_time` came, to authenticate again
    /// at the end of this poll ([`crate::reauth`]).
    pub(crate) reauth_due: Vec<u64>,
    /// This host's addresses as the daemon last listed them
    /// ([`crate::Ike::set_local_addresses`]): MOBIKE announces the others
    /// than the one an IKE SA uses (RFC 4555 §3.6).
    pub(crate) local_addrs: Vec<std::net::IpAddr>,
    /// Redirects to follow at the end of this call ([`crate::exchange::redirect`]).
    pub(crate) redirect_due: Vec<crate::gateway::RedirectDue>,
    /// The IKE SAs each `redirect_to` gateway holds, as last read, plus
    /// the clients sent there since ([`crate::Ike::set_gateway_load`]).
    pub(crate) gateway_load: BTreeMap<crate::gateway::GatewayId, u64>,
    /// Replaced connections whose old IKE SAs wait for the new one (make
    /// before break), by name: until when at most.
    pub(crate) replacing: BTreeMap<String, Duration>,
    /// Inbound SAs of replaced Child SAs, removed at their deadline.
    pub(crate) lingering: Vec<(flowsec_ipsec::SaId, Duration)>,
    /// The wall clock (since the Unix epoch) when `now` was zero, given
    /// by the caller ([`crate::Ike::set_wall_clock`]): certificates are
    /// valid between dates.
    pub(crate) unix_at_zero: Option<Duration>,
    /// Virtual IPs handed out from the configured pools.
    pub(crate) leases: crate::pool::Leases,
    pub(crate) stats: IkeStats,
    /// charon's counters (vici `get-counters`).
    pub(crate) counters: crate::counters::Counters,
}

impl Host {
    /// Whether `conn` is one of the connections it runs (not one a reload
    /// retired, which only its last IKE SAs still hold).
    pub(crate) fn is_live(&self, conn: &ConnRef) -> bool {
        self.conns.iter().any(|c| std::sync::Arc::ptr_eq(c, conn))
    }

    /// Report `event` about the IKE SA `sa` (its `<name|id>`).
    pub(crate) fn report(&mut self, sa: &IkeSa, event: IkeEvent) {
        let tag = sa.tag();
        self.events.about(tag, event);
    }

    /// The wall clock at `now`, if the caller gave it.
    pub(crate) fn unix_time(&self, now: Duration) -> Option<Duration> {
        self.unix_at_zero.map(|z| z + now)
    }

    /// Queue a datagram.
    pub(crate) fn push(
        &mut self,
        transport: crate::transport::Transport,
        local: SocketAddr,
        remote: SocketAddr,
        data: Vec<u8>,
    ) {
        self.stats.sent += 1;
        self.out.push_back(Datagram {
            transport,
            local,
            remote,
            data,
        });
    }

    /// Queue the datagrams of one message.
    pub(crate) fn push_all(
        &mut self,
        transport: crate::transport::Transport,
        local: SocketAddr,
        remote: SocketAddr,
        wire: crate::transport::Wire,
    ) {
        for data in wire {
            self.push(transport, local, remote, data);
        }
    }

    /// Encrypt `payloads` into a message of `sa`: one datagram, or its
    /// fragments (RFC 7383) when it is larger than the fragment size and
    /// `sa` fragments (`fragment_room`).
    pub(crate) fn protect(
        &mut self,
        sa: &IkeSa,
        exchange: ExchangeType,
        response: bool,
        mid: u32,
        payloads: &[Payload],
    ) -> crate::transport::Wire {
        let header = Header {
            spi_i: sa.spi_i,
            spi_r: sa.spi_r,
            next_payload: PayloadType::SK,
            major_version: 2,
            minor_version: 0,
            exchange,
            initiator: sa.initiator,
            response,
            message_id: mid,
            length: 0,
        };
        let counted = crate::counters::Counter::outgoing(exchange, response);
        self.counters.count(Some(&sa.conn.name), counted);
        let inner = emit_payloads(payloads);
        let Some(keys) = &sa.keys else {
            // Only IKE_SA_INIT is unprotected, and it never comes here.
            return vec![Vec::new()];
        };
        let first = first_type(payloads);
        let whole = flowsec_wire::ike::HEADER_LEN + keys.out.overhead(inner.len()) + inner.len();
        match self.fragment_room(sa) {
            Some(room) if whole > room => {
                self.stats.fragmented += 1;
                crate::fragmentation::split(
                    &keys.out,
                    &header,
                    first,
                    &inner,
                    room,
                    self.rng.as_mut(),
                )
            }
            _ => vec![keys.out.seal(&header, first, &inner, self.rng.as_mut())],
        }
    }

    /// The most bytes an IKE message of `sa` may have before it is
    /// fragmented (RFC 7383 §2.5.1: `fragment_size`, strongSwan's
    /// `charon.fragment_size`, counts the whole IP datagram), when `sa`
    /// fragments: the peer announced it (or `fragmentation = force`), ours
    /// is not `accept` or `no`, and it runs over UDP (over TCP, RFC 9329
    /// §7.5, never).
    fn fragment_room(&self, sa: &IkeSa) -> Option<usize> {
        use crate::config::Fragmentation as F;
        let mode = Some(&sa.conn)?.fragmentation;
        let wanted = match mode {
            F::Yes => sa.announced.fragments,
            F::Force => true,
            F::Accept | F::No => false,
        };
        if !wanted || sa.path.transport.is_stream() {
            return None;
        }
        let ip = if sa.path.remote.is_ipv4() { 20 } else { 40 };
        // The non-ESP marker goes in front between port-4500 sockets (the
        // daemon adds it when ours is 4500; behind a NAT the peer's port
        // may be anything): strongSwan leaves room for it unless a port is
        // 500.
        let nat_t = flowsec_wire::udp_encap::NAT_T_PORT;
        let marker = match sa.path.local.port() == nat_t || sa.path.remote.port() == nat_t {
            true => 4,
            false => 0,
        };
        Some(self.settings.fragment_size.saturating_sub(ip + 8 + marker))
    }

    /// Fresh random bytes.
    pub(crate) fn random(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0; n];
        self.rng.fill(&mut v);
        v
    }

    /// A random IKE SPI that is not `taken` (never 0).
    pub(crate) fn new_spi(&mut self, taken: impl Fn(u64) -> bool) -> u64 {
        loop {
            let spi = self.rng.next_u64();
            if spi != 0 && !taken(spi) {
                return spi;
            }
        }
    }

    /// `d` less a random part of `rand` (strongSwan's jitter: rekeys of
    /// both ends rarely collide, §2.8.1).
    pub(crate) fn jittered(&mut self, d: Duration, rand: Duration) -> Duration {
        if rand.is_zero() || rand >= d {
            return d;
        }
        let r = u128::from(self.rng.next_u64()) % (rand.as_millis() + 1);
        d - Duration::from_millis(r as u64)
    }

    /// Say that `sa` is up between identities `me` and `peer` (both ends
    /// of IKE_AUTH say it the same way).
    pub(crate) fn report_established(
        &mut self,
        sa: &IkeSa,
        me: crate::config::Identity,
        peer: crate::config::Identity,
    ) {
        self.report(
            sa,
            IkeEvent::Established {
                name: self.conn_name(sa),
                unique_id: sa.uid,
                local: sa.path.local.ip(),
                local_id: me,
                remote: sa.path.remote.ip(),
                remote_id: peer,
            },
        );
    }

    pub(crate) fn conn_name(&self, sa: &IkeSa) -> String {
        sa.conn.name.clone()
    }
}

/// The SA, KE, nonce and selectors of a message (each at most once:
/// [`crate::rules`] checked that).
pub(crate) struct Parts<'a> {
    pub sa: Option<&'a Vec<flowsec_wire::ike::Proposal>>,
    pub ke: Option<&'a flowsec_wire::ike::Ke>,
    pub nonce: Option<&'a Vec<u8>>,
    pub tsi: Option<&'a Vec<flowsec_wire::ike::TrafficSelector>>,
    pub tsr: Option<&'a Vec<flowsec_wire::ike::TrafficSelector>>,
}

pub(crate) fn parts(msg: &Message) -> Parts<'_> {
    let mut c = Parts {
        sa: None,
        ke: None,
        nonce: None,
        tsi: None,
        tsr: None,
    };
    for p in &msg.payloads {
        match p {
            Payload::Sa(s) => c.sa = Some(s),
            Payload::Ke(k) => c.ke = Some(k),
            Payload::Nonce(n) => c.nonce = Some(n),
            Payload::TsI(t) => c.tsi = Some(t),
            Payload::TsR(t) => c.tsr = Some(t),
            _ => {}
        }
    }
    c
}

/// A notify payload without SPI.
pub(crate) fn notify(ty: NotifyType, data: Vec<u8>) -> Payload {
    Payload::Notify(Notify {
        protocol: 0,
        spi: Vec::new(),
        ty,
        data,
    })
}

/// The notifies of a message.
pub(crate) fn notifies(msg: &Message) -> impl Iterator<Item = &Notify> {
    msg.payloads.iter().filter_map(|p| match p {
        Payload::Notify(n) => Some(n),
        _ => None,
    })
}

/// The first error notify of a message, if any.
pub(crate) fn error_notify(msg: &Message) -> Option<&Notify> {
    notifies(msg).find(|n| n.ty.is_error())
}

/// Whether the message carries a notify of this type.
pub(crate) fn has_notify(msg: &Message, ty: NotifyType) -> bool {
    notifies(msg).any(|n| n.ty == ty)
}

/// A replaced Child SA whose policies are held: its connection and child
/// by name, and its peer (a gateway's connection serves many).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hold {
    pub conn: String,
    pub child: String,
    pub peer: Option<crate::config::Identity>,
}

/// Give up on an IKE SA that is not established yet: it goes when
/// its borrow ends.
pub(crate) fn fail(host: &mut Host, sa: &IkeSa, reason: NegotiationError) -> Then {
    report_failed(host, sa, reason);
    Then::Destroy(Vec::new())
}

/// Report that negotiating `sa` failed (the caller ends it).
pub(crate) fn report_failed(host: &mut Host, sa: &IkeSa, reason: NegotiationError) {
    host.report(
        sa,
        IkeEvent::NegotiationFailed {
            name: host.conn_name(sa),
            unique_id: sa.uid,
            remote: sa.path.remote.ip(),
            reason,
        },
    );
}

/// An IKE_SA_INIT answer we cannot use: unauthenticated, so it ends
/// nothing (§2.21.1); the request stays in flight.
pub(crate) fn bogus_init(host: &mut Host, sa: &IkeSa, why: InitResponseError) -> Then {
    host.stats.malformed += 1;
    host.report(
        sa,
        IkeEvent::InitIgnored {
            name: host.conn_name(sa),
            unique_id: sa.uid,
            why,
        },
    );
    Then::Stay
}
