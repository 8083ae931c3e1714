//! The server side (`flowsec perf server`, like netserver): one thread per
//! control connection, a fresh data socket per test on the address the
//! control connection reached.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::cpu::CpuMark;
use crate::spec::{Second, Spec, Test, MAX_CONNS};
use crate::{CpuUse, PerfError, Thread};

/// netserver's control port.
pub const DEFAULT_PORT: u16 = 12865;
/// CBR payloads start with the sequence number and the send time (µs
/// since the stream began), 8 bytes each, big-endian.
pub(crate) const CBR_HEADER: usize = 16;
/// The longest control line accepted.
const MAX_LINE: u64 = 64 * 1024;
/// How often blocking data loops look at the stop flag.
const TICK: Duration = Duration::from_millis(50);
/// Sequence numbers tracked per second for CBR loss accounting, at most.
const MAX_SECONDS: usize = 4 * 3600;

/// What the client says at the end.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Done {
    pub packets_sent: u64,
    /// CBR: packets sent in each second of the test.
    #[serde(default)]
    pub sent_per_second: Vec<u64>,
}

/// What the server saw.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Seen {
    pub bytes: u64,
    pub packets: u64,
    /// From the first to the last byte or packet received.
    pub elapsed_s: f64,
    pub reordered: u64,
    pub max_gap_ms: f64,
    /// CBR: the most any packet waited beyond the fastest one's delay.
    #[serde(default)]
    pub max_queue_ms: f64,
    pub per_second: Vec<Second>,
    /// TCP_STREAM: data connections accepted.
    #[serde(default)]
    pub accepted: u64,
    /// UDP: datagrams the receiving socket dropped, its buffer full.
    #[serde(default)]
    pub socket_drops: u64,
    pub cpu: CpuUse,
    pub error: Option<String>,
    /// CBR's count by sequence number (the server's own use).
    #[serde(skip)]
    pub(crate) tally: CbrTally,
}

/// Tests served at once, at most; more are refused.
pub const MAX_TESTS: usize = 64;

/// Serve tests forever, a thread per control connection (at most
/// `MAX_TESTS` at once: a connection beyond that is told so and closed).
pub fn serve(listener: TcpListener) -> std::io::Result<()> {
    let active = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    loop {
        let (control, peer) = match listener.accept() {
            Ok(c) => c,
            // Out of descriptors, a connection reset before accept: the
            // server goes on (after a breath, not to spin).
            Err(e) => {
                eprintln!("flowsec perf server: accept: {e}");
                thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        if active.fetch_add(1, Ordering::SeqCst) >= MAX_TESTS {
            active.fetch_sub(1, Ordering::SeqCst);
            let _ = send_line(&control, &serde_json::json!({ "error": "server busy" }));
            continue;
        }
        let slot = Slot(Arc::clone(&active));
        thread::spawn(move || {
            let _slot = slot;
            if let Err(e) = serve_one(control) {
                eprintln!("flowsec perf server: {peer}: {e}");
            }
        });
    }
}

/// One of the [`MAX_TESTS`] places, given back however the test ends.
struct Slot(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Run the one test a control connection asks for.
pub fn serve_one(control: TcpStream) -> Result<(), PerfError> {
    control.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(control.try_clone()?);
    let spec: Spec = serde_json::from_str(&read_line(&mut reader)?)?;
    if let Err(e) = spec.check() {
        send_line(&control, &serde_json::json!({ "error": e.to_string() }))?;
        return Err(e.into());
    }
    let local = control.local_addr()?.ip();
    let stop = Arc::new(AtomicBool::new(false));
    let mark = CpuMark::now();
    let (port, worker) = start_data(&spec, local, Arc::clone(&stop))?;
    // From here on the data thread is stopped and joined however this
    // function ends (a client that goes away mid-test included).
    let data = DataThread {
        stop,
        worker: Some(worker),
    };
    send_line(&control, &serde_json::json!({ "port": port }))?;
    // The test runs; the client says when it is over.
    control.set_read_timeout(Some(Duration::from_secs_f64(spec.seconds + 60.0)))?;
    let done: Done = serde_json::from_str(&read_line(&mut reader)?)?;
    // Let the last packets arrive.
    thread::sleep(Duration::from_millis(100));
    let mut seen = data.finish();
    if spec.test == Test::Cbr {
        let lost = seen.tally.lost(&done.sent_per_second);
        if seen.per_second.len() < lost.len() {
            seen.per_second.resize(lost.len(), Second::default());
        }
        for (sec, lost) in seen.per_second.iter_mut().zip(lost) {
            sec.lost = lost;
        }
    }
    seen.cpu = mark.since();
    send_line(&control, &seen)
}

/// A test's data thread, stopped and joined when dropped.
struct DataThread {
    stop: Arc<AtomicBool>,
    worker: Option<Worker>,
}

impl DataThread {
    /// Stop it and take what it saw.
    fn finish(mut self) -> Seen {
        self.stop.store(true, Ordering::SeqCst);
        let worker = self.worker.take();
        worker
            .map_or(Ok(Ok(Seen::default())), |w| w.join())
            .unwrap_or(Err(PerfError::Panicked(Thread::Data)))
            .unwrap_or_else(|e| Seen {
                error: Some(e.to_string()),
                ..Seen::default()
            })
    }
}

impl Drop for DataThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

fn read_line(reader: &mut impl BufRead) -> Result<String, PerfError> {
    let mut line = String::new();
    reader.take(MAX_LINE).read_line(&mut line)?;
    if line.is_empty() {
        return Err(PerfError::ClientClosed);
    }
    Ok(line)
}

pub(crate) fn send_line(mut stream: &TcpStream, value: &impl Serialize) -> Result<(), PerfError> {
    let mut line = serde_json::to_vec(value)?;
    line.push(b'\n');
    stream.write_all(&line)?;
    Ok(())
}

type Worker = thread::JoinHandle<Result<Seen, PerfError>>;

/// Bind the data socket for `spec` and start the thread that serves it.
fn start_data(
    spec: &Spec,
    local: IpAddr,
    stop: Arc<AtomicBool>,
) -> Result<(u16, Worker), PerfError> {
    let spec = spec.clone();
    match spec.test {
        Test::TcpStream | Test::TcpRr | Test::TcpCrr => {
            let listener = TcpListener::bind(SocketAddr::new(local, 0))?;
            let port = listener.local_addr()?.port();
            let worker = thread::spawn(move || match spec.test {
                Test::TcpStream => tcp_sink(&listener, &spec, &stop),
                Test::TcpRr => tcp_rr(&listener, &spec, &stop),
                _ => tcp_crr(&listener, &spec, &stop),
            });
            Ok((port, worker))
        }
        Test::UdpStream | Test::UdpRr | Test::Cbr => {
            let socket = UdpSocket::bind(SocketAddr::new(local, 0))?;
            socket.set_read_timeout(Some(TICK))?;
            crate::client::set_buffers(&socket, spec.remote_buf);
            let port = socket.local_addr()?.port();
            let worker = thread::spawn(move || match spec.test {
                Test::UdpRr => udp_rr(&socket, &spec, &stop),
                _ => udp_sink(&socket, &spec, &stop),
            });
            Ok((port, worker))
        }
    }
}

/// Accept the test's data connection (or give up when stopped), waiting
/// in poll(2) so that a connection is taken the moment it arrives.
fn accept(
    listener: &TcpListener,
    buffers: Option<usize>,
    stop: &AtomicBool,
) -> Result<Option<TcpStream>, PerfError> {
    while !stop.load(Ordering::SeqCst) {
        if crate::poll(
            &mut [crate::pollfd(listener.as_raw_fd(), libc::POLLIN)],
            TICK,
        ) <= 0
        {
            continue;
        }
        let (s, _) = listener.accept()?;
        crate::client::set_buffers(&s, buffers);
        s.set_read_timeout(Some(TICK))?;
        // A peer that stops reading cannot hold the thread.
        s.set_write_timeout(Some(Duration::from_secs(2)))?;
        return Ok(Some(s));
    }
    Ok(None)
}

fn timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

fn tcp_sink(listener: &TcpListener, spec: &Spec, stop: &AtomicBool) -> Result<Seen, PerfError> {
    if spec.many_connections() {
        return tcp_sink_many(listener, spec, stop);
    }
    let mut seen = Seen::default();
    let Some(mut s) = accept(listener, spec.remote_buf, stop)? else {
        return Ok(seen);
    };
    seen.accepted = 1;
    let mut buf = vec![0u8; spec.msg_size.max(64 * 1024)];
    let mut span = Span::default();
    while !stop.load(Ordering::SeqCst) {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => span.received(&mut seen, n),
            Err(e) if timed_out(&e) && !stop.load(Ordering::SeqCst) => {}
            Err(e) if timed_out(&e) => break,
            Err(e) => return Err(e.into()),
        }
    }
    seen.elapsed_s = span.seconds();
    Ok(seen)
}

/// From the first byte received to the last: the receiver's clock for
/// the per-second (interval) report.
#[derive(Default)]
struct Span {
    first: Option<Instant>,
    last: Option<Instant>,
}

impl Span {
    /// `n` bytes arrived now.
    fn received(&mut self, seen: &mut Seen, n: usize) {
        let now = Instant::now();
        let start = *self.first.get_or_insert(now);
        self.last = Some(now);
        seen.bytes += n as u64;
        let second = (now.duration_since(start).as_secs() as usize).min(MAX_SECONDS - 1);
        if seen.per_second.len() <= second {
            seen.per_second.resize(second + 1, Second::default());
        }
        seen.per_second[second].bytes += n as u64;
    }

    fn seconds(&self) -> f64 {
        match (self.first, self.last) {
            (Some(f), Some(l)) => l.duration_since(f).as_secs_f64(),
            _ => 0.0,
        }
    }
}

/// TCP_STREAM with `--conns` or `--reconnect`: every connection the
/// client opens during the test, read in one poll(2) loop (at most
/// [`MAX_CONNS`] open at once; more wait in the listen backlog), each
/// closed at its end of stream.
fn tcp_sink_many(
    listener: &TcpListener,
    spec: &Spec,
    stop: &AtomicBool,
) -> Result<Seen, PerfError> {
    let mut seen = Seen::default();
    listener.set_nonblocking(true)?;
    let mut conns: Vec<TcpStream> = Vec::new();
    let mut buf = vec![0u8; spec.msg_size.clamp(64 * 1024, 1 << 20)];
    let mut span = Span::default();
    let mut fds: Vec<libc::pollfd> = Vec::with_capacity(MAX_CONNS + 1);
    while !stop.load(Ordering::SeqCst) {
        fds.clear();
        let listening = conns.len() < MAX_CONNS;
        fds.extend(
            conns
                .iter()
                .map(|c| crate::pollfd(c.as_raw_fd(), libc::POLLIN)),
        );
        if listening {
            fds.push(crate::pollfd(listener.as_raw_fd(), libc::POLLIN));
        }
        if crate::poll(&mut fds, TICK) <= 0 {
            continue;
        }
        // Read what is ready, walking backwards so that removing a closed
        // connection leaves the others' indices alone.
        for i in (0..conns.len()).rev() {
            if fds[i].revents == 0 {
                continue;
            }
            match conns[i].read(&mut buf) {
                Ok(0) => {
                    conns.swap_remove(i);
                }
                Ok(n) => span.received(&mut seen, n),
                Err(e) if timed_out(&e) => {}
                // A connection reset by the client ends that connection,
                // not the test.
                Err(_) => {
                    conns.swap_remove(i);
                }
            }
        }
        if listening && fds.last().is_some_and(|f| f.revents != 0) {
            loop {
                match listener.accept() {
                    Ok((s, _)) => {
                        crate::client::set_buffers(&s, spec.remote_buf);
                        s.set_nonblocking(true)?;
                        seen.accepted += 1;
                        conns.push(s);
                        if conns.len() >= MAX_CONNS {
                            break;
                        }
                    }
                    Err(e) if timed_out(&e) => break,
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }
    seen.elapsed_s = span.seconds();
    Ok(seen)
}

/// Read exactly `buf.len()` bytes; false at the end of the stream or when
/// stopped.
fn read_exact(s: &mut TcpStream, buf: &mut [u8], stop: &AtomicBool) -> Result<bool, PerfError> {
    let mut at = 0;
    while at < buf.len() {
        if stop.load(Ordering::SeqCst) {
            return Ok(false);
        }
        match s.read(&mut buf[at..]) {
            Ok(0) => return Ok(false),
            Ok(n) => at += n,
            Err(e) if timed_out(&e) && !stop.load(Ordering::SeqCst) => {}
            Err(e) if timed_out(&e) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(true)
}

fn tcp_rr(listener: &TcpListener, spec: &Spec, stop: &AtomicBool) -> Result<Seen, PerfError> {
    let mut seen = Seen::default();
    let Some(mut s) = accept(listener, spec.remote_buf, stop)? else {
        return Ok(seen);
    };
    let _ = s.set_nodelay(true);
    let (mut req, rsp) = (vec![0u8; spec.req_size], vec![0u8; spec.rsp_size]);
    while read_exact(&mut s, &mut req, stop)? {
        s.write_all(&rsp)?;
        seen.packets += 1;
        seen.bytes += req.len() as u64;
    }
    Ok(seen)
}

fn tcp_crr(listener: &TcpListener, spec: &Spec, stop: &AtomicBool) -> Result<Seen, PerfError> {
    let mut seen = Seen::default();
    let (mut req, rsp) = (vec![0u8; spec.req_size], vec![0u8; spec.rsp_size]);
    while let Some(mut s) = accept(listener, spec.remote_buf, stop)? {
        let _ = s.set_nodelay(true);
        if read_exact(&mut s, &mut req, stop)? {
            s.write_all(&rsp)?;
            seen.packets += 1;
            seen.bytes += req.len() as u64;
        }
        // The client closes first (its TIME_WAIT, not ours, as netperf).
        let mut rest = [0u8; 64];
        while !stop.load(Ordering::SeqCst) && matches!(s.read(&mut rest), Ok(n) if n > 0) {}
    }
    Ok(seen)
}

fn udp_rr(socket: &UdpSocket, spec: &Spec, stop: &AtomicBool) -> Result<Seen, PerfError> {
    let mut seen = Seen::default();
    let (mut req, mut rsp) = (vec![0u8; 65_536], vec![0u8; spec.rsp_size]);
    while !stop.load(Ordering::SeqCst) {
        match socket.recv_from(&mut req) {
            Ok((n, from)) => {
                seen.packets += 1;
                seen.bytes += n as u64;
                // The transaction id (the request's first 8 bytes) goes back,
                // so that a late answer is not taken for the next one.
                let id = n.min(8).min(rsp.len());
                rsp[..id].copy_from_slice(&req[..id]);
                let _ = socket.send_to(&rsp, from);
            }
            Err(e) if timed_out(&e) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(seen)
}

/// UDP_STREAM and CBR: count what arrives; CBR also per second, by
/// sequence number.
fn udp_sink(socket: &UdpSocket, spec: &Spec, stop: &AtomicBool) -> Result<Seen, PerfError> {
    let mut seen = Seen::default();
    let mut buf = vec![0u8; 65_536];
    let (mut first, mut last): (Option<Instant>, Option<Instant>) = (None, None);
    let cbr = spec.test == Test::Cbr;
    while !stop.load(Ordering::SeqCst) {
        let n = match socket.recv(&mut buf) {
            Ok(n) => n,
            Err(e) if timed_out(&e) => continue,
            Err(e) => return Err(e.into()),
        };
        let now = Instant::now();
        let start = *first.get_or_insert(now);
        seen.packets += 1;
        seen.bytes += n as u64;
        let second = (now.duration_since(start).as_secs() as usize).min(MAX_SECONDS - 1);
        if seen.per_second.len() <= second {
            seen.per_second.resize(second + 1, Second::default());
        }
        let gap_ms = last.map_or(0.0, |l| now.duration_since(l).as_secs_f64() * 1e3);
        last = Some(now);
        let sec = &mut seen.per_second[second];
        sec.packets += 1;
        sec.bytes += n as u64;
        sec.max_gap_ms = sec.max_gap_ms.max(gap_ms);
        seen.max_gap_ms = seen.max_gap_ms.max(gap_ms);
        if cbr && n >= CBR_HEADER {
            let seq = u64::from_be_bytes(buf[..8].try_into().expect("8 bytes"));
            let sent_us = u64::from_be_bytes(buf[8..16].try_into().expect("8 bytes"));
            let queued = seen
                .tally
                .queued_us(now.duration_since(start).as_micros() as u64, sent_us);
            seen.max_queue_ms = seen.max_queue_ms.max(queued as f64 / 1e3);
            if seen.tally.packet(seq, sent_us) == Some(true) {
                seen.reordered += 1;
                sec.reordered += 1;
            }
        }
    }
    seen.elapsed_s = match (first, last) {
        (Some(f), Some(l)) => l.duration_since(f).as_secs_f64(),
        _ => 0.0,
    };
    seen.socket_drops = socket_drops(socket);
    Ok(seen)
}

/// Datagrams `socket` itself dropped, its receive buffer full: the
/// "drops" column of its row in /proc/self/net/udp or udp6 (the kernel's
/// per-socket `sk_drops`, which `UdpRcvbufErrors` sums). Lost by the
/// receiver, not by the path; 0 if the row cannot be read.
fn socket_drops(socket: &UdpSocket) -> u64 {
    let link = std::fs::read_link(format!("/proc/self/fd/{}", socket.as_raw_fd()));
    let inode = link.ok().and_then(|l| {
        let l = l.to_string_lossy().into_owned();
        l.strip_prefix("socket:[")?
            .strip_suffix(']')?
            .parse::<u64>()
            .ok()
    });
    let Some(inode) = inode else {
        return 0;
    };
    ["/proc/self/net/udp", "/proc/self/net/udp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .find_map(|table| drops_of(&table, inode))
        .unwrap_or(0)
}

/// The drops column of the row with `inode` in a /proc/net/udp table
/// (columns: sl, local, remote, st, tx:rx queue, tr:when, retrnsmt, uid,
/// timeout, inode, ref, pointer, drops).
fn drops_of(table: &str, inode: u64) -> Option<u64> {
    table.lines().skip(1).find_map(|row| {
        let cols: Vec<&str> = row.split_whitespace().collect();
        (cols.get(9)?.parse::<u64>().ok()? == inode).then(|| cols.get(12)?.parse().ok())?
    })
}

/// CBR accounting by sequence number: each packet counts once (a
/// duplicate is not a second arrival), in the second it was *sent* (from
/// the send time it carries), so that with the sender's own count per
/// second the loss of every second is exact: what was sent then and never
/// arrived.
#[derive(Debug, Clone, Default)]
pub(crate) struct CbrTally {
    /// One bit per sequence number seen (up to [`MAX_TRACKED`]).
    seen: Vec<u64>,
    /// Distinct packets received, by the second they were sent in.
    pub received: Vec<u64>,
    highest: Option<u64>,
    pub duplicates: u64,
    /// The smallest (arrival time − send time) seen, µs: the path's delay
    /// plus the clocks' offset, without queueing.
    fastest: Option<i64>,
}

/// Sequence numbers tracked for duplicates: 2^27 bits, 16 MB at most.
const MAX_TRACKED: u64 = 1 << 27;

impl CbrTally {
    /// Count a packet; `Some(reordered)` if it is new, `None` for a
    /// duplicate.
    pub(crate) fn packet(&mut self, seq: u64, sent_us: u64) -> Option<bool> {
        if seq < MAX_TRACKED {
            let (word, bit) = ((seq / 64) as usize, seq % 64);
            if self.seen.len() <= word {
                self.seen.resize(word + 1, 0);
            }
            if self.seen[word] & (1 << bit) != 0 {
                self.duplicates += 1;
                return None;
            }
            self.seen[word] |= 1 << bit;
        }
        let second = ((sent_us / 1_000_000) as usize).min(MAX_SECONDS - 1);
        if self.received.len() <= second {
            self.received.resize(second + 1, 0);
        }
        self.received[second] += 1;
        let reordered = self.highest.is_some_and(|h| seq < h);
        if !reordered {
            self.highest = Some(seq);
        }
        Some(reordered)
    }

    /// How long a packet sent at `sent_us` (the sender's clock) and
    /// arriving at `arrival_us` (ours) waited beyond the fastest packet so
    /// far, µs: queueing on the path. The clocks' offset cancels out; a
    /// path that cannot keep up with the rate shows it growing through the
    /// test even where nothing is lost (a deep queue delivers everything,
    /// seconds late).
    pub(crate) fn queued_us(&mut self, arrival_us: u64, sent_us: u64) -> u64 {
        let offset = arrival_us as i64 - sent_us.min(i64::MAX as u64) as i64;
        let fastest = *self
            .fastest
            .insert(self.fastest.map_or(offset, |f| f.min(offset)));
        (offset - fastest) as u64
    }

    /// Per second sent, what never arrived.
    pub(crate) fn lost(&self, sent_per_second: &[u64]) -> Vec<u64> {
        sent_per_second
            .iter()
            .enumerate()
            .map(|(s, &sent)| sent.saturating_sub(self.received.get(s).copied().unwrap_or(0)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;

    #[test]
    fn cbr_counts_each_packet_once_in_the_second_it_was_sent() {
        let mut t = CbrTally::default();
        // Second 0: seqs 0..10, 3 lost; second 1: 10..20, one late (sent
        // in second 1, arriving after second 2's first), one duplicate.
        for seq in (0..10).filter(|s| ![2, 5, 7].contains(s)) {
            assert_eq!(t.packet(seq, seq * 90_000), Some(false));
        }
        for seq in 10..19 {
            assert_eq!(t.packet(seq, 1_000_000 + seq * 1_000), Some(false));
        }
        assert_eq!(t.packet(20, 2_000_000), Some(false));
        assert_eq!(t.packet(19, 1_999_999), Some(true), "late: reordered");
        assert_eq!(
            t.packet(19, 1_999_999),
            None,
            "duplicate: not counted again"
        );
        assert_eq!(t.duplicates, 1);
        assert_eq!(t.lost(&[10, 10, 1]), vec![3, 0, 0]);
        // More sent than the tally knows of (a second with nothing
        // arriving), and never negative.
        assert_eq!(t.lost(&[7, 12, 1, 5]), vec![0, 2, 0, 5]);
    }

    #[test]
    fn a_full_receive_buffer_is_counted_as_the_sockets_own_drops() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        crate::client::set_buffers(&rx, Some(4096));
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let sent = 200;
        for _ in 0..sent {
            tx.send_to(&[7u8; 1000], rx.local_addr().unwrap()).unwrap();
        }
        // Loopback delivers at send: each datagram is queued or dropped.
        rx.set_nonblocking(true).unwrap();
        let mut got = 0;
        let mut buf = [0u8; 2000];
        while rx.recv(&mut buf).is_ok() {
            got += 1;
        }
        assert!(got > 0 && got < sent, "a 4 KiB buffer holds some: {got}");
        assert_eq!(socket_drops(&rx), sent - got);
    }

    #[test]
    fn drops_are_read_from_the_sockets_row() {
        let table = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  123: 0100007F:A1B2 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 4242 2 0000000000000000 17
  124: 0100007F:A1B3 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 4243 2 0000000000000000 0
";
        assert_eq!(drops_of(table, 4242), Some(17));
        assert_eq!(drops_of(table, 4243), Some(0));
        assert_eq!(drops_of(table, 99), None);
        assert_eq!(drops_of("header only", 4242), None);
    }

    /// A client that goes away after getting its data port: the test's
    /// data socket is closed with it (it used to live on, its thread
    /// polling forever).
    #[test]
    fn a_client_that_leaves_mid_test_takes_the_test_with_it() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = thread::spawn(move || {
            let (control, _) = listener.accept().unwrap();
            serve_one(control)
        });
        let control = TcpStream::connect(addr).unwrap();
        let spec = Spec {
            seconds: 30.0,
            ..Spec::new(Test::UdpStream)
        };
        send_line(&control, &spec).unwrap();
        let mut reply = String::new();
        BufReader::new(&control).read_line(&mut reply).unwrap();
        let port: u16 = serde_json::from_str::<serde_json::Value>(&reply).unwrap()["port"]
            .as_u64()
            .unwrap() as u16;
        drop(control);
        assert!(
            server.join().unwrap().is_err(),
            "the test ends with its client"
        );
        // Nothing listens on the data port any more: the kernel refuses.
        let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
        probe.connect(("127.0.0.1", port)).unwrap();
        probe
            .set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        probe.send(b"x").unwrap();
        let err = probe.recv(&mut [0u8; 8]).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused, "{err}");
    }
}
