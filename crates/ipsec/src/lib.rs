//! Sans-I/O IPsec (RFC 4301): security associations, the SAD and SPD, the
//! anti-replay window, and ESP (RFC 4303), AH (RFC 4302) and IPComp
//! (RFC 3173) processing in place in caller-owned buffers.
//!
//! Nothing here opens a socket, starts a thread or reads a clock: time is an
//! argument (a [`core::time::Duration`] since an epoch the caller picks).
#![forbid(unsafe_code)]
#![cfg_attr(not(test), warn(missing_docs))]

mod ah;
pub mod assigned;
pub mod buf;
mod drop;
mod esp;
mod fxhash;
pub mod ipcomp;
mod layout;
pub mod lifetime;
pub mod process;
pub mod reassembly;
pub mod replay;
pub mod sa;
pub mod sad;
pub mod spd;
pub mod spd_cache;
mod tunnel;

pub use buf::PacketBuf;
pub use drop::{DropCounters, DropReason};
pub use lifetime::{Lifetime, Limits, SaState};
pub use process::{Bundle, Egress, Inbound, SealError, UdpEndpoints};
pub use replay::{ReplayError, ReplayWindow};
pub use sa::{
    EncapTransport, Endpoints, Mode, Protocol, SaConfig, SaError, SaId, SaStats,
    SecurityAssociation, UdpEncap,
};
pub use sad::{SaHandle, Sad, SadError, Sealer};
pub use spd::{Action, Direction, Flow, OpaqueLookup, Policy, Selector, Spd};
pub use spd_cache::SpdCache;
