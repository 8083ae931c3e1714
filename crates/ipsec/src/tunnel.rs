//! Tunnel mode (RFC 4301 §5.1.2): adding and removing the outer IP header.
//! ESP and AH themselves then work exactly as in transport mode, with the
//! outer header as "the" IP header and IPv4/IPv6 as the next header.
//!
//! Outer header construction follows RFC 4301 §5.1.2.1: DSCP copied from
//! the inner header, ECN copied (RFC 6040 normal mode), DF copied for
//! IPv4-in-IPv4 and clear otherwise, hop limit set afresh.

use std::net::IpAddr;

use flowsec_wire::iana::IpProtocol;
use flowsec_wire::ip::IpVersion;
use flowsec_wire::ipv4::{self, Ipv4Packet, Ipv4Repr};
use flowsec_wire::ipv6::{self, Ipv6Packet, Ipv6Repr};

use crate::buf::PacketBuf;
use crate::layout::Layout;
use crate::DropReason;

/// Hop limit of outer headers (Linux's default TTL).
pub const OUTER_HOP_LIMIT: u8 = 64;

/// The outer header of a tunnel-mode SA, built once when the SA is created
/// (with the wire crate's `Repr::emit`) so that each packet costs a copy and
/// three patched fields.
#[derive(Clone)]
pub(crate) struct OuterHeader {
    bytes: [u8; ipv6::HEADER_LEN],
    version: IpVersion,
}

impl OuterHeader {
    /// The template for `src` → `dst`, or `None` for mixed families.
    pub fn new(src: IpAddr, dst: IpAddr) -> Option<Self> {
        let mut bytes = [0u8; ipv6::HEADER_LEN];
        let version = match (src, dst) {
            (IpAddr::V4(src_addr), IpAddr::V4(dst_addr)) => {
                let repr = Ipv4Repr {
                    src_addr,
                    dst_addr,
                    next_header: IpProtocol::IPV4,
                    payload_len: 0,
                    hop_limit: OUTER_HOP_LIMIT,
                    dscp_ecn: 0,
                    dont_frag: false,
                };
                repr.emit(&mut Ipv4Packet::new_unchecked(
                    &mut bytes[..ipv4::HEADER_LEN],
                ));
                IpVersion::V4
            }
            (IpAddr::V6(src_addr), IpAddr::V6(dst_addr)) => {
                let repr = Ipv6Repr {
                    src_addr,
                    dst_addr,
                    next_header: IpProtocol::IPV6,
                    payload_len: 0,
                    hop_limit: OUTER_HOP_LIMIT,
                    traffic_class: 0,
                    flow_label: 0,
                };
                repr.emit(&mut Ipv6Packet::new_unchecked(&mut bytes[..]));
                IpVersion::V6
            }
            _ => return None,
        };
        Some(OuterHeader { bytes, version })
    }

    /// Bytes this header takes.
    pub fn len(&self) -> usize {
        match self.version {
            IpVersion::V4 => ipv4::HEADER_LEN,
            IpVersion::V6 => ipv6::HEADER_LEN,
        }
    }

    /// Prepend the outer header, naming `protocol` as what follows it;
    /// returns the layout after it. `ident` is the IPv4 ID to use. Lengths
    /// and the IPv4 checksum are left to [`crate::layout::finish`].
    pub fn push(
        &self,
        buf: &mut PacketBuf,
        ident: u16,
        inner: &InnerInfo,
        protocol: IpProtocol,
    ) -> Result<Layout, DropReason> {
        let hdr = buf.prepend(self.len()).map_err(|_| DropReason::NoRoom)?;
        hdr.copy_from_slice(&self.bytes[..self.len()]);
        match self.version {
            IpVersion::V4 => {
                let mut p = Ipv4Packet::new_unchecked(hdr);
                p.set_dscp_ecn(inner.tos);
                p.set_ident(ident);
                p.set_dont_frag(inner.dont_frag);
                p.set_next_header(protocol);
                Ok(Layout::ipv4(ipv4::HEADER_LEN))
            }
            IpVersion::V6 => {
                let mut p = Ipv6Packet::new_unchecked(hdr);
                p.set_traffic_class(inner.tos);
                p.set_next_header(protocol);
                Ok(Layout::ipv6_fixed())
            }
        }
    }
}

/// What the outer header copies from the inner one.
pub(crate) struct InnerInfo {
    /// IPv4 or IPv6: the next header of the outer packet.
    pub next_header: IpProtocol,
    /// DSCP and ECN (RFC 4301 §5.1.2.1, RFC 6040 normal mode).
    pub tos: u8,
    /// DF, copied for IPv4 in IPv4 only.
    pub dont_frag: bool,
}

impl InnerInfo {
    /// Read from the inner packet. Only these fields are read: the packet
    /// comes from the local stack and is encrypted whole.
    pub fn of(inner: &[u8]) -> Result<Self, DropReason> {
        match inner.first().map(|b| b >> 4) {
            Some(4) if inner.len() >= ipv4::HEADER_LEN => Ok(InnerInfo {
                next_header: IpProtocol::IPV4,
                tos: inner[1],
                dont_frag: inner[6] & 0x40 != 0,
            }),
            Some(6) if inner.len() >= ipv6::HEADER_LEN => Ok(InnerInfo {
                next_header: IpProtocol::IPV6,
                tos: (inner[0] << 4) | (inner[1] >> 4),
                dont_frag: false,
            }),
            _ => Err(DropReason::BadInnerPacket),
        }
    }
}

/// Remove everything up to `lay.at` (the outer header), leaving the inner
/// packet, and trim what lies past the inner packet's own length (TFC
/// padding, RFC 4303 §2.7).
pub(crate) fn pop_outer(
    buf: &mut PacketBuf,
    lay: &Layout,
    next_header: u8,
) -> Result<(), DropReason> {
    buf.trim_front(lay.at);
    let inner = buf.as_slice();
    let len = match (next_header, inner.first().map(|b| b >> 4)) {
        (4, Some(4)) => {
            let p = Ipv4Packet::new_checked(inner).map_err(|_| DropReason::BadInnerPacket)?;
            usize::from(p.total_len())
        }
        (41, Some(6)) => {
            let p = Ipv6Packet::new_checked(inner).map_err(|_| DropReason::BadInnerPacket)?;
            flowsec_wire::ipv6::HEADER_LEN + usize::from(p.payload_len())
        }
        _ => return Err(DropReason::BadInnerPacket),
    };
    let extra = inner.len().saturating_sub(len);
    buf.trim_back(extra);
    Ok(())
}
