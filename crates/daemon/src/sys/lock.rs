//! Advisory file locks (flock(2)): a state file is read and rewritten by
//! one daemon at a time.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use super::check;

/// Take an exclusive lock on `file`, waiting for it; released when the
/// file is closed.
pub fn lock_exclusive(file: &File) -> io::Result<()> {
    loop {
        // SAFETY: flock on a descriptor `file` owns, integer arguments.
        match check(unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) }) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            done => return done.map(|_| ()),
        }
    }
}
