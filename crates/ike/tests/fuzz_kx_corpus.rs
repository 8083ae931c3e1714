//! The key exchange fuzz target (fuzz/common_kx.rs) on stable Rust: every
//! file of its committed seeds and corpus goes through the function
//! libFuzzer calls, so a crash once found and committed stays a
//! regression test.
//!
//! The seeds under fuzz/seeds/ike_key_exchange/ are written by the ignored
//! test `generate_kx_seeds` (`cargo test -p flowsec-ike --test
//! fuzz_kx_corpus -- --ignored`): every method's valid KE data, and SA
//! payloads of hybrid offers.

use std::fs;

use flowsec_crypto::random::SeededRandom;
use flowsec_crypto::Provider;
use flowsec_ike::config::{ike_offer, parse_ike_proposals};
use flowsec_wire::ike::{emit_payloads, Payload};

mod corpus;

#[path = "../../../fuzz/common_kx.rs"]
mod common_kx;

#[test]
fn seeds_and_corpus_replay_without_panic() {
    corpus::replay("ike_key_exchange", 10, common_kx::ike_key_exchange);
}

#[test]
#[ignore = "writes fuzz/seeds/ike_key_exchange"]
fn generate_kx_seeds() {
    let dir = corpus::dir("ike_key_exchange", "seeds");
    fs::create_dir_all(&dir).unwrap();
    let provider = Provider::fastest();
    let methods = common_kx::methods(&provider);
    let mut rng = SeededRandom::new(9);
    for (i, id) in methods.iter().enumerate() {
        let method = provider.key_exchange(*id).unwrap();
        let initiator = method.start(&mut rng).unwrap();
        // As a responder reads it: an initiator's KE data.
        let mut seed = vec![i as u8];
        seed.extend_from_slice(initiator.public_value());
        fs::write(dir.join(format!("ke-{id}")), &seed).unwrap();
        // As an initiator reads it: a responder's answer.
        let (answer, _) = method.respond(&mut rng, initiator.public_value()).unwrap();
        let mut seed = vec![i as u8];
        seed.extend_from_slice(answer.public_value());
        fs::write(dir.join(format!("answer-{id}")), &seed).unwrap();
    }
    for (name, offer) in [
        (
            "hybrid",
            "aes256gcm16-prfsha384-x25519-ke1_mlkem768-ke2_ecp384",
        ),
        (
            "optional",
            "aes256gcm16-prfsha384-x25519-ke1_mlkem768-ke1_none",
        ),
        (
            "three",
            "aes128gcm16-prfsha256-mlkem1024-ke1_ecp384-ke3_ecp256-ke7_mlkem512",
        ),
        ("classical", "aes128-sha256-ecp256"),
    ] {
        let sa = Payload::Sa(ike_offer(&parse_ike_proposals(offer).unwrap()));
        let mut seed = vec![0x80];
        seed.extend(emit_payloads(&[sa]));
        // The SA payload's body: parse_payloads reads its header too.
        fs::write(dir.join(format!("sa-{name}")), &seed).unwrap();
    }
}
