//! ESP AEADs on aws-lc: AES-GCM with the full 16-byte ICV (RFC 4106) for
//! 128-, 192- and 256-bit keys, and ChaCha20-Poly1305 (RFC 7634).
//!
//! aws-lc-rs keys its contexts with the default 16-byte tag and exposes no
//! way to change it, and a truncated received tag cannot be checked by an
//! API that wants the full one, so AES-GCM-8/12 are left to the next
//! backend. aws-lc-rs has no AES-CCM.
//!
//! The key schedule runs once, in [`build`] (inside [`UnboundKey::new`]);
//! `seal` and `open` assemble the nonce on the stack and run in place.

use aws_lc_rs::aead::{
    Aad, Algorithm, LessSafeKey, Nonce, UnboundKey, AES_128_GCM, AES_192_GCM, AES_256_GCM,
    CHACHA20_POLY1305, NONCE_LEN,
};
use flowsec_wire::iana::EncrId;
use zeroize::Zeroizing;

use crate::traits::Aead;
use crate::CryptoError;

/// Salt length for AES-GCM (RFC 4106 §8.1) and ChaCha20-Poly1305
/// (RFC 7634 §4); with the 8-byte IV it makes aws-lc's 12-byte nonce.
const SALT_LEN: usize = 4;
/// The only tag length aws-lc-rs produces and checks.
const TAG_LEN: usize = 16;

pub(super) fn build(id: EncrId, key: &[u8]) -> Option<Result<Box<dyn Aead>, CryptoError>> {
    let algorithm: &'static Algorithm = match (id, key.len()) {
        (EncrId::AES_GCM_16, 20) => &AES_128_GCM,
        (EncrId::AES_GCM_16, 28) => &AES_192_GCM,
        (EncrId::AES_GCM_16, 36) => &AES_256_GCM,
        (EncrId::CHACHA20_POLY1305, 36) => &CHACHA20_POLY1305,
        (EncrId::AES_GCM_16, got) => return Some(Err(bad_key_length("20, 28 or 36", got))),
        (EncrId::CHACHA20_POLY1305, got) => return Some(Err(bad_key_length("36", got))),
        _ => return None,
    };
    Some(AwsLcAead::boxed(algorithm, key))
}

fn bad_key_length(expected: &'static str, got: usize) -> CryptoError {
    CryptoError::BadKeyLength { expected, got }
}

/// An aws-lc AEAD context keyed once, with the salt that prefixes every
/// nonce. aws-lc frees the context with `OPENSSL_free`, which cleanses it;
/// the salt is held in [`Zeroizing`].
struct AwsLcAead {
    key: LessSafeKey,
    salt: Zeroizing<[u8; SALT_LEN]>,
}

impl AwsLcAead {
    /// `key` is the cipher key followed by the salt, of a length the caller
    /// has checked against `algorithm`.
    fn boxed(algorithm: &'static Algorithm, key: &[u8]) -> Result<Box<dyn Aead>, CryptoError> {
        let (cipher_key, salt) = key.split_at(key.len() - SALT_LEN);
        let unbound =
            UnboundKey::new(algorithm, cipher_key).map_err(|_| CryptoError::BadKeyLength {
                expected: "a key of the algorithm's length",
                got: key.len(),
            })?;
        let mut s = Zeroizing::new([0u8; SALT_LEN]);
        s.copy_from_slice(salt);
        Ok(Box::new(AwsLcAead {
            key: LessSafeKey::new(unbound),
            salt: s,
        }))
    }

    /// salt ‖ explicit IV (RFC 4106 §4, RFC 7634 §2). The caller (ESP)
    /// guarantees uniqueness: the IV is the never-repeating sequence number.
    fn nonce(&self, iv: &[u8; 8]) -> Nonce {
        let mut nonce = [0u8; NONCE_LEN];
        nonce[..SALT_LEN].copy_from_slice(&self.salt[..]);
        nonce[SALT_LEN..].copy_from_slice(iv);
        Nonce::assume_unique_for_key(nonce)
    }
}

impl Aead for AwsLcAead {
    fn tag_len(&self) -> usize {
        TAG_LEN
    }

    fn seal(&self, iv: &[u8; 8], aad: &[u8], data: &mut [u8], tag: &mut [u8]) {
        let computed = self
            .key
            .seal_in_place_separate_tag(self.nonce(iv), Aad::from(aad), data)
            // Only fails past the per-nonce length limit (about 64 GiB for
            // GCM, 256 GiB for ChaCha20), far above any IP packet.
            .expect("ESP payload within AEAD length limits");
        tag.copy_from_slice(computed.as_ref());
    }

    fn open(
        &self,
        iv: &[u8; 8],
        aad: &[u8],
        data: &mut [u8],
        tag: &[u8],
    ) -> Result<(), CryptoError> {
        if tag.len() != TAG_LEN {
            return Err(CryptoError::BadLength);
        }
        // Decrypts and authenticates in one pass; on failure aws-lc zeroes
        // `data` (EVP_AEAD_CTX_open_gather), so no unauthenticated plaintext
        // is left behind.
        self.key
            .open_in_place_separate_tag(self.nonce(iv), Aad::from(aad), tag, data)
            .map(|_| ())
            .map_err(|_| CryptoError::AuthFailed)
    }
}
