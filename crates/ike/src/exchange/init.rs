//! IKE_SA_INIT (RFC 7296 §1.2, §2.6 cookies, §1.3/§2.7 INVALID_KE_PAYLOAD,
//! §2.23 NAT detection) and starting an IKE SA, as initiator (the
//! responder's side is init_responder.rs), and the keys both derive.
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
use std::net::SocketAddr;

use flowsec_wire::iana::{DhGroup, ExchangeType, NotifyType, PayloadType};
use flowsec_wire::ike::{Header, Ke, Message, Payload, Proposal};
use zeroize::Zeroizing;

use crate::config::{self, ConnRef, Connection, IkeChosen};
use crate::context::Cx;
use crate::crypto::KeyExchange;
use crate::crypto::{self, IkeKeys, SkCrypto};
use crate::error::{InitResponseError, NegotiationError};
use crate::event::IkeEvent;
use crate::exchange::Exchanges;
use crate::exchange::InitMessages;
use crate::exchange::{take_as, task_as, Exchange, Kind};
use crate::host::{error_notify, has_notify, notifies, notify, parts, Host};
use crate::nat::{nat_detect, nat_hash};
use crate::sa::{Announced, Ids, Path, Times, Vips};
use crate::sa::{IkeKeyState, IkeSa, IkeState};
use crate::table::{SaMut, Then};

// The UDP port IKE starts on, and the one it floats to (§2.23).
pub use flowsec_wire::udp_encap::{IKE_PORT, NAT_T_PORT};
/// Bytes of our nonces (§2.10: at least half the PRF key size; strongSwan
/// sends 32).
pub(crate) const NONCE_LEN: usize = 32;
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

/// (Re)send our IKE_SA_INIT request.
pub(crate) fn send_init(cx: &mut Cx<'_>, sa: &mut IkeSa, init: IkeInit) {
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
        nat_hash(sa.spi_i, 0, sa.path.local),
    ));
    payloads.push(crate::exchange::redirect::announce(sa));
    payloads.push(notify(
        NotifyType::NAT_DETECTION_DESTINATION_IP,
        nat_hash(sa.spi_i, 0, sa.path.remote),
    ));
    // RFC 7383 §2.3: fragmentation is announced in IKE_SA_INIT.
    if announces_fragmentation(&sa.conn) {
        payloads.push(notify(NotifyType::IKEV2_FRAGMENTATION_SUPPORTED, vec![]));
    }
    // RFC 9370 §2.2.1: proposals with additional key exchanges need
    // IKE_INTERMEDIATE (RFC 9242 §3.1); announced only then, as strongSwan.
    if sa.conn.proposals.iter().any(|p| !p.addke.is_empty()) {
        payloads.push(notify(NotifyType::INTERMEDIATE_EXCHANGE_SUPPORTED, vec![]));
    }
    // RFC 8784 §3: we would use a post-quantum preshared key.
    if crate::exchange::ppk::announce(cx, sa, false) {
        payloads.push(notify(NotifyType::USE_PPK, vec![]));
    }
    // RFC 7427 §4: the hashes we verify signatures with (as strongSwan,
    // always: the peer may sign even if we use a PSK).
    payloads.push(notify(
        NotifyType::SIGNATURE_HASH_ALGORITHMS,
        crate::cert::HashSet::ours(),
    ));
    let data = Message {
        header: init_header(sa.spi_i, 0, true, false),
        payloads,
    }
    .emit();
    sa.exch.restart(
        ExchangeType::IKE_SA_INIT,
        vec![data.clone()],
        Box::new(init),
        cx.now,
        &cx.host.settings.retransmit,
    );
    let counted = crate::counters::Counter::outgoing(ExchangeType::IKE_SA_INIT, false);
    cx.host.counters.count(Some(&sa.conn.name), counted);
    cx.host
        .push(sa.path.transport, sa.path.local, sa.path.remote, data);
}

/// The initiator's side: the answer to our IKE_SA_INIT.
pub(crate) fn init_response(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    header: &Header,
    data: &[u8],
) -> Then {
    // Unauthenticated (§2.21.1): what does not move the exchange on
    // leaves our request and its retransmissions as they were, so a
    // forged answer cannot end or stall the attempt.
    let waiting = sa.exch.waiting(0, ExchangeType::IKE_SA_INIT);
    if task_as::<IkeInit>(waiting).is_none() || sa.state != IkeState::Connecting || !sa.initiator {
        cx.host.stats.bad_message_id += 1;
        return Then::Stay;
    }
    let msg = match Message::parse(data) {
        Ok(m) if crate::rules::check(ExchangeType::IKE_SA_INIT, true, &m.payloads).is_ok() => m,
        _ => {
            cx.host.stats.malformed += 1;
            return Then::Stay;
        }
    };
    if let Some(then) = init_notified(cx, sa, &msg) {
        return then;
    }
    let Some(init) = task_as::<IkeInit>(sa.exch.task()) else {
        return Then::Stay;
    };
    let p = parts(&msg);
    let (Some(sar), Some(ker), Some(nr)) = (p.sa.and_then(|s| s.first()), p.ke, p.nonce) else {
        return crate::host::bogus_init(cx, sa, InitResponseError::MissingPayloads);
    };
    let chosen = match config::ike_accepts(&init.offer, sar) {
        Some(c) if c.suite.dh == ker.group && header.spi_r != 0 => c,
        _ => return crate::host::bogus_init(cx, sa, InitResponseError::NotOffered),
    };
    let intermediate = has_notify(&msg, NotifyType::INTERMEDIATE_EXCHANGE_SUPPORTED);
    if !chosen.additional().is_empty() && !intermediate {
        return crate::host::bogus_init(cx, sa, InitResponseError::NoIntermediate);
    }
    let Ok(g_ir) = init.ke.shared_secret(&ker.data) else {
        return crate::host::bogus_init(cx, sa, InitResponseError::BadKe);
    };
    complete(cx, sa, header.spi_r, (&msg, data), chosen, (&g_ir, nr))
}

/// Our IKE_SA_INIT answered and checked: the keys, then IKE_INTERMEDIATE
/// for each additional key exchange (RFC 9370 §2.2.2) or IKE_AUTH.
fn complete(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    spi_r: u64,
    (msg, data): (&Message, &[u8]),
    chosen: IkeChosen,
    (g_ir, nr): (&[u8], &[u8]),
) -> Then {
    // The exchange is done: the request as sent is RealMessage1
    // (§2.15). §2.2: each end numbers its own requests from 0;
    // IKE_SA_INIT was our 0 (the manager's next is 1), the peer's
    // first request will be its 0.
    let Some(sent) = sa.exch.answered(0, ExchangeType::IKE_SA_INIT) else {
        return Then::Stay;
    };
    let Some(init) = take_as::<IkeInit>(sent.task) else {
        return Then::Stay;
    };
    sa.spi_r = spi_r;
    let Some(keys) = derive(
        cx,
        &chosen,
        g_ir,
        (&init.ni, nr),
        (sa.spi_i, sa.spi_r),
        true,
    ) else {
        return crate::host::fail(cx, sa, NegotiationError::KeyDerivation);
    };
    sa.keys = Some(keys);
    note_init_answer(sa, msg);
    let messages = InitMessages {
        // IKE_SA_INIT is never fragmented (RFC 7383 §2.5.3).
        request: sent.data.concat(),
        response: data.to_vec(),
        ni: init.ni,
        nr: nr.to_vec(),
        intermediate: None,
    };
    let additional = chosen.additional();
    if additional.is_empty() {
        return crate::exchange::auth::send_auth(cx, sa, messages, init.first_child);
    }
    // RFC 9370 §2.2.2: each additional key exchange in an
    // IKE_INTERMEDIATE of its own, then IKE_AUTH.
    crate::exchange::intermediate::start(cx, sa, messages, init.first_child, chosen)
}

/// What the responder's IKE_SA_INIT answer tells beside the keys:
/// whether it takes fragments (RFC 7383 §2.3, if we announced them
/// too), the hashes it verifies signatures with (RFC 7427 §4), whether
/// it asked for certificates (CERTREQ), and which side is behind a NAT
/// (§2.23), floating to port 4500 over UDP.
fn note_init_answer(sa: &mut IkeSa, msg: &Message) {
    sa.announced.fragments = announces_fragmentation(&sa.conn)
        && has_notify(msg, NotifyType::IKEV2_FRAGMENTATION_SUPPORTED);
    sa.announced.hashes = crate::auth::pubkey::announced_hashes(msg);
    sa.announced.ppk = sa.conn.ppk_id.is_some() && has_notify(msg, NotifyType::USE_PPK);
    sa.announced.certreq = msg
        .payloads
        .iter()
        .any(|p| matches!(p, Payload::CertReq(_)));
    let (nat_local, nat_remote) =
        nat_detect(msg, sa.spi_i, sa.spi_r, sa.path.local, sa.path.remote);
    (sa.path.nat_local, sa.path.nat_remote) = (nat_local, nat_remote);
    // Over a stream nothing floats: the connection stays (RFC 9329 §6.5).
    if (nat_local || nat_remote) && !sa.path.transport.is_stream() {
        // §2.23: from IKE_AUTH on, both use port 4500.
        sa.path.local.set_port(NAT_T_PORT);
        sa.path.remote.set_port(NAT_T_PORT);
    }
}

/// The notifies of an IKE_SA_INIT answer that do not complete it:
/// COOKIE (§2.6) and INVALID_KE_PAYLOAD (§1.2) make us ask again, up
/// to [`MAX_INIT_RETRIES`] times; another error notify, as
/// unauthenticated, is noted and waited past (§2.21.1). `None`: none
/// of them.
fn init_notified(cx: &mut Cx<'_>, sa: &mut SaMut<'_>, msg: &Message) -> Option<Then> {
    let Some(init) = task_as::<IkeInit>(sa.exch.task()) else {
        return Some(Then::Stay);
    };
    let (retries, group) = (init.retries, init.ke.group());
    // RFC 5685 §5: the gateway sends us elsewhere (if it echoes our Ni).
    let (ni, first) = (init.ni.clone(), init.first_child);
    if let Some(then) = crate::exchange::redirect::in_init_answer(cx, sa, msg, (&ni, first)) {
        return Some(then);
    }
    if let Some(n) = notifies(msg).find(|n| n.ty == NotifyType::COOKIE) {
        // §2.6: the same request again, the cookie first.
        if retries < MAX_INIT_RETRIES && n.data.len() <= 64 && !n.data.is_empty() {
            let cookie = n.data.clone();
            init_again(cx, sa, |init| init.cookie = Some(cookie));
            return Some(Then::Stay);
        }
        return Some(crate::host::fail(cx, sa, NegotiationError::TooManyCookies));
    }
    let n = error_notify(msg)?;
    if n.ty == NotifyType::INVALID_KE_PAYLOAD && n.data.len() == 2 && retries < MAX_INIT_RETRIES {
        let wanted = DhGroup(u16::from_be_bytes([n.data[0], n.data[1]]));
        let offered = sa.conn.proposals.iter().any(|p| p.dh.contains(&wanted));
        if offered && group != wanted {
            if let Ok(ke) = crypto::key_exchange(&cx.host.provider, wanted, cx.host.rng.as_mut()) {
                cx.host.report(sa, IkeEvent::InitRetry { group: wanted });
                init_again(cx, sa, |init| init.ke = ke);
                return Some(Then::Stay);
            }
        }
    }
    // Not acted on at once: a valid answer may still come; if none
    // does, the retransmissions run out (§2.21.1).
    cx.host.report(
        sa,
        IkeEvent::InitRefused {
            name: cx.host.conn_name(sa),
            unique_id: sa.uid,
            notify: n.ty,
        },
    );
    Some(Then::Stay)
}

/// Our IKE_SA_INIT again, changed by `change` (one retry more).
fn init_again(cx: &mut Cx<'_>, sa: &mut IkeSa, change: impl FnOnce(&mut IkeInit)) {
    if let Some(mut init) = sa.exch.take_task().and_then(take_as::<IkeInit>) {
        init.retries += 1;
        change(&mut init);
        send_init(cx, sa, init);
    }
}

/// A fresh IKE SA record.
pub(crate) fn new_sa(
    conn: ConnRef,
    uid: u32,
    (spi_i, spi_r): (u64, u64),
    initiator: bool,
    (local, remote): (SocketAddr, SocketAddr),
    now: Duration,
) -> IkeSa {
    IkeSa {
        conn,
        uid,
        spi_i,
        spi_r,
        initiator,
        original_initiator: initiator,
        redirected: Default::default(),
        state: IkeState::Connecting,
        keys: None,
        path: Path {
            local,
            remote,
            transport: crate::transport::Transport::Udp,
            stream_originator: false,
            nat_local: false,
            nat_remote: false,
        },
        times: Times {
            created: now,
            established: None,
            rekey_at: None,
            expire_at: None,
            last_heard: now,
            last_sent: now,
        },
        ids: Ids::default(),
        announced: Announced::default(),
        vips: Vips::default(),
        exch: Exchanges::new(0),
        queue: VecDeque::new(),
        children: Vec::new(),
        auth: Default::default(),
        reassembly: [None, None],
    }
}

pub(crate) fn init_header(spi_i: u64, spi_r: u64, initiator: bool, response: bool) -> Header {
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

/// Connection `conn` says IKEV2_FRAGMENTATION_SUPPORTED (RFC 7383
/// §2.3: not with `fragmentation = no`).
pub(crate) fn announces_fragmentation(conn: &Connection) -> bool {
    conn.fragmentation.announced()
}
/// SKEYSEED and the seven keys (§2.14); the SK crypto of each
/// direction as seen by us.
/// `nonces` are (Ni, Nr), `spis` (SPIi, SPIr).
pub(crate) fn derive(
    host: &Host,
    chosen: &IkeChosen,
    g_ir: &[u8],
    nonces: (&[u8], &[u8]),
    spis: (u64, u64),
    initiator: bool,
) -> Option<IkeKeyState> {
    let seed = crypto::skeyseed(&host.provider, chosen.suite.prf, nonces.0, nonces.1, g_ir).ok()?;
    keys_from_seed(host, chosen, &seed, nonces, spis, initiator)
}
/// The keys from a SKEYSEED (also after an IKE SA rekey, §2.18).
pub(crate) fn keys_from_seed(
    host: &Host,
    chosen: &IkeChosen,
    seed: &[u8],
    (ni, nr): (&[u8], &[u8]),
    (spi_i, spi_r): (u64, u64),
    initiator: bool,
) -> Option<IkeKeyState> {
    let k: IkeKeys =
        crypto::ike_keys(&host.provider, &chosen.suite, seed, ni, nr, spi_i, spi_r).ok()?;
    let s = &chosen.suite;
    let i2r = SkCrypto::new(&host.provider, s.encr, s.integ, &k.sk_ei, &k.sk_ai).ok()?;
    let r2i = SkCrypto::new(&host.provider, s.encr, s.integ, &k.sk_er, &k.sk_ar).ok()?;
    let (out, inn) = if initiator { (i2r, r2i) } else { (r2i, i2r) };
    Some(IkeKeyState {
        suite: chosen.suite,
        addke: chosen.addke.clone(),
        ppk: false,
        sk_d: Zeroizing::new(k.sk_d.to_vec()),
        sk_pi: Zeroizing::new(k.sk_pi.to_vec()),
        sk_pr: Zeroizing::new(k.sk_pr.to_vec()),
        out,
        inn,
    })
}
impl Exchange for IkeInit {
    fn kind(&self) -> Kind {
        Kind::IkeInit
    }

    /// Answered in the clear, before the SA has keys: [`crate::Ike::handle_on`]
    /// hands the answer to `init_response` before any decryption.
    fn process(self: Box<Self>, _: &mut Cx<'_>, _: &mut SaMut<'_>, _: Message) -> Then {
        Then::Stay
    }

    fn first_child(&self) -> Option<usize> {
        self.first_child
    }
}
