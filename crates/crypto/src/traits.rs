//! The primitive shapes that backends implement. ESP and AH do not use the
//! first four directly; they use [`crate::EspTransform`] and [`Integrity`].
//! IKE uses [`Prf`] and [`KeyExchangeGroup`] / [`KeyExchange`] as they are
//! (RFC 7296 transform types 2 and 4), besides the ESP shapes for its SK
//! payload, and [`MsChapV2`] for EAP-MSCHAPv2. Signatures are in
//! [`crate::sign`].
//!
//! All implementations must zeroize key material on drop.

use flowsec_wire::iana::{DhGroup, PrfId};
use zeroize::Zeroizing;

use crate::random::Random;
use crate::CryptoError;

/// An AEAD as ESP uses it (RFC 4106, 4309, 7634): the nonce is
/// `salt || explicit IV`, the salt coming from the tail of the key material.
/// The explicit IV (8 bytes for every ESP AEAD) travels in the packet.
pub trait Aead: Send + Sync {
    /// Length of the tag this instance produces and expects (may be
    /// truncated, e.g. AES-GCM-8).
    fn tag_len(&self) -> usize;
    /// Encrypt `data` in place and write the tag.
    /// `iv` is the 8-byte explicit IV; `aad` the associated data.
    fn seal(&self, iv: &[u8; 8], aad: &[u8], data: &mut [u8], tag: &mut [u8]);
    /// Verify `tag` and decrypt `data` in place. On error `data` is left
    /// unspecified (it may be partly decrypted) and must not be used.
    fn open(
        &self,
        iv: &[u8; 8],
        aad: &[u8],
        data: &mut [u8],
        tag: &[u8],
    ) -> Result<(), CryptoError>;
}

/// A block cipher in CBC or CTR mode with its explicit per-packet IV
/// (RFC 3602, 3686, 2451, 4312).
pub trait Cipher: Send + Sync {
    /// Bytes of explicit IV carried in each packet.
    fn iv_len(&self) -> usize;
    /// The ciphertext must be a multiple of this (1 for stream modes).
    fn block_len(&self) -> usize;
    /// Fill `iv` for the packet with sequence number `seq`. CBC IVs must be
    /// unpredictable (RFC 3602 §3); CTR IVs must never repeat under a key
    /// (RFC 3686 §3). Implementations derive them from `seq` without I/O.
    fn make_iv(&self, seq: u64, iv: &mut [u8]);
    /// Encrypt in place; `data.len()` is a multiple of `block_len()`.
    fn encrypt(&self, iv: &[u8], data: &mut [u8]);
    /// Decrypt in place; `Err(BadLength)` unless `data.len()` is a multiple
    /// of `block_len()`.
    fn decrypt(&self, iv: &[u8], data: &mut [u8]) -> Result<(), CryptoError>;
}

/// A keyed MAC truncated to its ESP/AH length (e.g. HMAC-SHA1-96).
pub trait Integrity: Send + Sync {
    /// ICV length on the wire, in bytes.
    fn icv_len(&self) -> usize;
    /// MAC over the concatenation of `parts`; writes `icv_len()` bytes.
    fn sign(&self, parts: &[&[u8]], icv: &mut [u8]);
    /// Constant-time comparison of the MAC over `parts` with `icv`.
    fn verify(&self, parts: &[&[u8]], icv: &[u8]) -> bool;
}

/// An unkeyed hash, for `flowsec speed`'s raw rows (study S4 measured SHA-1).
pub trait Hash: Send + Sync {
    /// Digest length in bytes.
    fn output_len(&self) -> usize;
    /// Hash `data` into `out[..output_len()]`.
    fn digest(&self, data: &[u8], out: &mut [u8]);
}

/// An IKEv2 pseudorandom function (RFC 7296 §2.13; transform type 2,
/// §3.3.2). It holds no key: IKE keys a PRF a handful of times per SA,
/// almost every time with another key (SKEYSEED, prf+, AUTH), so each call
/// takes its key. Every implementation takes keys of any length (RFC 2104
/// §2 for HMAC, RFC 4434 §2 and RFC 4615 §3 for the AES PRFs).
pub trait Prf: Send + Sync {
    /// The IANA transform id.
    fn id(&self) -> PrfId;
    /// Bytes of output of one [`prf`](Self::prf).
    fn output_len(&self) -> usize;
    /// The preferred key length in bytes (§2.13): SK_d, SK_pi and SK_pr
    /// have this length (§2.14). For every PRF here it equals the output
    /// length (128 bits for the AES PRFs).
    fn preferred_key_len(&self) -> usize;
    /// prf(key, the concatenation of `parts`): [`output_len`](Self::output_len)
    /// bytes, zeroized when dropped.
    fn prf(&self, key: &[u8], parts: &[&[u8]]) -> Zeroizing<Vec<u8>>;
}

/// A key exchange method (transform type 4, RFC 7296 §3.3.2; and the
/// additional key exchanges of RFC 9370): the MODP, ECP and Curve25519
/// groups, and ML-KEM. It makes one [`KeyExchange`] per exchange: the
/// initiator's with [`start`](Self::start), the responder's with
/// [`respond`](Self::respond) (a KEM's answer depends on the initiator's
/// key).
pub trait KeyExchangeGroup: Send + Sync {
    /// The IANA transform id.
    fn group(&self) -> DhGroup;
    /// Bytes of the public value, as the KE payload carries it (§3.4).
    fn public_value_len(&self) -> usize;
    /// A fresh private value drawn from `rng`, and its public value.
    ///
    /// # Errors
    /// `KeyGenFailed` when `rng` yields no usable private value (only a
    /// broken generator does).
    fn start(&self, rng: &mut dyn Random) -> Result<Box<dyn KeyExchange>, CryptoError>;

    /// The responder's side, given the initiator's KE data `peer`: ours
    /// to send back (its [`KeyExchange::public_value`]) and the shared
    /// secret. Diffie-Hellman: a fresh exchange and g^ir (the default);
    /// a KEM: the ciphertext encapsulated to `peer` and its secret.
    ///
    /// # Errors
    /// `BadPublicValue` when `peer` fails its checks; `KeyGenFailed` for a
    /// broken `rng`.
    fn respond(&self, rng: &mut dyn Random, peer: &[u8]) -> Result<Responded, CryptoError> {
        let ours = self.start(rng)?;
        let secret = ours.shared_secret(peer)?;
        Ok((ours, secret))
    }
}

/// The responder's side of a key exchange once it answered: ours (its
/// public value is what we send) and the shared secret.
pub type Responded = (Box<dyn KeyExchange>, Zeroizing<Vec<u8>>);

/// One side of a key exchange: our private value (zeroized on drop), our
/// public value (the KE payload's data), and the computation of the shared
/// secret g^ir from the peer's (a KEM's initiator: the decapsulation of the
/// responder's ciphertext; a KEM's responder has nothing left to compute).
pub trait KeyExchange: Send {
    /// The group.
    fn group(&self) -> DhGroup;
    /// Our public value, encoded as the KE payload carries it.
    fn public_value(&self) -> &[u8];
    /// g^ir from the peer's public value, zeroized when dropped. The peer's
    /// value is checked first (§3.4, RFC 6989 §2).
    ///
    /// # Errors
    /// `BadPublicValue` when the check fails.
    fn shared_secret(&self, peer: &[u8]) -> Result<Zeroizing<Vec<u8>>, CryptoError>;
}

/// The legacy primitives MS-CHAPv2 (RFC 2759) is built on, for
/// EAP-MSCHAPv2 in IKE (RFC 7296 §2.16): MD4 and the DES-based
/// ChallengeResponse. The rest of MS-CHAPv2 (UTF-16 passwords, SHA-1 of
/// the challenges, the MPPE keys) is the protocol's, over
/// [`crate::fixed::sha1`].
pub trait MsChapV2: Send + Sync {
    /// MD4 (RFC 1320) of `data`: NtPasswordHash is MD4 of the UTF-16LE
    /// password (RFC 2759 §8.3), HashNtPasswordHash MD4 of that (§8.4).
    /// Zeroized when dropped: both are password equivalents.
    fn md4(&self, data: &[u8]) -> Zeroizing<[u8; 16]>;
    /// ChallengeResponse (§8.5): `challenge` encrypted with single DES
    /// under each of the three 7-octet thirds of the zero-padded
    /// 21-octet `password_hash`, each spread over a DES key with parity
    /// bits (§8.6). Any password hash is taken: a third may make a weak
    /// DES key (the last one does for a hash ending in two zero octets).
    fn challenge_response(&self, challenge: &[u8; 8], password_hash: &[u8; 16]) -> [u8; 24];
}

impl core::fmt::Debug for dyn MsChapV2 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("MsChapV2")
    }
}

impl core::fmt::Debug for dyn Prf {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}", self.id())
    }
}

impl core::fmt::Debug for dyn KeyExchangeGroup {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}", self.group())
    }
}
