//! An epoll set: many descriptors behind one, for a poll of a fixed set
//! (the vici socket's clients come and go).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// An epoll instance (level-triggered).
#[derive(Debug)]
pub struct Epoll(OwnedFd);

impl Epoll {
    /// A new, empty set.
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: plain system call; the descriptor is owned from here.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor nobody else owns.
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Watch `fd`: readable always, writable too while `write`.
    pub fn add(&self, fd: RawFd, write: bool) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, write)
    }

    /// Change what `fd` is watched for.
    pub fn modify(&self, fd: RawFd, write: bool) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, write)
    }

    /// Stop watching `fd`.
    pub fn remove(&self, fd: RawFd) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd, false)
    }

    /// Take what is ready without waiting (the caller tries every
    /// descriptor; this clears the set's own readiness).
    pub fn drain(&self) {
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 16];
        // SAFETY: `events` is a valid buffer of 16 entries.
        unsafe { libc::epoll_wait(self.0.as_raw_fd(), events.as_mut_ptr(), 16, 0) };
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, write: bool) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | if write { libc::EPOLLOUT } else { 0 }) as u32,
            u64: fd as u64,
        };
        // SAFETY: `ev` is valid for the call; the kernel checks `fd`.
        if unsafe { libc::epoll_ctl(self.0.as_raw_fd(), op, fd, &mut ev) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl AsRawFd for Epoll {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}
