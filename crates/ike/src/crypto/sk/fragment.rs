//! The Encrypted Fragment (SKF) payload (RFC 7383 §2.5): one piece of an
//! IKE message's SK payload contents, protected on its own as the SK
//! payload is, so that each datagram can be verified before it is kept.
//!
//! ```text
//!  IKE header (28, Next Payload SKF)                    ─┐
//!  SKF generic header (4): Next Payload = the first      │ AEAD: associated data
//!    inner payload's type in fragment 1, NONE after      │ (§2.5: "the Encrypted Fragment
//!  Fragment Number (2), Total Fragments (2)             ─┘  payload header")
//!  IV, encrypted (this piece of the inner payloads, padding, pad length), ICV
//! ```

use flowsec_wire::ike::{Header, IkeError, PayloadType, HEADER_LEN};
use zeroize::Zeroizing;

use super::{SkCrypto, SkError};
use crate::random::Random;

/// The SKF generic header and the two fragment fields.
pub const SKF_HEADER_LEN: usize = 8;

/// One fragment, verified and decrypted.
#[derive(Debug)]
pub struct Fragment {
    /// 1 ..= `total`.
    pub number: u16,
    /// How many fragments the message has.
    pub total: u16,
    /// The first inner payload's type (fragment 1; NONE in the others).
    pub first: PayloadType,
    /// This fragment's piece of the inner payload chain.
    pub inner: Zeroizing<Vec<u8>>,
}

/// The Fragment Number of a message whose only payload is SKF, read
/// without verifying it (to tell a retransmitted request's first
/// fragment, RFC 7383 §2.6.1); `None` if it is too short.
pub fn fragment_number(raw: &[u8]) -> Option<u16> {
    let at = HEADER_LEN + 4;
    raw.get(at..at + 2)
        .map(|b| u16::from_be_bytes([b[0], b[1]]))
}

impl SkCrypto {
    /// The most inner-payload bytes one fragment carries when the whole
    /// IKE message (header included) may be `room` bytes (strongSwan's
    /// `message.c` computes it the same way: the padding to whole blocks
    /// is left out, then the pad length byte).
    pub fn fragment_room(&self, room: usize) -> usize {
        let fixed = HEADER_LEN + SKF_HEADER_LEN + self.iv_len() + self.icv_len();
        let block = self.block_len();
        (room.saturating_sub(fixed) / block * block).saturating_sub(1)
    }

    /// Fragment `number` of `total` of a message with `header` (its Next
    /// Payload and length are set here): `inner` is its piece of the inner
    /// payload chain, `first` the chain's first type (fragment 1) or NONE.
    ///
    /// # Panics
    /// If the fragment would exceed 65535 bytes (the caller cuts pieces to
    /// [`SkCrypto::fragment_room`]).
    pub fn seal_fragment(
        &self,
        header: &Header,
        first: PayloadType,
        (number, total): (u16, u16),
        inner: &[u8],
        rng: &mut dyn Random,
    ) -> Vec<u8> {
        let block = self.block_len();
        let pt_len = (inner.len() + 1).div_ceil(block) * block;
        let skf_len = SKF_HEADER_LEN + self.iv_len() + pt_len + self.icv_len();
        let Ok(skf_len16) = u16::try_from(skf_len) else {
            panic!("SKF payload of {skf_len} bytes does not fit its length field");
        };
        let length = (HEADER_LEN + skf_len) as u32;
        let header = Header {
            next_payload: PayloadType::SKF,
            length,
            ..header.clone()
        };
        let mut out = vec![0u8; HEADER_LEN + skf_len];
        header.emit(&mut out[..HEADER_LEN]);
        let h = HEADER_LEN;
        out[h] = first.0;
        out[h + 2..h + 4].copy_from_slice(&skf_len16.to_be_bytes());
        out[h + 4..h + 6].copy_from_slice(&number.to_be_bytes());
        out[h + 6..h + 8].copy_from_slice(&total.to_be_bytes());
        let iv_at = h + SKF_HEADER_LEN;
        let pt_at = iv_at + self.iv_len();
        out[pt_at..pt_at + inner.len()].copy_from_slice(inner);
        out[pt_at + pt_len - 1] = (pt_len - inner.len() - 1) as u8;
        self.seal_in_place(&mut out, iv_at, pt_len, rng);
        out
    }

    /// Verify and decrypt a received fragment (a message whose header's
    /// Next Payload is SKF, RFC 7383 §2.5: the only payload in it).
    pub fn open_fragment(&self, raw: &[u8]) -> Result<Fragment, SkError> {
        let bad = |why| SkError::Malformed(IkeError::Malformed(PayloadType::SKF, why));
        let header = Header::parse(raw).map_err(SkError::Malformed)?;
        if header.next_payload != PayloadType::SKF {
            return Err(SkError::NoSk);
        }
        let h = HEADER_LEN;
        if raw.len() < h + SKF_HEADER_LEN || header.length as usize != raw.len() {
            return Err(bad("shorter than its header"));
        }
        let skf_len = usize::from(u16::from_be_bytes([raw[h + 2], raw[h + 3]]));
        if skf_len != raw.len() - h {
            return Err(bad("is not the only payload"));
        }
        let number = u16::from_be_bytes([raw[h + 4], raw[h + 5]]);
        let total = u16::from_be_bytes([raw[h + 6], raw[h + 7]]);
        // §2.5: numbered from 1; a number above the total is invalid.
        if number == 0 || number > total {
            return Err(bad("fragment number 0 or above the total"));
        }
        let first = PayloadType(raw[h]);
        let inner = self.open_in_place(raw, h + SKF_HEADER_LEN, PayloadType::SKF)?;
        Ok(Fragment {
            number,
            total,
            first,
            inner,
        })
    }
}
