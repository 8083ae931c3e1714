//! Putting IP fragments back together before transport-mode IPsec: a
//! transport-mode SA protects whole datagrams only (RFC 4301 §4.1, RFC 4303
//! §3.1.1), so the fragments a local stack wrote to the TUN device are
//! reassembled first, and the sealed datagram is fragmented again after
//! ESP ([`flowsec_wire::frag`], RFC 4303 §3.3.4). Reassembly follows RFC
//! 791 §3.2 and RFC 8200 §4.5 with RFC 5722's rule for overlaps: a
//! datagram with overlapping fragments is dropped whole (for IPv4 too:
//! nothing legitimate overlaps, and it is how fragment attacks work).
//!
//! Sans-I/O: the caller passes the time. Memory is bounded: at most
//! `max_datagrams` datagrams in progress, each at most 64 KiB; the oldest
//! is given up when a new one needs its place, and a datagram not
//! complete after [`TIMEOUT`] is given up (Linux's `ipfrag_time`).

use std::net::IpAddr;
use std::time::Duration;

use flowsec_wire::iana::IpProtocol;
use flowsec_wire::ip::{version_of, IpVersion};
use flowsec_wire::ipv4::Ipv4Packet;
use flowsec_wire::ipv6::{self, Ipv6Packet};
use flowsec_wire::ipv6ext::{ipv6_header_chain, Ipv6FragmentHeader};

use crate::buf::PacketBuf;
use crate::DropReason;

/// How long a datagram may wait for its missing fragments.
pub const TIMEOUT: Duration = Duration::from_secs(30);
/// The largest reassembled payload (after the IP header): a 16-bit length.
const MAX_DATA: usize = 65_535;
/// 8-byte blocks of the largest payload, in 64-bit words.
const BITMAP_WORDS: usize = MAX_DATA.div_ceil(8).div_ceil(64);

/// What identifies the fragments of one datagram (RFC 791: source,
/// destination, protocol, identification; RFC 8200: source, destination,
/// identification).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Key {
    src: IpAddr,
    dst: IpAddr,
    protocol: u8,
    ident: u32,
}

/// One fragment, parsed.
struct Piece<'a> {
    key: Key,
    /// Byte offset of `data` in the datagram's payload.
    offset: usize,
    more: bool,
    data: &'a [u8],
    /// The headers before the fragmented part: the IPv4 header, or the
    /// IPv6 unfragmentable part.
    header: &'a [u8],
    /// IPv6: the offset in `header` of the next header field that names
    /// the Fragment header, and the Fragment header's Next Header.
    v6: Option<(usize, u8)>,
}

/// A datagram in progress.
struct Partial {
    key: Key,
    started: Duration,
    /// From the first fragment (offset 0), once it is here.
    header: Vec<u8>,
    v6: Option<(usize, u8)>,
    data: Vec<u8>,
    /// One bit per 8-byte block received.
    blocks: Box<[u64; BITMAP_WORDS]>,
    /// Known once the last fragment (MF clear) arrived.
    total: Option<usize>,
}

impl Partial {
    /// Mark `offset..offset + len`; false if any of it was there already.
    fn mark(&mut self, offset: usize, len: usize) -> bool {
        let (first, end) = (offset / 8, (offset + len).div_ceil(8));
        for b in first..end {
            let (w, bit) = (b / 64, b % 64);
            if self.blocks[w] & (1 << bit) != 0 {
                return false;
            }
            self.blocks[w] |= 1 << bit;
        }
        true
    }

    fn complete(&self) -> Option<usize> {
        let total = self.total?;
        if self.header.is_empty() {
            return None;
        }
        let blocks = total.div_ceil(8);
        (0..blocks)
            .all(|b| self.blocks[b / 64] & (1 << (b % 64)) != 0)
            .then_some(total)
    }
}

/// Datagrams being reassembled.
pub struct Reassembler {
    partial: Vec<Partial>,
    max_datagrams: usize,
    /// Datagrams given up: timed out, or pushed out by newer ones.
    pub expired: u64,
}

impl Reassembler {
    /// At most `max_datagrams` in progress at once.
    pub fn new(max_datagrams: usize) -> Self {
        Reassembler {
            partial: Vec::new(),
            max_datagrams: max_datagrams.max(1),
            expired: 0,
        }
    }

    /// Datagrams in progress.
    pub fn pending(&self) -> usize {
        self.partial.len()
    }

    /// Take the fragment `packet` at `now`. `Ok(true)` when it completed its
    /// datagram, which is then in `out` (a whole IP packet, fragmentation
    /// fields cleared); `Ok(false)` while fragments are missing.
    ///
    /// Errors (the fragment is dropped; for an overlap, its datagram too):
    /// [`DropReason::BadFragment`] for a malformed, misaligned, oversized
    /// or inconsistent fragment, [`DropReason::FragmentOverlap`], and
    /// [`DropReason::NoRoom`] if `out` cannot hold the datagram.
    pub fn push(
        &mut self,
        packet: &[u8],
        now: Duration,
        out: &mut PacketBuf,
    ) -> Result<bool, DropReason> {
        self.expire(now);
        let piece = parse(packet)?;
        let end = piece.offset + piece.data.len();
        // Every fragment but the last carries a multiple of 8 bytes.
        if end > MAX_DATA || (piece.more && piece.data.len() % 8 != 0) || piece.data.is_empty() {
            return Err(DropReason::BadFragment);
        }
        let at = match self.partial.iter().position(|p| p.key == piece.key) {
            Some(at) => at,
            None => {
                if self.partial.len() >= self.max_datagrams {
                    // Give up the oldest: new traffic cannot be starved by
                    // datagrams that will never complete.
                    self.partial.remove(0);
                    self.expired += 1;
                }
                self.partial.push(Partial {
                    key: piece.key,
                    started: now,
                    header: Vec::new(),
                    v6: None,
                    data: Vec::new(),
                    blocks: Box::new([0; BITMAP_WORDS]),
                    total: None,
                });
                self.partial.len() - 1
            }
        };
        let p = &mut self.partial[at];
        let inconsistent = match p.total {
            Some(total) => end > total || (!piece.more && end != total),
            None => !piece.more && p.data.len() > end,
        };
        if inconsistent {
            self.partial.remove(at);
            return Err(DropReason::BadFragment);
        }
        if !p.mark(piece.offset, piece.data.len()) {
            self.partial.remove(at);
            return Err(DropReason::FragmentOverlap);
        }
        if !piece.more {
            p.total = Some(end);
        }
        if p.data.len() < end {
            p.data.resize(end, 0);
        }
        p.data[piece.offset..end].copy_from_slice(piece.data);
        if piece.offset == 0 {
            p.header = piece.header.to_vec();
            p.v6 = piece.v6;
        }
        let Some(total) = p.complete() else {
            return Ok(false);
        };
        let p = self.partial.remove(at);
        build(&p, total, out)?;
        Ok(true)
    }

    /// Give up datagrams older than [`TIMEOUT`].
    fn expire(&mut self, now: Duration) {
        let before = self.partial.len();
        self.partial
            .retain(|p| now.saturating_sub(p.started) < TIMEOUT);
        self.expired += (before - self.partial.len()) as u64;
    }
}

/// The fragment fields of `packet`; not a fragment is an error here.
fn parse(packet: &[u8]) -> Result<Piece<'_>, DropReason> {
    match version_of(packet).map_err(|_| DropReason::BadIpHeader)? {
        IpVersion::V4 => {
            let p = Ipv4Packet::new_checked(packet).map_err(|_| DropReason::BadIpHeader)?;
            if !p.is_fragment() {
                return Err(DropReason::BadFragment);
            }
            let hl = p.header_len();
            Ok(Piece {
                key: Key {
                    src: p.src_addr().into(),
                    dst: p.dst_addr().into(),
                    protocol: p.next_header().0,
                    ident: u32::from(p.ident()),
                },
                offset: usize::from(p.frag_offset()),
                more: p.more_frags(),
                data: &packet[hl..usize::from(p.total_len())],
                header: &packet[..hl],
                v6: None,
            })
        }
        IpVersion::V6 => {
            let ip = Ipv6Packet::new_checked(packet).map_err(|_| DropReason::BadIpHeader)?;
            let chain = ipv6_header_chain(packet).map_err(|_| DropReason::BadExtensionHeaders)?;
            let headers = chain.headers();
            let Some(i) = headers
                .iter()
                .position(|h| h.protocol == IpProtocol::IPV6_FRAG)
            else {
                return Err(DropReason::BadFragment);
            };
            let at = headers[i].offset;
            // The field naming the Fragment header: the fixed header's, or
            // the first byte of the header before it.
            let field = match i {
                0 => ipv6::NEXT_HEADER_OFFSET,
                _ => headers[i - 1].offset,
            };
            let f = Ipv6FragmentHeader::new_checked(&packet[at..chain.packet_len()])
                .map_err(|_| DropReason::BadExtensionHeaders)?;
            Ok(Piece {
                key: Key {
                    src: ip.src_addr().into(),
                    dst: ip.dst_addr().into(),
                    protocol: 0,
                    ident: f.ident(),
                },
                offset: usize::from(f.frag_offset()),
                more: f.more_frags(),
                data: &packet[at + 8..chain.packet_len()],
                header: &packet[..at],
                v6: Some((field, f.next_header().0)),
            })
        }
    }
}

/// The whole datagram of `p` (`total` payload bytes) into `out`.
fn build(p: &Partial, total: usize, out: &mut PacketBuf) -> Result<(), DropReason> {
    let len = p.header.len() + total;
    if p.v6.is_none() && len > MAX_DATA {
        return Err(DropReason::BadFragment);
    }
    out.set_len(len).map_err(|_| DropReason::NoRoom)?;
    let b = out.as_mut_slice();
    b[..p.header.len()].copy_from_slice(&p.header);
    b[p.header.len()..].copy_from_slice(&p.data[..total]);
    match p.v6 {
        None => {
            let mut ip = Ipv4Packet::new_unchecked(b);
            ip.set_total_len(len as u16);
            ip.clear_flags();
            ip.fill_checksum();
        }
        Some((field, next)) => {
            let payload = len - ipv6::HEADER_LEN;
            if payload > MAX_DATA {
                return Err(DropReason::BadFragment);
            }
            b[field] = next;
            Ipv6Packet::new_unchecked(b).set_payload_len(payload as u16);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use flowsec_wire::frag::{fragment_ipv4, fragment_ipv6};

    fn udp4(len: usize, ident: u16) -> Vec<u8> {
        let mut p = vec![0u8; len];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        p[4..6].copy_from_slice(&ident.to_be_bytes());
        p[8] = 64;
        p[9] = 17;
        p[12..16].copy_from_slice(&[192, 0, 2, 1]);
        p[16..20].copy_from_slice(&[192, 0, 2, 2]);
        for (i, b) in p[20..].iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
        Ipv4Packet::new_unchecked(&mut p[..]).fill_checksum();
        p
    }

    fn frags4(p: &[u8], mtu: usize) -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        fragment_ipv4(p, mtu, |f| v.push(f.to_vec())).unwrap();
        v
    }

    fn out() -> PacketBuf {
        PacketBuf::new(70_000, 64)
    }

    #[test]
    fn fragments_in_any_order_give_back_the_datagram() {
        let whole = udp4(4124, 7);
        let mut frags = frags4(&whole, 1400);
        frags.reverse();
        frags.swap(0, 1);
        let (mut r, mut b) = (Reassembler::new(4), out());
        let t = Duration::from_secs(1);
        for (i, f) in frags.iter().enumerate() {
            let done = r.push(f, t, &mut b).unwrap();
            assert_eq!(done, i == frags.len() - 1);
        }
        assert_eq!(b.as_slice(), &whole[..]);
        assert_eq!(r.pending(), 0);
    }

    #[test]
    fn ipv6_too() {
        let len = 40 + 3000;
        let mut p = vec![0u8; len];
        p[0] = 0x60;
        p[4..6].copy_from_slice(&((len - 40) as u16).to_be_bytes());
        p[6] = 17;
        p[7] = 64;
        p[8] = 0x20;
        p[24] = 0x20;
        p[23] = 1;
        p[39] = 2;
        for (i, b) in p[40..].iter_mut().enumerate() {
            *b = (i * 3) as u8;
        }
        let mut frags = Vec::new();
        fragment_ipv6(&p, 1280, 99, |f| frags.push(f.to_vec())).unwrap();
        let (mut r, mut b) = (Reassembler::new(4), out());
        let t = Duration::ZERO;
        assert!(!r.push(&frags[2], t, &mut b).unwrap());
        assert!(!r.push(&frags[0], t, &mut b).unwrap());
        assert!(r.push(&frags[1], t, &mut b).unwrap());
        assert_eq!(b.as_slice(), &p[..]);
    }

    #[test]
    fn hostile_fragments_are_dropped_by_name() {
        let whole = udp4(3000, 9);
        let frags = frags4(&whole, 1000);
        let t = Duration::ZERO;
        let (mut r, mut b) = (Reassembler::new(4), out());
        // The same fragment twice: an overlap, the datagram goes.
        r.push(&frags[0], t, &mut b).unwrap();
        assert_eq!(
            r.push(&frags[0], t, &mut b),
            Err(DropReason::FragmentOverlap)
        );
        assert_eq!(r.pending(), 0);
        // A middle fragment whose length is not a multiple of 8.
        let mut odd = frags[0].clone();
        odd.truncate(odd.len() - 3);
        let n = odd.len() as u16;
        {
            let mut ip = Ipv4Packet::new_unchecked(&mut odd[..]);
            ip.set_total_len(n);
            ip.fill_checksum();
        }
        assert_eq!(r.push(&odd, t, &mut b), Err(DropReason::BadFragment));
        // Past 64 KiB.
        let mut far = frags[1].clone();
        Ipv4Packet::new_unchecked(&mut far[..]).set_frag_offset(65_000);
        assert_eq!(r.push(&far, t, &mut b), Err(DropReason::BadFragment));
        // Two "last" fragments that disagree on the length.
        let (mut r, mut b) = (Reassembler::new(4), out());
        r.push(&frags[2], t, &mut b).unwrap();
        let mut short_last = frags[1].clone();
        Ipv4Packet::new_unchecked(&mut short_last[..]).set_more_frags(false);
        assert_eq!(r.push(&short_last, t, &mut b), Err(DropReason::BadFragment));
        // Not a fragment at all.
        assert_eq!(r.push(&whole, t, &mut b), Err(DropReason::BadFragment));
        assert_eq!(r.push(&[0x45, 0], t, &mut b), Err(DropReason::BadIpHeader));
    }

    #[test]
    fn memory_and_time_are_bounded() {
        let t0 = Duration::from_secs(5);
        let (mut r, mut b) = (Reassembler::new(3), out());
        // First fragments of ten datagrams: three are kept.
        for id in 0..10 {
            r.push(&frags4(&udp4(3000, id), 1000)[0], t0, &mut b)
                .unwrap();
        }
        assert_eq!((r.pending(), r.expired), (3, 7));
        // The newest still completes.
        let last = frags4(&udp4(3000, 9), 1000);
        let done: Vec<bool> = last[1..]
            .iter()
            .map(|f| r.push(f, t0, &mut b).unwrap())
            .collect();
        assert_eq!(done.last(), Some(&true));
        assert_eq!(r.pending(), 2);
        // The others time out.
        r.push(&frags4(&udp4(3000, 50), 1000)[0], t0 + TIMEOUT, &mut b)
            .unwrap();
        assert_eq!((r.pending(), r.expired), (1, 9));
    }
}
