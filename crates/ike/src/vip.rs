//! Virtual IPs for road warriors (RFC 7296 §3.15, §2.19): the
//! initiator's CFG_REQUEST (`vips`), the responder's CFG_REPLY with an
//! address from its `pools` and their DNS servers, what `dynamic`
//! selectors stand for once an address is assigned, and the addresses'
//! end with the IKE SA.
//!
//! ```text
//! Initiator                                Responder
//! HDR, SK {IDi, [CERT,] AUTH, CP(CFG_REQUEST), SAi2, TSi, TSr}  -->
//!                   <--  HDR, SK {IDr, [CERT,] AUTH, CP(CFG_REPLY), SAr2, TSi, TSr}
//! ```
//! CFG_REQUEST asks for INTERNAL_IP4_ADDRESS / INTERNAL_IP6_ADDRESS
//! (empty, or the address wanted) and the DNS servers of each family;
//! TSi is then the whole family (0.0.0.0–255.255.255.255), which the
//! responder narrows to the address it gives.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use flowsec_wire::iana::NotifyType;
use flowsec_wire::ike::{cfg_attr, Cp, Message, Payload, TrafficSelector, CFG_REPLY, CFG_REQUEST};

/// What a CFG_REQUEST gets.
pub(crate) enum VipAnswer {
    /// No request, or no pools: nothing.
    Nothing,
    /// CFG_REPLY.
    Reply(Payload),
    /// No address left.
    Failed,
}

use crate::config::Identity;
use crate::context::Cx;
use crate::event::IkeEvent;
use crate::host::Host;
use crate::sa::IkeSa;
use crate::ts;

/// Initiator: what `dynamic` in our selectors stands for: our virtual
/// IPs once we have them, the whole family of each one asked for before,
/// our IKE address without `vips`.
pub(crate) fn local_dynamic(sa: &IkeSa) -> Vec<TrafficSelector> {
    if !sa.vips.local.is_empty() {
        return sa.vips.local.iter().map(|a| ts::whole(*a, *a)).collect();
    }
    let vips = &sa.conn.vips;
    if !vips.is_empty() {
        let mut out: Vec<TrafficSelector> = Vec::new();
        for v in vips {
            let whole = ts::whole_family(v.is_ipv4());
            if !out.contains(&whole) {
                out.push(whole);
            }
        }
        return out;
    }
    vec![ts::whole(sa.path.local.ip(), sa.path.local.ip())]
}

/// Responder: what `dynamic` in the peer's selectors stands for: the
/// virtual IPs we gave it, or its IKE address.
pub(crate) fn remote_dynamic(sa: &IkeSa) -> Vec<TrafficSelector> {
    if sa.vips.remote.is_empty() {
        return vec![ts::whole(sa.path.remote.ip(), sa.path.remote.ip())];
    }
    sa.vips
        .remote
        .iter()
        .map(|(_, a)| ts::whole(*a, *a))
        .collect()
}

/// Initiator: the CFG_REQUEST for the connection's `vips`, if any.
/// An IKE SA that authenticates in another's place (crate::reauth) holds
/// its addresses already, and asks for them (the gateway gives an address
/// back to its owner from the same IKE address).
pub(crate) fn request(sa: &IkeSa) -> Option<Payload> {
    let vips = &sa.conn.vips;
    if vips.is_empty() {
        return None;
    }
    let held = |v: &IpAddr| sa.vips.local.iter().find(|h| h.is_ipv4() == v.is_ipv4());
    let mut attrs = Vec::new();
    for v in vips.iter().map(|v| held(v).unwrap_or(v)) {
        match v {
            IpAddr::V4(a) => {
                let value = if a.is_unspecified() {
                    Vec::new()
                } else {
                    a.octets().to_vec()
                };
                attrs.push((cfg_attr::INTERNAL_IP4_ADDRESS, value));
            }
            IpAddr::V6(a) => {
                let value = if a.is_unspecified() {
                    Vec::new()
                } else {
                    let mut v = a.octets().to_vec();
                    v.push(128);
                    v
                };
                attrs.push((cfg_attr::INTERNAL_IP6_ADDRESS, value));
            }
        }
    }
    if vips.iter().any(IpAddr::is_ipv4) {
        attrs.push((cfg_attr::INTERNAL_IP4_DNS, Vec::new()));
    }
    if vips.iter().any(IpAddr::is_ipv6) {
        attrs.push((cfg_attr::INTERNAL_IP6_DNS, Vec::new()));
    }
    Some(Payload::Cp(Cp {
        ty: CFG_REQUEST,
        attrs,
    }))
}

/// The addresses of `ty` in a CP payload's attributes (a requested
/// address, or one given; IPv6 with its prefix length after it).
fn addresses(cp: &Cp, v4_ty: u16, v6_ty: u16) -> Vec<IpAddr> {
    cp.attrs
        .iter()
        .filter_map(|(ty, v)| match (*ty, v.len()) {
            (t, 4) if t == v4_ty => <[u8; 4]>::try_from(&v[..])
                .ok()
                .map(|b| Ipv4Addr::from(b).into()),
            (t, 16 | 17) if t == v6_ty => <[u8; 16]>::try_from(&v[..16])
                .ok()
                .map(|b| Ipv6Addr::from(b).into()),
            _ => None,
        })
        .collect()
}

/// Whether a gateway's address is one a client may put on its device: a
/// unicast address, not the unspecified one, loopback, multicast,
/// broadcast or link-local (each would hijack local traffic or make no
/// sense as a tunnel's source).
fn usable(a: IpAddr) -> bool {
    let common = !a.is_unspecified() && !a.is_loopback() && !a.is_multicast();
    common
        && match a {
            IpAddr::V4(v4) => !v4.is_broadcast() && !v4.is_link_local(),
            IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) != 0xfe80,
        }
}

fn cp_of(msg: &Message, ty: u8) -> Option<&Cp> {
    msg.payloads.iter().find_map(|p| match p {
        Payload::Cp(cp) if cp.ty == ty => Some(cp),
        _ => None,
    })
}

/// Initiator: the responder's CFG_REPLY in `msg`: our virtual IPs
/// (installed) and DNS servers. `false` when the connection asked
/// for virtual IPs and got none (strongSwan closes the IKE SA then).
pub(crate) fn take_vips(cx: &mut Cx<'_>, sa: &mut IkeSa, msg: &Message) -> bool {
    let asked = !sa.conn.vips.is_empty();
    let Some(reply) = cp_of(msg, CFG_REPLY) else {
        return !asked;
    };
    if !asked {
        return true;
    }
    let addrs = addresses(
        reply,
        cfg_attr::INTERNAL_IP4_ADDRESS,
        cfg_attr::INTERNAL_IP6_ADDRESS,
    );
    // A hostile reply is bounded: one address of each family.
    let mut mine: Vec<IpAddr> = Vec::new();
    for a in addrs.into_iter().filter(|a| usable(*a)) {
        if !mine.iter().any(|m| m.is_ipv4() == a.is_ipv4()) {
            mine.push(a);
        }
    }
    let mut dns = addresses(
        reply,
        cfg_attr::INTERNAL_IP4_DNS,
        cfg_attr::INTERNAL_IP6_DNS,
    );
    dns.truncate(8);
    for a in &mine {
        cx.k.add_vip(*a);
    }
    if !mine.is_empty() {
        cx.host.report(
            sa,
            IkeEvent::VirtualIpInstalled {
                addrs: mine.clone(),
                dns: dns.clone(),
            },
        );
    }
    sa.vips.local = mine;
    sa.vips.dns = dns;
    !sa.vips.local.is_empty()
}

/// The IKE SA `sa` is going: our virtual IPs leave the device (unless an
/// IKE SA that rekeyed it holds them), the peer's go back to their pools.
pub(crate) fn release(cx: &mut Cx<'_>, sa: &mut crate::table::SaMut<'_>) {
    for (pool, addr) in std::mem::take(&mut sa.vips.remote) {
        cx.leases.release(&pool, addr);
    }
    for addr in std::mem::take(&mut sa.vips.local) {
        let held = sa.others.values().any(|o| o.vips.local.contains(&addr));
        if !held {
            cx.k.del_vip(addr);
        }
    }
}

/// Responder: the answer to the initiator's CFG_REQUEST in `msg`:
/// a CFG_REPLY with an address of each family asked for from the
/// connection's pools (for identity `peer`, leased by identity), with
/// the DNS servers of those pools; `Failed` when no pool had one;
/// nothing without a request or pools (strongSwan answers nothing then
/// either).
pub(crate) fn assign_vips(
    host: &mut Host,
    sa: &mut IkeSa,
    msg: &Message,
    peer: &Identity,
) -> VipAnswer {
    let Some(req) = cp_of(msg, CFG_REQUEST) else {
        return VipAnswer::Nothing;
    };
    let conn = &sa.conn;
    if conn.pools.is_empty() {
        return VipAnswer::Nothing;
    }
    let asks = |ty: u16| req.attrs.iter().any(|(t, _)| *t == ty);
    let wanted = addresses(
        req,
        cfg_attr::INTERNAL_IP4_ADDRESS,
        cfg_attr::INTERNAL_IP6_ADDRESS,
    );
    let mut attrs = Vec::new();
    for (v4, ty) in [
        (true, cfg_attr::INTERNAL_IP4_ADDRESS),
        (false, cfg_attr::INTERNAL_IP6_ADDRESS),
    ] {
        if !asks(ty) {
            continue;
        }
        let requested = wanted.iter().copied().find(|a| a.is_ipv4() == v4);
        let pools: Vec<_> = conn
            .pools
            .iter()
            .filter_map(|n| host.config.pools.iter().find(|p| &p.name == n))
            .filter(|p| p.first.is_ipv4() == v4)
            .cloned()
            .collect();
        for pool in pools {
            let from = sa.path.remote.ip();
            let Some(addr) = host.leases.acquire(&pool, peer, from, requested) else {
                continue;
            };
            sa.vips.remote.push((pool.name.clone(), addr));
            attrs.push(match addr {
                IpAddr::V4(a) => (ty, a.octets().to_vec()),
                IpAddr::V6(a) => {
                    let mut v = a.octets().to_vec();
                    v.push(128);
                    (ty, v)
                }
            });
            for dns in pool.dns.iter().filter(|d| d.is_ipv4() == v4) {
                let (t, v) = match dns {
                    IpAddr::V4(d) => (cfg_attr::INTERNAL_IP4_DNS, d.octets().to_vec()),
                    IpAddr::V6(d) => (cfg_attr::INTERNAL_IP6_DNS, d.octets().to_vec()),
                };
                attrs.push((t, v));
            }
            let tag = sa.tag();
            host.events.about(
                tag,
                IkeEvent::VirtualIpAssigned {
                    peer: peer.clone(),
                    addr,
                    pool: pool.name.clone(),
                },
            );
            break;
        }
    }
    if attrs.is_empty() {
        host.events
            .push(IkeEvent::NoVirtualIp { peer: peer.clone() });
        return VipAnswer::Failed;
    }
    VipAnswer::Reply(Payload::Cp(Cp {
        ty: CFG_REPLY,
        attrs,
    }))
}
/// Responder: `payloads` get the answer to a CFG_REQUEST; `false`
/// when none could be met: INTERNAL_ADDRESS_FAILURE (§3.15.4) went in,
/// and no Child SA is made (as strongSwan).
pub(crate) fn answer_cp(
    host: &mut Host,
    sa: &mut IkeSa,
    first: &Message,
    peer: &Identity,
    payloads: &mut Vec<Payload>,
) -> bool {
    match assign_vips(host, sa, first, peer) {
        VipAnswer::Nothing => true,
        VipAnswer::Reply(p) => {
            payloads.push(p);
            true
        }
        VipAnswer::Failed => {
            let n = crate::host::notify(NotifyType::INTERNAL_ADDRESS_FAILURE, vec![]);
            payloads.push(n);
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_refuses_addresses_it_must_not_put_on_its_device() {
        for bad in [
            "0.0.0.0",
            "127.0.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "169.254.1.1",
            "::",
            "::1",
            "ff02::1",
            "fe80::1",
        ] {
            assert!(!usable(bad.parse().unwrap()), "{bad}");
        }
        for good in ["10.3.0.1", "198.51.100.7", "fd00:3::1", "2001:db8::1"] {
            assert!(usable(good.parse().unwrap()), "{good}");
        }
    }
}
