//! A cache of SPD lookups per flow (issue 17): the SPD is an ordered list
//! (RFC 4301 §4.4.1: the first match decides), so a lookup costs a scan of
//! every policy before the match, and a packet in transit takes up to
//! three (outbound; forward then inbound; the replies' outbound policy for
//! the TUN queue). A flow's packets repeat the same lookups, so each
//! worker's data path keeps an [`SpdCache`] that remembers the answer per
//! (direction, flow). `cargo bench -p flowsec-ipsec --bench lookup`
//! measures both.
//!
//! Exactness: an entry holds the position [`Spd::lookup_at`] gave, and the
//! SPD's [`Spd::generation`] at the time; the whole cache is forgotten
//! when the generation changes (every change of the list, or another list,
//! changes it), so a cached answer is always the one a scan would give.
//! Only the policy is cached, not the SAs it resolves to: which SA seals
//! also depends on time and traffic (lifetimes, RFC 4301 §4.4.2.1), so the
//! SAD is asked every time (by an index on the endpoints, not a scan).
//!
//! Bounds: a fixed number of slots, direct-mapped by a hash of the flow,
//! allocated once. Flows that collide (or a flood of made-up ones) replace
//! each other and cost a scan, as without the cache; memory never grows.
//! A fragment's policy check is another lookup ([`Spd::lookup_opaque`])
//! and does not come here; a plain lookup of a fragment's flow is as
//! exact from the cache as any other.

use std::hash::{Hash, Hasher};

use crate::fxhash::FxHasher;
use crate::spd::{Direction, Flow, Policy, Spd};

/// Slots per cache: a power of two.
pub const SLOTS: usize = 4096;

/// One remembered lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    direction: Direction,
    flow: Flow,
    /// The matching policy's position, or none.
    at: Option<usize>,
}

/// SPD lookups remembered per (direction, flow); see the module.
pub struct SpdCache {
    slots: Box<[Option<Entry>]>,
    /// The SPD generation the entries belong to.
    generation: u64,
    /// Answers given from an entry (for the tests).
    hits: u64,
}

impl Default for SpdCache {
    fn default() -> Self {
        SpdCache {
            slots: vec![None; SLOTS].into_boxed_slice(),
            generation: 0,
            hits: 0,
        }
    }
}

impl SpdCache {
    /// [`Spd::lookup`] of `flow` (not a fragment) in `direction`, from
    /// the cache when `spd` has not changed since the answer was stored.
    pub fn lookup<'s>(
        &mut self,
        spd: &'s Spd,
        direction: Direction,
        flow: &Flow,
    ) -> Option<&'s Policy> {
        if spd.generation() != self.generation {
            self.slots.fill(None);
            self.generation = spd.generation();
        }
        let slot = &mut self.slots[index(direction, flow)];
        let at = match slot {
            Some(e) if e.direction == direction && e.flow == *flow => {
                self.hits += 1;
                e.at
            }
            _ => {
                let at = spd.lookup_at(direction, flow);
                *slot = Some(Entry {
                    direction,
                    flow: *flow,
                    at,
                });
                at
            }
        };
        at.and_then(|at| spd.get(at))
    }
}

/// The slot of (direction, flow) ([`FxHasher`]: a collision only costs a
/// scan).
fn index(direction: Direction, flow: &Flow) -> usize {
    let mut h = FxHasher::default();
    direction.hash(&mut h);
    flow.hash(&mut h);
    // The high bits mix best.
    (h.finish() >> 32) as usize & (SLOTS - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spd::{Action, IpPrefix, PortRange, Selector};
    use std::net::IpAddr;

    fn policy(dst: &str, port: Option<u16>, action: Action) -> Policy {
        let any = IpPrefix::new("0.0.0.0".parse().unwrap(), 0).unwrap();
        let (addr, len) = dst.split_once('/').unwrap();
        let mut selector = Selector::between(
            any,
            IpPrefix::new(addr.parse().unwrap(), len.parse().unwrap()).unwrap(),
        );
        if let Some(port) = port {
            selector.protocol = Some(17);
            selector.dst_ports = PortRange::single(port);
        }
        Policy {
            direction: Direction::Out,
            selector,
            action,
            priority: 0,
        }
    }

    fn flow(dst: [u8; 4], dst_port: u16) -> Flow {
        Flow {
            src: IpAddr::from([10, 1, 0, 1]),
            dst: IpAddr::from(dst),
            protocol: 17,
            src_port: 1000,
            dst_port,
            fragment: false,
        }
    }

    /// Over many flows and every kind of change, the cache answers as a
    /// scan of the SPD would.
    #[test]
    fn answers_as_a_scan_through_changes() {
        let mut spd = Spd::new();
        let mut cache = SpdCache::default();
        let flows: Vec<Flow> = (0..=255u8)
            .flat_map(|i| {
                [
                    flow([10, 2, i, 1], 9),
                    flow([10, 2, i, 1], 53),
                    flow([10, 3, 0, i], 9),
                ]
            })
            .collect();
        let same = |cache: &mut SpdCache, spd: &Spd| {
            for f in &flows {
                for d in [Direction::Out, Direction::In] {
                    assert_eq!(cache.lookup(spd, d, f), spd.lookup(d, f), "{d:?} {f:?}");
                }
            }
        };
        same(&mut cache, &spd);
        spd.add(policy("10.2.0.0/16", None, Action::Discard))
            .unwrap();
        same(&mut cache, &spd);
        same(&mut cache, &spd);
        assert!(cache.hits >= flows.len() as u64, "the second pass hits");
        // A more specific policy before it, for one port.
        let mut first = policy("10.2.0.0/16", Some(53), Action::Bypass);
        first.priority = -1;
        spd.add(first).unwrap();
        same(&mut cache, &spd);
        let any = IpPrefix::new("0.0.0.0".parse().unwrap(), 0).unwrap();
        let dst = IpPrefix::new("10.2.0.0".parse().unwrap(), 16).unwrap();
        spd.remove(Direction::Out, &Selector::between(any, dst))
            .unwrap();
        same(&mut cache, &spd);
        // Another list altogether (a worker gets a new SPD by replacement).
        let mut other = Spd::new();
        other
            .add(policy("10.3.0.0/24", None, Action::Discard))
            .unwrap();
        same(&mut cache, &other);
        let mut copy = other.clone();
        same(&mut cache, &copy);
        copy.flush();
        same(&mut cache, &copy);
        same(&mut cache, &other);
    }

    /// More flows than slots: entries replace each other and answers stay
    /// exact; after the churn a flow that comes back is answered from its
    /// slot again.
    #[test]
    fn a_flood_of_flows_only_costs_scans() {
        let mut spd = Spd::new();
        spd.add(policy("10.2.0.0/16", None, Action::Discard))
            .unwrap();
        let mut cache = SpdCache::default();
        for port in 0..=u16::MAX {
            let f = flow([10, 2, (port >> 8) as u8, port as u8], port);
            assert_eq!(
                cache.lookup(&spd, Direction::Out, &f),
                spd.lookup(Direction::Out, &f)
            );
        }
        let back = flow([10, 3, 0, 1], 9);
        assert_eq!(cache.lookup(&spd, Direction::Out, &back), None);
        let hits = cache.hits;
        assert_eq!(cache.lookup(&spd, Direction::Out, &back), None);
        assert_eq!(cache.hits, hits + 1, "answered from its slot");
    }
}
