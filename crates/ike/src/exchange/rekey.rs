//! Rekeying the IKE SA with CREATE_CHILD_SA (RFC 7296 §1.3.2, §2.18) and
//! its collisions (§2.8.2).
//!
//! ```text
//! Initiator                               Responder
//! HDR, SK {SA (SPIi'), Ni, KEi}  -->
//!                               <--  HDR, SK {SA (SPIr'), Nr, KEr}
//! HDR, SK {D (IKE)} (on the old SA) -->
//! ```
//! SKEYSEED' = prf(SK_d (old), g^ir (new) | Ni | Nr); the Child SAs move
//! to the new IKE SA, whose original initiator is the rekey's initiator.

use core::time::Duration;

use flowsec_wire::iana::{DhGroup, ExchangeType, NotifyType};
use flowsec_wire::ike::{Ke, Message, Payload, Proposal};
use zeroize::Zeroizing;

use crate::config::{self, IkeChosen};
use crate::context::Cx;
use crate::crypto;
use crate::crypto::KeyExchange;
use crate::event::IkeEvent;
use crate::exchange::followup::{self, Failure, Followed, FollowupKe};
use crate::exchange::init::new_sa;
use crate::exchange::{task_as, Exchange};
use crate::exchange::{Collision, Kind};
use crate::host::{error_notify, notify};
use crate::sa::{IkeSa, IkeState, Todo};
use crate::table::hand_over;
use crate::table::{SaMut, Then};

/// Bytes of our nonces.
const NONCE_LEN: usize = 32;

/// What an IKE SA rekey agreed on (§2.18): the proposal, g^ir (SK(0)),
/// the nonces (Ni, Nr) and the SPIs of the new SA (SPIi, SPIr); kept
/// while its additional key exchanges run (RFC 9370 §2.2.4).
struct Agreed {
    chosen: IkeChosen,
    g_ir: Zeroizing<Vec<u8>>,
    nonces: (Vec<u8>, Vec<u8>),
    spis: (u64, u64),
}

impl Agreed {
    /// The lowest nonce of the exchange (§2.8.2).
    fn min_nonce(&self) -> Vec<u8> {
        let (ni, nr) = &self.nonces;
        ni.min(nr).clone()
    }
}

/// CREATE_CHILD_SA rekeying the IKE SA (§1.3.2), initiator: waits for the
/// response.
pub(crate) struct IkeRekey {
    /// Our SPI of the new IKE SA (in our proposals).
    pub spi: u64,
    /// Ni.
    pub ni: Vec<u8>,
    /// KEi.
    pub ke: Box<dyn KeyExchange>,
    /// SA: our proposals.
    pub offer: Vec<Proposal>,
    /// The peer rekeyed the IKE SA too, and we answered while this was in
    /// flight (§2.8.2): our SPI of the IKE SA its rekey made, and the
    /// lowest nonce of that exchange.
    pub collision: Option<(u64, Vec<u8>)>,
}

/// Start rekeying `sa`, with its current group or `group`.
pub(crate) fn start_ike_rekey(cx: &mut Cx<'_>, sa: &mut SaMut<'_>) {
    start_ike_rekey_with(cx, sa, None);
}

fn start_ike_rekey_with(cx: &mut Cx<'_>, sa: &mut SaMut<'_>, group: Option<DhGroup>) {
    let Some(keys) = &sa.keys else { return };
    let group = group.unwrap_or(keys.suite.dh);
    let Ok(ke) = crypto::key_exchange(&cx.host.provider, group, cx.host.rng.as_mut()) else {
        return;
    };
    let spi = cx.host.new_spi(|s| sa.others.contains_spi(s));
    let ni = cx.host.random(NONCE_LEN);
    let mut offer = config::ike_offer(&sa.conn.proposals);
    for p in &mut offer {
        p.spi = spi.to_be_bytes().to_vec();
    }
    let payloads = vec![
        Payload::Sa(offer.clone()),
        Payload::Nonce(ni.clone()),
        Payload::Ke(Ke {
            group: ke.group(),
            data: ke.public_value().to_vec(),
        }),
    ];
    cx.request(
        sa,
        ExchangeType::CREATE_CHILD_SA,
        payloads,
        Box::new(IkeRekey {
            spi,
            ni,
            ke,
            offer,
            collision: None,
        }),
    );
}

/// The new IKE SA of a rekey, its keys from the old SA's SK_d
/// (§2.18) and `added`, SK(1) | … | SK(n) of its additional key
/// exchanges (RFC 9370 §2.2.4); we are its original initiator if we
/// started the rekey.
fn rekeyed_sa(
    cx: &mut Cx<'_>,
    old: &IkeSa,
    agreed: &Agreed,
    added: &[u8],
    initiator: bool,
) -> Option<IkeSa> {
    let Agreed {
        chosen,
        g_ir,
        nonces: (ni, nr),
        spis,
    } = agreed;
    let (ni, nr, spis) = (&ni[..], &nr[..], *spis);
    let keys = old.keys.as_ref()?;
    let (p, prf, ppk) = (&cx.host.provider, keys.suite.prf, keys.ppk);
    let seed = crypto::rekey_skeyseed(p, prf, &keys.sk_d, g_ir, (ni, nr), added).ok()?;
    let mut keys =
        crate::exchange::init::keys_from_seed(cx, chosen, &seed, (ni, nr), spis, initiator)?;
    // RFC 8784 §3: the PPK reaches the new SA through SK_d.
    keys.ppk = ppk;
    let uid = cx.host.next_uid;
    cx.host.next_uid += 1;
    let mut sa = new_sa(
        old.conn.clone(),
        uid,
        spis,
        initiator,
        (old.path.local, old.path.remote),
        cx.now,
    );
    sa.keys = Some(keys);
    sa.path.nat_local = old.path.nat_local;
    // The new IKE SA shares the old one's connection (RFC 9329 §5),
    // whose originator stays the one who opened it (§6.1).
    sa.path.transport = old.path.transport;
    sa.path.stream_originator = old.path.stream_originator;
    sa.path.nat_remote = old.path.nat_remote;
    sa.ids.peer = old.ids.peer.clone();
    sa.ids.local = old.ids.local.clone();
    // A rekey is no new authentication (RFC 7296 §2.8.3).
    sa.auth = old.auth.clone();
    // What IKE_SA_INIT negotiated holds for its successors
    // (strongSwan's ike_sa inherits its extensions on a rekey).
    sa.announced.fragments = old.announced.fragments;
    sa.announced.mobike = old.announced.mobike.clone();
    sa.announced.redirect = old.announced.redirect;
    sa.original_initiator = old.original_initiator;
    sa.redirected = old.redirected.clone();
    // The virtual IPs stay with the peer (RFC 7296 §2.19): held by the
    // new SA too, let go when the last of them goes.
    sa.vips.local = old.vips.local.clone();
    sa.vips.dns = old.vips.dns.clone();
    sa.vips.remote = old.vips.remote.clone();
    for (pool, addr) in &sa.vips.remote {
        cx.host.leases.hold(pool, *addr);
    }
    crate::exchange::auth::established(cx, &mut sa);
    Some(sa)
}

/// Responder: the peer rekeys the IKE SA; with additional key
/// exchanges (RFC 9370 §2.2.4) the new SA is made after the last.
pub(crate) fn ike_rekey_request(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    mid: u32,
    msg: Message,
) -> Then {
    let refuse = |cx: &mut Cx<'_>, sa: &mut SaMut<'_>, (ty, data)| {
        let n = notify(ty, data);
        cx.respond(sa, ExchangeType::CREATE_CHILD_SA, mid, vec![n]);
        Then::Stay
    };
    let (agreed, mut payloads) = match ike_rekey_answer(cx, sa, &msg) {
        Ok(answer) => answer,
        Err(refused) => return refuse(cx, sa, refused),
    };
    let additional = agreed.chosen.additional();
    if !additional.is_empty() {
        let then = Box::new(AcceptedRekey(agreed));
        followup::await_followups(cx, sa, &mut payloads, additional, then);
        cx.respond(sa, ExchangeType::CREATE_CHILD_SA, mid, payloads);
        return Then::Stay;
    }
    let Some(new) = rekeyed_sa(cx, sa, &agreed, &[], false) else {
        return refuse(cx, sa, (NotifyType::NO_PROPOSAL_CHOSEN, Vec::new()));
    };
    cx.respond(sa, ExchangeType::CREATE_CHILD_SA, mid, payloads);
    rekeyed_by_peer(cx, sa, new, agreed.min_nonce())
}

/// Responder: the peer's rekey made `new` (`min_nonce`: the lowest
/// nonce of its exchange), and our answer has gone.
fn rekeyed_by_peer(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    mut new: IkeSa,
    min_nonce: Vec<u8>,
) -> Then {
    let collision = Collision::Ike {
        theirs: new.our_spi(),
        min_nonce,
    };
    // §2.8.2: if both rekeyed, our response decides which SA lives.
    if !sa.exch.collided(collision) {
        new.children = std::mem::take(&mut sa.children);
        hand_over(sa, &mut new);
        sa.state = IkeState::Rekeyed;
        sa.times.expire_at = Some(cx.now + cx.host.settings.rekeyed_grace);
    }
    let counted = crate::counters::Counter::IkeRekeyResp;
    cx.host.counters.count(Some(&sa.conn.name), counted);
    cx.host.report(
        sa,
        IkeEvent::Rekeyed {
            name: cx.host.conn_name(sa),
            unique_id: sa.uid,
            new_unique_id: new.uid,
            by_peer: true,
        },
    );
    Then::Rekeyed {
        new: Box::new(new),
        start: false,
    }
}

/// Responder: a rekey of the peer's waiting for its additional key
/// exchanges.
struct AcceptedRekey(Agreed);

impl followup::Completes for AcceptedRekey {
    fn complete(
        self: Box<Self>,
        cx: &mut Cx<'_>,
        sa: &mut SaMut<'_>,
        mid: u32,
        last: Payload,
        added: &[u8],
    ) -> Then {
        let agreed = self.0;
        let Some(new) = rekeyed_sa(cx, sa, &agreed, added, false) else {
            let n = notify(NotifyType::NO_PROPOSAL_CHOSEN, vec![]);
            cx.respond(sa, ExchangeType::IKE_FOLLOWUP_KE, mid, vec![n]);
            return Then::Stay;
        };
        cx.respond(sa, ExchangeType::IKE_FOLLOWUP_KE, mid, vec![last]);
        rekeyed_by_peer(cx, sa, new, agreed.min_nonce())
    }
}

/// Responder: what the peer's rekey request agreed on and our answer
/// (§1.3.2: SA with our SPI, Nr, KEr), or the notify that refuses it.
fn ike_rekey_answer(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    msg: &Message,
) -> Result<(Agreed, Vec<Payload>), (NotifyType, Vec<u8>)> {
    let refuse = |ty| Err((ty, Vec::new()));
    // §2.25.2: not while a Child SA of ours is being made or deleted;
    // nor once we sent IKE_FOLLOWUP_KE of our own (strongSwan's rule).
    let busy = [
        Kind::ChildCreate,
        Kind::ChildRekey,
        Kind::DeleteChildren,
        Kind::DeleteIke,
    ];
    let task = sa.exch.task();
    if task.is_some_and(|t| busy.contains(&t.kind())) || task_as::<FollowupKe>(task).is_some() {
        return refuse(NotifyType::TEMPORARY_FAILURE);
    }
    let p = crate::host::parts(msg);
    let (Some(sai), Some(kei), Some(ni)) = (p.sa, p.ke, p.nonce.cloned()) else {
        return refuse(NotifyType::INVALID_SYNTAX);
    };
    let ours = crate::exchange::init::promote_ike(&sa.conn.proposals, kei.group);
    // RFC 9370 §2.2.4: additional key exchanges in IKE_FOLLOWUP_KE,
    // whether or not IKE_SA_INIT had IKE_INTERMEDIATE.
    let Some(chosen) = config::select_ike(&ours, sai, true) else {
        return refuse(NotifyType::NO_PROPOSAL_CHOSEN);
    };
    let peer_spi = sai
        .iter()
        .find(|p| p.num == chosen.num)
        .and_then(|p| <[u8; 8]>::try_from(p.spi.as_slice()).ok())
        .map(u64::from_be_bytes);
    let Some(peer_spi) = peer_spi.filter(|s| *s != 0) else {
        return refuse(NotifyType::INVALID_SYNTAX);
    };
    if kei.group != chosen.suite.dh {
        let group = chosen.suite.dh.0.to_be_bytes().to_vec();
        return Err((NotifyType::INVALID_KE_PAYLOAD, group));
    }
    let answered = crypto::respond(
        &cx.host.provider,
        chosen.suite.dh,
        cx.host.rng.as_mut(),
        &kei.data,
    );
    let Ok((ours, g_ir)) = answered else {
        return refuse(NotifyType::NO_PROPOSAL_CHOSEN);
    };
    let spi_r = cx.host.new_spi(|s| sa.others.contains_spi(s));
    let nr = cx.host.random(NONCE_LEN);
    let mut answer = config::ike_answer(&chosen);
    answer.spi = spi_r.to_be_bytes().to_vec();
    let payloads = vec![
        Payload::Sa(vec![answer]),
        Payload::Nonce(nr.clone()),
        Payload::Ke(Ke {
            group: ours.group(),
            data: ours.public_value().to_vec(),
        }),
    ];
    let agreed = Agreed {
        chosen,
        g_ir,
        nonces: (ni, nr),
        spis: (peer_spi, spi_r),
    };
    Ok((agreed, payloads))
}

/// Initiator: our IKE SA rekey came to nothing (the peer's notify, or
/// ours for an answer we cannot use). INVALID_KE_PAYLOAD with a group
/// of ours makes us ask again with it (§1.3); TEMPORARY_FAILURE, later
/// (§2.25). If the peer's rekey crossed ours, its SA takes over.
fn ike_rekey_refused(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    req: IkeRekey,
    (ty, data): (NotifyType, Vec<u8>),
) -> Then {
    if ty == NotifyType::INVALID_KE_PAYLOAD && data.len() == 2 && req.collision.is_none() {
        let group = DhGroup(u16::from_be_bytes([data[0], data[1]]));
        if group != req.ke.group() && sa.conn.proposals.iter().any(|p| p.dh.contains(&group)) {
            start_ike_rekey_with(cx, sa, Some(group));
            return Then::Stay;
        }
    }
    cx.host.report(
        sa,
        IkeEvent::RekeyFailed {
            name: cx.host.conn_name(sa),
            unique_id: sa.uid,
            notify: ty,
        },
    );
    if ty == NotifyType::TEMPORARY_FAILURE {
        let wait = Duration::from_millis(1000 + u64::from(cx.host.rng.next_u32() % 4000));
        sa.times.rekey_at = Some(cx.now + wait);
    }
    settle_collision(cx, sa, req.collision);
    Then::Stay
}

/// Our rekey did not happen but the peer's did: its SA takes over.
fn settle_collision(cx: &mut Cx<'_>, sa: &mut SaMut<'_>, collision: Option<(u64, Vec<u8>)>) {
    if let Some((theirs, _)) = collision {
        let (old, others) = sa.parts();
        if let Some(t) = others.get_mut(theirs) {
            t.children = std::mem::take(&mut old.children);
            hand_over(old, t);
        }
        sa.state = IkeState::Rekeyed;
        sa.times.expire_at = Some(cx.now + cx.host.settings.rekeyed_grace);
    }
}

/// What the answer to our rekey agreed on, or the notify that refused
/// it (ours, INVALID_SYNTAX, for an answer of no use).
fn ike_rekey_agreed(req: &IkeRekey, msg: &Message) -> Result<Agreed, (NotifyType, Vec<u8>)> {
    if let Some(n) = error_notify(msg) {
        return Err((n.ty, n.data.clone()));
    }
    let syntax = || (NotifyType::INVALID_SYNTAX, Vec::new());
    let p = crate::host::parts(msg);
    let (Some(sar), Some(ker), Some(nr)) = (p.sa.and_then(|s| s.first()), p.ke, p.nonce.cloned())
    else {
        return Err(syntax());
    };
    let chosen =
        config::ike_accepts(&req.offer, sar).ok_or((NotifyType::NO_PROPOSAL_CHOSEN, Vec::new()))?;
    let spi_r = <[u8; 8]>::try_from(sar.spi.as_slice())
        .map(u64::from_be_bytes)
        .map_err(|_| syntax())?;
    if ker.group != req.ke.group() || chosen.suite.dh != ker.group || spi_r == 0 {
        return Err(syntax());
    }
    let g_ir = req.ke.shared_secret(&ker.data).map_err(|_| syntax())?;
    Ok(Agreed {
        chosen,
        g_ir,
        nonces: (req.ni.clone(), nr),
        spis: (req.spi, spi_r),
    })
}

impl Exchange for IkeRekey {
    fn kind(&self) -> Kind {
        Kind::IkeRekey
    }

    fn collide(&mut self, c: &Collision) -> bool {
        match c {
            Collision::Ike { theirs, min_nonce } => {
                self.collision = Some((*theirs, min_nonce.clone()));
                true
            }
            Collision::Child { .. } => false,
        }
    }

    /// Initiator: the answer to our IKE SA rekey; with additional key
    /// exchanges chosen (RFC 9370 §2.2.4) the new SA waits for them.
    fn process(self: Box<Self>, cx: &mut Cx<'_>, sa: &mut SaMut<'_>, msg: Message) -> Then {
        let req = *self;
        let agreed = match ike_rekey_agreed(&req, &msg) {
            Ok(agreed) => agreed,
            Err(refused) => return ike_rekey_refused(cx, sa, req, refused),
        };
        let additional = agreed.chosen.additional();
        let pending = Box::new(PendingRekey { req, agreed });
        if additional.is_empty() {
            return pending.complete(cx, sa, &[]);
        }
        followup::follow(cx, sa, followup::link_of(&msg), additional, pending)
    }
}

/// Initiator: our rekey, agreed, waiting for its keys: those of the
/// additional key exchanges, if any.
struct PendingRekey {
    req: IkeRekey,
    agreed: Agreed,
}

impl Followed for PendingRekey {
    fn kind(&self) -> Kind {
        Kind::IkeRekey
    }

    fn collide(&mut self, c: &Collision) -> bool {
        self.req.collide(c)
    }

    fn failed(self: Box<Self>, cx: &mut Cx<'_>, sa: &mut SaMut<'_>, why: Failure) -> Then {
        let ty = match why {
            Failure::Refused(ty) => ty,
            Failure::Unusable(_) => NotifyType::INVALID_SYNTAX,
        };
        ike_rekey_refused(cx, sa, self.req, (ty, Vec::new()))
    }

    /// The new IKE SA takes the Child SAs, unless the peer's colliding
    /// rekey had the lower nonce (§2.8.2).
    fn complete(self: Box<Self>, cx: &mut Cx<'_>, sa: &mut SaMut<'_>, added: &[u8]) -> Then {
        let PendingRekey { mut req, agreed } = *self;
        let Some(mut new) = rekeyed_sa(cx, sa, &agreed, added, true) else {
            let refused = (NotifyType::INVALID_SYNTAX, Vec::new());
            return ike_rekey_refused(cx, sa, req, refused);
        };
        let name = cx.host.conn_name(sa);
        match req.collision.take() {
            Some((theirs, their_min)) if agreed.min_nonce() < their_min => {
                // §2.8.2: ours has the lowest nonce: ours is redundant
                // and we close it; the peer deletes the old SA.
                cx.host.report(
                    sa,
                    IkeEvent::RekeyCollisionLost {
                        name: name.clone(),
                        unique_id: sa.uid,
                    },
                );
                let (old, others) = sa.parts();
                if let Some(t) = others.get_mut(theirs) {
                    t.children = std::mem::take(&mut old.children);
                    hand_over(old, t);
                }
                new.queue.push_back(Todo::DeleteIke);
                sa.state = IkeState::Rekeyed;
                sa.times.expire_at = Some(cx.now + cx.host.settings.rekeyed_grace);
            }
            _ => {
                new.children = std::mem::take(&mut sa.children);
                hand_over(sa, &mut new);
                sa.state = IkeState::Rekeyed;
                sa.times.expire_at = None;
                sa.queue.clear();
                sa.queue.push_back(Todo::DeleteIke);
            }
        }
        let counted = crate::counters::Counter::IkeRekeyInit;
        cx.host.counters.count(Some(&sa.conn.name), counted);
        cx.host.report(
            sa,
            IkeEvent::Rekeyed {
                name,
                unique_id: sa.uid,
                new_unique_id: new.uid,
                by_peer: false,
            },
        );
        Then::Rekeyed {
            new: Box::new(new),
            start: true,
        }
    }
}
