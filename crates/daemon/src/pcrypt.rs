//! The pcrypt mode's bookkeeping (`flowsec up --parallel pcrypt`, study
//! S5's parallel crypto with re-serialisation, as Linux's `pcrypt`
//! template does it with `padata`): the jobs a worker sends to another
//! worker's copy of an SA, the results that come back, and the order in
//! which the SA's owner releases them. The owner numbers each packet
//! (`flowsec_ipsec::assigned`), deals the crypto to the workers in turn
//! (itself included), and sends or delivers the results in the order the
//! packets came, whatever order they finish in: parallel crypto,
//! serialised output.
//!
//! A result never finds its owner's return channel full: an owner keeps
//! at most [`WINDOW`] jobs in flight in each direction and the channel
//! holds [`RETURNS`] (both directions' worth). Beyond the window, or
//! when the chosen worker's mailbox is full, the owner does the crypto
//! itself, in turn like any other. Should a worker stop answering (its
//! thread gone), the owner's order stalls at that job: it then drops
//! what would wait behind more than [`RETURNS`] jobs (`crypto_backlog`)
//! instead of queueing it forever.
//!
//! A job names its SA by (protocol, SPI, destination), which a key change
//! keeps: a manual SA deleted and added again under the same SPI with a
//! new key, while jobs numbered on the old one are still in a mailbox. A
//! copy of the new SA must not seal a number the old counter gave (its
//! own counter gives that number again later: one nonce twice under the
//! new key, RFC 4106 §8.1), nor an old copy a number of the new counter.
//! So every installation of an SA has a generation, the same on every
//! worker's copy (the control plane stamps it as it sends the SA), a job
//! carries the generation its number came from ([`Numbered`]), and a
//! worker whose copy is of another generation drops the job
//! (`crypto_stale_sa`); so does the owner when it finishes an inbound
//! packet whose SA changed meanwhile.

use std::collections::VecDeque;

use flowsec_ipsec::assigned::{Assigned, Opened};
use flowsec_ipsec::{Egress, PacketBuf, UdpEndpoints};

/// Jobs one owner keeps in flight in each direction, at most.
pub const WINDOW: usize = 512;
/// Results a worker's return channel holds: both directions' windows.
pub const RETURNS: usize = 2 * WINDOW;

/// A packet's number on an SA, and the generation of the SA's
/// installation that gave it: only a copy of that generation may seal or
/// open it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Numbered {
    /// The SA and the sequence number.
    pub assigned: Assigned,
    /// The generation of the owner's copy when it numbered the packet.
    pub generation: u64,
}

/// A packet to seal for its SA's owner.
#[derive(Debug, Clone, Copy)]
pub struct SealJob {
    /// The worker that owns the SA and sends the result.
    pub owner: usize,
    /// Its place in the owner's outbound order.
    pub order: u64,
    pub numbered: Numbered,
    /// A reassembled datagram (fragmented after sealing where it must be).
    pub whole: bool,
}

/// A packet to open for its SA's owner.
#[derive(Debug, Clone, Copy)]
pub struct OpenJob {
    /// The worker that owns the SA and finishes the packet.
    pub owner: usize,
    /// Its place in the owner's inbound order.
    pub order: u64,
    pub numbered: Numbered,
    /// ESP in UDP: the endpoints its socket reported; `None`: raw ESP.
    pub from: Option<UdpEndpoints>,
}

/// A job done, on its way back to the owner.
pub enum Done {
    /// Sealed: where it goes (`None`: dropped, counted by the sealer).
    Sealed {
        job: SealJob,
        buf: PacketBuf,
        egress: Option<Egress>,
    },
    /// Opened (`None`: dropped, counted by the opener).
    Opened {
        job: OpenJob,
        buf: PacketBuf,
        opened: Option<Opened>,
    },
}

impl Done {
    /// Its place in its direction's order.
    pub fn order(&self) -> u64 {
        match self {
            Done::Sealed { job, .. } => job.order,
            Done::Opened { job, .. } => job.order,
        }
    }
}

/// Results that finish in any order, released in the order their
/// tickets were taken.
#[derive(Debug)]
pub struct Reorder<T> {
    /// The ticket of `slots[0]`.
    head: u64,
    slots: VecDeque<Option<T>>,
}

impl<T> Default for Reorder<T> {
    fn default() -> Self {
        Reorder {
            head: 0,
            slots: VecDeque::new(),
        }
    }
}

impl<T> Reorder<T> {
    /// The next ticket: this result's place in the order.
    pub fn ticket(&mut self) -> u64 {
        self.slots.push_back(None);
        self.head + self.slots.len() as u64 - 1
    }

    /// Tickets taken whose results have not been released.
    pub fn in_flight(&self) -> usize {
        self.slots.len()
    }

    /// The result of ticket `order`; false for a ticket that is not out
    /// (released already, or never taken): it is dropped.
    pub fn complete(&mut self, order: u64, value: T) -> bool {
        let Some(at) = order.checked_sub(self.head) else {
            return false;
        };
        match self.slots.get_mut(at as usize) {
            Some(slot @ None) => {
                *slot = Some(value);
                true
            }
            _ => false,
        }
    }

    /// The next result in order, if it is done.
    pub fn pop(&mut self) -> Option<T> {
        if !matches!(self.slots.front(), Some(Some(_))) {
            return None;
        }
        self.head += 1;
        self.slots.pop_front().flatten()
    }
}

/// A worker's pcrypt state: whose turn the next job is, and both
/// directions' order.
#[derive(Default)]
pub struct Pcrypt {
    turn: usize,
    pub seal: Reorder<Done>,
    pub open: Reorder<Done>,
}

impl Pcrypt {
    /// The worker whose turn it is, of `workers`.
    pub fn next_turn(&mut self, workers: usize) -> usize {
        let w = self.turn % workers.max(1);
        self.turn = self.turn.wrapping_add(1);
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn released_in_ticket_order_whatever_the_finishing_order() {
        let mut r = Reorder::default();
        let t: Vec<u64> = (0..5).map(|_| r.ticket()).collect();
        assert_eq!(t, [0, 1, 2, 3, 4]);
        assert!(r.complete(2, "c"));
        assert!(r.complete(1, "b"));
        assert_eq!(r.pop(), None, "0 is not done");
        assert!(r.complete(0, "a"));
        assert_eq!(
            (r.pop(), r.pop(), r.pop(), r.pop()),
            (Some("a"), Some("b"), Some("c"), None)
        );
        assert_eq!(r.in_flight(), 2);
        assert!(!r.complete(1, "again"), "released already");
        assert!(!r.complete(9, "never taken"));
        assert!(r.complete(4, "e"));
        assert!(!r.complete(4, "twice"));
        assert!(r.complete(3, "d"));
        assert_eq!((r.pop(), r.pop(), r.pop()), (Some("d"), Some("e"), None));
        assert_eq!(r.ticket(), 5);
    }

    #[test]
    fn turns_go_round_every_worker() {
        let mut p = Pcrypt::default();
        let turns: Vec<usize> = (0..7).map(|_| p.next_turn(3)).collect();
        assert_eq!(turns, [0, 1, 2, 0, 1, 2, 0]);
        assert_eq!(p.next_turn(1), 0);
    }
}
