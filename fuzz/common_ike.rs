//! The IKE fuzz targets' bodies, shared by `fuzz_targets/` (libFuzzer) and
//! `crates/ike/tests/fuzz_corpus.rs` (the committed corpus, replayed on
//! stable Rust). Apart from common.rs, which the ipsec crate's test
//! includes: these need `flowsec-ike`.

use flowsec_crypto::suite::Encr;
use flowsec_crypto::{EncrId, IntegId, Provider};
use flowsec_ike::crypto::sk::SkCrypto;
use flowsec_ike::fragmentation::{Added, Reassembly};
use flowsec_wire::ike::{parse_payloads, Header};

/// The keys the `ike_fragments` seeds are sealed with: byte 0 of an input
/// picks one (AES-GCM-16-128, or AES-CBC-128 with HMAC-SHA2-256-128).
pub fn fragment_keys(which: u8) -> SkCrypto {
    let p = Provider::rustcrypto();
    if which & 1 == 0 {
        let encr = Encr {
            id: EncrId::AES_GCM_16,
            key_bits: 128,
        };
        SkCrypto::new(&p, encr, IntegId::NONE, &[0x11; 20], &[]).expect("AES-GCM keys")
    } else {
        let encr = Encr {
            id: EncrId::AES_CBC,
            key_bits: 128,
        };
        SkCrypto::new(
            &p,
            encr,
            IntegId::HMAC_SHA2_256_128,
            &[0x22; 16],
            &[0x33; 32],
        )
        .expect("AES-CBC keys")
    }
}

/// `cargo fuzz run ike_fragments`: byte 0 picks the keys, the rest is a
/// sequence of datagrams, each behind a 2-byte length. Each goes through
/// `SkCrypto::open_fragment` (RFC 7383 §2.5); those that verify go into
/// one `Reassembly` per direction (the header's R flag) keyed by their
/// message ID; a whole message's inner chain is parsed. Nothing may
/// panic, and what is held never passes the bounds.
pub fn ike_fragments(data: &[u8]) {
    reassembled(data);
}

/// [`ike_fragments`], saying how many messages came out whole.
pub fn reassembled(data: &[u8]) -> usize {
    let mut whole = 0;
    let Some((&which, mut rest)) = data.split_first() else {
        return 0;
    };
    let keys = fragment_keys(which);
    let mut slots: [Option<Reassembly>; 2] = [None, None];
    while rest.len() >= 2 {
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
        let end = (2 + len).min(rest.len());
        let datagram = &rest[2..end];
        rest = &rest[end..];
        let Ok(fragment) = keys.open_fragment(datagram) else {
            continue;
        };
        let Ok(header) = Header::parse(datagram) else {
            panic!("a fragment that opened has a header");
        };
        assert!(fragment.number >= 1 && fragment.number <= fragment.total);
        let slot = &mut slots[usize::from(header.response)];
        let digest = [0u8; 32];
        if let Added::Complete { first, inner, .. } =
            Reassembly::add(slot, header.message_id, fragment, digest)
        {
            assert!(inner.len() <= flowsec_ike::fragmentation::MAX_REASSEMBLED);
            if parse_payloads(first, &inner).is_ok() {
                whole += 1;
            }
        }
    }
    whole
}
