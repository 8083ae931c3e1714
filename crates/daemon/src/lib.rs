//! flowsec's Linux edge (DESIGN.md "Data path"): the TUN device, raw IPsec
//! sockets, routes, and the worker loop that runs the sans-I/O core on real
//! packets. The only crate with I/O, and (in `sys`) the only `unsafe`.
//!
//! ```text
//! outbound: TUN read → Flow → SPD(out) → resolve bundle → seal → raw send
//! inbound:  raw recv (ESP/AH) → SAD → open → SPD(fwd|in) check → TUN write
//! ```
//!
//! This first data plane runs one worker; tunnel and transport mode over
//! IPv4 or IPv6, ESP in UDP over IPv4, and a control socket. See README for
//! what is missing (several workers, batching, offloads).
#![deny(unsafe_code)]

mod apply;
mod control;
mod routes;
mod sys;
mod worker;

pub use apply::{load_setkey, ConfigError, Databases};
pub use control::DEFAULT_SOCKET;
pub use worker::{run, Options, RunError, Stats};
