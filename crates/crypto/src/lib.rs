//! Crypto for flowsec's ESP, AH and IKEv2: a [`Provider`] that maps IANA
//! transform ids to working algorithms, and the backends that implement
//! them.
//!
//! ESP sees exactly one shape, [`EspTransform`]: seal or open one ESP packet
//! in place. AEADs (AES-GCM, AES-CCM, ChaCha20-Poly1305), AES-GMAC, and the
//! classic cipher + HMAC pairs are all wrapped into that shape by
//! [`esp`]. AH sees [`Integrity`]. IKE sees [`Prf`] (transform type 2) and
//! [`KeyExchangeGroup`] (type 4), and the ESP shapes for its SK payload;
//! it draws private values from the [`random::Random`] it is given. For
//! public-key authentication it has a key provider and signature
//! verification algorithms ([`sign`]), and for EAP-MSCHAPv2 MD4 and DES
//! ([`MsChapV2`]). The few hashes IKE fixes rather than negotiates are in
//! [`fixed`].
//!
//! There is no process-wide default provider: callers build a [`Provider`]
//! (usually [`Provider::fastest`]) and pass it to whoever creates SAs.
#![forbid(unsafe_code)]
#![cfg_attr(not(test), warn(missing_docs))]

pub mod backend;
pub mod engine;
mod error;
pub mod esp;
pub mod fixed;
pub mod policy;
mod provider;
pub mod random;
pub mod sign;
pub mod suite;
pub mod traits;

pub use error::CryptoError;
pub use esp::EspTransform;
pub use flowsec_wire::iana::{DhGroup, EncrId, IntegId, PrfId};
pub use provider::{Backend, Provider};
pub use traits::{
    Aead, Cipher, Hash, Integrity, KeyExchange, KeyExchangeGroup, MsChapV2, Prf, Responded,
};
