//! flowsec's Linux edge (DESIGN.md "Data path"): the TUN device, raw IPsec
//! sockets, routes, and the worker loop that runs the sans-I/O core on real
//! packets. The only crate with I/O, and (in `sys`) the only `unsafe`.
//!
//! ```text
//! outbound: TUN read → Flow → SPD(out) → resolve bundle → seal → raw send
//! inbound:  raw recv (ESP/AH) → SAD → open → SPD(fwd|in) check → TUN write
//! control:  socket → stage setkey input → changes → every worker's mailbox
//! ```
//!
//! Several workers (one TUN queue each), the kernel steering inbound
//! packets to the worker that owns their SA; a control plane that applies
//! setkey input to the running workers; batched sends and receives, TUN
//! offloads (TSO/GRO) and UDP GSO/GRO.
#![deny(unsafe_code)]

mod apply;
mod control;
mod error;
mod filter;
mod fragid;
mod ike;
mod offload;
mod plane;
mod reach;
mod recv;
mod routes;
mod send;
mod seqstate;
mod stats;
mod steer;
mod sys;
mod tool;
mod worker;

pub use apply::{stage, Capabilities, Databases, Model, Staged};
pub use control::DEFAULT_SOCKET;
pub use control::{group_id, wipe_json, ControlError, GroupError};
pub use error::{ConfigError, RunError, StatementError};
pub use ike::IkeSetupError;
pub use plane::{run, Options};
pub use seqstate::{EntryKind, SeqStateError, DEFAULT_STATE_DIR};
pub use tool::ToolError;
pub use worker::Stats;
