//! Questions to the kernel's routing tables (rtnetlink(7)), as `ip route
//! get`, `ip link show` and `ip neigh get` ask them: the route a packet of
//! ours would take, the link it leaves by, and the neighbor's link-layer
//! address. One request and one answer each, on a socket of its own;
//! the messages are built and read here, by the layouts of
//! linux/rtnetlink.h, linux/if_link.h and linux/neighbour.h.

use std::io;
use std::net::IpAddr;
use std::os::fd::AsRawFd;
use std::time::Duration;

use super::{check, socket::socket};

// linux/netlink.h, linux/rtnetlink.h
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const RTM_NEWLINK: u16 = 16;
const RTM_GETLINK: u16 = 18;
const RTM_NEWROUTE: u16 = 24;
const RTM_GETROUTE: u16 = 26;
const RTM_NEWNEIGH: u16 = 28;
const RTM_GETNEIGH: u16 = 30;
const RTA_DST: u16 = 1;
const RTA_SRC: u16 = 2;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_MARK: u16 = 16;
const RTN_UNICAST: u8 = 1;
const IFLA_MTU: u16 = 4;
const NDA_DST: u16 = 1;
const NDA_LLADDR: u16 = 2;
const HEADER: usize = 16;

/// How long an answer is waited for: the kernel answers at once.
const ANSWER_WAIT: Duration = Duration::from_millis(250);

/// Where the kernel would send a packet (`ip route get`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// The outgoing interface.
    pub oif: u32,
    /// The gateway, or `None` when the destination is on the link.
    pub gateway: Option<IpAddr>,
}

/// A link's type (ARPHRD_*) and MTU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    pub kind: u16,
    pub mtu: u32,
}

/// A neighbor entry: its state (NUD_*) and link-layer address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbor {
    pub state: u16,
    pub lladdr: Vec<u8>,
}

/// The unicast route from `src` to `dst` of a packet marked `mark`;
/// `None` when there is none or it is not unicast (local, blackhole...).
pub fn route_get(src: IpAddr, dst: IpAddr, mark: u32) -> io::Result<Option<Route>> {
    let mut m = Message::new(RTM_GETROUTE);
    let bits = host_bits(dst);
    // struct rtmsg: family, dst_len, src_len, tos, table, protocol, scope,
    // type, flags.
    m.bytes(&[family(dst), bits, bits, 0, 0, 0, 0, 0]);
    m.bytes(&0u32.to_ne_bytes());
    m.attr(RTA_DST, &octets(dst));
    if src.is_ipv4() == dst.is_ipv4() {
        m.attr(RTA_SRC, &octets(src));
    }
    m.attr(RTA_MARK, &mark.to_ne_bytes());
    let answer = ask(&m.finish())?;
    Ok(parse_route(&answer))
}

/// Link `index`'s type and MTU.
pub fn link_get(index: u32) -> io::Result<Option<Link>> {
    let mut m = Message::new(RTM_GETLINK);
    // struct ifinfomsg: family, pad, type, index, flags, change.
    m.bytes(&[libc::AF_UNSPEC as u8, 0, 0, 0]);
    m.bytes(&index.to_ne_bytes());
    m.bytes(&[0; 8]);
    let answer = ask(&m.finish())?;
    Ok(parse_link(&answer))
}

/// The neighbor entry of `addr` on link `index` (`ip neigh get`).
pub fn neigh_get(index: u32, addr: IpAddr) -> io::Result<Option<Neighbor>> {
    let mut m = Message::new(RTM_GETNEIGH);
    // struct ndmsg: family, pad1, pad2, ifindex, state, flags, type.
    m.bytes(&[family(addr), 0, 0, 0]);
    m.bytes(&index.to_ne_bytes());
    m.bytes(&[0; 4]);
    m.attr(NDA_DST, &octets(addr));
    let answer = ask(&m.finish())?;
    Ok(parse_neighbor(&answer))
}

fn family(a: IpAddr) -> u8 {
    match a {
        IpAddr::V4(_) => libc::AF_INET as u8,
        IpAddr::V6(_) => libc::AF_INET6 as u8,
    }
}

fn host_bits(a: IpAddr) -> u8 {
    if a.is_ipv4() {
        32
    } else {
        128
    }
}

fn octets(a: IpAddr) -> Vec<u8> {
    match a {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// A request being built: the header, the fixed part, attributes.
struct Message(Vec<u8>);

impl Message {
    fn new(kind: u16) -> Self {
        let mut b = vec![0u8; HEADER];
        b[4..6].copy_from_slice(&kind.to_ne_bytes());
        b[6..8].copy_from_slice(&NLM_F_REQUEST.to_ne_bytes());
        b[8..12].copy_from_slice(&1u32.to_ne_bytes());
        Message(b)
    }

    fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }

    /// One attribute, padded to 4 bytes.
    fn attr(&mut self, kind: u16, value: &[u8]) {
        let len = 4 + value.len();
        self.0.extend_from_slice(&(len as u16).to_ne_bytes());
        self.0.extend_from_slice(&kind.to_ne_bytes());
        self.0.extend_from_slice(value);
        self.0.resize(self.0.len().next_multiple_of(4), 0);
    }

    fn finish(mut self) -> Vec<u8> {
        let len = self.0.len() as u32;
        self.0[0..4].copy_from_slice(&len.to_ne_bytes());
        self.0
    }
}

/// Send `request` on a NETLINK_ROUTE socket of its own and return the
/// answer (the first message).
fn ask(request: &[u8]) -> io::Result<Vec<u8>> {
    let fd = socket(libc::AF_NETLINK, libc::SOCK_RAW, libc::NETLINK_ROUTE)?;
    let wait = libc::timeval {
        tv_sec: 0,
        tv_usec: ANSWER_WAIT.as_micros() as libc::suseconds_t,
    };
    // SAFETY: setsockopt reads a timeval from `wait`, live across the call.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&wait as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    })?;
    // SAFETY: `request` is valid for its length in bytes.
    let sent = unsafe { libc::send(fd.as_raw_fd(), request.as_ptr().cast(), request.len(), 0) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut buf = vec![0u8; 8192];
    // SAFETY: `buf` is valid for its length in writable bytes.
    let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// The type and the body (what follows the header) of the first message
/// of `answer`; `None` for an error answer or a malformed one.
fn body(answer: &[u8], want: u16) -> Option<&[u8]> {
    let len = u32::from_ne_bytes(answer.get(0..4)?.try_into().ok()?) as usize;
    let kind = u16::from_ne_bytes(answer.get(4..6)?.try_into().ok()?);
    if kind == NLMSG_ERROR || kind != want {
        return None;
    }
    answer.get(HEADER..len.min(answer.len()))
}

/// The attributes that follow a fixed part of `fixed` bytes.
fn attrs(body: &[u8], fixed: usize) -> impl Iterator<Item = (u16, &[u8])> {
    let mut rest = body.get(fixed..).unwrap_or(&[]);
    std::iter::from_fn(move || {
        let len = usize::from(u16::from_ne_bytes(rest.get(0..2)?.try_into().ok()?));
        let kind = u16::from_ne_bytes(rest.get(2..4)?.try_into().ok()?);
        let value = rest.get(4..len)?;
        rest = rest.get(len.next_multiple_of(4)..).unwrap_or(&[]);
        Some((kind & 0x3fff, value))
    })
}

fn u32_of(v: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(v.get(0..4)?.try_into().ok()?))
}

fn addr_of(v: &[u8]) -> Option<IpAddr> {
    match v.len() {
        4 => Some(IpAddr::from(<[u8; 4]>::try_from(v).ok()?)),
        16 => Some(IpAddr::from(<[u8; 16]>::try_from(v).ok()?)),
        _ => None,
    }
}

fn parse_route(answer: &[u8]) -> Option<Route> {
    let b = body(answer, RTM_NEWROUTE)?;
    // rtm_type is the eighth byte of struct rtmsg (12 bytes).
    if *b.get(7)? != RTN_UNICAST {
        return None;
    }
    let (mut oif, mut gateway) = (None, None);
    for (kind, v) in attrs(b, 12) {
        match kind {
            RTA_OIF => oif = u32_of(v),
            RTA_GATEWAY => gateway = Some(addr_of(v)?),
            _ => {}
        }
    }
    Some(Route { oif: oif?, gateway })
}

fn parse_link(answer: &[u8]) -> Option<Link> {
    let b = body(answer, RTM_NEWLINK)?;
    let kind = u16::from_ne_bytes(b.get(2..4)?.try_into().ok()?);
    let mtu = attrs(b, 16)
        .find(|(k, _)| *k == IFLA_MTU)
        .and_then(|(_, v)| u32_of(v))?;
    Some(Link { kind, mtu })
}

fn parse_neighbor(answer: &[u8]) -> Option<Neighbor> {
    let b = body(answer, RTM_NEWNEIGH)?;
    let state = u16::from_ne_bytes(b.get(8..10)?.try_into().ok()?);
    let lladdr = attrs(b, 12).find(|(k, _)| *k == NDA_LLADDR)?.1.to_vec();
    Some(Neighbor { state, lladdr })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message as the kernel writes one: header, fixed part, attributes.
    fn answer(kind: u16, fixed: &[u8], attrs: &[(u16, &[u8])]) -> Vec<u8> {
        let mut m = Message::new(kind);
        m.bytes(fixed);
        for (k, v) in attrs {
            m.attr(*k, v);
        }
        m.finish()
    }

    #[test]
    fn a_route_answer_names_its_interface_and_gateway() {
        let unicast = [2, 32, 0, 0, 254, 2, 0, RTN_UNICAST, 0, 0, 0, 0];
        let gw = [192u8, 0, 2, 254];
        let a = answer(
            RTM_NEWROUTE,
            &unicast,
            &[
                (RTA_DST, &[192, 0, 2, 2]),
                (RTA_GATEWAY, &gw),
                (RTA_OIF, &7u32.to_ne_bytes()),
            ],
        );
        assert_eq!(
            parse_route(&a),
            Some(Route {
                oif: 7,
                gateway: Some("192.0.2.254".parse().unwrap())
            })
        );
        let a = answer(RTM_NEWROUTE, &unicast, &[(RTA_OIF, &3u32.to_ne_bytes())]);
        assert_eq!(
            parse_route(&a),
            Some(Route {
                oif: 3,
                gateway: None
            })
        );
        // Local, no interface, an error, truncated: none.
        let mut local = unicast;
        local[7] = 2;
        assert_eq!(
            parse_route(&answer(
                RTM_NEWROUTE,
                &local,
                &[(RTA_OIF, &1u32.to_ne_bytes())]
            )),
            None
        );
        assert_eq!(parse_route(&answer(RTM_NEWROUTE, &unicast, &[])), None);
        assert_eq!(
            parse_route(&answer(NLMSG_ERROR, &(-101i32).to_ne_bytes(), &[])),
            None
        );
        for cut in 0..a.len() {
            let _ = parse_route(&a[..cut]);
        }
    }

    #[test]
    fn link_and_neighbor_answers_are_read() {
        let mut fixed = [0u8; 16];
        fixed[2..4].copy_from_slice(&1u16.to_ne_bytes());
        let a = answer(
            RTM_NEWLINK,
            &fixed,
            &[(3, b"eth0\0"), (IFLA_MTU, &1500u32.to_ne_bytes())],
        );
        assert_eq!(parse_link(&a), Some(Link { kind: 1, mtu: 1500 }));
        let mut fixed = [0u8; 12];
        fixed[8..10].copy_from_slice(&0x02u16.to_ne_bytes());
        let mac = [2u8, 0, 0, 0, 0, 9];
        let a = answer(
            RTM_NEWNEIGH,
            &fixed,
            &[(NDA_DST, &[192, 0, 2, 2]), (NDA_LLADDR, &mac)],
        );
        assert_eq!(
            parse_neighbor(&a),
            Some(Neighbor {
                state: 2,
                lladdr: mac.to_vec()
            })
        );
        assert_eq!(
            parse_neighbor(&answer(RTM_NEWNEIGH, &fixed, &[(NDA_DST, &[192, 0, 2, 2])])),
            None
        );
        for cut in 0..a.len() {
            let _ = parse_neighbor(&a[..cut]);
        }
    }

    /// The loopback: a link of type ARPHRD_LOOPBACK (772) every namespace
    /// has, and a route to 127.0.0.1 that is local, not unicast.
    #[test]
    fn the_kernel_answers() {
        let lo = link_get(1).unwrap();
        assert_eq!(lo.map(|l| l.kind), Some(772));
        let home: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(route_get(home, home, 0).unwrap(), None);
    }
}
