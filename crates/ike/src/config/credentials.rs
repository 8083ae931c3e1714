//! The checks a configuration's credentials get when it is loaded
//! ([`super::load_with`]): every `certs`/`cacerts` file exists, every
//! connection that signs has a certificate and its key — so a mistake is
//! an error naming the file at start (or at `flowsec ctl reload`), not an
//! AUTHENTICATION_FAILED later. That certificate not validating to a CA
//! we hold (through the intermediates of `x509ca/` and `x509/`) is a
//! warning: strongSwan loads it and sends what it has, and the peer may
//! hold what completes the path.

use core::time::Duration;
use std::path::Path;

use flowsec_crypto::Provider;

use super::Identity;
use super::{AuthKind, Config, ConfigError, ConfigErrorKind, ConfigWarning, ConfigWarningKind};
use crate::cert::{verify, Certificate};

pub(super) fn check(
    provider: &Provider,
    config: &Config,
    file: &str,
    dir: &Path,
    unix: Duration,
) -> Result<Vec<ConfigWarning>, ConfigError> {
    let creds = &config.credentials;
    let mut warnings = Vec::new();
    for r in &config.cred_refs {
        let found = match r.dir {
            "x509ca" => creds.ca(&r.file).is_some(),
            "pubkey" => creds.pubkey(&r.file).is_some(),
            _ => creds.cert(&r.file).is_some(),
        };
        if !found {
            let sub = r.dir;
            return Err(ConfigError::new(
                r.at.file_or(file),
                r.at.line,
                r.key.clone(),
                ConfigErrorKind::UnknownCredential {
                    file: r.file.clone(),
                    dir: dir.join(sub).display().to_string(),
                },
            ));
        }
    }
    for c in &config.connections {
        check_raw_keys(config, c, file)?;
        if let (AuthKind::Pubkey(_), true) = (c.local.auth, c.local.pubkeys.is_empty()) {
            let cert = check_signer(config, c, file, dir)?;
            warnings.extend(check_chain(provider, config, c, cert, file, unix));
        }
        if c.local.auth == AuthKind::Eap {
            let key = format!("connections.{}.local", c.name);
            if c.remote.auth == AuthKind::Eap {
                return Err(ConfigError::new(
                    file,
                    0,
                    key,
                    ConfigErrorKind::EapBothSides,
                ));
            }
            let user = c.local.eap_id.as_ref().or(c.local.id.as_ref());
            if user.and_then(|u| config.find_eap(u)).is_none() {
                return Err(ConfigError::new(
                    file,
                    0,
                    key,
                    ConfigErrorKind::NoEapSecret {
                        user: user.map(Identity::to_string),
                    },
                ));
            }
        }
        if let (AuthKind::Pubkey(_), true) = (c.remote.auth, c.remote.pubkeys.is_empty()) {
            if creds.cas().next().is_none() {
                return Err(ConfigError::new(
                    file,
                    0,
                    format!("connections.{}.remote", c.name),
                    ConfigErrorKind::NoCa {
                        dir: dir.join("x509ca").display().to_string(),
                    },
                ));
            }
        }
    }
    Ok(warnings)
}

/// `pubkeys` (raw public keys) of a connection's sides: only with
/// `auth = pubkey` (or a key kind), with an `id` (the key names no one),
/// and locally with the private key of the first.
fn check_raw_keys(config: &Config, c: &super::Connection, file: &str) -> Result<(), ConfigError> {
    for (side, a) in [("local", &c.local), ("remote", &c.remote)] {
        let Some(first) = a.pubkeys.first() else {
            continue;
        };
        let fail = |kind| {
            let key = format!("connections.{}.{side}.pubkeys", c.name);
            let at = config.cred_refs.iter().find(|r| r.key == key);
            let (f, line) = at.map_or((file, 0), |r| (r.at.file_or(file), r.at.line));
            Err(ConfigError::new(f, line, key, kind))
        };
        if !matches!(a.auth, AuthKind::Pubkey(_)) {
            return fail(ConfigErrorKind::PubkeysWithoutPubkeyAuth);
        }
        if matches!(a.id, None | Some(Identity::Any)) {
            return fail(ConfigErrorKind::PubkeysWithoutId);
        }
        let creds = &config.credentials;
        let has_key = creds.pubkey(first).and_then(|k| creds.key_of(k)).is_some();
        if side == "local" && !has_key {
            return fail(ConfigErrorKind::NoPrivateKeyForPubkey {
                file: first.clone(),
            });
        }
    }
    Ok(())
}

/// A connection that signs: its certificate (by `certs` or `id`), a
/// subject or `id` to name it, and its private key.
fn check_signer<'c>(
    config: &'c Config,
    c: &super::Connection,
    file: &str,
    dir: &Path,
) -> Result<&'c Certificate, ConfigError> {
    let creds = &config.credentials;
    let key = format!("connections.{}.local", c.name);
    let cert = local_cert(config, &c.local.certs, c.local.id.as_ref()).ok_or_else(|| {
        ConfigError::new(
            file,
            0,
            key.clone(),
            ConfigErrorKind::NoLocalCert {
                id: c.local.id.as_ref().map(Identity::to_string),
                dir: dir.display().to_string(),
            },
        )
    })?;
    if c.local.id.is_none() && !super::dn::is_named(&cert.subject) {
        return Err(ConfigError::new(
            file,
            0,
            key,
            ConfigErrorKind::EmptySubject,
        ));
    }
    if creds.key_for(cert).is_none() {
        return Err(ConfigError::new(
            file,
            0,
            key,
            ConfigErrorKind::NoPrivateKey {
                subject: cert.subject_text(),
            },
        ));
    }
    Ok(cert)
}

/// Whether `cert`, connection `c`'s, validates to a CA we hold through
/// the intermediates we hold (`x509ca/`, and `x509/`'s); a warning if
/// not.
fn check_chain(
    provider: &Provider,
    config: &Config,
    c: &super::Connection,
    cert: &Certificate,
    file: &str,
    unix: Duration,
) -> Option<ConfigWarning> {
    let creds = &config.credentials;
    let anchors: Vec<&Certificate> = creds.cas().collect();
    let chain = creds.chain_of(cert);
    let why = verify::validate(provider, cert, &chain, &anchors, &creds.crls(), unix).err()?;
    Some(ConfigWarning {
        file: file.to_string(),
        key: format!("connections.{}.local", c.name),
        kind: ConfigWarningKind::LocalCertUnverified {
            subject: cert.subject_text(),
            why: why.to_string(),
        },
    })
}

/// Our certificate: the first of `certs`, or the one in `x509/` that
/// holds `id` and whose key we have.
pub(crate) fn local_cert<'a>(
    config: &'a Config,
    certs: &[String],
    id: Option<&Identity>,
) -> Option<&'a Certificate> {
    let creds = &config.credentials;
    match (certs.first(), id) {
        (Some(name), _) => creds.cert(name),
        (None, Some(id)) => creds.cert_for(id),
        (None, None) => None,
    }
}
