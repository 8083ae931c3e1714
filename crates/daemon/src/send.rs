//! What a worker sends, batched: sealed packets queue here and leave with
//! one `sendmmsg(2)` per raw socket, or, ESP in UDP, with one
//! `UDP_SEGMENT` send per run of equal-sized packets (DESIGN.md "Data
//! path": send batch, UDP GSO). Flushed when a batch fills and once per
//! worker loop.

use std::net::{IpAddr, SocketAddr};

use flowsec_ipsec::DropReason;
use flowsec_wire::iana::IpProtocol;
use flowsec_wire::ipv4::Ipv4Packet;
use flowsec_wire::ipv6::Ipv6Packet;
use flowsec_wire::udp;

use crate::fragid::{self, FragmentIds};
use crate::stats::Stats;
use crate::sys;
use crate::worker::NAT_T_PORT;

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
    gso4: UdpGso,
    gso6: UdpGso,
}

impl Sender {
    pub fn new(fds: SendFds, mtu: usize) -> Self {
        Sender {
            fds,
            mtu,
            ids: FragmentIds::default(),
            out4: SendBatch::new(),
            out6: SendBatch::new(),
            gso4: UdpGso::default(),
            gso6: UdpGso::default(),
        }
    }

    /// Queue a sealed packet: ESP in UDP goes to the UDP socket of its
    /// family (GSO), everything else to the raw socket.
    pub fn sealed(&mut self, packet: &[u8], stats: &mut Stats) {
        if let Some((payload, to)) = udp_parts(packet) {
            let (gso, fd) = match to.dst {
                SocketAddr::V4(_) => (&mut self.gso4, self.fds.udp4),
                SocketAddr::V6(_) => (&mut self.gso6, self.fds.udp6),
            };
            if let Some(fd) = fd {
                return gso.push(payload, to, fd, stats);
            }
        }
        self.raw(packet, stats);
    }

    /// A sealed reassembled datagram: as [`Sender::sealed`] if it fits the
    /// MTU, else as fragments through the raw socket (RFC 4303 §3.3.4:
    /// fragmentation after IPsec). One that must not be fragmented (IPv4
    /// DF) is dropped, counted `too_big`.
    pub fn fragmenting(&mut self, packet: &[u8], stats: &mut Stats) {
        if packet.len() <= self.mtu {
            return self.sealed(packet, stats);
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

    /// Queue a whole IP packet for the raw socket of its family; false
    /// (counted `unsupported_outer`) when there is none.
    pub fn raw(&mut self, packet: &[u8], stats: &mut Stats) -> bool {
        let full = match (packet.first().map(|b| b >> 4), self.fds.send6) {
            (Some(4), _) if packet.len() >= 20 => {
                let dst = Ipv4Packet::new_unchecked(packet).dst_addr();
                self.out4.push(packet, dst.into())
            }
            (Some(6), Some(_)) if packet.len() >= 40 => {
                let dst = Ipv6Packet::new_unchecked(packet).dst_addr();
                self.out6.push(packet, dst.into())
            }
            _ => {
                stats.unsupported_outer += 1;
                return false;
            }
        };
        if full {
            self.flush(stats);
        }
        true
    }

    /// Send everything queued.
    pub fn flush(&mut self, stats: &mut Stats) {
        if let Some(fd) = self.fds.udp4 {
            self.gso4.flush(fd, stats);
        }
        if let Some(fd) = self.fds.udp6 {
            self.gso6.flush(fd, stats);
        }
        self.out4.flush(self.fds.send4, stats);
        if let Some(fd) = self.fds.send6 {
            self.out6.flush(fd, stats);
        }
    }
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
/// super-packet travel the stack as one until the device (DESIGN.md: send
/// batch, UDP GSO).
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
    fn push(&mut self, payload: &[u8], to: UdpTo, fd: i32, stats: &mut Stats) {
        let UdpTo { dst, src, tos } = to;
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

/// Where an ESP-in-UDP packet goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct UdpTo {
    dst: SocketAddr,
    src: IpAddr,
    /// The outer TOS / traffic class (ECN from the inner header, RFC 6040).
    tos: u8,
}

/// A sealed packet whose SA is UDP-encapsulated: its ESP payload and where
/// it goes; `None` for other packets.
fn udp_parts(packet: &[u8]) -> Option<(&[u8], UdpTo)> {
    let (l4, src, dst, tos): (usize, IpAddr, IpAddr, u8) = match packet.first()? >> 4 {
        4 if packet.len() >= 20 && packet[9] == IpProtocol::UDP.0 => {
            let p = Ipv4Packet::new_unchecked(packet);
            (
                usize::from(packet[0] & 0xf) * 4,
                p.src_addr().into(),
                p.dst_addr().into(),
                packet[1],
            )
        }
        6 if packet.len() >= 40 && packet[6] == IpProtocol::UDP.0 => {
            let p = Ipv6Packet::new_unchecked(packet);
            let tc = (packet[0] << 4) | (packet[1] >> 4);
            (40, p.src_addr().into(), p.dst_addr().into(), tc)
        }
        _ => return None,
    };
    let udp = packet.get(l4..l4 + udp::HEADER_LEN)?;
    if u16::from_be_bytes([udp[0], udp[1]]) != NAT_T_PORT {
        return None;
    }
    let port = u16::from_be_bytes([udp[2], udp[3]]);
    let to = UdpTo {
        dst: SocketAddr::new(dst, port),
        src,
        tos,
    };
    Some((&packet[l4 + udp::HEADER_LEN..], to))
}
