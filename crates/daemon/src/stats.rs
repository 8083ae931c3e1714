//! What a worker counts and reports: its counters ([`Stats`], summed by
//! the control plane) and its view of each SA ([`SaReport`]).

use core::fmt;

use flowsec_ipsec::{DropCounters, SaId, SaStats};
use flowsec_setkey::SaLive;

/// The plain counters of [`Stats`], declared once: the struct, [`Stats::add`]
/// and [`Stats::named`] come from this one list.
macro_rules! counters {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// Counters of one worker.
        #[derive(Debug, Default, Clone)]
        pub struct Stats {
            $($(#[$doc])* pub $name: u64,)*
            /// Drops by named reason.
            pub drops: DropCounters,
        }

        impl Stats {
            /// Add `other`'s counts to these.
            pub fn add(&mut self, other: &Stats) {
                $(self.$name += other.$name;)*
                self.drops.add(&other.drops);
            }

            /// The plain counters by name (drops apart), in declaration
            /// order.
            pub fn named(&self) -> [(&'static str, u64); [$(stringify!($name)),*].len()] {
                [$((stringify!($name), self.$name)),*]
            }
        }
    };
}

counters! {
    /// Packets protected and sent.
    sent,
    /// Packets received, verified and delivered to the TUN device.
    delivered,
    /// Link-scope or multicast packets from the TUN device that no policy
    /// covers (router solicitations, MLD): dropped.
    no_policy,
    /// Packets from the TUN device sent on in the clear: a BYPASS policy
    /// covers them, or no policy does (setkey's default). They were routed
    /// into the TUN by a wider PROTECT or DISCARD route.
    bypassed,
    /// Outbound packets whose outer family this host cannot send.
    unsupported_outer,
    /// Datagrams reassembled from fragments before transport-mode IPsec
    /// (RFC 4303 §3.1.1).
    reassembled,
    /// Fragments held for reassembly because the policy that covers them
    /// depends on ports, which a later fragment does not carry (RFC 4301
    /// §7): they are looked up, and sent or delivered, whole.
    fragments_held,
    /// Decapsulated datagrams larger than the TUN MTU (reassembled before
    /// their policy check) written to the TUN device as fragments.
    refragmented,
    /// Datagrams whose fragments never all arrived (timed out, or pushed
    /// out by newer ones: the reassembly table is bounded).
    fragments_expired,
    /// Sealed packets larger than the MTU sent as fragments (RFC 4303
    /// §3.3.4).
    fragmented,
    /// Outbound packets passed to the worker that owns their SAs.
    handed_off,
    /// Handoffs refused: the owner's mailbox was full, or the packet did
    /// not fit a handoff buffer.
    handoff_drops,
    /// Outbound packets dropped because their policy had no SA yet (IKE
    /// is asked for one, an ACQUIRE, at most once a second per policy).
    no_outbound_sa,
    /// Super-packets read from the TUN device and cut into segments (TCP,
    /// and UDP trains where the kernel takes USO).
    tso_in,
    /// Super-packets written to the TUN device: coalesced TCP segments,
    /// or trains of one flow's UDP datagrams (USO).
    gro_out,
    /// Packets from the TUN device whose offload header or partial
    /// checksum could not be handled.
    offload_errors,
    /// Send or TUN-write errors.
    io_errors,
    /// Packets dropped because a socket's send buffer was full (the
    /// egress is stalled or slower than the tunnel): a worker never waits
    /// for it.
    send_eagain,
    /// Pcrypt: packets this worker numbered whose crypto another worker
    /// did (`--parallel pcrypt`).
    crypto_dealt,
    /// Pcrypt: packets this worker sealed or opened for another worker.
    crypto_done,
    /// Pcrypt: packets dropped because this worker already awaited 1024
    /// results in that direction (a worker stopped answering).
    crypto_backlog,
    /// Pcrypt: jobs dropped because the SA they were numbered on had been
    /// replaced (same protocol, SPI and destination, another installation,
    /// perhaps another key) by the time a worker sealed or opened them, or
    /// its owner finished them: sealing one would use a sequence number
    /// of one key's counter under another key (`crate::pcrypt`).
    crypto_stale_sa,
    /// Times the worker woke from poll(2) with something to read: per
    /// request/response transaction, the wake-ups a lone packet costs
    /// (issue 17; `scripts/bench-tunnels.sh` divides them out).
    wakeups,
    /// Raw IP packets (ESP, AH, bypassed) handed straight to their
    /// neighbor on its link by a packet socket (`crate::nexthop`), not
    /// through the kernel's IP output; counted in `sent` too.
    link_sent,
    /// Raw ESP/AH packets the kernel could not queue on this worker's
    /// fanout socket, its receive buffer full (PACKET_STATISTICS; read
    /// when counters are asked for).
    esp_queue_full,
    /// Sealed ESP for TCP streams dropped: the stream thread's queue was
    /// full (RFC 9329; its own drops are under "tcp" in `ctl stats`).
    stream_full,
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
    /// The worker whose copy carried packets (the busiest, when the
    /// control plane merges the workers' reports); `None` before any did.
    pub worker: Option<usize>,
    /// Its outer source address, as this copy has it (a MOBIKE move
    /// changes it); `None` in a merged report.
    pub src: Option<std::net::IpAddr>,
}

/// A worker's answer to [`Msg::Report`].
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Which worker.
    pub worker: usize,
    /// Its counters.
    pub stats: Stats,
    /// Its copy of each SA.
    pub sas: Vec<SaReport>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use flowsec_ipsec::DropReason;

    /// Every counter of the list is summed and named; the first two lead
    /// the display.
    #[test]
    fn add_sums_every_counter() {
        let mut one = Stats {
            sent: 1,
            io_errors: 2,
            gro_out: 3,
            ..Stats::default()
        };
        one.drops.count(DropReason::Replayed);
        let mut total = Stats::default();
        total.add(&one);
        total.add(&one);
        let named = total.named();
        assert_eq!(named.len(), 26);
        assert_eq!(named[0], ("sent", 2));
        assert!(named.contains(&("io_errors", 4)));
        assert!(named.contains(&("gro_out", 6)));
        assert_eq!(named.iter().map(|(_, n)| n).sum::<u64>(), 12);
        assert_eq!(
            total.to_string(),
            "2 sent, 0 delivered, gro_out=6, io_errors=4, replayed=2"
        );
    }
}
