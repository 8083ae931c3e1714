//! What a worker receives: draining the TUN queue, the raw ESP/AH
//! receivers (IPv4 with `recvmmsg(2)`) and the UDP 4500 sockets (split
//! back into datagrams when the kernel coalesced them, UDP GRO), each
//! packet placed in a [`PacketBuf`] behind the IP header the core expects.

use std::net::IpAddr;

use flowsec_ipsec::buf::{DEFAULT_HEADROOM, DEFAULT_TAILROOM};
use flowsec_ipsec::PacketBuf;
use flowsec_wire::iana::IpProtocol;
use flowsec_wire::ipv4::{self, Ipv4Packet, Ipv4Repr};
use flowsec_wire::ipv6::{self, Ipv6Packet, Ipv6Repr};
use flowsec_wire::udp::{self, UdpPacket, UdpRepr};

use crate::sys;
use crate::worker::NAT_T_PORT;

/// Packets taken from one source before looking at the others.
const BATCH: usize = 64;

/// Take up to four batches of whole packets from a raw IPv4 receiver
/// (recvmmsg), handing each to `f`. Errors are transient (queued ICMP
/// errors) and end the drain.
pub fn drain_many(fd: i32, many: &mut [PacketBuf], f: &mut impl FnMut(&mut PacketBuf)) {
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

/// Like [`drain`] for a raw IPv6 receiver, which hands over only what
/// follows the IPv6 header: the header is rebuilt in the headroom from the
/// source and PKTINFO destination (extension headers the packet had are
/// not seen, and AH over them cannot verify: not supported).
pub fn drain_raw_v6(
    fd: i32,
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
/// them (UDP GRO): each is handed to `f` on its own (coalesced ones built
/// in `seg`), behind the IP and UDP headers the core expects, rebuilt in
/// the headroom from the sender's and our address, with the outer TOS /
/// traffic class the socket reported (RFC 6040 needs its ECN bits). The UDP checksum is left
/// zero: the kernel verified it (IPv6), or there was none (RFC 3948 §2.1
/// over IPv4); the core does not look at it.
pub fn drain_udp(
    fd: i32,
    buf: &mut PacketBuf,
    seg: &mut PacketBuf,
    f: &mut impl FnMut(&mut PacketBuf),
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
        if d.segment == 0 || d.len <= d.segment {
            if with_udp_headers(buf, &d) {
                f(buf);
            }
            continue;
        }
        for chunk in buf.as_slice().chunks(d.segment) {
            seg.reset(DEFAULT_HEADROOM);
            if seg.set(chunk).is_ok() && with_udp_headers(seg, &d) {
                f(seg);
            }
        }
    }
}

/// Put the IP and UDP headers of datagram `d` in front of its payload in
/// `buf`; false if they do not fit (they always do: the headroom is larger).
fn with_udp_headers(buf: &mut PacketBuf, d: &sys::UdpDatagram) -> bool {
    let n = buf.len();
    let ip_len = match d.dst {
        IpAddr::V4(_) => ipv4::HEADER_LEN,
        IpAddr::V6(_) => ipv6::HEADER_LEN,
    };
    let Ok(hdr) = buf.prepend(ip_len + udp::HEADER_LEN) else {
        return false;
    };
    let (ip, rest) = hdr.split_at_mut(ip_len);
    match (d.src.ip(), d.dst) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => Ipv4Repr {
            src_addr: src,
            dst_addr: dst,
            next_header: IpProtocol::UDP,
            payload_len: udp::HEADER_LEN + n,
            hop_limit: 64,
            dscp_ecn: d.tos,
            dont_frag: false,
        }
        .emit(&mut Ipv4Packet::new_unchecked(ip)),
        (IpAddr::V6(src), IpAddr::V6(dst)) => Ipv6Repr {
            src_addr: src,
            dst_addr: dst,
            next_header: IpProtocol::UDP,
            payload_len: udp::HEADER_LEN + n,
            hop_limit: 64,
            traffic_class: d.tos,
            flow_label: 0,
        }
        .emit(&mut Ipv6Packet::new_unchecked(ip)),
        // The socket's family decides both.
        _ => return false,
    }
    UdpRepr {
        src_port: d.src.port(),
        dst_port: NAT_T_PORT,
        payload_len: n,
    }
    .emit(&mut UdpPacket::new_unchecked(rest));
    true
}
