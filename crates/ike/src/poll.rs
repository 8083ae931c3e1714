//! What the engine does for all IKE SAs when it is polled or the data plane
//! reports: every IKE SA's timers (timers.rs), the work of a reload
//! (retired connections) and of reauthentication, the fallback to TCP,
//! what the children of a dead or closed IKE SA wish (`dpd_action`,
//! `close_action`), and an SA whose soft limit passed.

use core::time::Duration;
use std::sync::Arc;

use flowsec_ipsec::SaId;

use crate::context::Cx;
use crate::event::IkeEvent;
use crate::host::Ike;
use crate::kernel::Kernel;
use crate::sa::{ChildState, IkeState, Todo};
use crate::table::Wish;

/// Carry out [`crate::table::after_death`]'s wishes.
pub(crate) fn revive(ike: &mut Ike, now: Duration, wishes: Vec<Wish>, k: &mut dyn Kernel) {
    for (ci, cj, action) in wishes {
        // A connection a reload retired wishes nothing any more.
        if !ike.host.is_live(&ci) {
            continue;
        }
        let trapped = (ike.host.traps.values()).any(|(c, j)| Arc::ptr_eq(c, &ci) && *j == cj);
        let (conn, child) = (ci.name.clone(), ci.children[cj].name.clone());
        let done = match action {
            crate::config::DpdAction::Restart => {
                ike.host.events.push(IkeEvent::Restarting {
                    child: child.clone(),
                });
                ike.initiate(now, Some(&conn), Some(&child), k)
            }
            crate::config::DpdAction::Trap if !trapped => {
                crate::policies::install_trap(&mut Cx::new(&mut ike.host, now, k), &ci, cj)
            }
            _ => Ok(()),
        };
        if let Err(e) = done {
            ike.host.events.push(IkeEvent::CommandFailed(e));
        }
    }
}

/// The body of [`Ike::poll`].
pub(crate) fn poll(ike: &mut Ike, now: Duration, k: &mut dyn Kernel) {
    let (gone, kept): (Vec<_>, Vec<_>) = ike.host.lingering.drain(..).partition(|(_, t)| now >= *t);
    ike.host.lingering = kept;
    for (id, _) in gone {
        k.del_sa(id);
    }
    crate::streams::fall_back_to_tcp(ike, now, k);
    crate::reload::retire(ike, now, k);
    crate::reauth::reauth_handover(ike, now, k);
    for spi in ike.sas.spis() {
        let Some((at, mut sa)) = ike.sas.find(spi) else {
            continue;
        };
        let then = crate::timers::poll_sa(&mut Cx::new(&mut ike.host, now, k), &mut sa);
        ike.then(now, at, then, k);
    }
    crate::reauth::reauthenticate(ike, now, k);
    crate::redirect::follow_due(ike, now, k);
}

/// The body of [`Ike::next_timeout`].
pub(crate) fn next_timeout(ike: &Ike) -> Option<Duration> {
    let mut t: Option<Duration> = None;
    let mut at = |d: Option<Duration>| {
        if let Some(d) = d {
            t = Some(t.map_or(d, |t| t.min(d)));
        }
    };
    for (_, deadline) in &ike.host.lingering {
        at(Some(*deadline));
    }
    // A redirect to follow: at once.
    if !ike.host.redirect_due.is_empty() {
        at(Some(Duration::ZERO));
    }
    for sa in ike.sas.values() {
        at(sa.exch.deadline());
        match sa.state {
            IkeState::HalfOpen => at(Some(sa.times.created + ike.host.settings.half_open_timeout)),
            IkeState::Established => {
                // A retired connection's IKE SA: its DELETE is due
                // (Ike::retire, on the next poll).
                at(crate::reload::retired_due(ike, sa));
                if sa.path.nat_local
                    && !sa.path.transport.is_stream()
                    && !ike.host.settings.keep_alive.is_zero()
                {
                    at(Some(sa.times.last_sent + ike.host.settings.keep_alive));
                }
                at(sa.times.rekey_at);
                at(sa.times.expire_at);
                at(sa.auth.reauth_at);
                if crate::reauth::reauth_due_now(ike, sa) || (sa.auth.revoked && !sa.deleting()) {
                    at(Some(Duration::ZERO));
                }
                let dpd = sa.conn.dpd_delay;
                if !dpd.is_zero() && sa.exch.idle() {
                    at(Some(sa.times.last_heard + dpd));
                }
                for c in &sa.children {
                    at(c.times.rekey_at);
                    at(c.times.expire_at);
                }
            }
            IkeState::Rekeyed | IkeState::Deleting => at(sa.times.expire_at),
            IkeState::Connecting if sa.path.transport == crate::transport::Transport::Udp => {
                let tcp = &sa.conn.tcp;
                if tcp.encap == crate::config::TcpEncap::Fallback {
                    at(Some(sa.times.created + tcp.fallback_after));
                }
            }
            _ => {}
        }
        if sa.exch.idle() && crate::timers::can_start(sa) {
            at(Some(Duration::ZERO));
        }
    }
    t
}

/// The body of [`Ike::soft_expired`].
pub(crate) fn soft_expired(ike: &mut Ike, now: Duration, id: SaId, k: &mut dyn Kernel) {
    let owner = ike.sas.values().find_map(|sa| {
        sa.children
            .iter()
            .find(|c| {
                c.state == ChildState::Installed && (c.spi_in == id.spi || c.spi_out == id.spi)
            })
            .map(|c| (sa.our_spi(), c.spi_in))
    });
    let Some((key, spi)) = owner else { return };
    let Some((_, mut sa)) = ike.sas.find(key) else {
        return;
    };
    if !sa.queue.contains(&Todo::RekeyChild(spi)) {
        ike.host
            .events
            .push(IkeEvent::ChildVolumeReached { spi_in: spi });
        sa.queue.push_back(Todo::RekeyChild(spi));
    }
    crate::timers::kick(&mut Cx::new(&mut ike.host, now, k), &mut sa);
}

/// The body of [`Ike::volume_limited`].
pub(crate) fn volume_limited(ike: &Ike) -> bool {
    ike.host.conns.iter().any(|c| {
        c.children
            .iter()
            .any(|ch| ch.rekey_bytes > 0 || ch.rekey_packets > 0)
    })
}
