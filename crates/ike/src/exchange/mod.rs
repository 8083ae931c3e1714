//! The exchanges of an IKE SA, as strongSwan's tasks: each a type that
//! owns the state it needs until its exchange is done and what the answer
//! does ([`Exchange`]); the responder's wait for the peer's next request
//! is one too ([`Awaiting`]). The exchange manager ([`Exchanges`]) holds
//! them, boxed: this module names no exchange, so that one more (an
//! IKE_INTERMEDIATE, a MOBIKE update) is a file of its own.
//!
//! ```text
//!  initiator                                       responder
//!  IkeInit ──IKE_SA_INIT──► (stateless, or a half-open SA) ──► AwaitingAuth
//!  Intermediate ──IKE_INTERMEDIATE──► AwaitingIntermediate (each RFC 9370
//!                additional key exchange; then AwaitingAuth)
//!  IkeAuth ──IKE_AUTH─────► AwaitingAuth checks AUTH, answers
//!  ChildCreate, ChildRekey ──CREATE_CHILD_SA──► (answered at once)
//!  IkeRekey ──CREATE_CHILD_SA (SA of IKE)──► (answered at once)
//!  FollowupKe ──IKE_FOLLOWUP_KE──► AwaitingFollowup (RFC 9370 §2.2.4:
//!                the additional key exchanges of a CREATE_CHILD_SA)
//!  Delete, Dpd ──INFORMATIONAL──► (answered at once)
//! ```
//! Handling the response consumes the task; it may start the next one
//! (IkeInit → IkeAuth, or IkeInit again with a COOKIE or another group).

pub(crate) mod auth;
pub(crate) mod child;
pub(crate) mod child_answer;
pub(crate) mod child_responder;
mod contact;
pub(crate) mod followup;
pub(crate) mod info;
pub(crate) mod init;
pub(crate) mod init_responder;
pub(crate) mod intermediate;
mod manager;
pub(crate) mod mobike;
pub(crate) mod ppk;
pub mod redirect;
pub(crate) mod rekey;
pub(crate) mod selectors;

pub use crate::settings::Retransmit;
pub(crate) use manager::{Collide, Exchanges, RequestVerdict};

use core::any::Any;

use flowsec_wire::iana::ExchangeType;
use flowsec_wire::ike::Message;

use crate::context::Cx;
use crate::kernel::Kernel;
use crate::table::{SaMut, Then};

/// The exchange manager of an IKE SA, with its tasks.
pub(crate) type Manager = Exchanges<Task, Box<dyn Awaiting>>;

/// What a request of ours in flight is for: the task that waits for its
/// response.
pub(crate) type Task = Box<dyn Exchange>;

/// Which exchange a task is, for the few places that ask (a collision, a
/// DELETE under way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// IKE_SA_INIT (RFC 7296 §1.2).
    IkeInit,
    /// IKE_INTERMEDIATE with an additional key exchange (RFC 9242,
    /// RFC 9370 §2.2.2).
    Intermediate,
    /// IKE_AUTH, with the first Child SA if any (§1.2).
    IkeAuth,
    /// CREATE_CHILD_SA for a new Child SA (§1.3.1).
    ChildCreate,
    /// CREATE_CHILD_SA rekeying a Child SA (§1.3.3).
    ChildRekey,
    /// CREATE_CHILD_SA rekeying the IKE SA (§1.3.2).
    IkeRekey,
    /// INFORMATIONAL with DELETE of Child SAs (§1.4.1).
    DeleteChildren,
    /// INFORMATIONAL with DELETE of the IKE SA (§1.4.1).
    DeleteIke,
    /// An empty INFORMATIONAL: dead-peer detection (§1.4).
    Dpd,
    /// INFORMATIONAL with UPDATE_SA_ADDRESSES (RFC 4555 §3.5).
    UpdateAddresses,
    /// INFORMATIONAL with REDIRECT (RFC 5685).
    Redirect,
}

/// An exchange of ours in flight (strongSwan's task, initiator side): it
/// built and sent its request, it holds what it needs until the answer
/// comes, and it owns what the answer does. The engine only routes the
/// response here (it is verified, in order, and passed the payload
/// rules) and applies the [`Then`] it returns.
pub(crate) trait Exchange: AsAny {
    /// Which exchange it is.
    fn kind(&self) -> Kind;

    /// The answer `msg` to our request arrived on `sa`.
    fn process(self: Box<Self>, cx: &mut Cx<'_>, sa: &mut SaMut<'_>, msg: Message) -> Then;

    /// The task will not complete: give back what it reserved (the SPI
    /// and CPI of a Child SA).
    fn release(&self, _: &mut dyn Kernel) {}

    /// The Child SA config it brings up first, while the IKE SA is being
    /// made (IKE_AUTH carries it).
    fn first_child(&self) -> Option<usize> {
        None
    }

    /// The Child SA config a CREATE_CHILD_SA of ours is for.
    fn child_cfg(&self) -> Option<usize> {
        None
    }

    /// The peer rekeyed what this task rekeys, and we answered it (§2.8.1,
    /// §2.8.2): take note; whether it was about this task.
    fn collide(&mut self, _: &Collision) -> bool {
        false
    }
}

/// A task as its own type again (IKE_SA_INIT's, which its unencrypted
/// answer finds before any SA has keys).
pub(crate) trait AsAny: Any {
    /// Itself, to be looked at as its own type.
    fn as_any(&self) -> &dyn Any;
    /// Itself, to be taken back as its own type.
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

impl<T: Any> AsAny for T {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// The responder's side between two requests of the peer: what the next
/// one (IKE_AUTH after our IKE_SA_INIT answer, an EAP round) is checked
/// against, and what answers it.
pub(crate) trait Awaiting {
    /// The exchange it waits for (the engine hands it only a request of
    /// that type; anything else before it is refused).
    fn exchange(&self) -> ExchangeType;

    /// The IKE_SA_INIT messages and nonces AUTH covers (RFC 7296 §2.15),
    /// while the IKE SA is being made.
    fn init(&self) -> Option<&InitMessages> {
        None
    }

    /// The peer's request `msg` (message ID `mid`) arrived on `sa`.
    fn answer(self: Box<Self>, cx: &mut Cx<'_>, sa: &mut SaMut<'_>, mid: u32, msg: Message)
        -> Then;

    /// The wait is over without its request: give back what it reserved
    /// (the SPI of a Child SA waiting for IKE_FOLLOWUP_KE).
    fn release(&self, _: &mut dyn Kernel) {}
}

/// What AUTH signs and is checked against (RFC 7296 §2.15): both
/// IKE_SA_INIT messages as they went and their nonces, and what the
/// IKE_INTERMEDIATE exchanges between add (RFC 9242 §3.3.2). The nonces
/// also go into the KEYMAT of the Child SA that IKE_AUTH makes (§2.17).
pub(crate) struct InitMessages {
    /// RealMessage1: the IKE_SA_INIT request.
    pub request: Vec<u8>,
    /// RealMessage2: the IKE_SA_INIT response.
    pub response: Vec<u8>,
    /// Ni.
    pub ni: Vec<u8>,
    /// Nr.
    pub nr: Vec<u8>,
    /// After IKE_INTERMEDIATE exchanges: IntAuth.
    pub intermediate: Option<intermediate::IntAuth>,
}

impl InitMessages {
    /// What RFC 9242 §3.3.2 appends to both signed octets:
    /// `IntAuth_iN | IntAuth_rN | IKE_AUTH_MID`; nothing without
    /// IKE_INTERMEDIATE.
    pub fn int_auth(&self) -> Vec<u8> {
        self.intermediate
            .as_ref()
            .map(intermediate::IntAuth::tail)
            .unwrap_or_default()
    }
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
        (**self).collide(&c)
    }
}

/// The task in flight, if it is a `T`.
pub(crate) fn task_as<T: Exchange>(task: Option<&Task>) -> Option<&T> {
    // `(**t)`: the task itself, not its box (which is `Any` too).
    task.and_then(|t| (**t).as_any().downcast_ref::<T>())
}

/// A task taken out of the manager, if it is a `T`.
pub(crate) fn take_as<T: Exchange>(task: Task) -> Option<T> {
    AsAny::into_any(task).downcast::<T>().ok().map(|b| *b)
}

#[cfg(test)]
mod tests {
    use super::info::{Delete, Dpd};
    use super::*;

    /// The task inside the box, not the box (which is `Any` too).
    #[test]
    fn a_task_is_found_as_its_own_type() {
        let t: Task = Box::new(Dpd);
        assert!(task_as::<Dpd>(Some(&t)).is_some());
        assert!(task_as::<Delete>(Some(&t)).is_none());
        assert_eq!(t.kind(), Kind::Dpd);
        assert!(take_as::<Delete>(Box::new(Delete::Ike)).is_some());
        assert!(take_as::<Dpd>(t).is_some());
    }
}
