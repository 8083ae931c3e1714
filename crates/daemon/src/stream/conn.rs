//! One TCP connection of RFC 9329: its socket, its TLS session if any, the
//! frames read out of it and the bytes waiting to be written.

use std::cell::Cell;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use flowsec_ike::Transport;
use flowsec_wire::tcp_encap::{Deframer, PREFIX};

use super::tls::TlsConfigs;
use crate::channels::ConnId;

/// What rustls may hold of a connection's output before its peer has
/// authenticated (issue 29 item 2), and after; the rest waits in
/// [`Conn::out`], which the stream thread bounds.
const TLS_LIMIT_UNPROVEN: usize = 16 << 10;
const TLS_LIMIT: usize = 256 << 10;
/// An emptied output buffer larger than this is given back: a burst does
/// not stay a connection's size for good.
const OUT_KEEP: usize = 64 << 10;

/// Where a connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Ours, connect(2) in progress.
    Connecting,
    /// Accepted; its first byte tells TLS (a handshake record, 0x16) from
    /// the plain prefix ("I").
    Sniffing,
    /// Carrying frames (TLS may still be shaking hands; frames wait).
    Open,
}

/// The end of a connection, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    /// The peer closed it, or it broke (reset, timeout).
    Broken,
    /// The TLS layer refused the peer's bytes.
    Tls,
    /// The stream's framing is broken (bad prefix, a length of 0 or 1).
    Framing(flowsec_wire::tcp_encap::StreamError),
}

pub struct Conn {
    pub id: ConnId,
    pub sock: TcpStream,
    /// What IKE calls its two ends: (our address, port 0) and the peer's
    /// listening address on a connection we opened; (our address and
    /// listening port, the peer's address and port) on one we accepted.
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub originated: bool,
    pub phase: Phase,
    /// TCP or TLS (an accepted one: known once sniffed).
    pub transport: Transport,
    tls: Option<rustls::Connection>,
    pub rx: Deframer,
    /// Framed bytes not yet taken by the socket (or by TLS).
    pub out: Vec<u8>,
    /// TLS records rustls holds, not yet written (as of the last read or
    /// flush).
    tls_held: usize,
    /// Left unread last loop: its output backed up (counted once per
    /// pause).
    pub read_paused: Cell<bool>,
    /// When it was opened (`now` of the daemon's clock).
    pub since: Duration,
}

impl Conn {
    /// A connection we open: the prefix is its first bytes (inside TLS
    /// with `tls`, RFC 9329 §4).
    pub fn originate(
        id: ConnId,
        sock: TcpStream,
        local: SocketAddr,
        remote: SocketAddr,
        transport: Transport,
        tls: &TlsConfigs,
        now: Duration,
    ) -> io::Result<Conn> {
        let tls = match transport {
            Transport::Tls => {
                let name = rustls::pki_types::ServerName::IpAddress(remote.ip().into());
                let c = rustls::ClientConnection::new(Arc::clone(&tls.client), name)
                    .map_err(io::Error::other)?;
                // Ours: its peer is the one we chose to talk to.
                Some(limited(c.into(), TLS_LIMIT))
            }
            _ => None,
        };
        Ok(Conn {
            id,
            sock,
            local,
            remote,
            originated: true,
            phase: Phase::Connecting,
            transport,
            tls,
            rx: Deframer::originator(),
            out: PREFIX.to_vec(),
            tls_held: 0,
            read_paused: Cell::new(false),
            since: now,
        })
    }

    /// A connection we accepted: the prefix must come first.
    pub fn accepted(
        id: ConnId,
        sock: TcpStream,
        (local, remote): (SocketAddr, SocketAddr),
        now: Duration,
    ) -> Conn {
        Conn {
            id,
            sock,
            local,
            remote,
            originated: false,
            phase: Phase::Sniffing,
            transport: Transport::Tcp,
            tls: None,
            rx: Deframer::responder(),
            out: Vec::new(),
            tls_held: 0,
            read_paused: Cell::new(false),
            since: now,
        }
    }

    /// The output it holds: framed bytes waiting, and TLS records rustls
    /// has not written yet (issue 29 item 2: what a peer that does not
    /// read makes us keep).
    pub fn queued(&self) -> usize {
        self.out.len() + self.tls_held
    }

    /// Its peer authenticated (IKE): rustls may hold more of its output.
    pub fn proven(&mut self) {
        if let Some(t) = &mut self.tls {
            t.set_buffer_limit(Some(TLS_LIMIT));
        }
    }

    /// Whether to poll it for writing: while connecting, or with bytes
    /// the socket will take (during a TLS handshake only TLS's own: the
    /// frames wait for it, and a stalled one must not spin the loop).
    pub fn wants_write(&self) -> bool {
        match (&self.tls, self.phase) {
            (_, Phase::Connecting) => true,
            (_, Phase::Sniffing) => false,
            (None, Phase::Open) => !self.out.is_empty(),
            (Some(t), Phase::Open) => {
                t.wants_write() || (!t.is_handshaking() && !self.out.is_empty())
            }
        }
    }

    /// A TLS handshake is under way.
    pub fn handshaking(&self) -> bool {
        self.tls.as_ref().is_some_and(|t| t.is_handshaking())
    }

    /// connect(2) finished (writable): open, or why not.
    pub fn connected(&mut self) -> Result<(), Closed> {
        match self.sock.take_error() {
            Ok(None) => {
                self.phase = Phase::Open;
                Ok(())
            }
            _ => Err(Closed::Broken),
        }
    }

    /// Read what the socket has (at most `budget` bytes, so one busy
    /// connection does not starve the rest) into the deframer; with TLS,
    /// through it.
    pub fn read(
        &mut self,
        scratch: &mut [u8],
        budget: usize,
        tls: &TlsConfigs,
    ) -> Result<(), Closed> {
        let mut taken = 0;
        while taken < budget {
            // No more than the budget: what is read stays in the
            // deframer (its buffer keeps its size) until its frames go.
            let want = (budget - taken).min(scratch.len());
            let n = match self.sock.read(&mut scratch[..want]) {
                Ok(0) => return Err(Closed::Broken),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return Err(Closed::Broken),
            };
            taken += n;
            if self.phase == Phase::Sniffing {
                self.phase = Phase::Open;
                // RFC 9329 Appendix A: TLS around the stream; the prefix
                // then comes inside it.
                if scratch[0] == 0x16 {
                    let s = rustls::ServerConnection::new(Arc::clone(&tls.server))
                        .map_err(|_| Closed::Tls)?;
                    self.tls = Some(limited(s.into(), TLS_LIMIT_UNPROVEN));
                    self.transport = Transport::Tls;
                }
            }
            match &mut self.tls {
                None => self.rx.feed(&scratch[..n]),
                Some(t) => {
                    let mut wire = &scratch[..n];
                    while !wire.is_empty() {
                        if t.read_tls(&mut wire).map_err(|_| Closed::Tls)? == 0 {
                            return Err(Closed::Tls);
                        }
                        let io = t.process_new_packets().map_err(|_| Closed::Tls)?;
                        self.tls_held = io.tls_bytes_to_write();
                        plain_into(t, &mut self.rx)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Write what waits, without blocking; what the socket does not take
    /// stays for the next time.
    pub fn flush(&mut self) -> Result<(), Closed> {
        if self.phase != Phase::Open {
            return Ok(());
        }
        match &mut self.tls {
            None => {
                let mut done = 0;
                while done < self.out.len() {
                    match self.sock.write(&self.out[done..]) {
                        Ok(0) => return Err(Closed::Broken),
                        Ok(n) => done += n,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(_) => return Err(Closed::Broken),
                    }
                }
                self.out.drain(..done);
            }
            Some(t) => {
                loop {
                    if !self.out.is_empty() {
                        // Up to the session's buffer limit; the rest waits.
                        let n = t.writer().write(&self.out).map_err(|_| Closed::Tls)?;
                        self.out.drain(..n);
                    }
                    if !t.wants_write() {
                        break;
                    }
                    match t.write_tls(&mut self.sock) {
                        Ok(_) => {}
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(_) => return Err(Closed::Broken),
                    }
                }
                // No new records: this only says what rustls holds.
                let io = t.process_new_packets().map_err(|_| Closed::Tls)?;
                self.tls_held = io.tls_bytes_to_write();
            }
        }
        if self.out.is_empty() && self.out.capacity() > OUT_KEEP {
            self.out = Vec::new();
        }
        Ok(())
    }
}

/// A TLS session whose output buffer holds at most `limit` bytes: what
/// does not fit waits in [`Conn::out`], which is bounded.
fn limited(mut c: rustls::Connection, limit: usize) -> rustls::Connection {
    c.set_buffer_limit(Some(limit));
    c
}

/// Move the decrypted bytes of `t` into the deframer.
fn plain_into(t: &mut rustls::Connection, rx: &mut Deframer) -> Result<(), Closed> {
    let mut buf = [0u8; 16 << 10];
    loop {
        match t.reader().read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => rx.feed(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            // The peer's close_notify then EOF, or a truncated stream.
            Err(_) => return Err(Closed::Broken),
        }
    }
}
