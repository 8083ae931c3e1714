//! Helpers shared by IPv4 and IPv6: telling the versions apart and
//! addressing both through [`std::net::IpAddr`].
//!
//! ```text
//!  0 1 2 3 4 5 6 7
//! +-+-+-+-+-+-+-+-+
//! |Version|  ...  |   the first nibble is the version in both RFC 791
//! +-+-+-+-+-+-+-+-+   and RFC 8200 headers
//! ```

use core::fmt;
use std::net::IpAddr;

use crate::{Error, Result};

/// The version of an IP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpVersion {
    /// IPv4 (RFC 791).
    V4,
    /// IPv6 (RFC 8200).
    V6,
}

impl IpVersion {
    /// The value of the header's version nibble.
    pub const fn number(self) -> u8 {
        match self {
            IpVersion::V4 => 4,
            IpVersion::V6 => 6,
        }
    }

    /// The version of an address.
    pub const fn of_addr(addr: &IpAddr) -> IpVersion {
        match addr {
            IpAddr::V4(_) => IpVersion::V4,
            IpAddr::V6(_) => IpVersion::V6,
        }
    }

    /// Length of the fixed header of this version: 20 (IPv4 without
    /// options) or 40.
    pub const fn min_header_len(self) -> usize {
        match self {
            IpVersion::V4 => 20,
            IpVersion::V6 => 40,
        }
    }
}

impl fmt::Display for IpVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IpVersion::V4 => "IPv4",
            IpVersion::V6 => "IPv6",
        })
    }
}

/// The IP version of a packet, read from its first nibble.
///
/// Returns [`Error::Truncated`] for an empty buffer and
/// [`Error::BadVersion`] for any version other than 4 or 6. The rest of the
/// header is not checked: use [`Ipv4Packet::new_checked`](crate::Ipv4Packet::new_checked)
/// or [`Ipv6Packet::new_checked`](crate::Ipv6Packet::new_checked) next.
pub fn version_of(packet: &[u8]) -> Result<IpVersion> {
    match packet.first().map(|b| b >> 4) {
        None => Err(Error::Truncated),
        Some(4) => Ok(IpVersion::V4),
        Some(6) => Ok(IpVersion::V6),
        Some(_) => Err(Error::BadVersion),
    }
}

/// Whether two addresses are of the same family, as the two ends of one
/// packet must be.
pub const fn same_family(a: &IpAddr, b: &IpAddr) -> bool {
    matches!(
        (a, b),
        (IpAddr::V4(_), IpAddr::V4(_)) | (IpAddr::V6(_), IpAddr::V6(_))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn test_version_of() {
        assert_eq!(version_of(&[0x45, 0]), Ok(IpVersion::V4));
        assert_eq!(version_of(&[0x60]), Ok(IpVersion::V6));
        assert_eq!(version_of(&[]), Err(Error::Truncated));
        assert_eq!(version_of(&[0x55]), Err(Error::BadVersion));
        assert_eq!(version_of(&[0x00]), Err(Error::BadVersion));
    }

    #[test]
    fn test_helpers() {
        let a = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let b = IpAddr::V6(Ipv6Addr::LOCALHOST);
        assert_eq!(IpVersion::of_addr(&a), IpVersion::V4);
        assert_eq!(IpVersion::of_addr(&b).number(), 6);
        assert!(same_family(&a, &a));
        assert!(!same_family(&a, &b));
        assert_eq!(IpVersion::V6.min_header_len(), 40);
        assert_eq!(IpVersion::V4.to_string(), "IPv4");
    }
}
