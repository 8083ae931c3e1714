//! Certificates and private keys for IKEv2 public-key authentication
//! (RFC 7296 §2.15, §3.6–3.8; RFC 7427 signatures; RFC 4945 profile), laid
//! out as strongSwan's swanctl reads them (`swanctl --load-creds`,
//! `load_creds.c`): next to the configuration file,
//!
//! | directory  | holds                                        |
//! |------------|----------------------------------------------|
//! | `x509/`    | end-entity certificates (ours, or peers'), and intermediate CAs |
//! | `x509ca/`  | CA certificates: the trust anchors           |
//! | `x509crl/` | CRLs                                         |
//! | `pubkey/`  | raw public keys (`pubkeys`)                   |
//! | `private/`, `rsa/`, `ecdsa/`, `pkcs8/` | private keys (PEM or DER; encrypted ones with their `secrets` password) |
//!
//! Reading the files is the only I/O here ([`Credentials::load`]); what IKE
//! does with them is sans-I/O ([`verify`], [`key`]).

pub mod encrypted;
pub mod key;
pub mod raw_key;
pub mod scheme;
pub mod verify;
pub mod x509;

use core::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use flowsec_crypto::fixed::sha256;
use flowsec_crypto::Provider;
use webpki::OwnedCertRevocationList;
use zeroize::Zeroizing;

pub use key::PrivateKey;
pub use raw_key::RawPublicKey;
pub use scheme::{Hash, HashSet, Scheme};
pub use verify::Rejection;
pub use x509::{Certificate, KeyKind};

use crate::config::{IdMatch, Identity, KeySecret};

/// The largest credential file read (certificates, keys and CRLs are a
/// few KB).
const MAX_FILE: u64 = 1 << 20;

/// Credentials read from a swanctl directory.
#[derive(Clone, Default)]
pub struct Credentials {
    inner: Arc<Inner>,
}

#[derive(Default, Clone)]
struct Inner {
    certs: Vec<(String, Certificate)>,
    cas: Vec<(String, Certificate)>,
    crls: Vec<(String, OwnedCertRevocationList)>,
    keys: Vec<PrivateKey>,
    pubkeys: Vec<(String, RawPublicKey)>,
    /// SHA-256 over every file read, for equality (a hash IKE fixes, as
    /// [`flowsec_crypto::fixed`] has them).
    digest: Vec<u8>,
}

impl PartialEq for Credentials {
    fn eq(&self, other: &Self) -> bool {
        self.inner.digest == other.inner.digest
    }
}

impl Eq for Credentials {}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names =
            |v: &[(String, Certificate)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        f.debug_struct("Credentials")
            .field("certs", &names(&self.inner.certs))
            .field("cas", &names(&self.inner.cas))
            .field("crls", &self.inner.crls.len())
            .field("keys", &self.inner.keys)
            .field(
                "pubkeys",
                &self
                    .inner
                    .pubkeys
                    .iter()
                    .map(|(n, _)| n)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// A credential file that could not be used: its path and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredError {
    /// The file (or directory).
    pub file: PathBuf,
    /// Why.
    pub reason: String,
}

impl fmt::Display for CredError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.reason)
    }
}

impl std::error::Error for CredError {}

/// The subdirectories holding private keys.
const KEY_DIRS: [&str; 4] = ["private", "rsa", "ecdsa", "pkcs8"];

impl Credentials {
    /// Reads every credential under `dir` (the directories of the table
    /// above; a missing one holds nothing), the private keys loaded by
    /// `provider`'s key provider. A file that cannot be read or used is an
    /// error naming it.
    pub fn load(provider: &Provider, dir: &Path) -> Result<Credentials, CredError> {
        Self::load_with(provider, dir, &[], &[])
    }

    /// [`Self::load`], with the CA certificates `anchors` (files outside
    /// `x509ca/`: swanctl.conf's `authorities`) as if they were in
    /// `x509ca/`, named by their path, and the encrypted private keys
    /// decrypted with the passwords of `key_secrets` that name them.
    pub fn load_with(
        provider: &Provider,
        dir: &Path,
        anchors: &[PathBuf],
        key_secrets: &[KeySecret],
    ) -> Result<Credentials, CredError> {
        let mut inner = Inner::default();
        let mut all = Vec::new();
        for (file, bytes) in read_dir(&dir.join("x509"))? {
            let cert = parse_cert(&file, &bytes)?;
            inner.certs.push((name(&file), cert));
            all.extend_from_slice(&bytes);
        }
        let mut cas = read_dir(&dir.join("x509ca"))?;
        let named = cas.len();
        for path in anchors {
            cas.push((path.clone(), read_file(path)?));
        }
        for (i, (file, bytes)) in cas.into_iter().enumerate() {
            let cert = parse_cert(&file, &bytes)?;
            if !cert.ca {
                return Err(err(
                    &file,
                    "not a CA certificate (basicConstraints cA is not set)",
                ));
            }
            let n = if i < named {
                name(&file)
            } else {
                file.display().to_string()
            };
            inner.cas.push((n, cert));
            all.extend_from_slice(&bytes);
        }
        for (file, bytes) in read_dir(&dir.join("x509crl"))? {
            let der = pem_or_der(&bytes, "X509 CRL");
            let crl = OwnedCertRevocationList::from_der(&der)
                .map_err(|e| err(&file, &format!("not a CRL flowsec reads: {e:?}")))?;
            inner.crls.push((name(&file), crl));
            all.extend_from_slice(&bytes);
        }
        for (file, bytes) in read_dir(&dir.join("pubkey"))? {
            let key = RawPublicKey::parse(&bytes).map_err(|e| err(&file, &e.to_string()))?;
            inner.pubkeys.push((name(&file), key));
            all.extend_from_slice(&bytes);
        }
        for sub in KEY_DIRS {
            for (file, bytes) in read_dir(&dir.join(sub))? {
                let n = name(&file);
                let passwords: Vec<&[u8]> = key_secrets
                    .iter()
                    .filter(|s| s.names(sub, &n))
                    .flat_map(|s| s.passwords.iter().map(|p| p.as_bytes()))
                    .collect();
                let key =
                    PrivateKey::parse_with(provider, &bytes, &format!("{sub}/{n}"), &passwords)
                        .map_err(|e| err(&file, &e.to_string()))?;
                all.extend_from_slice(&key.public_key());
                inner.keys.push(key);
            }
        }
        inner.digest = sha256(&[&all]).to_vec();
        Ok(Credentials {
            inner: Arc::new(inner),
        })
    }

    /// Credentials given directly (tests, and callers with their own
    /// storage).
    pub fn new(
        certs: Vec<(String, Certificate)>,
        cas: Vec<(String, Certificate)>,
        keys: Vec<PrivateKey>,
        crls: Vec<(String, OwnedCertRevocationList)>,
    ) -> Credentials {
        let mut all = Vec::new();
        for (_, c) in certs.iter().chain(&cas) {
            all.extend_from_slice(&c.der);
        }
        for k in &keys {
            all.extend_from_slice(&k.public_key());
        }
        for (n, _) in &crls {
            all.extend_from_slice(n.as_bytes());
        }
        let digest = sha256(&[&all]).to_vec();
        Credentials {
            inner: Arc::new(Inner {
                certs,
                cas,
                crls,
                keys,
                pubkeys: Vec::new(),
                digest,
            }),
        }
    }

    /// These credentials with `other`'s beside them (what vici loaded
    /// beside the swanctl directories'): certificates, CAs, CRLs, keys.
    pub fn merged(&self, other: &Credentials) -> Credentials {
        let (a, b) = (&self.inner, &other.inner);
        if b.certs.is_empty() && b.cas.is_empty() && b.keys.is_empty() && b.crls.is_empty() {
            return self.clone();
        }
        let join = |x: &[(String, Certificate)], y: &[(String, Certificate)]| {
            x.iter().chain(y).cloned().collect()
        };
        let merged = Credentials::new(
            join(&a.certs, &b.certs),
            join(&a.cas, &b.cas),
            a.keys.iter().chain(&b.keys).cloned().collect(),
            a.crls.iter().chain(&b.crls).cloned().collect(),
        );
        let mut inner = Arc::unwrap_or_clone(merged.inner);
        inner.pubkeys = a.pubkeys.iter().chain(&b.pubkeys).cloned().collect();
        Credentials {
            inner: Arc::new(inner),
        }
    }

    /// The certificate `x509/NAME`.
    pub fn cert(&self, name: &str) -> Option<&Certificate> {
        self.inner
            .certs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c)
    }

    /// The CA certificate `x509ca/NAME`.
    pub fn ca(&self, name: &str) -> Option<&Certificate> {
        self.inner
            .cas
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c)
    }

    /// Every certificate of `x509/` (ours, intermediates, peers').
    pub fn certs(&self) -> impl Iterator<Item = &Certificate> {
        self.inner.certs.iter().map(|(_, c)| c)
    }

    /// The raw public key `pubkey/NAME`.
    pub fn pubkey(&self, name: &str) -> Option<&RawPublicKey> {
        self.inner
            .pubkeys
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, k)| k)
    }

    /// The private key of a raw public key, if we hold it.
    pub fn key_of(&self, public: &RawPublicKey) -> Option<&PrivateKey> {
        self.inner
            .keys
            .iter()
            .find(|k| k.public_key() == public.public_key)
    }

    /// Every CA certificate.
    pub fn cas(&self) -> impl Iterator<Item = &Certificate> {
        self.inner.cas.iter().map(|(_, c)| c)
    }

    /// The CRLs.
    pub fn crls(&self) -> Vec<OwnedCertRevocationList> {
        self.inner.crls.iter().map(|(_, c)| c.clone()).collect()
    }

    /// The private key of `cert`, if we hold it.
    pub fn key_for(&self, cert: &Certificate) -> Option<&PrivateKey> {
        self.inner
            .keys
            .iter()
            .find(|k| k.public_key() == cert.public_key)
    }

    /// Our certificate for identity `id` when none is configured: the
    /// best match among `x509/` whose key we hold (strongSwan looks up a
    /// certificate with a private key by the local identity).
    pub fn cert_for(&self, id: &Identity) -> Option<&Certificate> {
        self.inner
            .certs
            .iter()
            .map(|(_, c)| c)
            .filter(|c| self.key_for(c).is_some())
            .map(|c| (c.has_subject(id), c))
            .filter(|(m, _)| *m != IdMatch::None)
            .max_by_key(|(m, _)| *m)
            .map(|(_, c)| c)
    }

    /// The intermediate CAs kept in `x509/`: its certificates with
    /// basicConstraints cA that are not self-signed. strongSwan builds
    /// paths from every certificate it loaded; only the trust anchors must
    /// be in `x509ca/`. They complete our own chain ([`Self::chain_of`])
    /// and a peer's (`auth::pubkey`), and are never anchors themselves.
    pub fn intermediates(&self) -> impl Iterator<Item = &Certificate> {
        self.inner
            .certs
            .iter()
            .map(|(_, c)| c)
            .filter(|c| c.ca && !c.self_signed())
    }

    /// The CA certificates that issued `cert` and its issuers, up to (not
    /// including) a self-signed root, found among `x509ca/` and the
    /// [`Self::intermediates`] of `x509/`: the intermediates a peer
    /// needs, in path order (RFC 7296 §3.6 sends them after ours).
    pub fn chain_of(&self, cert: &Certificate) -> Vec<&Certificate> {
        let mut chain: Vec<&Certificate> = Vec::new();
        let mut at = cert;
        while let Some(ca) = self
            .cas()
            .chain(self.intermediates())
            .find(|ca| ca.subject == at.issuer && !std::ptr::eq(*ca, at))
        {
            if ca.self_signed() || chain.len() >= 8 || chain.iter().any(|c| std::ptr::eq(*c, ca)) {
                break;
            }
            chain.push(ca);
            at = ca;
        }
        chain
    }
}

fn err(file: &Path, reason: &str) -> CredError {
    CredError {
        file: file.to_path_buf(),
        reason: reason.to_string(),
    }
}

fn name(file: &Path) -> String {
    file.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The regular files of `dir`, sorted by name, with their contents
/// (cleared from memory when dropped); nothing if `dir` does not exist.
/// A file and its contents, cleared when dropped.
type FileBytes = (PathBuf, Zeroizing<Vec<u8>>);

fn read_dir(dir: &Path) -> Result<Vec<FileBytes>, CredError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(err(dir, &e.to_string())),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let bytes = read_file(&f)?;
        out.push((f, bytes));
    }
    Ok(out)
}

/// One credential file's contents (at most [`MAX_FILE`] bytes), cleared
/// when dropped.
fn read_file(f: &Path) -> Result<Zeroizing<Vec<u8>>, CredError> {
    let meta = std::fs::metadata(f).map_err(|e| err(f, &e.to_string()))?;
    if meta.len() > MAX_FILE {
        return Err(err(f, "larger than 1 MiB"));
    }
    let bytes = std::fs::read(f).map_err(|e| err(f, &e.to_string()))?;
    Ok(Zeroizing::new(bytes))
}

/// The DER of a PEM block labelled `label` (`CERTIFICATE`, `X509 CRL`),
/// or the bytes themselves.
pub fn pem_or_der(bytes: &[u8], label: &str) -> Vec<u8> {
    match pem_rfc7468::decode_vec(bytes.trim_ascii()) {
        Ok((l, der)) if l == label => der,
        _ => bytes.to_vec(),
    }
}

/// A certificate revocation list, as [`Credentials::new`] takes them.
pub type Crl = OwnedCertRevocationList;

/// Why bytes are no CRL flowsec reads (webpki's reason).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrlError(pub String);

impl fmt::Display for CrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a CRL flowsec reads: {}", self.0)
    }
}

impl std::error::Error for CrlError {}

/// A CRL from PEM (`X509 CRL`) or DER bytes.
pub fn parse_crl(bytes: &[u8]) -> Result<Crl, CrlError> {
    OwnedCertRevocationList::from_der(&pem_or_der(bytes, "X509 CRL"))
        .map_err(|e| CrlError(format!("{e:?}")))
}

fn parse_cert(file: &Path, bytes: &[u8]) -> Result<Certificate, CredError> {
    Certificate::parse(&pem_or_der(bytes, "CERTIFICATE")).map_err(|e| err(file, &e.to_string()))
}
