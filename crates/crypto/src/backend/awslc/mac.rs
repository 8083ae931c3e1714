//! ESP/AH integrity transforms and unkeyed hashes.
//!
//! aws-lc-rs has HMAC-SHA1-96 (RFC 2404) and HMAC-SHA2 (RFC 4868); MD5,
//! XCBC and CMAC are left to the next backend. An `hmac::Key` holds the
//! HMAC context after absorbing the padded key; each packet copies it
//! (`Context::with_key`) rather than re-keying. aws-lc cleanses the contexts
//! on drop.

use aws_lc_rs::{digest, hmac};
use flowsec_wire::iana::IntegId;
use subtle::ConstantTimeEq;

use super::super::HashAlg;
use crate::traits::{Hash, Integrity};
use crate::CryptoError;

pub(super) fn build(id: IntegId, key: &[u8]) -> Option<Result<Box<dyn Integrity>, CryptoError>> {
    let (alg, expected, icv_len) = match id {
        IntegId::HMAC_SHA1_96 => (hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, "20", 12),
        IntegId::HMAC_SHA2_256_128 => (hmac::HMAC_SHA256, "32", 16),
        IntegId::HMAC_SHA2_384_192 => (hmac::HMAC_SHA384, "48", 24),
        IntegId::HMAC_SHA2_512_256 => (hmac::HMAC_SHA512, "64", 32),
        _ => return None,
    };
    // RFC 2404 §3 / RFC 4868 §2.1.1: the key is the hash's output length.
    if key.len() != alg.digest_algorithm().output_len() {
        return Some(Err(CryptoError::BadKeyLength {
            expected,
            got: key.len(),
        }));
    }
    Some(Ok(Box::new(HmacTrunc {
        key: hmac::Key::new(alg, key),
        icv_len,
    })))
}

pub(super) fn hash(alg: HashAlg) -> Option<Box<dyn Hash>> {
    let alg = match alg {
        HashAlg::Md5 => return None,
        HashAlg::Sha1 => &digest::SHA1_FOR_LEGACY_USE_ONLY,
        HashAlg::Sha256 => &digest::SHA256,
        HashAlg::Sha384 => &digest::SHA384,
        HashAlg::Sha512 => &digest::SHA512,
    };
    Some(Box::new(Digest(alg)))
}

/// HMAC truncated to `icv_len` bytes.
struct HmacTrunc {
    key: hmac::Key,
    icv_len: usize,
}

impl HmacTrunc {
    fn tag(&self, parts: &[&[u8]]) -> hmac::Tag {
        let mut ctx = hmac::Context::with_key(&self.key);
        for part in parts {
            ctx.update(part);
        }
        ctx.sign()
    }
}

impl Integrity for HmacTrunc {
    fn icv_len(&self) -> usize {
        self.icv_len
    }
    fn sign(&self, parts: &[&[u8]], icv: &mut [u8]) {
        icv[..self.icv_len].copy_from_slice(&self.tag(parts).as_ref()[..self.icv_len]);
    }
    fn verify(&self, parts: &[&[u8]], icv: &[u8]) -> bool {
        icv.len() == self.icv_len && bool::from(self.tag(parts).as_ref()[..self.icv_len].ct_eq(icv))
    }
}

/// An unkeyed aws-lc digest.
struct Digest(&'static digest::Algorithm);

impl Hash for Digest {
    fn output_len(&self) -> usize {
        self.0.output_len()
    }
    fn digest(&self, data: &[u8], out: &mut [u8]) {
        let d = digest::digest(self.0, data);
        out[..d.as_ref().len()].copy_from_slice(d.as_ref());
    }
}
