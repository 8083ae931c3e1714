//! `flowsec`: a user-space IPsec VPN for Linux.
//!
//! Exit codes: 0 success, 1 runtime error, 2 usage error (ARCHITECTURE.md
//! "Interfaces people already know").
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod ctl;
mod error;
mod lab;
mod perf;
mod setkey;
mod speed;
mod up;
mod vici_client;

/// User-space IPsec (ESP/AH/IPComp) for Linux.
#[derive(Parser)]
#[command(name = "flowsec", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Measure ESP/AH seal and open throughput per suite and packet size,
    /// on one core, like `openssl speed`.
    Speed(speed::SpeedArgs),
    /// Manual keying in KAME/ipsec-tools setkey syntax against the running
    /// daemon: -f FILE, -c, -D, -DP, -F, -FP; -n checks without applying.
    Setkey(setkey::SetkeyArgs),
    /// Run the VPN daemon in the foreground (IKEv2 from a swanctl.conf-style
    /// file with -c, and/or manual keys in setkey syntax; tunnel and
    /// transport mode; IPv4 and IPv6).
    Up(Box<up::UpArgs>),
    /// Ask a running daemon: status, sas, policies, stats (--json);
    /// initiate, terminate, rekey (--ike, --child).
    Ctl(ctl::CtlArgs),
    /// Traffic tests like netperf: `perf server`, `perf client -H HOST -t
    /// TCP_STREAM|UDP_STREAM|TCP_RR|UDP_RR|TCP_CRR|CBR|MAXRATE|PING`.
    Perf(perf::PerfArgs),
    /// Reproduce the studies: `lab list`, `lab run SCENARIO...|all
    /// [--quick] [--out DIR]`, `lab report DIR`, `lab plot DIR`; `lab conf
    /// WORDS...` prints a swanctl.conf (the e2e scripts' one generator).
    Lab(lab::LabArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Speed(args) => speed::run(&args),
        Command::Setkey(args) => setkey::run(&args),
        Command::Up(args) => up::run(&args),
        Command::Ctl(args) => ctl::run(&args),
        Command::Perf(args) => perf::run(&args),
        Command::Lab(args) => lab::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("flowsec: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

pub use error::{CliError, UsageError};
