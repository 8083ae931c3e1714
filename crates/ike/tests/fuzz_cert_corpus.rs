//! The `cert_parse` fuzz target (fuzz/common_cert.rs) on stable Rust:
//! every committed seed and corpus file goes through the function
//! libFuzzer calls. The seeds (fuzz/seeds/cert_parse/) are the test PKI's
//! certificates in DER, AUTH data of every scheme and DN identities,
//! written by the ignored test `generate_cert_seeds`.

use std::fs;
use std::path::{Path, PathBuf};

use flowsec_ike::cert::{pem_or_der, Scheme};

#[path = "../../../fuzz/common_cert.rs"]
mod common_cert;

fn dir(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz")
        .join(kind)
        .join("cert_parse")
}

fn files(kind: &str) -> Vec<PathBuf> {
    let Ok(d) = fs::read_dir(dir(kind)) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = d
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

#[test]
fn seeds_and_corpus_replay_without_panic() {
    let seeds = files("seeds");
    assert!(
        seeds.len() >= 10,
        "no seeds under {}",
        dir("seeds").display()
    );
    for f in seeds.iter().chain(files("corpus").iter()) {
        common_cert::cert_parse(&fs::read(f).unwrap());
    }
}

#[test]
#[ignore = "writes fuzz/seeds/cert_parse"]
fn generate_cert_seeds() {
    let out = dir("seeds");
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
