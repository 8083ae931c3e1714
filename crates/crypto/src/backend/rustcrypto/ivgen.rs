//! Per-packet CBC IVs without I/O.
//!
//! RFC 3602 §3 requires CBC IVs that an attacker cannot predict (a
//! predictable IV enables the chosen-plaintext attack on CBC described by
//! Rogaway and exploited as BEAST). Reading the OS RNG for every packet
//! would be a syscall on the hot path, and a counter is predictable. Like
//! Linux's `seqiv`/`echainiv` IV generators we instead derive the IV from the
//! sequence number under a secret: at SA setup we draw one random 128-bit
//! key (the only randomness used, via `getrandom`) and set
//! `IV = AES-128_ivkey(0^64 || seq)`, truncated to the cipher's block length.
//! AES is a pseudorandom permutation, so without `ivkey` the IV of the next
//! packet is unpredictable even given every earlier IV; and because `seq`
//! never repeats under an SA, neither does the 16-byte IV.

use aes::cipher::{Array, BlockCipherEncrypt, KeyInit};
use aes::Aes128;
use zeroize::Zeroize;

/// Derives unpredictable per-packet IVs from sequence numbers.
/// The AES key schedule is zeroized on drop (`aes`'s `zeroize` feature).
pub(crate) struct IvGen {
    prf: Aes128,
}

impl IvGen {
    /// A generator with a fresh random key.
    ///
    /// # Panics
    /// If the operating system's random number generator fails: without it
    /// no secure CBC IV (nor any key) can be made, and carrying on with a
    /// predictable IV would silently weaken every packet.
    pub(crate) fn new() -> Self {
        let mut key = [0u8; 16];
        getrandom::fill(&mut key).expect("OS random number generator failed");
        let prf = Aes128::new(&key.into());
        key.zeroize();
        IvGen { prf }
    }

    /// Writes the IV for sequence number `seq` into `iv` (at most 16 bytes).
    #[inline]
    pub(crate) fn fill(&self, seq: u64, iv: &mut [u8]) {
        let mut block = Array::<u8, _>::default();
        block[8..].copy_from_slice(&seq.to_be_bytes());
        self.prf.encrypt_block(&mut block);
        iv.copy_from_slice(&block[..iv.len()]);
    }
}
