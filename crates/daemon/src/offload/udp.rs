//! UDP segmentation offload on the TUN device (USO: `TUN_F_USO4` and
//! `TUN_F_USO6`, Linux 6.2). A UDP super-packet is a train of datagrams of
//! one flow behind one IP and UDP header: `gso_size` bytes of payload
//! each, the last one possibly shorter (virtio spec 1.2 §5.1.6.4,
//! `VIRTIO_NET_HDR_GSO_UDP_L4`; the kernel cuts it in `__udp_gso_segment`).
//!
//! - Outbound, [`segment_udp`] cuts one that the kernel hands us (a local
//!   sender's UDP_SEGMENT, or datagrams the kernel's GRO merged on their
//!   way to the TUN device) into datagrams, each then sealed like any
//!   packet.
//! - Inbound, the [`super::Coalescer`] merges consecutive datagrams of one
//!   flow that came out of the tunnel in one batch ([`mergeable`],
//!   [`appendable`], [`super_header`]): one write to the TUN device and
//!   one trip through the kernel's forwarding for up to
//!   [`MAX_SEGMENTS`] datagrams, where each small datagram cost both.
//!   The receiver gets them as they were sent: the kernel cuts the train
//!   back before a socket or a link that cannot take it whole.

use flowsec_ipsec::PacketBuf;
use flowsec_wire::ipv4::checksum;

use super::{
    checksum_ok, cut, ip_whole, layout, pseudo_sum, Layout, OffloadError, VnetHdr, F_NEEDS_CSUM,
};

/// `VIRTIO_NET_HDR_GSO_UDP_L4` (linux/virtio_net.h).
pub(super) const GSO_UDP_L4: u8 = 5;
/// The UDP header (RFC 768).
pub(super) const HEADER_LEN: usize = 8;
/// The most datagrams merged into one super-packet (the kernel takes up
/// to `UDP_MAX_SEGMENTS`, 128).
pub(super) const MAX_SEGMENTS: usize = 64;
/// The IPv4 Don't Fragment flag, in the high byte of the flags and
/// fragment offset.
const DF: u8 = 0x40;

/// Cut the UDP super-packet `packet` (described by `hdr`) into datagrams
/// of at most `gso_size` payload bytes, each built in `buf` (with the
/// usual headroom), its lengths, IPv4 ID and checksum set, and handed to
/// `each`. Returns the number of datagrams.
pub fn segment_udp(
    packet: &[u8],
    hdr: &VnetHdr,
    buf: &mut PacketBuf,
    each: impl FnMut(&mut PacketBuf),
) -> Result<usize, OffloadError> {
    let l = layout(packet)?;
    let size = usize::from(hdr.gso_size);
    if hdr.gso_type != GSO_UDP_L4 || !l.udp || size == 0 {
        return Err(OffloadError::UnsupportedGso);
    }
    let fix = |p: &mut [u8], _: usize, _: usize| {
        let udp_len = (p.len() - l.l4) as u16;
        p[l.l4 + 4..l.l4 + 6].copy_from_slice(&udp_len.to_be_bytes());
        p[l.l4 + 6..l.l4 + 8].copy_from_slice(&[0, 0]);
        let sum = !checksum::combine(&[pseudo_sum(p, &l), checksum::data(&p[l.l4..])]);
        // A computed zero is sent as all ones (RFC 768; RFC 8200 §8.1).
        let sum = if sum == 0 { 0xffff } else { sum };
        p[l.l4 + 6..l.l4 + 8].copy_from_slice(&sum.to_be_bytes());
    };
    cut(packet, &l, size, buf, fix, each)
}

/// A datagram that may start or join a train: whole (see
/// [`super::ip_whole`]), its UDP length its length, some payload, and a
/// checksum that is there and right. The train goes to the kernel with a
/// partial checksum, which it takes as verified, so a bad datagram must
/// be written alone for the receiver to drop; one sent without a
/// checksum (IPv4's zero) would get one.
pub(super) fn mergeable(p: &[u8], l: &Layout) -> bool {
    let udp_len = usize::from(u16::from_be_bytes([p[l.l4 + 4], p[l.l4 + 5]]));
    ip_whole(p, l)
        && udp_len == p.len() - l.l4
        && p.len() > l.hdrs
        && p[l.l4 + 6..l.l4 + 8] != [0, 0]
        && checksum_ok(p, l)
}

/// What else datagram `p` needs to join the train that starts with `head`
/// and holds `segments` datagrams (same flow, size and ports are checked
/// by the coalescer): room in the train, and an IPv4 ID the kernel will
/// give it back when it cuts the train (the first one's plus its place),
/// unless both are atomic datagrams (DF set), whose ID means nothing
/// (RFC 6864 §4.1).
pub(super) fn appendable(head: &[u8], p: &[u8], segments: usize) -> bool {
    if segments >= MAX_SEGMENTS {
        return false;
    }
    let v4 = head[0] >> 4 == 4;
    let atomic = head[6] & DF != 0 && p[6] & DF != 0;
    let id = |b: &[u8]| u16::from_be_bytes([b[4], b[5]]);
    !v4 || atomic || id(p) == id(head).wrapping_add(segments as u16)
}

/// Finish the train `p` (its IP lengths already set): the UDP length of
/// the whole and, in the checksum field, the pseudo-header sum (a partial
/// checksum, as `udp_send_skb` leaves it); returns its virtio header.
pub(super) fn super_header(p: &mut [u8], l: &Layout, size: usize) -> VnetHdr {
    let udp_len = (p.len() - l.l4) as u16;
    p[l.l4 + 4..l.l4 + 6].copy_from_slice(&udp_len.to_be_bytes());
    let sum = pseudo_sum(p, l);
    p[l.l4 + 6..l.l4 + 8].copy_from_slice(&sum.to_be_bytes());
    VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: GSO_UDP_L4,
        hdr_len: l.hdrs as u16,
        gso_size: size as u16,
        csum_start: l.l4 as u16,
        csum_offset: 6,
    }
}

#[cfg(test)]
mod tests {
    use super::super::fix_ip_lengths;
    use super::super::tests::ip_packet;
    use super::super::{complete_checksum, Coalescer, VNET_HDR_LEN};
    use super::*;
    use flowsec_ipsec::buf::{DEFAULT_HEADROOM, DEFAULT_TAILROOM};

    /// An IPv4 (ID `id`, DF if `df`) or IPv6 UDP datagram 40000 -> `dport`
    /// with `payload` and its checksum.
    fn udp(v6: bool, id: u16, df: bool, dport: u16, payload: &[u8]) -> Vec<u8> {
        let mut u = vec![0u8; HEADER_LEN];
        u[0..2].copy_from_slice(&40000u16.to_be_bytes());
        u[2..4].copy_from_slice(&dport.to_be_bytes());
        u.extend_from_slice(payload);
        let mut p = ip_packet(v6, 17, id, df, &u);
        let l = layout(&p).unwrap();
        fix_ip_lengths(&mut p, &l);
        let n = (p.len() - l.l4) as u16;
        p[l.l4 + 4..l.l4 + 6].copy_from_slice(&n.to_be_bytes());
        let sum = !checksum::combine(&[pseudo_sum(&p, &l), checksum::data(&p[l.l4..])]);
        p[l.l4 + 6..l.l4 + 8].copy_from_slice(&sum.to_be_bytes());
        p
    }

    fn payload(n: usize, seed: usize) -> Vec<u8> {
        (0..n).map(|i| ((i + seed) * 7 % 251) as u8).collect()
    }

    fn coalesce(uso: bool, packets: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let mut out: Vec<Vec<u8>> = Vec::new();
        let mut c = Coalescer::new(uso);
        let mut w = |b: &[u8]| out.push(b.to_vec());
        for p in packets {
            c.push(p, &mut w);
        }
        c.flush(&mut w);
        out
    }

    /// Datagrams of one flow merge into one train; cut again (as the
    /// kernel would, or as we do with one from the TUN device), the train
    /// gives back each datagram exactly, checksums included.
    #[test]
    fn a_train_of_datagrams_merges_and_cuts_back_into_the_same_datagrams() {
        for v6 in [false, true] {
            let sent: Vec<Vec<u8>> = (0..10)
                .map(|i| {
                    let n = if i == 9 { 20 } else { 64 };
                    udp(v6, 0x100 + i as u16, false, 5201, &payload(n, i))
                })
                .collect();
            let out = coalesce(true, &sent);
            assert_eq!(out.len(), 1, "one train");
            let h = VnetHdr::parse(&out[0]).unwrap();
            let l = layout(&sent[0]).unwrap();
            assert_eq!(
                (
                    h.gso_type,
                    h.gso_size,
                    h.hdr_len,
                    h.csum_start,
                    h.csum_offset
                ),
                (GSO_UDP_L4, 64, l.hdrs as u16, l.l4 as u16, 6)
            );
            let train = &out[0][VNET_HDR_LEN..];
            assert_eq!(train.len(), l.hdrs + 9 * 64 + 20);
            // What the kernel does with it (segment_udp completes each
            // datagram's checksum; the kernel adjusts the partial one).
            let mut buf =
                PacketBuf::new(DEFAULT_HEADROOM + 2000 + DEFAULT_TAILROOM, DEFAULT_HEADROOM);
            let mut cut: Vec<Vec<u8>> = Vec::new();
            let n = segment_udp(train, &h, &mut buf, |b| cut.push(b.as_slice().to_vec())).unwrap();
            assert_eq!(n, 10);
            assert_eq!(cut, sent);
            // The train's own partial checksum completes to a right one.
            let mut whole = train.to_vec();
            complete_checksum(&mut whole, &h).unwrap();
            assert!(checksum_ok(&whole, &l));
        }
    }

    #[test]
    fn only_what_may_be_merged_is() {
        let d = |id: u16, dport: u16, n: usize| udp(false, id, false, dport, &payload(n, 0));
        let shapes = |out: &[Vec<u8>]| -> Vec<(u16, usize)> {
            out.iter()
                .map(|b| (VnetHdr::parse(b).unwrap().gso_size, b.len() - VNET_HDR_LEN))
                .collect()
        };
        // Without USO, every datagram alone.
        let two = [d(1, 53, 64), d(2, 53, 64)];
        assert_eq!(shapes(&coalesce(false, &two)), vec![(0, 92), (0, 92)]);
        assert_eq!(shapes(&coalesce(true, &two)), vec![(64, 156)]);
        let mut bad = d(3, 53, 64);
        *bad.last_mut().unwrap() ^= 1;
        let mut no_sum = d(3, 53, 64);
        no_sum[26..28].copy_from_slice(&[0, 0]);
        let cases = [
            // Another flow (port), a longer datagram, a gap in the IPv4
            // IDs, a bad checksum, no checksum: each starts anew or goes
            // alone.
            (vec![d(1, 53, 64), d(2, 54, 64)], vec![(0, 92), (0, 92)]),
            (vec![d(1, 53, 64), d(2, 53, 65)], vec![(0, 92), (0, 93)]),
            (vec![d(1, 53, 64), d(3, 53, 64)], vec![(0, 92), (0, 92)]),
            (
                vec![d(1, 53, 64), d(2, 53, 64), bad],
                vec![(64, 156), (0, 92)],
            ),
            (vec![d(1, 53, 64), no_sum], vec![(0, 92), (0, 92)]),
            // A shorter one closes the train.
            (
                vec![d(1, 53, 64), d(2, 53, 10), d(3, 53, 64)],
                vec![(64, 102), (0, 92)],
            ),
        ];
        for (i, (packets, want)) in cases.iter().enumerate() {
            assert_eq!(&shapes(&coalesce(true, packets)), want, "case {i}");
        }
        // Atomic datagrams (DF) merge whatever their IDs.
        let atomic: Vec<Vec<u8>> = (0..3)
            .map(|_| udp(false, 0, true, 53, &payload(64, 0)))
            .collect();
        assert_eq!(shapes(&coalesce(true, &atomic)), vec![(64, 220)]);
        // At most MAX_SEGMENTS a train.
        let many: Vec<Vec<u8>> = (0..MAX_SEGMENTS + 1).map(|i| d(i as u16, 53, 8)).collect();
        let out = coalesce(true, &many);
        assert_eq!(out.len(), 2);
    }

    /// A small xorshift: the same sequence every run.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Bytes that differ between a datagram and the same one cut back from
    /// a train: an IPv4 ID that meant nothing (atomic datagrams) and so the
    /// header checksum.
    fn without_id(p: &[u8]) -> Vec<u8> {
        let mut p = p.to_vec();
        if p.first().is_some_and(|b| b >> 4 == 4) && p.len() >= 12 && p[6] & DF != 0 {
            p[4..6].fill(0);
            p[10..12].fill(0);
        }
        p
    }

    /// Whatever comes out of the tunnel (datagrams of a few flows and
    /// sizes, IDs in or out of sequence, some corrupted, cut short or not
    /// IP at all), the coalescer's writes, trains cut back as the kernel
    /// does, are the packets pushed, in order.
    #[test]
    fn any_sequence_comes_out_as_it_went_in() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut buf = PacketBuf::new(
            DEFAULT_HEADROOM + 66_000 + DEFAULT_TAILROOM,
            DEFAULT_HEADROOM,
        );
        let mut trains = 0;
        for round in 0..300 {
            let mut sent: Vec<Vec<u8>> = Vec::new();
            let mut id = rng.below(65_536) as u16;
            for _ in 0..rng.below(80) {
                let v6 = rng.below(4) == 0;
                let size = [1, 8, 64, 64, 64, 200, 1200][rng.below(7) as usize];
                id = if rng.below(8) == 0 {
                    rng.next() as u16
                } else {
                    id.wrapping_add(1)
                };
                let dport = 53 + rng.below(2) as u16;
                let mut d = udp(v6, id, rng.below(2) == 0, dport, &payload(size, round));
                match rng.below(20) {
                    0 => *d.last_mut().unwrap() ^= 0x5a,
                    1 => d.truncate(rng.below(d.len() as u64) as usize),
                    2 => d = (0..rng.below(60)).map(|_| rng.next() as u8).collect(),
                    _ => {}
                }
                sent.push(d);
            }
            let mut got: Vec<Vec<u8>> = Vec::new();
            for w in coalesce(true, &sent) {
                let h = VnetHdr::parse(&w).unwrap();
                let p = &w[VNET_HDR_LEN..];
                if h.is_gso() {
                    trains += 1;
                    segment_udp(p, &h, &mut buf, |b| got.push(b.as_slice().to_vec())).unwrap();
                } else {
                    got.push(p.to_vec());
                }
            }
            let strip = |v: &[Vec<u8>]| v.iter().map(|p| without_id(p)).collect::<Vec<_>>();
            assert_eq!(strip(&got), strip(&sent), "round {round}");
        }
        assert!(trains > 300, "the sequences made trains: {trains}");
    }

    #[test]
    fn trains_that_are_not_udp_or_cannot_be_cut_are_refused() {
        let mut buf = PacketBuf::new(DEFAULT_HEADROOM + 2000 + DEFAULT_TAILROOM, DEFAULT_HEADROOM);
        let p = udp(false, 1, false, 53, &payload(3000, 0));
        let mut hdr = VnetHdr {
            gso_type: GSO_UDP_L4,
            gso_size: 0,
            ..VnetHdr::default()
        };
        assert_eq!(
            segment_udp(&p, &hdr, &mut buf, |_| {}),
            Err(OffloadError::UnsupportedGso)
        );
        hdr.gso_size = 1400;
        assert_eq!(segment_udp(&p, &hdr, &mut buf, |_| {}), Ok(3));
        // A TCP packet behind a UDP header type.
        let mut tcp = p.clone();
        tcp[9] = 6;
        assert!(segment_udp(&tcp, &hdr, &mut buf, |_| {}).is_err());
        for cut in 0..40 {
            let _ = segment_udp(&p[..cut], &hdr, &mut buf, |_| {});
        }
    }
}
