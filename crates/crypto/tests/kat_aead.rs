//! Known-answer and negative tests for the ESP AEADs (AES-GCM, AES-GMAC,
//! AES-CCM, ChaCha20-Poly1305), run against every backend that implements
//! each algorithm. The vectors and their sources are in `vectors/aead.rs`.
//!
//! Each backend is tried alone (`Provider::aws_lc()`, `Provider::rustcrypto()`);
//! a backend that lacks an algorithm answers `UnsupportedEncr` and is
//! skipped, but RustCrypto must implement every one.

#[path = "vectors/aead.rs"]
mod vectors;

mod common;
use common::*;
use flowsec_crypto::{Aead, CryptoError, EncrId, EspTransform, IntegId, Provider};
use vectors::{AeadCase, GcmEspCase};

const ALL_AEADS: [EncrId; 7] = [
    EncrId::AES_GCM_8,
    EncrId::AES_GCM_12,
    EncrId::AES_GCM_16,
    EncrId::AES_CCM_8,
    EncrId::AES_CCM_12,
    EncrId::AES_CCM_16,
    EncrId::CHACHA20_POLY1305,
];

fn iv8(s: &str) -> [u8; 8] {
    h(s).try_into().unwrap()
}

/// Every backend's AEAD for `id`, labelled; RustCrypto must have it.
fn aeads(id: EncrId, key: &[u8]) -> Vec<(&'static str, Box<dyn Aead>)> {
    from_each(id, |p| p.aead(id, key))
}

/// Every backend's ESP transform for AEAD (or GMAC) `id`, labelled.
fn esps(id: EncrId, key: &[u8]) -> Vec<(&'static str, Box<dyn EspTransform>)> {
    from_each(id, |p| p.esp(id, key, IntegId::NONE, &[]))
}

/// Seal and open `case` at the `Aead` level, with its tag cut to `tag_len`.
fn check_aead(case: &AeadCase, id: EncrId, tag_len: usize) -> usize {
    let key = h(case.key_salt);
    let (iv, aad) = (iv8(case.iv), h(case.aad));
    let (plaintext, ciphertext) = (h(case.plaintext), h(case.ciphertext));
    let tag = &h(case.tag)[..tag_len];
    let found = aeads(id, &key);
    for (backend, aead) in &found {
        let what = format!("{} ({id}) on {backend}", case.source);
        assert_eq!(aead.tag_len(), tag_len, "{what}");

        let mut data = plaintext.clone();
        let mut out_tag = vec![0u8; tag_len];
        aead.seal(&iv, &aad, &mut data, &mut out_tag);
        assert_eq!(hex::encode(&data), hex::encode(&ciphertext), "{what}: seal");
        assert_eq!(hex::encode(&out_tag), hex::encode(tag), "{what}: tag");

        aead.open(&iv, &aad, &mut data, tag)
            .unwrap_or_else(|e| panic!("{what}: open: {e}"));
        assert_eq!(data, plaintext, "{what}: open");
    }
    found.len()
}

fn gcm_aead_case(case: &GcmEspCase) -> AeadCase {
    let ct_tag = case.ct_tag;
    let split = ct_tag.len() - 32;
    AeadCase {
        source: case.source,
        id: EncrId::AES_GCM_16,
        key_salt: case.key_salt,
        iv: case.iv,
        aad: case.aad,
        plaintext: case.plaintext,
        ciphertext: &ct_tag[..split],
        tag: &ct_tag[split..],
    }
}

/// The GCM ids with their ICV lengths (RFC 4106 §6).
const GCM_IDS: [(EncrId, usize); 3] = [
    (EncrId::AES_GCM_8, 8),
    (EncrId::AES_GCM_12, 12),
    (EncrId::AES_GCM_16, 16),
];

/// A key of the shortest length `id` accepts.
fn shortest_key(id: EncrId) -> Vec<u8> {
    let len = match id {
        EncrId::AES_CCM_8 | EncrId::AES_CCM_12 | EncrId::AES_CCM_16 => 16 + 3,
        EncrId::CHACHA20_POLY1305 => 32 + 4,
        _ => 16 + 4,
    };
    vec![7; len]
}

#[test]
fn rustcrypto_implements_every_esp_aead() {
    let rc = Provider::rustcrypto();
    for id in ALL_AEADS {
        if let Err(e) = rc.aead(id, &shortest_key(id)) {
            panic!("{id}: {e}");
        }
    }
    let gmac = rc.esp(EncrId::NULL_AUTH_AES_GMAC, &[7; 20], IntegId::NONE, &[]);
    assert!(gmac.is_ok());
}

/// aws-lc has exactly AES-GCM-16 and ChaCha20-Poly1305; the fastest
/// provider takes those from it and the rest from RustCrypto.
#[test]
fn backend_coverage() {
    let aws = Provider::aws_lc();
    let fastest = Provider::fastest();
    for id in ALL_AEADS {
        let key = &shortest_key(id);
        let on_aws = matches!(id, EncrId::AES_GCM_16 | EncrId::CHACHA20_POLY1305);
        assert_eq!(aws.aead(id, key).is_ok(), on_aws, "{id}");
        let expected = if on_aws { "aws-lc" } else { "rustcrypto" };
        assert_eq!(fastest.encr_backend(id, key), Some(expected), "{id}");
    }
    for key_len in [20, 28, 36] {
        assert!(aws.aead(EncrId::AES_GCM_16, &vec![7; key_len]).is_ok());
    }
}

/// draft-mcgrew-gcm-test-01 at the AEAD level, with the full tag and with
/// the 8- and 12-byte prefixes that AES-GCM-8/12 send (RFC 4106 §6).
#[test]
fn gcm_draft_mcgrew_aead() {
    for case in vectors::GCM_DRAFT {
        let aead_case = gcm_aead_case(case);
        for (id, tag_len) in GCM_IDS {
            let n = check_aead(&aead_case, id, tag_len);
            let expected = if id == EncrId::AES_GCM_16 { 2 } else { 1 };
            assert_eq!(n, expected, "{} {id}: backends run", case.source);
        }
    }
}

/// draft-mcgrew-gcm-test-01's whole packets opened through `EspTransform`,
/// which reads the IV from the packet and builds the AAD from SPI and
/// sequence number (with ESN where the case has one). The draft's IVs are
/// not the sequence number, so `seal` is covered by `esp_seal_generated`.
/// Cut to an 8- or 12-byte ICV each packet is a valid AES-GCM-8/12 packet.
#[test]
fn gcm_draft_mcgrew_esp_open() {
    for case in vectors::GCM_DRAFT {
        let key = h(case.key_salt);
        let full = h(case.packet);
        for (id, icv_len) in GCM_IDS {
            let packet = &full[..full.len() - (16 - icv_len)];
            for (backend, esp) in esps(id, &key) {
                let what = format!("{} ({id}) on {backend}", case.source);
                assert_eq!(esp.icv_len(), icv_len, "{what}");
                let mut p = packet.to_vec();
                esp.open(case.seq, case.esn, &mut p)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(
                    hex::encode(&p[16..p.len() - icv_len]),
                    case.plaintext,
                    "{what}"
                );

                // The same packet received with another sequence number
                // (the ESN high half is never sent) fails.
                let mut p = packet.to_vec();
                let other = case.seq ^ (1 << 32) ^ 1;
                assert_eq!(
                    esp.open(other, true, &mut p),
                    Err(CryptoError::AuthFailed),
                    "{what}"
                );
            }
        }
    }
}

/// draft-mcgrew-gcm-test-01 #15, AES-GMAC: at the AEAD level (empty
/// plaintext, everything AAD) and as an ESP packet through `GmacEsp`.
#[test]
fn gmac_draft_mcgrew() {
    let case = &vectors::GMAC_DRAFT;
    assert_eq!(check_aead(&gcm_aead_case(case), EncrId::AES_GCM_16, 16), 2);

    let key = h(case.key_salt);
    let esp_list = esps(EncrId::NULL_AUTH_AES_GMAC, &key);
    assert_eq!(esp_list.len(), 2);
    for (backend, esp) in esp_list {
        assert!(!esp.encrypts());
        let mut p = h(case.packet);
        esp.open(case.seq, case.esn, &mut p)
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        assert_eq!(
            p,
            h(case.packet),
            "{backend}: GMAC must not change the packet"
        );

        // Every byte from the SPI to the next header is authenticated,
        // the IV included (RFC 4543 §3.3).
        for at in [0, 5, 8, 15, 16, p.len() - 17, p.len() - 1] {
            let mut p = h(case.packet);
            p[at] ^= 0x80;
            assert_eq!(
                esp.open(case.seq, case.esn, &mut p),
                Err(CryptoError::AuthFailed),
                "{backend}: flipped byte {at}"
            );
        }
    }
}

/// RFC 7634 Appendix A: the ESP packet opened through `EspTransform`, and the
/// AEAD operation itself.
#[test]
fn chacha20_poly1305_rfc7634() {
    let case = &vectors::CHACHA_RFC7634;
    assert_eq!(check_aead(case, case.id, 16), 2);

    let mut packet = h(vectors::CHACHA_RFC7634_SPI);
    packet.extend((vectors::CHACHA_RFC7634_SEQ as u32).to_be_bytes());
    packet.extend(h(case.iv));
    packet.extend(h(case.ciphertext));
    packet.extend(h(case.tag));
    let key = h(case.key_salt);
    let esp_list = esps(case.id, &key);
    assert_eq!(esp_list.len(), 2);
    for (backend, esp) in esp_list {
        let mut p = packet.clone();
        esp.open(vectors::CHACHA_RFC7634_SEQ, false, &mut p)
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        assert_eq!(
            hex::encode(&p[16..p.len() - 16]),
            case.plaintext,
            "{backend}"
        );
    }
}

#[test]
fn chacha20_poly1305_rfc8439() {
    let case = &vectors::CHACHA_RFC8439;
    assert_eq!(check_aead(case, case.id, 16), 2);
}

#[test]
fn ccm_generated() {
    for case in vectors::CCM_GENERATED {
        let tag_len = case.tag.len() / 2;
        assert_eq!(check_aead(case, case.id, tag_len), 1, "{}", case.source);
    }
}

/// Whole packets sealed through `EspTransform` (IV = sequence number) match
/// an independent implementation byte for byte, and open again.
#[test]
fn esp_seal_generated() {
    let payload = h(vectors::ESP_PAYLOAD);
    for case in vectors::ESP_SEAL_GENERATED {
        let expected = h(case.packet);
        let found = esps(case.id, &h(case.key_salt));
        assert!(!found.is_empty());
        for (backend, esp) in found {
            let what = format!("{} on {backend}", case.source);
            assert_eq!(esp.iv_len(), 8, "{what}");
            let mut p = vec![0u8; 16 + payload.len() + esp.icv_len()];
            p[..8].copy_from_slice(&expected[..8]);
            p[16..16 + payload.len()].copy_from_slice(&payload);
            esp.seal(case.seq, case.esn, &mut p).unwrap();
            assert_eq!(hex::encode(&p), case.packet, "{what}: seal");

            esp.open(case.seq, case.esn, &mut p)
                .unwrap_or_else(|e| panic!("{what}: open: {e}"));
            assert_eq!(&p[16..16 + payload.len()], &payload[..], "{what}: open");
        }
    }
}

/// One working key per algorithm, for the negative tests.
fn sample_keys() -> Vec<(EncrId, Vec<u8>)> {
    let mut keys = Vec::new();
    for id in [EncrId::AES_GCM_8, EncrId::AES_GCM_12, EncrId::AES_GCM_16] {
        for len in [20, 28, 36] {
            keys.push((id, (0..len as u8).collect()));
        }
    }
    for id in [EncrId::AES_CCM_8, EncrId::AES_CCM_12, EncrId::AES_CCM_16] {
        for len in [19, 27, 35] {
            keys.push((id, (0..len as u8).collect()));
        }
    }
    keys.push((EncrId::CHACHA20_POLY1305, (0..36).collect()));
    keys
}

/// A flipped bit anywhere in ciphertext, tag, AAD or IV fails with
/// `AuthFailed`, for every algorithm, key size and backend.
#[test]
fn tampering_fails() {
    let iv = [9u8; 8];
    let aad = *b"\x00\x00\xca\xfe\x00\x00\x00\x11";
    let plaintext: Vec<u8> = (0..45).collect();
    for (id, key) in sample_keys() {
        for (backend, aead) in aeads(id, &key) {
            let what = format!("{id} {}-byte key on {backend}", key.len());
            let mut ct = plaintext.clone();
            let mut tag = vec![0u8; aead.tag_len()];
            aead.seal(&iv, &aad, &mut ct, &mut tag);

            let open = |iv: &[u8; 8], aad: &[u8], ct: &[u8], tag: &[u8]| {
                let mut data = ct.to_vec();
                aead.open(iv, aad, &mut data, tag)
            };
            for bit in [0, 7, 8 * ct.len() - 1] {
                let mut bad = ct.clone();
                bad[bit / 8] ^= 1 << (bit % 8);
                assert_eq!(
                    open(&iv, &aad, &bad, &tag),
                    Err(CryptoError::AuthFailed),
                    "{what}: ct bit {bit}"
                );
            }
            for bit in [0, 8 * tag.len() - 1] {
                let mut bad = tag.clone();
                bad[bit / 8] ^= 1 << (bit % 8);
                assert_eq!(
                    open(&iv, &aad, &ct, &bad),
                    Err(CryptoError::AuthFailed),
                    "{what}: tag bit {bit}"
                );
            }
            for bit in [0, 63] {
                let mut bad = aad;
                bad[bit / 8] ^= 1 << (bit % 8);
                assert_eq!(
                    open(&iv, &bad, &ct, &tag),
                    Err(CryptoError::AuthFailed),
                    "{what}: aad bit {bit}"
                );
            }
            let mut bad_iv = iv;
            bad_iv[7] ^= 1;
            assert_eq!(
                open(&bad_iv, &aad, &ct, &tag),
                Err(CryptoError::AuthFailed),
                "{what}: iv"
            );
            assert_eq!(
                open(&iv, &aad[..7], &ct, &tag),
                Err(CryptoError::AuthFailed),
                "{what}: short aad"
            );
            assert_eq!(
                open(&iv, &aad, &ct[..44], &tag),
                Err(CryptoError::AuthFailed),
                "{what}: short ct"
            );
            assert_eq!(open(&iv, &aad, &ct, &tag), Ok(()), "{what}: untouched");
        }
    }
}

/// Tampering with a whole ESP packet (header, IV, payload, ICV) fails.
#[test]
fn tampered_esp_packet_fails() {
    let payload = h(vectors::ESP_PAYLOAD);
    let mut keys = sample_keys();
    keys.push((EncrId::NULL_AUTH_AES_GMAC, (0..20).collect()));
    for (id, key) in keys {
        for (backend, esp) in esps(id, &key) {
            let what = format!("{id} {}-byte key on {backend}", key.len());
            let mut sealed = vec![0u8; 16 + payload.len() + esp.icv_len()];
            sealed[..8].copy_from_slice(&[0, 0, 0xca, 0xfe, 0, 0, 0, 0x11]);
            sealed[16..16 + payload.len()].copy_from_slice(&payload);
            esp.seal(0x11, false, &mut sealed).unwrap();
            for at in [
                0,
                4,
                7,
                8,
                15,
                16,
                sealed.len() - esp.icv_len() - 1,
                sealed.len() - 1,
            ] {
                let mut p = sealed.clone();
                p[at] ^= 0x10;
                assert_eq!(
                    esp.open(0x11, false, &mut p),
                    Err(CryptoError::AuthFailed),
                    "{what}: byte {at}"
                );
            }
            let mut p = sealed.clone();
            assert_eq!(esp.open(0x11, false, &mut p), Ok(()), "{what}");
        }
    }
}

/// Key material of the wrong length is refused with the lengths accepted.
#[test]
fn bad_key_lengths() {
    let cases: [(EncrId, &str, &[usize]); 7] = [
        (
            EncrId::AES_GCM_8,
            "20, 28 or 36",
            &[0, 4, 16, 19, 21, 32, 40],
        ),
        (EncrId::AES_GCM_12, "20, 28 or 36", &[16, 24]),
        (
            EncrId::AES_GCM_16,
            "20, 28 or 36",
            &[0, 3, 16, 19, 24, 32, 35, 37],
        ),
        (EncrId::AES_CCM_8, "19, 27 or 35", &[0, 16, 20, 36]),
        (EncrId::AES_CCM_12, "19, 27 or 35", &[18, 28]),
        (EncrId::AES_CCM_16, "19, 27 or 35", &[2, 24, 32]),
        (EncrId::CHACHA20_POLY1305, "36", &[0, 3, 4, 32, 35, 37]),
    ];
    for (id, expected, lengths) in cases {
        for (backend, provider) in providers() {
            for &got in lengths {
                let key = vec![0x5a; got];
                match provider.aead(id, &key) {
                    Err(CryptoError::BadKeyLength {
                        expected: e,
                        got: g,
                    }) => {
                        assert_eq!((e, g), (expected, got), "{id} on {backend}");
                    }
                    Err(CryptoError::UnsupportedEncr(_)) if backend == "aws-lc" => {}
                    Err(e) => panic!("{id} {got} on {backend}: {e}"),
                    Ok(_) => panic!("{id} {got} on {backend}: accepted"),
                }
            }
        }
    }
    let err = Provider::rustcrypto()
        .esp(EncrId::NULL_AUTH_AES_GMAC, &[0; 16], IntegId::NONE, &[])
        .err();
    assert_eq!(
        err,
        Some(CryptoError::BadKeyLength {
            expected: "20, 28 or 36",
            got: 16
        })
    );
}

/// A packet too short for header, IV and ICV is `BadLength`, for seal and
/// open alike; an AEAD with integrity is `BadCombination`.
#[test]
fn truncated_packets() {
    let mut keys = sample_keys();
    keys.push((EncrId::NULL_AUTH_AES_GMAC, (0..20).collect()));
    for (id, key) in keys {
        for (backend, esp) in esps(id, &key) {
            let min = 16 + esp.icv_len();
            for len in [0, 7, 8, 15, 16, min - 1] {
                let mut p = vec![0u8; len];
                assert_eq!(
                    esp.open(1, false, &mut p),
                    Err(CryptoError::BadLength),
                    "{id} on {backend}: open {len}"
                );
                assert_eq!(
                    esp.seal(1, false, &mut p),
                    Err(CryptoError::BadLength),
                    "{id} on {backend}: seal {len}"
                );
            }
            // The shortest packet (no payload at all) still seals and opens.
            let mut p = vec![0u8; min];
            esp.seal(1, true, &mut p).unwrap();
            assert_eq!(esp.open(1, true, &mut p), Ok(()), "{id} on {backend}");
        }
        let err = Provider::rustcrypto()
            .esp(id, &key, IntegId::HMAC_SHA2_256_128, &[0; 32])
            .err();
        assert_eq!(err, Some(CryptoError::BadCombination), "{id}");
    }
}

/// A rough per-packet timing of AES-128-GCM-16 seal on each backend.
/// Run with `cargo test -p flowsec-crypto --release --test kat_aead -- --ignored --nocapture`.
#[test]
#[ignore = "timing, not a test; run in release"]
fn time_aes128_gcm_seal() {
    use std::time::Instant;
    let key = [0x42u8; 20];
    let aad = [0u8; 8];
    for size in [64usize, 1420] {
        for (backend, aead) in aeads(EncrId::AES_GCM_16, &key) {
            let mut data = vec![0u8; size];
            let mut tag = [0u8; 16];
            let iters: u64 = if size < 1000 { 2_000_000 } else { 400_000 };
            let start = Instant::now();
            for i in 0..iters {
                aead.seal(&i.to_be_bytes(), &aad, &mut data, &mut tag);
            }
            let per = start.elapsed().as_nanos() as f64 / iters as f64;
            let gbps = size as f64 * 8.0 / per;
            println!("AES-128-GCM seal {size:>5} B  {backend:<10} {per:>8.1} ns/packet  {gbps:>6.2} Gbit/s");
        }
    }
}
