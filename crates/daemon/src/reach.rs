//! How the control plane reaches the workers without ever waiting on one
//! for long: a message is delivered by a deadline or kept for later, a
//! reply is waited for by a deadline, and a worker that missed one is
//! marked late (shown by `ctl status`) and not waited for again until it
//! answers. IKE, the control socket and SIGTERM therefore keep working
//! when a worker is stuck (a stalled egress, a slow machine).
//!
//! Changes a late worker could not take stay queued here, in order, and
//! go to it as soon as its mailbox has room; later changes queue behind
//! them, so a worker sees every change, in order, whenever it comes back.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::apply::WorkerChange;
use crate::channels::{Delivery, Mailbox, Msg};
use crate::stats::Report;

/// How long a message may wait for room in a mailbox.
const SEND_WAIT: Duration = Duration::from_millis(200);
/// How long a worker in good standing may take to answer.
const REPLY_WAIT: Duration = Duration::from_secs(2);
/// How long a late worker is waited for.
const LATE_WAIT: Duration = Duration::from_millis(20);

/// The workers, as the control plane reaches them.
pub struct Workers {
    boxes: Vec<Mailbox>,
    health: RefCell<Vec<Health>>,
    /// The epoch of the latest SPD change sent, which every worker sees:
    /// one whose SPD is older (late, or not yet through its mailbox) drops
    /// what it would send in the clear (`policy_stale`), so a change a
    /// worker has not taken never lets traffic leave unprotected.
    spd_epoch: Arc<AtomicU64>,
    /// The generation of the latest SA installation sent (0: those of the
    /// start): every worker's copy of one gets the same (`crate::pcrypt`).
    sa_generation: std::cell::Cell<u64>,
}

/// What the control plane knows of one worker's responsiveness.
#[derive(Default)]
struct Health {
    /// It missed its last deadline and has not answered since.
    late: bool,
    /// Deadlines missed since start.
    missed: u64,
    /// Changes it could not take yet, oldest first.
    pending: VecDeque<Vec<WorkerChange>>,
}

impl Workers {
    /// `spd_epoch` is shared with the workers (0: the SPD they started with).
    pub fn new(boxes: Vec<Mailbox>, spd_epoch: Arc<AtomicU64>) -> Self {
        let health = (0..boxes.len()).map(|_| Health::default()).collect();
        Workers {
            boxes,
            health: RefCell::new(health),
            spd_epoch,
            sa_generation: std::cell::Cell::new(0),
        }
    }

    /// How many workers there are.
    pub fn len(&self) -> usize {
        self.boxes.len()
    }

    /// The mailboxes (for stopping the workers).
    pub fn boxes(&self) -> &[Mailbox] {
        &self.boxes
    }

    /// Give worker `k` the list `lists[k]`, and wait (by a deadline) until
    /// those in good standing have applied theirs.
    pub fn apply(&self, mut lists: Vec<Vec<WorkerChange>>) {
        // A new SPD gets the next epoch, published before any worker can
        // have it.
        if lists
            .iter()
            .flatten()
            .any(|c| matches!(c, WorkerChange::Spd(..)))
        {
            let epoch = self.spd_epoch.fetch_add(1, Ordering::AcqRel) + 1;
            for c in lists.iter_mut().flatten() {
                if let WorkerChange::Spd(_, e) = c {
                    *e = epoch;
                }
            }
        }
        self.stamp_generations(&mut lists);
        self.flush_pending();
        let (tx, rx) = mpsc::channel();
        let mut asked = Vec::new();
        let mut health = self.health.borrow_mut();
        for (k, list) in lists.into_iter().enumerate() {
            let h = &mut health[k];
            if list.is_empty() {
                continue;
            }
            if !h.pending.is_empty() {
                h.pending.push_back(list);
                continue;
            }
            match self.boxes[k].send_by(Msg::Apply(list, tx.clone()), Instant::now() + SEND_WAIT) {
                Delivery::Sent => asked.push(k),
                Delivery::Late(Msg::Apply(list, _)) => {
                    h.missed += 1;
                    h.late = true;
                    h.pending.push_back(list);
                }
                Delivery::Late(_) | Delivery::Gone => {}
            }
        }
        drop(tx);
        let answered = collect(&rx, asked.len(), wait_for(&health, &asked));
        for k in asked {
            mark(&mut health[k], answered.contains(&k));
        }
    }

    /// Give each SA installation in `lists` a new generation, the same in
    /// every worker's list: the n-th addition of one SA in a list is the
    /// same installation in all of them.
    fn stamp_generations(&self, lists: &mut [Vec<WorkerChange>]) {
        use std::collections::HashMap;
        let mut given = HashMap::new();
        for list in lists.iter_mut() {
            let mut nth = HashMap::new();
            for c in list.iter_mut() {
                if let WorkerChange::AddSa(sa, generation) = c {
                    let n = nth.entry(sa.id()).or_insert(0u32);
                    *n += 1;
                    *generation = *given.entry((sa.id(), *n)).or_insert_with(|| {
                        let next = self.sa_generation.get() + 1;
                        self.sa_generation.set(next);
                        next
                    });
                }
            }
        }
    }

    /// Every worker's report; those that do not answer by the deadline are
    /// left out (and marked late).
    pub fn reports(&self) -> Vec<Report> {
        self.flush_pending();
        let (tx, rx) = mpsc::channel();
        let mut asked = Vec::new();
        let mut health = self.health.borrow_mut();
        for (k, b) in self.boxes.iter().enumerate() {
            match b.send_by(Msg::Report(tx.clone()), Instant::now() + SEND_WAIT) {
                Delivery::Sent => asked.push(k),
                Delivery::Late(_) => {
                    health[k].missed += 1;
                    health[k].late = true;
                }
                Delivery::Gone => {}
            }
        }
        drop(tx);
        let reports: Vec<Report> = collect(&rx, asked.len(), wait_for(&health, &asked));
        for k in asked {
            let answered = reports.iter().any(|r| r.worker == k);
            mark(&mut health[k], answered);
        }
        reports
    }

    /// Pass queued changes on to workers that have room again (called on
    /// every turn of the control loop).
    pub fn flush_pending(&self) {
        let mut health = self.health.borrow_mut();
        for (k, h) in health.iter_mut().enumerate() {
            while let Some(list) = h.pending.pop_front() {
                // Nobody waits for these acknowledgements.
                let (tx, _) = mpsc::channel();
                match self.boxes[k].send_by(Msg::Apply(list, tx), Instant::now()) {
                    Delivery::Sent | Delivery::Gone => {}
                    Delivery::Late(Msg::Apply(list, _)) => {
                        h.pending.push_front(list);
                        break;
                    }
                    Delivery::Late(_) => break,
                }
            }
        }
    }

    /// `ctl status`'s view of each worker.
    pub fn status(&self) -> Vec<crate::answers::WorkerHealth> {
        let health = self.health.borrow();
        health
            .iter()
            .enumerate()
            .map(|(k, h)| crate::answers::WorkerHealth {
                worker: k,
                late: h.late,
                missed_deadlines: h.missed,
                pending_changes: h.pending.len(),
            })
            .collect()
    }
}

/// How long to wait for the workers in `asked`: not long if one of them is
/// late already.
fn wait_for(health: &[Health], asked: &[usize]) -> Duration {
    if asked.iter().any(|&k| health[k].late) {
        LATE_WAIT
    } else {
        REPLY_WAIT
    }
}

/// Up to `n` answers from `rx`, until `wait` has passed.
fn collect<T>(rx: &mpsc::Receiver<T>, n: usize, wait: Duration) -> Vec<T> {
    let deadline = Instant::now() + wait;
    let mut got = Vec::with_capacity(n);
    while got.len() < n {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(x) => got.push(x),
            Err(_) => break,
        }
    }
    got
}

/// A worker answered (in good standing again once nothing is queued for
/// it), or missed its deadline.
fn mark(h: &mut Health, answered: bool) {
    if answered {
        h.late = !h.pending.is_empty();
    } else {
        h.missed += 1;
        h.late = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker that never reads its mailbox costs the control plane
    /// bounded time, is marked late, and gets its changes in order once it
    /// reads again.
    #[test]
    fn a_stuck_worker_is_not_waited_for() {
        let (mailbox, rx, _wake) = Mailbox::with_capacity(8).unwrap();
        let epoch = Arc::new(AtomicU64::new(0));
        let w = Workers::new(vec![mailbox], Arc::clone(&epoch));
        // Fill the mailbox: nobody reads it.
        let started = Instant::now();
        let mut round = 0;
        while w.health.borrow()[0].pending.is_empty() {
            w.apply(vec![vec![WorkerChange::RemoveSa(flowsec_ipsec::SaId {
                protocol: flowsec_ipsec::Protocol::Esp,
                spi: round,
                dst: "192.0.2.1".parse().unwrap(),
            })]]);
            round += 1;
            assert!(round < 100);
        }
        assert!(w.reports().is_empty());
        let s = w.status();
        assert!(s[0].late);
        assert!(s[0].missed_deadlines >= 2, "{s:?}");
        // Late: the next calls wait only briefly.
        let t = Instant::now();
        w.apply(vec![vec![WorkerChange::Spd(Default::default(), 0)]]);
        // Published before the worker has it: it sends nothing in the clear.
        assert_eq!(epoch.load(Ordering::Acquire), 1);
        assert!(w.reports().is_empty());
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        assert!(started.elapsed() < Duration::from_secs(30));
        // The worker reads again: everything arrives, in order.
        let mut spis = Vec::new();
        let mut spd = false;
        let drain = |spis: &mut Vec<u32>, spd: &mut bool| {
            while let Ok(m) = rx.msgs.try_recv() {
                if let Msg::Apply(list, _) = m {
                    for c in list {
                        match c {
                            WorkerChange::RemoveSa(id) => spis.push(id.spi),
                            WorkerChange::Spd(_, e) => *spd = e == 1,
                            _ => {}
                        }
                    }
                }
            }
        };
        drain(&mut spis, &mut spd);
        w.flush_pending();
        drain(&mut spis, &mut spd);
        assert_eq!(spis, (0..round).collect::<Vec<_>>());
        assert!(spd);
        assert_eq!(w.status()[0].pending_changes, 0);
    }

    /// Every worker's copy of one installation gets the same generation;
    /// an SA removed and added again in the same batch, and every later
    /// batch, a new one (`crate::pcrypt`).
    #[test]
    fn each_installation_gets_one_generation_on_every_worker() {
        use flowsec_ipsec::{Mode, SaConfig, SecurityAssociation};
        let (mailbox, _rx, _wake) = Mailbox::with_capacity(8).unwrap();
        let w = Workers::new(vec![mailbox], Arc::new(AtomicU64::new(0)));
        let config = SaConfig::esp(
            0x1001,
            Mode::Tunnel,
            "192.0.2.1".parse().unwrap(),
            "192.0.2.2".parse().unwrap(),
        )
        .with_encr(flowsec_crypto::EncrId::AES_GCM_16, &[7; 20]);
        let provider = flowsec_crypto::Provider::rustcrypto();
        let add = || {
            let sa = SecurityAssociation::new(&config, &provider, Duration::ZERO).unwrap();
            WorkerChange::AddSa(Box::new(sa), 0)
        };
        let batch = || vec![add(), WorkerChange::RemoveSa(config.id()), add()];
        let generations = |lists: &[Vec<WorkerChange>]| -> Vec<Vec<u64>> {
            lists
                .iter()
                .map(|l| {
                    l.iter()
                        .filter_map(|c| match c {
                            WorkerChange::AddSa(_, g) => Some(*g),
                            _ => None,
                        })
                        .collect()
                })
                .collect()
        };
        let mut lists = vec![batch(), batch(), batch()];
        w.stamp_generations(&mut lists);
        assert_eq!(generations(&lists), vec![vec![1, 2]; 3]);
        let mut later = vec![batch(), batch()];
        w.stamp_generations(&mut later);
        assert_eq!(generations(&later), vec![vec![3, 4]; 2]);
    }
}
