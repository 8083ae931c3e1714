//! Signatures on aws-lc: the key provider ([`AwsLcKeys`]: RSA, ECDSA
//! P-256/P-384/P-521 and Ed25519 private keys, which aws-lc-rs clears
//! when dropped) and the signature verification algorithms that
//! certificate paths and IKE's AUTH payloads are checked with
//! ([`VERIFICATION`]), webpki's `aws_lc_rs` set made here so that webpki
//! needs no crypto of its own.

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::KeyPair as RsaKeyPair;
use aws_lc_rs::signature::{
    self, EcdsaKeyPair, EcdsaSigningAlgorithm, Ed25519KeyPair, KeyPair, RsaEncoding,
    UnparsedPublicKey, VerificationAlgorithm,
};
use pki_types::{alg_id, AlgorithmIdentifier, InvalidSignature, PrivateKeyDer};

use crate::sign::{
    Curve, KeyKind, KeyProvider, SignatureScheme, SignatureVerificationAlgorithm,
    SignatureVerificationAlgorithms, SigningKey,
};
use crate::CryptoError;

/// The aws-lc key provider.
#[derive(Debug, Clone, Copy, Default)]
pub struct AwsLcKeys;

const NOT_A_KEY: &str = "not RSA, Ed25519 or ECDSA on P-256/P-384/P-521";

impl KeyProvider for AwsLcKeys {
    fn load_private_key(&self, der: PrivateKeyDer<'_>) -> Result<Box<dyn SigningKey>, CryptoError> {
        match der {
            PrivateKeyDer::Pkcs1(k) => RsaKeyPair::from_der(k.secret_pkcs1_der())
                .map(rsa)
                .map_err(|e| CryptoError::KeyRejected(e.description_())),
            PrivateKeyDer::Sec1(k) => ecdsa(k.secret_sec1_der(), false),
            PrivateKeyDer::Pkcs8(k) => pkcs8(k.secret_pkcs8_der()),
            _ => Err(CryptoError::KeyRejected(NOT_A_KEY)),
        }
    }
}

fn rsa(k: RsaKeyPair) -> Box<dyn SigningKey> {
    Box::new(Rsa(k))
}

/// A PKCS#8 key of any kind.
fn pkcs8(der: &[u8]) -> Result<Box<dyn SigningKey>, CryptoError> {
    if let Ok(k) = RsaKeyPair::from_pkcs8(der) {
        Ok(rsa(k))
    } else if let Ok(k) = Ed25519KeyPair::from_pkcs8_maybe_unchecked(der) {
        Ok(Box::new(Ed25519(k)))
    } else {
        ecdsa(der, true)
    }
}

/// An EC key of any of the three curves (PKCS#8 or SEC1), signing with
/// DER-encoded signatures (RFC 7427 §3) and the curve's hash.
fn ecdsa(der: &[u8], pkcs8: bool) -> Result<Box<dyn SigningKey>, CryptoError> {
    let curves: [(Curve, &'static EcdsaSigningAlgorithm); 3] = [
        (Curve::P256, &signature::ECDSA_P256_SHA256_ASN1_SIGNING),
        (Curve::P384, &signature::ECDSA_P384_SHA384_ASN1_SIGNING),
        (Curve::P521, &signature::ECDSA_P521_SHA512_ASN1_SIGNING),
    ];
    for (curve, alg) in curves {
        let k = if pkcs8 {
            EcdsaKeyPair::from_pkcs8(alg, der)
        } else {
            EcdsaKeyPair::from_private_key_der(alg, der)
        };
        if let Ok(key) = k {
            return Ok(Box::new(Ecdsa { curve, key }));
        }
    }
    Err(CryptoError::KeyRejected(NOT_A_KEY))
}

struct Rsa(RsaKeyPair);

impl SigningKey for Rsa {
    fn kind(&self) -> KeyKind {
        KeyKind::Rsa(self.0.public_modulus_len() as u32 * 8)
    }
    fn public_key(&self) -> &[u8] {
        self.0.public_key().as_ref()
    }
    fn sign(&self, scheme: SignatureScheme, message: &[u8]) -> Result<Vec<u8>, CryptoError> {
        use SignatureScheme as S;
        let padding: &'static dyn RsaEncoding = match scheme {
            S::RsaPkcs1Sha256 => &signature::RSA_PKCS1_SHA256,
            S::RsaPkcs1Sha384 => &signature::RSA_PKCS1_SHA384,
            S::RsaPkcs1Sha512 => &signature::RSA_PKCS1_SHA512,
            S::RsaPssSha256 => &signature::RSA_PSS_SHA256,
            S::RsaPssSha384 => &signature::RSA_PSS_SHA384,
            S::RsaPssSha512 => &signature::RSA_PSS_SHA512,
            _ => return Err(CryptoError::SchemeMismatch),
        };
        let mut sig = vec![0; self.0.public_modulus_len()];
        self.0
            .sign(padding, &SystemRandom::new(), message, &mut sig)
            .map_err(|_| CryptoError::SigningFailed)?;
        Ok(sig)
    }
}

struct Ecdsa {
    curve: Curve,
    key: EcdsaKeyPair,
}

impl SigningKey for Ecdsa {
    fn kind(&self) -> KeyKind {
        KeyKind::Ecdsa(self.curve)
    }
    fn public_key(&self) -> &[u8] {
        self.key.public_key().as_ref()
    }
    fn sign(&self, scheme: SignatureScheme, message: &[u8]) -> Result<Vec<u8>, CryptoError> {
        let fits = matches!(
            (self.curve, scheme),
            (Curve::P256, SignatureScheme::EcdsaSha256)
                | (Curve::P384, SignatureScheme::EcdsaSha384)
                | (Curve::P521, SignatureScheme::EcdsaSha512)
        );
        if !fits {
            return Err(CryptoError::SchemeMismatch);
        }
        self.key
            .sign(&SystemRandom::new(), message)
            .map(|s| s.as_ref().to_vec())
            .map_err(|_| CryptoError::SigningFailed)
    }
}

struct Ed25519(Ed25519KeyPair);

impl SigningKey for Ed25519 {
    fn kind(&self) -> KeyKind {
        KeyKind::Ed25519
    }
    fn public_key(&self) -> &[u8] {
        self.0.public_key().as_ref()
    }
    fn sign(&self, scheme: SignatureScheme, message: &[u8]) -> Result<Vec<u8>, CryptoError> {
        match scheme {
            SignatureScheme::Ed25519 => Ok(self.0.sign(message).as_ref().to_vec()),
            _ => Err(CryptoError::SchemeMismatch),
        }
    }
}

/// One verification algorithm: a kind of public key, a signature
/// algorithm, and aws-lc's implementation (as webpki's own).
struct Verifier {
    public_key_alg_id: AlgorithmIdentifier,
    signature_alg_id: AlgorithmIdentifier,
    alg: &'static dyn VerificationAlgorithm,
}

impl core::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Verifier")
            .field("public_key_alg_id", &self.public_key_alg_id)
            .field("signature_alg_id", &self.signature_alg_id)
            .finish()
    }
}

impl SignatureVerificationAlgorithm for Verifier {
    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        self.public_key_alg_id
    }
    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        self.signature_alg_id
    }
    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        // An EC point must be encoded (SEC1 §2.3.3), as webpki checks
        // before aws-lc sees it.
        let ec = [alg_id::ECDSA_P256, alg_id::ECDSA_P384, alg_id::ECDSA_P521];
        if ec.contains(&self.public_key_alg_id) && !matches!(public_key.first(), Some(0x02..=0x04))
        {
            return Err(InvalidSignature);
        }
        UnparsedPublicKey::new(self.alg, public_key)
            .verify(message, signature)
            .map_err(|_| InvalidSignature)
    }
}

const fn verifier(
    public_key_alg_id: AlgorithmIdentifier,
    signature_alg_id: AlgorithmIdentifier,
    alg: &'static dyn VerificationAlgorithm,
) -> Verifier {
    Verifier {
        public_key_alg_id,
        signature_alg_id,
        alg,
    }
}

/// sha256/384/512WithRSAEncryption without the NULL parameters RFC 4055
/// §5 asks for, as some certificates are signed (webpki takes them).
const RSA_PKCS1_SHA256_ABSENT_PARAMS: AlgorithmIdentifier = AlgorithmIdentifier::from_slice(&[
    0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b,
]);
const RSA_PKCS1_SHA384_ABSENT_PARAMS: AlgorithmIdentifier = AlgorithmIdentifier::from_slice(&[
    0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0c,
]);
const RSA_PKCS1_SHA512_ABSENT_PARAMS: AlgorithmIdentifier = AlgorithmIdentifier::from_slice(&[
    0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0d,
]);

static ECDSA_P256_SHA256: Verifier = verifier(
    alg_id::ECDSA_P256,
    alg_id::ECDSA_SHA256,
    &signature::ECDSA_P256_SHA256_ASN1,
);
static ECDSA_P256_SHA384: Verifier = verifier(
    alg_id::ECDSA_P256,
    alg_id::ECDSA_SHA384,
    &signature::ECDSA_P256_SHA384_ASN1,
);
static ECDSA_P256_SHA512: Verifier = verifier(
    alg_id::ECDSA_P256,
    alg_id::ECDSA_SHA512,
    &signature::ECDSA_P256_SHA512_ASN1,
);
static ECDSA_P384_SHA256: Verifier = verifier(
    alg_id::ECDSA_P384,
    alg_id::ECDSA_SHA256,
    &signature::ECDSA_P384_SHA256_ASN1,
);
static ECDSA_P384_SHA384: Verifier = verifier(
    alg_id::ECDSA_P384,
    alg_id::ECDSA_SHA384,
    &signature::ECDSA_P384_SHA384_ASN1,
);
static ECDSA_P384_SHA512: Verifier = verifier(
    alg_id::ECDSA_P384,
    alg_id::ECDSA_SHA512,
    &signature::ECDSA_P384_SHA512_ASN1,
);
static ECDSA_P521_SHA256: Verifier = verifier(
    alg_id::ECDSA_P521,
    alg_id::ECDSA_SHA256,
    &signature::ECDSA_P521_SHA256_ASN1,
);
static ECDSA_P521_SHA384: Verifier = verifier(
    alg_id::ECDSA_P521,
    alg_id::ECDSA_SHA384,
    &signature::ECDSA_P521_SHA384_ASN1,
);
static ECDSA_P521_SHA512: Verifier = verifier(
    alg_id::ECDSA_P521,
    alg_id::ECDSA_SHA512,
    &signature::ECDSA_P521_SHA512_ASN1,
);
static ED25519: Verifier = verifier(alg_id::ED25519, alg_id::ED25519, &signature::ED25519);
static RSA_PKCS1_SHA256: Verifier = verifier(
    alg_id::RSA_ENCRYPTION,
    alg_id::RSA_PKCS1_SHA256,
    &signature::RSA_PKCS1_2048_8192_SHA256,
);
static RSA_PKCS1_SHA384: Verifier = verifier(
    alg_id::RSA_ENCRYPTION,
    alg_id::RSA_PKCS1_SHA384,
    &signature::RSA_PKCS1_2048_8192_SHA384,
);
static RSA_PKCS1_SHA512: Verifier = verifier(
    alg_id::RSA_ENCRYPTION,
    alg_id::RSA_PKCS1_SHA512,
    &signature::RSA_PKCS1_2048_8192_SHA512,
);
static RSA_PKCS1_SHA256_ABSENT: Verifier = verifier(
    alg_id::RSA_ENCRYPTION,
    RSA_PKCS1_SHA256_ABSENT_PARAMS,
    &signature::RSA_PKCS1_2048_8192_SHA256,
);
static RSA_PKCS1_SHA384_ABSENT: Verifier = verifier(
    alg_id::RSA_ENCRYPTION,
    RSA_PKCS1_SHA384_ABSENT_PARAMS,
    &signature::RSA_PKCS1_2048_8192_SHA384,
);
static RSA_PKCS1_SHA512_ABSENT: Verifier = verifier(
    alg_id::RSA_ENCRYPTION,
    RSA_PKCS1_SHA512_ABSENT_PARAMS,
    &signature::RSA_PKCS1_2048_8192_SHA512,
);
// PSS signatures by a key whose SubjectPublicKeyInfo says rsaEncryption
// (webpki's "legacy key"), what strongSwan's `pki` and OpenSSL make.
static RSA_PSS_SHA256: Verifier = verifier(
    alg_id::RSA_ENCRYPTION,
    alg_id::RSA_PSS_SHA256,
    &signature::RSA_PSS_2048_8192_SHA256,
);
static RSA_PSS_SHA384: Verifier = verifier(
    alg_id::RSA_ENCRYPTION,
    alg_id::RSA_PSS_SHA384,
    &signature::RSA_PSS_2048_8192_SHA384,
);
static RSA_PSS_SHA512: Verifier = verifier(
    alg_id::RSA_ENCRYPTION,
    alg_id::RSA_PSS_SHA512,
    &signature::RSA_PSS_2048_8192_SHA512,
);

/// Every signature verification algorithm on aws-lc, and those of each
/// [`SignatureScheme`]: RSA of 2048 to 8192 bits, ECDSA with any of
/// the three hashes on any of the three curves, Ed25519. (webpki's
/// `aws_lc_rs` set less ML-DSA, whose keys no certificate flowsec reads
/// holds.)
pub static VERIFICATION: SignatureVerificationAlgorithms = SignatureVerificationAlgorithms {
    all: &[
        &ECDSA_P256_SHA256,
        &ECDSA_P256_SHA384,
        &ECDSA_P256_SHA512,
        &ECDSA_P384_SHA256,
        &ECDSA_P384_SHA384,
        &ECDSA_P384_SHA512,
        &ECDSA_P521_SHA256,
        &ECDSA_P521_SHA384,
        &ECDSA_P521_SHA512,
        &ED25519,
        &RSA_PKCS1_SHA256,
        &RSA_PKCS1_SHA384,
        &RSA_PKCS1_SHA512,
        &RSA_PKCS1_SHA256_ABSENT,
        &RSA_PKCS1_SHA384_ABSENT,
        &RSA_PKCS1_SHA512_ABSENT,
        &RSA_PSS_SHA256,
        &RSA_PSS_SHA384,
        &RSA_PSS_SHA512,
    ],
    mapping: &[
        (SignatureScheme::RsaPkcs1Sha256, &[&RSA_PKCS1_SHA256]),
        (SignatureScheme::RsaPkcs1Sha384, &[&RSA_PKCS1_SHA384]),
        (SignatureScheme::RsaPkcs1Sha512, &[&RSA_PKCS1_SHA512]),
        (SignatureScheme::RsaPssSha256, &[&RSA_PSS_SHA256]),
        (SignatureScheme::RsaPssSha384, &[&RSA_PSS_SHA384]),
        (SignatureScheme::RsaPssSha512, &[&RSA_PSS_SHA512]),
        (
            SignatureScheme::EcdsaSha256,
            &[&ECDSA_P256_SHA256, &ECDSA_P384_SHA256, &ECDSA_P521_SHA256],
        ),
        (
            SignatureScheme::EcdsaSha384,
            &[&ECDSA_P256_SHA384, &ECDSA_P384_SHA384, &ECDSA_P521_SHA384],
        ),
        (
            SignatureScheme::EcdsaSha512,
            &[&ECDSA_P256_SHA512, &ECDSA_P384_SHA512, &ECDSA_P521_SHA512],
        ),
        (SignatureScheme::Ed25519, &[&ED25519]),
    ],
};
