//! Known-answer tests for IKE's PRFs (RFC 7296 §3.3.2 transform type 2),
//! looked up by id in every provider (each carries the same list,
//! `backend::IKE_PRFS`).
//!
//! Sources:
//! - AES-XCBC-PRF-128: RFC 4434 §5 (its 16-byte-key cases are RFC 3566
//!   §4.6's, untruncated), including the 10- and 18-byte keys of §2's rule.
//! - AES-CMAC-PRF-128: RFC 4615 §4, and RFC 4493 §4 example 2.
//! - HMAC-SHA2-256/384/512: RFC 4231 test cases 1, 2 and 6 (a 131-byte
//!   key, longer than a block).
//! - HMAC-MD5, HMAC-SHA1: RFC 2202 test case 2.

mod common;
use common::*;
use flowsec_crypto::backend::IKE_PRFS;
use flowsec_crypto::{Prf, PrfId, Provider};

/// prf(key, data) with `id` from every provider; all must agree.
fn prf(id: PrfId, key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out: Option<Vec<u8>> = None;
    for (name, provider) in providers() {
        let p = provider
            .prf(id)
            .unwrap_or_else(|| panic!("{name} has no {id}"));
        let got = p.prf(key, &[data]).to_vec();
        assert_eq!(got.len(), p.output_len(), "{name} {id}");
        if let Some(o) = &out {
            assert_eq!(o, &got, "{name} {id}");
        }
        out = Some(got);
    }
    out.unwrap_or_default()
}

#[test]
fn aes_xcbc_prf_128_rfc4434() {
    let key16 = h("000102030405060708090a0b0c0d0e0f");
    let msg20 = h("000102030405060708090a0b0c0d0e0f10111213");
    let x = PrfId::AES128_XCBC;
    assert_eq!(
        prf(x, &key16, &msg20),
        h("47f51b4564966215b8985c63055ed308")
    );
    assert_eq!(prf(x, &key16, b""), h("75f0251d528ac01c4573dfd584d79f29"));
    assert_eq!(
        prf(x, &key16, &h("000102")),
        h("5b376580ae2f19afe7219ceef172756f")
    );
    assert_eq!(
        prf(x, &key16, &key16),
        h("d2a246fa349b68a79998a4394ff7a263")
    );
    let msg32 = h("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
    assert_eq!(
        prf(x, &key16, &msg32),
        h("f54f0ec8d2b9f3d36807734bd5283fd4")
    );
    // 10-byte key: padded with zeros.
    assert_eq!(
        prf(x, &h("00010203040506070809"), &msg20),
        h("0fa087af7d866e7653434e602fdde835")
    );
    // 18-byte key: reduced by XCBC under the zero key.
    assert_eq!(
        prf(x, &h("000102030405060708090a0b0c0d0e0fedcb"), &msg20),
        h("8cd3c93ae598a9803006ffb67c40e9e4")
    );
}

/// The PRF and the ESP/AH integrity transform are one AES-XCBC: the
/// 96-bit ICV is the PRF's output truncated (RFC 3566 §2.2, RFC 4434 §2).
#[test]
fn xcbc_prf_and_icv_are_one_mac() {
    let key: Vec<u8> = (0..16).collect();
    let provider = Provider::rustcrypto();
    let integ = provider
        .integrity(flowsec_crypto::IntegId::AES_XCBC_96, &key)
        .unwrap();
    let p = provider.prf(PrfId::AES128_XCBC).unwrap();
    for len in [0, 3, 16, 20, 32, 34, 1000] {
        let msg: Vec<u8> = (0..len).map(|i| i as u8).collect();
        let mut icv = [0u8; 12];
        integ.sign(&[&msg], &mut icv);
        assert_eq!(&p.prf(&key, &[&msg])[..12], &icv[..], "len {len}");
    }
}

#[test]
fn aes_cmac_prf_128_rfc4615() {
    let msg20 = h("000102030405060708090a0b0c0d0e0f10111213");
    let c = PrfId::AES128_CMAC;
    assert_eq!(
        prf(c, &h("000102030405060708090a0b0c0d0e0fedcb"), &msg20),
        h("84a348a4a45d235babfffc0d2b4da09a")
    );
    assert_eq!(
        prf(c, &h("000102030405060708090a0b0c0d0e0f"), &msg20),
        h("980ae87b5f4c9c5214f5b6a8455e4c2d")
    );
    assert_eq!(
        prf(c, &h("00010203040506070809"), &msg20),
        h("290d9e112edb09ee141fcf64c0b72f3d")
    );
    // RFC 4493 §4 example 2 (16-byte key, 16-byte message).
    assert_eq!(
        prf(
            c,
            &h("2b7e151628aed2a6abf7158809cf4f3c"),
            &h("6bc1bee22e409f96e93d7e117393172a")
        ),
        h("070a16b46b4d4144f79bdd9dd04a287c")
    );
}

#[test]
fn hmac_sha2_rfc4231() {
    let key1 = [0x0b; 20];
    let data1 = b"Hi There";
    assert_eq!(
        prf(PrfId::HMAC_SHA2_256, &key1, data1),
        h("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
    );
    assert_eq!(
        prf(PrfId::HMAC_SHA2_384, &key1, data1),
        h(
            "afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59c
           faea9ea9076ede7f4af152e8b2fa9cb6"
        )
    );
    assert_eq!(
        prf(PrfId::HMAC_SHA2_512, &key1, data1),
        h(
            "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cde
           daa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854"
        )
    );
    let data2 = b"what do ya want for nothing?";
    assert_eq!(
        prf(PrfId::HMAC_SHA2_256, b"Jefe", data2),
        h("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    );
    let key6 = [0xaa; 131];
    let data6 = b"Test Using Larger Than Block-Size Key - Hash Key First";
    assert_eq!(
        prf(PrfId::HMAC_SHA2_256, &key6, data6),
        h("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    );
    assert_eq!(
        prf(PrfId::HMAC_SHA2_512, &key6, data6),
        h(
            "80b24263c7c1a3ebb71493c1dd7be8b49b46d1f41b4aeec1121b013783f8f352
           6b56d037e05f2598bd0fd2215d6a1e5295e64f73f63f0aec8b915a985d786598"
        )
    );
}

#[test]
fn hmac_md5_sha1_rfc2202() {
    let data = b"what do ya want for nothing?";
    assert_eq!(
        prf(PrfId::HMAC_MD5, b"Jefe", data),
        h("750c783e6ab0b503eaa86e310a5db738")
    );
    assert_eq!(
        prf(PrfId::HMAC_SHA1, b"Jefe", data),
        h("effcdf6ae5eb2fa2d27416d5f184df9c259a7c79")
    );
}

/// Splitting the input into parts gives the PRF of the concatenation, for
/// every PRF (prf+ and AUTH pass several parts).
#[test]
fn parts_are_concatenated() {
    let msg: Vec<u8> = (0..50).collect();
    for p in IKE_PRFS {
        let whole = p.prf(b"key", &[&msg]);
        for cut in [0, 1, 15, 16, 17, 32, 49, 50] {
            assert_eq!(p.prf(b"key", &[&msg[..cut], &msg[cut..]]), whole, "{p:?}");
        }
    }
}

/// Every PRF flowsec supported before the Provider had them, with its
/// output and preferred key length (RFC 7296 §2.13); unknown ids are
/// `None`; `with_prfs` restricts the list.
#[test]
fn supported_list_and_lengths() {
    let want = [
        (PrfId::HMAC_MD5, 16),
        (PrfId::HMAC_SHA1, 20),
        (PrfId::AES128_XCBC, 16),
        (PrfId::HMAC_SHA2_256, 32),
        (PrfId::HMAC_SHA2_384, 48),
        (PrfId::HMAC_SHA2_512, 64),
        (PrfId::AES128_CMAC, 16),
    ];
    for (name, provider) in providers() {
        assert_eq!(
            provider.prf_ids(),
            want.iter().map(|w| w.0).collect::<Vec<_>>(),
            "{name}"
        );
        for (id, len) in want {
            let p = provider.prf(id).unwrap();
            assert_eq!(
                (p.id(), p.output_len(), p.preferred_key_len()),
                (id, len, len)
            );
        }
        // PRF_HMAC_TIGER (3) and an unassigned id.
        assert!(provider.prf(PrfId(3)).is_none());
        assert!(provider.prf(PrfId(99)).is_none());
    }
    let only: Vec<&'static dyn Prf> = IKE_PRFS
        .iter()
        .copied()
        .filter(|p| p.id() == PrfId::HMAC_SHA2_256)
        .collect();
    let p = Provider::fastest().with_prfs(only);
    assert_eq!(p.prf_ids(), vec![PrfId::HMAC_SHA2_256]);
    assert!(p.prf(PrfId::HMAC_SHA1).is_none());
    assert!(format!("{p:?}").contains("PRF_HMAC_SHA2_256"));
}
