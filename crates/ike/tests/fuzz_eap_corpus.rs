//! The `eap` fuzz target (fuzz/common_eap.rs) on stable Rust: every
//! committed seed and corpus file goes through the function libFuzzer
//! calls. The seeds (fuzz/seeds/eap/) are a whole EAP-MSCHAPv2
//! conversation's messages, written by the ignored test
//! `generate_eap_seeds`.

use std::fs;

use flowsec_ike::eap::method::{Peer, PeerStep, Server, ServerStep};
use zeroize::Zeroizing;

mod corpus;

#[path = "../../../fuzz/common_eap.rs"]
mod common_eap;

#[test]
fn seeds_and_corpus_replay_without_panic() {
    corpus::replay("eap", 5, common_eap::eap);
}

#[test]
#[ignore = "writes fuzz/seeds/eap"]
fn generate_eap_seeds() {
    let out = corpus::dir("eap", "seeds");
    fs::create_dir_all(&out).unwrap();
    let pw = |u: &[u8]| (u == b"carol").then(|| Zeroizing::new(b"pw".to_vec()));
    let provider = flowsec_crypto::Provider::fastest();
    let (mut s, mut req) = Server::start(&provider, 1, None, [7; 16]);
    let mut p = Peer::new(&provider, b"carol".to_vec(), Zeroizing::new(b"pw".to_vec()));
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
