//! Known-answer tests for EAP-MSCHAPv2's primitives (MD4 and the DES
//! ChallengeResponse), from every provider.
//!
//! Sources:
//! - MD4: RFC 1320 Appendix A.5's test suite.
//! - NtPasswordHash, PasswordHashHash, ChallengeResponse: RFC 2759 §9.2
//!   (user "User", password "clientPass").

mod common;
use common::*;
use flowsec_crypto::{MsChapV2, Provider};

fn each() -> Vec<(&'static str, &'static dyn MsChapV2)> {
    providers()
        .into_iter()
        .map(|(name, p)| (name, p.mschapv2().expect("every provider has MS-CHAPv2")))
        .collect()
}

#[test]
fn md4_rfc1320() {
    let cases: [(&[u8], &str); 7] = [
        (b"", "31d6cfe0d16ae931b73c59d7e0c089c0"),
        (b"a", "bde52cb31de33e46245e05fbdbd6fb24"),
        (b"abc", "a448017aaf21d8525fc10ae87aa6729d"),
        (b"message digest", "d9130a8164549fe818874806e1c7014b"),
        (
            b"abcdefghijklmnopqrstuvwxyz",
            "d79e1c308aa5bbcdeea8ed63df412da9",
        ),
        (
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
            "043f8582f241db351ce627e153e7f0e4",
        ),
        (
            b"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
            "e33b4ddc9c38f2199c3e7b164fcc0536",
        ),
    ];
    for (name, m) in each() {
        for (data, want) in cases {
            assert_eq!(&m.md4(data)[..], &h(want)[..], "{name}");
        }
    }
}

#[test]
fn rfc2759_nt_hash_and_challenge_response() {
    let password: Vec<u8> = "clientPass"
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    for (name, m) in each() {
        let hash = m.md4(&password);
        assert_eq!(
            &hash[..],
            &h("44EBBA8D5312B8D611474411F56989AE")[..],
            "{name}"
        );
        assert_eq!(
            &m.md4(&hash[..])[..],
            &h("41C00C584BD2D91C4017A2A12FA59F3F")[..],
            "{name}: PasswordHashHash"
        );
        let challenge_hash: [u8; 8] = h("D02E4386BCE91226").try_into().unwrap();
        assert_eq!(
            &m.challenge_response(&challenge_hash, &hash)[..],
            &h("82309ECD8D708B5EA08FAA3981CD83544233114A3D85D6DF")[..],
            "{name}"
        );
    }
}

/// A password hash ending in two zero octets makes the third DES key the
/// all-zero weak key (0x0101010101010101 with parity), which aws-lc
/// refuses: it must work, and a weak key is its own inverse.
#[test]
fn the_weak_third_key_is_taken() {
    let mut hash = [0x5au8; 16];
    hash[14..].fill(0);
    for (name, m) in each() {
        let c = *b"chalenge";
        let once = m.challenge_response(&c, &hash);
        let third: [u8; 8] = once[16..].try_into().unwrap();
        let twice = m.challenge_response(&third, &hash);
        assert_eq!(twice[16..], c, "{name}");
    }
}

#[test]
fn a_provider_may_have_none() {
    assert!(Provider::fastest().with_mschapv2(None).mschapv2().is_none());
}
