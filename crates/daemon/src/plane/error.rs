//! Why the daemon could not run, or stopped on an error ([`RunError`]).
//! The errors of its parts are wrapped unchanged: [`ConfigError`],
//! [`ControlError`], [`IkeSetupError`], [`ToolError`] (ip, nft),
//! [`StreamSetupError`] and [`WorkerError`].

use core::fmt;
use std::io;

use crate::apply::ConfigError;
use crate::control::ControlError;
use crate::ike::IkeSetupError;
use crate::stream::StreamSetupError;
use crate::tool::ToolError;
use crate::worker::WorkerError;

/// Why the daemon could not run, or stopped on an error.
#[derive(Debug)]
#[non_exhaustive]
pub enum RunError {
    /// The configuration was refused (nothing was set up).
    Config(ConfigError),
    /// The control socket could not be set up.
    Control(ControlError),
    /// The capabilities could not be dropped.
    Privileges(io::Error),
    /// `--backend` names no crypto backend.
    UnknownBackend {
        /// The name given.
        name: String,
    },
    /// The TUN device could not be opened.
    Tun {
        /// Its name.
        name: String,
        /// Why.
        error: io::Error,
    },
    /// IKE could not be set up.
    Ike(IkeSetupError),
    /// IKE and ESP over TCP (RFC 9329) could not be set up: a listening
    /// port, the TLS certificate, or the thread.
    Stream(StreamSetupError),
    /// The `--metrics` address could not be listened on.
    Metrics {
        addr: std::net::SocketAddr,
        error: io::Error,
    },
    /// A worker's sockets could not be set up.
    WorkerIo(WorkerError),
    /// A worker's mailbox (eventfd) could not be made.
    Mailbox(io::Error),
    /// The routes into the TUN device could not be set up.
    Routes(ToolError),
    /// The plaintext filter (RFC 4301 §5.2) could not be installed.
    Filter(ToolError),
    /// A worker thread could not be started.
    Spawn {
        /// The worker.
        index: usize,
        /// Why.
        error: io::Error,
    },
    /// Waiting on the control socket failed.
    Poll(io::Error),
    /// A worker stopped on an error.
    Worker {
        /// The worker.
        index: usize,
        /// Why.
        error: WorkerError,
    },
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Config(e) => e.fmt(f),
            RunError::Control(e) => e.fmt(f),
            RunError::Privileges(e) => write!(f, "dropping capabilities: {e}"),
            RunError::UnknownBackend { name } => write!(f, "--backend {name}: unknown"),
            RunError::Tun { name, error } => write!(f, "TUN device {name}: {error}"),
            RunError::Ike(e) => e.fmt(f),
            RunError::Stream(e) => write!(f, "IKE over TCP: {e}"),
            RunError::Metrics { addr, error } => write!(f, "--metrics {addr}: {error}"),
            RunError::WorkerIo(e) => e.fmt(f),
            RunError::Mailbox(e) => write!(f, "eventfd: {e}"),
            RunError::Routes(e) => e.fmt(f),
            RunError::Filter(e) => write!(
                f,
                "plaintext filter (RFC 4301 §5.2): {e}; install nftables, or run with \
                 --no-plaintext-filter to accept unfiltered plaintext"
            ),
            RunError::Spawn { index, error } => write!(f, "starting worker {index}: {error}"),
            RunError::Poll(e) => write!(f, "poll: {e}"),
            RunError::Worker { index, error } => write!(f, "worker {index}: {error}"),
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::Config(e) => Some(e),
            RunError::Control(e) => Some(e),
            RunError::Ike(e) => Some(e),
            RunError::Stream(e) => Some(e),
            RunError::Routes(e) | RunError::Filter(e) => Some(e),
            RunError::Privileges(e) | RunError::Mailbox(e) | RunError::Poll(e) => Some(e),
            RunError::Tun { error, .. } | RunError::Spawn { error, .. } => Some(error),
            RunError::WorkerIo(e) | RunError::Worker { error: e, .. } => Some(e),
            _ => None,
        }
    }
}
