//! IKE identities (RFC 7296 §3.5) written the way strongSwan writes them
//! (`identification_create_from_string()` in `identification.c`, 5.9.8):
//!
//! | written                          | identity                        |
//! |----------------------------------|---------------------------------|
//! | `%any`, `%any6`, `*`, `0.0.0.0`, `::`, empty | any (matches every peer) |
//! | `192.0.2.1`, `2001:db8::1`       | ID_IPV4_ADDR / ID_IPV6_ADDR     |
//! | `moon.strongswan.org` (no `@`)   | ID_FQDN                         |
//! | `@moon.strongswan.org`           | ID_FQDN (the `@` is dropped)    |
//! | `carol@strongswan.org`, `@@carol`| ID_RFC822_ADDR                  |
//! | `@#0123abcd`                     | ID_KEY_ID (hex)                 |
//! | `fqdn:`, `dns:`, `email:`, `rfc822:`, `userfqdn:`, `keyid:`, `ipv4:`, `ipv6:` prefixes, `{N}:` numeric type; `PREFIX:#hex` gives the bytes in hex |
//!
//! | `C=CH, O=strongSwan, CN=moon` (has `=`), `asn1dn:#hex` | ID_DER_ASN1_DN ([`super::dn`]) |
//!
//! Subnets and ranges as identities, and a `:` string that is no IPv6
//! address (strongSwan makes that a KEY_ID of the text) are refused.
//!
//! Matching follows strongSwan's `matches_string`/`matches_binary`: `%any`
//! matches every identity, FQDN and RFC 822 names compare without regard to
//! ASCII case, and a configured FQDN or RFC 822 name starting with `*`
//! matches any name ending in the rest (`*@strongswan.org`).

use core::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use flowsec_wire::ike::{Id, IdType};

use super::value_error::{HexError, IdentityError};

/// An IKE identity (RFC 7296 §3.5), or `%any`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Identity {
    /// ID_IPV4_ADDR.
    Ipv4(Ipv4Addr),
    /// ID_IPV6_ADDR.
    Ipv6(Ipv6Addr),
    /// ID_FQDN: a host name, without strongSwan's leading `@`.
    Fqdn(String),
    /// ID_RFC822_ADDR: `user@domain`.
    Email(String),
    /// ID_KEY_ID: opaque bytes.
    KeyId(Vec<u8>),
    /// ID_DER_ASN1_DN: the DER encoding of an X.501 Name.
    Dn(Vec<u8>),
    /// `%any`: matches every identity; never sent.
    Any,
}

/// How well an identity matches a configured one, strongSwan's
/// `id_match_t`: a better match has a higher value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IdMatch {
    /// No match.
    None = 0,
    /// The configured identity is `%any` (or a lone `*`).
    Any = 1,
    /// The configured name has a leading `*` wildcard.
    OneWildcard = 19,
    /// Equal.
    Perfect = 20,
}

impl Identity {
    /// Parse an identity as strongSwan does (see the module docs). The error
    /// says why the text was refused.
    pub fn parse(s: &str) -> Result<Identity, IdentityError> {
        if let Some(id) = parse_prefixed(s)? {
            return Ok(id);
        }
        if s.contains('=') {
            return super::dn::encode(s).map(Identity::Dn).map_err(|problem| {
                IdentityError::DistinguishedName {
                    id: s.into(),
                    problem,
                }
            });
        }
        if let Some(rest) = s.strip_prefix('@') {
            if let Some(hex) = rest.strip_prefix('#') {
                return Ok(Identity::KeyId(decode_hex(hex).map_err(|problem| {
                    IdentityError::Hex {
                        id: s.into(),
                        problem,
                    }
                })?));
            }
            if let Some(user) = rest.strip_prefix('@') {
                return non_empty(s, user).map(|u| Identity::Email(u.to_string()));
            }
            if rest.is_empty() {
                // `id = @#01ab` unquoted: '#' starts a comment.
                return Err(IdentityError::UnquotedKeyId { id: s.into() });
            }
            return Ok(Identity::Fqdn(rest.to_string()));
        }
        if s.contains('@') {
            return Ok(Identity::Email(s.to_string()));
        }
        if matches!(s, "" | "%any" | "%any6" | "0.0.0.0" | "*" | "::" | "0::0") {
            return Ok(Identity::Any);
        }
        if let Ok(ip) = s.parse::<IpAddr>() {
            return Ok(Identity::from(ip));
        }
        if is_subnet_or_range(s) {
            return Err(IdentityError::SubnetOrRange { id: s.into() });
        }
        if s.contains(':') {
            // strongSwan turns this into a KEY_ID of the text; almost always
            // a typo'd IPv6 address.
            return Err(IdentityError::NotIpv6 { id: s.into() });
        }
        Ok(Identity::Fqdn(s.to_string()))
    }

    /// How well `self` (a peer's identity) matches `pattern` (a configured
    /// one): strongSwan's `identification_t.matches()`.
    pub fn match_quality(&self, pattern: &Identity) -> IdMatch {
        let wildcard = |name: &str, pat: &str| -> IdMatch {
            if name.eq_ignore_ascii_case(pat) {
                return IdMatch::Perfect;
            }
            match pat.strip_prefix('*') {
                Some("") => IdMatch::Any,
                Some(suffix)
                    if name.len() >= suffix.len()
                        && name.is_char_boundary(name.len() - suffix.len())
                        && name[name.len() - suffix.len()..].eq_ignore_ascii_case(suffix) =>
                {
                    IdMatch::OneWildcard
                }
                _ => IdMatch::None,
            }
        };
        match (self, pattern) {
            (_, Identity::Any) => IdMatch::Any,
            (Identity::Fqdn(a), Identity::Fqdn(p)) | (Identity::Email(a), Identity::Email(p)) => {
                wildcard(a, p)
            }
            (Identity::Dn(a), Identity::Dn(p)) => match super::dn::matches(a, p) {
                Some(0) => IdMatch::Perfect,
                Some(_) => IdMatch::OneWildcard,
                None => IdMatch::None,
            },
            (a, p) if a == p => IdMatch::Perfect,
            _ => IdMatch::None,
        }
    }

    /// Whether `self` and `other` name the same peer, as matching sees it
    /// (names without regard to ASCII case, DN string values likewise):
    /// what one credential proves is one peer, for leases and
    /// INITIAL_CONTACT alike.
    pub fn same_as(&self, other: &Identity) -> bool {
        self == other
            || (self.match_quality(other) == IdMatch::Perfect
                && other.match_quality(self) == IdMatch::Perfect)
    }

    /// Whether the configured identity `self` accepts the peer's `other`:
    /// `%any` accepts every identity, a `*` prefix any name with that
    /// ending, otherwise they must be equal (names ignoring ASCII case).
    pub fn matches(&self, other: &Identity) -> bool {
        other.match_quality(self) != IdMatch::None
    }
}

impl Identity {
    /// The identity of an IP address (strongSwan's default local identity
    /// for PSK authentication).
    pub fn from_ip(ip: IpAddr) -> Identity {
        Identity::from(ip)
    }

    /// The Identification payload (RFC 7296 §3.5) for this identity.
    /// [`Identity::Any`] is never sent: it encodes as ID type 0 (reserved)
    /// with no data, which no peer accepts; use the address instead.
    pub fn to_wire(&self) -> Id {
        let (ty, data) = match self {
            Identity::Ipv4(a) => (IdType::IPV4_ADDR, a.octets().to_vec()),
            Identity::Ipv6(a) => (IdType::IPV6_ADDR, a.octets().to_vec()),
            Identity::Fqdn(n) => (IdType::FQDN, n.as_bytes().to_vec()),
            Identity::Email(n) => (IdType::RFC822_ADDR, n.as_bytes().to_vec()),
            Identity::KeyId(k) => (IdType::KEY_ID, k.clone()),
            Identity::Dn(d) => (IdType::DER_ASN1_DN, d.clone()),
            Identity::Any => (IdType(0), Vec::new()),
        };
        Id { ty, data }
    }

    /// The identity a received Identification payload names; `None` for
    /// types we do not handle (general names), a DN that does not decode or
    /// is empty, an empty name, an address of the wrong length, or a name
    /// that is not UTF-8.
    pub fn from_wire(id: &Id) -> Option<Identity> {
        if id.data.is_empty() {
            return None;
        }
        let text = || String::from_utf8(id.data.clone()).ok();
        Some(match id.ty {
            IdType::IPV4_ADDR => Identity::Ipv4(<[u8; 4]>::try_from(&id.data[..]).ok()?.into()),
            IdType::IPV6_ADDR => Identity::Ipv6(<[u8; 16]>::try_from(&id.data[..]).ok()?.into()),
            IdType::FQDN => Identity::Fqdn(text()?),
            IdType::RFC822_ADDR => Identity::Email(text()?),
            IdType::KEY_ID => Identity::KeyId(id.data.clone()),
            IdType::DER_ASN1_DN if super::dn::is_named(&id.data) => Identity::Dn(id.data.clone()),
            _ => return None,
        })
    }
}

impl From<IpAddr> for Identity {
    fn from(ip: IpAddr) -> Identity {
        match ip {
            IpAddr::V4(a) => Identity::Ipv4(a),
            IpAddr::V6(a) => Identity::Ipv6(a),
        }
    }
}

impl fmt::Display for Identity {
    /// strongSwan's way of writing it, so that it parses back. A name from
    /// the network may hold anything: control characters (a newline
    /// would forge a log line) are written as `?`, as strongSwan's
    /// `chunk_printable` does.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Identity::Ipv4(a) => write!(f, "{a}"),
            Identity::Ipv6(a) => write!(f, "{a}"),
            Identity::Fqdn(n) => write!(f, "@{}", Printable(n)),
            Identity::Email(n) if n.contains('@') => write!(f, "{}", Printable(n)),
            Identity::Email(n) => write!(f, "@@{}", Printable(n)),
            Identity::KeyId(k) => {
                f.write_str("@#")?;
                k.iter().try_for_each(|b| write!(f, "{b:02x}"))
            }
            Identity::Dn(d) => f.write_str(&super::dn::to_text(d)),
            Identity::Any => f.write_str("%any"),
        }
    }
}

/// Text with every control character (C0, DEL, C1, and the Unicode
/// format controls that reorder a line) written as `?`.
struct Printable<'a>(&'a str);

impl fmt::Display for Printable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write;
        for c in self.0.chars() {
            let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
            f.write_char(if c.is_control() || bidi { '?' } else { c })?;
        }
        Ok(())
    }
}

fn non_empty<'a>(whole: &str, s: &'a str) -> Result<&'a str, IdentityError> {
    if s.is_empty() {
        Err(IdentityError::Empty { id: whole.into() })
    } else {
        Ok(s)
    }
}

fn is_subnet_or_range(s: &str) -> bool {
    let ip = |t: &str| t.parse::<IpAddr>().is_ok();
    match (s.split_once('/'), s.split_once('-')) {
        (Some((a, _)), _) => ip(a),
        (None, Some((a, b))) => ip(a) && ip(b),
        _ => false,
    }
}

/// `type:value` and `{N}:value` forms; `None` when `s` has neither.
fn parse_prefixed(s: &str) -> Result<Option<Identity>, IdentityError> {
    const PREFIXES: &[(&str, u8)] = &[
        ("ipv4:", 1),
        ("ipv6:", 5),
        ("rfc822:", 3),
        ("email:", 3),
        ("userfqdn:", 3),
        ("fqdn:", 2),
        ("dns:", 2),
        ("keyid:", 11),
        ("ipv4net:", 0),
        ("ipv6net:", 0),
        ("ipv4range:", 0),
        ("ipv6range:", 0),
        ("asn1dn:", 9),
        ("asn1gn:", 0),
        ("xmppaddr:", 0),
    ];
    let lower = s.to_ascii_lowercase();
    let found = PREFIXES
        .iter()
        .find(|(p, _)| lower.starts_with(p))
        .map(|&(p, ty)| (ty, &s[p.len()..]));
    let (ty, value) = match found {
        Some(f) => f,
        None => match numeric_prefix(s) {
            Some(f) => f,
            None => return Ok(None),
        },
    };
    let bytes = match value.strip_prefix('#') {
        Some(hex) => decode_hex(hex).map_err(|problem| IdentityError::Hex {
            id: s.into(),
            problem,
        })?,
        None => value.as_bytes().to_vec(),
    };
    let text =
        || String::from_utf8(bytes.clone()).map_err(|_| IdentityError::NotUtf8 { id: s.into() });
    let id = match ty {
        1 | 5 => {
            let addr = if value.starts_with('#') {
                match bytes.len() {
                    4 => <[u8; 4]>::try_from(&bytes[..]).ok().map(IpAddr::from),
                    16 => <[u8; 16]>::try_from(&bytes[..]).ok().map(IpAddr::from),
                    _ => None,
                }
            } else {
                value.parse::<IpAddr>().ok()
            };
            match addr {
                Some(a) if a.is_ipv4() == (ty == 1) => Identity::from(a),
                _ => {
                    return Err(IdentityError::NotAnAddress {
                        id: s.into(),
                        version: if ty == 1 { 4 } else { 6 },
                    })
                }
            }
        }
        2 => Identity::Fqdn(text()?),
        3 => Identity::Email(text()?),
        11 => Identity::KeyId(bytes),
        9 if super::dn::is_valid(&bytes) => Identity::Dn(bytes),
        9 => return Err(IdentityError::NotUtf8 { id: s.into() }),
        _ => return Err(IdentityError::UnsupportedType { id: s.into() }),
    };
    Ok(Some(id))
}

/// `{N}:value`, strongSwan's numeric identity type.
fn numeric_prefix(s: &str) -> Option<(u8, &str)> {
    let rest = s.strip_prefix('{')?;
    let (num, value) = rest.split_once("}:")?;
    let n: u8 = num.parse().ok()?;
    // Types other than those we know fall through to the refusal.
    Some((
        if matches!(n, 1 | 2 | 3 | 5 | 11) {
            n
        } else {
            0
        },
        value,
    ))
}

/// Hex digits, optionally separated by `:` (as strongSwan's
/// `chunk_from_hex` accepts).
pub(crate) fn decode_hex(s: &str) -> Result<Vec<u8>, HexError> {
    let digits: Vec<u8> = s
        .chars()
        .filter(|&c| c != ':')
        .map(|c| c.to_digit(16).map(|d| d as u8).ok_or(HexError::NotHex))
        .collect::<Result<_, _>>()?;
    if digits.is_empty() {
        return Err(HexError::Empty);
    }
    #[allow(clippy::manual_is_multiple_of)] // MSRV 1.80
    if digits.len() % 2 != 0 {
        return Err(HexError::OddLength);
    }
    Ok(digits.chunks(2).map(|p| p[0] << 4 | p[1]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> Identity {
        Identity::parse(s).unwrap()
    }

    #[test]
    fn strongswan_forms() {
        assert_eq!(
            id("192.168.0.1"),
            Identity::Ipv4(Ipv4Addr::new(192, 168, 0, 1))
        );
        assert_eq!(
            id("2001:db8::1"),
            Identity::Ipv6("2001:db8::1".parse().unwrap())
        );
        assert_eq!(
            id("moon.strongswan.org"),
            Identity::Fqdn("moon.strongswan.org".into())
        );
        assert_eq!(
            id("@moon.strongswan.org"),
            Identity::Fqdn("moon.strongswan.org".into())
        );
        assert_eq!(
            id("carol@strongswan.org"),
            Identity::Email("carol@strongswan.org".into())
        );
        assert_eq!(id("@@carol"), Identity::Email("carol".into()));
        assert_eq!(id("@#0a0B:0c"), Identity::KeyId(vec![0x0a, 0x0b, 0x0c]));
        for any in ["%any", "%any6", "", "*", "0.0.0.0", "::"] {
            assert_eq!(id(any), Identity::Any, "{any}");
        }
        assert_eq!(id("fqdn:a@b"), Identity::Fqdn("a@b".into()));
        assert_eq!(id("DNS:host"), Identity::Fqdn("host".into()));
        assert_eq!(id("email:x"), Identity::Email("x".into()));
        assert_eq!(id("keyid:#0102"), Identity::KeyId(vec![1, 2]));
        assert_eq!(id("keyid:ab"), Identity::KeyId(b"ab".to_vec()));
        assert_eq!(
            id("ipv4:#c0000201"),
            Identity::Ipv4(Ipv4Addr::new(192, 0, 2, 1))
        );
        assert_eq!(id("{2}:gw"), Identity::Fqdn("gw".into()));
    }

    #[test]
    fn an_empty_dn_or_name_from_the_network_is_nobody() {
        let none = |ty, data: &[u8]| {
            Identity::from_wire(&Id {
                ty,
                data: data.to_vec(),
            })
        };
        assert_eq!(none(IdType::DER_ASN1_DN, &[0x30, 0x00]), None);
        assert_eq!(none(IdType::FQDN, b""), None);
        assert_eq!(none(IdType::RFC822_ADDR, b""), None);
        assert_eq!(none(IdType::KEY_ID, b""), None);
        let dn = id("CN=moon").to_wire();
        assert_eq!(Identity::from_wire(&dn), Some(id("CN=moon")));
    }

    #[test]
    fn names_from_the_network_print_on_one_line() {
        let evil = "x\n00[IKE] <gw|1> IKE_SA gw[1] established\r\u{1b}[2J\u{202e}";
        for i in [
            Identity::Fqdn(evil.into()),
            Identity::Email(format!("u@{evil}")),
        ] {
            let text = i.to_string();
            assert!(!text.chars().any(char::is_control), "{text:?}");
            assert!(text.ends_with("established??[2J?"), "{text:?}");
        }
        assert_eq!(
            Identity::Fqdn("moon.flowsec.test".into()).to_string(),
            "@moon.flowsec.test"
        );
    }

    #[test]
    fn refusals() {
        for bad in [
            "C=CH, O=strongSwan, XX=moon",
            "10.1.0.0/16",
            "10.1.0.1-10.1.0.9",
            "fe80:zz",
            "@#xyz",
            "@#abc",
            "@",
            "asn1dn:#ff00",
            "ipv4:2001:db8::1",
            "{9}:x",
        ] {
            assert!(Identity::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn matching_like_strongswan() {
        let moon = id("moon.strongswan.org");
        assert_eq!(
            moon.match_quality(&id("@MOON.strongswan.org")),
            IdMatch::Perfect
        );
        assert_eq!(moon.match_quality(&Identity::Any), IdMatch::Any);
        assert_eq!(
            moon.match_quality(&id("*.strongswan.org")),
            IdMatch::OneWildcard
        );
        assert_eq!(moon.match_quality(&id("sun.strongswan.org")), IdMatch::None);
        assert_eq!(Identity::Any.match_quality(&moon), IdMatch::None);
        let carol = id("carol@strongswan.org");
        assert!(id("*@strongswan.org").matches(&carol));
        assert!(!id("*@strongswan.com").matches(&carol));
        assert!(Identity::Any.matches(&carol));
        assert!(!moon.matches(&Identity::Ipv4(Ipv4Addr::LOCALHOST)));
        // Display parses back.
        for s in ["@moon", "carol@x", "@#0102", "%any", "10.0.0.1", "@@carol"] {
            assert_eq!(id(&id(s).to_string()), id(s), "{s}");
        }
    }
}
