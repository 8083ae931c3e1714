//! ESP processing (RFC 4303 §3.3 outbound, §3.4 inbound) at a [`Layout`]:
//! the ESP header goes (or is found) at `layout.at`, optionally behind a UDP
//! header (RFC 3948). Tunnel mode is the same operation on a packet that
//! already carries its new outer header (see [`crate::tunnel`]).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |               Security Parameters Index (SPI)                 |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                      Sequence Number                          |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                    IV (optional) / Payload Data               |
//! ~                                                               ~
//! |               |     Padding (0-255 bytes)                     |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                               |  Pad Length   | Next Header   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |         Integrity Check Value-ICV   (variable)                |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use core::time::Duration;

use flowsec_crypto::CryptoError;
use flowsec_wire::esp::{pad_len, EspTrailer};
use flowsec_wire::iana::IpProtocol;

use crate::buf::PacketBuf;
use crate::layout::{self, Layout};
use crate::sa::{Mode, SecurityAssociation, Transform};
use crate::tunnel::InnerInfo;
use crate::DropReason;

const ESP_HEADER_LEN: usize = 8;
const UDP_HEADER_LEN: usize = 8;

/// Protect the payload at `lay.at` with `sa` (an ESP SA): transport mode,
/// or a tunnel-mode SA adjacent to another under one outer header.
pub(crate) fn encapsulate(
    sa: &mut SecurityAssociation,
    buf: &mut PacketBuf,
    lay: &Layout,
    now: Duration,
) -> Result<(), DropReason> {
    let next_header = buf.as_slice()[lay.nh_field];
    seal_at(sa, buf, lay.at, next_header, 0, now)?;
    let packet = buf.as_mut_slice();
    packet[lay.nh_field] = outer_protocol(sa).0;
    finish(sa, packet, lay)
}

/// Tunnel mode: ESP in front of the inner packet, then the SA's outer
/// header in front of that (no header is moved).
pub(crate) fn encapsulate_tunnel(
    sa: &mut SecurityAssociation,
    buf: &mut PacketBuf,
    ident: u16,
    now: Duration,
) -> Result<(), DropReason> {
    let inner = InnerInfo::of(buf.as_slice())?;
    let outer_len = sa.outer.as_ref().ok_or(DropReason::BadInnerPacket)?.len();
    seal_at(sa, buf, 0, inner.next_header.0, outer_len, now)?;
    let protocol = outer_protocol(sa);
    let outer = sa.outer.as_ref().ok_or(DropReason::BadInnerPacket)?;
    let lay = outer.push(buf, ident, &inner, protocol)?;
    finish(sa, buf.as_mut_slice(), &lay)
}

/// ESP, or UDP when the SA is UDP-encapsulated.
fn outer_protocol(sa: &SecurityAssociation) -> IpProtocol {
    if sa.encap.is_some() {
        IpProtocol::UDP
    } else {
        IpProtocol::ESP
    }
}

fn finish(sa: &SecurityAssociation, packet: &mut [u8], lay: &Layout) -> Result<(), DropReason> {
    layout::finish(packet, lay)?;
    if sa.encap.is_some() {
        // RFC 3948 §2.1: IPv4 sends a zero UDP checksum; IPv6 needs one.
        layout::fill_udp_checksum(packet, lay);
    }
    Ok(())
}

/// Add padding and trailer after the payload at `at`, the ESP (and UDP)
/// header before it, and seal. `reserve` bytes of outer header will still
/// be added in front (for the size limit).
fn seal_at(
    sa: &mut SecurityAssociation,
    buf: &mut PacketBuf,
    at: usize,
    next_header: u8,
    reserve: usize,
    now: Duration,
) -> Result<(), DropReason> {
    if sa.usage.expired(&sa.lifetime, now) {
        return Err(DropReason::SaExpired);
    }
    let Transform::Esp(xf) = &sa.transform else {
        unreachable!("esp::encapsulate on a non-ESP SA")
    };
    let (iv_len, icv_len, block) = (xf.iv_len(), xf.icv_len(), xf.block_len());
    let payload_len = buf.len() - at;
    // TFC padding only in tunnel mode, where the inner header says where the
    // real payload ends (RFC 4303 §2.7).
    let tfc = match sa.mode {
        Mode::Tunnel => usize::from(sa.tfc_pad_to).saturating_sub(payload_len),
        Mode::Transport => 0,
    };
    let pad = pad_len(payload_len + tfc, block);
    let udp = if sa.encap.is_some() {
        UDP_HEADER_LEN
    } else {
        0
    };
    let front = udp + ESP_HEADER_LEN + iv_len;
    let back = tfc + pad + 2 + icv_len;
    if reserve + buf.len() + front + back > usize::from(u16::MAX) {
        return Err(DropReason::TooBig);
    }
    if buf.tailroom() < back || buf.headroom() < front + reserve {
        return Err(DropReason::NoRoom);
    }
    let seq = crate::sa::next_seq(&mut sa.seq, sa.esn, sa.seq_ceiling)?;
    let tail = buf.append(back).map_err(|_| DropReason::NoRoom)?;
    tail[..tfc].fill(0);
    // `pad` < 256: pad_len aligns to at most 256 bytes.
    EspTrailer {
        pad_len: pad as u8,
        next_header: IpProtocol(next_header),
    }
    .emit(&mut tail[tfc..]);
    let gap = buf.insert_gap(at, front).map_err(|_| DropReason::NoRoom)?;
    gap[udp..udp + 4].copy_from_slice(&sa.id.spi.to_be_bytes());
    gap[udp + 4..udp + 8].copy_from_slice(&(seq as u32).to_be_bytes());
    if let Some(encap) = sa.encap {
        let udp_len = (buf.len() - at) as u16;
        let hdr = &mut buf.as_mut_slice()[at..at + UDP_HEADER_LEN];
        hdr[0..2].copy_from_slice(&encap.src_port.to_be_bytes());
        hdr[2..4].copy_from_slice(&encap.dst_port.to_be_bytes());
        hdr[4..6].copy_from_slice(&udp_len.to_be_bytes());
        hdr[6..8].fill(0);
    }
    // Cannot fail: the lengths above come from the transform's own sizes.
    xf.seal(seq, sa.esn, &mut buf.as_mut_slice()[at + udp..])
        .map_err(|_| DropReason::BadCiphertextLength)?;
    sa.usage.record(payload_len, now);
    Ok(())
}

/// Verify and remove the ESP header (behind a UDP header when `udp`) at
/// `lay.at`; returns the next header from the trailer.
pub(crate) fn decapsulate(
    sa: &mut SecurityAssociation,
    buf: &mut PacketBuf,
    lay: &Layout,
    udp: bool,
    now: Duration,
) -> Result<u8, DropReason> {
    let Transform::Esp(xf) = &sa.transform else {
        unreachable!("esp::decapsulate on a non-ESP SA")
    };
    let (iv_len, icv_len) = (xf.iv_len(), xf.icv_len());
    let udp = if udp { UDP_HEADER_LEN } else { 0 };
    let esp_at = lay.at + udp;
    let packet = &mut buf.as_mut_slice()[esp_at..];
    if packet.len() < ESP_HEADER_LEN + iv_len + 2 + icv_len {
        return Err(DropReason::Truncated);
    }
    let seq_low = u32::from_be_bytes([packet[4], packet[5], packet[6], packet[7]]);
    // RFC 4303 §3.4.3: the replay check comes before the ICV check.
    let seq = sa
        .replay
        .check(seq_low)
        .map_err(crate::process::replay_reason)?;
    if sa.usage.expired(&sa.lifetime, now) {
        return Err(DropReason::SaExpired);
    }
    xf.open(seq, sa.esn, packet).map_err(|e| match e {
        CryptoError::AuthFailed => DropReason::AuthFailed,
        _ => DropReason::BadCiphertextLength,
    })?;
    sa.replay
        .commit(seq)
        .map_err(crate::process::replay_reason)?;
    let body = &packet[ESP_HEADER_LEN + iv_len..packet.len() - icv_len];
    let (payload_len, trailer) = EspTrailer::parse(body).map_err(|_| DropReason::BadPadding)?;
    let trailer_len = body.len() - payload_len;
    buf.trim_back(trailer_len + icv_len);
    buf.remove_gap(lay.at, udp + ESP_HEADER_LEN + iv_len);
    let packet = buf.as_mut_slice();
    packet[lay.nh_field] = trailer.next_header.0;
    sa.usage.record(payload_len, now);
    if trailer.next_header == IpProtocol::IPV6_NONXT {
        return Err(DropReason::DummyPacket);
    }
    layout::finish(packet, lay)?;
    Ok(trailer.next_header.0)
}
