//! What a scenario reports, and how it is written: `results.json` (all of
//! it), `results.md` (tables and verdicts) and one SVG per plot.

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::LabError;

/// A table: the study's figures and today's, side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// A claim of the study, checked against today's numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// What the study found, in a sentence.
    pub claim: String,
    /// Whether today's numbers show the same.
    pub holds: bool,
    /// The numbers the verdict was computed from.
    pub evidence: String,
}

/// One line of a plot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// A line plot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plot {
    /// File name without extension.
    pub file: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// A logarithmic y axis (values spanning decades).
    pub log_y: bool,
    pub series: Vec<Series>,
}

/// Everything one scenario run found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub scenario: String,
    pub study: String,
    pub quick: bool,
    /// Where and when (machine line, UTC seconds).
    pub machine: String,
    pub unix_time: u64,
    pub method: String,
    pub tables: Vec<Table>,
    pub findings: Vec<Finding>,
    pub plots: Vec<Plot>,
}

impl Report {
    /// A report of `scenario` on this machine, now, with nothing in it yet.
    pub fn new(scenario: &str, study: &str, quick: bool, method: String) -> Report {
        Report {
            scenario: scenario.into(),
            study: study.into(),
            quick,
            machine: machine(),
            unix_time: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            method,
            tables: Vec::new(),
            findings: Vec::new(),
            plots: Vec::new(),
        }
    }

    /// Write `results.json`, `results.md` and the plots into `dir`.
    pub fn write(&self, dir: &Path) -> Result<(), LabError> {
        let err = |e: std::io::Error| LabError(format!("{}: {e}", dir.display()));
        std::fs::create_dir_all(dir).map_err(err)?;
        let json = serde_json::to_string_pretty(self).map_err(|e| LabError(e.to_string()))?;
        std::fs::write(dir.join("results.json"), json + "\n").map_err(err)?;
        std::fs::write(dir.join("results.md"), self.markdown()).map_err(err)?;
        for p in &self.plots {
            std::fs::write(
                dir.join(format!("{}.svg", p.file)),
                crate::svg::line_plot(p),
            )
            .map_err(err)?;
        }
        Ok(())
    }

    /// The Markdown report.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# {} — {}\n", self.scenario, self.study);
        let _ = writeln!(
            s,
            "{}{}\n\nMachine: {}.\n",
            self.method,
            if self.quick {
                " (`--quick`: shortened)"
            } else {
                ""
            },
            self.machine
        );
        for t in &self.tables {
            let _ = writeln!(s, "## {}\n", t.title);
            let _ = writeln!(s, "| {} |", t.columns.join(" | "));
            let _ = writeln!(s, "|{}", "---|".repeat(t.columns.len()));
            for r in &t.rows {
                let _ = writeln!(s, "| {} |", r.join(" | "));
            }
            s.push('\n');
        }
        let _ = writeln!(s, "## Findings\n");
        for f in &self.findings {
            let verdict = if f.holds { "**holds**" } else { "**differs**" };
            let _ = writeln!(s, "- {verdict}: {} — {}", f.claim, f.evidence);
        }
        s.push('\n');
        for p in &self.plots {
            let _ = writeln!(s, "![{}]({}.svg)", p.title, p.file);
        }
        s
    }
}

/// A one-line description of this machine.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|k| k.trim().to_string())
        .unwrap_or_default();
    format!("{cpus} CPUs ({cpu}), Linux {kernel}")
}
