//! `flowsec perf`: netperf-style traffic tests between a server and a
//! client (the lab's traffic tool). Options follow netperf's: `-H` host,
//! `-t` test, `-l` seconds, `-p` control port, `-m` message size, `-r`
//! request,response sizes, `-s`/`-S` socket buffers.

use std::net::TcpListener;

use clap::{Args, Subcommand};
use flowsec_perf::{Outcome, Payload, Spec, Test, DEFAULT_PORT};

use crate::{CliError, UsageError};

/// Arguments of `flowsec perf`.
#[derive(Args, Debug)]
pub struct PerfArgs {
    #[command(subcommand)]
    pub side: Side,
}

#[derive(Subcommand, Debug)]
pub enum Side {
    /// Serve tests (like netserver), in the foreground.
    Server {
        /// Address to listen on.
        #[arg(long, default_value = "::")]
        bind: String,
        /// Control port.
        #[arg(short = 'p', long, default_value_t = DEFAULT_PORT)]
        port: u16,
    },
    /// Run one test against a server.
    Client(Box<ClientArgs>),
}

#[derive(Args, Debug)]
pub struct ClientArgs {
    /// The server.
    #[arg(short = 'H', long = "host")]
    pub host: String,
    /// Control port.
    #[arg(short = 'p', long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// TCP_STREAM, UDP_STREAM, TCP_RR, UDP_RR, TCP_CRR, CBR, MAXRATE or PING.
    #[arg(short = 't', long = "test", default_value = "TCP_STREAM")]
    pub test: String,
    /// Test length in seconds (MAXRATE: per probe).
    #[arg(short = 'l', long = "length", default_value_t = 10.0)]
    pub seconds: f64,
    /// Message size (streams), payload size (CBR), in bytes.
    #[arg(short = 'm', long = "message-size")]
    pub msg_size: Option<usize>,
    /// Request and response sizes of the RR tests: `REQ[,RSP]`.
    #[arg(short = 'r', long = "request-response")]
    pub rr: Option<String>,
    /// Local socket buffers (SO_SNDBUF and SO_RCVBUF), bytes.
    #[arg(short = 's')]
    pub local_buf: Option<usize>,
    /// The server's socket buffers (SO_SNDBUF and SO_RCVBUF), bytes.
    #[arg(short = 'S')]
    pub remote_buf: Option<usize>,
    /// Sending rate of UDP_STREAM or CBR, bit/s of payload: 13M, 500k, 1G.
    #[arg(long)]
    pub rate: Option<String>,
    /// MAXRATE: precision of the search, bit/s (1M: study S2's step).
    #[arg(long, default_value = "1M")]
    pub step: String,
    /// MAXRATE: the highest rate to try, bit/s.
    #[arg(long, default_value = "10G")]
    pub max_rate: String,
    /// MAXRATE: the fraction of lost packets that still counts as loss-free.
    #[arg(long, default_value_t = 0.0)]
    pub loss_tolerance: f64,
    /// PING: payload sizes, bytes.
    #[arg(long, value_delimiter = ',', default_value = "64")]
    pub sizes: Vec<usize>,
    /// PING: echoes per size.
    #[arg(long, default_value_t = 10)]
    pub count: u64,
    /// PING: seconds between echoes.
    #[arg(long, default_value_t = 1.0)]
    pub interval: f64,
    /// What the messages carry: random (incompressible), text
    /// (compressible) or zeros.
    #[arg(long, default_value = "random")]
    pub payload: String,
    /// PING: a CBR stream at this rate (bit/s: 10M, 30M) to the same
    /// server while the echoes run (study S2's background load).
    #[arg(long)]
    pub load: Option<String>,
    /// Run this many tests at once (each its own thread and control
    /// connection) and report their sum.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// TCP_STREAM: data connections per thread, written in turn as each
    /// has room (study S5: 64).
    #[arg(long, default_value_t = 1)]
    pub conns: usize,
    /// TCP_STREAM: close each connection after this many messages and
    /// open a new one (study S5: 10).
    #[arg(long)]
    pub reconnect: Option<u64>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &PerfArgs) -> Result<(), CliError> {
    match &args.side {
        Side::Server { bind, port } => {
            let listener = TcpListener::bind((bind.as_str(), *port))
                .or_else(|e| {
                    // A host without IPv6 still serves IPv4.
                    if bind == "::" {
                        TcpListener::bind(("0.0.0.0", *port))
                    } else {
                        Err(e)
                    }
                })
                .map_err(|error| CliError::Listen {
                    bind: bind.clone(),
                    port: *port,
                    error,
                })?;
            eprintln!(
                "flowsec perf server: listening on {}",
                listener
                    .local_addr()
                    .map_or_else(|_| "?".into(), |a| a.to_string())
            );
            Ok(flowsec_perf::serve(listener).map_err(flowsec_perf::PerfError::Io)?)
        }
        Side::Client(c) => client(c),
    }
}

/// `13M`, `500k`, `1G`, `13000000`: bits per second.
fn parse_rate(s: &str) -> Option<u64> {
    let (num, mult) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 1e3),
        (i, 'm' | 'M') => (&s[..i], 1e6),
        (i, 'g' | 'G') => (&s[..i], 1e9),
        _ => (s, 1.0),
    };
    let bps = num.parse::<f64>().ok()? * mult;
    // At least 1 bit/s, at most 1 Tbit/s: sums stay far from overflow.
    (1.0..=1e12).contains(&bps).then_some(bps as u64)
}

fn client(c: &ClientArgs) -> Result<(), CliError> {
    if c.test.eq_ignore_ascii_case("MAXRATE") {
        return maxrate(c);
    }
    if c.test.eq_ignore_ascii_case("PING") {
        return ping(c);
    }
    let test = Test::from_name(&c.test).ok_or_else(|| UsageError::PerfTest {
        test: c.test.clone(),
        known: Test::ALL.iter().map(|t| t.name()).collect(),
    })?;
    let mut spec = Spec::new(test);
    spec.seconds = c.seconds;
    if let Some(m) = c.msg_size {
        spec.msg_size = m;
    }
    if let Some(rr) = &c.rr {
        let mut it = rr.split(',');
        let bad = || UsageError::RequestResponse(rr.clone());
        spec.req_size = it.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?;
        spec.rsp_size = match it.next() {
            Some(v) => v.parse().map_err(|_| bad())?,
            None => spec.req_size,
        };
    }
    spec.local_buf = c.local_buf;
    spec.remote_buf = c.remote_buf;
    spec.payload = payload_arg(&c.payload)?;
    spec.conns = c.conns;
    spec.reconnect = c.reconnect;
    if let Some(r) = &c.rate {
        spec.rate_bps = Some(rate_arg("--rate", r)?);
    }
    spec.check().map_err(UsageError::Spec)?;
    let out = flowsec_perf::run_parallel(&c.host, c.port, &spec, c.threads)?;
    if c.json {
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    } else {
        print_text(&c.host, &spec, &out);
    }
    Ok(())
}

fn payload_arg(v: &str) -> Result<Payload, CliError> {
    Payload::from_name(v).ok_or_else(|| UsageError::Payload(v.into()).into())
}

fn rate_arg(flag: &'static str, v: &str) -> Result<u64, CliError> {
    parse_rate(v).ok_or_else(|| {
        UsageError::Rate {
            flag,
            value: v.into(),
        }
        .into()
    })
}

/// MAXRATE: CBR probes of `-l` seconds, `-m`-byte payloads (default 1300,
/// study S2's transport-mode size).
fn maxrate(c: &ClientArgs) -> Result<(), CliError> {
    let base = Spec {
        seconds: c.seconds,
        msg_size: c.msg_size.unwrap_or(1300),
        local_buf: c.local_buf,
        remote_buf: c.remote_buf,
        ..Spec::new(Test::Cbr)
    };
    base.check().map_err(UsageError::Spec)?;
    if !(0.0..1.0).contains(&c.loss_tolerance) {
        return Err(UsageError::LossTolerance.into());
    }
    let (step, max) = (
        rate_arg("--step", &c.step)?,
        rate_arg("--max-rate", &c.max_rate)?,
    );
    let r = flowsec_perf::max_rate(&base, step, max, c.loss_tolerance, |spec| {
        let o = flowsec_perf::run(&c.host, c.port, spec)?;
        if !c.json {
            eprintln!(
                "  probe {:>10.3} Mbit/s: {} sent, {} lost, queue {:.1} ms",
                spec.rate_bps.unwrap_or(0) as f64 / 1e6,
                o.packets_sent,
                o.lost,
                o.max_queue_ms
            );
        }
        Ok(flowsec_perf::Delivery {
            sent: o.packets_sent,
            received: o.packets_received,
            queue_ms: o.max_queue_ms,
        })
    })?;
    if c.json {
        println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
    } else {
        println!(
            "MAXRATE to {}: {:.3} Mbit/s loss-free ({} B payloads, {} s per probe, step {:.3} Mbit/s, {} probes)",
            c.host,
            r.max_rate_bps as f64 / 1e6,
            r.payload,
            r.hold_s,
            r.step_bps as f64 / 1e6,
            r.probes.len()
        );
    }
    Ok(())
}

/// PING: `--count` UDP echoes per `--sizes` payload, `--interval` apart.
fn ping(c: &ClientArgs) -> Result<(), CliError> {
    if c.sizes.is_empty() || c.sizes.iter().any(|&s| !(1..=65_507).contains(&s)) {
        return Err(UsageError::PingSizes.into());
    }
    if c.count == 0 || !(c.interval > 0.0 && c.interval <= 60.0) {
        return Err(UsageError::PingCount.into());
    }
    let load = c
        .load
        .as_deref()
        .map(|r| rate_arg("--load", r))
        .transpose()?;
    let rows = flowsec_perf::ping(&c.host, c.port, &c.sizes, c.count, c.interval, load)?;
    if c.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&rows).unwrap_or_default()
        );
        return Ok(());
    }
    println!(
        "PING to {} (UDP echo{}): rtt min/avg/max/mdev ms",
        c.host,
        load.map_or(String::new(), |b| format!(
            ", under a {:.3} Mbit/s CBR load",
            b as f64 / 1e6
        ))
    );
    for r in rows {
        println!(
            "  {:>6} B: {}/{} received, {:.3}/{:.3}/{:.3}/{:.3}",
            r.payload, r.received, r.sent, r.min_ms, r.avg_ms, r.max_ms, r.mdev_ms
        );
    }
    Ok(())
}

/// iperf3's interval report, from the receiver's count per second.
fn print_intervals(o: &Outcome) {
    if o.per_second.len() < 2 {
        return;
    }
    println!("  interval s   received 10^6bits/sec");
    for (i, s) in o.per_second.iter().enumerate() {
        println!(
            "  {:>4}-{:<4} {:>24.2}",
            i,
            i + 1,
            s.bytes as f64 * 8.0 / 1e6
        );
    }
}

fn print_text(host: &str, spec: &Spec, o: &Outcome) {
    println!(
        "{} to {host}: {:.2} s{}",
        o.test,
        o.elapsed_s,
        if o.connections > 1 {
            format!(", {} connections (summed)", o.connections)
        } else {
            String::new()
        }
    );
    match spec.test {
        Test::TcpStream => {
            println!(
                "  message size {} B, sent {} B, received {} B",
                spec.msg_size, o.bytes_sent, o.bytes_received
            );
            if spec.many_connections() {
                println!(
                    "  connections opened {} (server accepted {})",
                    o.connects, o.accepted
                );
            }
            println!("  Throughput 10^6bits/sec: {:.2}", o.throughput_mbit_s);
            print_intervals(o);
        }
        Test::UdpStream | Test::Cbr => print_datagrams(spec, o),
        Test::TcpRr | Test::UdpRr | Test::TcpCrr => {
            println!(
                "  request {} B, response {} B",
                spec.req_size, spec.rsp_size
            );
            println!(
                "  Trans. Rate per sec: {:.2} ({} transactions{})",
                o.trans_per_s,
                o.transactions,
                if o.timeouts > 0 {
                    format!(", {} timed out", o.timeouts)
                } else {
                    String::new()
                }
            );
            println!(
                "  latency us: mean {:.1}, p50 {:.0}, p99 {:.0}",
                o.latency_mean_us, o.latency_p50_us, o.latency_p99_us
            );
        }
    }
    println!(
        "  CPU %: local process {:.1} / system {:.1}, remote process {:.1} / system {:.1}",
        o.local_cpu.process_pct,
        o.local_cpu.system_pct,
        o.remote_cpu.process_pct,
        o.remote_cpu.system_pct
    );
}

/// The datagram tests' part of the text report: counts, loss (the
/// receiving socket's own drops named), and per interval or second.
fn print_datagrams(spec: &Spec, o: &Outcome) {
    println!(
        "  message size {} B: sent {} packets ({:.2} 10^6bits/sec), received {} ({:.2} 10^6bits/sec), lost {} ({} of them dropped by the receiving socket, its buffer full)",
        spec.msg_size,
        o.packets_sent,
        o.send_mbit_s,
        o.packets_received,
        o.throughput_mbit_s,
        o.lost,
        o.socket_drops
    );
    if spec.test == Test::UdpStream {
        print_intervals(o);
    }
    if spec.test == Test::Cbr {
        println!("  second  packets    bytes  lost  reordered  max gap ms");
        for (i, s) in o.per_second.iter().enumerate() {
            println!(
                "  {:>6} {:>8} {:>8} {:>5} {:>10} {:>11.2}",
                i, s.packets, s.bytes, s.lost, s.reordered, s.max_gap_ms
            );
        }
        println!(
            "  reordered {}, longest gap {:.2} ms, most queued {:.2} ms",
            o.reordered, o.max_gap_ms, o.max_queue_ms
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_like_iperf() {
        assert_eq!(parse_rate("13M"), Some(13_000_000));
        assert_eq!(parse_rate("500k"), Some(500_000));
        assert_eq!(parse_rate("1.5G"), Some(1_500_000_000));
        assert_eq!(parse_rate("42"), Some(42));
        for bad in ["", "M", "-1M", "x", "0", "0.1", "1e20", "2000G"] {
            assert_eq!(parse_rate(bad), None, "{bad}");
        }
    }
}
