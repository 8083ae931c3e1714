//! The elliptic-curve key exchange groups (RFC 7296 §3.4, transform type
//! 4), via aws-lc: the ECP groups of RFC 5903 and Curve25519 (RFC 8031).
//!
//! | group | public value (KE data) | shared secret g^ir |
//! |---|---|---|
//! | ECP 19, 20, 21 | x ‖ y, each coordinate field-length, no 0x04 prefix (RFC 5903 §7) | the x coordinate (RFC 5903 §9) |
//! | Curve25519 (31) | the 32-byte u-coordinate (RFC 8031 §2) | the 32-byte X25519 output |
//!
//! Private scalars come from the caller's [`Random`]; aws-lc cleanses its
//! key memory when freeing it, and shared secrets are zeroized when
//! dropped. Peer values are checked before use: ECP values exactly 2 × the
//! field length and on the curve (aws-lc checks; RFC 6989 §2.3); X25519
//! values 32 bytes and not giving the all-zero output (RFC 7748 §6.1,
//! RFC 8031 §2.3).

use aws_lc_rs::agreement::{self, PrivateKey, UnparsedPublicKey};
use flowsec_wire::iana::DhGroup;
use zeroize::Zeroizing;

use crate::random::Random;
use crate::traits::{KeyExchange, KeyExchangeGroup};
use crate::CryptoError;

/// ECP-256 (RFC 5903 §3.1).
pub(crate) static ECP_256: EcdhGroup = EcdhGroup {
    group: DhGroup::ECP_256,
    alg: &agreement::ECDH_P256,
    field_len: 32,
};
/// ECP-384 (RFC 5903 §3.2).
pub(crate) static ECP_384: EcdhGroup = EcdhGroup {
    group: DhGroup::ECP_384,
    alg: &agreement::ECDH_P384,
    field_len: 48,
};
/// ECP-521 (RFC 5903 §3.3).
pub(crate) static ECP_521: EcdhGroup = EcdhGroup {
    group: DhGroup::ECP_521,
    alg: &agreement::ECDH_P521,
    field_len: 66,
};
/// Curve25519 (RFC 8031).
pub(crate) static CURVE25519: EcdhGroup = EcdhGroup {
    group: DhGroup::CURVE25519,
    alg: &agreement::X25519,
    field_len: 32,
};

/// Scalars drawn before giving up: a scalar is out of range with
/// probability below 2^-32 per try for P-256/384/521 (after masking P-521's
/// top byte), never for X25519, so only a broken generator gets here.
const MAX_SCALAR_TRIES: usize = 64;

/// An ECP group or Curve25519.
#[derive(Clone, Copy)]
pub(crate) struct EcdhGroup {
    group: DhGroup,
    alg: &'static agreement::Algorithm,
    /// Coordinate (ECP) or value (X25519) length in bytes.
    field_len: usize,
}

impl EcdhGroup {
    fn is_x25519(&self) -> bool {
        self.group == DhGroup::CURVE25519
    }

    /// A private key from `rng`'s scalars (the first aws-lc accepts).
    fn private_key(&self, rng: &mut dyn Random) -> Result<PrivateKey, CryptoError> {
        let mut scalar = Zeroizing::new(vec![0u8; self.field_len]);
        for _ in 0..MAX_SCALAR_TRIES {
            rng.fill(&mut scalar);
            if self.group == DhGroup::ECP_521 {
                // 521 bits in 66 bytes: the order is just under 2^521.
                scalar[0] &= 0x01;
            }
            // aws-lc refuses 0 and scalars >= the group order; X25519 takes
            // any 32 bytes (RFC 7748 §5 clamps them).
            if let Ok(k) = PrivateKey::from_private_key(self.alg, &scalar) {
                return Ok(k);
            }
        }
        Err(CryptoError::KeyGenFailed(self.group))
    }
}

impl KeyExchangeGroup for EcdhGroup {
    fn group(&self) -> DhGroup {
        self.group
    }

    fn public_value_len(&self) -> usize {
        if self.is_x25519() {
            self.field_len
        } else {
            2 * self.field_len
        }
    }

    fn start(&self, rng: &mut dyn Random) -> Result<Box<dyn KeyExchange>, CryptoError> {
        let key = self.private_key(rng)?;
        let pk = key
            .compute_public_key()
            .map_err(|_| CryptoError::KeyGenFailed(self.group))?;
        let pk = pk.as_ref();
        let public = if self.is_x25519() {
            pk.to_vec()
        } else {
            // SEC1 uncompressed 0x04 || x || y; RFC 5903 §7 sends x || y.
            match pk.split_first() {
                Some((0x04, xy)) if xy.len() == 2 * self.field_len => xy.to_vec(),
                _ => return Err(CryptoError::KeyGenFailed(self.group)),
            }
        };
        Ok(Box::new(Ecdh {
            group: *self,
            key,
            public,
        }))
    }
}

/// Our side of an ECP or Curve25519 exchange.
struct Ecdh {
    group: EcdhGroup,
    key: PrivateKey,
    public: Vec<u8>,
}

impl KeyExchange for Ecdh {
    fn group(&self) -> DhGroup {
        self.group.group
    }

    fn public_value(&self) -> &[u8] {
        &self.public
    }

    fn shared_secret(&self, peer: &[u8]) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
        let g = &self.group;
        let encoded = if g.is_x25519() {
            if peer.len() != g.field_len {
                return Err(CryptoError::BadPublicValue);
            }
            peer.to_vec()
        } else {
            if peer.len() != 2 * g.field_len {
                return Err(CryptoError::BadPublicValue);
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
            UnparsedPublicKey::new(g.alg, &encoded),
            CryptoError::BadPublicValue,
            |z| Ok(Zeroizing::new(z.to_vec())),
        )?;
        if secret.len() != g.field_len {
            return Err(CryptoError::BadPublicValue);
        }
        // RFC 7748 §6.1: check for the all-zero output ourselves too, in
        // constant time.
        if g.is_x25519() && secret.iter().fold(0u8, |acc, &b| acc | b) == 0 {
            return Err(CryptoError::BadPublicValue);
        }
        Ok(secret)
    }
}
