//! What a worker sends, batched: sealed packets queue here and leave with
//! one `sendmmsg(2)` per raw socket, or, ESP in UDP, with one
//! `UDP_SEGMENT` send per run of equal-sized packets (ARCHITECTURE.md
//! "Outbound": send batch, UDP GSO). Flushed when a batch fills and once per
//! worker loop.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use flowsec_ipsec::{DropReason, Egress, UdpEndpoints};
use flowsec_wire::ip::{version_of, IpVersion};
use flowsec_wire::ipv4::Ipv4Packet;
use flowsec_wire::ipv6::Ipv6Packet;

use crate::fragid::{self, FragmentIds};
use crate::nexthop::{LinkHop, Pair, REFRESH};
use crate::stats::Stats;
use crate::sys;

/// A worker's send sockets.
#[derive(Debug, Clone, Copy)]
pub struct SendFds {
    /// Raw IPv4, header included.
    pub send4: i32,
    /// Raw IPv6, header included; `None` without IPv6.
    pub send6: Option<i32>,
    /// This worker's UDP 4500 sockets, when the port could be had.
    pub udp4: Option<i32>,
    pub udp6: Option<i32>,
    /// A packet socket for raw IP packets whose link hop is known
    /// (`crate::nexthop`); `None` with `--esp-send raw`.
    pub link: Option<i32>,
}

/// A pair's link hop, and whether its next packet goes the kernel's way
/// (once a second, so that the kernel keeps the neighbor entry fresh).
struct Hop {
    link: LinkHop,
    kernel_due: bool,
}

/// Everything a worker has queued to send.
pub struct Sender {
    fds: SendFds,
    /// Sealed reassembled datagrams leave as fragments of this size (the
    /// TUN MTU: the path MTU less the IPsec overhead, so they fit the path).
    mtu: usize,
    /// IPv6 Fragment header identifications (random, RFC 7739).
    ids: FragmentIds,
    out4: SendBatch<sys::Dest4>,
    out6: SendBatch<sys::Dest6>,
    /// Raw IP packets to neighbors on their links, and where each pair's go.
    out_link: SendBatch<sys::DestLink>,
    hops: HashMap<Pair, Hop>,
    /// When the hops were last made due for the kernel's way.
    hops_ticked: Duration,
    gso4: UdpGso,
    gso6: UdpGso,
    /// ESP for TCP streams (RFC 9329), handed to the stream thread once
    /// per flush.
    stream: Option<crate::channels::StreamSink>,
    tcp: Vec<(UdpEndpoints, Vec<u8>)>,
}

impl Sender {
    pub fn new(fds: SendFds, mtu: usize) -> Self {
        Sender {
            fds,
            mtu,
            ids: FragmentIds::default(),
            out4: SendBatch::new(),
            out6: SendBatch::new(),
            out_link: SendBatch::new(),
            hops: HashMap::new(),
            hops_ticked: Duration::ZERO,
            gso4: UdpGso::default(),
            gso6: UdpGso::default(),
            stream: None,
            tcp: Vec::new(),
        }
    }

    /// ESP over TCP goes to this stream thread.
    pub fn with_stream(mut self, stream: Option<crate::channels::StreamSink>) -> Self {
        self.stream = stream;
        self
    }

    /// Queue a sealed packet where the core said it goes: ESP in UDP to
    /// the UDP socket of its family (GSO), an IP packet to the raw socket.
    /// ESP in UDP over a family without the UDP socket is counted
    /// `unsupported_outer` (such SAs are refused at setup).
    pub fn sealed(&mut self, packet: &[u8], egress: Egress, stats: &mut Stats) {
        let to = match egress {
            Egress::Udp(to) => to,
            Egress::Tcp(to) => {
                match self.stream {
                    Some(_) => self.tcp.push((to, packet.to_vec())),
                    None => stats.unsupported_outer += 1,
                }
                return;
            }
            Egress::Ip => {
                self.raw(packet, stats);
                return;
            }
        };
        let (gso, fd) = match to.remote {
            SocketAddr::V4(_) => (&mut self.gso4, self.fds.udp4),
            SocketAddr::V6(_) => (&mut self.gso6, self.fds.udp6),
        };
        match fd {
            Some(fd) => gso.push(packet, &to, fd, stats),
            None => stats.unsupported_outer += 1,
        }
    }

    /// A sealed reassembled datagram: as [`Sender::sealed`] if it fits the
    /// MTU (or is ESP in UDP, which the kernel fragments as any UDP
    /// datagram), else as fragments through the raw socket (RFC 4303
    /// §3.3.4: fragmentation after IPsec). One that must not be fragmented
    /// (IPv4 DF) is dropped, counted `too_big`.
    pub fn fragmenting(&mut self, packet: &[u8], egress: Egress, stats: &mut Stats) {
        if packet.len() <= self.mtu || egress != Egress::Ip {
            return self.sealed(packet, egress, stats);
        }
        self.fragments(packet, stats);
    }

    /// A packet sent on in the clear (BYPASS, or no policy): through the raw
    /// socket, as fragments if it was reassembled and no longer fits.
    /// False when it could not be queued (counted).
    pub fn clear(&mut self, packet: &[u8], stats: &mut Stats) -> bool {
        if packet.len() <= self.mtu {
            return self.raw(packet, stats);
        }
        self.fragments(packet, stats)
    }

    /// `packet` as fragments of the MTU through the raw socket.
    fn fragments(&mut self, packet: &[u8], stats: &mut Stats) -> bool {
        // Each fragment goes straight into the send batch (the checks that
        // can refuse the packet run before the first one is made).
        let mtu = self.mtu;
        let mut ids = std::mem::take(&mut self.ids);
        let done = fragid::split(packet, mtu, &mut ids, |f| {
            self.raw(f, stats);
        });
        self.ids = ids;
        match done {
            Ok(_) => {
                stats.fragmented += 1;
                true
            }
            Err(_) => {
                stats.drops.count(DropReason::TooBig);
                false
            }
        }
    }

    /// Where raw IP packets from `pair.0` to `pair.1` leave: straight to
    /// a neighbor on a link, or (`None`) the kernel's way.
    pub fn set_hop(&mut self, pair: Pair, hop: Option<LinkHop>) {
        match hop {
            Some(link) => {
                let kernel_due = true;
                self.hops.insert(pair, Hop { link, kernel_due });
            }
            None => {
                self.hops.remove(&pair);
            }
        }
    }

    /// Once a second (`now` is the worker's clock): each pair's next
    /// packet goes the kernel's way.
    pub fn tick(&mut self, now: Duration) {
        if now >= self.hops_ticked + REFRESH {
            self.hops_ticked = now;
            self.hops.values_mut().for_each(|h| h.kernel_due = true);
        }
    }

    /// Queue a whole IP packet: to its neighbor on its link where that is
    /// known, else for the raw socket of its family; false (counted
    /// `unsupported_outer`) when there is none.
    pub fn raw(&mut self, packet: &[u8], stats: &mut Stats) -> bool {
        let Ok(pair) = pair_of(packet) else {
            stats.unsupported_outer += 1;
            return false;
        };
        let way = match self.fds.link {
            Some(_) => self.queue_for_link(packet, pair, stats),
            None => Way::Kernel,
        };
        if way == Way::Link {
            return true;
        }
        // The pair's packets queued for the link leave before this one.
        if way == Way::KernelNow {
            self.flush(stats);
        }
        let queued = self.queue_raw(packet, pair.1, stats);
        if way == Way::KernelNow {
            self.flush(stats);
        }
        queued
    }

    /// Queue `packet` for the raw socket of `dst`'s family.
    fn queue_raw(&mut self, packet: &[u8], dst: IpAddr, stats: &mut Stats) -> bool {
        let full = match (dst, self.fds.send6) {
            (IpAddr::V4(dst), _) => self.out4.push(packet, dst.into()),
            (IpAddr::V6(dst), Some(_)) => self.out6.push(packet, dst.into()),
            (IpAddr::V6(_), None) => {
                stats.unsupported_outer += 1;
                return false;
            }
        };
        if full {
            self.flush(stats);
        }
        true
    }

    /// Queue `packet` for its pair's link hop, if it has one and the
    /// packet fits the link. The once-a-second packet for the kernel goes
    /// out at once (`Way::KernelNow`: the batches are flushed before and
    /// after it is queued), so that the pair's packets keep their order.
    fn queue_for_link(&mut self, packet: &[u8], pair: Pair, stats: &mut Stats) -> Way {
        let Some(hop) = self.hops.get_mut(&pair) else {
            return Way::Kernel;
        };
        if packet.len() > hop.link.mtu as usize {
            return Way::Kernel;
        }
        if hop.kernel_due {
            hop.kernel_due = false;
            return Way::KernelNow;
        }
        let dest = sys::DestLink::new(hop.link.ifindex, hop.link.mac, pair.1.is_ipv6());
        if self.out_link.push(packet, dest) {
            self.flush(stats);
        }
        Way::Link
    }

    /// Send everything queued: the link batch before the raw sockets'.
    pub fn flush(&mut self, stats: &mut Stats) {
        if let (Some(s), false) = (&self.stream, self.tcp.is_empty()) {
            let batch = std::mem::take(&mut self.tcp);
            match s.esp(batch) {
                Ok(()) => {}
                Err(n) => stats.stream_full += n as u64,
            }
        }
        if let Some(fd) = self.fds.udp4 {
            self.gso4.flush(fd, stats);
        }
        if let Some(fd) = self.fds.udp6 {
            self.gso6.flush(fd, stats);
        }
        self.flush_link(stats);
        self.out4.flush(self.fds.send4, stats);
        if let Some(fd) = self.fds.send6 {
            self.out6.flush(fd, stats);
        }
    }

    /// Send what is queued for the link: a batch of [`LINK_BATCH`] or more
    /// by the packet socket; fewer (a request, an answer) by the raw
    /// socket, whose packet reaches the peer sooner on this kernel (a
    /// packet socket's adds about 8 µs per packet on a veth pair:
    /// docs/BENCHMARKS.md).
    fn flush_link(&mut self, stats: &mut Stats) {
        let (n, Some(fd)) = (self.out_link.dsts.len(), self.fds.link) else {
            return;
        };
        if n >= LINK_BATCH {
            stats.link_sent += n as u64;
            return self.out_link.flush(fd, stats);
        }
        // Emptied first: queueing may flush (the raw batch full), which
        // comes back here.
        self.out_link.dsts.clear();
        let bufs = std::mem::take(&mut self.out_link.bufs);
        for packet in &bufs[..n] {
            if let Ok((_, dst)) = pair_of(packet) {
                self.queue_raw(packet, dst, stats);
            }
        }
        if self.out_link.bufs.is_empty() {
            self.out_link.bufs = bufs;
        }
    }
}

/// The fewest packets queued for links that leave by the packet socket.
const LINK_BATCH: usize = 4;

/// The outer addresses of an IP packet.
fn pair_of(packet: &[u8]) -> flowsec_wire::Result<Pair> {
    match version_of(packet)? {
        IpVersion::V4 => Ipv4Packet::new_checked(packet)
            .map(|p| (IpAddr::V4(p.src_addr()), IpAddr::V4(p.dst_addr()))),
        IpVersion::V6 => Ipv6Packet::new_checked(packet)
            .map(|p| (IpAddr::V6(p.src_addr()), IpAddr::V6(p.dst_addr()))),
    }
}

/// Which way [`Sender::raw`] sends a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    /// Queued for its neighbor on its link.
    Link,
    /// The raw socket (no link hop, or too long for the link).
    Kernel,
    /// The raw socket, sent at once (the pair's once-a-second packet).
    KernelNow,
}

/// Sealed packets waiting for one sendmmsg(2).
struct SendBatch<A> {
    bufs: Vec<Vec<u8>>,
    dsts: Vec<A>,
}

impl<A: Copy> SendBatch<A> {
    fn new() -> Self {
        SendBatch {
            bufs: Vec::new(),
            dsts: Vec::with_capacity(sys::MAX_BATCH),
        }
    }

    /// Queue a copy of `packet`; true when the batch is full.
    fn push(&mut self, packet: &[u8], dst: A) -> bool {
        let used = self.dsts.len();
        if used == self.bufs.len() {
            self.bufs.push(Vec::with_capacity(2048));
        }
        let b = &mut self.bufs[used];
        b.clear();
        b.extend_from_slice(packet);
        self.dsts.push(dst);
        self.dsts.len() == sys::MAX_BATCH
    }

    /// Send what is queued on `fd`.
    fn flush(&mut self, fd: i32, stats: &mut Stats) {
        if self.dsts.is_empty() {
            return;
        }
        let done = sys::send_many(fd, &self.bufs[..self.dsts.len()], &self.dsts);
        stats.sent += done.sent as u64;
        stats.io_errors += done.failed as u64;
        stats.send_eagain += done.would_block as u64;
        self.dsts.clear();
    }
}

/// Sealed ESP-in-UDP packets of one destination and size, gathered for one
/// sendmsg(2) with UDP_SEGMENT (UDP GSO): the segments of a TCP
/// super-packet travel the stack as one until the device (ARCHITECTURE.md
/// "Outbound": send batch, UDP GSO).
#[derive(Default)]
struct UdpGso {
    /// The ESP payloads, back to back.
    buf: Vec<u8>,
    /// Size of each but the last.
    segment: usize,
    count: usize,
    dst: Option<SocketAddr>,
    src: Option<IpAddr>,
    tos: u8,
    /// A shorter payload ended the group.
    closed: bool,
}

/// The most datagrams one UDP_SEGMENT send carries (UDP_MAX_SEGMENTS in
/// older kernels).
const GSO_SEGMENTS: usize = 64;

impl UdpGso {
    fn push(&mut self, payload: &[u8], to: &UdpEndpoints, fd: i32, stats: &mut Stats) {
        let (dst, src, tos) = (to.remote, to.local.ip(), to.tos);
        let fits = self.count > 0
            && !self.closed
            && self.dst == Some(dst)
            && self.src == Some(src)
            && self.tos == tos
            && payload.len() <= self.segment
            && self.count < GSO_SEGMENTS
            && self.buf.len() + payload.len() <= 65_000;
        if !fits {
            self.flush(fd, stats);
            self.dst = Some(dst);
            self.src = Some(src);
            self.tos = tos;
            self.segment = payload.len();
        }
        self.buf.extend_from_slice(payload);
        self.count += 1;
        if payload.len() < self.segment {
            self.closed = true;
        }
    }

    fn flush(&mut self, fd: i32, stats: &mut Stats) {
        if let (Some(dst), Some(src), true) = (self.dst, self.src, self.count > 0) {
            let segment = if self.count > 1 {
                self.segment as u16
            } else {
                0
            };
            match sys::send_udp(fd, &self.buf, segment, dst, src, self.tos) {
                Ok(()) => stats.sent += self.count as u64,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    stats.send_eagain += self.count as u64
                }
                Err(_) => stats.io_errors += self.count as u64,
            }
        }
        self.buf.clear();
        self.count = 0;
        self.closed = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    const SRC: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
    const DST: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);

    /// An IPv4 ESP packet of `len` bytes from SRC to DST.
    fn esp(len: usize) -> Vec<u8> {
        let mut p = vec![0u8; len];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        p[8] = 64;
        p[9] = 50;
        p[12..16].copy_from_slice(&SRC.octets());
        p[16..20].copy_from_slice(&DST.octets());
        p
    }

    /// A sender whose descriptors are not open: what it queued is seen
    /// before a flush, and a flush's sends fail (`io_errors`).
    fn sender() -> Sender {
        let fds = SendFds {
            send4: -1,
            send6: None,
            udp4: None,
            udp6: None,
            link: Some(-1),
        };
        Sender::new(fds, 1400)
    }

    fn hop(mtu: u32) -> LinkHop {
        LinkHop {
            ifindex: 7,
            mac: [2, 0, 0, 0, 0, 2],
            mtu,
        }
    }

    #[test]
    fn packets_of_a_pair_with_a_link_hop_go_to_the_link() {
        let (mut s, mut stats) = (sender(), Stats::default());
        let pair = (IpAddr::V4(SRC), IpAddr::V4(DST));
        // No hop: the raw socket.
        assert!(s.raw(&esp(100), &mut stats));
        assert_eq!((s.out4.dsts.len(), s.out_link.dsts.len()), (1, 0));
        s.flush(&mut stats);
        s.set_hop(pair, Some(hop(1500)));
        // The first packet after the hop is known goes the kernel's way,
        // at once (the batches flushed behind it).
        assert!(s.raw(&esp(100), &mut stats));
        assert_eq!((s.out4.dsts.len(), s.out_link.dsts.len()), (0, 0));
        assert_eq!(stats.io_errors, 2);
        // Then the link.
        for _ in 0..3 {
            assert!(s.raw(&esp(100), &mut stats));
        }
        assert_eq!((s.out4.dsts.len(), s.out_link.dsts.len()), (0, 3));
        // Longer than the link's MTU: the kernel's way.
        assert!(s.raw(&esp(1501), &mut stats));
        assert_eq!((s.out4.dsts.len(), s.out_link.dsts.len()), (1, 3));
        // Another pair: the kernel's way.
        let mut other = esp(100);
        other[16..20].copy_from_slice(&[192, 0, 2, 3]);
        assert!(s.raw(&other, &mut stats));
        assert_eq!(s.out4.dsts.len(), 2);
        // Fewer than LINK_BATCH for the link: the raw socket takes them
        // too (after the two queued there).
        s.flush(&mut stats);
        assert_eq!(stats.link_sent, 0);
        assert_eq!(stats.io_errors, 2 + 5);
        // A batch: the link.
        for _ in 0..LINK_BATCH {
            assert!(s.raw(&esp(100), &mut stats));
        }
        s.flush(&mut stats);
        assert_eq!(stats.link_sent, LINK_BATCH as u64);
        // Forgotten: the kernel's way again.
        s.set_hop(pair, None);
        assert!(s.raw(&esp(100), &mut stats));
        assert_eq!((s.out4.dsts.len(), s.out_link.dsts.len()), (1, 0));
    }

    #[test]
    fn once_a_second_a_packet_of_each_pair_goes_the_kernels_way() {
        let (mut s, mut stats) = (sender(), Stats::default());
        let pair = (IpAddr::V4(SRC), IpAddr::V4(DST));
        s.set_hop(pair, Some(hop(1500)));
        s.tick(Duration::from_millis(10));
        // The kernel's way: queued for no link, the link's batch flushed.
        let kernel_way = |s: &mut Sender, stats: &mut Stats| {
            let errors = stats.io_errors;
            s.raw(&esp(100), stats);
            s.out_link.dsts.is_empty() && stats.io_errors > errors
        };
        // Due from the start, then not until a second has passed.
        assert!(kernel_way(&mut s, &mut stats));
        assert!(!kernel_way(&mut s, &mut stats));
        s.tick(Duration::from_millis(900));
        assert!(!kernel_way(&mut s, &mut stats));
        s.tick(Duration::from_millis(1010));
        assert!(kernel_way(&mut s, &mut stats));
        assert!(!kernel_way(&mut s, &mut stats));
    }

    /// Without a packet socket (`--esp-send raw`), hops change nothing.
    #[test]
    fn without_a_packet_socket_everything_takes_the_raw_socket() {
        let mut s = sender();
        s.fds.link = None;
        let mut stats = Stats::default();
        s.set_hop((IpAddr::V4(SRC), IpAddr::V4(DST)), Some(hop(1500)));
        for _ in 0..3 {
            assert!(s.raw(&esp(100), &mut stats));
        }
        assert_eq!((s.out4.dsts.len(), s.out_link.dsts.len()), (3, 0));
        s.flush(&mut stats);
        assert_eq!(stats.link_sent, 0);
    }

    /// A raw batch that fills while the link's few packets move to it.
    #[test]
    fn moving_a_short_link_batch_into_a_full_raw_batch() {
        let (mut s, mut stats) = (sender(), Stats::default());
        let pair = (IpAddr::V4(SRC), IpAddr::V4(DST));
        s.set_hop(pair, Some(hop(1500)));
        s.raw(&esp(100), &mut stats);
        for _ in 0..LINK_BATCH - 1 {
            s.raw(&esp(100), &mut stats);
        }
        let mut other = esp(100);
        other[16..20].copy_from_slice(&[192, 0, 2, 3]);
        for _ in 0..sys::MAX_BATCH - 2 {
            s.raw(&other, &mut stats);
        }
        s.flush(&mut stats);
        assert_eq!((s.out4.dsts.len(), s.out_link.dsts.len()), (0, 0));
        assert_eq!(
            stats.io_errors,
            1 + (sys::MAX_BATCH - 2 + LINK_BATCH - 1) as u64
        );
    }
}
