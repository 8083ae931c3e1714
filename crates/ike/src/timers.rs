//! An IKE SA's clock-driven side: retransmissions and giving up on a dead
//! peer (then `dpd_action`), the rekey and lifetime timers of IKE and
//! Child SAs, dead-peer detection (RFC 7296 §1.4: an empty INFORMATIONAL
//! after `dpd_delay` of silence), the inbound SAs kept after a rekey, and
//! starting queued tasks when the window is free.

use flowsec_wire::iana::ExchangeType;

use crate::config::RekeySwitch;
use crate::context::Cx;
use crate::event::IkeEvent;
use crate::sa::{ChildState, IkeSa, IkeState, Todo};
use crate::table::{SaMut, Then};

/// One IKE SA's turn in [`crate::Ike::poll`].
pub(crate) fn poll_sa(cx: &mut Cx<'_>, sa: &mut SaMut<'_>) -> Then {
    match sa.exch.poll(cx.now, &cx.host.settings.retransmit) {
        // RFC 9329 §6.2: over a stream the request is not sent again
        // (TCP delivers it or the connection breaks, and a reconnect
        // resends it); the timers run on, so an unanswered peer is
        // declared dead at the same time as over UDP.
        Ok(Some(_)) if sa.path.transport.is_stream() => {}
        Ok(Some(data)) => {
            cx.host.stats.retransmits += 1;
            cx.host
                .push_all(sa.path.transport, sa.path.local, sa.path.remote, data);
        }
        Ok(None) => {}
        Err(()) => {
            cx.host.stats.peers_dead += 1;
            let after = crate::table::after_death(sa);
            cx.host.report(
                sa,
                IkeEvent::PeerDead {
                    name: cx.host.conn_name(sa),
                    unique_id: sa.uid,
                    remote: sa.path.remote,
                    retransmits: cx.host.settings.retransmit.tries,
                },
            );
            return Then::Destroy(after);
        }
    }
    match sa.state {
        // A half-open SA holds nothing yet: it is forgotten.
        IkeState::HalfOpen if cx.now >= sa.times.created + cx.host.settings.half_open_timeout => {
            return Then::Destroy(Vec::new())
        }
        IkeState::Rekeyed | IkeState::Deleting
            if sa.times.expire_at.is_some_and(|t| cx.now >= t) =>
        {
            return Then::Destroy(Vec::new())
        }
        IkeState::Established => timers(cx, sa),
        _ => {}
    }
    kick(cx, sa);
    Then::Stay
}

/// The Established SA's timers: its rekey, hard lifetime,
/// revocation, reauthentication, NAT keepalive and DPD; then its Child
/// SAs'.
fn timers(cx: &mut Cx<'_>, sa: &mut SaMut<'_>) {
    if sa.times.rekey_at.is_some_and(|t| cx.now >= t) {
        sa.times.rekey_at = None;
        sa.queue.push_back(Todo::RekeyIke);
    }
    if sa.times.expire_at.is_some_and(|t| cx.now >= t) {
        sa.times.expire_at = None;
        sa.queue.push_back(Todo::DeleteIke);
    }
    if sa.auth.revoked && !sa.deleting() {
        sa.queue.clear();
        sa.queue.push_back(Todo::DeleteIke);
    }
    if sa.auth.reauth_at.is_some_and(|t| cx.now >= t) {
        sa.auth.reauth_at = None;
        cx.host.reauth_due.push(sa.our_spi());
    }
    keep_nat_alive(cx, sa);
    let conn = &sa.conn;
    let dpd = conn.dpd_delay;
    if !dpd.is_zero()
        && sa.exch.idle()
        && sa.queue.is_empty()
        && cx.now >= sa.times.last_heard + dpd
    {
        sa.queue.push_back(Todo::Dpd);
    }
    child_timers(cx, sa);
}

/// A NAT keepalive when one is due (RFC 3948 §2.3): behind a NAT, keep
/// its mapping (the ESP in UDP would keep it too; the core does not
/// see that traffic). Not over a stream (RFC 9329 §6.6: SHOULD NOT).
fn keep_nat_alive(cx: &mut Cx<'_>, sa: &mut IkeSa) {
    let keep_alive = cx.host.settings.keep_alive;
    if sa.path.nat_local
        && !sa.path.transport.is_stream()
        && !keep_alive.is_zero()
        && cx.now >= sa.times.last_sent + keep_alive
    {
        sa.times.last_sent = cx.now;
        let ka = vec![flowsec_wire::udp_encap::NAT_KEEPALIVE];
        cx.host.stats.sent += 1;
        cx.host.out.push_back(crate::transport::Datagram {
            transport: sa.path.transport,
            local: sa.path.local,
            remote: sa.path.remote,
            data: ka,
        });
    }
}

/// The Child SAs' timers: a rekey queued when due; at the hard
/// lifetime (RFC 4301 §4.4.2.1) the SA deleted, or with `keep-old`
/// a rekeyed SA switched to its successor.
fn child_timers(cx: &mut Cx<'_>, sa: &mut SaMut<'_>) {
    let mut expired = Vec::new();
    let ike: &mut IkeSa = sa;
    for c in &mut ike.children {
        if c.times.rekey_at.is_some_and(|t| cx.now >= t) {
            c.times.rekey_at = None;
            ike.queue.push_back(Todo::RekeyChild(c.spi_in));
        }
        if c.times.expire_at.is_some_and(|t| cx.now >= t) {
            expired.push(c.spi_in);
        }
    }
    for spi in expired {
        let conn = sa.conn.clone();
        let Some(c) = sa.children.iter_mut().find(|c| c.spi_in == spi) else {
            continue;
        };
        c.times.expire_at = None;
        let keep_old = c.state == ChildState::Rekeyed
            && crate::install::switch_of(&conn, c.cfg) == RekeySwitch::KeepOld;
        if keep_old {
            // `keep-old` (study S2's behaviour): the end whose old SA
            // expires switches to the successor and drops the old one,
            // telling nobody; the peer does the same at its own expiry.
            cx.host.events.push(IkeEvent::ChildSwitched { spi_in: spi });
            crate::install::remove_child(cx, sa, spi);
        } else {
            // The hard lifetime (RFC 4301 §4.4.2.1): the SA goes now;
            // the peer is told.
            cx.host.events.push(IkeEvent::ChildExpired { spi_in: spi });
            sa.queue.push_back(Todo::DeleteChild(spi));
        }
    }
}

/// If the window is free, start the next queued task of `sa`.
pub(crate) fn kick(cx: &mut Cx<'_>, sa: &mut SaMut<'_>) {
    while sa.exch.idle() {
        if !can_start(sa) {
            break;
        }
        let Some(todo) = sa.queue.pop_front() else {
            break;
        };
        match todo {
            Todo::CreateChild(cfg) => crate::exchange::child::start_child(cx, sa, cfg, None),
            Todo::CreateResource(cfg, cpu) => {
                crate::exchange::child::start_resource_child(cx, sa, cfg, cpu)
            }
            Todo::RekeyChild(spi) => {
                if let Some(cfg) = sa
                    .children
                    .iter()
                    .find(|c| c.spi_in == spi && c.state == crate::sa::ChildState::Installed)
                    .map(|c| c.cfg)
                {
                    crate::exchange::child::start_child(cx, sa, cfg, Some(spi));
                }
            }
            Todo::RekeyIke => crate::exchange::rekey::start_ike_rekey(cx, sa),
            Todo::DeleteChild(spi) => crate::exchange::info::start_delete_child(cx, sa, spi),
            Todo::DeleteIke => crate::exchange::info::start_delete_ike(cx, sa),
            Todo::UpdateAddresses => crate::exchange::mobike::start_update(cx, sa),
            Todo::Redirect(gw) => crate::exchange::redirect::start(cx, sa, gw),
            Todo::Dpd => cx.request(
                sa,
                ExchangeType::INFORMATIONAL,
                vec![],
                Box::new(crate::exchange::info::Dpd),
            ),
        }
    }
}

/// Whether `sa` may start the task at the front of its queue now: an
/// established SA any, a replaced one only its own DELETE. (The daemon
/// polls again at once while this holds, so it must turn false once the
/// task has started.)
pub(crate) fn can_start(sa: &IkeSa) -> bool {
    match sa.state {
        IkeState::Established => !sa.queue.is_empty(),
        IkeState::Rekeyed => matches!(sa.queue.front(), Some(Todo::DeleteIke)),
        _ => false,
    }
}
