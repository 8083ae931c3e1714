//! IKEv2's own cryptography (RFC 7296 §2.13–§2.18, §3.14): the key
//! exchange, the PRFs and prf+, SKEYSEED and the keys derived from it, the
//! shared-key AUTH value, and the SK (Encrypted) payload's protection.
//!
//! ```text
//! KE payloads ──dh──▶ g^ir ──keys::skeyseed──▶ SKEYSEED ──keys::ike_keys──▶ SK_d, SK_a*, SK_e*, SK_p*
//!                                                                  │
//!            SK_e*, SK_a* ──sk::SkCrypto──▶ seal / open IKE_AUTH and later messages
//!            SK_p*        ──keys::psk_auth──▶ AUTH payload (shared key)
//!            SK_d         ──keys::child_keymat──▶ ESP/AH keys; keys::rekey_skeyseed
//! ```
//!
//! The PRFs come from [`flowsec_crypto::Provider::prf`] by transform id
//! (type 2; prf+ over them is [`prf::prf_plus`]), and the ciphers and
//! integrity transforms of the SK payload are the Provider's ESP ones (IKE
//! uses the same algorithms and key material layout). Every secret is held
//! in [`zeroize::Zeroizing`] and kept out of `Debug` output.

pub mod dh;
pub mod keys;
pub mod prf;
pub mod sk;

pub use dh::{key_exchange, public_value_len, DhError, KeyExchange};
pub use keys::{child_keymat, ike_keys, psk_auth, rekey_skeyseed, skeyseed, IkeKeys, IkeSuite};
pub use prf::prf_plus;
pub use sk::{SkCrypto, SkError};
