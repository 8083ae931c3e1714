//! IKE over TCP streams (RFC 9329) as the engine sees them: a connection
//! we originated that came back, a message on a stream that proved its
//! sender, and the fallback from UDP to TCP (`tcp_encap = fallback`).

use core::time::Duration;
use std::net::SocketAddr;

use crate::config::{ConnRef, TcpEncap};
use crate::context::Cx;
use crate::engine::Ike;
use crate::event::IkeEvent;
use crate::kernel::Kernel;
use crate::sa::{IkeState, Todo};
use crate::transport::Transport;

impl Ike {
    /// The TCP connection from `local` to `remote` that this host
    /// originated was lost and is open again (the daemon reconnects; RFC
    /// 9329 §6.1: only the TCP Originator does). The IKE SAs over it
    /// stay; each sends on the new connection at once, so that the peer
    /// learns it: the request still unanswered if there is one (§6.2: "MUST
    /// be retransmitted"), else an empty INFORMATIONAL (§6.1).
    pub fn reconnected(
        &mut self,
        now: Duration,
        local: SocketAddr,
        remote: SocketAddr,
        k: &mut dyn Kernel,
    ) {
        let spis: Vec<u64> = self
            .sas
            .values()
            .filter(|sa| {
                sa.path.transport.is_stream()
                    && sa.path.stream_originator
                    && sa.path.local.ip() == local.ip()
                    && sa.path.remote == remote
            })
            .map(|sa| sa.our_spi())
            .collect();
        for spi in spis {
            let Some((_, mut sa)) = self.sas.find(spi) else {
                continue;
            };
            self.host.stats.reconnects += 1;
            if let Some(data) = sa.exch.outstanding().map(<[Vec<u8>]>::to_vec) {
                self.host.stats.retransmits += 1;
                let (t, l, r) = (sa.path.transport, sa.path.local, sa.path.remote);
                self.host.push_all(t, l, r, data);
            } else if sa.state == IkeState::Established && !sa.queue.contains(&Todo::Dpd) {
                sa.queue.push_back(Todo::Dpd);
                crate::timers::kick(&mut Cx::new(&mut self.host, now, k), &mut sa);
            }
        }
    }

    /// Whether `data`, the message [`Ike::handle_on`] took last over a
    /// stream, proved its sender: it verified under an IKE SA's keys
    /// (the caller sees [`crate::IkeStats::verified`] rise) and that SA,
    /// carried by a stream, is established now (its peer authenticated,
    /// RFC 7296 §2.15). The daemon then counts the connection it came on
    /// as established and sends the SA's traffic on it (RFC 9329 §6.1:
    /// the newest connection a valid message came on); a message that
    /// only opened a half-open SA, or an EAP round, does not.
    pub fn stream_authenticated(&self, data: &[u8]) -> bool {
        let Ok(h) = flowsec_wire::ike::Header::parse(data) else {
            return false;
        };
        // The SPI the sender's role says is ours (§3.1: the I flag).
        let ours = if h.initiator { h.spi_r } else { h.spi_i };
        self.sas.values().any(|sa| {
            sa.our_spi() == ours
                && sa.state == IkeState::Established
                && sa.path.transport.is_stream()
        })
    }

    /// `tcp_encap = fallback` (RFC 9329 §5.1): an IKE_SA_INIT over UDP
    /// unanswered for `tcp_fallback_time` is given up, and the connection
    /// starts again over TCP with a new IKE_SA_INIT (new SPIi, NAT
    /// detection recomputed: "MUST").
    pub(crate) fn fall_back_to_tcp(&mut self, now: Duration, k: &mut dyn Kernel) {
        let due: Vec<(u64, ConnRef, Option<usize>)> = self
            .sas
            .values()
            .filter(|sa| {
                let tcp = &sa.conn.tcp;
                sa.state == IkeState::Connecting
                    && sa.path.transport == Transport::Udp
                    && tcp.encap == TcpEncap::Fallback
                    && now >= sa.times.created + tcp.fallback_after
            })
            .map(|sa| {
                (
                    sa.our_spi(),
                    sa.conn.clone(),
                    sa.exch.task().and_then(|t| t.first_child()),
                )
            })
            .collect();
        for (spi, conn, child) in due {
            let Some(mut old) = self.sas.slot(spi).and_then(|at| self.sas.remove(at)) else {
                continue;
            };
            if let Some(t) = old.exch.take_task() {
                t.release(k);
            }
            self.host.stats.tcp_fallbacks += 1;
            let name = conn.name.clone();
            self.host.events.push(IkeEvent::TcpFallback { name });
            let over = Some(stream_of(&conn));
            match self.connect_over(now, conn, child, over, k) {
                // What waited for the first IKE SA waits for the new one.
                Ok(new) => {
                    if let Some((_, mut sa)) = self.sas.find(new) {
                        sa.queue.extend(old.queue.drain(..));
                    }
                }
                Err(e) => self.host.events.push(IkeEvent::CommandFailed(e)),
            }
        }
    }
}

/// The stream a connection's `tcp_tls` asks for.
fn stream_of(conn: &crate::config::Connection) -> Transport {
    match conn.tcp.tls {
        true => Transport::Tls,
        false => Transport::Tcp,
    }
}
