//! Sans-I/O IKEv2 (RFC 7296) for flowsec: the exchanges and their tasks
//! under one exchange manager per IKE SA, key derivation, and the
//! swanctl.conf-style configuration.
//!
//! ```text
//! config ── swanctl.conf parser, strongSwan proposal syntax, selection
//! crypto ── prf+, SKEYSEED, SK and SKF payloads, PSK AUTH over the Provider's PRFs and groups
//! engine ── Ike: all IKE SAs; datagrams + now in, datagrams + Kernel calls,
//!           IkeEvents (event.rs) out; the checks before any task, dispatch
//!   host     ── Host: what every exchange shares (config, crypto, output,
//!               reqids and policies); sending requests and answers
//!   table    ── the IKE SAs by our SPI: one borrowed in place (SaMut), the
//!               others beside it; what becomes of it when the borrow ends (Then)
//!   exchange ── the manager: message IDs, window, retransmission, response
//!               replay, collisions; it holds the tasks (task.rs)
//!   rules    ── which payloads each exchange carries, checked once
//!   the exchanges, a task type each:
//!     init · init_responder   IKE_SA_INIT (IkeInit)
//!     auth                    IKE_AUTH (IkeAuth, AwaitingAuth)
//!     child · child_responder CREATE_CHILD_SA for Child SAs (ChildCreate, ChildRekey)
//!     rekey                   CREATE_CHILD_SA for the IKE SA (IkeRekey)
//!     info                    INFORMATIONAL (Delete, Dpd)
//!   install  ── a Child SA's SAs and policies through the Kernel
//!   timers   ── retransmission, lifetimes, rekeys, DPD, the task queue
//!   nat      ── NAT detection and following a rebound peer (§2.23)
//!   admit    ── who may make a half-open IKE SA: COOKIE (§2.6), per-address
//!               and global limits on half-open SAs
//!   error    ── CommandError, ChildError, NegotiationError, InitResponseError
//!   fragmentation ── cutting a message into SKF fragments, putting them
//!               back together within bounds (RFC 7383)
//!   reload   ── a new configuration, connection by connection
//!   event_log ── each event with the IKE SA it happened in (`<name|id>`)
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
pub mod cert;
pub mod config;
mod context;
mod control;
pub mod crypto;
pub mod eap;
mod engine;
mod error;
mod event;
mod event_log;
pub mod exchange;
pub mod fragmentation;
mod host;
mod initiate;
mod install;
pub mod kernel;
mod nat;
mod policies;
mod poll;
pub mod pool;
mod proto;
pub mod random;
mod reauth;
mod reload;
mod rules;
pub mod sa;
mod settings;
mod stats;
mod streams;
mod table;
mod timers;
pub mod transport;
pub mod ts;
mod vip;

pub use control::{ChildSaInfo, IkeSaInfo};
pub use error::{ChildError, CommandError, Distrust, InitResponseError, NegotiationError};
pub use event::IkeEvent;
pub use event::Reloaded;
pub use event_log::{Logged, SaTag, Severity, Subsystem};
pub use exchange::init::{IKE_PORT, NAT_T_PORT};
pub use host::Ike;
pub use kernel::{Kernel, RecordingKernel, SaUsage};
pub use settings::Settings;
pub use stats::IkeStats;
pub use transport::Datagram;
pub use transport::Transport;
