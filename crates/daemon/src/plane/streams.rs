//! IKE and ESP over TCP (RFC 9329): whether `flowsec up` needs the stream
//! thread, and on which ports it listens.

use super::Options;
use crate::error::RunError;
use crate::ike::IkePlane;

/// The stream thread's listeners and channel (RFC 9329), when a
/// connection has `tcp_encap` or `--tcp-listen` asks: listening on those
/// ports, and on each such connection's `tcp_port`.
pub(super) fn open_streams(
    opts: &Options,
    ike: &IkePlane,
) -> Result<Option<(crate::stream::StreamSink, crate::stream::StreamParts)>, RunError> {
    let conns = ike.ike.connections();
    let mut ports = opts.tcp_listen.clone();
    let wanted = conns
        .iter()
        .filter(|c| c.tcp.encap != flowsec_ike::config::TcpEncap::No);
    let any = wanted.clone().count() > 0;
    ports.extend(wanted.map(|c| c.tcp.port));
    ports.sort_unstable();
    ports.dedup();
    if ports.is_empty() && !any {
        return Ok(None);
    }
    let (sink, parts) = crate::stream::open(&ports).map_err(RunError::Stream)?;
    if !ports.is_empty() {
        let list: Vec<String> = ports.iter().map(u16::to_string).collect();
        eprintln!(
            "flowsec: IKE and ESP over TCP (RFC 9329, plain or TLS) on port {}",
            list.join(", ")
        );
    }
    Ok(Some((sink, parts)))
}
