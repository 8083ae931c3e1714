//! A gateway's identity as redirect (RFC 5685 §9) names it: an IPv4 or
//! IPv6 address, or an FQDN, in REDIRECT and REDIRECTED_FROM notifies,
//! and in `redirect_to`, `flowsec ctl redirect` and vici `redirect`.
//!
//! ```text
//!  0                   1                   2                   3
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | GW Ident Type |  GW Ident Len |  New Responder GW Identity ~  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ~                Nonce Data (IKE_SA_INIT's REDIRECT only)       ~
//! ```
//!
//! The types are RFC 5685's own (1 IPv4, 2 IPv6, 3 FQDN), not the ID
//! payload's; the nonce, in an IKE_SA_INIT answer only, is the client's
//! Ni and runs to the end of the notify.

use core::fmt;
use core::time::Duration;
use std::net::IpAddr;

const IPV4: u8 = 1;
const IPV6: u8 = 2;
const FQDN: u8 = 3;

/// A gateway named by a redirect.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GatewayId {
    /// By address.
    Addr(IpAddr),
    /// By name (at most 255 bytes, a hostname's characters).
    Fqdn(String),
}

/// Why a gateway identity was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadGateway(pub String);

impl fmt::Display for BadGateway {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "'{}': a gateway is an IPv4 or IPv6 address or a host name (RFC 5685 §9)",
            self.0
        )
    }
}

impl std::error::Error for BadGateway {}

impl std::str::FromStr for GatewayId {
    type Err = BadGateway;

    /// An address, or a host name: letters, digits, `-` and `.`, 1 to
    /// 255 bytes (strongSwan refuses an `user@host` identity too).
    fn from_str(s: &str) -> Result<Self, BadGateway> {
        if let Ok(ip) = s.parse::<IpAddr>() {
            return Ok(GatewayId::Addr(ip));
        }
        let host = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.';
        if s.is_empty() || s.len() > 255 || !s.chars().all(host) || s.starts_with('.') {
            return Err(BadGateway(s.to_string()));
        }
        Ok(GatewayId::Fqdn(s.to_ascii_lowercase()))
    }
}

impl fmt::Display for GatewayId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GatewayId::Addr(ip) => ip.fmt(f),
            GatewayId::Fqdn(name) => f.write_str(name),
        }
    }
}

impl GatewayId {
    /// The notify data: type, length, identity, then `nonce` (IKE_SA_INIT).
    pub fn emit(&self, nonce: &[u8]) -> Vec<u8> {
        let (ty, id): (u8, Vec<u8>) = match self {
            GatewayId::Addr(IpAddr::V4(a)) => (IPV4, a.octets().to_vec()),
            GatewayId::Addr(IpAddr::V6(a)) => (IPV6, a.octets().to_vec()),
            GatewayId::Fqdn(n) => (FQDN, n.as_bytes().to_vec()),
        };
        let mut out = vec![ty, id.len() as u8];
        out.extend_from_slice(&id);
        out.extend_from_slice(nonce);
        out
    }

    /// The identity in notify data and what follows it (the nonce, or
    /// nothing); `None` for another type, a length that does not fit the
    /// type or the data, or a name that is not one.
    pub fn parse(data: &[u8]) -> Option<(GatewayId, &[u8])> {
        let (&ty, rest) = data.split_first()?;
        let (&len, rest) = rest.split_first()?;
        let id = rest.get(..usize::from(len))?;
        let tail = &rest[usize::from(len)..];
        let gw = match (ty, id.len()) {
            (IPV4, 4) => GatewayId::Addr(IpAddr::from(<[u8; 4]>::try_from(id).ok()?)),
            (IPV6, 16) => GatewayId::Addr(IpAddr::from(<[u8; 16]>::try_from(id).ok()?)),
            (FQDN, _) => core::str::from_utf8(id).ok()?.parse().ok()?,
            _ => return None,
        };
        Some((gw, tail))
    }
}

/// What an IKE SA keeps of redirects. A client's: the gateway it was sent
/// away from (REDIRECTED_FROM in its next IKE_SA_INIT) and when it was
/// redirected, for the loop rule, carried to the IKE SA it makes at the
/// new gateway (and across IKE rekeys); whether it follows a redirect of
/// this SA already (`left`: another REDIRECT for it is not followed, and
/// its successor may present another identity). A gateway's: whether it
/// sent this client away already (`sent`).
#[derive(Debug, Default, Clone)]
pub(crate) struct Redirected {
    pub from: Option<IpAddr>,
    pub history: Vec<Duration>,
    pub left: bool,
    pub sent: bool,
}

/// A redirect a client follows at the end of the call (the engine makes
/// the new IKE SA, `exchange::redirect::follow_due`).
pub(crate) struct RedirectDue {
    pub conn: crate::config::ConnRef,
    /// The child configs to bring up there, the first in IKE_AUTH.
    pub children: Vec<usize>,
    pub to: GatewayId,
    /// The gateway it leaves (its address).
    pub from: IpAddr,
    pub history: Vec<Duration>,
    /// The IKE SA to delete once the new one is up (our SPI), unless the
    /// redirect came in IKE_SA_INIT (that SA is gone already).
    pub old: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_type_round_trips_and_bad_data_is_refused() {
        for (text, ty, len) in [
            ("192.0.2.9", 1, 4),
            ("2001:db8::9", 2, 16),
            ("back1.example.net", 3, 17),
        ] {
            let gw: GatewayId = text.parse().unwrap();
            let data = gw.emit(b"nonce");
            assert_eq!((data[0], data[1]), (ty, len));
            assert_eq!(GatewayId::parse(&data), Some((gw.clone(), &b"nonce"[..])));
            assert_eq!(gw.to_string(), text);
            // Cut anywhere inside the identity: refused.
            for cut in 0..2 + usize::from(len) {
                assert_eq!(GatewayId::parse(&data[..cut]), None, "{text} cut at {cut}");
            }
        }
        // A length that does not fit its type, an unknown type, a non-name.
        assert_eq!(GatewayId::parse(&[1, 16, 0, 0, 0, 0]), None);
        assert_eq!(GatewayId::parse(&[5, 4, 192, 0, 2, 1]), None);
        assert_eq!(GatewayId::parse(&[3, 3, b'a', b'@', b'b']), None);
        for bad in ["", "user@host", ".x", "a b"] {
            assert!(bad.parse::<GatewayId>().is_err(), "{bad}");
        }
    }
}
