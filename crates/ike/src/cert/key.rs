//! Private keys as strongSwan's swanctl loads them (`private/`, `rsa/`,
//! `ecdsa/`, `pkcs8/`; PEM or DER; PKCS#1 RSA, SEC1 EC or PKCS#8 of any
//! kind, plain or encrypted with a password: [`super::encrypted`]), loaded by the crypto provider's key provider (whose keys are
//! cleared when dropped), and the signatures IKE_AUTH makes with them
//! (RFC 7427).

use core::fmt;

use flowsec_crypto::sign::{
    PrivateKeyDer, PrivatePkcs1KeyDer, PrivatePkcs8KeyDer, PrivateSec1KeyDer, SigningKey,
};
use flowsec_crypto::Provider;
use zeroize::Zeroizing;

use der::Decode;

use super::encrypted::{DecryptError, Plain};
use super::scheme::{Hash, Scheme};
use super::x509::{Curve, KeyKind};

/// A private key (shared, not copied, when credentials are merged).
#[derive(Clone)]
pub struct PrivateKey {
    key: std::sync::Arc<dyn SigningKey>,
    /// Where it was read from (for messages; never its content).
    pub file: String,
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
    /// A key encrypted with a password, and none given for it.
    Encrypted,
    /// None of the passwords given for it decrypts it.
    WrongPassword,
    /// A well-formed key of a kind flowsec does not sign with, or one
    /// the crypto provider refuses (for instance RSA below 2048 bits).
    Unsupported(String),
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::NotAKey => {
                f.write_str("no private key in it (PEM or DER: PKCS#1 RSA, SEC1 EC or PKCS#8)")
            }
            KeyError::Encrypted => f.write_str(
                "the key is encrypted; give its password in swanctl.conf: secrets { \
                 rsa-NAME { file = FILE; secret = PASSWORD } } (or ecdsa-, pkcs8-, private-)",
            ),
            KeyError::WrongPassword => {
                f.write_str("the key is encrypted and no configured secret decrypts it")
            }
            KeyError::Unsupported(why) => write!(f, "unsupported key: {why}"),
        }
    }
}

impl PrivateKey {
    /// Reads a key from a file's bytes with `provider`'s key provider
    /// (`file` names it in messages).
    pub fn parse(provider: &Provider, bytes: &[u8], file: &str) -> Result<PrivateKey, KeyError> {
        Self::parse_with(provider, bytes, file, &[])
    }

    /// [`Self::parse`], decrypting an encrypted key ([`super::encrypted`])
    /// with the first of `passwords` that does (swanctl's
    /// `decrypt_with_config()` tries each `secret` of the matching
    /// sections).
    pub fn parse_with(
        provider: &Provider,
        bytes: &[u8],
        file: &str,
        passwords: &[&[u8]],
    ) -> Result<PrivateKey, KeyError> {
        let plain = Self::parse_plain(provider, bytes, file);
        let encrypted = contains(bytes, b"ENCRYPTED");
        if !encrypted && plain.is_ok() {
            return plain;
        }
        if passwords.is_empty() {
            // A DER file that is no plain key may be an encrypted one.
            let der_encrypted = encrypted
                || !matches!(
                    super::encrypted::decrypt(provider, bytes, b""),
                    Err(DecryptError::NotEncrypted)
                );
            return if der_encrypted {
                Err(KeyError::Encrypted)
            } else {
                plain
            };
        }
        for pw in passwords {
            match super::encrypted::decrypt(provider, bytes, pw) {
                // A wrong password passes the padding check one time in
                // 256 or so; its "key" is then no DER.
                Ok((_, der)) if der::asn1::AnyRef::from_der(&der).is_err() => continue,
                Ok((format, der)) => return Self::load(provider, format, &der, file),
                Err(DecryptError::WrongPassword) => continue,
                // A DER file that is neither a plain key nor encrypted.
                Err(DecryptError::NotEncrypted) if !encrypted => return plain,
                Err(DecryptError::NotEncrypted) => return Err(KeyError::NotAKey),
                Err(DecryptError::Unsupported(why)) => return Err(KeyError::Unsupported(why)),
            }
        }
        Err(KeyError::WrongPassword)
    }

    /// A decrypted key, in `format`.
    fn load(
        provider: &Provider,
        format: Plain,
        der: &[u8],
        file: &str,
    ) -> Result<PrivateKey, KeyError> {
        let der = match format {
            Plain::Pkcs1 => PrivateKeyDer::Pkcs1(PrivatePkcs1KeyDer::from(der)),
            Plain::Sec1 => PrivateKeyDer::Sec1(PrivateSec1KeyDer::from(der)),
            Plain::Pkcs8 => PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(der)),
        };
        let key = provider
            .load_private_key(der)
            .map_err(|e| KeyError::Unsupported(e.to_string()))?;
        Ok(PrivateKey {
            key: key.into(),
            file: file.to_string(),
        })
    }

    fn parse_plain(provider: &Provider, bytes: &[u8], file: &str) -> Result<PrivateKey, KeyError> {
        if contains(bytes, b"ENCRYPTED") {
            return Err(KeyError::Encrypted);
        }
        let load = |der| provider.load_private_key(der);
        let pkcs1 = |der| PrivateKeyDer::Pkcs1(PrivatePkcs1KeyDer::from(der));
        let sec1 = |der| PrivateKeyDer::Sec1(PrivateSec1KeyDer::from(der));
        let pkcs8 = |der| PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(der));
        let unsupported = |e: flowsec_crypto::CryptoError| KeyError::Unsupported(e.to_string());
        let key = match pem_block(bytes)? {
            Some((label, der)) => match label.as_str() {
                "RSA PRIVATE KEY" => {
                    load(pkcs1(&der[..])).map_err(|e| KeyError::Unsupported(format!("RSA: {e}")))?
                }
                "EC PRIVATE KEY" => load(sec1(&der[..])).map_err(unsupported)?,
                "PRIVATE KEY" => load(pkcs8(&der[..])).map_err(unsupported)?,
                _ => return Err(KeyError::NotAKey),
            },
            // DER: any of the three encodings.
            None => load(pkcs1(bytes))
                .or_else(|_| load(pkcs8(bytes)))
                .or_else(|_| load(sec1(bytes)))
                .map_err(unsupported)?,
        };
        Ok(PrivateKey {
            key: key.into(),
            file: file.to_string(),
        })
    }

    /// The key's kind.
    pub fn kind(&self) -> KeyKind {
        self.key.kind()
    }

    /// The public key, as a certificate's subjectPublicKey holds it.
    pub fn public_key(&self) -> Vec<u8> {
        self.key.public_key().to_vec()
    }

    /// Signs `data` with `scheme`; `None` if the scheme does not fit the
    /// key (an ECDSA hash other than the curve's), or signing failed.
    pub fn sign(&self, scheme: Scheme, data: &[u8]) -> Option<Vec<u8>> {
        self.key.sign(scheme.signature_scheme()?, data).ok()
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

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}
