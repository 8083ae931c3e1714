//! Every statement kind, every algorithm name, and the studies' configs.

mod common;

use std::net::IpAddr;
use std::time::Duration;

use common::{key, ok, one};
use flowsec_crypto::{EncrId, IntegId};
use flowsec_ipsec::sa::{Mode, Protocol, SaConfig, SaId, UdpEncap};
use flowsec_ipsec::spd::{Action, Direction, Level, Policy, PortRange, SaTemplate};
use flowsec_setkey::Command;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn add(c: Command) -> SaConfig {
    match c {
        Command::Add(c) => c,
        other => panic!("not an add: {other:?}"),
    }
}

fn spdadd(c: Command) -> Policy {
    match c {
        Command::SpdAdd(p) => p,
        other => panic!("not an spdadd: {other:?}"),
    }
}

#[test]
fn add_esp_with_every_extension() {
    let text = format!(
        "add 10.0.0.1 10.0.0.2 esp 0x10001 -m tunnel -r 64 -u 7 -f random-pad\n\
         -lh 3600 -ls 3000 -bh 1000000 -bs 900000\n\
         -E rijndael-cbc {} -A hmac-sha1 \"20-byte-sha1-key!!!!\";",
        key(16, 1)
    );
    let c = add(one(&text));
    assert_eq!(c.protocol, Protocol::Esp);
    assert_eq!(c.spi, 0x10001);
    assert_eq!(c.mode, Mode::Tunnel);
    assert_eq!((c.src, c.dst), (ip("10.0.0.1"), ip("10.0.0.2")));
    assert_eq!(c.replay_window, 64);
    assert_eq!(c.reqid, 7);
    assert_eq!(c.encr, EncrId::AES_CBC);
    assert_eq!(c.encr_key.len(), 16);
    assert_eq!(c.integ, IntegId::HMAC_SHA1_96);
    assert_eq!(&c.integ_key[..], b"20-byte-sha1-key!!!!");
    assert_eq!(c.lifetime.hard.add_time, Some(Duration::from_secs(3600)));
    assert_eq!(c.lifetime.soft.add_time, Some(Duration::from_secs(3000)));
    assert_eq!(c.lifetime.hard.bytes, Some(1_000_000));
    assert_eq!(c.lifetime.soft.bytes, Some(900_000));
    assert_eq!(c.encap, None);
}

#[test]
fn add_defaults_follow_setkey() {
    let c = add(one(&format!(
        "add ::1 ::2 ah 4096 -A hmac-md5 {};",
        key(16, 2)
    )));
    assert_eq!(c.mode, Mode::Transport, "-m any is the default");
    assert_eq!(c.replay_window, 0, "no -r: no replay check");
    assert_eq!(c.reqid, 0);
    assert_eq!(c.lifetime, Default::default());
    let c = add(one(&format!(
        "add ::1 ::2 ah 4096 -m any -r 0 -A hmac-md5 {};",
        key(16, 2)
    )));
    assert_eq!((c.mode, c.replay_window), (Mode::Transport, 0));
}

#[test]
fn esp_udp_ports() {
    let k = key(20, 3);
    let c = add(one(&format!(
        "add 192.0.2.1[4501] 198.51.100.7[31000] esp-udp 0x2000 -m tunnel -E aes-gcm-16 {k};"
    )));
    assert_eq!(c.encap, Some(UdpEncap::udp(4501, 31000)));
    let c = add(one(&format!(
        "add 192.0.2.1 198.51.100.7[any] esp-udp 0x2000 -E aes-gcm-16 {k};"
    )));
    assert_eq!(
        c.encap,
        Some(UdpEncap::udp(4500, 4500)),
        "default 4500 (RFC 3948)"
    );
}

#[test]
fn ipcomp_add() {
    let c = add(one(
        "add 10.0.0.1 10.0.0.2 ipcomp 0x1000 -m tunnel -C deflate -R;",
    ));
    assert_eq!(c.protocol, Protocol::IpComp);
    assert_eq!(c.spi, 0x1000);
    assert_eq!(c.replay_window, 0);
}

#[test]
fn get_delete_deleteall_flush_dump() {
    let id = SaId {
        protocol: Protocol::Ah,
        spi: 123456,
        dst: ip("3ffe:501:481d::1"),
    };
    match one("get 3ffe:501:4819::1 3ffe:501:481d::1 ah 123456 ;") {
        Command::Get { src, id: got } => {
            assert_eq!((src, got), (ip("3ffe:501:4819::1"), id));
        }
        other => panic!("{other:?}"),
    }
    match one("delete -6 3ffe:501:4819::1 3ffe:501:481d::1 ah 0x1e240;") {
        Command::Delete { id: got, .. } => assert_eq!(got, id),
        other => panic!("{other:?}"),
    }
    match one("deleteall 10.0.0.1 10.0.0.2 esp-udp;") {
        Command::DeleteAll { src, dst, protocol } => {
            assert_eq!(
                (src, dst, protocol),
                (ip("10.0.0.1"), ip("10.0.0.2"), Protocol::Esp)
            );
        }
        other => panic!("{other:?}"),
    }
    let cmds = ok("flush; flush esp; flush ah; flush ipcomp; dump; dump esp;");
    let got: Vec<String> = cmds.iter().map(|c| format!("{c:?}")).collect();
    assert_eq!(
        got,
        [
            "Flush(None)",
            "Flush(Some(Esp))",
            "Flush(Some(Ah))",
            "Flush(Some(IpComp))",
            "Dump(None)",
            "Dump(Some(Esp))"
        ]
    );
    assert!(matches!(one("spdflush;"), Command::SpdFlush));
    assert!(matches!(one("spddump;"), Command::SpdDump));
}

#[test]
fn spdadd_and_spddelete() {
    let p = spdadd(one("spdadd 10.0.11.41/32[21] 10.0.11.33/32[any] tcp\n\
         \t-P out ipsec esp/tunnel/192.168.0.1-192.168.1.2/require ;"));
    assert_eq!(p.direction, Direction::Out);
    assert_eq!(p.selector.protocol, Some(6));
    assert_eq!(p.selector.src_ports, PortRange::single(21));
    assert_eq!(p.selector.dst_ports, PortRange::ANY);
    assert_eq!(p.priority, 0);
    assert_eq!(
        p.action,
        Action::Protect(vec![SaTemplate {
            protocol: Protocol::Esp,
            mode: Mode::Tunnel,
            tunnel: Some((ip("192.168.0.1"), ip("192.168.1.2"))),
            level: Level::Require,
            reqid: 0,
        }])
    );
    let p = spdadd(one("spdadd ::/0 ::/0 icmp6 135,0 -P in none;"));
    assert_eq!(p.selector.protocol, Some(58));
    assert_eq!(p.selector.src_ports, PortRange::single(135));
    assert_eq!(p.selector.dst_ports, PortRange::ANY, "code 0 is a wildcard");
    assert_eq!(p.action, Action::Bypass);
    assert_eq!(p.selector.src.prefix_len(), 0);
    let p = spdadd(one(
        "spdadd 10.1.2.3/8 0.0.0.0/0 255 -P fwd prio high + 10 discard;",
    ));
    assert_eq!(p.selector.src.to_string(), "10.0.0.0/8");
    assert_eq!(p.selector.protocol, None);
    assert_eq!(p.direction, Direction::Fwd);
    assert_eq!(p.priority, -0x4000_0000 - 10);
    assert_eq!(p.action, Action::Discard);
    match one("spddelete 10.0.0.1 10.0.0.2 any -P out;") {
        Command::SpdDelete {
            direction,
            selector,
        } => {
            assert_eq!(direction, Direction::Out);
            assert_eq!(selector.src.prefix_len(), 32);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        one("spddelete 10.0.0.1 10.0.0.2 any -P in ipsec esp/transport//require;"),
        Command::SpdDelete {
            direction: Direction::In,
            ..
        }
    ));
}

#[test]
fn policy_levels_bundles_and_unique() {
    let p = spdadd(one(
        "spdadd 10.0.0.1 10.0.0.2 any -P out prio 5 ipsec\n\
         ipcomp/transport//use esp/transport//require ah/transport//unique:42;",
    ));
    assert_eq!(p.priority, -5);
    let Action::Protect(rules) = p.action else {
        panic!()
    };
    let got: Vec<_> = rules
        .iter()
        .map(|r| (r.protocol, r.mode, r.tunnel, r.level, r.reqid))
        .collect();
    assert_eq!(
        got,
        [
            (Protocol::IpComp, Mode::Transport, None, Level::Use, 0),
            (Protocol::Esp, Mode::Transport, None, Level::Require, 0),
            (Protocol::Ah, Mode::Transport, None, Level::Unique, 42),
        ]
    );
    let p = spdadd(one(
        "spdadd 10.0.0.1 10.0.0.2 any -P out ipsec esp/transport ah/transport/ ;",
    ));
    let Action::Protect(rules) = p.action else {
        panic!()
    };
    assert!(rules.iter().all(|r| r.level == Level::Require));
    let p = spdadd(one(
        "spdadd 10.0.0.0/24 10.0.1.0/24 any -P in ipsec esp/tunnel/192.0.2.2-192.0.2.1/default;",
    ));
    let Action::Protect(rules) = p.action else {
        panic!()
    };
    assert_eq!(rules[0].level, Level::Require);
    let p = spdadd(one(
        "spdadd 10.0.11.0/24[any] 10.0.11.33/32[any] any -P out ipsec\n\
         esp/tunnel/192.168.0.1[4500]-192.168.1.2[30000]/unique;",
    ));
    let Action::Protect(rules) = p.action else {
        panic!()
    };
    assert_eq!(
        rules[0].tunnel,
        Some((ip("192.168.0.1"), ip("192.168.1.2"))),
        "NAT-T ports are accepted and ignored"
    );
}

#[test]
fn every_encryption_algorithm_name() {
    // (name, key bytes, id); combined-mode ones take no -A.
    let cases: &[(&str, usize, EncrId)] = &[
        ("des-cbc", 8, EncrId::DES),
        ("3des-cbc", 24, EncrId::TRIPLE_DES),
        ("blowfish-cbc", 16, EncrId::BLOWFISH),
        ("cast128-cbc", 16, EncrId::CAST),
        ("rijndael-cbc", 16, EncrId::AES_CBC),
        ("aes-cbc", 32, EncrId::AES_CBC),
        ("twofish-cbc", 32, EncrId::TWOFISH_CBC),
        ("aes-ctr", 20, EncrId::AES_CTR),
        ("camellia-cbc", 24, EncrId::CAMELLIA_CBC),
        ("aes-gcm-8", 20, EncrId::AES_GCM_8),
        ("aes-gcm-12", 28, EncrId::AES_GCM_12),
        ("aes-gcm-16", 36, EncrId::AES_GCM_16),
        ("aes-ccm-8", 19, EncrId::AES_CCM_8),
        ("aes-ccm-12", 19, EncrId::AES_CCM_12),
        ("aes-ccm-16", 35, EncrId::AES_CCM_16),
        ("aes-gmac", 20, EncrId::NULL_AUTH_AES_GMAC),
        ("chacha20-poly1305", 36, EncrId::CHACHA20_POLY1305),
    ];
    for (i, (name, len, id)) in cases.iter().enumerate() {
        let auth = if flowsec_crypto::esp::is_aead(*id) {
            String::new()
        } else {
            format!("-A hmac-sha256 {}", key(32, 9))
        };
        let text = format!(
            "add 10.0.0.1 10.0.0.2 esp {} -E {name} {} {auth};",
            1000 + i,
            key(*len, i as u8)
        );
        let c = add(one(&text));
        assert_eq!(c.encr, *id, "{name}");
        assert_eq!(c.encr_key.len(), *len, "{name}");
    }
    let c = add(one(&format!(
        "add 10.0.0.1 10.0.0.2 esp 300 -E null -A hmac-sha1 {};",
        key(20, 1)
    )));
    assert_eq!((c.encr, c.encr_key.len()), (EncrId::NULL, 0));
    let listed: Vec<_> = flowsec_setkey::algorithms::encr_names().collect();
    assert_eq!(
        listed.len(),
        cases.len() + 1,
        "every name is tested: {listed:?}"
    );
}

#[test]
fn every_authentication_algorithm_name() {
    let cases: &[(&str, usize, IntegId)] = &[
        ("hmac-md5", 16, IntegId::HMAC_MD5_96),
        ("hmac-sha1", 20, IntegId::HMAC_SHA1_96),
        ("hmac-sha256", 32, IntegId::HMAC_SHA2_256_128),
        ("hmac-sha2-256", 32, IntegId::HMAC_SHA2_256_128),
        ("hmac-sha384", 48, IntegId::HMAC_SHA2_384_192),
        ("hmac-sha2-384", 48, IntegId::HMAC_SHA2_384_192),
        ("hmac-sha512", 64, IntegId::HMAC_SHA2_512_256),
        ("hmac-sha2-512", 64, IntegId::HMAC_SHA2_512_256),
        ("aes-xcbc-mac", 16, IntegId::AES_XCBC_96),
        ("aes-cmac", 16, IntegId::AES_CMAC_96),
    ];
    for (i, (name, len, id)) in cases.iter().enumerate() {
        for (proto, encr) in [
            ("ah", ""),
            ("esp", "-E aes-cbc 0x000102030405060708090a0b0c0d0e0f"),
        ] {
            let text = format!(
                "add 10.0.0.1 10.0.0.2 {proto} {} {encr} -A {name} {};",
                1000 + i,
                key(*len, i as u8)
            );
            let c = add(one(&text));
            assert_eq!((c.integ, c.integ_key.len()), (*id, *len), "{name}");
        }
    }
    let c = add(one(
        "add 10.0.0.1 10.0.0.2 esp 300 -E aes-cbc 0x000102030405060708090a0b0c0d0e0f -A null;",
    ));
    assert_eq!(c.integ, IntegId::NONE);
    let listed: Vec<_> = flowsec_setkey::algorithms::auth_names().collect();
    assert_eq!(listed.len(), cases.len() + 1, "{listed:?}");
}

#[test]
fn comments_and_multiline_statements() {
    let text = "# setkey file\n\
                flush;   # SAD\n\
                spdflush\n\
                ;\n\
                add 10.0.0.1\n\
                \t10.0.0.2 # trailing comment inside a statement\n\
                \tah 0x1000\n\
                \t-A hmac-sha1 \"key; # and\nnewline!!\";\n\
                ;;\n";
    let cmds = ok(text);
    assert_eq!(cmds.len(), 3);
    let c = add(cmds[2].clone());
    assert_eq!(&c.integ_key[..], b"key; # and\nnewline!!");
}

/// S1: transport-mode AH hmac-sha1 + ESP 3des-cbc between two hosts, both
/// directions, IPv4 and IPv6.
#[test]
fn study_s1_transport_ah_esp() {
    let mut text = String::from("flush;\nspdflush;\n");
    for (a, b, base) in [
        ("192.0.2.10", "192.0.2.20", 0x1000),
        ("2001:db8::10", "2001:db8::20", 0x2000),
    ] {
        text += &format!(
            "add {a} {b} ah {} -A hmac-sha1 {};\n\
             add {b} {a} ah {} -A hmac-sha1 {};\n\
             add {a} {b} esp {} -E 3des-cbc {};\n\
             add {b} {a} esp {} -E 3des-cbc {};\n\
             spdadd {a} {b} any -P out ipsec esp/transport//require ah/transport//require;\n\
             spdadd {b} {a} any -P in ipsec esp/transport//require ah/transport//require;\n",
            base + 1,
            key(20, 1),
            base + 2,
            key(20, 2),
            base + 3,
            key(24, 3),
            base + 4,
            key(24, 4),
        );
    }
    let cmds = ok(&text);
    assert_eq!(cmds.len(), 14);
    let adds: Vec<SaConfig> = cmds
        .iter()
        .filter_map(|c| match c {
            Command::Add(c) => Some(c.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(adds.len(), 8);
    assert!(adds.iter().all(|c| c.mode == Mode::Transport));
    assert_eq!(adds[4].src, ip("2001:db8::10"));
    assert_eq!(adds[2].encr, EncrId::TRIPLE_DES);
    let p = spdadd(cmds[13].clone());
    assert_eq!(p.direction, Direction::In);
    assert_eq!(p.selector.src.addr(), ip("2001:db8::20"));
}

/// S3: ESP with AES-CTR and AES-XCBC-MAC.
#[test]
fn study_s3_aes_ctr_xcbc() {
    let c = add(one(&format!(
        "add 10.1.0.1 10.1.0.2 esp 0x3001 -m transport -r 128 -E aes-ctr {} -A aes-xcbc-mac {};",
        key(20, 5),
        key(16, 6)
    )));
    assert_eq!((c.encr, c.integ), (EncrId::AES_CTR, IntegId::AES_XCBC_96));
    assert_eq!(c.replay_window, 128);
}

#[test]
fn ipcomp_esp_bundle_and_tunnel_gateway() {
    let text = format!(
        "add 10.0.0.1 10.0.0.2 ipcomp 0x4001 -C deflate;\n\
         add 10.0.0.1 10.0.0.2 esp 0x4002 -E aes-cbc {} -A hmac-sha256 {};\n\
         spdadd 10.0.0.1 10.0.0.2 any -P out ipsec ipcomp/transport//use esp/transport//require;\n\
         # gateway: 10.1/16 behind 192.0.2.1, 10.2/16 behind 192.0.2.2\n\
         add 192.0.2.1 192.0.2.2 esp 0x5001 -m tunnel -E aes-gcm-16 {};\n\
         add 192.0.2.2 192.0.2.1 esp 0x5002 -m tunnel -E aes-gcm-16 {};\n\
         spdadd 10.1.0.0/16 10.2.0.0/16 any -P out ipsec esp/tunnel/192.0.2.1-192.0.2.2/require;\n\
         spdadd 10.2.0.0/16 10.1.0.0/16 any -P in ipsec esp/tunnel/192.0.2.2-192.0.2.1/require;\n\
         spdadd 10.2.0.0/16 10.1.0.0/16 any -P fwd ipsec esp/tunnel/192.0.2.2-192.0.2.1/require;\n",
        key(16, 1),
        key(32, 2),
        key(20, 3),
        key(20, 4)
    );
    let cmds = ok(&text);
    assert_eq!(cmds.len(), 8);
    assert_eq!(add(cmds[3].clone()).mode, Mode::Tunnel);
    let fwd = spdadd(cmds[7].clone());
    assert_eq!(fwd.direction, Direction::Fwd);
}

#[test]
fn a_file_may_flush_or_delete_and_add_again() {
    let k = key(16, 1);
    ok(&format!(
        "add 10.0.0.1 10.0.0.2 ah 300 -A hmac-md5 {k};\n\
         delete 10.0.0.1 10.0.0.2 ah 300;\n\
         add 10.0.0.1 10.0.0.2 ah 300 -A hmac-md5 {k};\n\
         flush ah;\n\
         add 10.0.0.1 10.0.0.2 ah 300 -A hmac-md5 {k};\n\
         spdadd 10.0.0.1 10.0.0.2 any -P out none;\n\
         spddelete 10.0.0.1 10.0.0.2 any -P out;\n\
         spdadd 10.0.0.1 10.0.0.2 any -P out discard;\n\
         spdflush;\n\
         spdadd 10.0.0.1 10.0.0.2 any -P out discard;\n"
    ));
}

#[test]
fn statements_keep_their_positions() {
    let s = flowsec_setkey::parse_statements("f", "\n  flush;\nspdflush;").unwrap();
    assert_eq!((s[0].pos.line, s[0].pos.column), (2, 3));
    assert_eq!((s[1].pos.line, s[1].pos.column), (3, 1));
}

/// `-cpu N` (flowsec's own, RFC 9611 per-resource SAs): worker N's SA of
/// its policy's set; not on IPComp, at most 255, at most once.
#[test]
fn per_resource_sas() {
    let k = key(20, 4);
    let text = format!(
        "add 192.0.2.1 192.0.2.2 esp 0x1100 -m tunnel -u 7 -E aes-gcm-16 {k};\n\
         add 192.0.2.1 192.0.2.2 esp 0x1101 -m tunnel -u 7 -cpu 0 -E aes-gcm-16 {k};\n\
         add 192.0.2.1 192.0.2.2 esp 0x1102 -m tunnel -u 7 -E aes-gcm-16 {k} -cpu 1;"
    );
    let cpus: Vec<Option<u32>> = ok(&text).into_iter().map(|c| add(c).cpu).collect();
    assert_eq!(cpus, [None, Some(0), Some(1)]);
    let refused = |text: &str| flowsec_setkey::parse("f", text).is_err();
    assert!(refused(&format!(
        "add 192.0.2.1 192.0.2.2 esp 0x1101 -cpu 256 -E aes-gcm-16 {k};"
    )));
    assert!(refused(&format!(
        "add 192.0.2.1 192.0.2.2 esp 0x1101 -cpu 1 -cpu 2 -E aes-gcm-16 {k};"
    )));
    assert!(refused(
        "add 192.0.2.1 192.0.2.2 ipcomp 0x1101 -cpu 1 -C deflate;"
    ));
}
