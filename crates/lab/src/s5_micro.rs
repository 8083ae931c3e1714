//! `s5-micro` — study S5 (flow-parallel IPsec tunnel processing, Linux
//! XFRM, 2014), its micro-benchmark: a one-way tunnel (hostA → hostB
//! through gwA and gwB, tunnel mode), a `flowsec perf` server at hostB
//! (a thread per client thread) and a client at hostA with 4 threads × 64
//! TCP connections, each closed and opened again every 10 messages, for
//! message sizes 64 B … 16 KB; for each of flowsec's parallel modes
//! (`flowsec up --parallel`): `default` (one SA per policy, sealed by one
//! worker: S5's Linux default), `pcrypt` (one SA numbered by one worker,
//! its crypto dealt to every worker and the packets put back in order:
//! S5's pcrypt) and `flow` (per-resource SAs, RFC 9611: S5's
//! flow-parallel system). The SAs are the same in both modes (a
//! fallback and one per worker, `setkey -cpu`), as S5's compatibility
//! property says: only the mode differs. Suites: the study's AES-128-CBC +
//! HMAC-SHA1, and AES-GCM-128. Then the scaling of one tunnel with the
//! number of workers (bulk TCP, 4 connections).
//!
//! S5 published orderings, not figures (`../shared/STUDIES.md`): the
//! verdicts check the orderings.

use flowsec_perf::Outcome;

use crate::bed::{Bed, Family, Mode, Setup, Step};
use crate::chart::{Plot, PlotKind, Series};
use crate::progress::Progress;
use crate::report::{Finding, Report, Table};
use crate::{cell, LabError, RunOptions, Scenario};

pub struct S5Micro;

/// flowsec's parallel modes measured (`flowsec up --parallel`).
pub(crate) const MODES: [&str; 3] = ["default", "pcrypt", "flow"];
/// Their places in [`MODES`].
pub(crate) const DEFAULT: usize = 0;
pub(crate) const PCRYPT: usize = 1;
pub(crate) const FLOW: usize = 2;

/// The study's suite, then today's AEAD.
const SUITES: [(&str, Step); 2] = [
    (
        "AES-128-CBC/HMAC-SHA1 (study)",
        Step::Esp {
            enc: "aes-cbc",
            auth: Some("hmac-sha1"),
        },
    ),
    (
        "AES-GCM-128",
        Step::Esp {
            enc: "aes-gcm-16",
            auth: None,
        },
    ),
];

/// Message sizes (bytes): the study's 64 B … 16 KB.
const SIZES: [u32; 9] = [64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384];
const QUICK_SIZES: [u32; 3] = [64, 512, 16384];

/// One measurement: receiver throughput, and the CPU of the whole
/// machine (hosts and gateways share its cores) per gigabyte carried.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Point {
    pub mbit_s: f64,
    /// Busy CPU seconds of the whole machine per GB received.
    pub cpu_s_per_gb: f64,
}

impl Point {
    fn of(o: &Outcome, cpus: f64) -> Point {
        let busy = (o.local_cpu.system_pct + o.remote_cpu.system_pct) / 2.0 / 100.0 * cpus;
        let gb = o.bytes_received as f64 / 1e9;
        Point {
            mbit_s: o.throughput_mbit_s,
            cpu_s_per_gb: if gb > 0.0 {
                busy * o.elapsed_s / gb
            } else {
                0.0
            },
        }
    }
}

/// What a run measured: `[suite][mode][size]`, and the scaling sweep
/// `(workers, [mode])`.
pub(crate) struct Results {
    pub sizes: Vec<u32>,
    pub micro: Vec<Vec<Vec<Point>>>,
    pub scaling: Vec<(u32, Vec<Point>)>,
}

/// Worker counts for the scaling sweep: 1, 2, 4, 8 up to this machine's
/// cores.
fn worker_counts(cores: u32) -> Vec<u32> {
    [1, 2, 4, 8]
        .into_iter()
        .filter(|w| *w <= cores.max(1))
        .collect()
}

pub(crate) fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// A bed for `suite` with `workers` workers per gateway in `mode`, with a
/// client host that reuses TIME_WAIT ports (the reconnecting client
/// opens thousands of connections a second).
pub(crate) fn bed(
    step: Step,
    workers: u32,
    mode: &str,
    work: &std::path::Path,
) -> Result<Bed, LabError> {
    let setup = Setup::new(Family::V4, Mode::Tunnel, &[step]).per_cpu(workers);
    let w = workers.to_string();
    let bed = Bed::up_with(&setup, work, &["--workers", &w, "--parallel", mode])?;
    bed.sysctl("hostA", "net.ipv4.tcp_tw_reuse=1")?;
    bed.sysctl("hostA", "net.ipv4.ip_local_port_range=1024 65000")?;
    Ok(bed)
}

impl Scenario for S5Micro {
    fn name(&self) -> &'static str {
        "s5-micro"
    }

    fn summary(&self) -> &'static str {
        "S5 micro-benchmark: one tunnel, 4 threads x 64 reconnecting TCP connections, 64 B-16 KB, --parallel default / pcrypt / flow (RFC 9611 SAs); scaling with workers"
    }

    fn needs_root(&self) -> bool {
        true
    }

    fn run(&self, opts: &RunOptions) -> Result<Report, LabError> {
        let work = crate::work_dir("s5-micro")?;
        let secs = if opts.quick { "0.5" } else { "5" };
        let sizes: Vec<u32> = if opts.quick {
            QUICK_SIZES.to_vec()
        } else {
            SIZES.to_vec()
        };
        let cores = cores();
        let workers = cores.min(8);
        let counts = worker_counts(cores);
        let suites = if opts.quick { 1 } else { SUITES.len() };
        let mut progress = Progress::new(
            "s5-micro",
            (suites * sizes.len() + counts.len()) * MODES.len(),
        );
        let mut micro = Vec::new();
        for (label, step) in &SUITES[..suites] {
            let mut per_mode = Vec::new();
            for mode in MODES {
                let bed = bed(*step, workers, mode, &work)?;
                let mut row = Vec::new();
                for &size in &sizes {
                    progress.step(&format!("{label}, {mode}, {size} B"));
                    let o: Outcome = bed.perf(
                        false,
                        &format!(
                            "-t TCP_STREAM -m {size} --threads 4 --conns 64 --reconnect 10 -l {secs}"
                        ),
                    )?;
                    row.push(Point::of(&o, f64::from(cores)));
                }
                per_mode.push(row);
            }
            micro.push(per_mode);
        }
        let mut scaling = Vec::new();
        for &w in &counts {
            let mut per_mode = Vec::new();
            for mode in MODES {
                progress.step(&format!("scaling: {w} workers, {mode}"));
                let bed = bed(SUITES[1].1, w, mode, &work)?;
                let o: Outcome =
                    bed.perf(false, &format!("-t TCP_STREAM --threads 4 -l {secs}"))?;
                per_mode.push(Point::of(&o, f64::from(cores)));
            }
            scaling.push((w, per_mode));
        }
        progress.finish();
        let _ = std::fs::remove_dir_all(&work);
        let r = Results {
            sizes,
            micro,
            scaling,
        };
        Ok(report(&r, opts, secs, workers, cores))
    }
}

fn report(r: &Results, opts: &RunOptions, secs: &str, workers: u32, cores: u32) -> Report {
    let mut tables = Vec::new();
    for (s, per_mode) in r.micro.iter().enumerate() {
        let rows = r
            .sizes
            .iter()
            .enumerate()
            .map(|(i, size)| {
                let base = per_mode[0][i];
                let mut row = vec![format!("{size}")];
                for p in per_mode {
                    row.push(cell(p[i].mbit_s, base.mbit_s));
                }
                for p in per_mode {
                    row.push(format!("{:.1}", p[i].cpu_s_per_gb));
                }
                row
            })
            .collect();
        let mut columns = vec!["message (B)".to_string()];
        columns.extend(MODES.iter().map(|m| format!("{m} Mbit/s")));
        columns.extend(MODES.iter().map(|m| format!("{m} CPU s/GB")));
        tables.push(Table {
            title: format!(
                "{}: one tunnel, {workers} workers per gateway (× default)",
                SUITES[s].0
            ),
            columns,
            rows,
        });
    }
    let base = r.scaling.first().map_or(Point::default(), |s| s.1[FLOW]);
    let mut columns = vec!["workers".to_string()];
    columns.extend(MODES.iter().map(|m| format!("{m} Mbit/s")));
    columns.extend(MODES.iter().map(|m| format!("{m} CPU s/GB")));
    tables.push(Table {
        title: "Scaling: bulk TCP, 4 connections, AES-GCM-128, by workers per gateway (× flow with 1 worker)".into(),
        columns,
        rows: r
            .scaling
            .iter()
            .map(|(w, per_mode)| {
                let mut row = vec![w.to_string()];
                row.extend(per_mode.iter().map(|p| cell(p.mbit_s, base.mbit_s)));
                row.extend(per_mode.iter().map(|p| format!("{:.1}", p.cpu_s_per_gb)));
                row
            })
            .collect(),
    });
    Report {
        tables,
        findings: findings(r),
        plots: plots(r),
        ..Report::new(
            "s5-micro",
            "S5 micro-benchmark, flow-parallel IPsec tunnels (Linux XFRM, 4-core routers, 10 GbE, 2014)",
            opts.quick,
            format!(
                "hostA → gwA ⇒ gwB → hostB in tunnel mode, keyed by setkey: per direction a fallback SA and one per-resource SA per worker (`-cpu k`, SPIs ≡ k mod workers so that the receiver steers each to its own worker), the same SAs in every mode. Each gateway runs `flowsec up --workers {workers} --parallel MODE`: `default` seals every packet of the tunnel on the worker that owns the endpoint pair with one SA (per-resource marks ignored), and opens it on the worker the SPI steers it to; `pcrypt` numbers it there too, but deals the crypto to both workers in turn and sends or delivers in order; `flow` seals on the worker that read the packet with its own SA. Traffic: `flowsec perf client -t TCP_STREAM -m SIZE --threads 4 --conns 64 --reconnect 10 -l {secs}` (the study: 120 s) against a `flowsec perf server` (a thread per client thread); hostA reuses TIME_WAIT ports (tcp_tw_reuse). Throughput at the receiver; CPU: the whole machine's busy CPU seconds per GB received ({cores} cores shared by the four namespaces, so the hosts' TCP work is in it too). Scaling: `-t TCP_STREAM --threads 4` (bulk, 16 KB writes) with 1, 2, … workers per gateway. --quick: the study suite only, sizes 64/512/16384 B."
            ),
        )
    }
}

fn plots(r: &Results) -> Vec<Plot> {
    let mut plots: Vec<Plot> = r
        .micro
        .iter()
        .enumerate()
        .map(|(s, per_mode)| Plot {
            file: format!("s5-micro-{}", if s == 0 { "cbc-sha1" } else { "gcm" }),
            title: format!("One tunnel by message size: {}", SUITES[s].0),
            kind: PlotKind::Lines,
            x_label: "message size (bytes)".into(),
            y_label: "Mbit/s at the receiver".into(),
            log_y: false,
            log_x: true,
            markers: Vec::new(),
            series: per_mode
                .iter()
                .enumerate()
                .map(|(m, points)| {
                    Series::today(
                        format!("{} mode", MODES[m]),
                        m,
                        r.sizes
                            .iter()
                            .zip(points)
                            .map(|(size, p)| (f64::from(*size), p.mbit_s)),
                    )
                })
                .collect(),
            note: "4 threads × 64 TCP connections, a reconnect every 10 messages (study S5's client). S5 published no figures, only the ordering: pcrypt below the default under 256 B and above it from 512 B, flow-parallel above both at every size.".into(),
        })
        .collect();
    plots.push(Plot {
        file: "s5-micro-scaling".into(),
        title: "One tunnel by workers per gateway: bulk TCP, 4 connections".into(),
        kind: PlotKind::Lines,
        x_label: "workers per gateway".into(),
        y_label: "Mbit/s at the receiver".into(),
        log_y: false,
        log_x: false,
        markers: Vec::new(),
        series: MODES
            .iter()
            .enumerate()
            .map(|(m, mode)| {
                Series::today(
                    format!("{mode} mode"),
                    m,
                    r.scaling.iter().map(|(w, p)| (f64::from(*w), p[m].mbit_s)),
                )
            })
            .collect(),
        note: "AES-GCM-128. On a machine whose cores the hosts and both gateways share, the sweep stops where the machine runs out of cores.".into(),
    });
    plots
}

/// `64 B 1.17×, 512 B 1.31×, …`: a ratio per size.
pub(crate) fn per_size(sizes: &[u32], ratios: &[f64]) -> String {
    sizes
        .iter()
        .zip(ratios)
        .map(|(s, x)| format!("{s} B {x:.2}×"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// S5's finding on pcrypt (ratios to the default, per size): below 1
/// under 256 B, at least 1 from 512 B.
pub(crate) fn pcrypt_shape(sizes: &[u32], pcrypt_default: &[f64]) -> bool {
    sizes.iter().zip(pcrypt_default).all(|(s, x)| match s {
        0..=255 => *x < 1.0,
        512.. => *x >= 1.0,
        _ => true,
    })
}

pub(crate) fn findings(r: &Results) -> Vec<Finding> {
    let study = &r.micro[0];
    let over = |a: usize, b: usize| -> Vec<f64> {
        (0..r.sizes.len())
            .map(|i| study[a][i].mbit_s / study[b][i].mbit_s)
            .collect()
    };
    let list = |ratios: &[f64]| per_size(&r.sizes, ratios);
    let (flow_default, flow_pcrypt, pcrypt_default) = (
        over(FLOW, DEFAULT),
        over(FLOW, PCRYPT),
        over(PCRYPT, DEFAULT),
    );
    let pcrypt_shape = pcrypt_shape(&r.sizes, &pcrypt_default);
    let mut f = vec![
        Finding {
            claim: "pcrypt beats the default only from 512 B, and loses below 256 B".into(),
            holds: pcrypt_shape,
            evidence: format!(
                "{} pcrypt/default Mbit/s: {} (holds if below 1 under 256 B and at least 1 from 512 B)",
                SUITES[0].0,
                list(&pcrypt_default)
            ),
        },
        Finding {
            claim: "flow-parallel beats the default at every message size".into(),
            holds: flow_default.iter().all(|x| *x >= 1.0),
            evidence: format!(
                "{} flow/default Mbit/s: {} (holds if all ≥ 1)",
                SUITES[0].0,
                list(&flow_default)
            ),
        },
        Finding {
            claim: "flow-parallel beats pcrypt at every message size".into(),
            holds: flow_pcrypt.iter().all(|x| *x >= 1.0),
            evidence: format!(
                "{} flow/pcrypt Mbit/s: {} (holds if all ≥ 1)",
                SUITES[0].0,
                list(&flow_pcrypt)
            ),
        },
    ];
    if let [(_, one), .., (w, many)] = &r.scaling[..] {
        let (one, many) = (one[FLOW], many[FLOW]);
        let x = many.mbit_s / one.mbit_s;
        f.push(Finding {
            claim: "one tunnel scales with the cores (flow-parallel: more workers, more throughput)".into(),
            holds: x >= 1.5,
            evidence: format!(
                "bulk TCP, 4 connections, flow mode: {w} workers {:.0} vs 1 worker {:.0} Mbit/s: {x:.2}×, the machine's CPU per GB {:.1} vs {:.1} s (holds if ≥ 1.5×; where the hosts share the cores, equal CPU per GB means the machine was busy already; the study gave no figure for 4 cores over 1)",
                many.mbit_s, one.mbit_s, many.cpu_s_per_gb, one.cpu_s_per_gb
            ),
        });
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(mbit_s: f64) -> Point {
        Point {
            mbit_s,
            cpu_s_per_gb: 10.0,
        }
    }

    /// The verdicts follow the numbers: the study's ordering and a 1.8×
    /// scaling hold; pcrypt ahead at 64 B, flow behind pcrypt at 512 B,
    /// or 1.2× scaling, do not.
    #[test]
    fn verdicts_follow_the_numbers() {
        let sizes = QUICK_SIZES.to_vec();
        let results = |pcrypt_64: f64, flow_512: f64, two_workers: f64| Results {
            sizes: sizes.clone(),
            micro: vec![vec![
                vec![point(100.0), point(200.0), point(300.0)],
                vec![point(pcrypt_64), point(240.0), point(400.0)],
                vec![point(150.0), point(flow_512), point(450.0)],
            ]],
            scaling: vec![
                (1, vec![point(1000.0); 3]),
                (2, vec![point(1000.0), point(1100.0), point(two_workers)]),
            ],
        };
        let holds = |r: &Results| findings(r).iter().map(|f| f.holds).collect::<Vec<_>>();
        assert_eq!(holds(&results(80.0, 250.0, 1800.0)), [true; 4]);
        assert_eq!(
            holds(&results(120.0, 230.0, 1200.0)),
            [false, true, false, false]
        );
        let rep = report(
            &results(80.0, 250.0, 1800.0),
            &RunOptions::new(true),
            "0.5",
            2,
            2,
        );
        assert_eq!(rep.tables.len(), 2);
        assert_eq!(rep.tables[0].rows[1][3], "250 (1.25×)");
        assert_eq!(rep.tables[1].rows[1][3], "1800 (1.80×)");
        assert_eq!(rep.plots.len(), 2);
    }

    #[test]
    fn worker_counts_stop_at_the_cores() {
        assert_eq!(worker_counts(1), [1]);
        assert_eq!(worker_counts(2), [1, 2]);
        assert_eq!(worker_counts(16), [1, 2, 4, 8]);
    }
}
