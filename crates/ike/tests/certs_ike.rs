//! IKE_AUTH with certificates between two flowsec cores (RFC 7296 §2.15,
//! RFC 7427), with the strongSwan-made PKI of tests/data/pki laid out as
//! swanctl directories: every key kind, an intermediate CA sent in CERT
//! (kept in x509ca/ or in x509/), a peer's path completed with one we
//! hold, and the refusals (revoked, wrong CA, identity not in the certificate,
//! scheme not allowed, no wall clock), each counted by name.

mod pair;

use std::time::Duration;

use flowsec_crypto::Provider;
use flowsec_ike::random::SeededRandom;
use flowsec_ike::{config, Ike, IkeEvent, Settings};
use flowsec_wire::iana::PayloadType;
use flowsec_wire::ike::Message;
use pair::{Pair, A, B};

/// 2027-01-01 at the pair's `now`.
const UNIX: Duration = Duration::from_secs(1_798_761_600);

fn fixtures() -> std::path::PathBuf {
    pair::fixtures()
}

/// A swanctl directory for one peer (pair::loaded).
fn peer(tag: &str, conf: &str, files: &[(&str, &str)], seed: u64) -> Ike {
    pair::loaded(tag, conf, files, seed)
}

fn conf(me: &str, peer: &str, local: &str, remote: &str, net: (&str, &str), start: bool) -> String {
    let start = if start { "start_action = start" } else { "" };
    format!(
        r#"
connections {{
    gw {{
        local_addrs = {me}
        remote_addrs = {peer}
        proposals = aes128gcm16-prfsha256-ecp256
        local {{
            {local}
        }}
        remote {{
            {remote}
        }}
        children {{
            net {{
                local_ts = {}
                remote_ts = {}
                esp_proposals = aes128gcm16
                {start}
            }}
        }}
    }}
}}
"#,
        net.0, net.1
    )
}

/// a (moon-like, initiator) and b (responder) with their auth sections
/// and files; both trust the root CA, a holds its CRL.
fn pair_of(
    a_auth: (&str, &str),
    a_files: &[(&str, &str)],
    b_auth: (&str, &str),
    b_files: &[(&str, &str)],
) -> Pair {
    let ca = [("caCert.pem", "x509ca"), ("rootCrl.pem", "x509crl")];
    let af: Vec<_> = a_files.iter().chain(&ca).copied().collect();
    let bf: Vec<_> = b_files.iter().chain(&ca[..1]).copied().collect();
    let a = peer(
        "a",
        &conf(
            A,
            B,
            a_auth.0,
            a_auth.1,
            ("10.1.0.0/24", "10.2.0.0/24"),
            true,
        ),
        &af,
        1,
    );
    let b = peer(
        "b",
        &conf(
            B,
            A,
            b_auth.0,
            b_auth.1,
            ("10.2.0.0/24", "10.1.0.0/24"),
            false,
        ),
        &bf,
        2,
    );
    let mut p = Pair::of(a, b);
    p.a.set_wall_clock(p.now, UNIX);
    p.b.set_wall_clock(p.now, UNIX);
    p
}

const MOON: [(&str, &str); 2] = [("moonCert.pem", "x509"), ("moonKey.pem", "ecdsa")];
const SUN: [(&str, &str); 2] = [("sunCert.pem", "x509"), ("sunKey.pem", "rsa")];

fn moon_sun(a_remote: &str, b_local: &str, b_files: &[(&str, &str)]) -> Pair {
    pair_of(
        ("auth = pubkey\n certs = moonCert.pem", a_remote),
        &MOON,
        (b_local, "auth = pubkey"),
        b_files,
    )
}

/// The payload types of every IKE_AUTH message (decrypted is not
/// possible here: the SK payload's first inner type tells CERT or IDx).
fn sent_cert(p: &mut Pair) -> Vec<String> {
    let mut names = Vec::new();
    p.start();
    loop {
        p.collect();
        if p.ab.is_empty() && p.ba.is_empty() {
            break;
        }
        if !p.ab.is_empty() {
            let d = p.b_gets();
            names.push(format!("a->b {}", summary(&d.data)));
        }
        if !p.ba.is_empty() {
            let d = p.a_gets();
            names.push(format!("b->a {}", summary(&d.data)));
        }
    }
    names
}

fn summary(data: &[u8]) -> String {
    match Message::parse(data) {
        Ok(m) => m
            .payloads
            .iter()
            .map(|p| format!("{:?}", p.ty()))
            .collect::<Vec<_>>()
            .join(","),
        Err(_) => "?".into(),
    }
}

#[test]
fn ecdsa_p384_initiator_and_rsa_3072_responder_come_up() {
    let mut p = moon_sun(
        "auth = pubkey\n id = sun.flowsec.test",
        "auth = pubkey\n id = sun.flowsec.test\n certs = sunCert.pem",
        &SUN,
    );
    let flow = sent_cert(&mut p);
    p.settle();
    p.assert_up(1);
    let (la, lb) = (p.a.list(p.now), p.b.list(p.now));
    // a had no id: its certificate's subject DN; b's the configured FQDN.
    assert_eq!(la[0].local_id, "C=CH, O=flowsec, CN=moon.flowsec.test");
    assert_eq!(lb[0].remote_id, "C=CH, O=flowsec, CN=moon.flowsec.test");
    assert_eq!(la[0].remote_id, "@sun.flowsec.test");
    // IKE_SA_INIT's response carries CERTREQ (§1.2), IKE_AUTH is an SK.
    assert!(
        flow[1].contains(&format!("{:?}", PayloadType::CERTREQ)),
        "{flow:?}"
    );
    for ike in [&p.a, &p.b] {
        let s = ike.stats();
        assert_eq!(
            (s.auth_failed, s.bad_signature, s.cert_untrusted),
            (0, 0, 0)
        );
    }
}

#[test]
fn every_key_kind_signs_and_an_intermediate_travels_in_cert() {
    for (name, key_dir, files) in [
        (
            "venus",
            "ecdsa",
            vec![
                ("venusCert.pem", "x509"),
                ("venusKey.pem", "ecdsa"),
                ("interCert.pem", "x509ca"),
            ],
        ),
        (
            "carol",
            "pkcs8",
            vec![
                ("carolCert.pem", "x509"),
                ("carolKey.pem", "pkcs8"),
                ("interCert.pem", "x509ca"),
            ],
        ),
        (
            "sunPss",
            "rsa",
            vec![("sunPssCert.pem", "x509"), ("sunPssKey.pem", "rsa")],
        ),
        (
            "mars",
            "ecdsa",
            vec![("marsCert.pem", "x509"), ("marsKey.pem", "ecdsa")],
        ),
    ] {
        let _ = key_dir;
        let cert = format!("auth = pubkey\n certs = {name}Cert.pem");
        // a trusts only the root: b must send the intermediate.
        let mut p = moon_sun("auth = pubkey", &cert, &files);
        p.start();
        p.settle();
        p.assert_up(1);
        assert_eq!(p.a.stats().auth_failed, 0, "{name}");
    }
}

fn refused_by_a(b_local: &str, b_files: &[(&str, &str)], a_remote: &str) -> (Pair, Vec<String>) {
    let mut p = moon_sun(a_remote, b_local, b_files);
    p.start();
    let mut lines = Vec::new();
    for _ in 0..20 {
        p.collect();
        if p.ab.is_empty() && p.ba.is_empty() {
            break;
        }
        if !p.ab.is_empty() {
            p.b_gets();
        }
        if !p.ba.is_empty() {
            let d = p.ba.remove(0);
            p.a.handle_on(p.now, d.transport, d.remote, d.local, &d.data, &mut p.ka);
            lines.extend(p.a.take_events().iter().map(IkeEvent::to_string));
        }
    }
    assert!(
        p.a.list(p.now).iter().all(|s| s.state != "ESTABLISHED"),
        "{lines:?}"
    );
    assert_eq!(p.a.stats().auth_failed, 1);
    (p, lines)
}

#[test]
fn revoked_wrong_ca_and_wrong_identity_are_refused_by_name() {
    let revoked = [("revokedCert.pem", "x509"), ("revokedKey.pem", "ecdsa")];
    let (p, lines) = refused_by_a(
        "auth = pubkey\n certs = revokedCert.pem",
        &revoked,
        "auth = pubkey",
    );
    assert_eq!(p.a.stats().cert_revoked, 1);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("authentication failed: certificate revoked (CRL)")),
        "{lines:?}"
    );

    // The wrong CA's "sun": b trusts it (its own x509ca), a does not.
    let evil = [
        ("evilCert.pem", "x509"),
        ("evilKey.pem", "ecdsa"),
        ("evilCaCert.pem", "x509ca"),
    ];
    let (p, lines) = refused_by_a(
        "auth = pubkey\n certs = evilCert.pem\n id = sun.flowsec.test",
        &evil,
        "auth = pubkey\n id = sun.flowsec.test",
    );
    assert_eq!(p.a.stats().cert_untrusted, 1);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("certificate not trusted: issuer not among the trusted CAs")),
        "{lines:?}"
    );

    // sun's real certificate, claiming to be moon.
    let (p, lines) = refused_by_a(
        "auth = pubkey\n certs = sunCert.pem\n id = moon.flowsec.test",
        &SUN,
        "auth = pubkey",
    );
    assert_eq!(p.a.stats().cert_untrusted, 1);
    assert!(
        lines.iter().any(|l| l
            .contains("identity not in the certificate \"C=CH, O=flowsec, CN=sun.flowsec.test\"")),
        "{lines:?}"
    );

    // a wants RSA-PSS; sun signs PKCS#1 v1.5.
    let (p, lines) = refused_by_a(
        "auth = pubkey\n certs = sunCert.pem",
        &SUN,
        "auth = rsa/pss",
    );
    assert_eq!(p.a.stats().bad_signature, 1);
    assert!(lines.iter().any(|l| l.contains("not allowed")), "{lines:?}");
}

#[test]
fn the_responder_refuses_an_initiator_it_cannot_trust() {
    // b requires ECDSA; a (moon) is ECDSA but b trusts only the
    // intermediate (cacerts): moon's chain does not lead there.
    let files = [SUN[0], SUN[1], ("interCert.pem", "x509ca")];
    let mut p = moon_sun(
        "auth = pubkey",
        "auth = pubkey\n certs = sunCert.pem",
        &files,
    );
    // Rebuild b with cacerts restricted.
    let b_conf = conf(
        B,
        A,
        "auth = pubkey\n certs = sunCert.pem",
        "auth = ecdsa\n cacerts = interCert.pem",
        ("10.2.0.0/24", "10.1.0.0/24"),
        false,
    );
    let mut bf: Vec<_> = files.to_vec();
    bf.push(("caCert.pem", "x509ca"));
    p.b = peer("b2", &b_conf, &bf, 2);
    p.b.set_wall_clock(p.now, UNIX);
    p.start();
    p.settle();
    assert_eq!(p.b.stats().auth_failed, 1);
    assert_eq!(p.b.stats().cert_untrusted, 1);
    assert!(p.a.list(p.now).iter().all(|s| s.state != "ESTABLISHED"));
}

#[test]
fn without_a_wall_clock_certificates_are_refused() {
    let mut p = moon_sun("auth = pubkey", "auth = pubkey\n certs = sunCert.pem", &SUN);
    p.b = peer(
        "b3",
        &conf(
            B,
            A,
            "auth = pubkey\n certs = sunCert.pem",
            "auth = pubkey",
            ("10.2.0.0/24", "10.1.0.0/24"),
            false,
        ),
        &[SUN[0], SUN[1], ("caCert.pem", "x509ca")],
        2,
    );
    p.start();
    p.settle();
    assert_eq!(p.b.stats().cert_untrusted, 1);
}

#[test]
fn psk_on_one_side_and_a_certificate_on_the_other() {
    // a signs with moon's key; b authenticates itself with a PSK.
    let b_local = "auth = psk\n id = 192.0.2.2";
    let secrets = "secrets {\n ike-1 {\n id = 192.0.2.2\n secret = s3cret\n }\n}\n";
    let a_conf = conf(
        A,
        B,
        "auth = pubkey\n certs = moonCert.pem",
        "auth = psk\n id = 192.0.2.2",
        ("10.1.0.0/24", "10.2.0.0/24"),
        true,
    ) + secrets;
    let b_conf = conf(
        B,
        A,
        b_local,
        "auth = pubkey",
        ("10.2.0.0/24", "10.1.0.0/24"),
        false,
    ) + secrets;
    let ca = ("caCert.pem", "x509ca");
    let mut p = Pair::of(
        peer("a4", &a_conf, &[MOON[0], MOON[1], ca], 1),
        peer("b4", &b_conf, &[ca], 2),
    );
    p.a.set_wall_clock(p.now, UNIX);
    p.b.set_wall_clock(p.now, UNIX);
    p.start();
    p.settle();
    p.assert_up(1);
}

#[test]
fn configuration_errors_name_the_file_and_line() {
    let dir = std::env::temp_dir().join(format!("flowsec-certs-conf-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("x509ca")).unwrap();
    std::fs::copy(fixtures().join("caCert.pem"), dir.join("x509ca/caCert.pem")).unwrap();
    let path = dir.join("swanctl.conf");
    let write = |local: &str| {
        std::fs::write(
            &path,
            conf(
                A,
                B,
                local,
                "auth = pubkey",
                ("10.1.0.0/24", "10.2.0.0/24"),
                false,
            ),
        )
        .unwrap()
    };
    write("auth = pubkey\n certs = nosuch.pem");
    let e = config::load(&Provider::fastest(), &path)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("swanctl.conf:9: connections.gw.local.certs: 'nosuch.pem' is not a file in"),
        "{e}"
    );
    write("auth = pubkey\n id = moon.flowsec.test");
    let e = config::load(&Provider::fastest(), &path)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("connections.gw.local: no certificate for '@moon.flowsec.test'"),
        "{e}"
    );
    // The certificate without its key.
    std::fs::create_dir_all(dir.join("x509")).unwrap();
    std::fs::copy(
        fixtures().join("moonCert.pem"),
        dir.join("x509/moonCert.pem"),
    )
    .unwrap();
    write("auth = pubkey\n certs = moonCert.pem");
    let e = config::load(&Provider::fastest(), &path)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no private key for the certificate"), "{e}");
    // A certificate of a CA we do not hold.
    std::fs::create_dir_all(dir.join("ecdsa")).unwrap();
    std::fs::copy(
        fixtures().join("evilCert.pem"),
        dir.join("x509/evilCert.pem"),
    )
    .unwrap();
    std::fs::copy(
        fixtures().join("evilKey.pem"),
        dir.join("ecdsa/evilKey.pem"),
    )
    .unwrap();
    // It is loaded (strongSwan sends what it has and leaves the path to
    // the peer), with a warning.
    write("auth = pubkey\n certs = evilCert.pem");
    let loaded = config::load(&Provider::fastest(), &path).unwrap();
    let w: Vec<String> = loaded.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("connections.gw.local: our certificate")
            && w[0].contains("does not validate: certificate not trusted"),
        "{w:?}"
    );
    // A truncated file is named.
    std::fs::write(
        dir.join("x509/cut.pem"),
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let e = config::load(&Provider::fastest(), &path)
        .unwrap_err()
        .to_string();
    assert!(e.contains("x509/cut.pem: not an X.509 certificate"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// b's configuration with credentials made by hand (no load-time
/// checks): what a hostile or broken peer sends.
fn hostile_b(
    cert: flowsec_ike::cert::Certificate,
    cas: Vec<flowsec_ike::cert::Certificate>,
) -> Ike {
    hand_made_b(("sunCert.pem", "sunKey.pem"), cert, cas)
}

/// b signing with `cert` (named `files.0`, its key in the fixture
/// `files.1`), holding only `cas`: it sends what it holds, unchecked.
fn hand_made_b(
    files: (&str, &str),
    cert: flowsec_ike::cert::Certificate,
    cas: Vec<flowsec_ike::cert::Certificate>,
) -> Ike {
    use flowsec_ike::cert::{Credentials, PrivateKey};
    let (cert_file, key_file) = files;
    let text = conf(
        B,
        A,
        &format!("auth = pubkey\n certs = {cert_file}"),
        "auth = pubkey",
        ("10.2.0.0/24", "10.1.0.0/24"),
        false,
    );
    let mut config = config::parse("hostile.conf", &text).unwrap();
    let key = PrivateKey::parse(
        &Provider::fastest(),
        &std::fs::read(fixtures().join(key_file)).unwrap(),
        key_file,
    )
    .unwrap();
    let cas = cas
        .into_iter()
        .enumerate()
        .map(|(i, c)| (format!("ca{i}"), c))
        .collect();
    config.credentials = Credentials::new(vec![(cert_file.into(), cert)], cas, vec![key], vec![]);
    let mut b = Ike::new(
        config,
        Provider::rustcrypto(),
        Box::new(SeededRandom::new(2)),
        Settings::default(),
    );
    b.set_wall_clock(Duration::from_secs(1000), UNIX);
    b
}

fn fixture_cert(name: &str) -> flowsec_ike::cert::Certificate {
    let der = flowsec_ike::cert::pem_or_der(
        &std::fs::read(fixtures().join(name)).unwrap(),
        "CERTIFICATE",
    );
    flowsec_ike::cert::Certificate::parse(&der).unwrap()
}

#[test]
fn hostile_certificates_from_the_peer_are_counted_and_survived() {
    let sun = fixture_cert("sunCert.pem");
    let root = fixture_cert("caCert.pem");
    // (what b sends, the counter a must raise)
    let truncated = flowsec_ike::cert::Certificate {
        der: sun.der[..sun.der.len() / 2].to_vec(),
        ..sun.clone()
    };
    let mut forged = sun.clone();
    let last = forged.der.len() - 1;
    forged.der[last] ^= 0x01; // the CA's signature over it
    let garbage = flowsec_ike::cert::Certificate {
        der: vec![0x30; 3000],
        ..sun.clone()
    };
    type Case = (
        &'static str,
        flowsec_ike::cert::Certificate,
        Vec<flowsec_ike::cert::Certificate>,
        fn(&flowsec_ike::IkeStats) -> u64,
    );
    let cases: Vec<Case> = vec![
        ("truncated DER", truncated, vec![root.clone()], |s| {
            s.cert_malformed
        }),
        ("garbage DER", garbage, vec![root.clone()], |s| {
            s.cert_malformed
        }),
        (
            "a wrong signature on the certificate",
            forged,
            vec![root.clone()],
            |s| s.cert_untrusted,
        ),
    ];
    for (what, cert, cas, counter) in cases {
        let a_text = conf(
            A,
            B,
            "auth = pubkey\n certs = moonCert.pem",
            "auth = pubkey",
            ("10.1.0.0/24", "10.2.0.0/24"),
            true,
        );
        let files = [MOON[0], MOON[1], ("caCert.pem", "x509ca")];
        let a = peer("ha", &a_text, &files, 1);
        let mut p = Pair::of(a, hostile_b(cert, cas));
        p.a.set_wall_clock(p.now, UNIX);
        p.start();
        p.settle();
        let s = p.a.stats();
        assert_eq!(counter(s), 1, "{what}: {s:?}");
        assert_eq!(s.auth_failed, 1, "{what}");
        assert!(
            p.a.list(p.now).iter().all(|s| s.state != "ESTABLISHED"),
            "{what}"
        );
    }
}

/// Intermediate CAs in `x509/` (strongSwan builds chains from every
/// certificate loaded; only the trust anchors are in `x509ca/`).
const VENUS: [(&str, &str); 3] = [
    ("venusCert.pem", "x509"),
    ("venusKey.pem", "ecdsa"),
    ("interCert.pem", "x509"),
];
const CAROL: [(&str, &str); 3] = [
    ("carolCert.pem", "x509"),
    ("carolKey.pem", "pkcs8"),
    ("interCert.pem", "x509"),
];

#[test]
fn both_chains_through_an_intermediate_kept_in_x509_come_up() {
    // venus and carol: each issued by the intermediate in x509/, the
    // root alone in x509ca/.
    let mut p = pair_of(
        ("auth = pubkey\n certs = venusCert.pem", "auth = pubkey"),
        &VENUS,
        ("auth = pubkey\n certs = carolCert.pem", "auth = pubkey"),
        &CAROL,
    );
    p.start();
    p.settle();
    p.assert_up(1);
    assert_eq!(
        p.b.list(p.now)[0].remote_id,
        "C=CH, O=flowsec, CN=venus.flowsec.test"
    );
    for ike in [&p.a, &p.b] {
        let s = ike.stats();
        assert_eq!((s.auth_failed, s.cert_untrusted), (0, 0));
    }
}

#[test]
fn an_intermediate_kept_in_x509_travels_in_cert_after_ours() {
    // b holds the root only: it can build venus's path only from the
    // CERT payloads a sends (RFC 7296 §3.6: ours first, then the CAs).
    let mut p = pair_of(
        ("auth = pubkey\n certs = venusCert.pem", "auth = pubkey"),
        &VENUS,
        ("auth = pubkey\n certs = sunCert.pem", "auth = pubkey"),
        &SUN,
    );
    p.start();
    p.settle();
    p.assert_up(1);
    assert_eq!(p.b.stats().cert_untrusted, 0);
}

#[test]
fn a_peers_chain_is_completed_with_an_intermediate_we_hold() {
    // b sends venus alone; a has the intermediate in x509/.
    let a_text = conf(
        A,
        B,
        "auth = pubkey\n certs = moonCert.pem",
        "auth = pubkey",
        ("10.1.0.0/24", "10.2.0.0/24"),
        true,
    );
    let files = [
        MOON[0],
        MOON[1],
        ("interCert.pem", "x509"),
        ("caCert.pem", "x509ca"),
    ];
    let a = peer("held", &a_text, &files, 1);
    let b = hand_made_b(
        ("venusCert.pem", "venusKey.pem"),
        fixture_cert("venusCert.pem"),
        vec![fixture_cert("caCert.pem")],
    );
    let mut p = Pair::of(a, b);
    p.a.set_wall_clock(p.now, UNIX);
    p.start();
    p.settle();
    p.assert_up(1);
    assert_eq!(p.a.stats().cert_untrusted, 0);
    // A reload checks the peer again (reauth.rs), the same way: with a
    // CRL added (it revokes neither), venus stays.
    let mut with_crl = files.to_vec();
    with_crl.push(("rootCrl.pem", "x509crl"));
    let config = pair::loaded_config("held2", &a_text, &with_crl);
    p.a.reload(p.now, config, &mut p.ka);
    p.settle();
    assert_eq!(p.a.stats().peers_revoked, 0);
    p.assert_up(1);
}
