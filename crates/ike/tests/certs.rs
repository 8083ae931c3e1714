//! Certificates, keys and signatures made by strongSwan's `pki` tool
//! (tests/pki/make-pki.sh, fixtures in tests/data/pki, valid 2026-2046):
//! parsing, path validation (intermediates, CRL, wrong CA, expiry), the
//! identity a certificate holds, and RFC 7427 signatures with every key
//! kind.

use std::path::{Path, PathBuf};
use std::time::Duration;

use flowsec_crypto::Provider;
use flowsec_ike::cert::x509::Curve;
use flowsec_ike::cert::{
    verify, Certificate, Credentials, Hash, KeyKind, PrivateKey, Rejection, Scheme,
};
use flowsec_ike::config::{IdMatch, Identity};

/// The crypto provider every key and signature here goes through.
fn provider() -> Provider {
    Provider::fastest()
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pki")
}

fn pem_der(name: &str) -> Vec<u8> {
    let text = std::fs::read(dir().join(name)).unwrap();
    pem_rfc7468::decode_vec(&text).unwrap().1
}

fn cert(name: &str) -> Certificate {
    Certificate::parse(&pem_der(&format!("{name}Cert.pem"))).unwrap()
}

fn key(name: &str) -> PrivateKey {
    let f = format!("{name}Key.pem");
    PrivateKey::parse(&provider(), &std::fs::read(dir().join(&f)).unwrap(), &f).unwrap()
}

/// 2027-01-01, inside every fixture's validity.
const NOW: Duration = Duration::from_secs(1_798_761_600);

fn crls() -> Vec<webpki::OwnedCertRevocationList> {
    vec![webpki::OwnedCertRevocationList::from_der(&pem_der("rootCrl.pem")).unwrap()]
}

#[test]
fn key_kinds_and_pairs() {
    for (name, kind) in [
        ("moon", KeyKind::Ecdsa(Curve::P384)),
        ("sun", KeyKind::Rsa(3072)),
        ("venus", KeyKind::Ecdsa(Curve::P256)),
        ("carol", KeyKind::Ed25519),
        ("mars", KeyKind::Ecdsa(Curve::P521)),
    ] {
        let (c, k) = (cert(name), key(name));
        assert_eq!(c.key, kind, "{name}");
        assert_eq!(k.kind(), kind, "{name}");
        assert_eq!(
            k.public_key(),
            c.public_key,
            "{name}: key and certificate pair"
        );
    }
    assert_ne!(key("moon").public_key(), cert("sun").public_key);
    assert!(cert("ca").ca && !cert("moon").ca);
}

#[test]
fn identities_a_certificate_holds() {
    let moon = cert("moon");
    let fqdn = Identity::parse("moon.flowsec.test").unwrap();
    let dn = Identity::parse("C=CH, O=flowsec, CN=moon.flowsec.test").unwrap();
    let any_cn = Identity::parse("C=CH, O=flowsec, CN=*").unwrap();
    assert_eq!(moon.has_subject(&fqdn), IdMatch::Perfect);
    assert_eq!(moon.has_subject(&dn), IdMatch::Perfect);
    assert_eq!(moon.has_subject(&any_cn), IdMatch::OneWildcard);
    assert_eq!(
        moon.has_subject(&Identity::parse("sun.flowsec.test").unwrap()),
        IdMatch::None
    );
    let carol = cert("carol");
    assert_eq!(
        carol.has_subject(&Identity::parse("carol@flowsec.test").unwrap()),
        IdMatch::Perfect
    );
    assert_eq!(moon.subject_text(), "C=CH, O=flowsec, CN=moon.flowsec.test");
}

#[test]
fn paths_validate_to_the_root_through_the_intermediate() {
    let (root, inter) = (cert("ca"), cert("inter"));
    verify::validate(&provider(), &cert("moon"), &[], &[&root], &crls(), NOW).unwrap();
    verify::validate(&provider(), &cert("sun"), &[], &[&root], &[], NOW).unwrap();
    // venus and carol need the intermediate, sent by the peer.
    assert!(matches!(
        verify::validate(&provider(), &cert("venus"), &[], &[&root], &crls(), NOW),
        Err(Rejection::Untrusted(_))
    ));
    verify::validate(
        &provider(),
        &cert("venus"),
        &[&inter],
        &[&root],
        &crls(),
        NOW,
    )
    .unwrap();
    verify::validate(
        &provider(),
        &cert("carol"),
        &[&inter],
        &[&root],
        &crls(),
        NOW,
    )
    .unwrap();
}

#[test]
fn strict_revocation_refuses_an_expired_crl_relaxed_does_not() {
    // staleCrl.pem: the root's CRL for 2026-11-01 .. 2026-11-08 (made with
    // `openssl ca -gencrl -crl_lastupdate/-crl_nextupdate`), long past at
    // NOW: it proves nothing about today.
    let root = cert("ca");
    let stale = vec![webpki::OwnedCertRevocationList::from_der(&pem_der("staleCrl.pem")).unwrap()];
    let e = verify::validate_with(&provider(), &cert("moon"), &[], &[&root], &stale, NOW, true)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "certificate not trusted: the CRL is past its next update (revocation = strict)"
    );
    verify::validate(&provider(), &cert("moon"), &[], &[&root], &stale, NOW).unwrap();
    // A current CRL still passes strict.
    verify::validate_with(
        &provider(),
        &cert("moon"),
        &[],
        &[&root],
        &crls(),
        NOW,
        true,
    )
    .unwrap();
}

#[test]
fn revoked_wrong_ca_expired_and_not_yet_valid_are_refused() {
    let root = cert("ca");
    assert_eq!(
        verify::validate(&provider(), &cert("revoked"), &[], &[&root], &crls(), NOW),
        Err(Rejection::Revoked)
    );
    // Without the CRL the status is unknown: accepted (revocation = relaxed),
    // refused with revocation = strict.
    verify::validate(&provider(), &cert("revoked"), &[], &[&root], &[], NOW).unwrap();
    assert!(
        verify::validate_with(&provider(), &cert("moon"), &[], &[&root], &[], NOW, true).is_err()
    );
    // Strict: moon is covered by the root's CRL (not revoked); venus's
    // issuer (the intermediate) has no CRL here.
    verify::validate_with(
        &provider(),
        &cert("moon"),
        &[],
        &[&root],
        &crls(),
        NOW,
        true,
    )
    .unwrap();
    let e = verify::validate_with(
        &provider(),
        &cert("venus"),
        &[&cert("inter")],
        &[&root],
        &crls(),
        NOW,
        true,
    );
    assert_eq!(
        e.unwrap_err().to_string(),
        "certificate not trusted: no CRL covers it (revocation = strict)"
    );
    let evil = cert("evil");
    let e = verify::validate(&provider(), &evil, &[], &[&root], &crls(), NOW).unwrap_err();
    assert_eq!(
        e.to_string(),
        "certificate not trusted: issuer not among the trusted CAs"
    );
    // Even with its CA sent along as an "intermediate".
    let evil_ca = cert("evilCa");
    assert!(verify::validate(&provider(), &evil, &[&evil_ca], &[&root], &[], NOW).is_err());
    let later = NOW + Duration::from_secs(40 * 365 * 86400);
    let e = verify::validate(&provider(), &cert("moon"), &[], &[&root], &[], later).unwrap_err();
    assert_eq!(e.to_string(), "certificate not trusted: expired");
    let e = verify::validate(
        &provider(),
        &cert("moon"),
        &[],
        &[&root],
        &[],
        Duration::from_secs(1_000_000),
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "certificate not trusted: not yet valid");
    // A CA as end entity.
    assert!(verify::validate(&provider(), &cert("inter"), &[], &[&root], &[], NOW).is_err());
}

#[test]
fn signatures_with_every_key_kind() {
    let data = b"InitiatorSignedOctets";
    for (name, scheme) in [
        ("moon", Scheme::Ecdsa(Hash::Sha384)),
        ("venus", Scheme::Ecdsa(Hash::Sha256)),
        ("sun", Scheme::RsaPkcs1(Hash::Sha256)),
        ("sun", Scheme::RsaPkcs1(Hash::Sha512)),
        ("sun", Scheme::RsaPss(Hash::Sha256)),
        ("sunPss", Scheme::RsaPss(Hash::Sha384)),
        ("carol", Scheme::Ed25519),
        ("mars", Scheme::Ecdsa(Hash::Sha512)),
    ] {
        let (c, k) = (cert(name), key(name));
        let sig = k
            .sign(scheme, data)
            .unwrap_or_else(|| panic!("{name} {scheme}"));
        verify::verify_signature(&provider(), &c, scheme, data, &sig).unwrap();
        assert_eq!(
            verify::verify_signature(&provider(), &c, scheme, b"other octets", &sig),
            Err(Rejection::BadSignature),
            "{name} {scheme}"
        );
        let mut bad = sig.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(verify::verify_signature(&provider(), &c, scheme, data, &bad).is_err());
        // The AUTH data round trip.
        let auth = scheme.auth_data(&sig);
        assert_eq!(Scheme::split_auth_data(&auth), Some((scheme, &sig[..])));
    }
    // A scheme that does not fit the key.
    let sig = key("moon").sign(Scheme::Ecdsa(Hash::Sha384), data).unwrap();
    assert_eq!(
        verify::verify_signature(
            &provider(),
            &cert("sun"),
            Scheme::Ecdsa(Hash::Sha384),
            data,
            &sig
        ),
        Err(Rejection::BadScheme)
    );
    assert!(key("moon")
        .sign(Scheme::Ecdsa(Hash::Sha256), data)
        .is_none());
}

#[test]
fn swanctl_directories_load_and_bad_files_are_named() {
    let tmp = std::env::temp_dir().join(format!("flowsec-creds-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    for sub in [
        "x509", "x509ca", "x509crl", "private", "ecdsa", "rsa", "pkcs8",
    ] {
        std::fs::create_dir_all(tmp.join(sub)).unwrap();
    }
    let cp = |from: &str, to: &str| std::fs::copy(dir().join(from), tmp.join(to)).unwrap();
    cp("moonCert.pem", "x509/moonCert.pem");
    cp("venusCert.pem", "x509/venusCert.pem");
    cp("caCert.pem", "x509ca/caCert.pem");
    cp("interCert.pem", "x509ca/interCert.pem");
    cp("rootCrl.pem", "x509crl/rootCrl.pem");
    cp("moonKey.pem", "ecdsa/moonKey.pem");
    cp("sunKey.pem", "rsa/sunKey.pem");
    cp("carolKey.pem", "pkcs8/carolKey.pem");
    let creds = Credentials::load(&provider(), &tmp).unwrap();
    let moon = creds.cert("moonCert.pem").unwrap();
    assert!(creds.key_for(moon).is_some());
    assert!(creds
        .key_for(creds.cert("venusCert.pem").unwrap())
        .is_none());
    let by_id = creds
        .cert_for(&Identity::parse("moon.flowsec.test").unwrap())
        .unwrap();
    assert_eq!(by_id, moon);
    assert!(creds
        .cert_for(&Identity::parse("venus.flowsec.test").unwrap())
        .is_none());
    let venus = creds.cert("venusCert.pem").unwrap();
    let chain: Vec<String> = creds
        .chain_of(venus)
        .iter()
        .map(|c| c.subject_text())
        .collect();
    assert_eq!(chain, ["C=CH, O=flowsec, CN=flowsec Intermediate CA"]);
    assert!(creds.chain_of(moon).is_empty());
    assert_eq!(creds.crls().len(), 1);
    assert_eq!(creds, Credentials::load(&provider(), &tmp).unwrap());

    // A truncated certificate, a leaf in x509ca/, a garbage key: each named.
    let der = pem_der("sunCert.pem");
    std::fs::write(tmp.join("x509/cut.der"), &der[..der.len() / 2]).unwrap();
    let e = Credentials::load(&provider(), &tmp).unwrap_err();
    assert!(e.file.ends_with("x509/cut.der"), "{e}");
    assert!(e.reason.starts_with("not an X.509 certificate"), "{e}");
    std::fs::remove_file(tmp.join("x509/cut.der")).unwrap();
    cp("sunCert.pem", "x509ca/sunCert.pem");
    let e = Credentials::load(&provider(), &tmp).unwrap_err();
    assert!(
        e.to_string()
            .contains("x509ca/sunCert.pem: not a CA certificate"),
        "{e}"
    );
    std::fs::remove_file(tmp.join("x509ca/sunCert.pem")).unwrap();
    std::fs::write(
        tmp.join("private/junk.pem"),
        b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    let e = Credentials::load(&provider(), &tmp).unwrap_err();
    assert!(e.file.ends_with("private/junk.pem"), "{e}");
    std::fs::write(
        tmp.join("private/junk.pem"),
        b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n",
    )
    .unwrap();
    let e = Credentials::load(&provider(), &tmp).unwrap_err();
    assert!(e.reason.contains("encrypted"), "{e}");
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[test]
fn hostile_certificates_are_errors_not_panics() {
    let der = pem_der("sunCert.pem");
    for cut in 0..der.len() {
        let _ = Certificate::parse(&der[..cut]);
    }
    for i in (0..der.len()).step_by(7) {
        let mut d = der.clone();
        d[i] ^= 0x55;
        if let Ok(c) = Certificate::parse(&d) {
            let _ = verify::validate(&provider(), &c, &[], &[&cert("ca")], &crls(), NOW);
        }
    }
    assert!(Certificate::parse(&vec![0x30; 20_000]).is_err());
}

#[test]
fn huge_chains_end_quickly() {
    // 200 copies of the intermediate and of a CA nobody trusts: webpki's
    // path building has a budget; the IKE core looks at 8 CERTs at most.
    let root = cert("ca");
    let inter = cert("inter");
    let many: Vec<&Certificate> = vec![&inter; 200];
    verify::validate(&provider(), &cert("venus"), &many, &[&root], &crls(), NOW).unwrap();
    let evil_ca = cert("evilCa");
    let junk: Vec<&Certificate> = vec![&evil_ca; 200];
    assert!(verify::validate(&provider(), &cert("evil"), &junk, &[&root], &crls(), NOW).is_err());
}
