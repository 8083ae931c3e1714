//! The tasks of an IKE SA: one type per exchange, each owning the state it
//! needs until its exchange is done (strongSwan's tasks, without their
//! vtables). The exchange manager ([`crate::exchange::Exchanges`]) holds
//! them: the active task, whose request is in flight and which waits for
//! its response, and the passive one, which waits for the peer's next
//! request.
//!
//! ```text
//!  initiator                                       responder
//!  IkeInit ──IKE_SA_INIT──► (stateless, or a half-open SA) ──► AwaitingAuth
//!  IkeAuth ──IKE_AUTH─────► AwaitingAuth checks AUTH, answers
//!  ChildCreate, ChildRekey ──CREATE_CHILD_SA──► (answered at once)
//!  IkeRekey ──CREATE_CHILD_SA (SA of IKE)──► (answered at once)
//!  Delete, Dpd ──INFORMATIONAL──► (answered at once)
//! ```
//! Handling the response consumes the task; it may start the next one
//! (IkeInit → IkeAuth, or IkeInit again with a COOKIE or another group).

pub(crate) mod auth;
pub(crate) mod child;
pub(crate) mod child_responder;
pub(crate) mod info;
pub(crate) mod init;
pub(crate) mod init_responder;
mod manager;
pub(crate) mod rekey;

pub use crate::settings::Retransmit;
pub(crate) use manager::{Collide, Exchanges, RequestVerdict, Wire};

use crate::exchange::auth::{AwaitingAuth, IkeAuth};
use crate::exchange::child::{ChildCreate, ChildRekey, ChildRequest};
use flowsec_wire::iana::{ExchangeType, NotifyType};
use flowsec_wire::ike::Message;

use crate::host::notify;
use crate::sa::IkeState;

use crate::context::Cx;
use crate::exchange::info::{Delete, Dpd};
use crate::exchange::init::IkeInit;
use crate::exchange::rekey::IkeRekey;
use crate::kernel::Kernel;
use crate::table::{SaMut, Then};

/// An exchange of ours in flight (strongSwan's task, initiator side): it
/// built and sent its request, it holds what it needs until the answer
/// comes, and it owns what the answer does. The engine only routes the
/// response here (it is verified, in order, and passed the payload
/// rules) and applies the [`Then`] it returns.
pub(crate) trait Exchange {
    /// The answer `msg` to our request arrived on `sa`.
    fn process(self, cx: &mut Cx<'_>, sa: &mut SaMut<'_>, msg: Message) -> Then;
}

/// The exchange manager of an IKE SA, with its tasks.
pub(crate) type Manager = Exchanges<Task, AwaitingAuth>;

/// What a request of ours in flight is for: the task that waits for its
/// response.
pub(crate) enum Task {
    /// IKE_SA_INIT (RFC 7296 §1.2).
    IkeInit(IkeInit),
    /// IKE_AUTH, with the first Child SA if any (§1.2).
    IkeAuth(IkeAuth),
    /// CREATE_CHILD_SA for a new Child SA (§1.3.1).
    ChildCreate(ChildCreate),
    /// CREATE_CHILD_SA rekeying a Child SA (§1.3.3).
    ChildRekey(ChildRekey),
    /// CREATE_CHILD_SA rekeying the IKE SA (§1.3.2).
    IkeRekey(IkeRekey),
    /// INFORMATIONAL with DELETE (§1.4.1).
    Delete(Delete),
    /// An empty INFORMATIONAL: dead-peer detection (§1.4).
    Dpd(Dpd),
}

/// A rekey of the peer that we answered while ours was in flight.
pub(crate) enum Collision {
    /// Of the Child SA with our inbound SPI `old`; the one it made has our
    /// inbound SPI `theirs` (§2.8.1).
    Child {
        /// The Child SA both rekeyed.
        old: u32,
        /// The Child SA the peer's rekey made.
        theirs: u32,
    },
    /// Of the IKE SA: the one it made has our SPI `theirs`; `min_nonce`
    /// is the lowest nonce of that exchange (§2.8.2).
    Ike {
        /// The IKE SA the peer's rekey made.
        theirs: u64,
        /// The lowest of its two nonces.
        min_nonce: Vec<u8>,
    },
}

impl Collide for Task {
    type Collision = Collision;

    fn collide(&mut self, c: Collision) -> bool {
        match (self, c) {
            (Task::ChildRekey(t), Collision::Child { old, theirs }) if t.old == old => {
                t.collision = Some(theirs);
                true
            }
            (Task::IkeRekey(t), Collision::Ike { theirs, min_nonce }) => {
                t.collision = Some((theirs, min_nonce));
                true
            }
            _ => false,
        }
    }
}

impl Task {
    /// The answer to its request: the task's own [`Exchange::process`].
    pub fn process(self, cx: &mut Cx<'_>, sa: &mut SaMut<'_>, msg: Message) -> Then {
        match self {
            // IKE_SA_INIT is answered in the clear, before any SA has keys
            // (init.rs handles it before decryption).
            Task::IkeInit(_) => Then::Stay,
            Task::IkeAuth(t) => t.process(cx, sa, msg),
            Task::ChildCreate(t) => t.process(cx, sa, msg),
            Task::ChildRekey(t) => t.process(cx, sa, msg),
            Task::IkeRekey(t) => t.process(cx, sa, msg),
            Task::Delete(t) => t.process(cx, sa, msg),
            Task::Dpd(t) => t.process(cx, sa, msg),
        }
    }

    /// The Child SA config the task is bringing up first, while the IKE
    /// SA is being made (IKE_AUTH carries it).
    pub fn first_child(&self) -> Option<usize> {
        match self {
            Task::IkeInit(t) => t.first_child,
            Task::IkeAuth(t) => t.child.as_ref().map(|c| c.cfg),
            _ => None,
        }
    }

    /// The Child SA config a CREATE_CHILD_SA of ours in flight is for.
    pub fn child_cfg(&self) -> Option<usize> {
        match self {
            Task::ChildCreate(t) => Some(t.req.cfg),
            Task::ChildRekey(t) => Some(t.req.cfg),
            _ => None,
        }
    }

    /// Its request for a Child SA, if it makes one.
    fn child_request(&self) -> Option<&ChildRequest> {
        match self {
            Task::IkeAuth(t) => t.child.as_ref(),
            Task::ChildCreate(t) => Some(&t.req),
            Task::ChildRekey(t) => Some(&t.req),
            _ => None,
        }
    }

    /// The task will not complete: give back what it reserved (the SPI
    /// and CPI of a Child SA).
    pub fn release(&self, k: &mut dyn Kernel) {
        if let Some(req) = self.child_request() {
            req.reserved().release(k);
        }
    }
}

/// A request of the peer, in order (the responder's side): routed to the
/// exchange that answers it.
pub(crate) fn answer(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    exchange: ExchangeType,
    mid: u32,
    msg: Message,
) -> Then {
    match exchange {
        ExchangeType::IKE_AUTH if sa.state == IkeState::HalfOpen => cx.auth_request(sa, mid, msg),
        ExchangeType::CREATE_CHILD_SA if sa.state == IkeState::Established => {
            cx.child_request(sa, mid, msg)
        }
        ExchangeType::CREATE_CHILD_SA => {
            // §2.25: rekeyed or being deleted: not now.
            cx.respond(
                sa,
                exchange,
                mid,
                vec![notify(NotifyType::TEMPORARY_FAILURE, vec![])],
            );
            Then::Stay
        }
        ExchangeType::INFORMATIONAL if sa.state != IkeState::HalfOpen => {
            cx.informational_request(sa, mid, msg)
        }
        _ => {
            cx.host.stats.malformed += 1;
            Then::Stay
        }
    }
}
