//! Classic BPF programs on sockets: a filter that keeps the SPIs a worker
//! owns, and the programs that pick the socket of a reuseport group or a
//! packet fanout group.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use super::check;
use crate::steer::Insn;

/// `struct sock_fprog`: a classic BPF program.
#[repr(C)]
struct SockFprog {
    len: libc::c_ushort,
    filter: *const Insn,
}

/// Attach `prog` with `option` of SOL_SOCKET (SO_ATTACH_FILTER,
/// SO_ATTACH_REUSEPORT_CBPF).
fn attach_program(fd: BorrowedFd<'_>, option: libc::c_int, prog: &[Insn]) -> io::Result<()> {
    set_program(fd, libc::SOL_SOCKET, option, prog)
}

/// Hand `prog` to the kernel with socket option `option` of `level`.
pub(super) fn set_program(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    option: libc::c_int,
    prog: &[Insn],
) -> io::Result<()> {
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
            fd.as_raw_fd(),
            level,
            option,
            (&fprog as *const SockFprog).cast(),
            std::mem::size_of::<SockFprog>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

/// Keep only the packets `prog` accepts on `fd` (SO_ATTACH_FILTER).
pub fn attach_filter(fd: BorrowedFd<'_>, prog: &[Insn]) -> io::Result<()> {
    attach_program(fd, libc::SO_ATTACH_FILTER, prog)
}

/// Choose the socket of `fd`'s SO_REUSEPORT group by `prog`.
pub fn attach_reuseport_program(fd: BorrowedFd<'_>, prog: &[Insn]) -> io::Result<()> {
    attach_program(fd, libc::SO_ATTACH_REUSEPORT_CBPF, prog)
}
