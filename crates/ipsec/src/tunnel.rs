//! Tunnel mode (RFC 4301 §5.1.2): adding and removing the outer IP header.
//! ESP and AH themselves then work exactly as in transport mode, with the
//! outer header as "the" IP header and IPv4/IPv6 as the next header.
//!
//! Outer header construction follows RFC 4301 §5.1.2.1: DSCP copied from
//! the inner header, ECN copied (RFC 6040 normal mode), DF copied for
//! IPv4-in-IPv4 and clear otherwise, hop limit set afresh.

use std::net::IpAddr;

use flowsec_wire::iana::IpProtocol;
use flowsec_wire::ip::{version_of, IpVersion};
use flowsec_wire::ipv4::{self, Ipv4Packet, Ipv4Repr};
use flowsec_wire::ipv6::{self, Ipv6Packet, Ipv6Repr};

use crate::buf::PacketBuf;
use crate::layout::{self, Layout};
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
        match version_of(inner) {
            Ok(IpVersion::V4) if inner.len() >= ipv4::HEADER_LEN => {
                let p = Ipv4Packet::new_unchecked(inner);
                Ok(InnerInfo {
                    next_header: IpProtocol::IPV4,
                    tos: p.dscp_ecn(),
                    dont_frag: p.dont_frag(),
                })
            }
            Ok(IpVersion::V6) if inner.len() >= ipv6::HEADER_LEN => Ok(InnerInfo {
                next_header: IpProtocol::IPV6,
                tos: Ipv6Packet::new_unchecked(inner).traffic_class(),
                dont_frag: false,
            }),
            _ => Err(DropReason::BadInnerPacket),
        }
    }
}

/// Remove everything up to `lay.at` (the outer header) and finish the
/// inner packet ([`finish_inner`], with the outer header's ECN).
pub(crate) fn pop_outer(
    buf: &mut PacketBuf,
    lay: &Layout,
    next_header: IpProtocol,
) -> Result<(), DropReason> {
    let outer_tos = layout::tos(buf.as_slice(), lay.version);
    buf.trim_front(lay.at);
    finish_inner(buf, next_header, outer_tos)
}

/// `buf` holds a tunnel's inner packet, named `next_header` by the IPsec
/// header it came out of: trim what lies past its own length (TFC padding,
/// RFC 4303 §2.7), and merge the ECN field of the outer header (`outer_tos`,
/// its DSCP/ECN byte or Traffic Class) into the inner one (RFC 6040 §4.2,
/// as RFC 4301 §5.1.2.1 asks).
pub(crate) fn finish_inner(
    buf: &mut PacketBuf,
    next_header: IpProtocol,
    outer_tos: u8,
) -> Result<(), DropReason> {
    let inner = buf.as_slice();
    let (version, len) = match (next_header, version_of(inner)) {
        (IpProtocol::IPV4, Ok(IpVersion::V4)) => {
            let p = Ipv4Packet::new_checked(inner).map_err(|_| DropReason::BadInnerPacket)?;
            (IpVersion::V4, usize::from(p.total_len()))
        }
        (IpProtocol::IPV6, Ok(IpVersion::V6)) => {
            let p = Ipv6Packet::new_checked(inner).map_err(|_| DropReason::BadInnerPacket)?;
            (
                IpVersion::V6,
                ipv6::HEADER_LEN + usize::from(p.payload_len()),
            )
        }
        _ => return Err(DropReason::BadInnerPacket),
    };
    let extra = inner.len().saturating_sub(len);
    buf.trim_back(extra);
    let inner_tos = layout::tos(buf.as_slice(), version);
    let inner_ecn = inner_tos & ECN_MASK;
    let ecn = decapsulated_ecn(inner_ecn, outer_tos & ECN_MASK).ok_or(DropReason::EcnCeOnNotEct)?;
    if ecn != inner_ecn {
        let tos = (inner_tos & !ECN_MASK) | ecn;
        let packet = buf.as_mut_slice();
        match version {
            IpVersion::V4 => {
                let mut p = Ipv4Packet::new_unchecked(packet);
                p.set_dscp_ecn(tos);
                p.fill_checksum();
            }
            IpVersion::V6 => Ipv6Packet::new_unchecked(packet).set_traffic_class(tos),
        }
    }
    Ok(())
}

/// The ECN bits of a DSCP/ECN byte or Traffic Class (RFC 3168 §5).
const ECN_MASK: u8 = 0b11;

/// ECN codepoints (RFC 3168 §5).
const NOT_ECT: u8 = 0b00;
const ECT1: u8 = 0b01;
const ECT0: u8 = 0b10;
const CE: u8 = 0b11;

/// RFC 6040 §4.2, Figure 4: the inner ECN field after decapsulation, or
/// `None` where the packet must be dropped (CE outside a Not-ECT packet:
/// congestion the endpoints could never learn of).
fn decapsulated_ecn(inner: u8, outer: u8) -> Option<u8> {
    match (inner, outer) {
        (NOT_ECT, CE) => None,
        (NOT_ECT, _) => Some(NOT_ECT),
        (CE, _) | (_, CE) => Some(CE),
        (ECT0, ECT1) => Some(ECT1),
        (inner, _) => Some(inner),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_6040_decapsulation_table() {
        // Rows: inner Not-ECT, ECT(0), ECT(1), CE; columns: outer the same.
        let table = [
            [Some(NOT_ECT), Some(NOT_ECT), Some(NOT_ECT), None],
            [Some(ECT0), Some(ECT0), Some(ECT1), Some(CE)],
            [Some(ECT1), Some(ECT1), Some(ECT1), Some(CE)],
            [Some(CE), Some(CE), Some(CE), Some(CE)],
        ];
        let order = [NOT_ECT, ECT0, ECT1, CE];
        for (r, &inner) in order.iter().enumerate() {
            for (c, &outer) in order.iter().enumerate() {
                assert_eq!(
                    decapsulated_ecn(inner, outer),
                    table[r][c],
                    "inner {inner:02b} outer {outer:02b}"
                );
            }
        }
    }
}
