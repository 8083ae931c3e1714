//! TUN offloads (`IFF_VNET_HDR`, `TUNSETOFFLOAD`): every packet read from or
//! written to the TUN device is preceded by a `struct virtio_net_hdr`
//! (virtio spec 1.2 §5.1.6, linux/virtio_net.h), which lets the kernel hand
//! us a TCP super-packet of up to 64 KB with a partial checksum (TSO), and
//! take one from us (GRO), instead of one packet per MSS.
//!
//! - Outbound, [`segment_tcp`] cuts a super-packet into MSS-sized segments
//!   with their headers fixed up (lengths, IPv4 ID, sequence numbers, flags,
//!   checksums), as the kernel's `tcp_gso_segment` would; each is then
//!   sealed like any packet. [`complete_checksum`] finishes the partial
//!   checksum of a packet that is not a super-packet. Where the kernel
//!   takes UDP segmentation offload (USO, [`udp`]), it may hand us a train
//!   of UDP datagrams too: [`segment`] cuts either.
//! - Inbound, [`Coalescer`] merges consecutive in-order segments of one TCP
//!   flow into a super-packet written at once, as `tcp_gro_receive` would,
//!   and, with USO, consecutive equal-sized datagrams of one UDP flow, as
//!   `udp_gro_receive` does for forwarding.
//!
//! Pure functions on bytes: no I/O, tested without root.

use flowsec_ipsec::buf::DEFAULT_HEADROOM;
use flowsec_ipsec::PacketBuf;
use flowsec_wire::iana::IpProtocol;
use flowsec_wire::ip::{version_of, IpVersion};
use flowsec_wire::ipv4::{checksum, Ipv4Packet};
use flowsec_wire::ipv6::{self, Ipv6Packet};
use std::net::{Ipv4Addr, Ipv6Addr};

pub mod udp;

/// Size of `struct virtio_net_hdr` (without `num_buffers`).
pub const VNET_HDR_LEN: usize = 10;
/// `csum_start`/`csum_offset` are valid: the checksum is partial.
const F_NEEDS_CSUM: u8 = 1;
const GSO_NONE: u8 = 0;
const GSO_TCPV4: u8 = 1;
const GSO_TCPV6: u8 = 4;
/// Set with a TCP GSO type when the flow uses ECN (CWR on the first segment).
const GSO_ECN: u8 = 0x80;

/// TCP flags.
const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const RST: u8 = 0x04;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;
const URG: u8 = 0x20;
const CWR: u8 = 0x80;

/// The largest IP packet the coalescer builds.
const MAX_SUPER: usize = 65_535;

/// `struct virtio_net_hdr`, little-endian as TUN uses it on x86 and arm.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    /// Read the header at the start of `b`.
    pub fn parse(b: &[u8]) -> Option<VnetHdr> {
        let b = b.get(..VNET_HDR_LEN)?;
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Some(VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u16_at(2),
            gso_size: u16_at(4),
            csum_start: u16_at(6),
            csum_offset: u16_at(8),
        })
    }

    /// Write the header into the first [`VNET_HDR_LEN`] bytes of `b`.
    pub fn emit(&self, b: &mut [u8]) {
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
    }

    /// A super-packet to cut (TCP over IPv4 or IPv6, or UDP).
    pub fn is_gso(&self) -> bool {
        self.gso_type & !GSO_ECN != GSO_NONE
    }

    /// The checksum is left for us to complete.
    pub fn needs_csum(&self) -> bool {
        self.flags & F_NEEDS_CSUM != 0
    }
}

/// Why a packet from the TUN device could not be made whole; counted as
/// `offload_errors` (the kernel should never send these).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffloadError {
    /// Checksum offsets outside the packet.
    BadChecksumOffsets,
    /// A GSO type other than TCP over IPv4/IPv6 or UDP, or headers that
    /// are not.
    UnsupportedGso,
    /// Headers that do not fit the packet.
    Truncated,
}

/// Finish a partial checksum: the field at `start + offset` holds the
/// pseudo-header sum; the one's complement of the sum from `start` to the
/// end goes there (what a NIC does for `CHECKSUM_PARTIAL`).
pub fn complete_checksum(packet: &mut [u8], hdr: &VnetHdr) -> Result<(), OffloadError> {
    let start = usize::from(hdr.csum_start);
    let at = start + usize::from(hdr.csum_offset);
    if at + 2 > packet.len() {
        return Err(OffloadError::BadChecksumOffsets);
    }
    let sum = !checksum::data(&packet[start..]);
    packet[at..at + 2].copy_from_slice(&sum.to_be_bytes());
    Ok(())
}

/// Where the parts of a TCP or UDP packet are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    v6: bool,
    /// UDP, not TCP.
    udp: bool,
    /// Start of the TCP or UDP header.
    l4: usize,
    /// End of that header: start of the payload.
    hdrs: usize,
}

/// The layout of a TCP or UDP packet right after its IP header.
fn layout(p: &[u8]) -> Result<Layout, OffloadError> {
    let (v6, l4, next) = match version_of(p) {
        Ok(IpVersion::V4) => match Ipv4Packet::new_checked(p) {
            Ok(ip) => (false, ip.header_len(), ip.next_header()),
            _ => return Err(OffloadError::UnsupportedGso),
        },
        // No extension headers: TCP or UDP right after the fixed header.
        Ok(IpVersion::V6) => match Ipv6Packet::new_checked(p) {
            Ok(ip) => (true, ipv6::HEADER_LEN, ip.next_header()),
            _ => return Err(OffloadError::UnsupportedGso),
        },
        Err(_) => return Err(OffloadError::UnsupportedGso),
    };
    // The header's length, and the least it may be.
    let (udp, l4_len, least) = match next {
        IpProtocol::TCP => {
            let offset = *p.get(l4 + 12).ok_or(OffloadError::Truncated)?;
            (false, usize::from(offset >> 4) * 4, 20)
        }
        IpProtocol::UDP => (true, udp::HEADER_LEN, udp::HEADER_LEN),
        _ => return Err(OffloadError::UnsupportedGso),
    };
    if l4_len < least || l4 + l4_len > p.len() {
        return Err(OffloadError::Truncated);
    }
    Ok(Layout {
        v6,
        udp,
        l4,
        hdrs: l4 + l4_len,
    })
}

/// The layout of a TCP packet.
fn tcp_layout(p: &[u8]) -> Result<Layout, OffloadError> {
    layout(p).and_then(|l| {
        if l.udp {
            Err(OffloadError::UnsupportedGso)
        } else {
            Ok(l)
        }
    })
}

/// Set the IP length fields (and IPv4 header checksum) of the packet
/// `p`, whose total length is `p.len()`.
fn fix_ip_lengths(p: &mut [u8], l: &Layout) {
    let total = p.len();
    if l.v6 {
        p[4..6].copy_from_slice(&((total - 40) as u16).to_be_bytes());
    } else {
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[10..12].copy_from_slice(&[0, 0]);
        let sum = !checksum::data(&p[..l.l4]);
        p[10..12].copy_from_slice(&sum.to_be_bytes());
    }
}

/// The pseudo-header sum of the TCP segment or UDP datagram of `p`
/// (length from `p`).
fn pseudo_sum(p: &[u8], l: &Layout) -> u16 {
    let l4_len = p.len() - l.l4;
    let proto = if l.udp {
        IpProtocol::UDP
    } else {
        IpProtocol::TCP
    };
    if l.v6 {
        let src = Ipv6Addr::from(<[u8; 16]>::try_from(&p[8..24]).expect("16 bytes"));
        let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&p[24..40]).expect("16 bytes"));
        checksum::pseudo_header_v6(&src, &dst, proto, l4_len as u32)
    } else {
        let src = Ipv4Addr::new(p[12], p[13], p[14], p[15]);
        let dst = Ipv4Addr::new(p[16], p[17], p[18], p[19]);
        checksum::pseudo_header_v4(&src, &dst, proto, l4_len as u16)
    }
}

/// The TCP or UDP checksum of `p` verifies.
fn checksum_ok(p: &[u8], l: &Layout) -> bool {
    checksum::combine(&[pseudo_sum(p, l), checksum::data(&p[l.l4..])]) == 0xffff
}

/// Cut the super-packet `packet` (described by `hdr`: TCP, or UDP with
/// USO) into packets, each built in `buf` and handed to `each`. Returns
/// the number of packets.
pub fn segment(
    packet: &[u8],
    hdr: &VnetHdr,
    buf: &mut PacketBuf,
    each: impl FnMut(&mut PacketBuf),
) -> Result<usize, OffloadError> {
    if hdr.gso_type == udp::GSO_UDP_L4 {
        udp::segment_udp(packet, hdr, buf, each)
    } else {
        segment_tcp(packet, hdr, buf, each)
    }
}

/// Copy `packet`'s first `hdrs` bytes and then `chunk` into `buf` (reset
/// to the usual headroom): one segment, its headers still to fix.
fn segment_into<'b>(
    buf: &'b mut PacketBuf,
    packet: &[u8],
    hdrs: usize,
    chunk: &[u8],
) -> Result<&'b mut [u8], OffloadError> {
    buf.reset(DEFAULT_HEADROOM);
    let n = hdrs + chunk.len();
    let Some(room) = buf.spare_mut().get_mut(..n) else {
        return Err(OffloadError::Truncated);
    };
    room[..hdrs].copy_from_slice(&packet[..hdrs]);
    room[hdrs..].copy_from_slice(chunk);
    // Cannot fail: n bytes of spare room were just written.
    let _ = buf.set_len(n);
    Ok(buf.as_mut_slice())
}

/// Cut the TCP super-packet `packet` (described by `hdr`) into segments of
/// at most `gso_size` payload bytes, each built in `buf` (with the usual
/// headroom) and handed to `each`. Returns the number of segments.
pub fn segment_tcp(
    packet: &[u8],
    hdr: &VnetHdr,
    buf: &mut PacketBuf,
    each: impl FnMut(&mut PacketBuf),
) -> Result<usize, OffloadError> {
    let want_v6 = match hdr.gso_type & !GSO_ECN {
        GSO_TCPV4 => false,
        GSO_TCPV6 => true,
        _ => return Err(OffloadError::UnsupportedGso),
    };
    let l = tcp_layout(packet)?;
    let mss = usize::from(hdr.gso_size);
    if l.v6 != want_v6 || mss == 0 {
        return Err(OffloadError::UnsupportedGso);
    }
    let seq0 = u32::from_be_bytes(packet[l.l4 + 4..l.l4 + 8].try_into().expect("4 bytes"));
    let flags0 = packet[l.l4 + 13];
    let fix = |p: &mut [u8], i: usize, count: usize| {
        let seq = seq0.wrapping_add((i * mss) as u32);
        p[l.l4 + 4..l.l4 + 8].copy_from_slice(&seq.to_be_bytes());
        let mut flags = flags0;
        if i + 1 < count {
            flags &= !(FIN | PSH);
        }
        if i > 0 {
            flags &= !CWR;
        }
        p[l.l4 + 13] = flags;
        p[l.l4 + 16..l.l4 + 18].copy_from_slice(&[0, 0]);
        let sum = !checksum::combine(&[pseudo_sum(p, &l), checksum::data(&p[l.l4..])]);
        p[l.l4 + 16..l.l4 + 18].copy_from_slice(&sum.to_be_bytes());
    };
    cut(packet, &l, mss, buf, fix, each)
}

/// Cut the payload of `packet` (after `l.hdrs`) into chunks of `size`
/// bytes, each built in `buf` behind a copy of the headers, with its IPv4
/// ID (the first's plus its place, as the kernel's GSO numbers them) and
/// IP lengths set; `fix(segment, i, count)` finishes its transport header
/// before `each` takes it. Returns the number of segments.
fn cut(
    packet: &[u8],
    l: &Layout,
    size: usize,
    buf: &mut PacketBuf,
    mut fix: impl FnMut(&mut [u8], usize, usize),
    mut each: impl FnMut(&mut PacketBuf),
) -> Result<usize, OffloadError> {
    let payload = &packet[l.hdrs..];
    let count = payload.len().div_ceil(size).max(1);
    let id0 = u16::from_be_bytes([packet[4], packet[5]]);
    for i in 0..count {
        let chunk = &payload[(i * size).min(payload.len())..((i + 1) * size).min(payload.len())];
        let p = segment_into(buf, packet, l.hdrs, chunk)?;
        if !l.v6 {
            p[4..6].copy_from_slice(&id0.wrapping_add(i as u16).to_be_bytes());
        }
        fix_ip_lengths(p, l);
        fix(p, i, count);
        each(buf);
    }
    Ok(count)
}

/// What must be equal for two segments to be one flow's consecutive data.
fn same_flow(a: &[u8], b: &[u8], l: &Layout) -> bool {
    if l.v6 {
        // Version, traffic class, flow label; next header; hop limit;
        // addresses.
        a[..4] == b[..4] && a[6..8] == b[6..8] && a[8..40] == b[8..40]
    } else {
        // Version/IHL, TOS; flags (DF); TTL, protocol; addresses.
        a[..2] == b[..2]
            && a[6] & 0xe0 == b[6] & 0xe0
            && a[8..10] == b[8..10]
            && a[12..20] == b[12..20]
    }
}

/// Merges in-order TCP segments of one flow (and, with USO, equal-sized
/// datagrams of one UDP flow), as they come out of the tunnel in one
/// batch, into one super-packet for the TUN device.
pub struct Coalescer {
    /// [`VNET_HDR_LEN`] bytes of room, then the super-packet being built.
    buf: Vec<u8>,
    layout: Option<Layout>,
    /// Payload bytes of the first segment: the MSS of the group.
    mss: usize,
    segments: usize,
    /// TCP: the sequence number the next segment must have.
    next_seq: u32,
    /// The group is closed: its last segment was short or had PSH.
    closed: bool,
    /// The TUN device takes UDP super-packets (USO): UDP is merged too.
    uso: bool,
}

impl Default for Coalescer {
    fn default() -> Self {
        Coalescer::new(false)
    }
}

impl Coalescer {
    /// A coalescer for a TUN device that takes TCP super-packets, and UDP
    /// ones if `uso`.
    pub fn new(uso: bool) -> Coalescer {
        Coalescer {
            buf: Vec::with_capacity(VNET_HDR_LEN + MAX_SUPER),
            layout: None,
            mss: 0,
            segments: 0,
            next_seq: 0,
            closed: false,
            uso,
        }
    }

    /// Take `packet` (a decapsulated IP packet): merged into the group,
    /// or the group is written with `write` and `packet` starts the next
    /// one, or (not TCP data, nor with USO a UDP datagram that may be
    /// merged) written alone after the group. `write` gets
    /// the virtio header followed by the packet.
    pub fn push(&mut self, packet: &[u8], write: &mut impl FnMut(&[u8])) {
        let layout = match layout(packet) {
            Ok(l) if !l.udp && mergeable(packet, &l) => l,
            Ok(l) if l.udp && self.uso && udp::mergeable(packet, &l) => l,
            _ => {
                self.flush(write);
                return write_alone(&mut self.buf, packet, write);
            }
        };
        if self.try_append(packet, &layout) {
            return;
        }
        self.flush(write);
        self.buf.clear();
        self.buf.extend_from_slice(&[0; VNET_HDR_LEN]);
        self.buf.extend_from_slice(packet);
        let payload = packet.len() - layout.hdrs;
        self.layout = Some(layout);
        self.mss = payload;
        self.segments = 1;
        if !layout.udp {
            self.next_seq = seq_of(packet, &layout).wrapping_add(payload as u32);
        }
        self.closed = !layout.udp && packet[layout.l4 + 13] & PSH != 0;
    }

    fn try_append(&mut self, packet: &[u8], l: &Layout) -> bool {
        let Some(g) = self.layout else {
            return false;
        };
        let head = &self.buf[VNET_HDR_LEN..];
        let payload = packet.len() - l.hdrs;
        let fits = head.len() + payload <= MAX_SUPER;
        let mergeable = !self.closed
            && fits
            && g == *l
            && payload <= self.mss
            && same_flow(head, packet, l)
            // Ports.
            && head[l.l4..l.l4 + 4] == packet[l.l4..l.l4 + 4]
            && if l.udp {
                udp::appendable(head, packet, self.segments)
            } else {
                tcp_appendable(head, packet, l, self.next_seq)
            };
        if !mergeable {
            return false;
        }
        self.buf.extend_from_slice(&packet[l.hdrs..]);
        self.segments += 1;
        if l.udp {
            self.closed |= payload < self.mss;
            return true;
        }
        self.next_seq = self.next_seq.wrapping_add(payload as u32);
        if packet[l.l4 + 13] & PSH != 0 {
            let at = VNET_HDR_LEN + l.l4 + 13;
            self.buf[at] |= PSH;
            self.closed = true;
        }
        if payload < self.mss {
            self.closed = true;
        }
        true
    }

    /// Write the group, if there is one.
    pub fn flush(&mut self, write: &mut impl FnMut(&[u8])) {
        let Some(l) = self.layout.take() else {
            return;
        };
        let mut hdr = VnetHdr::default();
        if self.segments > 1 && l.udp {
            let p = &mut self.buf[VNET_HDR_LEN..];
            fix_ip_lengths(p, &l);
            hdr = udp::super_header(p, &l, self.mss);
        } else if self.segments > 1 {
            let p = &mut self.buf[VNET_HDR_LEN..];
            fix_ip_lengths(p, &l);
            // CHECKSUM_PARTIAL: the field holds the pseudo-header sum.
            let sum = pseudo_sum(p, &l);
            p[l.l4 + 16..l.l4 + 18].copy_from_slice(&sum.to_be_bytes());
            hdr = VnetHdr {
                flags: F_NEEDS_CSUM,
                gso_type: if l.v6 { GSO_TCPV6 } else { GSO_TCPV4 },
                hdr_len: l.hdrs as u16,
                gso_size: self.mss as u16,
                csum_start: l.l4 as u16,
                csum_offset: 16,
            };
        }
        hdr.emit(&mut self.buf[..VNET_HDR_LEN]);
        write(&self.buf);
        self.buf.clear();
    }
}

/// The rest of what makes TCP segment `packet` the next of the group
/// that starts with `head`: acknowledgment number, flags, window (the
/// checksum differs), options (timestamps included), and the sequence
/// number that follows the group's.
fn tcp_appendable(head: &[u8], packet: &[u8], l: &Layout, next_seq: u32) -> bool {
    head[l.l4 + 8..l.l4 + 12] == packet[l.l4 + 8..l.l4 + 12]
        && head[l.l4 + 13] & !PSH == packet[l.l4 + 13] & !PSH
        && head[l.l4 + 14..l.l4 + 16] == packet[l.l4 + 14..l.l4 + 16]
        && head[l.l4 + 20..l.hdrs] == packet[l.l4 + 20..l.hdrs]
        && seq_of(packet, l) == next_seq
}

fn seq_of(p: &[u8], l: &Layout) -> u32 {
    u32::from_be_bytes(p[l.l4 + 4..l.l4 + 8].try_into().expect("4 bytes"))
}

/// TCP data without flags that must be seen alone, in an unfragmented
/// packet with no IPv4 options, whose TCP checksum is right: a coalesced
/// packet goes to the kernel with a partial checksum, which the kernel
/// takes as verified, so a bad segment must be written alone for the
/// receiver to drop (as the kernel's own GRO checks before merging).
fn mergeable(p: &[u8], l: &Layout) -> bool {
    let flags = p[l.l4 + 13];
    ip_whole(p, l)
        && p.len() > l.hdrs
        && flags & ACK != 0
        && flags & (FIN | SYN | RST | URG | CWR) == 0
        && checksum_ok(p, l)
}

/// An unfragmented packet with no IPv4 options, whose IP length is its
/// length: what may be merged at all.
fn ip_whole(p: &[u8], l: &Layout) -> bool {
    if l.v6 {
        usize::from(u16::from_be_bytes([p[4], p[5]])) + 40 == p.len()
    } else {
        l.l4 == 20
            && u16::from_be_bytes([p[6], p[7]]) & 0x3fff == 0
            && usize::from(u16::from_be_bytes([p[2], p[3]])) == p.len()
    }
}

/// `packet` behind an all-zero virtio header (no offload).
fn write_alone(scratch: &mut Vec<u8>, packet: &[u8], write: &mut impl FnMut(&[u8])) {
    scratch.clear();
    scratch.extend_from_slice(&[0; VNET_HDR_LEN]);
    scratch.extend_from_slice(packet);
    write(scratch);
    scratch.clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use flowsec_ipsec::buf::DEFAULT_TAILROOM;

    /// An IPv4 or IPv6 TCP packet with a timestamp option and `payload`.
    fn tcp(v6: bool, seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
        let mut t = vec![0u8; 32];
        t[0..2].copy_from_slice(&40000u16.to_be_bytes());
        t[2..4].copy_from_slice(&5001u16.to_be_bytes());
        t[4..8].copy_from_slice(&seq.to_be_bytes());
        t[8..12].copy_from_slice(&77u32.to_be_bytes());
        t[12] = 8 << 4;
        t[13] = flags;
        t[14..16].copy_from_slice(&512u16.to_be_bytes());
        t[20..32].copy_from_slice(&[1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 7]);
        t.extend_from_slice(payload);
        let mut p = ip_packet(v6, 6, 0x1234, true, &t);
        let l = tcp_layout(&p).unwrap();
        fix_ip_lengths(&mut p, &l);
        let sum = !checksum::combine(&[pseudo_sum(&p, &l), checksum::data(&p[l.l4..])]);
        p[l.l4 + 16..l.l4 + 18].copy_from_slice(&sum.to_be_bytes());
        p
    }

    /// `l4` behind an IPv4 (ID `id`, DF if `df`) or IPv6 header of
    /// protocol `proto` from 10.1.0.2 (fd01::2) to 10.2.0.2 (fd02::2), its
    /// lengths set (the IPv4 checksum is left to `fix_ip_lengths`).
    pub(super) fn ip_packet(v6: bool, proto: u8, id: u16, df: bool, l4: &[u8]) -> Vec<u8> {
        let mut h = if v6 {
            let mut h = vec![0u8; 40];
            h[0] = 0x60;
            h[4..6].copy_from_slice(&(l4.len() as u16).to_be_bytes());
            h[6] = proto;
            h[7] = 64;
            h[8..24].copy_from_slice(&"fd01::2".parse::<Ipv6Addr>().unwrap().octets());
            h[24..40].copy_from_slice(&"fd02::2".parse::<Ipv6Addr>().unwrap().octets());
            h
        } else {
            let mut h = vec![0u8; 20];
            h[0] = 0x45;
            h[2..4].copy_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
            h[4..6].copy_from_slice(&id.to_be_bytes());
            h[6] = if df { 0x40 } else { 0 };
            h[8] = 64;
            h[9] = proto;
            h[12..16].copy_from_slice(&[10, 1, 0, 2]);
            h[16..20].copy_from_slice(&[10, 2, 0, 2]);
            h
        };
        h.extend_from_slice(l4);
        h
    }

    fn tcp_checksum_ok(p: &[u8]) -> bool {
        checksum_ok(p, &tcp_layout(p).unwrap())
    }

    fn payload(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 % 251) as u8).collect()
    }

    #[test]
    fn the_virtio_header_round_trips() {
        let h = VnetHdr {
            flags: 1,
            gso_type: GSO_TCPV6 | GSO_ECN,
            hdr_len: 72,
            gso_size: 1388,
            csum_start: 40,
            csum_offset: 16,
        };
        let mut b = [0u8; VNET_HDR_LEN];
        h.emit(&mut b);
        assert_eq!(VnetHdr::parse(&b), Some(h));
        assert!(h.is_gso() && h.needs_csum());
        assert_eq!(VnetHdr::parse(&b[..9]), None);
    }

    /// Segmenting then coalescing gives back the packet; each segment is
    /// a valid packet.
    #[test]
    fn segments_are_whole_packets_and_coalesce_back() {
        for v6 in [false, true] {
            let data = payload(10_000);
            let big = tcp(v6, 1000, ACK | PSH, &data);
            let l = tcp_layout(&big).unwrap();
            // As the kernel hands it over: a partial checksum.
            let mut partial = big.clone();
            let ps = pseudo_sum(&partial, &l);
            partial[l.l4 + 16..l.l4 + 18].copy_from_slice(&ps.to_be_bytes());
            let hdr = VnetHdr {
                flags: F_NEEDS_CSUM,
                gso_type: if v6 { GSO_TCPV6 } else { GSO_TCPV4 },
                hdr_len: l.hdrs as u16,
                gso_size: 1400,
                csum_start: l.l4 as u16,
                csum_offset: 16,
            };
            let mut buf =
                PacketBuf::new(DEFAULT_HEADROOM + 2000 + DEFAULT_TAILROOM, DEFAULT_HEADROOM);
            let mut segs: Vec<Vec<u8>> = Vec::new();
            let n = segment_tcp(&partial, &hdr, &mut buf, |b| {
                segs.push(b.as_slice().to_vec())
            })
            .unwrap();
            assert_eq!(n, 8);
            let mut rebuilt = Vec::new();
            for (i, s) in segs.iter().enumerate() {
                assert!(tcp_checksum_ok(s), "segment {i} checksum");
                let want = tcp(
                    v6,
                    1000 + (i * 1400) as u32,
                    if i == 7 { ACK | PSH } else { ACK },
                    &data[i * 1400..((i + 1) * 1400).min(10_000)],
                );
                if v6 {
                    assert_eq!(s, &want);
                } else {
                    // Only the IPv4 ID (and so the header checksum) differs.
                    assert_eq!(u16::from_be_bytes([s[4], s[5]]), 0x1234 + i as u16);
                    assert_eq!(checksum::data(&s[..20]), 0xffff);
                    assert_eq!(s[20..], want[20..]);
                }
                rebuilt.extend_from_slice(&s[l.hdrs..]);
            }
            assert_eq!(rebuilt, data);

            let mut out: Vec<Vec<u8>> = Vec::new();
            let mut c = Coalescer::default();
            for s in &segs {
                c.push(s, &mut |b: &[u8]| out.push(b.to_vec()));
            }
            c.flush(&mut |b: &[u8]| out.push(b.to_vec()));
            assert_eq!(out.len(), 1);
            let h = VnetHdr::parse(&out[0]).unwrap();
            assert_eq!(
                (h.gso_size, h.hdr_len, h.csum_start),
                (1400, l.hdrs as u16, l.l4 as u16)
            );
            let mut merged = out[0][VNET_HDR_LEN..].to_vec();
            assert_eq!(merged.len(), big.len());
            complete_checksum(&mut merged, &h).unwrap();
            assert!(tcp_checksum_ok(&merged));
            assert_eq!(merged[l.hdrs..], big[l.hdrs..]);
            assert_eq!(merged[l.l4 + 13], ACK | PSH);
        }
    }

    #[test]
    fn the_coalescer_keeps_order_and_merges_only_what_may_be_merged() {
        let seg = |seq: u32, flags: u8, n: usize| tcp(false, seq, flags, &payload(n));
        let mut out: Vec<Vec<u8>> = Vec::new();
        let mut c = Coalescer::default();
        let mut w = |b: &[u8]| out.push(b.to_vec());
        c.push(&seg(0, ACK, 100), &mut w);
        c.push(&seg(100, ACK, 100), &mut w);
        // A gap: a new group.
        c.push(&seg(300, ACK, 100), &mut w);
        // Not TCP data (a bare SYN): the group goes first, then it alone.
        c.push(&seg(400, SYN, 0), &mut w);
        c.push(&seg(400, ACK, 100), &mut w);
        // A short segment closes the group.
        c.push(&seg(500, ACK, 50), &mut w);
        c.push(&seg(550, ACK, 100), &mut w);
        // A segment whose checksum is wrong is written alone, for the
        // receiver to drop.
        let mut bad = seg(650, ACK, 100);
        *bad.last_mut().unwrap() ^= 0xff;
        c.push(&bad, &mut w);
        // Garbage is written alone, in order.
        c.push(&[0x45, 0, 0], &mut w);
        c.flush(&mut w);
        let shapes: Vec<(u16, usize)> = out
            .iter()
            .map(|b| (VnetHdr::parse(b).unwrap().gso_size, b.len() - VNET_HDR_LEN))
            .collect();
        assert_eq!(
            shapes,
            vec![
                (100, 252),
                (0, 152),
                (0, 52),
                (100, 202),
                (0, 152),
                (0, 152),
                (0, 3)
            ]
        );
    }

    #[test]
    fn partial_checksums_are_completed_and_bad_offsets_refused() {
        let mut p = tcp(false, 1, ACK, &payload(33));
        let l = tcp_layout(&p).unwrap();
        let ps = pseudo_sum(&p, &l);
        p[l.l4 + 16..l.l4 + 18].copy_from_slice(&ps.to_be_bytes());
        let hdr = VnetHdr {
            flags: F_NEEDS_CSUM,
            csum_start: 20,
            csum_offset: 16,
            ..VnetHdr::default()
        };
        complete_checksum(&mut p, &hdr).unwrap();
        assert!(tcp_checksum_ok(&p));
        let far = VnetHdr {
            csum_start: 60_000,
            ..hdr
        };
        assert_eq!(
            complete_checksum(&mut p, &far),
            Err(OffloadError::BadChecksumOffsets)
        );
    }

    #[test]
    fn super_packets_that_are_not_tcp_are_refused() {
        let mut buf = PacketBuf::new(DEFAULT_HEADROOM + 2000 + DEFAULT_TAILROOM, DEFAULT_HEADROOM);
        let p = tcp(false, 1, ACK, &payload(3000));
        let mut hdr = VnetHdr {
            gso_type: 3, // UDP fragmentation offload
            gso_size: 1400,
            ..VnetHdr::default()
        };
        assert!(segment_tcp(&p, &hdr, &mut buf, |_| {}).is_err());
        hdr.gso_type = GSO_TCPV6;
        assert!(segment_tcp(&p, &hdr, &mut buf, |_| {}).is_err());
        hdr.gso_type = GSO_TCPV4;
        hdr.gso_size = 0;
        assert!(segment_tcp(&p, &hdr, &mut buf, |_| {}).is_err());
        for cut in 0..60 {
            hdr.gso_size = 1400;
            let _ = segment_tcp(&p[..cut], &hdr, &mut buf, |_| {});
        }
    }
}
