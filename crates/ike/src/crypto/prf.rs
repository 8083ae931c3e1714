//! prf+ (RFC 7296 §2.13) over any PRF of the [`Provider`].
//!
//! The PRFs themselves (HMAC-MD5/SHA1/SHA2, AES-XCBC-PRF-128,
//! AES-CMAC-PRF-128) are [`flowsec_crypto::Prf`]s that the Provider looks
//! up by transform id. prf+ stays here, in the protocol crate: it is
//! IKEv2's own construction (the T1 | T2 | … feedback, the one-octet
//! counter and the 255-block limit are §2.13's text, not a primitive's),
//! only IKE's key derivation uses it (§2.14, §2.17, §2.18), and it needs
//! nothing of a PRF beyond [`Prf::prf`], so every PRF a Provider returns
//! gets it without a backend being able to get it wrong.
//!
//! [`Provider`]: flowsec_crypto::Provider

use flowsec_crypto::Prf;
use zeroize::Zeroizing;

/// prf+ stops after 255 iterations: its counter is one octet (§2.13).
pub const PRF_PLUS_MAX_ITERATIONS: usize = 255;

/// prf+(`key`, `seed`) (§2.13): `T1 | T2 | ...` truncated to `len` bytes,
/// where `T1 = prf(K, S | 0x01)` and `Tn = prf(K, Tn-1 | S | n)`.
///
/// # Panics
/// If `len` exceeds `255 * prf.output_len()`: the counter would wrap. Key
/// lengths are bounded by the algorithms, so this is a caller bug
/// (`keys` checks before calling).
pub fn prf_plus(prf: &dyn Prf, key: &[u8], seed: &[u8], len: usize) -> Zeroizing<Vec<u8>> {
    let out_len = prf.output_len();
    assert!(
        len <= PRF_PLUS_MAX_ITERATIONS * out_len,
        "prf+ asked for {len} bytes, more than 255 * {out_len}"
    );
    let mut out = Zeroizing::new(Vec::with_capacity(len + out_len));
    let mut t = Zeroizing::new(Vec::new());
    let mut n: u8 = 1;
    while out.len() < len {
        t = prf.prf(key, &[&t, seed, &[n]]);
        out.extend_from_slice(&t);
        n = n.wrapping_add(1);
    }
    out.truncate(len);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use flowsec_crypto::{PrfId, Provider};

    fn h(s: &str) -> Vec<u8> {
        hex::decode(s.replace([' ', '\n'], "")).unwrap()
    }

    fn prf(id: PrfId) -> &'static dyn Prf {
        Provider::fastest().prf(id).unwrap()
    }

    /// prf+ against its definition, computed step by step with the PRF,
    /// and across the iteration boundaries.
    #[test]
    fn prf_plus_is_t1_t2_t3() {
        let p = prf(PrfId::HMAC_SHA1);
        let (k, s) = (b"key", b"seed");
        let t1 = p.prf(k, &[s, &[1]]);
        let t2 = p.prf(k, &[&t1, s, &[2]]);
        let t3 = p.prf(k, &[&t2, s, &[3]]);
        let want: Vec<u8> = [&t1[..], &t2[..], &t3[..]].concat();
        for len in [0, 1, 19, 20, 21, 40, 55, 60] {
            assert_eq!(&prf_plus(p, k, s, len)[..], &want[..len], "len {len}");
        }
        assert_eq!(prf_plus(p, k, s, 255 * 20).len(), 255 * 20);
    }

    /// prf+ with HMAC-SHA-256 against an independent Python computation:
    /// `python3 -c 'import hmac,hashlib; k=b"key"; s=b"seed"; t=b""; o=b""
    ///  for n in (1,2): t=hmac.new(k,t+s+bytes([n]),hashlib.sha256).digest(); o+=t
    ///  print(o[:40].hex())'`
    #[test]
    fn prf_plus_sha256_python() {
        let p = prf(PrfId::HMAC_SHA2_256);
        assert_eq!(
            &prf_plus(p, b"key", b"seed", 40)[..],
            &h(PRF_PLUS_SHA256_KEY_SEED_40)[..]
        );
    }

    const PRF_PLUS_SHA256_KEY_SEED_40: &str =
        "a2392e429a99b173341b368bb5ce320bfd483d89567c14ec187c2d77e3c0a208ba45d21d42611712";

    #[test]
    #[should_panic(expected = "prf+ asked for")]
    fn prf_plus_refuses_wrapping_counter() {
        let _ = prf_plus(prf(PrfId::AES128_CMAC), b"key", b"s", 255 * 16 + 1);
    }
}
