//! The key exchange fuzz target's body (`ike_key_exchange`), shared by
//! `fuzz_targets/` (libFuzzer) and `crates/ike/tests/fuzz_kx_corpus.rs`
//! (the committed seeds and corpus, replayed on stable Rust): what a peer
//! sends that post-quantum IKEv2 reads (RFC 9370, RFC 9242,
//! draft-ietf-ipsecme-ikev2-mlkem).

use flowsec_crypto::random::SeededRandom;
use flowsec_crypto::{DhGroup, Provider};
use flowsec_ike::config::{
    child_accepts, child_answer, child_offer, ike_accepts, ike_answer, ike_offer,
    parse_esp_proposals, parse_ike_proposals, select_child, select_ike,
};
use flowsec_wire::iana::ProtocolId;
use flowsec_wire::ike::{parse_payloads, Payload, PayloadType};

/// The methods byte 0 picks from: every method of the provider but the
/// MODP groups above 2048 bits (tens of milliseconds an operation: the
/// fuzzer would crawl; their code is the smaller groups').
pub fn methods(provider: &Provider) -> Vec<DhGroup> {
    provider
        .key_exchange_ids()
        .into_iter()
        .filter(|g| {
            !matches!(
                *g,
                DhGroup::MODP_3072 | DhGroup::MODP_4096 | DhGroup::MODP_6144 | DhGroup::MODP_8192
            )
        })
        .collect()
}

/// Our proposals for the negotiation half: hybrid ones with required and
/// optional slots, and a classical one.
pub const OURS: &str = "aes256gcm16-prfsha384-x25519-ke1_mlkem768-ke1_none-ke2_ecp384, \
                        aes128gcm16-prfsha256-mlkem1024-ke3_ecp256, aes128-sha256-ecp256";

/// Our ESP proposals: PFS with additional key exchanges for
/// IKE_FOLLOWUP_KE (RFC 9370 §2.2.4), required and optional.
pub const OURS_ESP: &str = "aes256gcm16-x25519-ke1_mlkem768-ke2_ecp384-ke2_none, \
                            aes128gcm16-mlkem1024-ke1_ecp256, aes128-sha256-ecp256";

/// `cargo fuzz run ike_key_exchange`. Byte 0's top bit picks the half:
/// - clear: its low bits pick a method ([`methods`]) and the rest is a
///   peer's KE payload data, read as a responder reads the initiator's
///   (`respond`: RFC 6989 checks, FIPS 203 §7.2 for ML-KEM) and as an
///   initiator reads the answer (`shared_secret`, FIPS 203 §7.3); an
///   accepted answer has the method's length;
/// - set: the rest is an SA payload's body (proposals with ADDKE
///   transforms), chosen from by [`OURS`] as a responder that takes
///   IKE_INTERMEDIATE does; what it answers must be a valid choice from
///   that offer (`ike_accepts`), and every proposal is checked as an
///   answer to our own offer; the same for ESP proposals against
///   [`OURS_ESP`] in CREATE_CHILD_SA.
pub fn ike_key_exchange(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    if pick & 0x80 == 0 {
        key_exchange_data(pick, rest);
    } else {
        negotiation(rest);
    }
}

fn key_exchange_data(pick: u8, peer: &[u8]) {
    let provider = Provider::fastest();
    let all = methods(&provider);
    let id = all[usize::from(pick) % all.len()];
    let method = provider.key_exchange(id).expect("a method of the provider");
    let mut rng = SeededRandom::new(u64::from(pick));
    if let Ok((ours, secret)) = method.respond(&mut rng, peer) {
        assert!(!secret.is_empty());
        assert!(!ours.public_value().is_empty());
    }
    if let Ok(initiator) = method.start(&mut rng) {
        assert_eq!(initiator.public_value().len(), method.public_value_len());
        let _ = initiator.shared_secret(peer);
    }
}

fn negotiation(body: &[u8]) {
    let Ok(payloads) = parse_payloads(PayloadType::SA, body) else {
        return;
    };
    let Some(Payload::Sa(offer)) = payloads.first() else {
        return;
    };
    let ours = parse_ike_proposals(OURS).expect("our proposals parse");
    if let Some(chosen) = select_ike(&ours, offer, true) {
        let answer = ike_answer(&chosen);
        let again = ike_accepts(offer, &answer).expect("our answer is a choice from the offer");
        assert_eq!(again.suite, chosen.suite);
        assert_eq!(again.additional(), chosen.additional());
    }
    let mine = ike_offer(&ours);
    for p in offer.iter().take(8) {
        let _ = ike_accepts(&mine, p);
    }
    let esp = parse_esp_proposals(OURS_ESP).expect("our ESP proposals parse");
    if let Some(chosen) = select_child(&esp, offer, true) {
        // (A peer's proposal without ESN gets NO_ESN back, which it did
        // not list: our check of an answer would refuse that.)
        let answer = child_answer(&chosen, 0x100);
        if let Some(again) = child_accepts(offer, &answer) {
            assert_eq!(again.additional(), chosen.additional());
            assert_eq!(again.dh, chosen.dh);
        }
    }
    let mine = child_offer(&esp, ProtocolId::ESP, 0x100, true);
    for p in offer.iter().take(8) {
        let _ = child_accepts(&mine, p);
    }
}
