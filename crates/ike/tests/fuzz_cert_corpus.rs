//! The `cert_parse` fuzz target (fuzz/common_cert.rs) on stable Rust:
//! every committed seed and corpus file goes through the function
//! libFuzzer calls. The seeds (fuzz/seeds/cert_parse/) are the test PKI's
//! certificates in DER, AUTH data of every scheme and DN identities,
//! written by the ignored test `generate_cert_seeds`.

use std::fs;
use std::path::Path;

use flowsec_ike::cert::{pem_or_der, Scheme};

mod corpus;

#[path = "../../../fuzz/common_cert.rs"]
mod common_cert;

#[test]
fn seeds_and_corpus_replay_without_panic() {
    corpus::replay("cert_parse", 10, common_cert::cert_parse);
}

#[test]
#[ignore = "writes fuzz/seeds/cert_parse"]
fn generate_cert_seeds() {
    let out = corpus::dir("cert_parse", "seeds");
    fs::create_dir_all(&out).unwrap();
    let pki = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pki");
    for e in fs::read_dir(&pki).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with("Cert.pem") {
            let der = pem_or_der(&fs::read(e.path()).unwrap(), "CERTIFICATE");
            fs::write(out.join(name.replace(".pem", ".der")), der).unwrap();
        }
    }
    use flowsec_ike::cert::Hash;
    for (i, s) in [
        Scheme::RsaPkcs1(Hash::Sha256),
        Scheme::RsaPss(Hash::Sha384),
        Scheme::Ecdsa(Hash::Sha512),
        Scheme::Ed25519,
    ]
    .into_iter()
    .enumerate()
    {
        fs::write(out.join(format!("auth-{i}.bin")), s.auth_data(&[0x5a; 64])).unwrap();
    }
    let dn = flowsec_ike::config::dn::encode("C=CH, O=flowsec, CN=*").unwrap();
    fs::write(out.join("dn.bin"), dn).unwrap();
}
