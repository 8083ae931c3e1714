//! `s2-maxrate` — study S2, experiment E2a (effects of IPsec on stream
//! transmission, 2003–2004): the highest loss-free UDP rate with and
//! without ESP 3DES + HMAC-MD5, host to host in transport mode (1300-byte
//! datagrams) and gateway to gateway in tunnel mode (1100 bytes). Today:
//! plain forwarding (`none`) against two `flowsec up` gateways, measured
//! with `flowsec perf -t MAXRATE` on the lab topology.

use std::path::Path;

use crate::report::{Finding, Plot, Report, Series, Table};
use crate::topology::Topology;
use crate::{LabError, RunOptions, Scenario};

/// Study S2 E2a, Mbit/s: (no IPsec, IPsec) for transport KAME, transport
/// Linux, tunnel KAME, tunnel hardware router.
const STUDY: [(&str, f64, f64); 4] = [
    ("transport, KAME", 93.0, 54.0),
    ("transport, Linux (USAGI)", 93.0, 46.0),
    ("tunnel, KAME", 92.0, 57.0),
    ("tunnel, hardware router", 94.0, 47.0),
];

/// 3DES (24 bytes, three distinct keys) and HMAC-MD5 (16 bytes), per
/// direction.
const KEYS: [(&str, &str); 2] = [
    (
        "0x010203040506070811121314151617182122232425262728",
        "0x31323334353637383940414243444546",
    ),
    (
        "0x515253545556575861626364656667687172737475767778",
        "0x81828384858687888990919293949596",
    ),
];

pub struct S2MaxRate;

/// One geometry of the experiment.
#[derive(Clone, Copy)]
struct Geometry {
    mode: &'static str,
    payload: usize,
    /// Where the perf client and server run, and the server's address.
    client: &'static str,
    server: &'static str,
    target: &'static str,
}

const GEOMETRIES: [Geometry; 2] = [
    Geometry {
        mode: "transport",
        payload: 1300,
        client: "gwA",
        server: "gwB",
        target: "192.0.2.2",
    },
    Geometry {
        mode: "tunnel",
        payload: 1100,
        client: "hostA",
        server: "hostB",
        target: "10.2.0.2",
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
        let flowsec =
            std::env::current_exe().map_err(|e| LabError(format!("flowsec binary: {e}")))?;
        let work = std::env::temp_dir().join(format!("flowsec-lab-s2-{}", std::process::id()));
        std::fs::create_dir_all(&work).map_err(|e| LabError(format!("{}: {e}", work.display())))?;
        let (hold, step, max) = if opts.quick {
            ("0.3", "20M", "2G")
        } else {
            ("3", "2M", "10G")
        };
        let mut results = Vec::new();
        for g in GEOMETRIES {
            let none = max_rate(&flowsec, &work, g, None, hold, step, max)?;
            let ipsec = max_rate(&flowsec, &work, g, Some(g.mode), hold, step, max)?;
            results.push((g, none, ipsec));
        }
        let _ = std::fs::remove_dir_all(&work);
        Ok(report(&results, opts, hold, step))
    }
}

/// Build the topology, start the perf server (and, for IPsec, both
/// gateways), run MAXRATE, tear it all down; the rate in bit/s.
fn max_rate(
    flowsec: &Path,
    work: &Path,
    g: Geometry,
    ipsec: Option<&str>,
    hold: &str,
    step: &str,
    max: &str,
) -> Result<f64, LabError> {
    let mut t = Topology::build()?;
    let bin = flowsec.to_string_lossy().into_owned();
    if let Some(mode) = ipsec {
        for (gw, local, remote) in [
            ("gwA", "192.0.2.1", "192.0.2.2"),
            ("gwB", "192.0.2.2", "192.0.2.1"),
        ] {
            let file = work.join(format!("{gw}-{mode}.setkey"));
            std::fs::write(&file, setkey(mode, local, remote))
                .map_err(|e| LabError(format!("{}: {e}", file.display())))?;
            let sock = work.join(format!("{gw}.sock"));
            let (f, s) = (
                file.to_string_lossy().into_owned(),
                sock.to_string_lossy().into_owned(),
            );
            t.spawn(
                gw,
                &[&bin, "up", "--tun", "flab0", "--setkey", &f, "--socket", &s],
                &work.join(format!("{gw}-up.log")),
                Some("flowsec: up"),
            )?;
        }
    }
    t.spawn(
        g.server,
        &[&bin, "perf", "server", "--bind", "0.0.0.0"],
        &work.join("perf-server.log"),
        Some("listening"),
    )?;
    let json = t.output(
        g.client,
        &[
            &bin,
            "perf",
            "client",
            "-H",
            g.target,
            "-t",
            "MAXRATE",
            "-l",
            hold,
            "-m",
            &g.payload.to_string(),
            "--step",
            step,
            "--max-rate",
            max,
            "--json",
        ],
    )?;
    t.stop_all();
    let found: flowsec_perf::MaxRate =
        serde_json::from_str(&json).map_err(|e| LabError(format!("MAXRATE output: {e}")))?;
    Ok(found.max_rate_bps as f64)
}

/// gwA's or gwB's setkey file: ESP 3DES + HMAC-MD5 both ways, the
/// policies of `mode` (transport: the gateways themselves; tunnel: the
/// sites behind them).
fn setkey(mode: &str, local: &str, remote: &str) -> String {
    let (a, b) = ("192.0.2.1", "192.0.2.2");
    let sa = |src: &str, dst: &str, spi: u32, k: (&str, &str)| {
        format!(
            "add {src} {dst} esp {spi:#x} -m {mode} -r 64 -E 3des-cbc {} -A hmac-md5 {};\n",
            k.0, k.1
        )
    };
    let mut s = sa(a, b, 0x1001, KEYS[0]) + &sa(b, a, 0x1002, KEYS[1]);
    if mode == "transport" {
        s += &format!("spdadd {local} {remote} any -P out ipsec esp/transport//require;\n");
        s += &format!("spdadd {remote} {local} any -P in ipsec esp/transport//require;\n");
    } else {
        let (lnet, rnet) = if local == a {
            ("10.1.0.0/24", "10.2.0.0/24")
        } else {
            ("10.2.0.0/24", "10.1.0.0/24")
        };
        s += &format!(
            "spdadd {lnet} {rnet} any -P out ipsec esp/tunnel/{local}-{remote}/require;\n"
        );
        for dir in ["in", "fwd"] {
            s += &format!(
                "spdadd {rnet} {lnet} any -P {dir} ipsec esp/tunnel/{remote}-{local}/require;\n"
            );
        }
    }
    s
}

fn report(results: &[(Geometry, f64, f64)], opts: &RunOptions, hold: &str, step: &str) -> Report {
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
            format!("today: {}, flowsec ({} B)", g.mode, g.payload),
            format!("{:.0}", mbit(*none)),
            format!("{:.0}", mbit(*ipsec)),
            format!("{:.2}×", ipsec / none),
        ]);
    }
    let ratio = |mode: &str| {
        results
            .iter()
            .find(|(g, _, _)| g.mode == mode)
            .map_or(f64::NAN, |(_, n, i)| i / n)
    };
    let (rt, ru) = (ratio("transport"), ratio("tunnel"));
    let findings = vec![
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
    ];
    let series = |label: &str, f: &dyn Fn(&(Geometry, f64, f64)) -> f64| Series {
        label: label.into(),
        points: results
            .iter()
            .map(|r| (r.0.payload as f64, mbit(f(r))))
            .collect(),
    };
    Report {
        tables: vec![Table {
            title: "Highest loss-free rate, Mbit/s".into(),
            columns: ["", "no IPsec", "IPsec", "IPsec/none"].map(String::from).to_vec(),
            rows,
        }],
        findings,
        plots: vec![Plot {
            file: "s2-maxrate".into(),
            title: "Highest loss-free UDP rate today".into(),
            x_label: "datagram size (bytes): 1100 tunnel, 1300 transport".into(),
            y_label: "Mbit/s (log)".into(),
            log_y: true,
            series: vec![
                series("no IPsec", &|r| r.1),
                series("flowsec ESP 3DES+HMAC-MD5", &|r| r.2),
            ],
        }],
        ..Report::new(
            "s2-maxrate",
            "S2 E2a, maximum loss-free rate (KAME/USAGI IPsec, 2003–2004)",
            opts.quick,
            format!(
            "On hostA–gwA–gwB–hostB in network namespaces, `flowsec perf -t MAXRATE` (CBR probes held {hold} s each, doubling then bisecting to {step}bit/s; loss-free means no datagram lost, the sender at 95% of the rate or more) from gwA to gwB (transport, 1300 B datagrams) and from hostA to hostB (tunnel, 1100 B), with plain forwarding and with two `flowsec up` gateways keyed with ESP 3DES-CBC + HMAC-MD5-96 (setkey). The study raised the rate 1 Mbit/s at a time on 100 Mbit/s Ethernet."
        ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setkey_files_parse_and_mirror() {
        for mode in ["transport", "tunnel"] {
            let a = setkey(mode, "192.0.2.1", "192.0.2.2");
            let b = setkey(mode, "192.0.2.2", "192.0.2.1");
            for text in [&a, &b] {
                let cmds = flowsec_setkey::parse("t", text).unwrap();
                assert!(cmds.len() >= 4, "{text}");
            }
            assert!(a.contains("-P out") && b.contains("-P out"));
            assert_ne!(a, b);
        }
    }

    #[test]
    fn verdicts_follow_the_ratios() {
        let run = |t: f64, u: f64| {
            let results = [
                (GEOMETRIES[0], 1000e6, t * 1000e6),
                (GEOMETRIES[1], 1000e6, u * 1000e6),
            ];
            report(&results, &RunOptions { quick: true }, "0.3", "20M")
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
