//! The `authorities` section (swanctl.conf(5); strongSwan 5.9.8
//! `swanctl.opt`, `load_authorities.c`): certification authorities with
//! their revocation URIs.
//!
//! ```text
//! authorities.<name>.cacert         file in x509ca/, or an absolute path   (one of cacert, file)
//!                   .file           absolute path to the CA certificate
//!                   .crl_uris       comma list of CRL distribution points  (kept, not fetched)
//!                   .ocsp_uris      comma list of OCSP responder URIs       (kept, not queried)
//!                   .cert_uri_base  hash-and-URL base (RFC 7296 §3.6)      (accepted, ignored)
//! ```
//!
//! The certificate is a trust anchor, as if it were in `x509ca/`
//! ([`super::load_with`] loads it; [`super::parse`] only reads the keys).
//! flowsec fetches no CRLs and asks no OCSP responder: the URIs are kept
//! in [`Authority`] for the caller and for `list-authorities`-like
//! output, revocation uses the CRLs of `x509crl/` only. `handle`, `slot`
//! and `module` (a certificate on a PKCS#11 token) are refused.

use std::path::{Path, PathBuf};

use super::lexer::{join, Origin, Section};
use super::proposal::split_list;
use super::{ConfigError, ConfigErrorKind};
use crate::cert::Certificate;

/// One `authorities.NAME` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authority {
    /// The section name.
    pub name: String,
    /// Where its certificate is read from: `cacert` (relative to
    /// `x509ca/` unless absolute) or `file`.
    pub source: AuthoritySource,
    /// The CA certificate, once loaded by [`super::load_with`] (`None`
    /// from [`super::parse`]).
    pub certificate: Option<Certificate>,
    /// `crl_uris`: CRL distribution points, not fetched by flowsec.
    pub crl_uris: Vec<String>,
    /// `ocsp_uris`: OCSP responders, not queried by flowsec.
    pub ocsp_uris: Vec<String>,
    /// `cert_uri_base`: the base of hash-and-URL certificate URIs, not
    /// used by flowsec (it sends and accepts whole certificates).
    pub cert_uri_base: Option<String>,
    /// Where the certificate's key was given, for errors.
    pub(crate) at: Origin,
}

/// Which key named an authority's certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthoritySource {
    /// `cacert = FILE`: in `x509ca/`, or an absolute path.
    CaCert(String),
    /// `file = PATH`: an absolute path.
    File(String),
}

impl Authority {
    /// The certificate's subject, once loaded.
    pub fn subject(&self) -> Option<String> {
        self.certificate.as_ref().map(Certificate::subject_text)
    }

    /// The certificate's path under the swanctl directory `dir`
    /// (`load_authorities.c` `add_file_key_value()`).
    pub fn path(&self, dir: &Path) -> PathBuf {
        match &self.source {
            AuthoritySource::CaCert(f) if !Path::new(f).is_absolute() => dir.join("x509ca").join(f),
            AuthoritySource::CaCert(f) | AuthoritySource::File(f) => PathBuf::from(f),
        }
    }

    /// The key naming the certificate (`authorities.NAME.cacert`).
    pub(crate) fn key(&self) -> String {
        let k = match self.source {
            AuthoritySource::CaCert(_) => "cacert",
            AuthoritySource::File(_) => "file",
        };
        join(&join("authorities", &self.name), k)
    }
}

/// The `authorities` section's subsections; `file` names the main file.
pub(crate) fn read(file: &str, sec: &Section) -> Result<Vec<Authority>, ConfigError> {
    if let Some(s) = sec.settings.first() {
        let o = s.origin();
        return Err(ConfigError::new(
            o.file_or(file),
            o.line,
            join("authorities", &s.key),
            ConfigErrorKind::SectionsOnly {
                section: "authorities".into(),
            },
        ));
    }
    sec.sections.iter().map(|a| authority(file, a)).collect()
}

fn authority(file: &str, sec: &Section) -> Result<Authority, ConfigError> {
    let path = join("authorities", &sec.name);
    let err = |at: Origin, key: &str, kind| {
        ConfigError::new(at.file_or(file), at.line, join(&path, key), kind)
    };
    sec.settings_only(file, &path)?;
    let mut source: Option<(AuthoritySource, Origin)> = None;
    let (mut crl_uris, mut ocsp_uris, mut cert_uri_base) = (Vec::new(), Vec::new(), None);
    for s in &sec.settings {
        let Some(v) = s.value.as_deref() else {
            continue;
        };
        let list = || -> Result<Vec<String>, ConfigErrorKind> {
            Ok(split_list(v)?.into_iter().map(String::from).collect())
        };
        let r = match s.key.as_str() {
            "cacert" | "file" if source.is_some() => Err(ConfigErrorKind::AuthorityCertTwice),
            "file" if !Path::new(v).is_absolute() => Err(ConfigErrorKind::AuthorityFileRelative),
            "cacert" | "file" => {
                let src = if s.key == "file" {
                    AuthoritySource::File(v.into())
                } else {
                    AuthoritySource::CaCert(v.into())
                };
                source = Some((src, s.origin()));
                Ok(())
            }
            "crl_uris" => list().map(|l| crl_uris = l),
            "ocsp_uris" => list().map(|l| ocsp_uris = l),
            "cert_uri_base" => {
                cert_uri_base = Some(v.to_string());
                Ok(())
            }
            "handle" | "slot" | "module" => Err(ConfigErrorKind::KeyNotSupported),
            _ => Err(ConfigErrorKind::UnknownKey),
        };
        r.map_err(|e| err(s.origin(), &s.key, e))?;
    }
    let Some((source, at)) = source else {
        return Err(err(
            sec.origin(),
            "cacert",
            ConfigErrorKind::AuthorityWithoutCert,
        ));
    };
    Ok(Authority {
        name: sec.name.clone(),
        source,
        certificate: None,
        crl_uris,
        ocsp_uris,
        cert_uri_base,
        at,
    })
}

/// The authorities' certificates that are not files of `x509ca/` itself
/// (an absolute `cacert`, a subdirectory of it, or `file`): the extra
/// trust anchors [`crate::cert::Credentials`] must load. An authority
/// whose certificate is not a readable file is an error naming its line.
pub(crate) fn extra_anchors(
    file: &str,
    authorities: &[Authority],
    dir: &Path,
) -> Result<Vec<PathBuf>, ConfigError> {
    let ca_dir = dir.join("x509ca");
    let mut extra = Vec::new();
    for a in authorities {
        let path = a.path(dir);
        if !path.is_file() {
            return Err(ConfigError::new(
                a.at.file_or(file),
                a.at.line,
                a.key(),
                ConfigErrorKind::UnknownCredential {
                    file: path.display().to_string(),
                    dir: ca_dir.display().to_string(),
                },
            ));
        }
        if path.parent() != Some(ca_dir.as_path()) && !extra.contains(&path) {
            extra.push(path);
        }
    }
    Ok(extra)
}

/// Each authority's certificate, from the CAs `creds` loaded (under its
/// file name for `x509ca/`'s own, its path for the others).
pub(crate) fn attach(authorities: &mut [Authority], creds: &crate::cert::Credentials, dir: &Path) {
    let ca_dir = dir.join("x509ca");
    for a in authorities {
        let path = a.path(dir);
        let name = match path.file_name() {
            Some(n) if path.parent() == Some(ca_dir.as_path()) => n.to_string_lossy().into_owned(),
            _ => path.display().to_string(),
        };
        a.certificate = creds.ca(&name).cloned();
    }
}
