//! Child SAs (RFC 7296 §1.3.1, §1.3.3, §2.8), initiator: the answer to our
//! CREATE_CHILD_SA — its nonce and KE checked, then (after the additional
//! key exchanges it chose, RFC 9370 §2.2.4, in IKE_FOLLOWUP_KE) the Child
//! SA installed through child.rs's `complete_child`; a rekey settled (the
//! old SA deleted, §2.8; a collision, §2.8.1); a refusal answered (another
//! group after INVALID_KE_PAYLOAD, a retry after TEMPORARY_FAILURE).

use core::time::Duration;

use flowsec_wire::iana::{DhGroup, NotifyType};
use flowsec_wire::ike::Message;

use crate::config::{self, RekeySwitch};
use crate::context::Cx;
use crate::error::ChildError;
use crate::event::IkeEvent;
use crate::exchange::child::{
    complete_child, min_nonce, start_child_with, Answered, ChildCreate, ChildRekey, ChildRequest,
    Reserved,
};
use crate::exchange::followup::{self, Failure, Followed};
use crate::exchange::{Collision, Exchange, Kind};
use crate::host::{error_notify, Host};
use crate::kernel::Kernel;
use crate::sa::{ChildState, IkeSa, Todo};
use crate::table::{SaMut, Then};

/// Initiator: the answer to CREATE_CHILD_SA for a new Child SA, or
/// for a rekey of `rekey`: (the old SA, the Child SA of a colliding
/// rekey of the peer, §2.8.1). With additional key exchanges chosen
/// (RFC 9370 §2.2.4) the Child SA waits for them.
pub(crate) fn child_response(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    req: ChildRequest,
    rekey: Option<(u32, Option<u32>)>,
    msg: Message,
) -> Then {
    let old = rekey.map(|(old, _)| old);
    if let Some(n) = error_notify(&msg) {
        let (ty, data) = (n.ty, n.data.clone());
        child_refused(cx, sa, req, old, (ty, &data));
        return Then::Stay;
    }
    let (nr, g_ir) = match answered_keys(&req, &msg) {
        Ok(keys) => keys,
        Err(why) => {
            child_failed(cx, sa, &req, old, why);
            return Then::Stay;
        }
    };
    let pending = Box::new(PendingChild {
        req,
        rekey,
        msg,
        nr,
        g_ir,
    });
    let additional = pending.additional();
    if additional.is_empty() {
        return pending.complete(cx, sa, &[]);
    }
    let link = followup::link_of(&pending.msg);
    followup::follow(cx, sa, link, additional, pending)
}

/// Initiator: a Child SA the peer's answer agreed to (its nonce and KE
/// checked, §1.3.1), waiting for its keys: those of the additional key
/// exchanges, if any (RFC 9370 §2.2.4).
struct PendingChild {
    req: ChildRequest,
    /// As [`child_response`]'s.
    rekey: Option<(u32, Option<u32>)>,
    /// The CREATE_CHILD_SA answer.
    msg: Message,
    nr: Vec<u8>,
    /// SK(0): g^ir with PFS.
    g_ir: SharedSecret,
}

/// Initiator: Nr and g^ir (with PFS) of the answer `msg` to our
/// request `req` (§1.3.1), or why it is of no use.
fn answered_keys(req: &ChildRequest, msg: &Message) -> Result<(Vec<u8>, SharedSecret), ChildError> {
    let c = crate::host::parts(msg);
    let nr = c.nonce.cloned().ok_or(ChildError::NoNonce)?;
    let g_ir = match (&req.ke, c.ke) {
        (Some(ours), Some(theirs)) if ours.group() == theirs.group => Some(
            ours.shared_secret(&theirs.data)
                .map_err(|_| ChildError::BadKe)?,
        ),
        (None, None) => None,
        _ => return Err(ChildError::KeMismatch),
    };
    Ok((nr, g_ir))
}

/// g^ir of a Child SA with PFS.
type SharedSecret = Option<zeroize::Zeroizing<Vec<u8>>>;

impl PendingChild {
    /// The additional key exchanges the answer chose, in order.
    fn additional(&self) -> Vec<DhGroup> {
        crate::host::parts(&self.msg)
            .sa
            .and_then(|s| s.first())
            .and_then(|sar| config::child_accepts(&self.req.offer, sar))
            .map(|c| c.additional())
            .unwrap_or_default()
    }
}

impl followup::Followed for PendingChild {
    fn kind(&self) -> Kind {
        match self.rekey {
            Some(_) => Kind::ChildRekey,
            None => Kind::ChildCreate,
        }
    }

    /// Install the Child SA; settle a rekey (§2.8, §2.8.1).
    fn complete(self: Box<Self>, cx: &mut Cx<'_>, sa: &mut SaMut<'_>, added: &[u8]) -> Then {
        let PendingChild {
            req,
            rekey,
            msg,
            nr,
            g_ir,
        } = *self;
        let (name, reserved) = (sa.child_name(req.cfg), req.reserved());
        let old = rekey.map(|(old, _)| old);
        let ni = req.ni.clone();
        let answer = Answered {
            msg: &msg,
            ni: &ni,
            nr: &nr,
            g_ir: g_ir.as_deref().map(|v| v.as_slice()),
            added,
        };
        let new = match complete_child(cx, sa, req, old, answer) {
            Ok(new) => new,
            Err(why) => {
                let reason = why;
                cx.host.report(
                    sa,
                    IkeEvent::ChildFailed {
                        child: name,
                        reason,
                    },
                );
                give_up(cx, sa, old, reserved);
                return Then::Stay;
            }
        };
        let ours = min_nonce(&ni, &nr);
        match rekey {
            Some((old, Some(theirs))) => rekey_collided(cx, sa, name, (old, theirs), (new, ours)),
            Some((old, None)) => replaced_by_us(cx, sa, old),
            None => {}
        }
        Then::Stay
    }

    fn failed(self: Box<Self>, cx: &mut Cx<'_>, sa: &mut SaMut<'_>, why: Failure) -> Then {
        let old = self.rekey.map(|(old, _)| old);
        match why {
            Failure::Refused(ty) => child_refused(cx, sa, self.req, old, (ty, &[])),
            Failure::Unusable(why) => child_failed(cx, sa, &self.req, old, why),
        }
        Then::Stay
    }

    fn release(&self, k: &mut dyn Kernel) {
        self.req.reserved().release(k);
    }

    fn child_cfg(&self) -> Option<usize> {
        Some(self.req.cfg)
    }

    fn collide(&mut self, c: &Collision) -> bool {
        match (c, &mut self.rekey) {
            (Collision::Child { old, theirs }, Some((ours, collision))) if old == ours => {
                *collision = Some(*theirs);
                true
            }
            _ => false,
        }
    }
}

/// Initiator: the answer to our request `req` (rekeying `rekey`) is of
/// no use (`why`): the SPI goes back, a rekeyed SA goes on.
fn child_failed(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    req: &ChildRequest,
    rekey: Option<u32>,
    why: ChildError,
) {
    let child = sa.child_name(req.cfg);
    cx.host
        .report(sa, IkeEvent::ChildFailed { child, reason: why });
    give_up(cx, sa, rekey, req.reserved());
}

/// Initiator: our rekey replaced Child SA `old` (RFC 7296 §2.8: the
/// initiator of a rekey deletes the old SA). `prefer-new` takes its SAs
/// out of the data plane at once; `keep-old` sends no DELETE: each end
/// removes its old SA when its own lifetime ends (timers.rs).
fn replaced_by_us(cx: &mut Cx<'_>, sa: &mut IkeSa, old: u32) {
    let conn = sa.conn.clone();
    let Some(c) = sa.children.iter_mut().find(|c| c.spi_in == old) else {
        return;
    };
    c.state = ChildState::Rekeyed;
    c.times.rekey_at = None;
    let switch = crate::install::switch_of(&conn, c.cfg);
    cx.host.stats.count_rekey(switch);
    let rekeyed = crate::counters::Counter::ChildRekey;
    cx.host.counters.count(Some(&conn.name), rekeyed);
    match switch {
        RekeySwitch::LossFree => sa.queue.push_front(Todo::DeleteChild(old)),
        RekeySwitch::PreferNew => {
            crate::install::drop_replaced(cx, sa, old);
            sa.queue.push_front(Todo::DeleteChild(old));
        }
        RekeySwitch::KeepOld => {}
    }
}

/// The peer refused our CREATE_CHILD_SA (a rekey of `rekey`, if
/// given) with an error notify (its type and data).
fn child_refused(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    req: ChildRequest,
    rekey: Option<u32>,
    (ty, data): (NotifyType, &[u8]),
) {
    let name = sa.child_name(req.cfg);
    req.reserved().release(cx.k);
    if ty == NotifyType::INVALID_KE_PAYLOAD && data.len() == 2 && req.ke.is_some() {
        let group = DhGroup(u16::from_be_bytes([data[0], data[1]]));
        let ours = crate::proto::suites(&sa.conn.children[req.cfg])
            .0
            .iter()
            .any(|p| p.dh.contains(&group));
        if ours && req.ke.as_ref().map(|k| k.group()) != Some(group) {
            cx.host
                .events
                .push(IkeEvent::ChildRetry { child: name, group });
            start_child_with(cx, sa, req.cfg, rekey, Some(group), req.resource);
            return;
        }
    }
    cx.host.report(
        sa,
        IkeEvent::ChildRefused {
            child: name,
            notify: ty,
        },
    );
    match (ty, rekey) {
        // RFC 9611 §5.2: the peer takes no more SAs for these
        // selectors; the resources without one use the fallback.
        (NotifyType::TS_MAX_QUEUE, None) => sa
            .queue
            .retain(|t| !matches!(t, Todo::CreateResource(c, _) if *c == req.cfg)),
        (NotifyType::CHILD_SA_NOT_FOUND, Some(old)) => crate::install::remove_child(cx, sa, old),
        (NotifyType::TEMPORARY_FAILURE, Some(old)) => {
            // §2.25: try again a little later.
            let wait = Duration::from_millis(1000 + u64::from(cx.host.rng.next_u32() % 4000));
            restore(sa, Some(old));
            if let Some(c) = sa.children.iter_mut().find(|c| c.spi_in == old) {
                c.times.rekey_at = Some(cx.now + wait);
            }
        }
        (_, rekey) => restore(sa, rekey),
    }
}

/// Our request for a Child SA came to nothing: its SPI goes back, and
/// a rekeyed one goes on.
fn give_up(cx: &mut Cx<'_>, sa: &mut SaMut<'_>, rekey: Option<u32>, reserved: Reserved) {
    reserved.release(cx.k);
    restore(sa, rekey);
}

/// §2.8.1: both ends rekeyed `old`; ours made `new` (with the lowest
/// nonce `ours`), the peer's `theirs`. The SA made with the lowest of
/// the four nonces is closed by the end that made it.
fn rekey_collided(
    host: &mut Host,
    sa: &mut IkeSa,
    name: String,
    (old, theirs): (u32, u32),
    (new, ours): (u32, Vec<u8>),
) {
    let their_min = sa
        .children
        .iter()
        .find(|c| c.spi_in == theirs)
        .map(|c| c.min_nonce.clone());
    let ours_won = their_min.as_ref().is_none_or(|t| ours >= *t);
    if ours_won && their_min.is_some() {
        // Theirs is redundant and the peer will delete it; it must
        // not start carrying traffic when the old SA goes.
        if let Some(t) = sa.children.iter_mut().find(|c| c.spi_in == theirs) {
            t.plane.deferred_out.clear();
        }
    }
    host.report(
        sa,
        IkeEvent::ChildRekeyCollision {
            child: name,
            ours_won,
        },
    );
    let redundant = if ours_won { old } else { new };
    sa.queue.push_front(Todo::DeleteChild(redundant));
}

/// A rekey that did not happen: the old Child SA goes on.
fn restore(sa: &mut IkeSa, rekey: Option<u32>) {
    if let Some(c) = sa
        .children
        .iter_mut()
        .find(|c| Some(c.spi_in) == rekey && c.state == ChildState::Rekeying)
    {
        c.state = ChildState::Installed;
    }
}

impl Exchange for ChildCreate {
    fn kind(&self) -> Kind {
        Kind::ChildCreate
    }

    fn process(self: Box<Self>, cx: &mut Cx<'_>, sa: &mut SaMut<'_>, msg: Message) -> Then {
        child_response(cx, sa, self.req, None, msg)
    }

    fn release(&self, k: &mut dyn Kernel) {
        self.req.reserved().release(k);
    }

    fn child_cfg(&self) -> Option<usize> {
        Some(self.req.cfg)
    }
}

impl Exchange for ChildRekey {
    fn kind(&self) -> Kind {
        Kind::ChildRekey
    }

    fn process(self: Box<Self>, cx: &mut Cx<'_>, sa: &mut SaMut<'_>, msg: Message) -> Then {
        let rekey = Some((self.old, self.collision));
        child_response(cx, sa, self.req, rekey, msg)
    }

    fn release(&self, k: &mut dyn Kernel) {
        self.req.reserved().release(k);
    }

    fn child_cfg(&self) -> Option<usize> {
        Some(self.req.cfg)
    }

    fn collide(&mut self, c: &Collision) -> bool {
        match *c {
            Collision::Child { old, theirs } if old == self.old => {
                self.collision = Some(theirs);
                true
            }
            _ => false,
        }
    }
}
