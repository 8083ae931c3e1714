//! The body of the `eap` fuzz target, shared with
//! crates/ike/tests/fuzz_eap_corpus.rs (which replays the corpus on stable
//! Rust): what a peer's EAP payload goes through — the EAP and MS-CHAPv2
//! parsers, the gateway's conversation at each of its states and the
//! road warrior's.
#![allow(dead_code)]

use flowsec_crypto::Provider;
use flowsec_ike::eap::method::{Peer, PeerStep, Server, ServerStep};
use flowsec_ike::eap::packet::{challenge_of, response_of, MsChap, Packet};
use zeroize::Zeroizing;

pub fn eap(data: &[u8]) {
    if let Some(p) = Packet::parse(data) {
        let _ = p.emit();
        if let Some(m) = MsChap::parse(&p.data) {
            let _ = challenge_of(&m);
            let _ = response_of(&m);
        }
    }
    let pw = |u: &[u8]| (u == b"carol").then(|| Zeroizing::new(b"pw".to_vec()));
    let provider = Provider::fastest();
    // The gateway waiting for the identity, for a Response to its
    // Challenge, and for the confirmation.
    let (mut s, _) = Server::start(&provider, data.first().copied().unwrap_or(0), None, [7; 16]);
    let _ = s.step(data, [7; 16], &pw);
    let (mut s, _) = Server::start(&provider, 1, Some(b"carol".to_vec()), [7; 16]);
    let _ = s.step(data, [7; 16], &pw);
    let (mut s, challenge) = Server::start(&provider, 1, Some(b"carol".to_vec()), [7; 16]);
    let mut peer = Peer::new(&provider, b"carol".to_vec(), Zeroizing::new(b"pw".to_vec()));
    if let PeerStep::Send(resp) = peer.step(&challenge, [3; 16]) {
        if let ServerStep::Send(_) = s.step(&resp, [7; 16], &pw) {
            let _ = s.step(data, [7; 16], &pw);
        }
    }
    // The road warrior, fresh and after a Challenge.
    let mut p = Peer::new(&provider, b"carol".to_vec(), Zeroizing::new(b"pw".to_vec()));
    let _ = p.step(data, [3; 16]);
    let mut p = Peer::new(&provider, b"carol".to_vec(), Zeroizing::new(b"pw".to_vec()));
    let _ = p.step(&challenge, [3; 16]);
    let _ = p.step(data, [3; 16]);
}
