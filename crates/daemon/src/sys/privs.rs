//! What the daemon may do after it starts: the capabilities it keeps,
//! `no_new_privs`, the umask a socket is created under, and who is on the
//! other end of a Unix socket. Like the rest of `sys`, direct libc calls;
//! every `unsafe` block says why it is sound.

use std::io;
use std::os::fd::RawFd;

use super::check;

/// Capabilities by number (linux/capability.h).
pub const CAP_NET_BIND_SERVICE: u32 = 10;
pub const CAP_NET_ADMIN: u32 = 12;
pub const CAP_NET_RAW: u32 = 13;
const CAP_SETPCAP: u32 = 8;

/// What flowsec keeps: routes, nftables, TUN, SO_MARK and
/// SO_RCVBUFFORCE (NET_ADMIN), raw ESP/AH sockets (NET_RAW), UDP 500
/// (NET_BIND_SERVICE). strongSwan's charon keeps the same three.
pub const KEPT: [u32; 3] = [CAP_NET_ADMIN, CAP_NET_RAW, CAP_NET_BIND_SERVICE];

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Keep only [`KEPT`] (of what the process has): in the effective,
/// permitted and inheritable sets, the bounding set (so that `ip` and `nft`,
/// run as root, get no more either) and the ambient set; then set
/// `no_new_privs`, so that nothing executed later can gain privileges
/// (set-user-ID files, file capabilities).
///
/// Capabilities belong to a thread: call this before any other thread
/// starts, and every thread started later inherits the result.
pub fn keep_only_network_capabilities() -> io::Result<()> {
    let wanted: u64 = KEPT.iter().map(|c| 1u64 << c).sum();
    // Dropping from the bounding set needs CAP_SETPCAP (root has it; a
    // process given file capabilities does not, and cannot gain any
    // either once no_new_privs is set).
    let can_bound = effective_capabilities()? & (1u64 << CAP_SETPCAP) != 0;
    for cap in (0..=last_cap()).filter(|_| can_bound) {
        if wanted & (1u64 << cap) == 0 {
            // SAFETY: prctl with integer arguments only. EINVAL for a
            // capability this kernel does not know is harmless.
            let r =
                unsafe { libc::prctl(libc::PR_CAPBSET_DROP, libc::c_ulong::from(cap), 0, 0, 0) };
            if r != 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::EINVAL) {
                    return Err(e);
                }
            }
        }
    }
    // SAFETY: prctl with integer arguments only.
    let _ = unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    let mut data = capget()?;
    for (k, d) in data.iter_mut().enumerate() {
        let keep = (wanted >> (32 * k)) as u32 & d.permitted;
        *d = CapData {
            effective: keep,
            permitted: keep,
            inheritable: 0,
        };
    }
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    // SAFETY: `header` and the two-element `data` array are the layout
    // capset(2) reads for version 3; both live through the call.
    check(unsafe {
        libc::syscall(
            libc::SYS_capset,
            &mut header as *mut CapHeader,
            data.as_ptr(),
        ) as libc::c_int
    })?;
    // SAFETY: prctl with integer arguments only.
    check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })?;
    Ok(())
}

/// The calling thread's effective capabilities, as a bit set.
pub fn effective_capabilities() -> io::Result<u64> {
    let data = capget()?;
    Ok(u64::from(data[0].effective) | (u64::from(data[1].effective) << 32))
}

/// Whether `no_new_privs` is set.
pub fn no_new_privs() -> bool {
    // SAFETY: prctl with integer arguments only.
    unsafe { libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1 }
}

fn capget() -> io::Result<[CapData; 2]> {
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: as in capset: the version-3 layout, both live through the
    // call; the kernel writes two CapData.
    check(unsafe {
        libc::syscall(
            libc::SYS_capget,
            &mut header as *mut CapHeader,
            data.as_mut_ptr(),
        ) as libc::c_int
    })?;
    Ok(data)
}

/// The highest capability number this kernel knows.
fn last_cap() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(40)
        .min(63)
}

/// Run `f` with the process umask set to `mask`, then put it back: a file
/// or socket `f` creates never exists with wider permissions.
pub fn with_umask<T>(mask: libc::mode_t, f: impl FnOnce() -> T) -> T {
    // SAFETY: umask(2) cannot fail.
    let old = unsafe { libc::umask(mask) };
    let out = f();
    // SAFETY: as above.
    unsafe { libc::umask(old) };
    out
}

/// The credentials of the process at the other end of a connected Unix
/// socket (SO_PEERCRED, taken when it connected).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerCred {
    pub pid: i32,
    pub uid: u32,
    pub gid: u32,
}

/// SO_PEERCRED of `fd`.
pub fn peer_cred(fd: RawFd) -> io::Result<PeerCred> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` is a `struct ucred` of `len` bytes, writable, live
    // through the call.
    check(unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    })?;
    Ok(PeerCred {
        pid: cred.pid,
        uid: cred.uid,
        gid: cred.gid,
    })
}

/// chown(2) of `path` to `uid`/`gid` (`u32::MAX` keeps one).
pub fn chown(path: &std::path::Path, uid: u32, gid: u32) -> io::Result<()> {
    std::os::unix::fs::chown(
        path,
        (uid != u32::MAX).then_some(uid),
        (gid != u32::MAX).then_some(gid),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_can_be_read() {
        // Whatever this process has, reading them works and the kept set
        // is the three network capabilities.
        effective_capabilities().unwrap();
        assert_eq!(KEPT.iter().map(|c| 1u64 << c).sum::<u64>(), 0x3400);
    }

    /// The credentials of the other end (this process); the umask of a
    /// socket is checked by the control socket's test (one test touching
    /// the process-wide umask, so that none races another).
    #[test]
    fn peer_credentials_name_the_connecting_process() {
        use std::os::fd::AsRawFd;
        let dir = std::env::temp_dir().join(format!("flowsec-cred-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s");
        let _ = std::fs::remove_file(&path);
        let l = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let c = std::os::unix::net::UnixStream::connect(&path).unwrap();
        let (s, _) = l.accept().unwrap();
        let cred = peer_cred(s.as_raw_fd()).unwrap();
        assert_eq!(cred.pid, std::process::id() as i32);
        drop(c);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
