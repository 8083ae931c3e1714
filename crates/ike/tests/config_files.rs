//! swanctl.conf features that read files beside the configuration:
//! `authorities` (CA certificates as trust anchors, revocation URIs kept),
//! with the fixtures of tests/data/pki.

use std::path::{Path, PathBuf};

use flowsec_crypto::Provider;
use flowsec_ike::config::{self, AuthoritySource, ConfigErrorKind};

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
