//! The `secrets` section's `ike…`, `eap…` and `ppk…` subsections
//! (swanctl.conf(5)): a key and the identities (or PPK_IDs, RFC 8784) it
//! belongs to.

use std::net::IpAddr;

use super::super::lexer::{join, Section};
use super::super::value::decode_secret;
use super::super::{ConfigError, ConfigErrorKind, Identity, PpkSecret, Secret};
use super::{values, Reader};

impl Reader<'_> {
    /// A `ppk…` secret (RFC 8784): `secret`, and the PPK_IDs it is known
    /// by (`id`, `id-…`).
    pub(super) fn ppk_secret(&self, sec: &Section) -> Result<PpkSecret, ConfigError> {
        let path = join("secrets", &sec.name);
        self.no_sections(sec, &path, ConfigErrorKind::UnknownSection)?;
        let (mut ids, mut secret) = (Vec::new(), None);
        for (s, v) in values(sec) {
            let here = join(&path, &s.key);
            if s.key == "secret" {
                secret = Some(decode_secret(v).map_err(|e| self.err(s, here, e))?);
            } else if s.key.starts_with("id") {
                ids.push(ppk_id(v).map_err(|e| self.err(s, here, e))?);
            } else {
                return Err(self.err(s, here, ConfigErrorKind::UnknownSecretKey));
            }
        }
        let secret = secret
            .ok_or_else(|| self.err(sec, join(&path, "secret"), ConfigErrorKind::MissingSecret))?;
        if ids.is_empty() {
            return Err(self.err(sec, path, ConfigErrorKind::PpkSecretWithoutId));
        }
        Ok(PpkSecret {
            name: sec.name.clone(),
            ids,
            secret,
        })
    }

    pub(super) fn secret(&self, sec: &Section) -> Result<Secret, ConfigError> {
        let path = join("secrets", &sec.name);
        if !sec.name.starts_with("ike") && !sec.name.starts_with("eap") {
            let known = [
                "eap", "xauth", "ntlm", "ppk", "private", "rsa", "ecdsa", "bliss", "pkcs8",
                "pkcs12", "token",
            ];
            let known = known.iter().any(|k| sec.name.starts_with(k));
            return Err(self.err(sec, path, ConfigErrorKind::SecretType { known }));
        }
        self.no_sections(sec, &path, ConfigErrorKind::UnknownSection)?;
        let mut ids = Vec::new();
        let mut secret = None;
        for (s, v) in values(sec) {
            let here = join(&path, &s.key);
            if s.key == "secret" {
                secret = Some(decode_secret(v).map_err(|e| self.err(s, here, e))?);
            } else if s.key.starts_with("id") {
                ids.push(Identity::parse(v).map_err(|e| self.err(s, here, e))?);
            } else {
                return Err(self.err(s, here, ConfigErrorKind::UnknownSecretKey));
            }
        }
        let secret = secret
            .ok_or_else(|| self.err(sec, join(&path, "secret"), ConfigErrorKind::MissingSecret))?;
        // strongSwan lets an EAP secret without ids match every user: one
        // password for all, or a test secret left behind; refused here.
        if sec.name.starts_with("eap") && ids.is_empty() {
            return Err(self.err(sec, path, ConfigErrorKind::EapSecretWithoutId));
        }
        Ok(Secret {
            name: sec.name.clone(),
            ids,
            secret,
        })
    }
}

/// A PPK_ID as configured (RFC 8784 §5.1, sent as PPK_ID_FIXED): a
/// plain name, whose bytes go on the wire as strongSwan sends an FQDN
/// or KEY_ID identity's.
/// `redirect_to`: gateways, each an address or a host name (RFC 5685 §9).
pub(super) fn gateways(v: &str) -> Result<Vec<crate::gateway::GatewayId>, ConfigErrorKind> {
    v.split(',')
        .map(|g| g.trim().parse())
        .collect::<Result<_, crate::gateway::BadGateway>>()
        .map_err(ConfigErrorKind::BadGateway)
}

pub(super) fn ppk_id(v: &str) -> Result<String, ConfigErrorKind> {
    let binary = v.parse::<IpAddr>().is_ok() || v.contains('=');
    if v.is_empty() || binary {
        return Err(ConfigErrorKind::PpkIdNotPlain { value: v.into() });
    }
    Ok(v.to_string())
}
