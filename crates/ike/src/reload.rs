//! A new configuration while the IKE SAs run (`flowsec ctl reload`,
//! SIGHUP; strongSwan's `swanctl --load-conns`): connections compared by
//! name, the difference applied, everything else untouched.
//!
//! ```text
//!  old connections ──┬─ same name, equal ──► kept: its IKE/Child SAs, SPIs, timers as they were
//!                    ├─ same name, differs ─► replaced: old one retired, new one started
//!                    └─ gone ───────────────► retired
//!  new connections ──── not there before ───► added: start_action (start / trap)
//!  retired: its traps removed, its IKE SAs deleted (DELETE sent; one not
//!  yet established is dropped); no longer among the host's connections,
//!  so found by no lookup (initiate, IKE_SA_INIT, acquire), it lives on in
//!  its last IKE SAs (each holds the connection it was made with, a
//!  `ConnRef`) and goes with them
//! ```
//!
//! A replaced connection is made before it is broken: its old IKE SAs
//! stay until the new connection has an IKE SA with a Child SA (or
//! [`REPLACE_WAIT`] has passed, or the new one starts nothing itself), so
//! the peer's new Child SA takes the old one's policies over at both ends.
//! Should the old Child SAs go first (the peer deleted them, the new one
//! is late), their policies stay as DISCARD until the new Child SA of the
//! same name is up: the traffic is dropped, never sent in the clear.
//!
//! A connection is replaced whole when anything in it differs, its
//! children included (strongSwan 5.9 replaces only the changed children
//! when the IKE part is equal: `vici_config.c` `merge_config`); secrets
//! are read at the next authentication, so a new one takes effect there.

use core::time::Duration;
use std::sync::Arc;

use crate::config::{Config, ConnRef, StartAction};
use crate::context::Cx;
use crate::event::IkeEvent;
use crate::event::Reloaded;
use crate::host::Hold;
use crate::host::Host;
use crate::host::Ike;
use crate::kernel::Kernel;
use crate::sa::{IkeState, Todo};
use crate::table::SaMut;

/// How long a replaced connection's IKE SAs wait for the new one (our
/// tuning: IKE_SA_INIT and IKE_AUTH with their retransmissions are done
/// well before, unless the peer does not answer at all).
pub const REPLACE_WAIT: Duration = Duration::from_secs(30);

/// The body of [`Ike::reload`].
pub(crate) fn reload(
    ike: &mut Ike,
    now: Duration,
    mut config: Config,
    k: &mut dyn Kernel,
) -> Reloaded {
    for note in crate::config::restrict_to(&mut config, &ike.host.provider) {
        ike.host.events.push(IkeEvent::ConfigRestricted(note));
    }
    let mut report = Reloaded::default();
    let old = std::mem::take(&mut ike.host.conns);
    let mut conns: Vec<ConnRef> = Vec::with_capacity(config.connections.len());
    // Each new connection: the old one itself where it is equal (its
    // IKE SAs keep running), else the new one (added or replacing).
    let mut fresh = Vec::new();
    for c in std::mem::take(&mut config.connections) {
        match old.iter().find(|o| o.name == c.name) {
            Some(o) if **o == c => {
                report.unchanged.push(c.name.clone());
                conns.push(o.clone());
            }
            was => {
                let c = ConnRef::new(c);
                match was {
                    Some(_) => report.replaced.push(c.name.clone()),
                    None => report.added.push(c.name.clone()),
                }
                fresh.push(c.clone());
                conns.push(c);
            }
        }
    }
    for o in &old {
        if !conns.iter().any(|c| c.name == o.name) {
            report.removed.push(o.name.clone());
        }
    }
    // Make before break where we start the new one ourselves.
    for c in &fresh {
        let starts = c
            .children
            .iter()
            .any(|ch| ch.start_action == StartAction::Start);
        if starts && report.replaced.contains(&c.name) {
            ike.host
                .replacing
                .insert(c.name.clone(), now + REPLACE_WAIT);
        }
    }
    ike.host.config = config;
    ike.host.conns = conns;
    release_stale_holds(&mut Cx::new(&mut ike.host, now, k));
    retire(ike, now, k);
    // The new and the changed ones start as at `flowsec up`.
    start_connections(ike, now, &fresh, k);
    crate::reauth::recheck_peers(ike, now, k);
    ike.host.events.push(IkeEvent::Reloaded(report.clone()));
    report
}

/// Connections no longer among the host's are retired: their traps
/// go, their IKE SAs are deleted (or dropped before they are
/// established); the last of those takes the connection with it.
/// Called by [`Ike::reload`] and on every poll while any is left (an
/// IKE SA of one may have been rekeying, or be the result of a rekey).
pub(crate) fn retire(ike: &mut Ike, now: Duration, k: &mut dyn Kernel) {
    let traps: Vec<u32> = ike
        .host
        .traps
        .iter()
        .filter(|(_, (ci, _))| !ike.host.is_live(ci))
        .map(|(reqid, _)| *reqid)
        .collect();
    for reqid in traps {
        crate::install::remove_trap(&mut Cx::new(&mut ike.host, now, k), reqid, ike.sas.values());
    }
    replaced_in_time(ike, now);
    let retired: Vec<u64> = ike
        .sas
        .values()
        .filter(|sa| !ike.host.is_live(&sa.conn))
        .map(|sa| sa.our_spi())
        .collect();
    for spi in retired {
        let Some((at, mut sa)) = ike.sas.find(spi) else {
            continue;
        };
        // Whoever deletes it first, its policies are held.
        hold_children(&mut Cx::new(&mut ike.host, now, k), &sa);
        match sa.state {
            IkeState::Connecting | IkeState::HalfOpen | IkeState::Authenticating => {
                let mut sa = ike.sas.remove(at).expect("found above");
                let mut sa = SaMut::detached(&mut sa, ike.sas.all());
                crate::install::destroy(&mut Cx::new(&mut ike.host, now, k), &mut sa);
            }
            IkeState::Established if !deleting(&sa) => {
                let name = &sa.conn.name;
                if ike.host.replacing.contains_key(name) {
                    continue;
                }
                sa.queue.clear();
                sa.queue.push_back(Todo::DeleteIke);
                crate::timers::kick(&mut Cx::new(&mut ike.host, now, k), &mut sa);
            }
            _ => {}
        }
    }
    if ike.sas.values().all(|sa| ike.host.is_live(&sa.conn)) {
        ike.host.replacing.clear();
    }
}

/// Forget the replaced connections whose new IKE SA is up with a Child
/// SA, or that waited [`REPLACE_WAIT`]: their old IKE SAs go now.
fn replaced_in_time(ike: &mut Ike, now: Duration) {
    let (host, sas) = (&mut ike.host, &ike.sas);
    let conns = &host.conns;
    host.replacing.retain(|name, until| {
        let up = sas.values().any(|s| {
            conns.iter().any(|c| Arc::ptr_eq(c, &s.conn))
                && s.conn.name == *name
                && s.state == IkeState::Established
                && !s.children.is_empty()
        });
        now < *until && !up
    });
}

/// When the retired IKE SA `sa` is to be deleted, if it is not yet
/// being deleted: at once, or when its successor is up (the daemon
/// polls at once then) or at the end of [`REPLACE_WAIT`].
pub(crate) fn retired_due(ike: &Ike, sa: &crate::sa::IkeSa) -> Option<Duration> {
    if ike.host.is_live(&sa.conn) || deleting(sa) {
        return None;
    }
    let name = &sa.conn.name;
    let Some(&until) = ike.host.replacing.get(name) else {
        return Some(Duration::ZERO);
    };
    let up = ike.sas.values().any(|s| {
        ike.host.is_live(&s.conn)
            && s.conn.name == *name
            && s.state == IkeState::Established
            && !s.children.is_empty()
    });
    Some(if up { Duration::ZERO } else { until })
}

/// `start_action` of the children of connections `which`: `start`
/// initiates, `trap` installs the trap policies.
pub(crate) fn start_connections(
    ike: &mut Ike,
    now: Duration,
    which: &[ConnRef],
    k: &mut dyn Kernel,
) {
    let mut wanted = Vec::new();
    let mut traps = Vec::new();
    for conn in which {
        for (cj, child) in conn.children.iter().enumerate() {
            match child.start_action {
                StartAction::Start => wanted.push((conn.name.clone(), child.name.clone())),
                StartAction::Trap => traps.push((conn.clone(), cj)),
                StartAction::None => {}
            }
        }
    }
    for (ci, cj) in traps {
        if let Err(e) = crate::install::install_trap(&mut Cx::new(&mut ike.host, now, k), &ci, cj) {
            ike.host.events.push(IkeEvent::CommandFailed(e));
        }
    }
    for (conn, child) in wanted {
        if let Err(e) = ike.initiate(now, Some(&conn), Some(&child), k) {
            ike.host.events.push(IkeEvent::CommandFailed(e));
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
fn release_stale_holds(cx: &mut Cx<'_>) {
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

fn release_hold(cx: &mut Cx<'_>, reqid: u32) {
    cx.host.holds.remove(&reqid);
    // Still in use by an old Child SA (not yet gone): its policies go
    // with it, as any Child SA's.
    let held = cx
        .policies
        .get(&reqid)
        .is_some_and(|o| o.iter().all(|p| p.action == flowsec_ipsec::Action::Discard));
    if held {
        crate::install::remove_policies(cx, reqid);
    }
}

/// Its DELETE is queued or under way already.
pub(crate) fn deleting(sa: &crate::sa::IkeSa) -> bool {
    sa.queue.contains(&Todo::DeleteIke)
        || sa
            .exch
            .task()
            .is_some_and(|t| t.kind() == crate::exchange::Kind::DeleteIke)
}

/// The Child SAs of `sa`, a replaced connection's IKE SA about to be
/// deleted: their policies will be held when their SAs go — those the
/// new connection still has (by child name), and that no Child SA of
/// it with the same peer has taken over yet.
fn hold_children(host: &mut Host, sa: &SaMut<'_>) {
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
