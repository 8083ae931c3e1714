//! The worker loop: poll the TUN device and the raw ESP/AH sockets, and run
//! each packet through the sans-I/O core. This is where the clock is read
//! (the core takes `now` as an argument).
//!
//! One worker, draining up to [`BATCH`] packets per source per wake-up.

use core::fmt;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use flowsec_crypto::Provider;
use flowsec_ipsec::buf::{DEFAULT_HEADROOM, DEFAULT_TAILROOM};
use flowsec_ipsec::process::{self, Inbound};
use flowsec_ipsec::{Action, Direction, DropCounters, DropReason, Flow, PacketBuf};
use flowsec_wire::iana::IpProtocol;
use flowsec_wire::ip::IpVersion;
use flowsec_wire::ipv4::{self, Ipv4Packet, Ipv4Repr};
use flowsec_wire::ipv6::{self, Ipv6Packet, Ipv6Repr};
use flowsec_wire::udp::{self, UdpPacket, UdpRepr};

use crate::apply::{load_setkey, ConfigError, Databases};
use crate::control::{Control, Status};
use crate::routes::{Routes, BYPASS_MARK};
use crate::sys;

/// Packets taken from one source before looking at the others.
const BATCH: usize = 64;
/// The UDP port of ESP in UDP (RFC 3948 §2.1; the IKE NAT-T port).
const NAT_T_PORT: u16 = 4500;
/// Receive buffer of the raw sockets: room for a burst of ~5000 MTU-sized
/// packets while the worker is busy with the TUN side.
const RECV_BUFFER: usize = 8 << 20;
/// How long a poll waits before checking for shutdown.
const POLL_MS: i32 = 200;

/// What `flowsec up` was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// TUN device name.
    pub tun: String,
    /// Manual keys and policies in setkey syntax.
    pub setkey: PathBuf,
    /// MTU of the TUN device: the path MTU less the IPsec overhead.
    pub mtu: u16,
    /// The control socket.
    pub socket: PathBuf,
}

/// Counters of one run, printed at shutdown.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    /// Packets protected and sent.
    pub sent: u64,
    /// Packets received, verified and delivered to the TUN device.
    pub delivered: u64,
    /// Packets from the TUN device that no policy covers.
    pub no_policy: u64,
    /// Packets from the TUN device that a BYPASS policy covers (they
    /// should not have been routed into it).
    pub bypass_on_tun: u64,
    /// Outbound packets whose outer family this host cannot send.
    pub unsupported_outer: u64,
    /// Send or TUN-write errors.
    pub io_errors: u64,
    /// Drops by named reason.
    pub drops: DropCounters,
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} sent, {} delivered", self.sent, self.delivered)?;
        for (name, n) in [
            ("no_policy", self.no_policy),
            ("bypass_on_tun", self.bypass_on_tun),
            ("unsupported_outer", self.unsupported_outer),
            ("io_errors", self.io_errors),
        ] {
            if n != 0 {
                write!(f, ", {name}={n}")?;
            }
        }
        for (reason, n) in self.drops.nonzero() {
            write!(f, ", {reason}={n}")?;
        }
        Ok(())
    }
}

/// Why the daemon could not run.
#[derive(Debug)]
pub enum RunError {
    /// The configuration was refused (nothing was set up).
    Config(ConfigError),
    /// A device, socket or route could not be set up.
    Setup(String),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Config(e) => e.fmt(f),
            RunError::Setup(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for RunError {}

/// The descriptors of one worker.
struct Io {
    tun: OwnedFd,
    /// Raw receivers: (socket, IP version, protocol).
    raw: Vec<(OwnedFd, IpVersion, u8)>,
    /// UDP 4500, when an SA is UDP-encapsulated (RFC 3948).
    udp: Option<OwnedFd>,
    send4: OwnedFd,
    /// `None` where the host has no IPv6.
    send6: Option<OwnedFd>,
}

impl Io {
    fn open(opts: &Options, db: &Databases) -> Result<Io, RunError> {
        let setup = |what: &str, e: std::io::Error| RunError::Setup(format!("{what}: {e}"));
        let mut raw = Vec::new();
        for protocol in [IpProtocol::ESP.0, IpProtocol::AH.0] {
            let fd = sys::raw_receiver_v4(protocol).map_err(|e| setup("raw IPv4 socket", e))?;
            raw.push((fd, IpVersion::V4, protocol));
        }
        // IPv6 is optional: a host without it runs IPv4 only.
        let send6 = match sys::raw_sender_v6() {
            Ok(fd) => {
                for protocol in [IpProtocol::ESP.0, IpProtocol::AH.0] {
                    let fd =
                        sys::raw_receiver_v6(protocol).map_err(|e| setup("raw IPv6 socket", e))?;
                    raw.push((fd, IpVersion::V6, protocol));
                }
                Some(fd)
            }
            Err(e) => {
                eprintln!("flowsec: warning: no IPv6 ({e}): IPv4 outer headers only");
                None
            }
        };
        let udp = match db.sad.iter().any(|sa| sa.encap().is_some()) {
            true => {
                Some(sys::udp_encap_socket_v4(NAT_T_PORT).map_err(|e| setup("UDP port 4500", e))?)
            }
            false => None,
        };
        for fd in raw.iter().map(|(fd, _, _)| fd).chain(udp.as_ref()) {
            sys::set_recv_buffer(fd.as_raw_fd(), RECV_BUFFER)
                .map_err(|e| setup("receive buffer", e))?;
        }
        let send4 = sys::raw_sender_v4().map_err(|e| setup("raw send socket", e))?;
        // Marked, so that transport-mode routes into the TUN pass them by.
        for fd in [Some(&send4), send6.as_ref(), udp.as_ref()]
            .into_iter()
            .flatten()
        {
            sys::set_mark(fd.as_raw_fd(), BYPASS_MARK).map_err(|e| setup("SO_MARK", e))?;
        }
        Ok(Io {
            tun: sys::open_tun(&opts.tun, false)
                .map_err(|e| setup(&format!("TUN device {}", opts.tun), e))?,
            raw,
            udp,
            send4,
            send6,
        })
    }
}

/// Run until SIGINT or SIGTERM; returns the counters.
pub fn run(opts: &Options) -> Result<Stats, RunError> {
    // First, so that a signal during set-up still ends in the clean-up
    // below (the flag is checked before the loop's first wait).
    let shutdown = sys::catch_shutdown_signals();
    let start = Instant::now();
    let provider = Provider::fastest();
    let mut db = load_setkey(&opts.setkey, &provider, Duration::ZERO).map_err(RunError::Config)?;
    let io = Io::open(opts, &db)?;
    let control = Control::bind(&opts.socket).map_err(RunError::Setup)?;
    let routes = Routes::install(&opts.tun, opts.mtu, &db.spd).map_err(RunError::Setup)?;
    let routed: Vec<String> = routes.prefixes().map(|p| p.to_string()).collect();
    eprintln!(
        "flowsec: up (tun {}, {} SAs, {} policies, routes via tun: {})",
        opts.tun,
        db.sad.len(),
        db.spd.len(),
        if routed.is_empty() {
            "none".to_string()
        } else {
            routed.join(" ")
        }
    );
    let mut stats = Stats::default();
    let mut buf = PacketBuf::new(
        DEFAULT_HEADROOM + 65_536 + DEFAULT_TAILROOM,
        DEFAULT_HEADROOM,
    );
    // Poll order: the TUN, the raw receivers, then UDP 4500.
    let mut fds = vec![io.tun.as_raw_fd()];
    fds.extend(io.raw.iter().map(|(fd, _, _)| fd.as_raw_fd()));
    fds.extend(io.udp.as_ref().map(|fd| fd.as_raw_fd()));
    let control_at = fds.len();
    fds.push(control.listener().as_raw_fd());
    let mut ready = vec![false; fds.len()];
    while !shutdown.load(Ordering::SeqCst) {
        if let Err(e) = sys::poll_readable(&fds, POLL_MS, &mut ready) {
            drop(routes);
            return Err(RunError::Setup(format!("poll: {e}")));
        }
        let mut inbound =
            |buf: &mut PacketBuf| inbound(&mut db, buf, &io, start.elapsed(), &mut stats);
        for (k, (fd, version, protocol)) in io.raw.iter().enumerate() {
            if ready[1 + k] {
                drain_raw(fd.as_raw_fd(), *version, *protocol, &mut buf, &mut inbound);
            }
        }
        if let (Some(udp), Some(true)) = (&io.udp, ready.get(1 + io.raw.len())) {
            drain_udp(udp.as_raw_fd(), &mut buf, &mut inbound);
        }
        if ready[0] {
            let read = drain(io.tun.as_raw_fd(), &mut buf, |buf| {
                outbound(&mut db, buf, &io, start.elapsed(), &mut stats)
            });
            if let Err(e) = read {
                drop(routes);
                return Err(RunError::Setup(format!("TUN device {}: {e}", opts.tun)));
            }
        }
        if ready[control_at] {
            control.serve(&Status {
                tun: &opts.tun,
                now: start.elapsed(),
                db: &db,
                stats: &stats,
            });
        }
    }
    drop(routes);
    Ok(stats)
}

/// Like [`drain`] for a raw receiver. IPv4 raw sockets hand over the whole
/// packet; IPv6 ones only what follows the header, which is rebuilt in the
/// headroom from the source and PKTINFO destination (extension headers the
/// packet had are not seen, and AH over them cannot verify: not supported).
fn drain_raw(
    fd: i32,
    version: IpVersion,
    protocol: u8,
    buf: &mut PacketBuf,
    f: &mut impl FnMut(&mut PacketBuf),
) {
    if version == IpVersion::V4 {
        // A raw socket's errors are transient (queued ICMP errors): keep going.
        let _ = drain(fd, buf, f);
        return;
    }
    for _ in 0..BATCH {
        buf.reset(DEFAULT_HEADROOM);
        let spare = buf.spare_mut();
        let limit = (spare.len() - DEFAULT_TAILROOM).min(usize::from(u16::MAX));
        let Ok(Some((n, src, dst))) = sys::recv_raw_v6(fd, &mut spare[..limit]) else {
            return;
        };
        // Cannot fail: n is at most the spare room, and the headroom holds 40 bytes.
        let _ = buf.set_len(n);
        let Ok(hdr) = buf.prepend(ipv6::HEADER_LEN) else {
            return;
        };
        let repr = Ipv6Repr {
            src_addr: src,
            dst_addr: dst,
            next_header: IpProtocol(protocol),
            payload_len: n,
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0,
        };
        repr.emit(&mut Ipv6Packet::new_unchecked(hdr));
        f(buf);
    }
}

/// Read up to [`BATCH`] packets from `fd` into `buf`, handing each to `f`.
/// A read error other than "nothing waiting" is returned: on the TUN it
/// means the device is gone, and polling on would spin.
fn drain(fd: i32, buf: &mut PacketBuf, mut f: impl FnMut(&mut PacketBuf)) -> std::io::Result<()> {
    for _ in 0..BATCH {
        buf.reset(DEFAULT_HEADROOM);
        let spare = buf.spare_mut();
        let limit = spare.len() - DEFAULT_TAILROOM;
        match sys::read(fd, &mut spare[..limit])? {
            Some(n) if n > 0 => {
                // Cannot fail: n is at most the spare room.
                let _ = buf.set_len(n);
                f(buf);
            }
            _ => return Ok(()),
        }
    }
    Ok(())
}

/// Like [`drain`] for the UDP encapsulation socket, which hands over only
/// the UDP payload: the IPv4 and UDP headers the core expects are rebuilt
/// in the headroom from the sender's and our address (the UDP checksum is
/// zero, as RFC 3948 §2.1 allows over IPv4).
fn drain_udp(fd: i32, buf: &mut PacketBuf, f: &mut impl FnMut(&mut PacketBuf)) {
    const HEADERS: usize = ipv4::HEADER_LEN + udp::HEADER_LEN;
    for _ in 0..BATCH {
        buf.reset(DEFAULT_HEADROOM);
        let spare = buf.spare_mut();
        let limit = (spare.len() - DEFAULT_TAILROOM).min(usize::from(u16::MAX) - HEADERS);
        let Ok(Some((n, src, dst))) = sys::recv_udp_v4(fd, &mut spare[..limit]) else {
            return;
        };
        // Cannot fail: n is at most the spare room, and the headroom holds 28 bytes.
        let _ = buf.set_len(n);
        let Ok(hdr) = buf.prepend(HEADERS) else {
            return;
        };
        let (ip, rest) = hdr.split_at_mut(ipv4::HEADER_LEN);
        let repr = Ipv4Repr {
            src_addr: *src.ip(),
            dst_addr: dst,
            next_header: IpProtocol::UDP,
            payload_len: udp::HEADER_LEN + n,
            hop_limit: 64,
            dscp_ecn: 0,
            dont_frag: false,
        };
        repr.emit(&mut Ipv4Packet::new_unchecked(ip));
        UdpRepr {
            src_port: src.port(),
            dst_port: NAT_T_PORT,
            payload_len: n,
        }
        .emit(&mut UdpPacket::new_unchecked(rest));
        f(buf);
    }
}

fn outbound(db: &mut Databases, buf: &mut PacketBuf, io: &Io, now: Duration, stats: &mut Stats) {
    let flow = match Flow::of_packet(buf.as_slice()) {
        Ok(flow) => flow,
        Err(reason) => return stats.drops.count(reason),
    };
    let Some(policy) = db.spd.lookup(Direction::Out, &flow) else {
        stats.no_policy += 1;
        return;
    };
    let templates = match &policy.action {
        Action::Protect(templates) => templates,
        Action::Bypass => {
            stats.bypass_on_tun += 1;
            return;
        }
        Action::Discard => return stats.drops.count(DropReason::PolicyDiscard),
    };
    let sealed = process::resolve(&db.sad, templates, &flow, now)
        .and_then(|bundle| process::outbound(&mut db.sad, &bundle, buf, now));
    if let Err(reason) = sealed {
        return stats.drops.count(reason);
    }
    let packet = buf.as_slice();
    let sent = match (packet.first().map(|b| b >> 4), &io.send6) {
        (Some(4), _) => {
            let dst = Ipv4Packet::new_unchecked(packet).dst_addr();
            sys::send_v4(io.send4.as_raw_fd(), packet, dst)
        }
        (Some(6), Some(send6)) => {
            let dst = Ipv6Packet::new_unchecked(packet).dst_addr();
            sys::send_v6(send6.as_raw_fd(), packet, dst)
        }
        _ => {
            stats.unsupported_outer += 1;
            return;
        }
    };
    match sent {
        Ok(_) => stats.sent += 1,
        Err(_) => stats.io_errors += 1,
    }
}

fn inbound(db: &mut Databases, buf: &mut PacketBuf, io: &Io, now: Duration, stats: &mut Stats) {
    let applied = match process::inbound(&mut db.sad, buf, now) {
        Ok(Inbound::Decapsulated(applied)) => applied,
        // Not on a raw ESP/AH socket; IKE comes with the IKE issue.
        Ok(Inbound::NatKeepalive | Inbound::Ike) => return,
        Err(reason) => return stats.drops.count(reason),
    };
    let flow = match Flow::of_packet(buf.as_slice()) {
        Ok(flow) => flow,
        Err(_) => return stats.drops.count(DropReason::BadInnerPacket),
    };
    // A gateway forwards what it decapsulates; a host keeps it.
    let Some(policy) = db
        .spd
        .lookup(Direction::Fwd, &flow)
        .or_else(|| db.spd.lookup(Direction::In, &flow))
    else {
        return stats.drops.count(DropReason::NoInboundPolicy);
    };
    if let Err(reason) = process::check_inbound(&db.sad, Some(policy), &applied) {
        return stats.drops.count(reason);
    }
    match sys::write(io.tun.as_raw_fd(), buf.as_slice()) {
        Ok(_) => stats.delivered += 1,
        Err(_) => stats.io_errors += 1,
    }
}
