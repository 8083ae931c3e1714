//! Who may hold an accepted RFC 9329 connection (issue 29 item 3), without
//! I/O: the stream thread asks before it keeps a connection, tells what
//! it read and what IKE proved, and closes what this says has expired.
//!
//! A connection counts as established only once IKE authenticated a
//! message on it (an established IKE SA's message verified: the stream
//! thread hears of it from the control thread); until then it is
//! unproven, and
//! - it is closed after [`Limits::quiet_for`] without a frame, and after
//!   [`Limits::prove_within`] in all (the core gives a half-open IKE SA
//!   as long), so a junk frame now and then keeps no slot;
//! - when every slot is taken, the oldest unproven one is closed for the
//!   newcomer (SYN-cache style: a flood pushes out its own connections
//!   first, and a peer that authenticates within a second keeps its);
//! - one address (IPv4) or one /64 (IPv6, where an attacker has 2^64
//!   addresses) holds at most [`Limits::per_prefix`] unproven ones.
//!
//! An established connection is closed after [`Limits::idle_for`]
//! without a frame (DPD keeps a quiet tunnel's).

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

use crate::channels::ConnId;

/// The limits (our tuning).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Accepted connections in all.
    pub max: usize,
    /// Unproven connections from one IPv4 address or IPv6 /64.
    pub per_prefix: usize,
    /// An unproven connection with no frame for this long is closed.
    pub quiet_for: Duration,
    /// An unproven connection is closed this long after it opened.
    pub prove_within: Duration,
    /// An established one with no frame for this long is closed.
    pub idle_for: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max: 1024,
            per_prefix: 32,
            quiet_for: Duration::from_secs(10),
            // The core's half-open timeout (Settings::half_open_timeout):
            // an IKE SA not established by then is gone anyway.
            prove_within: Duration::from_secs(30),
            idle_for: Duration::from_secs(300),
        }
    }
}

/// Whether a new connection may be kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    Yes,
    /// Yes, once this (the oldest unproven connection) is closed.
    Evict(ConnId),
    /// No: its address (or /64) holds [`Limits::per_prefix`] unproven
    /// connections already.
    PrefixFull,
    /// No: every slot is held by an established connection.
    Full,
}

/// Why [`Slots::expired`] says to close a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// Unproven, and no frame for [`Limits::quiet_for`].
    Quiet,
    /// Unproven after [`Limits::prove_within`].
    Unproven,
    /// Established, and no frame for [`Limits::idle_for`].
    Idle,
}

/// What an address counts toward: itself (IPv4) or its /64 (IPv6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Prefix(u128);

impl Prefix {
    fn of(ip: IpAddr) -> Prefix {
        match ip.to_canonical() {
            IpAddr::V4(a) => Prefix(u128::from(u32::from(a))),
            // The interface identifier (RFC 4291 §2.5.1) is the peer's to
            // choose: the /64 is what it gets from its provider.
            IpAddr::V6(a) => Prefix((u128::from(a) >> 64) | 1 << 127),
        }
    }
}

struct Slot {
    prefix: Prefix,
    opened: Duration,
    last_frame: Duration,
    proven: bool,
}

/// The accepted connections' slots. The default value has none and the
/// default limits.
#[derive(Default)]
pub struct Slots {
    limits: Limits,
    slots: HashMap<ConnId, Slot>,
}

impl Slots {
    /// Slots with other limits (tests).
    #[cfg(test)]
    pub fn new(limits: Limits) -> Slots {
        Slots {
            limits,
            slots: HashMap::new(),
        }
    }

    /// Whether a connection from `peer` may be kept now.
    pub fn admit(&self, peer: IpAddr) -> Admit {
        let prefix = Prefix::of(peer);
        let unproven = self.slots.values().filter(|s| !s.proven);
        let same = unproven.clone().filter(|s| s.prefix == prefix).count();
        if same >= self.limits.per_prefix {
            return Admit::PrefixFull;
        }
        if self.slots.len() < self.limits.max {
            return Admit::Yes;
        }
        let oldest = self
            .slots
            .iter()
            .filter(|(_, s)| !s.proven)
            .min_by_key(|(id, s)| (s.opened, **id));
        match oldest {
            Some((id, _)) => Admit::Evict(*id),
            None => Admit::Full,
        }
    }

    /// Connection `id` from `peer` is kept, from `now`.
    pub fn insert(&mut self, id: ConnId, peer: IpAddr, now: Duration) {
        let slot = Slot {
            prefix: Prefix::of(peer),
            opened: now,
            last_frame: now,
            proven: false,
        };
        self.slots.insert(id, slot);
    }

    /// Connection `id` is closed.
    pub fn remove(&mut self, id: ConnId) {
        self.slots.remove(&id);
    }

    /// A frame was read from `id`.
    pub fn heard(&mut self, id: ConnId, now: Duration) {
        if let Some(s) = self.slots.get_mut(&id) {
            s.last_frame = now;
        }
    }

    /// IKE authenticated a message on `id`: it is established. Whether it
    /// was not already.
    pub fn prove(&mut self, id: ConnId) -> bool {
        match self.slots.get_mut(&id) {
            Some(s) => !std::mem::replace(&mut s.proven, true),
            None => false,
        }
    }

    /// Whether `id` is an established (authenticated) connection.
    pub fn proven(&self, id: ConnId) -> bool {
        self.slots.get(&id).is_some_and(|s| s.proven)
    }

    /// The connections to close at `now`, and why.
    pub fn expired(&self, now: Duration) -> Vec<(ConnId, Expiry)> {
        let l = &self.limits;
        self.slots
            .iter()
            .filter_map(|(id, s)| {
                let why = match s.proven {
                    true if now >= s.last_frame + l.idle_for => Expiry::Idle,
                    true => return None,
                    false if now >= s.opened + l.prove_within => Expiry::Unproven,
                    false if now >= s.last_frame + l.quiet_for => Expiry::Quiet,
                    false => return None,
                };
                Some((*id, why))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    /// Issue 29 item 3: 1024 slots filled from 32 addresses, each sending
    /// a junk frame every 290 s. Before, they locked every road warrior
    /// out; now the newcomer takes the oldest unproven slot, and the junk
    /// keeps none of them past `prove_within`.
    #[test]
    fn a_full_table_of_unproven_connections_locks_no_one_out() {
        let mut s = Slots::default();
        let mut id = 0;
        for a in 0..32 {
            for _ in 0..32 {
                assert_eq!(s.admit(ip(&format!("198.51.100.{a}"))), Admit::Yes);
                s.insert(
                    ConnId::for_tests(id),
                    ip(&format!("198.51.100.{a}")),
                    secs(0),
                );
                id += 1;
            }
        }
        // A road warrior: the oldest unproven connection makes room.
        let rw = ip("203.0.113.9");
        assert_eq!(s.admit(rw), Admit::Evict(ConnId::for_tests(0)));
        s.remove(ConnId::for_tests(0));
        s.insert(ConnId::for_tests(9999), rw, secs(1));
        // It authenticates: from then on it is never the one evicted.
        assert!(s.prove(ConnId::for_tests(9999)));
        assert!(!s.prove(ConnId::for_tests(9999)));
        assert!(s.proven(ConnId::for_tests(9999)));
        // Junk frames every 5 s keep the others past `quiet_for`, but not
        // past `prove_within`.
        for t in (5..30).step_by(5) {
            for i in 1..1024 {
                s.heard(ConnId::for_tests(i), secs(t));
            }
            assert!(s.expired(secs(t)).is_empty(), "at {t} s");
        }
        let gone = s.expired(secs(30));
        assert_eq!(gone.len(), 1023);
        assert!(gone.iter().all(|(_, why)| *why == Expiry::Unproven));
        assert!(gone.iter().all(|(id, _)| *id != ConnId::for_tests(9999)));
    }

    /// An unproven connection that sends nothing is closed in seconds
    /// (not 300 s); an established one after `idle_for`.
    #[test]
    fn unproven_connections_get_seconds_of_quiet() {
        let mut s = Slots::default();
        let (a, b) = (ConnId::for_tests(1), ConnId::for_tests(2));
        s.insert(a, ip("192.0.2.1"), secs(0));
        s.insert(b, ip("192.0.2.2"), secs(0));
        s.prove(b);
        assert!(s.expired(secs(9)).is_empty());
        assert_eq!(s.expired(secs(10)), vec![(a, Expiry::Quiet)]);
        s.remove(a);
        assert!(s.expired(secs(299)).is_empty());
        assert_eq!(s.expired(secs(300)), vec![(b, Expiry::Idle)]);
    }

    /// One IPv6 /64 counts as one address: its 2^64 addresses hold no
    /// more unproven slots than one IPv4 address does; established
    /// connections from it (many users behind one CGNAT address) do not
    /// count.
    #[test]
    fn one_ipv6_64_is_one_address() {
        let mut s = Slots::default();
        for i in 0..32u64 {
            let a = ip(&format!("2001:db8:7:1::{:x}", i + 1));
            assert_eq!(s.admit(a), Admit::Yes, "{a}");
            s.insert(ConnId::for_tests(i), a, secs(0));
        }
        assert_eq!(s.admit(ip("2001:db8:7:1:ffff::1")), Admit::PrefixFull);
        assert_eq!(s.admit(ip("2001:db8:7:2::1")), Admit::Yes);
        s.prove(ConnId::for_tests(3));
        assert_eq!(s.admit(ip("2001:db8:7:1:ffff::1")), Admit::Yes);
        // An IPv4-mapped address is its IPv4 address.
        for i in 100..132 {
            s.insert(ConnId::for_tests(i), ip("192.0.2.7"), secs(0));
        }
        assert_eq!(s.admit(ip("::ffff:192.0.2.7")), Admit::PrefixFull);
    }

    /// Full of established connections: refused, none evicted.
    #[test]
    fn established_connections_are_never_evicted() {
        let mut s = Slots::new(Limits {
            max: 4,
            ..Limits::default()
        });
        for i in 0..4 {
            s.insert(ConnId::for_tests(i), ip("192.0.2.1"), secs(i));
            s.prove(ConnId::for_tests(i));
        }
        assert_eq!(s.admit(ip("192.0.2.9")), Admit::Full);
    }
}
