//! The control plane's side of `crate::nexthop`: once a second, and when
//! the SAs change, where the raw IP packets of each SA's pair of outer
//! addresses leave, handed to every worker's sender.

use super::Plane;
use crate::apply::WorkerChange;
use crate::routes::BYPASS_MARK;

impl Plane {
    /// With `--esp-send link`: ask the kernel again about the pairs of
    /// the SAs sent as raw IP (not in UDP), and tell the workers what
    /// changed.
    pub(super) fn watch_next_hops(&mut self) {
        let Some(hops) = self.hops.as_mut() else {
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
