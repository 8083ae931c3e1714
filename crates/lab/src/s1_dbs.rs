//! `s1-dbs` — study S1, experiment E1a (KAME IPsec on a PC platform,
//! 1999): bulk TCP with the DBS tool's parameters (8192-byte messages,
//! 32768-byte socket buffers) for no IPsec, AH (HMAC-SHA1) and ESP
//! (3DES-CBC) in transport mode, idle and with one CPU-bound process
//! beside; throughput, and the delay and jitter of 64-byte UDP echoes
//! that run meanwhile.

use flowsec_perf::{Outcome, PingRow};

use crate::bed::{Bed, Family, Mode, Setup, Step};
use crate::chart::{Plot, PlotKind, Series};
use crate::progress::Progress;
use crate::report::{Finding, Report, Table};
use crate::{cell, cv, whole_seconds, LabError, RunOptions, Scenario};

pub struct S1Dbs;

const MODES: [(&str, &[Step]); 3] = [
    ("none", &[]),
    ("AH", &[Step::Ah { auth: "hmac-sha1" }]),
    (
        "ESP",
        &[Step::Esp {
            enc: "3des-cbc",
            auth: None,
        }],
    ),
];

/// Study S1 E1a: Mbit/s idle, with a CPU hog, and the mean delay (s).
const STUDY: [(f64, f64, f64); 3] = [
    (65.18, 66.12, 0.015),
    (26.01, 13.67, 0.007),
    (10.94, 5.70, 0.003),
];

/// One run: throughput (Mbit/s), its per-second spread (coefficient of
/// variation), echo RTT mean and mdev (ms).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Run {
    pub mbit: f64,
    pub cv: f64,
    pub rtt_ms: f64,
    pub mdev_ms: f64,
}

impl Scenario for S1Dbs {
    fn name(&self) -> &'static str {
        "s1-dbs"
    }

    fn summary(&self) -> &'static str {
        "S1 E1a: bulk TCP (DBS: 8192 B messages, 32 KB buffers), none/AH/ESP, idle and with a CPU hog; throughput, delay, jitter"
    }

    fn needs_root(&self) -> bool {
        true
    }

    fn run(&self, opts: &RunOptions) -> Result<Report, LabError> {
        let work = crate::work_dir("s1-dbs")?;
        let secs: f64 = if opts.quick { 1.0 } else { 10.0 };
        let mut progress = Progress::new("s1-dbs", 2 * MODES.len());
        let mut runs = [[Run::default(); 2]; 3];
        for (m, (label, steps)) in MODES.iter().enumerate() {
            for hog in [false, true] {
                progress.step(&format!(
                    "{label}{}",
                    if hog { ", with a CPU hog" } else { ", idle" }
                ));
                let mut bed = Bed::up(&Setup::new(Family::V4, Mode::Transport, steps), &work)?;
                if hog {
                    bed.hog(&work)?;
                }
                runs[m][usize::from(hog)] = measure(&bed, secs)?;
            }
        }
        progress.finish();
        let _ = std::fs::remove_dir_all(&work);
        Ok(report(&runs, opts, secs))
    }
}

/// The stream, and echoes every 20 ms beside it.
fn measure(bed: &Bed, secs: f64) -> Result<Run, LabError> {
    let count = ((secs / 0.02) as u64).saturating_sub(5).max(1);
    let (stream, echoes) = std::thread::scope(|s| {
        let echoes = s.spawn(|| {
            bed.perf::<Vec<PingRow>>(
                false,
                &format!("-t PING --sizes 64 --count {count} --interval 0.02"),
            )
        });
        let stream = bed.perf::<Outcome>(
            false,
            &format!("-t TCP_STREAM -m 8192 -s 32768 -S 32768 -l {secs}"),
        );
        (stream, echoes.join().unwrap_or(Err(LabError::EchoPanicked)))
    });
    let (stream, echoes) = (stream?, echoes?);
    let per_second = whole_seconds(&stream, |s| s.bytes as f64);
    let e = echoes.first().cloned();
    Ok(Run {
        mbit: stream.throughput_mbit_s,
        cv: cv(&per_second),
        rtt_ms: e.as_ref().map_or(f64::NAN, |e| e.avg_ms),
        mdev_ms: e.map_or(f64::NAN, |e| e.mdev_ms),
    })
}

fn report(runs: &[[Run; 2]; 3], opts: &RunOptions, secs: f64) -> Report {
    Report {
        tables: vec![dbs_table(runs)],
        findings: findings(runs),
        plots: vec![plot(runs)],
        ..Report::new(
            "s1-dbs",
            "S1 E1a, bulk TCP with DBS over KAME IPsec (FreeBSD, Pentium II, 1999)",
            opts.quick,
            format!(
                "gwA → gwB in transport mode, both running `flowsec up` (AH HMAC-SHA1-96; ESP 3DES-CBC). `flowsec perf -t TCP_STREAM -m 8192 -s 32768 -S 32768 -l {secs}` (DBS: 8192 messages of 8192 B, no pacing); beside it, 64-byte UDP echoes every 20 ms (`-t PING`) give delay (RTT) and jitter (mdev); the per-second spread is the coefficient of variation of the receiver's per-second throughput. The hog is one `sh -c 'while :; do :; done'`, as the study's one CPU-bound process (load average ~1). This machine has {} CPUs shared by both gateways and both ends.",
                std::thread::available_parallelism().map_or(1, |n| n.get())
            ),
        )
    }
}

/// A row per mode: the study's figures beside today's, idle and with the
/// hog.
fn dbs_table(runs: &[[Run; 2]; 3]) -> Table {
    let rows = MODES
        .iter()
        .enumerate()
        .map(|(m, (label, _))| {
            let (si, sh, sd) = STUDY[m];
            let [idle, hog] = runs[m];
            vec![
                (*label).to_string(),
                cell(si, STUDY[0].0),
                cell(sh, si),
                format!("{sd}"),
                cell(idle.mbit, runs[0][0].mbit),
                cell(hog.mbit, idle.mbit),
                format!("{:.3} / {:.3}", idle.rtt_ms, hog.rtt_ms),
                format!("{:.3} / {:.3}", idle.mdev_ms, hog.mdev_ms),
                format!("{:.2} / {:.2}", idle.cv, hog.cv),
            ]
        })
        .collect();
    Table {
        title: "Bulk TCP: study (Mbit/s; idle × none, hog × idle) and today".into(),
        columns: [
            "mode",
            "study idle",
            "study with hog",
            "study delay s",
            "today idle",
            "today with hog",
            "today echo RTT ms idle / hog",
            "today jitter (mdev) ms idle / hog",
            "today per-second spread (CV) idle / hog",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// The study's claims: what AH and ESP cost, and what the hog costs each.
fn findings(runs: &[[Run; 2]; 3]) -> Vec<Finding> {
    let ratio = |m: usize, h: usize| runs[m][h].mbit / runs[0][h].mbit;
    let hog_cost = |m: usize| runs[m][1].mbit / runs[m][0].mbit;
    vec![
        Finding {
            claim: "AH runs at about 0.4× of no IPsec (26.0 vs 65.2 Mbit/s)".into(),
            holds: (0.25..=0.6).contains(&ratio(1, 0)),
            evidence: format!("today AH/none {:.2}× (holds if 0.25–0.6×)", ratio(1, 0)),
        },
        Finding {
            claim: "ESP runs at about 0.2× of no IPsec (10.9 vs 65.2 Mbit/s)".into(),
            holds: (0.1..=0.35).contains(&ratio(2, 0)),
            evidence: format!("today ESP/none {:.2}× (holds if 0.1–0.35×)", ratio(2, 0)),
        },
        Finding {
            claim: "a CPU hog halves IPsec throughput (AH 0.53×, ESP 0.52×)".into(),
            holds: (0.3..=0.7).contains(&hog_cost(1)) && (0.3..=0.7).contains(&hog_cost(2)),
            evidence: format!(
                "today with hog / idle: AH {:.2}×, ESP {:.2}× (holds if both 0.3–0.7×)",
                hog_cost(1),
                hog_cost(2)
            ),
        },
        Finding {
            claim: "plain TCP is not slowed by the CPU hog (66.1 vs 65.2 Mbit/s)".into(),
            holds: hog_cost(0) >= 0.9,
            evidence: format!(
                "today none with hog / idle {:.2}× (holds if ≥ 0.9×)",
                hog_cost(0)
            ),
        },
    ]
}

/// Per mode, the study's throughput beside today's, idle and with the
/// hog; whiskers ±1 standard deviation of today's per-second throughput.
pub(crate) fn plot(runs: &[[Run; 2]; 3]) -> Plot {
    let study = |hog: bool| {
        STUDY
            .iter()
            .enumerate()
            .map(move |(m, s)| (m as f64, if hog { s.1 } else { s.0 }))
    };
    let today = |h: usize| {
        runs.iter()
            .enumerate()
            .map(move |(m, r)| (m as f64, r[h].mbit, r[h].cv * r[h].mbit))
    };
    Plot {
        file: "s1-dbs".into(),
        title: "Bulk TCP (DBS, 8192-byte messages), idle and with a CPU hog: study and today"
            .into(),
        kind: PlotKind::Bars {
            categories: ["no IPsec", "AH HMAC-SHA1", "ESP 3DES-CBC"]
                .map(String::from)
                .to_vec(),
        },
        x_label: "transport mode, gwA → gwB".into(),
        y_label: "throughput, Mbit/s".into(),
        log_y: true,
        log_x: false,
        markers: Vec::new(),
        series: vec![
            Series::study("study 1999, idle", 0, study(false)),
            Series::today_with_errors("today, idle", 0, today(0)),
            Series::study("study 1999, with CPU hog", 1, study(true)),
            Series::today_with_errors("today, with CPU hog", 1, today(1)),
        ],
        note: "Tinted bars: the study's figures (FreeBSD 2.2.8 KAME, Pentium II 450 MHz, 100 Mbit/s Ethernet). Whiskers: ±1 standard deviation of today's per-second throughput.".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_follow_the_numbers() {
        let run = |mbit| Run {
            mbit,
            ..Run::default()
        };
        let study = [
            [run(65.18), run(66.12)],
            [run(26.01), run(13.67)],
            [run(10.94), run(5.70)],
        ];
        let f = report(&study, &RunOptions::new(true), 1.0).findings;
        assert!(f.iter().all(|f| f.holds), "{f:#?}");
        let free = [[run(100.0), run(50.0)]; 3];
        let f = report(&free, &RunOptions::new(true), 1.0).findings;
        assert_eq!(
            f.iter().map(|f| f.holds).collect::<Vec<_>>(),
            [false, false, true, false]
        );
    }
}
