//! What carries an IKE SA: UDP, or a TCP stream, plain or inside TLS
//! (RFC 9329), and what goes out on it ([`Datagram`]). The rules that
//! differ over a stream are where they apply: no retransmissions (§6.2,
//! exchange/manager.rs), no NAT-keepalives (§6.6, timers.rs), the
//! responder following the originator's newest connection (§6.1,
//! engine.rs), the fallback from UDP (§5.1) and reconnecting (streams.rs).

use core::fmt;
use std::net::SocketAddr;

/// What an IKE SA's messages and its Child SAs' ESP travel in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Transport {
    /// UDP ports 500 and 4500 (RFC 7296, RFC 3948).
    #[default]
    Udp,
    /// One TCP connection (RFC 9329): "IKETCP", then length-framed IKE
    /// and ESP.
    Tcp,
    /// The same stream inside TLS (RFC 9329 Appendix A).
    Tls,
}

impl Transport {
    /// A reliable stream: TCP or TLS.
    pub fn is_stream(self) -> bool {
        self != Transport::Udp
    }

    /// As `ctl sas` shows it.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Udp => "UDP",
            Transport::Tcp => "TCP",
            Transport::Tls => "TLS",
        }
    }
}

/// A datagram to send. Between two port-4500 endpoints the daemon puts
/// the non-ESP marker in front (RFC 3948 §2.2); the core never does. The
/// one exception is a NAT-keepalive, one byte 0xFF ([`Datagram::is_keepalive`],
/// RFC 3948 §2.3), which goes as it is (an IKE message is never that short).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datagram {
    /// UDP, or the TCP stream (plain or TLS) between the two addresses.
    pub transport: crate::transport::Transport,
    /// Our address and port.
    pub local: SocketAddr,
    /// The peer's.
    pub remote: SocketAddr,
    /// The IKE message.
    pub data: Vec<u8>,
}

impl Datagram {
    /// A NAT-keepalive, sent without the non-ESP marker.
    pub fn is_keepalive(&self) -> bool {
        self.data == [flowsec_wire::udp_encap::NAT_KEEPALIVE]
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A message as it goes on the wire: one datagram, or its fragments (RFC
/// 7383).
pub(crate) type Wire = Vec<Vec<u8>>;

/// A message as it arrived: where, from where, its header (parsed) and
/// its bytes.
pub(crate) struct Arrival<'a> {
    pub transport: crate::transport::Transport,
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub header: &'a flowsec_wire::ike::Header,
    pub data: &'a [u8],
}
