//! IKE_SA_INIT (RFC 7296 §1.2, §2.6 cookies, §1.3/§2.7 INVALID_KE_PAYLOAD,
//! §2.23 NAT detection), both roles, and starting an IKE SA.
//!
//! ```text
//! Initiator                               Responder
//! HDR, [N(COOKIE),] SAi1, KEi, Ni,
//!      N(NAT_DETECTION_SOURCE_IP), N(NAT_DETECTION_DESTINATION_IP)  -->
//!                                    <--  HDR, SAr1, KEr, Nr, N(NAT_D..)
//!                                    <--  HDR, N(COOKIE)           (busy)
//!                                    <--  HDR, N(INVALID_KE_PAYLOAD) (other group)
//! ```

use core::time::Duration;
use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};

use flowsec_wire::iana::{DhGroup, ExchangeType, NotifyType, PayloadType};
use flowsec_wire::ike::{Header, Ke, Message, Payload, Proposal};
use zeroize::Zeroizing;

use crate::admit::Refusal;
use crate::auth::{AwaitingAuth, InitMessages};
use crate::config::{self, AddrSpec, IkeChosen};
use crate::crypto::KeyExchange;
use crate::crypto::{self, IkeKeys, SkCrypto};
use crate::engine::{error_notify, notifies, notify, parts, Host, Ike};
use crate::error::{CommandError, InitResponseError, NegotiationError};
use crate::event::IkeEvent;
use crate::exchange::Exchanges;
use crate::kernel::Kernel;
use crate::sa::{IkeKeyState, IkeSa, IkeState};
use crate::table::{SaMut, Then};
use crate::task::Task;

// The UDP port IKE starts on, and the one it floats to (§2.23).
pub use flowsec_wire::udp_encap::{IKE_PORT, NAT_T_PORT};
/// Bytes of our nonces (§2.10: at least half the PRF key size; strongSwan
/// sends 32).
const NONCE_LEN: usize = 32;
/// IKE_SA_INIT retries for COOKIE and INVALID_KE_PAYLOAD before giving up.
const MAX_INIT_RETRIES: u32 = 5;

/// IKE_SA_INIT, initiator (§1.2): waits for the response. The request as
/// sent is the exchange manager's: it retransmits it, and hands it back
/// with the response for AUTH to sign (§2.15).
pub(crate) struct IkeInit {
    /// KEi, of the group last asked for.
    pub ke: Box<dyn KeyExchange>,
    /// Ni.
    pub ni: Vec<u8>,
    /// SAi1: our proposals.
    pub offer: Vec<Proposal>,
    /// The COOKIE the responder asked us to return first (§2.6).
    pub cookie: Option<Vec<u8>>,
    /// Requests sent again so far (COOKIE, INVALID_KE_PAYLOAD).
    pub retries: u32,
    /// The Child SA config IKE_AUTH is to bring up.
    pub first_child: Option<usize>,
}

impl Ike {
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
        self.host.clock = now;
        let found = self
            .host
            .config
            .connections
            .iter()
            .enumerate()
            .find_map(|(i, c)| {
                if conn.is_some_and(|n| n != c.name) {
                    return None;
                }
                match child {
                    Some(name) => c
                        .children
                        .iter()
                        .position(|ch| ch.name == name)
                        .map(|j| (i, Some(j))),
                    None => Some((i, None)),
                }
            });
        let Some((ci, child)) = found else {
            return Err(CommandError::NoConnection {
                conn: conn.map(str::to_string),
                child: child.map(str::to_string),
            });
        };
        let child =
            child.or_else(|| (!self.host.config.connections[ci].children.is_empty()).then_some(0));
        // An IKE SA of the connection we can reuse?
        let existing = self
            .sas
            .values()
            .find(|s| {
                s.conn == ci
                    && matches!(
                        s.state,
                        IkeState::Established | IkeState::Connecting | IkeState::Authenticating
                    )
            })
            .map(|s| s.our_spi());
        if let Some(spi) = existing {
            let Some(cfg) = child else { return Ok(()) };
            let Some(mut sa) = self.sas.slot(spi).and_then(|at| self.sas.borrow(at)) else {
                return Ok(());
            };
            if sa.state == IkeState::Established {
                sa.queue.push_back(crate::sa::Todo::CreateChild(cfg));
                self.host.kick(now, &mut sa, k);
            } else if sa.exch.task().and_then(Task::first_child) != Some(cfg) {
                // IKE_AUTH will carry the first child; the rest follow.
                sa.queue.push_back(crate::sa::Todo::CreateChild(cfg));
            }
            return Ok(());
        }
        self.connect(now, ci, child, k)
    }

    /// A new IKE SA of connection `ci` as initiator.
    fn connect(
        &mut self,
        now: Duration,
        ci: usize,
        child: Option<usize>,
        k: &mut dyn Kernel,
    ) -> Result<(), CommandError> {
        let conn = &self.host.config.connections[ci];
        let remote_ip = conn
            .remote_addrs
            .iter()
            .find_map(|a| match a {
                AddrSpec::Addr(ip) => Some(*ip),
                _ => None,
            })
            .ok_or_else(|| CommandError::NoRemoteAddress {
                conn: conn.name.clone(),
            })?;
        let local_ip = conn
            .local_addrs
            .iter()
            .find_map(|a| match a {
                AddrSpec::Addr(ip) if ip.is_ipv4() == remote_ip.is_ipv4() => Some(*ip),
                _ => None,
            })
            .or_else(|| k.source_for(remote_ip))
            .ok_or_else(|| CommandError::NoLocalAddress {
                name: conn.name.clone(),
                remote: remote_ip,
            })?;
        let group = conn
            .proposals
            .iter()
            .flat_map(|p| p.dh.iter())
            .copied()
            .find(|g| self.host.provider.key_exchange(*g).is_some())
            .ok_or_else(|| CommandError::NoGroup {
                conn: conn.name.clone(),
            })?;
        let local = SocketAddr::new(local_ip, conn.local_port);
        let remote = SocketAddr::new(remote_ip, conn.remote_port);
        let offer = config::ike_offer(&conn.proposals);
        let name = conn.name.clone();
        let ke = crypto::key_exchange(&self.host.provider, group, self.host.rng.as_mut()).map_err(
            |error| CommandError::KeyExchange {
                conn: name.clone(),
                error,
            },
        )?;
        let spi_i = self.host.new_spi(|s| self.sas.contains_spi(s));
        let ni = self.host.random(NONCE_LEN);
        let uid = self.host.next_uid;
        self.host.next_uid += 1;
        let mut sa = new_sa(ci, uid, spi_i, 0, true, local, remote, now);
        let init = IkeInit {
            ke,
            ni,
            offer,
            cookie: None,
            retries: 0,
            first_child: child,
        };
        self.host.events.push(IkeEvent::Initiating {
            name,
            unique_id: uid,
            remote: remote.ip(),
        });
        self.host.send_init(now, &mut sa, init);
        self.sas.insert(sa);
        Ok(())
    }

    /// The responder's side of IKE_SA_INIT.
    pub(crate) fn init_request(
        &mut self,
        now: Duration,
        local: SocketAddr,
        remote: SocketAddr,
        header: &Header,
        data: &[u8],
    ) {
        if header.spi_r != 0 || header.message_id != 0 || !header.initiator {
            self.host.stats.malformed += 1;
            return;
        }
        // A retransmission of a request we answered: the same answer.
        if let Some(sa) = self.sas.values().find(|s| {
            s.state == IkeState::HalfOpen && s.spi_i == header.spi_i && s.remote == remote
        }) {
            if let Some(w) = sa.exch.passive().filter(|w| w.init.request == data) {
                let (l, r, d) = (sa.local, sa.remote, w.init.response.clone());
                self.host.stats.replayed += 1;
                self.host.push(l, r, d);
            }
            return;
        }
        let msg = match Message::parse(data) {
            Ok(m) => m,
            Err(flowsec_wire::ike::IkeError::UnsupportedCritical(ty)) => {
                self.host.stats.malformed += 1;
                self.host.answer_init(
                    local,
                    remote,
                    header.spi_i,
                    NotifyType::UNSUPPORTED_CRITICAL_PAYLOAD,
                    vec![ty.0],
                );
                return;
            }
            Err(_) => {
                self.host.stats.malformed += 1;
                return;
            }
        };
        if crate::rules::check(ExchangeType::IKE_SA_INIT, false, &msg.payloads).is_err() {
            self.host.stats.malformed += 1;
            return;
        }
        let p = parts(&msg);
        let (Some(sai), Some(kei), Some(ni)) = (p.sa, p.ke, p.nonce) else {
            return;
        };
        // §2.6: a returned cookie is the first payload.
        let cookie = match msg.payloads.first() {
            Some(Payload::Notify(n)) if n.ty == NotifyType::COOKIE => Some(n.data.as_slice()),
            _ => None,
        };
        match self.admit(now, remote.ip(), ni, header.spi_i, cookie) {
            Ok(()) => {}
            Err(Refusal::Cookie(want)) => {
                self.host.stats.cookies_sent += 1;
                self.host
                    .answer_init(local, remote, header.spi_i, NotifyType::COOKIE, want);
                return;
            }
            Err(Refusal::BlockedSource) => {
                self.host.stats.blocked_source += 1;
                return;
            }
            Err(Refusal::Limit) => {
                self.host.stats.refused_limit += 1;
                return;
            }
        }
        let Some((ci, chosen)) = self
            .host
            .pick_connection(local.ip(), remote.ip(), sai, kei.group)
        else {
            self.host.stats.no_proposal += 1;
            self.host.events.push(IkeEvent::NoProposal { from: remote });
            self.host.answer_init(
                local,
                remote,
                header.spi_i,
                NotifyType::NO_PROPOSAL_CHOSEN,
                vec![],
            );
            return;
        };
        if kei.group != chosen.suite.dh {
            // §1.2: stateless; the initiator retries with our group.
            self.host.stats.invalid_ke_sent += 1;
            let group = chosen.suite.dh.0.to_be_bytes().to_vec();
            self.host.answer_init(
                local,
                remote,
                header.spi_i,
                NotifyType::INVALID_KE_PAYLOAD,
                group,
            );
            return;
        }
        let ke = match crypto::key_exchange(
            &self.host.provider,
            chosen.suite.dh,
            self.host.rng.as_mut(),
        ) {
            Ok(ke) => ke,
            Err(_) => return,
        };
        let g_ir = match ke.shared_secret(&kei.data) {
            Ok(s) => s,
            Err(_) => {
                // RFC 6989: a bad public value.
                self.host.stats.malformed += 1;
                self.host.answer_init(
                    local,
                    remote,
                    header.spi_i,
                    NotifyType::INVALID_SYNTAX,
                    vec![],
                );
                return;
            }
        };
        let spi_r = self.host.new_spi(|s| self.sas.contains_spi(s));
        let nr = self.host.random(NONCE_LEN);
        let Some(keys) = self
            .host
            .derive(&chosen, &g_ir, (ni, &nr), (header.spi_i, spi_r), false)
        else {
            return;
        };
        let uid = self.host.next_uid;
        self.host.next_uid += 1;
        let mut sa = new_sa(ci, uid, header.spi_i, spi_r, false, local, remote, now);
        sa.state = IkeState::HalfOpen;
        sa.keys = Some(keys);
        let (ni, nr_sent) = (ni.clone(), nr.clone());
        let (nat_local, nat_remote) = nat_detect(&msg, header.spi_i, 0, local, remote);
        sa.nat_local = nat_local;
        sa.nat_remote = nat_remote;
        let mut answer = config::ike_answer(&chosen);
        answer.spi = Vec::new();
        let payloads = vec![
            Payload::Sa(vec![answer]),
            Payload::Ke(Ke {
                group: ke.group(),
                data: ke.public_value().to_vec(),
            }),
            Payload::Nonce(nr),
            notify(
                NotifyType::NAT_DETECTION_SOURCE_IP,
                nat_hash(header.spi_i, spi_r, local),
            ),
            notify(
                NotifyType::NAT_DETECTION_DESTINATION_IP,
                nat_hash(header.spi_i, spi_r, remote),
            ),
        ];
        let response = Message {
            header: init_header(header.spi_i, spi_r, false, true),
            payloads,
        }
        .emit();
        sa.exch.responded(0, response.clone());
        sa.exch.await_request(AwaitingAuth {
            init: InitMessages {
                request: data.to_vec(),
                response: response.clone(),
                ni,
                nr: nr_sent,
            },
        });
        self.host.push(local, remote, response);
        self.sas.insert(sa);
    }

    /// The initiator's side: the answer to our IKE_SA_INIT, for the SA
    /// its SPIi names.
    pub(crate) fn init_response(
        &mut self,
        now: Duration,
        header: &Header,
        data: &[u8],
        k: &mut dyn Kernel,
    ) {
        let Some((at, mut sa)) = self
            .sas
            .slot(header.spi_i)
            .and_then(|at| Some((at, self.sas.borrow(at)?)))
        else {
            self.host.stats.unknown_spi += 1;
            return;
        };
        let then = self.host.init_response(now, &mut sa, header, data, k);
        self.then(now, at, then, k);
    }
}

impl Host {
    /// (Re)send our IKE_SA_INIT request.
    fn send_init(&mut self, now: Duration, sa: &mut IkeSa, init: IkeInit) {
        let mut payloads = Vec::new();
        if let Some(c) = &init.cookie {
            payloads.push(notify(NotifyType::COOKIE, c.clone()));
        }
        payloads.push(Payload::Sa(init.offer.clone()));
        payloads.push(Payload::Ke(Ke {
            group: init.ke.group(),
            data: init.ke.public_value().to_vec(),
        }));
        payloads.push(Payload::Nonce(init.ni.clone()));
        payloads.push(notify(
            NotifyType::NAT_DETECTION_SOURCE_IP,
            nat_hash(sa.spi_i, 0, sa.local),
        ));
        payloads.push(notify(
            NotifyType::NAT_DETECTION_DESTINATION_IP,
            nat_hash(sa.spi_i, 0, sa.remote),
        ));
        let data = Message {
            header: init_header(sa.spi_i, 0, true, false),
            payloads,
        }
        .emit();
        sa.exch.restart(
            ExchangeType::IKE_SA_INIT,
            data.clone(),
            Task::IkeInit(init),
            now,
            &self.settings.retransmit,
        );
        self.push(sa.local, sa.remote, data);
    }

    /// The first configured connection for these addresses whose
    /// proposals meet the offer.
    fn pick_connection(
        &self,
        local: IpAddr,
        remote: IpAddr,
        offer: &[flowsec_wire::ike::Proposal],
        ke: DhGroup,
    ) -> Option<(usize, IkeChosen)> {
        self.config
            .connections
            .iter()
            .enumerate()
            .find_map(|(i, c)| {
                let here = c.local_addrs.is_empty()
                    || c.local_addrs.iter().any(|a| addr_matches(a, local));
                let there = c.remote_addrs.is_empty()
                    || c.remote_addrs.iter().any(|a| addr_matches(a, remote));
                if !(here && there) {
                    return None;
                }
                config::select_ike(&promote_ike(&c.proposals, ke), offer).map(|ch| (i, ch))
            })
    }

    /// An unprotected IKE_SA_INIT answer carrying one notify (SPIr 0).
    fn answer_init(
        &mut self,
        local: SocketAddr,
        remote: SocketAddr,
        spi_i: u64,
        ty: NotifyType,
        data: Vec<u8>,
    ) {
        let msg = Message {
            header: init_header(spi_i, 0, false, true),
            payloads: vec![notify(ty, data)],
        };
        self.push(local, remote, msg.emit());
    }

    /// SKEYSEED and the seven keys (§2.14); the SK crypto of each
    /// direction as seen by us.
    /// `nonces` are (Ni, Nr), `spis` (SPIi, SPIr).
    pub(crate) fn derive(
        &self,
        chosen: &IkeChosen,
        g_ir: &[u8],
        nonces: (&[u8], &[u8]),
        spis: (u64, u64),
        initiator: bool,
    ) -> Option<IkeKeyState> {
        let seed =
            crypto::skeyseed(&self.provider, chosen.suite.prf, nonces.0, nonces.1, g_ir).ok()?;
        self.keys_from_seed(chosen, &seed, nonces, spis, initiator)
    }

    /// The keys from a SKEYSEED (also after an IKE SA rekey, §2.18).
    pub(crate) fn keys_from_seed(
        &self,
        chosen: &IkeChosen,
        seed: &[u8],
        (ni, nr): (&[u8], &[u8]),
        (spi_i, spi_r): (u64, u64),
        initiator: bool,
    ) -> Option<IkeKeyState> {
        let k: IkeKeys =
            crypto::ike_keys(&self.provider, &chosen.suite, seed, ni, nr, spi_i, spi_r).ok()?;
        let s = &chosen.suite;
        let i2r = SkCrypto::new(&self.provider, s.encr, s.integ, &k.sk_ei, &k.sk_ai).ok()?;
        let r2i = SkCrypto::new(&self.provider, s.encr, s.integ, &k.sk_er, &k.sk_ar).ok()?;
        let (out, inn) = if initiator { (i2r, r2i) } else { (r2i, i2r) };
        Some(IkeKeyState {
            suite: chosen.suite,
            sk_d: Zeroizing::new(k.sk_d.to_vec()),
            sk_pi: Zeroizing::new(k.sk_pi.to_vec()),
            sk_pr: Zeroizing::new(k.sk_pr.to_vec()),
            out,
            inn,
        })
    }

    /// The initiator's side: the answer to our IKE_SA_INIT.
    pub(crate) fn init_response(
        &mut self,
        now: Duration,
        sa: &mut SaMut<'_>,
        header: &Header,
        data: &[u8],
        k: &mut dyn Kernel,
    ) -> Then {
        // Unauthenticated (§2.21.1): what does not move the exchange on
        // leaves our request and its retransmissions as they were, so a
        // forged answer cannot end or stall the attempt.
        let waiting = sa.exch.waiting(0, ExchangeType::IKE_SA_INIT);
        let Some(Task::IkeInit(init)) =
            waiting.filter(|_| sa.state == IkeState::Connecting && sa.initiator)
        else {
            self.stats.bad_message_id += 1;
            return Then::Stay;
        };
        let msg = match Message::parse(data) {
            Ok(m) if crate::rules::check(ExchangeType::IKE_SA_INIT, true, &m.payloads).is_ok() => m,
            _ => {
                self.stats.malformed += 1;
                return Then::Stay;
            }
        };
        let (retries, group) = (init.retries, init.ke.group());
        if let Some(n) = notifies(&msg).find(|n| n.ty == NotifyType::COOKIE) {
            // §2.6: the same request again, the cookie first.
            if retries < MAX_INIT_RETRIES && n.data.len() <= 64 && !n.data.is_empty() {
                let Some(Task::IkeInit(mut init)) = sa.exch.take_task() else {
                    return Then::Stay;
                };
                init.retries += 1;
                init.cookie = Some(n.data.clone());
                self.send_init(now, sa, init);
                return Then::Stay;
            }
            return self.fail(sa, NegotiationError::TooManyCookies);
        }
        if let Some(n) = error_notify(&msg) {
            if n.ty == NotifyType::INVALID_KE_PAYLOAD
                && n.data.len() == 2
                && retries < MAX_INIT_RETRIES
            {
                let wanted = DhGroup(u16::from_be_bytes([n.data[0], n.data[1]]));
                let offered = self.config.connections[sa.conn]
                    .proposals
                    .iter()
                    .any(|p| p.dh.contains(&wanted));
                if offered && group != wanted {
                    if let Ok(ke) = crypto::key_exchange(&self.provider, wanted, self.rng.as_mut())
                    {
                        self.events.push(IkeEvent::InitRetry { group: wanted });
                        let Some(Task::IkeInit(mut init)) = sa.exch.take_task() else {
                            return Then::Stay;
                        };
                        init.retries += 1;
                        init.ke = ke;
                        self.send_init(now, sa, init);
                        return Then::Stay;
                    }
                }
            }
            // Not acted on at once: a valid answer may still come; if
            // none does, the retransmissions run out (§2.21.1).
            self.events.push(IkeEvent::InitRefused {
                name: self.conn_name(sa),
                unique_id: sa.uid,
                notify: n.ty,
            });
            return Then::Stay;
        }
        let p = parts(&msg);
        let (Some(sar), Some(ker), Some(nr)) = (p.sa.and_then(|s| s.first()), p.ke, p.nonce) else {
            return self.bogus_init(sa, InitResponseError::MissingPayloads);
        };
        let chosen = match config::ike_accepts(&init.offer, sar) {
            Some(c) if c.suite.dh == ker.group && header.spi_r != 0 => c,
            _ => return self.bogus_init(sa, InitResponseError::NotOffered),
        };
        let Ok(g_ir) = init.ke.shared_secret(&ker.data) else {
            return self.bogus_init(sa, InitResponseError::BadKe);
        };
        // The exchange is done: the request as sent is RealMessage1 (§2.15).
        let Some(sent) = sa.exch.answered(0, ExchangeType::IKE_SA_INIT) else {
            return Then::Stay;
        };
        let Task::IkeInit(init) = sent.task else {
            return Then::Stay;
        };
        sa.spi_r = header.spi_r;
        let Some(keys) = self.derive(&chosen, &g_ir, (&init.ni, nr), (sa.spi_i, sa.spi_r), true)
        else {
            return self.fail(sa, NegotiationError::KeyDerivation);
        };
        sa.keys = Some(keys);
        let (nat_local, nat_remote) = nat_detect(&msg, sa.spi_i, sa.spi_r, sa.local, sa.remote);
        sa.nat_local = nat_local;
        sa.nat_remote = nat_remote;
        if nat_local || nat_remote {
            // §2.23: from IKE_AUTH on, both use port 4500.
            sa.local.set_port(NAT_T_PORT);
            sa.remote.set_port(NAT_T_PORT);
        }
        // §2.2: each end numbers its own requests from 0; IKE_SA_INIT
        // was our 0 (the manager's next is 1), the peer's first request
        // will be its 0.
        let messages = InitMessages {
            request: sent.data,
            response: data.to_vec(),
            ni: init.ni,
            nr: nr.clone(),
        };
        self.send_auth(now, sa, messages, init.first_child, k)
    }

    /// An IKE_SA_INIT answer we cannot use: unauthenticated, so it ends
    /// nothing (§2.21.1); the request stays in flight.
    fn bogus_init(&mut self, sa: &IkeSa, why: InitResponseError) -> Then {
        self.stats.malformed += 1;
        self.events.push(IkeEvent::InitIgnored {
            name: self.conn_name(sa),
            unique_id: sa.uid,
            why,
        });
        Then::Stay
    }

    /// Give up on an IKE SA that is not established yet: it goes when
    /// its borrow ends.
    pub(crate) fn fail(&mut self, sa: &IkeSa, reason: NegotiationError) -> Then {
        self.events.push(IkeEvent::NegotiationFailed {
            name: self.conn_name(sa),
            unique_id: sa.uid,
            remote: sa.remote.ip(),
            reason,
        });
        Then::Destroy(Vec::new())
    }
}

/// A fresh IKE SA record.
#[allow(clippy::too_many_arguments)]
pub(crate) fn new_sa(
    conn: usize,
    uid: u32,
    spi_i: u64,
    spi_r: u64,
    initiator: bool,
    local: SocketAddr,
    remote: SocketAddr,
    now: Duration,
) -> IkeSa {
    IkeSa {
        conn,
        uid,
        spi_i,
        spi_r,
        initiator,
        local,
        remote,
        state: IkeState::Connecting,
        keys: None,
        nat_local: false,
        nat_remote: false,
        peer_id: None,
        local_id: None,
        exch: Exchanges::new(0),
        queue: VecDeque::new(),
        children: Vec::new(),
        created: now,
        established: None,
        rekey_at: None,
        expire_at: None,
        last_heard: now,
        last_sent: now,
    }
}

fn init_header(spi_i: u64, spi_r: u64, initiator: bool, response: bool) -> Header {
    Header {
        spi_i,
        spi_r,
        next_payload: PayloadType::NONE,
        major_version: 2,
        minor_version: 0,
        exchange: ExchangeType::IKE_SA_INIT,
        initiator,
        response,
        message_id: 0,
        length: 0,
    }
}

/// SHA-1(SPIi | SPIr | IP | Port) (§2.23).
pub(crate) fn nat_hash(spi_i: u64, spi_r: u64, addr: SocketAddr) -> Vec<u8> {
    let (v4, v6);
    let ip: &[u8] = match addr.ip() {
        IpAddr::V4(a) => {
            v4 = a.octets();
            &v4
        }
        IpAddr::V6(a) => {
            v6 = a.octets();
            &v6
        }
    };
    let port = addr.port().to_be_bytes();
    flowsec_crypto::fixed::sha1(&[&spi_i.to_be_bytes(), &spi_r.to_be_bytes(), ip, &port]).to_vec()
}

/// (we are behind a NAT, the peer is) from the peer's NAT_DETECTION
/// notifies; no notifies means no NAT-T support and no NAT assumed.
/// strongSwan's kernel-libipsec sends a random source hash on purpose, so
/// that both ends use UDP encapsulation.
fn nat_detect(
    msg: &Message,
    spi_i: u64,
    spi_r: u64,
    local: SocketAddr,
    remote: SocketAddr,
) -> (bool, bool) {
    let src: Vec<&[u8]> = notifies(msg)
        .filter(|n| n.ty == NotifyType::NAT_DETECTION_SOURCE_IP)
        .map(|n| n.data.as_slice())
        .collect();
    let dst: Vec<&[u8]> = notifies(msg)
        .filter(|n| n.ty == NotifyType::NAT_DETECTION_DESTINATION_IP)
        .map(|n| n.data.as_slice())
        .collect();
    if src.is_empty() || dst.is_empty() {
        return (false, false);
    }
    let them = nat_hash(spi_i, spi_r, remote);
    let us = nat_hash(spi_i, spi_r, local);
    (
        !dst.contains(&us.as_slice()),
        !src.contains(&them.as_slice()),
    )
}

/// Whether a configured address matches an actual one.
pub(crate) fn addr_matches(spec: &AddrSpec, ip: IpAddr) -> bool {
    match spec {
        AddrSpec::Any => true,
        AddrSpec::Addr(a) => *a == ip,
        AddrSpec::Prefix(a, len) => {
            flowsec_ipsec::spd::IpPrefix::new(*a, *len).is_some_and(|p| p.contains(ip))
        }
        AddrSpec::Range(s, e) => match (s, e, ip) {
            (IpAddr::V4(s), IpAddr::V4(e), IpAddr::V4(ip)) => (*s..=*e).contains(&ip),
            (IpAddr::V6(s), IpAddr::V6(e), IpAddr::V6(ip)) => (*s..=*e).contains(&ip),
            _ => false,
        },
        AddrSpec::Host(_) => false,
    }
}

/// Our proposals with `group` first among the DH groups of each, when it
/// is one of them: the group the peer sent a KE payload for is taken if
/// acceptable, sparing an INVALID_KE_PAYLOAD round trip (strongSwan does
/// the same).
pub(crate) fn promote_ike(
    ours: &[config::IkeProposal],
    group: DhGroup,
) -> Vec<config::IkeProposal> {
    promoted(ours, group, |p| &mut p.dh)
}

/// Likewise for Child SA proposals (PFS).
pub(crate) fn promote_child(
    ours: &[config::ChildProposal],
    group: DhGroup,
) -> Vec<config::ChildProposal> {
    promoted(ours, group, |p| &mut p.dh)
}

fn promoted<P: Clone>(
    ours: &[P],
    group: DhGroup,
    groups: fn(&mut P) -> &mut Vec<DhGroup>,
) -> Vec<P> {
    ours.iter()
        .map(|p| {
            let mut p = p.clone();
            let g = groups(&mut p);
            if let Some(at) = g.iter().position(|x| *x == group) {
                let x = g.remove(at);
                g.insert(0, x);
            }
            p
        })
        .collect()
}
