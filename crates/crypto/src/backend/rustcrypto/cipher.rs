//! ESP ciphers (NULL, CBC and CTR modes).

use flowsec_wire::iana::EncrId;

use crate::traits::Cipher;
use crate::CryptoError;

pub(super) fn build(_id: EncrId, _key: &[u8]) -> Option<Result<Box<dyn Cipher>, CryptoError>> {
    None
}
