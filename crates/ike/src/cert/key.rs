//! Private keys as strongSwan's swanctl loads them (`private/`, `rsa/`,
//! `ecdsa/`, `pkcs8/`; PEM or DER; PKCS#1 RSA, SEC1 EC or PKCS#8 of any
//! kind), held by aws-lc-rs (which clears them when dropped), and the
//! signatures IKE_AUTH makes with them (RFC 7427).

use core::fmt;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::KeyPair as RsaKeyPair;
use aws_lc_rs::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair};
use zeroize::Zeroizing;

use super::scheme::{Hash, Scheme};
use super::x509::{Curve, KeyKind};

/// A private key.
pub struct PrivateKey {
    inner: Inner,
    /// Where it was read from (for messages; never its content).
    pub file: String,
}

enum Inner {
    Rsa(RsaKeyPair),
    Ecdsa(Curve, EcdsaKeyPair),
    Ed25519(Ed25519KeyPair),
}

impl fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PrivateKey({}, {})", self.kind(), self.file)
    }
}

/// Why a key file could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyError {
    /// Neither PEM nor DER of a key.
    NotAKey,
    /// A PEM key encrypted with a passphrase.
    Encrypted,
    /// A well-formed key of a kind flowsec does not sign with, or one
    /// aws-lc-rs refuses (for instance RSA below 2048 bits).
    Unsupported(String),
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::NotAKey => {
                f.write_str("no private key in it (PEM or DER: PKCS#1 RSA, SEC1 EC or PKCS#8)")
            }
            KeyError::Encrypted => {
                f.write_str("the key is encrypted; flowsec reads unencrypted keys only")
            }
            KeyError::Unsupported(why) => write!(f, "unsupported key: {why}"),
        }
    }
}

impl PrivateKey {
    /// Reads a key from a file's bytes (`file` names it in messages).
    pub fn parse(bytes: &[u8], file: &str) -> Result<PrivateKey, KeyError> {
        if contains(bytes, b"ENCRYPTED") {
            return Err(KeyError::Encrypted);
        }
        let inner = match pem_block(bytes)? {
            Some((label, der)) => match label.as_str() {
                "RSA PRIVATE KEY" => RsaKeyPair::from_der(&der)
                    .map(Inner::Rsa)
                    .map_err(|e| KeyError::Unsupported(format!("RSA: {e}")))?,
                "EC PRIVATE KEY" => ecdsa(&der, false)?,
                "PRIVATE KEY" => pkcs8(&der)?,
                _ => return Err(KeyError::NotAKey),
            },
            // DER: any of the three encodings.
            None => match RsaKeyPair::from_der(bytes) {
                Ok(k) => Inner::Rsa(k),
                Err(_) => pkcs8(bytes).or_else(|_| ecdsa(bytes, false))?,
            },
        };
        Ok(PrivateKey {
            inner,
            file: file.to_string(),
        })
    }

    /// The key's kind.
    pub fn kind(&self) -> KeyKind {
        match &self.inner {
            Inner::Rsa(k) => KeyKind::Rsa(k.public_modulus_len() as u32 * 8),
            Inner::Ecdsa(c, _) => KeyKind::Ecdsa(*c),
            Inner::Ed25519(_) => KeyKind::Ed25519,
        }
    }

    /// The public key, as a certificate's subjectPublicKey holds it.
    pub fn public_key(&self) -> Vec<u8> {
        match &self.inner {
            Inner::Rsa(k) => k.public_key().as_ref().to_vec(),
            Inner::Ecdsa(_, k) => k.public_key().as_ref().to_vec(),
            Inner::Ed25519(k) => k.public_key().as_ref().to_vec(),
        }
    }

    /// Signs `data` with `scheme`; `None` if the scheme does not fit the
    /// key (an ECDSA hash other than the curve's), or signing failed.
    pub fn sign(&self, scheme: Scheme, data: &[u8]) -> Option<Vec<u8>> {
        let rng = SystemRandom::new();
        match (&self.inner, scheme) {
            (Inner::Rsa(k), Scheme::RsaPkcs1(h) | Scheme::RsaPss(h)) => {
                let pss = matches!(scheme, Scheme::RsaPss(_));
                let pad: &dyn signature::RsaEncoding = match (pss, h) {
                    (false, Hash::Sha256) => &signature::RSA_PKCS1_SHA256,
                    (false, Hash::Sha384) => &signature::RSA_PKCS1_SHA384,
                    (false, Hash::Sha512) => &signature::RSA_PKCS1_SHA512,
                    (true, Hash::Sha256) => &signature::RSA_PSS_SHA256,
                    (true, Hash::Sha384) => &signature::RSA_PSS_SHA384,
                    (true, Hash::Sha512) => &signature::RSA_PSS_SHA512,
                    (_, Hash::Identity) => return None,
                };
                let mut sig = vec![0; k.public_modulus_len()];
                k.sign(pad, &rng, data, &mut sig).ok()?;
                Some(sig)
            }
            (Inner::Ecdsa(c, k), Scheme::Ecdsa(h)) if h == curve_hash(*c) => {
                k.sign(&rng, data).ok().map(|s| s.as_ref().to_vec())
            }
            (Inner::Ed25519(k), Scheme::Ed25519) => Some(k.sign(data).as_ref().to_vec()),
            _ => None,
        }
    }
}

/// The hash an ECDSA key of `c` signs with (aws-lc-rs binds the two).
pub(crate) fn curve_hash(c: Curve) -> Hash {
    match c {
        Curve::P256 => Hash::Sha256,
        Curve::P384 => Hash::Sha384,
        Curve::P521 => Hash::Sha512,
    }
}

/// The first PEM block whose label ends in PRIVATE KEY, decoded into
/// memory that is cleared when dropped; `None` if the bytes are no PEM.
/// A PEM block's label and its DER, cleared when dropped.
type PemBlock = (String, Zeroizing<Vec<u8>>);

fn pem_block(bytes: &[u8]) -> Result<Option<PemBlock>, KeyError> {
    const BEGIN: &[u8] = b"-----BEGIN ";
    let Some(start) = bytes.windows(BEGIN.len()).position(|w| w == BEGIN) else {
        return Ok(None);
    };
    let mut at = start;
    loop {
        let rest = &bytes[at..];
        let label_end = rest[BEGIN.len()..]
            .iter()
            .position(|&b| b == b'-')
            .ok_or(KeyError::NotAKey)?;
        let label = &rest[BEGIN.len()..BEGIN.len() + label_end];
        if label.ends_with(b"PRIVATE KEY") {
            let mut end = b"-----END ".to_vec();
            end.extend_from_slice(label);
            end.extend_from_slice(b"-----");
            let stop = rest
                .windows(end.len())
                .position(|w| w == end)
                .ok_or(KeyError::NotAKey)?;
            let block = &rest[..stop + end.len()];
            let (label, der) = pem_rfc7468::decode_vec(block).map_err(|_| KeyError::NotAKey)?;
            return Ok(Some((label.to_string(), Zeroizing::new(der))));
        }
        let next = rest[1..]
            .windows(BEGIN.len())
            .position(|w| w == BEGIN)
            .ok_or(KeyError::NotAKey)?;
        at += 1 + next;
    }
}

/// A PKCS#8 key of any kind.
fn pkcs8(der: &[u8]) -> Result<Inner, KeyError> {
    if let Ok(k) = RsaKeyPair::from_pkcs8(der) {
        Ok(Inner::Rsa(k))
    } else if let Ok(k) = Ed25519KeyPair::from_pkcs8_maybe_unchecked(der) {
        Ok(Inner::Ed25519(k))
    } else {
        ecdsa(der, true)
    }
}

/// An EC key of any of the three curves (SEC1 or PKCS#8), signing with
/// DER-encoded signatures (RFC 7427 §3).
fn ecdsa(der: &[u8], pkcs8: bool) -> Result<Inner, KeyError> {
    let curves: [(Curve, &'static signature::EcdsaSigningAlgorithm); 3] = [
        (Curve::P256, &signature::ECDSA_P256_SHA256_ASN1_SIGNING),
        (Curve::P384, &signature::ECDSA_P384_SHA384_ASN1_SIGNING),
        (Curve::P521, &signature::ECDSA_P521_SHA512_ASN1_SIGNING),
    ];
    for (c, alg) in curves {
        let k = if pkcs8 {
            EcdsaKeyPair::from_pkcs8(alg, der)
        } else {
            EcdsaKeyPair::from_private_key_der(alg, der)
        };
        if let Ok(k) = k {
            return Ok(Inner::Ecdsa(c, k));
        }
    }
    Err(KeyError::Unsupported(
        "not RSA, Ed25519 or ECDSA on P-256/P-384/P-521".into(),
    ))
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}
