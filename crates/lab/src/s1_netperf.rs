//! `s1-netperf` — study S1, experiment E1b (KAME IPsec on a PC platform,
//! 1999): netperf's TCP_STREAM, UDP_STREAM, TCP_RR and UDP_RR with the
//! study's sizes, for no IPsec, AH (HMAC-SHA1), ESP (3DES-CBC) and AH+ESP
//! in transport mode, over IPv4 and IPv6; plus today's AEADs (AES-GCM,
//! ChaCha20-Poly1305) as ESP rows. gwA and gwB are the study's two hosts,
//! each running `flowsec up`; `flowsec perf` runs the tests.

use flowsec_perf::Outcome;

use crate::bed::{Bed, Family, Mode, Setup, Step};
use crate::chart::{Plot, PlotKind, Series};
use crate::progress::Progress;
use crate::report::{Finding, Report, Table};
use crate::{cell, LabError, RunOptions, Scenario};

pub struct S1Netperf;

const AH: Step = Step::Ah { auth: "hmac-sha1" };
const ESP: Step = Step::Esp {
    enc: "3des-cbc",
    auth: None,
};

/// The study's four patterns, then today's rows.
const PATTERNS: [(&str, &[Step]); 6] = [
    ("NONE", &[]),
    ("AH", &[AH]),
    ("ESP", &[ESP]),
    ("AH+ESP", &[ESP, AH]),
    (
        "ESP aes-gcm-16 (today)",
        &[Step::Esp {
            enc: "aes-gcm-16",
            auth: None,
        }],
    ),
    (
        "ESP chacha20-poly1305 (today)",
        &[Step::Esp {
            enc: "chacha20-poly1305",
            auth: None,
        }],
    ),
];

/// One netperf test of the study.
struct Test {
    /// `flowsec perf client -t` arguments, also its name in the tables.
    args: &'static str,
    /// Throughput (Mbit/s) or transactions/s.
    stream: bool,
    /// The study's figures for NONE, AH, ESP, AH+ESP: IPv4, IPv6.
    v4: [f64; 4],
    v6: Option<[f64; 4]>,
}

/// The study gave one TCP_STREAM figure for both buffer sizes.
const TCP_V4: [f64; 4] = [60.9, 23.1, 10.9, 7.7];
const TCP_V6: Option<[f64; 4]> = Some([58.2, 24.3, 10.9, 7.7]);

const fn test(args: &'static str, stream: bool, v4: [f64; 4], v6: Option<[f64; 4]>) -> Test {
    Test {
        args,
        stream,
        v4,
        v6,
    }
}

const TESTS: [Test; 7] = [
    test("TCP_STREAM -m 4096 -s 57344 -S 57344", true, TCP_V4, TCP_V6),
    test("TCP_STREAM -m 4096 -s 32768 -S 32768", true, TCP_V4, TCP_V6),
    test(
        "UDP_STREAM -m 4096 -s 32768 -S 32768",
        true,
        [94.0, 30.7, 12.0, 9.0],
        Some([93.2, 34.0, 11.9, 9.0]),
    ),
    test(
        "UDP_STREAM -m 1024 -s 32768 -S 32768",
        true,
        [93.7, 23.8, 11.3, 8.1],
        Some([92.4, 25.8, 11.3, 8.1]),
    ),
    test(
        "TCP_RR -r 1,1",
        false,
        [3455.0, 1404.0, 1941.0, 1164.0],
        None,
    ),
    test(
        "UDP_RR -r 1,1",
        false,
        [3930.0, 1651.0, 2499.0, 1358.0],
        None,
    ),
    test(
        "UDP_RR -r 516,4",
        false,
        [2560.0, 988.0, 839.0, 575.0],
        None,
    ),
];

const FAMILIES: [Family; 2] = [Family::V4, Family::V6];

/// Today's figure of every (family, pattern, test).
pub(crate) type Results = Vec<Vec<[f64; TESTS.len()]>>;

impl Scenario for S1Netperf {
    fn name(&self) -> &'static str {
        "s1-netperf"
    }

    fn summary(&self) -> &'static str {
        "S1 E1b: netperf TCP/UDP_STREAM, TCP/UDP_RR; NONE/AH/ESP/AH+ESP (+ AEADs), transport, IPv4 and IPv6"
    }

    fn needs_root(&self) -> bool {
        true
    }

    fn run(&self, opts: &RunOptions) -> Result<Report, LabError> {
        let work = crate::work_dir("s1-netperf")?;
        let secs = if opts.quick { "0.3" } else { "3" };
        let mut progress =
            Progress::new("s1-netperf", FAMILIES.len() * PATTERNS.len() * TESTS.len());
        let mut results: Results = Vec::new();
        for family in FAMILIES {
            let mut per_pattern = Vec::new();
            for (label, steps) in PATTERNS {
                let bed = Bed::up(&Setup::new(family, Mode::Transport, steps), &work)?;
                let mut row = [0.0; TESTS.len()];
                for (i, t) in TESTS.iter().enumerate() {
                    progress.step(&format!("{} {label}: {}", family.name(), t.args));
                    let o: Outcome = bed.perf(false, &format!("-t {} -l {secs}", t.args))?;
                    row[i] = if t.stream {
                        o.throughput_mbit_s
                    } else {
                        o.trans_per_s
                    };
                }
                per_pattern.push(row);
            }
            results.push(per_pattern);
        }
        progress.finish();
        let _ = std::fs::remove_dir_all(&work);
        Ok(report(&results, opts, secs))
    }
}

fn report(r: &Results, opts: &RunOptions, secs: &str) -> Report {
    let mut tables = Vec::new();
    for (i, t) in TESTS.iter().enumerate() {
        let unit = if t.stream { "Mbit/s" } else { "transactions/s" };
        let rows = PATTERNS
            .iter()
            .enumerate()
            .map(|(p, (label, _))| {
                let study = |fig: Option<[f64; 4]>| match fig {
                    Some(f) if p < 4 => cell(f[p], f[0]),
                    _ => "—".into(),
                };
                vec![
                    (*label).to_string(),
                    study(Some(t.v4)),
                    cell(r[0][p][i], r[0][0][i]),
                    study(t.v6),
                    cell(r[1][p][i], r[1][0][i]),
                ]
            })
            .collect();
        tables.push(Table {
            title: format!("{}, {unit} (× NONE)", t.args),
            columns: [
                "pattern",
                "study IPv4",
                "today IPv4",
                "study IPv6",
                "today IPv6",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        });
    }
    Report {
        tables,
        findings: findings(r),
        plots: vec![plot(r)],
        ..Report::new(
            "s1-netperf",
            "S1 E1b, netperf over KAME IPsec (FreeBSD, Pentium II, 100 Mbit/s, 1999)",
            opts.quick,
            format!(
                "gwA → gwB over the lab's veth link in transport mode, each gateway running `flowsec up` keyed by setkey: AH = HMAC-SHA1-96, ESP = 3DES-CBC (no ESP integrity, as KAME's ESP of 1999), AH+ESP = both (AH outermost); today's rows ESP AES-GCM-16 and ChaCha20-Poly1305. `flowsec perf client -t TEST` with the study's sizes, {secs} s per test (the study: 60 s). Cells: the figure and its ratio to NONE of the same family. IPv6 transport mode needs Neighbor Discovery let through in the clear (bypass policies for ICMPv6 135/136, as strongSwan documents). UDP_STREAM's 4096-byte datagrams exceed the TUN's 1400-byte MTU and reach flowsec as fragments: transport mode protects whole datagrams only (RFC 4303 §3.1.1), so flowsec reassembles them before IPsec and fragments the ESP/AH packet after it (§3.3.4), as KAME did."
            ),
        )
    }
}

/// IPv4, per pattern: TCP_STREAM, UDP_STREAM (1024 B) and TCP_RR over
/// NONE's, the study's beside today's.
pub(crate) fn plot(r: &Results) -> Plot {
    let tests = [
        (0, "TCP_STREAM 4096 B"),
        (3, "UDP_STREAM 1024 B"),
        (4, "TCP_RR 1 B"),
    ];
    let series = tests
        .iter()
        .enumerate()
        .flat_map(|(c, &(i, name))| {
            let study = (0..4).map(|p| (p as f64, TESTS[i].v4[p] / TESTS[i].v4[0]));
            let today = (0..PATTERNS.len()).map(|p| (p as f64, r[0][p][i] / r[0][0][i]));
            [
                Series::study(format!("study 1999, {name}"), c, study),
                Series::today(format!("today, {name}"), c, today),
            ]
        })
        .collect();
    Plot {
        file: "s1-netperf".into(),
        title: "netperf over IPv4 relative to NONE: study and today".into(),
        kind: PlotKind::Bars {
            categories: PATTERNS
                .iter()
                .map(|(label, _)| label.trim_end_matches(" (today)").to_string())
                .collect(),
        },
        x_label: String::new(),
        y_label: "throughput (streams) or transactions/s (RR), × NONE".into(),
        log_y: false,
        log_x: false,
        markers: Vec::new(),
        series,
        note: "Tinted bars: the study's figures (FreeBSD KAME, Pentium II, 100 Mbit/s Ethernet); it had no AEAD rows. AH = HMAC-SHA1, ESP = 3DES-CBC, transport mode.".into(),
    }
}

fn findings(r: &Results) -> Vec<Finding> {
    // IPv4 figures: [pattern][test].
    let v4 = &r[0];
    let (none, ah, esp, both) = (0, 1, 2, 3);
    // UDP with 1024-byte messages: they fit the TUN unfragmented (the
    // 4096-byte ones cannot cross transport mode yet, see the method).
    let (tcp, udp, tcp_rr) = (0, 3, 4);
    let tcp_udp = v4[esp][tcp] / v4[esp][udp];
    let ah_esp = v4[ah][tcp] / v4[esp][tcp];
    let both_esp = v4[both][tcp] / v4[esp][tcp];
    let rr_loss = v4[esp][tcp_rr] / v4[none][tcp_rr];
    let stream_loss = v4[esp][tcp] / v4[none][tcp];
    let v6_v4: Vec<f64> = (0..4).map(|p| r[1][p][tcp] / r[0][p][tcp]).collect();
    let list = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.2}×"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    vec![
        Finding {
            claim: "the IPsec throughput ceiling is the same for TCP and UDP (ESP: 10.9 vs 11.3 Mbit/s)".into(),
            holds: (0.67..=1.5).contains(&tcp_udp),
            evidence: format!(
                "today ESP TCP_STREAM {:.1} vs UDP_STREAM (1024 B) {:.1} Mbit/s: {tcp_udp:.2}× (holds if 0.67–1.5×)",
                v4[esp][tcp], v4[esp][udp]
            ),
        },
        Finding {
            claim: "AH is about twice as fast as ESP (23.1 vs 10.9 Mbit/s)".into(),
            holds: (1.5..=3.0).contains(&ah_esp),
            evidence: format!(
                "today AH {:.1} vs ESP {:.1} Mbit/s TCP_STREAM: {ah_esp:.2}× (holds if 1.5–3×)",
                v4[ah][tcp], v4[esp][tcp]
            ),
        },
        Finding {
            claim: "AH+ESP streams about as fast as ESP alone (7.7 vs 10.9 Mbit/s)".into(),
            holds: (0.6..=1.05).contains(&both_esp),
            evidence: format!(
                "today AH+ESP {:.1} vs ESP {:.1} Mbit/s: {both_esp:.2}× (holds if 0.6–1.05×)",
                v4[both][tcp], v4[esp][tcp]
            ),
        },
        Finding {
            claim: "request/response loses less to IPsec than streams do".into(),
            holds: rr_loss > stream_loss,
            evidence: format!(
                "today ESP/NONE: TCP_RR {rr_loss:.2}× vs TCP_STREAM {stream_loss:.2}× (holds if TCP_RR's is higher)"
            ),
        },
        Finding {
            claim: "for 1-byte transactions ESP beats AH (TCP_RR 1941 vs 1404/s)".into(),
            holds: v4[esp][tcp_rr] > v4[ah][tcp_rr],
            evidence: format!(
                "today TCP_RR ESP {:.0} vs AH {:.0}/s (holds if ESP's is higher)",
                v4[esp][tcp_rr], v4[ah][tcp_rr]
            ),
        },
        Finding {
            claim: "IPv6 performs as IPv4".into(),
            holds: v6_v4.iter().all(|x| (0.8..=1.25).contains(x)),
            evidence: format!(
                "today TCP_STREAM IPv6/IPv4 for NONE, AH, ESP, AH+ESP: {} (holds if all 0.8–1.25×)",
                list(&v6_v4)
            ),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Results shaped like the study's: every finding holds; a flat
    /// world where IPsec costs nothing and IPv6 is half as fast: most
    /// differ.
    #[test]
    fn verdicts_follow_the_numbers() {
        let study: Vec<[f64; 7]> = (0..PATTERNS.len())
            .map(|p| {
                let mut row = [0.0; 7];
                for (i, t) in TESTS.iter().enumerate() {
                    row[i] = t.v4[p.min(3)];
                }
                row
            })
            .collect();
        let r = vec![study.clone(), study.clone()];
        let f = findings(&r);
        assert!(f.iter().all(|f| f.holds), "{f:#?}");
        let flat = vec![[100.0; 7]; PATTERNS.len()];
        let half = vec![[50.0; 7]; PATTERNS.len()];
        let f = findings(&vec![flat, half]);
        assert_eq!(
            f.iter().map(|f| f.holds).collect::<Vec<_>>(),
            [true, false, true, false, false, false]
        );
        let rep = report(&r, &RunOptions::new(true), "0.3");
        assert_eq!(rep.tables.len(), TESTS.len());
        assert_eq!(rep.tables[0].rows[1][1], "23.1 (0.38×)");
    }
}
