//! IKE_AUTH with EAP (RFC 7296 §2.16): the initiator leaves AUTH out of
//! its first IKE_AUTH request; the responder answers with its own
//! (certificate) AUTH and the first EAP request; EAP messages go back and
//! forth, one IKE_AUTH exchange each, until EAP-Success; then each side
//! sends an AUTH keyed with the MSK, and the responder's last answer
//! carries the first Child SA (and the virtual IP) the first request
//! asked for.
//!
//! ```text
//! Initiator                                Responder
//! HDR, SK {IDi, [CERTREQ,] [IDr,] SAi2, TSi, TSr, [CP]}  -->
//!                          <--  HDR, SK {IDr, [CERT,] AUTH, EAP}
//! HDR, SK {EAP}  -->
//!                          <--  HDR, SK {EAP (success)}
//! HDR, SK {AUTH}  -->
//!                          <--  HDR, SK {AUTH, [CP,] SAr2, TSi, TSr}
//! ```

use flowsec_wire::iana::ExchangeType;
use flowsec_wire::ike::{Auth, Id, Message, Payload};
use zeroize::Zeroizing;

use super::psk::{check_mic, mic};
use super::{Authenticator, Claim, Octets};
use crate::cert::Rejection;
use crate::config::Identity;
use crate::context::Cx;
use crate::eap::method::{Peer, PeerStep, Server, ServerStep};
use crate::error::NegotiationError;
use crate::event::IkeEvent;
use crate::exchange::auth::{Authenticated, AwaitingAuth, IkeAuth};
use crate::exchange::InitMessages;
use crate::host::Host;
use crate::sa::IkeSa;
use crate::table::{SaMut, Then};

/// The EAP method before its conversation ended: the initiator proves
/// itself in IKE_AUTH exchanges of their own (this module), never with a
/// first AUTH; and only an initiator authenticates itself with EAP.
pub(crate) struct Conversation;

impl Authenticator for Conversation {
    fn build(
        &self,
        _: &Cx<'_>,
        _: &Octets<'_>,
        _: Claim<'_>,
        _: bool,
    ) -> Result<(Vec<Payload>, Auth), NegotiationError> {
        Err(NegotiationError::EapFailed(
            "EAP authenticates the initiator only: set local.auth = pubkey or psk",
        ))
    }

    fn verify(
        &self,
        _: &mut Cx<'_>,
        _: &Octets<'_>,
        _: Claim<'_>,
        _: &Message,
        _: &Auth,
    ) -> Result<(), Option<Rejection>> {
        Err(None)
    }
}

/// The AUTHs that end an EAP conversation (§2.16): the PSK MAC with the
/// MSK in the shared key's place, both ways.
pub(crate) struct Msk<'a>(pub &'a [u8]);

impl Authenticator for Msk<'_> {
    fn build(
        &self,
        cx: &Cx<'_>,
        octets: &Octets<'_>,
        _: Claim<'_>,
        _: bool,
    ) -> Result<(Vec<Payload>, Auth), NegotiationError> {
        let data = octets
            .keyed(&cx.provider, self.0)
            .ok_or(NegotiationError::KeyDerivation)?;
        Ok((Vec::new(), mic(data)))
    }

    fn verify(
        &self,
        cx: &mut Cx<'_>,
        octets: &Octets<'_>,
        _: Claim<'_>,
        _: &Message,
        auth: &Auth,
    ) -> Result<(), Option<Rejection>> {
        check_mic(&octets.keyed(&cx.provider, self.0), auth)
    }
}

/// Responder: an EAP conversation in progress.
pub(crate) struct EapServerSide {
    server: Server,
    /// The first IKE_AUTH request: its Child SA and CFG_REQUEST are
    /// answered at the end.
    first: Message,
    /// IDi as the initiator sent it (its AUTH covers it).
    idi: Id,
    /// Who the peer is: its IKE identity until EAP says otherwise (with
    /// an EAP-Identity round, the EAP identity it proved a password for).
    peer: Identity,
    me: Identity,
    idr: Id,
    /// After EAP-Success.
    msk: Option<Zeroizing<Vec<u8>>>,
}

/// The user name of an identity, as EAP carries it: the name of an FQDN
/// or e-mail identity, else its text.
fn eap_name(id: &Identity) -> Vec<u8> {
    match id {
        Identity::Fqdn(n) | Identity::Email(n) => n.clone().into_bytes(),
        other => other.to_string().into_bytes(),
    }
}

/// The identity of an EAP user name (strongSwan parses it as any
/// identity); a name that is none becomes a KEY_ID of its octets.
fn eap_identity(user: &[u8]) -> Identity {
    std::str::from_utf8(user)
        .ok()
        .and_then(|s| Identity::parse(s).ok())
        .filter(|i| *i != Identity::Any)
        .unwrap_or_else(|| Identity::KeyId(user.to_vec()))
}

/// Initiator: our side of EAP.
pub(crate) struct EapPeerSide {
    peer_side: Peer,
    idi: Id,
    /// The responder, once its first AUTH verified, and its ID payload.
    responder: Option<(Identity, Id)>,
    msk: Option<Zeroizing<Vec<u8>>>,
}

fn eap_of(msg: &Message) -> Option<&Vec<u8>> {
    msg.payloads.iter().find_map(|p| match p {
        Payload::Eap(e) => Some(e),
        _ => None,
    })
}

fn auth_of(msg: &Message) -> Option<&Auth> {
    msg.payloads.iter().find_map(|p| match p {
        Payload::Auth(a) => Some(a),
        _ => None,
    })
}

fn random16(cx: &mut Cx<'_>) -> [u8; 16] {
    let mut b = [0u8; 16];
    b.copy_from_slice(&cx.host.random(16));
    b
}

/// Responder: the first IKE_AUTH request without AUTH, the peer to
/// be authenticated by EAP: our AUTH and the EAP-Identity request.
pub(crate) fn eap_server_start(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    mid: u32,
    msg: Message,
    init: InitMessages,
) -> Then {
    let conn = &sa.conn;
    let idi = msg.payloads.iter().find_map(|p| match p {
        Payload::IdI(i) => Some(i.clone()),
        _ => None,
    });
    let peer = idi.as_ref().and_then(Identity::from_wire);
    let (Some(idi), Some(peer)) = (idi, peer) else {
        cx.host.stats.malformed += 1;
        return refuse_eap(cx, sa, mid, None, None);
    };
    if conn
        .remote
        .id
        .as_ref()
        .is_some_and(|want| !want.matches(&peer))
    {
        return refuse_eap(cx, sa, mid, Some(peer), None);
    }
    let me = crate::auth::our_id(cx, sa);
    let answered = crate::exchange::auth::our_proof(cx, sa, &init, &msg, (&me, &peer));
    let Some((idr, mut payloads)) = answered else {
        return refuse_eap(cx, sa, mid, Some(peer), None);
    };
    // strongSwan's rule: without `eap_id` the EAP identity is the IKE
    // one (no EAP-Identity round, the MS-CHAPv2 name must be it);
    // with it (`%any` or a name) the peer is asked, and the identity
    // it proves a password for is who it is from then on.
    let known = match conn.remote.eap_id {
        None => Some(eap_name(&peer)),
        Some(_) => None,
    };
    let (id, challenge) = (cx.host.random(1)[0], random16(cx));
    let (server, request) = Server::start(&cx.host.provider, id, known, challenge);
    payloads.push(Payload::Eap(request));
    cx.respond(sa, ExchangeType::IKE_AUTH, mid, payloads);
    sa.exch.await_request(Box::new(AwaitingAuth {
        init,
        eap: Some(Box::new(EapServerSide {
            server,
            first: msg,
            idi,
            peer,
            me,
            idr,
            msk: None,
        })),
    }));
    Then::Stay
}

/// Responder: the next IKE_AUTH request of an EAP conversation.
pub(crate) fn eap_server_step(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    mid: u32,
    msg: Message,
    (init, mut st): (InitMessages, Box<EapServerSide>),
) -> Then {
    if let Some(msk) = st.msk.take() {
        return eap_server_finish(cx, sa, mid, msg, (init, st, msk));
    }
    let Some(eap) = eap_of(&msg) else {
        cx.host.stats.malformed += 1;
        return refuse_eap(cx, sa, mid, Some(st.peer), Some("no EAP payload".into()));
    };
    let challenge = random16(cx);
    let config = &cx.host.config;
    let password = |user: &[u8]| {
        let id = Identity::parse(&String::from_utf8_lossy(user)).ok()?;
        config.find_eap(&id).map(|p| Zeroizing::new(p.to_vec()))
    };
    match st.server.step(eap, challenge, &password) {
        ServerStep::Send(p) => {
            cx.respond(sa, ExchangeType::IKE_AUTH, mid, vec![Payload::Eap(p)]);
            sa.exch.await_request(Box::new(AwaitingAuth {
                init,
                eap: Some(st),
            }));
            Then::Stay
        }
        ServerStep::Success { packet, msk, user } => {
            if let Some(want) = &sa.conn.remote.eap_id {
                let who = eap_identity(&user);
                if !want.matches(&who) {
                    let why = format!("EAP identity '{who}' is not the eap_id {want}");
                    return refuse_eap(cx, sa, mid, Some(who), Some(why));
                }
                // The identity it proved is who it is.
                st.peer = who;
            }
            cx.host.report(
                sa,
                IkeEvent::EapSucceeded {
                    user: String::from_utf8_lossy(&user).into_owned(),
                },
            );
            cx.respond(sa, ExchangeType::IKE_AUTH, mid, vec![Payload::Eap(packet)]);
            st.msk = Some(msk);
            sa.exch.await_request(Box::new(AwaitingAuth {
                init,
                eap: Some(st),
            }));
            Then::Stay
        }
        ServerStep::Failure { packet, why } => {
            cx.host.report(
                sa,
                IkeEvent::AuthFailed {
                    from: sa.path.remote.ip(),
                    id: Some(st.peer.clone()),
                    why: Some(Rejection::Eap(why.into())),
                },
            );
            cx.respond(sa, ExchangeType::IKE_AUTH, mid, vec![Payload::Eap(packet)]);
            cx.host.stats.auth_failed += 1;
            Then::Destroy(Vec::new())
        }
    }
}

/// Responder: EAP succeeded; the initiator's AUTH keyed with the MSK,
/// then ours, the virtual IP and the Child SA of the first request.
fn eap_server_finish(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    mid: u32,
    msg: Message,
    (init, st, msk): (InitMessages, Box<EapServerSide>, Zeroizing<Vec<u8>>),
) -> Then {
    let theirs = Octets {
        sa,
        init: &init,
        ours: false,
        id: &st.idi,
    };
    let claim = Claim {
        me: &st.me,
        peer: &st.peer,
    };
    let ok = auth_of(&msg).is_some_and(|a| {
        let msk = Msk(&msk);
        msk.verify(cx, &theirs, claim, &msg, a).is_ok()
    });
    if !ok {
        return refuse_eap(
            cx,
            sa,
            mid,
            Some(st.peer),
            Some("AUTH with the MSK does not verify".into()),
        );
    }
    let EapServerSide {
        first,
        peer,
        me,
        idr,
        ..
    } = *st;
    let ours = Octets {
        sa,
        init: &init,
        ours: true,
        id: &idr,
    };
    let claim = Claim {
        me: &me,
        peer: &peer,
    };
    let Ok((_, auth)) = Msk(&msk).build(cx, &ours, claim, false) else {
        return refuse_eap(cx, sa, mid, Some(peer), None);
    };
    let answer = Authenticated {
        first: &first,
        init: &init,
        me,
        peer,
        payloads: vec![Payload::Auth(auth)],
    };
    crate::exchange::auth::answer_authenticated(cx, sa, mid, answer)
}

/// Responder: EAP failed or broke off: AUTHENTICATION_FAILED (with
/// EAP-Failure already sent where EAP went wrong), the SA gone.
fn refuse_eap(
    cx: &mut Cx<'_>,
    sa: &mut IkeSa,
    mid: u32,
    peer: Option<Identity>,
    why: Option<String>,
) -> Then {
    cx.host.report(
        sa,
        IkeEvent::AuthFailed {
            from: sa.path.remote.ip(),
            id: peer,
            why: why.map(Rejection::Eap),
        },
    );
    crate::exchange::auth::refuse_auth(cx, sa, mid)
}

/// Initiator: a response in an EAP conversation (RFC 7296 §2.16):
/// the responder's first AUTH, then EAP messages until EAP-Success,
/// then its AUTH keyed with the MSK and the Child SA.
pub(crate) fn eap_peer_response(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    task: IkeAuth,
    mut st: Box<EapPeerSide>,
    msg: Message,
) -> Then {
    let IkeAuth { init, child, .. } = task;
    if st.responder.is_none() {
        if let Err(e) = eap_responder_first_auth(cx, sa, &init, &msg, &mut st) {
            return give_up_eap(cx, sa, &child, e);
        }
    }
    if let Some(eap) = eap_of(&msg) {
        return match eap_peer_step(cx, sa, &init, &mut st, eap) {
            Ok(next) => {
                let task = Box::new(IkeAuth {
                    init,
                    child,
                    eap: Some(st),
                    ppk: None,
                });
                cx.request(sa, ExchangeType::IKE_AUTH, vec![next], task);
                Then::Stay
            }
            Err(e) => give_up_eap(cx, sa, &child, e),
        };
    }
    let Some(peer) = eap_responder_msk_auth(cx, sa, &init, &msg, &mut st) else {
        return give_up_eap(cx, sa, &child, NegotiationError::ResponderAuthBad);
    };
    crate::exchange::auth::finish_initiator(cx, sa, (init, child), peer, msg)
}

/// Initiator: the EAP conversation cannot go on: the first Child SA's
/// reservation released, the IKE SA failed with `e`.
fn give_up_eap(
    cx: &mut Cx<'_>,
    sa: &IkeSa,
    child: &Option<crate::exchange::child::ChildRequest>,
    e: NegotiationError,
) -> Then {
    if let Some(req) = child {
        req.reserved().release(cx.k);
    }
    cx.stats.auth_failed += 1;
    crate::host::fail(cx, sa, e)
}

/// Initiator: the first answer carries the responder's own AUTH (a
/// certificate, RFC 7296 §2.16): verify it and keep the responder's
/// identity and ID payload in `st`.
fn eap_responder_first_auth(
    cx: &mut Cx<'_>,
    sa: &IkeSa,
    init: &InitMessages,
    msg: &Message,
    st: &mut EapPeerSide,
) -> Result<(), NegotiationError> {
    let me = sa.ids.local.clone().unwrap_or(Identity::Any);
    match crate::exchange::auth::peer_authenticated(cx, sa, init, msg, &me) {
        Ok(peer) => {
            let idr = msg.payloads.iter().find_map(|p| match p {
                Payload::IdR(i) => Some(i.clone()),
                _ => None,
            });
            st.responder = idr.map(|i| (peer, i));
            Ok(())
        }
        Err(why) => {
            cx.host.report(
                sa,
                IkeEvent::AuthFailed {
                    from: sa.path.remote.ip(),
                    id: None,
                    why,
                },
            );
            Err(NegotiationError::ResponderAuthBad)
        }
    }
}

/// Initiator: one EAP message from the responder, stepped through our
/// EAP method: the payload of our next IKE_AUTH request — the EAP
/// response, or, after EAP-Success, our AUTH keyed with the MSK
/// (RFC 7296 §2.16), the MSK kept in `st`.
fn eap_peer_step(
    cx: &mut Cx<'_>,
    sa: &IkeSa,
    init: &InitMessages,
    st: &mut EapPeerSide,
    eap: &[u8],
) -> Result<Payload, NegotiationError> {
    let challenge = random16(cx);
    match st.peer_side.step(eap, challenge) {
        PeerStep::Send(r) => Ok(Payload::Eap(r)),
        PeerStep::Done(msk) => {
            let ours = Octets {
                sa,
                init,
                ours: true,
                id: &st.idi,
            };
            let me = sa.ids.local.clone().unwrap_or(Identity::Any);
            let claim = Claim {
                me: &me,
                peer: st.responder.as_ref().map_or(&Identity::Any, |(p, _)| p),
            };
            let built = Msk(&msk).build(cx, &ours, claim, false);
            let Ok((_, auth)) = built else {
                return Err(NegotiationError::KeyDerivation);
            };
            st.msk = Some(msk);
            Ok(Payload::Auth(auth))
        }
        PeerStep::Failed(why) => Err(NegotiationError::EapFailed(why)),
    }
}

/// Initiator: the last answer carries the responder's AUTH keyed with
/// the MSK (RFC 7296 §2.16): the responder's identity if it verifies,
/// `None` if it does not or EAP never finished.
fn eap_responder_msk_auth(
    cx: &mut Cx<'_>,
    sa: &IkeSa,
    init: &InitMessages,
    msg: &Message,
    st: &mut EapPeerSide,
) -> Option<Identity> {
    let (Some(msk), Some((peer, idr))) = (st.msk.take(), st.responder.take()) else {
        return None;
    };
    let theirs = Octets {
        sa,
        init,
        ours: false,
        id: &idr,
    };
    let me = sa.ids.local.clone().unwrap_or(Identity::Any);
    let claim = Claim {
        me: &me,
        peer: &peer,
    };
    let ok = auth_of(msg).is_some_and(|a| {
        let msk = Msk(&msk);
        msk.verify(cx, &theirs, claim, msg, a).is_ok()
    });
    ok.then_some(peer)
}

/// Initiator: the EAP side for our identity `me` (IDi `idi`): the
/// user name is `eap_id` (default our identity), its password an
/// `eap-…` secret.
pub(crate) fn eap_peer(
    host: &Host,
    sa: &IkeSa,
    me: &Identity,
    idi: Id,
) -> Option<Box<EapPeerSide>> {
    let local = &sa.conn.local;
    let user = local.eap_id.clone().unwrap_or_else(|| me.clone());
    let password = host.config.find_eap(&user)?;
    let name = eap_name(&user);
    Some(Box::new(EapPeerSide {
        peer_side: Peer::new(&host.provider, name, Zeroizing::new(password.to_vec())),
        idi,
        responder: None,
        msk: None,
    }))
}
