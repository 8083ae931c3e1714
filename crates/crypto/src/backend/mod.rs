//! The backends: [`AwsLc`] (aws-lc-rs, fastest where it has the algorithm)
//! and [`RustCrypto`] (pure Rust, every ESP/AH algorithm), and IKE's PRFs
//! and key exchange groups, [`IKE_PRFS`] and [`IKE_KEY_EXCHANGES`], its
//! signatures, [`KEY_PROVIDER`] and [`SIGNATURE_VERIFICATION`], and
//! EAP-MSCHAPv2's primitives, [`MSCHAPV2`].

mod awslc;
mod rustcrypto;

pub use awslc::{AwsLc, AwsLcKeys};
pub use rustcrypto::{RustCrypto, RustCryptoMsChapV2};

use crate::sign::{KeyProvider, SignatureVerificationAlgorithms};
use crate::traits::{KeyExchangeGroup, MsChapV2, Prf};

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

/// Every IKE key exchange method flowsec implements (RFC 7296 §3.3.2
/// transform type 4): MODP 1, 2, 5, 14–18 (RFC 2409 §6, RFC 3526) on
/// RustCrypto's crypto-bigint, ECP 19–21 (RFC 5903), Curve25519
/// (RFC 8031) and ML-KEM-512/768/1024 (FIPS 203, methods 35–37,
/// draft-ietf-ipsecme-ikev2-mlkem) on aws-lc (no RustCrypto
/// elliptic-curve crate is in the build). A [`Provider`] starts with all
/// of them.
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
    &awslc::mlkem::ML_KEM_512,
    &awslc::mlkem::ML_KEM_768,
    &awslc::mlkem::ML_KEM_1024,
];

/// The key provider for IKE's private keys: aws-lc's (RSA, ECDSA
/// P-256/P-384/P-521, Ed25519). A [`Provider`] starts with it.
///
/// [`Provider`]: crate::Provider
pub static KEY_PROVIDER: &dyn KeyProvider = &AwsLcKeys;

/// The signature verification algorithms for certificate paths and AUTH
/// payloads, all aws-lc's (RSA PKCS#1 v1.5 and PSS, ECDSA, Ed25519). A
/// [`Provider`] starts with them.
///
/// [`Provider`]: crate::Provider
pub static SIGNATURE_VERIFICATION: SignatureVerificationAlgorithms = awslc::sign::VERIFICATION;

/// MD4 and DES for EAP-MSCHAPv2, RustCrypto's. A [`Provider`] starts
/// with them.
///
/// [`Provider`]: crate::Provider
pub static MSCHAPV2: &dyn MsChapV2 = &RustCryptoMsChapV2;

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
