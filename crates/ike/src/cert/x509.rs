//! One X.509 certificate (RFC 5280), parsed once with `x509-cert` for
//! what IKE needs of it: subject and alternative names (to match an IKE
//! identity, RFC 4945 §3.1), the public key's kind, whether it is a CA, and
//! the SHA-1 of its SubjectPublicKeyInfo (what CERTREQ names, RFC 7296
//! §3.7). Path validation is `webpki`'s, signatures the crypto
//! provider's ([`super::verify`]).

use core::fmt;
use std::net::IpAddr;

use der::{Decode, Encode};
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::{BasicConstraints, SubjectAltName};
use x509_cert::Certificate as X509;

use crate::config::{IdMatch, Identity};

/// The largest certificate accepted (a bound on hostile input; RSA-8192
/// certificates with many names stay well below).
pub const MAX_CERT_LEN: usize = 16 * 1024;

pub use flowsec_crypto::sign::{Curve, KeyKind};

/// Why a certificate could not be used at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertError {
    /// Longer than [`MAX_CERT_LEN`].
    TooLong(usize),
    /// Not a DER X.509 certificate.
    BadDer(String),
    /// A public key other than RSA, ECDSA P-256/384/521 or Ed25519.
    UnsupportedKey(String),
}

impl fmt::Display for CertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CertError::TooLong(n) => write!(f, "{n} bytes, more than {MAX_CERT_LEN}"),
            CertError::BadDer(why) => write!(f, "not an X.509 certificate: {why}"),
            CertError::UnsupportedKey(k) => write!(f, "unsupported public key {k}"),
        }
    }
}

/// A parsed certificate.
#[derive(Clone, PartialEq, Eq)]
pub struct Certificate {
    /// The DER encoding, as received or read.
    pub der: Vec<u8>,
    /// The subject Name (DER).
    pub subject: Vec<u8>,
    /// The issuer Name (DER).
    pub issuer: Vec<u8>,
    /// subjectAltName entries IKE can match: DNS names, e-mail addresses,
    /// IP addresses and directory names.
    pub alt_names: Vec<Identity>,
    /// The public key's kind.
    pub key: KeyKind,
    /// subjectPublicKey's bits (RSAPublicKey DER, an EC point, or the
    /// Ed25519 key), to pair a private key with the certificate.
    pub public_key: Vec<u8>,
    /// The DER SubjectPublicKeyInfo, that signatures are verified with.
    pub spki: Vec<u8>,
    /// SHA-1 of the DER SubjectPublicKeyInfo: a CA's name in CERTREQ
    /// (RFC 7296 §3.7).
    pub spki_sha1: [u8; 20],
    /// basicConstraints cA.
    pub ca: bool,
}

impl fmt::Debug for Certificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Certificate(\"{}\", {})", self.subject_text(), self.key)
    }
}

const RSA: &str = "1.2.840.113549.1.1.1";
const EC: &str = "1.2.840.10045.2.1";
const ED25519: &str = "1.3.101.112";
const P256: &str = "1.2.840.10045.3.1.7";
const P384: &str = "1.3.132.0.34";
const P521: &str = "1.3.132.0.35";
const SUBJECT_ALT_NAME: &str = "2.5.29.17";
const BASIC_CONSTRAINTS: &str = "2.5.29.19";

impl Certificate {
    /// Parses a DER certificate.
    pub fn parse(der: &[u8]) -> Result<Certificate, CertError> {
        if der.len() > MAX_CERT_LEN {
            return Err(CertError::TooLong(der.len()));
        }
        let x = X509::from_der(der).map_err(|e| CertError::BadDer(e.to_string()))?;
        let tbs = &x.tbs_certificate;
        let spki = &tbs.subject_public_key_info;
        let bad = |e: der::Error| CertError::BadDer(e.to_string());
        let public_key = spki.subject_public_key.raw_bytes().to_vec();
        let key = key_kind(spki, &public_key)?;
        let mut alt_names = Vec::new();
        let mut ca = false;
        for ext in tbs.extensions.iter().flatten() {
            let value = ext.extn_value.as_bytes();
            match ext.extn_id.to_string().as_str() {
                SUBJECT_ALT_NAME => {
                    let names = SubjectAltName::from_der(value).map_err(bad)?;
                    alt_names.extend(names.0.iter().filter_map(general_name));
                }
                BASIC_CONSTRAINTS => ca = BasicConstraints::from_der(value).map_err(bad)?.ca,
                _ => {}
            }
        }
        let spki_der = spki.to_der().map_err(bad)?;
        Ok(Certificate {
            der: der.to_vec(),
            subject: tbs.subject.to_der().map_err(bad)?,
            issuer: tbs.issuer.to_der().map_err(bad)?,
            alt_names,
            key,
            public_key,
            spki_sha1: sha1(&spki_der),
            spki: spki_der,
            ca,
        })
    }

    /// The subject as strongSwan writes it (`C=CH, O=…, CN=…`).
    pub fn subject_text(&self) -> String {
        crate::config::dn::to_text(&self.subject)
    }

    /// Whether it is self-signed (subject and issuer equal; the signature
    /// is checked when it is used as a trust anchor's path end).
    pub fn self_signed(&self) -> bool {
        self.subject == self.issuer
    }

    /// How well the certificate holds `id` (strongSwan's
    /// `x509_cert.has_subject()`): a DN against the subject (or a
    /// directoryName), any other identity against the subjectAltNames.
    /// An empty subject holds no identity (its names are its
    /// subjectAltNames).
    pub fn has_subject(&self, id: &Identity) -> IdMatch {
        let subject =
            crate::config::dn::is_named(&self.subject).then(|| Identity::Dn(self.subject.clone()));
        subject
            .iter()
            .chain(&self.alt_names)
            .map(|name| name.match_quality(id))
            .max()
            .unwrap_or(IdMatch::None)
    }
}

pub(crate) fn key_kind(
    spki: &spki::SubjectPublicKeyInfoOwned,
    bits: &[u8],
) -> Result<KeyKind, CertError> {
    let alg = spki.algorithm.oid.to_string();
    match alg.as_str() {
        RSA => {
            let k = pkcs1::RsaPublicKey::from_der(bits)
                .map_err(|e| CertError::BadDer(format!("RSA public key: {e}")))?;
            let m = k.modulus.as_bytes();
            let lead = m.iter().position(|&b| b != 0).unwrap_or(m.len());
            let m = &m[lead..];
            let top = m.first().map_or(0, |b| 8 - b.leading_zeros());
            Ok(KeyKind::Rsa((m.len().saturating_sub(1) * 8) as u32 + top))
        }
        EC => {
            let curve = spki
                .algorithm
                .parameters
                .as_ref()
                .and_then(|p| p.decode_as::<der::oid::ObjectIdentifier>().ok())
                .map(|o| o.to_string());
            match curve.as_deref() {
                Some(P256) => Ok(KeyKind::Ecdsa(Curve::P256)),
                Some(P384) => Ok(KeyKind::Ecdsa(Curve::P384)),
                Some(P521) => Ok(KeyKind::Ecdsa(Curve::P521)),
                other => Err(CertError::UnsupportedKey(format!(
                    "ECDSA on curve {}",
                    other.unwrap_or("?")
                ))),
            }
        }
        ED25519 => Ok(KeyKind::Ed25519),
        other => Err(CertError::UnsupportedKey(other.to_string())),
    }
}

/// A subjectAltName as an IKE identity, for the kinds IKE can match.
fn general_name(n: &GeneralName) -> Option<Identity> {
    Some(match n {
        GeneralName::DnsName(s) => Identity::Fqdn(s.as_str().to_string()),
        GeneralName::Rfc822Name(s) => Identity::Email(s.as_str().to_string()),
        GeneralName::IpAddress(o) => match o.as_bytes().len() {
            4 => Identity::from(IpAddr::from(<[u8; 4]>::try_from(o.as_bytes()).ok()?)),
            16 => Identity::from(IpAddr::from(<[u8; 16]>::try_from(o.as_bytes()).ok()?)),
            _ => return None,
        },
        GeneralName::DirectoryName(name) => Identity::Dn(name.to_der().ok()?),
        _ => return None,
    })
}

/// SHA-1 (for CERTREQ's CA hashes only, as RFC 7296 §3.7 prescribes).
pub(crate) fn sha1(data: &[u8]) -> [u8; 20] {
    flowsec_crypto::fixed::sha1(&[data])
}
