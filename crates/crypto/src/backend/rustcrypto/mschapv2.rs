//! MS-CHAPv2's primitives (RFC 2759 §8.3–8.6) on RustCrypto: MD4 from
//! `md4` (aws-lc-rs has none) and single DES from `des`. Not aws-lc's
//! DES: it refuses weak keys, and ChallengeResponse must take the weak
//! key that the zero padding makes of a password hash ending in two zero
//! octets (one password in 65536).

use cipher::{Array, BlockCipherEncrypt, KeyInit};
use des::Des;
use md4::{Digest, Md4};
use zeroize::Zeroizing;

use crate::traits::MsChapV2;

/// MD4 and DES as MS-CHAPv2 uses them.
#[derive(Debug, Clone, Copy, Default)]
pub struct RustCryptoMsChapV2;

impl MsChapV2 for RustCryptoMsChapV2 {
    fn md4(&self, data: &[u8]) -> Zeroizing<[u8; 16]> {
        Zeroizing::new(Md4::digest(data).into())
    }

    fn challenge_response(&self, challenge: &[u8; 8], password_hash: &[u8; 16]) -> [u8; 24] {
        let mut z = Zeroizing::new([0u8; 21]);
        z[..16].copy_from_slice(password_hash);
        let mut out = [0u8; 24];
        for (third, block) in z.chunks_exact(7).zip(out.chunks_exact_mut(8)) {
            let key = Zeroizing::new(des_key(third));
            // Invariant: a DES key is 8 octets, as `des_key` makes it.
            let cipher = Des::new_from_slice(&key[..]).expect("8-octet DES key");
            let mut b = Array::from(*challenge);
            cipher.encrypt_block(&mut b);
            block.copy_from_slice(&b);
        }
        out
    }
}

/// A 7-octet key part spread over a DES key, seven bits an octet, each
/// with an odd parity bit (§8.6 DesEncrypt; the DES cipher ignores the
/// parity bits).
fn des_key(seven: &[u8]) -> [u8; 8] {
    let bits = seven.iter().fold(0u64, |acc, &b| acc << 8 | u64::from(b));
    let mut k = [0u8; 8];
    for (i, byte) in k.iter_mut().enumerate() {
        let v = ((bits >> (49 - 7 * i)) & 0x7f) as u8;
        *byte = (v << 1) | ((v.count_ones() as u8 + 1) & 1);
    }
    k
}
