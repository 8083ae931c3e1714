//! The backends: [`AwsLc`] (aws-lc-rs, fastest where it has the algorithm)
//! and [`RustCrypto`] (pure Rust, every ESP/AH algorithm), and IKE's PRFs,
//! [`IKE_PRFS`].

mod awslc;
mod rustcrypto;

pub use awslc::AwsLc;
pub use rustcrypto::RustCrypto;

use crate::traits::Prf;

/// Every IKE PRF flowsec implements (RFC 7296 §3.3.2 transform type 2),
/// all RustCrypto: HMAC-MD5, HMAC-SHA1 (RFC 2104), HMAC-SHA2-256/384/512
/// (RFC 4868), AES-XCBC-PRF-128 (RFC 4434, on the AES-XCBC that ESP/AH
/// integrity uses) and AES-CMAC-PRF-128 (RFC 4615). A [`Provider`]
/// starts with all of them.
///
/// [`Provider`]: crate::Provider
pub static IKE_PRFS: &[&dyn Prf] = &[
    &rustcrypto::prf::HMAC_MD5,
    &rustcrypto::prf::HMAC_SHA1,
    &rustcrypto::prf::AES128_XCBC,
    &rustcrypto::prf::HMAC_SHA2_256,
    &rustcrypto::prf::HMAC_SHA2_384,
    &rustcrypto::prf::HMAC_SHA2_512,
    &rustcrypto::prf::AES128_CMAC,
];

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
