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
use crate::crypto;
use crate::crypto::KeyExchange;
use crate::engine::{error_notify, notify, Host};
use crate::event::IkeEvent;
use crate::init::new_sa;
use crate::kernel::Kernel;
use crate::sa::{IkeSa, IkeState, Todo};
use crate::table::{SaMut, Then};
use crate::task::{Collision, Task};
use crate::timers::hand_over;

/// Bytes of our nonces.
const NONCE_LEN: usize = 32;

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

impl Host {
    /// Start rekeying `sa`, with its current group or `group`.
    pub(crate) fn start_ike_rekey(&mut self, now: Duration, sa: &mut SaMut<'_>) {
        self.start_ike_rekey_with(now, sa, None);
    }

    fn start_ike_rekey_with(&mut self, now: Duration, sa: &mut SaMut<'_>, group: Option<DhGroup>) {
        let Some(keys) = &sa.keys else { return };
        let group = group.unwrap_or(keys.suite.dh);
        let Ok(ke) = crypto::key_exchange(&self.provider, group, self.rng.as_mut()) else {
            return;
        };
        let spi = self.new_spi(|s| sa.others.contains_spi(s));
        let ni = self.random(NONCE_LEN);
        let mut offer = config::ike_offer(&self.config.connections[sa.conn].proposals);
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
        self.request(
            now,
            sa,
            ExchangeType::CREATE_CHILD_SA,
            payloads,
            Task::IkeRekey(IkeRekey {
                spi,
                ni,
                ke,
                offer,
                collision: None,
            }),
        );
    }

    /// The new IKE SA of a rekey, its keys from the old SA's SK_d.
    #[allow(clippy::too_many_arguments)]
    fn rekeyed_sa(
        &mut self,
        now: Duration,
        old: &IkeSa,
        chosen: &IkeChosen,
        g_ir: &[u8],
        ni: &[u8],
        nr: &[u8],
        spi_i: u64,
        spi_r: u64,
        initiator: bool,
    ) -> Option<IkeSa> {
        let keys = old.keys.as_ref()?;
        let seed = crypto::rekey_skeyseed(&self.provider, keys.suite.prf, &keys.sk_d, g_ir, ni, nr)
            .ok()?;
        let keys = self.keys_from_seed(chosen, &seed, (ni, nr), (spi_i, spi_r), initiator)?;
        let uid = self.next_uid;
        self.next_uid += 1;
        let mut sa = new_sa(
            old.conn, uid, spi_i, spi_r, initiator, old.local, old.remote, now,
        );
        sa.keys = Some(keys);
        sa.nat_local = old.nat_local;
        sa.nat_remote = old.nat_remote;
        sa.peer_id = old.peer_id.clone();
        sa.local_id = old.local_id.clone();
        self.established(now, &mut sa);
        Some(sa)
    }

    /// Responder: the peer rekeys the IKE SA.
    pub(crate) fn ike_rekey_request(
        &mut self,
        now: Duration,
        sa: &mut SaMut<'_>,
        mid: u32,
        msg: Message,
        k: &mut dyn Kernel,
    ) -> Then {
        let refuse = |this: &mut Host, sa: &mut IkeSa, ty: NotifyType, data: Vec<u8>| {
            this.respond(
                sa,
                ExchangeType::CREATE_CHILD_SA,
                mid,
                vec![notify(ty, data)],
            );
        };
        // §2.25.2: not while a Child SA of ours is being made or deleted.
        if matches!(
            sa.exch.task(),
            Some(Task::ChildCreate(_) | Task::ChildRekey(_) | Task::Delete(_))
        ) {
            refuse(self, sa, NotifyType::TEMPORARY_FAILURE, vec![]);
            self.kick(now, sa, k);
            return Then::Stay;
        }
        let p = crate::engine::parts(&msg);
        let (Some(sai), Some(kei), Some(ni)) = (p.sa, p.ke, p.nonce.cloned()) else {
            refuse(self, sa, NotifyType::INVALID_SYNTAX, vec![]);
            self.kick(now, sa, k);
            return Then::Stay;
        };
        let conn = &self.config.connections[sa.conn];
        let Some(chosen) =
            config::select_ike(&crate::init::promote_ike(&conn.proposals, kei.group), sai)
        else {
            refuse(self, sa, NotifyType::NO_PROPOSAL_CHOSEN, vec![]);
            self.kick(now, sa, k);
            return Then::Stay;
        };
        let peer_spi = sai
            .iter()
            .find(|p| p.num == chosen.num)
            .and_then(|p| <[u8; 8]>::try_from(p.spi.as_slice()).ok())
            .map(u64::from_be_bytes);
        let Some(peer_spi) = peer_spi.filter(|s| *s != 0) else {
            refuse(self, sa, NotifyType::INVALID_SYNTAX, vec![]);
            self.kick(now, sa, k);
            return Then::Stay;
        };
        if kei.group != chosen.suite.dh {
            refuse(
                self,
                sa,
                NotifyType::INVALID_KE_PAYLOAD,
                chosen.suite.dh.0.to_be_bytes().to_vec(),
            );
            self.kick(now, sa, k);
            return Then::Stay;
        }
        let ours = crypto::key_exchange(&self.provider, chosen.suite.dh, self.rng.as_mut());
        let g_ir = ours
            .as_ref()
            .ok()
            .and_then(|o| o.shared_secret(&kei.data).ok());
        let (Ok(ours), Some(g_ir)) = (ours, g_ir) else {
            refuse(self, sa, NotifyType::NO_PROPOSAL_CHOSEN, vec![]);
            self.kick(now, sa, k);
            return Then::Stay;
        };
        let spi_r = self.new_spi(|s| sa.others.contains_spi(s));
        let nr = self.random(NONCE_LEN);
        let Some(mut new) =
            self.rekeyed_sa(now, sa, &chosen, &g_ir, &ni, &nr, peer_spi, spi_r, false)
        else {
            refuse(self, sa, NotifyType::NO_PROPOSAL_CHOSEN, vec![]);
            self.kick(now, sa, k);
            return Then::Stay;
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
        self.respond(sa, ExchangeType::CREATE_CHILD_SA, mid, payloads);
        let collision = Collision::Ike {
            theirs: spi_r,
            min_nonce: ni.min(nr),
        };
        // §2.8.2: if both rekeyed, our response decides which SA lives.
        if !sa.exch.collided(collision) {
            new.children = std::mem::take(&mut sa.children);
            hand_over(sa, &mut new);
            sa.state = IkeState::Rekeyed;
            sa.expire_at = Some(now + self.settings.rekeyed_grace);
        }
        self.events.push(IkeEvent::Rekeyed {
            name: self.conn_name(sa),
            unique_id: sa.uid,
            new_unique_id: new.uid,
            by_peer: true,
        });
        Then::Rekeyed {
            new: Box::new(new),
            start: false,
        }
    }

    /// Initiator: the answer to our IKE SA rekey.
    pub(crate) fn ike_rekey_response(
        &mut self,
        now: Duration,
        sa: &mut SaMut<'_>,
        mut req: IkeRekey,
        msg: Message,
        k: &mut dyn Kernel,
    ) -> Then {
        let name = self.conn_name(sa);
        let outcome = self.ike_rekey_outcome(now, sa, &req, &msg);
        let (mut new, nr) = match outcome {
            Ok(made) => made,
            Err((ty, data)) => {
                if ty == NotifyType::INVALID_KE_PAYLOAD
                    && data.len() == 2
                    && req.collision.is_none()
                {
                    let group = DhGroup(u16::from_be_bytes([data[0], data[1]]));
                    if group != req.ke.group()
                        && self.config.connections[sa.conn]
                            .proposals
                            .iter()
                            .any(|p| p.dh.contains(&group))
                    {
                        self.start_ike_rekey_with(now, sa, Some(group));
                        return Then::Stay;
                    }
                }
                self.events.push(IkeEvent::RekeyFailed {
                    name,
                    unique_id: sa.uid,
                    notify: ty,
                });
                if ty == NotifyType::TEMPORARY_FAILURE {
                    sa.rekey_at = Some(
                        now + Duration::from_millis(1000 + u64::from(self.rng.next_u32() % 4000)),
                    );
                }
                self.settle_collision(now, sa, req.collision);
                self.kick(now, sa, k);
                return Then::Stay;
            }
        };
        match req.collision.take() {
            Some((theirs, their_min))
                if req.ni.as_slice().min(nr.as_slice()) < their_min.as_slice() =>
            {
                // §2.8.2: ours has the lowest nonce: ours is redundant
                // and we close it; the peer deletes the old SA.
                self.events.push(IkeEvent::RekeyCollisionLost {
                    name: name.clone(),
                    unique_id: sa.uid,
                });
                let (old, others) = sa.parts();
                if let Some(t) = others.get_mut(theirs) {
                    t.children = std::mem::take(&mut old.children);
                    hand_over(old, t);
                }
                new.queue.push_back(Todo::DeleteIke);
                sa.state = IkeState::Rekeyed;
                sa.expire_at = Some(now + self.settings.rekeyed_grace);
            }
            _ => {
                new.children = std::mem::take(&mut sa.children);
                hand_over(sa, &mut new);
                sa.state = IkeState::Rekeyed;
                sa.expire_at = None;
                sa.queue.clear();
                sa.queue.push_back(Todo::DeleteIke);
            }
        }
        self.events.push(IkeEvent::Rekeyed {
            name,
            unique_id: sa.uid,
            new_unique_id: new.uid,
            by_peer: false,
        });
        Then::Rekeyed {
            new: Box::new(new),
            start: true,
        }
    }

    /// Our rekey did not happen but the peer's did: its SA takes over.
    fn settle_collision(
        &mut self,
        now: Duration,
        sa: &mut SaMut<'_>,
        collision: Option<(u64, Vec<u8>)>,
    ) {
        if let Some((theirs, _)) = collision {
            let (old, others) = sa.parts();
            if let Some(t) = others.get_mut(theirs) {
                t.children = std::mem::take(&mut old.children);
                hand_over(old, t);
            }
            sa.state = IkeState::Rekeyed;
            sa.expire_at = Some(now + self.settings.rekeyed_grace);
        }
    }

    /// The new IKE SA our rekey made, with the peer's nonce, or the
    /// notify that refused it.
    fn ike_rekey_outcome(
        &mut self,
        now: Duration,
        sa: &IkeSa,
        req: &IkeRekey,
        msg: &Message,
    ) -> Result<(IkeSa, Vec<u8>), (NotifyType, Vec<u8>)> {
        if let Some(n) = error_notify(msg) {
            return Err((n.ty, n.data.clone()));
        }
        let syntax = || (NotifyType::INVALID_SYNTAX, Vec::new());
        let p = crate::engine::parts(msg);
        let (Some(sar), Some(ker), Some(nr)) =
            (p.sa.and_then(|s| s.first()), p.ke, p.nonce.cloned())
        else {
            return Err(syntax());
        };
        let chosen = config::ike_accepts(&req.offer, sar)
            .ok_or((NotifyType::NO_PROPOSAL_CHOSEN, Vec::new()))?;
        let spi_r = <[u8; 8]>::try_from(sar.spi.as_slice())
            .map(u64::from_be_bytes)
            .map_err(|_| syntax())?;
        if ker.group != req.ke.group() || chosen.suite.dh != ker.group || spi_r == 0 {
            return Err(syntax());
        }
        let g_ir = req.ke.shared_secret(&ker.data).map_err(|_| syntax())?;
        let new = self.rekeyed_sa(now, sa, &chosen, &g_ir, &req.ni, &nr, req.spi, spi_r, true);
        new.map(|new| (new, nr)).ok_or_else(syntax)
    }
}
