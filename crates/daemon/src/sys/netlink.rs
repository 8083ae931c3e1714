//! Address and route changes from the kernel (rtnetlink(7)): a socket in
//! the multicast groups of links, addresses and routes, both families,
//! as strongSwan's kernel-netlink listens for its roam events. Only that
//! something changed is used (the IKE core asks the kernel for the new
//! source address itself), so the messages are drained, not parsed.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use super::{check, socket::socket};

/// A non-blocking NETLINK_ROUTE socket in the groups of link, IPv4/IPv6
/// address and IPv4/IPv6 route changes.
pub fn route_events() -> io::Result<OwnedFd> {
    events(
        libc::RTMGRP_LINK
            | libc::RTMGRP_IPV4_IFADDR
            | libc::RTMGRP_IPV6_IFADDR
            | libc::RTMGRP_IPV4_ROUTE
            | libc::RTMGRP_IPV6_ROUTE,
    )
}

/// A non-blocking NETLINK_ROUTE socket in the groups of link, neighbor
/// and IPv4/IPv6 route changes: where raw IP packets leave
/// (`crate::nexthop`).
pub fn neighbor_events() -> io::Result<OwnedFd> {
    events(
        libc::RTMGRP_LINK | libc::RTMGRP_NEIGH | libc::RTMGRP_IPV4_ROUTE | libc::RTMGRP_IPV6_ROUTE,
    )
}

/// A non-blocking NETLINK_ROUTE socket in the multicast `groups`.
fn events(groups: libc::c_int) -> io::Result<OwnedFd> {
    let fd = socket(
        libc::AF_NETLINK,
        libc::SOCK_RAW | libc::SOCK_NONBLOCK,
        libc::NETLINK_ROUTE,
    )?;
    // SAFETY: sockaddr_nl is plain data; all-zero is a valid value.
    let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    addr.nl_groups = groups as u32;
    // SAFETY: bind reads `size_of::<sockaddr_nl>()` bytes from `addr`.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    })?;
    Ok(fd)
}

/// Read every message waiting on `fd`: whether there was any. A full
/// receive buffer (ENOBUFS: events were lost) counts as a change too.
pub fn drain_events(fd: BorrowedFd<'_>) -> bool {
    let mut buf = [0u8; 8192];
    let mut any = false;
    loop {
        // SAFETY: `buf` is valid for its length in writable bytes.
        let n = unsafe {
            libc::recv(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n > 0 {
            any = true;
            continue;
        }
        let err = io::Error::last_os_error();
        if n < 0 && err.raw_os_error() == Some(libc::ENOBUFS) {
            any = true;
            continue;
        }
        if n < 0 && err.kind() == io::ErrorKind::Interrupted {
            continue;
        }
        return any;
    }
}
