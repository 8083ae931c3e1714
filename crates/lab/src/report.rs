//! What a scenario reports, and how it is written: `results.json` (all of
//! it, the charts as data), `results.md` (tables and verdicts) and a PNG
//! and an SVG per chart.

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::chart::{self, Plot};
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
    /// Implementations this run left out, and why (`strongswan: not
    /// installed`).
    #[serde(default)]
    pub skipped: Vec<String>,
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
            skipped: Vec::new(),
        }
    }

    /// Write `results.json`, `results.md` and the plots into `dir`.
    pub fn write(&self, dir: &Path) -> Result<(), LabError> {
        let err = |error: std::io::Error| LabError::Io {
            path: dir.to_path_buf(),
            error,
        };
        std::fs::create_dir_all(dir).map_err(err)?;
        let json = serde_json::to_string_pretty(self).map_err(LabError::Json)?;
        std::fs::write(dir.join("results.json"), json + "\n").map_err(err)?;
        std::fs::write(dir.join("results.md"), self.markdown()).map_err(err)?;
        for p in &self.plots {
            let drawn = |error: chart::ChartError| LabError::Chart {
                file: p.file.clone(),
                error,
            };
            let svg = chart::svg(p).map_err(drawn)?;
            std::fs::write(dir.join(format!("{}.svg", p.file)), svg).map_err(err)?;
            let png = chart::png(p).map_err(drawn)?;
            std::fs::write(dir.join(format!("{}.png", p.file)), png).map_err(err)?;
        }
        Ok(())
    }

    /// The Markdown report, its plots beside it.
    pub fn markdown(&self) -> String {
        self.markdown_in("", 1)
    }

    /// The Markdown report with plot paths under `prefix` and headings
    /// `level` deep.
    fn markdown_in(&self, prefix: &str, level: usize) -> String {
        let h = "#".repeat(level);
        let mut s = String::new();
        if level > 1 {
            // An anchor the combined report's summary links to.
            let _ = writeln!(s, "<a id=\"{}\"></a>\n", self.scenario);
        }
        let _ = writeln!(s, "{h} {} — {}\n", self.scenario, self.study);
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
            let _ = writeln!(s, "{h}# {}\n", t.title);
            let _ = writeln!(s, "| {} |", t.columns.join(" | "));
            let _ = writeln!(s, "|{}", "---|".repeat(t.columns.len()));
            for r in &t.rows {
                let _ = writeln!(s, "| {} |", r.join(" | "));
            }
            s.push('\n');
        }
        for why in &self.skipped {
            let _ = writeln!(s, "Not measured: {why}.\n");
        }
        let _ = writeln!(s, "{h}# Findings\n");
        for f in &self.findings {
            let verdict = if f.holds { "**holds**" } else { "**differs**" };
            let _ = writeln!(s, "- {verdict}: {} — {}", f.claim, f.evidence);
        }
        s.push('\n');
        for p in &self.plots {
            let _ = writeln!(s, "![{}]({prefix}{}.png)", p.title, p.file);
        }
        s
    }

    /// The report as an HTML section, plots inline as SVG.
    fn html(&self) -> Result<String, LabError> {
        let e = html_escape;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "<section id=\"{0}\"><h2>{0} — {1}</h2>\n<p>{2}{3}</p><p>Machine: {4}.</p>",
            e(&self.scenario),
            e(&self.study),
            e(&self.method),
            if self.quick {
                " (<code>--quick</code>: shortened)"
            } else {
                ""
            },
            e(&self.machine)
        );
        for t in &self.tables {
            let _ = writeln!(s, "<h3>{}</h3>\n<table>\n<tr>", e(&t.title));
            for c in &t.columns {
                let _ = write!(s, "<th>{}</th>", e(c));
            }
            s.push_str("</tr>\n");
            for r in &t.rows {
                s.push_str("<tr>");
                for c in r {
                    let _ = write!(s, "<td>{}</td>", e(c));
                }
                s.push_str("</tr>\n");
            }
            s.push_str("</table>\n");
        }
        for why in &self.skipped {
            let _ = writeln!(s, "<p>Not measured: {}.</p>", e(why));
        }
        s.push_str("<h3>Findings</h3>\n<ul>\n");
        for f in &self.findings {
            let _ = writeln!(
                s,
                "<li><b class=\"{0}\">{0}</b>: {1} — {2}</li>",
                if f.holds { "holds" } else { "differs" },
                e(&f.claim),
                e(&f.evidence)
            );
        }
        s.push_str("</ul>\n");
        for p in &self.plots {
            let svg = chart::svg(p).map_err(|error| LabError::Chart {
                file: p.file.clone(),
                error,
            })?;
            s.push_str(&svg);
            s.push('\n');
        }
        s.push_str("</section>\n");
        Ok(s)
    }
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `flowsec lab report DIR`: read every `DIR/*/results.json` and write
/// `DIR/report.md` (a summary table, then each scenario's report) and
/// `DIR/report.html` (the same, plots inline). Returns how many reports
/// were combined.
pub fn combine(dir: &Path) -> Result<usize, LabError> {
    let reports: Vec<(String, Report)> = crate::saved::load_all(dir)?
        .into_iter()
        .map(|(sub, report)| {
            let name = sub
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (name, report)
        })
        .collect();
    if reports.is_empty() {
        return Err(LabError::NoResults {
            dir: dir.to_path_buf(),
        });
    }
    let mut md = String::from("# flowsec lab report\n\n| scenario | study | run | holds | differs |\n|---|---|---|---|---|\n");
    let mut html = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>flowsec lab report</title>\n<style>body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}.holds{color:#2ca02c}.differs{color:#d62728}</style></head><body>\n<h1>flowsec lab report</h1>\n<table><tr><th>scenario</th><th>study</th><th>run</th><th>holds</th><th>differs</th></tr>\n",
    );
    for (_, r) in &reports {
        let holds = r.findings.iter().filter(|f| f.holds).count();
        let differs = r.findings.len() - holds;
        let run = if r.quick { "quick" } else { "full" };
        let _ = writeln!(
            md,
            "| [{}](#{}) | {} | {run} | {holds} | {differs} |",
            r.scenario, r.scenario, r.study
        );
        let _ = writeln!(
            html,
            "<tr><td><a href=\"#{0}\">{0}</a></td><td>{1}</td><td>{run}</td><td>{holds}</td><td>{differs}</td></tr>",
            html_escape(&r.scenario),
            html_escape(&r.study)
        );
    }
    html.push_str("</table>\n");
    md.push('\n');
    for (name, r) in &reports {
        md.push_str(&r.markdown_in(&format!("{name}/"), 2));
        md.push('\n');
        html.push_str(&r.html()?);
    }
    html.push_str("</body></html>\n");
    for (file, text) in [("report.md", md), ("report.html", html)] {
        let path = dir.join(file);
        std::fs::write(&path, text).map_err(crate::error::at(&path))?;
    }
    Ok(reports.len())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_combine_into_markdown_and_html() {
        let dir = std::env::temp_dir().join(format!("flowsec-report-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(combine(&dir).is_err(), "no directory");
        std::fs::create_dir_all(&dir).unwrap();
        let e = combine(&dir).unwrap_err();
        assert!(
            matches!(&e, LabError::NoResults { dir: d } if *d == dir),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "{0}: no */results.json (run `flowsec lab run ... --out {0}` first)",
                dir.display()
            )
        );
        for (name, holds) in [("s9-a", true), ("s9-b", false)] {
            let r = Report {
                tables: vec![Table {
                    title: "T <1>".into(),
                    columns: vec!["a".into(), "b".into()],
                    rows: vec![vec!["1".into(), "2".into()]],
                }],
                findings: vec![Finding {
                    claim: "c".into(),
                    holds,
                    evidence: "e & f".into(),
                }],
                plots: vec![Plot {
                    file: name.into(),
                    title: "p".into(),
                    kind: chart::PlotKind::Lines,
                    x_label: "x".into(),
                    y_label: "y".into(),
                    log_y: false,
                    log_x: false,
                    markers: Vec::new(),
                    series: vec![chart::Series::today("s", 0, [(1.0, 2.0), (2.0, 3.0)])],
                    note: String::new(),
                }],
                ..Report::new(name, "study", true, "method".into())
            };
            r.write(&dir.join(name)).unwrap();
            assert!(dir.join(name).join(format!("{name}.png")).is_file());
        }
        assert_eq!(combine(&dir).unwrap(), 2);
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(
            md.contains("| [s9-a](#s9-a) | study | quick | 1 | 0 |"),
            "{md}"
        );
        assert!(
            md.contains("| [s9-b](#s9-b) | study | quick | 0 | 1 |"),
            "{md}"
        );
        assert!(md.contains("![p](s9-b/s9-b.png)"), "{md}");
        assert!(md.contains("### T <1>"), "{md}");
        let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
        assert_eq!(html.matches("<svg").count(), 2);
        assert!(html.contains("T &lt;1&gt;") && html.contains("e &amp; f"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
