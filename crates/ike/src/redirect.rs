//! Redirect (RFC 5685) on the engine's side: the command that sends
//! established clients away (vici `redirect`), and a client following the
//! redirects its exchanges met (exchange/redirect.rs) with a new IKE SA
//! at the new gateway.

use core::time::Duration;
use std::net::SocketAddr;

use crate::config::AddrSpec;
use crate::context::Cx;
use crate::error::CommandError;
use crate::event::IkeEvent;
use crate::exchange::init_responder::addr_matches;
use crate::exchange::redirect::{RedirectSelector, LOOP_PERIOD, MAX_REDIRECTS};
use crate::gateway::{GatewayId, RedirectDue, Redirected};
use crate::host::Ike;
use crate::kernel::Kernel;
use crate::sa::{IkeState, Todo};

/// The body of [`Ike::redirect`]: each established IKE SA of a client
/// that announced redirect and matches `select` is sent to `gateway`;
/// how many. strongSwan's rules: at least one selector, not an SA we
/// initiated, not one already on its way (queued, or sent: a second
/// command does not send it again).
pub(crate) fn redirect(
    ike: &mut Ike,
    now: Duration,
    select: &RedirectSelector,
    gateway: &GatewayId,
    k: &mut dyn Kernel,
) -> Result<usize, CommandError> {
    if select == &RedirectSelector::default() {
        return Err(CommandError::RedirectWithoutSelector);
    }
    // strongSwan's `peer-ip`: an address, a CIDR subnet or a range.
    let peer_ip = match &select.peer_ip {
        Some(s) => match AddrSpec::parse(s) {
            Ok(a @ (AddrSpec::Addr(_) | AddrSpec::Prefix(..) | AddrSpec::Range(..))) => Some(a),
            _ => return Err(CommandError::BadPeerIp(s.clone())),
        },
        None => None,
    };
    let peer_id = match &select.peer_id {
        Some(s) => Some(
            crate::config::Identity::parse(s).map_err(|_| CommandError::BadPeerId(s.clone()))?,
        ),
        None => None,
    };
    let spis: Vec<u64> = ike
        .sas
        .values()
        .filter(|sa| {
            sa.state == IkeState::Established
                && !sa.original_initiator
                && sa.announced.redirect
                && !sa.redirected.sent
                && !sa.queue.iter().any(|t| matches!(t, Todo::Redirect(_)))
                && select.ike.as_ref().is_none_or(|n| *n == sa.conn.name)
                && select.ike_id.is_none_or(|id| id == sa.uid)
                && peer_ip
                    .as_ref()
                    .is_none_or(|a| addr_matches(a, sa.path.remote.ip()))
                && peer_id
                    .as_ref()
                    .is_none_or(|p| sa.ids.peer.as_ref().is_some_and(|id| p.matches(id)))
        })
        .map(|sa| sa.our_spi())
        .collect();
    if spis.is_empty() {
        return Err(CommandError::NoRedirectMatch);
    }
    for &spi in &spis {
        let Some((_, mut sa)) = ike.sas.find(spi) else {
            continue;
        };
        sa.queue.push_back(Todo::Redirect(gateway.clone()));
        crate::timers::kick(&mut Cx::new(&mut ike.host, now, k), &mut sa);
    }
    Ok(spis.len())
}

/// The body of the redirects due at the end of a call ([`Ike::poll`]):
/// each makes a new IKE SA at its gateway (port 500, §5), with
/// REDIRECTED_FROM, unless the loop rule says no or the name does not
/// resolve; the old SA, if any, is deleted once the new one is up.
pub(crate) fn follow_due(ike: &mut Ike, now: Duration, k: &mut dyn Kernel) {
    for due in std::mem::take(&mut ike.host.redirect_due) {
        let old = due.old;
        if !follow(ike, now, due, k) {
            // Not followed: the old IKE SA may follow another redirect.
            if let Some(o) = old.and_then(|spi| ike.sas.values_mut().find(|s| s.our_spi() == spi)) {
                o.redirected.left = false;
            }
        }
    }
}

/// One redirect of [`follow_due`]: whether the new IKE SA started.
fn follow(ike: &mut Ike, now: Duration, mut due: RedirectDue, k: &mut dyn Kernel) -> bool {
    due.history.retain(|t| now < *t + LOOP_PERIOD);
    let name = due.conn.name.clone();
    let refuse = |why| {
        ike.host.stats.redirect_refused += 1;
        ike.host
            .events
            .push(IkeEvent::RedirectRefused { name, why });
        false
    };
    if due.history.len() >= MAX_REDIRECTS {
        return refuse("5 redirects within 300 s (RFC 5685 §9): not following another");
    }
    due.history.push(now);
    let target = match &due.to {
        GatewayId::Addr(ip) => Some(*ip),
        GatewayId::Fqdn(host) => k.resolve(host),
    };
    let Some(target) = target else {
        return refuse("the gateway's name does not resolve");
    };
    let redirected = Redirected {
        from: Some(due.from),
        history: due.history,
        ..Default::default()
    };
    let to = SocketAddr::new(target, crate::IKE_PORT);
    let first = due.children.first().copied();
    let new =
        match crate::initiate::connect_redirected(ike, now, due.conn, first, (to, redirected), k) {
            Ok(new) => new,
            Err(e) => {
                ike.host.events.push(IkeEvent::CommandFailed(e));
                return false;
            }
        };
    if let Some(n) = ike.sas.values_mut().find(|s| s.our_spi() == new) {
        n.queue
            .extend(due.children.iter().skip(1).map(|&c| Todo::CreateChild(c)));
    }
    if let Some(o) = due
        .old
        .and_then(|spi| ike.sas.values_mut().find(|s| s.our_spi() == spi))
    {
        o.auth.reauth_by = Some(new);
    }
    true
}
