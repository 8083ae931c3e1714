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

use crate::config::{self, IkeChosen};
use crate::context::Cx;
use crate::crypto;
use crate::crypto::KeyExchange;
use crate::event::IkeEvent;
use crate::exchange::init::new_sa;
use crate::exchange::Exchange;
use crate::exchange::{Collision, Kind};
use crate::host::{error_notify, notify};
use crate::sa::{IkeSa, IkeState, Todo};
use crate::table::hand_over;
use crate::table::{SaMut, Then};

/// Bytes of our nonces.
const NONCE_LEN: usize = 32;

/// What an IKE SA rekey agreed on (§2.18): the proposal, g^ir, the nonces
/// (Ni, Nr) and the SPIs of the new SA (SPIi, SPIr).
struct Agreed<'a> {
    chosen: &'a IkeChosen,
    g_ir: &'a [u8],
    nonces: (&'a [u8], &'a [u8]),
    spis: (u64, u64),
}

/// Responder: the IKE SA a rekey of the peer makes, our answer's
/// payloads, and the lowest nonce of the exchange (§2.8.2).
struct RekeyAnswer {
    new: IkeSa,
    payloads: Vec<Payload>,
    min_nonce: Vec<u8>,
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
    let mut offer = config::ike_offer(&without_addke(&sa.conn.proposals));
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
/// (§2.18); we are its original initiator if we started the rekey.
fn rekeyed_sa(cx: &mut Cx<'_>, old: &IkeSa, agreed: Agreed<'_>, initiator: bool) -> Option<IkeSa> {
    let Agreed {
        chosen,
        g_ir,
        nonces: (ni, nr),
        spis,
    } = agreed;
    let keys = old.keys.as_ref()?;
    let seed =
        crypto::rekey_skeyseed(&cx.host.provider, keys.suite.prf, &keys.sk_d, g_ir, ni, nr).ok()?;
    let keys = crate::exchange::init::keys_from_seed(cx, chosen, &seed, (ni, nr), spis, initiator)?;
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

/// Responder: the peer rekeys the IKE SA.
pub(crate) fn ike_rekey_request(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    mid: u32,
    msg: Message,
) -> Then {
    let answer = match ike_rekey_answer(cx, sa, &msg) {
        Ok(answer) => answer,
        Err((ty, data)) => {
            let n = notify(ty, data);
            cx.respond(sa, ExchangeType::CREATE_CHILD_SA, mid, vec![n]);
            return Then::Stay;
        }
    };
    let RekeyAnswer {
        mut new,
        payloads,
        min_nonce,
    } = answer;
    cx.respond(sa, ExchangeType::CREATE_CHILD_SA, mid, payloads);
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

/// Responder: the IKE SA the peer's rekey request makes and our
/// answer (§1.3.2: SA with our SPI, Nr, KEr), or the notify that
/// refuses it.
fn ike_rekey_answer(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    msg: &Message,
) -> Result<RekeyAnswer, (NotifyType, Vec<u8>)> {
    let refuse = |ty| Err((ty, Vec::new()));
    // §2.25.2: not while a Child SA of ours is being made or deleted.
    let busy = [
        Kind::ChildCreate,
        Kind::ChildRekey,
        Kind::DeleteChildren,
        Kind::DeleteIke,
    ];
    if sa.exch.task().is_some_and(|t| busy.contains(&t.kind())) {
        return refuse(NotifyType::TEMPORARY_FAILURE);
    }
    let p = crate::host::parts(msg);
    let (Some(sai), Some(kei), Some(ni)) = (p.sa, p.ke, p.nonce.cloned()) else {
        return refuse(NotifyType::INVALID_SYNTAX);
    };
    let conn = &sa.conn;
    let ours = crate::exchange::init::promote_ike(&without_addke(&conn.proposals), kei.group);
    let Some(chosen) = config::select_ike(&ours, sai, false) else {
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
    let agreed = Agreed {
        chosen: &chosen,
        g_ir: &g_ir,
        nonces: (&ni, &nr),
        spis: (peer_spi, spi_r),
    };
    let Some(new) = rekeyed_sa(cx, sa, agreed, false) else {
        return refuse(NotifyType::NO_PROPOSAL_CHOSEN);
    };
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
    Ok(RekeyAnswer {
        new,
        payloads,
        min_nonce: ni.min(nr),
    })
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

/// The new IKE SA our rekey made, with the peer's nonce, or the
/// notify that refused it.
fn ike_rekey_outcome(
    cx: &mut Cx<'_>,
    sa: &IkeSa,
    req: &IkeRekey,
    msg: &Message,
) -> Result<(IkeSa, Vec<u8>), (NotifyType, Vec<u8>)> {
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
    let agreed = Agreed {
        chosen: &chosen,
        g_ir: &g_ir,
        nonces: (&req.ni, &nr),
        spis: (req.spi, spi_r),
    };
    let new = rekeyed_sa(cx, sa, agreed, true);
    new.map(|new| (new, nr)).ok_or_else(syntax)
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

    /// Initiator: the answer to our IKE SA rekey.
    fn process(self: Box<Self>, cx: &mut Cx<'_>, sa: &mut SaMut<'_>, msg: Message) -> Then {
        let mut req = *self;
        let name = cx.host.conn_name(sa);
        let outcome = ike_rekey_outcome(cx, sa, &req, &msg);
        let (mut new, nr) = match outcome {
            Ok(made) => made,
            Err(refused) => return ike_rekey_refused(cx, sa, req, refused),
        };
        match req.collision.take() {
            Some((theirs, their_min))
                if req.ni.as_slice().min(nr.as_slice()) < their_min.as_slice() =>
            {
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

/// `proposals` without their additional key exchanges: a rekey runs the
/// first key exchange only (RFC 9370 §2.2.4's IKE_FOLLOWUP_KE is not
/// implemented yet; the new SA's keys still derive from SK_d, which the
/// additional exchanges of IKE_SA_INIT went into).
fn without_addke(proposals: &[config::IkeProposal]) -> Vec<config::IkeProposal> {
    proposals
        .iter()
        .map(|p| config::IkeProposal {
            addke: Vec::new(),
            ..p.clone()
        })
        .collect()
}
