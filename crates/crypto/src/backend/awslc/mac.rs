//! ESP/AH integrity transforms and unkeyed hashes.

use flowsec_wire::iana::IntegId;

use super::super::HashAlg;
use crate::traits::{Hash, Integrity};
use crate::CryptoError;

pub(super) fn build(_id: IntegId, _key: &[u8]) -> Option<Result<Box<dyn Integrity>, CryptoError>> {
    None
}

pub(super) fn hash(_alg: HashAlg) -> Option<Box<dyn Hash>> {
    None
}
