//! `s2-rekey` — study S2, experiment E2c (packet loss during automatic
//! rekeying, 2003–2004): a 1300-byte CBR stream through a tunnel whose
//! CHILD_SA gwA rekeys every few seconds with PFS, lost datagrams counted
//! per second in both directions, for each of flowsec's `rekey_switch`
//! policies (the study's "prefer new" and "keep old" with skewed
//! lifetimes, and flowsec's own loss-free handover), without PFS, for
//! strongSwan at both ends and for flowsec against strongSwan; at the
//! study's 30 Mbit/s and (full runs) at 95% of the tunnel's highest
//! loss-free rate; and a 10 ms probe across rekeys for each PFS group,
//! the study's "the DH computation stalls the data path".

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use flowsec_perf::Outcome;

use crate::bed::Bed;
use crate::chart::{Plot, PlotKind, Series};
use crate::ike_bed::{IkeEnd, IkeSetup, Watch};
use crate::peers::Peer;
use crate::progress::Progress;
use crate::report::{Report, Table};
use crate::{LabError, RunOptions, Scenario};

mod analysis;
mod findings;

use analysis::{gap_stats, sum};
use findings::findings;

/// The study's suite: ESP 3DES-CBC + HMAC-MD5-96 with PFS MODP-1024.
const STUDY_ESP: &str = "3des-md5-modp1024";
/// The study's load.
const STUDY_BPS: f64 = 30e6;
const PAYLOAD: usize = 1300;
/// CHILD_SA rekey and life time at gwA (the study: 60 s lifetime in a
/// 1200 s run; scaled so a run sees 20 rekeys in 90 s).
const REKEY_S: u32 = 4;
const LIFE_S: u32 = 5;
/// keep-old: how much longer gwB's SAs live than gwA's (S2's skew).
const SKEW_S: u32 = 2;
/// The 10 ms probe: 100-byte datagrams at 100 per second.
const PROBE_BPS: f64 = 80_000.0;
const PROBE_PAYLOAD: usize = 100;
/// Every 4 s: two seconds around each rekey, two away from it.
const PROBE_REKEY_S: u32 = 4;
/// PFS groups of the probe (strongSwan's keywords): the study's kind, then
/// what a post-quantum rekey costs today: ML-KEM alone and the hybrid
/// X25519 + ML-KEM-768 (its second exchange in IKE_FOLLOWUP_KE, RFC 9370
/// §2.2.4; flowsec only: strongSwan 5.9 has neither).
const GROUPS: [&str; 11] = [
    "modp768",
    "modp1024",
    "modp2048",
    "modp4096",
    "modp8192",
    "ecp256",
    "ecp384",
    "x25519",
    "mlkem768",
    "mlkem1024",
    "x25519-ke1_mlkem768",
];
const QUICK_GROUPS: [&str; 4] = ["modp768", "modp4096", "x25519", "x25519-ke1_mlkem768"];

/// Whether `imp` can rekey with `group` (strongSwan 5.9: no ML-KEM).
fn probed(imp: Peer, group: &str) -> bool {
    imp == Peer::Flowsec || !group.contains("mlkem")
}

pub struct S2Rekey;

/// One configuration of the loss experiment.
#[derive(Debug, Clone)]
struct Config {
    /// Its name in tables and plot titles.
    name: String,
    setup: IkeSetup,
    /// Also measured at 95% of the highest loss-free rate (full runs).
    saturate: bool,
}

/// One direction of one stream, as measured.
#[derive(Debug, Clone, Default, PartialEq)]
struct Leg {
    /// hostB → hostA (responder → initiator's side).
    reverse: bool,
    rate_bps: f64,
    /// Lost datagrams by the second they were sent in.
    lost: Vec<u64>,
    /// The longest gap between arrivals in each second (ms).
    gaps: Vec<f64>,
    sent: u64,
    /// When gwA's Child SAs were rekeyed, seconds from the stream's start.
    rekeys: Vec<f64>,
}

/// One configuration at one load.
#[derive(Debug, Clone)]
struct Run {
    config: String,
    pair: String,
    esp: String,
    /// `None`: the study's 30 Mbit/s, both directions at once; `Some`:
    /// 95% of the highest loss-free rate, one direction at a time.
    saturation: Option<(f64, f64)>,
    legs: Vec<Leg>,
}

/// The probe across rekeys for one PFS group.
#[derive(Debug, Clone)]
struct Probe {
    group: &'static str,
    imp: Peer,
    /// Median over rekeys of the longest gap around each, and median of
    /// the same window away from rekeys (ms).
    at_rekey_ms: f64,
    base_ms: f64,
    rekeys: usize,
}

impl Scenario for S2Rekey {
    fn name(&self) -> &'static str {
        "s2-rekey"
    }

    fn summary(&self) -> &'static str {
        "S2 E2c: datagrams lost at PFS rekeys (prefer-new, keep-old with skew, loss-free, PFS off; flowsec and strongSwan) and the DH stall on a 10 ms probe"
    }

    fn needs_root(&self) -> bool {
        true
    }

    fn run(&self, opts: &RunOptions) -> Result<Report, LabError> {
        let work = crate::work_dir("s2-rekey")?;
        let mut skipped = Vec::new();
        let strongswan = opts.peers.contains(&Peer::StrongSwan)
            && match Peer::StrongSwan.installed() {
                Ok(()) => true,
                Err(why) => {
                    let line = format!("strongswan: {why}");
                    eprintln!("flowsec lab: skipped {line}");
                    skipped.push(line);
                    false
                }
            };
        let configs = configs(opts.quick, strongswan);
        let secs = if opts.quick { 16 } else { 90 };
        let groups: &[&str] = if opts.quick { &QUICK_GROUPS } else { &GROUPS };
        let probe_imps: Vec<Peer> = if strongswan && !opts.quick {
            vec![Peer::Flowsec, Peer::StrongSwan]
        } else {
            vec![Peer::Flowsec]
        };
        let saturated = configs.iter().filter(|c| c.saturate && !opts.quick).count();
        let probe_steps = probe_imps
            .iter()
            .map(|&imp| groups.iter().filter(|g| probed(imp, g)).count())
            .sum::<usize>();
        let mut progress = Progress::new("s2-rekey", configs.len() + 2 * saturated + probe_steps);
        let mut runs = Vec::new();
        for c in &configs {
            progress.step(&format!("{}, 30 Mbit/s", c.name));
            runs.push(study_load(c, &work, secs)?);
            if c.saturate && !opts.quick {
                progress.step(&format!("{}: highest loss-free rate", c.name));
                let max = max_rates(&c.setup, &work)?;
                progress.step(&format!("{}, 95% of it", c.name));
                runs.push(saturation(c, &work, secs, max)?);
            }
        }
        let mut probes = Vec::new();
        for &imp in &probe_imps {
            for &group in groups.iter().filter(|g| probed(imp, g)) {
                progress.step(&format!("DH probe {} {group}", imp.label()));
                probes.push(probe(imp, group, &work, if opts.quick { 14 } else { 30 })?);
            }
        }
        progress.finish();
        let _ = std::fs::remove_dir_all(&work);
        let mut report = report(&runs, &probes, opts.quick, secs);
        report.skipped = skipped;
        Ok(report)
    }
}

/// gwA rekeys every [`REKEY_S`]; gwB never does; `switch` at both ends
/// (flowsec only); keep-old lets gwB's SAs live [`SKEW_S`] longer.
fn setup(esp: &str, a: Peer, b: Peer, switch: Option<&'static str>) -> IkeSetup {
    let skew = if switch == Some("keep-old") {
        SKEW_S
    } else {
        0
    };
    let end = |imp: Peer, rekey_s, life_s| IkeEnd {
        switch: if imp == Peer::Flowsec { switch } else { None },
        ..IkeEnd::new(imp, rekey_s, life_s)
    };
    IkeSetup {
        esp: esp.into(),
        a: end(a, REKEY_S, LIFE_S),
        b: end(b, 0, LIFE_S + skew),
    }
}

/// The experiment's configurations; strongSwan's where it is installed,
/// today's AES-GCM suites in full runs.
fn configs(quick: bool, strongswan: bool) -> Vec<Config> {
    let (f, s) = (Peer::Flowsec, Peer::StrongSwan);
    let c = |name: &str, setup: IkeSetup, saturate: bool| Config {
        name: name.into(),
        setup,
        saturate,
    };
    let mut v = vec![
        c("flowsec loss-free", setup(STUDY_ESP, f, f, None), true),
        c(
            "flowsec prefer-new",
            setup(STUDY_ESP, f, f, Some("prefer-new")),
            false,
        ),
        c(
            "flowsec keep-old, skew 2 s",
            setup(STUDY_ESP, f, f, Some("keep-old")),
            false,
        ),
        c(
            "flowsec loss-free, PFS off",
            setup("3des-md5", f, f, None),
            false,
        ),
        c(
            "flowsec prefer-new, PFS off",
            setup("3des-md5", f, f, Some("prefer-new")),
            false,
        ),
    ];
    if strongswan {
        v.push(c("strongSwan", setup(STUDY_ESP, s, s, None), true));
        v.push(c(
            "flowsec ↔ strongSwan",
            setup(STUDY_ESP, f, s, None),
            true,
        ));
        if !quick {
            v.push(c(
                "strongSwan ↔ flowsec",
                setup(STUDY_ESP, s, f, None),
                true,
            ));
        }
    }
    if !quick {
        for esp in ["aes128gcm16-ecp256", "aes128gcm16-x25519"] {
            v.push(c(
                &format!("flowsec loss-free, {esp}"),
                setup(esp, f, f, None),
                esp.ends_with("x25519"),
            ));
        }
    }
    v
}

/// `flowsec perf -t CBR` arguments for `secs` seconds at `bps`.
fn cbr(bps: f64, payload: usize, secs: u32) -> String {
    format!(
        "-t CBR --rate {} -m {payload} -l {secs} -S 4194304",
        bps.round() as u64
    )
}

/// Run `streams` (reverse?, rate) at once on `bed` while polling gwA's
/// Child SAs every 250 ms; each leg with the rekey instants (a new inbound
/// SPI at gwA) from the streams' common start.
fn measure(
    bed: &Bed,
    streams: &[(bool, f64)],
    payload: usize,
    secs: u32,
) -> Result<Vec<Leg>, LabError> {
    let watch: Watch = bed.watch("gwA").ok_or(LabError::NoChildSa)?;
    let before = watch.spis()?;
    let done = AtomicBool::new(false);
    let rekeys = Mutex::new(Vec::new());
    let t0 = Instant::now();
    let outcomes = std::thread::scope(|s| {
        let poller = s.spawn(|| {
            let mut seen = before.clone();
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(250));
                let Ok(now) = watch.spis() else { continue };
                let new: Vec<_> = now.iter().filter(|x| !seen.contains(x)).cloned().collect();
                if !new.is_empty() {
                    // Half a poll interval: the mean delay of seeing it.
                    let at = t0.elapsed().as_secs_f64() - 0.125;
                    rekeys.lock().map(|mut r| r.push(at)).ok();
                    seen.extend(new);
                }
            }
        });
        let clients: Vec<_> = streams
            .iter()
            .map(|&(reverse, bps)| {
                s.spawn(move || bed.perf::<Outcome>(reverse, &cbr(bps, payload, secs)))
            })
            .collect();
        let out: Vec<_> = clients
            .into_iter()
            .map(|c| c.join().unwrap_or(Err(LabError::NoChildSa)))
            .collect();
        done.store(true, Ordering::Relaxed);
        let _ = poller.join();
        out
    });
    let rekeys = rekeys.into_inner().unwrap_or_default();
    streams
        .iter()
        .zip(outcomes)
        .map(|(&(reverse, bps), o)| {
            let o = o?;
            Ok(Leg {
                reverse,
                rate_bps: bps,
                lost: o.per_second.iter().map(|s| s.lost).collect(),
                gaps: o.per_second.iter().map(|s| s.max_gap_ms).collect(),
                sent: o.packets_sent,
                rekeys: rekeys.clone(),
            })
        })
        .collect()
}

/// 30 Mbit/s both ways at once for `secs`.
fn study_load(c: &Config, work: &std::path::Path, secs: u32) -> Result<Run, LabError> {
    let bed = Bed::up_ike(&c.setup, work)?;
    let legs = measure(
        &bed,
        &[(false, STUDY_BPS), (true, STUDY_BPS)],
        PAYLOAD,
        secs,
    )?;
    Ok(Run {
        config: c.name.clone(),
        pair: c.setup.pair(),
        esp: c.setup.esp.clone(),
        saturation: None,
        legs,
    })
}

/// The highest loss-free rate each way (bit/s) through `setup` with
/// rekeying off.
fn max_rates(setup: &IkeSetup, work: &std::path::Path) -> Result<(f64, f64), LabError> {
    let mut quiet = setup.clone();
    for end in [&mut quiet.a, &mut quiet.b] {
        (end.rekey_s, end.life_s, end.switch) = (0, 0, None);
    }
    let bed = Bed::up_ike(&quiet, work)?;
    let args = format!("-t MAXRATE -l 2 -m {PAYLOAD} --step 5M --max-rate 4G");
    let fwd: flowsec_perf::MaxRate = bed.perf(false, &args)?;
    let rev: flowsec_perf::MaxRate = bed.perf(true, &args)?;
    Ok((fwd.max_rate_bps as f64, rev.max_rate_bps as f64))
}

/// 95% of each way's highest loss-free rate, one way at a time.
fn saturation(
    c: &Config,
    work: &std::path::Path,
    secs: u32,
    (fwd, rev): (f64, f64),
) -> Result<Run, LabError> {
    let bed = Bed::up_ike(&c.setup, work)?;
    let mut legs = measure(&bed, &[(false, 0.95 * fwd)], PAYLOAD, secs)?;
    legs.extend(measure(&bed, &[(true, 0.95 * rev)], PAYLOAD, secs)?);
    Ok(Run {
        config: c.name.clone(),
        pair: c.setup.pair(),
        esp: c.setup.esp.clone(),
        saturation: Some((fwd, rev)),
        legs,
    })
}

/// The 10 ms probe both ways across rekeys every [`PROBE_REKEY_S`] with
/// AES-GCM-16 and PFS `group`, `imp` at both ends.
fn probe(
    imp: Peer,
    group: &'static str,
    work: &std::path::Path,
    secs: u32,
) -> Result<Probe, LabError> {
    let mut s = setup(&format!("aes128gcm16-{group}"), imp, imp, None);
    (s.a.rekey_s, s.a.life_s, s.b.life_s) = (PROBE_REKEY_S, PROBE_REKEY_S + 1, PROBE_REKEY_S + 1);
    let bed = Bed::up_ike(&s, work)?;
    let legs = measure(
        &bed,
        &[(false, PROBE_BPS), (true, PROBE_BPS)],
        PROBE_PAYLOAD,
        secs,
    )?;
    let (at_rekey_ms, base_ms) = gap_stats(&legs);
    Ok(Probe {
        group,
        imp,
        at_rekey_ms,
        base_ms,
        rekeys: legs.first().map_or(0, |l| l.rekeys.len()),
    })
}

fn report(runs: &[Run], probes: &[Probe], quick: bool, secs: u32) -> Report {
    let mut plots: Vec<Plot> = runs.iter().flat_map(run_plots).collect();
    if !probes.is_empty() {
        plots.push(probe_plot(probes));
    }
    Report {
        tables: vec![loss_table(runs), probe_table(probes)],
        findings: findings(runs, probes, quick),
        plots,
        ..Report::new(
            "s2-rekey",
            "S2 E2c, packet loss during automatic rekeying (KAME/racoon, 2003–2004)",
            quick,
            format!(
                "hostA–gwA–gwB–hostB in network namespaces; the gateways keyed by IKEv2 (PSK), flowsec (`flowsec up -c`) or strongSwan 5.9's charon with kernel-libipsec at each end, one tunnel-mode CHILD_SA hostA ↔ hostB. gwA rekeys it every {REKEY_S} s (`rekey_time = {REKEY_S}s`, `life_time = {LIFE_S}s`, `rand_time = 0`); gwB never does (`rekey_time = 0`), so gwA initiates every rekey, as in the study. The stream: `flowsec perf -t CBR -m {PAYLOAD}` for {secs} s, both directions at once at the study's 30 Mbit/s; at saturation (full runs), one direction at a time at 95% of the highest loss-free rate that `flowsec perf -t MAXRATE` (2 s probes, 5 Mbit/s steps) finds each way through the same tunnel with rekeying off. Lost datagrams are counted by the second they were sent in; a rekey owns the seconds from the one before it to the one before the next. Rekey instants: a new inbound SPI at gwA (polled every 250 ms). flowsec's `rekey_switch`: loss-free (default), prefer-new (both ends send on the new SA once installed, old SA removed at once), keep-old (both keep the old SA until it expires, gwB's living {SKEW_S} s longer: the study's lifetime skew). strongSwan has no such setting: it behaves as loss-free. The DH probe: 100-byte datagrams every 10 ms both ways, AES-GCM-16 with PFS in each group (and, flowsec only, ML-KEM-768, ML-KEM-1024 and the hybrid `x25519-ke1_mlkem768`, whose ML-KEM exchange follows in IKE_FOLLOWUP_KE), a rekey every {PROBE_REKEY_S} s; the longest gap between arrivals in the two seconds around each rekey (from half a second before it; median over rekeys) against two-second windows away from rekeys. The study: iperf at 30 Mbit/s for 1200 s, SA lifetime 60 s, ESP 3DES + HMAC-MD5 with PFS MODP-1024."
            ),
        )
    }
}

fn loss_table(runs: &[Run]) -> Table {
    let mut rows = vec![
        vec![
            "study: prefer new SA".into(),
            "KAME ↔ KAME".into(),
            STUDY_ESP.into(),
            "30".into(),
            "20".into(),
            "a few % at every rekey".into(),
            "a few % at every rekey".into(),
        ],
        vec![
            "study: keep old SA (lifetime skew)".into(),
            "KAME ↔ KAME".into(),
            STUDY_ESP.into(),
            "30".into(),
            "20".into(),
            "0".into(),
            "~30% for seconds after each rekey".into(),
        ],
        vec![
            "study: PFS off".into(),
            "KAME ↔ KAME".into(),
            "3des-md5".into(),
            "30".into(),
            "20".into(),
            "0".into(),
            "0".into(),
        ],
    ];
    for r in runs {
        let side = |reverse: bool| -> (String, String) {
            match r.legs.iter().find(|l| l.reverse == reverse) {
                Some(l) => {
                    let s = sum(l);
                    (
                        format!(
                            "{} ({} of {} rekeys, {} within 1 s of one, worst second {:.1}%)",
                            s.lost,
                            s.lossy_rekeys,
                            s.rekeys,
                            s.near.0,
                            100.0 * s.worst
                        ),
                        format!("{:.0}", l.rate_bps / 1e6),
                    )
                }
                None => ("-".into(), "-".into()),
            }
        };
        let ((fwd, rate_f), (rev, rate_r)) = (side(false), side(true));
        // Both ways at once share their rekeys; one after the other not.
        let counts: Vec<String> = r.legs.iter().map(|l| l.rekeys.len().to_string()).collect();
        let rekeys = if r.saturation.is_some() {
            counts.join(" → / ") + " ←"
        } else {
            counts.first().cloned().unwrap_or_default()
        };
        rows.push(vec![
            format!("today: {}", r.config),
            r.pair.clone(),
            r.esp.clone(),
            if rate_f == rate_r {
                rate_f
            } else {
                format!("{rate_f} → / {rate_r} ←")
            },
            rekeys,
            fwd,
            rev,
        ]);
    }
    Table {
        title: "Datagrams lost at rekeys (gwA initiates every rekey)".into(),
        columns: [
            "configuration",
            "gwA ↔ gwB",
            "ESP",
            "Mbit/s",
            "rekeys",
            "lost hostA → hostB (initiator → responder)",
            "lost hostB → hostA (responder → initiator)",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

fn probe_table(probes: &[Probe]) -> Table {
    let mut rows = vec![vec![
        "study: MODP-768 and MODP-1024".into(),
        "KAME".into(),
        "send gaps during the DH computation, MODP-1024's longer".into(),
        "-".into(),
        "-".into(),
    ]];
    for p in probes {
        rows.push(vec![
            format!("today: {}", p.group),
            p.imp.label().into(),
            format!("{:.1}", p.at_rekey_ms),
            format!("{:.1}", p.base_ms),
            p.rekeys.to_string(),
        ]);
    }
    Table {
        title: "10 ms probe: longest gap between arrivals, ms (median over rekeys)".into(),
        columns: [
            "PFS group",
            "implementation",
            "at a rekey",
            "away from rekeys",
            "rekeys",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// Lost per second over time, both directions, the rekeys marked: one
/// chart per run (at saturation one per direction: they ran one after
/// the other).
fn run_plots(r: &Run) -> Vec<Plot> {
    let slug: String = format!(
        "{}-{}",
        r.config,
        if r.saturation.is_some() { "sat" } else { "30" }
    )
    .chars()
    .map(|c| {
        if c.is_ascii_alphanumeric() {
            c.to_ascii_lowercase()
        } else {
            '-'
        }
    })
    .collect::<String>()
    .split('-')
    .filter(|s| !s.is_empty())
    .collect::<Vec<_>>()
    .join("-");
    let series = |l: &Leg| {
        let (label, colour) = if l.reverse {
            ("hostB → hostA (responder → initiator)", 1)
        } else {
            ("hostA → hostB (initiator → responder)", 0)
        };
        Series::today(
            label,
            colour,
            l.lost
                .iter()
                .enumerate()
                .map(|(i, &n)| (i as f64 + 0.5, n as f64)),
        )
    };
    let groups: Vec<Vec<&Leg>> = if r.saturation.is_some() {
        r.legs.iter().map(|l| vec![l]).collect()
    } else {
        vec![r.legs.iter().collect()]
    };
    groups
        .into_iter()
        .map(|legs| {
            let rate = legs
                .iter()
                .map(|l| format!("{:.0}", l.rate_bps / 1e6))
                .collect::<Vec<_>>()
                .join("/");
            let dir = match (r.saturation.is_some(), legs.first().map(|l| l.reverse)) {
                (true, Some(false)) => "-fwd",
                (true, Some(true)) => "-rev",
                _ => "",
            };
            Plot {
                file: format!("s2-rekey-{slug}{dir}"),
                title: format!(
                    "{} ({}, {}), {rate} Mbit/s: datagrams lost per second",
                    r.config, r.pair, r.esp
                ),
                kind: PlotKind::Lines,
                x_label: "time, s (by send second)".into(),
                y_label: "datagrams lost".into(),
                log_y: false,
                log_x: false,
                markers: legs.first().map(|l| l.rekeys.clone()).unwrap_or_default(),
                series: legs.iter().map(|l| series(l)).collect(),
                note: "Dashed verticals: rekeys (a new CHILD_SA at gwA). The study saw a few % lost at every rekey with \"prefer new\" and ~30% of responder → initiator for seconds with \"keep old\".".into(),
            }
        })
        .collect()
}

fn probe_plot(probes: &[Probe]) -> Plot {
    let mut imps: Vec<Peer> = Vec::new();
    for p in probes {
        if !imps.contains(&p.imp) {
            imps.push(p.imp);
        }
    }
    let cats: Vec<&str> = GROUPS
        .iter()
        .copied()
        .filter(|g| probes.iter().any(|p| p.group == *g))
        .collect();
    let slot = |g: &str| {
        cats.iter()
            .position(|c| *c == g)
            .map_or(f64::NAN, |i| i as f64)
    };
    let mut series = Vec::new();
    for (k, imp) in imps.iter().enumerate() {
        let mine = probes.iter().filter(|p| p.imp == *imp);
        series.push(Series::today(
            format!("{}: at a rekey", imp.label()),
            2 * k,
            mine.clone().map(|p| (slot(p.group), p.at_rekey_ms)),
        ));
        series.push(Series::today(
            format!("{}: away from rekeys", imp.label()),
            2 * k + 1,
            mine.map(|p| (slot(p.group), p.base_ms)),
        ));
    }
    Plot {
        file: "s2-rekey-dh".into(),
        title: "10 ms probe across PFS rekeys: longest gap between arrivals".into(),
        kind: PlotKind::Bars {
            categories: cats.iter().map(|c| c.to_string()).collect(),
        },
        x_label: "PFS group".into(),
        y_label: "longest gap, ms (median over rekeys)".into(),
        log_y: false,
        log_x: false,
        markers: Vec::new(),
        series,
        note: "Datagrams every 10 ms: a gap near 10 ms means nothing stalled. The study saw send gaps during the DH computation with MODP-768 and (longer) MODP-1024.".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::analysis::{loss_per_rekey, windows, worst_second};
    use super::*;

    fn leg(reverse: bool, lost: &[u64], rekeys: &[f64]) -> Leg {
        Leg {
            reverse,
            rate_bps: STUDY_BPS,
            lost: lost.to_vec(),
            gaps: vec![10.0; lost.len()],
            sent: 1000,
            rekeys: rekeys.to_vec(),
        }
    }

    #[test]
    fn loss_is_owned_by_the_rekey_before_it() {
        // Rekeys at 2.3 s and 6.1 s: the first owns seconds 1..5, the
        // second 5..end; second 0 is background.
        let l = leg(false, &[7, 1, 2, 0, 0, 4, 5, 0], &[2.3, 6.1]);
        assert_eq!(windows(&l.rekeys, 8), vec![1..5, 5..8]);
        assert_eq!(loss_per_rekey(&l), vec![3, 9]);
        let s = sum(&l);
        assert_eq!((s.rekeys, s.lost, s.lossy_rekeys), (2, 19, 2));
        // 30 Mbit/s of 1300 B: 2885 per second.
        assert!((worst_second(&l, PAYLOAD) - 7.0 / 2884.6).abs() < 1e-4);
        assert_eq!(windows(&[0.2], 3).first(), Some(&(0..3)));
        assert!(loss_per_rekey(&leg(false, &[], &[1.0])) == vec![0]);
        // Near a rekey: the second it was seen in and its neighbours.
        let s = sum(&leg(false, &[0, 0, 5, 0, 0, 0, 7, 0], &[2.3]));
        assert_eq!((s.near, s.away), ((5, 3), (7, 5)));
        assert_eq!(s.rates(), (5.0 / 3.0, 7.0 / 5.0));
    }

    #[test]
    fn gaps_at_rekeys_against_the_rest() {
        // Rekeys seen at 3.4 s and 8.6 s: their windows are seconds 2–3
        // and 8–9.
        let mut l = leg(false, &[0; 12], &[3.4, 8.6]);
        l.gaps = vec![
            50.0, 10.0, 11.0, 40.0, 10.0, 10.0, 12.0, 10.0, 30.0, 10.0, 11.0, 99.0,
        ];
        let (at, base) = gap_stats(&[l]);
        // (40 + 30) / 2
        assert_eq!(at, 35.0);
        // The windows from 4, 5 and 6 share no second with those.
        assert_eq!(base, 12.0);
    }

    fn run(config: &str, fwd: &[u64], rev: &[u64]) -> Run {
        let rekeys = [2.5, 6.5, 10.5, 14.5, 18.5];
        Run {
            config: config.into(),
            pair: "flowsec ↔ flowsec".into(),
            esp: STUDY_ESP.into(),
            saturation: None,
            legs: vec![leg(false, fwd, &rekeys), leg(true, rev, &rekeys)],
        }
    }

    fn probe(group: &'static str, at: f64) -> Probe {
        Probe {
            group,
            imp: Peer::Flowsec,
            at_rekey_ms: at,
            base_ms: 10.5,
            rekeys: 5,
        }
    }

    #[test]
    fn verdicts_follow_the_numbers() {
        let every = [0, 0, 9, 0, 0, 0, 8, 0, 0, 0, 7, 0, 0, 0, 9, 0, 0, 0, 6, 0];
        let none = [0; 20];
        let skewed = [
            0, 0, 0, 2800, 2800, 0, 0, 2800, 2800, 0, 0, 2800, 2800, 0, 0, 0, 0, 0, 0, 0,
        ];
        let runs = vec![
            run("flowsec loss-free", &none, &none),
            run("flowsec prefer-new", &every, &every),
            run("flowsec keep-old, skew 2 s", &none, &skewed),
            run("flowsec loss-free, PFS off", &none, &none),
            run("flowsec prefer-new, PFS off", &none, &none),
        ];
        let probes = vec![
            probe("modp768", 11.0),
            probe("modp4096", 11.5),
            probe("x25519", 10.6),
        ];
        let holds = |runs: &[Run], probes: &[Probe]| {
            findings(runs, probes, true)
                .iter()
                .map(|f| f.holds)
                .collect::<Vec<_>>()
        };
        // Today's shape: the study's losses reproduced on purpose, DH no
        // stall, flowsec loss-free.
        assert_eq!(
            holds(&runs, &probes),
            [true, true, true, false, true, false, true]
        );
        // prefer-new losing nothing; keep-old losing both ways; a DH stall.
        let mut other = runs.clone();
        other[1] = run("flowsec prefer-new", &none, &every);
        other[2] = run("flowsec keep-old, skew 2 s", &skewed, &skewed);
        other[0] = run("flowsec loss-free", &every, &none);
        let stalls = vec![probe("modp768", 11.0), probe("modp4096", 40.0)];
        assert_eq!(
            holds(&other, &stalls),
            [false, false, true, true, false, false, false]
        );
        // Without runs nothing holds by default.
        assert_eq!(holds(&[], &[]), [false; 7]);
        // At saturation: nothing lost over 20 rekeys each way holds; a loss
        // away from the rekeys still fails it, and is shown apart.
        let mut sat = run("flowsec loss-free", &none, &none);
        let rekeys: Vec<f64> = (0..20).map(|k| 2.5 + 4.0 * k as f64).collect();
        sat.saturation = Some((100e6, 100e6));
        for l in &mut sat.legs {
            l.rekeys = rekeys.clone();
        }
        let at95 = |runs: &[Run]| findings(runs, &probes, false)[5].clone();
        assert!(at95(&[sat.clone()]).holds, "{:?}", at95(&[sat.clone()]));
        sat.legs[1].lost[4] = 9;
        let f = at95(&[sat]);
        assert!(
            !f.holds && f.evidence.contains("0.0/s within 1 s of a rekey vs"),
            "{f:?}"
        );
        let r = report(&runs, &probes, true, 16);
        assert_eq!(r.plots.len(), 6);
        assert!(r.plots[0].markers.len() == 5, "{:?}", r.plots[0].markers);
        assert_eq!(r.tables[0].rows.len(), 3 + 5);
    }
}
