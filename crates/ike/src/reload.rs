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
    crate::policies::release_stale_holds(&mut Cx::new(&mut ike.host, now, k));
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
        crate::policies::remove_trap(&mut Cx::new(&mut ike.host, now, k), reqid, ike.sas.values());
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
        crate::policies::hold_children(&mut Cx::new(&mut ike.host, now, k), &sa);
        match sa.state {
            IkeState::Connecting | IkeState::HalfOpen | IkeState::Authenticating => {
                let mut sa = ike.sas.remove(at).expect("found above");
                let mut sa = SaMut::detached(&mut sa, ike.sas.all());
                crate::install::destroy(&mut Cx::new(&mut ike.host, now, k), &mut sa);
            }
            IkeState::Established if !sa.deleting() => {
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
    if ike.host.is_live(&sa.conn) || sa.deleting() {
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
        if let Err(e) = crate::policies::install_trap(&mut Cx::new(&mut ike.host, now, k), &ci, cj)
        {
            ike.host.events.push(IkeEvent::CommandFailed(e));
        }
    }
    for (conn, child) in wanted {
        if let Err(e) = ike.initiate(now, Some(&conn), Some(&child), k) {
            ike.host.events.push(IkeEvent::CommandFailed(e));
        }
    }
}
