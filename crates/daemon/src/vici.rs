//! strongSwan's vici control protocol, served by flowsec (`--vici`), so
//! that `swanctl`, the vici libraries (Python `vici`, Go `govici`) and the
//! tools built on them drive flowsec as they drive charon. The socket and
//! its clients ([`server`], [`client`]), charon's message shapes
//! ([`messages`]), flowsec's own typed as a serde format ([`format`]) and
//! what clients loaded ([`store`]); the commands are
//! the control plane's (`crate::plane::vici`).

pub mod client;
pub mod format;
pub mod messages;
pub mod server;
pub mod store;

pub use server::{ClientId, Request, Server, Uri, DEFAULT_URI};
pub use store::{LoadError, Loaded};
