//! A multiply-rotate hasher (FxHash's) for the data path's small tables:
//! the SAD by SA identity and by endpoints, the SPD cache's slots. Fast per
//! packet, and without SipHash's flooding resistance, which none of them
//! needs: what a peer can choose only misses (the SAD holds what this side
//! installed) or evicts a slot (the SPD cache), it never grows a chain.

use std::hash::Hasher;

/// FxHash over 64-bit words.
#[derive(Default)]
pub(crate) struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }
    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}
