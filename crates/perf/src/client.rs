//! The client side (`flowsec perf client -H HOST -t TEST`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::cpu::CpuMark;
use crate::server::{send_line, Done, Seen, CBR_HEADER};
use crate::spec::{Outcome, Second, Spec, Test};
use crate::{PerfError, Thread};

/// Most latency samples kept (for the percentiles).
const MAX_SAMPLES: usize = 10_000_000;
/// How long a UDP_RR request waits for its response.
const UDP_RR_TIMEOUT: Duration = Duration::from_millis(500);

#[derive(Deserialize)]
struct PortReply {
    port: Option<u16>,
    error: Option<String>,
}

/// Run `spec` against the server at `host` (name or address, and `port`
/// for the control connection).
pub fn run(host: &str, port: u16, spec: &Spec) -> Result<Outcome, PerfError> {
    spec.check()?;
    let addr = (host, port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| PerfError::NoAddress { host: host.into() })?;
    let control = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|error| PerfError::Connect { addr, error })?;
    control.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(control.try_clone()?);
    send_line(&control, spec)?;
    let reply: PortReply = serde_json::from_str(&line(&mut reader)?)?;
    if let Some(e) = reply.error {
        return Err(PerfError::Server { message: e });
    }
    let data = SocketAddr::new(addr.ip(), reply.port.ok_or(PerfError::NoPort)?);
    let mark = CpuMark::now();
    let started = Instant::now();
    let mut out = Outcome {
        test: spec.test.name().to_string(),
        connections: spec.conns as u32,
        ..Outcome::default()
    };
    let mut done = Done::default();
    match spec.test {
        Test::TcpStream if spec.many_connections() => tcp_stream_many(data, spec, &mut out)?,
        Test::TcpStream => tcp_stream(data, spec, &mut out)?,
        Test::UdpStream | Test::Cbr => udp_stream(data, spec, &mut out, &mut done)?,
        Test::TcpRr => tcp_rr(data, spec, &mut out)?,
        Test::UdpRr => udp_rr(data, spec, &mut out)?,
        Test::TcpCrr => tcp_crr(data, spec, &mut out)?,
    }
    out.elapsed_s = started.elapsed().as_secs_f64();
    out.local_cpu = mark.since();
    done.packets_sent = out.packets_sent;
    control.set_read_timeout(Some(Duration::from_secs(30)))?;
    send_line(&control, &done)?;
    let seen: Seen = serde_json::from_str(&line(&mut reader)?)?;
    if let Some(e) = seen.error {
        return Err(PerfError::Server { message: e });
    }
    finish(&mut out, spec, &seen);
    Ok(out)
}

/// `threads` copies of `spec` at once, each with its own control and data
/// connection (netperf run N times in parallel, as study S5's client ran
/// many flows), summed: bytes, packets, throughput and transactions add
/// up; latencies are the transaction-weighted mean, and the worst p50/p99.
pub fn run_parallel(
    host: &str,
    port: u16,
    spec: &Spec,
    threads: usize,
) -> Result<Outcome, PerfError> {
    if threads <= 1 {
        return run(host, port, spec);
    }
    if threads > crate::server::MAX_TESTS {
        return Err(PerfError::TooManyParallel);
    }
    let outcomes: Vec<Result<Outcome, PerfError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| s.spawn(|| run(host, port, spec)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(PerfError::Panicked(Thread::Test))))
            .collect()
    });
    let mut total = Outcome {
        test: spec.test.name().to_string(),
        ..Outcome::default()
    };
    let mut weighted = 0.0;
    for (i, o) in outcomes.into_iter().enumerate() {
        let o = o?;
        total.connections += o.connections;
        total.elapsed_s = total.elapsed_s.max(o.elapsed_s);
        total.throughput_mbit_s += o.throughput_mbit_s;
        total.send_mbit_s += o.send_mbit_s;
        total.bytes_sent += o.bytes_sent;
        total.bytes_received += o.bytes_received;
        total.packets_sent += o.packets_sent;
        total.packets_received += o.packets_received;
        total.lost += o.lost;
        total.socket_drops += o.socket_drops;
        total.transactions += o.transactions;
        total.connects += o.connects;
        total.accepted += o.accepted;
        total.trans_per_s += o.trans_per_s;
        total.timeouts += o.timeouts;
        total.reordered += o.reordered;
        total.max_gap_ms = total.max_gap_ms.max(o.max_gap_ms);
        total.max_queue_ms = total.max_queue_ms.max(o.max_queue_ms);
        // The connections' seconds, second by second (the interval report).
        if total.per_second.len() < o.per_second.len() {
            total
                .per_second
                .resize(o.per_second.len(), Second::default());
        }
        for (t, s) in total.per_second.iter_mut().zip(&o.per_second) {
            t.add(s);
        }
        weighted += o.latency_mean_us * o.transactions as f64;
        total.latency_p50_us = total.latency_p50_us.max(o.latency_p50_us);
        total.latency_p99_us = total.latency_p99_us.max(o.latency_p99_us);
        total.latency_max_us = total.latency_max_us.max(o.latency_max_us);
        total.latency_min_us = if i == 0 {
            o.latency_min_us
        } else {
            total.latency_min_us.min(o.latency_min_us)
        };
        // Every thread measured the same processes and machine: keep the
        // busiest reading.
        if o.local_cpu.system_pct > total.local_cpu.system_pct {
            total.local_cpu = o.local_cpu;
        }
        if o.remote_cpu.system_pct > total.remote_cpu.system_pct {
            total.remote_cpu = o.remote_cpu;
        }
    }
    if total.transactions > 0 {
        total.latency_mean_us = weighted / total.transactions as f64;
    }
    Ok(total)
}

fn line(reader: &mut impl BufRead) -> Result<String, PerfError> {
    let mut l = String::new();
    reader.take(1 << 20).read_line(&mut l)?;
    if l.is_empty() {
        return Err(PerfError::ServerClosed);
    }
    Ok(l)
}

/// Put the server's view into the outcome: receiver-side throughput as
/// netperf reports it, loss, per-second counts.
fn finish(out: &mut Outcome, spec: &Spec, seen: &Seen) {
    out.remote_cpu = seen.cpu;
    out.accepted = seen.accepted;
    out.bytes_received = seen.bytes;
    out.packets_received = seen.packets;
    let mbit = |bytes: u64, s: f64| {
        if s > 0.0 {
            bytes as f64 * 8.0 / s / 1e6
        } else {
            0.0
        }
    };
    match spec.test {
        Test::TcpStream | Test::UdpStream | Test::Cbr => {
            // Over the sender's duration: the receiver's first-to-last span
            // misses the time to the first byte and after the last.
            out.throughput_mbit_s = mbit(seen.bytes, out.elapsed_s);
            out.send_mbit_s = mbit(out.bytes_sent, out.elapsed_s);
            out.lost = out.packets_sent.saturating_sub(seen.packets);
            out.socket_drops = seen.socket_drops.min(out.lost);
            out.per_second = seen.per_second.clone();
            if spec.test != Test::TcpStream {
                out.reordered = seen.reordered;
                out.max_gap_ms = seen.max_gap_ms;
                out.max_queue_ms = seen.max_queue_ms;
            } else {
                out.lost = 0;
                out.socket_drops = 0;
            }
        }
        _ => {}
    }
}

/// netperf -s/-S: SO_SNDBUF and SO_RCVBUF of `socket` (the kernel doubles
/// them, as netperf's report shows). Best effort, as netperf: a refused
/// size leaves the default.
pub(crate) fn set_buffers(socket: &impl AsRawFd, bytes: Option<usize>) {
    let Some(n) = bytes else {
        return;
    };
    let value = libc::c_int::try_from(n).unwrap_or(libc::c_int::MAX);
    for opt in [libc::SO_SNDBUF, libc::SO_RCVBUF] {
        crate::sys::set_int_option(socket.as_raw_fd(), libc::SOL_SOCKET, opt, value);
    }
}

fn tcp_stream(data: SocketAddr, spec: &Spec, out: &mut Outcome) -> Result<(), PerfError> {
    let mut s = TcpStream::connect(data)?;
    out.connects = 1;
    set_buffers(&s, spec.local_buf);
    let buf = spec.payload.bytes(spec.msg_size);
    let end = Instant::now() + Duration::from_secs_f64(spec.seconds);
    while Instant::now() < end {
        s.write_all(&buf)?;
        out.bytes_sent += buf.len() as u64;
        out.packets_sent += 1;
    }
    s.shutdown(std::net::Shutdown::Write)?;
    read_to_close(&mut s)?;
    Ok(())
}

/// Wait for the server to have read everything: it closes at EOF, after
/// our shutdown(SHUT_WR).
fn read_to_close(s: &mut TcpStream) -> Result<(), PerfError> {
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut rest = [0u8; 64];
    while matches!(s.read(&mut rest), Ok(n) if n > 0) {}
    Ok(())
}

/// TCP_STREAM over `spec.conns` connections at once, each closed after
/// `spec.reconnect` messages and replaced by a new one (study S5's
/// client: 64 connections per thread, a reconnect every 10 messages).
/// One thread writes to whichever connection has room, in poll(2); a
/// reconnect's connect(2) blocks that thread for the handshake, as a
/// simple client's would.
fn tcp_stream_many(data: SocketAddr, spec: &Spec, out: &mut Outcome) -> Result<(), PerfError> {
    let buf = spec.payload.bytes(spec.msg_size);
    let mut conns = Vec::with_capacity(spec.conns);
    for _ in 0..spec.conns {
        conns.push(StreamConn::open(data, spec, out)?);
    }
    let end = Instant::now() + Duration::from_secs_f64(spec.seconds);
    let mut fds: Vec<libc::pollfd> = Vec::with_capacity(conns.len());
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        fds.clear();
        fds.extend(
            conns
                .iter()
                .map(|c| crate::pollfd(c.s.as_raw_fd(), libc::POLLOUT)),
        );
        let wait = (end - now).clamp(Duration::from_millis(1), Duration::from_millis(50));
        if crate::poll(&mut fds, wait) <= 0 {
            continue;
        }
        for (c, fd) in conns.iter_mut().zip(&fds) {
            if fd.revents != 0 {
                c.fill(&buf, data, spec, out)?;
            }
        }
    }
    for c in &conns {
        c.s.set_nonblocking(false)?;
        c.s.shutdown(std::net::Shutdown::Write)?;
    }
    for mut c in conns {
        read_to_close(&mut c.s)?;
    }
    Ok(())
}

/// One of TCP_STREAM's many connections: non-blocking, a message at a
/// time.
struct StreamConn {
    s: TcpStream,
    /// Bytes of the current message written.
    at: usize,
    /// Whole messages written.
    messages: u64,
}

impl StreamConn {
    fn open(data: SocketAddr, spec: &Spec, out: &mut Outcome) -> Result<Self, PerfError> {
        let s = TcpStream::connect_timeout(&data, Duration::from_secs(5)).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AddrNotAvailable {
                // Every closed connection holds its port in TIME_WAIT
                // for a minute.
                PerfError::NoLocalPort {
                    addr: data,
                    error: e,
                    connects: out.connects,
                }
            } else {
                e.into()
            }
        })?;
        set_buffers(&s, spec.local_buf);
        s.set_nonblocking(true)?;
        out.connects += 1;
        Ok(StreamConn {
            s,
            at: 0,
            messages: 0,
        })
    }

    /// Fill the socket's buffer (bounded by its size) with messages of
    /// `buf`; after `spec.reconnect` messages, close and open a new one.
    fn fill(
        &mut self,
        buf: &[u8],
        data: SocketAddr,
        spec: &Spec,
        out: &mut Outcome,
    ) -> Result<(), PerfError> {
        loop {
            match self.s.write(&buf[self.at..]) {
                Ok(n) => {
                    self.at += n;
                    out.bytes_sent += n as u64;
                    if self.at < buf.len() {
                        continue;
                    }
                    self.at = 0;
                    self.messages += 1;
                    out.packets_sent += 1;
                    if spec.reconnect == Some(self.messages) {
                        // Closing hands the kernel the rest of the
                        // data and a FIN; the server reads to the end.
                        let _ = self.s.shutdown(std::net::Shutdown::Write);
                        *self = StreamConn::open(data, spec, out)?;
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// UDP_STREAM (as fast as it goes, or paced) and CBR (paced, with sequence
/// numbers and send times).
fn udp_stream(
    data: SocketAddr,
    spec: &Spec,
    out: &mut Outcome,
    done: &mut Done,
) -> Result<(), PerfError> {
    let s = udp_to(data)?;
    set_buffers(&s, spec.local_buf);
    let mut buf = spec.payload.bytes(spec.msg_size);
    let interval = spec
        .rate_bps
        .filter(|&r| r > 0)
        .map(|r| Duration::from_secs_f64(spec.msg_size as f64 * 8.0 / r as f64));
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(spec.seconds);
    let mut next = start;
    let mut seq: u64 = 0;
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        if let Some(i) = interval {
            if !pace(&mut next, i, end) {
                break;
            }
        }
        // One send time for the header and the per-second count, so that
        // the receiver's seconds and ours agree.
        let us = start.elapsed().as_micros() as u64;
        if spec.test == Test::Cbr && buf.len() >= CBR_HEADER {
            buf[..8].copy_from_slice(&seq.to_be_bytes());
            buf[8..16].copy_from_slice(&us.to_be_bytes());
        }
        match s.send(&buf) {
            Ok(_) => {
                out.packets_sent += 1;
                out.bytes_sent += buf.len() as u64;
                seq += 1;
                // Per second of sending, for the receiver's loss per second.
                let second = (us / 1_000_000) as usize;
                if done.sent_per_second.len() <= second {
                    done.sent_per_second.resize(second + 1, 0);
                }
                done.sent_per_second[second] += 1;
            }
            // A full socket buffer or queue: netperf counts these as
            // send errors, not as sent.
            Err(e) if matches!(e.raw_os_error(), Some(105) | Some(11)) => {}
            // Connection refused (ICMP from an earlier datagram): go on.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Wait until the paced send due at `*next` and move it on by `interval`;
/// false (and no wait) when it would fall at or after `end`, so a slow
/// rate never sleeps past the test.
fn pace(next: &mut Instant, interval: Duration, end: Instant) -> bool {
    if *next >= end {
        return false;
    }
    let now = Instant::now();
    if now < *next {
        std::thread::sleep(*next - now);
    }
    *next += interval;
    true
}

/// Latency samples (µs) into mean and percentiles.
fn latencies(out: &mut Outcome, mut samples: Vec<u32>) {
    if samples.is_empty() {
        return;
    }
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize] as f64;
    let n = samples.len() as f64;
    let mean = samples.iter().map(|&s| s as f64).sum::<f64>() / n;
    out.latency_mean_us = mean;
    out.latency_p50_us = at(0.50);
    out.latency_p99_us = at(0.99);
    out.latency_min_us = at(0.0);
    out.latency_max_us = at(1.0);
    out.latency_stddev_us = (samples
        .iter()
        .map(|&s| (s as f64 - mean).powi(2))
        .sum::<f64>()
        / n)
        .sqrt();
}

fn record(samples: &mut Vec<u32>, t: Instant) {
    if samples.len() < MAX_SAMPLES {
        samples.push(t.elapsed().as_micros().min(u32::MAX as u128) as u32);
    }
}

/// The RR tests' loop: `transact` one request and response after another
/// for the test's length, timing each; netperf's "Trans. Rate" over the
/// time it took.
fn rr_loop(
    spec: &Spec,
    out: &mut Outcome,
    mut transact: impl FnMut() -> std::io::Result<()>,
) -> Result<(), PerfError> {
    let mut samples = Vec::new();
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(spec.seconds);
    while Instant::now() < end {
        let t = Instant::now();
        transact()?;
        record(&mut samples, t);
        out.transactions += 1;
    }
    out.packets_sent = out.transactions;
    out.trans_per_s = out.transactions as f64 / start.elapsed().as_secs_f64();
    latencies(out, samples);
    Ok(())
}

fn tcp_rr(data: SocketAddr, spec: &Spec, out: &mut Outcome) -> Result<(), PerfError> {
    let mut s = TcpStream::connect(data)?;
    let _ = s.set_nodelay(true);
    set_buffers(&s, spec.local_buf);
    let (req, mut rsp) = (spec.payload.bytes(spec.req_size), vec![0u8; spec.rsp_size]);
    rr_loop(spec, out, || {
        s.write_all(&req)?;
        s.read_exact(&mut rsp)
    })
}

/// A new connection per transaction; the client closes first (its
/// TIME_WAIT, as netperf).
fn tcp_crr(data: SocketAddr, spec: &Spec, out: &mut Outcome) -> Result<(), PerfError> {
    let (req, mut rsp) = (spec.payload.bytes(spec.req_size), vec![0u8; spec.rsp_size]);
    rr_loop(spec, out, || {
        let mut s = TcpStream::connect(data)?;
        let _ = s.set_nodelay(true);
        s.write_all(&req)?;
        s.read_exact(&mut rsp)
    })
}

/// A UDP socket of `data`'s family, connected to it.
fn udp_to(data: SocketAddr) -> std::io::Result<UdpSocket> {
    let any: SocketAddr = if data.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let s = UdpSocket::bind(any)?;
    s.connect(data)?;
    Ok(s)
}

fn udp_rr(data: SocketAddr, spec: &Spec, out: &mut Outcome) -> Result<(), PerfError> {
    let s = udp_to(data)?;
    s.set_read_timeout(Some(UDP_RR_TIMEOUT))?;
    let (mut req, mut rsp) = (spec.payload.bytes(spec.req_size), vec![0u8; 65_536]);
    let mut samples = Vec::new();
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(spec.seconds);
    let interval = spec.interval_s.map(Duration::from_secs_f64);
    let mut next = start;
    while Instant::now() < end && spec.count.is_none_or(|c| out.packets_sent < c) {
        if let Some(i) = interval {
            if !pace(&mut next, i, end) {
                break;
            }
        }
        let t = Instant::now();
        // A transaction id, when the sizes have room for it (the server
        // echoes the first 8 bytes), so that a late answer is not taken
        // for the next one.
        let id = out.packets_sent.to_be_bytes();
        let tagged = req.len() >= 8 && spec.rsp_size >= 8;
        if tagged {
            req[..8].copy_from_slice(&id);
        }
        s.send(&req)?;
        out.packets_sent += 1;
        loop {
            match s.recv(&mut rsp) {
                Ok(n) if tagged && (n < 8 || rsp[..8] != id) => {
                    if t.elapsed() >= UDP_RR_TIMEOUT {
                        out.timeouts += 1;
                        break;
                    }
                }
                Ok(_) => {
                    record(&mut samples, t);
                    out.transactions += 1;
                    break;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    out.timeouts += 1;
                    break;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    out.trans_per_s = out.transactions as f64 / start.elapsed().as_secs_f64();
    latencies(out, samples);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SpecError;
    use std::net::TcpListener;

    /// A server on 127.0.0.1 for one test at a time.
    fn server() -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || crate::serve(listener));
        port
    }

    fn quick(test: Test) -> Spec {
        Spec {
            seconds: 0.5,
            ..Spec::new(test)
        }
    }

    #[test]
    fn streams_arrive_and_are_counted_at_the_receiver() {
        let port = server();
        let tcp = run("127.0.0.1", port, &quick(Test::TcpStream)).unwrap();
        assert!(
            tcp.bytes_sent > 0 && tcp.bytes_received == tcp.bytes_sent,
            "{tcp:?}"
        );
        assert!(tcp.throughput_mbit_s > 0.0);
        let udp = run(
            "127.0.0.1",
            port,
            &Spec {
                rate_bps: Some(20_000_000),
                ..quick(Test::UdpStream)
            },
        )
        .unwrap();
        assert!(
            udp.packets_received > 0 && udp.packets_received <= udp.packets_sent,
            "{udp:?}"
        );
        assert_eq!(udp.lost, udp.packets_sent - udp.packets_received);
    }

    #[test]
    fn request_response_tests_count_transactions() {
        let port = server();
        for test in [Test::TcpRr, Test::UdpRr, Test::TcpCrr] {
            let o = run(
                "127.0.0.1",
                port,
                &Spec {
                    req_size: 100,
                    rsp_size: 200,
                    ..quick(test)
                },
            )
            .unwrap();
            assert!(o.transactions > 10, "{test:?}: {o:?}");
            assert!(
                o.latency_p50_us > 0.0 && o.latency_p99_us >= o.latency_p50_us,
                "{o:?}"
            );
        }
    }

    #[test]
    fn cbr_is_paced_and_reported_per_second() {
        let port = server();
        let spec = Spec {
            seconds: 1.5,
            msg_size: 500,
            rate_bps: Some(4_000_000), // 1000 packets/s
            ..Spec::new(Test::Cbr)
        };
        let o = run("127.0.0.1", port, &spec).unwrap();
        // Paced, not flooded: about 1500 packets (sleep overshoot only slows it).
        assert!((1000..=1600).contains(&o.packets_sent), "{o:?}");
        assert!(o.per_second.len() >= 2, "{o:?}");
        // Per-second loss (by sequence number) agrees with the total (by
        // counts), and the first second was seen.
        assert_eq!(
            o.per_second.iter().map(|s| s.lost).sum::<u64>(),
            o.lost,
            "{o:?}"
        );
        assert!(o.per_second[0].packets > 0, "{o:?}");
        assert!(o.max_gap_ms > 0.0);
    }

    #[test]
    fn parallel_connections_add_up() {
        let port = server();
        let one = run("127.0.0.1", port, &quick(Test::TcpRr)).unwrap();
        let four = run_parallel("127.0.0.1", port, &quick(Test::TcpRr), 4).unwrap();
        assert_eq!((one.connections, four.connections), (1, 4));
        assert!(four.transactions > 0 && four.trans_per_s > 0.0, "{four:?}");
        let streams = run_parallel("127.0.0.1", port, &quick(Test::TcpStream), 3).unwrap();
        assert_eq!(streams.bytes_received, streams.bytes_sent);
        // The interval report sums the connections' seconds.
        assert_eq!(
            streams.per_second.iter().map(|s| s.bytes).sum::<u64>(),
            streams.bytes_received,
            "{streams:?}"
        );
        assert!(run_parallel("127.0.0.1", port, &quick(Test::TcpRr), 65).is_err());
    }

    #[test]
    fn many_connections_reconnect_and_every_byte_arrives() {
        let port = server();
        // 8 connections, each closed after 5 messages and replaced.
        let spec = Spec {
            msg_size: 1000,
            conns: 8,
            reconnect: Some(5),
            ..quick(Test::TcpStream)
        };
        let o = run_parallel("127.0.0.1", port, &spec, 2).unwrap();
        assert_eq!(o.connections, 16);
        assert!(o.bytes_sent > 0);
        assert_eq!(o.bytes_received, o.bytes_sent, "{o:?}");
        // Every connection the clients opened was accepted, and each carried
        // at most 5 whole messages.
        assert_eq!(o.accepted, o.connects, "{o:?}");
        assert!(o.connects > 16, "no reconnects: {o:?}");
        assert!(o.packets_sent <= 5 * o.connects, "{o:?}");
        assert!(o.packets_sent >= 5 * (o.connects - 16), "{o:?}");
        // Many connections without reconnecting: only the first ones.
        let many = Spec {
            conns: 4,
            ..quick(Test::TcpStream)
        };
        let o = run("127.0.0.1", port, &many).unwrap();
        assert_eq!((o.connects, o.accepted), (4, 4));
        assert_eq!(o.bytes_received, o.bytes_sent);
        // Only TCP_STREAM runs several connections.
        let rr = Spec {
            conns: 2,
            ..quick(Test::TcpRr)
        };
        let e = run("127.0.0.1", port, &rr).unwrap_err();
        assert!(
            matches!(e, PerfError::Spec(SpecError::ManyConnectionsNotStream)),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "several connections and reconnecting are TCP_STREAM's"
        );
    }

    #[test]
    fn bad_specs_are_refused_by_the_server_too() {
        let port = server();
        // The client checks first; a hand-made bad spec reaches the server.
        let control = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let bad = Spec {
            msg_size: 0,
            ..quick(Test::UdpStream)
        };
        send_line(&control, &bad).unwrap();
        let reply = line(&mut BufReader::new(control)).unwrap();
        assert_eq!(
            reply.trim(),
            r#"{"error":"message sizes must be 1..=65507 bytes"}"#
        );
        let e = run("127.0.0.1", port, &bad).unwrap_err();
        assert!(
            matches!(e, PerfError::Spec(SpecError::MessageSize { max: 65_507 })),
            "{e:?}"
        );
        // Nothing listening: a clear error.
        let e = run("127.0.0.1", 1, &quick(Test::TcpRr)).unwrap_err();
        assert!(matches!(e, PerfError::Connect { .. }), "{e:?}");
        assert!(e.to_string().contains("flowsec perf server"), "{e}");
    }
}
