//! Why a test could not run ([`PerfError`]) and why a [`Spec`] was
//! refused ([`SpecError`]), with the messages `flowsec perf` prints.
//!
//! [`Spec`]: crate::Spec

use core::fmt;
use std::io;
use std::net::SocketAddr;

use crate::search::MAX_BPS;
use crate::server::{CBR_HEADER, MAX_TESTS};
use crate::spec::MAX_CONNS;

/// Why a test could not run.
#[derive(Debug)]
#[non_exhaustive]
pub enum PerfError {
    /// The test's parameters were refused (by this end or by the server).
    Spec(SpecError),
    /// A socket operation failed.
    Io(io::Error),
    /// A control message could not be read or written as JSON.
    Message(serde_json::Error),
    /// The host name resolved to no address.
    NoAddress {
        /// The host as given.
        host: String,
    },
    /// The control connection could not be made.
    Connect {
        /// The server's address.
        addr: SocketAddr,
        /// Why.
        error: io::Error,
    },
    /// The server refused the test or failed it; its own words.
    Server {
        /// What the server said.
        message: String,
    },
    /// The server's answer named no data port.
    NoPort,
    /// The server closed the control connection early (client side).
    ServerClosed,
    /// The client closed the control connection early (server side).
    ClientClosed,
    /// A thread of the test panicked.
    Panicked(Thread),
    /// MAXRATE's step and maximum are out of range.
    MaxRateBounds,
    /// More parallel connections than a server runs at once.
    TooManyParallel,
    /// A reconnecting TCP_STREAM ran out of local ports (TIME_WAIT).
    NoLocalPort {
        /// The data address.
        addr: SocketAddr,
        /// The connect error.
        error: io::Error,
        /// Connections made so far.
        connects: u64,
    },
    /// The load that runs under a PING failed.
    BackgroundLoad(Box<PerfError>),
}

/// A thread of a test, for [`PerfError::Panicked`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Thread {
    /// One of the client's parallel tests.
    Test,
    /// The client's background load under PING.
    Load,
    /// The server's data thread.
    Data,
}

impl fmt::Display for PerfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PerfError::Spec(e) => e.fmt(f),
            PerfError::Io(e) => e.fmt(f),
            PerfError::Message(e) => write!(f, "control message: {e}"),
            PerfError::NoAddress { host } => write!(f, "{host}: no address"),
            PerfError::Connect { addr, error } => {
                write!(f, "{addr}: {error} (is `flowsec perf server` running?)")
            }
            PerfError::Server { message } => write!(f, "server: {message}"),
            PerfError::NoPort => f.write_str("server sent no port"),
            PerfError::ServerClosed => f.write_str("the server closed the control connection"),
            PerfError::ClientClosed => f.write_str("control connection closed"),
            PerfError::Panicked(Thread::Test) => f.write_str("a test thread panicked"),
            PerfError::Panicked(Thread::Load) => f.write_str("the load thread panicked"),
            PerfError::Panicked(Thread::Data) => f.write_str("data thread panicked"),
            PerfError::MaxRateBounds => {
                write!(f, "MAXRATE needs 0 < step <= max rate <= {MAX_BPS} bit/s")
            }
            PerfError::TooManyParallel => write!(
                f,
                "at most {MAX_TESTS} parallel connections (what a server runs at once)"
            ),
            PerfError::NoLocalPort {
                addr,
                error,
                connects,
            } => write!(
                f,
                "{addr}: {error} after {connects} connections: no local port free (reconnect \
                 less often, or sysctl net.ipv4.tcp_tw_reuse=1)"
            ),
            PerfError::BackgroundLoad(e) => write!(f, "background load: {e}"),
        }
    }
}

impl std::error::Error for PerfError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PerfError::Spec(e) => Some(e),
            PerfError::Io(e) => Some(e),
            PerfError::Message(e) => Some(e),
            PerfError::Connect { error, .. } | PerfError::NoLocalPort { error, .. } => Some(error),
            PerfError::BackgroundLoad(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for PerfError {
    fn from(e: io::Error) -> Self {
        PerfError::Io(e)
    }
}

impl From<serde_json::Error> for PerfError {
    fn from(e: serde_json::Error) -> Self {
        PerfError::Message(e)
    }
}

impl From<SpecError> for PerfError {
    fn from(e: SpecError) -> Self {
        PerfError::Spec(e)
    }
}

/// Why a [`Spec`](crate::Spec) was refused: sizes and durations a server
/// accepts (a spec from the network is input like any other).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SpecError {
    /// `seconds` outside (0, 3600].
    Seconds(f64),
    /// A message size outside 1..=`max` bytes.
    MessageSize {
        /// The largest for the test (a UDP datagram, or 1 MiB).
        max: usize,
    },
    /// A CBR payload too small for its header.
    CbrHeader,
    /// `interval` outside (0, 60] s.
    Interval,
    /// `conns` outside 1..=`MAX_CONNS` (1024).
    Connections,
    /// Several connections or reconnecting with a test other than
    /// TCP_STREAM.
    ManyConnectionsNotStream,
    /// Reconnecting after 0 messages.
    ReconnectZero,
    /// CBR without a rate.
    CbrRate,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecError::Seconds(s) => write!(f, "seconds {s} out of (0, 3600]"),
            SpecError::MessageSize { max } => write!(f, "message sizes must be 1..={max} bytes"),
            SpecError::CbrHeader => write!(
                f,
                "CBR payloads carry a {CBR_HEADER}-byte header: at least that many bytes"
            ),
            SpecError::Interval => f.write_str("interval must be in (0, 60] s"),
            SpecError::Connections => write!(f, "connections must be 1..={MAX_CONNS}"),
            SpecError::ManyConnectionsNotStream => {
                f.write_str("several connections and reconnecting are TCP_STREAM's")
            }
            SpecError::ReconnectZero => f.write_str("reconnect after at least one message"),
            SpecError::CbrRate => f.write_str("CBR needs a rate"),
        }
    }
}

impl std::error::Error for SpecError {}
