//! What a worker counts and reports: its counters ([`Stats`], summed by
//! the control plane) and its view of each SA ([`SaReport`]).

use core::fmt;

use flowsec_ipsec::{DropCounters, SaId, SaStats};
use flowsec_setkey::SaLive;

/// Counters of one worker.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    /// Packets protected and sent.
    pub sent: u64,
    /// Packets received, verified and delivered to the TUN device.
    pub delivered: u64,
    /// Link-scope or multicast packets from the TUN device that no policy
    /// covers (router solicitations, MLD): dropped.
    pub no_policy: u64,
    /// Packets from the TUN device sent on in the clear: a BYPASS policy
    /// covers them, or no policy does (setkey's default). They were routed
    /// into the TUN by a wider PROTECT or DISCARD route.
    pub bypassed: u64,
    /// Outbound packets whose outer family this host cannot send.
    pub unsupported_outer: u64,
    /// Outbound packets passed to the worker that owns their SAs.
    pub handed_off: u64,
    /// Handoffs refused: the owner's mailbox was full, or the packet did
    /// not fit a handoff buffer.
    pub handoff_drops: u64,
    /// TCP super-packets read from the TUN device and cut into segments.
    pub tso_in: u64,
    /// TCP super-packets written to the TUN device (coalesced segments).
    pub gro_out: u64,
    /// Packets from the TUN device whose offload header or partial
    /// checksum could not be handled.
    pub offload_errors: u64,
    /// Send or TUN-write errors.
    pub io_errors: u64,
    /// Drops by named reason.
    pub drops: DropCounters,
}

impl Stats {
    /// Add `other`'s counts to these.
    pub fn add(&mut self, other: &Stats) {
        self.sent += other.sent;
        self.delivered += other.delivered;
        self.no_policy += other.no_policy;
        self.bypassed += other.bypassed;
        self.unsupported_outer += other.unsupported_outer;
        self.handed_off += other.handed_off;
        self.handoff_drops += other.handoff_drops;
        self.tso_in += other.tso_in;
        self.gro_out += other.gro_out;
        self.offload_errors += other.offload_errors;
        self.io_errors += other.io_errors;
        self.drops.add(&other.drops);
    }

    /// The plain counters by name (drops apart).
    pub fn named(&self) -> [(&'static str, u64); 11] {
        [
            ("sent", self.sent),
            ("delivered", self.delivered),
            ("no_policy", self.no_policy),
            ("bypassed", self.bypassed),
            ("unsupported_outer", self.unsupported_outer),
            ("handed_off", self.handed_off),
            ("handoff_drops", self.handoff_drops),
            ("tso_in", self.tso_in),
            ("gro_out", self.gro_out),
            ("offload_errors", self.offload_errors),
            ("io_errors", self.io_errors),
        ]
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} sent, {} delivered", self.sent, self.delivered)?;
        for (name, n) in self.named().into_iter().skip(2) {
            if n != 0 {
                write!(f, ", {name}={n}")?;
            }
        }
        for (reason, n) in self.drops.nonzero() {
            write!(f, ", {reason}={n}")?;
        }
        Ok(())
    }
}

/// One SA as a worker sees it.
#[derive(Debug, Clone)]
pub struct SaReport {
    /// Which SA.
    pub id: SaId,
    /// Sequence number, state, age, traffic.
    pub live: SaLive,
    /// Drops by this SA.
    pub stats: SaStats,
    /// Anti-replay window size.
    pub replay_window: u32,
}

/// A worker's answer to [`Msg::Report`].
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Its counters.
    pub stats: Stats,
    /// Its copy of each SA.
    pub sas: Vec<SaReport>,
}
