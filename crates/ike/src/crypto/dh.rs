//! Key exchange (RFC 7296 §3.4): the MODP groups of RFC 2409 §6 and RFC 3526,
//! the ECP groups of RFC 5903 and Curve25519 (RFC 8031).
//!
//! | group | public value (KE data) | shared secret g^ir |
//! |---|---|---|
//! | MODP 1, 2, 5, 14–18 | g^x mod p, left-padded to the prime's length | g^xy mod p, left-padded likewise (§2.14) |
//! | ECP 19, 20, 21 | x ‖ y, each coordinate field-length, no 0x04 prefix (RFC 5903 §7) | the x coordinate (RFC 5903 §9) |
//! | Curve25519 (31) | the 32-byte u-coordinate (RFC 8031 §2) | the 32-byte X25519 output |
//!
//! Private values come from the caller's [`Random`], so tests replay
//! exactly. MODP exponentiation is crypto-bigint's constant-time Montgomery
//! ladder over a fixed-width exponent; the elliptic curves are aws-lc's.
//! Private values and shared secrets are zeroized when dropped (aws-lc
//! cleanses its own key memory when freeing it).
//!
//! Peer values are checked before use: MODP values must be exactly the
//! prime's length and satisfy 1 < y < p-1 (RFC 6989 §2.1; with safe primes
//! this excludes the small subgroups); ECP values exactly 2 × the field
//! length and on the curve (aws-lc checks); X25519 values 32 bytes and not
//! giving the all-zero output (RFC 7748 §6.1, RFC 8031 §2.3).

use aws_lc_rs::agreement::{self, PrivateKey, UnparsedPublicKey};
use crypto_bigint::modular::{BoxedMontyForm, BoxedMontyParams};
use crypto_bigint::{BoxedUint, Odd};
use flowsec_wire::iana::DhGroup;
use zeroize::{Zeroize, Zeroizing};

use crate::random::Random;

/// One side of a key exchange: our private value, our public value (the KE
/// payload's data), and the computation of g^ir from the peer's.
pub trait KeyExchange: Send {
    /// The group.
    fn group(&self) -> DhGroup;
    /// Our public value, encoded as the KE payload carries it.
    fn public_value(&self) -> &[u8];
    /// g^ir from the peer's public value, or `BadPublicValue`.
    fn shared_secret(&self, peer: &[u8]) -> Result<Zeroizing<Vec<u8>>, DhError>;
}

/// Why a key exchange could not be made or completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DhError {
    /// We do not implement this group (answer INVALID_KE_PAYLOAD or pick
    /// another proposal). Also returned if no private key could be made:
    /// only a broken [`Random`] (64 out-of-range scalars in a row) does that.
    Unsupported(DhGroup),
    /// The peer's public value has the wrong length, fails RFC 6989's range
    /// check, is not on the curve, or gives the all-zero X25519 output.
    BadPublicValue,
}

impl core::fmt::Display for DhError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            DhError::Unsupported(g) => write!(f, "Diffie-Hellman group {g} not supported"),
            DhError::BadPublicValue => f.write_str("invalid Diffie-Hellman public value"),
        }
    }
}

impl std::error::Error for DhError {}

/// A fresh key exchange in `group`, its private value drawn from `rng`.
pub fn key_exchange(group: DhGroup, rng: &mut dyn Random) -> Result<Box<dyn KeyExchange>, DhError> {
    if let Some(m) = modp_group(group) {
        return Ok(Box::new(Modp::new(group, m, rng)));
    }
    let alg = match group {
        DhGroup::ECP_256 => &agreement::ECDH_P256,
        DhGroup::ECP_384 => &agreement::ECDH_P384,
        DhGroup::ECP_521 => &agreement::ECDH_P521,
        DhGroup::CURVE25519 => &agreement::X25519,
        _ => return Err(DhError::Unsupported(group)),
    };
    Ok(Box::new(Ecdh::new(group, alg, rng)?))
}

/// Length of the KE payload's data for `group`; `None` if unsupported.
pub fn public_value_len(group: DhGroup) -> Option<usize> {
    if let Some(m) = modp_group(group) {
        return Some(m.bits / 8);
    }
    ecdh_field_len(group).map(|n| {
        if group == DhGroup::CURVE25519 {
            n
        } else {
            2 * n
        }
    })
}

// ---------------------------------------------------------------------------
// MODP

/// A MODP group: its prime (generator 2 for all of them) and the size of
/// the private exponents we draw.
struct ModpGroup {
    bits: usize,
    prime_hex: &'static str,
    /// Private exponent size in bits. RFC 3526 §8 gives a range per group
    /// (twice the estimated strength); we take the upper end, and at least
    /// 256 bits, which also covers the RFC 2409 groups (~80-bit strength)
    /// with more than twice their strength.
    exponent_bits: u32,
}

fn modp_group(group: DhGroup) -> Option<&'static ModpGroup> {
    const fn g(bits: usize, prime_hex: &'static str, exponent_bits: u32) -> ModpGroup {
        ModpGroup {
            bits,
            prime_hex,
            exponent_bits,
        }
    }
    static MODP_768: ModpGroup = g(768, P_768, 256);
    static MODP_1024: ModpGroup = g(1024, P_1024, 256);
    static MODP_1536: ModpGroup = g(1536, P_1536, 256);
    static MODP_2048: ModpGroup = g(2048, P_2048, 320);
    static MODP_3072: ModpGroup = g(3072, P_3072, 420);
    static MODP_4096: ModpGroup = g(4096, P_4096, 480);
    static MODP_6144: ModpGroup = g(6144, P_6144, 540);
    static MODP_8192: ModpGroup = g(8192, P_8192, 620);
    Some(match group {
        DhGroup::MODP_768 => &MODP_768,
        DhGroup::MODP_1024 => &MODP_1024,
        DhGroup::MODP_1536 => &MODP_1536,
        DhGroup::MODP_2048 => &MODP_2048,
        DhGroup::MODP_3072 => &MODP_3072,
        DhGroup::MODP_4096 => &MODP_4096,
        DhGroup::MODP_6144 => &MODP_6144,
        DhGroup::MODP_8192 => &MODP_8192,
        _ => return None,
    })
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
    fn new(group: DhGroup, m: &ModpGroup, rng: &mut dyn Random) -> Modp {
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
            group,
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

    fn shared_secret(&self, peer: &[u8]) -> Result<Zeroizing<Vec<u8>>, DhError> {
        let len = self.p_minus_1.len();
        if peer.len() != len {
            return Err(DhError::BadPublicValue);
        }
        // RFC 6989 §2.1: 1 < y < p-1. Equal-length big-endian byte strings
        // compare as the numbers they encode. (The value is public.)
        let (high, low) = peer.split_at(len - 1);
        let greater_than_one = high.iter().any(|&b| b != 0) || low[0] > 1;
        if !greater_than_one || peer >= &self.p_minus_1[..] {
            return Err(DhError::BadPublicValue);
        }
        let bits = self.params.bits_precision();
        let y = BoxedUint::from_be_slice(peer, bits).map_err(|_| DhError::BadPublicValue)?;
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

// ---------------------------------------------------------------------------
// ECP and Curve25519

/// Coordinate (ECP) or value (X25519) length in bytes.
fn ecdh_field_len(group: DhGroup) -> Option<usize> {
    Some(match group {
        DhGroup::ECP_256 => 32,
        DhGroup::ECP_384 => 48,
        DhGroup::ECP_521 => 66,
        DhGroup::CURVE25519 => 32,
        _ => return None,
    })
}

/// Scalars drawn before giving up: a scalar is out of range with
/// probability below 2^-32 per try for P-256/384/521 (after masking P-521's
/// top byte), never for X25519, so only a broken generator gets here.
const MAX_SCALAR_TRIES: usize = 64;

/// Our side of an ECP or Curve25519 exchange, via aws-lc.
struct Ecdh {
    group: DhGroup,
    alg: &'static agreement::Algorithm,
    key: PrivateKey,
    field_len: usize,
    public: Vec<u8>,
}

impl Ecdh {
    fn new(
        group: DhGroup,
        alg: &'static agreement::Algorithm,
        rng: &mut dyn Random,
    ) -> Result<Ecdh, DhError> {
        let field_len = ecdh_field_len(group).ok_or(DhError::Unsupported(group))?;
        let x25519 = group == DhGroup::CURVE25519;
        let mut scalar = Zeroizing::new(vec![0u8; field_len]);
        let mut key = None;
        for _ in 0..MAX_SCALAR_TRIES {
            rng.fill(&mut scalar);
            if group == DhGroup::ECP_521 {
                // 521 bits in 66 bytes: the order is just under 2^521.
                scalar[0] &= 0x01;
            }
            // aws-lc refuses 0 and scalars >= the group order; X25519 takes
            // any 32 bytes (RFC 7748 §5 clamps them).
            if let Ok(k) = PrivateKey::from_private_key(alg, &scalar) {
                key = Some(k);
                break;
            }
        }
        let key = key.ok_or(DhError::Unsupported(group))?;
        let pk = key
            .compute_public_key()
            .map_err(|_| DhError::Unsupported(group))?;
        let pk = pk.as_ref();
        let public = if x25519 {
            pk.to_vec()
        } else {
            // SEC1 uncompressed 0x04 || x || y; RFC 5903 §7 sends x || y.
            match pk.split_first() {
                Some((0x04, xy)) if xy.len() == 2 * field_len => xy.to_vec(),
                _ => return Err(DhError::Unsupported(group)),
            }
        };
        Ok(Ecdh {
            group,
            alg,
            key,
            field_len,
            public,
        })
    }
}

impl KeyExchange for Ecdh {
    fn group(&self) -> DhGroup {
        self.group
    }

    fn public_value(&self) -> &[u8] {
        &self.public
    }

    fn shared_secret(&self, peer: &[u8]) -> Result<Zeroizing<Vec<u8>>, DhError> {
        let x25519 = self.group == DhGroup::CURVE25519;
        let encoded = if x25519 {
            if peer.len() != self.field_len {
                return Err(DhError::BadPublicValue);
            }
            peer.to_vec()
        } else {
            if peer.len() != 2 * self.field_len {
                return Err(DhError::BadPublicValue);
            }
            let mut v = Vec::with_capacity(1 + peer.len());
            v.push(0x04);
            v.extend_from_slice(peer);
            v
        };
        // aws-lc checks that an ECP point is on the curve, and refuses the
        // all-zero X25519 output.
        let secret = agreement::agree(
            &self.key,
            UnparsedPublicKey::new(self.alg, &encoded),
            DhError::BadPublicValue,
            |z| Ok(Zeroizing::new(z.to_vec())),
        )?;
        if secret.len() != self.field_len {
            return Err(DhError::BadPublicValue);
        }
        // RFC 7748 §6.1: check for the all-zero output ourselves too, in
        // constant time.
        if x25519 && secret.iter().fold(0u8, |acc, &b| acc | b) == 0 {
            return Err(DhError::BadPublicValue);
        }
        Ok(secret)
    }
}

// ---------------------------------------------------------------------------
// The MODP primes. Each is 2^n - 2^(n-64) - 1 + 2^64 * (floor(2^(n-130) pi) + k)
// (RFC 2409 §6, RFC 3526); the constants were generated from that formula
// in Python, checked to be safe primes (Miller-Rabin on p and (p-1)/2), and
// compared with aws-lc's copies of the RFC 3526 primes.

/// The 768-bit MODP prime (RFC 2409 §6.1).
const P_768: &str = concat!(
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74",
    "020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F1437",
    "4FE1356D6D51C245E485B576625E7EC6F44C42E9A63A3620FFFFFFFFFFFFFFFF",
);

/// The 1024-bit MODP prime (RFC 2409 §6.2).
const P_1024: &str = concat!(
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74",
    "020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F1437",
    "4FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED",
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF",
);

/// The 1536-bit MODP prime (RFC 3526 §2).
const P_1536: &str = concat!(
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74",
    "020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F1437",
    "4FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED",
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF05",
    "98DA48361C55D39A69163FA8FD24CF5F83655D23DCA3AD961C62F356208552BB",
    "9ED529077096966D670C354E4ABC9804F1746C08CA237327FFFFFFFFFFFFFFFF",
);

/// The 2048-bit MODP prime (RFC 3526 §3).
const P_2048: &str = concat!(
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74",
    "020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F1437",
    "4FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED",
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF05",
    "98DA48361C55D39A69163FA8FD24CF5F83655D23DCA3AD961C62F356208552BB",
    "9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B",
    "E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF695581718",
    "3995497CEA956AE515D2261898FA051015728E5A8AACAA68FFFFFFFFFFFFFFFF",
);

/// The 3072-bit MODP prime (RFC 3526 §4).
const P_3072: &str = concat!(
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74",
    "020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F1437",
    "4FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED",
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF05",
    "98DA48361C55D39A69163FA8FD24CF5F83655D23DCA3AD961C62F356208552BB",
    "9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B",
    "E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF695581718",
    "3995497CEA956AE515D2261898FA051015728E5A8AAAC42DAD33170D04507A33",
    "A85521ABDF1CBA64ECFB850458DBEF0A8AEA71575D060C7DB3970F85A6E1E4C7",
    "ABF5AE8CDB0933D71E8C94E04A25619DCEE3D2261AD2EE6BF12FFA06D98A0864",
    "D87602733EC86A64521F2B18177B200CBBE117577A615D6C770988C0BAD946E2",
    "08E24FA074E5AB3143DB5BFCE0FD108E4B82D120A93AD2CAFFFFFFFFFFFFFFFF",
);

/// The 4096-bit MODP prime (RFC 3526 §5).
const P_4096: &str = concat!(
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74",
    "020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F1437",
    "4FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED",
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF05",
    "98DA48361C55D39A69163FA8FD24CF5F83655D23DCA3AD961C62F356208552BB",
    "9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B",
    "E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF695581718",
    "3995497CEA956AE515D2261898FA051015728E5A8AAAC42DAD33170D04507A33",
    "A85521ABDF1CBA64ECFB850458DBEF0A8AEA71575D060C7DB3970F85A6E1E4C7",
    "ABF5AE8CDB0933D71E8C94E04A25619DCEE3D2261AD2EE6BF12FFA06D98A0864",
    "D87602733EC86A64521F2B18177B200CBBE117577A615D6C770988C0BAD946E2",
    "08E24FA074E5AB3143DB5BFCE0FD108E4B82D120A92108011A723C12A787E6D7",
    "88719A10BDBA5B2699C327186AF4E23C1A946834B6150BDA2583E9CA2AD44CE8",
    "DBBBC2DB04DE8EF92E8EFC141FBECAA6287C59474E6BC05D99B2964FA090C3A2",
    "233BA186515BE7ED1F612970CEE2D7AFB81BDD762170481CD0069127D5B05AA9",
    "93B4EA988D8FDDC186FFB7DC90A6C08F4DF435C934063199FFFFFFFFFFFFFFFF",
);

/// The 6144-bit MODP prime (RFC 3526 §6).
const P_6144: &str = concat!(
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74",
    "020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F1437",
    "4FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED",
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF05",
    "98DA48361C55D39A69163FA8FD24CF5F83655D23DCA3AD961C62F356208552BB",
    "9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B",
    "E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF695581718",
    "3995497CEA956AE515D2261898FA051015728E5A8AAAC42DAD33170D04507A33",
    "A85521ABDF1CBA64ECFB850458DBEF0A8AEA71575D060C7DB3970F85A6E1E4C7",
    "ABF5AE8CDB0933D71E8C94E04A25619DCEE3D2261AD2EE6BF12FFA06D98A0864",
    "D87602733EC86A64521F2B18177B200CBBE117577A615D6C770988C0BAD946E2",
    "08E24FA074E5AB3143DB5BFCE0FD108E4B82D120A92108011A723C12A787E6D7",
    "88719A10BDBA5B2699C327186AF4E23C1A946834B6150BDA2583E9CA2AD44CE8",
    "DBBBC2DB04DE8EF92E8EFC141FBECAA6287C59474E6BC05D99B2964FA090C3A2",
    "233BA186515BE7ED1F612970CEE2D7AFB81BDD762170481CD0069127D5B05AA9",
    "93B4EA988D8FDDC186FFB7DC90A6C08F4DF435C93402849236C3FAB4D27C7026",
    "C1D4DCB2602646DEC9751E763DBA37BDF8FF9406AD9E530EE5DB382F413001AE",
    "B06A53ED9027D831179727B0865A8918DA3EDBEBCF9B14ED44CE6CBACED4BB1B",
    "DB7F1447E6CC254B332051512BD7AF426FB8F401378CD2BF5983CA01C64B92EC",
    "F032EA15D1721D03F482D7CE6E74FEF6D55E702F46980C82B5A84031900B1C9E",
    "59E7C97FBEC7E8F323A97A7E36CC88BE0F1D45B7FF585AC54BD407B22B4154AA",
    "CC8F6D7EBF48E1D814CC5ED20F8037E0A79715EEF29BE32806A1D58BB7C5DA76",
    "F550AA3D8A1FBFF0EB19CCB1A313D55CDA56C9EC2EF29632387FE8D76E3C0468",
    "043E8F663F4860EE12BF2D5B0B7474D6E694F91E6DCC4024FFFFFFFFFFFFFFFF",
);

/// The 8192-bit MODP prime (RFC 3526 §7).
const P_8192: &str = concat!(
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74",
    "020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F1437",
    "4FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED",
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF05",
    "98DA48361C55D39A69163FA8FD24CF5F83655D23DCA3AD961C62F356208552BB",
    "9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B",
    "E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF695581718",
    "3995497CEA956AE515D2261898FA051015728E5A8AAAC42DAD33170D04507A33",
    "A85521ABDF1CBA64ECFB850458DBEF0A8AEA71575D060C7DB3970F85A6E1E4C7",
    "ABF5AE8CDB0933D71E8C94E04A25619DCEE3D2261AD2EE6BF12FFA06D98A0864",
    "D87602733EC86A64521F2B18177B200CBBE117577A615D6C770988C0BAD946E2",
    "08E24FA074E5AB3143DB5BFCE0FD108E4B82D120A92108011A723C12A787E6D7",
    "88719A10BDBA5B2699C327186AF4E23C1A946834B6150BDA2583E9CA2AD44CE8",
    "DBBBC2DB04DE8EF92E8EFC141FBECAA6287C59474E6BC05D99B2964FA090C3A2",
    "233BA186515BE7ED1F612970CEE2D7AFB81BDD762170481CD0069127D5B05AA9",
    "93B4EA988D8FDDC186FFB7DC90A6C08F4DF435C93402849236C3FAB4D27C7026",
    "C1D4DCB2602646DEC9751E763DBA37BDF8FF9406AD9E530EE5DB382F413001AE",
    "B06A53ED9027D831179727B0865A8918DA3EDBEBCF9B14ED44CE6CBACED4BB1B",
    "DB7F1447E6CC254B332051512BD7AF426FB8F401378CD2BF5983CA01C64B92EC",
    "F032EA15D1721D03F482D7CE6E74FEF6D55E702F46980C82B5A84031900B1C9E",
    "59E7C97FBEC7E8F323A97A7E36CC88BE0F1D45B7FF585AC54BD407B22B4154AA",
    "CC8F6D7EBF48E1D814CC5ED20F8037E0A79715EEF29BE32806A1D58BB7C5DA76",
    "F550AA3D8A1FBFF0EB19CCB1A313D55CDA56C9EC2EF29632387FE8D76E3C0468",
    "043E8F663F4860EE12BF2D5B0B7474D6E694F91E6DBE115974A3926F12FEE5E4",
    "38777CB6A932DF8CD8BEC4D073B931BA3BC832B68D9DD300741FA7BF8AFC47ED",
    "2576F6936BA424663AAB639C5AE4F5683423B4742BF1C978238F16CBE39D652D",
    "E3FDB8BEFC848AD922222E04A4037C0713EB57A81A23F0C73473FC646CEA306B",
    "4BCBC8862F8385DDFA9D4B7FA2C087E879683303ED5BDD3A062B3CF5B3A278A6",
    "6D2A13F83F44F82DDF310EE074AB6A364597E899A0255DC164F31CC50846851D",
    "F9AB48195DED7EA1B1D510BD7EE74D73FAF36BC31ECFA268359046F4EB879F92",
    "4009438B481C6CD7889A002ED5EE382BC9190DA6FC026E479558E4475677E9AA",
    "9E3050E2765694DFC81F56E880B96E7160C980DD98EDD3DFFFFFFFFFFFFFFFFF",
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::SeededRandom;

    fn h(s: &str) -> Vec<u8> {
        hex::decode(s.replace([' ', '\n'], "")).unwrap()
    }

    /// A `Random` that hands out fixed bytes (a test vector's private value).
    struct Fixed(Vec<u8>);
    impl Random for Fixed {
        fn fill(&mut self, buf: &mut [u8]) {
            assert!(buf.len() <= self.0.len(), "Fixed ran out of bytes");
            let rest = self.0.split_off(buf.len());
            buf.copy_from_slice(&self.0);
            self.0 = rest;
        }
    }

    const ALL: [DhGroup; 12] = [
        DhGroup::MODP_768,
        DhGroup::MODP_1024,
        DhGroup::MODP_1536,
        DhGroup::MODP_2048,
        DhGroup::MODP_3072,
        DhGroup::MODP_4096,
        DhGroup::MODP_6144,
        DhGroup::MODP_8192,
        DhGroup::ECP_256,
        DhGroup::ECP_384,
        DhGroup::ECP_521,
        DhGroup::CURVE25519,
    ];

    /// RFC 5903 §8: i and r are the two private values; g^i = (gix, giy),
    /// g^r = (grx, gry), and both sides compute girx.
    fn rfc5903(group: DhGroup, i: &str, gi: &str, r: &str, gr: &str, girx: &str) {
        let a = key_exchange(group, &mut Fixed(h(i))).unwrap();
        let b = key_exchange(group, &mut Fixed(h(r))).unwrap();
        assert_eq!(a.public_value(), &h(gi)[..]);
        assert_eq!(b.public_value(), &h(gr)[..]);
        assert_eq!(&a.shared_secret(&h(gr)).unwrap()[..], &h(girx)[..]);
        assert_eq!(&b.shared_secret(&h(gi)).unwrap()[..], &h(girx)[..]);
        assert_eq!(public_value_len(group), Some(h(gi).len()));
    }

    #[test]
    fn ecp_256_rfc5903() {
        rfc5903(
            DhGroup::ECP_256,
            "C88F01F510D9AC3F70A292DAA2316DE544E9AAB8AFE84049C62A9C57862D1433",
            "DAD0B65394221CF9B051E1FECA5787D098DFE637FC90B9EF945D0C3772581180
             5271A0461CDB8252D61F1C456FA3E59AB1F45B33ACCF5F58389E0577B8990BB3",
            "C6EF9C5D78AE012A011164ACB397CE2088685D8F06BF9BE0B283AB46476BEE53",
            "D12DFB5289C8D4F81208B70270398C342296970A0BCCB74C736FC7554494BF63
             56FBF3CA366CC23E8157854C13C58D6AAC23F046ADA30F8353E74F33039872AB",
            "D6840F6B42F6EDAFD13116E0E12565202FEF8E9ECE7DCE03812464D04B9442DE",
        );
    }

    #[test]
    fn ecp_384_rfc5903() {
        rfc5903(
            DhGroup::ECP_384,
            "099F3C7034D4A2C699884D73A375A67F7624EF7C6B3C0F160647B67414DCE655
             E35B538041E649EE3FAEF896783AB194",
            "667842D7D180AC2CDE6F74F37551F55755C7645C20EF73E31634FE72B4C55EE6
             DE3AC808ACB4BDB4C88732AEE95F41AA9482ED1FC0EEB9CAFC4984625CCFC23F
             65032149E0E144ADA024181535A0F38EEB9FCFF3C2C947DAE69B4C634573A81C",
            "41CB0779B4BDB85D47846725FBEC3C9430FAB46CC8DC5060855CC9BDA0AA2942
             E0308312916B8ED2960E4BD55A7448FC",
            "E558DBEF53EECDE3D3FCCFC1AEA08A89A987475D12FD950D83CFA41732BC509D
             0D1AC43A0336DEF96FDA41D0774A3571DCFBEC7AACF3196472169E838430367F
             66EEBE3C6E70C416DD5F0C68759DD1FFF83FA40142209DFF5EAAD96DB9E6386C",
            "11187331C279962D93D604243FD592CB9D0A926F422E47187521287E7156C5C4
             D603135569B9E9D09CF5D4A270F59746",
        );
    }

    #[test]
    fn ecp_521_rfc5903() {
        rfc5903(
            DhGroup::ECP_521,
            "0037ADE9319A89F4DABDB3EF411AACCCA5123C61ACAB57B5393DCE47608172A0
             95AA85A30FE1C2952C6771D937BA9777F5957B2639BAB072462F68C27A57382D
             4A52",
            "0015417E84DBF28C0AD3C278713349DC7DF153C897A1891BD98BAB4357C9ECBE
             E1E3BF42E00B8E380AEAE57C2D107564941885942AF5A7F4601723C4195D176C
             ED3E017CAE20B6641D2EEB695786D8C946146239D099E18E1D5A514C739D7CB4
             A10AD8A788015AC405D7799DC75E7B7D5B6CF2261A6A7F1507438BF01BEB6CA3
             926F9582",
            "0145BA99A847AF43793FDD0E872E7CDFA16BE30FDC780F97BCCC3F078380201E
             9C677D600B343757A3BDBF2A3163E4C2F869CCA7458AA4A4EFFC311F5CB15168
             5EB9",
            "00D0B3975AC4B799F5BEA16D5E13E9AF971D5E9B984C9F39728B5E5739735A21
             9B97C356436ADC6E95BB0352F6BE64A6C2912D4EF2D0433CED2B6171640012D9
             460F015C68226383956E3BD066E797B623C27CE0EAC2F551A10C2C724D985207
             7B87220B6536C5C408A1D2AEBB8E86D678AE49CB57091F4732296579AB44FCD1
             7F0FC56A",
            "01144C7D79AE6956BC8EDB8E7C787C4521CB086FA64407F97894E5E6B2D79B04
             D1427E73CA4BAA240A34786859810C06B3C715A3A8CC3151F2BEE417996D19F3
             DDEA",
        );
    }

    /// RFC 7748 §6.1.
    #[test]
    fn x25519_rfc7748() {
        rfc5903(
            DhGroup::CURVE25519,
            "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
            "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a",
            "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb",
            "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f",
            "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742",
        );
    }

    /// Every group: two parties with seeded generators agree, values have
    /// the advertised lengths, and different seeds give different values.
    #[test]
    fn every_group_agrees() {
        for group in ALL {
            let a = key_exchange(group, &mut SeededRandom::new(1)).unwrap();
            let b = key_exchange(group, &mut SeededRandom::new(2)).unwrap();
            assert_eq!(a.group(), group);
            let len = public_value_len(group).unwrap();
            assert_eq!(a.public_value().len(), len, "{group}");
            assert_ne!(a.public_value(), b.public_value(), "{group}");
            let s1 = a.shared_secret(b.public_value()).unwrap();
            let s2 = b.shared_secret(a.public_value()).unwrap();
            assert_eq!(s1, s2, "{group}");
            let secret_len = match group {
                DhGroup::ECP_256 | DhGroup::ECP_384 | DhGroup::ECP_521 => len / 2,
                _ => len,
            };
            assert_eq!(s1.len(), secret_len, "{group}");
            // Same seed, same key: tests can replay an exchange.
            let again = key_exchange(group, &mut SeededRandom::new(1)).unwrap();
            assert_eq!(again.public_value(), a.public_value(), "{group}");
        }
    }

    /// MODP-1024 against Python's `pow`: x is 0x81 02 03 .. 20 (the Fixed
    /// bytes 01..20 with the exponent's top bit set), and
    /// `format(pow(2, x, p), '0256x')`, `format(pow(3, x, p), '0256x')`.
    #[test]
    fn modp_1024_matches_python() {
        let a = key_exchange(DhGroup::MODP_1024, &mut Fixed((1..=32).collect())).unwrap();
        assert_eq!(
            a.public_value(),
            &h(
                "76839f09c0905bcc31db54d185a29d7d0c3178a14ef77a56bf9bdeeb796b764f
                f336504c71b8f8482870e60c66d7e67db87fc5d38be9502a355250a342bcc5a2
                06d08ef3ac68111704b155767e5fdae11864378780ac427c58b1f62f35695972
                56bf23cb7482d1859677e4641aa2371676cbca1f33a9144d5efe82341f719944"
            )[..]
        );
        let mut three = vec![0u8; 128];
        three[127] = 3;
        assert_eq!(
            &a.shared_secret(&three).unwrap()[..],
            &h(
                "ca4b135170a001986d973734ae9e18ff8ed4b0a91e213fb9f81de20ad5f47e96
                b8d033a307860568ae9c11b4aafe334cc2deb59cc66651a17c46b895852c036f
                0ebb20a98ab8e335dab1e43f1f8b8f81b3b11c3fac560d919f58d68ff36db1ca
                261def43c936459a35f3e1f50e43bdb07f7ca9727e66fb34613a109c72f54883"
            )[..]
        );
    }

    /// RFC 6989 §2.1: 0, 1, p-1 and p (and anything above) are refused, as
    /// are values of the wrong length; 2 and p-2 are accepted.
    #[test]
    fn modp_rejects_bad_public_values() {
        let a = key_exchange(DhGroup::MODP_2048, &mut SeededRandom::new(7)).unwrap();
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
            assert_eq!(a.shared_secret(&bad), Err(DhError::BadPublicValue));
        }
        assert!(a.shared_secret(&with_last(2)).is_ok());
        assert!(a.shared_secret(&p_minus_2).is_ok());
        // Too long (even with a valid value after a leading zero), too
        // short, empty.
        let mut long = vec![0u8];
        long.extend_from_slice(&with_last(2));
        assert_eq!(a.shared_secret(&long), Err(DhError::BadPublicValue));
        assert_eq!(
            a.shared_secret(&with_last(2)[1..]),
            Err(DhError::BadPublicValue)
        );
        assert_eq!(a.shared_secret(&[]), Err(DhError::BadPublicValue));
    }

    #[test]
    fn ecp_rejects_bad_public_values() {
        for group in [DhGroup::ECP_256, DhGroup::ECP_384, DhGroup::ECP_521] {
            let a = key_exchange(group, &mut SeededRandom::new(3)).unwrap();
            let b = key_exchange(group, &mut SeededRandom::new(4)).unwrap();
            let good = b.public_value().to_vec();
            // Not on the curve.
            let mut off = good.clone();
            let last = off.len() - 1;
            off[last] ^= 1;
            assert_eq!(
                a.shared_secret(&off),
                Err(DhError::BadPublicValue),
                "{group}"
            );
            // With the SEC1 prefix (RFC 5903 §7 has none), truncated, empty,
            // the point at infinity's zeros.
            let mut prefixed = vec![0x04];
            prefixed.extend_from_slice(&good);
            assert_eq!(a.shared_secret(&prefixed), Err(DhError::BadPublicValue));
            assert_eq!(a.shared_secret(&good[1..]), Err(DhError::BadPublicValue));
            assert_eq!(a.shared_secret(&[]), Err(DhError::BadPublicValue));
            assert_eq!(
                a.shared_secret(&vec![0; good.len()]),
                Err(DhError::BadPublicValue)
            );
        }
    }

    /// RFC 7748 §6.1: a small-order point gives the all-zero output, which
    /// is refused; wrong lengths are refused.
    #[test]
    fn x25519_rejects_low_order_and_bad_lengths() {
        let a = key_exchange(DhGroup::CURVE25519, &mut SeededRandom::new(5)).unwrap();
        let mut one = [0u8; 32];
        one[0] = 1; // u = 1 has order 4 (RFC 7748 §6.1 / libsodium's blocklist)
        for low_order in [[0u8; 32], one] {
            assert_eq!(a.shared_secret(&low_order), Err(DhError::BadPublicValue));
        }
        assert_eq!(a.shared_secret(&[9; 31]), Err(DhError::BadPublicValue));
        assert_eq!(a.shared_secret(&[9; 33]), Err(DhError::BadPublicValue));
    }

    #[test]
    fn unsupported_groups() {
        for g in [DhGroup::NONE, DhGroup(22), DhGroup(32)] {
            assert!(matches!(
                key_exchange(g, &mut SeededRandom::new(1)),
                Err(DhError::Unsupported(x)) if x == g
            ));
            assert_eq!(public_value_len(g), None);
        }
    }

    /// A generator that only ever yields out-of-range scalars is reported,
    /// not looped on forever.
    #[test]
    fn broken_random_is_reported() {
        struct Ones;
        impl Random for Ones {
            fn fill(&mut self, buf: &mut [u8]) {
                buf.fill(0xff);
            }
        }
        assert!(matches!(
            key_exchange(DhGroup::ECP_256, &mut Ones),
            Err(DhError::Unsupported(_))
        ));
    }

    /// The prime constants have the advertised sizes and agree with their
    /// formula's fixed parts (top and bottom 64 bits all ones).
    #[test]
    fn prime_constants() {
        for group in &ALL[..8] {
            let m = modp_group(*group).unwrap();
            let p = h(m.prime_hex);
            assert_eq!(p.len() * 8, m.bits, "{group}");
            assert_eq!(&p[..8], &[0xff; 8]);
            assert_eq!(&p[p.len() - 8..], &[0xff; 8]);
            assert!(m.exponent_bits >= 256 && (m.exponent_bits as usize) < m.bits);
        }
    }
}
