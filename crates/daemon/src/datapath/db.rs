//! One worker's databases, and how the control plane's changes reach
//! them: a [`WorkerChange`] list applied whole between two batches.

use std::collections::HashMap;

use flowsec_ipsec::{SaId, Sad, Spd};

use crate::apply::WorkerChange;

/// The databases one worker runs with.
#[derive(Debug, Default)]
pub struct Databases {
    /// Security associations.
    pub sad: Sad,
    /// Security policies.
    pub spd: Spd,
    /// Which of the control plane's SPD changes `spd` is (`WorkerChange::Spd`).
    pub spd_epoch: u64,
    /// The generation of each SA's installation (`WorkerChange::AddSa`):
    /// pcrypt jobs numbered on another one are dropped (`crate::pcrypt`).
    pub generations: HashMap<SaId, u64>,
}

impl Databases {
    /// Apply `changes` in order. Staging checked them all (no duplicate
    /// SA, no missing one), so nothing here can fail.
    pub fn apply(&mut self, changes: Vec<WorkerChange>) {
        for change in changes {
            match change {
                WorkerChange::AddSa(sa, generation) => {
                    self.generations.insert(sa.id(), generation);
                    // Staging refused duplicates.
                    let _ = self.sad.add(*sa);
                }
                WorkerChange::RemoveSa(id) => {
                    self.generations.remove(&id);
                    self.sad.remove(&id);
                }
                WorkerChange::Spd(spd, epoch) => {
                    self.spd = spd;
                    self.spd_epoch = epoch;
                }
                WorkerChange::Encap(id, encap) => {
                    if let Some(sa) = self.sad.lookup(&id).and_then(|h| self.sad.get_mut(h)) {
                        sa.set_encap_ports(encap);
                    }
                }
                WorkerChange::Move(id, to) => {
                    // The control plane moved its copy the same way: a
                    // refusal here is one there too, logged there.
                    let Ok(h) = self.sad.move_sa(&id, to) else {
                        continue;
                    };
                    if let Some(g) = self.generations.remove(&id) {
                        self.generations.insert(SaId { dst: to.dst, ..id }, g);
                    }
                    // New endpoints may have another owner, whose copy has
                    // not counted: no copy seals until the control plane
                    // has seen every copy's number and raised them all
                    // above it (`WorkerChange::Seq`, Plane::resume_moved).
                    if let Some(sa) = self.sad.get_mut(h) {
                        let at = sa.seq();
                        sa.set_seq_ceiling(at);
                    }
                }
                WorkerChange::Seq(id, range) => {
                    if let Some(sa) = self.sad.lookup(&id).and_then(|h| self.sad.get_mut(h)) {
                        // Forward only (a raised ceiling leaves it where it is).
                        let _ = sa.skip_seq_to(range.from.max(sa.seq()));
                        sa.set_seq_ceiling(range.ceiling);
                    }
                }
                // The worker gives these to its sender (`crate::send`).
                WorkerChange::NextHop(..) => {}
            }
        }
    }
}
