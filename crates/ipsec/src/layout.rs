//! Where IPsec headers go in (or are found in) an IP packet, and fixing
//! the IP header's lengths and checksum after headers move.

use std::net::IpAddr;

use flowsec_wire::iana::IpProtocol;
use flowsec_wire::ip::{version_of, IpVersion};
use flowsec_wire::ipv4::{self, Ipv4Packet};
use flowsec_wire::ipv6::{self, Ipv6Packet};
use flowsec_wire::ipv6ext::ipv6_header_chain;

use crate::process::SealError;
use crate::DropReason;

/// The IPsec insertion point of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    /// IP version of the (outer) header.
    pub version: IpVersion,
    /// Offset of the ESP/AH/IPComp (or UDP) header, or where it goes.
    pub at: usize,
    /// Offset of the next-header byte that names the header at `at`.
    pub nh_field: usize,
}

impl Layout {
    /// After an IPv4 header of `header_len` bytes.
    pub fn ipv4(header_len: usize) -> Self {
        Layout {
            version: IpVersion::V4,
            at: header_len,
            nh_field: ipv4::field::PROTOCOL,
        }
    }

    /// After a bare IPv6 fixed header.
    pub fn ipv6_fixed() -> Self {
        Layout {
            version: IpVersion::V6,
            at: ipv6::HEADER_LEN,
            nh_field: ipv6::NEXT_HEADER_OFFSET,
        }
    }

    /// The Next Header field that names what is at `at`.
    pub fn next_header(&self, packet: &[u8]) -> IpProtocol {
        IpProtocol(packet[self.nh_field])
    }

    /// Name what is at `at` now.
    pub fn set_next_header(&self, packet: &mut [u8], protocol: IpProtocol) {
        packet[self.nh_field] = protocol.0;
    }

    /// Where ESP/AH go in transport mode (RFC 4303 §3.1.1, RFC 4302
    /// §3.1.1): after the IPv4 header with its options, or after IPv6
    /// hop-by-hop and routing headers. Transport mode protects whole
    /// datagrams only (the same sections): a fragment is refused
    /// ([`SealError::Reassemble`]).
    pub fn outbound(packet: &[u8]) -> Result<Self, SealError> {
        match version_of(packet).map_err(|_| DropReason::BadIpHeader)? {
            IpVersion::V4 => {
                let p = Ipv4Packet::new_checked(packet).map_err(|_| DropReason::BadIpHeader)?;
                if p.is_fragment() {
                    return Err(SealError::Reassemble);
                }
                Ok(Layout::ipv4(p.header_len()))
            }
            IpVersion::V6 => {
                let chain =
                    ipv6_header_chain(packet).map_err(|_| DropReason::BadExtensionHeaders)?;
                if chain.has_fragment() {
                    return Err(SealError::Reassemble);
                }
                Ok(Layout {
                    version: IpVersion::V6,
                    at: chain.ipsec_insert_offset(),
                    nh_field: chain.ipsec_next_header_field(),
                })
            }
        }
    }

    /// Where the first header after the IP header (and IPv6 extension
    /// headers) is on receipt. Fragments must be reassembled first (RFC 4303
    /// §3.4.1): they are refused here.
    pub fn inbound(packet: &[u8]) -> Result<Self, DropReason> {
        match version_of(packet).map_err(|_| DropReason::BadIpHeader)? {
            IpVersion::V4 => {
                let p = Ipv4Packet::new_checked(packet).map_err(|_| DropReason::BadIpHeader)?;
                if p.is_fragment() {
                    return Err(DropReason::Fragment);
                }
                Ok(Layout::ipv4(p.header_len()))
            }
            IpVersion::V6 => {
                let chain =
                    ipv6_header_chain(packet).map_err(|_| DropReason::BadExtensionHeaders)?;
                if chain.has_fragment() {
                    return Err(DropReason::Fragment);
                }
                Ok(Layout {
                    version: IpVersion::V6,
                    at: chain.upper_offset(),
                    nh_field: chain.upper_next_header_field(),
                })
            }
        }
    }
}

/// The length of the IP packet at the start of `packet` (which may be
/// followed by link-layer padding).
pub(crate) fn ip_packet_len(packet: &[u8]) -> Result<usize, DropReason> {
    match version_of(packet).map_err(|_| DropReason::BadIpHeader)? {
        IpVersion::V4 => Ipv4Packet::new_checked(packet)
            .map(|p| usize::from(p.total_len()))
            .map_err(|_| DropReason::BadIpHeader),
        IpVersion::V6 => Ipv6Packet::new_checked(packet)
            .map(|p| ipv6::HEADER_LEN + usize::from(p.payload_len()))
            .map_err(|_| DropReason::BadIpHeader),
    }
}

/// The source and destination of the IP header.
pub(crate) fn addresses(packet: &[u8], version: IpVersion) -> (IpAddr, IpAddr) {
    match version {
        IpVersion::V4 => {
            let p = Ipv4Packet::new_unchecked(packet);
            (p.src_addr().into(), p.dst_addr().into())
        }
        IpVersion::V6 => {
            let p = Ipv6Packet::new_unchecked(packet);
            (p.src_addr().into(), p.dst_addr().into())
        }
    }
}

/// The IPv4 DSCP/ECN byte or the IPv6 Traffic Class of the IP header.
pub(crate) fn tos(packet: &[u8], version: IpVersion) -> u8 {
    match version {
        IpVersion::V4 => Ipv4Packet::new_unchecked(packet).dscp_ecn(),
        IpVersion::V6 => Ipv6Packet::new_unchecked(packet).traffic_class(),
    }
}

/// Set the IP header's length to the packet's and refresh the IPv4
/// checksum, after headers were added or removed.
pub(crate) fn finish(packet: &mut [u8], lay: &Layout) -> Result<(), DropReason> {
    match lay.version {
        IpVersion::V4 => {
            let len = u16::try_from(packet.len()).map_err(|_| DropReason::TooBig)?;
            let mut p = Ipv4Packet::new_unchecked(packet);
            p.set_total_len(len);
            p.fill_checksum();
        }
        IpVersion::V6 => {
            let len =
                u16::try_from(packet.len() - ipv6::HEADER_LEN).map_err(|_| DropReason::TooBig)?;
            Ipv6Packet::new_unchecked(packet).set_payload_len(len);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4303 §3.1.1: transport mode is for whole datagrams; a fragment
    /// from the TUN is refused (the peer could not reassemble it), a whole
    /// datagram is not.
    #[test]
    fn transport_mode_refuses_fragments() {
        // IPv4 header, 20 bytes, total 28: UDP to follow.
        let mut v4 = vec![
            0x45, 0, 0, 28, 0, 1, 0, 0, 64, 17, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2,
        ];
        v4.extend([0u8; 8]);
        assert!(Layout::outbound(&v4).is_ok());
        for (flags_hi, off_lo) in [(0x20, 0), (0x00, 0xb9), (0x20, 0xb9)] {
            let mut frag = v4.clone();
            frag[6] = flags_hi;
            frag[7] = off_lo;
            assert_eq!(
                Layout::outbound(&frag),
                Err(SealError::Reassemble),
                "flags/offset {flags_hi:#x}/{off_lo:#x}"
            );
        }
        // IPv6 with a Fragment header (44) before UDP.
        let mut v6 = vec![0x60, 0, 0, 0, 0, 16, 44, 64];
        v6.extend([0x20, 0x01, 0x0d, 0xb8].iter().chain(&[0; 11]).chain(&[1]));
        v6.extend([0x20, 0x01, 0x0d, 0xb8].iter().chain(&[0; 11]).chain(&[2]));
        v6.extend([17, 0, 0, 1, 0, 0, 0, 7]);
        v6.extend([0u8; 8]);
        assert_eq!(Layout::outbound(&v6), Err(SealError::Reassemble));
    }
}
