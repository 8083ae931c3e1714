use core::fmt;
use flowsec_wire::iana::{DhGroup, EncrId, IntegId, PrfId};

/// Why a crypto operation or a transform construction failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CryptoError {
    /// No backend of this provider implements the encryption transform.
    UnsupportedEncr(EncrId),
    /// No backend of this provider implements the integrity transform.
    UnsupportedInteg(IntegId),
    /// The provider has no such IKE PRF (transform type 2).
    UnsupportedPrf(PrfId),
    /// The provider has no such key exchange method (transform type 4).
    UnsupportedGroup(DhGroup),
    /// The peer's key exchange public value has the wrong length, fails
    /// RFC 6989's range check, is not on the curve, or gives the all-zero
    /// X25519 output (RFC 7296 §3.4, RFC 6989 §2, RFC 7748 §6.1).
    BadPublicValue,
    /// No private value could be made for the group: only a broken
    /// [`Random`](crate::random::Random) does that (64 out-of-range
    /// scalars in a row).
    KeyGenFailed(DhGroup),
    /// The combination is not allowed (an AEAD with a separate integrity
    /// transform, or NULL encryption with no integrity: RFC 4303 §3.2).
    BadCombination,
    /// The key material has the wrong length for the algorithm.
    BadKeyLength {
        /// What the algorithm accepts, in bytes, as a human-readable list.
        expected: &'static str,
        /// What was given.
        got: usize,
    },
    /// The key is one the algorithm refuses (e.g. 3DES with K1 = K2).
    WeakKey,
    /// The packet is too short for IV + ICV, or its ciphertext is not a
    /// whole number of cipher blocks.
    BadLength,
    /// The integrity check value does not match.
    AuthFailed,
    /// The `engine` backend's thread is gone.
    EngineGone,
    /// A private key the key provider does not load: not a key in the
    /// encoding given, a kind it does not sign with, or one the backend
    /// refuses (why, in the backend's words).
    KeyRejected(&'static str),
    /// The signature scheme is not for this key (an RSA scheme with an
    /// EC key, ECDSA with another hash than the curve's).
    SchemeMismatch,
    /// The backend failed to sign.
    SigningFailed,
    /// Not a DER SubjectPublicKeyInfo.
    BadPublicKey,
    /// The provider has no verification algorithm for this signature
    /// scheme with this kind of public key.
    UnsupportedSignature,
    /// The signature does not verify.
    BadSignature,
}

impl fmt::Display for CryptoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CryptoError::UnsupportedEncr(id) => {
                write!(f, "encryption algorithm {id} not supported")
            }
            CryptoError::UnsupportedInteg(id) => {
                write!(f, "integrity algorithm {id} not supported")
            }
            CryptoError::UnsupportedPrf(id) => write!(f, "PRF {id} not supported"),
            CryptoError::UnsupportedGroup(g) => {
                write!(f, "key exchange method {g} not supported")
            }
            CryptoError::BadPublicValue => f.write_str("invalid key exchange public value"),
            CryptoError::KeyGenFailed(g) => {
                write!(
                    f,
                    "no private value could be made for {g}: broken random source"
                )
            }
            CryptoError::EngineGone => f.write_str("the crypto engine thread is gone"),
            CryptoError::BadCombination => {
                f.write_str("invalid combination: AEAD with integrity, or NULL without integrity")
            }
            CryptoError::BadKeyLength { expected, got } => {
                write!(f, "bad key length: {got} bytes, expected {expected}")
            }
            CryptoError::WeakKey => f.write_str("weak key refused"),
            CryptoError::BadLength => f.write_str("length not valid for this transform"),
            CryptoError::AuthFailed => f.write_str("integrity check failed"),
            CryptoError::KeyRejected(why) => write!(f, "private key refused: {why}"),
            CryptoError::SchemeMismatch => f.write_str("signature scheme does not fit the key"),
            CryptoError::SigningFailed => f.write_str("signing failed"),
            CryptoError::BadPublicKey => f.write_str("not a SubjectPublicKeyInfo"),
            CryptoError::UnsupportedSignature => {
                f.write_str("signature scheme not supported for this public key")
            }
            CryptoError::BadSignature => f.write_str("signature does not verify"),
        }
    }
}

impl std::error::Error for CryptoError {}
