//! SA lifetimes (RFC 4301 §4.4.2.1): soft and hard limits in bytes,
//! packets and time. Time is passed in; nothing here reads a clock.

use core::time::Duration;

/// One set of limits; `None` means unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of payload processed.
    pub bytes: Option<u64>,
    /// Packets processed.
    pub packets: Option<u64>,
    /// Time since the SA was added.
    pub add_time: Option<Duration>,
    /// Time since the SA was first used.
    pub use_time: Option<Duration>,
}

/// Soft limits (the control plane should rekey) and hard limits (the SA
/// stops processing packets).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lifetime {
    /// Crossing any of these raises [`SaState::Dying`].
    pub soft: Limits,
    /// Crossing any of these makes the SA [`SaState::Expired`].
    pub hard: Limits,
}

/// Where an SA stands against its lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SaState {
    /// Within its soft limits.
    Mature,
    /// Past a soft limit: still usable, should be replaced.
    Dying,
    /// Past a hard limit: refuses every packet.
    Expired,
}

/// Usage of an SA, measured against its [`Lifetime`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// When the SA was added.
    pub added: Duration,
    /// When it first processed a packet.
    pub first_use: Option<Duration>,
    /// Bytes processed (the IP payload protected or recovered).
    pub bytes: u64,
    /// Packets processed.
    pub packets: u64,
}

impl Usage {
    /// A fresh SA added at `now`.
    pub fn new(now: Duration) -> Self {
        Usage {
            added: now,
            first_use: None,
            bytes: 0,
            packets: 0,
        }
    }

    /// Count one packet of `bytes` at `now`.
    pub fn record(&mut self, bytes: usize, now: Duration) {
        self.first_use.get_or_insert(now);
        self.bytes = self.bytes.saturating_add(bytes as u64);
        self.packets += 1;
    }

    fn crossed(&self, limits: &Limits, now: Duration) -> bool {
        let over = |limit: Option<u64>, value: u64| limit.is_some_and(|l| value >= l);
        let late = |limit: Option<Duration>, since: Option<Duration>| match (limit, since) {
            (Some(l), Some(s)) => now.saturating_sub(s) >= l,
            _ => false,
        };
        over(limits.bytes, self.bytes)
            || over(limits.packets, self.packets)
            || late(limits.add_time, Some(self.added))
            || late(limits.use_time, self.first_use)
    }

    /// The state at `now` under `lifetime`.
    pub fn state(&self, lifetime: &Lifetime, now: Duration) -> SaState {
        if self.crossed(&lifetime.hard, now) {
            SaState::Expired
        } else if self.crossed(&lifetime.soft, now) {
            SaState::Dying
        } else {
            SaState::Mature
        }
    }

    /// Whether a hard limit is crossed: the per-packet check (the soft
    /// state is the control plane's business, see [`state`](Self::state)).
    pub fn expired(&self, lifetime: &Lifetime, now: Duration) -> bool {
        self.crossed(&lifetime.hard, now)
    }

    /// The earliest time at which the state changes by time alone, for the
    /// caller's timer wheel.
    pub fn next_deadline(&self, lifetime: &Lifetime) -> Option<Duration> {
        // A deadline past the end of time is no deadline.
        let at = |limit: Option<Duration>, since: Option<Duration>| since?.checked_add(limit?);
        [
            at(lifetime.soft.add_time, Some(self.added)),
            at(lifetime.soft.use_time, self.first_use),
            at(lifetime.hard.add_time, Some(self.added)),
            at(lifetime.hard.use_time, self.first_use),
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn bytes_packets_and_time() {
        let lifetime = Lifetime {
            soft: Limits {
                bytes: Some(1000),
                packets: Some(10),
                add_time: Some(secs(50)),
                use_time: None,
            },
            hard: Limits {
                bytes: Some(2000),
                packets: None,
                add_time: Some(secs(60)),
                use_time: Some(secs(30)),
            },
        };
        let mut u = Usage::new(secs(100));
        assert_eq!(u.state(&lifetime, secs(100)), SaState::Mature);
        u.record(999, secs(110));
        assert_eq!(u.state(&lifetime, secs(110)), SaState::Mature);
        u.record(1, secs(111));
        assert_eq!(u.state(&lifetime, secs(111)), SaState::Dying);
        assert_eq!(
            u.state(&lifetime, secs(140)),
            SaState::Expired,
            "use_time 30 s after first use"
        );
        assert_eq!(u.next_deadline(&lifetime), Some(secs(140)));
        let mut v = Usage::new(secs(0));
        for _ in 0..10 {
            v.record(1, secs(1));
        }
        assert_eq!(v.state(&lifetime, secs(1)), SaState::Dying);
        v.record(2000, secs(2));
        assert_eq!(v.state(&lifetime, secs(2)), SaState::Expired);
    }

    #[test]
    fn huge_limits_do_not_overflow() {
        let forever = Limits {
            add_time: Some(Duration::MAX),
            use_time: Some(Duration::MAX),
            ..Limits::default()
        };
        let lifetime = Lifetime {
            soft: forever,
            hard: forever,
        };
        let mut u = Usage::new(secs(5));
        u.record(1, secs(6));
        assert_eq!(u.next_deadline(&lifetime), None);
        assert_eq!(u.state(&lifetime, Duration::MAX), SaState::Mature);
    }

    #[test]
    fn unlimited_never_expires() {
        let u = Usage {
            added: secs(0),
            first_use: Some(secs(0)),
            bytes: u64::MAX,
            packets: u64::MAX,
        };
        assert_eq!(
            u.state(&Lifetime::default(), Duration::MAX),
            SaState::Mature
        );
        assert_eq!(u.next_deadline(&Lifetime::default()), None);
    }
}
