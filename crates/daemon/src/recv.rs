//! What a worker receives: draining the TUN queue, the raw ESP/AH
//! receivers and fanout sockets (IPv4 and the fanout with `recvmmsg(2)`) and the UDP 4500 sockets (split
//! back into datagrams when the kernel coalesced them, UDP GRO), each
//! packet placed in a [`PacketBuf`] with headroom: IP packets whole, UDP
//! payloads with their [`UdpEndpoints`] beside them.

use std::net::IpAddr;

use std::net::SocketAddr;
use std::os::fd::BorrowedFd;

use flowsec_ipsec::buf::{DEFAULT_HEADROOM, DEFAULT_TAILROOM};
use flowsec_ipsec::{PacketBuf, UdpEndpoints};
use flowsec_wire::iana::IpProtocol;
use flowsec_wire::ipv4::Ipv4Packet;
use flowsec_wire::ipv6::{self, Ipv6Packet, Ipv6Repr};
use flowsec_wire::udp_encap::NAT_T_PORT;

use crate::sys;

/// Packets taken from one source before looking at the others.
const BATCH: usize = 64;

/// Take up to four batches of whole packets from a raw IPv4 receiver
/// (recvmmsg), handing each to `f`. Errors are transient (queued ICMP
/// errors) and end the drain.
pub fn drain_many(fd: BorrowedFd<'_>, many: &mut [PacketBuf], f: &mut impl FnMut(&mut PacketBuf)) {
    // The largest IPv4 packet; the buffers keep their tailroom beyond it.
    let limit = usize::from(u16::MAX);
    for _ in 0..4 {
        let got = sys::recv_many(fd, many, DEFAULT_HEADROOM, limit).unwrap_or(0);
        for b in many[..got].iter_mut().filter(|b| !b.is_empty()) {
            f(b);
        }
        if got < many.len() {
            return;
        }
    }
}

/// Whether the IP header of a packet taken off the link (a fanout socket,
/// before IP looked at it) is one IP would accept: an IPv4 header's
/// checksum is verified here (IPv6 has none; lengths are checked by the
/// datapath as for any packet).
pub fn header_checked(packet: &[u8]) -> bool {
    match flowsec_wire::ip::version_of(packet) {
        Ok(flowsec_wire::ip::IpVersion::V4) => {
            Ipv4Packet::new_checked(packet).is_ok_and(|p| p.verify_checksum())
        }
        Ok(flowsec_wire::ip::IpVersion::V6) => true,
        Err(_) => false,
    }
}

/// Like [`drain`] for a raw IPv6 receiver, which hands over only what
/// follows the IPv6 header: the header is rebuilt in the headroom from the
/// source and PKTINFO destination (extension headers the packet had are
/// not seen, and AH over them cannot verify: not supported).
pub fn drain_raw_v6(
    fd: BorrowedFd<'_>,
    protocol: u8,
    buf: &mut PacketBuf,
    f: &mut impl FnMut(&mut PacketBuf),
) {
    for _ in 0..BATCH {
        buf.reset(DEFAULT_HEADROOM);
        let spare = buf.spare_mut();
        let limit = (spare.len() - DEFAULT_TAILROOM).min(usize::from(u16::MAX));
        let Ok(Some(sys::UdpDatagram {
            len: n,
            src,
            dst: IpAddr::V6(dst),
            tos: tclass,
            ..
        })) = sys::recv_datagram(fd, &mut spare[..limit])
        else {
            return;
        };
        let IpAddr::V6(src) = src.ip() else {
            return;
        };
        // Cannot fail: n is at most the spare room, and the headroom holds 40 bytes.
        let _ = buf.set_len(n);
        let Ok(hdr) = buf.prepend(ipv6::HEADER_LEN) else {
            return;
        };
        let repr = Ipv6Repr {
            src_addr: src,
            dst_addr: dst,
            next_header: IpProtocol(protocol),
            payload_len: n,
            hop_limit: 64,
            // The outer ECN bits matter on decapsulation (RFC 6040).
            traffic_class: tclass,
            flow_label: 0,
        };
        repr.emit(&mut Ipv6Packet::new_unchecked(hdr));
        f(buf);
    }
}

/// Read up to [`BATCH`] packets from `fd` into `buf`, handing each to `f`.
/// A read error other than "nothing waiting" is returned: on the TUN it
/// means the device is gone, and polling on would spin.
pub fn drain(
    fd: i32,
    buf: &mut PacketBuf,
    mut f: impl FnMut(&mut PacketBuf),
) -> std::io::Result<()> {
    for _ in 0..BATCH {
        buf.reset(DEFAULT_HEADROOM);
        let spare = buf.spare_mut();
        let limit = spare.len() - DEFAULT_TAILROOM;
        match sys::read(fd, &mut spare[..limit])? {
            Some(n) if n > 0 => {
                // Cannot fail: n is at most the spare room.
                let _ = buf.set_len(n);
                f(buf);
            }
            _ => return Ok(()),
        }
    }
    Ok(())
}

/// Like [`drain`] for a UDP encapsulation socket, which hands over only
/// the UDP payload, several datagrams at once when the kernel coalesced
/// them (UDP GRO): each is handed to `f` on its own (coalesced ones copied
/// into `seg`) with its endpoints and the outer TOS / traffic class the
/// socket reported (RFC 6040 needs its ECN bits). The kernel verified the
/// UDP checksum (IPv6), or there was none (RFC 3948 §2.1 over IPv4).
pub fn drain_udp(
    fd: BorrowedFd<'_>,
    buf: &mut PacketBuf,
    seg: &mut PacketBuf,
    f: &mut impl FnMut(&mut PacketBuf, &UdpEndpoints),
) {
    for _ in 0..BATCH {
        buf.reset(DEFAULT_HEADROOM);
        let spare = buf.spare_mut();
        let limit = (spare.len() - DEFAULT_TAILROOM).min(usize::from(u16::MAX));
        let Ok(Some(d)) = sys::recv_datagram(fd, &mut spare[..limit]) else {
            return;
        };
        // Cannot fail: the length is at most the spare room.
        let _ = buf.set_len(d.len);
        let from = UdpEndpoints {
            // The group is bound to this port: every datagram came to it.
            local: SocketAddr::new(d.dst, NAT_T_PORT),
            remote: d.src,
            tos: d.tos,
        };
        if d.segment == 0 || d.len <= d.segment {
            f(buf, &from);
            continue;
        }
        for chunk in buf.as_slice().chunks(d.segment) {
            seg.reset(DEFAULT_HEADROOM);
            if seg.set(chunk).is_ok() {
                f(seg, &from);
            }
        }
    }
}
