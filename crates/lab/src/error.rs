//! Why a scenario could not run, or a saved run could not be read or
//! drawn ([`LabError`]); why a peer implementation cannot take part
//! ([`PeerError`], from [`crate::peers`]). The messages are the ones
//! `flowsec lab` has always printed.
#![forbid(unsafe_code)]

use core::fmt;
use std::io;
use std::path::PathBuf;

use crate::chart::ChartError;
use crate::peers::PeerError;
use crate::saved::UpgradeError;
use crate::Peer;

/// Why a scenario could not run, or a saved run could not be read or
/// drawn.
#[derive(Debug)]
#[non_exhaustive]
pub enum LabError {
    /// The run was interrupted (SIGINT).
    Interrupted,
    /// A file or directory could not be made, read or written.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        error: io::Error,
    },
    /// A saved `results.json` does not parse.
    Saved {
        /// The file.
        path: PathBuf,
        /// Why.
        error: serde_json::Error,
    },
    /// A saved `results.json` of the old format lacks what its charts need.
    OldPlots {
        /// The file.
        path: PathBuf,
        /// What is missing.
        missing: UpgradeError,
    },
    /// A report could not be written as JSON.
    Json(serde_json::Error),
    /// A chart could not be drawn.
    Chart {
        /// The chart's file name (no extension).
        file: String,
        /// Why.
        error: ChartError,
    },
    /// `lab report DIR` or `lab plot DIR` found no run in `DIR`.
    NoResults {
        /// The directory.
        dir: PathBuf,
    },
    /// A command could not be started or waited for.
    Spawn {
        /// The command line.
        command: String,
        /// Why.
        error: io::Error,
    },
    /// A command failed.
    Failed {
        /// The namespace it ran in, if it was named in the message.
        host: Option<String>,
        /// The command line.
        command: String,
        /// What it said on standard error, trimmed.
        stderr: String,
    },
    /// A background command did not say it was ready within 10 s.
    NotReady {
        /// The namespace.
        host: String,
        /// The command line.
        command: String,
        /// Its log so far, trimmed.
        log: String,
    },
    /// A daemon's socket did not appear in time.
    NoSocket {
        /// Which daemon (`gwA: wireguard-go`).
        what: String,
        /// The socket.
        path: PathBuf,
        /// How long it was waited for.
        secs: u64,
    },
    /// The lab's own binary (run as the gateways' `flowsec up`) could not
    /// be found.
    OwnBinary(io::Error),
    /// A peer implementation cannot carry the setup.
    Peer {
        /// The peer.
        peer: Peer,
        /// Why not.
        why: PeerError,
    },
    /// A peer implementation is missing or cannot carry the setup (its
    /// own words, without its name).
    PeerSetup(PeerError),
    /// strongSwan was given a setup of several transforms.
    OneTransform,
    /// An IKE bed's gateways did not both hold a Child SA within 15 s.
    NoChildSa,
    /// The output of `flowsec perf` did not parse.
    PerfOutput {
        /// The setup's label.
        label: String,
        /// Why.
        error: serde_json::Error,
    },
    /// A WireGuard interface name longer than Linux allows.
    InterfaceName {
        /// The name.
        dev: String,
    },
    /// A WireGuard socket is there already (another run?).
    SocketExists {
        /// The socket.
        path: PathBuf,
    },
    /// wireguard-go refused its configuration.
    UapiRefused {
        /// Its UAPI socket.
        socket: PathBuf,
        /// Its answer, trimmed.
        answer: String,
    },
    /// A crypto primitive of s4-crypto was refused.
    Crypto(flowsec_crypto::CryptoError),
    /// s4-crypto's provider has no SHA-1.
    NoSha1,
    /// A program a scenario runs is not installed.
    Missing {
        /// The scenario.
        scenario: &'static str,
        /// The program.
        program: &'static str,
        /// The Debian package that has it.
        package: &'static str,
    },
    /// A program's output did not say what the scenario reads from it.
    Unreadable {
        /// The program.
        program: &'static str,
        /// What was looked for.
        what: &'static str,
    },
    /// s4-crypto could not seal a packet.
    SealFailed {
        /// The packet size.
        size: usize,
    },
    /// s1-dbs's echo thread panicked.
    EchoPanicked,
}

impl fmt::Display for LabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabError::Interrupted => f.write_str("interrupted"),
            LabError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            LabError::Saved { path, error } => write!(f, "{}: {error}", path.display()),
            LabError::OldPlots { path, missing } => write!(f, "{}: {missing}", path.display()),
            LabError::Json(e) => e.fmt(f),
            LabError::Chart { file, error } => write!(f, "{file}: {error}"),
            LabError::NoResults { dir } => write!(
                f,
                "{0}: no */results.json (run `flowsec lab run ... --out {0}` first)",
                dir.display()
            ),
            LabError::Spawn { command, error } => write!(f, "{command}: {error}"),
            LabError::Failed {
                host: Some(host),
                command,
                stderr,
            } => write!(f, "{host}: {command}: {stderr}"),
            LabError::Failed {
                host: None,
                command,
                stderr,
            } => write!(f, "{command}: {stderr}"),
            LabError::NotReady { host, command, log } => {
                write!(f, "{host}: {command}: not ready: {log}")
            }
            LabError::NoSocket { what, path, secs } => write!(
                f,
                "{what}: {} did not appear within {secs} s",
                path.display()
            ),
            LabError::OwnBinary(e) => write!(f, "flowsec binary: {e}"),
            LabError::Peer { peer, why } => write!(f, "{}: {why}", peer.name()),
            LabError::PeerSetup(why) => why.fmt(f),
            LabError::OneTransform => f.write_str("strongswan: one ESP transform"),
            LabError::NoChildSa => f.write_str(
                "IKE: no Child SA at both gateways within 15 s (see the gateways' logs)",
            ),
            LabError::PerfOutput { label, error } => write!(f, "{label}: perf output: {error}"),
            LabError::InterfaceName { dev } => write!(f, "{dev}: interface name too long"),
            LabError::SocketExists { path } => write!(f, "{} exists already", path.display()),
            LabError::UapiRefused { socket, answer } => {
                write!(f, "{}: configuration refused: {answer}", socket.display())
            }
            LabError::Crypto(e) => write!(f, "s4-crypto: {e}"),
            LabError::NoSha1 => f.write_str("s4-crypto: no SHA-1"),
            LabError::Missing {
                scenario,
                program,
                package,
            } => write!(
                f,
                "{scenario} needs {program}, which is not installed (apt-get install {package})"
            ),
            LabError::Unreadable { program, what } => {
                write!(f, "{program}'s output did not say {what}")
            }
            LabError::SealFailed { size } => write!(f, "s4-crypto: sealing {size} B failed"),
            LabError::EchoPanicked => f.write_str("echo thread panicked"),
        }
    }
}

impl std::error::Error for LabError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LabError::Io { error, .. }
            | LabError::Spawn { error, .. }
            | LabError::OwnBinary(error) => Some(error),
            LabError::Saved { error, .. }
            | LabError::PerfOutput { error, .. }
            | LabError::Json(error) => Some(error),
            LabError::Chart { error, .. } => Some(error),
            LabError::Peer { why, .. } | LabError::PeerSetup(why) => Some(why),
            _ => None,
        }
    }
}

/// `error` at `path`, for `map_err`.
pub(crate) fn at(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> LabError {
    let path = path.into();
    move |error| LabError::Io { path, error }
}
