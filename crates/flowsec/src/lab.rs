//! `flowsec lab`: run the scenarios that reproduce the studies of
//! `../shared/STUDIES.md`, each writing results.json, results.md and plots,
//! and combine runs into one report.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use flowsec_lab::{scenario, scenarios, Peer, RunOptions, Scenario};

use crate::{CliError, UsageError};

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
        /// Where reports go: OUT/SCENARIO/{results.json,results.md,*.png,*.svg}.
        #[arg(long, default_value = "lab-results")]
        out: PathBuf,
        /// Implementations to measure where a scenario has rows for them:
        /// flowsec, none, strongswan, wireguard-go (flowsec and none always
        /// run: the studies' findings are computed from them; a peer that
        /// is not installed is skipped with a message).
        #[arg(
            long = "impl",
            value_delimiter = ',',
            default_value = "flowsec,none,strongswan,wireguard-go"
        )]
        impls: Vec<String>,
    },
    /// Combine the runs under DIR into DIR/report.md and DIR/report.html.
    Report {
        /// A directory `lab run --out` wrote.
        dir: PathBuf,
    },
    /// Print a swanctl.conf (the text flowsec up -c and strongSwan's
    /// swanctl both read) from section words: `[--comment TEXT]
    /// conn NAME [--KEY VALUE]... [child NAME [--KEY VALUE]...]...
    /// [pool NAME ...] [secret NAME --id ID --secret S]...`; a `--KEY` is
    /// swanctl's key with `-` for `_`, `--local-KEY`/`--remote-KEY` go to
    /// the connection's local/remote section, `--auth psk` to both.
    Conf {
        /// The section words.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        words: Vec<String>,
    },
    /// Build the lab's four namespaces (hostA - gwA ==transit== gwB -
    /// hostB) and leave them (`up`), or remove them (`down`): the one
    /// topology builder, driven by the end-to-end scripts too.
    Net {
        /// `up` or `down`.
        #[arg(value_parser = ["up", "down"])]
        action: String,
        /// Namespace names are PREFIX and the host (`fs123-gwA`).
        #[arg(long)]
        prefix: String,
        /// No plain routes between the sites (a tunnel brings its own).
        #[arg(long)]
        no_site_routes: bool,
        /// As the end-to-end tests want it: no reverse-path filter on the
        /// gateways, the veths' offloads off (ethtool).
        #[arg(long)]
        for_tests: bool,
    },
    /// Draw the charts of the runs under DIR again from their
    /// results.json (PNG, SVG, results.md, the combined report), measuring
    /// nothing.
    Plot {
        /// A directory `lab run --out` wrote.
        dir: PathBuf,
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
        LabCommand::Report { dir } => {
            let n = flowsec_lab::combine(dir)?;
            println!(
                "{n} scenario reports combined into {} and {}",
                dir.join("report.md").display(),
                dir.join("report.html").display()
            );
            Ok(())
        }
        LabCommand::Plot { dir } => {
            let n = flowsec_lab::replot(dir)?;
            println!(
                "{n} scenario runs redrawn under {}, combined into {}",
                dir.display(),
                dir.join("report.html").display()
            );
            Ok(())
        }
        LabCommand::Net {
            action,
            prefix,
            no_site_routes,
            for_tests,
        } => {
            if action == "down" {
                flowsec_lab::topology::Topology::remove(prefix);
                return Ok(());
            }
            let how = flowsec_lab::topology::Build {
                prefix: prefix.clone(),
                site_routes: !no_site_routes,
                for_tests: *for_tests,
            };
            flowsec_lab::topology::Topology::build_with(&how)?.keep();
            Ok(())
        }
        LabCommand::Conf { words } => {
            let conf = flowsec_lab::SwanctlConf::from_args(words).map_err(UsageError::LabConf)?;
            print!("{}", conf.render());
            Ok(())
        }
        LabCommand::Run {
            scenarios: names,
            quick,
            out,
            impls,
        } => run_scenarios(names, *quick, out, impls),
    }
}

/// `lab run`: each scenario chosen in turn, its report under OUT and its
/// findings on stdout; then every run under OUT combined.
fn run_scenarios(
    names: &[String],
    quick: bool,
    out: &Path,
    impls: &[String],
) -> Result<(), CliError> {
    let opts = run_options(quick, impls)?;
    let all = names.iter().any(|n| n == "all");
    let chosen = chosen(names, all)?;
    flowsec_lab::topology::catch_interrupts();
    let can = flowsec_lab::topology::can_build();
    for s in chosen {
        if s.needs_root() && !can {
            let why = CliError::NeedsRoot { scenario: s.name() };
            if all {
                eprintln!("flowsec lab: skipped {why}");
                continue;
            }
            return Err(why);
        }
        run_one(s, &opts, out)?;
    }
    // Every run under OUT (this one's and earlier ones') in one
    // report.
    if let Ok(n) = flowsec_lab::combine(out) {
        println!(
            "lab: {n} scenario reports in {}",
            out.join("report.html").display()
        );
    }
    Ok(())
}

/// The options `--quick` and `--impl` name: the other implementations
/// once each (flowsec and none always run).
fn run_options(quick: bool, impls: &[String]) -> Result<RunOptions, CliError> {
    let mut opts = RunOptions::new(quick);
    opts.peers.clear();
    for name in impls {
        match Peer::from_name(name) {
            Some(p) if Peer::OTHERS.contains(&p) && !opts.peers.contains(&p) => opts.peers.push(p),
            // flowsec and none always run.
            Some(_) => {}
            None if name == "none" => {}
            None => return Err(UsageError::LabImpl(name.clone()).into()),
        }
    }
    Ok(opts)
}

/// The scenarios named (every one for `all`), or which name is unknown.
fn chosen(names: &[String], all: bool) -> Result<Vec<&'static dyn Scenario>, CliError> {
    if all {
        return Ok(scenarios());
    }
    let chosen = names
        .iter()
        .map(|n| {
            scenario(n).ok_or_else(|| UsageError::Scenario {
                name: n.clone(),
                known: scenarios().iter().map(|s| s.name()).collect(),
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(chosen)
}

/// One scenario: run, report written under OUT/NAME, findings printed.
fn run_one(s: &dyn Scenario, opts: &RunOptions, out: &Path) -> Result<(), CliError> {
    eprintln!("flowsec lab: {} ...", s.name());
    let report = s.run(opts)?;
    let dir = out.join(s.name());
    report.write(&dir)?;
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
    Ok(())
}
