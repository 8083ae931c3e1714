//! The `--metrics` listener, on a thread of its own (`flowsec-metrics`),
//! so that nothing the control thread does ever waits on a client (a
//! client that trickles its request, or never reads the answer, used to
//! hold the control loop, and IKE, DPD, `ctl` and the sequence
//! reservations with it, for minutes):
//!
//! ```text
//! metrics thread:  accept → read the request (REQUEST_TIME in all) → judge
//!                  → ask for a page (the control thread's eventfd) and wait
//!                    up to FRESH_WAIT, else take the last one published
//!                  → write the answer (within the same REQUEST_TIME) → close
//! control thread:  eventfd readable → render the page → publish it
//!                  (swapped in under a lock held by the other side only to
//!                  copy a pointer; no I/O under it) → notify
//! ```
//!
//! One client at a time: a slow one delays another scrape by at most
//! [`REQUEST_TIME`], and the control thread not at all. It renders only
//! when a scrape asks, once per turn of its loop however many ask.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::request::{self, Verdict};
use crate::sys;

/// How long one client has for its whole request and the whole answer.
pub const REQUEST_TIME: Duration = Duration::from_secs(2);
/// How long a scrape waits for the control thread to publish a page
/// before it gets the last one (the loop turns at least every 200 ms,
/// unless a reload or a Diffie-Hellman holds it).
pub const FRESH_WAIT: Duration = Duration::from_secs(1);
/// A page rendered less than this long ago is served again without
/// asking the control thread (our tuning: Prometheus scrapes every 15 s or
/// more; the counters of one second ago are fresh).
pub const REUSE_FOR: Duration = Duration::from_secs(1);
/// The most of a request read (its head is all that matters).
const REQUEST_MAX: usize = 4096;
/// How often the thread looks at its stop flag while no client comes.
const POLL_MS: i32 = 200;

/// The counters of the metrics thread (`flowsec ctl stats`, "metrics";
/// `flowsec_metrics_events_total`).
macro_rules! exporter_counters {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// What the metrics thread counted.
        #[derive(Debug, Default)]
        pub struct ExporterCounters {
            $($(#[$doc])* pub $name: AtomicU64,)*
        }

        impl ExporterCounters {
            /// Every counter by name.
            pub fn named(&self) -> Vec<(&'static str, u64)> {
                vec![$((stringify!($name), self.$name.load(Ordering::Relaxed))),*]
            }
        }
    };
}

exporter_counters! {
    /// Pages served (200).
    served,
    /// Pages served that the control thread had published before the
    /// scrape (it did not publish a newer one within [`FRESH_WAIT`]), or
    /// 503 when it had published none yet.
    stale,
    /// Requests refused with 421: `Host` was a name, not a literal IP
    /// address (DNS rebinding).
    refused_host,
    /// Requests refused with 400 (not HTTP/1.x, `Host` missing in
    /// HTTP/1.1 or repeated).
    bad_request,
    /// Requests for another path or method (404).
    not_found,
    /// Clients dropped: their request or the answer took more than
    /// [`REQUEST_TIME`], or the connection broke.
    too_slow,
}

/// The `--metrics` listening socket, not yet served.
pub struct Exporter {
    listener: TcpListener,
}

impl Exporter {
    /// Listen on `addr` (non-blocking), marked like flowsec's own sockets
    /// so that answers never enter the tunnel.
    pub fn bind(addr: SocketAddr) -> io::Result<Exporter> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let _ = crate::sys::set_mark(listener.as_fd(), crate::routes::BYPASS_MARK);
        Ok(Exporter { listener })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serve on a thread of its own; the control thread's end is the
    /// [`Publisher`] (which stops the thread when dropped).
    pub fn spawn(self) -> io::Result<Publisher> {
        let shared = Arc::new(Shared {
            page: Mutex::new(Page::default()),
            published: Condvar::new(),
            wake: sys::eventfd()?,
            stop: AtomicBool::new(false),
            counters: ExporterCounters::default(),
        });
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("flowsec-metrics".into())
            .spawn(move || serve_clients(&self.listener, &theirs))?;
        Ok(Publisher {
            shared,
            thread: Some(thread),
        })
    }
}

/// The control thread's end: a descriptor that is readable while a scrape
/// waits for a page, and the page published.
pub struct Publisher {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Publisher {
    /// Readable while a scrape waits for a page: then [`Publisher::publish`].
    pub fn fd(&self) -> RawFd {
        self.shared.wake.as_raw_fd()
    }

    /// Render the page and hand it to the metrics thread (never waits on
    /// a client: the lock is held by the other side only to copy a
    /// pointer).
    pub fn publish(&self, render: impl FnOnce() -> String) {
        sys::clear_wake(self.shared.wake.as_fd());
        let text: Arc<str> = render().into();
        {
            let mut page = self.shared.lock();
            page.text = Some(text);
            page.generation += 1;
            page.at = Some(Instant::now());
        }
        self.shared.published.notify_all();
    }

    /// What the metrics thread counted.
    pub fn counters(&self) -> &ExporterCounters {
        &self.shared.counters
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What both threads share.
struct Shared {
    page: Mutex<Page>,
    /// Notified when a page is published.
    published: Condvar,
    /// The eventfd the control thread polls: a scrape waits.
    wake: OwnedFd,
    stop: AtomicBool,
    counters: ExporterCounters,
}

/// The page last published, and how many have been.
#[derive(Default)]
struct Page {
    text: Option<Arc<str>>,
    generation: u64,
    /// When it was rendered.
    at: Option<Instant>,
}

impl Shared {
    /// The page, even if a thread panicked holding it (a pointer and a
    /// number: nothing half-written).
    fn lock(&self) -> MutexGuard<'_, Page> {
        self.page.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ask the control thread for a page and wait up to [`FRESH_WAIT`]
    /// for it; the page (the last one if none came) and whether it is new.
    /// A page rendered less than [`REUSE_FOR`] ago is served as it is: a
    /// client scraping in a loop cannot keep the control thread (and the
    /// workers it asks) rendering.
    fn fresh_page(&self) -> (Option<Arc<str>>, bool) {
        let asked = {
            let p = self.lock();
            if p.at.is_some_and(|t| t.elapsed() < REUSE_FOR) {
                return (p.text.clone(), true);
            }
            p.generation
        };
        sys::wake(self.wake.as_fd());
        let (page, waited) = self
            .published
            .wait_timeout_while(self.lock(), FRESH_WAIT, |p| p.generation == asked)
            .unwrap_or_else(PoisonError::into_inner);
        (page.text.clone(), !waited.timed_out())
    }
}

/// The metrics thread: accept clients one at a time until told to stop.
fn serve_clients(listener: &TcpListener, shared: &Shared) {
    let fd = [listener.as_raw_fd()];
    let mut ready = [false];
    while !shared.stop.load(Ordering::Acquire) {
        if sys::poll_readable(&fd, POLL_MS, &mut ready).is_err() {
            std::thread::sleep(Duration::from_millis(POLL_MS as u64));
            continue;
        }
        while let Ok((client, _)) = listener.accept() {
            if answer(client, shared).is_err() {
                shared.counters.too_slow.fetch_add(1, Ordering::Relaxed);
            }
            if shared.stop.load(Ordering::Acquire) {
                return;
            }
        }
    }
}

/// One request and its answer (HTTP/1.0: the connection closes), all
/// within [`REQUEST_TIME`].
fn answer(mut client: TcpStream, shared: &Shared) -> io::Result<()> {
    let deadline = Instant::now() + REQUEST_TIME;
    client.set_nonblocking(false)?;
    let head = read_head(&mut client, deadline)?;
    let c = &shared.counters;
    let count = |n: &AtomicU64| n.fetch_add(1, Ordering::Relaxed);
    let page;
    let (status, ctype, body): (&str, &str, &[u8]) = match request::judge(&head) {
        Verdict::Page => {
            let fresh;
            (page, fresh) = shared.fresh_page();
            if !fresh {
                count(&c.stale);
            }
            match &page {
                Some(text) => {
                    count(&c.served);
                    (
                        "200 OK",
                        "text/plain; version=0.0.4; charset=utf-8",
                        text.as_bytes(),
                    )
                }
                None => ("503 Service Unavailable", "text/plain", b"no page yet\n"),
            }
        }
        Verdict::NotFound => {
            count(&c.not_found);
            ("404 Not Found", "text/plain", b"try /metrics\n")
        }
        Verdict::ForeignHost => {
            count(&c.refused_host);
            (
                "421 Misdirected Request",
                "text/plain",
                b"name this page by its IP address, not a host name (DNS rebinding)\n",
            )
        }
        Verdict::Malformed => {
            count(&c.bad_request);
            (
                "400 Bad Request",
                "text/plain",
                b"an HTTP/1.x GET with one Host\n",
            )
        }
    };
    let head = format!(
        "HTTP/1.0 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    write_by(&mut client, head.as_bytes(), deadline)?;
    write_by(&mut client, body, deadline)
}

/// The time left until `deadline`, as a socket timeout; an error once it
/// has passed.
fn left(deadline: Instant) -> io::Result<Duration> {
    match deadline.checked_duration_since(Instant::now()) {
        Some(d) if !d.is_zero() => Ok(d),
        _ => Err(io::ErrorKind::TimedOut.into()),
    }
}

/// The request's head (up to the blank line, or [`REQUEST_MAX`] bytes, or
/// the client's end of sending), by `deadline`.
fn read_head(client: &mut TcpStream, deadline: Instant) -> io::Result<Vec<u8>> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < REQUEST_MAX {
        client.set_read_timeout(Some(left(deadline)?))?;
        let n = client.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    Ok(head)
}

/// All of `bytes`, by `deadline`.
fn write_by(client: &mut TcpStream, mut bytes: &[u8], deadline: Instant) -> io::Result<()> {
    while !bytes.is_empty() {
        client.set_write_timeout(Some(left(deadline)?))?;
        match client.write(bytes)? {
            0 => return Err(io::ErrorKind::WriteZero.into()),
            n => bytes = &bytes[n..],
        }
    }
    Ok(())
}
