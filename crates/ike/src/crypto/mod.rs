//! IKEv2's own cryptography (RFC 7296 §2.13–§2.18, §3.14): SKEYSEED and the
//! keys derived from it with prf+, the shared-key AUTH value, and the SK
//! (Encrypted) payload's protection — protocol constructions over the
//! algorithms of the [`Provider`] the core is given.
//!
//! ```text
//! KE payloads ──Provider::key_exchange──▶ g^ir ──keys::skeyseed──▶ SKEYSEED ──keys::ike_keys──▶ SK_d, SK_a*, SK_e*, SK_p*
//!                                                                  │
//!            SK_e*, SK_a* ──sk::SkCrypto──▶ seal / open IKE_AUTH and later messages
//!            SK_p*        ──keys::psk_auth──▶ AUTH payload (shared key)
//!            SK_d         ──keys::child_keymat──▶ ESP/AH keys; keys::rekey_skeyseed
//! ```
//!
//! Every algorithm comes from [`flowsec_crypto::Provider`]: the PRFs
//! ([`Provider::prf`], transform type 2) and key exchange groups
//! ([`Provider::key_exchange`], type 4) by transform id, and the ciphers
//! and integrity transforms of the SK payload, which are ESP's (IKE uses
//! the same algorithms and key material layout). This module holds no
//! algorithm code. Every secret is held in [`zeroize::Zeroizing`] and kept
//! out of `Debug` output.

pub mod keys;
pub mod prf;
pub mod sk;

use flowsec_crypto::{CryptoError, DhGroup, Provider};

use crate::random::Random;

pub use flowsec_crypto::KeyExchange;
pub use keys::{
    child_keymat, ike_keys, keyed_auth, ppk_key, psk_auth, rekey_skeyseed, signed_octets, skeyseed,
    IkeKeys, IkeSuite,
};
pub use prf::prf_plus;
pub use sk::{SkCrypto, SkError};

/// A fresh key exchange in `group` with `provider`'s implementation, its
/// private value drawn from `rng` (RFC 7296 §1.2, §3.4).
///
/// # Errors
/// `UnsupportedGroup` when `provider` lacks `group` (answer
/// INVALID_KE_PAYLOAD or pick another proposal); `KeyGenFailed` for a
/// broken `rng`.
pub fn key_exchange(
    provider: &Provider,
    group: DhGroup,
    rng: &mut dyn Random,
) -> Result<Box<dyn KeyExchange>, CryptoError> {
    provider
        .key_exchange(group)
        .ok_or(CryptoError::UnsupportedGroup(group))?
        .start(rng)
}

/// The responder's side of a key exchange in `group` with the
/// initiator's KE data `peer`: ours to send (its `public_value`) and the
/// shared secret (Diffie-Hellman's g^ir; a KEM's encapsulated secret,
/// draft-ietf-ipsecme-ikev2-mlkem §2).
///
/// # Errors
/// `UnsupportedGroup` when `provider` lacks `group`; `BadPublicValue` when
/// `peer` fails the method's checks (RFC 6989, FIPS 203 §7.2).
pub fn respond(
    provider: &Provider,
    group: DhGroup,
    rng: &mut dyn Random,
    peer: &[u8],
) -> Result<flowsec_crypto::Responded, CryptoError> {
    provider
        .key_exchange(group)
        .ok_or(CryptoError::UnsupportedGroup(group))?
        .respond(rng, peer)
}
