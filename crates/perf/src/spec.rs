//! What a test is asked to do ([`Spec`]) and what it found ([`Outcome`]).

use crate::SpecError;
use serde::{Deserialize, Serialize};

/// The tests, by netperf's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Test {
    /// Bulk TCP, client to server.
    #[serde(rename = "TCP_STREAM")]
    TcpStream,
    /// UDP datagrams as fast as possible (or at `rate_bps`).
    #[serde(rename = "UDP_STREAM")]
    UdpStream,
    /// Request/response over one TCP connection.
    #[serde(rename = "TCP_RR")]
    TcpRr,
    /// Request/response over UDP.
    #[serde(rename = "UDP_RR")]
    UdpRr,
    /// Connect, request, response, close.
    #[serde(rename = "TCP_CRR")]
    TcpCrr,
    /// Constant-rate UDP with sequence numbers.
    #[serde(rename = "CBR")]
    Cbr,
}

impl Test {
    /// Every test, in the order `--help` lists them.
    pub const ALL: [Test; 6] = [
        Test::TcpStream,
        Test::UdpStream,
        Test::TcpRr,
        Test::UdpRr,
        Test::TcpCrr,
        Test::Cbr,
    ];

    /// The netperf name.
    pub fn name(self) -> &'static str {
        match self {
            Test::TcpStream => "TCP_STREAM",
            Test::UdpStream => "UDP_STREAM",
            Test::TcpRr => "TCP_RR",
            Test::UdpRr => "UDP_RR",
            Test::TcpCrr => "TCP_CRR",
            Test::Cbr => "CBR",
        }
    }

    /// The test called `name` (case-insensitive).
    pub fn from_name(name: &str) -> Option<Test> {
        Test::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(name))
    }
}

/// What the client asks the server for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spec {
    pub test: Test,
    /// Test length.
    pub seconds: f64,
    /// Message size of the stream tests, payload size of CBR (bytes).
    pub msg_size: usize,
    /// Request and response sizes of the RR tests (bytes).
    pub req_size: usize,
    pub rsp_size: usize,
    /// SO_SNDBUF and SO_RCVBUF of the client's data socket (netperf -s)
    /// and of the server's (netperf -S), if set.
    pub local_buf: Option<usize>,
    pub remote_buf: Option<usize>,
    /// Sending rate in bit/s of the UDP payload (CBR; optional for
    /// UDP_STREAM).
    pub rate_bps: Option<u64>,
    /// UDP_RR: at most this many transactions (PING's count).
    #[serde(default)]
    pub count: Option<u64>,
    /// UDP_RR: one transaction per interval (s) instead of back to back
    /// (PING's interval).
    #[serde(default)]
    pub interval_s: Option<f64>,
    /// What the messages carry (IPComp is judged on both kinds).
    #[serde(default)]
    pub payload: Payload,
    /// TCP_STREAM: data connections open at once (`--conns`; study S5's
    /// client ran 64 per thread).
    #[serde(default = "one")]
    pub conns: usize,
    /// TCP_STREAM: close each connection after this many messages and open
    /// a new one (`--reconnect`; S5 reconnected every 10).
    #[serde(default)]
    pub reconnect: Option<u64>,
}

fn one() -> usize {
    1
}

/// Data connections one TCP_STREAM test may hold open, at most (per
/// side: the server polls them all).
pub const MAX_CONNS: usize = 1024;

/// The bytes a test sends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Payload {
    /// Pseudo-random bytes: incompressible.
    #[default]
    Random,
    /// Repeated English text: deflate shrinks it to a fraction.
    Text,
    /// All zeros (what study S3's benchmark sent, so its IPComp could not
    /// be judged).
    Zeros,
}

impl Payload {
    /// The payload called `name`.
    pub fn from_name(name: &str) -> Option<Payload> {
        [Payload::Random, Payload::Text, Payload::Zeros]
            .into_iter()
            .find(|p| p.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Payload::Random => "random",
            Payload::Text => "text",
            Payload::Zeros => "zeros",
        }
    }

    /// `n` bytes of this kind.
    pub fn bytes(self, n: usize) -> Vec<u8> {
        match self {
            Payload::Random => {
                let mut x: u32 = 0x9e37_79b9;
                (0..n)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 17;
                        x ^= x << 5;
                        x as u8
                    })
                    .collect()
            }
            Payload::Text => TEXT.iter().copied().cycle().take(n).collect(),
            Payload::Zeros => vec![0; n],
        }
    }
}

const TEXT: &[u8] = b"The sending gateway derives a flow identifier from the inner packet \
before encryption and expresses it in the outer packet, so that the receiver's \
network card can steer each flow to its own core. ";

impl Spec {
    /// A spec with netperf's defaults for `test`: 10 s, 16 KB TCP messages,
    /// 1472-byte UDP messages, 1-byte RR transactions; CBR 500-byte
    /// payloads at 13 Mbit/s (study S1's stream).
    pub fn new(test: Test) -> Spec {
        let (msg_size, rate_bps) = match test {
            Test::TcpStream => (16_384, None),
            Test::UdpStream => (1_472, None),
            Test::Cbr => (500, Some(13_000_000)),
            _ => (1, None),
        };
        Spec {
            test,
            seconds: 10.0,
            msg_size,
            req_size: 1,
            rsp_size: 1,
            local_buf: None,
            remote_buf: None,
            rate_bps,
            count: None,
            interval_s: None,
            payload: Payload::Random,
            conns: 1,
            reconnect: None,
        }
    }

    /// TCP_STREAM over several connections, or reconnecting: the poll
    /// loops of both ends instead of one blocking stream.
    pub fn many_connections(&self) -> bool {
        self.conns > 1 || self.reconnect.is_some()
    }

    /// Sizes and durations the server accepts: a spec from the network is
    /// input like any other.
    pub fn check(&self) -> Result<(), SpecError> {
        let size_ok = |n: usize, max: usize| (1..=max).contains(&n);
        if !(self.seconds > 0.0 && self.seconds <= 3600.0) {
            return Err(SpecError::Seconds(self.seconds));
        }
        let udp = matches!(self.test, Test::UdpStream | Test::UdpRr | Test::Cbr);
        let max = if udp { 65_507 } else { 1 << 20 };
        if !size_ok(self.msg_size, max)
            || !size_ok(self.req_size, max)
            || !size_ok(self.rsp_size, max)
        {
            return Err(SpecError::MessageSize { max });
        }
        if self.test == Test::Cbr && self.msg_size < crate::server::CBR_HEADER {
            return Err(SpecError::CbrHeader);
        }
        if self.interval_s.is_some_and(|i| !(i > 0.0 && i <= 60.0)) {
            return Err(SpecError::Interval);
        }
        if !(1..=MAX_CONNS).contains(&self.conns) {
            return Err(SpecError::Connections);
        }
        if self.many_connections() && self.test != Test::TcpStream {
            return Err(SpecError::ManyConnectionsNotStream);
        }
        if self.reconnect == Some(0) {
            return Err(SpecError::ReconnectZero);
        }
        if self.test == Test::Cbr && self.rate_bps.unwrap_or(0) == 0 {
            return Err(SpecError::CbrRate);
        }
        Ok(())
    }
}

/// One second of a CBR (or UDP_STREAM) run, as the receiver saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Second {
    /// Packets that arrived in this second.
    pub packets: u64,
    pub bytes: u64,
    /// Packets whose sequence number is below one seen before.
    pub reordered: u64,
    /// Sequence numbers sent in this second (by their send time) that never
    /// arrived.
    pub lost: u64,
    /// The longest time between two arrivals in this second (ms).
    pub max_gap_ms: f64,
}

impl Second {
    /// Add another connection's same second to this one.
    pub fn add(&mut self, other: &Second) {
        self.packets += other.packets;
        self.bytes += other.bytes;
        self.reordered += other.reordered;
        self.lost += other.lost;
        self.max_gap_ms = self.max_gap_ms.max(other.max_gap_ms);
    }
}

/// What a test found. Field names follow netperf's results where there is
/// one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub test: String,
    /// Measured duration (s).
    pub elapsed_s: f64,
    /// TCP/UDP_STREAM: netperf's "Throughput" (10^6 bits/s) at the
    /// receiver; UDP_STREAM also `send_mbit_s`.
    pub throughput_mbit_s: f64,
    pub send_mbit_s: f64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub packets_sent: u64,
    pub packets_received: u64,
    /// UDP: packets sent that did not arrive.
    pub lost: u64,
    /// UDP: of `lost`, those the receiving socket dropped itself because
    /// its buffer was full (the receiver too slow, not the path; its
    /// /proc/net/udp "drops", which `UdpRcvbufErrors` sums; netperf -S
    /// sets the buffer).
    #[serde(default)]
    pub socket_drops: u64,
    /// RR/CRR: netperf's "Trans. Rate" (per second) and latencies (µs).
    pub transactions: u64,
    pub trans_per_s: f64,
    pub latency_mean_us: f64,
    pub latency_p50_us: f64,
    pub latency_p99_us: f64,
    pub latency_min_us: f64,
    pub latency_max_us: f64,
    /// Standard deviation (ping's mdev).
    pub latency_stddev_us: f64,
    /// UDP_RR: transactions abandoned after a lost packet.
    pub timeouts: u64,
    /// CBR: per second, and the longest gap between arrivals (ms).
    pub per_second: Vec<Second>,
    pub reordered: u64,
    pub max_gap_ms: f64,
    /// CBR: the longest any packet was held up beyond the fastest one's
    /// one-way delay (ms): how far a queue on the path grew.
    #[serde(default)]
    pub max_queue_ms: f64,
    /// Data connections open at once (`--threads` × `--conns`) this
    /// outcome sums.
    pub connections: u32,
    /// TCP_STREAM: data connections opened (more than `--conns` when
    /// reconnecting), as the client counted them and as the server
    /// accepted them.
    #[serde(default)]
    pub connects: u64,
    #[serde(default)]
    pub accepted: u64,
    /// CPU use of each end: the process, and the whole machine (%).
    pub local_cpu: crate::CpuUse,
    pub remote_cpu: crate::CpuUse,
}
