//! The backends: [`AwsLc`] (aws-lc-rs, fastest where it has the algorithm)
//! and [`RustCrypto`] (pure Rust, every ESP/AH algorithm), and IKE's PRFs
//! and key exchange groups, [`IKE_PRFS`] and [`IKE_KEY_EXCHANGES`].

mod awslc;
mod rustcrypto;

pub use awslc::AwsLc;
pub use rustcrypto::RustCrypto;

use crate::traits::{KeyExchangeGroup, Prf};

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

/// Every IKE key exchange group flowsec implements (RFC 7296 §3.3.2
/// transform type 4): MODP 1, 2, 5, 14–18 (RFC 2409 §6, RFC 3526) on
/// RustCrypto's crypto-bigint, ECP 19–21 (RFC 5903) and Curve25519
/// (RFC 8031) on aws-lc (no RustCrypto elliptic-curve crate is in the
/// build). A [`Provider`] starts with all of them.
///
/// [`Provider`]: crate::Provider
pub static IKE_KEY_EXCHANGES: &[&dyn KeyExchangeGroup] = &[
    &rustcrypto::modp::MODP_768,
    &rustcrypto::modp::MODP_1024,
    &rustcrypto::modp::MODP_1536,
    &rustcrypto::modp::MODP_2048,
    &rustcrypto::modp::MODP_3072,
    &rustcrypto::modp::MODP_4096,
    &rustcrypto::modp::MODP_6144,
    &rustcrypto::modp::MODP_8192,
    &awslc::ecdh::ECP_256,
    &awslc::ecdh::ECP_384,
    &awslc::ecdh::ECP_521,
    &awslc::ecdh::CURVE25519,
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
