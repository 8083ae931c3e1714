//! ESP processing (RFC 4303 §3.3 outbound, §3.4 inbound) at a [`Layout`]:
//! the ESP header goes (or is found) at `layout.at`. Tunnel mode is the same
//! operation on a packet that already carries its new outer header (see
//! [`crate::tunnel`]). ESP in UDP (RFC 3948) leaves the packet as the UDP
//! payload, with the addresses and ports beside it as values: the UDP socket
//! writes (and, on receipt, removes) the IP and UDP headers.
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
use std::net::SocketAddr;

use flowsec_crypto::CryptoError;
use flowsec_wire::esp::{self as wire, pad_len, EspPacket, EspRepr, EspTrailer};
use flowsec_wire::iana::IpProtocol;
use flowsec_wire::udp;

use crate::buf::PacketBuf;
use crate::layout::{self, Layout};
use crate::process::UdpEndpoints;
use crate::sa::{Mode, SecurityAssociation, Transform};
use crate::tunnel::InnerInfo;
use crate::DropReason;

/// Protect the payload at `lay.at` with `sa` (an ESP SA): transport mode,
/// or a tunnel-mode SA adjacent to another under one outer header.
pub(crate) fn encapsulate(
    sa: &mut SecurityAssociation,
    buf: &mut PacketBuf,
    lay: &Layout,
    now: Duration,
) -> Result<(), DropReason> {
    let next_header = lay.next_header(buf.as_slice());
    seal_at(sa, buf, lay.at, next_header, 0, now)?;
    let packet = buf.as_mut_slice();
    lay.set_next_header(packet, IpProtocol::ESP);
    layout::finish(packet, lay)
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
    seal_at(sa, buf, 0, inner.next_header, outer_len, now)?;
    let outer = sa.outer.as_ref().ok_or(DropReason::BadInnerPacket)?;
    let lay = outer.push(buf, ident, &inner, IpProtocol::ESP)?;
    layout::finish(buf.as_mut_slice(), &lay)
}

/// ESP in UDP (RFC 3948 §2.1): seal, and leave in `buf` only the ESP
/// packet, the UDP payload; returns where it goes, from the SA's endpoints
/// and ports. `lay`: where ESP goes in the IP packet `buf` holds
/// (transport mode, or a tunnel's outer header added by an inner step),
/// whose header is then removed (the socket writes its own: IPv4 options
/// and IPv6 extension headers are not carried); `None`: `buf` is the inner
/// packet of a tunnel-mode SA, sealed whole.
pub(crate) fn encapsulate_udp(
    sa: &mut SecurityAssociation,
    buf: &mut PacketBuf,
    lay: Option<&Layout>,
    now: Duration,
) -> Result<UdpEndpoints, DropReason> {
    let encap = sa.encap.ok_or(DropReason::EncapMismatch)?;
    let tos = match lay {
        None => {
            let inner = InnerInfo::of(buf.as_slice())?;
            let outer_len = sa.outer.as_ref().map_or(0, |o| o.len());
            seal_at(
                sa,
                buf,
                0,
                inner.next_header,
                outer_len + udp::HEADER_LEN,
                now,
            )?;
            inner.tos
        }
        Some(lay) => {
            let tos = layout::tos(buf.as_slice(), lay.version);
            let next_header = lay.next_header(buf.as_slice());
            seal_at(sa, buf, lay.at, next_header, udp::HEADER_LEN, now)?;
            buf.trim_front(lay.at);
            tos
        }
    };
    Ok(UdpEndpoints {
        local: SocketAddr::new(sa.src, encap.src_port),
        remote: SocketAddr::new(sa.id.dst, encap.dst_port),
        tos,
    })
}

/// Add padding and trailer after the payload at `at`, the ESP header
/// before it, and seal. `reserve` bytes of headers will still be added in
/// front (for the size limit).
fn seal_at(
    sa: &mut SecurityAssociation,
    buf: &mut PacketBuf,
    at: usize,
    next_header: IpProtocol,
    reserve: usize,
    now: Duration,
) -> Result<(), DropReason> {
    sa.check_lifetime(now)?;
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
    let front = wire::HEADER_LEN + iv_len;
    let back = tfc + pad + wire::TRAILER_LEN + icv_len;
    if reserve + buf.len() + front + back > usize::from(u16::MAX) {
        return Err(DropReason::TooBig);
    }
    if buf.tailroom() < back || buf.headroom() < front + reserve {
        return Err(DropReason::NoRoom);
    }
    // Assigned by the SA's owner (parallel crypto), or the next of ours.
    let assigned = sa.assigned.take();
    let seq = match assigned {
        Some(seq) => seq,
        None => crate::sa::next_seq(&mut sa.seq, sa.esn, sa.seq_ceiling)?,
    };
    let tail = buf.append(back).map_err(|_| DropReason::NoRoom)?;
    tail[..tfc].fill(0);
    // `pad` < 256: pad_len aligns to at most 256 bytes.
    EspTrailer {
        pad_len: pad as u8,
        next_header,
    }
    .emit(&mut tail[tfc..]);
    let gap = buf.insert_gap(at, front).map_err(|_| DropReason::NoRoom)?;
    EspRepr {
        spi: sa.id.spi,
        // The low 32 bits travel; ESN's high half is only in the ICV.
        seq_number: seq as u32,
    }
    .emit(&mut EspPacket::new_unchecked(&mut gap[..wire::HEADER_LEN]));
    // Cannot fail: the lengths above come from the transform's own sizes.
    xf.seal(seq, sa.esn, &mut buf.as_mut_slice()[at..])
        .map_err(|_| DropReason::BadCiphertextLength)?;
    if assigned.is_none() {
        sa.usage.record(payload_len, now);
    }
    Ok(())
}

/// Verify and remove the ESP header at `lay.at` of an IP packet; returns
/// the next header from the trailer.
pub(crate) fn decapsulate(
    sa: &mut SecurityAssociation,
    buf: &mut PacketBuf,
    lay: &Layout,
    now: Duration,
) -> Result<IpProtocol, DropReason> {
    let next_header = open_at(sa, buf, lay.at, now)?;
    let packet = buf.as_mut_slice();
    lay.set_next_header(packet, next_header);
    layout::finish(packet, lay)?;
    Ok(next_header)
}

/// Verify and decrypt the ESP packet at `at` of `buf`, leaving its payload
/// there (header, IV, padding, trailer and ICV removed); returns the next
/// header from the trailer.
pub(crate) fn open_at(
    sa: &mut SecurityAssociation,
    buf: &mut PacketBuf,
    at: usize,
    now: Duration,
) -> Result<IpProtocol, DropReason> {
    let Transform::Esp(xf) = &sa.transform else {
        unreachable!("esp::decapsulate on a non-ESP SA")
    };
    let (iv_len, icv_len) = (xf.iv_len(), xf.icv_len());
    let packet = &mut buf.as_mut_slice()[at..];
    if packet.len() < wire::HEADER_LEN + iv_len + wire::TRAILER_LEN + icv_len {
        return Err(DropReason::Truncated);
    }
    let seq_low = EspPacket::new_unchecked(&*packet).seq_number();
    // RFC 4303 §3.4.3: the replay check comes before the ICV check. With
    // parallel crypto the SA's owner checked it, and commits after.
    let assigned = sa.assigned.take();
    let seq = match assigned {
        Some(seq) => seq,
        None => sa
            .replay
            .check(seq_low)
            .map_err(crate::process::replay_reason)?,
    };
    sa.check_lifetime(now)?;
    xf.open(seq, sa.esn, packet).map_err(|e| match e {
        CryptoError::AuthFailed => DropReason::AuthFailed,
        _ => DropReason::BadCiphertextLength,
    })?;
    if assigned.is_none() {
        sa.replay
            .commit(seq)
            .map_err(crate::process::replay_reason)?;
    }
    let body = &packet[wire::HEADER_LEN + iv_len..packet.len() - icv_len];
    let (payload_len, trailer) = EspTrailer::parse(body).map_err(|_| DropReason::BadPadding)?;
    let trailer_len = body.len() - payload_len;
    buf.trim_back(trailer_len + icv_len);
    buf.remove_gap(at, wire::HEADER_LEN + iv_len);
    if assigned.is_none() {
        sa.usage.record(payload_len, now);
    }
    if trailer.next_header == IpProtocol::IPV6_NONXT {
        return Err(DropReason::DummyPacket);
    }
    Ok(trailer.next_header)
}
