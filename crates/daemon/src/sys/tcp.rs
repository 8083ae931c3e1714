//! TCP sockets for RFC 9329's streams: non-blocking listeners and
//! connections, marked to bypass the tunnel's routes, and poll(2) with a
//! direction per descriptor.

use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, IntoRawFd, RawFd};

use super::check;
use super::socket::{set_int_option, set_mark, socket};

/// A socket address as the kernel takes it.
fn sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: an all-zero sockaddr_storage is valid; the family's fields
    // are filled below.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than, and aligned for, sockaddr_in.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            // SAFETY: all-zero is a valid sockaddr_in6.
            let mut sin6: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_addr.s6_addr = a.ip().octets();
            sin6.sin6_scope_id = a.scope_id();
            // SAFETY: sockaddr_storage is larger than, and aligned for, sockaddr_in6.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

fn family(v6: bool) -> libc::c_int {
    if v6 {
        libc::AF_INET6
    } else {
        libc::AF_INET
    }
}

/// A non-blocking listener on `port` of every address of one family
/// (IPv6 only for IPv6), its accepted connections marked with `mark`.
pub fn tcp_listener(port: u16, v6: bool, mark: u32) -> io::Result<TcpListener> {
    let fd = socket(family(v6), libc::SOCK_STREAM | libc::SOCK_NONBLOCK, 0)?;
    let raw = fd.as_raw_fd();
    set_int_option(fd.as_fd(), libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    if v6 {
        set_int_option(fd.as_fd(), libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, 1)?;
    }
    // Accepted sockets inherit the mark: our replies bypass the tunnel.
    set_mark(fd.as_fd(), mark)?;
    let any: IpAddr = match v6 {
        true => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
        false => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
    };
    let (ss, len) = sockaddr(SocketAddr::new(any, port));
    // SAFETY: `ss` holds a sockaddr of `len` bytes.
    check(unsafe { libc::bind(raw, (&ss as *const libc::sockaddr_storage).cast(), len) })?;
    // SAFETY: plain listen(2) on our socket.
    check(unsafe { libc::listen(raw, 128) })?;
    // SAFETY: the descriptor is a listening TCP socket we own.
    Ok(unsafe { TcpListener::from_raw_fd(fd.into_raw_fd()) })
}

/// Start a non-blocking connection from `local` (any port) to `remote`,
/// marked with `mark`; it is open once poll(2) says writable and
/// `take_error` is clean.
pub fn tcp_connect(local: IpAddr, remote: SocketAddr, mark: u32) -> io::Result<TcpStream> {
    let fd = socket(
        family(remote.is_ipv6()),
        libc::SOCK_STREAM | libc::SOCK_NONBLOCK,
        0,
    )?;
    let raw = fd.as_raw_fd();
    set_mark(fd.as_fd(), mark)?;
    let _ = set_int_option(fd.as_fd(), libc::IPPROTO_TCP, libc::TCP_NODELAY, 1);
    if !local.is_unspecified() {
        let (ss, len) = sockaddr(SocketAddr::new(local, 0));
        // SAFETY: `ss` holds a sockaddr of `len` bytes.
        check(unsafe { libc::bind(raw, (&ss as *const libc::sockaddr_storage).cast(), len) })?;
    }
    let (ss, len) = sockaddr(remote);
    // SAFETY: `ss` holds a sockaddr of `len` bytes.
    let r = unsafe { libc::connect(raw, (&ss as *const libc::sockaddr_storage).cast(), len) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
    }
    // SAFETY: the descriptor is a TCP socket we own.
    Ok(unsafe { TcpStream::from_raw_fd(fd.into_raw_fd()) })
}

/// A blocking connection from `local`, its port included (a port another
/// connection used before), to `remote`: for tests of a reused port.
#[cfg(test)]
pub fn connect_from(local: SocketAddr, remote: SocketAddr) -> io::Result<TcpStream> {
    let fd = socket(family(remote.is_ipv6()), libc::SOCK_STREAM, 0)?;
    let raw = fd.as_raw_fd();
    set_int_option(fd.as_fd(), libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    let (ss, len) = sockaddr(local);
    // SAFETY: `ss` holds a sockaddr of `len` bytes.
    check(unsafe { libc::bind(raw, (&ss as *const libc::sockaddr_storage).cast(), len) })?;
    let (ss, len) = sockaddr(remote);
    // SAFETY: `ss` holds a sockaddr of `len` bytes.
    check(unsafe { libc::connect(raw, (&ss as *const libc::sockaddr_storage).cast(), len) })?;
    // SAFETY: the descriptor is a TCP socket we own.
    Ok(unsafe { TcpStream::from_raw_fd(fd.into_raw_fd()) })
}

/// Close `s` with a reset (SO_LINGER 0): no TIME_WAIT keeps its port.
#[cfg(test)]
pub fn reset(s: TcpStream) -> io::Result<()> {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: `linger` is a valid struct linger of the size passed.
    check(unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    })?;
    drop(s);
    Ok(())
}

/// Readiness of one descriptor after [`poll`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ready {
    pub read: bool,
    pub write: bool,
    /// Hung up or in error: read to find out.
    pub hup: bool,
}

/// What to poll a descriptor for.
#[derive(Debug, Clone, Copy)]
pub struct Interest {
    pub fd: RawFd,
    /// Readable (a connection whose output backs up is not read: what it
    /// sends waits in the kernel, under TCP's flow control).
    pub read: bool,
    pub write: bool,
}

/// poll(2) over `fds`; the readiness of each in `ready` (an error or a
/// hang-up is reported whatever the interest).
pub fn poll(fds: &[Interest], timeout_ms: i32, ready: &mut Vec<Ready>) -> io::Result<()> {
    let mut pollfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|i| libc::pollfd {
            fd: i.fd,
            events: if i.read { libc::POLLIN } else { 0 } | if i.write { libc::POLLOUT } else { 0 },
            revents: 0,
        })
        .collect();
    // SAFETY: `pollfds` is a valid array of its length.
    let n = unsafe {
        libc::poll(
            pollfds.as_mut_ptr(),
            pollfds.len() as libc::nfds_t,
            timeout_ms,
        )
    };
    ready.clear();
    if n < 0 {
        let err = io::Error::last_os_error();
        ready.resize(fds.len(), Ready::default());
        return match err.kind() {
            io::ErrorKind::Interrupted => Ok(()),
            _ => Err(err),
        };
    }
    ready.extend(pollfds.iter().map(|p| Ready {
        read: p.revents & libc::POLLIN != 0,
        write: p.revents & libc::POLLOUT != 0,
        hup: p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0,
    }));
    Ok(())
}
