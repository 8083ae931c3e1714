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
//!
//! `unsafe` is denied here except in `sys`, the few libc calls std has
//! no safe form of (poll(2), setsockopt(2) of the socket buffers), each
//! with a `// SAFETY:` line.
#![deny(unsafe_code)]

mod client;
mod cpu;
mod search;
mod server;
mod spec;
mod sys;

pub use client::{run, run_parallel};
pub use cpu::CpuUse;
pub use search::{max_rate, ping, Delivery, MaxRate, PingRow, Probe};
pub use server::{serve, serve_one, DEFAULT_PORT};
pub use spec::{Outcome, Payload, Second, Spec, Test};
pub(crate) use sys::{poll, pollfd};

mod error;

pub use error::{PerfError, SpecError, Thread};
