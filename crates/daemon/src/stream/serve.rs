//! The stream thread's connections, one at a time: opened (ours, RFC 9329
//! §6.1) or accepted (into a slot, `slots.rs`), read and their frames
//! handed on, written, closed, and swept once a second.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use flowsec_ipsec::UdpEndpoints;
use flowsec_wire::tcp_encap::StreamError;
use flowsec_wire::udp_encap::{classify, UdpEncap};

use super::conn::{Closed, Conn, Phase};
use super::slots::{Admit, Expiry};
use super::{
    Key, Streams, ACCEPT_PAUSE, QUIET_FOR, READ_BUDGET, READ_BUDGET_UNPROVEN, REDIAL_EVERY,
    REDIAL_IF_USED,
};
use crate::channels::{count, ConnId, Msg};
use crate::routes::BYPASS_MARK;
use crate::sys::tcp;

impl Streams {
    /// A new id for a connection.
    fn new_id(&mut self) -> ConnId {
        let id = self.next_id;
        self.next_id = id.next();
        id
    }

    /// A connection we open to `key` (ours to open: RFC 9329 §6.1, only
    /// the TCP Originator does), unless one was tried within
    /// [`REDIAL_EVERY`].
    pub(super) fn dial(&mut self, key: Key, now: Duration) -> Option<ConnId> {
        let d = self.dialed.get_mut(&key)?;
        if d.tried != Duration::ZERO && now < d.tried + REDIAL_EVERY {
            return None;
        }
        d.tried = now.max(Duration::from_nanos(1));
        let transport = d.transport;
        let id = self.new_id();
        let opened = tcp::tcp_connect(key.0, key.1, BYPASS_MARK).and_then(|sock| {
            let local = SocketAddr::new(key.0, 0);
            Conn::originate(id, sock, local, key.1, transport, &self.parts.tls, now)
        });
        match opened {
            Ok(c) => {
                self.conns.insert(id, c);
                self.names.insert(key, id);
                Some(id)
            }
            Err(e) => {
                count(&self.parts.queues.counters.connect_failed, 1);
                tracing::info!(target: "net", "tcp: connecting to {}: {e}", key.1);
                if let Some(d) = self.dialed.get_mut(&key) {
                    d.lost = true;
                }
                None
            }
        }
    }

    /// Accept what waits on listener `i`, each into a slot.
    pub(super) fn accept(&mut self, i: usize, now: Duration) {
        let port = self.parts.listeners[i].1;
        loop {
            let (sock, peer) = match self.parts.listeners[i].0.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    // EMFILE, ENFILE, ENOBUFS: try again in a while.
                    count(&self.parts.queues.counters.refused, 1);
                    self.accept_paused_until = now + ACCEPT_PAUSE;
                    return;
                }
            };
            let peer_ip = peer.ip().to_canonical();
            let local = sock
                .local_addr()
                .map(|a| SocketAddr::new(a.ip().to_canonical(), port));
            let Ok(local) = local else { continue };
            let remote = SocketAddr::new(peer_ip, peer.port());
            let key = (local.ip(), remote);
            // One of ours to the same address and port (the peer connects
            // from its listening port): refused, never replaced.
            if self.names.contains_key(&key) || sock.set_nonblocking(true).is_err() {
                count(&self.parts.queues.counters.refused, 1);
                continue;
            }
            match self.slots.admit(peer_ip) {
                Admit::Yes => {}
                Admit::Evict(oldest) => {
                    count(&self.parts.queues.counters.evicted, 1);
                    self.close(oldest, Closed::Broken);
                }
                Admit::PrefixFull | Admit::Full => {
                    count(&self.parts.queues.counters.refused, 1);
                    continue;
                }
            }
            let _ = sock.set_nodelay(true);
            count(&self.parts.queues.counters.accepted, 1);
            let id = self.new_id();
            self.slots.insert(id, peer_ip, now);
            self.names.insert(key, id);
            self.conns
                .insert(id, Conn::accepted(id, sock, (local, remote), now));
        }
    }

    /// A connection that poll(2) says is ready.
    pub(super) fn service(&mut self, id: ConnId, r: tcp::Ready, now: Duration) {
        let trusted = match self.conns.get(&id) {
            Some(c) => self.trusted(c),
            None => return,
        };
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        if c.phase == Phase::Connecting {
            if !(r.write || r.hup) {
                return;
            }
            if let Err(why) = c.connected() {
                count(&self.parts.queues.counters.connect_failed, 1);
                return self.close(id, why);
            }
            count(&self.parts.queues.counters.connected, 1);
            let key = (c.local.ip(), c.remote);
            if let Some(d) = self.dialed.get_mut(&key) {
                if std::mem::take(&mut d.lost) {
                    // RFC 9329 §6.1: IKE speaks first on the new one.
                    self.ike.reconnected(c.local, c.remote);
                }
            }
        }
        if r.read || r.hup {
            // An unauthenticated connection reads little: it holds at most
            // one partial frame until it has authenticated.
            let budget = match trusted {
                true => READ_BUDGET,
                false => READ_BUDGET_UNPROVEN,
            };
            if let Err(why) = c.read(&mut self.scratch, budget, &self.parts.tls) {
                // Frames read before the end still count.
                self.frames(id, now);
                return self.close(id, why);
            }
            self.frames(id, now);
        }
        if self.conns.contains_key(&id) {
            self.flush(id);
        }
    }

    /// Hand on the frames a connection has read.
    fn frames(&mut self, id: ConnId, now: Duration) {
        let counters = Arc::clone(&self.parts.queues.counters);
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        let workers = self.workers.len().max(1) as u32;
        let ignored_before = c.rx.empty;
        loop {
            let frame = match c.rx.next() {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) => return self.close(id, Closed::Framing(e)),
            };
            count(&counters.bytes_in, frame.len() as u64);
            self.slots.heard(id, now);
            match classify(frame) {
                Ok(UdpEncap::Ike(msg)) => {
                    count(&counters.ike_in, 1);
                    let ends = (c.local, c.remote);
                    self.ike.stream_message(id, c.transport, ends, msg);
                }
                Ok(UdpEncap::Esp(esp)) => {
                    count(&counters.esp_in, 1);
                    let spi = u32::from_be_bytes([esp[0], esp[1], esp[2], esp[3]]);
                    let from = UdpEndpoints {
                        local: c.local,
                        remote: c.remote,
                        tos: 0,
                    };
                    self.batches[(spi % workers) as usize].push((from, esp.to_vec()));
                }
                Ok(UdpEncap::NatKeepalive) => count(&counters.ignored, 1),
                Err(_) => count(&counters.bad_frame, 1),
            }
        }
        count(&counters.ignored, c.rx.empty - ignored_before);
    }

    /// The ESP read this loop, to the workers that own its SAs.
    pub(super) fn deliver(&mut self) {
        for (k, batch) in self.batches.iter_mut().enumerate() {
            if batch.is_empty() {
                continue;
            }
            let batch = std::mem::take(batch);
            let n = batch.len() as u64;
            if !self.workers[k].offer(Msg::Stream(batch)) {
                count(&self.parts.queues.counters.handoff_drops, n);
            }
        }
    }

    pub(super) fn flush(&mut self, id: ConnId) {
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        let before = c.out.len();
        let result = c.flush();
        let after = c.out.len();
        count(
            &self.parts.queues.counters.bytes_out,
            before.saturating_sub(after) as u64,
        );
        if let Err(why) = result {
            self.close(id, why);
        }
    }

    pub(super) fn close(&mut self, id: ConnId, why: Closed) {
        let Some(c) = self.conns.remove(&id) else {
            return;
        };
        let key = (c.local.ip(), c.remote);
        if self.names.get(&key) == Some(&id) {
            self.names.remove(&key);
        }
        self.slots.remove(id);
        let counters = &self.parts.queues.counters;
        count(&counters.closed, 1);
        match why {
            Closed::Broken => {}
            Closed::Tls => count(&counters.tls_failed, 1),
            Closed::Framing(StreamError::BadPrefix) => count(&counters.bad_prefix, 1),
            Closed::Framing(StreamError::BadLength) => count(&counters.bad_length, 1),
        }
        if c.originated {
            tracing::info!(target: "net", "tcp: connection to {} closed", c.remote);
            if let Some(d) = self.dialed.get_mut(&key) {
                d.lost = true;
            }
        }
    }

    /// Once a second: close what the slots say has expired and connects
    /// or TLS handshakes that take too long, and open again the ones we
    /// originated that broke while in use.
    pub(super) fn sweep(&mut self, now: Duration) {
        let stuck: Vec<ConnId> = self
            .conns
            .values()
            .filter(|c| {
                (c.phase == Phase::Connecting || c.handshaking()) && now >= c.since + QUIET_FOR
            })
            .map(|c| c.id)
            .collect();
        let counters = Arc::clone(&self.parts.queues.counters);
        for id in stuck {
            count(&counters.quiet_closed, 1);
            self.close(id, Closed::Broken);
        }
        for (id, why) in self.slots.expired(now) {
            if !self.conns.contains_key(&id) {
                continue;
            }
            match why {
                Expiry::Quiet | Expiry::Idle => count(&counters.quiet_closed, 1),
                Expiry::Unproven => count(&counters.unproven_closed, 1),
            }
            self.close(id, Closed::Broken);
        }
        let lost: Vec<Key> = self
            .dialed
            .iter()
            .filter(|(k, d)| !self.names.contains_key(k) && now < d.used + REDIAL_IF_USED)
            .map(|(k, _)| *k)
            .collect();
        for k in lost {
            let _ = self.dial(k, now);
        }
    }
}
