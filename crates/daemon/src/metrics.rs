//! `flowsec up --metrics ADDR:PORT`: the counters in Prometheus' text
//! exposition format (version 0.0.4), served over HTTP/1.0 by a thread of
//! its own from a page the control thread renders when a scrape asks. The
//! page holds what the control plane already asks the workers for (`ctl
//! stats`), through their mailboxes with a deadline: no worker ever waits
//! for it, and the control thread never waits on a client.
//!
//! [`Family`] and [`render`] are the format, sans-I/O; `request` judges a
//! request (the `Host` check against DNS rebinding), sans-I/O;
//! [`Exporter`] is the listening socket and its thread.

use std::fmt::Write as _;

mod exporter;
mod request;

pub use exporter::{Exporter, ExporterCounters, Publisher};

/// Counter (only goes up) or gauge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
}

/// One metric family: its name, HELP and TYPE, and its samples (labels,
/// value).
#[derive(Debug, Clone)]
pub struct Family {
    pub name: String,
    pub help: String,
    pub kind: Kind,
    pub samples: Vec<(Vec<(&'static str, String)>, u64)>,
}

impl Family {
    /// An empty family.
    pub fn new(name: impl Into<String>, help: impl Into<String>, kind: Kind) -> Family {
        Family {
            name: name.into(),
            help: help.into(),
            kind,
            samples: Vec::new(),
        }
    }

    /// Add a sample.
    pub fn push(&mut self, labels: Vec<(&'static str, String)>, value: u64) {
        self.samples.push((labels, value));
    }
}

/// A label value escaped as the format wants (`\`, `"`, newline).
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The families as exposition text: `# HELP`, `# TYPE`, then a line per
/// sample; counters get the `_total` suffix their names carry already.
pub fn render(families: &[Family]) -> String {
    let mut out = String::new();
    for f in families {
        let kind = match f.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        };
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help.replace('\n', " "));
        let _ = writeln!(out, "# TYPE {} {kind}", f.name);
        for (labels, value) in &f.samples {
            out.push_str(&f.name);
            if !labels.is_empty() {
                out.push('{');
                for (i, (k, v)) in labels.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let _ = write!(out, "{k}=\"{}\"", escape(v));
                }
                out.push('}');
            }
            let _ = writeln!(out, " {value}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::exporter::REQUEST_TIME;
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    #[test]
    fn exposition_text() {
        let mut f = Family::new(
            "flowsec_drops_total",
            "Packets dropped, by reason.",
            Kind::Counter,
        );
        f.push(
            vec![("worker", "0".into()), ("reason", "replayed".into())],
            3,
        );
        let mut g = Family::new("flowsec_ike_sas", "IKE SAs by state.", Kind::Gauge);
        g.push(vec![("state", "ESTABLISHED".into())], 1);
        let mut h = Family::new("flowsec_sa_bytes_total", "Bytes.", Kind::Counter);
        h.push(vec![("name", "a\"b\\c\nd".into())], 7);
        let text = render(&[f, g, h]);
        assert_eq!(
            text,
            "# HELP flowsec_drops_total Packets dropped, by reason.\n\
             # TYPE flowsec_drops_total counter\n\
             flowsec_drops_total{worker=\"0\",reason=\"replayed\"} 3\n\
             # HELP flowsec_ike_sas IKE SAs by state.\n\
             # TYPE flowsec_ike_sas gauge\n\
             flowsec_ike_sas{state=\"ESTABLISHED\"} 1\n\
             # HELP flowsec_sa_bytes_total Bytes.\n\
             # TYPE flowsec_sa_bytes_total counter\n\
             flowsec_sa_bytes_total{name=\"a\\\"b\\\\c\\nd\"} 7\n"
        );
    }

    /// `request` as a client, the answer in full.
    fn scrape(
        addr: std::net::SocketAddr,
        request: &'static str,
    ) -> std::thread::JoinHandle<String> {
        std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(request.as_bytes()).unwrap();
            let mut got = String::new();
            s.read_to_string(&mut got).unwrap();
            got
        })
    }

    /// The control thread's part, played here until `done`: publish a
    /// page whenever a scrape waits for one; how many were published.
    fn publish_until(p: &Publisher, done: impl Fn() -> bool) -> u64 {
        let mut ready = [false];
        let mut n = 0;
        let start = Instant::now();
        while !done() && start.elapsed() < Duration::from_secs(20) {
            crate::sys::poll_readable(&[p.fd()], 10, &mut ready).unwrap();
            if ready[0] {
                n += 1;
                p.publish(|| format!("flowsec_up {n}\n"));
            }
        }
        n
    }

    #[test]
    fn one_scrape_over_loopback() {
        let e = Exporter::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = e.local_addr().unwrap();
        let p = e.spawn().unwrap();
        let client = scrape(addr, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        assert_eq!(publish_until(&p, || client.is_finished()), 1);
        let got = client.join().unwrap();
        assert!(got.starts_with("HTTP/1.0 200 OK\r\n"), "{got}");
        assert!(got.ends_with("\r\n\r\nflowsec_up 1\n"), "{got}");
        let rebound = scrape(
            addr,
            "GET /metrics HTTP/1.1\r\nHost: rebind.example:9100\r\n\r\n",
        );
        let got = rebound.join().unwrap();
        assert!(
            got.starts_with("HTTP/1.0 421 Misdirected Request\r\n"),
            "{got}"
        );
        assert_eq!(p.counters().served.load(Ordering::Relaxed), 1);
        assert_eq!(p.counters().refused_host.load(Ordering::Relaxed), 1);
    }

    /// A client that trickles its request is cut off after
    /// [`REQUEST_TIME`] (counted), the control side never waits for it,
    /// and a scrape behind it is answered as soon as it is gone.
    #[test]
    fn a_slow_client_is_cut_off_and_never_waited_for() {
        let e = Exporter::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = e.local_addr().unwrap();
        let p = e.spawn().unwrap();
        let slow = std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            let start = Instant::now();
            // One byte every 150 ms (each read well within a per-read
            // timeout), until the exporter hangs up.
            while s.write_all(b"G").is_ok() && start.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(150));
            }
            start.elapsed()
        });
        std::thread::sleep(Duration::from_millis(100));
        let started = Instant::now();
        let next = scrape(addr, "GET /metrics HTTP/1.0\r\n\r\n");
        // The control side: each turn returns at once, the slow client or not.
        let mut longest = Duration::ZERO;
        let mut ready = [false];
        while !next.is_finished() && started.elapsed() < Duration::from_secs(10) {
            let turn = Instant::now();
            crate::sys::poll_readable(&[p.fd()], 10, &mut ready).unwrap();
            if ready[0] {
                p.publish(|| "flowsec_up 1\n".to_string());
            }
            longest = longest.max(turn.elapsed());
        }
        let got = next.join().unwrap();
        assert!(got.ends_with("flowsec_up 1\n"), "{got}");
        assert!(
            started.elapsed() < REQUEST_TIME + Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        // The old exporter held this side for the whole REQUEST_TIME.
        assert!(longest < Duration::from_millis(500), "{longest:?}");
        let held = slow.join().unwrap();
        assert!(held < REQUEST_TIME + Duration::from_secs(2), "{held:?}");
        assert_eq!(p.counters().too_slow.load(Ordering::Relaxed), 1);
    }
}
