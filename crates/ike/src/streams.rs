//! IKE over TCP streams (RFC 9329) as the engine sees them: a connection
//! we originated that came back, a message on a stream that proved its
//! sender, and the fallback from UDP to TCP (`tcp_encap = fallback`).

use core::time::Duration;
use std::net::SocketAddr;

use crate::config::{ConnRef, TcpEncap};
use crate::context::Cx;
use crate::event::IkeEvent;
use crate::host::Ike;
use crate::kernel::Kernel;
use crate::sa::{IkeState, Todo};
use crate::transport::Transport;

/// The body of [`Ike::reconnected`].
pub(crate) fn reconnected(
    ike: &mut Ike,
    now: Duration,
    local: SocketAddr,
    remote: SocketAddr,
    k: &mut dyn Kernel,
) {
    let spis: Vec<u64> = ike
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
        let Some((_, mut sa)) = ike.sas.find(spi) else {
            continue;
        };
        ike.host.stats.reconnects += 1;
        if let Some(data) = sa.exch.outstanding().map(<[Vec<u8>]>::to_vec) {
            ike.host.stats.retransmits += 1;
            let (t, l, r) = (sa.path.transport, sa.path.local, sa.path.remote);
            ike.host.push_all(t, l, r, data);
        } else if sa.state == IkeState::Established && !sa.queue.contains(&Todo::Dpd) {
            sa.queue.push_back(Todo::Dpd);
            crate::timers::kick(&mut Cx::new(&mut ike.host, now, k), &mut sa);
        }
    }
}

/// The body of [`Ike::stream_authenticated`].
pub(crate) fn stream_authenticated(ike: &Ike, data: &[u8]) -> bool {
    let Ok(h) = flowsec_wire::ike::Header::parse(data) else {
        return false;
    };
    // The SPI the sender's role says is ours (§3.1: the I flag).
    let ours = if h.initiator { h.spi_r } else { h.spi_i };
    ike.sas.values().any(|sa| {
        sa.our_spi() == ours && sa.state == IkeState::Established && sa.path.transport.is_stream()
    })
}

/// `tcp_encap = fallback` (RFC 9329 §5.1): an IKE_SA_INIT over UDP
/// unanswered for `tcp_fallback_time` is given up, and the connection
/// starts again over TCP with a new IKE_SA_INIT (new SPIi, NAT
/// detection recomputed: "MUST").
pub(crate) fn fall_back_to_tcp(ike: &mut Ike, now: Duration, k: &mut dyn Kernel) {
    let due: Vec<(u64, ConnRef, Option<usize>)> = ike
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
        let Some(mut old) = ike.sas.slot(spi).and_then(|at| ike.sas.remove(at)) else {
            continue;
        };
        if let Some(t) = old.exch.take_task() {
            t.release(k);
        }
        ike.host.stats.tcp_fallbacks += 1;
        let name = conn.name.clone();
        ike.host.events.push(IkeEvent::TcpFallback { name });
        let over = Some(stream_of(&conn));
        match crate::initiate::connect_over(ike, now, conn, child, over, k) {
            // What waited for the first IKE SA waits for the new one.
            Ok(new) => {
                if let Some((_, mut sa)) = ike.sas.find(new) {
                    sa.queue.extend(old.queue.drain(..));
                }
            }
            Err(e) => ike.host.events.push(IkeEvent::CommandFailed(e)),
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
