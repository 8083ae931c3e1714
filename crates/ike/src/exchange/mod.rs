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

pub use manager::Retransmit;
pub(crate) use manager::{Collide, Exchanges, RequestVerdict, Wire};

use crate::exchange::auth::{AwaitingAuth, IkeAuth};
use crate::exchange::child::{ChildCreate, ChildRekey, ChildRequest};
use crate::exchange::info::Delete;
use crate::exchange::init::IkeInit;
use crate::exchange::rekey::IkeRekey;
use crate::kernel::Kernel;

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
    Dpd,
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
