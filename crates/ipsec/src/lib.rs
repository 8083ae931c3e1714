//! Sans-I/O IPsec (RFC 4301): security associations, the SAD and SPD, the
//! anti-replay window, and ESP (RFC 4303), AH (RFC 4302) and IPComp
//! (RFC 3173) processing in place in caller-owned buffers.
//!
//! Nothing here opens a socket, starts a thread or reads a clock: time is an
//! argument (a [`core::time::Duration`] since an epoch the caller picks).
#![forbid(unsafe_code)]
#![cfg_attr(not(test), warn(missing_docs))]

pub mod replay;

pub use replay::{ReplayError, ReplayWindow};
