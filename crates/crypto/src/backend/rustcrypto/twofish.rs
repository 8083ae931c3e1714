//! Twofish (Schneier et al., "Twofish: A 128-Bit Block Cipher", 1998) with
//! the paper's "full keying" option (§4.3.5 / §7.3): the four key-dependent
//! S-boxes are folded together with the MDS matrix into four 256-entry
//! tables at key setup, so `g` is four lookups and three XORs per word.
//!
//! Why not the `twofish` crate: it keeps only the S-box key bytes and
//! recomputes `h` (two to four `q` lookups per byte plus an MDS multiply) on
//! every round of every block, which measured about 2 MB/s. Here the key
//! setup costs 256 `h` evaluations once per SA and each block costs 64 table
//! lookups, like every production Twofish (the reference C code, Linux's
//! `twofish_common`).
//!
//! Pure safe Rust; the tables are indexed by bytes, so no bounds can fail.
//! Table lookups indexed by secret data are not constant-time on CPUs with
//! caches; that is inherent to table-based Twofish (and to software Blowfish,
//! CAST5 and Camellia alike).

use zeroize::Zeroize;

/// Twofish block length in bytes.
pub(crate) const BLOCK_LEN: usize = 16;

/// An expanded Twofish key: 40 round subkeys and the key-dependent S-boxes
/// merged with the MDS matrix. About 4 KB; key material, zeroized on drop.
pub(crate) struct Twofish {
    /// K_0..K_39: input whitening (0..4), output whitening (4..8), rounds.
    k: [u32; 40],
    /// `sbox[j][x]` = MDS column `j` times `s_j(x)`, so that
    /// `g(X) = sbox[0][x0] ^ sbox[1][x1] ^ sbox[2][x2] ^ sbox[3][x3]`.
    sbox: [[u32; 256]; 4],
}

impl Twofish {
    /// Expands a 16-, 24- or 32-byte key; `None` for any other length.
    /// (The paper allows shorter keys padded with zeros; ESP does not use them.)
    pub(crate) fn new(key: &[u8]) -> Option<Box<Self>> {
        if !matches!(key.len(), 16 | 24 | 32) {
            return None;
        }
        let k = key.len() / 8;
        // Me = (M0, M2, ...), Mo = (M1, M3, ...) as little-endian byte quads;
        // S = (S_{k-1}, ..., S_0) with S_i = RS · m[8i..8i+8] (paper §4.3).
        let mut me = [[0u8; 4]; 4];
        let mut mo = [[0u8; 4]; 4];
        let mut s = [[0u8; 4]; 4];
        for i in 0..k {
            me[i].copy_from_slice(&key[8 * i..8 * i + 4]);
            mo[i].copy_from_slice(&key[8 * i + 4..8 * i + 8]);
            s[k - 1 - i] = rs_mul(&key[8 * i..8 * i + 8]);
        }

        let mut out = Box::new(Twofish {
            k: [0; 40],
            sbox: [[0; 256]; 4],
        });
        for i in 0..20u8 {
            let a = mds(h_bytes([2 * i; 4], &me[..k]));
            let b = mds(h_bytes([2 * i + 1; 4], &mo[..k])).rotate_left(8);
            out.k[2 * i as usize] = a.wrapping_add(b);
            out.k[2 * i as usize + 1] = a.wrapping_add(b.wrapping_mul(2)).rotate_left(9);
        }
        for x in 0..=255u8 {
            let y = h_bytes([x; 4], &s[..k]);
            for (j, table) in out.sbox.iter_mut().enumerate() {
                table[x as usize] = mds_column(j, y[j]);
            }
        }
        me.zeroize();
        mo.zeroize();
        s.zeroize();
        Some(out)
    }

    /// Encrypts one block in place.
    pub(crate) fn encrypt_block(&self, block: &mut [u8]) {
        let k = &self.k;
        let [mut a, mut b, mut c, mut d] = load(block);
        a ^= k[0];
        b ^= k[1];
        c ^= k[2];
        d ^= k[3];
        // Two rounds per iteration so that the halves never need swapping.
        for r in (8..40).step_by(4) {
            let t0 = self.g(a);
            let t1 = self.g(b.rotate_left(8));
            c = (c ^ t0.wrapping_add(t1).wrapping_add(k[r])).rotate_right(1);
            d = d.rotate_left(1) ^ t0.wrapping_add(t1.wrapping_mul(2)).wrapping_add(k[r + 1]);
            let t0 = self.g(c);
            let t1 = self.g(d.rotate_left(8));
            a = (a ^ t0.wrapping_add(t1).wrapping_add(k[r + 2])).rotate_right(1);
            b = b.rotate_left(1) ^ t0.wrapping_add(t1.wrapping_mul(2)).wrapping_add(k[r + 3]);
        }
        // "Undo the last swap", then output whitening.
        store(block, [c ^ k[4], d ^ k[5], a ^ k[6], b ^ k[7]]);
    }

    /// Decrypts one block in place.
    pub(crate) fn decrypt_block(&self, block: &mut [u8]) {
        let k = &self.k;
        let [c0, d0, a0, b0] = load(block);
        let (mut a, mut b, mut c, mut d) = (a0 ^ k[6], b0 ^ k[7], c0 ^ k[4], d0 ^ k[5]);
        for r in (8..40).step_by(4).rev() {
            let t0 = self.g(c);
            let t1 = self.g(d.rotate_left(8));
            a = a.rotate_left(1) ^ t0.wrapping_add(t1).wrapping_add(k[r + 2]);
            b = (b ^ t0.wrapping_add(t1.wrapping_mul(2)).wrapping_add(k[r + 3])).rotate_right(1);
            let t0 = self.g(a);
            let t1 = self.g(b.rotate_left(8));
            c = c.rotate_left(1) ^ t0.wrapping_add(t1).wrapping_add(k[r]);
            d = (d ^ t0.wrapping_add(t1.wrapping_mul(2)).wrapping_add(k[r + 1])).rotate_right(1);
        }
        store(block, [a ^ k[0], b ^ k[1], c ^ k[2], d ^ k[3]]);
    }

    #[inline(always)]
    fn g(&self, x: u32) -> u32 {
        let [x0, x1, x2, x3] = x.to_le_bytes();
        self.sbox[0][x0 as usize]
            ^ self.sbox[1][x1 as usize]
            ^ self.sbox[2][x2 as usize]
            ^ self.sbox[3][x3 as usize]
    }
}

impl Drop for Twofish {
    fn drop(&mut self) {
        self.k.zeroize();
        for table in &mut self.sbox {
            table.zeroize();
        }
    }
}

#[inline(always)]
fn load(block: &[u8]) -> [u32; 4] {
    let mut w = [0u32; 4];
    for (w, bytes) in w.iter_mut().zip(block[..BLOCK_LEN].chunks_exact(4)) {
        *w = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    }
    w
}

#[inline(always)]
fn store(block: &mut [u8], w: [u32; 4]) {
    for (bytes, w) in block[..BLOCK_LEN].chunks_exact_mut(4).zip(w) {
        bytes.copy_from_slice(&w.to_le_bytes());
    }
}

/// The byte part of `h` (paper §4.3.2, figure 2): the `q0`/`q1` chain with
/// the key quads `l` XORed in, before the MDS multiply. `l.len()` is k.
fn h_bytes(x: [u8; 4], l: &[[u8; 4]]) -> [u8; 4] {
    let q0 = |b: u8| Q0[b as usize];
    let q1 = |b: u8| Q1[b as usize];
    let mut y = x;
    if l.len() == 4 {
        y = [
            q1(y[0]) ^ l[3][0],
            q0(y[1]) ^ l[3][1],
            q0(y[2]) ^ l[3][2],
            q1(y[3]) ^ l[3][3],
        ];
    }
    if l.len() >= 3 {
        y = [
            q1(y[0]) ^ l[2][0],
            q1(y[1]) ^ l[2][1],
            q0(y[2]) ^ l[2][2],
            q0(y[3]) ^ l[2][3],
        ];
    }
    [
        q1(q0(q0(y[0]) ^ l[1][0]) ^ l[0][0]),
        q0(q0(q1(y[1]) ^ l[1][1]) ^ l[0][1]),
        q1(q1(q0(y[2]) ^ l[1][2]) ^ l[0][2]),
        q0(q1(q1(y[3]) ^ l[1][3]) ^ l[0][3]),
    ]
}

/// The MDS matrix (paper §4.2), over GF(2^8) mod x^8+x^6+x^5+x^3+1.
const MDS: [[u8; 4]; 4] = [
    [0x01, 0xEF, 0x5B, 0x5B],
    [0x5B, 0xEF, 0xEF, 0x01],
    [0xEF, 0x5B, 0x01, 0xEF],
    [0xEF, 0x01, 0xEF, 0x5B],
];
const MDS_POLY: u16 = 0x169;

/// The RS matrix (paper §4.3), over GF(2^8) mod x^8+x^6+x^3+x^2+1.
const RS: [[u8; 8]; 4] = [
    [0x01, 0xA4, 0x55, 0x87, 0x5A, 0x58, 0xDB, 0x9E],
    [0xA4, 0x56, 0x82, 0xF3, 0x1E, 0xC6, 0x68, 0xE5],
    [0x02, 0xA1, 0xFC, 0xC1, 0x47, 0xAE, 0x3D, 0x19],
    [0xA4, 0x55, 0x87, 0x5A, 0x58, 0xDB, 0x9E, 0x03],
];
const RS_POLY: u16 = 0x14D;

fn gf_mul(a: u8, b: u8, poly: u16) -> u8 {
    let (mut a, mut b, mut p) = (a as u16, b, 0u16);
    while b != 0 {
        if b & 1 != 0 {
            p ^= a;
        }
        a <<= 1;
        if a & 0x100 != 0 {
            a ^= poly;
        }
        b >>= 1;
    }
    p as u8
}

/// MDS column `j` times `y`, as a little-endian word.
fn mds_column(j: usize, y: u8) -> u32 {
    u32::from_le_bytes([
        gf_mul(MDS[0][j], y, MDS_POLY),
        gf_mul(MDS[1][j], y, MDS_POLY),
        gf_mul(MDS[2][j], y, MDS_POLY),
        gf_mul(MDS[3][j], y, MDS_POLY),
    ])
}

fn mds(y: [u8; 4]) -> u32 {
    (0..4).fold(0, |z, j| z ^ mds_column(j, y[j]))
}

fn rs_mul(m: &[u8]) -> [u8; 4] {
    let mut s = [0u8; 4];
    for (s, row) in s.iter_mut().zip(RS) {
        *s = row
            .iter()
            .zip(m)
            .fold(0, |acc, (&r, &m)| acc ^ gf_mul(r, m, RS_POLY));
    }
    s
}

/// The fixed permutations q0 and q1 (paper §4.3.5), each built from four
/// 4-bit permutations t0..t3.
const Q0: [u8; 256] = make_q(&[
    [
        0x8, 0x1, 0x7, 0xD, 0x6, 0xF, 0x3, 0x2, 0x0, 0xB, 0x5, 0x9, 0xE, 0xC, 0xA, 0x4,
    ],
    [
        0xE, 0xC, 0xB, 0x8, 0x1, 0x2, 0x3, 0x5, 0xF, 0x4, 0xA, 0x6, 0x7, 0x0, 0x9, 0xD,
    ],
    [
        0xB, 0xA, 0x5, 0xE, 0x6, 0xD, 0x9, 0x0, 0xC, 0x8, 0xF, 0x3, 0x2, 0x4, 0x7, 0x1,
    ],
    [
        0xD, 0x7, 0xF, 0x4, 0x1, 0x2, 0x6, 0xE, 0x9, 0xB, 0x3, 0x0, 0x8, 0x5, 0xC, 0xA,
    ],
]);
const Q1: [u8; 256] = make_q(&[
    [
        0x2, 0x8, 0xB, 0xD, 0xF, 0x7, 0x6, 0xE, 0x3, 0x1, 0x9, 0x4, 0x0, 0xA, 0xC, 0x5,
    ],
    [
        0x1, 0xE, 0x2, 0xB, 0x4, 0xC, 0x3, 0x7, 0x6, 0xD, 0xA, 0x5, 0xF, 0x9, 0x0, 0x8,
    ],
    [
        0x4, 0xC, 0x7, 0x5, 0x1, 0x6, 0x9, 0xA, 0x0, 0xE, 0xD, 0x8, 0x2, 0xB, 0x3, 0xF,
    ],
    [
        0xB, 0x9, 0x5, 0x1, 0xC, 0x3, 0xD, 0xE, 0x6, 0x4, 0x7, 0xF, 0x2, 0x0, 0x8, 0xA,
    ],
]);

const fn make_q(t: &[[u8; 16]; 4]) -> [u8; 256] {
    const fn ror4(x: u8) -> u8 {
        ((x >> 1) | (x << 3)) & 0xF
    }
    let mut q = [0u8; 256];
    let mut x = 0;
    while x < 256 {
        let (a0, b0) = ((x >> 4) as u8, (x & 0xF) as u8);
        let a1 = a0 ^ b0;
        let b1 = a0 ^ ror4(b0) ^ ((a0 << 3) & 0xF);
        let (a2, b2) = (t[0][a1 as usize], t[1][b1 as usize]);
        let a3 = a2 ^ b2;
        let b3 = a2 ^ ror4(b2) ^ ((a2 << 3) & 0xF);
        let (a4, b4) = (t[2][a3 as usize], t[3][b3 as usize]);
        q[x] = (b4 << 4) | a4;
        x += 1;
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex16(s: &str) -> [u8; 16] {
        let mut out = [0u8; 16];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
        }
        out
    }

    /// The paper's iterated known-answer test (`ecb_tbl.txt`): start with an
    /// all-zero key and plaintext; each step's key is the previous plaintext
    /// followed by the head of the previous key, and its plaintext the
    /// previous ciphertext. Entries I = 1..5 and I = 48.
    fn iterated(key_len: usize, expected: [(usize, &str); 6]) {
        let mut key = [0u8; 32];
        let mut plain = [0u8; 16];
        for i in 1..=48 {
            let tf = Twofish::new(&key[..key_len]).unwrap();
            let mut block = plain;
            tf.encrypt_block(&mut block);
            if let Some((_, ct)) = expected.iter().find(|(n, _)| *n == i) {
                assert_eq!(block, hex16(ct), "key {} bits, I={i}", key_len * 8);
            }
            let mut back = block;
            tf.decrypt_block(&mut back);
            assert_eq!(back, plain);
            key.copy_within(0..key_len - 16, 16);
            key[..16].copy_from_slice(&plain);
            plain = block;
        }
    }

    #[test]
    fn ecb_tbl_128() {
        iterated(
            16,
            [
                (1, "9F589F5CF6122C32B6BFEC2F2AE8C35A"),
                (2, "D491DB16E7B1C39E86CB086B789F5419"),
                (3, "019F9809DE1711858FAAC3A3BA20FBC3"),
                (4, "6363977DE839486297E661C6C9D668EB"),
                (5, "816D5BD0FAE35342BF2A7412C246F752"),
                (48, "6B459286F3FFD28D49F15B1581B08E42"),
            ],
        );
    }

    #[test]
    fn ecb_tbl_192() {
        iterated(
            24,
            [
                (1, "EFA71F788965BD4453F860178FC19101"),
                (2, "88B2B2706B105E36B446BB6D731A1E88"),
                (3, "39DA69D6BA4997D585B6DC073CA341B2"),
                (4, "182B02D81497EA45F9DAACDC29193A65"),
                (5, "7AFF7A70CA2FF28AC31DD8AE5DAAAB63"),
                (48, "F0AB73301125FA21EF70BE5385FB76B6"),
            ],
        );
    }

    #[test]
    fn ecb_tbl_256() {
        iterated(
            32,
            [
                (1, "57FF739D4DC92C1BD7FC01700CC8216F"),
                (2, "D43BB7556EA32E46F2A282B7D45B4E0D"),
                (3, "90AFE91BB288544F2C32DC239B2635E6"),
                (4, "6CB4561C40BF0A9705931CB6D408E7FA"),
                (5, "3059D6D61753B958D92F4781C8640E58"),
                (48, "431058F4DBC7F734DA4F02F04CC4F459"),
            ],
        );
    }

    /// The paper's `ecb_ival.txt` vectors, with their intermediate subkeys.
    #[test]
    fn ecb_ival() {
        let key: Vec<u8> = (0..32)
            .map(|i| {
                let s = "0123456789ABCDEFFEDCBA987654321000112233445566778899AABBCCDDEEFF";
                u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()
            })
            .collect();
        let cases: [(&[u8], &str, [u32; 2]); 3] = [
            (
                &[0u8; 16],
                "9F589F5CF6122C32B6BFEC2F2AE8C35A",
                [0x52C54DDE, 0x696EA672],
            ),
            (
                &key[..24],
                "CFD1D2E5A9BE9CDF501F13B892BD2248",
                [0x38394A24, 0x6A1AD61E],
            ),
            (
                &key[..32],
                "37527BE0052334B89F0CFCCAE87CFA20",
                [0x5EC769BF, 0xF0D54DCD],
            ),
        ];
        for (key, ct, [k0, k39]) in cases {
            let tf = Twofish::new(key).unwrap();
            assert_eq!((tf.k[0], tf.k[39]), (k0, k39));
            let mut block = [0u8; 16];
            tf.encrypt_block(&mut block);
            assert_eq!(block, hex16(ct), "key {} bits", key.len() * 8);
            tf.decrypt_block(&mut block);
            assert_eq!(block, [0u8; 16]);
        }
    }

    #[test]
    fn rejects_other_key_lengths() {
        assert!(Twofish::new(&[0u8; 15]).is_none());
        assert!(Twofish::new(&[0u8; 20]).is_none());
        assert!(Twofish::new(&[0u8; 33]).is_none());
    }
}
