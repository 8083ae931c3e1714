//! NAT traversal (RFC 7296 §2.23, RFC 3948): detecting a NAT from the
//! NAT_DETECTION notifies of IKE_SA_INIT, and following a peer that a NAT
//! rebinds to another port.

use std::net::{IpAddr, SocketAddr};

use flowsec_wire::iana::NotifyType;
use flowsec_wire::ike::Message;

use crate::event::IkeEvent;
use crate::host::notifies;
use crate::kernel::Kernel;
use crate::sa::IkeSa;
use crate::NAT_T_PORT;

/// SHA-1(SPIi | SPIr | IP | Port) (§2.23).
pub(crate) fn nat_hash(spi_i: u64, spi_r: u64, addr: SocketAddr) -> Vec<u8> {
    let (v4, v6);
    let ip: &[u8] = match addr.ip() {
        IpAddr::V4(a) => {
            v4 = a.octets();
            &v4
        }
        IpAddr::V6(a) => {
            v6 = a.octets();
            &v6
        }
    };
    let port = addr.port().to_be_bytes();
    flowsec_crypto::fixed::sha1(&[&spi_i.to_be_bytes(), &spi_r.to_be_bytes(), ip, &port]).to_vec()
}

/// (we are behind a NAT, the peer is) from the peer's NAT_DETECTION
/// notifies; no notifies means no NAT-T support and no NAT assumed.
/// strongSwan's kernel-libipsec sends a random source hash on purpose, so
/// that both ends use UDP encapsulation.
pub(crate) fn nat_detect(
    msg: &Message,
    spi_i: u64,
    spi_r: u64,
    local: SocketAddr,
    remote: SocketAddr,
) -> (bool, bool) {
    let src: Vec<&[u8]> = notifies(msg)
        .filter(|n| n.ty == NotifyType::NAT_DETECTION_SOURCE_IP)
        .map(|n| n.data.as_slice())
        .collect();
    let dst: Vec<&[u8]> = notifies(msg)
        .filter(|n| n.ty == NotifyType::NAT_DETECTION_DESTINATION_IP)
        .map(|n| n.data.as_slice())
        .collect();
    if src.is_empty() || dst.is_empty() {
        return (false, false);
    }
    let them = nat_hash(spi_i, spi_r, remote);
    let us = nat_hash(spi_i, spi_r, local);
    (
        !dst.contains(&us.as_slice()),
        !src.contains(&them.as_slice()),
    )
}

/// After IKE_SA_INIT both ends float to port 4500 (RFC 7296 §2.23), and
/// a peer behind a NAT may be rebound to a new address or port: an
/// authenticated message that is new (in order) says where it talks from
/// now. A host behind a NAT itself does not follow (§2.23: "SHOULD NOT").
pub(crate) fn follow_peer(
    sa: &mut IkeSa,
    local: SocketAddr,
    remote: SocketAddr,
    k: &mut dyn Kernel,
) -> Option<IkeEvent> {
    // Over a stream the TCP Responder sends on the connection where it
    // last received a valid message (RFC 9329 §6.1): the originator's
    // new one after a reconnect.
    let stream = sa.path.transport.is_stream();
    if stream && sa.path.stream_originator {
        return None;
    }
    // RFC 4555 §3.5: with MOBIKE only an UPDATE_SA_ADDRESSES moves the
    // SAs to another address (strongSwan's probes come from new addresses
    // before it); a NAT's new port is still followed.
    let moved = local.ip() != sa.path.local.ip() || remote.ip() != sa.path.remote.ip();
    if sa.announced.mobike.on && moved {
        return None;
    }
    let floated = !stream && local.port() == NAT_T_PORT && sa.path.local.port() != NAT_T_PORT;
    if !(floated || stream || (sa.path.nat_remote && !sa.path.nat_local))
        || (sa.path.local, sa.path.remote) == (local, remote)
    {
        return None;
    }
    let before = sa.path.remote;
    sa.path.local = local;
    sa.path.remote = remote;
    if floated || sa.children.is_empty() {
        return None;
    }
    // A rebinding: the Child SAs' ESP in UDP follows the new port. A new
    // address would need new policies too: not done (yet).
    if before.ip() != remote.ip() {
        return Some(IkeEvent::PeerMoved {
            from: before,
            to: remote,
        });
    }
    let encap = |src: u16, dst: u16| match stream {
        true => flowsec_ipsec::UdpEncap::tcp(src, dst),
        false => flowsec_ipsec::UdpEncap::udp(src, dst),
    };
    for c in sa
        .children
        .iter_mut()
        .filter(|c| c.suite.encap && !c.plane.gone)
    {
        // The outbound SAs a rekey's responder holds back go out later:
        // with the new ports too.
        for d in c
            .plane
            .deferred_out
            .iter_mut()
            .filter(|d| d.encap.is_some())
        {
            d.encap = Some(encap(local.port(), remote.port()));
        }
        let out = encap(local.port(), remote.port());
        let inn = encap(remote.port(), local.port());
        k.update_encap(c.plane.sa_out, out);
        k.update_encap(c.plane.sa_in, inn);
    }
    Some(IkeEvent::PeerRebound {
        from: before,
        to: remote,
    })
}
