//! IKE_AUTH with raw public keys (swanctl.conf `pubkeys`, the `pubkey/`
//! directory; RFC 7427 signatures) between two flowsec cores: keys
//! trusted as configured, without any CA; a peer that sends a certificate
//! anyway; a key that is not the configured one; and the configuration
//! errors.

mod pair;

use std::time::Duration;

use flowsec_crypto::Provider;
use flowsec_ike::config::{self, ConfigErrorKind};
use pair::{Pair, A, B};

/// 2027-01-01 at the pair's `now`.
const UNIX: Duration = Duration::from_secs(1_798_761_600);

fn conf(me: &str, peer: &str, extra: &str, local: &str, remote: &str, start: bool) -> String {
    let (l, r) = if start {
        ("10.1.0.0/24", "10.2.0.0/24")
    } else {
        ("10.2.0.0/24", "10.1.0.0/24")
    };
    let start = if start { "start_action = start" } else { "" };
    format!(
        "connections {{\n gw {{\n  local_addrs = {me}\n  remote_addrs = {peer}\n  \
         proposals = aes128gcm16-prfsha256-ecp256\n  {extra}\n  local {{\n   {local}\n  }}\n  \
         remote {{\n   {remote}\n  }}\n  children {{\n   net {{\n    local_ts = {l}\n    \
         remote_ts = {r}\n    esp_proposals = aes128gcm16\n    {start}\n   }}\n  }}\n }}\n}}\n"
    )
}

const MOON_LOCAL: &str = "auth = pubkey\n pubkeys = moonPub.pem\n id = moon.flowsec.test";
const SUN_LOCAL: &str = "auth = pubkey\n pubkeys = sunPub.pem\n id = sun.flowsec.test";
const MOON_REMOTE: &str = "auth = pubkey\n pubkeys = moonPub.pem\n id = moon.flowsec.test";
const SUN_REMOTE: &str = "auth = pubkey\n pubkeys = sunPub.pem\n id = sun.flowsec.test";

/// a (moon, initiator) and b (sun, responder).
fn pair(
    a: (&str, &str, &str),
    a_files: &[(&str, &str)],
    b: (&str, &str, &str),
    b_files: &[(&str, &str)],
) -> Pair {
    let a = pair::loaded("raw-a", &conf(A, B, a.0, a.1, a.2, true), a_files, 1);
    let b = pair::loaded("raw-b", &conf(B, A, b.0, b.1, b.2, false), b_files, 2);
    let mut p = Pair::of(a, b);
    p.a.set_wall_clock(p.now, UNIX);
    p.b.set_wall_clock(p.now, UNIX);
    p
}

const MOON_FILES: [(&str, &str); 3] = [
    ("moonPub.pem", "pubkey"),
    ("moonKey.pem", "ecdsa"),
    ("sunPub.pem", "pubkey"),
];
const SUN_FILES: [(&str, &str); 3] = [
    ("sunPub.pem", "pubkey"),
    ("sunKey.pem", "rsa"),
    ("moonPub.pem", "pubkey"),
];

#[test]
fn raw_keys_both_ways_without_any_ca() {
    let mut p = pair(
        ("", MOON_LOCAL, SUN_REMOTE),
        &MOON_FILES,
        ("", SUN_LOCAL, MOON_REMOTE),
        &SUN_FILES,
    );
    p.start();
    p.settle();
    p.assert_up(1);
    let (la, lb) = (p.a.list(p.now), p.b.list(p.now));
    assert_eq!(la[0].remote_id, "@sun.flowsec.test");
    assert_eq!(lb[0].remote_id, "@moon.flowsec.test");
    for ike in [&p.a, &p.b] {
        let s = ike.stats();
        assert_eq!(
            (s.auth_failed, s.bad_signature, s.cert_untrusted),
            (0, 0, 0)
        );
    }
}

#[test]
fn a_certificate_holding_the_configured_key_is_accepted() {
    // b signs with its certificate (sent always); a trusts only sun's key,
    // and no CA: the certificate's key is the one configured.
    let mut p = pair(
        ("", MOON_LOCAL, SUN_REMOTE),
        &MOON_FILES,
        (
            "send_cert = always",
            "auth = pubkey\n certs = sunCert.pem\n id = sun.flowsec.test",
            MOON_REMOTE,
        ),
        &[
            ("sunCert.pem", "x509"),
            ("sunKey.pem", "rsa"),
            ("moonPub.pem", "pubkey"),
        ],
    );
    p.start();
    p.settle();
    p.assert_up(1);
}

#[test]
fn another_key_is_refused() {
    // a expects carol's key; sun signs with its own.
    let remote = "auth = pubkey\n pubkeys = carolPub.pem\n id = sun.flowsec.test";
    let mut p = pair(
        ("", MOON_LOCAL, remote),
        &[
            ("moonPub.pem", "pubkey"),
            ("moonKey.pem", "ecdsa"),
            ("carolPub.pem", "pubkey"),
        ],
        ("", SUN_LOCAL, MOON_REMOTE),
        &SUN_FILES,
    );
    p.start();
    p.settle();
    assert!(p.a.list(p.now).iter().all(|s| s.state != "ESTABLISHED"));
    assert_eq!(p.a.stats().auth_failed, 1);
    assert_eq!(p.a.stats().cert_untrusted, 1);
}

#[test]
fn pubkeys_errors_name_file_and_line() {
    let dir = std::env::temp_dir().join(format!("flowsec-raw-keys-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("pubkey")).unwrap();
    for f in ["moonPub.pem", "moonPub.der", "sunPub.pem"] {
        std::fs::copy(pair::fixtures().join(f), dir.join("pubkey").join(f)).unwrap();
    }
    let path = dir.join("swanctl.conf");
    let load = |local: &str, remote: &str| {
        std::fs::write(&path, conf(A, B, "", local, remote, false)).unwrap();
        config::load(&Provider::fastest(), &path)
    };
    // Line 8 is the first line of `local`, 11 of `remote`.
    let cases: &[(&str, &str, usize, &str, &str)] = &[
        (
            "auth = pubkey\n id = moon\n pubkeys = nosuch.pem",
            SUN_REMOTE,
            10,
            "connections.gw.local.pubkeys",
            "is not a file in",
        ),
        (
            "auth = pubkey\n pubkeys = moonPub.pem",
            SUN_REMOTE,
            9,
            "connections.gw.local.pubkeys",
            "need an id",
        ),
        (
            "auth = psk\n id = moon\n pubkeys = moonPub.pem",
            SUN_REMOTE,
            10,
            "connections.gw.local.pubkeys",
            "need auth = pubkey",
        ),
        (
            "auth = pubkey\n id = moon\n pubkeys = moonPub.pem",
            SUN_REMOTE,
            10,
            "connections.gw.local.pubkeys",
            "no private key for the public key pubkey/moonPub.pem",
        ),
    ];
    for &(local, remote, line, key, why) in cases {
        let e = load(local, remote).unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (line, key), "{local}: {e}");
        assert!(e.to_string().contains(why), "{local}: {e}");
    }
    // The remote side: a key and an id are enough, no CA needed.
    let c = load(
        "auth = psk",
        "auth = pubkey\n id = moon\n pubkeys = moonPub.der, moonPub.pem",
    )
    .unwrap();
    assert_eq!(
        c.connections[0].remote.pubkeys,
        ["moonPub.der", "moonPub.pem"]
    );
    assert_eq!(
        c.credentials.pubkey("moonPub.der"),
        c.credentials.pubkey("moonPub.pem")
    );
    // A file in pubkey/ that is no key names the file.
    std::fs::write(dir.join("pubkey/bad.pem"), "nonsense").unwrap();
    let e = load("auth = psk", "auth = psk").unwrap_err();
    assert!(matches!(e.kind, ConfigErrorKind::Credential(_)), "{e}");
    assert!(e.file.ends_with("pubkey/bad.pem"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
