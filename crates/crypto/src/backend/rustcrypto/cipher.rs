//! ESP ciphers (NULL, CBC and CTR modes).
//!
//! | id | RFC | key bytes | mode |
//! |---|---|---|---|
//! | NULL | 2410 | 0 | identity |
//! | DES | 2405 | 8 | CBC, 8-byte IV |
//! | TRIPLE_DES | 2451 | 24 | CBC, 8-byte IV |
//! | CAST | 2144, 2451 | 5..=16 | CBC, 8-byte IV |
//! | BLOWFISH | 2451 | 5..=56 | CBC, 8-byte IV |
//! | AES_CBC | 3602 | 16, 24, 32 | CBC, 16-byte IV |
//! | AES_CTR | 3686 | 16, 24, 32 + 4 nonce | CTR, 8-byte IV |
//! | CAMELLIA_CBC | 4312 | 16, 24, 32 | CBC, 16-byte IV |
//! | TWOFISH_CBC | (strongSwan) | 16, 24, 32 | CBC, 16-byte IV |
//!
//! Each packet has its own IV, so the modes are set up per packet over a
//! shared, once-expanded key: CBC with the `cbc` crate over `&cipher` (no
//! key clone), CTR written here (RFC 3686's counter block differs from the
//! `ctr` crate's stream state), handing the cipher eight blocks at a time so
//! AES-NI can pipeline them. Twofish is our own (see `twofish.rs`). Nothing
//! here allocates per packet.

use aes::{Aes128, Aes192, Aes256};
use blowfish::Blowfish;
use camellia::{Camellia128, Camellia192, Camellia256};
use cast5::Cast5;
use cipher::typenum::Unsigned;
use cipher::{
    Array, BlockCipherDecrypt, BlockCipherEncrypt, BlockModeDecrypt, BlockModeEncrypt, InnerIvInit,
    KeyInit,
};
use des::{Des, TdesEde3};
use flowsec_wire::iana::EncrId;
use zeroize::Zeroize;

use super::ivgen::IvGen;
use super::twofish::Twofish;
use crate::traits::Cipher;
use crate::CryptoError;

/// Length of the AES-CTR nonce at the end of the key material (RFC 3686 §5.1).
const CTR_NONCE_LEN: usize = 4;
/// Blocks handed to the block cipher at once (AES-NI pipelines 8).
const PAR_BLOCKS: usize = 8;

pub(super) fn build(id: EncrId, key: &[u8]) -> Option<Result<Box<dyn Cipher>, CryptoError>> {
    Some(match id {
        EncrId::NULL => null(key),
        EncrId::DES => des_key_check(key, 8, "8").and_then(|()| cbc_mode::<Des>(key, "8")),
        EncrId::TRIPLE_DES => {
            des_key_check(key, 24, "24").and_then(|()| cbc_mode::<TdesEde3>(key, "24"))
        }
        EncrId::CAST => cbc_var::<Cast5>(key, 5..=16, "5 to 16"),
        EncrId::BLOWFISH => cbc_var::<Blowfish>(key, 5..=56, "5 to 56"),
        EncrId::AES_CBC => match key.len() {
            16 => cbc_mode::<Aes128>(key, AES_LENS),
            24 => cbc_mode::<Aes192>(key, AES_LENS),
            32 => cbc_mode::<Aes256>(key, AES_LENS),
            got => Err(bad_len(AES_LENS, got)),
        },
        EncrId::AES_CTR => aes_ctr(key),
        EncrId::CAMELLIA_CBC => match key.len() {
            16 => cbc_mode::<Camellia128>(key, AES_LENS),
            24 => cbc_mode::<Camellia192>(key, AES_LENS),
            32 => cbc_mode::<Camellia256>(key, AES_LENS),
            got => Err(bad_len(AES_LENS, got)),
        },
        EncrId::TWOFISH_CBC => match Twofish::new(key) {
            Some(tf) => Ok(Box::new(Cbc::new(TwofishBlock(tf)))),
            None => Err(bad_len(AES_LENS, key.len())),
        },
        _ => return None,
    })
}

const AES_LENS: &str = "16, 24 or 32";

fn bad_len(expected: &'static str, got: usize) -> CryptoError {
    CryptoError::BadKeyLength { expected, got }
}

/// RFC 2405 §5 / RFC 2451 §2.3: weak DES keys, and 3DES keys whose thirds
/// are not distinct (they degenerate to single or two-key DES), are refused,
/// as aws-lc refuses them, so that both backends accept the same keys.
fn des_key_check(key: &[u8], len: usize, expected: &'static str) -> Result<(), CryptoError> {
    if key.len() != len {
        return Err(bad_len(expected, key.len()));
    }
    des::weak_key_test(key).map_err(|_| CryptoError::WeakKey)
}

fn null(key: &[u8]) -> Result<Box<dyn Cipher>, CryptoError> {
    if !key.is_empty() {
        return Err(bad_len("0", key.len()));
    }
    Ok(Box::new(Null))
}

fn cbc_mode<C>(key: &[u8], expected: &'static str) -> Result<Box<dyn Cipher>, CryptoError>
where
    C: BlockCipherEncrypt + BlockCipherDecrypt + KeyInit + Send + Sync + 'static,
{
    let cipher = C::new_from_slice(key).map_err(|_| bad_len(expected, key.len()))?;
    Ok(Box::new(Cbc::new(Rc(cipher))))
}

fn cbc_var<C>(
    key: &[u8],
    lens: core::ops::RangeInclusive<usize>,
    expected: &'static str,
) -> Result<Box<dyn Cipher>, CryptoError>
where
    C: BlockCipherEncrypt + BlockCipherDecrypt + KeyInit + Send + Sync + 'static,
{
    if !lens.contains(&key.len()) {
        return Err(bad_len(expected, key.len()));
    }
    cbc_mode::<C>(key, expected)
}

fn aes_ctr(key: &[u8]) -> Result<Box<dyn Cipher>, CryptoError> {
    const EXPECTED: &str = "20, 28 or 36";
    let Some(split) = key.len().checked_sub(CTR_NONCE_LEN) else {
        return Err(bad_len(EXPECTED, key.len()));
    };
    let (aes_key, nonce) = key.split_at(split);
    let nonce = [nonce[0], nonce[1], nonce[2], nonce[3]];
    Ok(match aes_key.len() {
        16 => Box::new(Ctr::new(
            Rc(Aes128::new_from_slice(aes_key).expect("16-byte key")),
            nonce,
        )),
        24 => Box::new(Ctr::new(
            Rc(Aes192::new_from_slice(aes_key).expect("24-byte key")),
            nonce,
        )),
        32 => Box::new(Ctr::new(
            Rc(Aes256::new_from_slice(aes_key).expect("32-byte key")),
            nonce,
        )),
        _ => return Err(bad_len(EXPECTED, key.len())),
    })
}

/// A block cipher as the modes below drive it. Slices passed in are a whole
/// number of blocks; IVs are one block.
pub(crate) trait BlockPrimitive: Send + Sync + 'static {
    /// Block length in bytes (8 or 16).
    const BLOCK: usize;
    /// ECB over whole blocks (the CTR keystream).
    fn encrypt_blocks(&self, blocks: &mut [u8]);
    fn cbc_encrypt(&self, iv: &[u8], data: &mut [u8]);
    fn cbc_decrypt(&self, iv: &[u8], data: &mut [u8]);
}

/// A RustCrypto block cipher (its key schedule zeroizes itself on drop:
/// the crates' `zeroize` features are on). CBC goes through the `cbc` crate
/// over a *reference* to the cipher, so nothing is cloned per packet and the
/// cipher's backend (e.g. AES-NI, with its 8-block parallel decryption) is
/// selected once per packet rather than once per block.
struct Rc<C>(C);

impl<C> BlockPrimitive for Rc<C>
where
    C: BlockCipherEncrypt + BlockCipherDecrypt + Send + Sync + 'static,
{
    const BLOCK: usize = C::BlockSize::USIZE;

    #[inline]
    fn encrypt_blocks(&self, blocks: &mut [u8]) {
        let (blocks, rest) = Array::slice_as_chunks_mut(blocks);
        debug_assert!(rest.is_empty());
        self.0.encrypt_blocks(blocks);
    }

    #[inline]
    fn cbc_encrypt(&self, iv: &[u8], data: &mut [u8]) {
        let (blocks, rest) = Array::slice_as_chunks_mut(data);
        debug_assert!(rest.is_empty());
        cbc::Encryptor::<&C>::inner_iv_slice_init(&self.0, iv)
            .expect("CBC IV is one block")
            .encrypt_blocks(blocks);
    }

    #[inline]
    fn cbc_decrypt(&self, iv: &[u8], data: &mut [u8]) {
        let (blocks, rest) = Array::slice_as_chunks_mut(data);
        debug_assert!(rest.is_empty());
        cbc::Decryptor::<&C>::inner_iv_slice_init(&self.0, iv)
            .expect("CBC IV is one block")
            .decrypt_blocks(blocks);
    }
}

/// Our table-based Twofish (see `twofish.rs`), with CBC written out.
struct TwofishBlock(Box<Twofish>);

impl BlockPrimitive for TwofishBlock {
    const BLOCK: usize = super::twofish::BLOCK_LEN;

    fn encrypt_blocks(&self, blocks: &mut [u8]) {
        blocks
            .chunks_exact_mut(Self::BLOCK)
            .for_each(|b| self.0.encrypt_block(b));
    }

    fn cbc_encrypt(&self, iv: &[u8], data: &mut [u8]) {
        let mut chain = [0u8; Self::BLOCK];
        chain.copy_from_slice(iv);
        for block in data.chunks_exact_mut(Self::BLOCK) {
            xor(block, &chain);
            self.0.encrypt_block(block);
            chain.copy_from_slice(block);
        }
    }

    fn cbc_decrypt(&self, iv: &[u8], data: &mut [u8]) {
        let mut prev = [0u8; Self::BLOCK];
        prev.copy_from_slice(iv);
        for block in data.chunks_exact_mut(Self::BLOCK) {
            let mut saved = [0u8; Self::BLOCK];
            saved.copy_from_slice(block);
            self.0.decrypt_block(block);
            xor(block, &prev);
            prev = saved;
        }
    }
}

/// ENCR_NULL (RFC 2410): no IV, no padding beyond ESP's 4-byte alignment.
struct Null;

impl Cipher for Null {
    fn iv_len(&self) -> usize {
        0
    }
    fn block_len(&self) -> usize {
        1
    }
    fn make_iv(&self, _seq: u64, _iv: &mut [u8]) {}
    fn encrypt(&self, _iv: &[u8], _data: &mut [u8]) {}
    fn decrypt(&self, _iv: &[u8], _data: &mut [u8]) -> Result<(), CryptoError> {
        Ok(())
    }
}

/// CBC mode with a full-block explicit IV (RFC 2405, 2451, 3602, 4312).
struct Cbc<C: BlockPrimitive> {
    cipher: C,
    ivgen: IvGen,
}

impl<C: BlockPrimitive> Cbc<C> {
    fn new(cipher: C) -> Self {
        Cbc {
            cipher,
            ivgen: IvGen::new(),
        }
    }
}

impl<C: BlockPrimitive> Cipher for Cbc<C> {
    fn iv_len(&self) -> usize {
        C::BLOCK
    }
    fn block_len(&self) -> usize {
        C::BLOCK
    }
    fn make_iv(&self, seq: u64, iv: &mut [u8]) {
        self.ivgen.fill(seq, iv);
    }

    /// # Panics
    /// If `data` is not whole blocks (the caller's contract): encrypting
    /// only part of it would send the rest in the clear.
    fn encrypt(&self, iv: &[u8], data: &mut [u8]) {
        let b = C::BLOCK;
        assert_eq!(data.len() % b, 0, "CBC plaintext is not whole blocks");
        assert_eq!(iv.len(), b, "CBC IV is not one block");
        self.cipher.cbc_encrypt(iv, data);
    }

    fn decrypt(&self, iv: &[u8], data: &mut [u8]) -> Result<(), CryptoError> {
        let b = C::BLOCK;
        if !data.len().is_multiple_of(b) || iv.len() != b {
            return Err(CryptoError::BadLength);
        }
        self.cipher.cbc_decrypt(iv, data);
        Ok(())
    }
}

/// AES-CTR as ESP uses it (RFC 3686 §4): counter block =
/// nonce (4, from the key material) ‖ IV (8, in the packet) ‖ counter (4,
/// big-endian, starting at 1 for each packet).
struct Ctr<C: BlockPrimitive> {
    cipher: C,
    nonce: [u8; CTR_NONCE_LEN],
}

impl<C: BlockPrimitive> Ctr<C> {
    fn new(cipher: C, nonce: [u8; CTR_NONCE_LEN]) -> Self {
        Ctr { cipher, nonce }
    }

    fn apply_keystream(&self, iv: &[u8], data: &mut [u8]) {
        const B: usize = 16;
        let mut counter = 1u32;
        let mut ks = [0u8; PAR_BLOCKS * B];
        for chunk in data.chunks_mut(PAR_BLOCKS * B) {
            let blocks = chunk.len().div_ceil(B);
            for block in ks[..blocks * B].chunks_exact_mut(B) {
                block[..4].copy_from_slice(&self.nonce);
                block[4..12].copy_from_slice(iv);
                block[12..].copy_from_slice(&counter.to_be_bytes());
                counter = counter.wrapping_add(1);
            }
            self.cipher.encrypt_blocks(&mut ks[..blocks * B]);
            xor(chunk, &ks[..chunk.len()]);
        }
        ks.zeroize();
    }
}

impl<C: BlockPrimitive> Cipher for Ctr<C> {
    fn iv_len(&self) -> usize {
        8
    }
    fn block_len(&self) -> usize {
        1
    }
    /// RFC 3686 §3: the IV must never repeat under a key; the sequence
    /// number never does (the SA is rekeyed before it would wrap).
    fn make_iv(&self, seq: u64, iv: &mut [u8]) {
        iv.copy_from_slice(&seq.to_be_bytes());
    }
    fn encrypt(&self, iv: &[u8], data: &mut [u8]) {
        self.apply_keystream(iv, data);
    }
    fn decrypt(&self, iv: &[u8], data: &mut [u8]) -> Result<(), CryptoError> {
        if iv.len() != 8 {
            return Err(CryptoError::BadLength);
        }
        self.apply_keystream(iv, data);
        Ok(())
    }
}

impl<C: BlockPrimitive> Drop for Ctr<C> {
    fn drop(&mut self) {
        self.nonce.zeroize();
    }
}

#[inline(always)]
fn xor(out: &mut [u8], other: &[u8]) {
    for (o, i) in out.iter_mut().zip(other) {
        *o ^= i;
    }
}
