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

use crate::iana::IpProtocol;
use crate::ipv4::{self, Ipv4Packet, Ipv4Repr};
use crate::ipv6::{self, Ipv6Packet, Ipv6Repr};
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

/// The fixed header of either IP version, for code that builds a header
/// from addresses it was given (a tunnel's outer header, the header a UDP
/// socket removed): IPv4 without options and with DF clear, IPv6 with flow
/// label 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpRepr {
    /// Source address.
    pub src: IpAddr,
    /// Destination address; of the same family as `src`.
    pub dst: IpAddr,
    /// The Protocol / Next Header field.
    pub next_header: IpProtocol,
    /// Bytes after the header.
    pub payload_len: usize,
    /// TTL / Hop Limit.
    pub hop_limit: u8,
    /// The IPv4 DSCP/ECN byte, or the IPv6 Traffic Class.
    pub tos: u8,
}

impl IpRepr {
    /// Length of the header `emit` writes: 20 or 40.
    pub const fn buffer_len(&self) -> usize {
        IpVersion::of_addr(&self.src).min_header_len()
    }

    /// Writes the header (with its IPv4 checksum) into `buf`; the payload
    /// is not touched. [`Error::Malformed`] if the two addresses are of
    /// different families.
    ///
    /// # Panics
    /// If `buf` is shorter than [`buffer_len`](Self::buffer_len) (a
    /// programming error).
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        match (self.src, self.dst) {
            (IpAddr::V4(src_addr), IpAddr::V4(dst_addr)) => Ipv4Repr {
                src_addr,
                dst_addr,
                next_header: self.next_header,
                payload_len: self.payload_len,
                hop_limit: self.hop_limit,
                dscp_ecn: self.tos,
                dont_frag: false,
            }
            .emit(&mut Ipv4Packet::new_unchecked(&mut buf[..ipv4::HEADER_LEN])),
            (IpAddr::V6(src_addr), IpAddr::V6(dst_addr)) => Ipv6Repr {
                src_addr,
                dst_addr,
                next_header: self.next_header,
                payload_len: self.payload_len,
                hop_limit: self.hop_limit,
                traffic_class: self.tos,
                flow_label: 0,
            }
            .emit(&mut Ipv6Packet::new_unchecked(&mut buf[..ipv6::HEADER_LEN])),
            _ => return Err(Error::Malformed),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn test_ip_repr_emit() {
        let repr = IpRepr {
            src: "192.0.2.1".parse().unwrap(),
            dst: "192.0.2.2".parse().unwrap(),
            next_header: IpProtocol::UDP,
            payload_len: 8,
            hop_limit: 64,
            tos: 0x02,
        };
        let mut buf = [0u8; 40];
        repr.emit(&mut buf).unwrap();
        let p = Ipv4Packet::new_checked(&buf[..28]).unwrap();
        assert_eq!(
            (p.total_len(), p.dscp_ecn(), p.next_header()),
            (28, 2, IpProtocol::UDP)
        );
        assert!(p.verify_checksum());
        let v6 = IpRepr {
            src: "2001:db8::1".parse().unwrap(),
            dst: "2001:db8::2".parse().unwrap(),
            ..repr
        };
        assert_eq!(v6.buffer_len(), 40);
        v6.emit(&mut buf).unwrap();
        let p = Ipv6Packet::new_unchecked(&buf[..]);
        assert_eq!((p.payload_len(), p.traffic_class()), (8, 2));
        let mixed = IpRepr {
            dst: "192.0.2.2".parse().unwrap(),
            ..v6
        };
        assert_eq!(mixed.emit(&mut buf), Err(Error::Malformed));
    }

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
