//! `s2-rtt` — study S2, experiment E2b (effects of IPsec on stream
//! transmission, 2003–2004): round-trip time of echoes at payload sizes
//! in steps of 100 bytes up to the no-fragmentation limit, under
//! background load, for ESP with DES and with 3DES: transport mode ESP +
//! AH (HMAC-MD5) host to host and tunnel mode ESP gateway to gateway.
//! Today: `flowsec perf -t PING --load RATE` on the lab topology.

use flowsec_perf::PingRow;

use crate::bed::{Bed, Family, Mode, Setup, Step};
use crate::chart::{Plot, PlotKind, Series};
use crate::progress::Progress;
use crate::report::{Finding, Report, Table};
use crate::{LabError, RunOptions, Scenario};

pub struct S2Rtt;

const AH_MD5: Step = Step::Ah { auth: "hmac-md5" };

fn esp(enc: &'static str, auth: Option<&'static str>) -> Step {
    Step::Esp { enc, auth }
}

/// The setups: label, mode, bundle (innermost first).
fn setups() -> Vec<(&'static str, Mode, Vec<Step>)> {
    vec![
        ("transport, no IPsec", Mode::Transport, vec![]),
        (
            "transport ESP DES + AH MD5",
            Mode::Transport,
            vec![esp("des-cbc", None), AH_MD5],
        ),
        (
            "transport ESP 3DES + AH MD5",
            Mode::Transport,
            vec![esp("3des-cbc", None), AH_MD5],
        ),
        ("tunnel, no IPsec", Mode::Tunnel, vec![]),
        (
            "tunnel ESP DES/MD5",
            Mode::Tunnel,
            vec![esp("des-cbc", Some("hmac-md5"))],
        ),
        (
            "tunnel ESP 3DES/MD5",
            Mode::Tunnel,
            vec![esp("3des-cbc", Some("hmac-md5"))],
        ),
    ]
}

/// Background loads, Mbit/s: the study's 0, 10, 30, and a high step for
/// today's speeds.
const LOADS: [u64; 4] = [0, 10, 30, 100];
const QUICK_LOADS: [u64; 2] = [0, 30];

/// Mean RTT over sizes (ms) of each setup at each load, and the rows.
struct Results {
    /// [setup][load] → rows per size.
    rows: Vec<Vec<Vec<PingRow>>>,
    loads: Vec<u64>,
}

impl Results {
    /// Mean of the average RTT over all sizes (ms).
    fn mean(&self, setup: usize, load: usize) -> f64 {
        let r = &self.rows[setup][load];
        let got: Vec<f64> = r
            .iter()
            .filter(|p| p.received > 0)
            .map(|p| p.avg_ms)
            .collect();
        crate::mean(&got)
    }

    fn load_index(&self, mbit: u64) -> Option<usize> {
        self.loads.iter().position(|&l| l == mbit)
    }
}

impl Scenario for S2Rtt {
    fn name(&self) -> &'static str {
        "s2-rtt"
    }

    fn summary(&self) -> &'static str {
        "S2 E2b: echo RTT per payload size under 0/10/30/100 Mbit/s load, DES vs 3DES, transport ESP+AH vs tunnel ESP"
    }

    fn needs_root(&self) -> bool {
        true
    }

    fn run(&self, opts: &RunOptions) -> Result<Report, LabError> {
        let work = crate::work_dir("s2-rtt")?;
        let (sizes, count, interval, loads): (Vec<usize>, &str, &str, &[u64]) = if opts.quick {
            (vec![100, 700, 1300], "5", "0.02", &QUICK_LOADS)
        } else {
            ((1..=13).map(|k| k * 100).collect(), "10", "0.05", &LOADS)
        };
        let sizes_arg = sizes
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let setups = setups();
        let mut progress = Progress::new("s2-rtt", setups.len() * loads.len());
        let mut rows = Vec::new();
        for (label, mode, steps) in &setups {
            let bed = Bed::up(&Setup::new(Family::V4, *mode, steps), &work)?;
            let mut per_load = Vec::new();
            for &load in loads {
                progress.step(&format!("{label}, load {load} Mbit/s"));
                let mut args =
                    format!("-t PING --sizes {sizes_arg} --count {count} --interval {interval}");
                if load > 0 {
                    args += &format!(" --load {load}M");
                }
                per_load.push(bed.perf::<Vec<PingRow>>(false, &args)?);
            }
            rows.push(per_load);
        }
        progress.finish();
        let _ = std::fs::remove_dir_all(&work);
        let results = Results {
            rows,
            loads: loads.to_vec(),
        };
        Ok(report(&results, opts, count, interval))
    }
}

fn report(r: &Results, opts: &RunOptions, count: &str, interval: &str) -> Report {
    let tables = vec![load_table(r), size_table(r)];
    let findings = rtt_findings(r);
    let plots = plots(&size_points(r), &load_points(r), count);
    Report {
        tables,
        findings,
        plots,
        ..Report::new(
            "s2-rtt",
            "S2 E2b, delay under load (KAME/USAGI IPsec, 2003–2004)",
            opts.quick,
            format!(
                "Echoes (`flowsec perf -t PING`: UDP request/response of the payload size, {count} per size, {interval} s apart; the study: ICMP ping once a second, 60 samples) from gwA to gwB (transport: ESP DES-CBC or 3DES-CBC inside AH HMAC-MD5-96) and from hostA to hostB (tunnel: ESP DES-CBC or 3DES-CBC + HMAC-MD5-96), with a CBR background load of 1300-byte datagrams to the same server (`--load`), as the study's iperf. Payloads 100 B … 1300 B (under the TUN MTU: no fragments)."
            ),
        )
    }
}

/// Mean RTT over all sizes, a row per setup and a column per load, with
/// the echoes lost.
fn load_table(r: &Results) -> Table {
    let mut columns = vec!["setup".to_string()];
    columns.extend(r.loads.iter().map(|l| format!("load {l} Mbit/s")));
    let rows = setups()
        .iter()
        .enumerate()
        .map(|(s, (label, _, _))| {
            let mut row = vec![(*label).to_string()];
            for l in 0..r.loads.len() {
                let lost: u64 = r.rows[s][l].iter().map(|p| p.sent - p.received).sum();
                row.push(format!(
                    "{:.3}{}",
                    r.mean(s, l),
                    if lost > 0 {
                        format!(" ({lost} lost)")
                    } else {
                        String::new()
                    }
                ));
            }
            row
        })
        .collect();
    Table {
        title: "Mean echo RTT over all payload sizes, ms".into(),
        columns,
        rows,
    }
}

/// RTT without load, a row per setup and a column per payload size.
fn size_table(r: &Results) -> Table {
    let sizes: Vec<usize> = r.rows[0][0].iter().map(|p| p.payload).collect();
    let mut columns = vec!["setup (no load)".to_string()];
    columns.extend(sizes.iter().map(|s| format!("{s} B")));
    Table {
        title: "Echo RTT per payload size without load, ms".into(),
        columns,
        rows: setups()
            .iter()
            .enumerate()
            .map(|(s, (label, _, _))| {
                let mut row = vec![(*label).to_string()];
                row.extend(r.rows[s][0].iter().map(|p| format!("{:.3}", p.avg_ms)));
                row
            })
            .collect(),
    }
}

/// The study's three findings: IPsec raises the RTT, DES and 3DES differ
/// little, the RTT grows with the load.
fn rtt_findings(r: &Results) -> Vec<Finding> {
    // Setups 0/3 are the baselines of 1–2 and 4–5.
    let ipsec = [(1, 0), (2, 0), (4, 3), (5, 3)];
    let raised: Vec<f64> = ipsec
        .iter()
        .map(|&(i, b)| r.mean(i, 0) / r.mean(b, 0))
        .collect();
    let des_3des = [r.mean(2, 0) / r.mean(1, 0), r.mean(5, 0) / r.mean(4, 0)];
    let list = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.2}×"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let grow = |load: u64| -> Vec<f64> {
        r.load_index(load).map_or(Vec::new(), |l| {
            ipsec
                .iter()
                .map(|&(i, _)| r.mean(i, l) / r.mean(i, 0))
                .collect()
        })
    };
    let (g30, ghigh) = (grow(30), grow(*LOADS.last().expect("loads")));
    vec![
        Finding {
            claim: "IPsec raises the RTT".into(),
            holds: raised.iter().all(|&x| x > 1.0),
            evidence: format!(
                "today IPsec/none without load (transport DES, 3DES; tunnel DES, 3DES): {} (holds if all > 1)",
                list(&raised)
            ),
        },
        Finding {
            claim: "DES and 3DES differ little".into(),
            holds: des_3des.iter().all(|x| (x - 1.0).abs() <= 0.25),
            evidence: format!(
                "today 3DES/DES RTT, transport and tunnel: {} (holds if both within 25%)",
                list(&des_3des)
            ),
        },
        Finding {
            claim: "the RTT grows with the background load".into(),
            holds: !g30.is_empty() && g30.iter().all(|&x| x > 1.05),
            evidence: format!(
                "today IPsec RTT at 30 Mbit/s / no load: {} (holds if all > 1.05×); at {} Mbit/s: {}",
                list(&g30),
                LOADS.last().expect("loads"),
                if ghigh.is_empty() {
                    "not run (--quick)".into()
                } else {
                    list(&ghigh)
                }
            ),
        },
    ]
}

/// Per setup, (payload, mean, mdev) of each size's echoes without load.
fn size_points(r: &Results) -> Vec<Vec<(f64, f64, f64)>> {
    r.rows
        .iter()
        .map(|per_load| {
            per_load[0]
                .iter()
                .filter(|p| p.received > 0)
                .map(|p| (p.payload as f64, p.avg_ms, p.mdev_ms))
                .collect()
        })
        .collect()
}

/// Per setup, (load, mean RTT over all sizes).
fn load_points(r: &Results) -> Vec<Vec<(f64, f64)>> {
    (0..setups().len())
        .map(|s| {
            (0..r.loads.len())
                .map(|l| (r.loads[l] as f64, r.mean(s, l)))
                .collect()
        })
        .collect()
}

/// RTT by payload size without load (`by_size`: per setup, payload,
/// mean and standard deviation (ping's mdev) of `count` echoes, ms) and the mean over sizes by load
/// (`by_load`: per setup, Mbit/s and ms). The study published no figures
/// for this experiment, only its findings.
pub(crate) fn plots(
    by_size: &[Vec<(f64, f64, f64)>],
    by_load: &[Vec<(f64, f64)>],
    count: &str,
) -> Vec<Plot> {
    let labels = setups();
    let whiskers = by_size.iter().flatten().any(|p| p.2 > 0.0);
    let note = if whiskers {
        format!("Each point: the mean RTT of {count} echoes; whiskers ±1 standard deviation (ping's mdev). The study published no figures for this experiment, only that IPsec raises the RTT, DES and 3DES differ little, and the RTT grows with the load.")
    } else {
        format!("Each point: the mean RTT of {count} echoes. The study published no figures for this experiment, only that IPsec raises the RTT, DES and 3DES differ little, and the RTT grows with the load.")
    };
    let size = Plot {
        file: "s2-rtt-size".into(),
        title: "Echo RTT by payload size, no background load".into(),
        kind: PlotKind::Lines,
        x_label: "UDP echo payload, bytes".into(),
        y_label: "RTT, ms".into(),
        log_y: false,
        log_x: false,
        markers: Vec::new(),
        series: labels
            .iter()
            .zip(by_size)
            .enumerate()
            .map(|(s, ((label, _, _), points))| {
                Series::today_with_errors(*label, s, points.iter().copied())
            })
            .collect(),
        note,
    };
    let load = Plot {
        file: "s2-rtt-load".into(),
        title: "Mean echo RTT over all payload sizes, by background load".into(),
        kind: PlotKind::Lines,
        x_label: "background CBR load, Mbit/s".into(),
        y_label: "RTT, ms".into(),
        log_y: true,
        log_x: false,
        markers: Vec::new(),
        series: labels
            .iter()
            .zip(by_load)
            .enumerate()
            .map(|(s, ((label, _, _), points))| Series::today(*label, s, points.iter().copied()))
            .collect(),
        note: "The load: 1300-byte datagrams to the same server, as the study's iperf (it used 10 and 30 Mbit/s).".into(),
    };
    vec![size, load]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(payload: usize, avg_ms: f64) -> PingRow {
        PingRow {
            payload,
            sent: 5,
            received: 5,
            min_ms: avg_ms,
            avg_ms,
            max_ms: avg_ms,
            mdev_ms: 0.0,
            load_bps: 0,
        }
    }

    #[test]
    fn verdicts_follow_the_numbers() {
        // [setup][load]: none 1 ms, IPsec 2 ms (3DES 2.2), doubling under
        // load.
        let base = [1.0, 2.0, 2.2, 1.0, 2.0, 2.2];
        let r = Results {
            rows: base
                .iter()
                .map(|&b| {
                    LOADS
                        .iter()
                        .enumerate()
                        .map(|(l, _)| vec![row(100, b * (1 + l) as f64)])
                        .collect()
                })
                .collect(),
            loads: LOADS.to_vec(),
        };
        let f = report(&r, &RunOptions::new(false), "5", "0.02").findings;
        assert!(f.iter().all(|f| f.holds), "{f:#?}");
        // Flat: IPsec costs nothing, load changes nothing.
        let flat = Results {
            rows: vec![vec![vec![row(100, 1.0)]; 2]; 6],
            loads: QUICK_LOADS.to_vec(),
        };
        let f = report(&flat, &RunOptions::new(true), "5", "0.02").findings;
        assert_eq!(
            f.iter().map(|f| f.holds).collect::<Vec<_>>(),
            [false, true, false]
        );
    }
}
