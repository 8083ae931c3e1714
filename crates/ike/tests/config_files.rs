//! swanctl.conf features that read files beside the configuration:
//! `authorities` (CA certificates as trust anchors, revocation URIs kept)
//! and encrypted private keys with their `secrets`, with the fixtures of
//! tests/data/pki and tests/data/encrypted.

use std::path::{Path, PathBuf};

use flowsec_crypto::Provider;
use flowsec_ike::cert::key::KeyError;
use flowsec_ike::cert::{Certificate, PrivateKey};
use flowsec_ike::config::{self, AuthoritySource, ConfigErrorKind};

fn pem(bytes: &[u8]) -> Vec<u8> {
    pem_rfc7468::decode_vec(bytes).unwrap().1
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pki")
}

/// A fresh swanctl directory, removed on drop.
struct Swanctl(PathBuf);

impl Swanctl {
    fn new(tag: &str) -> Swanctl {
        let dir =
            std::env::temp_dir().join(format!("flowsec-config-files-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Swanctl(dir)
    }

    fn copy(&self, fixture: &str, to: &str) -> PathBuf {
        let path = self.0.join(to);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::copy(fixtures().join(fixture), &path).unwrap();
        path
    }

    fn load(&self, text: &str) -> Result<config::Config, config::ConfigError> {
        let path = self.0.join("swanctl.conf");
        std::fs::write(&path, text).unwrap();
        config::load(&Provider::fastest(), &path)
    }
}

impl Drop for Swanctl {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A connection that verifies the peer's certificate (needs a CA) and
/// authenticates itself with a PSK.
const VERIFYING: &str = "connections {\n gw {\n  remote_addrs = 192.0.2.1\n  \
                         local { auth = psk }\n  remote { auth = pubkey }\n }\n}\n\
                         secrets { ike { secret = x } }\n";

#[test]
fn authority_cacert_is_a_trust_anchor() {
    let d = Swanctl::new("anchor");
    // Without any CA, a connection verifying certificates is refused.
    let e = d.load(VERIFYING).unwrap_err();
    assert!(matches!(e.kind, ConfigErrorKind::NoCa { .. }), "{e}");
    // The CA outside x509ca/, named by an absolute path.
    let ca = d.copy("caCert.pem", "elsewhere/ca.pem");
    let text = format!(
        "{VERIFYING}authorities {{\n strongswan {{\n  cacert = {}\n  \
         crl_uris = http://crl.flowsec.test/root.crl, ldap://ldap.flowsec.test\n  \
         ocsp_uris = http://ocsp.flowsec.test\n  cert_uri_base = http://certs.flowsec.test/\n }}\n}}\n",
        ca.display()
    );
    let c = d.load(&text).unwrap();
    let a = &c.authorities[0];
    assert_eq!(a.name, "strongswan");
    assert_eq!(a.source, AuthoritySource::CaCert(ca.display().to_string()));
    assert_eq!(
        a.crl_uris,
        [
            "http://crl.flowsec.test/root.crl",
            "ldap://ldap.flowsec.test"
        ]
    );
    assert_eq!(a.ocsp_uris, ["http://ocsp.flowsec.test"]);
    assert_eq!(
        a.subject().as_deref(),
        Some("C=CH, O=flowsec, CN=flowsec Root CA")
    );
    assert_eq!(c.credentials.cas().count(), 1);
}

#[test]
fn authority_cacert_in_x509ca_and_file() {
    let d = Swanctl::new("x509ca");
    d.copy("caCert.pem", "x509ca/caCert.pem");
    let inter = d.copy("interCert.pem", "other/inter.pem");
    let text = format!(
        "{VERIFYING}authorities {{\n root {{ cacert = caCert.pem }}\n \
         inter {{ file = {} }}\n}}\n",
        inter.display()
    );
    let c = d.load(&text).unwrap();
    assert_eq!(c.credentials.cas().count(), 2);
    assert!(c.authorities[0].certificate.is_some());
    assert_eq!(
        c.authorities[1].subject().as_deref(),
        Some("C=CH, O=flowsec, CN=flowsec Intermediate CA")
    );
}

#[test]
fn authority_errors_name_file_and_line() {
    let d = Swanctl::new("errors");
    let base = "authorities {\n ca {\n";
    let cases: &[(&str, usize, &str, &str)] = &[
        (
            "  cacert = missing.pem\n",
            3,
            "authorities.ca.cacert",
            "is not a file in",
        ),
        (
            "  file = ca.pem\n",
            3,
            "authorities.ca.file",
            "absolute path",
        ),
        (
            "  crl_uris = http://x\n",
            2,
            "authorities.ca.cacert",
            "needs its CA certificate",
        ),
        (
            "  cacert = a.pem\n  cacert = b.pem\n",
            4,
            "authorities.ca.cacert",
            "given twice",
        ),
        (
            "  cacert = a.pem\n  file = /b.pem\n",
            4,
            "authorities.ca.file",
            "one of",
        ),
        (
            "  cacert = a.pem\n  handle = 0102\n",
            4,
            "authorities.ca.handle",
            "not supported",
        ),
        (
            "  cacert = a.pem\n  crl = x\n",
            4,
            "authorities.ca.crl",
            "unknown key",
        ),
        (
            "  cacert = a.pem\n  crl_uris = a,,b\n",
            4,
            "authorities.ca.crl_uris",
            "empty",
        ),
    ];
    for &(body, line, key, why) in cases {
        let e = d.load(&format!("{base}{body} }}\n}}\n")).unwrap_err();
        assert!(e.file.ends_with("swanctl.conf"), "{e}");
        assert_eq!((e.line, e.key.as_str()), (line, key), "{body}: {e}");
        assert!(e.to_string().contains(why), "{body}: {e}");
    }
    // Not a CA: names the certificate file.
    let moon = d.copy("moonCert.pem", "moon.pem");
    let e = d
        .load(&format!(
            "authorities {{ ca {{ cacert = {} }} }}\n",
            moon.display()
        ))
        .unwrap_err();
    assert!(e.to_string().contains("not a CA certificate"), "{e}");
    assert_eq!(e.file, moon.display().to_string());
}

// --- encrypted private keys (tests/data/encrypted/make.sh)

fn encrypted(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join("../encrypted").join(name)).unwrap()
}

fn plain_public(name: &str) -> Vec<u8> {
    let bytes = std::fs::read(fixtures().join(name)).unwrap();
    PrivateKey::parse(&Provider::fastest(), &bytes, name)
        .unwrap()
        .public_key()
}

#[test]
fn encrypted_keys_decrypt_with_their_password() {
    let p = Provider::fastest();
    for (file, password, plain) in [
        ("sunKey.aes256.pem", "sun-secret", "sunKey.pem"),
        ("moonKey.des3.pem", "moon-secret", "moonKey.pem"),
        ("carolKey.pkcs8.pem", "carol-secret", "carolKey.pem"),
        ("moonKey.pkcs8.der", "moon-secret", "moonKey.pem"),
        ("sunKey.pkcs8.pem", "sun-secret", "sunKey.pem"),
    ] {
        let bytes = encrypted(file);
        let key = PrivateKey::parse_with(&p, &bytes, file, &[b"wrong", password.as_bytes()])
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(key.public_key(), plain_public(plain), "{file}");
        assert_eq!(
            PrivateKey::parse_with(&p, &bytes, file, &[b"wrong"]).unwrap_err(),
            KeyError::WrongPassword,
            "{file}"
        );
        assert_eq!(
            PrivateKey::parse(&p, &bytes, file).unwrap_err(),
            KeyError::Encrypted,
            "{file}"
        );
    }
    // PBES1 (PKCS#5 v1.5 / PKCS#12 PBE) is not read.
    let e = PrivateKey::parse_with(&p, &encrypted("marsKey.pbes1.pem"), "m", &[b"x"]).unwrap_err();
    assert!(
        matches!(e, KeyError::Unsupported(ref w) if w.contains("PBES2")),
        "{e}"
    );
}

#[test]
fn secrets_sections_decrypt_keys_of_their_directory() {
    let d = Swanctl::new("keys");
    std::fs::create_dir_all(d.0.join("rsa")).unwrap();
    std::fs::create_dir_all(d.0.join("pkcs8")).unwrap();
    std::fs::write(d.0.join("rsa/sunKey.pem"), encrypted("sunKey.aes256.pem")).unwrap();
    std::fs::write(d.0.join("pkcs8/moon.der"), encrypted("moonKey.pkcs8.der")).unwrap();
    let secrets =
        "secrets {\n rsa-sun {\n  file = SUNKEY.pem\n  secret = bad\n  secret2 = sun-secret\n }\n \
                   pkcs8-moon {\n  file = moon.der\n  secret = \"moon-secret\"\n }\n}\n";
    let c = d.load(secrets).unwrap();
    assert_eq!(c.key_secrets.len(), 2);
    assert_eq!(c.key_secrets[0].dir, "rsa");
    // The passwords stay out of Debug.
    assert!(!format!("{:?}", c.key_secrets).contains("sun-secret"));
    let sun =
        Certificate::parse(&pem(&std::fs::read(fixtures().join("sunCert.pem")).unwrap())).unwrap();
    assert!(c.credentials.key_for(&sun).is_some());
    let moon = Certificate::parse(&pem(
        &std::fs::read(fixtures().join("moonCert.pem")).unwrap()
    ))
    .unwrap();
    assert!(c.credentials.key_for(&moon).is_some());

    // Wrong password: the error names the key file.
    let e = d.load(&secrets.replace("sun-secret", "nope")).unwrap_err();
    assert!(e.file.ends_with("rsa/sunKey.pem"), "{e}");
    assert!(
        e.to_string().contains("no configured secret decrypts it"),
        "{e}"
    );
    // No secret for it: the error says how to give one.
    let e = d
        .load("secrets {\n pkcs8-moon {\n  file = moon.der\n  secret = moon-secret\n }\n}\n")
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("rsa-NAME { file = FILE; secret = PASSWORD }"),
        "{e}"
    );
}

#[test]
fn key_secret_errors_name_file_and_line() {
    let d = Swanctl::new("key-errors");
    let cases: &[(&str, usize, &str, &str)] = &[
        (
            "rsa-x {\n  file = none.pem\n  secret = s\n }",
            3,
            "secrets.rsa-x.file",
            "is not a file in",
        ),
        (
            "ecdsa-x {\n  secret = s\n }",
            2,
            "secrets.ecdsa-x.file",
            "missing",
        ),
        (
            "pkcs8 {\n  file = a.pem\n }",
            2,
            "secrets.pkcs8.secret",
            "missing",
        ),
        (
            "private-x {\n  file = a\n  secret = s\n  pin = 1\n }",
            5,
            "secrets.private-x.pin",
            "unknown",
        ),
        (
            "pkcs12-x {\n  file = a.p12\n  secret = s\n }",
            2,
            "secrets.pkcs12-x",
            "not supported",
        ),
    ];
    for &(body, line, key, why) in cases {
        let e = d.load(&format!("secrets {{\n {body}\n}}\n")).unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (line, key), "{body}: {e}");
        assert!(e.to_string().contains(why), "{body}: {e}");
    }
}
