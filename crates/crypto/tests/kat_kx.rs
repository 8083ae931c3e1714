//! Known-answer tests for IKE's key exchange groups (RFC 7296 §3.3.2
//! transform type 4), looked up by id in every provider (each carries the
//! same list, `backend::IKE_KEY_EXCHANGES`), with the peer value checks of
//! RFC 7296 §3.4, RFC 6989 and RFC 7748 §6.1. (The MODP range check and
//! the prime constants are tested beside the code, in
//! `backend/rustcrypto/modp.rs`.)
//!
//! Sources: RFC 5903 §8 (ECP-256/384/521), RFC 7748 §6.1 (X25519), and
//! MODP-1024 against Python's `pow`.

mod common;
use common::*;
use flowsec_crypto::random::{Random, SeededRandom};
use flowsec_crypto::{CryptoError, DhGroup, KeyExchange, KeyExchangeGroup, Provider};

/// `group` from the provider that every named one extends; every provider
/// has the same implementation (checked in `every_provider_has_every_group`).
fn kx(group: DhGroup) -> &'static dyn KeyExchangeGroup {
    Provider::fastest()
        .key_exchange(group)
        .unwrap_or_else(|| panic!("no {group}"))
}

fn start(group: DhGroup, rng: &mut dyn Random) -> Result<Box<dyn KeyExchange>, CryptoError> {
    kx(group).start(rng)
}

/// A `Random` that hands out fixed bytes (a test vector's private value).
struct Fixed(Vec<u8>);
impl Random for Fixed {
    fn fill(&mut self, buf: &mut [u8]) {
        assert!(buf.len() <= self.0.len(), "Fixed ran out of bytes");
        let rest = self.0.split_off(buf.len());
        buf.copy_from_slice(&self.0);
        self.0 = rest;
    }
}

/// The ML-KEM parameter sets (FIPS 203), after the groups in every
/// provider; their tests are in the aws-lc backend's `mlkem.rs`.
const KEMS: [DhGroup; 3] = [
    DhGroup::ML_KEM_512,
    DhGroup::ML_KEM_768,
    DhGroup::ML_KEM_1024,
];

const ALL: [DhGroup; 12] = [
    DhGroup::MODP_768,
    DhGroup::MODP_1024,
    DhGroup::MODP_1536,
    DhGroup::MODP_2048,
    DhGroup::MODP_3072,
    DhGroup::MODP_4096,
    DhGroup::MODP_6144,
    DhGroup::MODP_8192,
    DhGroup::ECP_256,
    DhGroup::ECP_384,
    DhGroup::ECP_521,
    DhGroup::CURVE25519,
];

/// RFC 5903 §8: i and r are the two private values; g^i = (gix, giy),
/// g^r = (grx, gry), and both sides compute girx.
fn rfc5903(group: DhGroup, i: &str, gi: &str, r: &str, gr: &str, girx: &str) {
    let a = start(group, &mut Fixed(h(i))).unwrap();
    let b = start(group, &mut Fixed(h(r))).unwrap();
    assert_eq!(a.public_value(), &h(gi)[..]);
    assert_eq!(b.public_value(), &h(gr)[..]);
    assert_eq!(&a.shared_secret(&h(gr)).unwrap()[..], &h(girx)[..]);
    assert_eq!(&b.shared_secret(&h(gi)).unwrap()[..], &h(girx)[..]);
    assert_eq!(kx(group).public_value_len(), h(gi).len());
}

#[test]
fn ecp_256_rfc5903() {
    rfc5903(
        DhGroup::ECP_256,
        "C88F01F510D9AC3F70A292DAA2316DE544E9AAB8AFE84049C62A9C57862D1433",
        "DAD0B65394221CF9B051E1FECA5787D098DFE637FC90B9EF945D0C3772581180
         5271A0461CDB8252D61F1C456FA3E59AB1F45B33ACCF5F58389E0577B8990BB3",
        "C6EF9C5D78AE012A011164ACB397CE2088685D8F06BF9BE0B283AB46476BEE53",
        "D12DFB5289C8D4F81208B70270398C342296970A0BCCB74C736FC7554494BF63
         56FBF3CA366CC23E8157854C13C58D6AAC23F046ADA30F8353E74F33039872AB",
        "D6840F6B42F6EDAFD13116E0E12565202FEF8E9ECE7DCE03812464D04B9442DE",
    );
}

#[test]
fn ecp_384_rfc5903() {
    rfc5903(
        DhGroup::ECP_384,
        "099F3C7034D4A2C699884D73A375A67F7624EF7C6B3C0F160647B67414DCE655
         E35B538041E649EE3FAEF896783AB194",
        "667842D7D180AC2CDE6F74F37551F55755C7645C20EF73E31634FE72B4C55EE6
         DE3AC808ACB4BDB4C88732AEE95F41AA9482ED1FC0EEB9CAFC4984625CCFC23F
         65032149E0E144ADA024181535A0F38EEB9FCFF3C2C947DAE69B4C634573A81C",
        "41CB0779B4BDB85D47846725FBEC3C9430FAB46CC8DC5060855CC9BDA0AA2942
         E0308312916B8ED2960E4BD55A7448FC",
        "E558DBEF53EECDE3D3FCCFC1AEA08A89A987475D12FD950D83CFA41732BC509D
         0D1AC43A0336DEF96FDA41D0774A3571DCFBEC7AACF3196472169E838430367F
         66EEBE3C6E70C416DD5F0C68759DD1FFF83FA40142209DFF5EAAD96DB9E6386C",
        "11187331C279962D93D604243FD592CB9D0A926F422E47187521287E7156C5C4
         D603135569B9E9D09CF5D4A270F59746",
    );
}

#[test]
fn ecp_521_rfc5903() {
    rfc5903(
        DhGroup::ECP_521,
        "0037ADE9319A89F4DABDB3EF411AACCCA5123C61ACAB57B5393DCE47608172A0
         95AA85A30FE1C2952C6771D937BA9777F5957B2639BAB072462F68C27A57382D
         4A52",
        "0015417E84DBF28C0AD3C278713349DC7DF153C897A1891BD98BAB4357C9ECBE
         E1E3BF42E00B8E380AEAE57C2D107564941885942AF5A7F4601723C4195D176C
         ED3E017CAE20B6641D2EEB695786D8C946146239D099E18E1D5A514C739D7CB4
         A10AD8A788015AC405D7799DC75E7B7D5B6CF2261A6A7F1507438BF01BEB6CA3
         926F9582",
        "0145BA99A847AF43793FDD0E872E7CDFA16BE30FDC780F97BCCC3F078380201E
         9C677D600B343757A3BDBF2A3163E4C2F869CCA7458AA4A4EFFC311F5CB15168
         5EB9",
        "00D0B3975AC4B799F5BEA16D5E13E9AF971D5E9B984C9F39728B5E5739735A21
         9B97C356436ADC6E95BB0352F6BE64A6C2912D4EF2D0433CED2B6171640012D9
         460F015C68226383956E3BD066E797B623C27CE0EAC2F551A10C2C724D985207
         7B87220B6536C5C408A1D2AEBB8E86D678AE49CB57091F4732296579AB44FCD1
         7F0FC56A",
        "01144C7D79AE6956BC8EDB8E7C787C4521CB086FA64407F97894E5E6B2D79B04
         D1427E73CA4BAA240A34786859810C06B3C715A3A8CC3151F2BEE417996D19F3
         DDEA",
    );
}

/// RFC 7748 §6.1.
#[test]
fn x25519_rfc7748() {
    rfc5903(
        DhGroup::CURVE25519,
        "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
        "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a",
        "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb",
        "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f",
        "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742",
    );
}

/// Every group: two parties with seeded generators agree, values have
/// the advertised lengths, and different seeds give different values.
#[test]
fn every_group_agrees() {
    for group in ALL {
        let a = start(group, &mut SeededRandom::new(1)).unwrap();
        let b = start(group, &mut SeededRandom::new(2)).unwrap();
        assert_eq!(a.group(), group);
        let len = kx(group).public_value_len();
        assert_eq!(a.public_value().len(), len, "{group}");
        assert_ne!(a.public_value(), b.public_value(), "{group}");
        let s1 = a.shared_secret(b.public_value()).unwrap();
        let s2 = b.shared_secret(a.public_value()).unwrap();
        assert_eq!(s1, s2, "{group}");
        let secret_len = match group {
            DhGroup::ECP_256 | DhGroup::ECP_384 | DhGroup::ECP_521 => len / 2,
            _ => len,
        };
        assert_eq!(s1.len(), secret_len, "{group}");
        // Same seed, same key: tests can replay an exchange.
        let again = start(group, &mut SeededRandom::new(1)).unwrap();
        assert_eq!(again.public_value(), a.public_value(), "{group}");
    }
}

/// MODP-1024 against Python's `pow`: x is 0x81 02 03 .. 20 (the Fixed
/// bytes 01..20 with the exponent's top bit set), and
/// `format(pow(2, x, p), '0256x')`, `format(pow(3, x, p), '0256x')`.
#[test]
fn modp_1024_matches_python() {
    let a = start(DhGroup::MODP_1024, &mut Fixed((1..=32).collect())).unwrap();
    assert_eq!(
        a.public_value(),
        &h(
            "76839f09c0905bcc31db54d185a29d7d0c3178a14ef77a56bf9bdeeb796b764f
            f336504c71b8f8482870e60c66d7e67db87fc5d38be9502a355250a342bcc5a2
            06d08ef3ac68111704b155767e5fdae11864378780ac427c58b1f62f35695972
            56bf23cb7482d1859677e4641aa2371676cbca1f33a9144d5efe82341f719944"
        )[..]
    );
    let mut three = vec![0u8; 128];
    three[127] = 3;
    assert_eq!(
        &a.shared_secret(&three).unwrap()[..],
        &h(
            "ca4b135170a001986d973734ae9e18ff8ed4b0a91e213fb9f81de20ad5f47e96
            b8d033a307860568ae9c11b4aafe334cc2deb59cc66651a17c46b895852c036f
            0ebb20a98ab8e335dab1e43f1f8b8f81b3b11c3fac560d919f58d68ff36db1ca
            261def43c936459a35f3e1f50e43bdb07f7ca9727e66fb34613a109c72f54883"
        )[..]
    );
}

#[test]
fn ecp_rejects_bad_public_values() {
    for group in [DhGroup::ECP_256, DhGroup::ECP_384, DhGroup::ECP_521] {
        let a = start(group, &mut SeededRandom::new(3)).unwrap();
        let b = start(group, &mut SeededRandom::new(4)).unwrap();
        let good = b.public_value().to_vec();
        // Not on the curve.
        let mut off = good.clone();
        let last = off.len() - 1;
        off[last] ^= 1;
        assert_eq!(
            a.shared_secret(&off),
            Err(CryptoError::BadPublicValue),
            "{group}"
        );
        // With the SEC1 prefix (RFC 5903 §7 has none), truncated, empty,
        // the point at infinity's zeros.
        let mut prefixed = vec![0x04];
        prefixed.extend_from_slice(&good);
        assert_eq!(a.shared_secret(&prefixed), Err(CryptoError::BadPublicValue));
        assert_eq!(
            a.shared_secret(&good[1..]),
            Err(CryptoError::BadPublicValue)
        );
        assert_eq!(a.shared_secret(&[]), Err(CryptoError::BadPublicValue));
        assert_eq!(
            a.shared_secret(&vec![0; good.len()]),
            Err(CryptoError::BadPublicValue)
        );
    }
}

/// RFC 7748 §6.1: a small-order point gives the all-zero output, which
/// is refused; wrong lengths are refused.
#[test]
fn x25519_rejects_low_order_and_bad_lengths() {
    let a = start(DhGroup::CURVE25519, &mut SeededRandom::new(5)).unwrap();
    let mut one = [0u8; 32];
    one[0] = 1; // u = 1 has order 4 (RFC 7748 §6.1 / libsodium's blocklist)
    for low_order in [[0u8; 32], one] {
        assert_eq!(
            a.shared_secret(&low_order),
            Err(CryptoError::BadPublicValue)
        );
    }
    assert_eq!(a.shared_secret(&[9; 31]), Err(CryptoError::BadPublicValue));
    assert_eq!(a.shared_secret(&[9; 33]), Err(CryptoError::BadPublicValue));
}

#[test]
fn unsupported_groups() {
    for (name, provider) in providers() {
        for g in [DhGroup::NONE, DhGroup(22), DhGroup(32)] {
            assert!(provider.key_exchange(g).is_none(), "{name} {g}");
        }
    }
}

/// A generator that only ever yields out-of-range scalars is reported,
/// not looped on forever.
#[test]
fn broken_random_is_reported() {
    struct Ones;
    impl Random for Ones {
        fn fill(&mut self, buf: &mut [u8]) {
            buf.fill(0xff);
        }
    }
    assert!(matches!(
        start(DhGroup::ECP_256, &mut Ones),
        Err(CryptoError::KeyGenFailed(DhGroup::ECP_256))
    ));
}

/// Every group flowsec supported before the Provider had them is in every
/// provider, in this order, then ML-KEM; `with_key_exchanges` restricts
/// the list.
#[test]
fn every_provider_has_every_group() {
    for (name, provider) in providers() {
        let every: Vec<DhGroup> = ALL.iter().chain(&KEMS).copied().collect();
        assert_eq!(provider.key_exchange_ids(), every, "{name}");
        for g in every {
            assert_eq!(provider.key_exchange(g).unwrap().group(), g, "{name}");
        }
    }
    let p = Provider::rustcrypto().with_key_exchanges(vec![kx(DhGroup::CURVE25519)]);
    assert_eq!(p.key_exchange_ids(), vec![DhGroup::CURVE25519]);
    assert!(p.key_exchange(DhGroup::MODP_2048).is_none());
}

/// The responder's one step (`respond`) agrees with the initiator's
/// `start` and `shared_secret`, for the groups and for ML-KEM (whose
/// responder sends a ciphertext, not a key of its own).
#[test]
fn the_responder_answers_every_method() {
    for group in ALL.iter().chain(&KEMS).copied() {
        let initiator = start(group, &mut SeededRandom::new(1)).unwrap();
        let (responder, theirs) = kx(group)
            .respond(&mut SeededRandom::new(2), initiator.public_value())
            .unwrap();
        let ours = initiator.shared_secret(responder.public_value()).unwrap();
        assert_eq!(ours, theirs, "{group}");
        assert!(
            kx(group)
                .respond(&mut SeededRandom::new(3), &initiator.public_value()[1..])
                .is_err(),
            "{group}: a value one byte short"
        );
    }
}
