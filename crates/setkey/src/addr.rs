//! Addresses as setkey writes them: `address`, `address/prefixlen`,
//! `address[port]`, `address/prefixlen[port]` (setkey(8), `src_range`),
//! with `[any]` for every port. Only numeric addresses: setkey resolves
//! host names with getaddrinfo(3), which a sans-I/O parser cannot do.

use std::net::IpAddr;

use crate::error::{ErrorKind, Pos};
use crate::lexer::Token;

/// A port as written: absent, `[any]`, or `[N]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Port {
    /// No brackets.
    Absent,
    /// `[any]`.
    Any,
    /// `[N]`, with the position of `[`.
    Num(u16, Pos),
}

/// An address with optional prefix length and port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AddrSpec {
    pub addr: IpAddr,
    pub prefix_len: Option<(u8, Pos)>,
    pub port: Port,
}

/// Parse `text` (part of `token`, starting at byte `offset` of its text)
/// as an address spec. Errors carry the position of the bad part.
pub(crate) fn parse_spec(
    token: &Token<'_>,
    offset: usize,
    text: &str,
) -> Result<AddrSpec, (Pos, ErrorKind)> {
    let at = |byte: usize| token.pos_at_byte(offset + byte);
    let (head, port) = match text.find('[') {
        Some(open) => {
            let rest = &text[open + 1..];
            let close = rest
                .find(']')
                .filter(|&c| c + 1 == rest.len())
                .ok_or_else(|| (at(open), ErrorKind::BadPort(text[open..].to_string())))?;
            let inner = &rest[..close];
            let port = if inner == "any" {
                Port::Any
            } else {
                let n = inner
                    .parse::<u16>()
                    .ok()
                    .filter(|_| inner.bytes().all(|b| b.is_ascii_digit()))
                    .ok_or_else(|| (at(open), ErrorKind::BadPort(text[open..].to_string())))?;
                Port::Num(n, at(open))
            };
            (&text[..open], port)
        }
        None => (text, Port::Absent),
    };
    let (addr_text, prefix_len) = match head.split_once('/') {
        Some((a, len)) => (a, Some((len, at(a.len())))),
        None => (head, None),
    };
    let addr: IpAddr = addr_text
        .parse()
        .map_err(|_| (at(0), ErrorKind::BadAddress(addr_text.to_string())))?;
    let prefix_len = match prefix_len {
        None => None,
        Some((len, pos)) => {
            let max = if addr.is_ipv4() { 32 } else { 128 };
            let n = len
                .parse::<u8>()
                .ok()
                .filter(|n| *n <= max && len.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| (pos, ErrorKind::BadPrefixLen(format!("/{len}"))))?;
            Some((n, pos))
        }
    };
    Ok(AddrSpec {
        addr,
        prefix_len,
        port,
    })
}

/// Address family flags `-4`, `-6`, `-n` (setkey's `ipaddropts`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Families {
    v4_only: bool,
    v6_only: bool,
}

impl Families {
    /// Parse a flags word such as `-4`, `-6n`; `None` if it is not one.
    pub fn parse(word: &str) -> Option<Families> {
        let flags = word.strip_prefix('-')?;
        if flags.is_empty() || !flags.bytes().all(|b| matches!(b, b'4' | b'6' | b'n')) {
            return None;
        }
        let v4 = flags.contains('4');
        let v6 = flags.contains('6');
        Some(Families {
            v4_only: v4 && !v6,
            v6_only: v6 && !v4,
        })
    }

    /// Whether `addr` is allowed; the error names the flag.
    pub fn check(&self, addr: IpAddr) -> Result<(), ErrorKind> {
        if self.v4_only && !addr.is_ipv4() {
            return Err(ErrorKind::FamilyNotAllowed { flag: "-4" });
        }
        if self.v6_only && !addr.is_ipv6() {
            return Err(ErrorKind::FamilyNotAllowed { flag: "-6" });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::tokenize;

    fn spec(text: &str) -> Result<AddrSpec, (Pos, ErrorKind)> {
        let toks = tokenize("t", text).unwrap();
        parse_spec(&toks[0], 0, toks[0].text)
    }

    #[test]
    fn forms() {
        let s = spec("10.1.2.0/24[80]").unwrap();
        assert_eq!(s.addr, "10.1.2.0".parse::<IpAddr>().unwrap());
        assert_eq!(s.prefix_len.unwrap().0, 24);
        assert!(matches!(
            s.port,
            Port::Num(
                80,
                Pos {
                    line: 1,
                    column: 12
                }
            )
        ));
        assert_eq!(spec("::1[any]").unwrap().port, Port::Any);
        assert_eq!(spec("fd00::/8").unwrap().prefix_len.unwrap().0, 8);
        assert_eq!(spec("192.0.2.1").unwrap().port, Port::Absent);
    }

    #[test]
    fn errors_point_inside_the_word() {
        assert_eq!(spec("10.0.0.1/33").unwrap_err().0.column, 9);
        assert_eq!(spec("10.0.0.1[x]").unwrap_err().0.column, 9);
        assert_eq!(spec("10.0.0.1[80").unwrap_err().0.column, 9);
        assert_eq!(spec("10.0.0.1[65536]").unwrap_err().0.column, 9);
        assert_eq!(
            spec("host.example").unwrap_err().1,
            ErrorKind::BadAddress("host.example".into())
        );
        assert!(spec("10.0.0.1/+8").is_err());
    }

    #[test]
    fn family_flags() {
        let f = Families::parse("-4n").unwrap();
        assert!(f.check("10.0.0.1".parse().unwrap()).is_ok());
        assert!(f.check("::1".parse().unwrap()).is_err());
        assert!(Families::parse("-46")
            .unwrap()
            .check("::1".parse().unwrap())
            .is_ok());
        assert!(Families::parse("-m").is_none());
        assert!(Families::parse("-").is_none());
    }
}
