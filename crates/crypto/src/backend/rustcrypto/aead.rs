//! ESP AEADs in pure Rust: AES-GCM with 8-, 12- and 16-byte ICVs (RFC 4106),
//! AES-CCM with 8-, 12- and 16-byte ICVs (RFC 4309) and ChaCha20-Poly1305
//! (RFC 7634), each for every key size its RFC allows.
//!
//! The key schedule runs once, in [`build`]; `seal` and `open` only assemble
//! the nonce on the stack and run the cipher in place.

use aes::{Aes128, Aes192, Aes256};
use aes_gcm::aead::array::typenum::Unsigned;
use aes_gcm::aead::array::{Array, ArraySize};
use aes_gcm::aead::consts::{U11, U12, U16, U8};
use aes_gcm::aead::{AeadInOut, KeyInit};
use aes_gcm::AesGcm;
use ccm::Ccm;
use chacha20poly1305::ChaCha20Poly1305;
use flowsec_wire::iana::EncrId;
use zeroize::Zeroizing;

use crate::traits::Aead;
use crate::CryptoError;

/// Salt length for AES-GCM (RFC 4106 §8.1) and ChaCha20-Poly1305
/// (RFC 7634 §4).
const SALT_GCM: usize = 4;
/// Salt length for AES-CCM (RFC 4309 §7.1).
const SALT_CCM: usize = 3;

pub(super) fn build(id: EncrId, key: &[u8]) -> Option<Result<Box<dyn Aead>, CryptoError>> {
    Some(match id {
        EncrId::AES_GCM_8 => gcm::<U8>(key),
        EncrId::AES_GCM_12 => gcm::<U12>(key),
        EncrId::AES_GCM_16 => gcm::<U16>(key),
        EncrId::AES_CCM_8 => ccm::<U8>(key),
        EncrId::AES_CCM_12 => ccm::<U12>(key),
        EncrId::AES_CCM_16 => ccm::<U16>(key),
        EncrId::CHACHA20_POLY1305 => chacha20_poly1305(key),
        _ => return None,
    })
}

/// AES-GCM with a `T`-byte tag; the nonce is salt(4) ‖ IV(8) = 12 bytes.
/// The 8-byte tag of AES-GCM-8 (RFC 4106 §6) needs aes-gcm's `hazmat`
/// feature.
fn gcm<T>(key: &[u8]) -> Result<Box<dyn Aead>, CryptoError>
where
    T: aes_gcm::TagSize + Send + Sync + 'static,
{
    const EXPECTED: &str = "20, 28 or 36";
    match key.len() {
        20 => EspAead::<AesGcm<Aes128, U12, T>, SALT_GCM>::boxed(key, EXPECTED),
        28 => EspAead::<AesGcm<Aes192, U12, T>, SALT_GCM>::boxed(key, EXPECTED),
        36 => EspAead::<AesGcm<Aes256, U12, T>, SALT_GCM>::boxed(key, EXPECTED),
        got => Err(CryptoError::BadKeyLength {
            expected: EXPECTED,
            got,
        }),
    }
}

/// AES-CCM with a `T`-byte tag; the nonce is salt(3) ‖ IV(8) = 11 bytes,
/// so L = 4 (RFC 4309 §4).
fn ccm<T>(key: &[u8]) -> Result<Box<dyn Aead>, CryptoError>
where
    T: ArraySize + ccm::TagSize + Send + Sync + 'static,
{
    const EXPECTED: &str = "19, 27 or 35";
    match key.len() {
        19 => EspAead::<Ccm<Aes128, T, U11>, SALT_CCM>::boxed(key, EXPECTED),
        27 => EspAead::<Ccm<Aes192, T, U11>, SALT_CCM>::boxed(key, EXPECTED),
        35 => EspAead::<Ccm<Aes256, T, U11>, SALT_CCM>::boxed(key, EXPECTED),
        got => Err(CryptoError::BadKeyLength {
            expected: EXPECTED,
            got,
        }),
    }
}

/// ChaCha20-Poly1305: 32-byte key, nonce salt(4) ‖ IV(8) (RFC 7634 §2).
fn chacha20_poly1305(key: &[u8]) -> Result<Box<dyn Aead>, CryptoError> {
    EspAead::<ChaCha20Poly1305, SALT_GCM>::boxed(key, "36")
}

/// A RustCrypto AEAD `A` keyed once, with the `S`-byte salt that prefixes
/// every nonce. `A` zeroizes its own key schedule on drop (the `zeroize`
/// features of `aes`, `aes-gcm` and `chacha20poly1305`); the salt is held
/// in [`Zeroizing`].
struct EspAead<A, const S: usize> {
    aead: A,
    salt: Zeroizing<[u8; S]>,
}

impl<A, const S: usize> EspAead<A, S>
where
    A: AeadInOut + KeyInit + Send + Sync + 'static,
{
    /// `key` is the cipher key followed by the `S`-byte salt; `expected`
    /// names the accepted lengths of the whole for the error.
    fn boxed(key: &[u8], expected: &'static str) -> Result<Box<dyn Aead>, CryptoError> {
        debug_assert_eq!(A::NonceSize::USIZE, S + 8);
        let bad_len = CryptoError::BadKeyLength {
            expected,
            got: key.len(),
        };
        let cipher_key_len = key.len().checked_sub(S).ok_or(bad_len)?;
        let (cipher_key, salt) = key.split_at(cipher_key_len);
        let aead = A::new_from_slice(cipher_key).map_err(|_| bad_len)?;
        let mut s = Zeroizing::new([0u8; S]);
        s.copy_from_slice(salt);
        Ok(Box::new(EspAead { aead, salt: s }))
    }

    /// salt ‖ explicit IV (RFC 4106 §4, RFC 4309 §4, RFC 7634 §2).
    fn nonce(&self, iv: &[u8; 8]) -> Array<u8, A::NonceSize> {
        let mut nonce = Array::<u8, A::NonceSize>::default();
        nonce[..S].copy_from_slice(&self.salt[..]);
        nonce[S..].copy_from_slice(iv);
        nonce
    }
}

impl<A, const S: usize> Aead for EspAead<A, S>
where
    A: AeadInOut + KeyInit + Send + Sync + 'static,
{
    fn tag_len(&self) -> usize {
        A::TagSize::USIZE
    }

    fn seal(&self, iv: &[u8; 8], aad: &[u8], data: &mut [u8], tag: &mut [u8]) {
        let computed = self
            .aead
            .encrypt_inout_detached(&self.nonce(iv), aad, data.into())
            // Only fails past the algorithms' length limits (2^36 bytes for
            // GCM, 2^32 for CCM with L = 4, 2^38 for ChaCha20), far above
            // any IP packet.
            .expect("ESP payload within AEAD length limits");
        tag.copy_from_slice(&computed);
    }

    fn open(
        &self,
        iv: &[u8; 8],
        aad: &[u8],
        data: &mut [u8],
        tag: &[u8],
    ) -> Result<(), CryptoError> {
        let tag: &Array<u8, A::TagSize> = tag.try_into().map_err(|_| CryptoError::BadLength)?;
        self.aead
            .decrypt_inout_detached(&self.nonce(iv), aad, data.into(), tag)
            .map_err(|_| CryptoError::AuthFailed)
    }
}
