//! Randomness passed in by the caller: IKE's nonces, SPIs and IVs, and the
//! private values of [`KeyExchangeGroup::start`](crate::KeyExchangeGroup::start),
//! come from a [`Random`] value, never from a generator the crypto code
//! picks itself, so that two IKE peers in one test process can be run with
//! fixed seeds and replayed exactly. (ESP's per-packet IVs are derived from
//! the sequence number instead: [`crate::Cipher::make_iv`].)

/// A source of random bytes.
pub trait Random: Send {
    /// Fill `buf` with random bytes.
    fn fill(&mut self, buf: &mut [u8]);

    /// A random `u32`.
    fn next_u32(&mut self) -> u32 {
        let mut b = [0; 4];
        self.fill(&mut b);
        u32::from_be_bytes(b)
    }

    /// A random `u64`.
    fn next_u64(&mut self) -> u64 {
        let mut b = [0; 8];
        self.fill(&mut b);
        u64::from_be_bytes(b)
    }
}

/// The operating system's generator (`getrandom(2)`).
#[derive(Debug, Default, Clone, Copy)]
pub struct OsRandom;

impl Random for OsRandom {
    fn fill(&mut self, buf: &mut [u8]) {
        // Without the kernel's generator no key can be made safely: there
        // is nothing sensible to continue with.
        getrandom::fill(buf).expect("getrandom(2) failed");
    }
}

/// A deterministic generator for tests: xoshiro256** seeded by SplitMix64.
/// Not for keys that protect anything.
#[derive(Debug, Clone)]
pub struct SeededRandom {
    s: [u64; 4],
}

impl SeededRandom {
    /// The generator for `seed`; the same seed gives the same bytes.
    pub fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut split = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        SeededRandom {
            s: [split(), split(), split(), split()],
        }
    }

    fn step(&mut self) -> u64 {
        let out = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        out
    }
}

impl Random for SeededRandom {
    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.step().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_is_repeatable_and_seeds_differ() {
        let (mut a, mut b, mut c) = (
            SeededRandom::new(1),
            SeededRandom::new(1),
            SeededRandom::new(2),
        );
        let (mut x, mut y, mut z) = ([0u8; 37], [0u8; 37], [0u8; 37]);
        a.fill(&mut x);
        b.fill(&mut y);
        c.fill(&mut z);
        assert_eq!(x, y);
        assert_ne!(x, z);
        assert_ne!(x, [0; 37]);
    }

    #[test]
    fn os_random_fills() {
        let mut x = [0u8; 32];
        OsRandom.fill(&mut x);
        assert_ne!(x, [0; 32]);
    }
}
