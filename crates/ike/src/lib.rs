//! Sans-I/O IKEv2 (RFC 7296) for flowsec: exchanges and authenticators
//! that own their behaviour, key derivation, and the swanctl.conf-style
//! configuration. From the top (each layer uses only those below it; the
//! core is the one cycle):
//!
//! ```text
//! engine ── Ike's public API: datagrams + now in, datagrams + Kernel calls
//!           and IkeEvents out; the checks before any task, routing, the queue
//!   initiate · poll · reload · reauth · streams · control
//!           ── work over all IKE SAs: starting one, timers and limits,
//!              a new configuration, reauthentication, RFC 9329, ctl
//!   timers  ── one IKE SA's timers and its queue of tasks (kick)
//!   exchange/ ── one file per exchange, both roles (a task type each):
//!     init · init_responder   IKE_SA_INIT (IkeInit)
//!     intermediate            IKE_INTERMEDIATE with RFC 9370's additional
//!                             key exchanges (Intermediate, AwaitingIntermediate)
//!     auth                    IKE_AUTH (IkeAuth, AwaitingAuth)
//!     child · child_responder CREATE_CHILD_SA for Child SAs (ChildCreate, ChildRekey)
//!     rekey                   CREATE_CHILD_SA for the IKE SA (IkeRekey)
//!     info                    INFORMATIONAL (Delete, Dpd)
//!   auth/   ── the Authenticator of each method and what an AUTH covers
//!              (Octets): psk · pubkey · eap
//!   install · policies · vip · nat
//!           ── a Child SA's SAs, its policies, traps and holds through the
//!              Kernel; virtual IPs; NAT detection and a rebound peer (§2.23)
//!   core:   context (Cx: one call's now, kernel and Host) · host (Host, Ike)
//!           · table (IKE SAs by SPI, SaMut, Then) · sa (IkeSa, ChildSa in
//!           parts) · exchange (the Exchange and Awaiting traits, the
//!           manager: message IDs, window, retransmission, replay)
//!   leaves: settings · stats · counters · transport · event · event_log · error ·
//!           admit · rules · fragmentation · proto · ts · pool · kernel ·
//!           config/ · crypto/ · cert/ · eap/ · random
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
pub mod counters;
pub mod crypto;
pub mod eap;
mod engine;
mod error;
mod event;
mod event_log;
pub mod exchange;
pub mod fragmentation;
pub mod gateway;
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
mod redirect;
mod reload;
mod roam;
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

pub use control::{Algorithms, ChildSaInfo, IkeSaInfo};
pub use error::{ChildError, CommandError, Distrust, InitResponseError, NegotiationError};
pub use event::IkeEvent;
pub use event::Reloaded;
pub use event_log::{Logged, SaTag, Severity, Subsystem};
pub use exchange::init::{IKE_PORT, NAT_T_PORT};
pub use exchange::redirect::RedirectSelector;
pub use gateway::GatewayId;
pub use host::Ike;
pub use kernel::{Kernel, RecordingKernel, SaUsage};
pub use settings::Settings;
pub use stats::IkeStats;
pub use transport::Datagram;
pub use transport::Transport;
