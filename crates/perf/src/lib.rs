//! `flowsec perf`: the lab's traffic tool, with netperf's test names and
//! result names so that a reader of the studies recognises them.
//!
//! A server (`flowsec perf server`, control port 12865 like netserver)
//! and a client (`flowsec perf client -H HOST -t TEST`). Each test opens a
//! control connection that carries one JSON line each way at the start
//! (the [`Spec`], then the data port) and at the end (what the client sent,
//! then what the server saw), so loss is measured where the packets arrive.
//!
//! Tests: `TCP_STREAM`, `UDP_STREAM`, `TCP_RR`, `UDP_RR`, `TCP_CRR` and
//! `CBR` (a paced UDP stream with sequence numbers and send times, reported
//! per second: received, lost, reordered, longest gap); made of those,
//! `MAXRATE` (the highest loss-free CBR rate) and `PING` (RTT per payload
//! size).

mod client;
mod cpu;
mod search;
mod server;
mod spec;

pub use client::{run, run_parallel};

/// A `pollfd` asking for `events` on `fd`.
pub(crate) fn pollfd(fd: std::os::fd::RawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

/// poll(2) on `fds` for at most `timeout` (the ready count; 0 on timeout,
/// negative on error, as poll returns).
pub(crate) fn poll(fds: &mut [libc::pollfd], timeout: std::time::Duration) -> i32 {
    let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: `fds` is a valid, exclusively borrowed array of fds.len()
    // pollfds for the duration of the call.
    #[allow(unsafe_code)]
    unsafe {
        libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms)
    }
}
pub use cpu::CpuUse;
pub use search::{max_rate, ping, Delivery, MaxRate, PingRow, Probe};
pub use server::{serve, serve_one, DEFAULT_PORT};
pub use spec::{Outcome, Payload, Second, Spec, Test};

mod error;

pub use error::{PerfError, SpecError, Thread};
