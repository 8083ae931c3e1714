//! ESP/AH integrity transforms and unkeyed hashes.
//!
//! | id | RFC | key bytes | ICV bytes |
//! |---|---|---|---|
//! | HMAC_MD5_96 | 2403 | 16 | 12 |
//! | HMAC_SHA1_96 | 2404 | 20 | 12 |
//! | HMAC_SHA2_256_128 | 4868 | 32 | 16 |
//! | HMAC_SHA2_384_192 | 4868 | 48 | 24 |
//! | HMAC_SHA2_512_256 | 4868 | 64 | 32 |
//! | AES_XCBC_96 | 3566 | 16 | 12 |
//! | AES_CMAC_96 | 4494 | 16 | 12 |
//!
//! Keyed states are built once per SA: for HMAC the inner and outer hash
//! states after absorbing `K ^ ipad` / `K ^ opad`, for CMAC the cipher and
//! its subkeys. Each packet clones that state (a memcpy) instead of
//! re-keying. States are zeroized on drop (the crates' `zeroize` features).

use aes::Aes128;
use cmac::Cmac;
use flowsec_wire::iana::IntegId;
use hmac::digest::{Digest, Mac};
use hmac::{EagerHash, Hmac, KeyInit};
use md5::Md5;
use sha1::Sha1;
use sha2::{Sha256, Sha384, Sha512};
use subtle::ConstantTimeEq;

use super::super::HashAlg;
use super::xcbc::{AesXcbc, AesXcbc96};
use crate::traits::{Hash, Integrity};
use crate::CryptoError;

pub(super) fn build(id: IntegId, key: &[u8]) -> Option<Result<Box<dyn Integrity>, CryptoError>> {
    Some(match id {
        IntegId::HMAC_MD5_96 => hmac::<Md5>(key, 16, "16", 12),
        IntegId::HMAC_SHA1_96 => hmac::<Sha1>(key, 20, "20", 12),
        IntegId::HMAC_SHA2_256_128 => hmac::<Sha256>(key, 32, "32", 16),
        IntegId::HMAC_SHA2_384_192 => hmac::<Sha384>(key, 48, "48", 24),
        IntegId::HMAC_SHA2_512_256 => hmac::<Sha512>(key, 64, "64", 32),
        IntegId::AES_XCBC_96 => aes_key(key).map(|k| Box::new(AesXcbc96(AesXcbc::new(&k))) as _),
        IntegId::AES_CMAC_96 => aes_key(key).map(|k| {
            let mac = <Cmac<Aes128> as KeyInit>::new(&k.into());
            Box::new(Truncated { mac, icv_len: 12 }) as _
        }),
        _ => return None,
    })
}

pub(super) fn hash(alg: HashAlg) -> Option<Box<dyn Hash>> {
    Some(match alg {
        HashAlg::Md5 => Box::new(Hasher::<Md5>::default()),
        HashAlg::Sha1 => Box::new(Hasher::<Sha1>::default()),
        HashAlg::Sha256 => Box::new(Hasher::<Sha256>::default()),
        HashAlg::Sha384 => Box::new(Hasher::<Sha384>::default()),
        HashAlg::Sha512 => Box::new(Hasher::<Sha512>::default()),
    })
}

/// RFC 3566 §2.1 and RFC 4494 §2.1: exactly 128 bits. (RFC 4434's PRF
/// variant accepts other lengths; the integrity transforms do not.)
fn aes_key(key: &[u8]) -> Result<[u8; 16], CryptoError> {
    key.try_into().map_err(|_| CryptoError::BadKeyLength {
        expected: "16",
        got: key.len(),
    })
}

/// RFC 2403/2404/4868: the key is exactly the hash's output length.
fn hmac<D>(
    key: &[u8],
    len: usize,
    expected: &'static str,
    icv_len: usize,
) -> Result<Box<dyn Integrity>, CryptoError>
where
    D: EagerHash + Send + Sync + 'static,
    Hmac<D>: Send + Sync,
{
    if key.len() != len {
        return Err(CryptoError::BadKeyLength {
            expected,
            got: key.len(),
        });
    }
    let mac = <Hmac<D> as KeyInit>::new_from_slice(key).expect("HMAC takes keys of any length");
    Ok(Box::new(Truncated { mac, icv_len }))
}

/// A keyed RustCrypto MAC truncated to `icv_len` bytes.
struct Truncated<M> {
    mac: M,
    icv_len: usize,
}

impl<M: Mac + Clone> Truncated<M> {
    fn compute(&self, parts: &[&[u8]], f: impl FnOnce(&[u8]) -> bool) -> bool {
        let mut mac = self.mac.clone();
        for part in parts {
            mac.update(part);
        }
        f(&mac.finalize().into_bytes()[..self.icv_len])
    }
}

impl<M: Mac + Clone + Send + Sync> Integrity for Truncated<M> {
    fn icv_len(&self) -> usize {
        self.icv_len
    }
    fn sign(&self, parts: &[&[u8]], icv: &mut [u8]) {
        self.compute(parts, |tag| {
            icv[..tag.len()].copy_from_slice(tag);
            true
        });
    }
    fn verify(&self, parts: &[&[u8]], icv: &[u8]) -> bool {
        icv.len() == self.icv_len && self.compute(parts, |tag| tag.ct_eq(icv).into())
    }
}

/// An unkeyed RustCrypto hash.
#[derive(Default)]
struct Hasher<D>(core::marker::PhantomData<fn() -> D>);

impl<D: Digest> Hash for Hasher<D> {
    fn output_len(&self) -> usize {
        <D as Digest>::output_size()
    }
    fn digest(&self, data: &[u8], out: &mut [u8]) {
        let d = D::digest(data);
        out[..d.len()].copy_from_slice(&d);
    }
}
