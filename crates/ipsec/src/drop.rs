//! Named drop reasons and their counters. Every packet the IPsec core
//! refuses is refused for exactly one of these reasons; the data path
//! counts them instead of logging (ARCHITECTURE.md "Counters, not logs").
//!
//! A drop is an end: what the network sent that it must not have (most of
//! these), or what the local configuration forbids (DISCARD, an expired or
//! exhausted SA, a packet too big). An outcome that asks the caller to do
//! something next is not a drop: see [`crate::process::SealError`]'s
//! `Reassemble` (transport mode meets a fragment) and `NoSa` (ask IKE).

use core::fmt;

macro_rules! drop_reasons {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// Why a packet was dropped.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum DropReason {
            $($(#[$doc])* $variant,)*
        }

        impl DropReason {
            /// Every reason, in counter order.
            pub const ALL: &'static [DropReason] = &[$(DropReason::$variant,)*];

            /// The counter name (`snake_case`), as `flowsec ctl stats` shows it.
            pub fn name(self) -> &'static str {
                match self {
                    $(DropReason::$variant => $name,)*
                }
            }
        }
    };
}

drop_reasons! {
    /// The IP header is truncated or inconsistent.
    BadIpHeader => "bad_ip_header",
    /// IPv6 extension headers that cannot be walked (too many, truncated).
    BadExtensionHeaders => "bad_extension_headers",
    /// An IP fragment: must be reassembled before IPsec processing
    /// (RFC 4303 §3.4.1).
    Fragment => "fragment",
    /// Not ESP, AH, IPComp or UDP-encapsulated ESP.
    NotIpsec => "not_ipsec",
    /// A UDP-encapsulated packet too short to be ESP (RFC 3948 §2.1).
    BadUdpEncap => "bad_udp_encap",
    /// No SA for this SPI (or CPI) and protocol.
    UnknownSpi => "unknown_spi",
    /// The packet is shorter than its SA's headers, IV and ICV.
    Truncated => "truncated",
    /// Sequence number already received.
    Replayed => "replayed",
    /// Sequence number left of the replay window.
    TooOld => "replay_too_old",
    /// Sequence number zero.
    SeqZero => "seq_zero",
    /// ICV mismatch.
    AuthFailed => "auth_failed",
    /// Ciphertext not a whole number of blocks.
    BadCiphertextLength => "bad_ciphertext_length",
    /// ESP padding bytes are not 1, 2, 3, … or the pad length is too long
    /// (RFC 4303 §2.4).
    BadPadding => "bad_padding",
    /// ESP trailer or AH next header not valid here.
    BadNextHeader => "bad_next_header",
    /// A dummy packet (next header 59, RFC 4303 §2.6): discarded by design.
    DummyPacket => "dummy_packet",
    /// AH payload length field inconsistent (RFC 4302 §2.2).
    BadAhLength => "bad_ah_length",
    /// AH over an IPv6 routing header with segments left (not supported).
    AhUnsupportedRouting => "ah_unsupported_routing",
    /// IPComp payload does not inflate, or inflates past the maximum size.
    DecompressFailed => "ipcomp_decompress_failed",
    /// More nested IPsec headers than a bundle may have.
    BundleTooDeep => "bundle_too_deep",
    /// The outer header says congestion (CE) but the inner packet is not
    /// ECN-capable: RFC 6040 §4.2 says drop.
    EcnCeOnNotEct => "ecn_ce_on_not_ect",
    /// A UDP-encapsulated packet for an SA without UDP encapsulation, or
    /// the reverse; or, outbound, a bundle whose UDP-encapsulated SA is not
    /// its outermost step.
    EncapMismatch => "encap_mismatch",
    /// The decapsulated inner packet is not a valid IP packet.
    BadInnerPacket => "bad_inner_packet",
    /// The SAs applied do not match the inbound policy.
    PolicyMismatch => "policy_mismatch",
    /// The SA passed its hard lifetime.
    SaExpired => "sa_expired",
    /// The sequence number would wrap without ESN: the SA must be rekeyed
    /// (RFC 4303 §3.3.3).
    SeqExhausted => "seq_exhausted",
    /// A manual SA reached the sequence numbers recorded in the state
    /// directory; it sends again once more are recorded (a nonce is never
    /// used twice across restarts, RFC 4106 §8.1).
    SeqUnreserved => "seq_unreserved",
    /// No head- or tailroom left in the buffer.
    NoRoom => "no_room",
    /// The result would exceed the largest IP packet (or must not be
    /// fragmented and does not fit the MTU).
    TooBig => "too_big",
    /// An IP fragment that cannot be reassembled: misaligned, past 64 KiB,
    /// or disagreeing with its datagram's length (RFC 791 §3.2).
    BadFragment => "bad_fragment",
    /// Fragments that overlap: the whole datagram is dropped (RFC 5722).
    FragmentOverlap => "fragment_overlap",
    /// A decapsulated packet that no inbound (or forward) policy covers:
    /// the data plane refuses what no policy allows (RFC 4301 §5.2).
    NoInboundPolicy => "no_inbound_policy",
    /// The matching policy says DISCARD.
    PolicyDiscard => "policy_discard",
    /// The packet would leave in the clear (BYPASS, or no policy), but the
    /// worker has not yet taken a policy change the control plane made:
    /// the new policies may protect it, so it is dropped, never sent by
    /// the old ones.
    PolicyStale => "policy_stale",
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::error::Error for DropReason {}

/// A counter per [`DropReason`]. Plain integers: each worker owns its own
/// and the control plane sums them.
#[derive(Clone, PartialEq, Eq)]
pub struct DropCounters {
    counts: [u64; DropReason::ALL.len()],
}

impl Default for DropCounters {
    fn default() -> Self {
        DropCounters {
            counts: [0; DropReason::ALL.len()],
        }
    }
}

impl DropCounters {
    /// Count one drop.
    pub fn count(&mut self, reason: DropReason) {
        self.counts[reason as usize] += 1;
    }

    /// The count for `reason`.
    pub fn get(&self, reason: DropReason) -> u64 {
        self.counts[reason as usize]
    }

    /// Every non-zero counter, by name.
    pub fn nonzero(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        DropReason::ALL
            .iter()
            .map(|&r| (r, self.get(r)))
            .filter(|&(_, n)| n != 0)
    }

    /// Add `other` into `self`.
    pub fn add(&mut self, other: &DropCounters) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
    }
}

impl fmt::Debug for DropCounters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.nonzero().map(|(r, n)| (r.name(), n)))
            .finish()
    }
}
