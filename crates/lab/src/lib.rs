//! `flowsec lab`: scenarios that reproduce the published IPsec studies of
//! `../shared/STUDIES.md` on this machine. Each scenario is data (the
//! study's parameters and figures) plus a measurement; it writes
//! `results.json`, `results.md` and PNG and SVG charts ([`chart`]), prints
//! the study's figure beside today's, and a verdict per finding of the
//! study, computed from the numbers (never written by hand). A saved run's
//! charts can be drawn again from its `results.json` ([`replot`]).
//!
//! Scenarios: `s1-dbs`, `s1-netperf`, `s1-stream` (study S1's E1a–c),
//! `s2-maxrate`, `s2-rtt`, `s2-rekey` (S2's E2a–c), `s3-matrix` (S3) on the namespace
//! topology of [`topology`] with the gateways of [`bed`], and `s4-crypto`
//! (S4, crypto-engine offload, in process).
//!
//! `unsafe` is denied here except in `sys`: the lab's few libc calls
//! (catching SIGINT/SIGTERM, signalling its own children, its effective
//! uid), each with a `// SAFETY:` line.
#![deny(unsafe_code)]

mod axis;
pub mod bed;
pub mod chart;
mod error;
pub mod ike_bed;
pub mod peers;
mod progress;
mod report;
mod s1_dbs;
mod s1_netperf;
mod s1_stream;
mod s2;
mod s2_rekey;
mod s2_rtt;
mod s3_matrix;
mod s4;
mod s4_sslvpn;
mod s5_app;
mod s5_micro;
mod saved;
pub mod swanctl;
mod sys;
pub mod topology;

pub use chart::{ChartError, Plot, PlotKind, Series};
pub use error::LabError;
pub use peers::{Peer, PeerError};
pub use report::{combine, Finding, Report, Table};
pub use saved::{replot, UpgradeError};
pub use swanctl::{ConfArgError, SwanctlConf};

/// How to run a scenario.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Shorter measurements (CI: every scenario in minutes).
    pub quick: bool,
    /// The implementations measured beside flowsec and `none` where a
    /// scenario has rows for them (those two always are: the studies'
    /// findings are computed from them).
    pub peers: Vec<Peer>,
}

impl RunOptions {
    /// Every implementation.
    pub fn new(quick: bool) -> RunOptions {
        RunOptions {
            quick,
            peers: Peer::OTHERS.to_vec(),
        }
    }

    /// `setup` done by each chosen peer that can do it and is installed;
    /// each one left out goes into `skipped` with why (and to stderr, as
    /// `lab run` goes).
    pub(crate) fn others(&self, setup: &bed::Setup, skipped: &mut Vec<String>) -> Vec<bed::Setup> {
        let mut setups = Vec::new();
        for &peer in &self.peers {
            let s = setup.clone().on(peer);
            match peer.applies(&s).and_then(|()| peer.installed()) {
                Ok(()) => setups.push(s),
                Err(why) => {
                    let line = format!(
                        "{} ({} {}): {why}",
                        peer.name(),
                        setup.mode.name(),
                        setup.label()
                    );
                    eprintln!("flowsec lab: skipped {line}");
                    if !skipped.contains(&line) {
                        skipped.push(line);
                    }
                }
            }
        }
        setups
    }
}

/// One experiment of one study.
pub trait Scenario: Sync {
    /// The name `lab run` takes (`s4-crypto`).
    fn name(&self) -> &'static str;
    /// One line: the study and what is measured.
    fn summary(&self) -> &'static str;
    /// Whether it needs root (network namespaces).
    fn needs_root(&self) -> bool;
    /// Measure, compare with the study, and report.
    fn run(&self, opts: &RunOptions) -> Result<Report, LabError>;
}

/// Every scenario, in `lab list` order.
pub fn scenarios() -> Vec<&'static dyn Scenario> {
    vec![
        &s1_dbs::S1Dbs,
        &s1_netperf::S1Netperf,
        &s1_stream::S1Stream,
        &s2::S2MaxRate,
        &s2_rtt::S2Rtt,
        &s2_rekey::S2Rekey,
        &s3_matrix::S3Matrix,
        &s4::S4Crypto,
        &s5_micro::S5Micro,
        &s5_app::S5App,
    ]
}

/// A fresh scratch directory for one scenario's logs and setkey files.
pub(crate) fn work_dir(tag: &str) -> Result<std::path::PathBuf, LabError> {
    let work = std::env::temp_dir().join(format!("flowsec-lab-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(error::at(&work))?;
    Ok(work)
}

/// A figure and its ratio to `base`: `23.1 (0.38×)`.
pub(crate) fn cell(v: f64, base: f64) -> String {
    let n = if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    };
    if base > 0.0 && base.is_finite() && v.is_finite() {
        format!("{n} ({:.2}×)", v / base)
    } else {
        n
    }
}

/// The mean of `xs` (NaN if empty).
pub(crate) fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// The coefficient of variation of `xs` (standard deviation over mean;
/// 0 for fewer than two values or a zero mean): how much a per-second
/// series wanders.
pub(crate) fn cv(xs: &[f64]) -> f64 {
    let m = mean(xs);
    if xs.len() < 2 || m <= 0.0 {
        return 0.0;
    }
    (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / xs.len() as f64).sqrt() / m
}

/// `f` of each whole second of a test's per-second record (a last,
/// partial second would look like a dip).
pub(crate) fn whole_seconds(
    o: &flowsec_perf::Outcome,
    f: impl Fn(&flowsec_perf::Second) -> f64,
) -> Vec<f64> {
    o.per_second
        .iter()
        .take(o.elapsed_s.floor() as usize)
        .map(f)
        .collect()
}

/// The scenario called `name`.
pub fn scenario(name: &str) -> Option<&'static dyn Scenario> {
    scenarios().into_iter().find(|s| s.name() == name)
}
