//! The body of the `cert_parse` fuzz target, shared with
//! crates/ike/tests/fuzz_cert_corpus.rs (which replays the corpus on
//! stable Rust): what a peer's CERT payload and AUTH data go through —
//! X.509 parsing, the identity and subject checks, path validation to a
//! fixed root with a fixed clock, signature verification, the RFC 7427
//! AlgorithmIdentifier and DN identities.
#![allow(dead_code)]

use std::time::Duration;

use flowsec_crypto::Provider;
use flowsec_ike::cert::{pem_or_der, verify, Certificate, Hash, Scheme};
use flowsec_ike::config::{dn, Identity};

/// The test PKI's root (tests/data/pki/caCert.pem).
const ROOT_PEM: &[u8] = include_bytes!("../crates/ike/tests/data/pki/caCert.pem");
/// 2027-01-01.
const NOW: Duration = Duration::from_secs(1_798_761_600);

pub fn cert_parse(data: &[u8]) {
    let _ = Scheme::split_auth_data(data);
    if dn::is_valid(data) {
        let id = Identity::Dn(data.to_vec());
        let _ = id.to_string();
        let _ = id.match_quality(&id);
    }
    let Ok(cert) = Certificate::parse(data) else {
        return;
    };
    let root = Certificate::parse(&pem_or_der(ROOT_PEM, "CERTIFICATE")).expect("the root parses");
    let provider = Provider::fastest();
    let _ = cert.subject_text();
    let _ = cert.has_subject(&Identity::parse("moon.flowsec.test").expect("identity"));
    let _ = verify::validate(&provider, &cert, &[&cert], &[&root], &[], NOW);
    for scheme in [
        Scheme::Ecdsa(Hash::Sha256),
        Scheme::RsaPss(Hash::Sha256),
        Scheme::Ed25519,
    ] {
        let _ = verify::verify_signature(&provider, &cert, scheme, b"octets", data);
    }
}
