//! AES-XCBC-MAC (RFC 3566), flowsec's one implementation of it, shared by
//! ESP/AH integrity (AES-XCBC-MAC-96, RFC 3566 §2.2: the first 96 bits) and
//! IKE's PRF_AES128_XCBC (RFC 4434: all 128 bits, with its own key rule,
//! [`prf_key`]). No maintained crate implements it; it is CBC-MAC with
//! three keys derived from the one given (RFC 3566 §4):
//!
//! ```text
//! K1 = AES_K(0x01^16), K2 = AES_K(0x02^16), K3 = AES_K(0x03^16)
//! E[0] = 0; E[i] = AES_K1(M[i] ^ E[i-1]) for all but the last block;
//! last block complete:   E[n] = AES_K1(M[n] ^ E[n-1] ^ K2)
//! last block incomplete: E[n] = AES_K1(pad(M[n]) ^ E[n-1] ^ K3), pad = 0x80 0x00..
//! ```
//! An empty message is one incomplete block.

use aes::cipher::consts::U16;
use aes::cipher::{
    Array, BlockCipherEncBackend, BlockCipherEncClosure, BlockCipherEncrypt, BlockSizeUser, KeyInit,
};
use aes::Aes128;
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, Zeroizing};

use crate::traits::Integrity;

/// AES block and key size in bytes.
pub(crate) const BLOCK: usize = 16;
/// RFC 3566 §2.2: the ICV is the MAC truncated to 96 bits.
const ICV_LEN: usize = 12;

/// AES-XCBC-MAC with its derived keys precomputed (K1 as a keyed cipher).
/// `Aes128` zeroizes its key schedule on drop (the `aes` crate's `zeroize`
/// feature); K2 and K3 are zeroized by `Drop` here.
pub(crate) struct AesXcbc {
    k1: Aes128,
    k2: [u8; BLOCK],
    k3: [u8; BLOCK],
}

impl AesXcbc {
    /// `key` is the 128-bit key K (RFC 3566 §2.1; the callers check or
    /// normalise its length).
    pub(crate) fn new(key: &[u8; BLOCK]) -> Self {
        let k = Aes128::new(&(*key).into());
        let derive = |c: u8| {
            let mut block = Array::from([c; BLOCK]);
            k.encrypt_block(&mut block);
            let out: [u8; BLOCK] = block.into();
            block.zeroize();
            out
        };
        let mut k1 = derive(0x01);
        let out = AesXcbc {
            k1: Aes128::new(&k1.into()),
            k2: derive(0x02),
            k3: derive(0x03),
        };
        k1.zeroize();
        out
    }

    /// The full 128-bit MAC over the concatenation of `parts`. The caller
    /// zeroizes it where it is secret (as a PRF output).
    pub(crate) fn mac(&self, parts: &[&[u8]]) -> [u8; BLOCK] {
        let mut out = [0u8; BLOCK];
        // One backend selection (e.g. AES-NI) per message, not per block.
        self.k1.encrypt_with_backend(MacClosure {
            parts,
            k2: &self.k2,
            k3: &self.k3,
            out: &mut out,
        });
        out
    }
}

impl Drop for AesXcbc {
    fn drop(&mut self) {
        self.k2.zeroize();
        self.k3.zeroize();
    }
}

/// RFC 4434 §2, the key of PRF_AES128_XCBC: a 16-byte key is used as it
/// is, a shorter one is padded with zeros on the right, a longer one
/// becomes AES-XCBC-MAC(0^128, key). (The integrity transform takes
/// exactly 16 bytes instead: RFC 3566 §2.1.)
pub(crate) fn prf_key(key: &[u8]) -> Zeroizing<[u8; BLOCK]> {
    let mut k = Zeroizing::new([0u8; BLOCK]);
    if key.len() <= BLOCK {
        k[..key.len()].copy_from_slice(key);
    } else {
        *k = AesXcbc::new(&[0; BLOCK]).mac(&[key]);
    }
    k
}

/// AES-XCBC-MAC-96 (RFC 3566 §2.2) as ESP and AH use it.
pub(crate) struct AesXcbc96(pub(crate) AesXcbc);

impl Integrity for AesXcbc96 {
    fn icv_len(&self) -> usize {
        ICV_LEN
    }
    fn sign(&self, parts: &[&[u8]], icv: &mut [u8]) {
        icv[..ICV_LEN].copy_from_slice(&self.0.mac(parts)[..ICV_LEN]);
    }
    fn verify(&self, parts: &[&[u8]], icv: &[u8]) -> bool {
        icv.len() == ICV_LEN && bool::from(self.0.mac(parts)[..ICV_LEN].ct_eq(icv))
    }
}

/// The CBC-MAC loop, run inside the AES backend.
struct MacClosure<'a, 'p> {
    parts: &'a [&'p [u8]],
    k2: &'a [u8; BLOCK],
    k3: &'a [u8; BLOCK],
    out: &'a mut [u8; BLOCK],
}

impl BlockSizeUser for MacClosure<'_, '_> {
    type BlockSize = U16;
}

impl BlockCipherEncClosure for MacClosure<'_, '_> {
    fn call<B: BlockCipherEncBackend<BlockSize = U16>>(self, aes_k1: &B) {
        let mut e = Array::<u8, U16>::default();
        // Bytes of the current, not yet processed block: it is processed
        // only once more input shows it is not the last one.
        let mut pending = [0u8; BLOCK];
        let mut pending_len = 0;
        for mut part in self.parts.iter().copied() {
            while !part.is_empty() {
                if pending_len == BLOCK {
                    xor(&mut e, &pending);
                    aes_k1.encrypt_block((&mut e).into());
                    pending_len = 0;
                }
                let take = (BLOCK - pending_len).min(part.len());
                pending[pending_len..pending_len + take].copy_from_slice(&part[..take]);
                pending_len += take;
                part = &part[take..];
            }
        }
        if pending_len == BLOCK {
            xor(&mut e, &pending);
            xor(&mut e, self.k2);
        } else {
            pending[pending_len] = 0x80;
            pending[pending_len + 1..].fill(0);
            xor(&mut e, &pending);
            xor(&mut e, self.k3);
        }
        aes_k1.encrypt_block((&mut e).into());
        self.out.copy_from_slice(&e);
        pending.zeroize();
        e.zeroize();
    }
}

#[inline(always)]
fn xor(out: &mut [u8], other: &[u8]) {
    for (o, i) in out.iter_mut().zip(other) {
        *o ^= i;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splitting the input differently gives the same MAC (the pending-block
    /// logic across parts).
    #[test]
    fn xcbc_parts_are_concatenated() {
        let xcbc = AesXcbc::new(&[7u8; 16]);
        let msg: Vec<u8> = (0..50).collect();
        let whole = xcbc.mac(&[&msg]);
        for cut in [0, 1, 15, 16, 17, 32, 49, 50] {
            assert_eq!(xcbc.mac(&[&msg[..cut], &msg[cut..]]), whole, "cut {cut}");
        }
        assert_eq!(xcbc.mac(&[&msg[..16], &[], &msg[16..]]), whole);
    }

    /// RFC 4434 §2's three key cases (the vectors through the PRF are in
    /// tests/kat_prf.rs).
    #[test]
    fn prf_key_rule() {
        let key16: Vec<u8> = (0..16).collect();
        assert_eq!(&prf_key(&key16)[..], &key16[..]);
        let mut padded = [0u8; 16];
        padded[..10].copy_from_slice(&key16[..10]);
        assert_eq!(*prf_key(&key16[..10]), padded);
        let long: Vec<u8> = (0..18).collect();
        assert_eq!(*prf_key(&long), AesXcbc::new(&[0; 16]).mac(&[&long]));
    }
}
