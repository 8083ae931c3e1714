//! A Child SA's policies (RFC 4301 §4.4.1) through the Kernel: installed
//! for a reqid, taking over another reqid's for the same traffic and
//! giving them back (`Host.shadowed`), trap policies (`start_action =
//! trap`), and the policies of a replaced connection held as DISCARD
//! until its successor is up (`Host.holds`, crate::reload).

use flowsec_ipsec::spd::{Action, Direction, Level, SaTemplate};
use flowsec_ipsec::{Mode, Policy, Protocol};
use flowsec_wire::ike::TrafficSelector;

use crate::config::ConnRef;
use crate::context::Cx;
use crate::error::CommandError;
use crate::event::IkeEvent;
use crate::host::{Hold, Host};
use crate::table::SaMut;
use crate::ts;

/// Install the trap policies of child `cj` of connection `ci`: what
/// matches them and finds no SA makes the data plane ask for one
/// ([`crate::Ike::acquire`]).
pub(crate) fn install_trap(cx: &mut Cx<'_>, ci: &ConnRef, cj: usize) -> Result<(), CommandError> {
    let conn = &**ci;
    let child = &conn.children[cj];
    let remote = conn
        .remote_addrs
        .iter()
        .find_map(|a| match a {
            crate::config::AddrSpec::Addr(ip) => Some(*ip),
            _ => None,
        })
        .ok_or_else(|| CommandError::TrapWithoutAddress {
            child: child.name.clone(),
        })?;
    let local = conn
        .local_addrs
        .iter()
        .find_map(|a| match a {
            crate::config::AddrSpec::Addr(ip) if ip.is_ipv4() == remote.is_ipv4() => Some(*ip),
            _ => None,
        })
        .or_else(|| cx.k.source_for(remote))
        .ok_or_else(|| CommandError::NoLocalAddress {
            name: child.name.clone(),
            remote,
        })?;
    let (local_ts, remote_ts) = (
        ts::from_config(&child.local_ts, local),
        ts::from_config(&child.remote_ts, remote),
    );
    let mode = child.mode;
    let name = child.name.clone();
    let reqid = cx.host.next_reqid;
    cx.host.next_reqid += 1;
    let comp = child.ipcomp;
    let protocol = crate::proto::suites(child).1;
    install_policies(
        cx,
        reqid,
        (mode, protocol, comp),
        (local, remote),
        &local_ts,
        &remote_ts,
    );
    cx.host.traps.insert(reqid, (ci.clone(), cj));
    cx.host.events.push(IkeEvent::TrapInstalled {
        child: name,
        reqid,
        local_ts,
        remote_ts,
    });
    Ok(())
}

/// Remove the trap of `reqid`; its policies go unless a Child SA in
/// `sas` still uses them (they go with it then).
pub(crate) fn remove_trap<'a>(
    cx: &mut Cx<'_>,
    reqid: u32,
    mut sas: impl Iterator<Item = &'a crate::sa::IkeSa>,
) {
    let Some((ci, cj)) = cx.host.traps.remove(&reqid) else {
        return;
    };
    let used = sas.any(|s| s.children.iter().any(|c| c.reqid == reqid));
    if !used {
        remove_policies(cx, reqid);
    }
    let child = ci.children[cj].name.clone();
    cx.host.events.push(IkeEvent::TrapRemoved { child, reqid });
}

/// The out and fwd policies of a Child SA (RFC 4301 §4.4.1): traffic
/// from our selectors to the peer's is protected with the SAs of
/// `reqid`; what arrives from the peer's must have come through them.
/// With `ipcomp`, IPComp comes first in the bundle (setkey's order
/// `ipcomp esp`) at level `use`: small packets go uncompressed (RFC
/// 3173 §2.2), and a rekey may come without it.
pub(crate) fn install_policies(
    cx: &mut Cx<'_>,
    reqid: u32,
    (mode, protocol, ipcomp): (Mode, Protocol, bool),
    (local, remote): (std::net::IpAddr, std::net::IpAddr),
    local_ts: &[TrafficSelector],
    remote_ts: &[TrafficSelector],
) {
    let bundle = |src, dst| {
        let t = |protocol, level| SaTemplate {
            protocol,
            mode,
            tunnel: (mode == Mode::Tunnel).then_some((src, dst)),
            level,
            reqid,
        };
        let mut b = Vec::new();
        if ipcomp {
            b.push(t(Protocol::IpComp, Level::Use));
        }
        b.push(t(protocol, Level::Require));
        b
    };
    let mut installed = Vec::new();
    for (direction, from, to, b) in [
        (Direction::Out, local_ts, remote_ts, bundle(local, remote)),
        (Direction::Fwd, remote_ts, local_ts, bundle(remote, local)),
    ] {
        for selector in ts::selectors(from, to) {
            let policy = Policy {
                direction,
                selector,
                action: Action::Protect(b.clone()),
                priority: 0,
            };
            take_over(cx, reqid, &policy);
            cx.k.add_policy(policy.clone());
            installed.push(policy);
        }
    }
    cx.host.policies.insert(reqid, installed);
}

/// The policies of `reqid` whose tunnel runs between `from` (local,
/// remote) move to `to`: each goes from the kernel and comes back with
/// the new endpoints (a MOBIKE move, RFC 4555 §3.5; the selectors stay).
pub(crate) fn retunnel(
    cx: &mut Cx<'_>,
    reqid: u32,
    from: (std::net::IpAddr, std::net::IpAddr),
    to: (std::net::IpAddr, std::net::IpAddr),
) {
    let Some(owned) = cx.host.policies.get_mut(&reqid) else {
        return;
    };
    let swap = |(a, b)| (b, a);
    for p in owned.iter_mut() {
        let Action::Protect(bundle) = &mut p.action else {
            continue;
        };
        let mut moved = false;
        for tunnel in bundle.iter_mut().filter_map(|t| t.tunnel.as_mut()) {
            if *tunnel == from {
                (*tunnel, moved) = (to, true);
            } else if *tunnel == swap(from) {
                (*tunnel, moved) = (swap(to), true);
            }
        }
        if moved {
            cx.k.del_policy(p.direction, p.selector);
            cx.k.add_policy(p.clone());
        }
    }
}

/// Another reqid's policy for the same traffic (the CHILD_SA of a
/// connection a reload replaced, still up until its DELETE is
/// answered; or two connections with the same selectors): `reqid`'s
/// takes its place now, and the displaced one waits in `shadowed`
/// until `reqid` lets go of it ([`remove_policies`]), as the
/// kernel's policy history does in strongSwan.
pub(crate) fn take_over(cx: &mut Cx<'_>, reqid: u32, policy: &Policy) {
    let same = |o: &Policy| (o.direction, o.selector) == (policy.direction, policy.selector);
    for (r, owned) in cx.host.policies.iter_mut().filter(|(r, _)| **r != reqid) {
        if let Some(at) = owned.iter().position(same) {
            let old = owned.remove(at);
            cx.k.del_policy(old.direction, old.selector);
            cx.host.shadowed.push((*r, old));
        }
    }
}

/// `reqid`'s policies leave the data plane; where one had displaced
/// another reqid's, the latest displaced one comes back.
pub(crate) fn remove_policies(cx: &mut Cx<'_>, reqid: u32) {
    cx.host.shadowed.retain(|(r, _)| *r != reqid);
    for p in cx.host.policies.remove(&reqid).unwrap_or_default() {
        cx.k.del_policy(p.direction, p.selector);
        let back = cx
            .shadowed
            .iter()
            .rposition(|(_, q)| (q.direction, q.selector) == (p.direction, p.selector));
        if let Some(at) = back {
            let (owner, q) = cx.host.shadowed.remove(at);
            cx.k.add_policy(q.clone());
            cx.host.policies.entry(owner).or_default().push(q);
        }
    }
}

/// `reqid`'s Child SAs are gone and it is held: its policies become
/// DISCARD (the route into the TUN stays, the packets are dropped
/// there); what it had displaced is forgotten.
pub(crate) fn hold_policies(cx: &mut Cx<'_>, reqid: u32) {
    cx.host.shadowed.retain(|(r, _)| *r != reqid);
    let Some(owned) = cx.host.policies.get_mut(&reqid).filter(|o| !o.is_empty()) else {
        // Taken over already by the successor: nothing to hold.
        cx.host.policies.remove(&reqid);
        cx.host.holds.remove(&reqid);
        return;
    };
    for p in owned.iter_mut() {
        cx.k.del_policy(p.direction, p.selector);
        p.action = flowsec_ipsec::Action::Discard;
        cx.k.add_policy(p.clone());
    }
    let child = cx
        .holds
        .get(&reqid)
        .map_or_else(String::new, |h| h.child.clone());
    cx.host.events.push(IkeEvent::PoliciesHeld { child, reqid });
}

/// A Child SA of `sa` (a live connection's) with config `cfg` is up:
/// the policies held for its predecessors with the same peer go (those
/// it took over are gone already).
pub(crate) fn release_holds(cx: &mut Cx<'_>, sa: &crate::sa::IkeSa, cfg: usize) {
    if !cx.host.is_live(&sa.conn) || cx.host.holds.is_empty() {
        return;
    }
    let conn = &sa.conn;
    let Some(child) = conn.children.get(cfg) else {
        return;
    };
    let done: Vec<u32> = cx
        .holds
        .iter()
        .filter(|(_, h)| h.conn == conn.name && h.child == child.name && h.peer == sa.ids.peer)
        .map(|(r, _)| *r)
        .collect();
    for reqid in done {
        release_hold(cx, reqid);
    }
}

/// Holds whose connection or child a reload removed go.
pub(crate) fn release_stale_holds(cx: &mut Cx<'_>) {
    let live = &cx.host.conns;
    let stale: Vec<u32> = cx
        .holds
        .iter()
        .filter(|(_, h)| {
            !live
                .iter()
                .any(|x| x.name == h.conn && x.children.iter().any(|y| y.name == h.child))
        })
        .map(|(r, _)| *r)
        .collect();
    for reqid in stale {
        release_hold(cx, reqid);
    }
}

pub(crate) fn release_hold(cx: &mut Cx<'_>, reqid: u32) {
    cx.host.holds.remove(&reqid);
    // Still in use by an old Child SA (not yet gone): its policies go
    // with it, as any Child SA's.
    let held = cx
        .policies
        .get(&reqid)
        .is_some_and(|o| o.iter().all(|p| p.action == flowsec_ipsec::Action::Discard));
    if held {
        crate::policies::remove_policies(cx, reqid);
    }
}

/// The Child SAs of `sa`, a replaced connection's IKE SA about to be
/// deleted: their policies will be held when their SAs go — those the
/// new connection still has (by child name), and that no Child SA of
/// it with the same peer has taken over yet.
pub(crate) fn hold_children(host: &mut Host, sa: &SaMut<'_>) {
    let conn = &sa.conn;
    let Some(new) = host.conns.iter().find(|c| c.name == conn.name) else {
        return;
    };
    let taken_over = |child: &str| {
        sa.others.values().any(|o| {
            host.is_live(&o.conn)
                && o.conn.name == conn.name
                && o.ids.peer == sa.ids.peer
                && o.children
                    .iter()
                    .any(|c| o.conn.children[c.cfg].name == child)
        })
    };
    let mut held = Vec::new();
    for c in &sa.children {
        let Some(child) = conn.children.get(c.cfg).map(|ch| ch.name.as_str()) else {
            continue;
        };
        if new.children.iter().any(|ch| ch.name == child) && !taken_over(child) {
            held.push((c.reqid, child.to_string()));
        }
    }
    for (reqid, child) in held {
        let hold = Hold {
            conn: conn.name.clone(),
            child,
            peer: sa.ids.peer.clone(),
        };
        host.holds.insert(reqid, hold);
    }
}
