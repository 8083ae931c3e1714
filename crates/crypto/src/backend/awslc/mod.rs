//! The aws-lc backend. Each algorithm family lives in its own file; each file's
//! `build` returns `None` for ids it does not implement. `ecdh` holds IKE's
//! elliptic-curve groups, listed in [`super::IKE_KEY_EXCHANGES`]; `sign`
//! its key provider and signature verification algorithms.

mod aead;
mod cipher;
pub(super) mod ecdh;
mod mac;
pub(super) mod mlkem;
pub(super) mod sign;

use flowsec_wire::iana::{EncrId, IntegId};

use super::HashAlg;
use crate::traits::{Aead, Cipher, Hash, Integrity};
use crate::{Backend, CryptoError};

pub use sign::AwsLcKeys;

/// The aws-lc backend.
#[derive(Debug, Clone, Copy, Default)]
pub struct AwsLc;

impl Backend for AwsLc {
    fn name(&self) -> &'static str {
        "aws-lc"
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
