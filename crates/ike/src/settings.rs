//! The core's tuning ([`Settings`]), with strongSwan's defaults.

use core::time::Duration;

/// Tuning, with strongSwan's defaults (strongswan.conf(5)).
#[derive(Debug, Clone)]
pub struct Settings {
    /// Retransmission of our requests.
    pub retransmit: Retransmit,
    /// Half-open IKE SAs (of all addresses) from which on IKE_SA_INIT
    /// needs a COOKIE (`charon.cookie_threshold`, 30; RFC 7296 §2.6).
    /// 0: always (strongSwan's 0 turns cookies off; `usize::MAX` does here).
    pub cookie_threshold: usize,
    /// Half-open IKE SAs with one address from which on IKE_SA_INIT from
    /// that address needs a COOKIE, below `cookie_threshold` too
    /// (`charon.cookie_threshold_ip`, strongSwan 5.9, 3; below
    /// `block_threshold`, so that a busy address proves it receives before
    /// it is blocked).
    pub cookie_threshold_ip: usize,
    /// Most half-open IKE SAs with one address: from there on its
    /// IKE_SA_INIT requests are dropped, a valid cookie or not
    /// (`charon.block_threshold`, 5; counted in `blocked_source`). Below
    /// `cookie_threshold` and `max_half_open`, one address alone never
    /// reaches those. `usize::MAX`: no limit (strongSwan's 0).
    pub block_threshold: usize,
    /// A half-open IKE SA is forgotten after this long
    /// (`charon.half_open_timeout`, 30 s).
    pub half_open_timeout: Duration,
    /// Most IKE SAs of any state (memory bound; `charon.ikesa_limit`).
    pub max_ike_sas: usize,
    /// Most half-open IKE SAs (`charon.init_limit_half_open`; strongSwan's
    /// default 0 is no limit, ours 1000 bounds memory and DH work); beyond
    /// this IKE_SA_INIT requests are dropped even with a valid cookie.
    pub max_half_open: usize,
    /// How long a replaced IKE or Child SA is kept for the peer's DELETE.
    pub rekeyed_grace: Duration,
    /// Behind a NAT, a NAT-keepalive after this long without sending
    /// (`charon.keep_alive`, 20 s; RFC 3948 §2.3).
    pub keep_alive: Duration,
    /// The largest IP datagram of an IKE fragment, IP and UDP headers
    /// included (`charon.fragment_size`, 1280; RFC 7383 §2.5.1): a
    /// protected message larger than this is fragmented where the
    /// connection's `fragmentation` says so.
    pub fragment_size: usize,
    /// The data plane's resources (workers) for per-resource Child SAs
    /// (`per_cpu_sas`, RFC 9611): as initiator one is asked for per
    /// resource beside the fallback; as responder at most this many are
    /// taken, then TS_MAX_QUEUE. 1: none are asked for, and as responder
    /// it takes no part (an ordinary Child SA, no SA_RESOURCE_INFO back).
    pub resources: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            retransmit: Retransmit::default(),
            cookie_threshold: 30,
            cookie_threshold_ip: 3,
            block_threshold: 5,
            half_open_timeout: Duration::from_secs(30),
            max_ike_sas: 10_000,
            max_half_open: 1_000,
            rekeyed_grace: Duration::from_secs(30),
            keep_alive: Duration::from_secs(20),
            fragment_size: 1280,
            resources: 1,
        }
    }
}

/// Retransmission as strongSwan does it by default (strongswan.conf
/// `charon.retransmit_timeout` 4.0 s, `retransmit_base` 1.8,
/// `retransmit_tries` 5): sends at 0, 4, 11.2, 24.2, 47.5 and 89.5 s, and
/// gives up 165.5 s after the first send.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retransmit {
    /// Wait before the first retransmission.
    pub timeout: Duration,
    /// Each wait is this many times the one before.
    pub base: f64,
    /// Retransmissions before the peer is declared dead.
    pub tries: u32,
}

impl Default for Retransmit {
    fn default() -> Self {
        Retransmit {
            timeout: Duration::from_secs(4),
            base: 1.8,
            tries: 5,
        }
    }
}

impl Retransmit {
    /// How long to wait after send number `n` (0 = the first send).
    pub fn wait(&self, n: u32) -> Duration {
        // Capped at a day: large settings must not overflow a Duration.
        let secs = self.timeout.as_secs_f64() * self.base.powi(n.min(64) as i32);
        Duration::try_from_secs_f64(secs.min(86_400.0)).unwrap_or(Duration::from_secs(86_400))
    }
}
