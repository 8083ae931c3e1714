//! `flowsec up --metrics ADDR:PORT`: the counters in Prometheus' text
//! exposition format (version 0.0.4), served over HTTP/1.0 by the control
//! thread. A scrape reads what the control plane already asks the
//! workers for (`ctl stats`), through their mailboxes with a deadline:
//! no worker ever waits for it.
//!
//! [`Family`] and [`render`] are the format, sans-I/O; [`Exporter`] is
//! the listening socket and one request at a time.

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

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

/// The listening socket of `--metrics`.
pub struct Exporter {
    listener: TcpListener,
}

/// The most of a request read (its first line is all that matters).
const REQUEST_MAX: usize = 4096;
/// How long one client may take to send its request or take the answer:
/// the control thread serves it, so it is short.
const CLIENT_TIME: Duration = Duration::from_millis(200);

impl Exporter {
    /// Listen on `addr` (non-blocking), marked like flowsec's own sockets
    /// so that answers never enter the tunnel.
    pub fn bind(addr: SocketAddr) -> io::Result<Exporter> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let _ = crate::sys::set_mark(listener.as_raw_fd(), crate::routes::BYPASS_MARK);
        Ok(Exporter { listener })
    }

    /// The descriptor to poll for readability.
    pub fn fd(&self) -> RawFd {
        self.listener.as_raw_fd()
    }

    /// Answer the clients waiting: `GET /metrics` with `body()`, anything
    /// else 404. At most a few per call.
    pub fn serve(&self, body: &mut dyn FnMut() -> String) {
        for _ in 0..8 {
            let Ok((stream, _)) = self.listener.accept() else {
                return;
            };
            let _ = answer(stream, body);
        }
    }
}

/// One request and its answer (HTTP/1.0: the connection closes).
fn answer(mut s: TcpStream, body: &mut dyn FnMut() -> String) -> io::Result<()> {
    s.set_nonblocking(false)?;
    s.set_read_timeout(Some(CLIENT_TIME))?;
    s.set_write_timeout(Some(CLIENT_TIME))?;
    let mut req = Vec::new();
    let mut buf = [0u8; 1024];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < REQUEST_MAX {
        let n = s.read(&mut buf)?;
        if n == 0 {
            break;
        }
        req.extend_from_slice(&buf[..n]);
    }
    let first = req.split(|&b| b == b'\n').next().unwrap_or_default();
    let ok = first.starts_with(b"GET /metrics ") || first.starts_with(b"GET / ");
    let (status, ctype, text) = match ok {
        true => ("200 OK", "text/plain; version=0.0.4; charset=utf-8", body()),
        false => ("404 Not Found", "text/plain", "try /metrics\n".to_string()),
    };
    let head = format!(
        "HTTP/1.0 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        text.len()
    );
    s.write_all(head.as_bytes())?;
    s.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn one_scrape_over_loopback() {
        let e = Exporter::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = e.listener.local_addr().unwrap();
        let client = std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            let mut got = String::new();
            s.read_to_string(&mut got).unwrap();
            got
        });
        let mut served = false;
        for _ in 0..100 {
            let mut body = || {
                served = true;
                "flowsec_up 1\n".to_string()
            };
            e.serve(&mut body);
            if served {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let got = client.join().unwrap();
        assert!(got.starts_with("HTTP/1.0 200 OK\r\n"), "{got}");
        assert!(got.ends_with("\r\n\r\nflowsec_up 1\n"), "{got}");
    }
}
