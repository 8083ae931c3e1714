//! flowsec's Linux edge (ARCHITECTURE.md "Data path"): the TUN device, raw
//! IPsec sockets, routes, and the worker loop that runs the sans-I/O core
//! on real packets. The only crate with the data plane's I/O (perf's
//! traffic tests and the lab's namespaces are tools beside it).
//!
//! ```text
//! outbound: TUN read → Flow → SPD(out) → resolve bundle → seal → raw send
//! inbound:  raw recv (ESP/AH) → SAD → open → SPD(fwd|in) check → TUN write
//! control:  socket → stage setkey input → changes → every worker's mailbox
//!           reload (ctl, SIGHUP) → both files checked → setkey difference, Ike::reload
//! logs:     tracing, per subsystem (`log`), strongSwan's line shape
//! ```
//!
//! Several workers (one TUN queue each), the kernel steering inbound
//! packets to the worker that owns their SA; a control plane that applies
//! setkey input to the running workers; batched sends and receives, TUN
//! offloads (TSO/GRO) and UDP GSO/GRO.
//!
//! `unsafe` is denied here except in `sys`, the thin Linux system layer
//! (ioctls, socket options, batched sends and receives, BPF, capabilities),
//! where every `unsafe` block has a `// SAFETY:` line. It is the crate
//! with the most of it; `flowsec-perf` and `flowsec-lab` confine their few
//! libc calls to a `sys` module the same way, and every other crate
//! forbids `unsafe`.
#![deny(unsafe_code)]

pub mod answers;
mod apply;
mod channels;
mod control;
mod datapath;
mod fanout;
mod filter;
mod fragid;
mod gateway_load;
mod ike;
pub mod log;
mod metrics;
mod nexthop;
mod offload;
mod pcrypt;
mod plane;
mod reach;
mod recv;
mod routes;
mod send;
mod seqstate;
mod stats;
mod steer;
mod stream;
mod sys;
mod tool;
mod vici;
mod worker;

pub use apply::{stage, Capabilities, Model, Staged};
pub use apply::{ConfigError, StatementError};
pub use control::DEFAULT_SOCKET;
pub use control::{group_id, wipe_json, ControlError, GroupError};
pub use datapath::{Databases, Parallel};
pub use fanout::EspReceive;
pub use ike::IkeSetupError;
pub use nexthop::EspSend;
pub use plane::RunError;
pub use plane::{run, Options, ViciOption};
pub use seqstate::{EntryKind, SeqStateError, DEFAULT_STATE_DIR};
pub use stats::Stats;
pub use tool::ToolError;
pub use vici::client::wipe as wipe_vici;
pub use vici::format::{from_section as from_vici, to_section as to_vici, FormatError};
pub use vici::{Uri as ViciUri, DEFAULT_URI as DEFAULT_VICI_URI};
