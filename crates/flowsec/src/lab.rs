//! `flowsec lab`: run the scenarios that reproduce the studies of
//! `../shared/STUDIES.md`, each writing results.json, results.md and plots.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use flowsec_lab::{scenario, scenarios, RunOptions};

use crate::CliError;

/// Arguments of `flowsec lab`.
#[derive(Args, Debug)]
pub struct LabArgs {
    #[command(subcommand)]
    pub what: LabCommand,
}

#[derive(Subcommand, Debug)]
pub enum LabCommand {
    /// The scenarios, one line each.
    List,
    /// Run scenarios (`all` for every one) and write their reports.
    Run {
        /// Scenario names, or `all`.
        #[arg(required = true)]
        scenarios: Vec<String>,
        /// Shortened measurements (CI).
        #[arg(long)]
        quick: bool,
        /// Where reports go: OUT/SCENARIO/{results.json,results.md,*.svg}.
        #[arg(long, default_value = "lab-results")]
        out: PathBuf,
    },
}

pub fn run(args: &LabArgs) -> Result<(), CliError> {
    match &args.what {
        LabCommand::List => {
            for s in scenarios() {
                println!(
                    "{:<12} {}{}",
                    s.name(),
                    s.summary(),
                    if s.needs_root() { " (root)" } else { "" }
                );
            }
            Ok(())
        }
        LabCommand::Run {
            scenarios: names,
            quick,
            out,
        } => {
            let chosen: Vec<_> = if names.iter().any(|n| n == "all") {
                scenarios()
            } else {
                names
                    .iter()
                    .map(|n| {
                        scenario(n).ok_or_else(|| {
                            let all: Vec<&str> = scenarios().iter().map(|s| s.name()).collect();
                            CliError::Usage(format!(
                                "unknown scenario '{n}' (all, {})",
                                all.join(", ")
                            ))
                        })
                    })
                    .collect::<Result<_, _>>()?
            };
            let root = is_root();
            for s in chosen {
                if s.needs_root() && !root {
                    return Err(CliError::Runtime(format!(
                        "{}: needs root (network namespaces)",
                        s.name()
                    )));
                }
                eprintln!("flowsec lab: {} ...", s.name());
                let report = s
                    .run(&RunOptions { quick: *quick })
                    .map_err(|e| CliError::Runtime(e.to_string()))?;
                let dir = out.join(s.name());
                report
                    .write(&dir)
                    .map_err(|e| CliError::Runtime(e.to_string()))?;
                for f in &report.findings {
                    println!(
                        "{}: {}: {} — {}",
                        s.name(),
                        if f.holds { "holds" } else { "differs" },
                        f.claim,
                        f.evidence
                    );
                }
                println!(
                    "{}: report in {}",
                    s.name(),
                    dir.join("results.md").display()
                );
            }
            Ok(())
        }
    }
}

/// Root, as /proc/self/status's effective uid says (no libc call needed).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|e| e == "0"))
        })
        .unwrap_or(false)
}
