//! Wire formats used by flowsec: zero-copy packet views and owned, validated
//! representations, in the style of smoltcp's `wire` module.
//!
//! # Panic contract
//!
//! Every format has a view `Packet<T: AsRef<[u8]>>` with `new_unchecked`,
//! `new_checked` and `check_len`. After `new_checked` (or a successful
//! `check_len`) succeeded, **no accessor panics**, whatever the bytes are.
//! Accessors on a view built with `new_unchecked` over a buffer that is too
//! short may panic; that is the caller's bargain.
//!
//! Every format also has an owned `Repr` with `parse` (validates everything
//! the RFC says a receiver must check), `buffer_len` and `emit`. `emit` panics
//! if given a buffer shorter than `buffer_len()`; that is a programming error,
//! never a property of network input.
//!
//! IANA numbers are newtypes over their integer so that unknown values
//! round-trip unchanged (see [`iana`]).
//!
//! IKEv2 ([`ike`]) is the exception to the view/`Repr` pattern: it is
//! control plane, so it has owned representations only, parsed from and
//! emitted to byte slices (its module doc says why).
#![forbid(unsafe_code)]
#![cfg_attr(not(test), warn(missing_docs))]

pub mod ah;
pub mod esp;
pub mod frag;
pub mod iana;
pub mod ike;
pub mod ip;
pub mod ipcomp;
pub mod ipv4;
pub mod ipv6;
pub mod ipv6ext;
pub mod tcp_encap;
pub mod udp;
pub mod udp_encap;
pub mod vici;

#[cfg(test)]
mod fuzz_tests;

pub use ah::{AhPacket, AhRepr};
pub use esp::{pad_len as esp_pad_len, EspPacket, EspRepr, EspTrailer};
pub use iana::IpProtocol;
pub use ip::{version_of, IpVersion};
pub use ipcomp::{IpCompPacket, IpCompRepr};
pub use ipv4::{checksum, Ipv4Packet, Ipv4Repr};
pub use ipv6::{Ipv6Packet, Ipv6Repr};
pub use ipv6ext::{
    ipv6_header_chain, ChainEntry, Ipv6Chain, Ipv6FragmentHeader, Ipv6FragmentRepr,
    Ipv6OptionsHeader, Ipv6RoutingHeader,
};
pub use udp::{UdpPacket, UdpRepr};
pub use udp_encap::UdpEncap;

use core::fmt;

/// A byte range inside a header; the field tables of each format use it.
pub type Field = core::ops::Range<usize>;
/// A field that extends to the end of the buffer.
pub type Rest = core::ops::RangeFrom<usize>;

/// Why bytes could not be read as a given format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The buffer is shorter than the header or than a length field says.
    Truncated,
    /// A length field is inconsistent (too small to hold the header, or
    /// claims more than is there).
    BadLength,
    /// A version field is not the one this format has.
    BadVersion,
    /// The header checksum does not match.
    BadChecksum,
    /// A field holds a value the RFC forbids.
    Malformed,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Error::Truncated => "truncated",
            Error::BadLength => "inconsistent length field",
            Error::BadVersion => "wrong version",
            Error::BadChecksum => "bad checksum",
            Error::Malformed => "malformed field",
        })
    }
}

impl std::error::Error for Error {}

/// Result type of this crate.
pub type Result<T> = core::result::Result<T, Error>;
