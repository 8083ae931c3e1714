//! ML-KEM (FIPS 203) as IKEv2 key exchange methods 35, 36 and 37
//! (draft-ietf-ipsecme-ikev2-mlkem §2; RFC 9370 additional key
//! exchanges), via aws-lc.
//!
//! | method | initiator's KE data: `ek` | responder's KE data: `c` | shared secret |
//! |---|---|---|---|
//! | ML-KEM-512 (35) | 800 bytes | 768 bytes | 32 bytes |
//! | ML-KEM-768 (36) | 1184 bytes | 1088 bytes | 32 bytes |
//! | ML-KEM-1024 (37) | 1568 bytes | 1568 bytes | 32 bytes |
//!
//! A KEM is not symmetric as Diffie-Hellman is: the initiator's
//! [`KeyExchangeGroup::start`] makes a key pair and sends `ek`; the
//! responder's [`KeyExchangeGroup::respond`] encapsulates to it and sends
//! the ciphertext; the initiator's [`KeyExchange::shared_secret`]
//! decapsulates. Input checks (draft §2.2): the responder checks `ek` as
//! FIPS 203 §7.2 says (its length, and every 12-bit coefficient of its
//! first 384·k bytes below q = 3329, the "modulus check", here whatever
//! aws-lc does), the initiator the ciphertext's length (§7.3; a wrong
//! ciphertext of the right length decapsulates to an unrelated secret,
//! implicit rejection, and fails AUTH later). Keys come from aws-lc's
//! generator, not the caller's [`Random`] (aws-lc has no seeded key
//! generation); aws-lc cleanses its key memory when freeing it, and the
//! shared secret is zeroized when dropped.

use aws_lc_rs::kem::{self, Ciphertext, DecapsulationKey, EncapsulationKey};
use flowsec_wire::iana::DhGroup;
use zeroize::Zeroizing;

use crate::random::Random;
use crate::traits::{KeyExchange, KeyExchangeGroup, Responded};
use crate::CryptoError;

/// q, ML-KEM's modulus (FIPS 203 §2.4).
const Q: u16 = 3329;

/// ML-KEM-512 (FIPS 203 Table 2, k = 2).
pub(crate) static ML_KEM_512: MlKem = MlKem {
    group: DhGroup::ML_KEM_512,
    alg: &kem::ML_KEM_512,
    k: 2,
    ciphertext_len: 768,
};
/// ML-KEM-768 (k = 3).
pub(crate) static ML_KEM_768: MlKem = MlKem {
    group: DhGroup::ML_KEM_768,
    alg: &kem::ML_KEM_768,
    k: 3,
    ciphertext_len: 1088,
};
/// ML-KEM-1024 (k = 4).
pub(crate) static ML_KEM_1024: MlKem = MlKem {
    group: DhGroup::ML_KEM_1024,
    alg: &kem::ML_KEM_1024,
    k: 4,
    ciphertext_len: 1568,
};

/// One ML-KEM parameter set.
#[derive(Clone, Copy)]
pub(crate) struct MlKem {
    group: DhGroup,
    alg: &'static kem::Algorithm<kem::AlgorithmId>,
    /// The module rank k.
    k: usize,
    ciphertext_len: usize,
}

impl MlKem {
    /// Bytes of an encapsulation key: 384·k + 32 (FIPS 203 §7.2).
    fn ek_len(&self) -> usize {
        384 * self.k + 32
    }

    /// FIPS 203 §7.2's input check of an encapsulation key: its length
    /// (the type check) and ByteEncode12(ByteDecode12(ek[0:384k])) ==
    /// ek[0:384k] (the modulus check: every coefficient below q).
    pub(crate) fn check_encapsulation_key(&self, ek: &[u8]) -> Result<(), CryptoError> {
        if ek.len() != self.ek_len() {
            return Err(CryptoError::BadPublicValue);
        }
        // Two 12-bit coefficients in each 3 bytes, little-endian.
        let below_q = ek[..384 * self.k].chunks_exact(3).all(|b| {
            let lo = u16::from(b[0]) | (u16::from(b[1] & 0x0f) << 8);
            let hi = u16::from(b[1] >> 4) | (u16::from(b[2]) << 4);
            lo < Q && hi < Q
        });
        if below_q {
            Ok(())
        } else {
            Err(CryptoError::BadPublicValue)
        }
    }
}

impl KeyExchangeGroup for MlKem {
    fn group(&self) -> DhGroup {
        self.group
    }

    fn public_value_len(&self) -> usize {
        self.ek_len()
    }

    fn start(&self, _rng: &mut dyn Random) -> Result<Box<dyn KeyExchange>, CryptoError> {
        let failed = |_| CryptoError::KeyGenFailed(self.group);
        let dk = DecapsulationKey::generate(self.alg).map_err(failed)?;
        let ek = dk.encapsulation_key().map_err(failed)?;
        let public = ek.key_bytes().map_err(failed)?.as_ref().to_vec();
        Ok(Box::new(Decapsulator {
            kem: *self,
            dk,
            public,
        }))
    }

    fn respond(&self, _rng: &mut dyn Random, peer: &[u8]) -> Result<Responded, CryptoError> {
        self.check_encapsulation_key(peer)?;
        let ek = EncapsulationKey::new(self.alg, peer).map_err(|_| CryptoError::BadPublicValue)?;
        let (c, ss) = ek
            .encapsulate()
            .map_err(|_| CryptoError::KeyGenFailed(self.group))?;
        let secret = Zeroizing::new(ss.as_ref().to_vec());
        let sent = Encapsulated {
            group: self.group,
            ciphertext: c.as_ref().to_vec(),
        };
        Ok((Box::new(sent), secret))
    }
}

/// The initiator's side: the decapsulation key, and `ek` to send.
struct Decapsulator {
    kem: MlKem,
    dk: DecapsulationKey<kem::AlgorithmId>,
    public: Vec<u8>,
}

impl KeyExchange for Decapsulator {
    fn group(&self) -> DhGroup {
        self.kem.group
    }

    fn public_value(&self) -> &[u8] {
        &self.public
    }

    /// The shared secret of the responder's ciphertext `peer` (its length
    /// checked first, FIPS 203 §7.3).
    fn shared_secret(&self, peer: &[u8]) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
        if peer.len() != self.kem.ciphertext_len {
            return Err(CryptoError::BadPublicValue);
        }
        let ss = self
            .dk
            .decapsulate(Ciphertext::from(peer))
            .map_err(|_| CryptoError::BadPublicValue)?;
        Ok(Zeroizing::new(ss.as_ref().to_vec()))
    }
}

/// The responder's side once it encapsulated: the ciphertext to send.
/// Its secret came with it ([`KeyExchangeGroup::respond`]); there is
/// nothing more to compute.
struct Encapsulated {
    group: DhGroup,
    ciphertext: Vec<u8>,
}

impl KeyExchange for Encapsulated {
    fn group(&self) -> DhGroup {
        self.group
    }

    fn public_value(&self) -> &[u8] {
        &self.ciphertext
    }

    fn shared_secret(&self, _peer: &[u8]) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
        Err(CryptoError::BadPublicValue)
    }
}

/// The shared secret that decapsulation key `dk` (FIPS 203's 768·k + 96
/// bytes) gets from ciphertext `c`: for the known-answer tests.
#[cfg(test)]
pub(crate) fn decapsulate_with(
    kem: &MlKem,
    dk: &[u8],
    c: &[u8],
) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
    let dk = DecapsulationKey::new(kem.alg, dk).map_err(|_| CryptoError::BadPublicValue)?;
    let ss = dk
        .decapsulate(Ciphertext::from(c))
        .map_err(|_| CryptoError::BadPublicValue)?;
    Ok(Zeroizing::new(ss.as_ref().to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::OsRandom;

    /// Hex lines `NAME = HEX` of a vector file, case by case.
    fn cases(text: &str) -> Vec<Vec<(String, Vec<u8>)>> {
        let mut all = Vec::new();
        let mut case = Vec::new();
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                if !case.is_empty() {
                    all.push(std::mem::take(&mut case));
                }
                continue;
            }
            let (name, hex) = line.split_once('=').expect("NAME = HEX");
            let hex = hex.trim();
            let bytes = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            case.push((name.trim().to_string(), bytes));
        }
        if !case.is_empty() {
            all.push(case);
        }
        all
    }

    fn get<'a>(case: &'a [(String, Vec<u8>)], name: &str) -> &'a [u8] {
        &case.iter().find(|(n, _)| n == name).unwrap().1
    }

    fn vectors(file: &str) -> String {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/mlkem/");
        std::fs::read_to_string(format!("{dir}{file}")).expect(file)
    }

    /// NIST ACVP ML-KEM encapDecap (decapsulation) vectors, including
    /// one with a modified ciphertext (implicit rejection: the secret is
    /// J(z ‖ c), not an error).
    #[test]
    fn decapsulation_matches_the_acvp_vectors() {
        for (kem, file) in [
            (&ML_KEM_512, "mlkem512_decap.txt"),
            (&ML_KEM_768, "mlkem768_decap.txt"),
            (&ML_KEM_1024, "mlkem1024_decap.txt"),
        ] {
            let all = cases(&vectors(file));
            assert!(all.len() >= 3, "{file}");
            for case in &all {
                let k = decapsulate_with(kem, get(case, "dk"), get(case, "c")).unwrap();
                assert_eq!(&k[..], get(case, "k"), "{file}");
            }
        }
    }

    /// C2SP/CCTV's encapsulation keys with a coefficient >= q: refused
    /// by the responder before it encapsulates (FIPS 203 §7.2).
    #[test]
    fn a_key_that_fails_the_modulus_check_is_refused() {
        let mut rng = OsRandom;
        for (kem, file) in [
            (&ML_KEM_512, "mlkem512_invalid_ek.txt"),
            (&ML_KEM_768, "mlkem768_invalid_ek.txt"),
            (&ML_KEM_1024, "mlkem1024_invalid_ek.txt"),
        ] {
            let all = cases(&vectors(file));
            assert!(!all.is_empty(), "{file}");
            for case in &all {
                let ek = get(case, "ek");
                assert_eq!(ek.len(), kem.ek_len(), "{file}");
                assert!(kem.check_encapsulation_key(ek).is_err(), "{file}");
                assert!(kem.respond(&mut rng, ek).is_err(), "{file}");
            }
        }
    }

    #[test]
    fn both_ends_get_the_same_secret_and_bad_lengths_are_refused() {
        let mut rng = OsRandom;
        for kem in [&ML_KEM_512, &ML_KEM_768, &ML_KEM_1024] {
            let initiator = kem.start(&mut rng).unwrap();
            let ek = initiator.public_value().to_vec();
            assert_eq!(ek.len(), kem.public_value_len());
            kem.check_encapsulation_key(&ek).unwrap();
            let (responder, ss_r) = kem.respond(&mut rng, &ek).unwrap();
            let c = responder.public_value().to_vec();
            assert_eq!(c.len(), kem.ciphertext_len);
            let ss_i = initiator.shared_secret(&c).unwrap();
            assert_eq!((ss_i.len(), &ss_i[..]), (32, &ss_r[..]));
            // Wrong lengths, both ways; a coefficient of q itself.
            assert!(kem.respond(&mut rng, &ek[1..]).is_err());
            assert!(initiator.shared_secret(&c[1..]).is_err());
            let mut bad = ek.clone();
            bad[0] = 0x01;
            bad[1] = (bad[1] & 0xf0) | 0x0d; // 0xd01 = 3329 = q
            assert!(kem.check_encapsulation_key(&bad).is_err());
            // A tampered ciphertext: another secret, not an error.
            let mut c2 = c.clone();
            c2[0] ^= 1;
            assert_ne!(&initiator.shared_secret(&c2).unwrap()[..], &ss_r[..]);
        }
    }
}
