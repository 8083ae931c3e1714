//! Packet sockets (`AF_PACKET`, `SOCK_DGRAM`): the group that takes each
//! raw ESP/AH packet once, steered to a worker by a classic BPF program
//! (PACKET_FANOUT_CBPF, packet(7)).

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use super::bpf::{attach_filter, set_program};
use super::check;
use super::socket::socket;
use crate::steer::Insn;

/// linux/if_packet.h: the fanout mode that runs a classic BPF program,
/// and the flag that makes the kernel choose an unused group id.
const PACKET_FANOUT_CBPF: u32 = 6;
const PACKET_FANOUT_FLAG_UNIQUEID: u32 = 0x2000;

/// A non-blocking packet socket receiving the link layer's `ethertype`
/// (ETH_P_IP, ETH_P_IPV6) on every interface, keeping only what `filter`
/// accepts. The filter is attached before the socket is bound, so that it
/// never queues anything else.
pub fn packet_receiver(ethertype: u16, filter: &[Insn]) -> io::Result<OwnedFd> {
    // Protocol 0: bound to nothing, receiving nothing, until bind(2).
    let fd = socket(libc::AF_PACKET, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK, 0)?;
    attach_filter(fd.as_fd(), filter)?;
    // SAFETY: an all-zero sockaddr_ll is valid; family and protocol set below.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as libc::c_ushort;
    addr.sll_protocol = ethertype.to_be();
    // SAFETY: `addr` is a sockaddr_ll whose size is passed with it.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    })?;
    Ok(fd)
}

/// A non-blocking packet socket that sends IP packets to a neighbor on a
/// link (`DestLink`): bound to no protocol, it receives nothing. Its
/// packets enter the device's queue (qdiscs, taps such as tcpdump) as the
/// kernel's own would after IP output.
pub fn packet_sender() -> io::Result<OwnedFd> {
    socket(libc::AF_PACKET, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK, 0)
}

/// Join `fd` to the BPF fanout group `id` of its network namespace, or,
/// with `None`, make a new group with an unused id; returns the id.
pub fn join_fanout(fd: BorrowedFd<'_>, id: Option<u16>) -> io::Result<u16> {
    let (id, flags) = match id {
        Some(id) => (u32::from(id), 0),
        None => (0, PACKET_FANOUT_FLAG_UNIQUEID),
    };
    let arg = id | (PACKET_FANOUT_CBPF | flags) << 16;
    set_u32(fd, libc::PACKET_FANOUT, arg)?;
    let mut v: u32 = 0;
    let mut len = std::mem::size_of::<u32>() as libc::socklen_t;
    // SAFETY: `v` is a writable u32 of `len` bytes, live through the call.
    check(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_FANOUT,
            (&mut v as *mut u32).cast(),
            &mut len,
        )
    })?;
    Ok((v & 0xffff) as u16)
}

/// The program that picks the member of `fd`'s fanout group for each
/// packet (the index it returns, modulo the members, in join order).
pub fn set_fanout_program(fd: BorrowedFd<'_>, prog: &[Insn]) -> io::Result<()> {
    set_program(fd, libc::SOL_PACKET, libc::PACKET_FANOUT_DATA, prog)
}

/// Packets the kernel could not queue on packet socket `fd` since the
/// last call (PACKET_STATISTICS, which resets on reading).
pub fn packet_drops(fd: BorrowedFd<'_>) -> io::Result<u32> {
    // SAFETY: an all-zero tpacket_stats is valid.
    let mut st: libc::tpacket_stats = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
    // SAFETY: `st` is a writable tpacket_stats of `len` bytes, live
    // through the call.
    check(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            (&mut st as *mut libc::tpacket_stats).cast(),
            &mut len,
        )
    })?;
    Ok(st.tp_drops)
}

/// Read and drop whatever is queued on `fd` (non-blocking).
pub fn discard_queued(fd: BorrowedFd<'_>) {
    // MSG_TRUNC: the rest of each packet is dropped.
    while recv_now(fd, &mut [0u8; 1], libc::MSG_TRUNC).is_some() {}
}

/// One packet from `fd` into `b`, without waiting; `None` when nothing
/// is queued (or on an error).
fn recv_now(fd: BorrowedFd<'_>, b: &mut [u8], flags: libc::c_int) -> Option<usize> {
    // SAFETY: at most `b.len()` bytes into `b`, which lives across the call.
    let n = unsafe {
        libc::recv(
            fd.as_raw_fd(),
            b.as_mut_ptr().cast(),
            b.len(),
            libc::MSG_DONTWAIT | flags,
        )
    };
    usize::try_from(n).ok()
}

fn set_u32(fd: BorrowedFd<'_>, option: libc::c_int, value: u32) -> io::Result<()> {
    // SAFETY: setsockopt reads 4 bytes from `value`, live across the call.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            option,
            (&value as *const u32).cast(),
            std::mem::size_of::<u32>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use flowsec_wire::ip::IpVersion;

    /// Needs CAP_NET_RAW; skipped (with a message) without it.
    #[test]
    fn a_fanout_group_forms_with_its_program() {
        let filter = crate::steer::packet_filter(IpVersion::V4);
        let first = match packet_receiver(libc::ETH_P_IP as u16, &filter) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                eprintln!("skipped: packet sockets need CAP_NET_RAW ({e})");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        let second = packet_receiver(libc::ETH_P_IP as u16, &filter).unwrap();
        let id = join_fanout(first.as_fd(), None).unwrap();
        assert_eq!(join_fanout(second.as_fd(), Some(id)).unwrap(), id);
        let prog = crate::steer::fanout_program(IpVersion::V4, 2);
        set_fanout_program(first.as_fd(), &prog).unwrap();
        // Another group gets another id.
        let third = packet_receiver(libc::ETH_P_IP as u16, &filter).unwrap();
        assert_ne!(join_fanout(third.as_fd(), None).unwrap(), id);
        assert_eq!(packet_drops(first.as_fd()).unwrap(), 0);
    }

    /// The kernel runs the programs as `crate::steer`'s interpreter does:
    /// ESP to 127.0.0.1 (the loopback device receives what it sends) with
    /// SPIs 0x5eed0000..+6 reaches, in a group of three, the socket of
    /// its SPI mod 3, and a UDP datagram none. Needs CAP_NET_RAW.
    #[test]
    fn the_kernel_steers_by_spi_as_the_programs_say() {
        let filter = crate::steer::packet_filter(IpVersion::V4);
        let Ok(first) = packet_receiver(libc::ETH_P_IP as u16, &filter) else {
            eprintln!("skipped: packet sockets need CAP_NET_RAW");
            return;
        };
        let mut group = vec![first];
        for _ in 1..3 {
            group.push(packet_receiver(libc::ETH_P_IP as u16, &filter).unwrap());
        }
        let mut id = None;
        for fd in &group {
            id = Some(join_fanout(fd.as_fd(), id).unwrap());
        }
        set_fanout_program(
            group[0].as_fd(),
            &crate::steer::fanout_program(IpVersion::V4, 3),
        )
        .unwrap();
        let send = super::super::socket::raw_sender_v4().unwrap();
        let base = 0x5eed_0000u32;
        for k in 0..6u32 {
            send_to_loopback(send.as_fd(), 50, &(base + k).to_be_bytes());
        }
        send_to_loopback(send.as_fd(), 17, &base.to_be_bytes());
        std::thread::sleep(std::time::Duration::from_millis(50));
        for (index, fd) in group.iter().enumerate() {
            let mut got = Vec::new();
            let mut b = [0u8; 128];
            while recv_now(fd.as_fd(), &mut b, 0).is_some() {
                let spi = u32::from_be_bytes([b[20], b[21], b[22], b[23]]);
                // Other ESP on this host's loopback is not ours to judge.
                if b[9] == 17 || spi & 0xffff_0000 == base {
                    got.push((b[9], spi - base));
                }
            }
            let want: Vec<(u8, u32)> = (0..6)
                .filter(|k| (base + k) % 3 == index as u32)
                .map(|k| (50, k))
                .collect();
            assert_eq!(got, want, "socket {index}");
        }
    }

    /// One IPv4 packet of `protocol` carrying `payload` (and 8 more
    /// bytes) from and to 127.0.0.1, through raw socket `fd`.
    fn send_to_loopback(fd: BorrowedFd<'_>, protocol: u8, payload: &[u8]) {
        let mut p = vec![
            0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, protocol, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1,
        ];
        p.extend_from_slice(payload);
        p.extend_from_slice(&[0; 8]);
        let len = p.len() as u16;
        p[2..4].copy_from_slice(&len.to_be_bytes());
        let to = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
            },
            sin_zero: [0; 8],
        };
        // SAFETY: `p` and `to` live across the call; their lengths are given.
        let n = unsafe {
            libc::sendto(
                fd.as_raw_fd(),
                p.as_ptr().cast(),
                p.len(),
                0,
                (&to as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        assert_eq!(n, p.len() as isize);
    }
}
