//! The thin Linux system layer: the only `unsafe` in the daemon (the crate
//! root denies it everywhere else). Each call is a direct libc call on a
//! descriptor the caller lends (`BorrowedFd`) or one made here and handed
//! back owned (`OwnedFd`); every `unsafe` block says why it is sound.
//!
//! By concern, as wireguard-go splits `conn/` and `tun/`: [`tun`] (the
//! device), [`socket`] (raw and UDP sockets, their options), [`mmsg`]
//! (sendmsg/recvmsg with control messages, sendmmsg/recvmmsg), [`bpf`]
//! (socket filters), [`packet`] (the raw ESP/AH fanout group), [`signal`]; here, what they share and the plain
//! calls (read, write, poll, eventfd, the clock).
//!
//! The calls of the worker's per-packet send path (`send_udp`,
//! `send_many`, and `read`, `write`, `poll_readable` of its TUN queues
//! and poll set) still take raw descriptors: the worker loop keeps those
//! as numbers in its state (`SendFds`, `TunOut`, `PollSet`) while it
//! borrows itself mutably; lending its `Io` to that state is a step of
//! its own.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

mod bpf;
pub mod epoll;
mod lock;
mod mmsg;
pub mod netlink;
pub mod notify;
mod packet;
pub mod privs;
pub mod rtnl;
mod signal;
mod socket;
pub mod tcp;
mod tun;

pub use bpf::{attach_filter, attach_reuseport_program};
pub use lock::lock_exclusive;
pub use mmsg::{
    recv_datagram, recv_many, send_many, send_udp, Dest4, Dest6, DestLink, UdpDatagram, MAX_BATCH,
};
pub use packet::{
    discard_queued, join_fanout, packet_drops, packet_receiver, packet_sender, set_fanout_program,
};
pub use signal::{catch_reload_signal, catch_shutdown_signals};
pub use socket::{
    peek_byte, raw_receiver_v4, raw_receiver_v6, raw_sender_v4, raw_sender_v6, set_mark,
    set_recv_buffer, udp_encap_socket,
};
pub use tun::{open_tun, TunQueue};

/// linux/udp.h: the UDP socket option level and its GSO/GRO options.
pub(super) const SOL_UDP: libc::c_int = 17;
pub(super) const UDP_SEGMENT: libc::c_int = 103;
pub(super) const UDP_GRO: libc::c_int = 104;

pub(super) fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

pub(super) fn would_block(n: isize) -> io::Result<Option<usize>> {
    if n >= 0 {
        return Ok(Some(n as usize));
    }
    let err = io::Error::last_os_error();
    match err.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
        _ => Err(err),
    }
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

/// A non-blocking eventfd, to wake a thread blocked in [`poll_readable`].
pub fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: plain eventfd(2) call.
    let fd = check(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
    // SAFETY: `fd` was just returned by eventfd and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Make an [`eventfd`] readable. Cannot fail short of a full counter,
/// which leaves it readable anyway.
pub fn wake(fd: BorrowedFd<'_>) {
    let one = 1u64.to_ne_bytes();
    let _ = write(fd.as_raw_fd(), &one);
}

/// Reset an [`eventfd`].
pub fn clear_wake(fd: BorrowedFd<'_>) {
    let mut value = [0u8; 8];
    let _ = read(fd.as_raw_fd(), &mut value);
}

/// The effective user ID of this process.
pub fn euid() -> u32 {
    // SAFETY: geteuid takes no arguments and cannot fail.
    unsafe { libc::geteuid() }
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

/// The system's name, release and machine (uname(2)), for vici's
/// `version`.
pub fn uname() -> (String, String, String) {
    // SAFETY: uname(2) fills the zeroed struct owned here.
    let u = unsafe {
        let mut u: libc::utsname = core::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return Default::default();
        }
        u
    };
    let text = |field: &[libc::c_char]| {
        let bytes: Vec<u8> = field
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    (text(&u.sysname), text(&u.release), text(&u.machine))
}
