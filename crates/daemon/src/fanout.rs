//! Raw ESP/AH taken once per packet, whatever the number of workers
//! (issue 34). A raw socket gets a copy of every packet of its protocol,
//! so with one raw socket per worker, each filtered down to its SPIs, the
//! kernel cloned and filtered every packet once per worker. Instead, one
//! packet socket per worker and family forms a fanout group (packet(7),
//! PACKET_FANOUT_CBPF) whose program hands each packet to the socket of
//! its SPI's worker (`crate::steer`).
//!
//! A packet socket sees a packet as it comes off the link, before IP; the
//! kernel then goes on with its own copy. With no ESP/AH module that copy
//! would reach the raw sockets too (twice delivered) or, without them, be
//! answered with ICMP protocol-unreachable. So an nftables table of its
//! own (`inet flowsec_rx_<tun>`) drops, at prerouting before
//! defragmentation (priority -450; conntrack's defrag is -400), exactly
//! the packets the sockets' filter keeps: unfragmented ESP and AH right
//! after the IP header, to one of this host's addresses. Fragments (and
//! IPv6 with extension headers) pass, are reassembled by the kernel and
//! reach the workers' raw sockets as before, which also keep the kernel
//! from sending protocol-unreachable.
//!
//! Consequences an operator sees (docs/CONFIGURATION.md): unfragmented
//! ESP/AH to this host never reaches a later prerouting or input rule,
//! so rules meant for it belong in a `netdev ingress` chain; ESP/AH
//! forwarded through this host is also seen, and counted `unknown_spi`,
//! while the kernel forwards it as before. `flowsec up --esp-receive raw`
//! keeps the raw sockets alone, as does the default (`auto`) with fewer
//! than four workers: there a copy per worker costs little, while a
//! packet taken by a packet socket reaches the worker a few µs later
//! (TCP ping-pong 6–8% slower on 2 workers: docs/BENCHMARKS.md).

use std::os::fd::{AsFd, OwnedFd};

use flowsec_wire::ip::IpVersion;

use crate::steer;
use crate::sys;
use crate::tool::{self, ToolError};

/// The fewest workers `auto` takes raw ESP/AH by the fanout group for.
pub const AUTO_FANOUT: usize = 4;

/// How raw ESP/AH reaches the workers (`flowsec up --esp-receive`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EspReceive {
    /// The fanout group with [`AUTO_FANOUT`] workers or more, else the
    /// raw sockets: with few workers their copies cost little, and a
    /// packet socket's packet reaches its reader a few µs later
    /// (docs/BENCHMARKS.md: TCP ping-pong).
    #[default]
    Auto,
    /// A packet-socket fanout group: each packet once, to its worker.
    Fanout,
    /// A raw socket per worker, each seeing every packet.
    Raw,
}

impl EspReceive {
    /// Whether `workers` workers take raw ESP/AH by a fanout group.
    pub fn fanout(self, workers: usize) -> bool {
        match self {
            EspReceive::Auto => workers >= AUTO_FANOUT,
            EspReceive::Fanout => true,
            EspReceive::Raw => false,
        }
    }
}

/// The fanout groups of one daemon (one socket per worker and family) and
/// the nftables table that takes the kernel's copy; the table is removed
/// when dropped.
pub struct Fanout {
    table: String,
    /// Per worker, its sockets (IPv4, then IPv6 where the host has it),
    /// until the worker's descriptors are opened.
    sockets: Vec<Vec<(OwnedFd, IpVersion)>>,
}

/// Why the groups could not be set up (the daemon then runs with raw
/// sockets alone, and says so).
#[derive(Debug)]
pub enum FanoutError {
    Socket(std::io::Error),
    Table(ToolError),
}

impl core::fmt::Display for FanoutError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            FanoutError::Socket(e) => write!(f, "packet socket: {e}"),
            FanoutError::Table(e) => e.fmt(f),
        }
    }
}

impl Fanout {
    /// Open the groups of `workers` sockets (IPv6 too when `v6`), then the
    /// table; nothing is left behind when either fails.
    pub fn open(tun: &str, workers: usize, v6: bool) -> Result<Fanout, FanoutError> {
        let mut families = vec![IpVersion::V4];
        if v6 {
            families.push(IpVersion::V6);
        }
        let mut sockets: Vec<Vec<(OwnedFd, IpVersion)>> =
            (0..workers).map(|_| Vec::new()).collect();
        for version in families {
            let group = open_group(version, workers).map_err(FanoutError::Socket)?;
            for (index, fd) in group.into_iter().enumerate() {
                sockets[index].push((fd, version));
            }
        }
        let table = format!("{}_rx", crate::filter::table_name(tun));
        nft(&ruleset(&table)).map_err(FanoutError::Table)?;
        // What was queued before the group formed may belong to another
        // worker (no SA exists yet; dropped all the same).
        for (fd, _) in sockets.iter().flatten() {
            sys::discard_queued(fd.as_fd());
        }
        Ok(Fanout { table, sockets })
    }

    /// Remove the table a daemon on `tun` left behind (killed before it
    /// could), if any.
    pub fn remove_stale(tun: &str) {
        let table = format!("{}_rx", crate::filter::table_name(tun));
        let _ = nft(&format!("table inet {table}\ndelete table inet {table}\n"));
    }

    /// Worker `index`'s sockets (once).
    pub fn take(&mut self, index: usize) -> Vec<(OwnedFd, IpVersion)> {
        self.sockets
            .get_mut(index)
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// The table's name, for the start-up line.
    pub fn table(&self) -> &str {
        &self.table
    }
}

impl Drop for Fanout {
    fn drop(&mut self) {
        let _ = nft(&format!("delete table inet {}\n", self.table));
    }
}

/// The group of one family: `workers` sockets, joined in worker order.
fn open_group(version: IpVersion, workers: usize) -> std::io::Result<Vec<OwnedFd>> {
    let ethertype = match version {
        IpVersion::V4 => libc::ETH_P_IP,
        IpVersion::V6 => libc::ETH_P_IPV6,
    } as u16;
    let filter = steer::packet_filter(version);
    let mut group = Vec::with_capacity(workers);
    let mut id = None;
    for _ in 0..workers {
        let fd = sys::packet_receiver(ethertype, &filter)?;
        sys::set_recv_buffer(fd.as_fd(), crate::worker::RECV_BUFFER)?;
        id = Some(sys::join_fanout(fd.as_fd(), id)?);
        group.push(fd);
    }
    sys::set_fanout_program(group[0].as_fd(), &steer::fanout_program(version, workers))?;
    Ok(group)
}

/// The table that drops the kernel's copy of what the groups took.
fn ruleset(table: &str) -> String {
    // Created then deleted, so that the delete succeeds when there is no
    // older table, and the new one replaces it in one transaction.
    format!(
        "table inet {table}\n\
         delete table inet {table}\n\
         table inet {table} {{\n\
         \tchain taken {{\n\
         \t\ttype filter hook prerouting priority -450; policy accept;\n\
         \t\tip protocol {{ esp, ah }} ip frag-off & 0x3fff == 0 fib daddr type local drop\n\
         \t\tip6 nexthdr {{ esp, ah }} fib daddr type local drop\n\
         \t}}\n\
         }}\n"
    )
}

fn nft(script: &str) -> Result<(), ToolError> {
    tool::run("nft", &["-f", "-"], Some(script.as_bytes()), "nft")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_drops_what_the_filter_keeps() {
        let r = ruleset("flowsec_t0_rx");
        assert!(r.contains("hook prerouting priority -450"));
        assert!(r.contains(
            "ip protocol { esp, ah } ip frag-off & 0x3fff == 0 fib daddr type local drop"
        ));
        assert!(r.contains("ip6 nexthdr { esp, ah } fib daddr type local drop"));
        // Replaced whole, in one transaction.
        assert!(r.starts_with("table inet flowsec_t0_rx\ndelete table inet flowsec_t0_rx\n"));
    }
}
