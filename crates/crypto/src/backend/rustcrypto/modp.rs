//! The MODP key exchange groups (RFC 7296 §3.4, transform type 4): RFC 2409
//! §6 groups 1 and 2, RFC 3526 groups 5 and 14–18.
//!
//! | | |
//! |---|---|
//! | public value (KE data) | g^x mod p, left-padded to the prime's length (§3.4) |
//! | shared secret g^ir | g^xy mod p, left-padded likewise (§2.14) |
//!
//! Exponentiation is crypto-bigint's constant-time Montgomery ladder over a
//! fixed-width exponent whose top bit is always set, so its timing does not
//! depend on the private value. Private exponents and shared secrets are
//! zeroized when dropped. Peer values must be exactly the prime's length
//! and satisfy 1 < y < p-1 (RFC 6989 §2.1; with safe primes this excludes
//! the small subgroups).

use crypto_bigint::modular::{BoxedMontyForm, BoxedMontyParams};
use crypto_bigint::{BoxedUint, Odd};
use flowsec_wire::iana::DhGroup;
use zeroize::{Zeroize, Zeroizing};

use super::modp_primes::{P_1024, P_1536, P_2048, P_3072, P_4096, P_6144, P_768, P_8192};
use crate::random::Random;
use crate::traits::{KeyExchange, KeyExchangeGroup};
use crate::CryptoError;

/// MODP-768 (RFC 2409 §6.1).
pub(crate) static MODP_768: ModpGroup = ModpGroup::new(DhGroup::MODP_768, 768, P_768, 256);
/// MODP-1024 (RFC 2409 §6.2).
pub(crate) static MODP_1024: ModpGroup = ModpGroup::new(DhGroup::MODP_1024, 1024, P_1024, 256);
/// MODP-1536 (RFC 3526 §2).
pub(crate) static MODP_1536: ModpGroup = ModpGroup::new(DhGroup::MODP_1536, 1536, P_1536, 256);
/// MODP-2048 (RFC 3526 §3).
pub(crate) static MODP_2048: ModpGroup = ModpGroup::new(DhGroup::MODP_2048, 2048, P_2048, 320);
/// MODP-3072 (RFC 3526 §4).
pub(crate) static MODP_3072: ModpGroup = ModpGroup::new(DhGroup::MODP_3072, 3072, P_3072, 420);
/// MODP-4096 (RFC 3526 §5).
pub(crate) static MODP_4096: ModpGroup = ModpGroup::new(DhGroup::MODP_4096, 4096, P_4096, 480);
/// MODP-6144 (RFC 3526 §6).
pub(crate) static MODP_6144: ModpGroup = ModpGroup::new(DhGroup::MODP_6144, 6144, P_6144, 540);
/// MODP-8192 (RFC 3526 §7).
pub(crate) static MODP_8192: ModpGroup = ModpGroup::new(DhGroup::MODP_8192, 8192, P_8192, 620);

/// A MODP group: its prime (generator 2 for all of them) and the size of
/// the private exponents we draw.
pub(crate) struct ModpGroup {
    group: DhGroup,
    bits: usize,
    prime_hex: &'static str,
    /// Private exponent size in bits. RFC 3526 §8 gives a range per group
    /// (twice the estimated strength); we take the upper end, and at least
    /// 256 bits, which also covers the RFC 2409 groups (~80-bit strength)
    /// with more than twice their strength.
    exponent_bits: u32,
}

impl ModpGroup {
    const fn new(group: DhGroup, bits: usize, prime_hex: &'static str, exponent_bits: u32) -> Self {
        ModpGroup {
            group,
            bits,
            prime_hex,
            exponent_bits,
        }
    }
}

impl KeyExchangeGroup for ModpGroup {
    fn group(&self) -> DhGroup {
        self.group
    }
    fn public_value_len(&self) -> usize {
        self.bits / 8
    }
    fn start(&self, rng: &mut dyn Random) -> Result<Box<dyn KeyExchange>, CryptoError> {
        Ok(Box::new(Modp::new(self, rng)))
    }
}

/// Our side of a MODP exchange.
struct Modp {
    group: DhGroup,
    params: BoxedMontyParams,
    /// p - 1, big-endian, prime-length: the upper bound of RFC 6989's check.
    p_minus_1: Vec<u8>,
    /// The private exponent x (its top bit, `exponent_bits - 1`, set so
    /// that its length, the only thing the exponentiation's timing
    /// depends on, is the same for every key).
    x: BoxedUint,
    exponent_bits: u32,
    /// g^x mod p, prime-length.
    public: Vec<u8>,
}

impl Modp {
    fn new(m: &ModpGroup, rng: &mut dyn Random) -> Modp {
        let bits = m.bits as u32;
        // Invariant: the prime constants are valid hex of exactly `bits`
        // bits (checked by the tests below), and odd.
        let p = Option::<BoxedUint>::from(BoxedUint::from_be_hex(m.prime_hex, bits))
            .expect("MODP prime constant is valid hex");
        let p_minus_1 = {
            let mut b = p.to_be_bytes().to_vec();
            // p is odd: p - 1 only clears the lowest bit.
            let last = b.len() - 1;
            b[last] &= 0xfe;
            b
        };
        let p = Option::<Odd<BoxedUint>>::from(p.to_odd()).expect("MODP prime is odd");
        // The prime is public: variable time is fine for the parameters.
        let params = BoxedMontyParams::new_vartime(p);

        let exponent_bits = m.exponent_bits;
        let mut xb = Zeroizing::new(vec![0u8; exponent_bits.div_ceil(8) as usize]);
        rng.fill(&mut xb);
        let excess = xb.len() as u32 * 8 - exponent_bits;
        xb[0] &= 0xff >> excess;
        xb[0] |= 0x80 >> excess;
        // Invariant: xb is shorter than the prime, so it fits.
        let x = BoxedUint::from_be_slice(&xb, bits).expect("exponent fits the group's width");

        // Invariant: the generator 2 fits every group's width.
        let g = BoxedMontyForm::new(
            BoxedUint::from_be_slice(&[2], bits).expect("2 fits"),
            &params,
        );
        let public = g
            .pow_bounded_exp(&x, exponent_bits)
            .retrieve()
            .to_be_bytes()
            .to_vec();
        Modp {
            group: m.group,
            params,
            p_minus_1,
            x,
            exponent_bits,
            public,
        }
    }
}

impl KeyExchange for Modp {
    fn group(&self) -> DhGroup {
        self.group
    }

    fn public_value(&self) -> &[u8] {
        &self.public
    }

    fn shared_secret(&self, peer: &[u8]) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
        let len = self.p_minus_1.len();
        if peer.len() != len {
            return Err(CryptoError::BadPublicValue);
        }
        // RFC 6989 §2.1: 1 < y < p-1. Equal-length big-endian byte strings
        // compare as the numbers they encode. (The value is public.)
        let (high, low) = peer.split_at(len - 1);
        let greater_than_one = high.iter().any(|&b| b != 0) || low[0] > 1;
        if !greater_than_one || peer >= &self.p_minus_1[..] {
            return Err(CryptoError::BadPublicValue);
        }
        let bits = self.params.bits_precision();
        let y = BoxedUint::from_be_slice(peer, bits).map_err(|_| CryptoError::BadPublicValue)?;
        let mut y = BoxedMontyForm::new(y, &self.params);
        let mut z = y.pow_bounded_exp(&self.x, self.exponent_bits);
        y.zeroize();
        let mut zi = z.retrieve();
        z.zeroize();
        let mut bytes = zi.to_be_bytes();
        zi.zeroize();
        let out = Zeroizing::new(bytes.to_vec());
        bytes.zeroize();
        Ok(out)
    }
}

impl Drop for Modp {
    fn drop(&mut self) {
        self.x.zeroize();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::SeededRandom;

    fn h(s: &str) -> Vec<u8> {
        hex::decode(s.replace([' ', '\n'], "")).unwrap()
    }

    const ALL: [&ModpGroup; 8] = [
        &MODP_768, &MODP_1024, &MODP_1536, &MODP_2048, &MODP_3072, &MODP_4096, &MODP_6144,
        &MODP_8192,
    ];

    /// RFC 6989 §2.1: 0, 1, p-1 and p (and anything above) are refused, as
    /// are values of the wrong length; 2 and p-2 are accepted.
    #[test]
    fn modp_rejects_bad_public_values() {
        let a = MODP_2048.start(&mut SeededRandom::new(7)).unwrap();
        let p = h(P_2048);
        let n = p.len();
        let with_last = |last: u8| {
            let mut v = vec![0u8; n];
            v[n - 1] = last;
            v
        };
        let mut p_minus_1 = p.clone();
        p_minus_1[n - 1] -= 1;
        let mut p_minus_2 = p.clone();
        p_minus_2[n - 1] -= 2;
        for bad in [
            with_last(0),
            with_last(1),
            p_minus_1,
            p.clone(),
            vec![0xff; n],
        ] {
            assert_eq!(a.shared_secret(&bad), Err(CryptoError::BadPublicValue));
        }
        assert!(a.shared_secret(&with_last(2)).is_ok());
        assert!(a.shared_secret(&p_minus_2).is_ok());
        // Too long (even with a valid value after a leading zero), too
        // short, empty.
        let mut long = vec![0u8];
        long.extend_from_slice(&with_last(2));
        assert_eq!(a.shared_secret(&long), Err(CryptoError::BadPublicValue));
        assert_eq!(
            a.shared_secret(&with_last(2)[1..]),
            Err(CryptoError::BadPublicValue)
        );
        assert_eq!(a.shared_secret(&[]), Err(CryptoError::BadPublicValue));
    }

    /// The prime constants have the advertised sizes and agree with their
    /// formula's fixed parts (top and bottom 64 bits all ones).
    #[test]
    fn prime_constants() {
        for m in ALL {
            let p = h(m.prime_hex);
            assert_eq!(p.len() * 8, m.bits, "{}", m.group);
            assert_eq!(p.len(), m.public_value_len(), "{}", m.group);
            assert_eq!(&p[..8], &[0xff; 8]);
            assert_eq!(&p[p.len() - 8..], &[0xff; 8]);
            assert!(m.exponent_bits >= 256 && (m.exponent_bits as usize) < m.bits);
        }
    }
}
