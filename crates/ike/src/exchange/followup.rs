//! IKE_FOLLOWUP_KE (RFC 9370 §2.2.4): the additional key exchanges of a
//! CREATE_CHILD_SA whose proposal chose ADDKE transforms — a Child SA,
//! new or rekeyed, or an IKE SA rekey — each in an exchange of its own,
//! in slot order, after the CREATE_CHILD_SA that carried the first key
//! exchange.
//!
//! ```text
//! Initiator                                  Responder
//! HDR(CREATE_CHILD_SA), SK {SA, Ni, KEi, [TSi, TSr]}  -->
//!        <--  HDR(CREATE_CHILD_SA), SK {SA, Nr, KEr, [TSi, TSr],
//!                                       N(ADDITIONAL_KEY_EXCHANGE)(link1)}
//! HDR(IKE_FOLLOWUP_KE), SK {N(ADDITIONAL_KEY_EXCHANGE)(link1), KEi(1)}  -->
//!        <--  HDR(IKE_FOLLOWUP_KE), SK {KEr(1), [N(ADDITIONAL_KEY_EXCHANGE)(link2)]}
//! ...
//! ```
//! The link is the responder's, opaque to the initiator, which echoes
//! the last one it received; a response carries one exactly when another
//! IKE_FOLLOWUP_KE follows. A request with no link, another one, or one
//! that came too late gets STATE_NOT_FOUND. The keys come once every
//! exchange is done, from SK(0) (the CREATE_CHILD_SA's) and SK(1)…SK(n):
//! KEYMAT = prf+(SK_d, SK(0) | Ni | Nr | SK(1) | … | SK(n)), and a new
//! IKE SA's SKEYSEED = prf(SK_d (old), SK(0) | Ni | Nr | SK(1) | … | SK(n)).
//!
//! The exchange that started it (child.rs, child_responder.rs, rekey.rs)
//! hands over how it ends: a [`Followed`] on the initiator's side, a
//! [`Completes`] on the responder's.

use core::time::Duration;
use std::collections::VecDeque;

use flowsec_wire::iana::{DhGroup, ExchangeType, NotifyType};
use flowsec_wire::ike::{Ke, Message, Payload};
use zeroize::Zeroizing;

use crate::context::Cx;
use crate::crypto::{self, KeyExchange};
use crate::error::ChildError;
use crate::exchange::{Awaiting, Collision, Exchange, Kind};
use crate::host::{error_notify, notifies, notify};
use crate::kernel::Kernel;
use crate::sa::Todo;
use crate::table::{SaMut, Then};

/// How long the responder waits for the next IKE_FOLLOWUP_KE (RFC 9370
/// §2.2.4 suggests 5 to 20 seconds; the longest, for a peer that
/// retransmits).
pub(crate) const FOLLOWUP_WAIT: Duration = Duration::from_secs(20);

/// Bytes of our links (opaque to the peer; strongSwan sends one byte,
/// libreswan random ones).
const LINK_LEN: usize = 8;

/// The longest link we echo (our bound: a link is the responder's
/// handle, and a few bytes make one).
const MAX_LINK: usize = 64;

/// The additional key exchanges of one CREATE_CHILD_SA: those still to
/// run, in slot order, and the secrets of those done.
pub(crate) struct Rounds {
    left: VecDeque<DhGroup>,
    /// SK(1) | … | SK(k).
    added: Zeroizing<Vec<u8>>,
}

impl Rounds {
    /// The rounds of `methods` (the chosen ADDKE transforms, in slot
    /// order, NONE left out).
    pub fn new(methods: Vec<DhGroup>) -> Self {
        Rounds {
            left: methods.into(),
            added: Zeroizing::new(Vec::new()),
        }
    }

    /// The method of the next exchange, if one is left.
    fn next(&self) -> Option<DhGroup> {
        self.left.front().copied()
    }

    /// The next exchange gave `secret`.
    fn done(&mut self, secret: &[u8]) {
        self.left.pop_front();
        self.added.extend_from_slice(secret);
    }
}

/// Why additional key exchanges of ours came to nothing.
pub(crate) enum Failure {
    /// The peer answered with this error notify (STATE_NOT_FOUND,
    /// INVALID_SYNTAX, NO_PROPOSAL_CHOSEN, TEMPORARY_FAILURE …).
    Refused(NotifyType),
    /// Its answer is of no use to us.
    Unusable(ChildError),
}

/// How a CREATE_CHILD_SA of ours ends once its additional key exchanges
/// are done (child.rs's Child SA, rekey.rs's IKE SA): what it held is
/// kept here across the IKE_FOLLOWUP_KE exchanges.
pub(crate) trait Followed {
    /// The exchange it is (CREATE_CHILD_SA's kind, for the few places that
    /// ask while it is in flight).
    fn kind(&self) -> Kind;

    /// All are done; `added` is SK(1) | … | SK(n).
    fn complete(self: Box<Self>, cx: &mut Cx<'_>, sa: &mut SaMut<'_>, added: &[u8]) -> Then;

    /// They failed.
    fn failed(self: Box<Self>, cx: &mut Cx<'_>, sa: &mut SaMut<'_>, why: Failure) -> Then;

    /// Give back what it reserved (a Child SA's SPI and CPI).
    fn release(&self, _: &mut dyn Kernel) {}

    /// The Child SA config it is for.
    fn child_cfg(&self) -> Option<usize> {
        None
    }

    /// A rekey of the peer's crossed it (see [`Exchange::collide`]).
    fn collide(&mut self, _: &Collision) -> bool {
        false
    }
}

/// IKE_FOLLOWUP_KE, initiator: our KE of the next method, waiting for
/// the peer's.
pub(crate) struct FollowupKe {
    ke: Box<dyn KeyExchange>,
    rounds: Rounds,
    then: Box<dyn Followed>,
}

/// Initiator: the CREATE_CHILD_SA answer chose the additional key
/// exchanges `additional`: the first IKE_FOLLOWUP_KE goes out, with the
/// link the answer carries ([`link_of`]).
pub(crate) fn follow(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    link: Option<Vec<u8>>,
    additional: Vec<DhGroup>,
    then: Box<dyn Followed>,
) -> Then {
    match link {
        Some(link) => send_next(cx, sa, Rounds::new(additional), link, then),
        None => then.failed(cx, sa, Failure::Unusable(ChildError::NoFollowupLink)),
    }
}

/// Initiator: IKE_FOLLOWUP_KE with our KE of the next method and the
/// link `link`.
fn send_next(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    rounds: Rounds,
    link: Vec<u8>,
    then: Box<dyn Followed>,
) -> Then {
    let Some(method) = rounds.next() else {
        return then.complete(cx, sa, &rounds.added);
    };
    let Ok(ke) = crypto::key_exchange(&cx.host.provider, method, cx.host.rng.as_mut()) else {
        return then.failed(cx, sa, Failure::Unusable(ChildError::KeyDerivation));
    };
    let payloads = vec![
        notify(NotifyType::ADDITIONAL_KEY_EXCHANGE, link),
        Payload::Ke(Ke {
            group: method,
            data: ke.public_value().to_vec(),
        }),
    ];
    let task = Box::new(FollowupKe { ke, rounds, then });
    cx.request(sa, ExchangeType::IKE_FOLLOWUP_KE, payloads, task);
    Then::Stay
}

impl Exchange for FollowupKe {
    fn kind(&self) -> Kind {
        self.then.kind()
    }

    /// The peer's KE of this round: its secret joins the others; then
    /// the next round, or the end.
    fn process(self: Box<Self>, cx: &mut Cx<'_>, sa: &mut SaMut<'_>, msg: Message) -> Then {
        let FollowupKe {
            ke,
            mut rounds,
            then,
        } = *self;
        if let Some(n) = error_notify(&msg) {
            let ty = n.ty;
            return then.failed(cx, sa, Failure::Refused(ty));
        }
        let secret = match crate::host::parts(&msg).ke {
            Some(ker) if ker.group == ke.group() => ke.shared_secret(&ker.data),
            _ => return then.failed(cx, sa, Failure::Unusable(ChildError::KeMismatch)),
        };
        let Ok(secret) = secret else {
            // The ML-KEM draft (§2.2): a ciphertext that fails its check
            // in IKE_FOLLOWUP_KE takes the IKE SA down.
            if is_kem(ke.group()) {
                sa.queue.push_front(Todo::DeleteIke);
            }
            return then.failed(cx, sa, Failure::Unusable(ChildError::BadKe));
        };
        rounds.done(&secret);
        cx.host.stats.followups += 1;
        if rounds.next().is_none() {
            return then.complete(cx, sa, &rounds.added);
        }
        match link_of(&msg) {
            Some(link) => send_next(cx, sa, rounds, link, then),
            None => then.failed(cx, sa, Failure::Unusable(ChildError::NoFollowupLink)),
        }
    }

    fn release(&self, k: &mut dyn Kernel) {
        self.then.release(k);
    }

    fn child_cfg(&self) -> Option<usize> {
        self.then.child_cfg()
    }

    fn collide(&mut self, c: &Collision) -> bool {
        self.then.collide(c)
    }
}

/// How the peer's CREATE_CHILD_SA ends once its additional key exchanges
/// are done (child_responder.rs's Child SA, rekey.rs's IKE SA).
pub(crate) trait Completes {
    /// All are done (`added` is SK(1) | … | SK(n)): make what the
    /// CREATE_CHILD_SA asked for and answer the last IKE_FOLLOWUP_KE,
    /// request `mid`, with `last` (our KE) or a refusal.
    fn complete(
        self: Box<Self>,
        cx: &mut Cx<'_>,
        sa: &mut SaMut<'_>,
        mid: u32,
        last: Payload,
        added: &[u8],
    ) -> Then;

    /// It will not be made: give back what it reserved.
    fn release(&self, _: &mut dyn Kernel) {}
}

/// IKE_FOLLOWUP_KE, responder: the wait for the peer's next request.
pub(crate) struct AwaitingFollowup {
    rounds: Rounds,
    /// Ours, which the request must carry.
    link: Vec<u8>,
    /// Past this, the request finds no state.
    until: Duration,
    then: Box<dyn Completes>,
}

/// Responder: our CREATE_CHILD_SA answer `answer` chose `additional`
/// key exchanges: it carries our link, and we wait for the first
/// IKE_FOLLOWUP_KE.
pub(crate) fn await_followups(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    answer: &mut Vec<Payload>,
    additional: Vec<DhGroup>,
    then: Box<dyn Completes>,
) {
    let link = cx.host.random(LINK_LEN);
    answer.push(notify(NotifyType::ADDITIONAL_KEY_EXCHANGE, link.clone()));
    sa.exch.await_request(Box::new(AwaitingFollowup {
        rounds: Rounds::new(additional),
        link,
        until: cx.now + FOLLOWUP_WAIT,
        then,
    }));
}

/// Responder: a wait for an IKE_FOLLOWUP_KE the peer gave up (it sent
/// another CREATE_CHILD_SA, RFC 9370 §2.2.4's window of one) goes, with
/// what it reserved.
pub(crate) fn drop_stale(cx: &mut Cx<'_>, sa: &mut SaMut<'_>) {
    let waits = sa
        .exch
        .passive()
        .is_some_and(|a| a.exchange() == ExchangeType::IKE_FOLLOWUP_KE);
    if waits {
        if let Some(a) = sa.exch.take_passive() {
            a.release(cx.k);
        }
    }
}

/// Responder: an IKE_FOLLOWUP_KE request no exchange waits for.
pub(crate) fn unexpected(cx: &mut Cx<'_>, sa: &mut SaMut<'_>, mid: u32) -> Then {
    cx.host.stats.followup_refused += 1;
    let n = notify(NotifyType::STATE_NOT_FOUND, vec![]);
    cx.respond(sa, ExchangeType::IKE_FOLLOWUP_KE, mid, vec![n]);
    Then::Stay
}

impl Awaiting for AwaitingFollowup {
    fn exchange(&self) -> ExchangeType {
        ExchangeType::IKE_FOLLOWUP_KE
    }

    /// The peer's KE of this round, under our link: answered with ours
    /// (and the next link), or, after the last, what the exchange made.
    fn answer(
        self: Box<Self>,
        cx: &mut Cx<'_>,
        sa: &mut SaMut<'_>,
        mid: u32,
        msg: Message,
    ) -> Then {
        let AwaitingFollowup {
            mut rounds,
            link,
            until,
            then,
        } = *self;
        let refuse = |cx: &mut Cx<'_>, sa: &mut SaMut<'_>, ty| {
            cx.host.stats.followup_refused += 1;
            then.release(cx.k);
            cx.respond(
                sa,
                ExchangeType::IKE_FOLLOWUP_KE,
                mid,
                vec![notify(ty, vec![])],
            );
            Then::Stay
        };
        let (Some(method), true) = (rounds.next(), cx.now <= until && linked(&msg, &link)) else {
            return refuse(cx, sa, NotifyType::STATE_NOT_FOUND);
        };
        // strongSwan's answers: no KE is a syntax error, another method
        // one we did not choose; a public value that fails its checks is
        // INVALID_SYNTAX (the ML-KEM draft, §2.2).
        let answered = match crate::host::parts(&msg).ke {
            None => Err(NotifyType::INVALID_SYNTAX),
            Some(kei) if kei.group != method => Err(NotifyType::NO_PROPOSAL_CHOSEN),
            Some(kei) => {
                crypto::respond(&cx.host.provider, method, cx.host.rng.as_mut(), &kei.data).map_err(
                    |e| match e {
                        flowsec_crypto::CryptoError::BadPublicValue => NotifyType::INVALID_SYNTAX,
                        _ => NotifyType::NO_PROPOSAL_CHOSEN,
                    },
                )
            }
        };
        let (ours, secret) = match answered {
            Ok(done) => done,
            Err(ty) => return refuse(cx, sa, ty),
        };
        rounds.done(&secret);
        cx.host.stats.followups += 1;
        let ker = Payload::Ke(Ke {
            group: method,
            data: ours.public_value().to_vec(),
        });
        if rounds.next().is_none() {
            return then.complete(cx, sa, mid, ker, &rounds.added);
        }
        let link = cx.host.random(LINK_LEN);
        let payloads = vec![
            ker,
            notify(NotifyType::ADDITIONAL_KEY_EXCHANGE, link.clone()),
        ];
        cx.respond(sa, ExchangeType::IKE_FOLLOWUP_KE, mid, payloads);
        sa.exch.await_request(Box::new(AwaitingFollowup {
            rounds,
            link,
            until: cx.now + FOLLOWUP_WAIT,
            then,
        }));
        Then::Stay
    }

    fn release(&self, k: &mut dyn Kernel) {
        self.then.release(k);
    }
}

/// The link a message carries (ADDITIONAL_KEY_EXCHANGE's data), if it
/// carries one of a sane size.
pub(crate) fn link_of(msg: &Message) -> Option<Vec<u8>> {
    notifies(msg)
        .find(|n| n.ty == NotifyType::ADDITIONAL_KEY_EXCHANGE)
        .filter(|n| !n.data.is_empty() && n.data.len() <= MAX_LINK)
        .map(|n| n.data.clone())
}

/// Whether a request carries our link `link`.
fn linked(msg: &Message, link: &[u8]) -> bool {
    link_of(msg).is_some_and(|l| l == link)
}

/// Whether `g` is an ML-KEM method (IANA 35 to 37).
fn is_kem(g: DhGroup) -> bool {
    matches!(
        g,
        DhGroup::ML_KEM_512 | DhGroup::ML_KEM_768 | DhGroup::ML_KEM_1024
    )
}
