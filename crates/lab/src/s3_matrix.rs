//! `s3-matrix` — study S3 (a blog's IPsec throughput by algorithm suite,
//! 2009): ESP in transport mode keyed with setkey, one TCP stream each
//! way, CPU use recorded, for every auth/enc pair the blog listed, plus
//! today's AEADs; and IPComp (deflate) before ESP with compressible and
//! incompressible payloads (the blog sent zeros, so it could not judge
//! IPComp).

use flowsec_perf::Outcome;

use crate::bed::{Bed, Family, Mode, Setup, Step};
use crate::chart::{Plot, PlotKind, Series};
use crate::progress::Progress;
use crate::report::{Finding, Report, Table};
use crate::{cell, LabError, RunOptions, Scenario};

pub struct S3Matrix;

/// The blog's suites as auth/enc (its notation), then today's AEADs.
const SUITES: [(&str, &str); 22] = [
    ("no ipsec", ""),
    ("null", "null"),
    ("null", "des-cbc"),
    ("null", "3des-cbc"),
    ("null", "aes-cbc"),
    ("null", "aes-ctr"),
    ("null", "blowfish-cbc"),
    ("null", "twofish-cbc"),
    ("null", "camellia-cbc"),
    ("hmac-md5", "null"),
    ("hmac-sha1", "null"),
    ("hmac-sha256", "null"),
    ("aes-xcbc-mac", "null"),
    ("hmac-md5", "3des-cbc"),
    ("hmac-md5", "aes-cbc"),
    ("hmac-sha1", "3des-cbc"),
    ("hmac-sha1", "aes-cbc"),
    ("hmac-sha1", "aes-ctr"),
    ("aes-xcbc-mac", "aes-cbc"),
    ("aes-xcbc-mac", "aes-ctr"),
    ("(aead)", "aes-gcm-16"),
    ("(aead)", "chacha20-poly1305"),
];

/// The blog's figures on its Athlon64 X2 pair (Mbit/s, one direction).
const STUDY: [(&str, &str, f64); 7] = [
    ("no ipsec", "", 941.0),
    ("null", "null", 935.0),
    ("null", "3des-cbc", 111.0),
    ("null", "aes-cbc", 467.0),
    ("null", "blowfish-cbc", 316.0),
    ("hmac-sha1", "aes-cbc", 259.0),
    ("hmac-md5", "aes-cbc", 326.0),
];

/// ESP with both null: refused by RFC 4303 §3.2 (and by flowsec).
fn refused(auth: &str, enc: &str) -> bool {
    auth == "null" && enc == "null"
}

fn steps(auth: &'static str, enc: &'static str) -> Vec<Step> {
    if enc.is_empty() {
        return Vec::new();
    }
    vec![Step::Esp {
        enc,
        auth: (auth != "null" && auth != "(aead)").then_some(auth),
    }]
}

/// One suite, both directions: Mbit/s and CPU % of the whole machine.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Run {
    pub fwd: f64,
    pub rev: f64,
    pub cpu_fwd: f64,
    pub cpu_rev: f64,
}

/// IPComp: (ESP alone, IPComp + ESP) × (text, random) Mbit/s.
type Comp = [[f64; 2]; 2];

const COMP_ESP: Step = Step::Esp {
    enc: "aes-gcm-16",
    auth: None,
};

impl Scenario for S3Matrix {
    fn name(&self) -> &'static str {
        "s3-matrix"
    }

    fn summary(&self) -> &'static str {
        "S3 (2009 blog): TCP both ways with CPU% for every ESP auth/enc pair listed + AEADs; IPComp with compressible and incompressible data"
    }

    fn needs_root(&self) -> bool {
        true
    }

    fn run(&self, opts: &RunOptions) -> Result<Report, LabError> {
        let work = crate::work_dir("s3-matrix")?;
        let secs = if opts.quick { "0.5" } else { "5" };
        let mut progress = Progress::new("s3-matrix", SUITES.len() + 2);
        let stream = |bed: &Bed, reverse: bool, payload: &str| -> Result<Outcome, LabError> {
            bed.perf(
                reverse,
                &format!("-t TCP_STREAM -l {secs} --payload {payload}"),
            )
        };
        let mut runs = Vec::new();
        for (auth, enc) in SUITES {
            progress.step(&format!("{auth}/{enc}"));
            if refused(auth, enc) {
                runs.push(None);
                continue;
            }
            let bed = Bed::up(
                &Setup::new(Family::V4, Mode::Transport, &steps(auth, enc)),
                &work,
            )?;
            let (f, r) = (
                stream(&bed, false, "random")?,
                stream(&bed, true, "random")?,
            );
            runs.push(Some(Run {
                fwd: f.throughput_mbit_s,
                rev: r.throughput_mbit_s,
                cpu_fwd: f.local_cpu.system_pct,
                cpu_rev: r.local_cpu.system_pct,
            }));
        }
        let mut comp: Comp = [[0.0; 2]; 2];
        for (i, bundle) in [vec![COMP_ESP], vec![Step::IpComp, COMP_ESP]]
            .iter()
            .enumerate()
        {
            progress.step(if i == 0 {
                "ESP aes-gcm-16, text and random payloads"
            } else {
                "IPComp + ESP aes-gcm-16, text and random payloads"
            });
            let bed = Bed::up(&Setup::new(Family::V4, Mode::Transport, bundle), &work)?;
            for (j, payload) in ["text", "random"].into_iter().enumerate() {
                comp[i][j] = stream(&bed, false, payload)?.throughput_mbit_s;
            }
        }
        progress.finish();
        let _ = std::fs::remove_dir_all(&work);
        Ok(report(&runs, &comp, opts, secs))
    }
}

fn get(runs: &[Option<Run>], auth: &str, enc: &str) -> f64 {
    SUITES
        .iter()
        .position(|&(a, e)| a == auth && e == enc)
        .and_then(|i| runs[i])
        .map_or(f64::NAN, |r| r.fwd)
}

fn report(runs: &[Option<Run>], comp: &Comp, opts: &RunOptions, secs: &str) -> Report {
    let mut findings = suite_findings(runs);
    findings.push(comp_finding(comp));
    Report {
        tables: vec![suite_table(runs), comp_table(comp)],
        findings,
        plots: vec![plot(runs)],
        ..Report::new(
            "s3-matrix",
            "S3, IPsec throughput by algorithm suite (Linux setkey + nuttcp blog, 2009)",
            opts.quick,
            format!(
                "gwA ↔ gwB in transport mode, ESP only, keyed by setkey files (`auth/enc` as the blog wrote them; `null` auth is no ESP integrity), one `flowsec perf -t TCP_STREAM -l {secs}` each way with incompressible data; CPU % is the whole machine's (both gateways and both ends share its CPUs). IPComp: deflate before ESP AES-GCM-16 with `--payload text` (repeated English text) and `--payload random`."
            ),
        )
    }
}

/// A row per suite: the blog's figure, today's both ways (× no ipsec) and
/// the CPU used.
fn suite_table(runs: &[Option<Run>]) -> Table {
    let none = get(runs, "no ipsec", "");
    let rows = SUITES
        .iter()
        .zip(runs)
        .map(|(&(auth, enc), run)| {
            let study = STUDY
                .iter()
                .find(|&&(a, e, _)| a == auth && e == enc)
                .map_or("—".into(), |&(_, _, v)| cell(v, STUDY[0].2));
            let name = if enc.is_empty() {
                auth.to_string()
            } else {
                format!("{auth}/{enc}")
            };
            match run {
                Some(r) => vec![
                    name,
                    study,
                    cell(r.fwd, none),
                    cell(r.rev, none),
                    format!("{:.0} / {:.0}", r.cpu_fwd, r.cpu_rev),
                ],
                None => vec![
                    name,
                    study,
                    "refused: ESP with neither confidentiality nor integrity (RFC 4303 §3.2)"
                        .into(),
                    "—".into(),
                    "—".into(),
                ],
            }
        })
        .collect();
    Table {
        title: "TCP throughput by ESP suite (auth/enc), Mbit/s (× no ipsec)".into(),
        columns: [
            "suite",
            "blog (Athlon64 X2)",
            "today gwA → gwB",
            "today gwB → gwA",
            "today CPU % (machine) →/←",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// IPComp before ESP against ESP alone, per payload.
fn comp_table(comp: &Comp) -> Table {
    Table {
        title: "IPComp (deflate) before ESP AES-GCM-16, Mbit/s of payload".into(),
        columns: ["payload", "ESP alone", "IPComp + ESP", "IPComp gain"]
            .map(String::from)
            .to_vec(),
        rows: ["text (compressible)", "random (incompressible)"]
            .iter()
            .enumerate()
            .map(|(j, p)| {
                vec![
                    (*p).to_string(),
                    format!("{:.1}", comp[0][j]),
                    format!("{:.1}", comp[1][j]),
                    format!("{:.2}×", comp[1][j] / comp[0][j]),
                ]
            })
            .collect(),
    }
}

/// The blog's rankings of ciphers and of integrity algorithms, and the
/// usual suite's share of the link.
fn suite_findings(runs: &[Option<Run>]) -> Vec<Finding> {
    let none = get(runs, "no ipsec", "");
    let g = |enc: &str| get(runs, "null", enc);
    let (aes, des, tdes) = (g("aes-cbc"), g("des-cbc"), g("3des-cbc"));
    let others = [g("blowfish-cbc"), g("twofish-cbc"), g("camellia-cbc")];
    let (omax, omin) = (
        others.iter().copied().fold(f64::MIN, f64::max),
        others.iter().copied().fold(f64::MAX, f64::min),
    );
    let a = |auth: &str| get(runs, auth, "null");
    let (md5, xcbc, sha) = (
        a("hmac-md5"),
        a("aes-xcbc-mac"),
        a("hmac-sha1").max(a("hmac-sha256")),
    );
    let usual = get(runs, "hmac-sha1", "aes-cbc") / none;
    vec![
        Finding {
            claim: "ciphers rank aes > blowfish/twofish/camellia >> des > 3des".into(),
            holds: aes > omax && omin > 1.5 * des && des > tdes,
            evidence: format!(
                "today null/…: aes-cbc {aes:.0}, blowfish/twofish/camellia {:.0}/{:.0}/{:.0}, des {des:.0}, 3des {tdes:.0} Mbit/s (holds if aes above all three, the slowest of them 1.5× des or more, des above 3des)",
                others[0], others[1], others[2]
            ),
        },
        Finding {
            claim: "integrity ranks hmac-md5 > aes-xcbc-mac > hmac-sha1/sha256".into(),
            holds: md5 > xcbc && xcbc > sha,
            evidence: format!(
                "today …/null: hmac-md5 {md5:.0}, aes-xcbc-mac {xcbc:.0}, best of hmac-sha1/sha256 {sha:.0} Mbit/s (holds if in that order)"
            ),
        },
        Finding {
            claim: "the usual hmac-sha1/aes-cbc reaches about a quarter of the link (259 of 941 Mbit/s)".into(),
            holds: (0.15..=0.45).contains(&usual),
            evidence: format!(
                "today hmac-sha1/aes-cbc / no ipsec {usual:.2}× (holds if 0.15–0.45×)"
            ),
        },
    ]
}

/// IPComp pays for compressible payloads only.
fn comp_finding(comp: &Comp) -> Finding {
    let (text_gain, random_gain) = (comp[1][0] / comp[0][0], comp[1][1] / comp[0][1]);
    Finding {
        claim: "IPComp helps compressible traffic only (the blog's zeros could not show it)".into(),
        holds: text_gain > 1.0 && random_gain <= 1.05,
        evidence: format!(
            "today IPComp+ESP / ESP: text {text_gain:.2}×, random {random_gain:.2}× (holds if text gains and random does not gain more than 5%)"
        ),
    }
}

/// Per suite, the blog's figure beside today's, both ways.
pub(crate) fn plot(runs: &[Option<Run>]) -> Plot {
    let categories = SUITES
        .iter()
        .map(|&(auth, enc)| match (auth, enc) {
            (_, "") => auth.to_string(),
            ("(aead)", _) => format!("{enc} (AEAD)"),
            _ if refused(auth, enc) => format!("{auth}/{enc} (refused today)"),
            _ => format!("{auth}/{enc}"),
        })
        .collect();
    let blog = STUDY.iter().filter_map(|&(a, e, v)| {
        let i = SUITES.iter().position(|&s| s == (a, e))?;
        Some((i as f64, v))
    });
    let today = |f: fn(&Run) -> f64| {
        runs.iter()
            .enumerate()
            .filter_map(move |(i, r)| r.as_ref().map(|r| (i as f64, f(r))))
    };
    Plot {
        file: "s3-matrix".into(),
        title: "TCP throughput by ESP suite (auth/enc), transport mode: the blog and today".into(),
        kind: PlotKind::Bars { categories },
        x_label: String::new(),
        y_label: "throughput, Mbit/s".into(),
        log_y: true,
        log_x: false,
        markers: Vec::new(),
        series: vec![
            Series::study("blog 2009 (Athlon64 X2), one way", 0, blog),
            Series::today("today gwA → gwB", 0, today(|r| r.fwd)),
            Series::today("today gwB → gwA", 1, today(|r| r.rev)),
        ],
        note: "Tinted bars: the blog's figures (Athlon64 X2 pair, gigabit Ethernet, 2009). Today null/null is refused: ESP with neither confidentiality nor integrity (RFC 4303 §3.2).".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_follow_the_numbers() {
        // The blog's ranking, with made-up figures where it gave none.
        let fig = |auth: &str, enc: &str| -> f64 {
            match (auth, enc) {
                ("no ipsec", _) => 941.0,
                ("null", "aes-cbc") => 467.0,
                ("null", "blowfish-cbc") => 316.0,
                ("null", "twofish-cbc") => 300.0,
                ("null", "camellia-cbc") => 290.0,
                ("null", "des-cbc") => 180.0,
                ("null", "3des-cbc") => 111.0,
                ("hmac-md5", "null") => 600.0,
                ("aes-xcbc-mac", "null") => 500.0,
                ("hmac-sha1", "null") => 400.0,
                ("hmac-sha1", "aes-cbc") => 259.0,
                _ => 100.0,
            }
        };
        let runs: Vec<Option<Run>> = SUITES
            .iter()
            .map(|&(a, e)| {
                (!refused(a, e)).then(|| Run {
                    fwd: fig(a, e),
                    ..Run::default()
                })
            })
            .collect();
        let comp = [[100.0, 100.0], [300.0, 98.0]];
        let rep = report(&runs, &comp, &RunOptions::new(true), "0.5");
        assert!(rep.findings.iter().all(|f| f.holds), "{:#?}", rep.findings);
        assert!(rep.tables[0].rows[1][2].starts_with("refused"));
        let flat: Vec<Option<Run>> = runs
            .iter()
            .map(|r| r.map(|r| Run { fwd: 500.0, ..r }))
            .collect();
        let rep = report(
            &flat,
            &[[1.0, 1.0], [1.0, 1.0]],
            &RunOptions::new(true),
            "0.5",
        );
        assert!(rep.findings.iter().all(|f| !f.holds), "{:#?}", rep.findings);
        // Every suite but null/null keys and parses.
        for &(a, e) in &SUITES {
            let s = Setup::new(Family::V4, Mode::Transport, &steps(a, e));
            if !refused(a, e) {
                flowsec_setkey::parse("t", &s.setkey(true)).unwrap();
            }
        }
    }
}
