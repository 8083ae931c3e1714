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
        let pair = match version_of(packet) {
            Ok(IpVersion::V4) => Ipv4Packet::new_checked(packet)
                .map(|p| (IpAddr::V4(p.src_addr()), IpAddr::V4(p.dst_addr()))),
            Ok(IpVersion::V6) => Ipv6Packet::new_checked(packet)
                .map(|p| (IpAddr::V6(p.src_addr()), IpAddr::V6(p.dst_addr()))),
            Err(e) => Err(e),
        };
        let mut way = Way::Kernel;
        if let (Ok(pair), Some(_)) = (pair, self.fds.link) {
            way = self.queue_for_link(packet, pair, stats);
            if way == Way::Link {
                return true;
            }
        }
        let dst = pair.map(|(_, dst)| dst);
        let full = match (dst, self.fds.send6) {
            (Ok(IpAddr::V4(dst)), _) => self.out4.push(packet, dst.into()),
            (Ok(IpAddr::V6(dst)), Some(_)) => self.out6.push(packet, dst.into()),
            _ => {
                stats.unsupported_outer += 1;
                return false;
            }
        };
        if full || way == Way::KernelNow {
            self.flush(stats);
        }
        true
    }

    /// Queue `packet` for its pair's link hop, if it has one and the
    /// packet fits the link. The once-a-second packet for the kernel goes
    /// out at once (`Way::KernelNow`: the batches are flushed after it is
    /// queued), so that it leaves after the pair's packets queued before
    /// it and before those queued after it.
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
        stats.link_sent += 1;
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
        if let Some(fd) = self.fds.link {
            self.out_link.flush(fd, stats);
        }
        self.flush_raw(stats);
    }

    /// Send what is queued for the raw sockets.
    fn flush_raw(&mut self, stats: &mut Stats) {
        self.out4.flush(self.fds.send4, stats);
        if let Some(fd) = self.fds.send6 {
            self.out6.flush(fd, stats);
        }
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
