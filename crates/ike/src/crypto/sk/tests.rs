//! SK payload tests: byte-exact seals against an independent Python
//! computation, round trips, tampering, truncation and hostile input.

use super::*;
use crate::random::SeededRandom;
use flowsec_wire::iana::NotifyType;
use flowsec_wire::ike::{emit_payloads, ExchangeType, Notify};

fn h(s: &str) -> Vec<u8> {
    hex::decode(s.replace([' ', '\n'], "")).unwrap()
}

/// A `Random` that yields 00 01 02 ... (the fixed IV of the Python
/// computations).
struct Counting(u8);
impl Random for Counting {
    fn fill(&mut self, buf: &mut [u8]) {
        for b in buf {
            *b = self.0;
            self.0 = self.0.wrapping_add(1);
        }
    }
}

fn header() -> Header {
    Header {
        spi_i: 0x0102_0304_0506_0708,
        spi_r: 0x1112_1314_1516_1718,
        next_payload: PayloadType::NONE,
        major_version: 2,
        minor_version: 0,
        exchange: ExchangeType::IKE_AUTH,
        initiator: true,
        response: false,
        message_id: 1,
        length: 0,
    }
}

fn inner() -> Vec<Payload> {
    vec![Payload::Vendor(b"flowsec test".to_vec())]
}

fn encr(id: EncrId, key_bits: u16) -> Encr {
    Encr { id, key_bits }
}

/// Keys of the Python computation: AES keys (with salt/nonce) 40 41 .. 53,
/// integrity keys 60 61 .. 7f (cut to length), ChaCha20 80 .. a3, 3DES
/// 0123456789abcdef 23456789abcdef01 456789abcdef0123.
struct Case {
    name: &'static str,
    encr: Encr,
    integ: IntegId,
    encr_key: Vec<u8>,
    integ_key: Vec<u8>,
    /// `seal` with IV 00 01 .., computed independently in Python with the
    /// `cryptography` package (AES / TripleDES in CBC mode, AES in CTR mode
    /// with counter block nonce || IV || 00000001, AESGCM,
    /// ChaCha20Poly1305) and `hmac`: header || SK header || IV ||
    /// E(inner || zero padding || pad length) || ICV truncated, over all
    /// before it (AEAD: AAD = header || SK header, nonce = salt || IV).
    python: &'static str,
}

fn cases() -> Vec<Case> {
    let aes: Vec<u8> = (0x40..0x54).collect();
    let integ: Vec<u8> = (0x60..0x80).collect();
    vec![
        Case {
            name: "aes128-cbc/hmac-sha2-256-128",
            encr: encr(EncrId::AES_CBC, 128),
            integ: IntegId::HMAC_SHA2_256_128,
            encr_key: aes[..16].to_vec(),
            integ_key: integ.clone(),
            python: "010203040506070811121314151617182e20230800000001000000602b000044
                     000102030405060708090a0b0c0d0e0fafe62275ca6f81859e9d877b3aa21893
                     3e0b7ef9abf5252b7d14a06674cab65603c4d96bf69e55aed9b00d45b14abe7c",
        },
        Case {
            name: "3des/hmac-sha1-96",
            encr: encr(EncrId::TRIPLE_DES, 192),
            integ: IntegId::HMAC_SHA1_96,
            encr_key: h("0123456789abcdef23456789abcdef01456789abcdef0123"),
            integ_key: integ[..20].to_vec(),
            python: "010203040506070811121314151617182e202308000000010000004c2b000030
                     0001020304050607e1489a669fbf3877d3e4349710caa258747532ff1f507d08
                     ce49b1fde7f6838660d5cff2",
        },
        Case {
            name: "aes128-ctr/hmac-sha1-96",
            encr: encr(EncrId::AES_CTR, 128),
            integ: IntegId::HMAC_SHA1_96,
            encr_key: aes.clone(),
            integ_key: integ[..20].to_vec(),
            python: "010203040506070811121314151617182e20230800000001000000452b000029
                     0001020304050607b3a6a2def7f5a19fad8766a1971660a833a084eb99b43def
                     1e06b9acb3",
        },
        Case {
            name: "aes128-gcm16",
            encr: encr(EncrId::AES_GCM_16, 128),
            integ: IntegId::NONE,
            encr_key: aes.clone(),
            integ_key: Vec::new(),
            python: "010203040506070811121314151617182e20230800000001000000492b00002d
                     0001020304050607338ad4a9123d1a6b23b91a15944005512e9b3085d7e57f21
                     767b4279c3f32badfb",
        },
        Case {
            name: "chacha20-poly1305",
            encr: encr(EncrId::CHACHA20_POLY1305, 256),
            integ: IntegId::NONE,
            encr_key: (0x80..0xa4).collect(),
            integ_key: Vec::new(),
            python: "010203040506070811121314151617182e20230800000001000000492b00002d
                     0001020304050607237ccfd990b421462871ba30b504a9d9867464aa41d8b286
                     e1686cb0e4fd1034aa",
        },
    ]
}

fn providers() -> [(&'static str, Provider); 2] {
    [
        ("fastest", Provider::fastest()),
        ("rustcrypto", Provider::rustcrypto()),
    ]
}

fn sk(p: &Provider, c: &Case) -> SkCrypto {
    SkCrypto::new(p, c.encr, c.integ, &c.encr_key, &c.integ_key)
        .unwrap_or_else(|e| panic!("{}: {e}", c.name))
}

fn seal(s: &SkCrypto, rng: &mut dyn Random) -> Vec<u8> {
    let inner = inner();
    s.seal(&header(), first_type(&inner), &emit_payloads(&inner), rng)
}

#[test]
fn seal_matches_python() {
    for (pname, p) in providers() {
        for c in cases() {
            let got = seal(&sk(&p, &c), &mut Counting(0));
            assert_eq!(
                hex::encode(&got),
                hex::encode(h(c.python)),
                "{pname} {}",
                c.name
            );
        }
    }
}

#[test]
fn round_trip_every_suite_both_backends() {
    for (pname, p) in providers() {
        for c in cases() {
            let s = sk(&p, &c);
            for seed in 0..4 {
                let raw = seal(&s, &mut SeededRandom::new(seed));
                let msg = s
                    .open(&raw)
                    .unwrap_or_else(|e| panic!("{pname} {}: {e}", c.name));
                let mut want_header = header();
                want_header.next_payload = PayloadType::SK;
                want_header.length = raw.len() as u32;
                assert_eq!(msg.header, want_header);
                assert_eq!(msg.payloads, inner(), "{pname} {}", c.name);
            }
        }
    }
}

/// Inner chains of every length through the padding boundaries, and the
/// empty chain (an empty INFORMATIONAL, i.e. a liveness check).
#[test]
fn round_trip_lengths_and_empty() {
    let p = Provider::fastest();
    for c in cases() {
        let s = sk(&p, &c);
        let raw = s.seal(&header(), PayloadType::NONE, &[], &mut SeededRandom::new(1));
        assert_eq!(s.open(&raw).unwrap().payloads, vec![]);
        for n in 0..40 {
            let inner = vec![Payload::Vendor(vec![0x5a; n])];
            let bytes = emit_payloads(&inner);
            let raw = s.seal(
                &header(),
                PayloadType::VENDOR,
                &bytes,
                &mut SeededRandom::new(2),
            );
            assert_eq!(
                raw.len(),
                HEADER_LEN + bytes.len() + s.overhead(bytes.len())
            );
            assert_eq!(s.open(&raw).unwrap().payloads, inner, "{} {n}", c.name);
        }
    }
}

/// Unencrypted payloads before SK are kept, authenticated, and come first.
#[test]
fn unencrypted_payloads_before_sk() {
    let p = Provider::fastest();
    for c in cases() {
        let s = sk(&p, &c);
        let outer = vec![Payload::Notify(Notify::new(
            NotifyType::COOKIE,
            vec![1, 2, 3, 4],
        ))];
        let inner = inner();
        let raw = s.seal_after(
            &header(),
            &outer,
            first_type(&inner),
            &emit_payloads(&inner),
            &mut SeededRandom::new(3),
        );
        let msg = s.open(&raw).unwrap();
        assert_eq!(msg.header.next_payload, PayloadType::NOTIFY);
        let mut want = outer.clone();
        want.extend(inner);
        assert_eq!(msg.payloads, want, "{}", c.name);
        // The unencrypted payload is covered by the ICV / AAD.
        let mut bad = raw.clone();
        bad[HEADER_LEN + 8] ^= 1;
        assert_eq!(s.open(&bad).unwrap_err(), SkError::Integrity, "{}", c.name);
    }
}

/// Every bit flip we try, anywhere in the message, is refused: the header
/// and SK header by the ICV/AAD (or by the parser), the IV, ciphertext and
/// ICV by the ICV/tag.
#[test]
fn tampering_anywhere_is_refused() {
    let p = Provider::fastest();
    for c in cases() {
        let s = sk(&p, &c);
        let raw = seal(&s, &mut SeededRandom::new(9));
        for i in 0..raw.len() {
            for bit in [0x01u8, 0x80] {
                let mut bad = raw.clone();
                bad[i] ^= bit;
                let r = s.open(&bad);
                assert!(r.is_err(), "{}: flip {bit:#x} at {i} accepted", c.name);
                if i >= HEADER_LEN + GENERIC_HEADER_LEN {
                    assert_eq!(r.unwrap_err(), SkError::Integrity, "{} at {i}", c.name);
                }
            }
        }
    }
}

#[test]
fn wrong_key_or_direction_is_integrity_failure() {
    let p = Provider::fastest();
    for c in cases() {
        let s = sk(&p, &c);
        let raw = seal(&s, &mut SeededRandom::new(4));
        let mut other = Case { ..c };
        other.encr_key[0] ^= 1;
        if !other.integ_key.is_empty() {
            other.integ_key[0] ^= 1;
        }
        assert_eq!(sk(&p, &other).open(&raw).unwrap_err(), SkError::Integrity);
    }
}

/// Every truncation, extension and a pile of random bytes give an error,
/// never a panic.
#[test]
fn hostile_input_never_panics() {
    let p = Provider::fastest();
    let mut rng = SeededRandom::new(77);
    for c in cases() {
        let s = sk(&p, &c);
        let raw = seal(&s, &mut SeededRandom::new(5));
        for n in 0..raw.len() {
            assert!(s.open(&raw[..n]).is_err(), "{} truncated to {n}", c.name);
        }
        let mut longer = raw.clone();
        longer.push(0);
        assert!(s.open(&longer).is_err());
        // The header's length adjusted to truncations: still refused.
        for n in HEADER_LEN..raw.len() {
            let mut t = raw[..n].to_vec();
            t[24..28].copy_from_slice(&(n as u32).to_be_bytes());
            let sk_len = n.saturating_sub(HEADER_LEN) as u16;
            if n >= HEADER_LEN + 4 {
                t[HEADER_LEN + 2..HEADER_LEN + 4].copy_from_slice(&sk_len.to_be_bytes());
            }
            assert!(s.open(&t).is_err(), "{} cut to {n}", c.name);
        }
        for len in [0, 1, 27, 28, 32, 33, 60, 100, 300] {
            for _ in 0..20 {
                let mut junk = vec![0u8; len];
                rng.fill(&mut junk);
                if len >= HEADER_LEN {
                    // Make the header plausible so the SK path is reached.
                    junk[..HEADER_LEN].copy_from_slice(&raw[..HEADER_LEN]);
                    junk[24..28].copy_from_slice(&(len as u32).to_be_bytes());
                }
                if len >= HEADER_LEN + GENERIC_HEADER_LEN {
                    junk[HEADER_LEN + 2..HEADER_LEN + 4]
                        .copy_from_slice(&((len - HEADER_LEN) as u16).to_be_bytes());
                }
                let _ = s.open(&junk);
            }
        }
    }
}

/// An SK payload whose ICV verifies but whose pad length points before the
/// plaintext is `BadPadding`; padding contents are ignored.
#[test]
fn pad_length_checked_contents_ignored() {
    let p = Provider::fastest();
    let c = &cases()[0]; // AES-CBC / HMAC-SHA2-256-128: block 16
    let cipher = p.cipher(c.encr.id, &c.encr_key).unwrap();
    let integ = p.integrity(c.integ, &c.integ_key).unwrap();
    let s = sk(&p, c);
    let build = |plaintext: &[u8]| {
        let sk_len = 4 + 16 + plaintext.len() + 16;
        let mut h = header();
        h.next_payload = PayloadType::SK;
        h.length = (HEADER_LEN + sk_len) as u32;
        let mut out = vec![0u8; HEADER_LEN];
        h.emit(&mut out);
        out.extend_from_slice(&[PayloadType::VENDOR.0, 0]);
        out.extend_from_slice(&(sk_len as u16).to_be_bytes());
        let iv = [7u8; 16];
        out.extend_from_slice(&iv);
        let mut ct = plaintext.to_vec();
        cipher.encrypt(&iv, &mut ct);
        out.extend_from_slice(&ct);
        let mut icv = [0u8; 16];
        integ.sign(&[&out], &mut icv);
        out.extend_from_slice(&icv);
        out
    };
    let vendor = emit_payloads(&inner()); // 16 bytes
                                          // 15 bytes of non-zero padding and pad length 15: accepted.
    let mut pt = vendor.clone();
    pt.extend_from_slice(&[0xee; 15]);
    pt.push(15);
    assert_eq!(s.open(&build(&pt)).unwrap().payloads, inner());
    // Pad length 32 in a 32-byte plaintext: refused.
    pt[31] = 32;
    assert_eq!(s.open(&build(&pt)).unwrap_err(), SkError::BadPadding);
    pt[31] = 255;
    assert_eq!(s.open(&build(&pt)).unwrap_err(), SkError::BadPadding);
    // Pad length 31: an empty chain where VENDOR was announced.
    pt[31] = 31;
    assert!(matches!(s.open(&build(&pt)), Err(SkError::Inner(_))));
}

#[test]
fn no_sk_payload() {
    let p = Provider::fastest();
    let s = sk(&p, &cases()[3]);
    let msg = Message {
        header: header(),
        payloads: inner(),
    };
    assert_eq!(s.open(&msg.emit()).unwrap_err(), SkError::NoSk);
    let empty = Message {
        header: header(),
        payloads: vec![],
    };
    assert_eq!(s.open(&empty.emit()).unwrap_err(), SkError::NoSk);
}

#[test]
fn construction_refusals() {
    let p = Provider::fastest();
    let gcm = encr(EncrId::AES_GCM_16, 128);
    let cbc = encr(EncrId::AES_CBC, 128);
    let err = |r: Result<SkCrypto, CryptoError>| r.unwrap_err();
    // AEAD with integrity; cipher without.
    assert_eq!(
        err(SkCrypto::new(
            &p,
            gcm,
            IntegId::HMAC_SHA1_96,
            &[0; 20],
            &[0; 20]
        )),
        CryptoError::BadCombination
    );
    assert_eq!(
        err(SkCrypto::new(&p, cbc, IntegId::NONE, &[0; 16], &[])),
        CryptoError::BadCombination
    );
    // NULL encryption and AES-GMAC are not for IKE.
    assert_eq!(
        err(SkCrypto::new(
            &p,
            encr(EncrId::NULL, 0),
            IntegId::HMAC_SHA1_96,
            &[],
            &[0; 20]
        )),
        CryptoError::BadCombination
    );
    assert_eq!(
        err(SkCrypto::new(
            &p,
            encr(EncrId::NULL_AUTH_AES_GMAC, 128),
            IntegId::NONE,
            &[0; 20],
            &[]
        )),
        CryptoError::BadCombination
    );
    // Key lengths must match the suite.
    assert!(matches!(
        err(SkCrypto::new(&p, gcm, IntegId::NONE, &[0; 16], &[])),
        CryptoError::BadKeyLength { got: 16, .. }
    ));
    assert!(matches!(
        err(SkCrypto::new(
            &p,
            cbc,
            IntegId::HMAC_SHA1_96,
            &[0; 16],
            &[0; 16]
        )),
        CryptoError::BadKeyLength { got: 16, .. }
    ));
    // Debug shows no key material.
    let s = SkCrypto::new(&p, cbc, IntegId::HMAC_SHA1_96, &[0x42; 16], &[0x42; 20]).unwrap();
    let d = format!("{s:?}");
    assert!(!d.contains("42") && !d.contains("66"), "{d}");
}

/// RFC 7634 Appendix B: an INFORMATIONAL request carrying
/// SET_WINDOW_SIZE(10), sealed with ChaCha20-Poly1305 under key 80 .. 9f,
/// salt a0 a1 a2 a3 and IV 10 .. 17. (The bytes as strongSwan's
/// test_message_chapoly.c quotes them.)
#[test]
fn chacha20_poly1305_rfc7634_appendix_b() {
    let p = Provider::fastest();
    let key: Vec<u8> = (0x80..0xa4).collect();
    let s = SkCrypto::new(
        &p,
        encr(EncrId::CHACHA20_POLY1305, 256),
        IntegId::NONE,
        &key,
        &[],
    )
    .unwrap();
    let hdr = Header {
        spi_i: 0xc0c1_c2c3_c4c5_c6c7,
        spi_r: 0xd0d1_d2d3_d4d5_d6d7,
        next_payload: PayloadType::NONE,
        major_version: 2,
        minor_version: 0,
        exchange: ExchangeType::INFORMATIONAL,
        initiator: false,
        response: false,
        message_id: 9,
        length: 0,
    };
    let inner = vec![Payload::Notify(Notify::new(
        NotifyType::SET_WINDOW_SIZE,
        10u32.to_be_bytes().to_vec(),
    ))];
    let raw = s.seal(
        &hdr,
        first_type(&inner),
        &emit_payloads(&inner),
        &mut Counting(0x10),
    );
    let want = h(
        "c0c1c2c3c4c5c6c7 d0d1d2d3d4d5d6d7 2e202500 00000009 00000045
         29000029 1011121314151617
         610394701f8d017f7c129248896b71bfe25236efd7cdc670669063 15b2",
    );
    assert_eq!(hex::encode(&raw), hex::encode(&want));
    assert_eq!(s.open(&raw).unwrap().payloads, inner);
}
