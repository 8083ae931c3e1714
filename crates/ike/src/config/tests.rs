use std::net::Ipv4Addr;

use flowsec_crypto::suite::Encr;
use flowsec_ipsec::Mode;
use flowsec_wire::iana::{DhGroup, EncrId, EsnId, IntegId, PrfId};

use super::*;

/// strongSwan's testing/tests/ikev2/net2net-psk, host moon (strongSwan
/// 6.0 tree; the same keys and values as 5.9.8's swanctl.conf(5)).
const MOON: &str = r#"connections {

   gw-gw {
      local_addrs  = 192.168.0.1
      remote_addrs = 192.168.0.2

      local {
         auth = psk
         id = moon.strongswan.org
      }
      remote {
         auth = psk
         id = sun.strongswan.org
      }
      children {
         net-net {
            local_ts  = 10.1.0.0/16
            remote_ts = 10.2.0.0/16

            updown = /usr/local/libexec/ipsec/_updown iptables
            rekey_time = 5400
            rekey_bytes = 500000000
            rekey_packets = 1000000
            esp_proposals = aes128gcm128-x25519
         }
      }
      version = 2
      mobike = no
      reauth_time = 10800
      proposals = aes128-sha256-x25519
   }
}

secrets {
   ike-1 {
      id-1 = moon.strongswan.org
      secret = 0x45a30759df97dc26a15b88ff
   }
   ike-2 {
      id-2 = sun.strongswan.org
      secret = "This is a strong password"
   }
   ike-3 {
      id-3a = moon.strongswan.org
      id-3b =sun.strongswan.org
      secret = 0sv+NkxY9LLZvwj4qCC2o/gGrWDF2d21jL
   }
   ike-4 {
      secret = 'My "home" is my "castle"!'
   }
   ike-5 {
     id-5 = 192.168.0.1
     secret = "Andi's home"
   }
}
"#;

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn fqdn(s: &str) -> Identity {
    Identity::Fqdn(s.into())
}

#[test]
fn strongswan_net2net_psk() {
    let c = parse("swanctl.conf", MOON).unwrap();
    assert_eq!(c.connections.len(), 1);
    let gw = &c.connections[0];
    assert_eq!(gw.name, "gw-gw");
    assert_eq!(gw.version, 2);
    assert_eq!(
        gw.local_addrs,
        vec![AddrSpec::Addr("192.168.0.1".parse().unwrap())]
    );
    assert_eq!(gw.remote_host(), Some("192.168.0.2".parse().unwrap()));
    assert_eq!((gw.local_port, gw.remote_port), (500, 500));
    assert_eq!(
        gw.proposals,
        vec![IkeProposal {
            encr: vec![Encr {
                id: EncrId::AES_CBC,
                key_bits: 128
            }],
            integ: vec![IntegId::HMAC_SHA2_256_128],
            prf: vec![PrfId::HMAC_SHA2_256],
            dh: vec![DhGroup::CURVE25519],
        }]
    );
    assert_eq!(gw.local, AuthConfig::psk(Some(fqdn("moon.strongswan.org"))));
    assert_eq!(gw.remote.id, Some(fqdn("sun.strongswan.org")));
    // reauth_time set, rekey_time not: rekeying off (strongSwan).
    assert_eq!(gw.reauth_time, secs(10800));
    assert_eq!(gw.rekey_time, Duration::ZERO);
    assert_eq!(gw.over_time, secs(1080));
    assert_eq!(gw.rand_time, secs(1080));
    assert_eq!(
        (gw.dpd_delay, gw.dpd_timeout),
        (Duration::ZERO, Duration::ZERO)
    );
    assert!(!gw.encap);
    assert_eq!(gw.keyingtries, 1);
    assert_eq!(gw.unique, Unique::No);

    let ch = &gw.children[0];
    assert_eq!(ch.name, "net-net");
    assert_eq!(ch.local_ts, vec![TsSpec::parse("10.1.0.0/16").unwrap()]);
    assert_eq!(ch.remote_ts, vec![TsSpec::parse("10.2.0.0/16").unwrap()]);
    assert_eq!(
        ch.esp_proposals,
        vec![ChildProposal {
            encr: vec![Encr {
                id: EncrId::AES_GCM_16,
                key_bits: 128
            }],
            integ: vec![],
            dh: vec![DhGroup::CURVE25519],
            esn: vec![EsnId::NO_ESN],
        }]
    );
    assert!(ch.ah_proposals.is_empty());
    assert_eq!(ch.mode, Mode::Tunnel);
    assert_eq!(
        (ch.rekey_time, ch.life_time, ch.rand_time),
        (secs(5400), secs(5940), secs(540))
    );
    assert_eq!(
        (ch.rekey_bytes, ch.life_bytes, ch.rand_bytes),
        (500_000_000, 550_000_000, 50_000_000)
    );
    assert_eq!(
        (ch.rekey_packets, ch.life_packets, ch.rand_packets),
        (1_000_000, 1_100_000, 100_000)
    );
    assert_eq!(ch.start_action, StartAction::None);
    assert_eq!(ch.dpd_action, DpdAction::Clear);
    assert_eq!(ch.close_action, CloseAction::None);
    assert!(!ch.ipcomp);
    assert_eq!(ch.replay_window, 32);
    assert!(!ch.per_cpu_sas);
    assert_eq!(ch.rekey_switch, RekeySwitch::LossFree);

    assert_eq!(c.secrets.len(), 5);
    assert_eq!(
        c.secrets[0].secret.as_slice(),
        [0x45, 0xa3, 0x07, 0x59, 0xdf, 0x97, 0xdc, 0x26, 0xa1, 0x5b, 0x88, 0xff]
    );
    assert_eq!(c.secrets[1].secret.as_slice(), b"This is a strong password");
    assert_eq!(
        c.secrets[2].ids,
        vec![fqdn("moon.strongswan.org"), fqdn("sun.strongswan.org")]
    );
    assert_eq!(c.secrets[2].secret.len(), 24);
    // strongSwan's settings parser joins value parts with single spaces.
    assert_eq!(c.secrets[3].secret.as_slice(), b"'My home is my castle !'");
    assert!(c.secrets[3].ids.is_empty());
    assert_eq!(
        c.secrets[4].ids,
        vec![Identity::Ipv4(Ipv4Addr::new(192, 168, 0, 1))]
    );
    // The key never shows in Debug output.
    let dbg = format!("{:?}", c.secrets[1]);
    assert!(!dbg.contains("strong password"), "{dbg}");
}

#[test]
fn psk_best_match_like_strongswan() {
    let c = parse("swanctl.conf", MOON).unwrap();
    let moon = fqdn("moon.strongswan.org");
    let sun = fqdn("sun.strongswan.org");
    // ike-3 owns both identities perfectly.
    assert_eq!(c.find_psk(&moon, &sun), Some(&c.secrets[2].secret[..]));
    assert_eq!(c.find_psk(&sun, &moon), Some(&c.secrets[2].secret[..]));
    // Only our side known: the perfect match for us (ike-1) loses to
    // ike-4 whose %any owner matches the peer (the peer's match counts
    // first, as in strongSwan's get_shared()).
    let carol = fqdn("carol.strongswan.org");
    assert_eq!(c.find_psk(&moon, &carol), Some(&c.secrets[3].secret[..]));
    // Without ike-4, ike-1 (first of the perfect-for-us ones) wins.
    let mut c2 = c.clone();
    c2.secrets.remove(3);
    assert_eq!(c2.find_psk(&moon, &carol), Some(&c.secrets[0].secret[..]));
    let ip = Identity::Ipv4(Ipv4Addr::new(192, 168, 0, 1));
    assert_eq!(c2.find_psk(&carol, &ip), Some(&c.secrets[4].secret[..]));
    assert_eq!(c2.find_psk(&carol, &fqdn("dave")), None);
    // A wildcard owner beats %any.
    let text =
        "secrets {\n ike-any { secret = a }\n ike-wild { id = *.strongswan.org\n secret = b }\n}";
    let c3 = parse("t", text).unwrap();
    assert_eq!(c3.find_psk(&moon, &carol), Some(&b"b"[..]));
    // The peer's match counts first: %any for the peer beats a wildcard
    // match for us only.
    assert_eq!(c3.find_psk(&moon, &fqdn("x.example")), Some(&b"a"[..]));
    assert_eq!(
        c3.find_psk(&fqdn("y.example"), &fqdn("x.example")),
        Some(&b"a"[..])
    );
}

#[test]
fn defaults() {
    let text = "connections {\n c {\n  local { auth = psk }\n  remote { auth = PSK }\n  children { x { } }\n }\n}";
    let c = parse("t", text).unwrap();
    let conn = &c.connections[0];
    assert_eq!(conn.version, 0);
    assert_eq!(conn.local_addrs, vec![AddrSpec::Any]);
    assert_eq!(conn.remote_addrs, vec![AddrSpec::Any]);
    assert_eq!(conn.remote_host(), None);
    assert_eq!(conn.proposals, default_ike_proposals().to_vec());
    assert_eq!(conn.local.id, None);
    assert_eq!(conn.rekey_time, secs(4 * 3600));
    assert_eq!(conn.reauth_time, Duration::ZERO);
    assert_eq!(conn.over_time, secs(1440));
    assert_eq!(conn.rand_time, secs(1440));
    let ch = &conn.children[0];
    assert_eq!(ch.local_ts, vec![TsSpec::Dynamic]);
    assert_eq!(ch.remote_ts, vec![TsSpec::Dynamic]);
    // Unset esp_proposals: AEAD default first (children_sn()).
    assert_eq!(ch.esp_proposals, default_esp_proposals().to_vec());
    assert_eq!(ch.esp_proposals[0].encr[0].id, EncrId::AES_GCM_16);
    assert_eq!(
        (ch.rekey_time, ch.life_time, ch.rand_time),
        (secs(3600), secs(3960), secs(360))
    );
    assert_eq!((ch.rekey_bytes, ch.life_bytes, ch.rand_bytes), (0, 0, 0));
    assert_eq!(
        (ch.rekey_packets, ch.life_packets, ch.rand_packets),
        (0, 0, 0)
    );
    assert_eq!(ch.mode, Mode::Tunnel);
    assert_eq!(ch.replay_window, 32);

    // Both rekey and reauth: rand_time from the smaller, halved.
    let text = "connections {\n c {\n  rekey_time = 1h\n  reauth_time = 10m\n  local { auth = psk }\n  remote { auth = psk }\n }\n}";
    let conn = &parse("t", text).unwrap().connections[0];
    assert_eq!(conn.over_time, secs(360));
    assert_eq!(conn.rand_time, secs(300));
}

#[test]
fn every_child_key() {
    let text = r#"connections {
  rw {
    version = 2
    local_addrs = 192.0.2.1, 2001:db8::1
    remote_addrs = %any, 198.51.100.0/24, gw.example.org
    local_port = 4500
    remote_port = 4501
    proposals = aes256gcm16-prfsha384-ecp384, default
    encap = yes
    dpd_delay = 30s
    dpd_timeout = 150s
    keyingtries = 0
    unique = replace
    rekey_time = 2h
    over_time = 5m
    rand_time = 1m
    fragmentation = yes
    send_cert = never
    dscp = 000000
    local {
      auth = psk
      id = "@#0102"
      round = 0
      revocation = relaxed
    }
    remote {
      auth = psk
      id = carol@strongswan.org
    }
    children {
      host {
        local_ts = dynamic
        remote_ts = 10.0.0.0/8[tcp/80], 10.1.0.1-10.1.0.9[udp/1024-2048], ::/0[icmp]
        esp_proposals = aes128-sha256-modp2048-none-esn, default
        ah_proposals = sha256
        mode = Transport
        rekey_time = 30m
        life_time = 40m
        rand_time = 2m
        rekey_bytes = 1G
        life_bytes = 2G
        rand_bytes = 10M
        rekey_packets = 100
        life_packets = 200
        rand_packets = 10
        start_action = route
        dpd_action = restart
        close_action = start
        ipcomp = yes
        replay_window = 0
        per_cpu_sas = yes
        hostaccess = yes
        policies = yes
        reqid = 0
      }
    }
  }
}"#;
    let c = parse("t", text).unwrap();
    let rw = &c.connections[0];
    assert_eq!(rw.local_addrs.len(), 2);
    assert_eq!(
        rw.remote_addrs,
        vec![
            AddrSpec::Any,
            AddrSpec::Prefix("198.51.100.0".parse().unwrap(), 24),
            AddrSpec::Host("gw.example.org".into())
        ]
    );
    assert_eq!((rw.local_port, rw.remote_port), (4500, 4501));
    assert_eq!(rw.proposals.len(), 3);
    assert!(rw.encap);
    assert_eq!((rw.dpd_delay, rw.dpd_timeout), (secs(30), secs(150)));
    assert_eq!(rw.keyingtries, 0);
    assert_eq!(rw.unique, Unique::Replace);
    assert_eq!(
        (rw.rekey_time, rw.reauth_time),
        (secs(7200), Duration::ZERO)
    );
    assert_eq!((rw.over_time, rw.rand_time), (secs(300), secs(60)));
    assert_eq!(rw.local.id, Some(Identity::KeyId(vec![1, 2])));
    assert_eq!(
        rw.remote.id,
        Some(Identity::Email("carol@strongswan.org".into()))
    );
    let ch = &rw.children[0];
    assert_eq!(ch.remote_ts.len(), 3);
    assert_eq!(ch.esp_proposals.len(), 3);
    assert_eq!(
        ch.esp_proposals[0].dh,
        vec![DhGroup::MODP_2048, DhGroup::NONE]
    );
    assert_eq!(ch.esp_proposals[1].encr[0].id, EncrId::AES_CBC);
    assert_eq!(ch.ah_proposals.len(), 1);
    assert_eq!(ch.mode, Mode::Transport);
    assert_eq!(
        (ch.rekey_time, ch.life_time, ch.rand_time),
        (secs(1800), secs(2400), secs(120))
    );
    assert_eq!(
        (ch.rekey_bytes, ch.life_bytes, ch.rand_bytes),
        (1 << 30, 2 << 30, 10 << 20)
    );
    assert_eq!(
        (ch.rekey_packets, ch.life_packets, ch.rand_packets),
        (100, 200, 10)
    );
    assert_eq!(ch.start_action, StartAction::Trap);
    assert_eq!(ch.dpd_action, DpdAction::Restart);
    assert_eq!(ch.close_action, CloseAction::Start);
    assert!(ch.ipcomp);
    assert_eq!(ch.replay_window, 0);
    assert!(ch.per_cpu_sas);

    // rekey_switch, a keyword in any case.
    for (word, want) in [
        ("loss-free", RekeySwitch::LossFree),
        ("Prefer-New", RekeySwitch::PreferNew),
        ("keep-old", RekeySwitch::KeepOld),
    ] {
        let text = format!(
            "connections {{\n c {{\n  local {{ auth = psk }}\n  remote {{ auth = psk }}\n  children {{ x {{ rekey_switch = {word} }} }}\n }}\n}}"
        );
        let ch = &parse("t", &text).unwrap().connections[0].children[0];
        assert_eq!(ch.rekey_switch, want);
        assert_eq!(ch.rekey_switch.as_str(), word.to_ascii_lowercase());
    }

    // ah_proposals alone: no ESP default added.
    let text = "connections {\n c {\n  local { auth = psk }\n  remote { auth = psk }\n  children { x { ah_proposals = sha1 } }\n }\n}";
    let ch = &parse("t", text).unwrap().connections[0].children[0];
    assert!(ch.esp_proposals.is_empty());
}

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
            "  local { auth = psk\n pubkeys = moon.pem }\n  remote { auth = psk }",
            4,
            "connections.gw.local.pubkeys",
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
        ("authorities {\n}", 1, "authorities", "not supported"),
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
            "only IKE",
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
            "connections {\n include conf.d/*.conf\n}",
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
fn load_reads_files_and_reports_io_errors() {
    let dir = std::env::temp_dir().join(format!("flowsec-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("swanctl.conf");
    std::fs::write(&path, MOON).unwrap();
    let c = load(&path).unwrap();
    assert_eq!(c.connections[0].name, "gw-gw");
    std::fs::write(&path, b"connections {\n\xff\n}").unwrap();
    let e = load(&path).unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.kind.to_string().contains("UTF-8"));
    let missing = dir.join("nope.conf");
    let e = load(&missing).unwrap_err();
    assert_eq!(e.line, 0);
    assert!(
        e.to_string()
            .starts_with(&format!("{}: ", missing.display())),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn hostile_input_does_not_panic() {
    let samples = [
        MOON,
        "connections { gw { local { auth = psk } remote { auth = psk } children { c { local_ts = 1.2.3.4[tcp/1-2] } } } }",
    ];
    for s in samples {
        for cut in 0..s.len() {
            if s.is_char_boundary(cut) {
                let _ = parse("t", &s[..cut]);
            }
        }
    }
    let _ = parse("t", &"{".repeat(10_000));
    let _ = parse("t", &"a {".repeat(10_000));
    let _ = parse("t", "\"");
    let _ = parse("t", "k = \"\\");
}

#[test]
fn module_doc_example_parses() {
    let doc = include_str!("mod.rs");
    let start = doc.find("//! ```text\n").unwrap() + "//! ```text\n".len();
    let end = start + doc[start..].find("//! ```\n").unwrap();
    let text: String = doc[start..end]
        .lines()
        .map(|l| l.strip_prefix("//!").unwrap().trim_start_matches(' '))
        .collect::<Vec<_>>()
        .join("\n");
    let c = parse("doc", &text).unwrap();
    assert_eq!(c.connections[0].children[0].start_action, StartAction::Trap);
    let moon = fqdn("moon.strongswan.org");
    let sun = fqdn("sun.strongswan.org");
    assert_eq!(c.find_psk(&moon, &sun).unwrap().len(), 12);
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
    assert_eq!((e.line, e.key.as_str()), (2, "secrets.rsa-1"));
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
    let e = load(&missing).unwrap_err();
    assert!(
        matches!(&e.kind, K::Read(io) if io.kind() == std::io::ErrorKind::NotFound),
        "{e:?}"
    );
    assert!(std::error::Error::source(&e).is_some());
}

#[test]
fn pools_and_virtual_ips() {
    let text = "connections {\n rw {\n  pools = v4, v6\n  local { auth = psk }\n  remote { auth = psk }\n }\n home {\n  vips = 0.0.0.0, ::\n  local { auth = psk }\n  remote { auth = psk }\n }\n}\npools {\n v4 {\n  addrs = 10.3.0.0/24\n  dns = 10.2.0.53, 10.2.0.54\n }\n v6 {\n  addrs = fd00:3::/120\n }\n r {\n  addrs = 10.4.0.10-10.4.0.20\n }\n}\n";
    let c = parse("f", text).unwrap();
    let rw = c.connection("rw").unwrap();
    assert_eq!(rw.pools, ["v4", "v6"]);
    assert_eq!(
        c.connection("home").unwrap().vips,
        [
            "0.0.0.0".parse::<std::net::IpAddr>().unwrap(),
            "::".parse().unwrap()
        ]
    );
    let p = |n: &str| c.pools.iter().find(|p| p.name == n).unwrap();
    let s = |a: std::net::IpAddr| a.to_string();
    assert_eq!(
        (s(p("v4").first), s(p("v4").last)),
        ("10.3.0.1".into(), "10.3.0.254".into())
    );
    assert_eq!(p("v4").dns.len(), 2);
    assert_eq!(
        (s(p("v6").first), s(p("v6").last)),
        ("fd00:3::1".into(), "fd00:3::ff".into())
    );
    assert_eq!(
        (s(p("r").first), s(p("r").last)),
        ("10.4.0.10".into(), "10.4.0.20".into())
    );
}
