//! AH processing (RFC 4302 §3.3 outbound, §3.4 inbound) at a [`Layout`].
//!
//! The ICV covers the whole IP packet with its mutable fields taken as zero
//! (§3.3.3.1). Rather than copying the packet, the ICV is computed over a
//! list of slices in which each mutable field is replaced by zeros.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Next Header   |  Payload Len  |          RESERVED             |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                 Security Parameters Index (SPI)               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                    Sequence Number Field                      |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! +                Integrity Check Value-ICV (variable)           |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use core::time::Duration;

use flowsec_wire::ah::{self as wire, AhPacket, AhRepr};
use flowsec_wire::iana::IpProtocol;
use flowsec_wire::ip::IpVersion;
use flowsec_wire::ipv4::{self, field as v4};
use flowsec_wire::ipv6::{self, field as v6};
use flowsec_wire::ipv6ext::{ipv6_header_chain, Ipv6RoutingHeader};

use crate::buf::PacketBuf;
use crate::layout::{self, Layout};
use crate::sa::{SecurityAssociation, Transform};
use crate::DropReason;

/// Zeros standing in for mutable fields (an option's data is at most 255
/// bytes; an ICV at most 32).
static ZEROS: [u8; 256] = [0; 256];
/// Upper bound on the slices an ICV is computed over; a packet whose
/// headers would need more (hundreds of options) is refused.
const MAX_PARTS: usize = 96;

/// Header length of AH for an ICV of `icv_len` bytes: a multiple of 4 bytes
/// over IPv4 and of 8 over IPv6 (RFC 4302 §2.2, §3.3.3.2.1).
pub(crate) fn header_len(icv_len: usize, version: IpVersion) -> usize {
    AhRepr::header_len(icv_len, version == IpVersion::V6)
}

/// Insert an AH header at `lay.at` and fill its ICV.
pub(crate) fn encapsulate(
    sa: &mut SecurityAssociation,
    buf: &mut PacketBuf,
    lay: &Layout,
    now: Duration,
) -> Result<(), DropReason> {
    sa.check_lifetime(now)?;
    let Transform::Ah(integ) = &sa.transform else {
        unreachable!("ah::encapsulate on a non-AH SA")
    };
    let icv_len = integ.icv_len();
    let ah_len = header_len(icv_len, lay.version);
    if buf.len() + ah_len > usize::from(u16::MAX) {
        return Err(DropReason::TooBig);
    }
    if buf.headroom() < ah_len {
        return Err(DropReason::NoRoom);
    }
    let payload_len = buf.len() - lay.at;
    let seq = crate::sa::next_seq(&mut sa.seq, sa.esn, sa.seq_ceiling)?;
    let next_header = lay.next_header(buf.as_slice());
    let hdr = buf
        .insert_gap(lay.at, ah_len)
        .map_err(|_| DropReason::NoRoom)?;
    // The ICV field (and its padding) is zero until signed.
    AhRepr {
        next_header,
        spi: sa.id.spi,
        seq_number: seq as u32,
        icv_len: ah_len - wire::FIXED_LEN,
    }
    .emit(
        &mut AhPacket::new_unchecked(hdr),
        lay.version == IpVersion::V6,
    );
    let packet = buf.as_mut_slice();
    lay.set_next_header(packet, IpProtocol::AH);
    layout::finish(packet, lay)?;
    let mut icv = [0u8; 32];
    {
        let hi = ((seq >> 32) as u32).to_be_bytes();
        let parts = icv_parts(packet, lay, icv_len, sa.esn.then_some(&hi))?;
        integ.sign(parts.as_slice(), &mut icv[..icv_len]);
    }
    AhPacket::new_unchecked(&mut packet[lay.at..]).icv_mut()[..icv_len]
        .copy_from_slice(&icv[..icv_len]);
    sa.usage.record(payload_len, now);
    Ok(())
}

/// Verify and remove the AH header at `lay.at`; returns its next header.
pub(crate) fn decapsulate(
    sa: &mut SecurityAssociation,
    buf: &mut PacketBuf,
    lay: &Layout,
    now: Duration,
) -> Result<IpProtocol, DropReason> {
    let Transform::Ah(integ) = &sa.transform else {
        unreachable!("ah::decapsulate on a non-AH SA")
    };
    let icv_len = integ.icv_len();
    let packet = buf.as_slice();
    let ah = AhPacket::new_unchecked(&packet[lay.at..]);
    if ah.as_ref().len() < wire::FIXED_LEN {
        return Err(DropReason::Truncated);
    }
    let ah_len = ah.header_len();
    let align = if lay.version == IpVersion::V6 { 8 } else { 4 };
    if ah_len < wire::FIXED_LEN + icv_len || !ah_len.is_multiple_of(align) {
        return Err(DropReason::BadAhLength);
    }
    if ah.check_len().is_err() {
        return Err(DropReason::Truncated);
    }
    let next_header = ah.next_header();
    let seq_low = ah.seq_number();
    let seq = sa
        .replay
        .check(seq_low)
        .map_err(crate::process::replay_reason)?;
    sa.check_lifetime(now)?;
    let received = &ah.icv()[..icv_len];
    let hi = ((seq >> 32) as u32).to_be_bytes();
    let parts = icv_parts(packet, lay, icv_len, sa.esn.then_some(&hi))?;
    if !integ.verify(parts.as_slice(), received) {
        return Err(DropReason::AuthFailed);
    }
    sa.replay
        .commit(seq)
        .map_err(crate::process::replay_reason)?;
    let payload_len = packet.len() - lay.at - ah_len;
    buf.remove_gap(lay.at, ah_len);
    let packet = buf.as_mut_slice();
    lay.set_next_header(packet, next_header);
    layout::finish(packet, lay)?;
    sa.usage.record(payload_len, now);
    Ok(next_header)
}

/// A fixed-capacity list of slices.
pub(crate) struct Parts<'a> {
    items: [&'a [u8]; MAX_PARTS],
    len: usize,
}

impl<'a> Parts<'a> {
    fn new() -> Self {
        Parts {
            items: [&[]; MAX_PARTS],
            len: 0,
        }
    }

    fn push(&mut self, part: &'a [u8]) -> Result<(), DropReason> {
        if part.is_empty() {
            return Ok(());
        }
        let slot = self
            .items
            .get_mut(self.len)
            .ok_or(DropReason::BadIpHeader)?;
        *slot = part;
        self.len += 1;
        Ok(())
    }

    fn zeros(&mut self, n: usize) -> Result<(), DropReason> {
        let mut left = n;
        while left > 0 {
            let take = left.min(ZEROS.len());
            self.push(&ZEROS[..take])?;
            left -= take;
        }
        Ok(())
    }

    pub(crate) fn as_slice(&self) -> &[&'a [u8]] {
        &self.items[..self.len]
    }
}

/// The packet as the ICV sees it: mutable IP fields and the ICV field as
/// zeros, then the ESN high bits if `esn_hi` (RFC 4302 §3.3.2.1).
fn icv_parts<'a>(
    packet: &'a [u8],
    lay: &Layout,
    icv_len: usize,
    esn_hi: Option<&'a [u8; 4]>,
) -> Result<Parts<'a>, DropReason> {
    let mut parts = Parts::new();
    match lay.version {
        IpVersion::V4 => ipv4_header_parts(&packet[..lay.at], &mut parts)?,
        IpVersion::V6 => ipv6_header_parts(packet, lay.at, &mut parts)?,
    }
    let icv_at = lay.at + wire::FIXED_LEN;
    parts.push(&packet[lay.at..icv_at])?;
    parts.zeros(icv_len)?;
    parts.push(&packet[icv_at + icv_len..])?;
    if let Some(hi) = esn_hi {
        parts.push(hi)?;
    }
    Ok(parts)
}

/// RFC 4302 §3.3.3.1.1.1 and Appendix A.1: TOS, flags, fragment offset,
/// TTL and checksum are mutable; options are immutable only if they are one
/// of EOL, NOP, Security, Extended Security, Commercial Security, Router
/// Alert or Sender Directed Multi-Destination Delivery; other options are
/// zeroed whole.
fn ipv4_header_parts<'a>(hdr: &'a [u8], parts: &mut Parts<'a>) -> Result<(), DropReason> {
    if hdr.len() < ipv4::HEADER_LEN {
        return Err(DropReason::BadIpHeader);
    }
    parts.push(&hdr[v4::VER_IHL..v4::DSCP_ECN])?;
    parts.zeros(1)?; // DSCP/ECN
    parts.push(&hdr[v4::LENGTH.start..v4::IDENT.end])?;
    parts.zeros(v4::FLG_OFF.len() + 1)?; // flags, fragment offset, TTL
    parts.push(&hdr[v4::PROTOCOL..v4::CHECKSUM.start])?;
    parts.zeros(v4::CHECKSUM.len())?;
    parts.push(&hdr[v4::SRC_ADDR.start..v4::DST_ADDR.end])?;
    let options = &hdr[ipv4::HEADER_LEN..];
    let mut i = 0;
    while i < options.len() {
        let kind = options[i];
        let len = match kind {
            0 => options.len() - i, // end of options: the rest is padding
            1 => 1,
            _ => match options.get(i + 1) {
                Some(&l) if l >= 2 && i + usize::from(l) <= options.len() => usize::from(l),
                _ => return Err(DropReason::BadIpHeader),
            },
        };
        let option = &options[i..i + len];
        match kind {
            0 | 1 | 130 | 133 | 134 | 148 | 149 => parts.push(option)?,
            _ => parts.zeros(len)?,
        }
        i += len;
    }
    Ok(())
}

/// RFC 4302 §3.3.3.1.2: traffic class, flow label and hop limit are
/// mutable; in hop-by-hop and destination options, the data of options whose
/// type has the "may change en route" bit (0x20, RFC 8200 §4.2) is zeroed.
/// A routing header with segments left would need the final-destination
/// rewrite of §3.3.3.1.2.2, which is not implemented: refused.
fn ipv6_header_parts<'a>(
    packet: &'a [u8],
    at: usize,
    parts: &mut Parts<'a>,
) -> Result<(), DropReason> {
    if at < ipv6::HEADER_LEN {
        return Err(DropReason::BadIpHeader);
    }
    // Version nibble kept, traffic class and flow label zeroed.
    static VERSION6: [u8; 1] = [0x60];
    parts.push(&VERSION6)?;
    parts.zeros(v6::VER_TC_FLOW.len() - 1)?;
    parts.push(&packet[v6::LENGTH.start..v6::HOP_LIMIT])?; // with Next Header
    parts.zeros(1)?; // hop limit
    parts.push(&packet[v6::SRC_ADDR.start..v6::DST_ADDR.end])?;
    let chain = ipv6_header_chain(packet).map_err(|_| DropReason::BadExtensionHeaders)?;
    for ext in chain.headers().iter().take_while(|e| e.offset < at) {
        let bytes = &packet[ext.offset..ext.offset + ext.len];
        match ext.protocol {
            IpProtocol::HOPOPT | IpProtocol::IPV6_OPTS => options_parts(bytes, parts)?,
            IpProtocol::IPV6_ROUTE => {
                let routing = Ipv6RoutingHeader::new_checked(bytes)
                    .map_err(|_| DropReason::BadExtensionHeaders)?;
                if routing.segments_left() != 0 {
                    return Err(DropReason::AhUnsupportedRouting);
                }
                parts.push(bytes)?
            }
            _ => parts.push(bytes)?,
        }
    }
    Ok(())
}

fn options_parts<'a>(ext: &'a [u8], parts: &mut Parts<'a>) -> Result<(), DropReason> {
    parts.push(&ext[..2])?;
    let mut i = 2;
    while i < ext.len() {
        let kind = ext[i];
        if kind == 0 {
            parts.push(&ext[i..i + 1])?; // Pad1
            i += 1;
            continue;
        }
        let data_len = usize::from(*ext.get(i + 1).ok_or(DropReason::BadExtensionHeaders)?);
        let end = i + 2 + data_len;
        if end > ext.len() {
            return Err(DropReason::BadExtensionHeaders);
        }
        parts.push(&ext[i..i + 2])?;
        if kind & 0x20 != 0 {
            parts.zeros(data_len)?;
        } else {
            parts.push(&ext[i + 2..end])?;
        }
        i = end;
    }
    Ok(())
}
