//! The configuration's refusals: every error names FILE:LINE and the
//! dotted key, and its kind can be matched (config/error.rs).

use super::*;

/// Parses `conn_body` inside a valid connection (line 2 onwards) and
/// returns the error.
fn conn_err(conn_body: &str) -> ConfigError {
    let text = format!(
        "connections {{\n gw {{\n{conn_body}\n  local {{ auth = psk }}\n  remote {{ auth = psk }}\n }}\n}}\n"
    );
    parse("swanctl.conf", &text).unwrap_err()
}

fn child_err(child_body: &str) -> ConfigError {
    conn_err(&format!(
        "  children {{\n   net {{\n{child_body}\n   }}\n  }}"
    ))
}

#[test]
fn errors_name_file_line_and_key() {
    let e = child_err("    esp_proposals = aes128-sha3");
    assert_eq!(e.file, "swanctl.conf");
    assert_eq!(e.line, 5);
    assert_eq!(e.key, "connections.gw.children.net.esp_proposals");
    assert!(e.kind.to_string().contains("sha3"), "{e}");
    assert_eq!(
        e.to_string(),
        format!(
            "swanctl.conf:5: connections.gw.children.net.esp_proposals: {}",
            e.kind
        )
    );

    let cases: &[(&str, &str, &str)] = &[
        ("  proposals = aes128gcm16-ecp256", "proposals", "PRF"),
        (
            "  proposals = aes128-sha256-ecp256,",
            "proposals",
            "empty item",
        ),
        ("  version = 1", "version", "IKEv1"),
        ("  version = 3", "version", "bad version"),
        ("  local_addrs = 10.0.0.0/40", "local_addrs", "prefix"),
        ("  remote_addrs = a b", "remote_addrs", "neither"),
        ("  local_port = 0", "local_port", "bad port"),
        ("  remote_port = 70000", "remote_port", "bad port"),
        ("  encap = maybe", "encap", "boolean"),
        ("  rekey_time = 1w", "rekey_time", "duration"),
        ("  dpd_delay = -5", "dpd_delay", "not a number"),
        ("  keyingtries = many", "keyingtries", "not a number"),
        ("  unique = always", "unique", "never, no, keep, replace"),
        ("  vips = 0.0.0.0, vip", "vips", "not an address"),
        ("  pools = nosuch", "pools", "no pool 'nosuch'"),
        ("  frobnicate = yes", "frobnicate", "unknown key"),
        ("  mobike = perhaps", "mobike", "boolean"),
        (
            "  redirect_to = me@gw",
            "redirect_to",
            "host name (RFC 5685",
        ),
        ("  redirect_on = later", "redirect_on", "init, auth"),
        (
            "  redirect_to = 192.0.2.9\n  redirect_load = unix:///a, unix:///b",
            "redirect_load",
            "one vici socket per",
        ),
        (
            "  redirect_to = 192.0.2.9\n  redirect_load = tcp://1.2.3.4:4502",
            "redirect_load",
            "unix://PATH",
        ),
        ("  dscp = 101000", "dscp", "only strongSwan's default"),
        (
            "  rekey_time = 1h\n  rekey_time = 2h",
            "rekey_time",
            "given twice",
        ),
    ];
    for &(body, key, why) in cases {
        let e = conn_err(body);
        let line = 3 + body.lines().count() - 1;
        assert_eq!(e.key, format!("connections.gw.{key}"), "{body}: {e}");
        assert_eq!(e.line, line, "{body}: {e}");
        assert!(e.kind.to_string().contains(why), "{body}: {e}");
    }

    let cases: &[(&str, &str, &str)] = &[
        ("local_ts = 10.1.0.0/16[tcp", "local_ts", "']'"),
        ("remote_ts = 10.2.0.9-10.2.0.1", "remote_ts", "ends before"),
        ("local_ts = dynamic[gre]", "local_ts", "not supported yet"),
        (
            "esp_proposals = aes128-aes128gcm16",
            "esp_proposals",
            "combined-mode",
        ),
        (
            "ah_proposals = aes128-sha1",
            "ah_proposals",
            "integrity algorithms only",
        ),
        ("mode = beet", "mode", "not supported"),
        ("mode = tunnelled", "mode", "bad value"),
        ("rekey_time = 2h\n    life_time = 1h", "life_time", "expire"),
        ("rekey_bytes = 1T", "rekey_bytes", "k, M or G"),
        ("rekey_packets = 1k", "rekey_packets", "not a number"),
        ("start_action = trap|start", "start_action", "combined"),
        ("dpd_action = hold", "dpd_action", "bad value"),
        ("close_action = later", "close_action", "bad value"),
        ("ipcomp = 2", "ipcomp", "boolean"),
        (
            "per_cpu_sas = encap",
            "per_cpu_sas",
            "'encap' is not supported",
        ),
        ("per_cpu_sas = maybe", "per_cpu_sas", "boolean"),
        ("rekey_switch = never", "rekey_switch", "loss-free"),
        (
            "rekey_time = 0\n    rekey_switch = keep-old",
            "rekey_switch",
            "needs a life_time",
        ),
        (
            "per_cpu_sas = yes\n    rekey_switch = prefer-new",
            "rekey_switch",
            "only loss-free",
        ),
        ("replay_window = 16", "replay_window", "32..=4096"),
        ("sha256_96 = yes", "sha256_96", "only strongSwan's default"),
        ("mark_in = 42", "mark_in", "only strongSwan's default"),
        ("interface = eth0", "interface", "not supported"),
        ("whatever = 1", "whatever", "unknown key"),
    ];
    for &(body, key, why) in cases {
        let e = child_err(&format!("    {body}"));
        let line = 5 + body.lines().count() - 1;
        assert_eq!(
            e.key,
            format!("connections.gw.children.net.{key}"),
            "{body}: {e}"
        );
        assert_eq!(e.line, line, "{body}: {e}");
        assert!(e.kind.to_string().contains(why), "{body}: {e}");
    }
}

#[test]
fn auth_and_structure_errors() {
    let wrap = |conn: &str| format!("connections {{\n gw {{\n{conn}\n }}\n}}");
    let cases: &[(&str, usize, &str, &str)] = &[
        (
            "  local { auth = psk }",
            2,
            "connections.gw.remote",
            "section missing",
        ),
        (
            "  remote { auth = psk }",
            2,
            "connections.gw.local",
            "section missing",
        ),
        (
            "  local { auth = rsa-md5 }\n  remote { auth = psk }",
            3,
            "connections.gw.local.auth",
            "unknown authentication",
        ),
        (
            "  local { auth = eap-tls }\n  remote { auth = psk }",
            3,
            "connections.gw.local.auth",
            "not supported yet",
        ),
        (
            "  local { auth = psk\n id = @#0102\n }\n  remote { auth = psk }",
            4,
            "connections.gw.local.id",
            "quote",
        ),
        (
            "  local { auth = magic }\n  remote { auth = psk }",
            3,
            "connections.gw.local.auth",
            "unknown authentication",
        ),
        (
            "  local { auth = psk\n ca_id = moon }\n  remote { auth = psk }",
            4,
            "connections.gw.local.ca_id",
            "not supported yet",
        ),
        (
            "  local { auth = psk }\n  remote { auth = psk\n id = C=CH, XX=sun }",
            5,
            "connections.gw.remote.id",
            "distinguished name",
        ),
        (
            "  local { auth = psk }\n  remote { auth = psk }\n  local-2 { auth = psk }",
            5,
            "connections.gw.local-2",
            "rounds",
        ),
        (
            "  local { auth = psk }\n  remote { auth = psk\n round = 1 }",
            5,
            "connections.gw.remote.round",
            "default",
        ),
        (
            "  local { auth = psk }\n  remote { auth = psk }\n  foo { }",
            5,
            "connections.gw.foo",
            "unknown section",
        ),
        (
            "  local { auth = psk }\n  remote { auth = psk }\n  children { x = 1 }",
            5,
            "connections.gw.children.x",
            "sections only",
        ),
    ];
    for &(conn, line, key, why) in cases {
        let e = parse("f", &wrap(conn)).unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (line, key), "{conn}: {e}");
        assert!(e.kind.to_string().contains(why), "{conn}: {e}");
    }
    let cases: &[(&str, usize, &str, &str)] = &[
        ("x = 1", 1, "x", "unknown top-level key"),
        (
            "authorities {\n ca {\n crl_uris = x\n }\n}",
            2,
            "authorities.ca.cacert",
            "needs its CA certificate",
        ),
        (
            "pools {\n p {\n dns = 1.1.1.1\n }\n}",
            2,
            "pools.p.addrs",
            "needs addrs",
        ),
        (
            "pools {\n p {\n addrs = 10.0.0.0/33\n }\n}",
            3,
            "pools.p.addrs",
            "not an address",
        ),
        (
            "pools {\n p {\n addrs = 10.0.0.0/24\n subnet = 10.0.0.0/8\n }\n}",
            4,
            "pools.p.subnet",
            "addrs and dns",
        ),
        ("foo {\n}", 1, "foo", "unknown section"),
        (
            "secrets {\n xauth-carol { secret = x }\n}",
            2,
            "secrets.xauth-carol",
            "not supported yet",
        ),
        (
            "secrets {\n zzz { secret = x }\n}",
            2,
            "secrets.zzz",
            "unknown secret type",
        ),
        (
            "secrets {\n ike-1 { id = a }\n}",
            2,
            "secrets.ike-1.secret",
            "missing",
        ),
        (
            "secrets {\n ike-1 {\n secret = 0xabc }\n}",
            3,
            "secrets.ike-1.secret",
            "odd number",
        ),
        (
            "secrets {\n ike-1 {\n secret = 0s*** }\n}",
            3,
            "secrets.ike-1.secret",
            "base64",
        ),
        (
            "secrets {\n ike-1 {\n secret = x\n file = y }\n}",
            4,
            "secrets.ike-1.file",
            "unknown key",
        ),
        (
            "secrets {\n ike-1 {\n secret = x\n id = 10.0.0.0/8 }\n}",
            4,
            "secrets.ike-1.id",
            "subnet",
        ),
        (
            "connections {\n include conf.d/missing.conf\n}",
            2,
            "connections",
            "include",
        ),
        ("connections {\n gw {\n", 3, "connections.gw", "not closed"),
    ];
    for &(text, line, key, why) in cases {
        let e = parse("f", text).unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (line, key), "{text}: {e}");
        assert!(e.kind.to_string().contains(why), "{text}: {e}");
    }
}

#[test]
fn error_kinds_are_matchable() {
    use ConfigErrorKind as K;
    let e = child_err("    esp_proposals = aes128-sha3");
    assert_eq!(e.line, 5);
    assert!(
        matches!(&e.kind, K::Proposal(ProposalError::UnknownAlgorithm { proposal, algorithm })
            if proposal == "aes128-sha3" && algorithm == "sha3"),
        "{e:?}"
    );
    let e = conn_err("  version = 1");
    assert_eq!((e.line, e.key.as_str()), (3, "connections.gw.version"));
    assert!(matches!(e.kind, K::Ikev1), "{e:?}");
    let e = conn_err("  rekey_time = 1w");
    assert!(
        matches!(&e.kind, K::Value(ValueError::Duration(v)) if v == "1w"),
        "{e:?}"
    );
    let e = conn_err("  local_addrs = 10.0.0.1,,10.0.0.2");
    assert!(matches!(&e.kind, K::List(EmptyListItem { .. })), "{e:?}");
    let e = conn_err("  remote_addrs = 10.0.0.0/33");
    assert!(
        matches!(
            &e.kind,
            K::Selector(SelectorError::PrefixLength { max: 32, .. })
        ),
        "{e:?}"
    );
    let e = child_err("    local_ts = 10.0.0.0/8[tcp/90-80]");
    assert!(
        matches!(
            &e.kind,
            K::Selector(SelectorError::ProtoPort {
                problem: ProtoPortError::ReversedPorts { .. },
                ..
            })
        ),
        "{e:?}"
    );
    let e = child_err("    replay_window = 8");
    assert_eq!(e.line, 5);
    assert!(matches!(e.kind, K::ReplayWindow { packets: 8 }), "{e:?}");
    let e = child_err("    rekey_bytes = 1000\n    life_bytes = 500");
    assert_eq!(
        (e.line, e.key.as_str()),
        (6, "connections.gw.children.net.life_bytes")
    );
    assert!(
        matches!(
            e.kind,
            K::LifeBelowRekey {
                life: 500,
                rekey: 1000
            }
        ),
        "{e:?}"
    );

    let e = parse("f", "a {\n}\n}").unwrap_err();
    assert_eq!(e.line, 3);
    assert!(matches!(e.kind, K::StrayClose), "{e:?}");
    let e = parse("f", "s {\n k = 1\n k = 2\n}").unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (3, "s.k"));
    assert!(matches!(e.kind, K::Duplicate { first_line: 2 }), "{e:?}");
    let e = parse("f", "a b").unwrap_err();
    assert!(
        matches!(&e.kind, K::ExpectedOpenOrEquals { name, found: Found::Name(n) }
            if name == "a" && n == "b"),
        "{e:?}"
    );
    let e = parse("f", "secrets {\n rsa-1 { file = x }\n}").unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (2, "secrets.rsa-1.secret"));
    assert!(matches!(e.kind, K::MissingSecret), "{e:?}");
    let e = parse("f", "secrets {\n pkcs12-1 { file = x }\n}").unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (2, "secrets.pkcs12-1"));
    assert!(matches!(e.kind, K::SecretType { known: true }), "{e:?}");
    let e = parse("f", "secrets {\n ike-1 {\n  secret = 0xabc\n }\n}").unwrap_err();
    assert_eq!(e.line, 3);
    assert!(
        matches!(e.kind, K::Secret(SecretError::Hex(HexError::OddLength))),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "f:3: secrets.ike-1.secret: bad hex: an odd number of hex digits"
    );
    let e = parse(
        "f",
        "secrets {\n ike-1 {\n  secret = x\n  id = XX=CH\n }\n}",
    )
    .unwrap_err();
    assert!(
        matches!(&e.kind, K::Identity(IdentityError::DistinguishedName { id, .. }) if id == "XX=CH"),
        "{e:?}"
    );

    let missing = std::env::temp_dir().join(format!("flowsec-no-such-{}.conf", std::process::id()));
    let e = load(&Provider::fastest(), &missing).unwrap_err();
    assert!(
        matches!(&e.kind, K::Read(io) if io.kind() == std::io::ErrorKind::NotFound),
        "{e:?}"
    );
    assert!(std::error::Error::source(&e).is_some());
}

#[test]
fn a_gateway_for_eap_clients_with_a_psk_is_refused() {
    // RFC 7296 §2.16: the responder of an EAP exchange authenticates with
    // a signature; a PSK-keyed AUTH lets an unauthenticated client guess
    // the key offline.
    let text = "connections {\n gw {\n  local {\n   auth = psk\n  }\n  remote { auth = eap-mschapv2 }\n }\n}\n";
    let e = parse("swanctl.conf", text).unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (4, "connections.gw.local.auth"));
    assert!(matches!(e.kind, ConfigErrorKind::EapWithPsk), "{e}");
    assert!(e.to_string().contains("RFC 7296 §2.16"), "{e}");
}

#[test]
fn an_eap_secret_without_id_and_overlapping_pools_are_refused() {
    let e = parse(
        "swanctl.conf",
        "secrets {\n eap-all {\n  secret = x\n }\n}\n",
    )
    .unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (2, "secrets.eap-all"));
    assert!(matches!(e.kind, ConfigErrorKind::EapSecretWithoutId), "{e}");
    let e = parse(
        "swanctl.conf",
        "pools {\n a { addrs = 10.3.0.0/24 }\n b {\n  addrs = 10.3.0.128-10.3.1.5\n }\n}\n",
    )
    .unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (4, "pools.b.addrs"));
    assert!(e.to_string().contains("overlaps pool 'a'"), "{e}");
    // Apart, or of another family: fine.
    parse(
        "swanctl.conf",
        "pools {\n a { addrs = 10.3.0.0/24 }\n b { addrs = 10.3.1.0/24 }\n c { addrs = fd00::/120 }\n}\n",
    )
    .unwrap();
}
