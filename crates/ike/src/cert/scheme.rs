//! Signature schemes for IKEv2's Digital Signature authentication
//! (RFC 7427): the hash algorithms announced in IKE_SA_INIT
//! (SIGNATURE_HASH_ALGORITHMS, §4; Identity for Ed25519, RFC 8420), and
//! the ASN.1 AlgorithmIdentifier that leads the AUTH data (§3), encoded and
//! decoded with the `spki`/`pkcs1` crates.
//!
//! ```text
//! AUTH data: | ASN.1 Length (1) | AlgorithmIdentifier (DER) | Signature |
//! ```

use core::fmt;

use der::asn1::AnyRef;
use der::oid::ObjectIdentifier;
use der::{Decode, Encode};
use flowsec_crypto::sign::SignatureScheme;
use pkcs1::{RsaPssParams, TrailerField};
use spki::{AlgorithmIdentifier, AlgorithmIdentifierOwned, AlgorithmIdentifierRef};

use super::x509::{Curve, KeyKind};

/// A hash algorithm of RFC 7427 §7 (IANA "IKEv2 Hash Algorithms").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Hash {
    /// SHA2-256 (2).
    Sha256,
    /// SHA2-384 (3).
    Sha384,
    /// SHA2-512 (4).
    Sha512,
    /// Identity (5, RFC 8420): the message itself, for Ed25519.
    Identity,
}

impl Hash {
    /// All, in the order announced.
    pub const ALL: [Hash; 4] = [Hash::Sha256, Hash::Sha384, Hash::Sha512, Hash::Identity];

    /// The IANA number.
    pub fn id(self) -> u16 {
        match self {
            Hash::Sha256 => 2,
            Hash::Sha384 => 3,
            Hash::Sha512 => 4,
            Hash::Identity => 5,
        }
    }

    /// The hash of IANA number `id`, if flowsec has it (SHA-1 is not
    /// used for signatures).
    pub fn from_id(id: u16) -> Option<Hash> {
        Hash::ALL.into_iter().find(|h| h.id() == id)
    }

    /// Bit in a [`HashSet`].
    fn bit(self) -> u8 {
        1 << (self.id() - 2)
    }

    fn oid(self) -> Option<ObjectIdentifier> {
        Some(match self {
            Hash::Sha256 => ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.1"),
            Hash::Sha384 => ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.2"),
            Hash::Sha512 => ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.3"),
            Hash::Identity => return None,
        })
    }

    fn len(self) -> u8 {
        match self {
            Hash::Sha256 => 32,
            Hash::Sha384 => 48,
            Hash::Sha512 => 64,
            Hash::Identity => 0,
        }
    }
}

impl fmt::Display for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Hash::Sha256 => "sha256",
            Hash::Sha384 => "sha384",
            Hash::Sha512 => "sha512",
            Hash::Identity => "identity",
        })
    }
}

/// A set of [`Hash`]es: what a peer announced in
/// SIGNATURE_HASH_ALGORITHMS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct HashSet(u8);

impl HashSet {
    /// The hashes of a SIGNATURE_HASH_ALGORITHMS notification's data
    /// (2-byte numbers; unknown ones and a trailing odd byte ignored).
    pub fn from_notify(data: &[u8]) -> HashSet {
        let mut set = HashSet(0);
        for pair in data.chunks_exact(2) {
            if let Some(h) = Hash::from_id(u16::from_be_bytes([pair[0], pair[1]])) {
                set.0 |= h.bit();
            }
        }
        set
    }

    /// Our SIGNATURE_HASH_ALGORITHMS data: every hash of [`Hash::ALL`].
    pub fn ours() -> Vec<u8> {
        Hash::ALL
            .iter()
            .flat_map(|h| h.id().to_be_bytes())
            .collect()
    }

    /// Adds `h`.
    pub fn insert(&mut self, h: Hash) {
        self.0 |= h.bit();
    }

    /// Whether `h` is in the set.
    pub fn has(self, h: Hash) -> bool {
        self.0 & h.bit() != 0
    }

    /// Whether the peer announced RFC 7427 at all.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// A signature scheme usable in an RFC 7427 AUTH payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// RSASSA-PKCS1-v1_5 with a SHA-2 hash.
    RsaPkcs1(Hash),
    /// RSASSA-PSS with a SHA-2 hash, MGF1 with the same hash, and a salt
    /// as long as the hash (strongSwan's default).
    RsaPss(Hash),
    /// ECDSA with a SHA-2 hash, the signature DER-encoded (RFC 7427 §3).
    Ecdsa(Hash),
    /// Ed25519 (RFC 8420).
    Ed25519,
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scheme::RsaPkcs1(h) => write!(f, "RSA_EMSA_PKCS1_{}", h.to_string().to_uppercase()),
            Scheme::RsaPss(h) => write!(f, "RSA_EMSA_PSS_{}", h.to_string().to_uppercase()),
            Scheme::Ecdsa(h) => write!(f, "ECDSA_WITH_{}_DER", h.to_string().to_uppercase()),
            Scheme::Ed25519 => f.write_str("ED25519"),
        }
    }
}

const RSA_PKCS1: [(Hash, &str); 3] = [
    (Hash::Sha256, "1.2.840.113549.1.1.11"),
    (Hash::Sha384, "1.2.840.113549.1.1.12"),
    (Hash::Sha512, "1.2.840.113549.1.1.13"),
];
const ECDSA: [(Hash, &str); 3] = [
    (Hash::Sha256, "1.2.840.10045.4.3.2"),
    (Hash::Sha384, "1.2.840.10045.4.3.3"),
    (Hash::Sha512, "1.2.840.10045.4.3.4"),
];
const RSA_PSS: &str = "1.2.840.113549.1.1.10";
const MGF1: &str = "1.2.840.113549.1.1.8";
const ED25519: &str = "1.3.101.112";

/// The largest AlgorithmIdentifier accepted in AUTH data.
const MAX_ALG_ID: usize = 128;

impl Scheme {
    /// The hash it announces in SIGNATURE_HASH_ALGORITHMS terms.
    pub fn hash(self) -> Hash {
        match self {
            Scheme::RsaPkcs1(h) | Scheme::RsaPss(h) | Scheme::Ecdsa(h) => h,
            Scheme::Ed25519 => Hash::Identity,
        }
    }

    /// Whether a key of `kind` signs with it.
    pub fn fits(self, kind: KeyKind) -> bool {
        matches!(
            (self, kind),
            (Scheme::RsaPkcs1(_) | Scheme::RsaPss(_), KeyKind::Rsa(_))
                | (Scheme::Ecdsa(_), KeyKind::Ecdsa(_))
                | (Scheme::Ed25519, KeyKind::Ed25519)
        )
    }

    /// The DER AlgorithmIdentifier naming it (RFC 7427 Appendix A).
    pub fn algorithm_identifier(self) -> Vec<u8> {
        let oid = |s: &str| ObjectIdentifier::new_unwrap(s);
        let find = |table: &[(Hash, &str)], h: Hash| {
            table.iter().find(|(t, _)| *t == h).map(|&(_, o)| oid(o))
        };
        let encoded = match self {
            // RFC 7427 A.1: NULL parameters for RSA PKCS#1.
            Scheme::RsaPkcs1(h) => AlgorithmIdentifierRef {
                oid: find(&RSA_PKCS1, h).unwrap_or(oid(RSA_PKCS1[0].1)),
                parameters: Some(AnyRef::NULL),
            }
            .to_der(),
            Scheme::Ecdsa(h) => AlgorithmIdentifierRef {
                oid: find(&ECDSA, h).unwrap_or(oid(ECDSA[0].1)),
                parameters: None,
            }
            .to_der(),
            Scheme::Ed25519 => AlgorithmIdentifierRef {
                oid: oid(ED25519),
                parameters: None,
            }
            .to_der(),
            Scheme::RsaPss(h) => {
                let hash = AlgorithmIdentifierRef {
                    oid: h.oid().unwrap_or(oid("2.16.840.1.101.3.4.2.1")),
                    parameters: Some(AnyRef::NULL),
                };
                let params = RsaPssParams {
                    hash,
                    mask_gen: AlgorithmIdentifier {
                        oid: oid(MGF1),
                        parameters: Some(hash),
                    },
                    salt_len: h.len(),
                    trailer_field: TrailerField::BC,
                };
                params.to_der().and_then(|p| {
                    AlgorithmIdentifierRef {
                        oid: oid(RSA_PSS),
                        parameters: Some(AnyRef::try_from(p.as_slice())?),
                    }
                    .to_der()
                })
            }
        };
        // Encoding fixed structures of known OIDs cannot fail.
        encoded.unwrap_or_default()
    }

    /// The scheme an AlgorithmIdentifier names, if flowsec verifies it:
    /// PKCS#1 v1.5 and ECDSA with SHA-2, PSS with a SHA-2 hash, MGF1 of
    /// the same hash and a salt of the hash's length, Ed25519.
    pub fn from_algorithm_identifier(der: &[u8]) -> Option<Scheme> {
        if der.len() > MAX_ALG_ID {
            return None;
        }
        let alg = AlgorithmIdentifierOwned::from_der(der).ok()?;
        let oid = alg.oid.to_string();
        let null_or_absent = match &alg.parameters {
            None => true,
            Some(p) => der::Tagged::tag(p) == der::Tag::Null && p.value().is_empty(),
        };
        if let Some(&(h, _)) = RSA_PKCS1.iter().find(|(_, o)| *o == oid) {
            return null_or_absent.then_some(Scheme::RsaPkcs1(h));
        }
        if let Some(&(h, _)) = ECDSA.iter().find(|(_, o)| *o == oid) {
            return alg.parameters.is_none().then_some(Scheme::Ecdsa(h));
        }
        if oid == ED25519 {
            return alg.parameters.is_none().then_some(Scheme::Ed25519);
        }
        if oid != RSA_PSS {
            return None;
        }
        let params = alg.parameters.as_ref()?.to_der().ok()?;
        let pss = RsaPssParams::from_der(&params).ok()?;
        let hash = [Hash::Sha256, Hash::Sha384, Hash::Sha512]
            .into_iter()
            .find(|h| h.oid() == Some(pss.hash.oid))?;
        let mgf_hash = pss.mask_gen.parameters.map(|p| p.oid);
        let ok = pss.mask_gen.oid.to_string() == MGF1
            && mgf_hash == hash.oid()
            && pss.salt_len == hash.len()
            && pss.trailer_field == TrailerField::BC;
        ok.then_some(Scheme::RsaPss(hash))
    }

    /// The AUTH data: length, AlgorithmIdentifier, `signature`.
    pub fn auth_data(self, signature: &[u8]) -> Vec<u8> {
        let alg = self.algorithm_identifier();
        let mut out = Vec::with_capacity(1 + alg.len() + signature.len());
        out.push(alg.len() as u8);
        out.extend_from_slice(&alg);
        out.extend_from_slice(signature);
        out
    }

    /// Splits AUTH data into its scheme and signature; `None` if the
    /// length or the AlgorithmIdentifier is not one flowsec verifies.
    pub fn split_auth_data(data: &[u8]) -> Option<(Scheme, &[u8])> {
        let (&len, rest) = data.split_first()?;
        let len = usize::from(len);
        if rest.len() < len {
            return None;
        }
        let (alg, sig) = rest.split_at(len);
        Some((Scheme::from_algorithm_identifier(alg)?, sig))
    }

    /// The crypto provider's name for it; `None` for a hash that does
    /// not go with it (Identity is Ed25519's only).
    pub fn signature_scheme(self) -> Option<SignatureScheme> {
        use SignatureScheme as S;
        Some(match self {
            Scheme::RsaPkcs1(Hash::Sha256) => S::RsaPkcs1Sha256,
            Scheme::RsaPkcs1(Hash::Sha384) => S::RsaPkcs1Sha384,
            Scheme::RsaPkcs1(Hash::Sha512) => S::RsaPkcs1Sha512,
            Scheme::RsaPss(Hash::Sha256) => S::RsaPssSha256,
            Scheme::RsaPss(Hash::Sha384) => S::RsaPssSha384,
            Scheme::RsaPss(Hash::Sha512) => S::RsaPssSha512,
            Scheme::Ecdsa(Hash::Sha256) => S::EcdsaSha256,
            Scheme::Ecdsa(Hash::Sha384) => S::EcdsaSha384,
            Scheme::Ecdsa(Hash::Sha512) => S::EcdsaSha512,
            Scheme::Ed25519 => S::Ed25519,
            Scheme::RsaPkcs1(Hash::Identity)
            | Scheme::RsaPss(Hash::Identity)
            | Scheme::Ecdsa(Hash::Identity) => return None,
        })
    }

    /// The scheme strongSwan signs with by default for a key of `kind`
    /// (PKCS#1 v1.5 with SHA-256 for RSA, the curve's hash for ECDSA), or
    /// with `pss`/`hash` asked for in `auth = rsa/pss-sha384` and the like.
    pub fn default_for(kind: KeyKind, pss: bool, hash: Option<Hash>) -> Scheme {
        match kind {
            KeyKind::Rsa(_) if pss => Scheme::RsaPss(hash.unwrap_or(Hash::Sha256)),
            KeyKind::Rsa(_) => Scheme::RsaPkcs1(hash.unwrap_or(Hash::Sha256)),
            KeyKind::Ecdsa(c) => Scheme::Ecdsa(hash.unwrap_or(match c {
                Curve::P256 => Hash::Sha256,
                Curve::P384 => Hash::Sha384,
                Curve::P521 => Hash::Sha512,
            })),
            KeyKind::Ed25519 => Scheme::Ed25519,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algorithm_identifiers_as_rfc_7427_appendix_a() {
        // A.1.2 sha256WithRSAEncryption, A.3.1 ecdsa-with-sha256 (hex from
        // the RFC).
        let a12 = hex::decode("300d06092a864886f70d01010b0500").unwrap();
        assert_eq!(Scheme::RsaPkcs1(Hash::Sha256).algorithm_identifier(), a12);
        let a31 = hex::decode("300a06082a8648ce3d040302").unwrap();
        assert_eq!(Scheme::Ecdsa(Hash::Sha256).algorithm_identifier(), a31);
        // RFC 8420 §2: id-Ed25519 without parameters.
        assert_eq!(
            Scheme::Ed25519.algorithm_identifier(),
            hex::decode("300506032b6570").unwrap()
        );
    }

    #[test]
    fn every_scheme_reads_back() {
        let all = [
            Scheme::RsaPkcs1(Hash::Sha256),
            Scheme::RsaPkcs1(Hash::Sha384),
            Scheme::RsaPkcs1(Hash::Sha512),
            Scheme::RsaPss(Hash::Sha256),
            Scheme::RsaPss(Hash::Sha384),
            Scheme::RsaPss(Hash::Sha512),
            Scheme::Ecdsa(Hash::Sha256),
            Scheme::Ecdsa(Hash::Sha384),
            Scheme::Ecdsa(Hash::Sha512),
            Scheme::Ed25519,
        ];
        for s in all {
            let data = s.auth_data(&[1, 2, 3]);
            assert_eq!(
                Scheme::split_auth_data(&data),
                Some((s, &[1u8, 2, 3][..])),
                "{s}"
            );
            assert!(s.signature_scheme().is_some());
        }
    }

    #[test]
    fn pss_with_another_salt_or_mask_hash_is_refused() {
        let oid = |s: &str| ObjectIdentifier::new_unwrap(s);
        let sha256 = AlgorithmIdentifierRef {
            oid: oid("2.16.840.1.101.3.4.2.1"),
            parameters: Some(AnyRef::NULL),
        };
        let sha384 = AlgorithmIdentifierRef {
            oid: oid("2.16.840.1.101.3.4.2.2"),
            parameters: Some(AnyRef::NULL),
        };
        for (mgf, salt) in [(sha256, 20), (sha384, 32)] {
            let p = RsaPssParams {
                hash: sha256,
                mask_gen: AlgorithmIdentifier {
                    oid: oid(MGF1),
                    parameters: Some(mgf),
                },
                salt_len: salt,
                trailer_field: TrailerField::BC,
            }
            .to_der()
            .unwrap();
            let alg = AlgorithmIdentifierRef {
                oid: oid(RSA_PSS),
                parameters: Some(AnyRef::try_from(p.as_slice()).unwrap()),
            }
            .to_der()
            .unwrap();
            assert_eq!(Scheme::from_algorithm_identifier(&alg), None);
        }
    }

    #[test]
    fn hostile_auth_data() {
        assert_eq!(Scheme::split_auth_data(&[]), None);
        assert_eq!(Scheme::split_auth_data(&[200, 1, 2]), None);
        assert_eq!(Scheme::split_auth_data(&[3, 0x30, 0x01, 0x00]), None);
        // sha1WithRSAEncryption: not used.
        let sha1 = hex::decode("0f300d06092a864886f70d0101050500").unwrap();
        assert_eq!(Scheme::split_auth_data(&sha1), None);
    }

    #[test]
    fn hash_sets() {
        let ours = HashSet::from_notify(&HashSet::ours());
        assert!(Hash::ALL.iter().all(|&h| ours.has(h)));
        let sha1_only = HashSet::from_notify(&[0, 1, 0]);
        assert!(sha1_only.is_empty());
    }
}
