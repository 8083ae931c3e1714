//! Randomness for the sans-I/O core: nonces, SPIs, Diffie-Hellman private
//! values and IVs come from a [`Random`] the caller passes in, so two peers
//! in one test process can be run with fixed seeds and replayed exactly.
//!
//! The trait and its two implementations live in [`flowsec_crypto::random`]
//! (the key exchanges of [`flowsec_crypto::Provider`] draw their private
//! values from it); they are re-exported here under the names the IKE
//! core has always used.

pub use flowsec_crypto::random::{OsRandom, Random, SeededRandom};
