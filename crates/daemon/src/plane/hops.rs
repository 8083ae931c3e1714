//! The control plane's side of `crate::nexthop`: once a second, when the
//! SAs change, and soon after the kernel reports a link, neighbor or route
//! change, where the raw IP packets of each SA's pair of outer addresses
//! leave, handed to every worker's sender.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use super::Plane;
use crate::apply::WorkerChange;
use crate::nexthop::NextHops;
use crate::routes::BYPASS_MARK;
use crate::sys;

/// The pairs' hops, and the kernel's reports of link, neighbor and route
/// changes that make them stale (without the reports, a changed
/// neighbor's address would be used for up to a second).
#[derive(Debug, Default)]
pub(super) struct HopWatch {
    hops: NextHops,
    events: Option<OwnedFd>,
}

impl HopWatch {
    /// With `--esp-send link`; where the kernel's reports cannot be had,
    /// the hops are asked about once a second alone.
    pub(super) fn open() -> HopWatch {
        let events = sys::netlink::neighbor_events()
            .inspect_err(|e| {
                tracing::warn!(target: "net", "no neighbor change reports ({e}): link hops are checked once a second")
            })
            .ok();
        HopWatch {
            hops: NextHops::default(),
            events,
        }
    }

    /// The descriptor to poll for the kernel's reports.
    pub(super) fn fd(&self) -> Option<i32> {
        self.events.as_ref().map(AsRawFd::as_raw_fd)
    }
}

impl Plane {
    /// The kernel's reports are readable: read them all, and ask about
    /// the pairs again soon.
    pub(super) fn next_hop_events(&mut self) {
        if let Some(w) = self.hops.as_mut() {
            if w.events
                .as_ref()
                .is_some_and(|fd| sys::netlink::drain_events(fd.as_fd()))
            {
                w.hops.kernel_changed();
            }
        }
    }

    /// With `--esp-send link`: ask the kernel again about the pairs of
    /// the SAs sent as raw IP (not in UDP), and tell the workers what
    /// changed.
    pub(super) fn watch_next_hops(&mut self) {
        let Some(HopWatch { hops, .. }) = self.hops.as_mut() else {
            return;
        };
        let now = self.start.elapsed();
        let pairs = self
            .model
            .sas
            .values()
            .filter(|c| c.encap.is_none())
            .map(|c| (c.src, c.dst));
        // The mark of flowsec's own packets: their route, not the tunnel's.
        let changed = hops.refresh(pairs, BYPASS_MARK, now);
        if changed.is_empty() {
            return;
        }
        for ((src, dst), hop) in &changed {
            match hop {
                Some(h) => {
                    tracing::debug!(target: "net", "raw IP {src} -> {dst}: straight to the neighbor on link {} (MTU {})", h.ifindex, h.mtu)
                }
                None => tracing::debug!(target: "net", "raw IP {src} -> {dst}: by the raw socket"),
            }
        }
        let lists = (0..self.workers.len())
            .map(|_| {
                changed
                    .iter()
                    .map(|(pair, hop)| WorkerChange::NextHop(*pair, *hop))
                    .collect()
            })
            .collect();
        self.workers.apply(lists);
    }
}
