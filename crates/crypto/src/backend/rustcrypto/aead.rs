//! ESP AEADs.

use flowsec_wire::iana::EncrId;

use crate::traits::Aead;
use crate::CryptoError;

pub(super) fn build(_id: EncrId, _key: &[u8]) -> Option<Result<Box<dyn Aead>, CryptoError>> {
    None
}
