//! Signatures for IKEv2's public-key authentication (RFC 7296 §2.15,
//! RFC 7427, RFC 8420) and for the certificate paths behind it, in the
//! shape of rustls' `CryptoProvider`: a [`KeyProvider`] that loads a
//! private key into a [`SigningKey`], and the
//! [`SignatureVerificationAlgorithms`] that webpki validates paths with
//! and IKE checks AUTH payloads with.
//!
//! The verification algorithms are rustls-pki-types'
//! [`SignatureVerificationAlgorithm`]s, so that webpki takes them as they
//! are; this crate implements them (see [`crate::backend`]), webpki
//! brings none of its own.
//!
//! What is protocol stays in the IKE crate: the AUTH payload's
//! AlgorithmIdentifier, PEM, which certificate holds which key.

use core::fmt;

pub use pki_types::{
    AlgorithmIdentifier, InvalidSignature, PrivateKeyDer, PrivatePkcs1KeyDer, PrivatePkcs8KeyDer,
    PrivateSec1KeyDer, SignatureVerificationAlgorithm,
};

use crate::CryptoError;

/// A signature scheme as IKE's AUTH payload names it (RFC 7427 §3): the
/// padding and hash for RSA, the hash for ECDSA (the curve is the key's),
/// or Ed25519 (RFC 8420).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SignatureScheme {
    /// RSASSA-PKCS1-v1_5 with SHA-256 (RFC 8017 §8.2).
    RsaPkcs1Sha256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    RsaPkcs1Sha384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    RsaPkcs1Sha512,
    /// RSASSA-PSS with SHA-256, MGF1 with SHA-256 and a 32-byte salt
    /// (RFC 8017 §8.1).
    RsaPssSha256,
    /// RSASSA-PSS with SHA-384, MGF1 with SHA-384 and a 48-byte salt.
    RsaPssSha384,
    /// RSASSA-PSS with SHA-512, MGF1 with SHA-512 and a 64-byte salt.
    RsaPssSha512,
    /// ECDSA with SHA-256, the signature DER-encoded (RFC 7427 §3).
    EcdsaSha256,
    /// ECDSA with SHA-384, DER-encoded.
    EcdsaSha384,
    /// ECDSA with SHA-512, DER-encoded.
    EcdsaSha512,
    /// Ed25519 (RFC 8032 §5.1; RFC 8420 for IKE).
    Ed25519,
}

impl SignatureScheme {
    /// Every scheme.
    pub const ALL: [SignatureScheme; 10] = [
        SignatureScheme::RsaPkcs1Sha256,
        SignatureScheme::RsaPkcs1Sha384,
        SignatureScheme::RsaPkcs1Sha512,
        SignatureScheme::RsaPssSha256,
        SignatureScheme::RsaPssSha384,
        SignatureScheme::RsaPssSha512,
        SignatureScheme::EcdsaSha256,
        SignatureScheme::EcdsaSha384,
        SignatureScheme::EcdsaSha512,
        SignatureScheme::Ed25519,
    ];
}

/// A public key's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyKind {
    /// RSA, with the modulus size in bits.
    Rsa(u32),
    /// ECDSA on a NIST curve.
    Ecdsa(Curve),
    /// Ed25519 (RFC 8410).
    Ed25519,
}

/// The NIST curves flowsec signs and verifies with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Curve {
    /// P-256 (secp256r1).
    P256,
    /// P-384 (secp384r1).
    P384,
    /// P-521 (secp521r1).
    P521,
}

impl fmt::Display for KeyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyKind::Rsa(bits) => write!(f, "RSA {bits} bits"),
            KeyKind::Ecdsa(Curve::P256) => f.write_str("ECDSA P-256"),
            KeyKind::Ecdsa(Curve::P384) => f.write_str("ECDSA P-384"),
            KeyKind::Ecdsa(Curve::P521) => f.write_str("ECDSA P-521"),
            KeyKind::Ed25519 => f.write_str("Ed25519"),
        }
    }
}

/// A private key that signs. Implementations clear the key when dropped
/// and never show it (the `Debug` of `dyn SigningKey` prints its kind).
pub trait SigningKey: Send + Sync {
    /// The key's kind.
    fn kind(&self) -> KeyKind;
    /// The public key as a certificate's subjectPublicKey holds it: the
    /// RSAPublicKey DER, the uncompressed EC point, or the 32 Ed25519
    /// octets.
    fn public_key(&self) -> &[u8];
    /// `message` signed with `scheme`.
    ///
    /// # Errors
    /// `SchemeMismatch` when `scheme` is not for this key's kind, or is
    /// ECDSA with another hash than the curve's (SHA-256 for P-256,
    /// SHA-384 for P-384, SHA-512 for P-521: aws-lc binds them);
    /// `SigningFailed` when the backend fails.
    fn sign(&self, scheme: SignatureScheme, message: &[u8]) -> Result<Vec<u8>, CryptoError>;
}

impl fmt::Debug for dyn SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SigningKey({})", self.kind())
    }
}

/// Loads private keys (rustls' `KeyProvider`).
pub trait KeyProvider: Send + Sync {
    /// The key in `der`: RSA in PKCS#1, EC in SEC1, or any of RSA, ECDSA
    /// (P-256, P-384, P-521) and Ed25519 in PKCS#8.
    ///
    /// # Errors
    /// `KeyRejected` when the DER is no such key, or a key the backend
    /// refuses (RSA below 2048 bits, a point not on the curve).
    fn load_private_key(&self, der: PrivateKeyDer<'_>) -> Result<Box<dyn SigningKey>, CryptoError>;
}

impl fmt::Debug for dyn KeyProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyProvider")
    }
}

/// The signature verification algorithms a provider has (rustls'
/// `WebPkiSupportedAlgorithms`): `all` for certificate paths, and the
/// ones each [`SignatureScheme`] may use for an AUTH payload, the
/// public key's algorithm choosing among them (one per curve for ECDSA).
#[derive(Clone, Copy)]
pub struct SignatureVerificationAlgorithms {
    /// Every algorithm a certificate or CRL may be signed with, as
    /// webpki's `verify_for_usage` takes them.
    pub all: &'static [&'static dyn SignatureVerificationAlgorithm],
    /// The algorithms of each scheme; a scheme not listed is not verified.
    pub mapping: &'static [(
        SignatureScheme,
        &'static [&'static dyn SignatureVerificationAlgorithm],
    )],
}

impl SignatureVerificationAlgorithms {
    /// The algorithms of `scheme` (none if it is not supported).
    pub fn for_scheme(
        &self,
        scheme: SignatureScheme,
    ) -> &'static [&'static dyn SignatureVerificationAlgorithm] {
        self.mapping
            .iter()
            .find(|(s, _)| *s == scheme)
            .map_or(&[], |(_, algs)| *algs)
    }

    /// The schemes it verifies, in its order.
    pub fn schemes(&self) -> Vec<SignatureScheme> {
        self.mapping.iter().map(|(s, _)| *s).collect()
    }

    /// Verifies `signature` over `message` by `scheme` with the public
    /// key of `spki`, a DER SubjectPublicKeyInfo (RFC 5280 §4.1.2.7),
    /// as webpki verifies with an end-entity certificate's key.
    ///
    /// # Errors
    /// `BadPublicKey` when `spki` is not a SubjectPublicKeyInfo;
    /// `UnsupportedSignature` when no algorithm of `scheme` takes its
    /// kind of key; `BadSignature` when the signature does not verify.
    pub fn verify(
        &self,
        scheme: SignatureScheme,
        spki: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), CryptoError> {
        let (alg_id, key) = spki_parts(spki).ok_or(CryptoError::BadPublicKey)?;
        let mut fitting = self
            .for_scheme(scheme)
            .iter()
            .filter(|a| a.public_key_alg_id().as_ref() == alg_id)
            .peekable();
        if fitting.peek().is_none() {
            return Err(CryptoError::UnsupportedSignature);
        }
        if fitting.any(|a| a.verify_signature(key, message, signature).is_ok()) {
            Ok(())
        } else {
            Err(CryptoError::BadSignature)
        }
    }
}

impl fmt::Debug for SignatureVerificationAlgorithms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignatureVerificationAlgorithms")
            .field("all", &self.all.len())
            .field("schemes", &self.schemes())
            .finish()
    }
}

/// The AlgorithmIdentifier's contents (without its SEQUENCE header, as
/// webpki compares them) and the subjectPublicKey's octets of a DER
/// SubjectPublicKeyInfo; `None` unless it is exactly one, with a
/// whole-octet BIT STRING.
fn spki_parts(spki: &[u8]) -> Option<(&[u8], &[u8])> {
    const SEQUENCE: u8 = 0x30;
    const BIT_STRING: u8 = 0x03;
    let (body, rest) = der_tlv(spki, SEQUENCE)?;
    if !rest.is_empty() {
        return None;
    }
    let (alg, rest) = der_tlv(body, SEQUENCE)?;
    let (bits, rest) = der_tlv(rest, BIT_STRING)?;
    match (bits.split_first(), rest.is_empty()) {
        (Some((0, key)), true) => Some((alg, key)),
        _ => None,
    }
}

/// One DER element of tag `tag` at the start of `input`: its contents
/// and what follows. Definite lengths up to two octets (a
/// SubjectPublicKeyInfo of RSA-8192 is about 1 KB), minimally encoded.
fn der_tlv(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (&t, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    if t != tag {
        return None;
    }
    let (len, rest) = match first {
        0..=0x7f => (usize::from(first), rest),
        0x81 => {
            let (&b, rest) = rest.split_first()?;
            (b >= 0x80).then_some((usize::from(b), rest))?
        }
        0x82 => {
            let [hi, lo] = *rest.first_chunk::<2>()?;
            let len = usize::from(u16::from_be_bytes([hi, lo]));
            (len >= 0x100).then_some((len, &rest[2..]))?
        }
        _ => return None,
    };
    (rest.len() >= len).then(|| rest.split_at(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spki_parts_of_an_ed25519_key_and_hostile_input() {
        // RFC 8410 §10.1's public key.
        let spki = hex::decode(
            "302a300506032b657003210019bf44096984cdfe8541bac167dc3b96c85086aa30b6b6cb0c5c38ad703166e1",
        )
        .unwrap();
        let (alg, key) = spki_parts(&spki).unwrap();
        assert_eq!(alg, &hex::decode("06032b6570").unwrap()[..]);
        assert_eq!(key.len(), 32);
        assert_eq!(spki_parts(&spki[..spki.len() - 1]), None);
        let mut trailing = spki.clone();
        trailing.push(0);
        assert_eq!(spki_parts(&trailing), None);
        // Unused bits in the BIT STRING.
        let mut unused = spki.clone();
        unused[11] = 1;
        assert_eq!(spki_parts(&unused), None);
        // A long form for a short length is not DER.
        assert_eq!(der_tlv(&[0x30, 0x81, 0x01, 0x00], 0x30), None);
        assert_eq!(der_tlv(&[0x30, 0x82, 0x00, 0x01, 0x00], 0x30), None);
        assert_eq!(der_tlv(&[0x30, 0x83, 0, 0, 1, 0], 0x30), None);
        assert_eq!(der_tlv(&[], 0x30), None);
    }
}
