//! Sockets: the raw ESP/AH receivers and senders, the UDP sockets of
//! ports 500 and 4500 (PKTINFO, TOS, GRO), and their options (mark,
//! receive buffer).

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use super::{check, SOL_UDP, UDP_GRO};

/// socket(2), close-on-exec, owned.
pub(super) fn socket(
    domain: libc::c_int,
    kind: libc::c_int,
    protocol: libc::c_int,
) -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call.
    let fd = check(unsafe { libc::socket(domain, kind | libc::SOCK_CLOEXEC, protocol) })?;
    // SAFETY: `fd` was just returned by socket and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// setsockopt(2) of one C int (mark values are passed as their bits).
pub(super) fn set_int_option(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    option: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: setsockopt reads `size_of::<c_int>()` bytes from `value`,
    // which lives across the call.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            option,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(|_| ())
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
    set_int_option(fd.as_fd(), libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO, 1)?;
    set_int_option(fd.as_fd(), libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS, 1)?;
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

/// A non-blocking UDP socket on 0.0.0.0:`port` (with `v6`: [::]:`port`,
/// IPv6 only) that reports each datagram's destination address
/// (IP_PKTINFO / IPV6_RECVPKTINFO), for ESP in UDP (RFC 3948). With
/// `reuseport`, several sockets (one per worker) share the port.
pub fn udp_encap_socket(port: u16, reuseport: bool, v6: bool, gro: bool) -> io::Result<OwnedFd> {
    let family = if v6 { libc::AF_INET6 } else { libc::AF_INET };
    let fd = socket(family, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK, 0)?;
    let raw = fd.as_fd();
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
                raw.as_raw_fd(),
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
                raw.as_raw_fd(),
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
pub fn udp_gro(fd: BorrowedFd<'_>) -> io::Result<bool> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` is a writable c_int of `len` bytes, live through the call.
    check(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            SOL_UDP,
            UDP_GRO,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    })?;
    Ok(v != 0)
}

/// Set the firewall mark of everything `fd` sends (SO_MARK; needs
/// CAP_NET_ADMIN), so that policy routing can tell flowsec's own packets.
pub fn set_mark(fd: BorrowedFd<'_>, mark: u32) -> io::Result<()> {
    set_int_option(fd, libc::SOL_SOCKET, libc::SO_MARK, mark as libc::c_int)
}

/// Ask for a receive buffer of `bytes` (SO_RCVBUFFORCE as root, which
/// passes the rmem_max cap, else SO_RCVBUF). A raw socket whose buffer
/// overflows makes the kernel answer with ICMP protocol-unreachable.
pub fn set_recv_buffer(fd: BorrowedFd<'_>, bytes: usize) -> io::Result<()> {
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    let set = |opt| set_int_option(fd, libc::SOL_SOCKET, opt, value);
    set(libc::SO_RCVBUFFORCE).or_else(|_| set(libc::SO_RCVBUF))
}

/// The first byte waiting on stream socket `fd`, left there (MSG_PEEK;
/// blocks as a read would, within the socket's read timeout). `None` at
/// the end of the stream.
pub fn peek_byte(fd: BorrowedFd<'_>) -> io::Result<Option<u8>> {
    let mut b = 0u8;
    // SAFETY: one byte into `b`, which lives across the call.
    let n = unsafe {
        libc::recv(
            fd.as_raw_fd(),
            (&mut b as *mut u8).cast(),
            1,
            libc::MSG_PEEK,
        )
    };
    match n {
        n if n < 0 => Err(io::Error::last_os_error()),
        0 => Ok(None),
        _ => Ok(Some(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The IKE socket reads one message at a time: no GRO there; the
    /// ESP-in-UDP sockets coalesce (where the kernel can).
    #[test]
    fn udp_gro_only_where_asked() {
        let ike = udp_encap_socket(0, false, false, false).unwrap();
        assert!(!udp_gro(ike.as_fd()).unwrap());
        let esp = udp_encap_socket(0, false, false, true).unwrap();
        if udp_gro(esp.as_fd()).is_ok_and(|on| !on) {
            eprintln!("this kernel has no UDP_GRO");
        }
    }
}
