//! MOBIKE (RFC 4555): the IKE SA and its Child SAs follow their original
//! initiator to another address, without a new handshake.
//!
//! ```text
//! Initiator                                      Responder
//! HDR, SK {IDi, …, N(MOBIKE_SUPPORTED), …}  -->           (first IKE_AUTH, §3.2)
//!                 <--  HDR, SK {IDr, …, N(MOBIKE_SUPPORTED), …}   (its last answer)
//! (later, from the new address, §3.5)
//! HDR, SK {N(UPDATE_SA_ADDRESSES),
//!          N(NAT_DETECTION_SOURCE_IP), N(NAT_DETECTION_DESTINATION_IP),
//!          N(COOKIE2)}                       -->
//!                 <--  HDR, SK {N(NAT_DETECTION_SOURCE_IP),
//!                               N(NAT_DETECTION_DESTINATION_IP), N(COOKIE2)}
//! ```
//!
//! Only the original initiator moves the SAs (§3.5, whoever rekeyed the
//! IKE SA since). It moves its own SAs first and then tells the
//! responder, from the new path, as strongSwan does; the responder takes
//! the new addresses from the request's IP header and turns UDP
//! encapsulation on or off as the request's NAT detection says (§3.5
//! steps 2, 5, 6), before it answers. An update is authenticated and in
//! order (it is a protected request with the next message ID); a
//! retransmitted copy is answered from the cache and moves nothing. The
//! responder runs no return-routability check of its own (strongSwan
//! does not either, §3.7 makes it a SHOULD that a deployment may waive):
//! the request's keys prove its sender. Each end announces its other
//! addresses (§3.6), and the initiator moves to one the responder
//! announced when the one in use has no route. What is not done: moving
//! as a responder, path probing before an update (strongSwan probes each
//! peer address), and NO_NATS_ALLOWED (§3.9; strongSwan neither sends
//! nor checks it).

use std::net::{IpAddr, SocketAddr};

use flowsec_ipsec::{Endpoints, Protocol, SaConfig, SaId, UdpEncap};
use flowsec_wire::iana::{ExchangeType, NotifyType};
use flowsec_wire::ike::{Message, Payload};

use crate::context::Cx;
use crate::event::IkeEvent;
use crate::exchange::{Exchange, Kind};
use crate::host::{has_notify, notifies, notify, Host};
use crate::nat::{nat_detect, nat_hash};
use crate::sa::{IkeSa, IkeState, Todo};
use crate::table::{SaMut, Then};
use crate::NAT_T_PORT;

/// The most peer addresses kept from an address list (§3.6), as
/// strongSwan sends at most (`MAX_ADDITIONAL_ADDRS`).
pub(crate) const MAX_ADDRESSES: usize = 8;
/// Our COOKIE2's length (§3.7: 8 to 64 octets; strongSwan's 16).
const COOKIE2_LEN: usize = 16;

/// Whether `sa` may announce MOBIKE: `mobike = yes`, over UDP (RFC 9329:
/// a TCP stream's connection is the path).
fn supported(sa: &IkeSa) -> bool {
    sa.conn.mobike && !sa.path.transport.is_stream()
}

/// Initiator, first IKE_AUTH request: MOBIKE_SUPPORTED (§3.2) and our
/// address list (§3.6), unless `mobike = no` or over a stream.
pub(crate) fn offer(host: &Host, sa: &IkeSa) -> Vec<Payload> {
    match supported(sa) {
        true => announce(host, sa),
        false => Vec::new(),
    }
}

/// MOBIKE_SUPPORTED and our addresses other than the one `sa` uses, of
/// either family and at most [`MAX_ADDRESSES`] (strongSwan's rule; the
/// virtual IPs we hold are not ours to announce); NO_ADDITIONAL_ADDRESSES
/// when there are none (strongSwan sends it in IKE_AUTH too).
fn announce(host: &Host, sa: &IkeSa) -> Vec<Payload> {
    let mut out = vec![notify(NotifyType::MOBIKE_SUPPORTED, vec![])];
    let others = host
        .local_addrs
        .iter()
        .filter(|a| **a != sa.path.local.ip() && !sa.vips.local.contains(a))
        .take(MAX_ADDRESSES);
    for a in others {
        out.push(match a {
            IpAddr::V4(v4) => notify(NotifyType::ADDITIONAL_IP4_ADDRESS, v4.octets().to_vec()),
            IpAddr::V6(v6) => notify(NotifyType::ADDITIONAL_IP6_ADDRESS, v6.octets().to_vec()),
        });
    }
    if out.len() == 1 {
        out.push(notify(NotifyType::NO_ADDITIONAL_ADDRESSES, vec![]));
    }
    out
}

/// Initiator, the responder's last IKE_AUTH answer `msg`: whether it
/// supports MOBIKE too, and its address list.
pub(crate) fn initiator_agreed(sa: &mut IkeSa, msg: &Message) {
    let on = supported(sa) && has_notify(msg, NotifyType::MOBIKE_SUPPORTED);
    sa.announced.mobike.on = on;
    if on {
        take_addresses(sa, msg);
    }
}

/// Responder, the last IKE_AUTH answer: MOBIKE_SUPPORTED with our
/// address list if the first request `first` had it and `mobike` is on
/// (strongSwan looks only there, and answers only in the last answer,
/// after EAP too).
pub(crate) fn responder_agrees(host: &Host, sa: &mut IkeSa, first: &Message) -> Vec<Payload> {
    let on = supported(sa) && has_notify(first, NotifyType::MOBIKE_SUPPORTED);
    sa.announced.mobike.on = on;
    if !on {
        return Vec::new();
    }
    take_addresses(sa, first);
    announce(host, sa)
}

/// The peer's address list (§3.6), if `msg` carries one: each list
/// replaces the last (NO_ADDITIONAL_ADDRESSES empties it), at most
/// [`MAX_ADDRESSES`] kept; an address of the wrong length is skipped.
fn take_addresses(sa: &mut IkeSa, msg: &Message) {
    let mut list = None::<Vec<IpAddr>>;
    for n in notifies(msg) {
        let addr = match (n.ty, n.data.len()) {
            (NotifyType::ADDITIONAL_IP4_ADDRESS, 4) => {
                <[u8; 4]>::try_from(&n.data[..]).ok().map(IpAddr::from)
            }
            (NotifyType::ADDITIONAL_IP6_ADDRESS, 16) => {
                <[u8; 16]>::try_from(&n.data[..]).ok().map(IpAddr::from)
            }
            (NotifyType::NO_ADDITIONAL_ADDRESSES, _) => {
                list.get_or_insert_with(Vec::new);
                None
            }
            _ => None,
        };
        if let Some(a) = addr {
            let l = list.get_or_insert_with(Vec::new);
            if l.len() < MAX_ADDRESSES && !l.contains(&a) {
                l.push(a);
            }
        }
    }
    if let Some(l) = list {
        sa.announced.mobike.peer_addrs = l;
    }
}

/// Responder of an INFORMATIONAL request `msg` that came on `cx.arrival`
/// (over UDP): an UPDATE_SA_ADDRESSES followed (§3.5), the peer's address
/// list taken (§3.6), and what our answer carries for them — NAT
/// detection over the answer's addresses when the request had both
/// notifies (§3.5, RFC 7296 §2.23), the COOKIE2 exactly as it came
/// (§3.7: strongSwan closes the IKE SA otherwise).
pub(crate) fn informational(cx: &mut Cx<'_>, sa: &mut SaMut<'_>, msg: &Message) -> Vec<Payload> {
    let mut answer = Vec::new();
    let Some((local, remote)) = cx.arrival else {
        return answer;
    };
    if sa.announced.mobike.on {
        take_addresses(sa, msg);
    }
    if has_notify(msg, NotifyType::UPDATE_SA_ADDRESSES) {
        follow_update(cx, sa, msg, (local, remote));
    }
    let has = |ty| has_notify(msg, ty);
    if has(NotifyType::NAT_DETECTION_SOURCE_IP) && has(NotifyType::NAT_DETECTION_DESTINATION_IP) {
        answer.extend(nat_detection(sa, local, remote));
    }
    let cookie2 = notifies(msg).find(|n| n.ty == NotifyType::COOKIE2);
    if let Some(c) = cookie2.filter(|c| (8..=64).contains(&c.data.len())) {
        answer.push(notify(NotifyType::COOKIE2, c.data.clone()));
    }
    answer
}

/// Responder: the peer's UPDATE_SA_ADDRESSES from `local`, `remote` (the
/// request's IP header, §3.5 step 2): followed when MOBIKE is on and the
/// peer is the original initiator (only it moves the SAs); otherwise
/// answered and counted, nothing moved.
fn follow_update(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    msg: &Message,
    (local, remote): (SocketAddr, SocketAddr),
) {
    if !sa.announced.mobike.on || sa.original_initiator || sa.state != IkeState::Established {
        cx.host.stats.mobike_refused += 1;
        return;
    }
    let nat = nat_detect(msg, sa.spi_i, sa.spi_r, local, remote);
    let from = (sa.path.local, sa.path.remote);
    move_to(cx, sa, (local, remote), nat);
    cx.host.stats.mobike_updates += 1;
    report_moved(cx, sa, from);
}

/// NAT_DETECTION_SOURCE_IP and _DESTINATION_IP for a message of `sa`
/// from `local` to `remote` (RFC 7296 §2.23: both SPIs).
fn nat_detection(sa: &IkeSa, local: SocketAddr, remote: SocketAddr) -> [Payload; 2] {
    [
        notify(
            NotifyType::NAT_DETECTION_SOURCE_IP,
            nat_hash(sa.spi_i, sa.spi_r, local),
        ),
        notify(
            NotifyType::NAT_DETECTION_DESTINATION_IP,
            nat_hash(sa.spi_i, sa.spi_r, remote),
        ),
    ]
}

/// Move `sa` to `local`, `remote`, with what NAT detection found there
/// (`nat_local`, `nat_remote`): the IKE SA's path, then every Child SA's
/// SAs — in and out, IPComp's, the outbound ones a rekey holds back —
/// with their state kept, ESP in UDP on or off as a NAT on the new path
/// asks (§3.5 step 6; `encap = yes` keeps it on), and the tunnel
/// endpoints of their policies; the plaintext filter follows the
/// policies. A transport-mode CHILD_SA moves too, but its selectors keep
/// naming the old address (strongSwan rewrites them; flowsec does not
/// yet), so it no longer matches the hosts' new traffic.
pub(crate) fn move_to(
    cx: &mut Cx<'_>,
    sa: &mut IkeSa,
    (local, remote): (SocketAddr, SocketAddr),
    (nat_local, nat_remote): (bool, bool),
) {
    let old = (sa.path.local.ip(), sa.path.remote.ip());
    (sa.path.local, sa.path.remote) = (local, remote);
    (sa.path.nat_local, sa.path.nat_remote) = (nat_local, nat_remote);
    let encap = nat_local || nat_remote || sa.conn.encap;
    let ends = |src: SocketAddr, dst: SocketAddr, esp: bool| Endpoints {
        src: src.ip(),
        dst: dst.ip(),
        encap: (encap && esp).then(|| UdpEncap::udp(src.port(), dst.port())),
    };
    let mut stuck = Vec::new();
    for c in sa.children.iter_mut().filter(|c| !c.plane.gone) {
        let esp = c.plane.sa_out.protocol == Protocol::Esp;
        let p = &mut c.plane;
        // An outbound SA a rekey's responder holds back is not in the
        // data plane yet: it goes there with the new addresses.
        let held: Vec<SaId> = p.deferred_out.iter().map(SaConfig::id).collect();
        let mut moved = |id: &mut SaId, to: Endpoints| {
            if held.contains(id) {
                id.dst = to.dst;
                return true;
            }
            cx.k.move_sa(*id, to).map(|new| *id = new).is_some()
        };
        let mut all = moved(&mut p.sa_out, ends(local, remote, esp));
        all &= moved(&mut p.sa_in, ends(remote, local, esp));
        if let Some((inn, out)) = &mut p.ipcomp {
            all &= moved(inn, ends(remote, local, false));
            all &= moved(out, ends(local, remote, false));
        }
        for d in &mut p.deferred_out {
            let to = ends(local, remote, d.protocol == Protocol::Esp);
            (d.src, d.dst, d.encap) = (to.src, to.dst, to.encap);
        }
        c.suite.encap = encap && esp;
        if !all {
            stuck.push(c.reqid);
        }
    }
    let mut reqids: Vec<u32> = sa.children.iter().map(|c| c.reqid).collect();
    reqids.sort_unstable();
    reqids.dedup();
    // A CHILD_SA whose SAs could not all move (the data plane refused:
    // another SA has the new id) keeps its policies where its SAs are.
    for reqid in reqids.into_iter().filter(|r| !stuck.contains(r)) {
        crate::policies::retunnel(cx, reqid, old, (local.ip(), remote.ip()));
    }
    if !stuck.is_empty() {
        let name = cx.host.conn_name(sa);
        let why = "a CHILD_SA's SA could not move (the data plane has one with its new id): it stays on the old path";
        let event = IkeEvent::MoveFailed {
            name,
            unique_id: sa.uid,
            why,
        };
        cx.host.report(sa, event);
    }
}

fn report_moved(cx: &mut Cx<'_>, sa: &IkeSa, from: (SocketAddr, SocketAddr)) {
    let name = cx.host.conn_name(sa);
    cx.host.report(
        sa,
        IkeEvent::Moved {
            name,
            unique_id: sa.uid,
            from,
            to: (sa.path.local, sa.path.remote),
            encap: sa.path.nat_local || sa.path.nat_remote || sa.conn.encap,
        },
    );
}

/// Whether `sa` is one this host moves: MOBIKE on, we its original
/// initiator, established, over UDP.
pub(crate) fn may_move(sa: &IkeSa) -> bool {
    sa.announced.mobike.on
        && sa.original_initiator
        && sa.state == IkeState::Established
        && !sa.path.transport.is_stream()
}

/// Original initiator: the route to the peer's address `peer` (the one
/// in use, or another it announced) leaves from `source` now (the daemon
/// saw an address or route change and asked the kernel, §3.5 "when the
/// path changes"): unless that is the path in use, the IKE SA and its
/// Child SAs move there now — to port 4500 on a new address (§3.3: with
/// MOBIKE, NAT-T's port) — and an UPDATE_SA_ADDRESSES tells the peer
/// once the window is free. Whether a NAT is on the new path is known
/// from the answer; until then the Child SAs keep the encapsulation they
/// had.
pub(crate) fn roam(cx: &mut Cx<'_>, sa: &mut SaMut<'_>, (source, peer): (IpAddr, IpAddr)) {
    let same = (source, peer) == (sa.path.local.ip(), sa.path.remote.ip());
    if !may_move(sa) || same || source.is_ipv4() != peer.is_ipv4() {
        return;
    }
    let from = (sa.path.local, sa.path.remote);
    let local = SocketAddr::new(source, NAT_T_PORT);
    let remote = match peer == sa.path.remote.ip() && sa.path.remote.port() != crate::IKE_PORT {
        true => sa.path.remote,
        false => SocketAddr::new(peer, NAT_T_PORT),
    };
    let nat = (sa.path.nat_local, sa.path.nat_remote);
    move_to(cx, sa, (local, remote), nat);
    report_moved(cx, sa, from);
    if !sa.queue.contains(&Todo::UpdateAddresses) {
        sa.queue.push_back(Todo::UpdateAddresses);
    }
}

/// Original initiator: UPDATE_SA_ADDRESSES from the path in use now, with
/// NAT detection over it and a fresh COOKIE2 (§3.5, §3.7).
pub(crate) fn start_update(cx: &mut Cx<'_>, sa: &mut IkeSa) {
    let cookie2 = cx.host.random(COOKIE2_LEN);
    let mut payloads = vec![notify(NotifyType::UPDATE_SA_ADDRESSES, vec![])];
    payloads.extend(nat_detection(sa, sa.path.local, sa.path.remote));
    payloads.push(notify(NotifyType::COOKIE2, cookie2.clone()));
    cx.request(
        sa,
        ExchangeType::INFORMATIONAL,
        payloads,
        Box::new(Update { cookie2 }),
    );
}

/// UPDATE_SA_ADDRESSES, original initiator: waits for the answer.
pub(crate) struct Update {
    cookie2: Vec<u8>,
}

impl Exchange for Update {
    fn kind(&self) -> Kind {
        Kind::UpdateAddresses
    }

    /// The answer must echo our COOKIE2 (§3.7: else the IKE SA is closed,
    /// as strongSwan does); its NAT detection says whether the new path
    /// needs ESP in UDP, and the Child SAs follow if that changed.
    fn process(self: Box<Self>, cx: &mut Cx<'_>, sa: &mut SaMut<'_>, msg: Message) -> Then {
        let echoed = notifies(&msg).find(|n| n.ty == NotifyType::COOKIE2);
        if echoed.map(|n| &n.data) != Some(&self.cookie2) {
            cx.host.stats.mobike_refused += 1;
            let name = cx.host.conn_name(sa);
            let why = "COOKIE2 mismatch in the answer to UPDATE_SA_ADDRESSES, closing the IKE_SA";
            cx.host.report(
                sa,
                IkeEvent::MoveFailed {
                    name,
                    unique_id: sa.uid,
                    why,
                },
            );
            return Then::Destroy(Vec::new());
        }
        cx.host.stats.mobike_updates += 1;
        let (local, remote) = (sa.path.local, sa.path.remote);
        let nat = nat_detect(&msg, sa.spi_i, sa.spi_r, local, remote);
        if nat != (sa.path.nat_local, sa.path.nat_remote) {
            move_to(cx, sa, (local, remote), nat);
            report_moved(cx, sa, (local, remote));
        }
        Then::Stay
    }
}
