//! IKE_AUTH (RFC 7296 §1.2, §2.15) with pre-shared keys or certificates
//! ([`crate::auth::pubkey`]), each side by its own `auth`, and the first Child
//! SA, both roles.
//!
//! ```text
//! Initiator                               Responder
//! HDR, SK {IDi, [CERT,] [CERTREQ,] [IDr,] AUTH, [N(INITIAL_CONTACT),]
//!          [N(USE_TRANSPORT_MODE),] SAi2, TSi, TSr}  -->
//!                               <--  HDR, SK {IDr, [CERT,] AUTH, [N(USE_TRANSPORT_MODE),]
//!                                             SAr2, TSi, TSr}
//!                               <--  HDR, SK {N(AUTHENTICATION_FAILED)}
//! ```
//! PSK: AUTH = prf(prf(Shared Secret, "Key Pad for IKEv2"), <real message
//! 1 or 2> | peer's nonce | prf(SK_p, IDx')), compared in constant time;
//! certificates: a signature over the same octets (RFC 7427).

use flowsec_wire::iana::{AuthMethod, ExchangeType, NotifyType};
use flowsec_wire::ike::{Auth, Id, Message, Payload};

use crate::auth::{our_id, Claim, Octets};
use crate::config::{AuthKind, ConnRef, Identity};
use crate::context::Cx;
use crate::error::NegotiationError;
use crate::event::IkeEvent;
use crate::exchange::child::{Answered, ChildRequest};
use crate::exchange::child_responder::ChildAsked;
use crate::exchange::ppk::{self, Unmixed};
use crate::exchange::{Awaiting, Exchange, InitMessages, Kind};
use crate::host::{error_notify, has_notify, notify, Host};
use crate::kernel::Kernel;
use crate::sa::{IkeSa, IkeState};
use crate::table::{SaMut, Then};

/// IKE_AUTH, initiator (§1.2): waits for the response.
pub(crate) struct IkeAuth {
    /// What both AUTH payloads sign.
    pub init: InitMessages,
    /// The first Child SA, if one was asked (SAi2, TSi, TSr).
    pub child: Option<ChildRequest>,
    /// We authenticate with EAP: the conversation so far.
    pub eap: Option<Box<crate::auth::eap::EapPeerSide>>,
    /// We used a post-quantum preshared key (RFC 8784): the keys it
    /// replaced, for a responder that did not.
    pub ppk: Option<Unmixed>,
}

/// IKE_AUTH, responder: our IKE_SA_INIT answer went; waits for the
/// initiator's IKE_AUTH request.
pub(crate) struct AwaitingAuth {
    /// What both AUTH payloads sign.
    pub init: InitMessages,
    /// The peer authenticates with EAP: the conversation so far.
    pub eap: Option<Box<crate::auth::eap::EapServerSide>>,
}

/// Responder: what the last IKE_AUTH answer is made of once the
/// initiator is authenticated.
pub(crate) struct Authenticated<'a> {
    /// The first IKE_AUTH request (its CFG_REQUEST and Child SA).
    pub first: &'a Message,
    /// What the AUTH payloads signed (its nonces key the Child SA).
    pub init: &'a InitMessages,
    /// Our identity.
    pub me: Identity,
    /// The peer's, as authenticated.
    pub peer: Identity,
    /// The answer's payloads so far.
    pub payloads: Vec<Payload>,
}

/// The sender's ID (IDi from the initiator, IDr from the responder) and
/// AUTH payloads of an IKE_AUTH message.
fn id_and_auth(msg: &Message, from_initiator: bool) -> (Option<&Id>, Option<&Auth>) {
    let (mut id, mut auth) = (None, None);
    for p in &msg.payloads {
        match p {
            Payload::IdI(i) if from_initiator => id = Some(i),
            Payload::IdR(i) if !from_initiator => id = Some(i),
            Payload::Auth(a) => auth = Some(a),
            _ => {}
        }
    }
    (id, auth)
}

/// Our AUTH on `sa` for ID payload `id`, with the CERT payloads to
/// send before it, as `local.auth` says (`peer_asked`: the peer sent
/// CERTREQ).
pub(crate) fn our_auth(
    cx: &Cx<'_>,
    sa: &IkeSa,
    init: &InitMessages,
    id: &Id,
    claim: Claim<'_>,
    peer_asked: bool,
) -> Result<(Vec<Payload>, Auth), NegotiationError> {
    let ours = Octets {
        sa,
        init,
        ours: true,
        id,
    };
    crate::auth::of(sa.conn.local.auth).build(cx, &ours, claim, peer_asked)
}

/// Responder: what our IKE_AUTH answer begins with — IDr, the CERTs
/// (when we sign; with `send_cert = ifasked` only if the request `msg`
/// carried CERTREQ) and our AUTH for `me` and `peer` — with IDr as sent;
/// `None` (reported) when we cannot authenticate ourselves.
pub(crate) fn our_proof(
    cx: &mut Cx<'_>,
    sa: &IkeSa,
    init: &InitMessages,
    msg: &Message,
    (me, peer): (&Identity, &Identity),
) -> Option<(Id, Vec<Payload>)> {
    let idr = me.to_wire();
    let asked = crate::auth::pubkey::has_certreq(msg);
    match our_auth(cx, sa, init, &idr, Claim { me, peer }, asked) {
        Ok((certs, auth)) => {
            let mut payloads = vec![Payload::IdR(idr.clone())];
            payloads.extend(certs);
            payloads.push(Payload::Auth(auth));
            Some((idr, payloads))
        }
        Err(e) => {
            crate::host::report_failed(cx, sa, e);
            None
        }
    }
}

/// The peer's identity, if the ID and AUTH payloads of `msg` prove
/// it: an identity the connection accepts, and, as `remote.auth`
/// says, a shared-key AUTH of the octets it signs (§2.15, compared in
/// constant time) or a signature with a certificate we trust
/// ([`crate::auth::pubkey`]). The error says why when a certificate or
/// signature was refused.
pub(crate) fn peer_authenticated(
    cx: &mut Cx<'_>,
    sa: &IkeSa,
    init: &InitMessages,
    msg: &Message,
    me: &Identity,
) -> Result<Identity, Option<crate::cert::Rejection>> {
    let (id, auth) = id_and_auth(msg, !sa.initiator);
    let (id, auth) = (id.ok_or(None)?, auth.ok_or(None)?);
    let peer = Identity::from_wire(id).ok_or(None)?;
    let conn = &sa.conn;
    if conn
        .remote
        .id
        .as_ref()
        .is_some_and(|want| !want.matches(&peer))
    {
        return Err(None);
    }
    let theirs = Octets {
        sa,
        init,
        ours: false,
        id,
    };
    let claim = Claim { me, peer: &peer };
    crate::auth::of(conn.remote.auth).verify(cx, &theirs, claim, msg, auth)?;
    Ok(peer)
}

/// Initiator: send IKE_AUTH, with the first Child SA if one was asked.
pub(crate) fn send_auth(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    mut init: InitMessages,
    first_child: Option<usize>,
) -> Then {
    // RFC 9242 §3.3.2: IntAuth ends with the first IKE_AUTH's message ID.
    if let Some(int_auth) = init.intermediate.as_mut() {
        int_auth.auth_mid.get_or_insert(sa.exch.peek_mid());
    }
    let conn = &sa.conn;
    let me = our_id(cx, sa);
    let peer = conn.remote.id.clone().unwrap_or(Identity::Any);
    let idi = me.to_wire();
    // EAP (§2.16): no AUTH in the first request; the conversation
    // follows the responder's answer.
    let eap = if conn.local.auth == AuthKind::Eap {
        match crate::auth::eap::eap_peer(cx, sa, &me, idi.clone()) {
            Some(e) => Some(e),
            None => {
                return crate::host::fail(
                    cx,
                    sa,
                    NegotiationError::EapFailed("no eap- secret for our EAP identity"),
                )
            }
        }
    } else {
        None
    };
    let claim = Claim {
        me: &me,
        peer: &peer,
    };
    let (certs, auth, with_auth, unmixed) = if eap.is_some() {
        if sa.conn.ppk_required {
            let why = NegotiationError::Ppk("not implemented with EAP");
            return crate::host::fail(cx, sa, why);
        }
        (Vec::new(), None, Vec::new(), None)
    } else {
        match our_first_auth(cx, sa, &init, &idi, claim) {
            Ok((c, a, n, u)) => (c, Some(a), n, u),
            Err(e) => return crate::host::fail(cx, sa, e),
        }
    };
    let mut payloads = vec![Payload::IdI(idi)];
    payloads.extend(certs);
    payloads.extend(crate::auth::pubkey::certreq(cx, &sa.conn));
    if peer != Identity::Any {
        payloads.push(Payload::IdR(peer.to_wire()));
    }
    payloads.extend(auth.map(Payload::Auth));
    payloads.extend(with_auth);
    // §3.15: a road warrior asks for its virtual IPs.
    payloads.extend(crate::vip::request(sa));
    payloads.extend(crate::exchange::mobike::offer(cx.host, sa));
    // §2.4: only when we hold no other IKE SA with the peer (the peer
    // deletes those it has with us on seeing it).
    if crate::exchange::contact::send_initial_contact(cx, sa, &me, &peer) {
        payloads.push(notify(NotifyType::INITIAL_CONTACT, vec![]));
    }
    let child = first_child.map(|cfg| {
        let resource = crate::exchange::child::first_resource(sa, cfg, None);
        let req =
            crate::exchange::child::child_request_for(cx, sa, cfg, None, false, None, resource);
        payloads.extend(crate::exchange::child::child_payloads(&req, None, false));
        req
    });
    sa.ids.local = Some(me);
    sa.state = IkeState::Authenticating;
    let task = Box::new(IkeAuth {
        init,
        child,
        eap,
        ppk: unmixed,
    });
    cx.request(sa, ExchangeType::IKE_AUTH, payloads, task);
    Then::Stay
}

/// Initiator: our first AUTH (with the CERTs before it), and with a
/// post-quantum preshared key (RFC 8784 §3) the notifies after it —
/// PPK_IDENTITY, and NO_PPK_AUTH, our AUTH data without the PPK, unless
/// `ppk_required` — and the keys it replaced.
#[allow(clippy::type_complexity)]
fn our_first_auth(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    init: &InitMessages,
    idi: &Id,
    claim: Claim<'_>,
) -> Result<(Vec<Payload>, Auth, Vec<Payload>, Option<Unmixed>), NegotiationError> {
    let asked = sa.announced.certreq;
    let mut notifies = Vec::new();
    let mut unmixed = None;
    if let Some(found) = ppk::initiator(cx, sa)? {
        notifies.push(ppk::identity(&found.id));
        if !sa.conn.ppk_required {
            let (_, without) = our_auth(cx, sa, init, idi, claim, asked)?;
            notifies.push(ppk::no_ppk_auth(without.data));
        }
        let mixed = ppk::mix(cx, sa, &found.key).ok_or(NegotiationError::KeyDerivation)?;
        unmixed = Some(mixed);
    }
    let (certs, auth) = our_auth(cx, sa, init, idi, claim, asked)?;
    Ok((certs, auth, notifies, unmixed))
}

/// Responder: the initiator is authenticated (with AUTH, or at the end
/// of EAP): the last IKE_AUTH answer — what `answer.payloads` hold
/// already (our ID, CERT, AUTH), then the CFG_REPLY and the Child SA
/// the first request asked for — and the IKE SA established.
pub(crate) fn answer_authenticated(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    mid: u32,
    answer: Authenticated<'_>,
) -> Then {
    let Authenticated {
        first,
        init,
        me,
        peer,
        mut payloads,
    } = answer;
    sa.ids.peer = Some(peer.clone());
    sa.ids.local = Some(me.clone());
    crate::auth::peer_authenticated_at(cx, sa, first);
    established(cx, sa);
    payloads.extend(crate::exchange::mobike::responder_agrees(
        cx.host, sa, first,
    ));
    // RFC 5685 §6: sent on; no virtual IP, no Child SA here.
    if let Some(redirect) = crate::exchange::redirect::at_auth(cx, sa) {
        payloads.push(redirect);
        cx.respond(sa, ExchangeType::IKE_AUTH, mid, payloads);
        cx.host.report_established(sa, me, peer);
        return Then::Stay;
    }
    // §3.15: a virtual IP from our pools for a road warrior that asks.
    let addressed = crate::vip::answer_cp(cx, sa, first, &peer, &mut payloads);
    if has_notify(first, NotifyType::INITIAL_CONTACT) {
        cx.host.stats.initial_contacts += 1;
        crate::exchange::contact::initial_contact(cx, sa);
    }
    if addressed && first.payloads.iter().any(|p| matches!(p, Payload::Sa(_))) {
        let asked = ChildAsked {
            msg: first,
            rekey: None,
            ni: &init.ni,
            nr: &init.nr,
            create: false,
        };
        match crate::exchange::child_responder::answer_child(cx, sa, asked) {
            Ok(child) => payloads.extend(child),
            Err(n) => payloads.push(n),
        }
    }
    cx.respond(sa, ExchangeType::IKE_AUTH, mid, payloads);
    cx.host.report_established(sa, me, peer);
    Then::Stay
}

/// Responder: AUTHENTICATION_FAILED. §2.21.2: the IKE SA is not
/// created; the answer goes, and the half-open SA with it at once (as
/// strongSwan): kept, it would let one address open SA after SA with
/// garbage IKE_AUTHs. A retransmitted IKE_AUTH then meets no SA
/// (unknown_spi); the initiator gives up after its retransmissions.
/// Only a message that passed the SK integrity check comes here: a
/// forged or undecryptable one was dropped before (§2.21.2 too).
pub(crate) fn refuse_auth(cx: &mut Cx<'_>, sa: &mut IkeSa, mid: u32) -> Then {
    let n = notify(NotifyType::AUTHENTICATION_FAILED, vec![]);
    cx.respond(sa, ExchangeType::IKE_AUTH, mid, vec![n]);
    cx.host.stats.auth_failed += 1;
    Then::Destroy(Vec::new())
}

/// Initiator: the responder is authenticated; its last IKE_AUTH
/// answer `msg` gives the virtual IPs and the first Child SA.
pub(crate) fn finish_initiator(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    (init, child): (InitMessages, Option<ChildRequest>),
    peer: Identity,
    msg: Message,
) -> Then {
    let me = sa.ids.local.clone().unwrap_or(Identity::Any);
    sa.ids.peer = Some(peer.clone());
    // RFC 5685 §6: the gateway (authenticated) sends us on.
    let first = child.as_ref().map(|req| req.cfg);
    if crate::exchange::redirect::redirects(&msg) {
        if let Some(req) = &child {
            req.reserved().release(cx.k);
        }
        crate::auth::peer_authenticated_at(cx, sa, &msg);
        established(cx, sa);
        crate::exchange::redirect::in_auth_answer(cx, sa, &msg, first);
        cx.host.report_established(sa, me, peer);
        return Then::Stay;
    }
    if !crate::vip::take_vips(cx, sa, &msg) {
        if let Some(req) = &child {
            req.reserved().release(cx.k);
        }
        // The responder holds an established IKE SA: tell it to go
        // (once, not waited for), as strongSwan deletes it.
        let delete = Payload::Delete(flowsec_wire::ike::Delete {
            protocol: flowsec_wire::iana::ProtocolId::IKE,
            spis: vec![],
        });
        let mid = sa.exch.peek_mid();
        let data = cx
            .host
            .protect(sa, ExchangeType::INFORMATIONAL, false, mid, &[delete]);
        cx.host
            .push_all(sa.path.transport, sa.path.local, sa.path.remote, data);
        return crate::host::fail(cx, sa, NegotiationError::NoVirtualIp);
    }
    crate::auth::peer_authenticated_at(cx, sa, &msg);
    crate::exchange::mobike::initiator_agreed(sa, &msg);
    established(cx, sa);
    cx.host.report_established(sa, me, peer);
    if let Some(req) = child {
        // KEYMAT from the nonces of IKE_SA_INIT (§2.17).
        let answer = Answered {
            msg: &msg,
            ni: &init.ni,
            nr: &init.nr,
            g_ir: None,
            added: &[],
        };
        first_child(cx, sa, req, answer);
    }
    Then::Stay
}

/// Initiator: the Child SA IKE_AUTH asked for, as answered: installed,
/// or refused (an error notify; the IKE SA stays, §1.2), or unusable.
fn first_child(cx: &mut Cx<'_>, sa: &mut SaMut<'_>, req: ChildRequest, answer: Answered<'_>) {
    let (cfg, reserved) = (req.cfg, req.reserved());
    if let Some(n) = error_notify(answer.msg) {
        cx.host.report(
            sa,
            IkeEvent::ChildNotEstablished {
                child: sa.child_name(cfg),
                notify: n.ty,
            },
        );
        reserved.release(cx.k);
    } else if let Err(why) = crate::exchange::child::complete_child(cx, sa, req, None, answer) {
        cx.host.report(
            sa,
            IkeEvent::ChildFailed {
                child: sa.child_name(cfg),
                reason: why,
            },
        );
        reserved.release(cx.k);
    }
}

/// The IKE SA is authenticated: its timers start.
pub(crate) fn established(cx: &mut Cx<'_>, sa: &mut IkeSa) {
    let conn = &sa.conn;
    let (rekey, rand, over, reauth) = (
        conn.rekey_time,
        conn.rand_time,
        conn.over_time,
        conn.reauth_time,
    );
    sa.state = IkeState::Established;
    sa.times.established = Some(cx.now);
    if !rekey.is_zero() {
        sa.times.rekey_at = Some(cx.now + cx.host.jittered(rekey, rand));
    }
    // The hard limit (`over_time` past a rekey or a reauthentication
    // that did not happen): a rekey's from now, the reauthentication's
    // from when the peer authenticated, which IKE rekeys carry over
    // (RFC 7296 §2.8.3; crate::reauth).
    let by_rekey = (!rekey.is_zero()).then(|| cx.now + rekey + over);
    let by_auth = (!reauth.is_zero()).then(|| sa.auth.at + reauth + over);
    sa.times.expire_at = [by_rekey, by_auth].into_iter().flatten().min();
}

trait IdentityOption {
    fn is_none_or_matches(&self, peer: &Identity) -> bool;
}

impl IdentityOption for Option<&Identity> {
    /// No identity configured (`%any`), or one that accepts `peer`.
    fn is_none_or_matches(&self, peer: &Identity) -> bool {
        match self {
            None => true,
            Some(want) => want.matches(peer),
        }
    }
}

/// Responder: the connection for the initiator's first IKE_AUTH
/// request, chosen again now that its identity and its way of
/// authenticating are known (strongSwan switches peer config the same
/// way): of the live connections with the same addresses and IKE
/// proposals as the one IKE_SA_INIT chose, those (that one first) whose
/// `remote.id` accepts IDi, whose `remote.auth` is the method used
/// (AUTH's method, or EAP without AUTH) and whose identity is the IDr
/// asked for, if any. Of those, the first whose children take the
/// selectors of the Child SA asked for (strongSwan's peer config
/// selection weighs the TS too): connections to one peer that differ
/// only in their children are told apart by them. No such one: the
/// first that fits; none fits: the one chosen stays (and refuses).
fn reselect(host: &Host, sa: &IkeSa, msg: &Message) -> ConnRef {
    let (idi, auth) = id_and_auth(msg, true);
    let Some(peer) = idi.and_then(Identity::from_wire) else {
        return sa.conn.clone();
    };
    let idr = msg.payloads.iter().find_map(|p| match p {
        Payload::IdR(i) => Identity::from_wire(i),
        _ => None,
    });
    let method = auth.map(|a| a.method);
    let fitting: Vec<&ConnRef> = std::iter::once(&sa.conn)
        .chain(&host.conns)
        .filter(|c| fits(c, &sa.conn, &peer, idr.as_ref(), method))
        .collect();
    let takes_ts = |c: &&&ConnRef| crate::exchange::selectors::takes_selectors(sa, c, msg);
    fitting
        .iter()
        .find(takes_ts)
        .or(fitting.first())
        .map_or(&sa.conn, |c| *c)
        .clone()
}

/// Whether connection `c` can take the place of `chosen` (reselect) for
/// a peer with identity `peer` authenticating by `method` (`None`: EAP)
/// and asking for our identity `idr`.
fn fits(
    c: &ConnRef,
    chosen: &ConnRef,
    peer: &Identity,
    idr: Option<&Identity>,
    method: Option<AuthMethod>,
) -> bool {
    let same_ike = c.proposals == chosen.proposals
        && c.local_addrs == chosen.local_addrs
        && c.remote_addrs == chosen.remote_addrs;
    let method = match (c.remote.auth, method) {
        (AuthKind::Psk, Some(m)) => m == AuthMethod::SHARED_KEY_MIC,
        (AuthKind::Pubkey(_), Some(m)) => m == AuthMethod::DIGITAL_SIGNATURE,
        (AuthKind::Eap, None) => true,
        _ => false,
    };
    let who = c.remote.id.as_ref().is_none_or_matches(peer);
    let me = match (idr, &c.local.id) {
        (Some(want), Some(ours)) => ours.matches(want) || want.matches(ours),
        _ => true,
    };
    same_ike && method && who && me
}

impl Exchange for IkeAuth {
    fn kind(&self) -> Kind {
        Kind::IkeAuth
    }

    fn release(&self, k: &mut dyn Kernel) {
        if let Some(req) = &self.child {
            req.reserved().release(k);
        }
    }

    fn first_child(&self) -> Option<usize> {
        self.child.as_ref().map(|c| c.cfg)
    }

    /// Initiator: the answer to IKE_AUTH.
    fn process(self: Box<Self>, cx: &mut Cx<'_>, sa: &mut SaMut<'_>, msg: Message) -> Then {
        let mut task = *self;
        let refused = has_notify(&msg, NotifyType::AUTHENTICATION_FAILED);
        // RFC 8784 §3: a responder that did not use our PPK (no
        // PPK_IDENTITY) signed without it; unless we require it.
        let unused = task.ppk.take().filter(|_| !ppk::peer_used(&msg));
        let required = unused.is_some() && sa.conn.ppk_required;
        if refused || required {
            if let Some(req) = &task.child {
                req.reserved().release(cx.k);
            }
            cx.host.stats.auth_failed += 1;
            let why = match refused {
                true => NegotiationError::PeerAuthFailed,
                false => NegotiationError::Ppk("the responder did not use it"),
            };
            return crate::host::fail(cx, sa, why);
        }
        if let Some(old) = unused {
            ppk::unmix(sa, old);
        }
        if let Some(st) = task.eap {
            let task = IkeAuth { eap: None, ..task };
            return crate::auth::eap::eap_peer_response(cx, sa, task, st, msg);
        }
        let IkeAuth { init, child, .. } = task;
        let me = sa.ids.local.clone().unwrap_or(Identity::Any);
        let checked = peer_authenticated(cx, sa, &init, &msg, &me);
        let Ok(peer) = checked else {
            if let Some(req) = &child {
                req.reserved().release(cx.k);
            }
            let (idr, _) = id_and_auth(&msg, false);
            cx.host.report(
                sa,
                IkeEvent::AuthFailed {
                    from: sa.path.remote.ip(),
                    id: idr.and_then(Identity::from_wire),
                    why: checked.err().flatten(),
                },
            );
            // §2.21.2: tell the responder in an INFORMATIONAL of its own
            // (the exception to not answering a response), sent once and
            // not waited for, and forget the SA at once (as strongSwan).
            let n = notify(NotifyType::AUTHENTICATION_FAILED, vec![]);
            let mid = sa.exch.peek_mid();
            let data = cx
                .host
                .protect(sa, ExchangeType::INFORMATIONAL, false, mid, &[n]);
            cx.host
                .push_all(sa.path.transport, sa.path.local, sa.path.remote, data);
            cx.host.stats.auth_failed += 1;
            return crate::host::fail(cx, sa, NegotiationError::ResponderAuthBad);
        };
        finish_initiator(cx, sa, (init, child), peer, msg)
    }
}

impl Awaiting for AwaitingAuth {
    fn exchange(&self) -> ExchangeType {
        ExchangeType::IKE_AUTH
    }

    fn init(&self) -> Option<&InitMessages> {
        Some(&self.init)
    }

    /// Responder: check the initiator's AUTH and answer.
    fn answer(
        self: Box<Self>,
        cx: &mut Cx<'_>,
        sa: &mut SaMut<'_>,
        mid: u32,
        msg: Message,
    ) -> Then {
        let AwaitingAuth { mut init, eap } = *self;
        // RFC 9242 §3.3.2: the first IKE_AUTH's message ID (EAP rounds
        // keep it).
        if let Some(int_auth) = init.intermediate.as_mut() {
            int_auth.auth_mid.get_or_insert(mid);
        }
        if let Some(st) = eap {
            return crate::auth::eap::eap_server_step(cx, sa, mid, msg, (init, st));
        }
        sa.conn = reselect(cx, sa, &msg);
        let no_auth = !msg.payloads.iter().any(|p| matches!(p, Payload::Auth(_)));
        // RFC 8784 with EAP is not implemented: `ppk_required` refuses.
        let eap = no_auth && sa.conn.remote.auth == AuthKind::Eap;
        if eap && !sa.conn.ppk_required {
            return crate::auth::eap::eap_server_start(cx, sa, mid, msg, init);
        }
        let me = our_id(cx, sa);
        let keyed = match eap {
            true => Err(ppk::Refusal::Required),
            false => ppk::responder_keys(cx, sa, &msg),
        };
        let checked = keyed.map_err(|_| None).and_then(|(used, instead)| {
            let request = instead.as_ref().unwrap_or(&msg);
            peer_authenticated(cx, sa, &init, request, &me).map(|peer| (peer, used))
        });
        let (peer, used) = match checked {
            Ok(done) => done,
            Err(why) => {
                let (idi, _) = id_and_auth(&msg, true);
                cx.host.report(
                    sa,
                    IkeEvent::AuthFailed {
                        from: sa.path.remote.ip(),
                        id: idi.and_then(Identity::from_wire),
                        why,
                    },
                );
                return refuse_auth(cx, sa, mid);
            }
        };
        let Some((_, mut payloads)) = our_proof(cx, sa, &init, &msg, (&me, &peer)) else {
            return refuse_auth(cx, sa, mid);
        };
        if used {
            payloads.push(ppk::used());
        }
        let answer = Authenticated {
            first: &msg,
            init: &init,
            me,
            peer,
            payloads,
        };
        answer_authenticated(cx, sa, mid, answer)
    }
}
