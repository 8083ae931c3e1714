//! ESP ciphers (NULL, CBC and CTR modes).
//!
//! aws-lc-rs has AES-CBC (RFC 3602), AES-CTR (RFC 3686) and, with its
//! `legacy-des` feature, DES and 3DES in CBC mode (RFC 2405, 2451). Every
//! other id is left to the next backend. Each packet passes its IV as an
//! explicit `EncryptionContext` to `less_safe_encrypt`; nothing allocates
//! per packet, and aws-lc-rs zeroizes its key schedules on drop.

#![allow(deprecated)] // DES and 3DES: aws-lc-rs marks them legacy; ESP still negotiates them.

use aws_lc_rs::cipher::{
    Algorithm, DecryptingKey, DecryptionContext, EncryptingKey, EncryptionContext,
    UnboundCipherKey, AES_128, AES_192, AES_256, DES_EDE3_FOR_LEGACY_USE_ONLY,
    DES_FOR_LEGACY_USE_ONLY,
};
use aws_lc_rs::iv::FixedLength;
use flowsec_wire::iana::EncrId;
use zeroize::Zeroize;

use crate::traits::Cipher;
use crate::CryptoError;

/// Length of the AES-CTR nonce at the end of the key material (RFC 3686 §5.1).
const CTR_NONCE_LEN: usize = 4;
const AES_LENS: &str = "16, 24 or 32";

pub(super) fn build(id: EncrId, key: &[u8]) -> Option<Result<Box<dyn Cipher>, CryptoError>> {
    Some(match id {
        EncrId::DES => cbc(&DES_FOR_LEGACY_USE_ONLY, key, "8"),
        EncrId::TRIPLE_DES => cbc(&DES_EDE3_FOR_LEGACY_USE_ONLY, key, "24"),
        EncrId::AES_CBC => match aes_alg(key.len()) {
            Some(alg) => cbc(alg, key, AES_LENS),
            None => Err(bad_len(AES_LENS, key.len())),
        },
        EncrId::AES_CTR => aes_ctr(key),
        _ => return None,
    })
}

fn bad_len(expected: &'static str, got: usize) -> CryptoError {
    CryptoError::BadKeyLength { expected, got }
}

fn aes_alg(key_len: usize) -> Option<&'static Algorithm> {
    match key_len {
        16 => Some(&AES_128),
        24 => Some(&AES_192),
        32 => Some(&AES_256),
        _ => None,
    }
}

/// A CBC cipher. For DES and 3DES aws-lc refuses weak keys and 3DES keys
/// whose thirds are not distinct (RFC 2405 §5, RFC 2451 §2.3): `WeakKey`.
fn cbc(
    alg: &'static Algorithm,
    key: &[u8],
    expected: &'static str,
) -> Result<Box<dyn Cipher>, CryptoError> {
    let unbound = || UnboundCipherKey::new(alg, key).map_err(|_| bad_len(expected, key.len()));
    let enc = EncryptingKey::cbc(unbound()?).map_err(|_| CryptoError::WeakKey)?;
    let dec = DecryptingKey::cbc(unbound()?).map_err(|_| CryptoError::WeakKey)?;
    Ok(Box::new(Cbc {
        block_len: alg.block_len(),
        enc,
        dec,
        ivgen: IvGen::new(),
    }))
}

fn aes_ctr(key: &[u8]) -> Result<Box<dyn Cipher>, CryptoError> {
    const EXPECTED: &str = "20, 28 or 36";
    let alg = key
        .len()
        .checked_sub(CTR_NONCE_LEN)
        .and_then(aes_alg)
        .ok_or(bad_len(EXPECTED, key.len()))?;
    let (aes_key, nonce) = key.split_at(key.len() - CTR_NONCE_LEN);
    let unbound = UnboundCipherKey::new(alg, aes_key).map_err(|_| bad_len(EXPECTED, key.len()))?;
    let key = EncryptingKey::ctr(unbound).map_err(|_| bad_len(EXPECTED, key.len()))?;
    Ok(Box::new(Ctr {
        key,
        nonce: [nonce[0], nonce[1], nonce[2], nonce[3]],
    }))
}

/// CBC with a full-block explicit IV.
struct Cbc {
    block_len: usize,
    enc: EncryptingKey,
    dec: DecryptingKey,
    ivgen: IvGen,
}

impl Cbc {
    fn context<C>(
        &self,
        iv: &[u8],
        iv128: impl Fn([u8; 16]) -> C,
        iv64: impl Fn([u8; 8]) -> C,
    ) -> C {
        match self.block_len {
            16 => iv128(iv.try_into().expect("CBC IV is one block")),
            _ => iv64(iv.try_into().expect("CBC IV is one block")),
        }
    }
}

impl Cipher for Cbc {
    fn iv_len(&self) -> usize {
        self.block_len
    }
    fn block_len(&self) -> usize {
        self.block_len
    }
    fn make_iv(&self, seq: u64, iv: &mut [u8]) {
        self.ivgen.fill(seq, iv);
    }

    /// # Panics
    /// If `data` is not whole blocks (the caller's contract): aws-lc would
    /// leave it unencrypted.
    fn encrypt(&self, iv: &[u8], data: &mut [u8]) {
        let ctx = self.context(
            iv,
            |iv| EncryptionContext::Iv128(FixedLength::from(iv)),
            |iv| EncryptionContext::Iv64(FixedLength::from(iv)),
        );
        self.enc
            .less_safe_encrypt(data, ctx)
            .expect("CBC plaintext is whole blocks");
    }

    fn decrypt(&self, iv: &[u8], data: &mut [u8]) -> Result<(), CryptoError> {
        if !data.len().is_multiple_of(self.block_len) || iv.len() != self.block_len {
            return Err(CryptoError::BadLength);
        }
        let ctx = self.context(
            iv,
            |iv| DecryptionContext::Iv128(FixedLength::from(iv)),
            |iv| DecryptionContext::Iv64(FixedLength::from(iv)),
        );
        self.dec
            .decrypt(data, ctx)
            .map(|_| ())
            .map_err(|_| CryptoError::BadLength)
    }
}

/// AES-CTR as ESP uses it (RFC 3686 §4): counter block = nonce ‖ IV ‖
/// 32-bit counter starting at 1. aws-lc increments the whole 128-bit block;
/// that equals RFC 3686's 32-bit counter because an ESP packet is far
/// shorter than 2^32 blocks, so the low word never wraps.
struct Ctr {
    key: EncryptingKey,
    nonce: [u8; CTR_NONCE_LEN],
}

impl Ctr {
    fn apply(&self, iv: &[u8], data: &mut [u8]) {
        let mut block = [0u8; 16];
        block[..4].copy_from_slice(&self.nonce);
        block[4..12].copy_from_slice(iv);
        block[12..].copy_from_slice(&1u32.to_be_bytes());
        self.key
            .less_safe_encrypt(data, EncryptionContext::Iv128(FixedLength::from(block)))
            .expect("CTR accepts any length");
    }
}

impl Cipher for Ctr {
    fn iv_len(&self) -> usize {
        8
    }
    fn block_len(&self) -> usize {
        1
    }
    /// RFC 3686 §3: the IV must never repeat under a key; the sequence
    /// number never does.
    fn make_iv(&self, seq: u64, iv: &mut [u8]) {
        iv.copy_from_slice(&seq.to_be_bytes());
    }
    fn encrypt(&self, iv: &[u8], data: &mut [u8]) {
        self.apply(iv, data);
    }
    fn decrypt(&self, iv: &[u8], data: &mut [u8]) -> Result<(), CryptoError> {
        if iv.len() != 8 {
            return Err(CryptoError::BadLength);
        }
        self.apply(iv, data);
        Ok(())
    }
}

impl Drop for Ctr {
    fn drop(&mut self) {
        self.nonce.zeroize();
    }
}

/// Per-packet CBC IVs without I/O: `IV = AES-128_ivkey(0^64 ‖ seq)`
/// truncated to the block, with `ivkey` drawn once from `getrandom` — the
/// same construction as the RustCrypto backend's `ivgen.rs`, which explains
/// why it meets RFC 3602 §3. Here AES-128-ECB comes from aws-lc.
struct IvGen {
    prf: EncryptingKey,
}

impl IvGen {
    /// # Panics
    /// If the OS random number generator fails (no secure IV can be made).
    fn new() -> Self {
        let mut key = [0u8; 16];
        getrandom::fill(&mut key).expect("OS random number generator failed");
        let unbound = UnboundCipherKey::new(&AES_128, &key).expect("16-byte AES key");
        key.zeroize();
        IvGen {
            prf: EncryptingKey::ecb(unbound).expect("AES-ECB is supported"),
        }
    }

    fn fill(&self, seq: u64, iv: &mut [u8]) {
        let mut block = [0u8; 16];
        block[8..].copy_from_slice(&seq.to_be_bytes());
        self.prf
            .less_safe_encrypt(&mut block, EncryptionContext::None)
            .expect("one whole block");
        iv.copy_from_slice(&block[..iv.len()]);
    }
}
