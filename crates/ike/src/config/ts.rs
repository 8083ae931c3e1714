//! Traffic selectors (`local_ts`, `remote_ts`) and IKE addresses
//! (`local_addrs`, `remote_addrs`) as swanctl.conf writes them
//! (strongSwan 5.9.8 `vici_config.c` `parse_ts()`, swanctl.conf(5)).
//!
//! A selector is `dynamic`, a CIDR subnet (`10.1.0.0/16`, `0.0.0.0/0`,
//! `::/0`; host bits are cleared), a single address, or an address range
//! `10.1.0.1-10.1.0.9`, optionally followed by `[PROTO]` or
//! `[PROTO/PORT]`: PROTO is `any` (or `%any`), a protocol name from the
//! usual `/etc/protocols` set or a number 0..=255; PORT is `any`, a number,
//! a range `1024-2048`, a well-known service name or `opaque` (RFC 4301
//! OPAQUE, start 65535 end 0). For ICMP/ICMPv6 the port number is the
//! 16-bit RFC 4301 §4.4.1.1 value, type in the high byte and code in the
//! low, as strongSwan passes it through. `dynamic` with a `[...]`
//! restriction is refused: [`TsSpec::Dynamic`] stands for the whole host.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::value_error::{ProtoPortError, SelectorError};

/// A configured traffic selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TsSpec {
    /// The IKE SA's own address (or virtual IP), all protocols and ports
    /// (RFC 7296 §2.9).
    Dynamic,
    /// An address range with a protocol (0 = any) and port range.
    Range {
        /// First address.
        start: IpAddr,
        /// Last address (same family, not below `start`).
        end: IpAddr,
        /// IP protocol number, 0 for any.
        protocol: u8,
        /// First port (65535 with `end_port` 0 for OPAQUE).
        start_port: u16,
        /// Last port.
        end_port: u16,
    },
}

/// A `local_addrs` / `remote_addrs` entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AddrSpec {
    /// `%any` (also `%any4`, `%any6`): any address.
    Any,
    /// One address.
    Addr(IpAddr),
    /// A CIDR subnet (host bits cleared), for matching a responder's peers.
    Prefix(IpAddr, u8),
    /// An inclusive address range.
    Range(IpAddr, IpAddr),
    /// A DNS name, resolved by the caller.
    Host(String),
}

/// As swanctl.conf writes it (`dynamic`, `10.1.0.0/16`,
/// `10.1.0.1-10.1.0.9[tcp/80]` with the protocol as a number).
impl core::fmt::Display for TsSpec {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            TsSpec::Dynamic => f.write_str("dynamic"),
            TsSpec::Range {
                start,
                end,
                protocol,
                start_port,
                end_port,
            } => f.write_str(&crate::ts::ts_string(&flowsec_wire::ike::TrafficSelector {
                ip_protocol: protocol,
                start_port,
                end_port,
                start,
                end,
            })),
        }
    }
}

/// As swanctl.conf writes it (`%any`, `192.0.2.1`, `10.0.0.0/8`,
/// `10.0.0.1-10.0.0.9`, a name).
impl core::fmt::Display for AddrSpec {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            AddrSpec::Any => f.write_str("%any"),
            AddrSpec::Addr(a) => write!(f, "{a}"),
            AddrSpec::Prefix(a, n) => write!(f, "{a}/{n}"),
            AddrSpec::Range(a, b) => write!(f, "{a}-{b}"),
            AddrSpec::Host(h) => f.write_str(h),
        }
    }
}

impl TsSpec {
    /// Parse one selector (see the module docs).
    pub fn parse(s: &str) -> Result<TsSpec, SelectorError> {
        let (addr, protoport) = match s.split_once('[') {
            None => (s, None),
            Some((a, rest)) => {
                let inner = rest
                    .strip_suffix(']')
                    .ok_or_else(|| SelectorError::UnclosedBracket { selector: s.into() })?;
                (a, Some(inner))
            }
        };
        let (protocol, start_port, end_port) = match protoport {
            None => (0, 0, 0xffff),
            Some(pp) => parse_protoport(pp).map_err(|problem| SelectorError::ProtoPort {
                selector: s.into(),
                problem,
            })?,
        };
        if addr == "dynamic" {
            if protoport.is_some() {
                return Err(SelectorError::DynamicRestricted { selector: s.into() });
            }
            return Ok(TsSpec::Dynamic);
        }
        let (start, end) = match addr.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (ip(a, s)?, ip(b, s)?);
                if a.is_ipv4() != b.is_ipv4() {
                    return Err(SelectorError::MixedFamilies { selector: s.into() });
                }
                if a > b {
                    return Err(SelectorError::Reversed { selector: s.into() });
                }
                (a, b)
            }
            None => {
                let (a, bits) = cidr(addr, s)?;
                (mask(a, bits, false), mask(a, bits, true))
            }
        };
        Ok(TsSpec::Range {
            start,
            end,
            protocol,
            start_port,
            end_port,
        })
    }
}

impl AddrSpec {
    /// Parse one `local_addrs` / `remote_addrs` entry: `%any`, an address,
    /// `addr/bits`, `a-b` or a DNS name.
    pub fn parse(s: &str) -> Result<AddrSpec, SelectorError> {
        if matches!(s, "%any" | "%any4" | "%any6") {
            return Ok(AddrSpec::Any);
        }
        if let Ok(a) = s.parse::<IpAddr>() {
            return Ok(AddrSpec::Addr(a));
        }
        if s.contains('/') {
            let (a, bits) = cidr(s, s)?;
            return Ok(AddrSpec::Prefix(mask(a, bits, false), bits));
        }
        if let Some((a, b)) = s.split_once('-') {
            if let (Ok(a), Ok(b)) = (a.parse::<IpAddr>(), b.parse::<IpAddr>()) {
                if a.is_ipv4() != b.is_ipv4() || a > b {
                    return Err(SelectorError::BadAddressRange { entry: s.into() });
                }
                return Ok(AddrSpec::Range(a, b));
            }
        }
        let host_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
        if s.is_empty() || s.len() > 253 || !s.chars().all(host_char) {
            return Err(SelectorError::NotAnAddressSpec { entry: s.into() });
        }
        Ok(AddrSpec::Host(s.to_string()))
    }

    /// Whether `addr` is one this entry allows (a [`AddrSpec::Host`] never
    /// matches: resolve it first).
    pub fn contains(&self, addr: IpAddr) -> bool {
        match *self {
            AddrSpec::Any => true,
            AddrSpec::Addr(a) => a == addr,
            AddrSpec::Prefix(p, bits) => {
                p.is_ipv4() == addr.is_ipv4() && mask(addr, bits, false) == p
            }
            AddrSpec::Range(a, b) => a.is_ipv4() == addr.is_ipv4() && a <= addr && addr <= b,
            AddrSpec::Host(_) => false,
        }
    }
}

fn ip(t: &str, whole: &str) -> Result<IpAddr, SelectorError> {
    t.parse().map_err(|_| SelectorError::NotAnAddress {
        entry: whole.into(),
        text: t.into(),
    })
}

fn cidr(t: &str, whole: &str) -> Result<(IpAddr, u8), SelectorError> {
    let (a, bits) = match t.split_once('/') {
        None => {
            let a = ip(t, whole)?;
            return Ok((a, if a.is_ipv4() { 32 } else { 128 }));
        }
        Some(x) => x,
    };
    let a = ip(a, whole)?;
    let max = if a.is_ipv4() { 32 } else { 128 };
    match bits.parse::<u8>() {
        Ok(b) if b <= max && !bits.starts_with('+') => Ok((a, b)),
        _ => Err(SelectorError::PrefixLength {
            entry: whole.into(),
            bits: bits.into(),
            max,
        }),
    }
}

/// The first (`ones` false) or last address of `a/bits`.
fn mask(a: IpAddr, bits: u8, ones: bool) -> IpAddr {
    match a {
        IpAddr::V4(v) => {
            let m = u32::MAX.checked_shr(u32::from(bits)).unwrap_or(0);
            let x = u32::from(v);
            IpAddr::V4(Ipv4Addr::from(if ones { x | m } else { x & !m }))
        }
        IpAddr::V6(v) => {
            let m = u128::MAX.checked_shr(u32::from(bits)).unwrap_or(0);
            let x = u128::from(v);
            IpAddr::V6(Ipv6Addr::from(if ones { x | m } else { x & !m }))
        }
    }
}

/// `PROTO[/PORT]` → (protocol, start port, end port).
fn parse_protoport(pp: &str) -> Result<(u8, u16, u16), ProtoPortError> {
    let (proto, port) = match pp.split_once('/') {
        Some((a, b)) => (a, Some(b)),
        None => (pp, None),
    };
    let protocol = match proto {
        "any" | "%any" | "" => 0,
        _ => match protocol_number(proto) {
            Some(n) => n,
            None => proto
                .parse::<u8>()
                .map_err(|_| ProtoPortError::UnknownProtocol {
                    protocol: proto.into(),
                })?,
        },
    };
    let (from, to) = match port {
        None | Some("") | Some("any") | Some("%any") => (0, 0xffff),
        Some("opaque") => (0xffff, 0),
        Some(p) => {
            if protocol == 0 {
                return Err(ProtoPortError::PortWithoutProtocol);
            }
            let num = |t: &str| -> Result<u16, ProtoPortError> {
                match service_port(t) {
                    Some(n) => Ok(n),
                    None => t
                        .parse::<u16>()
                        .map_err(|_| ProtoPortError::BadPort { port: t.into() }),
                }
            };
            match p.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (num(a)?, num(b)?);
                    if a > b {
                        return Err(ProtoPortError::ReversedPorts { range: p.into() });
                    }
                    (a, b)
                }
                None => {
                    let n = num(p)?;
                    (n, n)
                }
            }
        }
    };
    Ok((protocol, from, to))
}

/// The common `/etc/protocols` names (`getprotobyname(3)`).
fn protocol_number(name: &str) -> Option<u8> {
    Some(match name.to_ascii_lowercase().as_str() {
        "ip" => 0,
        "icmp" => 1,
        "igmp" => 2,
        "ipencap" => 4,
        "tcp" => 6,
        "udp" => 17,
        "dccp" => 33,
        "ipv6" => 41,
        "rsvp" => 46,
        "gre" => 47,
        "esp" => 50,
        "ah" => 51,
        "ipv6-icmp" | "icmpv6" => 58,
        "eigrp" => 88,
        "ospf" => 89,
        "ipip" => 94,
        "etherip" => 97,
        "pim" => 103,
        "ipcomp" => 108,
        "vrrp" => 112,
        "l2tp" => 115,
        "sctp" => 132,
        "udplite" => 136,
        _ => return None,
    })
}

/// The common `/etc/services` names (`getservbyname(3)`).
fn service_port(name: &str) -> Option<u16> {
    Some(match name {
        "ftp-data" => 20,
        "ftp" => 21,
        "ssh" => 22,
        "telnet" => 23,
        "smtp" => 25,
        "domain" => 53,
        "bootps" => 67,
        "bootpc" => 68,
        "tftp" => 69,
        "http" | "www" => 80,
        "kerberos" => 88,
        "pop3" => 110,
        "ntp" => 123,
        "imap" | "imap2" => 143,
        "snmp" => 161,
        "bgp" => 179,
        "ldap" => 389,
        "https" => 443,
        "isakmp" => 500,
        "syslog" => 514,
        "submission" => 587,
        "ldaps" => 636,
        "imaps" => 993,
        "pop3s" => 995,
        "l2tp" => 1701,
        "ipsec-nat-t" => flowsec_wire::udp_encap::NAT_T_PORT,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: &str, end: &str, protocol: u8, start_port: u16, end_port: u16) -> TsSpec {
        TsSpec::Range {
            start: start.parse().unwrap(),
            end: end.parse().unwrap(),
            protocol,
            start_port,
            end_port,
        }
    }

    #[test]
    fn selectors() {
        assert_eq!(TsSpec::parse("dynamic").unwrap(), TsSpec::Dynamic);
        for (text, want) in [
            (
                "10.1.0.0/16",
                range("10.1.0.0", "10.1.255.255", 0, 0, 0xffff),
            ),
            (
                "10.1.2.3/16",
                range("10.1.0.0", "10.1.255.255", 0, 0, 0xffff),
            ),
            (
                "0.0.0.0/0",
                range("0.0.0.0", "255.255.255.255", 0, 0, 0xffff),
            ),
            (
                "::/0",
                range(
                    "::",
                    "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                    0,
                    0,
                    0xffff,
                ),
            ),
            (
                "10.1.0.1-10.1.0.9",
                range("10.1.0.1", "10.1.0.9", 0, 0, 0xffff),
            ),
            ("192.0.2.7", range("192.0.2.7", "192.0.2.7", 0, 0, 0xffff)),
            (
                "10.1.0.0/16[tcp/80]",
                range("10.1.0.0", "10.1.255.255", 6, 80, 80),
            ),
            (
                "10.1.0.0/16[udp]",
                range("10.1.0.0", "10.1.255.255", 17, 0, 0xffff),
            ),
            (
                "10.0.0.0/8[icmp]",
                range("10.0.0.0", "10.255.255.255", 1, 0, 0xffff),
            ),
            (
                "10.0.0.0/8[tcp/1024-2048]",
                range("10.0.0.0", "10.255.255.255", 6, 1024, 2048),
            ),
            (
                "10.0.0.0/8[47]",
                range("10.0.0.0", "10.255.255.255", 47, 0, 0xffff),
            ),
            (
                "10.0.0.0/8[udp/opaque]",
                range("10.0.0.0", "10.255.255.255", 17, 0xffff, 0),
            ),
            (
                "10.0.0.0/8[any]",
                range("10.0.0.0", "10.255.255.255", 0, 0, 0xffff),
            ),
        ] {
            assert_eq!(TsSpec::parse(text).unwrap(), want, "{text}");
        }
        let e = TsSpec::parse("10.0.0.0/8[%any/https]").unwrap_err();
        assert_eq!(
            e,
            SelectorError::ProtoPort {
                selector: "10.0.0.0/8[%any/https]".into(),
                problem: ProtoPortError::PortWithoutProtocol,
            }
        );
        assert_eq!(
            e.to_string(),
            "'10.0.0.0/8[%any/https]': a port needs a protocol (e.g. [tcp/80])"
        );
    }

    #[test]
    fn selector_refusals() {
        for bad in [
            "10.1.0.0/33",
            "10.1.0.0/",
            "10.1.0.9-10.1.0.1",
            "10.1.0.1-::1",
            "10.1.0.0/16[tcp",
            "10.1.0.0/16[tcp/80]x",
            "10.1.0.0/16[xyz]",
            "10.1.0.0/16[tcp/70000]",
            "10.1.0.0/16[tcp/90-80]",
            "10.1.0.0/16[256]",
            "dynamic[tcp]",
            "host.example",
            "",
        ] {
            assert!(TsSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn addresses() {
        assert_eq!(AddrSpec::parse("%any").unwrap(), AddrSpec::Any);
        assert_eq!(
            AddrSpec::parse("192.168.0.1").unwrap(),
            AddrSpec::Addr("192.168.0.1".parse().unwrap())
        );
        let p = AddrSpec::parse("10.1.2.3/16").unwrap();
        assert_eq!(p, AddrSpec::Prefix("10.1.0.0".parse().unwrap(), 16));
        assert!(p.contains("10.1.200.1".parse().unwrap()));
        assert!(!p.contains("10.2.0.1".parse().unwrap()));
        let r = AddrSpec::parse("10.0.0.1-10.0.0.9").unwrap();
        assert!(r.contains("10.0.0.5".parse().unwrap()));
        assert!(!r.contains("::1".parse().unwrap()));
        assert_eq!(
            AddrSpec::parse("moon.strongswan.org").unwrap(),
            AddrSpec::Host("moon.strongswan.org".into())
        );
        assert_eq!(
            AddrSpec::parse("gw-1.example").unwrap(),
            AddrSpec::Host("gw-1.example".into())
        );
        assert!(AddrSpec::parse("a b").is_err());
        assert!(AddrSpec::parse("10.0.0.9-10.0.0.1").is_err());
        assert!(AddrSpec::parse("10.0.0.0/40").is_err());
    }
}
