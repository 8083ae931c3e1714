//! The TCP encapsulation keys (RFC 9329): `tcp_encap`, `tcp_port`,
//! `tcp_tls`, `tcp_fallback_time`, and the combinations refused.

use std::time::Duration;

use super::*;

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn tcp_encapsulation_keys_and_their_errors() {
    let conn = |body: &str| {
        let text = format!(
            "connections {{\n gw {{\n{body}\n  local {{ auth = psk }}\n  remote {{ auth = psk }}\n }}\n}}\n"
        );
        parse("swanctl.conf", &text).map(|c| c.connections[0].tcp)
    };
    assert_eq!(conn("").unwrap(), TcpConfig::default());
    assert_eq!(conn("").unwrap().encap, TcpEncap::No);
    let t = conn("  tcp_encap = yes").unwrap();
    assert_eq!((t.encap, t.port, t.tls), (TcpEncap::Yes, 4500, false));
    let t = conn("  tcp_encap = yes\n  tcp_tls = yes").unwrap();
    assert_eq!(
        (t.port, t.tls),
        (443, true),
        "443 with TLS unless tcp_port says"
    );
    let t = conn("  tcp_encap = fallback\n  tcp_tls = yes\n  tcp_port = 8443").unwrap();
    assert_eq!((t.encap, t.port), (TcpEncap::Fallback, 8443));
    assert_eq!(t.fallback_after, secs(5));
    let t = conn("  tcp_encap = fallback\n  tcp_fallback_time = 2s").unwrap();
    assert_eq!(t.fallback_after, secs(2));
    // Unknown combinations are errors naming the line and key.
    let cases: &[(&str, usize, &str, &str)] = &[
        ("  tcp_tls = yes", 3, "tcp_tls", "tcp_encap"),
        (
            "  tcp_encap = no\n  tcp_port = 443",
            4,
            "tcp_port",
            "tcp_encap",
        ),
        (
            "  tcp_encap = yes\n  tcp_fallback_time = 2s",
            4,
            "tcp_fallback_time",
            "fallback",
        ),
        (
            "  tcp_encap = fallback\n  tcp_fallback_time = 0",
            4,
            "tcp_fallback_time",
            "above 0",
        ),
        ("  tcp_encap = yes\n  encap = yes", 4, "encap", "choose one"),
        ("  tcp_encap = maybe", 3, "tcp_encap", "maybe"),
        ("  tcp_encap = yes\n  tcp_port = 0", 4, "tcp_port", "0"),
    ];
    for (body, line, key, says) in cases {
        let e = conn(body).unwrap_err();
        assert_eq!(
            (e.line, e.key.as_str()),
            (*line, format!("connections.gw.{key}").as_str()),
            "{body}: {e}"
        );
        assert!(e.to_string().contains(says), "{body}: {e}");
    }
}
