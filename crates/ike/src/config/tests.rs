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
            addke: Vec::new(),
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
            addke: vec![],
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

#[test]
fn load_reads_files_and_reports_io_errors() {
    let dir = std::env::temp_dir().join(format!("flowsec-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("swanctl.conf");
    std::fs::write(&path, MOON).unwrap();
    let c = load(&Provider::fastest(), &path).unwrap();
    assert_eq!(c.connections[0].name, "gw-gw");
    std::fs::write(&path, b"connections {\n\xff\n}").unwrap();
    let e = load(&Provider::fastest(), &path).unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.kind.to_string().contains("UTF-8"));
    let missing = dir.join("nope.conf");
    let e = load(&Provider::fastest(), &missing).unwrap_err();
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
