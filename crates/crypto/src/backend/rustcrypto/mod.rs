//! The rustcrypto backend. Each algorithm family lives in its own file; each file's
//! `build` returns `None` for ids it does not implement. `prf` and `modp`
//! hold IKE's PRFs and MODP groups, listed in [`super::IKE_PRFS`] and
//! [`super::IKE_KEY_EXCHANGES`]; `mschapv2` EAP-MSCHAPv2's MD4 and DES.

mod aead;
mod cipher;
mod ivgen;
mod mac;
pub(super) mod modp;
mod modp_primes;
mod mschapv2;
pub(super) mod prf;
mod twofish;
mod xcbc;

use flowsec_wire::iana::{EncrId, IntegId};

use super::HashAlg;
use crate::traits::{Aead, Cipher, Hash, Integrity};
use crate::{Backend, CryptoError};

pub use mschapv2::RustCryptoMsChapV2;

/// The rustcrypto backend.
#[derive(Debug, Clone, Copy, Default)]
pub struct RustCrypto;

impl Backend for RustCrypto {
    fn name(&self) -> &'static str {
        "rustcrypto"
    }
    fn aead(&self, id: EncrId, key: &[u8]) -> Option<Result<Box<dyn Aead>, CryptoError>> {
        aead::build(id, key)
    }
    fn cipher(&self, id: EncrId, key: &[u8]) -> Option<Result<Box<dyn Cipher>, CryptoError>> {
        cipher::build(id, key)
    }
    fn integrity(
        &self,
        id: IntegId,
        key: &[u8],
    ) -> Option<Result<Box<dyn Integrity>, CryptoError>> {
        mac::build(id, key)
    }
    fn hash(&self, alg: HashAlg) -> Option<Box<dyn Hash>> {
        mac::hash(alg)
    }
}
