//! Known-answer and round-trip tests for IKE's signatures: the key
//! provider (PKCS#8, PKCS#1, SEC1) and the signature verification
//! algorithms, through `Provider::load_private_key` and
//! `Provider::verify_signature`, with every provider.
//!
//! Sources:
//! - Ed25519: RFC 8032 §7.1 TEST 1, 2 and 3 (keys, signatures: Ed25519
//!   is deterministic, so signing must give the RFC's octets).
//! - ECDSA: RFC 6979 A.2.5 (P-256) and A.2.6 (P-384): the keys (the
//!   public key from the private one, a known answer for loading) and
//!   the signatures of "sample" with SHA-256 and SHA-384, verified.
//! - RSA: no document has vectors for these schemes with a key in a
//!   form we load; `vectors/sign.rs` has a key and signatures made with
//!   OpenSSL.

#[path = "vectors/sign.rs"]
mod vectors;

mod common;
use common::*;
use flowsec_crypto::sign::{
    Curve, KeyKind, PrivateKeyDer, PrivatePkcs1KeyDer, PrivatePkcs8KeyDer, PrivateSec1KeyDer,
    SignatureScheme as S, SigningKey,
};
use flowsec_crypto::{CryptoError, Provider};

fn pkcs8(der: &[u8]) -> PrivateKeyDer<'_> {
    PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(der))
}

/// A PKCS#8 v1 Ed25519 key of `seed` (RFC 8410 §7).
fn ed25519_pkcs8(seed: &[u8]) -> Vec<u8> {
    let mut der = h("302e020100300506032b657004220420");
    der.extend_from_slice(seed);
    der
}

/// The SubjectPublicKeyInfo of an Ed25519 public key (RFC 8410 §4).
fn ed25519_spki(public: &[u8]) -> Vec<u8> {
    let mut der = h("302a300506032b6570032100");
    der.extend_from_slice(public);
    der
}

/// RFC 8032 §7.1: (secret key, public key, message, signature).
const ED25519_RFC8032: [(&str, &str, &str, &str); 3] = [
    (
        "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        "",
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
    ),
    (
        "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
        "72",
        "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
    ),
    (
        "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
        "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
        "af82",
        "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a",
    ),
];

#[test]
fn ed25519_rfc8032() {
    for (name, p) in providers() {
        for (sk, pk, msg, sig) in ED25519_RFC8032 {
            let (pk, msg, sig) = (h(pk), h(msg), h(sig));
            let key = p.load_private_key(pkcs8(&ed25519_pkcs8(&h(sk)))).unwrap();
            assert_eq!(key.kind(), KeyKind::Ed25519);
            assert_eq!(key.public_key(), &pk[..], "{name}");
            assert_eq!(key.sign(S::Ed25519, &msg).unwrap(), sig, "{name}");
            let spki = ed25519_spki(&pk);
            p.verify_signature(S::Ed25519, &spki, &msg, &sig).unwrap();
            let mut bad = sig.clone();
            bad[0] ^= 1;
            assert_eq!(
                p.verify_signature(S::Ed25519, &spki, &msg, &bad),
                Err(CryptoError::BadSignature)
            );
        }
    }
}

/// The DER ECDSA-Sig-Value of `r` and `s` (RFC 3279 §2.2.3).
fn ecdsa_sig(r: &str, s: &str) -> Vec<u8> {
    let int = |v: Vec<u8>| {
        let mut v: Vec<u8> = v.into_iter().skip_while(|&b| b == 0).collect();
        if v.first().is_some_and(|&b| b >= 0x80) {
            v.insert(0, 0);
        }
        let mut out = vec![0x02, v.len() as u8];
        out.extend(v);
        out
    };
    let body = [int(h(r)), int(h(s))].concat();
    let mut out = vec![0x30, body.len() as u8];
    out.extend(body);
    out
}

/// An RFC 6979 curve's case: the SEC1 prefix and OID, private key, public
/// point, the scheme and the signature (r, s) of "sample".
struct EcCase {
    curve: Curve,
    curve_oid: &'static str,
    x: &'static str,
    ux: &'static str,
    uy: &'static str,
    scheme: S,
    r: &'static str,
    s: &'static str,
}

const RFC6979: [EcCase; 2] = [
    // A.2.5, with SHA-256.
    EcCase {
        curve: Curve::P256,
        curve_oid: "06082a8648ce3d030107",
        x: "C9AFA9D845BA75166B5C215767B1D6934E50C3DB36E89B127B8A622B120F6721",
        ux: "60FED4BA255A9D31C961EB74C6356D68C049B8923B61FA6CE669622E60F29FB6",
        uy: "7903FE1008B8BC99A41AE9E95628BC64F2F1B20C2D7E9F5177A3C294D4462299",
        scheme: S::EcdsaSha256,
        r: "EFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716",
        s: "F7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8",
    },
    // A.2.6, with SHA-384.
    EcCase {
        curve: Curve::P384,
        curve_oid: "06052b81040022",
        x: "6B9D3DAD2E1B8C1C05B19875B6659F4DE23C3B667BF297BA9AA47740787137D896D5724E4C70A825F872C9EA60D2EDF5",
        ux: "EC3A4E415B4E19A4568618029F427FA5DA9A8BC4AE92E02E06AAE5286B300C64DEF8F0EA9055866064A254515480BC13",
        uy: "8015D9B72D7D57244EA8EF9AC0C621896708A59367F9DFB9F54CA84B3F1C9DB1288B231C3AE0D4FE7344FD2533264720",
        scheme: S::EcdsaSha384,
        r: "94EDBB92A5ECB8AAD4736E56C691916B3F88140666CE9FA73D64C4EA95AD133C81A648152E44ACF96E36DD1E80FABE46",
        s: "99EF4AEB15F178CEA1FE40DB2603138F130E740A19624526203B6351D0A3A94FA329C145786E679E7B82C71A38628AC8",
    },
];

/// A DER element of `tag` around `body` (short or one-octet long form).
fn tlv(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    if body.len() >= 0x80 {
        out.push(0x81);
    }
    out.push(body.len() as u8);
    out.extend_from_slice(body);
    out
}

impl EcCase {
    fn point(&self) -> Vec<u8> {
        [vec![4], h(self.ux), h(self.uy)].concat()
    }
    /// SEC1 ECPrivateKey (RFC 5915 §3) with the curve and no public key.
    fn sec1(&self) -> Vec<u8> {
        let body = [
            h("020101"),
            tlv(0x04, &h(self.x)),
            tlv(0xa0, &h(self.curve_oid)),
        ]
        .concat();
        tlv(0x30, &body)
    }
    /// SubjectPublicKeyInfo: id-ecPublicKey, the curve, the point.
    fn spki(&self) -> Vec<u8> {
        let alg = tlv(0x30, &[h("06072a8648ce3d0201"), h(self.curve_oid)].concat());
        let bits = tlv(0x03, &[vec![0], self.point()].concat());
        tlv(0x30, &[alg, bits].concat())
    }
}

#[test]
fn ecdsa_rfc6979_keys_and_signatures() {
    for (name, p) in providers() {
        for c in &RFC6979 {
            let sec1 = c.sec1();
            let key = p
                .load_private_key(PrivateKeyDer::Sec1(PrivateSec1KeyDer::from(&sec1[..])))
                .unwrap_or_else(|e| panic!("{name} {:?}: {e}", c.curve));
            assert_eq!(key.kind(), KeyKind::Ecdsa(c.curve));
            assert_eq!(key.public_key(), &c.point()[..], "{name}");
            let spki = c.spki();
            let sig = ecdsa_sig(c.r, c.s);
            p.verify_signature(c.scheme, &spki, b"sample", &sig)
                .unwrap_or_else(|e| panic!("{name} {:?}: {e}", c.curve));
            assert_eq!(
                p.verify_signature(c.scheme, &spki, b"samplf", &sig),
                Err(CryptoError::BadSignature)
            );
            // Our own signature (randomized) verifies too.
            let ours = key.sign(c.scheme, b"InitiatorSignedOctets").unwrap();
            p.verify_signature(c.scheme, &spki, b"InitiatorSignedOctets", &ours)
                .unwrap();
            // aws-lc signs with the curve's hash only.
            let other = if c.scheme == S::EcdsaSha256 {
                S::EcdsaSha384
            } else {
                S::EcdsaSha256
            };
            assert_eq!(key.sign(other, b"x"), Err(CryptoError::SchemeMismatch));
            assert_eq!(key.sign(S::Ed25519, b"x"), Err(CryptoError::SchemeMismatch));
            // An RSA scheme has no algorithm for an EC key.
            assert_eq!(
                p.verify_signature(S::RsaPkcs1Sha256, &spki, b"sample", &sig),
                Err(CryptoError::UnsupportedSignature)
            );
        }
    }
}

#[test]
fn rsa_keys_and_signatures() {
    use vectors::*;
    for (name, p) in providers() {
        let spki = h(RSA2048_SPKI);
        let from8 = p.load_private_key(pkcs8(&h(RSA2048_PKCS8))).unwrap();
        let pk1 = h(RSA2048_PKCS1);
        let from1 = p
            .load_private_key(PrivateKeyDer::Pkcs1(PrivatePkcs1KeyDer::from(&pk1[..])))
            .unwrap();
        for key in [&from8, &from1] {
            assert_eq!(key.kind(), KeyKind::Rsa(2048), "{name}");
            // The RSAPublicKey is the SubjectPublicKeyInfo's BIT STRING.
            assert!(spki.ends_with(key.public_key()), "{name}");
            // PKCS#1 v1.5 is deterministic: OpenSSL's octets.
            let sig = key.sign(S::RsaPkcs1Sha256, b"sample").unwrap();
            assert_eq!(sig, h(RSA2048_PKCS1_SHA256_SAMPLE), "{name}");
            for scheme in [
                S::RsaPkcs1Sha256,
                S::RsaPkcs1Sha384,
                S::RsaPkcs1Sha512,
                S::RsaPssSha256,
                S::RsaPssSha384,
                S::RsaPssSha512,
            ] {
                let sig = key.sign(scheme, b"octets").unwrap();
                p.verify_signature(scheme, &spki, b"octets", &sig)
                    .unwrap_or_else(|e| panic!("{name} {scheme:?}: {e}"));
                assert_eq!(
                    p.verify_signature(scheme, &spki, b"octetz", &sig),
                    Err(CryptoError::BadSignature),
                    "{name} {scheme:?}"
                );
            }
            assert_eq!(
                key.sign(S::EcdsaSha256, b"x"),
                Err(CryptoError::SchemeMismatch)
            );
        }
        p.verify_signature(
            S::RsaPssSha384,
            &spki,
            b"sample",
            &h(RSA2048_PSS_SHA384_SAMPLE),
        )
        .unwrap();
        // A PSS signature is not a PKCS#1 v1.5 one.
        assert_eq!(
            p.verify_signature(
                S::RsaPkcs1Sha384,
                &spki,
                b"sample",
                &h(RSA2048_PSS_SHA384_SAMPLE)
            ),
            Err(CryptoError::BadSignature)
        );
    }
}

#[test]
fn keys_refused_and_kept_secret() {
    let p = Provider::fastest();
    let small = p.load_private_key(pkcs8(&h(vectors::RSA1024_PKCS8)));
    assert!(matches!(small, Err(CryptoError::KeyRejected(_))));
    assert!(matches!(
        p.load_private_key(pkcs8(&[0x30, 0x03, 0x02, 0x01, 0x00])),
        Err(CryptoError::KeyRejected(_))
    ));
    let seed = h(ED25519_RFC8032[0].0);
    let key = p.load_private_key(pkcs8(&ed25519_pkcs8(&seed))).unwrap();
    assert_eq!(format!("{key:?}"), "SigningKey(Ed25519)");
    assert_eq!(
        p.verify_signature(S::Ed25519, &[0x30, 0x00], b"", &[0; 64]),
        Err(CryptoError::BadPublicKey)
    );
}

#[test]
fn every_scheme_has_algorithms_and_paths_get_them_all() {
    for (_, p) in providers() {
        let v = p.signature_verification();
        for scheme in S::ALL {
            let algs = v.for_scheme(scheme);
            assert!(!algs.is_empty(), "{scheme:?}");
            for a in algs {
                let id = a.signature_alg_id();
                assert!(v.all.iter().any(|b| b.signature_alg_id() == id));
            }
        }
    }
    // A provider without them verifies nothing.
    let none = flowsec_crypto::sign::SignatureVerificationAlgorithms {
        all: &[],
        mapping: &[],
    };
    let p = Provider::fastest().with_signature_verification(none);
    let pk = h(ED25519_RFC8032[0].1);
    assert_eq!(
        p.verify_signature(S::Ed25519, &ed25519_spki(&pk), b"", &[0; 64]),
        Err(CryptoError::UnsupportedSignature)
    );
}

/// A signing key is usable from other threads (the IKE thread holds the
/// credentials behind an `Arc`).
#[test]
fn signing_keys_are_send_and_sync() {
    fn check<T: Send + Sync + ?Sized>() {}
    check::<dyn SigningKey>();
}
