//! Tunnel mode (RFC 4301 §5.1.2): adding and removing the outer IP header.
//! ESP and AH themselves then work exactly as in transport mode, with the
//! outer header as "the" IP header and IPv4/IPv6 as the next header.
//!
//! Outer header construction follows RFC 4301 §5.1.2.1: DSCP copied from
//! the inner header, ECN copied (RFC 6040 normal mode), DF copied for
//! IPv4-in-IPv4 and clear otherwise, hop limit set afresh.

use std::net::IpAddr;

use flowsec_wire::iana::IpProtocol;
use flowsec_wire::ipv4::{Ipv4Packet, Ipv4Repr};
use flowsec_wire::ipv6::{Ipv6Packet, Ipv6Repr};

use crate::buf::PacketBuf;
use crate::layout::Layout;
use crate::DropReason;

/// Hop limit of outer headers (Linux's default TTL).
pub const OUTER_HOP_LIMIT: u8 = 64;

/// Prepend an outer header from `src` to `dst` to the IP packet in `buf`;
/// returns the layout at which ESP/AH go. `ident` is the IPv4 ID to use.
pub(crate) fn push_outer(
    buf: &mut PacketBuf,
    src: IpAddr,
    dst: IpAddr,
    ident: u16,
) -> Result<Layout, DropReason> {
    let inner = buf.as_slice();
    let (next_header, tos, dont_frag) = match inner.first().map(|b| b >> 4) {
        Some(4) => {
            let p = Ipv4Packet::new_checked(inner).map_err(|_| DropReason::BadInnerPacket)?;
            (IpProtocol::IPV4, p.dscp_ecn(), p.dont_frag())
        }
        Some(6) => {
            let p = Ipv6Packet::new_checked(inner).map_err(|_| DropReason::BadInnerPacket)?;
            (IpProtocol::IPV6, p.traffic_class(), false)
        }
        _ => return Err(DropReason::BadInnerPacket),
    };
    let payload_len = inner.len();
    match (src, dst) {
        (IpAddr::V4(src_addr), IpAddr::V4(dst_addr)) => {
            let repr = Ipv4Repr {
                src_addr,
                dst_addr,
                next_header,
                payload_len,
                hop_limit: OUTER_HOP_LIMIT,
                dscp_ecn: tos,
                dont_frag: dont_frag && next_header == IpProtocol::IPV4,
            };
            if payload_len + repr.buffer_len() > usize::from(u16::MAX) {
                return Err(DropReason::TooBig);
            }
            let hdr = buf
                .prepend(repr.buffer_len())
                .map_err(|_| DropReason::NoRoom)?;
            let mut p = Ipv4Packet::new_unchecked(hdr);
            repr.emit(&mut p);
            p.set_ident(ident);
            p.fill_checksum();
            Ok(Layout::ipv4(repr.buffer_len()))
        }
        (IpAddr::V6(src_addr), IpAddr::V6(dst_addr)) => {
            let repr = Ipv6Repr {
                src_addr,
                dst_addr,
                next_header,
                payload_len,
                hop_limit: OUTER_HOP_LIMIT,
                traffic_class: tos,
                flow_label: 0,
            };
            if payload_len > usize::from(u16::MAX) {
                return Err(DropReason::TooBig);
            }
            let hdr = buf
                .prepend(repr.buffer_len())
                .map_err(|_| DropReason::NoRoom)?;
            repr.emit(&mut Ipv6Packet::new_unchecked(hdr));
            Ok(Layout::ipv6_fixed())
        }
        _ => Err(DropReason::BadInnerPacket),
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
