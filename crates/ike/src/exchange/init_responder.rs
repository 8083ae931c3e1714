//! IKE_SA_INIT, responder (RFC 7296 §1.2): admission (admit.rs: COOKIE,
//! §2.6, and the limits on half-open SAs), the connection and proposal
//! for the offer, and the half-open IKE SA that waits for IKE_AUTH; or a
//! stateless answer.
//!
//! ```text
//!  HDR, [N(COOKIE),] SAi1, KEi, Ni, N(NAT_D..) -->
//!     retransmission?  ──► the same answer again (§2.1)
//!     admitted?        ──► no: <-- HDR, N(COOKIE), or dropped
//!     proposal, group? ──► no: <-- HDR, N(NO_PROPOSAL_CHOSEN | INVALID_KE_PAYLOAD)
//!                                <-- HDR, SAr1, KEr, Nr, N(NAT_D..)   (half-open)
//! ```

use core::time::Duration;
use std::net::IpAddr;

use flowsec_wire::iana::{DhGroup, ExchangeType, NotifyType};
use flowsec_wire::ike::{Ke, Message, Payload, Proposal};
use zeroize::Zeroizing;

use crate::admit::Refusal;
use crate::config::{self, AddrSpec, ConnRef, IkeChosen};
use crate::crypto::{self, KeyExchange};
use crate::event::IkeEvent;
use crate::exchange::auth::AwaitingAuth;
use crate::exchange::init::{init_header, new_sa, promote_ike, NONCE_LEN};
use crate::exchange::intermediate::AwaitingIntermediate;
use crate::exchange::InitMessages;
use crate::host::Ike;
use crate::host::{has_notify, notify, parts, Host};
use crate::nat::{nat_detect, nat_hash};
use crate::sa::{IkeKeyState, IkeSa, IkeState};
use crate::transport::Arrival;

/// Responder: an IKE_SA_INIT request (for its NAT_DETECTION notifies)
/// and its Ni.
struct Offered<'a> {
    msg: &'a Message,
    ni: &'a [u8],
}

/// Responder: how an IKE_SA_INIT request is answered: the connection,
/// the proposal chosen, our key exchange and the shared secret (§1.2).
struct InitChoice {
    conn: ConnRef,
    chosen: IkeChosen,
    ke: Box<dyn KeyExchange>,
    g_ir: Zeroizing<Vec<u8>>,
}

/// The responder's side of IKE_SA_INIT (§1.2): admitted (§2.6), a
/// connection and proposal chosen, a half-open IKE SA that waits for
/// IKE_AUTH; or a stateless answer (COOKIE, INVALID_KE_PAYLOAD,
/// NO_PROPOSAL_CHOSEN), or nothing.
pub(crate) fn init_request(ike: &mut Ike, now: Duration, arrival: Arrival<'_>) {
    let header = arrival.header;
    if header.spi_r != 0 || header.message_id != 0 || !header.initiator {
        ike.host.stats.malformed += 1;
        return;
    }
    if init_replayed(ike, now, &arrival) {
        return;
    }
    let Some(msg) = init_request_message(&mut ike.host, &arrival) else {
        return;
    };
    let p = parts(&msg);
    let (Some(sai), Some(kei), Some(ni)) = (p.sa, p.ke, p.nonce) else {
        return;
    };
    if !admitted(ike, now, &arrival, &msg, ni) {
        return;
    }
    // RFC 9242 §3.1: additional key exchanges only with a peer that
    // takes IKE_INTERMEDIATE (RFC 9370 §2.2.1).
    let intermediate = has_notify(&msg, NotifyType::INTERMEDIATE_EXCHANGE_SUPPORTED);
    // RFC 5685 §5: a connection that redirects at IKE_SA_INIT answers
    // with REDIRECT alone, before any key exchange.
    let (local, remote) = (arrival.local.ip(), arrival.remote.ip());
    if let Some((conn, _)) =
        pick_connection(&ike.host, local, remote, (sai, intermediate), kei.group)
    {
        if let Some(data) =
            crate::exchange::redirect::at_init(&mut ike.host, &arrival, &msg, &conn, ni)
        {
            answer_init(&mut ike.host, &arrival, NotifyType::REDIRECT, data);
            return;
        }
    }
    let Some(choice) = init_choose(&mut ike.host, &arrival, (sai, intermediate), kei) else {
        return;
    };
    let spi_r = ike.host.new_spi(|s| ike.sas.contains_spi(s));
    let nr = ike.host.random(NONCE_LEN);
    let spis = (header.spi_i, spi_r);
    let Some(keys) = crate::exchange::init::derive(
        &ike.host,
        &choice.chosen,
        &choice.g_ir,
        (ni, &nr),
        spis,
        false,
    ) else {
        return;
    };
    let offered = Offered { msg: &msg, ni };
    let sa = half_open(
        &mut ike.host,
        now,
        &arrival,
        offered,
        &choice,
        (spi_r, nr),
        keys,
    );
    ike.sas.insert(sa);
}

/// A retransmission of an IKE_SA_INIT request we answered gets the
/// same answer (§2.1); whether it was one (anything else from that
/// SPIi and address is dropped). Rate-limited as every cached answer
/// (exchange.rs): the peer is not verified yet, and an answer to every
/// copy would let it make us queue (over a stream) or send (over UDP)
/// a response per request it writes (issue 29 items 1, 2).
fn init_replayed(ike: &mut Ike, now: Duration, arrival: &Arrival<'_>) -> bool {
    let Some(sa) = ike.sas.values_mut().find(|s| {
        s.state == IkeState::HalfOpen
            && s.spi_i == arrival.header.spi_i
            && s.path.remote == arrival.remote
    }) else {
        return false;
    };
    let again = sa
        .exch
        .passive()
        .and_then(|w| w.init())
        .filter(|init| init.request == arrival.data);
    let Some(response) = again.map(|init| init.response.clone()) else {
        return true;
    };
    // Found by its address: the peer's own.
    if sa.exch.may_resend(now, true) {
        ike.host.stats.replayed += 1;
        ike.host
            .push(sa.path.transport, sa.path.local, sa.path.remote, response);
    } else {
        ike.host.stats.resend_limited += 1;
    }
    true
}

/// Whether the request may make a half-open IKE SA (admit.rs), else
/// its stateless answer (a COOKIE, §2.6) or nothing.
fn admitted(ike: &mut Ike, now: Duration, arrival: &Arrival<'_>, msg: &Message, ni: &[u8]) -> bool {
    // §2.6: a returned cookie is the first payload.
    let cookie = match msg.payloads.first() {
        Some(Payload::Notify(n)) if n.ty == NotifyType::COOKIE => Some(n.data.as_slice()),
        _ => None,
    };
    let refusal = match admit(
        ike,
        now,
        arrival.remote.ip(),
        ni,
        arrival.header.spi_i,
        cookie,
    ) {
        Ok(()) => return true,
        Err(refusal) => refusal,
    };
    let stats = &mut ike.host.stats;
    match refusal {
        Refusal::Cookie(want) => {
            stats.cookies_sent += 1;
            answer_init(&mut ike.host, arrival, NotifyType::COOKIE, want);
        }
        Refusal::BlockedSource => stats.blocked_source += 1,
        Refusal::Limit => stats.refused_limit += 1,
    }
    false
}

/// Whether an IKE_SA_INIT request from `ip` may make a half-open IKE
/// SA at `now`; `cookie` is the COOKIE it carries first, if any.
pub(crate) fn admit(
    ike: &mut Ike,
    now: Duration,
    ip: IpAddr,
    ni: &[u8],
    spi_i: u64,
    cookie: Option<&[u8]>,
) -> Result<(), Refusal> {
    let s = &ike.host.settings;
    let (all, from_ip) = half_open_from(ike, ip);
    // §2.6: above a threshold, only a request that returns our
    // cookie goes on. The per-address one (strongSwan 5.9's
    // cookie_threshold_ip) asks a busy address first, below the
    // global one.
    if all >= s.cookie_threshold || from_ip >= s.cookie_threshold_ip {
        ike.host.cookies.rotate(now, ike.host.rng.as_mut());
        let valid = cookie.is_some_and(|c| ike.host.cookies.verify(now, c, ni, ip, spi_i));
        if !valid {
            return Err(Refusal::Cookie(ike.host.cookies.make(ni, ip, spi_i)));
        }
    }
    let s = &ike.host.settings;
    if from_ip >= s.block_threshold {
        return Err(Refusal::BlockedSource);
    }
    if ike.sas.len() >= s.max_ike_sas || all >= s.max_half_open {
        return Err(Refusal::Limit);
    }
    Ok(())
}

/// Half-open IKE SAs (responder, waiting for IKE_AUTH): all, and
/// those from `ip`'s [`crate::admit::source`]. A half-open SA keeps the address its
/// IKE_SA_INIT came from (engine.rs never moves it to another).
fn half_open_from(ike: &Ike, ip: IpAddr) -> (usize, usize) {
    let from = crate::admit::source(ip);
    ike.sas
        .values()
        .filter(|s| s.state == IkeState::HalfOpen)
        .fold((0, 0), |(all, mine), s| {
            (
                all + 1,
                mine + usize::from(crate::admit::source(s.path.remote.ip()) == from),
            )
        })
}

/// The first configured connection for these addresses whose
/// proposals meet the offer.
fn pick_connection(
    host: &Host,
    local: IpAddr,
    remote: IpAddr,
    (offer, intermediate): (&[flowsec_wire::ike::Proposal], bool),
    ke: DhGroup,
) -> Option<(ConnRef, IkeChosen)> {
    // Not a connection a reload retired.
    host.conns.iter().find_map(|c| {
        let here = c.local_addrs.is_empty() || c.local_addrs.iter().any(|a| addr_matches(a, local));
        let there =
            c.remote_addrs.is_empty() || c.remote_addrs.iter().any(|a| addr_matches(a, remote));
        if !(here && there) {
            return None;
        }
        config::select_ike(&promote_ike(&c.proposals, ke), offer, intermediate)
            .map(|ch| (c.clone(), ch))
    })
}

/// An unprotected IKE_SA_INIT answer carrying one notify (SPIr 0).
fn answer_init(host: &mut Host, to: &Arrival<'_>, ty: NotifyType, data: Vec<u8>) {
    let msg = Message {
        header: init_header(to.header.spi_i, 0, false, true),
        payloads: vec![notify(ty, data)],
    };
    let counted = crate::counters::Counter::outgoing(ExchangeType::IKE_SA_INIT, true);
    host.counters.count(None, counted);
    host.push(to.transport, to.local, to.remote, msg.emit());
}

/// The IKE_SA_INIT request parsed and its payloads checked (§3,
/// rules.rs); a critical payload we do not know is answered (§2.5).
fn init_request_message(host: &mut Host, arrival: &Arrival<'_>) -> Option<Message> {
    let msg = match Message::parse(arrival.data) {
        Ok(m) => m,
        Err(flowsec_wire::ike::IkeError::UnsupportedCritical(ty)) => {
            host.stats.malformed += 1;
            let unsupported = NotifyType::UNSUPPORTED_CRITICAL_PAYLOAD;
            answer_init(host, arrival, unsupported, vec![ty.0]);
            return None;
        }
        Err(_) => {
            host.stats.malformed += 1;
            return None;
        }
    };
    if crate::rules::check(ExchangeType::IKE_SA_INIT, false, &msg.payloads).is_err() {
        host.stats.malformed += 1;
        return None;
    }
    Some(msg)
}

/// Responder: the connection and proposal for the offer `sai`, and our
/// key exchange with the shared secret (§1.2); else the stateless
/// answer: NO_PROPOSAL_CHOSEN, INVALID_KE_PAYLOAD with our group, or
/// INVALID_SYNTAX for a bad public value (RFC 6989).
fn init_choose(
    host: &mut Host,
    arrival: &Arrival<'_>,
    sai: (&[Proposal], bool),
    kei: &Ke,
) -> Option<InitChoice> {
    let (local, remote) = (arrival.local, arrival.remote);
    let Some((ci, chosen)) = pick_connection(host, local.ip(), remote.ip(), sai, kei.group) else {
        host.stats.no_proposal += 1;
        host.events.push(IkeEvent::NoProposal { from: remote });
        answer_init(host, arrival, NotifyType::NO_PROPOSAL_CHOSEN, vec![]);
        return None;
    };
    if kei.group != chosen.suite.dh {
        // §1.2: stateless; the initiator retries with our group.
        host.stats.invalid_ke_sent += 1;
        let group = chosen.suite.dh.0.to_be_bytes().to_vec();
        answer_init(host, arrival, NotifyType::INVALID_KE_PAYLOAD, group);
        return None;
    }
    let (ke, g_ir) = match crypto::respond(
        &host.provider,
        chosen.suite.dh,
        host.rng.as_mut(),
        &kei.data,
    ) {
        Ok(answered) => answered,
        Err(flowsec_crypto::CryptoError::BadPublicValue) => {
            // RFC 6989: a bad public value; FIPS 203 §7.2: an ML-KEM
            // key that fails its checks (draft-ietf-ipsecme-ikev2-mlkem
            // §2.2: INVALID_SYNTAX).
            host.stats.malformed += 1;
            answer_init(host, arrival, NotifyType::INVALID_SYNTAX, vec![]);
            return None;
        }
        Err(_) => return None,
    };
    Some(InitChoice {
        conn: ci,
        chosen,
        ke,
        g_ir,
    })
}

/// Responder: the half-open IKE SA `choice` makes, with our SPI and
/// nonce `(spi_r, nr)` and its `keys`; our IKE_SA_INIT answer goes,
/// and AwaitingAuth keeps both messages for IKE_AUTH (§2.15).
fn half_open(
    host: &mut Host,
    now: Duration,
    arrival: &Arrival<'_>,
    offer: Offered<'_>,
    choice: &InitChoice,
    (spi_r, nr): (u64, Vec<u8>),
    keys: IkeKeyState,
) -> IkeSa {
    let (local, remote, spi_i) = (arrival.local, arrival.remote, arrival.header.spi_i);
    let uid = host.next_uid;
    host.next_uid += 1;
    let mut sa = new_sa(
        choice.conn.clone(),
        uid,
        (spi_i, spi_r),
        false,
        (local, remote),
        now,
    );
    sa.state = IkeState::HalfOpen;
    sa.path.transport = arrival.transport;
    sa.keys = Some(keys);
    (sa.path.nat_local, sa.path.nat_remote) = nat_detect(offer.msg, spi_i, 0, local, remote);
    let payloads = answer_payloads(host, &mut sa, &offer, choice, &nr);
    let response = Message {
        header: init_header(spi_i, spi_r, false, true),
        payloads,
    }
    .emit();
    sa.exch.responded(0, vec![response.clone()]);
    let additional = choice.chosen.additional();
    let init = InitMessages {
        request: arrival.data.to_vec(),
        response: response.clone(),
        ni: offer.ni.to_vec(),
        nr,
        intermediate: None,
    };
    match additional.is_empty() {
        true => sa
            .exch
            .await_request(Box::new(AwaitingAuth { eap: None, init })),
        false => sa.exch.await_request(Box::new(AwaitingIntermediate::new(
            init,
            choice.chosen.clone(),
            additional,
        ))),
    }
    let counted = crate::counters::Counter::outgoing(ExchangeType::IKE_SA_INIT, true);
    host.counters.count(Some(&sa.conn.name), counted);
    host.push(sa.path.transport, local, remote, response);
    sa
}

/// Our IKE_SA_INIT answer's payloads (§1.2), and what `sa` learns from
/// the request: whether the peer fragments (RFC 7383 §2.3, answered in
/// kind) and the hashes it verifies with (RFC 7427 §4).
fn answer_payloads(
    host: &Host,
    sa: &mut IkeSa,
    offer: &Offered<'_>,
    choice: &InitChoice,
    nr: &[u8],
) -> Vec<Payload> {
    let (spi_i, spi_r) = (sa.spi_i, sa.spi_r);
    let mut answer = config::ike_answer(&choice.chosen);
    answer.spi = Vec::new();
    sa.announced.fragments = crate::exchange::init::announces_fragmentation(&choice.conn)
        && has_notify(offer.msg, NotifyType::IKEV2_FRAGMENTATION_SUPPORTED);
    sa.announced.redirect = crate::exchange::redirect::announced(offer.msg);
    let mut payloads = vec![
        Payload::Sa(vec![answer]),
        Payload::Ke(Ke {
            group: choice.ke.group(),
            data: choice.ke.public_value().to_vec(),
        }),
        Payload::Nonce(nr.to_vec()),
        notify(
            NotifyType::NAT_DETECTION_SOURCE_IP,
            nat_hash(spi_i, spi_r, sa.path.local),
        ),
        notify(
            NotifyType::NAT_DETECTION_DESTINATION_IP,
            nat_hash(spi_i, spi_r, sa.path.remote),
        ),
    ];
    if sa.announced.fragments {
        payloads.push(notify(NotifyType::IKEV2_FRAGMENTATION_SUPPORTED, vec![]));
    }
    // RFC 9242 §3.1: answered when IKE_INTERMEDIATE will carry the
    // additional key exchanges chosen (as strongSwan: only then).
    if !choice.chosen.additional().is_empty() {
        payloads.push(notify(NotifyType::INTERMEDIATE_EXCHANGE_SUPPORTED, vec![]));
    }
    let use_ppk = has_notify(offer.msg, NotifyType::USE_PPK);
    sa.announced.ppk = crate::exchange::ppk::announce(host, sa, use_ppk);
    if sa.announced.ppk {
        payloads.push(notify(NotifyType::USE_PPK, vec![]));
    }
    sa.announced.hashes = crate::auth::pubkey::announced_hashes(offer.msg);
    if !sa.announced.hashes.is_empty() {
        payloads.push(notify(
            NotifyType::SIGNATURE_HASH_ALGORITHMS,
            crate::cert::HashSet::ours(),
        ));
    }
    // §1.2: [CERTREQ] in the IKE_SA_INIT response, naming our CAs,
    // when the initiator will sign.
    payloads.extend(crate::auth::pubkey::certreq(host, &choice.conn));
    payloads
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
