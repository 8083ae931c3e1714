//! `s2-maxrate` — study S2, experiment E2a (effects of IPsec on stream
//! transmission, 2003–2004): the highest loss-free UDP rate with and
//! without ESP 3DES + HMAC-MD5, host to host in transport mode (1300-byte
//! datagrams) and gateway to gateway in tunnel mode (1100 bytes). Today:
//! plain forwarding (`none`) against two `flowsec up` gateways, measured
//! with `flowsec perf -t MAXRATE` on the lab topology.

use crate::bed::{Bed, Family, Mode, Setup, Step};
use crate::chart::{Plot, PlotKind, Series};
use crate::progress::Progress;
use crate::report::{Finding, Report, Table};
use crate::{LabError, RunOptions, Scenario};

/// Study S2 E2a, Mbit/s: (no IPsec, IPsec) for transport KAME, transport
/// Linux, tunnel KAME, tunnel hardware router.
const STUDY: [(&str, f64, f64); 4] = [
    ("transport, KAME", 93.0, 54.0),
    ("transport, Linux (USAGI)", 93.0, 46.0),
    ("tunnel, KAME", 92.0, 57.0),
    ("tunnel, hardware router", 94.0, 47.0),
];

/// The study's suite: ESP 3DES-CBC + HMAC-MD5-96.
const ESP_3DES_MD5: Step = Step::Esp {
    enc: "3des-cbc",
    auth: Some("hmac-md5"),
};

pub struct S2MaxRate;

/// One geometry of the experiment: transport mode gwA → gwB, tunnel mode
/// hostA → hostB.
#[derive(Clone, Copy)]
pub(crate) struct Geometry {
    pub mode: Mode,
    pub payload: usize,
}

pub(crate) const GEOMETRIES: [Geometry; 2] = [
    Geometry {
        mode: Mode::Transport,
        payload: 1300,
    },
    Geometry {
        mode: Mode::Tunnel,
        payload: 1100,
    },
];

impl Scenario for S2MaxRate {
    fn name(&self) -> &'static str {
        "s2-maxrate"
    }

    fn summary(&self) -> &'static str {
        "S2 E2a: highest loss-free UDP rate, no IPsec vs ESP 3DES+HMAC-MD5, transport (1300 B) and tunnel (1100 B)"
    }

    fn needs_root(&self) -> bool {
        true
    }

    fn run(&self, opts: &RunOptions) -> Result<Report, LabError> {
        let work = crate::work_dir("s2")?;
        let (hold, step, max) = if opts.quick {
            ("0.3", "20M", "2G")
        } else {
            ("3", "2M", "10G")
        };
        // The peers that do the tunnel geometry's setup (libipsec and
        // wireguard-go have no transport mode).
        let mut skipped = Vec::new();
        let others: Vec<(Geometry, Setup)> = GEOMETRIES
            .iter()
            .flat_map(|g| {
                let setup = Setup::new(Family::V4, g.mode, &[ESP_3DES_MD5]);
                opts.others(&setup, &mut skipped)
                    .into_iter()
                    .map(|s| (*g, s))
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut progress = Progress::new("s2-maxrate", 2 * GEOMETRIES.len() + others.len());
        let mut rate = |g: Geometry, setup: &Setup| -> Result<f64, LabError> {
            progress.step(&format!("{} {}", g.mode.name(), setup.label()));
            let bed = Bed::up(setup, &work)?;
            let found: flowsec_perf::MaxRate = bed.perf(
                false,
                &format!(
                    "-t MAXRATE -l {hold} -m {} --step {step} --max-rate {max}",
                    g.payload
                ),
            )?;
            Ok(found.max_rate_bps as f64)
        };
        let mut results = Vec::new();
        for g in GEOMETRIES {
            let none = rate(g, &Setup::new(Family::V4, g.mode, &[]))?;
            let ipsec = rate(g, &Setup::new(Family::V4, g.mode, &[ESP_3DES_MD5]))?;
            results.push((g, none, ipsec));
        }
        let mut peers = Vec::new();
        for (g, setup) in &others {
            peers.push((*g, setup.label(), rate(*g, setup)?));
        }
        progress.finish();
        let _ = std::fs::remove_dir_all(&work);
        let mut report = report(&results, &peers, opts, hold, step);
        report.skipped = skipped;
        Ok(report)
    }
}

/// `results`: (geometry, no IPsec, flowsec) in bit/s; `peers`: (geometry,
/// the other implementation's setup label, its rate).
fn report(
    results: &[(Geometry, f64, f64)],
    peers: &[(Geometry, String, f64)],
    opts: &RunOptions,
    hold: &str,
    step: &str,
) -> Report {
    Report {
        tables: vec![rate_table(results, peers)],
        findings: findings(results),
        plots: vec![plot(results, peers)],
        ..Report::new(
            "s2-maxrate",
            "S2 E2a, maximum loss-free rate (KAME/USAGI IPsec, 2003–2004)",
            opts.quick,
            format!(
            "On hostA–gwA–gwB–hostB in network namespaces, `flowsec perf -t MAXRATE` (CBR probes held {hold} s each, doubling then bisecting to {step}bit/s; loss-free means no datagram lost, the sender at 95% of the rate or more) from gwA to gwB (transport, 1300 B datagrams) and from hostA to hostB (tunnel, 1100 B), with plain forwarding and with two `flowsec up` gateways keyed with ESP 3DES-CBC + HMAC-MD5-96 (setkey); in tunnel mode also strongSwan's charon with kernel-libipsec (the same suite, keyed by IKEv2, ESP in UDP 4500 as libipsec always does) and wireguard-go (its own ChaCha20-Poly1305), where installed. The study raised the rate 1 Mbit/s at a time on 100 Mbit/s Ethernet."
        ),
        )
    }
}

/// The study's rows, then today's: flowsec per geometry, then the other
/// implementations against the same geometry's plain forwarding.
fn rate_table(results: &[(Geometry, f64, f64)], peers: &[(Geometry, String, f64)]) -> Table {
    let mbit = |bps: f64| bps / 1e6;
    let mut rows: Vec<Vec<String>> = STUDY
        .iter()
        .map(|(what, none, ipsec)| {
            vec![
                format!("study: {what}"),
                format!("{none:.0}"),
                format!("{ipsec:.0}"),
                format!("{:.2}×", ipsec / none),
            ]
        })
        .collect();
    for (g, none, ipsec) in results {
        rows.push(vec![
            format!("today: {}, flowsec ({} B)", g.mode.name(), g.payload),
            format!("{:.0}", mbit(*none)),
            format!("{:.0}", mbit(*ipsec)),
            format!("{:.2}×", ipsec / none),
        ]);
    }
    for (g, label, bps) in peers {
        let none = results
            .iter()
            .find(|(r, _, _)| r.mode == g.mode)
            .map_or(f64::NAN, |r| r.1);
        rows.push(vec![
            format!("today: {}, {label} ({} B)", g.mode.name(), g.payload),
            format!("{:.0}", mbit(none)),
            format!("{:.0}", mbit(*bps)),
            format!("{:.2}×", bps / none),
        ]);
    }
    Table {
        title: "Highest loss-free rate, Mbit/s".into(),
        columns: ["", "no IPsec", "IPsec", "IPsec/none"]
            .map(String::from)
            .to_vec(),
        rows,
    }
}

/// The study's claims on flowsec's IPsec/none ratio in each mode.
fn findings(results: &[(Geometry, f64, f64)]) -> Vec<Finding> {
    let ratio = |mode: Mode| {
        results
            .iter()
            .find(|(g, _, _)| g.mode == mode)
            .map_or(f64::NAN, |(_, n, i)| i / n)
    };
    let (rt, ru) = (ratio(Mode::Transport), ratio(Mode::Tunnel));
    vec![
        Finding {
            claim: "ESP 3DES + HMAC-MD5 lowers the highest loss-free rate in both modes".into(),
            holds: rt < 0.9 && ru < 0.9,
            evidence: format!(
                "today IPsec/none: transport {rt:.3}×, tunnel {ru:.3}× (holds if both < 0.9×)"
            ),
        },
        Finding {
            claim: "by about half: to 0.49–0.62× of no IPsec".into(),
            holds: (0.4..=0.75).contains(&rt) && (0.4..=0.75).contains(&ru),
            evidence: format!(
                "today transport {rt:.3}×, tunnel {ru:.3}× (holds if both in 0.40–0.75×)"
            ),
        },
        Finding {
            claim: "tunnel mode costs about as much as transport mode (KAME: 0.62× vs 0.58×)"
                .into(),
            holds: (rt - ru).abs() / rt.max(ru) < 0.25,
            evidence: format!(
                "today transport {rt:.3}× vs tunnel {ru:.3}× (holds if within 25% of each other)"
            ),
        },
    ]
}

/// Per geometry, the study's rates beside today's: no IPsec, ESP 3DES +
/// HMAC-MD5 (flowsec; the study's KAME, then its Linux or hardware
/// router), then the other implementations measured.
pub(crate) fn plot(results: &[(Geometry, f64, f64)], peers: &[(Geometry, String, f64)]) -> Plot {
    let slot = |g: &Geometry| {
        GEOMETRIES
            .iter()
            .position(|x| x.mode == g.mode)
            .map_or(f64::NAN, |i| i as f64)
    };
    // STUDY's rows: transport KAME, transport Linux, tunnel KAME, tunnel
    // hardware; GEOMETRIES: transport, tunnel.
    let study = |rows: [usize; 2], f: fn(&(&str, f64, f64)) -> f64| {
        rows.into_iter()
            .enumerate()
            .map(move |(g, row)| (g as f64, f(&STUDY[row])))
    };
    let today =
        |f: fn(&(Geometry, f64, f64)) -> f64| results.iter().map(move |r| (slot(&r.0), f(r) / 1e6));
    let mut series = vec![
        Series::study("study: no IPsec (KAME)", 0, study([0, 2], |s| s.1)),
        Series::today("today: no IPsec", 0, today(|r| r.1)),
        Series::study(
            "study: ESP 3DES + HMAC-MD5, KAME",
            1,
            study([0, 2], |s| s.2),
        ),
        Series::today("today: flowsec, ESP 3DES + HMAC-MD5", 1, today(|r| r.2)),
        Series::study(
            "study: ESP 3DES + HMAC-MD5, Linux USAGI (transport) / hardware router (tunnel)",
            2,
            study([1, 3], |s| s.2),
        ),
    ];
    let mut labels: Vec<&String> = Vec::new();
    for (_, label, _) in peers {
        if !labels.contains(&label) {
            labels.push(label);
        }
    }
    for (k, label) in labels.into_iter().enumerate() {
        let points = peers
            .iter()
            .filter(|(_, l, _)| l == label)
            .map(|(g, _, bps)| (slot(g), bps / 1e6));
        series.push(Series::today(format!("today: {label}"), 3 + k, points));
    }
    Plot {
        file: "s2-maxrate".into(),
        title: "Highest loss-free UDP rate: study and today".into(),
        kind: PlotKind::Bars {
            categories: GEOMETRIES
                .iter()
                .map(|g| format!("{}, {} B datagrams", g.mode.name(), g.payload))
                .collect(),
        },
        x_label: String::new(),
        y_label: "highest rate without loss, Mbit/s".into(),
        log_y: true,
        log_x: false,
        markers: Vec::new(),
        series,
        note: "Tinted bars: the study's figures (Pentium 4 2.6 GHz hosts, 100 Mbit/s Ethernet, 2003–2004). strongSwan (kernel-libipsec) and wireguard-go have tunnel mode only.".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_follow_the_ratios() {
        let run = |t: f64, u: f64| {
            let results = [
                (GEOMETRIES[0], 1000e6, t * 1000e6),
                (GEOMETRIES[1], 1000e6, u * 1000e6),
            ];
            report(&results, &[], &RunOptions::new(true), "0.3", "20M")
                .findings
                .iter()
                .map(|f| f.holds)
                .collect::<Vec<_>>()
        };
        assert_eq!(run(0.5, 0.55), vec![true, true, true]);
        assert_eq!(run(0.9, 0.3), vec![false, false, false]);
        assert_eq!(run(0.05, 0.03), vec![true, false, false]);
    }
}
