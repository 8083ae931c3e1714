//! What a scrape asks for, judged without I/O: the request line and the
//! headers of an HTTP/1.x request (RFC 9112), read up to the blank line.
//!
//! The page is unauthenticated. A browser on the gateway (or on a host the
//! port is reachable from) can be made to fetch it by a web page whose
//! name the attacker re-points to the gateway's address (DNS rebinding):
//! the browser then sends that name as `Host`. So the page is served only
//! to a request whose `Host` is a literal IP address (the bound address
//! always is one: `--metrics` takes ADDR:PORT) or `localhost` (a name no
//! attacker's page can carry: the browser sends the page's own name), with
//! or without a port; any other name gets 421 Misdirected Request (RFC
//! 9110 §15.5.20). A request without `Host` is served only in HTTP/1.0 (a
//! browser always sends one; HTTP/1.1 requires exactly one, RFC 9112
//! §3.2).

use std::net::{Ipv4Addr, Ipv6Addr};

/// How a request is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// `GET /metrics` (or `GET /`) naming the page by address: the page.
    Page,
    /// Another method or path: 404.
    NotFound,
    /// `Host` is a name, not a literal IP address (perhaps a page in a
    /// browser that rebound its name to us): 421.
    ForeignHost,
    /// Not an HTTP/1.x request, or `Host` missing in HTTP/1.1 or given
    /// twice (RFC 9112 §3.2): 400.
    Malformed,
}

/// Judge the request whose head (request line and headers) is `head`.
pub fn judge(head: &[u8]) -> Verdict {
    let Ok(text) = std::str::from_utf8(head) else {
        return Verdict::Malformed;
    };
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let mut first = lines.next().unwrap_or_default().split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (first.next(), first.next(), first.next(), first.next())
    else {
        return Verdict::Malformed;
    };
    let http10 = match version {
        "HTTP/1.0" => true,
        "HTTP/1.1" => false,
        _ => return Verdict::Malformed,
    };
    let mut hosts = lines
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .filter(|(name, _)| name.eq_ignore_ascii_case("host"))
        .map(|(_, value)| value.trim_matches([' ', '\t']));
    match (hosts.next(), hosts.next()) {
        (Some(_), Some(_)) | (None, _) if !http10 => return Verdict::Malformed,
        (Some(_), Some(_)) => return Verdict::Malformed,
        (Some(host), None) if !host_names_us(host) => return Verdict::ForeignHost,
        _ => {}
    }
    match (method, target) {
        ("GET", "/metrics" | "/") => Verdict::Page,
        _ => Verdict::NotFound,
    }
}

/// Whether a `Host` value names us beyond doubt: a literal IP address
/// ([`host_is_literal_ip`]) or `localhost`, each with or without a port
/// (Prometheus' own examples scrape `localhost:PORT`).
pub fn host_names_us(host: &str) -> bool {
    let name = host.rsplit_once(':').map_or(host, |(n, _)| n);
    host_is_literal_ip(host)
        || (name.eq_ignore_ascii_case("localhost")
            && host_is_literal_ip(&host.replacen(name, "127.0.0.1", 1)))
}

/// Whether a `Host` value names a literal IP address: `192.0.2.1`,
/// `192.0.2.1:9100`, `[2001:db8::1]`, `[2001:db8::1]:9100` (RFC 9110
/// §7.2, RFC 3986 §3.2.2).
pub fn host_is_literal_ip(host: &str) -> bool {
    let port_ok = |p: Option<&str>| {
        p.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()))
    };
    if let Some(rest) = host.strip_prefix('[') {
        let Some((inside, after)) = rest.split_once(']') else {
            return false;
        };
        let port = match after {
            "" => None,
            a => match a.strip_prefix(':') {
                Some(p) => Some(p),
                None => return false,
            },
        };
        return inside.parse::<Ipv6Addr>().is_ok() && port_ok(port);
    }
    let (addr, port) = match host.split_once(':') {
        Some((a, p)) => (a, Some(p)),
        None => (host, None),
    };
    addr.parse::<Ipv4Addr>().is_ok() && port_ok(port)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_must_be_a_literal_ip_address() {
        for ok in [
            "127.0.0.1",
            "127.0.0.1:9100",
            "192.0.2.1:80",
            "[::1]",
            "[::1]:9100",
            "[2001:db8::1]:9469",
        ] {
            assert!(host_is_literal_ip(ok), "{ok}");
        }
        for name in ["localhost", "localhost:9100", "LocalHost"] {
            assert!(host_names_us(name) && !host_is_literal_ip(name), "{name}");
        }
        for refused in [
            "localhost:",
            "localhost:x",
            "localhost.evil.example",
            "evil.localhost",
        ] {
            assert!(!host_names_us(refused), "{refused}");
        }
        for refused in [
            "",
            "evil.example",
            "evil.example:9100",
            "127.0.0.1.nip.io",
            "127.1",
            "0x7f000001",
            "127.0.0.1:",
            "127.0.0.1:abc",
            "127.0.0.1:123456",
            "127.0.0.1:80:80",
            "::1",
            "[::1",
            "[::1]x",
            "[::1]:",
            "[evil.example]",
            "[127.0.0.1]",
        ] {
            assert!(!host_is_literal_ip(refused), "{refused}");
        }
    }

    #[test]
    fn requests_are_judged_by_host_then_path() {
        let j = |s: &str| judge(s.as_bytes());
        assert_eq!(
            j("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9100\r\n\r\n"),
            Verdict::Page
        );
        assert_eq!(
            j("GET / HTTP/1.1\r\nhOsT:[::1]:9100\r\n\r\n"),
            Verdict::Page
        );
        // DNS rebinding: the attacker's name, whatever the path.
        assert_eq!(
            j("GET /metrics HTTP/1.1\r\nHost: rebind.evil.example:9100\r\n\r\n"),
            Verdict::ForeignHost
        );
        assert_eq!(
            j("GET /metrics HTTP/1.1\r\nHost: localhost:9469\r\n\r\n"),
            Verdict::Page
        );
        assert_eq!(
            j("GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
            Verdict::NotFound
        );
        assert_eq!(j("POST /metrics HTTP/1.0\r\n\r\n"), Verdict::NotFound);
        // No Host: HTTP/1.0 only (no browser sends that); two: never.
        assert_eq!(j("GET /metrics HTTP/1.0\r\n\r\n"), Verdict::Page);
        assert_eq!(j("GET /metrics HTTP/1.1\r\n\r\n"), Verdict::Malformed);
        assert_eq!(
            j("GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n"),
            Verdict::Malformed
        );
        // A Host after the blank line is body, not a header.
        assert_eq!(
            j("GET /metrics HTTP/1.1\r\n\r\nHost: 127.0.0.1\r\n"),
            Verdict::Malformed
        );
        assert_eq!(j("GET /metrics\r\n\r\n"), Verdict::Malformed);
        assert_eq!(j("GET /metrics HTTP/2\r\n\r\n"), Verdict::Malformed);
        assert_eq!(judge(b"\xff\xfe"), Verdict::Malformed);
    }
}
