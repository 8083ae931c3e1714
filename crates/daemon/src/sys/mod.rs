//! The thin Linux system layer: the only `unsafe` in the daemon (the crate
//! root denies it everywhere else). Each call is a direct libc call on a
//! descriptor this module owns; every `unsafe` block says why it is sound.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

use flowsec_ipsec::PacketBuf;

use crate::steer::Insn;

mod lock;
pub mod notify;
pub mod privs;
pub mod tcp;

pub use lock::lock_exclusive;

/// `_IOW('T', 202, int)` from linux/if_tun.h (libc has it per architecture).
const TUNSETIFF: libc::c_ulong = libc::TUNSETIFF as libc::c_ulong;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;
const IFF_MULTI_QUEUE: libc::c_short = 0x0100;
const IFF_VNET_HDR: libc::c_short = 0x4000;
/// `_IOW('T', 208, unsigned int)`.
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;
/// Offloads the kernel may use towards us: partial checksums, TCP
/// segmentation over IPv4 and IPv6 (linux/if_tun.h).
const TUN_F_CSUM: libc::c_uint = 0x01;
const TUN_F_TSO4: libc::c_uint = 0x02;
const TUN_F_TSO6: libc::c_uint = 0x04;
const TUN_F_TSO_ECN: libc::c_uint = 0x08;
/// linux/udp.h: the UDP socket option level and its GSO/GRO options.
const SOL_UDP: libc::c_int = 17;
const UDP_SEGMENT: libc::c_int = 103;
const UDP_GRO: libc::c_int = 104;

/// `struct ifreq` as TUNSETIFF reads it: the name, then the flags.
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

// The kernel's `struct ifreq` is 40 bytes on 64-bit Linux.
const _: () = assert!(std::mem::size_of::<IfReq>() == 40);

/// setsockopt(2) of one C int (mark values are passed as their bits).
fn set_int_option(
    fd: RawFd,
    level: libc::c_int,
    option: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: setsockopt reads `size_of::<c_int>()` bytes from `value`,
    // which lives across the call.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            option,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

/// socket(2), close-on-exec, owned.
fn socket(domain: libc::c_int, kind: libc::c_int, protocol: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call.
    let fd = check(unsafe { libc::socket(domain, kind | libc::SOCK_CLOEXEC, protocol) })?;
    // SAFETY: `fd` was just returned by socket and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Open (or attach one more queue to) the TUN device `name`, non-blocking,
/// without the packet-information prefix. With `offload`, each packet
/// comes and goes behind a `struct virtio_net_hdr` and the kernel may send
/// TCP super-packets with partial checksums (see `offload`).
pub fn open_tun(name: &str, multi_queue: bool, offload: bool) -> io::Result<OwnedFd> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains(['/', ' ', '\0']) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad interface name '{name}'"),
        ));
    }
    let path = CString::new("/dev/net/tun").expect("no NUL in a literal");
    // SAFETY: `path` is a valid NUL-terminated string; open has no other
    // preconditions.
    let fd = check(unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: `fd` was just returned by open and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: IFF_TUN | IFF_NO_PI,
        _pad: [0; 22],
    };
    if multi_queue {
        req.flags |= IFF_MULTI_QUEUE;
    }
    if offload {
        req.flags |= IFF_VNET_HDR;
    }
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: TUNSETIFF reads a `struct ifreq`; `req` has its layout (name
    // then flags, 40 bytes) and lives across the call.
    check(unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF, &mut req as *mut IfReq) })?;
    if offload {
        let flags = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN;
        // SAFETY: TUNSETOFFLOAD takes its argument by value.
        check(unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETOFFLOAD, flags as libc::c_ulong) })?;
    }
    Ok(fd)
}

/// A non-blocking raw IPv4 socket receiving IP protocol `protocol` (50 ESP,
/// 51 AH); reads return whole IPv4 packets, header included.
pub fn raw_receiver_v4(protocol: u8) -> io::Result<OwnedFd> {
    socket(
        libc::AF_INET,
        libc::SOCK_RAW | libc::SOCK_NONBLOCK,
        libc::c_int::from(protocol),
    )
}

/// A non-blocking UDP socket on 0.0.0.0:`port` (with `v6`: [::]:`port`,
/// IPv6 only) that reports each datagram's destination address
/// (IP_PKTINFO / IPV6_RECVPKTINFO), for ESP in UDP (RFC 3948). With
/// `reuseport`, several sockets (one per worker) share the port.
pub fn udp_encap_socket(port: u16, reuseport: bool, v6: bool, gro: bool) -> io::Result<OwnedFd> {
    let family = if v6 { libc::AF_INET6 } else { libc::AF_INET };
    let fd = socket(family, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK, 0)?;
    let raw = fd.as_raw_fd();
    if reuseport {
        set_int_option(raw, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
    }
    let bound = if v6 {
        set_int_option(raw, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, 1)?;
        set_int_option(raw, libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO, 1)?;
        set_int_option(raw, libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS, 1)?;
        // SAFETY: an all-zero sockaddr_in6 is [::]:0; family and port set below.
        let mut addr: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
        addr.sin6_family = libc::AF_INET6 as libc::sa_family_t;
        addr.sin6_port = port.to_be();
        // SAFETY: `addr` is a sockaddr_in6 whose size is passed with it.
        unsafe {
            libc::bind(
                raw,
                (&addr as *const libc::sockaddr_in6).cast(),
                std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
            )
        }
    } else {
        set_int_option(raw, libc::IPPROTO_IP, libc::IP_PKTINFO, 1)?;
        set_int_option(raw, libc::IPPROTO_IP, libc::IP_RECVTOS, 1)?;
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr { s_addr: 0 },
            sin_zero: [0; 8],
        };
        // SAFETY: `addr` is a sockaddr_in whose size is passed with it.
        unsafe {
            libc::bind(
                raw,
                (&addr as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        }
    };
    check(bound)?;
    // Coalesced receives (kernels since 5.0); without, one datagram each.
    // Only where the reader's buffers hold a coalesced train (64 KiB): the
    // IKE socket reads one message at a time.
    if gro {
        let _ = set_int_option(raw, SOL_UDP, UDP_GRO, 1);
    }
    Ok(fd)
}

/// Whether UDP GRO is on for `fd`.
#[cfg(test)]
pub fn udp_gro(fd: RawFd) -> io::Result<bool> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` is a writable c_int of `len` bytes, live through the call.
    check(unsafe {
        libc::getsockopt(
            fd,
            SOL_UDP,
            UDP_GRO,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    })?;
    Ok(v != 0)
}

/// sendmsg(2) of `payload` on a UDP socket to `dst`, from `src` (PKTINFO),
/// with the traffic class `tos`; with `segment` > 0, `payload` is several
/// datagrams of `segment` bytes (the last may be shorter) sent as one
/// (UDP_SEGMENT, kernels since 4.18).
pub fn send_udp(
    fd: RawFd,
    payload: &[u8],
    segment: u16,
    dst: SocketAddr,
    src: IpAddr,
    tos: u8,
) -> io::Result<()> {
    let mut control = [0u64; 16];
    let mut iov = libc::iovec {
        iov_base: payload.as_ptr() as *mut libc::c_void,
        iov_len: payload.len(),
    };
    // SAFETY: all-zero sockaddrs are valid; the one used is filled below.
    let mut to4: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut to6: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
    // SAFETY: an all-zero msghdr is a valid empty header; fields set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    match dst {
        SocketAddr::V4(d) => {
            to4.sin_family = libc::AF_INET as libc::sa_family_t;
            to4.sin_port = d.port().to_be();
            to4.sin_addr.s_addr = u32::from_ne_bytes(d.ip().octets());
            msg.msg_name = (&mut to4 as *mut libc::sockaddr_in).cast();
            msg.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        }
        SocketAddr::V6(d) => {
            to6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            to6.sin6_port = d.port().to_be();
            to6.sin6_addr.s6_addr = d.ip().octets();
            msg.msg_name = (&mut to6 as *mut libc::sockaddr_in6).cast();
            msg.msg_namelen = std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t;
        }
    }
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE is arithmetic.
    let space = |len: usize| unsafe { libc::CMSG_SPACE(len as u32) } as usize;
    let pktinfo_len = match src {
        IpAddr::V4(_) => std::mem::size_of::<libc::in_pktinfo>(),
        IpAddr::V6(_) => std::mem::size_of::<libc::in6_pktinfo>(),
    };
    let c_int = std::mem::size_of::<libc::c_int>();
    let total = space(pktinfo_len) + space(c_int) + if segment > 0 { space(2) } else { 0 };
    msg.msg_controllen = total;
    // SAFETY: the control buffer (128 bytes, 8-byte aligned) holds `total`
    // bytes of messages (at most 40 + 24 + 24); each is written within the
    // header CMSG_FIRSTHDR/CMSG_NXTHDR give for it.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        match src {
            IpAddr::V4(a) => {
                (*c).cmsg_level = libc::IPPROTO_IP;
                (*c).cmsg_type = libc::IP_PKTINFO;
                (*c).cmsg_len = libc::CMSG_LEN(pktinfo_len as u32) as usize;
                let mut info: libc::in_pktinfo = std::mem::zeroed();
                info.ipi_spec_dst.s_addr = u32::from_ne_bytes(a.octets());
                std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut libc::in_pktinfo, info);
            }
            IpAddr::V6(a) => {
                (*c).cmsg_level = libc::IPPROTO_IPV6;
                (*c).cmsg_type = libc::IPV6_PKTINFO;
                (*c).cmsg_len = libc::CMSG_LEN(pktinfo_len as u32) as usize;
                let mut info: libc::in6_pktinfo = std::mem::zeroed();
                info.ipi6_addr.s6_addr = a.octets();
                std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut libc::in6_pktinfo, info);
            }
        }
        c = libc::CMSG_NXTHDR(&msg, c);
        let (level, kind) = match src {
            IpAddr::V4(_) => (libc::IPPROTO_IP, libc::IP_TOS),
            IpAddr::V6(_) => (libc::IPPROTO_IPV6, libc::IPV6_TCLASS),
        };
        (*c).cmsg_level = level;
        (*c).cmsg_type = kind;
        (*c).cmsg_len = libc::CMSG_LEN(c_int as u32) as usize;
        std::ptr::write_unaligned(
            libc::CMSG_DATA(c) as *mut libc::c_int,
            libc::c_int::from(tos),
        );
        if segment > 0 {
            c = libc::CMSG_NXTHDR(&msg, c);
            (*c).cmsg_level = SOL_UDP;
            (*c).cmsg_type = UDP_SEGMENT;
            (*c).cmsg_len = libc::CMSG_LEN(2) as usize;
            std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut u16, segment);
        }
    }
    // SAFETY: every pointer in `msg` points into live locals sized as stated.
    let n = unsafe { libc::sendmsg(fd, &msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// What a UDP receive returned.
#[derive(Debug, Clone, Copy)]
pub struct UdpDatagram {
    /// Bytes received: one datagram, or several of `segment` bytes each
    /// (the last may be shorter) when the kernel coalesced them (UDP_GRO).
    pub len: usize,
    /// The sender.
    pub src: SocketAddr,
    /// Our address it was sent to.
    pub dst: IpAddr,
    /// The size of each coalesced datagram; 0 for a single one.
    pub segment: usize,
    /// The outer TOS / traffic class, for RFC 6040 decapsulation.
    pub tos: u8,
}

/// One datagram from a [`udp_encap_socket`] of either family, or one packet
/// from a [`raw_receiver_v6`] (what follows its IPv6 header; the port is
/// 0): its length, sender, the local address it was sent to and its outer
/// TOS / traffic class. `Ok(None)` when nothing waits.
pub fn recv_datagram(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<UdpDatagram>> {
    // SAFETY: an all-zero sockaddr_storage is valid (family AF_UNSPEC).
    let mut from: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut extra = Ancillary::default();
    let Some(len) = recv_with_pktinfo(fd, buf, &mut from, &mut extra)? else {
        return Ok(None);
    };
    let src = match i32::from(from.ss_family) {
        libc::AF_INET6 => {
            // SAFETY: the kernel wrote a sockaddr_in6 (family AF_INET6),
            // which sockaddr_storage is large and aligned enough to hold.
            let a = unsafe { *(&from as *const _ as *const libc::sockaddr_in6) };
            let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
            SocketAddr::from(SocketAddrV6::new(ip, u16::from_be(a.sin6_port), 0, 0))
        }
        _ => {
            // SAFETY: as above, a sockaddr_in (or all zeros).
            let a = unsafe { *(&from as *const _ as *const libc::sockaddr_in) };
            let ip = Ipv4Addr::from(a.sin_addr.s_addr.to_ne_bytes());
            SocketAddr::from(SocketAddrV4::new(ip, u16::from_be(a.sin_port)))
        }
    };
    let unspecified = match src {
        SocketAddr::V4(_) => IpAddr::from(Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => IpAddr::from(Ipv6Addr::UNSPECIFIED),
    };
    Ok(Some(UdpDatagram {
        len,
        src,
        dst: extra.dst.unwrap_or(unspecified),
        segment: extra.gro,
        tos: extra.tos,
    }))
}

/// What a receive reports besides the payload.
#[derive(Debug, Default, Clone, Copy)]
pub struct Ancillary {
    /// UDP GRO segment size (0: one datagram).
    pub gro: usize,
    /// The outer header's TOS / traffic class (DSCP and ECN).
    pub tos: u8,
    /// Our address the packet was sent to (PKTINFO).
    pub dst: Option<IpAddr>,
}

/// recvmsg(2) into `buf`, the sender into `from` (a sockaddr_in or
/// sockaddr_in6), the control messages into `extra`.
fn recv_with_pktinfo(
    fd: RawFd,
    buf: &mut [u8],
    from: &mut libc::sockaddr_storage,
    extra: &mut Ancillary,
) -> io::Result<Option<usize>> {
    // Room for PKTINFO, TOS/TCLASS and UDP_GRO control messages, 8-byte aligned.
    let mut control = [0u64; 16];
    *extra = Ancillary::default();
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: an all-zero msghdr is a valid empty header; fields set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (from as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: every pointer in `msg` points into live locals sized as stated.
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    let Some(n) = would_block(n)? else {
        return Ok(None);
    };
    if msg.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 {
        // A datagram larger than the buffer, or a lost PKTINFO: unusable,
        // reported as an empty read.
        return Ok(Some(0));
    }
    // SAFETY: the CMSG macros walk the control buffer recvmsg filled,
    // within `msg_controllen`; a message's data is read (unaligned) only
    // when the message is long enough for the type read.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            // Only a message long enough for its struct is read, unaligned.
            let fits =
                |len: usize| (*cmsg).cmsg_len as usize >= libc::CMSG_LEN(len as u32) as usize;
            if (*cmsg).cmsg_level == libc::IPPROTO_IP
                && (*cmsg).cmsg_type == libc::IP_PKTINFO
                && fits(std::mem::size_of::<libc::in_pktinfo>())
            {
                let info =
                    std::ptr::read_unaligned(libc::CMSG_DATA(cmsg) as *const libc::in_pktinfo);
                extra.dst = Some(Ipv4Addr::from(info.ipi_addr.s_addr.to_ne_bytes()).into());
            }
            if (*cmsg).cmsg_level == libc::IPPROTO_IPV6
                && (*cmsg).cmsg_type == libc::IPV6_PKTINFO
                && fits(std::mem::size_of::<libc::in6_pktinfo>())
            {
                let info =
                    std::ptr::read_unaligned(libc::CMSG_DATA(cmsg) as *const libc::in6_pktinfo);
                extra.dst = Some(Ipv6Addr::from(info.ipi6_addr.s6_addr).into());
            }
            if (*cmsg).cmsg_level == SOL_UDP
                && (*cmsg).cmsg_type == UDP_GRO
                && (*cmsg).cmsg_len as usize >= libc::CMSG_LEN(4) as usize
            {
                let size = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg) as *const libc::c_int);
                extra.gro = usize::try_from(size).unwrap_or(0);
            }
            // IP_TOS comes as one byte, IPV6_TCLASS as an int.
            if (*cmsg).cmsg_level == libc::IPPROTO_IP
                && (*cmsg).cmsg_type == libc::IP_TOS
                && (*cmsg).cmsg_len as usize >= libc::CMSG_LEN(1) as usize
            {
                extra.tos = *libc::CMSG_DATA(cmsg);
            }
            if (*cmsg).cmsg_level == libc::IPPROTO_IPV6
                && (*cmsg).cmsg_type == libc::IPV6_TCLASS
                && (*cmsg).cmsg_len as usize >= libc::CMSG_LEN(4) as usize
            {
                let tc = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg) as *const libc::c_int);
                extra.tos = tc as u8;
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok(Some(n))
}

/// Set the firewall mark of everything `fd` sends (SO_MARK; needs
/// CAP_NET_ADMIN), so that policy routing can tell flowsec's own packets.
pub fn set_mark(fd: RawFd, mark: u32) -> io::Result<()> {
    set_int_option(fd, libc::SOL_SOCKET, libc::SO_MARK, mark as libc::c_int)
}

/// The effective user ID of this process.
pub fn euid() -> u32 {
    // SAFETY: geteuid takes no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// Ask for a receive buffer of `bytes` (SO_RCVBUFFORCE as root, which
/// passes the rmem_max cap, else SO_RCVBUF). A raw socket whose buffer
/// overflows makes the kernel answer with ICMP protocol-unreachable.
pub fn set_recv_buffer(fd: RawFd, bytes: usize) -> io::Result<()> {
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    let set = |opt| set_int_option(fd, libc::SOL_SOCKET, opt, value);
    set(libc::SO_RCVBUFFORCE).or_else(|_| set(libc::SO_RCVBUF))
}

/// A non-blocking raw IPv6 socket receiving next header `protocol` (50,
/// 51), reporting each packet's destination (IPV6_RECVPKTINFO) and traffic
/// class (IPV6_RECVTCLASS). Reads return what follows the IPv6 header: the
/// kernel keeps the header.
pub fn raw_receiver_v6(protocol: u8) -> io::Result<OwnedFd> {
    let fd = socket(
        libc::AF_INET6,
        libc::SOCK_RAW | libc::SOCK_NONBLOCK,
        libc::c_int::from(protocol),
    )?;
    set_int_option(
        fd.as_raw_fd(),
        libc::IPPROTO_IPV6,
        libc::IPV6_RECVPKTINFO,
        1,
    )?;
    set_int_option(fd.as_raw_fd(), libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS, 1)?;
    Ok(fd)
}

/// A raw IPv6 socket that sends whole packets, header included
/// (IPPROTO_RAW implies IPV6_HDRINCL on Linux). Non-blocking: a worker
/// never waits on a full egress (a send that would block is dropped and
/// counted, `send_eagain`).
pub fn raw_sender_v6() -> io::Result<OwnedFd> {
    socket(
        libc::AF_INET6,
        libc::SOCK_RAW | libc::SOCK_NONBLOCK,
        libc::IPPROTO_RAW,
    )
}

/// A raw IPv4 socket that sends whole packets, header included (protocol
/// IPPROTO_RAW implies IP_HDRINCL). Non-blocking, as [`raw_sender_v6`].
pub fn raw_sender_v4() -> io::Result<OwnedFd> {
    socket(
        libc::AF_INET,
        libc::SOCK_RAW | libc::SOCK_NONBLOCK,
        libc::IPPROTO_RAW,
    )
}

/// read(2) into `buf`; `Ok(None)` when nothing is waiting.
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: `buf` is valid for `buf.len()` writable bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    would_block(n)
}

/// write(2) of `buf`.
pub fn write(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` readable bytes.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// An IPv4 destination as [`send_many`] takes it.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct Dest4(libc::sockaddr_in);

impl From<Ipv4Addr> for Dest4 {
    fn from(a: Ipv4Addr) -> Self {
        Dest4(libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes(a.octets()),
            },
            sin_zero: [0; 8],
        })
    }
}

/// An IPv6 destination as [`send_many`] takes it.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct Dest6(libc::sockaddr_in6);

impl From<Ipv6Addr> for Dest6 {
    fn from(a: Ipv6Addr) -> Self {
        // SAFETY: an all-zero sockaddr_in6 is valid; family and address set below.
        let mut addr: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
        addr.sin6_family = libc::AF_INET6 as libc::sa_family_t;
        addr.sin6_addr.s6_addr = a.octets();
        Dest6(addr)
    }
}

/// The most packets one [`send_many`] or [`recv_many`] call moves.
pub const MAX_BATCH: usize = 64;

/// What [`send_many`] did with a batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sent {
    /// Handed to the kernel.
    pub sent: usize,
    /// Refused one by one (EMSGSIZE, no route, ...).
    pub failed: usize,
    /// Not sent because the socket's buffer was full (EAGAIN): the rest
    /// of the batch, dropped rather than waited for.
    pub would_block: usize,
}

/// sendmmsg(2), never waiting (MSG_DONTWAIT): each of `packets` (whole IP
/// packets, on a raw send socket) to the address beside it (`sockaddr_in`
/// or `sockaddr_in6`). A refused packet is skipped and the rest still go;
/// when the socket's buffer is full the rest of the batch is dropped.
pub fn send_many<T: AsRef<[u8]>, A>(fd: RawFd, packets: &[T], addrs: &[A]) -> Sent {
    let n = packets.len().min(addrs.len()).min(MAX_BATCH);
    // SAFETY: all-zero iovecs and mmsghdrs are valid empty values; the
    // used ones are filled below.
    let mut iov: [libc::iovec; MAX_BATCH] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut hdrs: [libc::mmsghdr; MAX_BATCH] = unsafe { std::mem::zeroed() };
    for i in 0..n {
        let p = packets[i].as_ref();
        iov[i] = libc::iovec {
            iov_base: p.as_ptr() as *mut libc::c_void,
            iov_len: p.len(),
        };
        let h = &mut hdrs[i].msg_hdr;
        h.msg_name = (&addrs[i] as *const A as *mut A).cast();
        h.msg_namelen = std::mem::size_of::<A>() as libc::socklen_t;
        h.msg_iov = &mut iov[i];
        h.msg_iovlen = 1;
    }
    let (mut at, mut failed) = (0, 0);
    while at < n {
        // SAFETY: hdrs[at..n] are filled mmsghdrs whose pointers (iovecs,
        // packets, addresses) all outlive the call; sendmmsg only reads
        // them and writes msg_len.
        let sent = unsafe {
            libc::sendmmsg(
                fd,
                hdrs[at..].as_mut_ptr(),
                (n - at) as libc::c_uint,
                libc::MSG_DONTWAIT,
            )
        };
        if sent > 0 {
            at += sent as usize;
            continue;
        }
        match io::Error::last_os_error().kind() {
            io::ErrorKind::Interrupted if sent < 0 => continue,
            io::ErrorKind::WouldBlock if sent < 0 => {
                return Sent {
                    sent: at - failed,
                    failed,
                    would_block: n - at,
                }
            }
            // The packet at `at` was refused (EMSGSIZE, no route, ...).
            _ => {
                at += 1;
                failed += 1;
            }
        }
    }
    Sent {
        sent: n - failed,
        failed,
        would_block: 0,
    }
}

/// recvmmsg(2) without waiting: up to [`MAX_BATCH`] datagrams, one into
/// each of `bufs` (reset to `headroom`, at most `limit` bytes each), whose
/// lengths are set. Returns how many arrived; a datagram that did not fit
/// is left empty.
pub fn recv_many(
    fd: RawFd,
    bufs: &mut [PacketBuf],
    headroom: usize,
    limit: usize,
) -> io::Result<usize> {
    let n = bufs.len().min(MAX_BATCH);
    // SAFETY: all-zero iovecs and mmsghdrs are valid empty values.
    let mut iov: [libc::iovec; MAX_BATCH] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut hdrs: [libc::mmsghdr; MAX_BATCH] = unsafe { std::mem::zeroed() };
    for i in 0..n {
        bufs[i].reset(headroom);
        let spare = bufs[i].spare_mut();
        let len = spare.len().min(limit);
        iov[i] = libc::iovec {
            iov_base: spare.as_mut_ptr().cast(),
            iov_len: len,
        };
        hdrs[i].msg_hdr.msg_iov = &mut iov[i];
        hdrs[i].msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: each iovec points into a distinct live buffer of the length
    // given; the kernel writes at most that much into each.
    let got = unsafe {
        libc::recvmmsg(
            fd,
            hdrs.as_mut_ptr(),
            n as libc::c_uint,
            libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
        )
    };
    let Some(got) = would_block(got as isize)? else {
        return Ok(0);
    };
    for i in 0..got {
        let truncated = hdrs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        let len = if truncated {
            0
        } else {
            hdrs[i].msg_len as usize
        };
        // Cannot fail: the kernel wrote at most the spare room.
        let _ = bufs[i].set_len(len);
    }
    Ok(got)
}

fn would_block(n: isize) -> io::Result<Option<usize>> {
    if n >= 0 {
        return Ok(Some(n as usize));
    }
    let err = io::Error::last_os_error();
    match err.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
        _ => Err(err),
    }
}

/// Wait until one of `fds` is readable or `timeout_ms` passes; returns
/// which are readable.
pub fn poll_readable(fds: &[RawFd], timeout_ms: i32, ready: &mut [bool]) -> io::Result<()> {
    // On the stack: a worker polls once per wake-up, and its set is a
    // handful of descriptors (TUN queue, raw receivers, UDP, mailbox).
    const MOST: usize = 16;
    let unused = libc::pollfd {
        fd: -1,
        events: 0,
        revents: 0,
    };
    let mut pollfds = [unused; MOST];
    let count = fds.len();
    if count > MOST {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "more than 16 descriptors to poll",
        ));
    }
    for (p, &fd) in pollfds.iter_mut().zip(&fds[..count]) {
        p.fd = fd;
        p.events = libc::POLLIN;
    }
    // SAFETY: `pollfds` is a valid array of `MOST` >= `count` entries.
    let n = unsafe { libc::poll(pollfds.as_mut_ptr(), count as libc::nfds_t, timeout_ms) };
    if n < 0 {
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
    for (r, p) in ready.iter_mut().zip(&pollfds[..count]) {
        *r = n > 0 && p.revents & (libc::POLLIN | libc::POLLERR) != 0;
    }
    Ok(())
}

/// `struct sock_fprog`: a classic BPF program.
#[repr(C)]
struct SockFprog {
    len: libc::c_ushort,
    filter: *const Insn,
}

/// Attach `prog` with `option` (SO_ATTACH_FILTER, SO_ATTACH_REUSEPORT_CBPF).
fn attach_program(fd: RawFd, option: libc::c_int, prog: &[Insn]) -> io::Result<()> {
    let len = libc::c_ushort::try_from(prog.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "BPF program too long"))?;
    let fprog = SockFprog {
        len,
        filter: prog.as_ptr(),
    };
    // SAFETY: the kernel copies `len` instructions from `filter`, a live
    // slice of `#[repr(C)]` `struct sock_filter`s, during the call.
    check(unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            option,
            (&fprog as *const SockFprog).cast(),
            std::mem::size_of::<SockFprog>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

/// Keep only the packets `prog` accepts on `fd` (SO_ATTACH_FILTER).
pub fn attach_filter(fd: RawFd, prog: &[Insn]) -> io::Result<()> {
    attach_program(fd, libc::SO_ATTACH_FILTER, prog)
}

/// Choose the socket of `fd`'s SO_REUSEPORT group by `prog`.
pub fn attach_reuseport_program(fd: RawFd, prog: &[Insn]) -> io::Result<()> {
    attach_program(fd, libc::SO_ATTACH_REUSEPORT_CBPF, prog)
}

/// A non-blocking eventfd, to wake a thread blocked in [`poll_readable`].
pub fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: plain eventfd(2) call.
    let fd = check(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
    // SAFETY: `fd` was just returned by eventfd and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Make an [`eventfd`] readable. Cannot fail short of a full counter,
/// which leaves it readable anyway.
pub fn wake(fd: RawFd) {
    let one = 1u64.to_ne_bytes();
    let _ = write(fd, &one);
}

/// Reset an [`eventfd`].
pub fn clear_wake(fd: RawFd) {
    let mut value = [0u8; 8];
    let _ = read(fd, &mut value);
}

static SHUTDOWN: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    SHUTDOWN.store(true, Ordering::SeqCst);
}

/// The local time as `Nov 27 17:40:05` (strongSwan's filelog with
/// `time_format = %b %e %T`); empty if it cannot be had.
pub fn local_time() -> String {
    // SAFETY: time(2), localtime_r(3) and strftime(3) on values and
    // buffers owned here; localtime_r is the thread-safe one.
    unsafe {
        let t = libc::time(core::ptr::null_mut());
        let mut tm: libc::tm = core::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return String::new();
        }
        let mut buf = [0u8; 32];
        let n = libc::strftime(
            buf.as_mut_ptr().cast(),
            buf.len(),
            c"%b %e %T".as_ptr(),
            &tm,
        );
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }
}

static RELOAD: AtomicBool = AtomicBool::new(false);

extern "C" fn on_hangup(_: libc::c_int) {
    RELOAD.store(true, Ordering::SeqCst);
}

/// Route SIGHUP to a flag the control loop polls (and clears): read the
/// configuration again, as `flowsec ctl reload`.
pub fn catch_reload_signal() -> &'static AtomicBool {
    // SAFETY: the handler only stores to an atomic, which is
    // async-signal-safe.
    unsafe {
        libc::signal(
            libc::SIGHUP,
            on_hangup as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
    &RELOAD
}

/// Route SIGINT and SIGTERM to a flag the worker loop polls.
pub fn catch_shutdown_signals() -> &'static AtomicBool {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe.
        unsafe {
            libc::signal(
                sig,
                on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
    &SHUTDOWN
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The IKE socket reads one message at a time: no GRO there; the
    /// ESP-in-UDP sockets coalesce (where the kernel can).
    #[test]
    fn udp_gro_only_where_asked() {
        let ike = udp_encap_socket(0, false, false, false).unwrap();
        assert!(!udp_gro(ike.as_raw_fd()).unwrap());
        let esp = udp_encap_socket(0, false, false, true).unwrap();
        if udp_gro(esp.as_raw_fd()).is_ok_and(|on| !on) {
            eprintln!("this kernel has no UDP_GRO");
        }
    }

    /// A full socket buffer is reported, not waited for: the rest of the
    /// batch is dropped as `would_block`.
    #[test]
    fn a_full_send_buffer_does_not_block() {
        // A datagram socket pair nobody reads (blocking, as a raw socket
        // was): its queue fills, and sendmmsg must not wait.
        let (a, b) = std::os::unix::net::UnixDatagram::pair().unwrap();
        let packets = vec![vec![0u8; 1000]; MAX_BATCH];
        // Connected: no address (a zero-length name).
        let addrs = [(); MAX_BATCH];
        let mut total = Sent::default();
        for _ in 0..1000 {
            let done = send_many(a.as_raw_fd(), &packets, &addrs);
            total.sent += done.sent;
            total.would_block += done.would_block;
            if done.would_block > 0 {
                break;
            }
        }
        assert!(total.sent > 0 && total.would_block > 0, "{total:?}");
        drop(b);
    }
}
