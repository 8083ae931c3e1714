//! The `eap` fuzz target (fuzz/common_eap.rs) on stable Rust: every
//! committed seed and corpus file goes through the function libFuzzer
//! calls. The seeds (fuzz/seeds/eap/) are a whole EAP-MSCHAPv2
//! conversation's messages, written by the ignored test
//! `generate_eap_seeds`.

use std::fs;
use std::path::{Path, PathBuf};

use flowsec_ike::eap::method::{Peer, PeerStep, Server, ServerStep};
use zeroize::Zeroizing;

#[path = "../../../fuzz/common_eap.rs"]
mod common_eap;

fn dir(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz")
        .join(kind)
        .join("eap")
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
        seeds.len() >= 5,
        "no seeds under {}",
        dir("seeds").display()
    );
    for f in seeds.iter().chain(files("corpus").iter()) {
        common_eap::eap(&fs::read(f).unwrap());
    }
}

#[test]
#[ignore = "writes fuzz/seeds/eap"]
fn generate_eap_seeds() {
    let out = dir("seeds");
    fs::create_dir_all(&out).unwrap();
    let pw = |u: &[u8]| (u == b"carol").then(|| Zeroizing::new(b"pw".to_vec()));
    let (mut s, mut req) = Server::start(1, None, [7; 16]);
    let mut p = Peer::new(b"carol".to_vec(), Zeroizing::new(b"pw".to_vec()));
    for n in 0..5 {
        fs::write(out.join(format!("request-{n}.bin")), &req).unwrap();
        let PeerStep::Send(resp) = p.step(&req, [3; 16]) else {
            break;
        };
        fs::write(out.join(format!("response-{n}.bin")), &resp).unwrap();
        match s.step(&resp, [7; 16], &pw) {
            ServerStep::Send(r) => req = r,
            ServerStep::Success { packet, .. } | ServerStep::Failure { packet, .. } => {
                fs::write(out.join("result.bin"), packet).unwrap();
                break;
            }
        }
    }
}
