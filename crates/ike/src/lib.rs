//! Sans-I/O IKEv2 (RFC 7296) for flowsec: the exchanges and their tasks
//! under one exchange manager per IKE SA, key derivation, and the
//! swanctl.conf-style configuration.
//!
//! ```text
//! config ── swanctl.conf parser, strongSwan proposal syntax, selection
//! crypto ── prf+, SKEYSEED, SK payload, PSK AUTH over the Provider's PRFs and groups
//! engine ── Ike: all IKE SAs; datagrams + now in, datagrams + Kernel calls out
//!   table    ── the IKE SAs by our SPI: one borrowed in place (SaMut), the
//!               others beside it; what becomes of it when the borrow ends (Then)
//!   exchange ── message IDs, window, retransmission, response replay
//!   rules    ── which payloads each exchange carries, checked once
//!   init · auth · child · rekey · info ── the exchanges, both roles
//!   admit    ── who may make a half-open IKE SA: COOKIE (§2.6), per-address
//!               and global limits on half-open SAs
//! kernel ── the interface to the IPsec data plane (add_sa, add_policy, …)
//! ```
//!
//! Nothing here reads a clock, opens a socket or starts a thread; time is
//! an argument and randomness comes from a [`random::Random`] passed in,
//! so two peers run in one test process, stepped message by message.
#![forbid(unsafe_code)]
#![cfg_attr(not(test), warn(missing_docs))]

mod admit;
mod auth;
mod child;
pub mod config;
mod control;
pub mod crypto;
mod engine;
mod error;
mod event;
pub mod exchange;
mod info;
mod init;
mod install;
pub mod kernel;
pub mod random;
mod rekey;
mod rules;
pub mod sa;
mod table;
mod task;
mod timers;
pub mod ts;

pub use control::{ChildSaInfo, IkeSaInfo};
pub use engine::{Datagram, Ike, IkeStats, Settings};
pub use error::{ChildError, CommandError, InitResponseError, NegotiationError};
pub use event::IkeEvent;
pub use init::{IKE_PORT, NAT_T_PORT};
pub use kernel::{Kernel, RecordingKernel, SaUsage};
