//! IKEv2's pseudorandom functions (RFC 7296 §3.3.2, transform type 2).
//!
//! | id | RFC | output = preferred key length | key |
//! |---|---|---|---|
//! | HMAC_MD5 | 2104 | 16 | any length |
//! | HMAC_SHA1 | 2104 | 20 | any length |
//! | HMAC_SHA2_256/384/512 | 4868 | 32/48/64 | any length |
//! | AES128_XCBC | 4434 | 16 | any length, normalised to 16 (§2) |
//! | AES128_CMAC | 4615 | 16 | any length, normalised to 16 (§3) |
//!
//! They run a handful of times per IKE SA, so each call keys a fresh MAC
//! state; every state and output is zeroized (the crates' `zeroize`
//! features, and [`Zeroizing`] for what is returned). AES-XCBC is the one
//! ESP/AH integrity uses too ([`super::xcbc`]).

use core::marker::PhantomData;

use aes::cipher::Array;
use aes::Aes128;
use cmac::Cmac;
use flowsec_wire::iana::PrfId;
use hmac::digest::{Mac, OutputSizeUser};
use hmac::{EagerHash, Hmac, KeyInit};
use md5::Md5;
use sha1::Sha1;
use sha2::{Sha256, Sha384, Sha512};
use zeroize::{Zeroize, Zeroizing};

use super::xcbc::{self, AesXcbc};
use crate::traits::Prf;

/// PRF_HMAC_MD5 (RFC 2104).
pub(crate) static HMAC_MD5: HmacPrf<Md5> = HmacPrf::new(PrfId::HMAC_MD5);
/// PRF_HMAC_SHA1 (RFC 2104).
pub(crate) static HMAC_SHA1: HmacPrf<Sha1> = HmacPrf::new(PrfId::HMAC_SHA1);
/// PRF_HMAC_SHA2_256 (RFC 4868 §2.1).
pub(crate) static HMAC_SHA2_256: HmacPrf<Sha256> = HmacPrf::new(PrfId::HMAC_SHA2_256);
/// PRF_HMAC_SHA2_384 (RFC 4868 §2.1).
pub(crate) static HMAC_SHA2_384: HmacPrf<Sha384> = HmacPrf::new(PrfId::HMAC_SHA2_384);
/// PRF_HMAC_SHA2_512 (RFC 4868 §2.1).
pub(crate) static HMAC_SHA2_512: HmacPrf<Sha512> = HmacPrf::new(PrfId::HMAC_SHA2_512);
/// PRF_AES128_XCBC (RFC 4434).
pub(crate) static AES128_XCBC: AesPrf128 = AesPrf128 {
    id: PrfId::AES128_XCBC,
    prf: xcbc_prf,
};
/// PRF_AES128_CMAC (RFC 4615).
pub(crate) static AES128_CMAC: AesPrf128 = AesPrf128 {
    id: PrfId::AES128_CMAC,
    prf: cmac_prf,
};

/// AES block, key and output size of the AES PRFs, in bytes.
const AES_BLOCK: usize = xcbc::BLOCK;

/// HMAC over the hash `D` as an IKE PRF.
pub(crate) struct HmacPrf<D> {
    id: PrfId,
    hash: PhantomData<fn() -> D>,
}

impl<D> HmacPrf<D> {
    const fn new(id: PrfId) -> Self {
        HmacPrf {
            id,
            hash: PhantomData,
        }
    }
}

impl<D> Prf for HmacPrf<D>
where
    D: EagerHash,
    Hmac<D>: KeyInit + Mac,
{
    fn id(&self) -> PrfId {
        self.id
    }
    fn output_len(&self) -> usize {
        <Hmac<D> as OutputSizeUser>::output_size()
    }
    /// RFC 7296 §2.13: the output length for the HMAC PRFs.
    fn preferred_key_len(&self) -> usize {
        self.output_len()
    }
    fn prf(&self, key: &[u8], parts: &[&[u8]]) -> Zeroizing<Vec<u8>> {
        // Invariant: HMAC takes keys of any length (RFC 2104 §2 hashes
        // longer ones), so `new_from_slice` cannot fail.
        let mac = <Hmac<D> as KeyInit>::new_from_slice(key).expect("HMAC takes keys of any length");
        mac_over(mac, parts)
    }
}

/// An AES PRF: 128-bit output and preferred key, any key length (each
/// RFC normalises it to 16 bytes).
pub(crate) struct AesPrf128 {
    id: PrfId,
    prf: PrfFn,
}

/// A PRF as a function: the key and the parts of the input to the output.
type PrfFn = fn(&[u8], &[&[u8]]) -> Zeroizing<Vec<u8>>;

impl Prf for AesPrf128 {
    fn id(&self) -> PrfId {
        self.id
    }
    fn output_len(&self) -> usize {
        AES_BLOCK
    }
    /// RFC 7296 §2.13: 128 bits for the AES PRFs.
    fn preferred_key_len(&self) -> usize {
        AES_BLOCK
    }
    fn prf(&self, key: &[u8], parts: &[&[u8]]) -> Zeroizing<Vec<u8>> {
        (self.prf)(key, parts)
    }
}

/// AES-XCBC-PRF-128 (RFC 4434): the whole 128-bit AES-XCBC-MAC (RFC 3566)
/// under the key of RFC 4434 §2.
fn xcbc_prf(key: &[u8], parts: &[&[u8]]) -> Zeroizing<Vec<u8>> {
    let mut tag = AesXcbc::new(&xcbc::prf_key(key)).mac(parts);
    let out = Zeroizing::new(tag.to_vec());
    tag.zeroize();
    out
}

/// AES-CMAC-PRF-128 (RFC 4615): AES-CMAC (RFC 4493) under the key of
/// RFC 4615 §3.
fn cmac_prf(key: &[u8], parts: &[&[u8]]) -> Zeroizing<Vec<u8>> {
    cmac(&cmac_prf_key(key), parts)
}

/// AES-CMAC with its whole 128-bit output.
fn cmac(key: &[u8; AES_BLOCK], parts: &[&[u8]]) -> Zeroizing<Vec<u8>> {
    let mut k = Array::from(*key);
    let mac = <Cmac<Aes128> as KeyInit>::new(&k);
    k.as_mut_slice().zeroize();
    mac_over(mac, parts)
}

/// The whole output of `mac` over the concatenation of `parts`; the copy
/// left in the MAC's output is wiped.
fn mac_over<M: Mac>(mut mac: M, parts: &[&[u8]]) -> Zeroizing<Vec<u8>> {
    for p in parts {
        mac.update(p);
    }
    let mut tag = mac.finalize().into_bytes();
    let out = Zeroizing::new(tag.to_vec());
    tag.as_mut_slice().zeroize();
    out
}

/// RFC 4615 §3: a 16-byte key is used as it is, any other becomes
/// AES-CMAC(0^128, key).
fn cmac_prf_key(key: &[u8]) -> Zeroizing<[u8; AES_BLOCK]> {
    let mut k = Zeroizing::new([0u8; AES_BLOCK]);
    if key.len() == AES_BLOCK {
        k.copy_from_slice(key);
    } else {
        k.copy_from_slice(&cmac(&[0; AES_BLOCK], &[key]));
    }
    k
}
