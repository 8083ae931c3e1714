//! Sessions end with their credentials (RFC 7296 §2.8.3; strongSwan's
//! `reauth_time`): when the peer last authenticated is kept across IKE
//! rekeys, so a rekey never extends a session past `reauth_time` (+
//! `over_time`, the hard limit). At `reauth_time` the side that can reach
//! the peer authenticates again, make before break: a new IKE SA with the
//! same Child SAs (they share the old ones' policies), then the old IKE
//! SA is deleted. A responder that cannot initiate (a road-warrior
//! gateway) lets the SA end at the hard limit; the client comes back.
//!
//! A reload that changes the credentials (a CRL revoking a certificate, a
//! CA removed, an EAP user deleted) checks every established peer again;
//! those that no longer pass are deleted.

use core::time::Duration;

use crate::cert::{verify, Certificate};
use crate::config::AuthKind;
use crate::context::Cx;
use crate::error::Distrust;
use crate::event::IkeEvent;
use crate::host::Host;
use crate::host::Ike;
use crate::kernel::Kernel;
use crate::sa::{IkeSa, IkeState, Todo};

/// Whether the peer of `sa` would still be let in with the
/// credentials we hold now (`unix`: the wall clock); why not.
fn still_trusted(host: &Host, sa: &IkeSa, unix: Option<Duration>) -> Result<(), Distrust> {
    let conn = &sa.conn;
    match conn.remote.auth {
        AuthKind::Pubkey(_) => {
            let (Some(unix), Some(ee)) = (unix, sa.auth.certs.first()) else {
                return Ok(());
            };
            let parse = |d: &Vec<u8>| {
                Certificate::parse(d).map_err(|e| Distrust::Unreadable(e.to_string()))
            };
            let ee = parse(ee)?;
            let inter = sa.auth.certs[1..]
                .iter()
                .map(parse)
                .collect::<Result<Vec<_>, _>>()?;
            let inter = crate::auth::pubkey::path_intermediates(host, &inter);
            let crls = host.config.credentials.crls();
            let strict = conn.remote.revocation_strict;
            let anchors = crate::auth::pubkey::trusted_cas(host, &sa.conn);
            verify::validate_with(&host.provider, &ee, &inter, &anchors, &crls, unix, strict)
                .map_err(Distrust::Certificate)
        }
        AuthKind::Eap => match &sa.ids.peer {
            Some(user) if host.config.find_eap(user).is_none() => {
                Err(Distrust::EapSecretGone(user.clone()))
            }
            _ => Ok(()),
        },
        AuthKind::Psk => Ok(()),
    }
}

/// After a reload: every authenticated peer checked again with the
/// new credentials; those that fail are deleted (DELETE sent), and
/// so is what an IKE rekey in flight makes of them (`revoked`).
pub(crate) fn recheck_peers(ike: &mut Ike, now: Duration, k: &mut dyn Kernel) {
    let unix = ike.host.unix_time(now);
    let failed: Vec<(u64, Distrust)> = ike
        .sas
        .values()
        .filter(|s| ike.host.is_live(&s.conn) && s.times.established.is_some())
        .filter_map(|s| {
            let why = still_trusted(&ike.host, s, unix).err()?;
            Some((s.our_spi(), why))
        })
        .collect();
    for (spi, why) in failed {
        let Some((_, mut sa)) = ike.sas.find(spi) else {
            continue;
        };
        ike.host.stats.peers_revoked += 1;
        ike.host.events.push(IkeEvent::PeerRevoked {
            name: ike.host.conn_name(&sa),
            unique_id: sa.uid,
            why,
        });
        sa.auth.revoked = true;
        if sa.state == IkeState::Established && !sa.deleting() {
            sa.queue.clear();
            sa.queue.push_back(Todo::DeleteIke);
            crate::timers::kick(&mut Cx::new(&mut ike.host, now, k), &mut sa);
        }
    }
}

/// The IKE SAs whose `reauth_time` came (timers.rs): each
/// authenticates again on a new IKE SA, if we can reach the peer.
pub(crate) fn reauthenticate(ike: &mut Ike, now: Duration, k: &mut dyn Kernel) {
    for spi in std::mem::take(&mut ike.host.reauth_due) {
        let Some(old) = ike.sas.values().find(|s| s.our_spi() == spi) else {
            continue;
        };
        if old.state != IkeState::Established || !ike.host.is_live(&old.conn) {
            continue;
        }
        let (ci, uid, vips) = (old.conn.clone(), old.uid, old.vips.local.clone());
        let cfgs = child_configs(old);
        let name = ci.name.clone();
        match crate::initiate::connect_over(ike, now, ci, cfgs.first().copied(), None, k) {
            Ok(new) => {
                if let Some(n) = ike.sas.values_mut().find(|s| s.our_spi() == new) {
                    n.queue
                        .extend(cfgs.iter().skip(1).map(|&c| Todo::CreateChild(c)));
                    // Ask for the same virtual IPs (vip.rs `request`).
                    n.vips.local = vips;
                }
                if let Some(o) = ike.sas.values_mut().find(|s| s.our_spi() == spi) {
                    o.auth.reauth_by = Some(new);
                }
                ike.host.stats.reauthentications += 1;
                ike.host.events.push(IkeEvent::Reauthenticating {
                    name,
                    unique_id: uid,
                });
            }
            // A responder that cannot reach its peer: the SA ends at
            // its hard limit.
            Err(e) => ike.host.events.push(IkeEvent::CommandFailed(e)),
        }
    }
}

/// The reauthenticated IKE SAs whose successor is up (with its Child
/// SAs, if they had any) are deleted; those whose successor failed
/// wait for their hard limit.
pub(crate) fn reauth_handover(ike: &mut Ike, now: Duration, k: &mut dyn Kernel) {
    let mut done = Vec::new();
    let mut failed = Vec::new();
    for s in ike.sas.values() {
        let Some(by) = s.auth.reauth_by else { continue };
        match ike.sas.values().find(|n| n.our_spi() == by) {
            Some(n) if successor_up(s, n) => done.push(s.our_spi()),
            Some(_) => {}
            None => failed.push(s.our_spi()),
        }
    }
    for spi in failed {
        if let Some(s) = ike.sas.values_mut().find(|s| s.our_spi() == spi) {
            s.auth.reauth_by = None;
        }
    }
    for spi in done {
        let Some((_, mut sa)) = ike.sas.find(spi) else {
            continue;
        };
        sa.auth.reauth_by = None;
        if sa.state == IkeState::Established && !sa.deleting() {
            sa.queue.clear();
            sa.queue.push_back(Todo::DeleteIke);
            crate::timers::kick(&mut Cx::new(&mut ike.host, now, k), &mut sa);
        }
    }
}

/// Whether a reauthenticated IKE SA may go now (the daemon polls at
/// once then).
pub(crate) fn reauth_due_now(ike: &Ike, sa: &IkeSa) -> bool {
    sa.auth.reauth_by.is_some_and(|by| {
        ike.sas
            .values()
            .find(|n| n.our_spi() == by)
            .is_none_or(|n| successor_up(sa, n))
    })
}

/// `new` took `old`'s place: established, with a Child SA of each config
/// `old` had (a Child SA whose successor is not up yet would lose its
/// policies with `old`), and the same peer (after a redirect, another
/// gateway, which may present another identity its `remote.id` accepts).
fn successor_up(old: &IkeSa, new: &IkeSa) -> bool {
    new.state == IkeState::Established
        && (new.ids.peer == old.ids.peer || old.redirected.left)
        && child_configs(old)
            .iter()
            .all(|cfg| new.children.iter().any(|c| c.cfg == *cfg))
}

/// The child configs of `sa`'s Child SAs, each once, in order.
fn child_configs(sa: &IkeSa) -> Vec<usize> {
    let mut cfgs: Vec<usize> = Vec::new();
    for c in &sa.children {
        if !cfgs.contains(&c.cfg) {
            cfgs.push(c.cfg);
        }
    }
    cfgs
}
