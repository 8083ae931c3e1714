//! Sending raw ESP/AH without a route lookup per packet (issue 34): the
//! control plane asks the kernel once a second, and soon after the kernel
//! reports a link, neighbor or route change, for each (source,
//! destination) pair of its SAs sent as raw IP, which link and neighbor a
//! packet would leave by, as `ip route get` and `ip neigh` would answer;
//! the workers then hand those packets to a packet socket on that link,
//! addressed to that neighbor (`crate::send`). The kernel's IP_HDRINCL
//! send made and freed a route for every packet to an on-link peer
//! (FLOWI_FLAG_KNOWN_NH is never cached) and walked the IP output path;
//! a packet socket goes straight to the device's queue, where qdiscs and
//! tcpdump see it as before.
//!
//! Only what the kernel would do: the route of a packet with flowsec's
//! mark from that source, an Ethernet link, a neighbor entry in a usable
//! state. Anything else (no entry yet, a failed one, a tunnel device, a
//! local or blackhole route) is sent by the raw socket, and the kernel
//! resolves it as ever. Once a second each worker also sends one packet
//! per pair the kernel's way, so that the neighbor entry keeps being
//! used, and probed if the peer stops answering (linux/neighbour.h NUD).
//! Output netfilter rules no longer see these packets: only the kernel's
//! device queue and its taps do (docs/CLI.md `--esp-send`), which is why
//! it is opt-in (`--esp-send link`, [`EspSend`]): a default-drop output
//! firewall or an SNAT of ESP would silently not apply.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::time::Duration;

use crate::sys::rtnl;

/// How raw IP packets leave (`flowsec up --esp-send`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EspSend {
    /// Straight to the neighbor on its link where the kernel's tables
    /// name one, else the raw socket. Not the default: netfilter's output
    /// and postrouting hooks do not see these packets. (The rare losses
    /// across per-CPU Child SA rekeys once blamed on it were the
    /// receiving host's socket, with and without it: issue 34's note.)
    Link,
    /// Always the raw socket (IP_HDRINCL), through IP output.
    #[default]
    Raw,
}

/// How often the pairs are asked about again.
pub const REFRESH: Duration = Duration::from_secs(1);
/// After the kernel said a link, neighbor or route changed, the pairs are
/// asked about again at once, but not more often than this (a busy
/// router's neighbor table changes all the time).
pub const EVENT_GAP: Duration = Duration::from_millis(100);
/// linux/if_arp.h ARPHRD_ETHER: links with 6-byte link-layer addresses.
const ARPHRD_ETHER: u16 = 1;
/// linux/neighbour.h: entries whose address may be used (REACHABLE,
/// STALE, DELAY, PROBE, PERMANENT).
const NUD_USABLE: u16 = 0x02 | 0x04 | 0x08 | 0x10 | 0x80;

/// Where a packet from one of our addresses to a peer leaves: the link,
/// the neighbor's address on it, and the link's MTU (a longer packet goes
/// the kernel's way, which refuses or fragments it as it would).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkHop {
    pub ifindex: u32,
    pub mac: [u8; 6],
    pub mtu: u32,
}

/// A (source, destination) pair of outer addresses.
pub type Pair = (IpAddr, IpAddr);

/// What the kernel said about each pair, last time it was asked.
#[derive(Debug, Default)]
pub struct NextHops {
    known: BTreeMap<Pair, Option<LinkHop>>,
    asked: Option<Duration>,
    /// The kernel said something changed since `asked`.
    stale: bool,
}

impl NextHops {
    /// The kernel reported a link, neighbor or route change: the next
    /// [`NextHops::refresh`] asks again (after [`EVENT_GAP`]).
    pub fn kernel_changed(&mut self) {
        self.stale = true;
    }

    /// With `pairs` the pairs of the SAs sent as raw IP now: when a
    /// second has passed, the kernel reported a change or the pairs
    /// changed, ask the kernel again; the pairs whose answer changed
    /// (`None`: send them the kernel's way).
    pub fn refresh(
        &mut self,
        pairs: impl IntoIterator<Item = Pair>,
        mark: u32,
        now: Duration,
    ) -> Vec<(Pair, Option<LinkHop>)> {
        // A set: the per-resource SAs of a policy share their pair.
        let pairs: BTreeSet<Pair> = pairs.into_iter().collect();
        let same =
            pairs.len() == self.known.len() && pairs.iter().all(|p| self.known.contains_key(p));
        let due = self
            .asked
            .is_none_or(|t| now >= t + REFRESH || (self.stale && now >= t + EVENT_GAP));
        if same && !due {
            return Vec::new();
        }
        self.asked = Some(now);
        self.stale = false;
        let mut changed = Vec::new();
        let mut next = BTreeMap::new();
        for pair in pairs {
            let hop = resolve(pair, mark);
            if self.known.get(&pair) != Some(&hop)
                && (hop.is_some() || self.known.contains_key(&pair))
            {
                changed.push((pair, hop));
            }
            next.insert(pair, hop);
        }
        // Pairs no SA has any more: forgotten by the workers too.
        for (pair, hop) in &self.known {
            if hop.is_some() && !next.contains_key(pair) {
                changed.push((*pair, None));
            }
        }
        self.known = next;
        changed
    }
}

/// The link hop of `pair`, or `None` for the kernel's way.
fn resolve((src, dst): Pair, mark: u32) -> Option<LinkHop> {
    let route = rtnl::route_get(src, dst, mark).ok()??;
    let link = rtnl::link_get(route.oif).ok()??;
    if link.kind != ARPHRD_ETHER {
        return None;
    }
    let neighbor = rtnl::neigh_get(route.oif, route.gateway.unwrap_or(dst)).ok()??;
    usable(&neighbor).map(|mac| LinkHop {
        ifindex: route.oif,
        mac,
        mtu: link.mtu,
    })
}

/// The neighbor's address, if its entry may be used.
fn usable(n: &rtnl::Neighbor) -> Option<[u8; 6]> {
    if n.state & NUD_USABLE == 0 {
        return None;
    }
    n.lladdr.as_slice().try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_usable_entries_with_ethernet_addresses() {
        let mac = vec![2, 0, 0, 0, 0, 1];
        for state in [0x02, 0x04, 0x08, 0x10, 0x80] {
            let n = rtnl::Neighbor {
                state,
                lladdr: mac.clone(),
            };
            assert_eq!(usable(&n), Some([2, 0, 0, 0, 0, 1]), "{state:#x}");
        }
        // INCOMPLETE, FAILED, NOARP, NONE.
        for state in [0x01, 0x20, 0x40, 0x00] {
            let n = rtnl::Neighbor {
                state,
                lladdr: mac.clone(),
            };
            assert_eq!(usable(&n), None, "{state:#x}");
        }
        let n = rtnl::Neighbor {
            state: 0x02,
            lladdr: vec![1, 2, 3, 4],
        };
        assert_eq!(usable(&n), None);
    }

    /// Pairs the kernel cannot route this way (loopback) are never sent
    /// to the workers; asked again only after a second, or when the
    /// pairs change.
    #[test]
    fn loopback_pairs_stay_the_kernels() {
        let home: IpAddr = "127.0.0.1".parse().unwrap();
        let mut hops = NextHops::default();
        assert!(hops.refresh([(home, home)], 0, Duration::ZERO).is_empty());
        assert_eq!(hops.known.get(&(home, home)), Some(&None));
        assert!(hops
            .refresh([(home, home)], 0, Duration::from_millis(10))
            .is_empty());
        assert_eq!(hops.asked, Some(Duration::ZERO));
        // Per-resource SAs share a pair: the same set, not asked again.
        let twice = [(home, home), (home, home)];
        assert!(hops.refresh(twice, 0, Duration::from_millis(15)).is_empty());
        assert_eq!(hops.asked, Some(Duration::ZERO));
        assert!(hops.refresh([], 0, Duration::from_millis(20)).is_empty());
        assert_eq!(hops.asked, Some(Duration::from_millis(20)));
    }

    /// A change the kernel reported is asked about at once, but no sooner
    /// than EVENT_GAP after the last question, and only once.
    #[test]
    fn a_reported_change_is_asked_about_soon() {
        let home: IpAddr = "127.0.0.1".parse().unwrap();
        let ms = Duration::from_millis;
        let mut hops = NextHops::default();
        hops.refresh([(home, home)], 0, ms(0));
        hops.kernel_changed();
        hops.refresh([(home, home)], 0, EVENT_GAP - ms(1));
        assert_eq!(hops.asked, Some(ms(0)), "within the gap: not yet");
        hops.refresh([(home, home)], 0, EVENT_GAP);
        assert_eq!(hops.asked, Some(EVENT_GAP), "after the gap: asked");
        hops.refresh([(home, home)], 0, EVENT_GAP * 3);
        assert_eq!(hops.asked, Some(EVENT_GAP), "once per report");
    }
}
