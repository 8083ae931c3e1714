//! Moving datagrams with their control messages: sendmsg(2) with the
//! source address, TOS and UDP GSO size; recvmsg(2) with PKTINFO, TOS and
//! the UDP GRO size; sendmmsg(2) and recvmmsg(2) in batches of up to
//! [`MAX_BATCH`].

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};

use flowsec_ipsec::PacketBuf;

use super::{would_block, SOL_UDP, UDP_GRO, UDP_SEGMENT};

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
    msg.msg_controllen = send_control_len(src, segment);
    // SAFETY: the control buffer (128 bytes, 8-byte aligned) is live, and
    // `msg_controllen` is `send_control_len` of these arguments (at most
    // 40 + 24 + 24 bytes).
    unsafe { write_send_control(&msg, src, tos, segment) };
    // SAFETY: every pointer in `msg` points into live locals sized as stated.
    let n = unsafe { libc::sendmsg(fd, &msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The room [`write_send_control`] takes: PKTINFO for `src`, the TOS or
/// traffic class, and UDP_SEGMENT when `segment` > 0.
fn send_control_len(src: IpAddr, segment: u16) -> usize {
    // SAFETY: CMSG_SPACE is arithmetic.
    let space = |len: usize| unsafe { libc::CMSG_SPACE(len as u32) } as usize;
    let c_int = std::mem::size_of::<libc::c_int>();
    space(pktinfo_len(src)) + space(c_int) + if segment > 0 { space(2) } else { 0 }
}

fn pktinfo_len(src: IpAddr) -> usize {
    match src {
        IpAddr::V4(_) => std::mem::size_of::<libc::in_pktinfo>(),
        IpAddr::V6(_) => std::mem::size_of::<libc::in6_pktinfo>(),
    }
}

/// Write the control messages of a send into `msg`'s control buffer: the
/// source address (IP_PKTINFO / IPV6_PKTINFO), the TOS or traffic class,
/// and with `segment` > 0 the UDP_SEGMENT size.
///
/// # Safety
///
/// `msg.msg_control` points to a live, 8-byte aligned buffer of
/// `msg.msg_controllen` bytes, and that is [`send_control_len`]`(src,
/// segment)`.
unsafe fn write_send_control(msg: &libc::msghdr, src: IpAddr, tos: u8, segment: u16) {
    let c_int = std::mem::size_of::<libc::c_int>();
    // SAFETY: by the contract, the buffer holds every message written; each
    // is written within the header CMSG_FIRSTHDR/CMSG_NXTHDR give for it.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        (*c).cmsg_len = libc::CMSG_LEN(pktinfo_len(src) as u32) as usize;
        match src {
            IpAddr::V4(a) => {
                (*c).cmsg_level = libc::IPPROTO_IP;
                (*c).cmsg_type = libc::IP_PKTINFO;
                let mut info: libc::in_pktinfo = std::mem::zeroed();
                info.ipi_spec_dst.s_addr = u32::from_ne_bytes(a.octets());
                std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut libc::in_pktinfo, info);
            }
            IpAddr::V6(a) => {
                (*c).cmsg_level = libc::IPPROTO_IPV6;
                (*c).cmsg_type = libc::IPV6_PKTINFO;
                let mut info: libc::in6_pktinfo = std::mem::zeroed();
                info.ipi6_addr.s6_addr = a.octets();
                std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut libc::in6_pktinfo, info);
            }
        }
        c = libc::CMSG_NXTHDR(msg, c);
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
            c = libc::CMSG_NXTHDR(msg, c);
            (*c).cmsg_level = SOL_UDP;
            (*c).cmsg_type = UDP_SEGMENT;
            (*c).cmsg_len = libc::CMSG_LEN(2) as usize;
            std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut u16, segment);
        }
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
pub fn recv_datagram(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<Option<UdpDatagram>> {
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
    fd: BorrowedFd<'_>,
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
    let n = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, 0) };
    let Some(n) = would_block(n)? else {
        return Ok(None);
    };
    if msg.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 {
        // A datagram larger than the buffer, or a lost PKTINFO: unusable,
        // reported as an empty read.
        return Ok(Some(0));
    }
    // SAFETY: recvmsg filled the control buffer (live, 8-byte aligned) up
    // to the `msg_controllen` it left.
    unsafe { read_recv_control(&msg, extra) };
    Ok(Some(n))
}

/// What the control messages of a receive say: our address the packet
/// was sent to (PKTINFO), the outer TOS or traffic class, the UDP GRO
/// segment size; into `extra`.
///
/// # Safety
///
/// `msg.msg_control` points to a live, 8-byte aligned buffer that
/// recvmsg(2) filled up to `msg.msg_controllen`.
unsafe fn read_recv_control(msg: &libc::msghdr, extra: &mut Ancillary) {
    // SAFETY: by the contract, the CMSG macros walk a filled buffer within
    // `msg_controllen`; a message's data is read (unaligned) only when the
    // message is long enough for the type read.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(msg);
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
            cmsg = libc::CMSG_NXTHDR(msg, cmsg);
        }
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

/// A neighbor on a link as [`send_many`] takes it, on a packet socket
/// (`sockaddr_ll`): the link's index, the neighbor's Ethernet address,
/// and the EtherType of what is sent (IPv4, IPv6).
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct DestLink(libc::sockaddr_ll);

impl DestLink {
    pub fn new(ifindex: u32, mac: [u8; 6], ipv6: bool) -> Self {
        let ethertype = if ipv6 {
            libc::ETH_P_IPV6
        } else {
            libc::ETH_P_IP
        } as u16;
        let mut addr = [0u8; 8];
        addr[..6].copy_from_slice(&mac);
        DestLink(libc::sockaddr_ll {
            sll_family: libc::AF_PACKET as libc::c_ushort,
            sll_protocol: ethertype.to_be(),
            sll_ifindex: ifindex as libc::c_int,
            sll_hatype: 0,
            sll_pkttype: 0,
            sll_halen: 6,
            sll_addr: addr,
        })
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
    fd: BorrowedFd<'_>,
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
            fd.as_raw_fd(),
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

#[cfg(test)]
mod tests {
    use super::*;

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
