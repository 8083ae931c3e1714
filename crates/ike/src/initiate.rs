//! Starting an IKE SA as its initiator (the engine's side: a connection
//! chosen, addresses and transport, a new IKE SA in the table) and the
//! unencrypted answer to its IKE_SA_INIT, found by SPIi before any SA has
//! keys; the exchange itself is exchange/init.rs.

use core::time::Duration;
use std::net::SocketAddr;
use std::sync::Arc;

use flowsec_wire::ike::Header;

use crate::config::{AddrSpec, ConnRef, Connection, TcpEncap};
use crate::context::Cx;
use crate::error::CommandError;
use crate::event::IkeEvent;
use crate::exchange::init::{new_sa, IkeInit, NONCE_LEN};
use crate::host::Ike;
use crate::kernel::Kernel;
use crate::sa::IkeState;
use crate::transport::Transport;

/// The body of [`Ike::initiate`].
pub(crate) fn initiate(
    ike: &mut Ike,
    now: Duration,
    conn: Option<&str>,
    child: Option<&str>,
    k: &mut dyn Kernel,
) -> Result<(), CommandError> {
    // Not a connection a reload retired.
    let found = ike.host.conns.iter().find_map(|c| {
        if conn.is_some_and(|n| n != c.name) {
            return None;
        }
        match child {
            Some(name) => c
                .children
                .iter()
                .position(|ch| ch.name == name)
                .map(|j| (c.clone(), Some(j))),
            None => Some((c.clone(), None)),
        }
    });
    let Some((ci, child)) = found else {
        return Err(CommandError::NoConnection {
            conn: conn.map(str::to_string),
            child: child.map(str::to_string),
        });
    };
    let child = child.or_else(|| (!ci.children.is_empty()).then_some(0));
    // An IKE SA of the connection we can reuse?
    let existing = ike
        .sas
        .values()
        .find(|s| {
            Arc::ptr_eq(&s.conn, &ci)
                && matches!(
                    s.state,
                    IkeState::Established | IkeState::Connecting | IkeState::Authenticating
                )
        })
        .map(|s| s.our_spi());
    if let Some(spi) = existing {
        let Some(cfg) = child else { return Ok(()) };
        let Some((_, mut sa)) = ike.sas.find(spi) else {
            return Ok(());
        };
        if sa.state == IkeState::Established {
            sa.queue.push_back(crate::sa::Todo::CreateChild(cfg));
            crate::timers::kick(&mut Cx::new(&mut ike.host, now, k), &mut sa);
        } else if sa.exch.task().and_then(|t| t.first_child()) != Some(cfg) {
            // IKE_AUTH will carry the first child; the rest follow.
            sa.queue.push_back(crate::sa::Todo::CreateChild(cfg));
        }
        return Ok(());
    }
    connect_over(ike, now, ci, child, None, k).map(|_| ())
}

/// A new IKE SA of connection `ci` as initiator, over `transport` or
/// (`None`) what its `tcp_encap` says to start with; its SPI.
pub(crate) fn connect_over(
    ike: &mut Ike,
    now: Duration,
    ci: ConnRef,
    child: Option<usize>,
    transport: Option<Transport>,
    k: &mut dyn Kernel,
) -> Result<u64, CommandError> {
    let transport = transport.unwrap_or_else(|| starting_transport(&ci));
    let ends = endpoints(&ci, transport, k)?;
    connect_between(
        ike,
        now,
        (ci, child),
        (transport, ends),
        Default::default(),
        k,
    )
}

/// A new IKE SA of connection `ci` to the gateway a redirect named
/// (`to`, RFC 5685 §5: port 500, over UDP), REDIRECTED_FROM in its
/// IKE_SA_INIT; its SPI.
pub(crate) fn connect_redirected(
    ike: &mut Ike,
    now: Duration,
    ci: ConnRef,
    child: Option<usize>,
    (to, redirected): (SocketAddr, crate::gateway::Redirected),
    k: &mut dyn Kernel,
) -> Result<u64, CommandError> {
    let local_ip = ci
        .local_addrs
        .iter()
        .find_map(|a| match a {
            AddrSpec::Addr(ip) if ip.is_ipv4() == to.is_ipv4() => Some(*ip),
            _ => None,
        })
        .or_else(|| k.source_for(to.ip()))
        .ok_or_else(|| CommandError::NoLocalAddress {
            name: ci.name.clone(),
            remote: to.ip(),
        })?;
    let local = SocketAddr::new(local_ip, ci.local_port);
    let ends = (Transport::Udp, (local, to));
    connect_between(ike, now, (ci, child), ends, redirected, k)
}

/// A new IKE SA of `ci` (bringing up `child` in IKE_AUTH) between
/// `local` and `remote` over `transport`: its IKE_SA_INIT sent.
fn connect_between(
    ike: &mut Ike,
    now: Duration,
    (ci, child): (ConnRef, Option<usize>),
    (transport, (local, remote)): (Transport, (SocketAddr, SocketAddr)),
    redirected: crate::gateway::Redirected,
    k: &mut dyn Kernel,
) -> Result<u64, CommandError> {
    let conn = &*ci;
    let group = conn
        .proposals
        .iter()
        .flat_map(|p| p.dh.iter())
        .copied()
        .find(|g| ike.host.provider.key_exchange(*g).is_some())
        .ok_or_else(|| CommandError::NoGroup {
            conn: conn.name.clone(),
        })?;
    let offer = crate::config::ike_offer(&conn.proposals);
    let name = conn.name.clone();
    let ke = crate::crypto::key_exchange(&ike.host.provider, group, ike.host.rng.as_mut())
        .map_err(|error| CommandError::KeyExchange {
            conn: name.clone(),
            error,
        })?;
    let spi_i = ike.host.new_spi(|s| ike.sas.contains_spi(s));
    let ni = ike.host.random(NONCE_LEN);
    let uid = ike.host.next_uid;
    ike.host.next_uid += 1;
    let mut sa = new_sa(ci, uid, (spi_i, 0), true, (local, remote), now);
    sa.redirected = redirected;
    sa.path.transport = transport;
    sa.path.stream_originator = transport.is_stream();
    let init = IkeInit {
        ke,
        ni,
        offer,
        cookie: None,
        retries: 0,
        first_child: child,
    };
    ike.host.events.push(IkeEvent::Initiating {
        name,
        unique_id: uid,
        remote: remote.ip(),
    });
    crate::exchange::init::send_init(&mut Cx::new(&mut ike.host, now, k), &mut sa, init);
    ike.sas.insert(sa);
    Ok(spi_i)
}

/// The initiator's side: the answer to our IKE_SA_INIT, for the SA
/// its SPIi names.
pub(crate) fn on_init_response(
    ike: &mut Ike,
    now: Duration,
    header: &Header,
    data: &[u8],
    k: &mut dyn Kernel,
) {
    let Some((at, mut sa)) = ike.sas.find(header.spi_i) else {
        ike.host.stats.unknown_spi += 1;
        ike.host
            .counters
            .count(None, crate::counters::Counter::InvalidSpi);
        return;
    };
    // Counted in total on arrival; here for its connection.
    let counted = crate::counters::Counter::incoming(header.exchange, true);
    ike.host.counters.count_named(&sa.conn.name, counted);
    let then = crate::exchange::init::init_response(
        &mut Cx::new(&mut ike.host, now, k),
        &mut sa,
        header,
        data,
    );
    ike.then(now, at, then, k);
}

/// The transport a new IKE SA of `conn` starts on, as its `tcp_encap`
/// says: TCP or TLS at once (RFC 9329), else UDP (`fallback` goes over
/// TCP only if UDP gets no answer, RFC 9329 §5.1).
pub(crate) fn starting_transport(conn: &Connection) -> Transport {
    match (conn.tcp.encap, conn.tcp.tls) {
        (TcpEncap::Yes, false) => Transport::Tcp,
        (TcpEncap::Yes, true) => Transport::Tls,
        (TcpEncap::No | TcpEncap::Fallback, _) => Transport::Udp,
    }
}

/// The local and remote address a new IKE SA of `conn` starts between
/// over `transport`: the first configured remote address, a configured
/// local address of its family or else the kernel's source for it, and
/// the ports.
pub(crate) fn endpoints(
    conn: &Connection,
    transport: Transport,
    k: &mut dyn Kernel,
) -> Result<(SocketAddr, SocketAddr), CommandError> {
    let remote_ip = conn
        .remote_addrs
        .iter()
        .find_map(|a| match a {
            AddrSpec::Addr(ip) => Some(*ip),
            _ => None,
        })
        .ok_or_else(|| CommandError::NoRemoteAddress {
            conn: conn.name.clone(),
        })?;
    let local_ip = conn
        .local_addrs
        .iter()
        .find_map(|a| match a {
            AddrSpec::Addr(ip) if ip.is_ipv4() == remote_ip.is_ipv4() => Some(*ip),
            _ => None,
        })
        .or_else(|| k.source_for(remote_ip))
        .ok_or_else(|| CommandError::NoLocalAddress {
            name: conn.name.clone(),
            remote: remote_ip,
        })?;
    // Over TCP the peer listens on `tcp_port`, and our side is any
    // port (RFC 9329 §5); NAT detection hashes port 0 then, so the
    // peer sees a NAT: it changes nothing over TCP (§6.5).
    Ok(match transport.is_stream() {
        false => (
            SocketAddr::new(local_ip, conn.local_port),
            SocketAddr::new(remote_ip, conn.remote_port),
        ),
        true => (
            SocketAddr::new(local_ip, 0),
            SocketAddr::new(remote_ip, conn.tcp.port),
        ),
    })
}
