//! `s4-crypto`'s SSL-VPN row: study S4 wrapped IP packets in SSL records
//! over one TCP connection between the gateways; flowsec does the same
//! with RFC 9329 (ESP framed in a TCP stream, inside TLS 1.3). One TCP
//! stream hostA → hostB through two `flowsec up` gateways keyed by IKEv2
//! with the study's suite (ESP AES-128-CBC + HMAC-SHA1-96): over UDP,
//! over TCP, over TLS inline and over TLS with the engine backend; beside
//! it plain TCP between the two gateways (no tunnel).

use std::path::Path;

use crate::bed::Bed;
use crate::ike_bed::{IkeEnd, IkeSetup, TcpKeys};
use crate::peers::Peer;
use crate::progress::Progress;
use crate::report::{Finding, Table};
use crate::LabError;

/// Study S4, Mbit/s: plain TCP between the gateways (83.5–89.9), the
/// SSL-VPN end to end (6.06), and the crypto ceiling (engine AES-CBC at
/// 1500 B, 65.8).
const STUDY_GATEWAY_TCP: (f64, f64) = (83.5, 89.9);
const STUDY_VPN: f64 = 6.06;
const STUDY_CEILING: f64 = 65.8;

/// The suite as an ESP proposal (no PFS: nothing here rekeys).
const ESP: &str = "aes128-sha1";

/// The measured streams, Mbit/s.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SslVpn {
    /// TCP gwA → gwB over the transit link, no tunnel.
    pub gateway_tcp: f64,
    /// ESP in UDP (IKE over UDP).
    pub udp: f64,
    /// ESP in TCP (RFC 9329).
    pub tcp: f64,
    /// ESP in TLS 1.3 (RFC 9329 Appendix A): the SSL-VPN.
    pub tls: f64,
    /// The same with `--backend engine` at both gateways.
    pub tls_engine: f64,
    /// iperf3's view (a tool not ours) of the UDP, TCP and TLS streams,
    /// where iperf3 is installed.
    pub iperf3: [Option<f64>; 3],
}

/// How many steps [`measure`] reports to the progress line.
pub const STEPS: usize = 5;

/// Measure every stream for `secs` each; files in `work`.
pub fn measure(secs: &str, work: &Path, progress: &mut Progress) -> Result<SslVpn, LabError> {
    let stream = |bed: &Bed| -> Result<f64, LabError> {
        let o: flowsec_perf::Outcome = bed.perf(false, &format!("-t TCP_STREAM -l {secs}"))?;
        Ok(o.throughput_mbit_s)
    };
    let setup = |tcp: TcpKeys, listen: &[&'static str], engine: bool| {
        let backend: &[&'static str] = if engine {
            &["--backend", "engine"]
        } else {
            &[]
        };
        let end = |tcp, extra: &[&'static str]| IkeEnd {
            tcp,
            up_args: [extra, backend].concat(),
            ..IkeEnd::new(Peer::Flowsec, 3600, 4000)
        };
        IkeSetup {
            esp: ESP.into(),
            a: end(tcp, &[]),
            b: end(&[], listen),
        }
    };
    let mut run = |what: &str, s: IkeSetup| -> Result<(f64, Bed), LabError> {
        progress.step(what);
        let bed = Bed::up_ike(&s, work)?;
        Ok((stream(&bed)?, bed))
    };
    let (udp, mut bed) = run("SSL-VPN: ESP in UDP", setup(&[], &[], false))?;
    let gateway_tcp = gateway_stream(&mut bed, secs, work)?;
    let mut iperf3 = [None; 3];
    iperf3[0] = iperf3_stream(&mut bed, secs, work);
    drop(bed);
    let (tcp, mut bed) = run(
        "SSL-VPN: ESP in TCP",
        setup(&[("tcp_encap", "yes")], &["--tcp-listen"], false),
    )?;
    iperf3[1] = iperf3_stream(&mut bed, secs, work);
    drop(bed);
    let tls_keys: TcpKeys = &[("tcp_encap", "yes"), ("tcp_tls", "yes")];
    let (tls, mut bed) = run(
        "SSL-VPN: ESP in TLS",
        setup(tls_keys, &["--tcp-listen", "443"], false),
    )?;
    iperf3[2] = iperf3_stream(&mut bed, secs, work);
    drop(bed);
    let tls_engine = run(
        "SSL-VPN: ESP in TLS, crypto engine",
        setup(tls_keys, &["--tcp-listen", "443"], true),
    )?
    .0;
    Ok(SslVpn {
        gateway_tcp,
        udp,
        tcp,
        tls,
        tls_engine,
        iperf3,
    })
}

/// One iperf3 TCP stream hostA → hostB through the bed's tunnel, Mbit/s
/// received; `None` without iperf3 or when it fails.
fn iperf3_stream(bed: &mut Bed, secs: &str, work: &Path) -> Option<f64> {
    crate::peers::which("iperf3")?;
    let ((_, _), (server, addr)) = bed.setup_ends();
    bed.spawn(
        server,
        &["iperf3", "-s", "-B", addr],
        &work.join("iperf3-server.log"),
        None,
    )
    .ok()?;
    let (client, _) = bed.setup_ends().0;
    for _ in 0..10 {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let Ok(out) = bed.output(client, &["iperf3", "-c", addr, "-t", secs, "-J"]) else {
            continue;
        };
        let v: serde_json::Value = serde_json::from_str(&out).ok()?;
        return v["end"]["sum_received"]["bits_per_second"]
            .as_f64()
            .map(|b| b / 1e6);
    }
    None
}

/// One TCP stream gwA → gwB on the transit link (no tunnel: its SPD
/// covers the hosts' networks only).
fn gateway_stream(bed: &mut Bed, secs: &str, work: &Path) -> Result<f64, LabError> {
    let bin = std::env::current_exe()
        .map_err(LabError::OwnBinary)?
        .to_string_lossy()
        .into_owned();
    let (_, gb) = crate::bed::Family::V4.gateways();
    bed.spawn(
        "gwB",
        &[&bin, "perf", "server", "--bind", gb],
        &work.join("perf-server-gwB.log"),
        Some("listening"),
    )?;
    let out = bed.output(
        "gwA",
        &[
            &bin,
            "perf",
            "client",
            "-H",
            gb,
            "-t",
            "TCP_STREAM",
            "-l",
            secs,
            "--json",
        ],
    )?;
    let o: flowsec_perf::Outcome =
        serde_json::from_str(&out).map_err(|error| LabError::PerfOutput {
            label: "TCP between the gateways".into(),
            error,
        })?;
    Ok(o.throughput_mbit_s)
}

fn f1(v: f64) -> String {
    format!("{v:.1}")
}

fn ratio(a: f64, b: f64) -> String {
    format!("{:.2}×", a / b)
}

/// flowsec perf's figure, then iperf3's where it ran.
fn with_iperf3(mbit: f64, iperf3: Option<f64>) -> String {
    match iperf3 {
        Some(i) => format!("{} (iperf3 {})", f1(mbit), f1(i)),
        None => f1(mbit),
    }
}

/// Over TLS (`i` = 2) or TCP (1) against over UDP: flowsec perf's ratio,
/// then iperf3's.
fn ratios(s: &SslVpn, i: usize) -> String {
    let ours = if i == 2 { s.tls } else { s.tcp };
    match (s.iperf3[i], s.iperf3[0]) {
        (Some(a), Some(b)) => format!("{} (iperf3 {})", ratio(ours, s.udp), ratio(a, b)),
        _ => ratio(ours, s.udp),
    }
}

/// The SSL-VPN table: study and today; `ceiling` is today's suite inline
/// at 1500 B, `raw_esp` the manual-key tunnel's stream (raw ESP) of the
/// same run.
pub fn table(s: &SslVpn, ceiling: f64, raw_esp: f64) -> Table {
    let row = |what: &str, study: String, today: String| vec![what.to_string(), study, today];
    Table {
        title: "SSL-VPN: one TCP stream hostA → hostB with ESP AES-128-CBC + HMAC-SHA1 over UDP, TCP and TLS (RFC 9329), Mbit/s".into(),
        columns: ["", "study", "today"].map(String::from).to_vec(),
        rows: vec![
            row(
                "plain TCP between the gateways",
                format!("{}–{}", f1(STUDY_GATEWAY_TCP.0), f1(STUDY_GATEWAY_TCP.1)),
                f1(s.gateway_tcp),
            ),
            row("raw ESP (manual keys), inline", "—".into(), f1(raw_esp)),
            row("ESP in UDP (IKEv2), inline", "—".into(), with_iperf3(s.udp, s.iperf3[0])),
            row("ESP in TCP (RFC 9329), inline", "—".into(), with_iperf3(s.tcp, s.iperf3[1])),
            row(
                "ESP in TLS 1.3 (the SSL-VPN), inline",
                "—".into(),
                with_iperf3(s.tls, s.iperf3[2]),
            ),
            row(
                "ESP in TLS 1.3 (the SSL-VPN), crypto engine",
                f1(STUDY_VPN),
                f1(s.tls_engine),
            ),
            row(
                "SSL-VPN (engine) / crypto ceiling",
                ratio(STUDY_VPN, STUDY_CEILING),
                ratio(s.tls_engine, ceiling),
            ),
            row("over TLS / over UDP, inline", "—".into(), ratios(s, 2)),
            row("over TCP / over UDP, inline", "—".into(), ratios(s, 1)),
        ],
    }
}

/// The study's claim for its SSL-VPN, and flowsec's goal for TLS.
pub fn findings(s: &SslVpn, ceiling: f64) -> Vec<Finding> {
    vec![
        Finding {
            claim: "the SSL-VPN (IP in SSL records over TCP, crypto on the engine) runs far below its crypto ceiling: 6.06 of 65.8 Mbit/s, 0.09×".into(),
            holds: s.tls_engine / ceiling < 0.5,
            evidence: format!(
                "today ESP in TLS through the engine {:.0} Mbit/s against a ceiling of {ceiling:.0}: {:.2}× (holds if < 0.5×)",
                s.tls_engine,
                s.tls_engine / ceiling
            ),
        },
        Finding {
            claim: "flowsec: a TCP stream over TLS (RFC 9329) keeps at least half of its throughput over UDP".into(),
            holds: s.tls >= 0.5 * s.udp,
            evidence: format!(
                "today over TLS {:.0} Mbit/s, over TCP {:.0}, over UDP {:.0}: TLS/UDP {:.2}× (holds if ≥ 0.5×){}",
                s.tls,
                s.tcp,
                s.udp,
                s.tls / s.udp,
                match (s.iperf3[2], s.iperf3[0]) {
                    (Some(a), Some(b)) => format!("; iperf3: {a:.0} / {b:.0} = {:.2}×", a / b),
                    _ => String::new(),
                }
            ),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_follow_the_numbers() {
        let s = SslVpn {
            gateway_tcp: 8000.0,
            udp: 1000.0,
            tcp: 800.0,
            tls: 600.0,
            tls_engine: 300.0,
            iperf3: [Some(900.0), None, Some(500.0)],
        };
        let f = findings(&s, 3000.0);
        assert_eq!(f.iter().map(|f| f.holds).collect::<Vec<_>>(), [true, true]);
        let slow = SslVpn {
            tls: 400.0,
            tls_engine: 2000.0,
            ..s.clone()
        };
        let f = findings(&slow, 3000.0);
        assert_eq!(
            f.iter().map(|f| f.holds).collect::<Vec<_>>(),
            [false, false]
        );
        let t = table(&s, 3000.0, 1100.0);
        assert_eq!(t.rows.len(), 9);
        assert_eq!(t.rows[7][2], "0.60× (iperf3 0.56×)");
        assert_eq!(t.rows[2][2], "1000.0 (iperf3 900.0)");
    }
}
