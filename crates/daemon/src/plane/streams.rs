//! IKE and ESP over TCP (RFC 9329): whether `flowsec up` needs the stream
//! thread, and on which ports it listens.

use flowsec_ike::config::{Connection, TcpEncap};
use std::borrow::Borrow;

use super::Options;
use super::RunError;
use crate::channels::StreamSink;
use crate::ike::IkePlane;
use crate::stream::StreamParts;

/// The stream thread's listeners and channel (RFC 9329), when a
/// connection has `tcp_encap` or `--tcp-listen` asks: listening on those
/// ports, and on each such connection's `tcp_port`; the ports go to
/// `ike.tcp_ports`.
pub(super) fn open_streams(
    opts: &Options,
    ike: &mut IkePlane,
) -> Result<Option<(StreamSink, StreamParts)>, RunError> {
    let conns = ike.ike.connections();
    let any = conns.iter().any(|c| c.tcp.encap != TcpEncap::No);
    let ports = listen_ports(&opts.tcp_listen, conns);
    if ports.is_empty() && !any {
        return Ok(None);
    }
    let (sink, parts) = crate::stream::open(&ports).map_err(RunError::Stream)?;
    if !ports.is_empty() {
        let list: Vec<String> = ports.iter().map(u16::to_string).collect();
        tracing::info!(
            target: "net",
            "IKE and ESP over TCP (RFC 9329, plain or TLS) on port {}",
            list.join(", ")
        );
    }
    ike.tcp_ports = ports;
    Ok(Some((sink, parts)))
}

/// `--tcp-listen`'s ports and the `tcp_port` of every connection with
/// `tcp_encap`, sorted, once each.
pub(super) fn listen_ports<C: Borrow<Connection>>(listen: &[u16], conns: &[C]) -> Vec<u16> {
    let mut ports = listen.to_vec();
    ports.extend(
        conns
            .iter()
            .map(Borrow::borrow)
            .filter(|c| c.tcp.encap != TcpEncap::No)
            .map(|c| c.tcp.port),
    );
    ports.sort_unstable();
    ports.dedup();
    ports
}
