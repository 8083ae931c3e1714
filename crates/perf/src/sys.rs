//! The perf crate's system calls: the only `unsafe` in `flowsec-perf`
//! (the crate root denies it everywhere else). Each `unsafe` block is one
//! direct libc call on descriptors the caller owns, and says why it is
//! sound.
#![allow(unsafe_code)]

use std::os::fd::RawFd;
use std::time::Duration;

/// A `pollfd` asking for `events` on `fd`.
pub(crate) fn pollfd(fd: RawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

/// poll(2) on `fds` for at most `timeout` (the ready count; 0 on timeout,
/// negative on error, as poll returns).
pub(crate) fn poll(fds: &mut [libc::pollfd], timeout: Duration) -> i32 {
    let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: `fds` is a valid, exclusively borrowed array of fds.len()
    // pollfds for the duration of the call.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) }
}

/// setsockopt(2) of one C int on `fd` (setsockopt's return value: 0, or
/// -1 when the kernel refused it).
pub(crate) fn set_int_option(
    fd: RawFd,
    level: libc::c_int,
    option: libc::c_int,
    value: libc::c_int,
) -> libc::c_int {
    // SAFETY: setsockopt reads a c_int from `value`, which lives across
    // the call; the descriptor is an open socket of the caller's.
    unsafe {
        libc::setsockopt(
            fd,
            level,
            option,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    }
}
