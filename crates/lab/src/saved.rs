//! A saved run read back: `results.json` into a [`Report`], and
//! `flowsec lab plot DIR` ([`replot`]), which draws a saved run's charts
//! again with today's renderer, without measuring anything.
//!
//! A `results.json` written before charts were data (its plots have no
//! `kind`: lines over category numbers, drawn by the old hand-made
//! renderer) is read with each scenario's chart rebuilt from what the
//! file holds: the old plot's points, and the tables' figures where the
//! chart needs more (the per-second spread of s1-dbs and s1-stream, the
//! AEAD rows of s1-netperf). The standard deviations of s2-rtt's echoes
//! were never saved: its charts come back without whiskers.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::chart::{Plot, PlotKind, Series};
use crate::error::at;
use crate::report::{combine, Report, Table};
use crate::{s1_dbs, s1_netperf, s1_stream, s2, s2_rtt, s3_matrix, s4, LabError};

/// `flowsec lab plot DIR`: for every `DIR/*/results.json`, write the
/// charts (PNG, SVG) again, and `results.json` (upgraded, see the module)
/// and `results.md` with them; then the combined report. Returns how many
/// runs were redrawn.
pub fn replot(dir: &Path) -> Result<usize, LabError> {
    let runs = load_all(dir)?;
    for (sub, report) in &runs {
        report.write(sub)?;
    }
    combine(dir)?;
    Ok(runs.len())
}

/// Every `DIR/*/results.json`, in name order, with its directory.
pub(crate) fn load_all(dir: &Path) -> Result<Vec<(PathBuf, Report)>, LabError> {
    let entries = std::fs::read_dir(dir).map_err(at(dir))?;
    let mut subdirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("results.json").is_file())
        .collect();
    subdirs.sort();
    subdirs
        .into_iter()
        .map(|sub| {
            let report = load(&sub.join("results.json"))?;
            Ok((sub, report))
        })
        .collect()
}

/// One `results.json`.
pub(crate) fn load(file: &Path) -> Result<Report, LabError> {
    let text = std::fs::read_to_string(file).map_err(at(file))?;
    let saved = |error: serde_json::Error| LabError::Saved {
        path: file.to_path_buf(),
        error,
    };
    let mut json: serde_json::Value = serde_json::from_str(&text).map_err(saved)?;
    let legacy = json["plots"]
        .as_array()
        .is_some_and(|plots| plots.iter().any(|p| p.get("kind").is_none()));
    if !legacy {
        return serde_json::from_value(json).map_err(saved);
    }
    let old: Vec<OldPlot> = serde_json::from_value(json["plots"].take()).map_err(saved)?;
    json["plots"] = serde_json::Value::Array(Vec::new());
    let mut report: Report = serde_json::from_value(json).map_err(saved)?;
    report.plots = upgrade(&report, &old).map_err(|missing| LabError::OldPlots {
        path: file.to_path_buf(),
        missing,
    })?;
    Ok(report)
}

/// A plot as the old renderer took it.
#[derive(Debug, Deserialize)]
struct OldPlot {
    file: String,
    title: String,
    x_label: String,
    y_label: String,
    log_y: bool,
    series: Vec<OldSeries>,
}

#[derive(Debug, Deserialize)]
struct OldSeries {
    label: String,
    points: Vec<(f64, f64)>,
}

/// Why an old file's chart could not be rebuilt: what it lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum UpgradeError {
    /// No old plot with this index.
    Plot(usize),
    /// Old plot `.0` has no series `.1`.
    Series(usize, usize),
    /// No table with this index.
    Table(usize),
    /// Table `.0` has no number in row `.1`, column `.2`.
    Cell(usize, usize, usize),
}

impl std::error::Error for UpgradeError {}

impl std::fmt::Display for UpgradeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpgradeError::Plot(p) => write!(f, "old plots: no plot {p}"),
            UpgradeError::Series(p, s) => write!(f, "old plots: plot {p} has no series {s}"),
            UpgradeError::Table(t) => write!(f, "no table {t}"),
            UpgradeError::Cell(t, r, c) => write!(f, "table {t}: no number in row {r}, column {c}"),
        }
    }
}

/// The charts of `report`'s scenario rebuilt from the old plots and the
/// tables; a scenario this module does not know keeps its plots, as lines.
fn upgrade(report: &Report, plots: &[OldPlot]) -> Result<Vec<Plot>, UpgradeError> {
    let old = Old { report, plots };
    Ok(match report.scenario.as_str() {
        "s1-dbs" => vec![s1_dbs::plot(&old.s1_dbs()?)],
        "s1-netperf" => vec![s1_netperf::plot(&old.s1_netperf()?)],
        "s1-stream" => vec![s1_stream::plot(&old.s1_stream()?)],
        "s2-maxrate" => {
            let (results, peers) = old.s2_maxrate()?;
            vec![s2::plot(&results, &peers)]
        }
        "s2-rtt" => {
            let (by_size, by_load) = old.s2_rtt()?;
            let count = if report.quick { "5" } else { "10" };
            s2_rtt::plots(&by_size, &by_load, count)
        }
        "s3-matrix" => vec![s3_matrix::plot(&old.s3_matrix()?)],
        "s4-crypto" => {
            let ys = |s| -> Result<Vec<f64>, UpgradeError> {
                Ok(old.points(0, s)?.iter().map(|&(_, y)| y).collect())
            };
            vec![s4::plot(&ys(0)?, &ys(1)?)]
        }
        _ => plots.iter().map(as_lines).collect(),
    })
}

/// s2-maxrate's rates: (geometry, no IPsec, flowsec) and (geometry, other
/// implementation, its rate), bit/s.
type MaxRates = (
    Vec<(s2::Geometry, f64, f64)>,
    Vec<(s2::Geometry, String, f64)>,
);
/// s2-rtt's RTTs, per setup: (payload, mean, s.d.) and (load, mean), ms.
type Rtts = (Vec<Vec<(f64, f64, f64)>>, Vec<Vec<(f64, f64)>>);

/// What an old file holds: its report (the tables) and its old plots.
struct Old<'a> {
    report: &'a Report,
    plots: &'a [OldPlot],
}

impl Old<'_> {
    /// Plot `p`'s series `s`.
    fn points(&self, p: usize, s: usize) -> Result<&[(f64, f64)], UpgradeError> {
        let plot = self.plots.get(p).ok_or(UpgradeError::Plot(p))?;
        let series = plot.series.get(s).ok_or(UpgradeError::Series(p, s))?;
        Ok(&series.points)
    }

    /// The `k`th number in table `t`, row `r`, column `c`.
    fn number(&self, t: usize, r: usize, c: usize, k: usize) -> Result<f64, UpgradeError> {
        let table: &Table = self.report.tables.get(t).ok_or(UpgradeError::Table(t))?;
        let cell = table.rows.get(r).and_then(|row| row.get(c));
        cell.and_then(|cell| numbers(cell).get(k).copied())
            .ok_or(UpgradeError::Cell(t, r, c))
    }

    fn rows(&self, t: usize) -> Result<&[Vec<String>], UpgradeError> {
        let table = self.report.tables.get(t).ok_or(UpgradeError::Table(t))?;
        Ok(&table.rows)
    }

    /// Throughput from the old plot (idle, hog), the per-second spread
    /// from the table's column "today per-second spread (CV) idle / hog".
    fn s1_dbs(&self) -> Result<[[s1_dbs::Run; 2]; 3], UpgradeError> {
        let mut runs = [[s1_dbs::Run::default(); 2]; 3];
        for (m, run) in runs.iter_mut().enumerate() {
            for (h, r) in run.iter_mut().enumerate() {
                r.mbit = y_at(self.points(0, h)?, m as f64);
                r.cv = self.number(0, m, 8, h)?;
            }
        }
        Ok(runs)
    }

    /// Every figure from the tables, one per test: pattern, study IPv4,
    /// today IPv4, study IPv6, today IPv6.
    fn s1_netperf(&self) -> Result<s1_netperf::Results, UpgradeError> {
        let patterns = self.rows(0)?.len();
        [2, 4]
            .into_iter()
            .map(|column| {
                (0..patterns)
                    .map(|p| {
                        let mut row = [0.0; 7];
                        for (i, v) in row.iter_mut().enumerate() {
                            *v = self.number(i, p, column, 0)?;
                        }
                        Ok(row)
                    })
                    .collect()
            })
            .collect()
    }

    /// Packets/s from the old plot, the rest from the table (which has a
    /// row for AH KEYED-SHA1, not run).
    fn s1_stream(&self) -> Result<Vec<s1_stream::Run>, UpgradeError> {
        let pps = self.points(0, 0)?;
        let rows = self.rows(0)?;
        (0..rows.len())
            .filter(|&r| rows[r].first().is_some_and(|c| c != "AH KEYED-SHA1"))
            .enumerate()
            .map(|(i, row)| {
                Ok(s1_stream::Run {
                    pps: y_at(pps, i as f64),
                    loss_pct: self.number(0, row, 2, 0)?,
                    cv: self.number(0, row, 3, 0)?,
                    gap_ms: self.number(0, row, 4, 0)?,
                })
            })
            .collect()
    }

    /// The old plot's series: no IPsec, flowsec, then one per other
    /// implementation; x the datagram size, which names the geometry.
    fn s2_maxrate(&self) -> Result<MaxRates, UpgradeError> {
        let (none, ipsec) = (self.points(0, 0)?, self.points(0, 1)?);
        let results = s2::GEOMETRIES
            .iter()
            .map(|g| {
                let x = g.payload as f64;
                (*g, y_at(none, x) * 1e6, y_at(ipsec, x) * 1e6)
            })
            .collect();
        let peers = self.plots[0].series[2..]
            .iter()
            .flat_map(|s| {
                s.points.iter().filter_map(|&(x, y)| {
                    let g = s2::GEOMETRIES.iter().find(|g| g.payload as f64 == x)?;
                    Some((*g, s.label.clone(), y * 1e6))
                })
            })
            .collect();
        Ok((results, peers))
    }

    /// Both old plots' series as they were, without standard deviations
    /// (never saved).
    fn s2_rtt(&self) -> Result<Rtts, UpgradeError> {
        let setups = self.plots.first().map_or(0, |p| p.series.len());
        let by_size = (0..setups)
            .map(|s| {
                Ok(self
                    .points(0, s)?
                    .iter()
                    .map(|&(x, y)| (x, y, 0.0))
                    .collect())
            })
            .collect::<Result<Vec<_>, UpgradeError>>()?;
        let by_load = (0..setups)
            .map(|s| Ok(self.points(1, s)?.to_vec()))
            .collect::<Result<Vec<_>, UpgradeError>>()?;
        Ok((by_size, by_load))
    }

    /// The old plot's points, x the suite's row in the table; null/null
    /// (refused) has none.
    fn s3_matrix(&self) -> Result<Vec<Option<s3_matrix::Run>>, UpgradeError> {
        let (fwd, rev) = (self.points(0, 0)?, self.points(0, 1)?);
        let has = |p: &[(f64, f64)], x: f64| p.iter().any(|q| q.0 == x);
        Ok((0..self.rows(0)?.len())
            .map(|i| {
                let x = i as f64;
                (has(fwd, x) || has(rev, x)).then(|| s3_matrix::Run {
                    fwd: y_at(fwd, x),
                    rev: y_at(rev, x),
                    ..s3_matrix::Run::default()
                })
            })
            .collect())
    }
}

/// The y of the point at `x` (NaN, left out of the chart, if none).
fn y_at(points: &[(f64, f64)], x: f64) -> f64 {
    points.iter().find(|p| p.0 == x).map_or(f64::NAN, |p| p.1)
}

/// An old plot of a scenario this module does not know, as lines.
fn as_lines(p: &OldPlot) -> Plot {
    Plot {
        file: p.file.clone(),
        title: p.title.clone(),
        kind: PlotKind::Lines,
        x_label: p.x_label.clone(),
        y_label: p.y_label.trim_end_matches(" (log)").to_string(),
        log_y: p.log_y,
        log_x: false,
        markers: Vec::new(),
        series: p
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| Series::today(s.label.clone(), i, s.points.iter().copied()))
            .collect(),
        note: String::new(),
    }
}

/// The numbers in a table cell: `1234 (0.48×)` → 1234, 0.48;
/// `0.12 / 0.34` → 0.12, 0.34.
fn numbers(cell: &str) -> Vec<f64> {
    cell.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .filter_map(|t| t.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_come_out_of_cells() {
        assert_eq!(numbers("1234 (0.48×)"), [1234.0, 0.48]);
        assert_eq!(numbers("0.12 / 0.34"), [0.12, 0.34]);
        assert!(numbers("—").is_empty());
    }

    /// A results.json of the old shape (plots without `kind`) loads with
    /// its scenario's chart rebuilt; one of the new shape loads as it is.
    #[test]
    fn old_results_load_with_charts_rebuilt() {
        let dir = std::env::temp_dir().join(format!("flowsec-saved-{}", std::process::id()));
        let sub = dir.join("s4-crypto");
        std::fs::create_dir_all(&sub).unwrap();
        let old = r#"{"scenario":"s4-crypto","study":"S4","quick":true,"machine":"m",
            "unix_time":1,"method":"m","tables":[],"findings":[],
            "plots":[{"file":"s4-suite","title":"t","x_label":"x","y_label":"Mbit/s (log)",
              "log_y":true,"series":[
                {"label":"today inline","points":[[256,1600],[512,2300],[1024,2800],[1500,3100],[2048,3800]]},
                {"label":"today engine","points":[[256,100],[512,200],[1024,340],[1500,520],[2048,760]]}]}]}"#;
        std::fs::write(sub.join("results.json"), old).unwrap();
        let r = load(&sub.join("results.json")).unwrap();
        assert_eq!(r.plots.len(), 1);
        assert_eq!(r.plots[0].kind, PlotKind::Lines);
        assert!(r.plots[0].log_x && r.plots[0].series.iter().any(|s| s.study));
        assert_eq!(replot(&dir).unwrap(), 1);
        for f in ["s4-suite.png", "s4-suite.svg", "results.md"] {
            assert!(sub.join(f).is_file(), "{f}");
        }
        assert!(dir.join("report.html").is_file());
        let again = load(&sub.join("results.json")).unwrap();
        assert_eq!(
            again.plots, r.plots,
            "the upgraded file reads back as written"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
