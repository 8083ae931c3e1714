//! Raw public keys: swanctl.conf's `pubkeys` (swanctl.conf(5); the
//! `pubkey/` directory, `load_conns.c` `add_file_list_key()`), a peer's
//! key trusted as it is instead of through a CA, or ours named so that we
//! sign with its private key and send no certificate. A file holds one
//! X.509 SubjectPublicKeyInfo (RFC 5280 §4.1.2.7), PEM `PUBLIC KEY` or
//! DER, what `pki --pub` and `openssl pkey -pubout` write.

use der::{Decode, Encode};

use super::x509::{key_kind, CertError, KeyKind};
use super::Certificate;

/// A public key from a `pubkey/` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawPublicKey {
    /// Its kind.
    pub key: KeyKind,
    /// subjectPublicKey's bits, as a certificate or private key holds them.
    pub public_key: Vec<u8>,
    /// The DER SubjectPublicKeyInfo, that signatures are verified with.
    pub spki: Vec<u8>,
}

impl RawPublicKey {
    /// Parses a file's bytes: PEM `PUBLIC KEY` or DER.
    pub fn parse(bytes: &[u8]) -> Result<RawPublicKey, CertError> {
        let der = super::pem_or_der(bytes, "PUBLIC KEY");
        let spki = spki::SubjectPublicKeyInfoOwned::from_der(&der)
            .map_err(|e| CertError::BadDer(format!("SubjectPublicKeyInfo: {e}")))?;
        let public_key = spki.subject_public_key.raw_bytes().to_vec();
        let key = key_kind(&spki, &public_key)?;
        let spki = spki
            .to_der()
            .map_err(|e| CertError::BadDer(e.to_string()))?;
        Ok(RawPublicKey {
            key,
            public_key,
            spki,
        })
    }

    /// Whether `cert` holds this key.
    pub fn is_in(&self, cert: &Certificate) -> bool {
        cert.spki == self.spki
    }
}
