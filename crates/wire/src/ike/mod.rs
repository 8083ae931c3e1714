//! IKEv2 messages (RFC 7296 §3): the header, the payload chain and the
//! payloads the protocol core interprets.
//!
//! ```text
//! Message (§3.1, §3.2):
//! +-----------------------------+
//! | IKE header (28 bytes)       |  Next Payload names the first payload
//! +-----------------------------+
//! | generic payload header (4)  |  Next Payload, Critical, Payload Length
//! | payload body                |
//! +-----------------------------+
//! | ... up to Next Payload 0    |  or an SK payload (§3.14), which is last
//! +-----------------------------+
//! ```
//!
//! Unlike the data-plane formats of this crate, IKE payloads have no
//! zero-copy view: this is the control plane, messages are small and rare,
//! and every consumer wants the owned, validated form anyway. `parse`
//! copies bodies into `Vec`s, bounded by the `MAX_*` limits below, so that
//! hostile input can neither panic the parser nor make it allocate more
//! than a small multiple of the input's size.
//!
//! What `parse` checks is what RFC 7296 asks a receiver to check of the
//! encoding: every length field (payload, proposal, transform, attribute,
//! selector) consistent with its content and within its enclosure, the
//! Last Substruc and Num Transforms / Number of TSs / Num of SPIs counts,
//! proposal numbering, SPI sizes, selector types and lengths, nonce length.
//! Semantic checks (which payloads an exchange carries, whether a DH group
//! is the one proposed, start <= end of a selector) belong to the core.
//! Reserved fields and bits are ignored on receipt and written as zero.
//!
//! `emit` panics only on values no length field can hold (a payload over
//! 65535 bytes, more than 255 transforms, …): a programming error, never
//! a property of network input (see the crate's panic contract).

mod header;
mod notify;
mod payload;
mod sa;
mod simple;
mod ts;

use core::fmt;

pub use crate::iana::{
    AuthMethod, DhGroup, EsnId, ExchangeType, IdType, NotifyType, PayloadType, PrfId, ProtocolId,
    TransformType, TsType,
};
pub use header::{Header, HEADER_LEN};
pub use notify::{Delete, Notify};
pub use payload::{
    emit_payloads, first_type, parse_payloads, Message, Payload, GENERIC_HEADER_LEN,
};
pub use sa::Proposal;
pub use sa::Transform;
pub use simple::{
    cfg_attr, Auth, Cert, Cp, Id, Ke, CERT_X509_SIGNATURE, CFG_ACK, CFG_REPLY, CFG_REQUEST,
    CFG_SET, NONCE_MAX_LEN, NONCE_MIN_LEN,
};
pub use ts::TrafficSelector;

// Implementation limits (ours, not the RFC's): they bound what a parse may
// allocate. Each is far above what a real peer sends (strongSwan's largest
// default offer has 1 IKE proposal of ~40 transforms).

/// Most payloads one chain (a message, or an SK payload's plaintext) may
/// hold; more is [`IkeError::TooManyPayloads`].
pub const MAX_PAYLOADS: usize = 64;
/// Most proposals in one SA payload; more is [`IkeError::Malformed`].
pub const MAX_PROPOSALS: usize = 32;
/// Most transforms in one proposal; more is [`IkeError::Malformed`].
pub const MAX_TRANSFORMS: usize = 64;
/// Most traffic selectors in one TSi/TSr payload; more is
/// [`IkeError::Malformed`].
pub const MAX_TS: usize = 16;
/// Most SPIs in one Delete payload; more is [`IkeError::Malformed`].
pub const MAX_SPIS: usize = 256;

/// Why bytes could not be read as an IKE message or payload chain.
///
/// [`Truncated`](Self::Truncated) and [`BadLength`](Self::BadLength) are
/// about the IKE header and the generic payload headers; what is wrong
/// inside one payload (its substructures included) is
/// [`Malformed`](Self::Malformed), naming the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IkeError {
    /// Fewer bytes than the IKE header, a generic payload header, or the
    /// IKE header's Length needs.
    Truncated,
    /// A length field is inconsistent: the IKE header's Length differs from
    /// the message's size or is below 28, a Payload Length is below 4 or
    /// runs past the message, or bytes follow the last payload.
    BadLength,
    /// An unknown payload with the critical bit set (§2.5): answer
    /// UNSUPPORTED_CRITICAL_PAYLOAD.
    UnsupportedCritical(PayloadType),
    /// A payload's body breaks its format (which payload, what).
    Malformed(PayloadType, &'static str),
    /// Something follows the SK payload (§3.14: it must be the last one).
    SkNotLast,
    /// More payloads than [`MAX_PAYLOADS`] (bounded allocation).
    TooManyPayloads,
}

impl IkeError {
    /// The error notification that answers this (§2.5, §3.10.1):
    /// UNSUPPORTED_CRITICAL_PAYLOAD for an unknown critical payload,
    /// INVALID_SYNTAX for the rest.
    pub fn notify_type(&self) -> NotifyType {
        match self {
            IkeError::UnsupportedCritical(_) => NotifyType::UNSUPPORTED_CRITICAL_PAYLOAD,
            _ => NotifyType::INVALID_SYNTAX,
        }
    }
}

impl fmt::Display for IkeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IkeError::Truncated => f.write_str("truncated IKE message"),
            IkeError::BadLength => f.write_str("inconsistent IKE length field"),
            IkeError::UnsupportedCritical(t) => write!(f, "unsupported critical payload {t}"),
            IkeError::Malformed(t, what) => write!(f, "malformed {t} payload: {what}"),
            IkeError::SkNotLast => f.write_str("payload after the SK payload"),
            IkeError::TooManyPayloads => write!(f, "more than {MAX_PAYLOADS} payloads"),
        }
    }
}

impl std::error::Error for IkeError {}

/// A big-endian u16 at `b[at..at + 2]`; the caller has checked the length.
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// A big-endian u32 at `b[at..at + 4]`; the caller has checked the length.
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Writes `out.len() - start` into the 16-bit length field at
/// `out[start + 2..start + 4]` (every IKE substructure keeps its length
/// there: payloads §3.2, proposals §3.3.1, transforms §3.3.2).
///
/// # Panics
/// If the length does not fit 16 bits: a programming error (see the module
/// doc), e.g. a Vendor ID payload of 70000 bytes.
fn patch_len16(out: &mut [u8], start: usize, what: &str) {
    let len = out.len() - start;
    let Ok(len) = u16::try_from(len) else {
        panic!("IKE {what} of {len} bytes does not fit its 16-bit length field");
    };
    out[start + 2..start + 4].copy_from_slice(&len.to_be_bytes());
}

/// `n` as a u8 count or size field.
///
/// # Panics
/// If `n` is over 255: a programming error (see the module doc).
fn count8(n: usize, what: &str) -> u8 {
    let Ok(n) = u8::try_from(n) else {
        panic!("IKE {what} of {n} does not fit its 8-bit field");
    };
    n
}

#[cfg(test)]
pub(crate) mod tests;
