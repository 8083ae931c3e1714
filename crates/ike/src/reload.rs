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
//!  yet established is dropped), kept at the end of the list until its
//!  last IKE SA is gone, found by no lookup (initiate, IKE_SA_INIT, acquire)
//! ```
//!
//! A connection is replaced whole when anything in it differs, its
//! children included (strongSwan 5.9 replaces only the changed children
//! when the IKE part is equal: `vici_config.c` `merge_config`); secrets
//! are read at the next authentication, so a new one takes effect there.

use core::time::Duration;

use crate::config::{Config, Connection, StartAction};
use crate::engine::Ike;
use crate::event::IkeEvent;
use crate::kernel::Kernel;
use crate::sa::{IkeState, Todo};
use crate::table::SaMut;
use crate::task::Task;

/// What a reload did to each connection, by name, in the new file's
/// order (removed ones in the old file's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reloaded {
    /// New connections, started as their `start_action` says.
    pub added: Vec<String>,
    /// Changed connections: the old one's IKE SAs deleted, the new one
    /// started.
    pub replaced: Vec<String>,
    /// Connections no longer in the file: their IKE SAs deleted.
    pub removed: Vec<String>,
    /// Connections that stayed as they were, with their SAs.
    pub unchanged: Vec<String>,
}

impl Ike {
    /// Run `config` from now on (checked and parsed by the caller, as at
    /// start): see the module documentation.
    pub fn reload(&mut self, now: Duration, mut config: Config, k: &mut dyn Kernel) -> Reloaded {
        self.host.enter(now);
        for note in crate::config::restrict_to(&mut config, &self.host.provider) {
            self.host.events.push(IkeEvent::ConfigRestricted(note));
        }
        let mut report = Reloaded::default();
        let old = std::mem::take(&mut self.host.config.connections);
        let old_live = self.host.live;
        let live = config.connections.len();
        // Where each old connection goes: its place in the new list, or
        // after it (retired).
        let mut moved_to = Vec::with_capacity(old.len());
        let mut retired: Vec<Connection> = Vec::new();
        let mut kept = vec![false; live];
        for (i, conn) in old.into_iter().enumerate() {
            let same = (i < old_live)
                .then(|| config.connections.iter().position(|c| c.name == conn.name))
                .flatten();
            match same {
                Some(j) if config.connections[j] == conn => {
                    kept[j] = true;
                    moved_to.push(j);
                }
                _ => {
                    if i < old_live {
                        if same.is_some() {
                            report.replaced.push(conn.name.clone());
                        } else {
                            report.removed.push(conn.name.clone());
                        }
                    }
                    moved_to.push(live + retired.len());
                    retired.push(conn);
                }
            }
        }
        for (j, c) in config.connections.iter().enumerate() {
            if kept[j] {
                report.unchanged.push(c.name.clone());
            } else if !report.replaced.contains(&c.name) {
                report.added.push(c.name.clone());
            }
        }
        config.connections.extend(retired);
        self.host.config = config;
        self.host.live = live;
        for sa in self.sas.values_mut() {
            sa.conn = moved_to[sa.conn];
        }
        for (ci, _) in self.host.traps.values_mut() {
            *ci = moved_to[*ci];
        }
        self.retire(now, k);
        // The new and the changed ones start as at `flowsec up`.
        let fresh: Vec<usize> = (0..live).filter(|&j| !kept[j]).collect();
        self.start_connections(now, &fresh, k);
        self.host.events.within(None);
        self.host.events.push(IkeEvent::Reloaded(report.clone()));
        report
    }

    /// The connections at or past `live` are retired: their traps go,
    /// their IKE SAs are deleted (or dropped before they are
    /// established), and once none is left they are forgotten. Called by
    /// [`Ike::reload`] and on every poll while any is left (an IKE SA of
    /// one may have been rekeying, or be the result of a rekey).
    pub(crate) fn retire(&mut self, now: Duration, k: &mut dyn Kernel) {
        let live = self.host.live;
        if self.host.config.connections.len() == live {
            return;
        }
        let traps: Vec<u32> = self
            .host
            .traps
            .iter()
            .filter(|(_, (ci, _))| *ci >= live)
            .map(|(reqid, _)| *reqid)
            .collect();
        for reqid in traps {
            self.host.remove_trap(reqid, self.sas.values(), k);
        }
        let retired: Vec<u64> = self
            .sas
            .values()
            .filter(|sa| sa.conn >= live)
            .map(|sa| sa.our_spi())
            .collect();
        for spi in retired {
            let Some((at, mut sa)) =
                crate::event_log::find_within(&mut self.sas, &mut self.host, spi)
            else {
                continue;
            };
            match sa.state {
                IkeState::Connecting | IkeState::HalfOpen | IkeState::Authenticating => {
                    let mut sa = self.sas.remove(at).expect("found above");
                    let mut sa = SaMut::detached(&mut sa, self.sas.all());
                    self.host.destroy(&mut sa, k);
                }
                IkeState::Established if !deleting(&sa) => {
                    sa.queue.clear();
                    sa.queue.push_back(Todo::DeleteIke);
                    self.host.kick(now, &mut sa, k);
                }
                _ => {}
            }
        }
        if self.sas.values().all(|sa| sa.conn < live) {
            self.host.config.connections.truncate(live);
        }
        self.host.events.within(None);
    }

    /// `start_action` of the children of connections `which` (indexes):
    /// `start` initiates, `trap` installs the trap policies.
    pub(crate) fn start_connections(&mut self, now: Duration, which: &[usize], k: &mut dyn Kernel) {
        let mut wanted = Vec::new();
        let mut traps = Vec::new();
        for &ci in which {
            let conn = &self.host.config.connections[ci];
            for (cj, child) in conn.children.iter().enumerate() {
                match child.start_action {
                    StartAction::Start => wanted.push((conn.name.clone(), child.name.clone())),
                    StartAction::Trap => traps.push((ci, cj)),
                    StartAction::None => {}
                }
            }
        }
        for (ci, cj) in traps {
            if let Err(e) = self.host.install_trap(ci, cj, k) {
                self.host.events.push(IkeEvent::CommandFailed(e));
            }
        }
        for (conn, child) in wanted {
            if let Err(e) = self.initiate(now, Some(&conn), Some(&child), k) {
                self.host.events.push(IkeEvent::CommandFailed(e));
            }
        }
    }
}

/// Its DELETE is queued or under way already.
pub(crate) fn deleting(sa: &crate::sa::IkeSa) -> bool {
    sa.queue.contains(&Todo::DeleteIke)
        || matches!(sa.exch.task(), Some(Task::Delete(crate::info::Delete::Ike)))
}

impl core::fmt::Display for Reloaded {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut parts = Vec::new();
        for (what, names) in [
            ("added", &self.added),
            ("replaced", &self.replaced),
            ("removed", &self.removed),
        ] {
            if !names.is_empty() {
                parts.push(format!("{what} {}", names.join(", ")));
            }
        }
        parts.push(format!("{} unchanged", self.unchanged.len()));
        f.write_str(&parts.join("; "))
    }
}
