//! The IKEv2 pseudorandom functions (RFC 7296 §3.3.2, transform type 2) and
//! prf+ (§2.13).
//!
//! | id | RFC | output | key |
//! |---|---|---|---|
//! | HMAC_MD5 | 2104 | 16 | any length |
//! | HMAC_SHA1 | 2104 | 20 | any length |
//! | HMAC_SHA2_256/384/512 | 4868 | 32/48/64 | any length |
//! | AES128_XCBC | 4434 | 16 | any length, normalised to 16 (§2) |
//! | AES128_CMAC | 4615 | 16 | any length, normalised to 16 (§3) |
//!
//! These run a handful of times per IKE SA, so a [`Prf`] keeps only its key
//! (zeroized on drop) and keys a fresh MAC state for each computation.

use aes::cipher::{Array, BlockCipherEncrypt, KeyInit};
use aes::Aes128;
use cmac::Cmac;
use flowsec_crypto::CryptoError;
use flowsec_wire::iana::PrfId;
use hmac::digest::Mac;
use hmac::{EagerHash, Hmac};
use md5::Md5;
use sha1::Sha1;
use sha2::{Sha256, Sha384, Sha512};
use zeroize::{Zeroize, Zeroizing};

/// AES block and key size (bytes) for the AES-based PRFs.
const AES_BLOCK: usize = 16;

/// prf+ stops after 255 iterations: its counter is one octet (§2.13).
const PRF_PLUS_MAX_ITERATIONS: usize = 255;

/// A keyed IKEv2 PRF. The key is held zeroized; [`Debug`](core::fmt::Debug)
/// shows only the algorithm.
pub struct Prf {
    id: PrfId,
    /// For HMAC the key as given (HMAC itself hashes keys longer than a
    /// block); for XCBC and CMAC the 16-byte key after RFC 4434 §2 / RFC 4615
    /// §3 normalisation.
    key: Zeroizing<Vec<u8>>,
}

/// Whether [`Prf::new`] implements `id`.
pub fn prf_supported(id: PrfId) -> bool {
    output_len(id).is_some()
}

/// The output length of `id` in bytes, which is also its preferred key
/// length (§2.14: SK_d, SK_pi and SK_pr are this long).
pub fn output_len(id: PrfId) -> Option<usize> {
    Some(match id {
        PrfId::HMAC_MD5 => 16,
        PrfId::HMAC_SHA1 => 20,
        PrfId::HMAC_SHA2_256 => 32,
        PrfId::HMAC_SHA2_384 => 48,
        PrfId::HMAC_SHA2_512 => 64,
        PrfId::AES128_XCBC | PrfId::AES128_CMAC => AES_BLOCK,
        _ => return None,
    })
}

impl Prf {
    /// The PRF `id` keyed with `key` (any length, for every PRF here).
    ///
    /// # Errors
    /// `CryptoError::BadCombination` when `id` is not implemented
    /// ([`prf_supported`] is false): `CryptoError` has no PRF variant.
    pub fn new(id: PrfId, key: &[u8]) -> Result<Prf, CryptoError> {
        let key = match id {
            PrfId::AES128_XCBC => xcbc_prf_key(key),
            PrfId::AES128_CMAC => cmac_prf_key(key),
            _ if prf_supported(id) => Zeroizing::new(key.to_vec()),
            _ => return Err(CryptoError::BadCombination),
        };
        Ok(Prf { id, key })
    }

    /// The algorithm.
    pub fn id(&self) -> PrfId {
        self.id
    }

    /// Bytes of output of one [`compute`](Self::compute).
    pub fn output_len(&self) -> usize {
        // Invariant: `new` only builds a Prf for ids that output_len knows.
        output_len(self.id).unwrap_or(0)
    }

    /// prf(key, the concatenation of `parts`).
    pub fn compute(&self, parts: &[&[u8]]) -> Zeroizing<Vec<u8>> {
        match self.id {
            PrfId::HMAC_MD5 => hmac::<Md5>(&self.key, parts),
            PrfId::HMAC_SHA1 => hmac::<Sha1>(&self.key, parts),
            PrfId::HMAC_SHA2_256 => hmac::<Sha256>(&self.key, parts),
            PrfId::HMAC_SHA2_384 => hmac::<Sha384>(&self.key, parts),
            PrfId::HMAC_SHA2_512 => hmac::<Sha512>(&self.key, parts),
            PrfId::AES128_XCBC => {
                let mut out = xcbc_mac(aes_key(&self.key), parts);
                let v = Zeroizing::new(out.to_vec());
                out.zeroize();
                v
            }
            // Invariant: `new` admits no other ids, so this is AES128_CMAC.
            _ => cmac(aes_key(&self.key), parts),
        }
    }

    /// prf+ (§2.13): `T1 | T2 | ...` truncated to `len` bytes, where
    /// `T1 = prf(K, S | 0x01)` and `Tn = prf(K, Tn-1 | S | n)`.
    ///
    /// # Panics
    /// If `len` exceeds `255 * output_len()`: the counter would wrap. Key
    /// lengths are bounded by the algorithms, so this is a caller bug
    /// (`keys` checks before calling).
    pub fn plus(&self, seed: &[u8], len: usize) -> Zeroizing<Vec<u8>> {
        let out_len = self.output_len();
        assert!(
            len <= PRF_PLUS_MAX_ITERATIONS * out_len,
            "prf+ asked for {len} bytes, more than 255 * {out_len}"
        );
        let mut out = Zeroizing::new(Vec::with_capacity(len + out_len));
        let mut t = Zeroizing::new(Vec::new());
        let mut n: u8 = 1;
        while out.len() < len {
            t = self.compute(&[&t, seed, &[n]]);
            out.extend_from_slice(&t);
            n = n.wrapping_add(1);
        }
        out.truncate(len);
        out
    }
}

impl core::fmt::Debug for Prf {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Prf")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// `Zeroizing<Vec>` of a 16-byte normalised key as an array reference.
fn aes_key(key: &[u8]) -> &[u8; AES_BLOCK] {
    // Invariant: xcbc_prf_key / cmac_prf_key always produce 16 bytes.
    key.try_into().expect("AES PRF key normalised to 16 bytes")
}

fn hmac<D>(key: &[u8], parts: &[&[u8]]) -> Zeroizing<Vec<u8>>
where
    D: EagerHash,
    Hmac<D>: KeyInit + Mac,
{
    let mut mac = <Hmac<D> as KeyInit>::new_from_slice(key).expect("HMAC takes keys of any length");
    for p in parts {
        mac.update(p);
    }
    let mut tag = mac.finalize().into_bytes();
    let out = Zeroizing::new(tag.to_vec());
    tag.as_mut_slice().zeroize();
    out
}

fn cmac(key: &[u8; AES_BLOCK], parts: &[&[u8]]) -> Zeroizing<Vec<u8>> {
    let mut k = Array::from(*key);
    let mut mac = <Cmac<Aes128> as KeyInit>::new(&k);
    k.as_mut_slice().zeroize();
    for p in parts {
        mac.update(p);
    }
    let mut tag = mac.finalize().into_bytes();
    let out = Zeroizing::new(tag.to_vec());
    tag.as_mut_slice().zeroize();
    out
}

/// RFC 4434 §2: a 16-byte key is used as is, a shorter one is padded with
/// zeros on the right, a longer one becomes AES-XCBC-MAC(0^128, key).
fn xcbc_prf_key(key: &[u8]) -> Zeroizing<Vec<u8>> {
    let mut k = Zeroizing::new(vec![0u8; AES_BLOCK]);
    if key.len() <= AES_BLOCK {
        k[..key.len()].copy_from_slice(key);
    } else {
        let mut mac = xcbc_mac(&[0; AES_BLOCK], &[key]);
        k.copy_from_slice(&mac);
        mac.zeroize();
    }
    k
}

/// RFC 4615 §3: a 16-byte key is used as is, any other becomes
/// AES-CMAC(0^128, key).
fn cmac_prf_key(key: &[u8]) -> Zeroizing<Vec<u8>> {
    if key.len() == AES_BLOCK {
        Zeroizing::new(key.to_vec())
    } else {
        cmac(&[0; AES_BLOCK], &[key])
    }
}

/// AES-XCBC-MAC (RFC 3566 §4) with its full 128-bit output, as
/// AES-XCBC-PRF-128 (RFC 4434) uses it:
///
/// ```text
/// K1 = AES_K(0x01^16), K2 = AES_K(0x02^16), K3 = AES_K(0x03^16)
/// E[0] = 0; E[i] = AES_K1(M[i] ^ E[i-1]) for all but the last block;
/// last block complete:   E[n] = AES_K1(M[n] ^ E[n-1] ^ K2)
/// last block incomplete: E[n] = AES_K1(pad(M[n]) ^ E[n-1] ^ K3), pad = 0x80 0x00..
/// ```
/// An empty message is one incomplete block. (flowsec-crypto has its own
/// XCBC for ESP's 96-bit ICV; it is private to that crate.)
fn xcbc_mac(key: &[u8; AES_BLOCK], parts: &[&[u8]]) -> [u8; AES_BLOCK] {
    let k = Aes128::new(&Array::from(*key));
    let derive = |c: u8| {
        let mut block = Array::from([c; AES_BLOCK]);
        k.encrypt_block(&mut block);
        let out: [u8; AES_BLOCK] = block.into();
        block.as_mut_slice().zeroize();
        out
    };
    let mut k1 = derive(0x01);
    let mut k2 = derive(0x02);
    let mut k3 = derive(0x03);
    let aes_k1 = Aes128::new(&Array::from(k1));
    k1.zeroize();

    let mut e = Array::from([0u8; AES_BLOCK]);
    // The current block is processed only once more input shows it is not
    // the last one.
    let mut pending = [0u8; AES_BLOCK];
    let mut pending_len = 0;
    for mut part in parts.iter().copied() {
        while !part.is_empty() {
            if pending_len == AES_BLOCK {
                xor(&mut e, &pending);
                aes_k1.encrypt_block(&mut e);
                pending_len = 0;
            }
            let take = (AES_BLOCK - pending_len).min(part.len());
            pending[pending_len..pending_len + take].copy_from_slice(&part[..take]);
            pending_len += take;
            part = &part[take..];
        }
    }
    if pending_len == AES_BLOCK {
        xor(&mut e, &pending);
        xor(&mut e, &k2);
    } else {
        pending[pending_len] = 0x80;
        pending[pending_len + 1..].fill(0);
        xor(&mut e, &pending);
        xor(&mut e, &k3);
    }
    aes_k1.encrypt_block(&mut e);
    let out: [u8; AES_BLOCK] = e.into();
    e.as_mut_slice().zeroize();
    pending.zeroize();
    k2.zeroize();
    k3.zeroize();
    out
}

fn xor(out: &mut [u8], other: &[u8]) {
    for (o, i) in out.iter_mut().zip(other) {
        *o ^= i;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(s: &str) -> Vec<u8> {
        hex::decode(s.replace([' ', '\n'], "")).unwrap()
    }

    fn prf(id: PrfId, key: &[u8], data: &[u8]) -> Vec<u8> {
        Prf::new(id, key).unwrap().compute(&[data]).to_vec()
    }

    /// RFC 4434 §5 (the 16-byte-key cases are RFC 3566 §4.6's, untruncated).
    #[test]
    fn aes_xcbc_prf_128_rfc4434() {
        let key16 = h("000102030405060708090a0b0c0d0e0f");
        let msg20 = h("000102030405060708090a0b0c0d0e0f10111213");
        let x = PrfId::AES128_XCBC;
        assert_eq!(
            prf(x, &key16, &msg20),
            h("47f51b4564966215b8985c63055ed308")
        );
        assert_eq!(prf(x, &key16, b""), h("75f0251d528ac01c4573dfd584d79f29"));
        assert_eq!(
            prf(x, &key16, &h("000102")),
            h("5b376580ae2f19afe7219ceef172756f")
        );
        assert_eq!(
            prf(x, &key16, &key16),
            h("d2a246fa349b68a79998a4394ff7a263")
        );
        let msg32 = h("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
        assert_eq!(
            prf(x, &key16, &msg32),
            h("f54f0ec8d2b9f3d36807734bd5283fd4")
        );
        // 10-byte key: padded with zeros.
        assert_eq!(
            prf(x, &h("00010203040506070809"), &msg20),
            h("0fa087af7d866e7653434e602fdde835")
        );
        // 18-byte key: reduced by XCBC under the zero key.
        assert_eq!(
            prf(x, &h("000102030405060708090a0b0c0d0e0fedcb"), &msg20),
            h("8cd3c93ae598a9803006ffb67c40e9e4")
        );
    }

    /// Splitting the input differently gives the same MAC (the pending-block
    /// logic across parts).
    #[test]
    fn xcbc_parts_are_concatenated() {
        let key = [7u8; 16];
        let msg: Vec<u8> = (0..50).collect();
        let whole = xcbc_mac(&key, &[&msg]);
        for cut in [0, 1, 15, 16, 17, 32, 49, 50] {
            assert_eq!(
                xcbc_mac(&key, &[&msg[..cut], &msg[cut..]]),
                whole,
                "cut {cut}"
            );
        }
        assert_eq!(xcbc_mac(&key, &[&msg[..16], &[], &msg[16..]]), whole);
    }

    /// RFC 4615 §4.
    #[test]
    fn aes_cmac_prf_128_rfc4615() {
        let msg20 = h("000102030405060708090a0b0c0d0e0f10111213");
        let c = PrfId::AES128_CMAC;
        assert_eq!(
            prf(c, &h("000102030405060708090a0b0c0d0e0fedcb"), &msg20),
            h("84a348a4a45d235babfffc0d2b4da09a")
        );
        assert_eq!(
            prf(c, &h("000102030405060708090a0b0c0d0e0f"), &msg20),
            h("980ae87b5f4c9c5214f5b6a8455e4c2d")
        );
        assert_eq!(
            prf(c, &h("00010203040506070809"), &msg20),
            h("290d9e112edb09ee141fcf64c0b72f3d")
        );
        // RFC 4493 §4 example 2 (16-byte key, 16-byte message).
        assert_eq!(
            prf(
                c,
                &h("2b7e151628aed2a6abf7158809cf4f3c"),
                &h("6bc1bee22e409f96e93d7e117393172a")
            ),
            h("070a16b46b4d4144f79bdd9dd04a287c")
        );
    }

    /// RFC 4231 test cases 1, 2 and 6 (a 131-byte key, longer than a block).
    #[test]
    fn hmac_sha2_rfc4231() {
        let key1 = [0x0b; 20];
        let data1 = b"Hi There";
        assert_eq!(
            prf(PrfId::HMAC_SHA2_256, &key1, data1),
            h("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        );
        assert_eq!(
            prf(PrfId::HMAC_SHA2_384, &key1, data1),
            h(
                "afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59c
               faea9ea9076ede7f4af152e8b2fa9cb6"
            )
        );
        assert_eq!(
            prf(PrfId::HMAC_SHA2_512, &key1, data1),
            h(
                "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cde
               daa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854"
            )
        );
        let data2 = b"what do ya want for nothing?";
        assert_eq!(
            prf(PrfId::HMAC_SHA2_256, b"Jefe", data2),
            h("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        );
        let key6 = [0xaa; 131];
        let data6 = b"Test Using Larger Than Block-Size Key - Hash Key First";
        assert_eq!(
            prf(PrfId::HMAC_SHA2_256, &key6, data6),
            h("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        );
        assert_eq!(
            prf(PrfId::HMAC_SHA2_512, &key6, data6),
            h(
                "80b24263c7c1a3ebb71493c1dd7be8b49b46d1f41b4aeec1121b013783f8f352
               6b56d037e05f2598bd0fd2215d6a1e5295e64f73f63f0aec8b915a985d786598"
            )
        );
    }

    /// RFC 2202 test case 2 for the two older HMACs.
    #[test]
    fn hmac_md5_sha1_rfc2202() {
        let data = b"what do ya want for nothing?";
        assert_eq!(
            prf(PrfId::HMAC_MD5, b"Jefe", data),
            h("750c783e6ab0b503eaa86e310a5db738")
        );
        assert_eq!(
            prf(PrfId::HMAC_SHA1, b"Jefe", data),
            h("effcdf6ae5eb2fa2d27416d5f184df9c259a7c79")
        );
    }

    /// prf+ against its definition, computed step by step with `compute`,
    /// and across the iteration boundaries.
    #[test]
    fn prf_plus_is_t1_t2_t3() {
        let p = Prf::new(PrfId::HMAC_SHA1, b"key").unwrap();
        let s = b"seed";
        let t1 = p.compute(&[s, &[1]]);
        let t2 = p.compute(&[&t1, s, &[2]]);
        let t3 = p.compute(&[&t2, s, &[3]]);
        let want: Vec<u8> = [&t1[..], &t2[..], &t3[..]].concat();
        for len in [0, 1, 19, 20, 21, 40, 55, 60] {
            assert_eq!(&p.plus(s, len)[..], &want[..len], "len {len}");
        }
        assert_eq!(p.plus(s, 255 * 20).len(), 255 * 20);
    }

    /// prf+ with HMAC-SHA-256 against an independent Python computation:
    /// `python3 -c 'import hmac,hashlib; k=b"key"; s=b"seed"; t=b""; o=b""
    ///  for n in (1,2): t=hmac.new(k,t+s+bytes([n]),hashlib.sha256).digest(); o+=t
    ///  print(o[:40].hex())'`
    #[test]
    fn prf_plus_sha256_python() {
        let p = Prf::new(PrfId::HMAC_SHA2_256, b"key").unwrap();
        assert_eq!(
            &p.plus(b"seed", 40)[..],
            &h(PRF_PLUS_SHA256_KEY_SEED_40)[..]
        );
    }

    const PRF_PLUS_SHA256_KEY_SEED_40: &str =
        "a2392e429a99b173341b368bb5ce320bfd483d89567c14ec187c2d77e3c0a208ba45d21d42611712";

    #[test]
    #[should_panic(expected = "prf+ asked for")]
    fn prf_plus_refuses_wrapping_counter() {
        let p = Prf::new(PrfId::AES128_CMAC, b"key").unwrap();
        let _ = p.plus(b"s", 255 * 16 + 1);
    }

    #[test]
    fn unsupported_and_debug() {
        assert!(!prf_supported(PrfId(3)));
        assert!(Prf::new(PrfId(3), b"k").is_err());
        let p = Prf::new(PrfId::HMAC_SHA2_256, b"secret-key-bytes").unwrap();
        assert_eq!(p.output_len(), 32);
        let d = format!("{p:?}");
        assert!(!d.contains("secret") && !d.contains("115"), "{d}");
    }
}
