//! The TUN device: a queue of it opened (multi-queue, with or without the
//! virtio header of offloads).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::check;

/// `_IOW('T', 202, int)` from linux/if_tun.h (libc has it per architecture).
const TUNSETIFF: libc::c_ulong = libc::TUNSETIFF as libc::c_ulong;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;
const IFF_MULTI_QUEUE: libc::c_short = 0x0100;
const IFF_VNET_HDR: libc::c_short = 0x4000;
/// `_IOW('T', 208, unsigned int)`.
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;
/// Offloads the kernel may use towards us: partial checksums, TCP
/// segmentation over IPv4 and IPv6 (linux/if_tun.h).
const TUN_F_CSUM: libc::c_uint = 0x01;
const TUN_F_TSO4: libc::c_uint = 0x02;
const TUN_F_TSO6: libc::c_uint = 0x04;
const TUN_F_TSO_ECN: libc::c_uint = 0x08;
/// UDP segmentation over IPv4 and IPv6 (Linux 6.2; older kernels refuse
/// the ioctl with these bits).
const TUN_F_USO4: libc::c_uint = 0x20;
const TUN_F_USO6: libc::c_uint = 0x40;
/// `struct ifreq` as TUNSETIFF reads it: the name, then the flags.
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

// The kernel's `struct ifreq` is 40 bytes on 64-bit Linux.
const _: () = assert!(std::mem::size_of::<IfReq>() == 40);

/// A queue of the TUN device.
#[derive(Debug)]
pub struct TunQueue {
    pub fd: OwnedFd,
    /// The kernel takes and gives UDP super-packets too (USO).
    pub uso: bool,
}

/// Open (or attach one more queue to) the TUN device `name`, non-blocking,
/// without the packet-information prefix. With `offload`, each packet
/// comes and goes behind a `struct virtio_net_hdr` and the kernel may send
/// TCP super-packets with partial checksums (see `offload`), and UDP ones
/// where it knows USO.
pub fn open_tun(name: &str, multi_queue: bool, offload: bool) -> io::Result<TunQueue> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains(['/', ' ', '\0']) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad interface name '{name}'"),
        ));
    }
    let path = CString::new("/dev/net/tun").expect("no NUL in a literal");
    // SAFETY: `path` is a valid NUL-terminated string; open has no other
    // preconditions.
    let fd = check(unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: `fd` was just returned by open and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: IFF_TUN | IFF_NO_PI,
        _pad: [0; 22],
    };
    if multi_queue {
        req.flags |= IFF_MULTI_QUEUE;
    }
    if offload {
        req.flags |= IFF_VNET_HDR;
    }
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: TUNSETIFF reads a `struct ifreq`; `req` has its layout (name
    // then flags, 40 bytes) and lives across the call.
    check(unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF, &mut req as *mut IfReq) })?;
    let mut uso = false;
    if offload {
        let tcp = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN;
        let set = |flags: libc::c_uint| {
            // SAFETY: TUNSETOFFLOAD takes its argument by value.
            check(unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETOFFLOAD, flags as libc::c_ulong) })
        };
        uso = set(tcp | TUN_F_USO4 | TUN_F_USO6).is_ok();
        if !uso {
            set(tcp)?;
        }
    }
    Ok(TunQueue { fd, uso })
}
