//! Certificate path validation (RFC 5280 §6) with `webpki`, on the crypto
//! provider's signature verification algorithms: from the
//! peer's end-entity certificate through the intermediates it sent to one
//! of the trusted CAs, each certificate within its validity at `now`,
//! basic constraints and path length respected, signatures checked, and
//! every certificate on the path checked against the CRLs we hold (a
//! certificate no CRL covers passes, strongSwan's default `revocation =
//! relaxed`). Extended key usage is not required (strongSwan does not
//! require one either; RFC 4945 §5.1.3.12 makes it advisory in practice);
//! a malformed one fails.

use core::fmt;
use core::time::Duration;

use flowsec_crypto::{CryptoError, Provider};
use pki_types::{CertificateDer, UnixTime};
use webpki::{
    EndEntityCert, ExpirationPolicy, KeyPurposeIdIter, OwnedCertRevocationList,
    RevocationCheckDepth, RevocationOptionsBuilder, UnknownStatusPolicy,
};

use super::scheme::Scheme;
use super::x509::Certificate;

/// Why a peer's certificate (or its signature) was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// No CERT payload with an X.509 certificate came, and we hold none
    /// for the peer.
    NoCertificate,
    /// A CERT payload that does not parse, or is too large.
    BadCertificate(String),
    /// The path does not validate (webpki's reason).
    Untrusted(String),
    /// A certificate on the path is revoked by a CRL we hold.
    Revoked,
    /// The wall clock is not known (certificates cannot be checked).
    NoClock,
    /// The certificate does not hold the peer's identity.
    IdMismatch {
        /// The certificate's subject.
        subject: String,
    },
    /// The AUTH payload's method or AlgorithmIdentifier is not one flowsec
    /// verifies, or does not fit the key.
    BadScheme,
    /// The configuration asked for another kind of key or scheme.
    SchemeNotAllowed(Scheme),
    /// The signature does not verify.
    BadSignature,
    /// EAP failed (why): a wrong password, an unknown user, a message out
    /// of turn.
    Eap(String),
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::NoCertificate => f.write_str("no certificate"),
            Rejection::BadCertificate(why) => write!(f, "malformed certificate: {why}"),
            Rejection::Untrusted(why) => write!(f, "certificate not trusted: {why}"),
            Rejection::Revoked => f.write_str("certificate revoked (CRL)"),
            Rejection::NoClock => f.write_str("no wall clock to check certificates against"),
            Rejection::IdMismatch { subject } => {
                write!(f, "identity not in the certificate \"{subject}\"")
            }
            Rejection::BadScheme => f.write_str("signature scheme not supported"),
            Rejection::SchemeNotAllowed(s) => write!(f, "signature scheme {s} not allowed"),
            Rejection::BadSignature => f.write_str("signature does not verify"),
            Rejection::Eap(why) => write!(f, "EAP-MSCHAPv2: {why}"),
        }
    }
}

/// strongSwan's extended key usage policy: any (a malformed extension
/// fails).
struct AnyEku;

impl webpki::ExtendedKeyUsageValidator for AnyEku {
    fn validate(&self, iter: KeyPurposeIdIter<'_, '_>) -> Result<(), webpki::Error> {
        for purpose in iter {
            purpose?;
        }
        Ok(())
    }
}

/// Validates `ee` through `intermediates` to one of `anchors` at `now`
/// (since the Unix epoch), with `crls`, checking signatures with
/// `provider`'s algorithms; a certificate no CRL covers passes
/// (`revocation = relaxed`).
pub fn validate(
    provider: &Provider,
    ee: &Certificate,
    intermediates: &[&Certificate],
    anchors: &[&Certificate],
    crls: &[OwnedCertRevocationList],
    now: Duration,
) -> Result<(), Rejection> {
    validate_with(provider, ee, intermediates, anchors, crls, now, false)
}

/// [`validate`]; with `strict` (`revocation = strict`) every certificate
/// on the path below the anchor must be covered by a CRL we hold.
pub fn validate_with(
    provider: &Provider,
    ee: &Certificate,
    intermediates: &[&Certificate],
    anchors: &[&Certificate],
    crls: &[OwnedCertRevocationList],
    now: Duration,
    strict: bool,
) -> Result<(), Rejection> {
    if strict && crls.is_empty() {
        return Err(Rejection::Untrusted(
            "no CRL to check it against (revocation = strict)".into(),
        ));
    }
    let ee_der = CertificateDer::from(ee.der.as_slice());
    let end = EndEntityCert::try_from(&ee_der).map_err(|e| Rejection::BadCertificate(why(&e)))?;
    let anchor_ders: Vec<CertificateDer<'_>> = anchors
        .iter()
        .map(|a| CertificateDer::from(a.der.as_slice()))
        .collect();
    let anchors: Vec<_> = anchor_ders
        .iter()
        .filter_map(|d| webpki::anchor_from_trusted_cert(d).ok())
        .collect();
    let inter: Vec<CertificateDer<'_>> = intermediates
        .iter()
        .map(|c| CertificateDer::from(c.der.as_slice()))
        .collect();
    let crl_refs: Vec<webpki::CertRevocationList<'_>> =
        crls.iter().map(|c| c.clone().into()).collect();
    let crl_refs: Vec<&webpki::CertRevocationList<'_>> = crl_refs.iter().collect();
    let revocation = RevocationOptionsBuilder::new(&crl_refs).ok().map(|b| {
        b.with_depth(RevocationCheckDepth::Chain)
            .with_status_policy(if strict {
                UnknownStatusPolicy::Deny
            } else {
                UnknownStatusPolicy::Allow
            })
            // strongSwan's strict fails on a stale CRL as on none; relaxed
            // uses what it has.
            .with_expiration_policy(if strict {
                ExpirationPolicy::Enforce
            } else {
                ExpirationPolicy::Ignore
            })
            .build()
    });
    end.verify_for_usage(
        provider.signature_verification().all,
        &anchors,
        &inter,
        UnixTime::since_unix_epoch(now),
        AnyEku,
        revocation,
        None,
    )
    .map(|_| ())
    .map_err(|e| match e {
        webpki::Error::CertRevoked => Rejection::Revoked,
        webpki::Error::UnknownRevocationStatus => {
            Rejection::Untrusted("no CRL covers it (revocation = strict)".into())
        }
        webpki::Error::CrlExpired { .. } => {
            Rejection::Untrusted("the CRL is past its next update (revocation = strict)".into())
        }
        e => Rejection::Untrusted(why(&e)),
    })
}

/// Verifies `signature` over `data` with `cert`'s key by `scheme`, with
/// `provider`'s algorithms.
pub fn verify_signature(
    provider: &Provider,
    cert: &Certificate,
    scheme: Scheme,
    data: &[u8],
    signature: &[u8],
) -> Result<(), Rejection> {
    verify_with_key(provider, cert.key, &cert.spki, scheme, data, signature)
}

/// [`verify_signature`] with a raw public key (swanctl.conf `pubkeys`).
pub fn verify_raw(
    provider: &Provider,
    key: &super::RawPublicKey,
    scheme: Scheme,
    data: &[u8],
    signature: &[u8],
) -> Result<(), Rejection> {
    verify_with_key(provider, key.key, &key.spki, scheme, data, signature)
}

fn verify_with_key(
    provider: &Provider,
    kind: super::KeyKind,
    spki: &[u8],
    scheme: Scheme,
    data: &[u8],
    signature: &[u8],
) -> Result<(), Rejection> {
    if !scheme.fits(kind) {
        return Err(Rejection::BadScheme);
    }
    let scheme = scheme.signature_scheme().ok_or(Rejection::BadScheme)?;
    match provider.verify_signature(scheme, spki, data, signature) {
        Ok(()) => Ok(()),
        Err(CryptoError::UnsupportedSignature) => Err(Rejection::BadScheme),
        Err(_) => Err(Rejection::BadSignature),
    }
}

/// webpki's reason in words.
fn why(e: &webpki::Error) -> String {
    use webpki::Error as E;
    match e {
        E::CertExpired { .. } => "expired".into(),
        E::CertNotValidYet { .. } => "not yet valid".into(),
        E::UnknownIssuer => "issuer not among the trusted CAs".into(),
        E::CaUsedAsEndEntity => "a CA certificate used as end entity".into(),
        E::EndEntityUsedAsCa => "an end-entity certificate used as CA".into(),
        E::PathLenConstraintViolated => "path length constraint violated".into(),
        E::InvalidSignatureForPublicKey => "bad signature on the path".into(),
        E::BadDer | E::BadDerTime | E::TrailingData(_) => "bad DER".into(),
        E::MaximumPathDepthExceeded
        | E::MaximumSignatureChecksExceeded
        | E::MaximumPathBuildCallsExceeded => "path too long or too many candidates".into(),
        other => format!("{other:?}"),
    }
}
