//! The counters of the stream thread (`flowsec ctl stats`, "tcp"; the
//! metrics page's `flowsec_tcp_events_total`): every connection closed and
//! every message dropped has its named reason here.

use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! stream_counters {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// What the stream thread counted.
        #[derive(Debug, Default)]
        pub struct StreamCounters {
            $($(#[$doc])* pub $name: AtomicU64,)*
        }

        impl StreamCounters {
            /// Every counter by name.
            pub fn named(&self) -> Vec<(&'static str, u64)> {
                vec![$((stringify!($name), self.$name.load(Ordering::Relaxed))),*]
            }
        }
    };
}

stream_counters! {
    /// Connections accepted on a `--tcp-listen` port.
    accepted,
    /// Connections we opened (first connects and reconnects).
    connected,
    /// Connects that failed or timed out.
    connect_failed,
    /// Connections closed: by the peer, broken, or by us.
    closed,
    /// Accepted connections closed at once: their address (IPv4) or /64
    /// (IPv6) holds as many unauthenticated ones as it may, or every slot
    /// is held by an authenticated one (or accept(2) failed).
    refused,
    /// Unauthenticated accepted connections closed to make room for a
    /// new one: every slot was taken (the oldest goes).
    evicted,
    /// Accepted connections on which IKE authenticated a message (an
    /// established IKE SA's): from then on they count as established.
    authenticated,
    /// Closed: quiet (an unauthenticated connection with no frame for
    /// 10 s; a connect or TLS handshake that did not finish in 10 s), or
    /// an authenticated one idle for 300 s.
    quiet_closed,
    /// Closed: accepted and still unauthenticated after 30 s.
    unproven_closed,
    /// Closed: the stream did not begin with "IKETCP" (RFC 9329 §4).
    bad_prefix,
    /// Closed: a frame length of 0 or 1 (§3: fatal).
    bad_length,
    /// Closed: the TLS layer refused the peer's bytes.
    tls_failed,
    /// Frames that are neither IKE, ESP nor a keepalive (too short).
    bad_frame,
    /// Empty frames (length 2) and NAT-keepalives: ignored (§3, §6.6).
    ignored,
    /// IKE messages read (to the control thread) and written.
    ike_in,
    ike_out,
    /// ESP packets read (to their worker) and written.
    esp_in,
    esp_out,
    /// ESP or IKE to send with no connection to its peer (a responder
    /// waits for the originator to reconnect), or an answer whose
    /// connection is closed: dropped.
    no_stream,
    /// ESP or IKE for a peer whose connection has not authenticated (a
    /// new connection that reuses a closed one's address and port):
    /// dropped.
    not_authenticated,
    /// ESP dropped: its connection's queue was full (the socket does not
    /// keep up).
    backpressure,
    /// IKE dropped: its connection's queue was full (an unauthenticated
    /// peer that does not read gets little queued).
    ike_backpressure,
    /// ESP, or IKE for an unauthenticated connection, dropped: the bytes
    /// queued on all connections (or on the unauthenticated ones) were
    /// past their budget.
    over_budget,
    /// Times a connection was left unread because its output backed up
    /// (past its watermark, or the unauthenticated ones' budget spent).
    read_paused,
    /// IKE messages from the control thread dropped: the thread's IKE
    /// queue was full.
    ike_queue_full,
    /// ESP read for a worker whose mailbox was full: dropped.
    handoff_drops,
    /// Bytes read (the frames' messages), and written into the streams
    /// (with their length fields; TLS records aside).
    bytes_in,
    bytes_out,
}

/// Add `n` to `c`.
pub fn count(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}
