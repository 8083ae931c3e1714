//! The backends: [`AwsLc`] (aws-lc-rs, fastest where it has the algorithm)
//! and [`RustCrypto`] (pure Rust, every algorithm).

mod awslc;
mod rustcrypto;

pub use awslc::AwsLc;
pub use rustcrypto::RustCrypto;

/// Unkeyed hashes, for `flowsec speed`'s raw rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashAlg {
    /// MD5
    Md5,
    /// SHA-1
    Sha1,
    /// SHA-256
    Sha256,
    /// SHA-384
    Sha384,
    /// SHA-512
    Sha512,
}
