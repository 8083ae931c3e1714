//! How a command failed ([`CliError`]), which decides the exit code: 2 for
//! bad arguments ([`UsageError`]), 1 for everything that went wrong while
//! running (the library crates' own errors, wrapped unchanged). `main`
//! prints `flowsec: MESSAGE`, the messages as they have always read.

use core::fmt;
use std::io;

use flowsec_daemon::{ConfigError, GroupError, RunError};
use flowsec_lab::LabError;
use flowsec_perf::{PerfError, SpecError};

use crate::ctl::CtlError;
use crate::speed::SpeedError;

/// How a command failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum CliError {
    /// Bad arguments (exit 2).
    Usage(UsageError),
    /// `flowsec up`: the daemon could not run (exit 1).
    Up(RunError),
    /// `flowsec setkey -n`: the input was refused (exit 1).
    Config(ConfigError),
    /// An input file or standard input could not be read (exit 1).
    Read {
        /// The file, or `stdin`.
        what: String,
        /// Why.
        error: io::Error,
    },
    /// The daemon could not be asked, or answered with an error (exit 1).
    Ctl(CtlError),
    /// `flowsec perf server` could not listen (exit 1).
    Listen {
        /// The address asked for.
        bind: String,
        /// The port.
        port: u16,
        /// Why.
        error: io::Error,
    },
    /// A traffic test failed (exit 1).
    Perf(PerfError),
    /// A lab scenario failed, or a saved run could not be read (exit 1).
    Lab(LabError),
    /// A scenario needs root and network namespaces, and this run has
    /// neither (exit 1).
    NeedsRoot {
        /// The scenario.
        scenario: &'static str,
    },
    /// `flowsec speed`: a suite asked for by name failed (exit 1).
    Speed {
        /// The suite.
        suite: String,
        /// The backend.
        backend: String,
        /// Why (boxed: a failed self-check carries the packet's bundle).
        error: Box<SpeedError>,
    },
    /// A report could not be written as JSON (exit 1).
    Json(serde_json::Error),
}

impl CliError {
    /// The process's exit code: 2 for usage errors, 1 for the rest.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            _ => 1,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(e) => e.fmt(f),
            CliError::Up(e) => e.fmt(f),
            CliError::Config(e) => e.fmt(f),
            CliError::Read { what, error } => write!(f, "{what}: {error}"),
            CliError::Ctl(e) => e.fmt(f),
            CliError::Listen { bind, port, error } => write!(f, "{bind} port {port}: {error}"),
            CliError::Perf(e) => e.fmt(f),
            CliError::Lab(e) => e.fmt(f),
            CliError::NeedsRoot { scenario } => {
                write!(
                    f,
                    "{scenario}: needs root and iproute2 (network namespaces)"
                )
            }
            CliError::Speed {
                suite,
                backend,
                error,
            } => write!(f, "{suite} on {backend}: {error}"),
            CliError::Json(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CliError::Usage(e) => Some(e),
            CliError::Up(e) => Some(e),
            CliError::Config(e) => Some(e),
            CliError::Read { error, .. } | CliError::Listen { error, .. } => Some(error),
            CliError::Ctl(e) => Some(e),
            CliError::Perf(e) => Some(e),
            CliError::Lab(e) => Some(e),
            CliError::Speed { error, .. } => Some(error.as_ref()),
            CliError::Json(e) => Some(e),
            CliError::NeedsRoot { .. } => None,
        }
    }
}

impl From<UsageError> for CliError {
    fn from(e: UsageError) -> Self {
        CliError::Usage(e)
    }
}

impl From<PerfError> for CliError {
    fn from(e: PerfError) -> Self {
        CliError::Perf(e)
    }
}

impl From<LabError> for CliError {
    fn from(e: LabError) -> Self {
        CliError::Lab(e)
    }
}

impl From<CtlError> for CliError {
    fn from(e: CtlError) -> Self {
        CliError::Ctl(e)
    }
}

/// Which arguments are wrong, and how.
#[derive(Debug)]
#[non_exhaustive]
pub enum UsageError {
    // --- flowsec ctl
    /// `ctl initiate|terminate|rekey` without `--ike` or `--child`.
    CtlNeedsName {
        /// The command.
        cmd: &'static str,
    },
    /// `ctl redirect` without `--gateway`.
    CtlRedirect,
    // --- flowsec up
    /// `--mtu` out of 576..=9000.
    Mtu(u16),
    /// `--workers 0`.
    NoWorkers,
    /// `--tcp-listen 0`.
    TcpPort,
    /// `--fragment-size` out of 256..=65535.
    FragmentSize(usize),
    /// `--vici` is no `unix:///PATH`, `tcp://ADDR:PORT` or `none`.
    Vici(String),
    /// `--log-file` cannot be opened.
    LogFile(flowsec_daemon::log::LogFileError),
    /// `--workers` above 256.
    TooManyWorkers(usize),
    /// `--ctl-group` names no group.
    CtlGroup(GroupError),
    /// `--backend` names no crypto backend.
    UpBackend(String),
    /// `--retransmit-*` out of range.
    Retransmit,
    // --- flowsec setkey
    /// `-D` with `-F`.
    DumpAndFlush,
    /// `-P` without `-D` or `-F`.
    PolicyAlone,
    /// `-f` with `-c`.
    FileAndStdin,
    /// `-D`/`-F` with `-f`/`-c`.
    DumpWithInput,
    /// `-n` without `-f`/`-c`.
    CheckWithoutInput,
    /// No `-f`, `-c`, `-D` or `-F`.
    NothingToDo,
    // --- flowsec speed
    /// `--seconds` out of (0, 60].
    SpeedSeconds,
    /// A packet size out of 28..=60000.
    SpeedSize(usize),
    /// A suite that does not parse.
    Suite(flowsec_crypto::suite::BadSuite),
    /// `--backend` names no crypto backend (or `all`).
    SpeedBackend(String),
    // --- flowsec lab
    /// `--impl` names no implementation.
    LabImpl(String),
    /// `lab conf`'s words describe no swanctl.conf.
    LabConf(flowsec_lab::ConfArgError),
    /// A scenario that does not exist.
    Scenario {
        /// The name given.
        name: String,
        /// The scenarios there are.
        known: Vec<&'static str>,
    },
    // --- flowsec perf
    /// `-t` names no test.
    PerfTest {
        /// The name given.
        test: String,
        /// The tests there are (besides MAXRATE and PING).
        known: Vec<&'static str>,
    },
    /// `-r` is not `REQ[,RSP]`.
    RequestResponse(String),
    /// `--payload` is none of random, text, zeros.
    Payload(String),
    /// A rate that does not parse.
    Rate {
        /// The option.
        flag: &'static str,
        /// The value given.
        value: String,
    },
    /// `--loss-tolerance` out of [0, 1).
    LossTolerance,
    /// PING's `--sizes` out of 1..=65507.
    PingSizes,
    /// PING's `--count` or `--interval` out of range.
    PingCount,
    /// The test's sizes, durations and connections.
    Spec(SpecError),
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use UsageError as U;
        match self {
            U::CtlNeedsName { cmd } => write!(f, "ctl {cmd}: name --ike NAME and/or --child NAME"),
            U::CtlRedirect => f.write_str(
                "ctl redirect: --gateway GW and at least one of --ike, --peer-ip, --peer-id",
            ),
            U::Mtu(mtu) => write!(f, "--mtu {mtu} out of range 576..=9000"),
            U::NoWorkers => f.write_str("--workers must be at least 1"),
            U::TcpPort => f.write_str("--tcp-listen: a port from 1 to 65535"),
            U::LogFile(e) => write!(f, "--log-file {e}"),
            U::FragmentSize(n) => write!(f, "--fragment-size {n}: from 256 to 65535 bytes"),
            U::TooManyWorkers(n) => write!(f, "--workers {n}: at most 256"),
            U::Vici(v) => write!(f, "--vici {v}: unix:///PATH, tcp://ADDR:PORT or none"),
            U::CtlGroup(e) => write!(f, "--ctl-group: {e}"),
            U::UpBackend(b) => write!(f, "--backend {b}: one of auto, aws-lc, rustcrypto, engine"),
            U::Retransmit => f.write_str(
                "--retransmit-timeout 0.05..=3600, --retransmit-base 1..=10, \
                 --retransmit-tries 0..=20",
            ),
            U::DumpAndFlush => f.write_str("-D and -F are exclusive"),
            U::PolicyAlone => f.write_str("-P goes with -D or -F"),
            U::FileAndStdin => f.write_str("-f and -c are exclusive"),
            U::DumpWithInput => f.write_str("-D/-F take no -f/-c"),
            U::CheckWithoutInput => f.write_str("-n checks -f or -c input"),
            U::NothingToDo => f.write_str("nothing to do: give -f FILE, -c, -D or -F"),
            U::SpeedSeconds => f.write_str("--seconds must be in (0, 60]"),
            U::SpeedSize(size) => write!(f, "size {size} out of range 28..=60000"),
            U::Suite(e) => write!(f, "suite {e}"),
            U::SpeedBackend(name) => write!(
                f,
                "unknown backend '{name}' (auto, aws-lc, rustcrypto, engine, all)"
            ),
            U::LabImpl(name) => {
                write!(
                    f,
                    "--impl {name}: flowsec, none, strongswan or wireguard-go"
                )
            }
            U::LabConf(e) => write!(f, "lab conf: {e}"),
            U::Scenario { name, known } => {
                write!(f, "unknown scenario '{name}' (all, {})", known.join(", "))
            }
            U::PerfTest { test, known } => {
                write!(f, "-t {test}: one of {}, MAXRATE, PING", known.join(", "))
            }
            U::RequestResponse(rr) => write!(f, "-r {rr}: REQ[,RSP] in bytes"),
            U::Payload(v) => write!(f, "--payload {v}: random, text or zeros"),
            U::Rate { flag, value } => write!(f, "{flag} {value}: like 13M, 500k, 1G"),
            U::LossTolerance => f.write_str("--loss-tolerance in [0, 1)"),
            U::PingSizes => f.write_str("--sizes: payloads of 1..=65507 bytes"),
            U::PingCount => f.write_str("--count >= 1 and --interval in (0, 60]"),
            U::Spec(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for UsageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            UsageError::CtlGroup(e) => Some(e),
            UsageError::LogFile(e) => Some(e),
            UsageError::Spec(e) => Some(e),
            UsageError::LabConf(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_exit_2_the_rest_exit_1() {
        let usage = CliError::from(UsageError::NoWorkers);
        assert_eq!(usage.exit_code(), 2);
        assert_eq!(usage.to_string(), "--workers must be at least 1");
        let needs = CliError::NeedsRoot { scenario: "s1-dbs" };
        assert_eq!(needs.exit_code(), 1);
        assert_eq!(
            needs.to_string(),
            "s1-dbs: needs root and iproute2 (network namespaces)"
        );
        let ctl = CliError::from(CtlError::Daemon {
            message: "live-bad.setkey:2:1: no SA".into(),
        });
        assert_eq!(ctl.exit_code(), 1);
        assert_eq!(ctl.to_string(), "live-bad.setkey:2:1: no SA");
    }
}
