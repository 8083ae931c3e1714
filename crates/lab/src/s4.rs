//! `s4-crypto` — study S4 (SSL-VPN on a network processor with a crypto
//! engine, IXP425, ~2007): AES-128-CBC and SHA-1 in software, and the
//! cipher suite AES-128-CBC + SHA-1 done in software or handed to a crypto
//! engine, per data size. Today: flowsec's crypto inline on this core
//! against the `engine` backend (the same transforms on another thread,
//! reached through a request queue: this kernel has no AF_ALG); ESP
//! packets stand in for the study's SSL records. With root, also the
//! study's end-to-end contrast: a TCP stream through two `flowsec up`
//! gateways with the suite, inline and through the engine, against the
//! suite's crypto ceiling.

use std::hint::black_box;
use std::time::{Duration, Instant};

use flowsec_crypto::backend::HashAlg;
use flowsec_crypto::{EncrId, EspTransform, IntegId, Provider};

use crate::bed::{Bed, Family, Mode, Setup, Step};
use crate::chart::{Plot, PlotKind, Series};
use crate::progress::Progress;
use crate::report::{Finding, Report, Table};
use crate::{LabError, RunOptions, Scenario};

/// The study's data sizes (bytes).
const SIZES: [usize; 5] = [256, 512, 1024, 1500, 2048];
/// Study S4, Mbit/s per size: AES-128-CBC on the engine; the SSL record
/// throughput in software and with the engine.
const STUDY_AES_ENGINE: [f64; 5] = [37.2, 54.3, 69.3, 65.8, 82.4];
const STUDY_RECORD_SW: [f64; 5] = [4.5, 6.9, 9.5, 10.5, 11.9];
const STUDY_RECORD_ENGINE: [f64; 5] = [2.8, 5.2, 8.9, 10.9, 13.7];
/// AES-128-CBC in software was flat, 31.1–31.6 Mbit/s; SHA-1 122.7 at
/// 256 B to 139.8 at 2048 B.
const STUDY_AES_SW: (f64, f64) = (31.1, 31.6);
const STUDY_SHA1: (f64, f64) = (122.7, 139.8);

pub struct S4Crypto;

impl Scenario for S4Crypto {
    fn name(&self) -> &'static str {
        "s4-crypto"
    }

    fn summary(&self) -> &'static str {
        "S4 (IXP425 SSL-VPN): AES-128-CBC, SHA-1 and AES-128-CBC+SHA-1 per size, inline vs crypto engine behind a queue"
    }

    fn needs_root(&self) -> bool {
        false
    }

    fn run(&self, opts: &RunOptions) -> Result<Report, LabError> {
        let per = Duration::from_millis(if opts.quick { 60 } else { 1000 });
        let mut m = crypto(per)?;
        m.end_to_end = if crate::topology::can_build() {
            Some(end_to_end(opts)?)
        } else {
            None
        };
        Ok(report(&m, opts, per))
    }
}

/// The in-process half: every cell, `per` each.
fn crypto(per: Duration) -> Result<Measured, LabError> {
    let inline = Provider::fastest();
    let engine = Provider::engine(Provider::fastest());
    let err = LabError::Crypto;
    let cbc = inline.cipher(EncrId::AES_CBC, &[0x11; 16]).map_err(err)?;
    let sha1 = inline.hash(HashAlg::Sha1).ok_or(LabError::NoSha1)?;
    let esp = |p: &Provider, integ: IntegId| {
        let ik: &[u8] = if integ == IntegId::NONE {
            &[]
        } else {
            &[0x22; 20]
        };
        p.esp(EncrId::AES_CBC, &[0x11; 16], integ, ik).map_err(err)
    };
    let (cbc_in, cbc_en) = (esp(&inline, IntegId::NONE)?, esp(&engine, IntegId::NONE)?);
    let (suite_in, suite_en) = (
        esp(&inline, IntegId::HMAC_SHA1_96)?,
        esp(&engine, IntegId::HMAC_SHA1_96)?,
    );
    let mut m = Measured::default();
    for &size in &SIZES {
        let mut data = vec![0x5a; size.div_ceil(16) * 16];
        let iv = [7u8; 16];
        // CBC needs whole blocks: 1500 B is 1504 B of work, counted so.
        let len = data.len();
        m.raw_cbc
            .push(mbit(len, measure(per, || cbc.encrypt(&iv, &mut data))));
        let mut digest = [0u8; 20];
        let plain = vec![0x5a; size];
        m.sha1.push(mbit(
            size,
            measure(per, || sha1.digest(&plain, &mut digest)),
        ));
        m.esp_cbc_inline
            .push(mbit(size, seal_ns(&*cbc_in, size, per)?));
        m.esp_cbc_engine
            .push(mbit(size, seal_ns(&*cbc_en, size, per)?));
        m.suite_inline
            .push(mbit(size, seal_ns(&*suite_in, size, per)?));
        m.suite_engine
            .push(mbit(size, seal_ns(&*suite_en, size, per)?));
    }
    Ok(m)
}

/// The study's end-to-end contrast: plain forwarding and the VPN's own
/// throughput against the crypto ceiling (Mbit/s).
const STUDY_FORWARDING: f64 = 94.1;
const STUDY_VPN: f64 = 6.06;
const STUDY_CEILING: f64 = 65.8;

/// Today's end to end, Mbit/s: plain forwarding, the tunnel with the
/// suite inline and through the engine, and the other implementations
/// (their setup's label, Mbit/s).
#[derive(Debug, Clone)]
struct EndToEnd {
    forwarding: f64,
    inline: f64,
    engine: f64,
    peers: Vec<(String, f64)>,
    /// The implementations left out, and why.
    skipped: Vec<String>,
    /// The SSL-VPN row: ESP over UDP, TCP and TLS (RFC 9329).
    ssl: crate::s4_sslvpn::SslVpn,
}

/// One TCP stream hostA → hostB through plain forwarding, then through
/// two `flowsec up` gateways in tunnel mode with the study's suite
/// (ESP AES-128-CBC + HMAC-SHA1-96), inline and `--backend engine`, then
/// through the other implementations chosen (strongSwan with the same
/// suite, wireguard-go with its own).
fn end_to_end(opts: &RunOptions) -> Result<EndToEnd, LabError> {
    let work = crate::work_dir("s4")?;
    let secs = if opts.quick { "1" } else { "5" };
    let suite = Setup::new(
        Family::V4,
        Mode::Tunnel,
        &[Step::Esp {
            enc: "aes-cbc",
            auth: Some("hmac-sha1"),
        }],
    );
    let mut skipped = Vec::new();
    let others = opts.others(&suite, &mut skipped);
    let mut progress = Progress::new(
        "s4-crypto end to end",
        3 + others.len() + crate::s4_sslvpn::STEPS,
    );
    let mut stream = |setup: &Setup, args: &[&str], what: &str| -> Result<f64, LabError> {
        progress.step(what);
        let bed = Bed::up_with(setup, &work, args)?;
        let o: flowsec_perf::Outcome = bed.perf(false, &format!("-t TCP_STREAM -l {secs}"))?;
        Ok(o.throughput_mbit_s)
    };
    let none = Setup::new(Family::V4, Mode::Tunnel, &[]);
    let mut e = EndToEnd {
        forwarding: stream(&none, &[], "plain forwarding")?,
        inline: stream(&suite, &[], "tunnel, crypto inline")?,
        engine: stream(&suite, &["--backend", "engine"], "tunnel, crypto engine")?,
        peers: Vec::new(),
        skipped,
        ssl: Default::default(),
    };
    for setup in &others {
        let label = setup.label();
        e.peers.push((label.clone(), stream(setup, &[], &label)?));
    }
    e.ssl = crate::s4_sslvpn::measure(secs, &work, &mut progress)?;
    progress.finish();
    let _ = std::fs::remove_dir_all(&work);
    Ok(e)
}

/// Today's figures per size, Mbit/s.
#[derive(Default)]
struct Measured {
    raw_cbc: Vec<f64>,
    sha1: Vec<f64>,
    esp_cbc_inline: Vec<f64>,
    esp_cbc_engine: Vec<f64>,
    suite_inline: Vec<f64>,
    suite_engine: Vec<f64>,
    /// Measured when this process may build the lab topology (root).
    end_to_end: Option<EndToEnd>,
}

/// Mean ns per call of `f`, run for `per`.
fn measure(per: Duration, mut f: impl FnMut()) -> f64 {
    // Warm up (caches, the engine thread).
    for _ in 0..16 {
        f();
    }
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < per || n < 16 {
        f();
        n += 1;
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

/// ns per ESP seal of a `size`-byte payload.
fn seal_ns(t: &dyn EspTransform, size: usize, per: Duration) -> Result<f64, LabError> {
    let body = (size + 2).div_ceil(t.block_len()) * t.block_len();
    let mut packet = vec![0x5a; 8 + t.iv_len() + body + t.icv_len()];
    packet[..4].copy_from_slice(&0x1001u32.to_be_bytes());
    let mut seq = 0u64;
    let mut failed = false;
    let ns = measure(per, || {
        seq += 1;
        failed |= t.seal(seq, false, black_box(&mut packet)).is_err();
    });
    if failed {
        return Err(LabError::SealFailed { size });
    }
    Ok(ns)
}

fn mbit(bytes: usize, ns: f64) -> f64 {
    bytes as f64 * 8.0 / ns * 1e3
}

fn f1(v: f64) -> String {
    format!("{v:.1}")
}

fn ratio(a: f64, b: f64) -> String {
    format!("{:.2}×", a / b)
}

fn report(m: &Measured, opts: &RunOptions, per: Duration) -> Report {
    let mut findings = crypto_findings(m);
    findings.extend(end_to_end_finding(m));
    let mut tables = vec![
        cipher_table(m),
        hash_table(m),
        suite_table(m),
        end_to_end_table(m),
    ];
    if let Some(e) = &m.end_to_end {
        let ceiling = m.suite_inline[3];
        tables.push(crate::s4_sslvpn::table(&e.ssl, ceiling, e.inline));
        findings.extend(crate::s4_sslvpn::findings(&e.ssl, ceiling));
    }
    let plots = vec![plot(&m.suite_inline, &m.suite_engine)];
    Report {
        tables,
        findings,
        plots,
        skipped: m
            .end_to_end
            .as_ref()
            .map_or_else(Vec::new, |e| e.skipped.clone()),
        ..Report::new(
            "s4-crypto",
            "S4, SSL-VPN on a network processor with a crypto engine (IXP425, ~2007)",
            opts.quick,
            format!(
            "One core seals ESP packets of each data size in a loop for {:.2} s per cell (mean time per packet), inline (aws-lc-rs first) and through flowsec's `engine` backend (the same transform on a thread of its own behind a bounded request queue: copy in, queue, seal, queue back, copy out). Raw AES-128-CBC and SHA-1 are called directly. End to end (root only): one TCP stream hostA → hostB for plain forwarding, two `flowsec up` gateways in tunnel mode with the suite inline and through the engine, and, where installed, strongSwan (charon, kernel-libipsec, the same suite) and wireguard-go; then the SSL-VPN row: the stream through two `flowsec up` gateways keyed by IKEv2 with the suite, ESP in UDP, in TCP and in TLS 1.3 (RFC 9329; gwB with `--tcp-listen`), inline and (TLS) through the engine at both gateways, beside plain TCP between the gateways. The study measured SSL records through OpenSSL and OCF on an IXP425.",
            per.as_secs_f64()
        ),
        )
    }
}

/// AES-128-CBC, software and engine, by size: the study beside today.
fn cipher_table(m: &Measured) -> Table {
    let last = SIZES.len() - 1;
    Table {
        title: "AES-128-CBC: software vs crypto engine, Mbit/s".into(),
        columns: [
            "size B",
            "study software",
            "study engine",
            "study engine/software",
            "today raw AES-CBC",
            "today ESP AES-CBC inline",
            "today ESP AES-CBC engine",
            "today engine/inline",
        ]
        .map(String::from)
        .to_vec(),
        rows: SIZES
            .iter()
            .enumerate()
            .map(|(i, size)| {
                let sw =
                    STUDY_AES_SW.0 + (STUDY_AES_SW.1 - STUDY_AES_SW.0) * i as f64 / last as f64;
                vec![
                    size.to_string(),
                    if i == 0 || i == last {
                        f1(sw)
                    } else {
                        "≈31".into()
                    },
                    f1(STUDY_AES_ENGINE[i]),
                    ratio(STUDY_AES_ENGINE[i], sw),
                    f1(m.raw_cbc[i]),
                    f1(m.esp_cbc_inline[i]),
                    f1(m.esp_cbc_engine[i]),
                    ratio(m.esp_cbc_engine[i], m.esp_cbc_inline[i]),
                ]
            })
            .collect(),
    }
}

/// SHA-1 in software by size.
fn hash_table(m: &Measured) -> Table {
    let last = SIZES.len() - 1;
    Table {
        title: "SHA-1 in software, Mbit/s".into(),
        columns: ["size B", "study", "today", "today SHA-1/AES-CBC"]
            .map(String::from)
            .to_vec(),
        rows: SIZES
            .iter()
            .enumerate()
            .map(|(i, size)| {
                let study = match i {
                    0 => f1(STUDY_SHA1.0),
                    i if i == last => f1(STUDY_SHA1.1),
                    _ => "–".into(),
                };
                vec![
                    size.to_string(),
                    study,
                    f1(m.sha1[i]),
                    ratio(m.sha1[i], m.raw_cbc[i]),
                ]
            })
            .collect(),
    }
}

/// The whole suite, inline and through the engine, by size.
fn suite_table(m: &Measured) -> Table {
    Table {
        title: "AES-128-CBC + SHA-1: study's SSL records, today's ESP packets, Mbit/s".into(),
        columns: [
            "size B",
            "study software",
            "study engine",
            "study engine/software",
            "today inline",
            "today engine",
            "today engine/inline",
        ]
        .map(String::from)
        .to_vec(),
        rows: SIZES
            .iter()
            .enumerate()
            .map(|(i, size)| {
                vec![
                    size.to_string(),
                    f1(STUDY_RECORD_SW[i]),
                    f1(STUDY_RECORD_ENGINE[i]),
                    ratio(STUDY_RECORD_ENGINE[i], STUDY_RECORD_SW[i]),
                    f1(m.suite_inline[i]),
                    f1(m.suite_engine[i]),
                    ratio(m.suite_engine[i], m.suite_inline[i]),
                ]
            })
            .collect(),
    }
}

/// The study's claims about the cipher, the hash and the engine.
fn crypto_findings(m: &Measured) -> Vec<Finding> {
    let last = SIZES.len() - 1;
    let r = |i: usize| m.suite_engine[i] / m.suite_inline[i];
    let flat = m.raw_cbc.iter().cloned().fold(f64::MIN, f64::max)
        / m.raw_cbc.iter().cloned().fold(f64::MAX, f64::min);
    let cbc_ratio: Vec<f64> = (0..SIZES.len())
        .map(|i| m.esp_cbc_engine[i] / m.esp_cbc_inline[i])
        .collect();
    let sha_over_aes = m.sha1[2] / m.raw_cbc[2];
    vec![
        Finding {
            claim: "software AES-128-CBC throughput is flat across data sizes (31.1–31.6 Mbit/s)".into(),
            holds: flat <= 1.25,
            evidence: format!("today's raw AES-CBC max/min over 256–2048 B is {flat:.2}× (flat if ≤ 1.25×)"),
        },
        Finding {
            claim: "the crypto engine beats software AES-CBC at every size (1.2× at 256 B, 2.6× at 2048 B)".into(),
            holds: cbc_ratio.iter().all(|&x| x > 1.0),
            evidence: format!(
                "today engine/inline for ESP AES-CBC: {:.3}× at 256 B, {:.3}× at 2048 B",
                cbc_ratio[0], cbc_ratio[last]
            ),
        },
        Finding {
            claim: "for the whole suite the engine loses on small data (per-call overhead): 0.62× at 256 B".into(),
            holds: r(0) < 1.0,
            evidence: format!("today engine/inline for AES-CBC+HMAC-SHA1 at 256 B: {:.3}×", r(0)),
        },
        Finding {
            claim: "and wins from ~1500 B up (1.04× at 1500 B, 1.15× at 2048 B)".into(),
            holds: r(last) > 1.0,
            evidence: format!("today engine/inline at 1500 B: {:.3}×, at 2048 B: {:.3}×", r(3), r(last)),
        },
        Finding {
            claim: "the engine's relative cost shrinks as data grows (the per-call cost is amortised)".into(),
            holds: r(last) > r(0),
            evidence: format!("today engine/inline rises from {:.3}× (256 B) to {:.3}× (2048 B)", r(0), r(last)),
        },
        Finding {
            claim: "SHA-1 in software is ~4× faster than AES-128-CBC in software".into(),
            holds: sha_over_aes >= 2.0,
            evidence: format!("today SHA-1/AES-CBC at 1024 B: {sha_over_aes:.2}× (holds if ≥ 2×)"),
        },
    ]
}

/// End to end: the VPN against its crypto ceiling.
fn end_to_end_table(m: &Measured) -> Table {
    let ceiling = m.suite_inline[3];
    Table {
        title: "End to end: the VPN against its crypto ceiling, Mbit/s".into(),
        columns: ["", "study", "today"].map(String::from).to_vec(),
        rows: match &m.end_to_end {
            Some(e) => [
                vec![
                    "forwarding only".into(),
                    f1(STUDY_FORWARDING),
                    f1(e.forwarding),
                ],
                vec![
                    "crypto ceiling (today: the suite inline at 1500 B; study: engine AES-CBC)"
                        .into(),
                    f1(STUDY_CEILING),
                    f1(ceiling),
                ],
                vec![
                    "VPN end to end, crypto inline".into(),
                    "—".into(),
                    f1(e.inline),
                ],
                vec![
                    "VPN end to end, crypto engine".into(),
                    f1(STUDY_VPN),
                    f1(e.engine),
                ],
                vec![
                    "VPN (engine) / crypto ceiling".into(),
                    ratio(STUDY_VPN, STUDY_CEILING),
                    ratio(e.engine, ceiling),
                ],
            ]
            .into_iter()
            .chain(e.peers.iter().map(|(label, mbit)| {
                vec![
                    format!("{label}, end to end"),
                    "—".into(),
                    format!(
                        "{} ({} of flowsec inline)",
                        f1(*mbit),
                        ratio(*mbit, e.inline)
                    ),
                ]
            }))
            .collect(),
            None => vec![vec![
                "VPN end to end".into(),
                f1(STUDY_VPN),
                "not run: needs root (network namespaces)".into(),
            ]],
        },
    }
}

/// The study's end-to-end claim, where the end-to-end run happened.
fn end_to_end_finding(m: &Measured) -> Option<Finding> {
    let ceiling = m.suite_inline[3];
    m.end_to_end.as_ref().map(|e| Finding {
            claim: "the VPN end to end runs far below its crypto ceiling (6.06 vs 65.8 Mbit/s, 0.09×): per-packet work, not the cipher, limits it".into(),
            holds: e.engine / ceiling < 0.5,
            evidence: format!(
                "today through the engine {:.0} Mbit/s ({:.0} inline) against a ceiling of {ceiling:.0} Mbit/s for the suite at 1500 B: {:.2}× (holds if < 0.5×)",
                e.engine,
                e.inline,
                e.engine / ceiling
            ),
        })
}

/// The suite per data size: the study's SSL records in software and on
/// the engine, beside today's ESP packets inline and through the engine
/// backend (Mbit/s per size in `SIZES`' order).
pub(crate) fn plot(inline: &[f64], engine: &[f64]) -> Plot {
    let xs = |v: &[f64]| {
        SIZES
            .iter()
            .zip(v)
            .map(|(&s, &y)| (s as f64, y))
            .collect::<Vec<_>>()
    };
    Plot {
        file: "s4-suite".into(),
        title: "AES-128-CBC + SHA-1 by data size, software and crypto engine: study and today".into(),
        kind: PlotKind::Lines,
        x_label: "data size, bytes".into(),
        y_label: "throughput, Mbit/s".into(),
        log_y: true,
        log_x: true,
        markers: Vec::new(),
        series: vec![
            Series::study("study: SSL records, software", 0, xs(&STUDY_RECORD_SW)),
            Series::today("today: ESP packets, inline", 0, xs(inline)),
            Series::study("study: SSL records, IXP425 crypto engine", 1, xs(&STUDY_RECORD_ENGINE)),
            Series::today("today: ESP packets, engine backend", 1, xs(engine)),
        ],
        note: "Dashed, hollow: the study's figures (IXP425 network processor, OpenSSL and OCF, ~2007). Solid: today's ESP AES-128-CBC + HMAC-SHA1-96 seals on one core, inline and through the engine backend's request queue.".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Verdicts follow the numbers, whichever way they go.
    #[test]
    fn verdicts_are_computed_from_the_numbers() {
        let n = SIZES.len();
        let mk = |engine_gain: f64| Measured {
            raw_cbc: vec![1000.0; n],
            sha1: vec![3000.0; n],
            esp_cbc_inline: vec![900.0; n],
            esp_cbc_engine: vec![900.0 * engine_gain; n],
            suite_inline: vec![500.0; n],
            suite_engine: (0..n)
                .map(|i| 500.0 * engine_gain * (0.5 + 0.25 * i as f64))
                .collect(),
            end_to_end: None,
        };
        let opts = RunOptions::new(true);
        let per = Duration::from_millis(1);
        let like_study = report(&mk(1.0), &opts, per);
        let holds: Vec<bool> = like_study.findings.iter().map(|f| f.holds).collect();
        // Flat AES; engine not faster for the cipher (gain 1.0); loses at
        // 256 B (0.5×), wins at 2048 B (1.5×), improving; SHA-1 3× AES.
        assert_eq!(holds, vec![true, false, true, true, true, true]);
        let slow = report(&mk(0.01), &opts, per);
        assert!(
            !slow.findings[3].holds,
            "an engine 100× slower does not win at 2 KB"
        );
        let md = like_study.markdown();
        assert!(md.contains("**holds**") && md.contains("**differs**"));
        assert_eq!(like_study.tables[2].rows.len(), n);
    }

    #[test]
    fn a_quick_run_measures_every_cell() {
        // The in-process half (the end-to-end half runs the flowsec
        // binary, which a unit test is not).
        let per = Duration::from_millis(60);
        let r = report(&crypto(per).unwrap(), &RunOptions::new(true), per);
        for t in &r.tables {
            for row in &t.rows {
                assert!(
                    row.iter().all(|c| !c.contains("NaN") && !c.contains("inf")),
                    "{row:?}"
                );
            }
        }
        assert_eq!(r.findings.len(), 6);
        let dir = std::env::temp_dir().join(format!("flowsec-lab-s4-{}", std::process::id()));
        r.write(&dir).unwrap();
        for f in ["results.json", "results.md", "s4-suite.svg"] {
            assert!(dir.join(f).exists(), "{f}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
