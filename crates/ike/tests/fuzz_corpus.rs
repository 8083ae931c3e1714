//! The IKE fuzz targets (fuzz/common_ike.rs) on stable Rust: every file
//! of the committed seeds and corpus goes through the function libFuzzer
//! calls, so a crash once found and committed stays a regression test.
//!
//! The seeds under fuzz/seeds/ike_fragments/ are written by the ignored
//! test `generate_ike_fragment_seeds` (`cargo test -p flowsec-ike --test
//! fuzz_corpus -- --ignored`): whole messages cut into fragments and
//! sealed with the target's keys, so that mutations start past the ICV.

use std::fs;

use flowsec_ike::random::SeededRandom;
use flowsec_wire::iana::{ExchangeType, PayloadType};
use flowsec_wire::ike::Header;

mod corpus;

#[path = "../../../fuzz/common_ike.rs"]
mod common_ike;

#[test]
fn seeds_and_corpus_replay_without_panic() {
    corpus::replay("ike_fragments", 1, common_ike::ike_fragments);
}

/// One message of `len` inner bytes cut into fragments of `piece` bytes,
/// sealed with keys `which`, as the target's input (2-byte lengths).
fn seed(which: u8, len: usize, piece: usize, order: &[usize]) -> Vec<u8> {
    let keys = common_ike::fragment_keys(which);
    let header = Header {
        spi_i: 1,
        spi_r: 2,
        next_payload: PayloadType::SKF,
        major_version: 2,
        minor_version: 0,
        exchange: ExchangeType::IKE_AUTH,
        initiator: true,
        response: false,
        message_id: 1,
        length: 0,
    };
    // A chain of one Vendor ID payload holding the rest (a valid inner chain).
    let mut inner = vec![0u8, 0, 0, 0];
    inner.extend(std::iter::repeat_n(0x5a, len - 4));
    let l = (len as u16).to_be_bytes();
    inner[2..4].copy_from_slice(&l);
    let chunks: Vec<&[u8]> = inner.chunks(piece).collect();
    let total = chunks.len() as u16;
    let mut rng = SeededRandom::new(7);
    let frags: Vec<Vec<u8>> = chunks
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let first = if i == 0 {
                PayloadType::VENDOR
            } else {
                PayloadType::NONE
            };
            keys.seal_fragment(&header, first, (i as u16 + 1, total), c, &mut rng)
        })
        .collect();
    let mut out = vec![which];
    for &i in order {
        let f = &frags[i % frags.len()];
        out.extend((f.len() as u16).to_be_bytes());
        out.extend(f);
    }
    out
}

/// The valid seeds open: each input reassembles into its message.
#[test]
fn valid_seeds_reassemble() {
    for which in [0u8, 1] {
        let input = seed(which, 300, 100, &[2, 0, 1]);
        assert_eq!(common_ike::reassembled(&input), 1);
        assert_eq!(common_ike::reassembled(&seed(which, 300, 100, &[2, 0])), 0);
        let keys = common_ike::fragment_keys(which);
        let first = &input[3..3 + usize::from(u16::from_be_bytes([input[1], input[2]]))];
        let f = keys.open_fragment(first).expect("a seed fragment opens");
        assert_eq!((f.number, f.total), (3, 3));
    }
}

#[test]
#[ignore = "writes fuzz/seeds/ike_fragments (run by hand)"]
fn generate_ike_fragment_seeds() {
    let dir = corpus::dir("ike_fragments", "seeds");
    fs::create_dir_all(&dir).unwrap();
    let cases: [(&str, u8, usize, usize, &[usize]); 6] = [
        ("valid-gcm-3-in-order", 0, 300, 100, &[0, 1, 2]),
        ("valid-gcm-3-reversed-dup", 0, 300, 100, &[2, 1, 1, 0]),
        ("valid-cbc-3-in-order", 1, 300, 100, &[0, 1, 2]),
        ("valid-cbc-5-mixed", 1, 480, 100, &[4, 0, 3, 1, 2]),
        ("valid-gcm-1", 0, 60, 100, &[0]),
        ("partial-gcm", 0, 300, 100, &[0, 2]),
    ];
    for (name, which, len, piece, order) in cases {
        fs::write(dir.join(name), seed(which, len, piece, order)).unwrap();
    }
}
