//! Child SAs (RFC 7296 §1.3.1, §1.3.3, §2.8, §2.9, §2.17): the request
//! for one (in IKE_AUTH or CREATE_CHILD_SA), the responder's choice and
//! narrowing, the initiator's check of the answer, installing the pair of
//! SAs and their policies through the [`Kernel`], rekeying with and
//! without PFS, and the §2.8.1 collision rule.
//!
//! ```text
//! Initiator                               Responder
//! HDR, SK {[N(REKEY_SA),] [N(USE_TRANSPORT_MODE),]
//!          SA, Ni, [KEi,] TSi, TSr}  -->
//!                               <--  HDR, SK {[N(USE_TRANSPORT_MODE),] SA, Nr, [KEr,] TSi, TSr}
//! ```
//! KEYMAT = prf+(SK_d, [g^ir (new) |] Ni | Nr): initiator-to-responder
//! encryption and integrity keys first, then responder-to-initiator.

use core::time::Duration;

use flowsec_crypto::suite::integ_key_len;
use flowsec_crypto::EncrId;
use flowsec_ipsec::spd::{Level, SaTemplate};
use flowsec_ipsec::{
    Action, Direction, Lifetime, Limits, Mode, Policy, Protocol, SaConfig, SaId, UdpEncap,
};
use flowsec_wire::iana::{DhGroup, ExchangeType, NotifyType, ProtocolId};
use flowsec_wire::ike::{Ke, Message, Notify, Payload, Proposal, TrafficSelector};

use crate::config::{self, ChildChosen};
use crate::crypto;
use crate::engine::{error_notify, has_notify, notifies, notify, Ike};
use crate::kernel::Kernel;
use crate::sa::{ChildRequest, ChildSa, ChildState, IkeSa, Task, Todo};
use crate::ts;

/// Bytes of our nonces in CREATE_CHILD_SA.
const NONCE_LEN: usize = 32;
/// How long the inbound SA of a replaced Child SA outlives it.
pub(crate) const INBOUND_GRACE: Duration = Duration::from_secs(5);

/// The SA, KE, nonce and selectors of a message.
struct ChildPayloads<'a> {
    sa: Option<&'a Vec<Proposal>>,
    ke: Option<&'a Ke>,
    nonce: Option<&'a Vec<u8>>,
    tsi: Option<&'a Vec<TrafficSelector>>,
    tsr: Option<&'a Vec<TrafficSelector>>,
}

fn child_payloads_of(msg: &Message) -> ChildPayloads<'_> {
    let mut c = ChildPayloads {
        sa: None,
        ke: None,
        nonce: None,
        tsi: None,
        tsr: None,
    };
    for p in &msg.payloads {
        match p {
            Payload::Sa(s) => c.sa = Some(s),
            Payload::Ke(k) => c.ke = Some(k),
            Payload::Nonce(n) => c.nonce = Some(n),
            Payload::TsI(t) => c.tsi = Some(t),
            Payload::TsR(t) => c.tsr = Some(t),
            _ => {}
        }
    }
    c
}

fn min_nonce(a: &[u8], b: &[u8]) -> Vec<u8> {
    a.min(b).to_vec()
}

impl Ike {
    /// A request for a Child SA of `cfg` (rekeying `rekey` if given);
    /// `create` for CREATE_CHILD_SA (a nonce, and a KE for PFS with the
    /// first group of the proposals or `group`).
    pub(crate) fn child_request_for(
        &mut self,
        sa: &mut IkeSa,
        cfg: usize,
        rekey: Option<u32>,
        create: bool,
        group: Option<DhGroup>,
        k: &mut dyn Kernel,
    ) -> ChildRequest {
        let child = &self.config.connections[sa.conn].children[cfg];
        let spi_in = k.alloc_spi(Protocol::Esp);
        let dh = if create {
            group.or_else(|| {
                child
                    .esp_proposals
                    .iter()
                    .flat_map(|p| p.dh.iter())
                    .copied()
                    .find(|g| *g != DhGroup::NONE)
            })
        } else {
            None
        };
        let (tsi, tsr) = match rekey.and_then(|old| sa.children.iter().find(|c| c.spi_in == old)) {
            Some(old) => (old.local_ts.clone(), old.remote_ts.clone()),
            None => (
                ts::from_config(&child.local_ts, sa.local.ip()),
                ts::from_config(&child.remote_ts, sa.remote.ip()),
            ),
        };
        let offer =
            config::child_offer(&child.esp_proposals, ProtocolId::ESP, spi_in, dh.is_some());
        let mode = child.mode;
        let ke = dh.and_then(|g| crypto::key_exchange(g, self.rng.as_mut()).ok());
        let ni = if create {
            self.random(NONCE_LEN)
        } else {
            Vec::new()
        };
        ChildRequest {
            cfg,
            rekey,
            spi_in,
            ni,
            ke,
            offer,
            tsi,
            tsr,
            mode,
        }
    }

    /// The payloads of a Child SA request; with `create` its nonce and KE.
    pub(crate) fn child_payloads(&self, req: &ChildRequest, create: bool) -> Vec<Payload> {
        let mut p = Vec::new();
        if let Some(old) = req.rekey {
            p.push(Payload::Notify(Notify {
                protocol: ProtocolId::ESP.0,
                spi: old.to_be_bytes().to_vec(),
                ty: NotifyType::REKEY_SA,
                data: Vec::new(),
            }));
        }
        if req.mode == Mode::Transport {
            p.push(notify(NotifyType::USE_TRANSPORT_MODE, vec![]));
        }
        p.push(Payload::Sa(req.offer.clone()));
        if create {
            p.push(Payload::Nonce(req.ni.clone()));
            if let Some(ke) = &req.ke {
                p.push(Payload::Ke(Ke {
                    group: ke.group(),
                    data: ke.public_value().to_vec(),
                }));
            }
        }
        p.push(Payload::TsI(req.tsi.clone()));
        p.push(Payload::TsR(req.tsr.clone()));
        p
    }

    /// Start a CREATE_CHILD_SA exchange for a new Child SA of `cfg`, or a
    /// rekey of the one with inbound SPI `rekey`.
    pub(crate) fn start_child(
        &mut self,
        now: Duration,
        sa: &mut IkeSa,
        cfg: usize,
        rekey: Option<u32>,
        k: &mut dyn Kernel,
    ) {
        self.start_child_with(now, sa, cfg, rekey, None, k);
    }

    fn start_child_with(
        &mut self,
        now: Duration,
        sa: &mut IkeSa,
        cfg: usize,
        rekey: Option<u32>,
        group: Option<DhGroup>,
        k: &mut dyn Kernel,
    ) {
        let req = self.child_request_for(sa, cfg, rekey, true, group, k);
        let payloads = self.child_payloads(&req, true);
        if let Some(old) = sa.children.iter_mut().find(|c| Some(c.spi_in) == rekey) {
            old.state = ChildState::Rekeying;
        }
        self.request(
            now,
            sa,
            ExchangeType::CREATE_CHILD_SA,
            payloads,
            Task::Child(req),
        );
    }

    /// Responder: choose, narrow and install a Child SA for the request
    /// in `msg` (rekeying the one with inbound SPI `rekey`), and return
    /// the payloads of the answer, or the notify that refuses it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn answer_child(
        &mut self,
        now: Duration,
        sa: &mut IkeSa,
        msg: &Message,
        rekey: Option<u32>,
        ni: &[u8],
        nr: &[u8],
        create: bool,
        k: &mut dyn Kernel,
    ) -> Result<Vec<Payload>, Payload> {
        let c = child_payloads_of(msg);
        let (Some(sai), Some(tsi), Some(tsr)) = (c.sa, c.tsi, c.tsr) else {
            return Err(notify(NotifyType::INVALID_SYNTAX, vec![]));
        };
        let transport = has_notify(msg, NotifyType::USE_TRANSPORT_MODE);
        let conn = &self.config.connections[sa.conn];
        let old = rekey.and_then(|spi| sa.children.iter().find(|c| c.spi_in == spi));
        let candidates: Vec<usize> = match old {
            Some(old) => vec![old.cfg],
            None => (0..conn.children.len()).collect(),
        };
        let mut refusal = NotifyType::TS_UNACCEPTABLE;
        for cfg in candidates {
            let child = &conn.children[cfg];
            let ours_remote = ts::from_config(&child.remote_ts, sa.remote.ip());
            let ours_local = ts::from_config(&child.local_ts, sa.local.ip());
            let remote_ts = ts::narrow(tsi, &ours_remote);
            let local_ts = ts::narrow(tsr, &ours_local);
            if remote_ts.is_empty()
                || local_ts.is_empty()
                || ts::selector_count(&local_ts, &remote_ts) > ts::MAX_SELECTORS
            {
                continue;
            }
            if child.mode == Mode::Transport && !transport {
                refusal = NotifyType::NO_PROPOSAL_CHOSEN;
                continue;
            }
            let Some(chosen) = config::select_child(
                &crate::init::promote_child(
                    &child.esp_proposals,
                    c.ke.map_or(DhGroup::NONE, |k| k.group),
                ),
                sai,
                c.ke.is_some(),
            ) else {
                refusal = NotifyType::NO_PROPOSAL_CHOSEN;
                continue;
            };
            let mode = if transport && child.mode == Mode::Transport {
                Mode::Transport
            } else {
                Mode::Tunnel
            };
            let mut ker = None;
            let mut g_ir = None;
            if let Some(kei) = c.ke {
                if kei.group != chosen.dh {
                    return Err(notify(
                        NotifyType::INVALID_KE_PAYLOAD,
                        chosen.dh.0.to_be_bytes().to_vec(),
                    ));
                }
                let ours = crypto::key_exchange(chosen.dh, self.rng.as_mut())
                    .map_err(|_| notify(NotifyType::NO_PROPOSAL_CHOSEN, vec![]))?;
                g_ir = Some(
                    ours.shared_secret(&kei.data)
                        .map_err(|_| notify(NotifyType::INVALID_SYNTAX, vec![]))?,
                );
                ker = Some(Ke {
                    group: ours.group(),
                    data: ours.public_value().to_vec(),
                });
            }
            let spi_in = k.alloc_spi(Protocol::Esp);
            let keymat = self
                .keymat(sa, &chosen, g_ir.as_deref().map(|v| v.as_slice()), ni, nr)
                .ok_or_else(|| notify(NotifyType::NO_PROPOSAL_CHOSEN, vec![]))?;
            let reqid = old.map(|o| o.reqid);
            let install = Install {
                cfg,
                chosen: &chosen,
                spi_in,
                mode,
                local_ts: local_ts.clone(),
                remote_ts: remote_ts.clone(),
                we_initiated: false,
                reqid,
                min_nonce: min_nonce(ni, nr),
            };
            self.install_child(now, sa, install, &keymat, k);
            if let Some(spi) = rekey {
                let grace = self.settings.rekeyed_grace;
                if let Some(old) = sa.children.iter_mut().find(|c| c.spi_in == spi) {
                    if old.state == ChildState::Rekeying {
                        // §2.8.1: both rekeyed it; our response decides.
                        sa.collisions.push((spi, spi_in));
                    }
                    old.state = ChildState::Rekeyed;
                    old.rekey_at = None;
                    // The rekey's initiator deletes it; if it never does,
                    // we do after the grace time.
                    old.expire_at = Some(now + grace);
                }
            }
            let mut out = Vec::new();
            if mode == Mode::Transport {
                out.push(notify(NotifyType::USE_TRANSPORT_MODE, vec![]));
            }
            out.push(Payload::Sa(vec![config::child_answer(&chosen, spi_in)]));
            if create {
                out.push(Payload::Nonce(nr.to_vec()));
            }
            if let Some(ke) = ker {
                out.push(Payload::Ke(ke));
            }
            out.push(Payload::TsI(remote_ts));
            out.push(Payload::TsR(local_ts));
            return Ok(out);
        }
        self.events.push(format!(
            "CHILD_SA request from {} refused: {refusal}",
            sa.remote.ip()
        ));
        Err(notify(refusal, vec![]))
    }

    /// The KEYMAT for a Child SA (§2.17).
    fn keymat(
        &self,
        sa: &IkeSa,
        chosen: &ChildChosen,
        g_ir: Option<&[u8]>,
        ni: &[u8],
        nr: &[u8],
    ) -> Option<zeroize::Zeroizing<Vec<u8>>> {
        let keys = sa.keys.as_ref()?;
        let len = 2 * (chosen.encr.map_or(0, |e| e.keymat_len()) + integ_key_len(chosen.integ));
        crypto::child_keymat(keys.suite.prf, &keys.sk_d, g_ir, ni, nr, len).ok()
    }

    /// Initiator: install the Child SA the answer in `msg` describes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn complete_child(
        &mut self,
        now: Duration,
        sa: &mut IkeSa,
        req: ChildRequest,
        msg: &Message,
        ni: &[u8],
        nr: &[u8],
        g_ir: Option<&[u8]>,
        k: &mut dyn Kernel,
    ) -> Result<u32, String> {
        let name = self.child_name(sa, req.cfg);
        let c = child_payloads_of(msg);
        let (Some(sar), Some(tsi), Some(tsr)) = (c.sa.and_then(|s| s.first()), c.tsi, c.tsr) else {
            return Err(format!("CHILD_SA {name}: answer without SA, TSi and TSr"));
        };
        let chosen = config::child_accepts(&req.offer, sar)
            .ok_or_else(|| format!("CHILD_SA {name}: the peer chose what we did not offer"))?;
        if !ts::within(tsi, &req.tsi)
            || !ts::within(tsr, &req.tsr)
            || ts::selector_count(tsi, tsr) > ts::MAX_SELECTORS
        {
            return Err(format!(
                "CHILD_SA {name}: the peer's traffic selectors are not within ours"
            ));
        }
        let transport = has_notify(msg, NotifyType::USE_TRANSPORT_MODE);
        let mode = match (req.mode, transport) {
            (Mode::Transport, true) => Mode::Transport,
            (Mode::Transport, false) => {
                return Err(format!("CHILD_SA {name}: the peer refused transport mode"))
            }
            _ => Mode::Tunnel,
        };
        let keymat = self
            .keymat(sa, &chosen, g_ir, ni, nr)
            .ok_or_else(|| format!("CHILD_SA {name}: key derivation failed"))?;
        let reqid = req
            .rekey
            .and_then(|old| sa.children.iter().find(|c| c.spi_in == old))
            .map(|c| c.reqid);
        let install = Install {
            cfg: req.cfg,
            chosen: &chosen,
            spi_in: req.spi_in,
            mode,
            local_ts: tsi.clone(),
            remote_ts: tsr.clone(),
            we_initiated: true,
            reqid,
            min_nonce: min_nonce(ni, nr),
        };
        self.install_child(now, sa, install, &keymat, k);
        Ok(req.spi_in)
    }

    /// Initiator: the answer to CREATE_CHILD_SA for a Child SA.
    pub(crate) fn child_response(
        &mut self,
        now: Duration,
        mut sa: IkeSa,
        req: ChildRequest,
        msg: Message,
        k: &mut dyn Kernel,
    ) {
        let (cfg, rekey, spi_in) = (req.cfg, req.rekey, req.spi_in);
        let name = self.child_name(&sa, cfg);
        if let Some(n) = error_notify(&msg) {
            let (ty, data) = (n.ty, n.data.clone());
            self.child_refused(now, &mut sa, req, ty, &data, k);
            self.kick(now, sa, k);
            return;
        }
        let c = child_payloads_of(&msg);
        let Some(nr) = c.nonce.cloned() else {
            self.events
                .push(format!("CHILD_SA {name}: answer without a nonce"));
            self.give_up(now, sa, rekey, spi_in, k);
            return;
        };
        let g_ir = match (&req.ke, c.ke) {
            (Some(ours), Some(theirs)) if ours.group() == theirs.group => {
                ours.shared_secret(&theirs.data).ok()
            }
            (None, None) => None,
            _ => {
                self.events
                    .push(format!("CHILD_SA {name}: KE payloads do not match"));
                self.give_up(now, sa, rekey, spi_in, k);
                return;
            }
        };
        if req.ke.is_some() && g_ir.is_none() {
            self.events.push(format!("CHILD_SA {name}: bad KE payload"));
            self.give_up(now, sa, rekey, spi_in, k);
            return;
        }
        let ni = req.ni.clone();
        let new = match self.complete_child(
            now,
            &mut sa,
            req,
            &msg,
            &ni,
            &nr,
            g_ir.as_deref().map(|v| v.as_slice()),
            k,
        ) {
            Ok(spi) => spi,
            Err(why) => {
                self.events.push(why);
                self.give_up(now, sa, rekey, spi_in, k);
                return;
            }
        };
        if let Some(old) = rekey {
            let collided = sa
                .collisions
                .iter()
                .position(|(o, _)| *o == old)
                .map(|i| sa.collisions.remove(i));
            match collided {
                Some((_, theirs)) => {
                    // §2.8.1: the SA made with the lowest of the four
                    // nonces is closed by the end that made it.
                    let ours = min_nonce(&ni, &nr);
                    let their_min = sa
                        .children
                        .iter()
                        .find(|c| c.spi_in == theirs)
                        .map(|c| c.min_nonce.clone());
                    if their_min.is_some_and(|t| ours < t) {
                        self.events.push(format!("CHILD_SA {name}: rekey collision, ours lost: deleting the redundant SA"));
                        sa.queue.push_front(Todo::DeleteChild(new));
                    } else {
                        self.events.push(format!(
                            "CHILD_SA {name}: rekey collision, ours won: deleting the old SA"
                        ));
                        sa.queue.push_front(Todo::DeleteChild(old));
                    }
                }
                None => {
                    if let Some(c) = sa.children.iter_mut().find(|c| c.spi_in == old) {
                        c.state = ChildState::Rekeyed;
                        c.rekey_at = None;
                        sa.queue.push_front(Todo::DeleteChild(old));
                    }
                }
            }
        }
        self.kick(now, sa, k);
    }

    /// The peer refused our CREATE_CHILD_SA with `ty`.
    fn child_refused(
        &mut self,
        now: Duration,
        sa: &mut IkeSa,
        req: ChildRequest,
        ty: NotifyType,
        data: &[u8],
        k: &mut dyn Kernel,
    ) {
        let name = self.child_name(sa, req.cfg);
        k.release_spi(Protocol::Esp, req.spi_in);
        sa.collisions.retain(|(old, _)| Some(*old) != req.rekey);
        if ty == NotifyType::INVALID_KE_PAYLOAD && data.len() == 2 && req.ke.is_some() {
            let group = DhGroup(u16::from_be_bytes([data[0], data[1]]));
            let ours = self.config.connections[sa.conn].children[req.cfg]
                .esp_proposals
                .iter()
                .any(|p| p.dh.contains(&group));
            if ours && req.ke.as_ref().map(|k| k.group()) != Some(group) {
                self.events.push(format!(
                    "CHILD_SA {name}: peer wants DH group {group}: retrying"
                ));
                self.start_child_with(now, sa, req.cfg, req.rekey, Some(group), k);
                return;
            }
        }
        self.events
            .push(format!("CHILD_SA {name}: peer refused: {ty}"));
        match (ty, req.rekey) {
            (NotifyType::CHILD_SA_NOT_FOUND, Some(old)) => self.remove_child(sa, old, k),
            (NotifyType::TEMPORARY_FAILURE, Some(old)) => {
                // §2.25: try again a little later.
                let wait = Duration::from_millis(1000 + u64::from(self.rng.next_u32() % 4000));
                self.restore(sa, Some(old));
                if let Some(c) = sa.children.iter_mut().find(|c| c.spi_in == old) {
                    c.rekey_at = Some(now + wait);
                }
            }
            (_, rekey) => self.restore(sa, rekey),
        }
    }

    /// Our request for a Child SA came to nothing: its SPI goes back, a
    /// rekeyed one goes on, and a collision recorded for it is forgotten.
    fn give_up(
        &mut self,
        now: Duration,
        mut sa: IkeSa,
        rekey: Option<u32>,
        spi_in: u32,
        k: &mut dyn Kernel,
    ) {
        k.release_spi(Protocol::Esp, spi_in);
        self.restore(&mut sa, rekey);
        sa.collisions.retain(|(old, _)| Some(*old) != rekey);
        self.kick(now, sa, k);
    }

    /// A rekey that did not happen: the old Child SA goes on.
    fn restore(&mut self, sa: &mut IkeSa, rekey: Option<u32>) {
        if let Some(c) = sa
            .children
            .iter_mut()
            .find(|c| Some(c.spi_in) == rekey && c.state == ChildState::Rekeying)
        {
            c.state = ChildState::Installed;
        }
    }

    /// Responder: a CREATE_CHILD_SA request.
    pub(crate) fn child_request(
        &mut self,
        now: Duration,
        mut sa: IkeSa,
        mid: u32,
        msg: Message,
        k: &mut dyn Kernel,
    ) {
        let is_ike = msg.payloads.iter().any(|p| matches!(p, Payload::Sa(s) if s.first().is_some_and(|p| p.protocol == ProtocolId::IKE)));
        if is_ike {
            self.ike_rekey_request(now, sa, mid, msg, k);
            return;
        }
        let rekey = notifies(&msg)
            .find(|n| n.ty == NotifyType::REKEY_SA)
            .map(|n| (n.protocol, n.spi.clone()));
        let old = match rekey {
            Some((proto, spi))
                if spi.len() == 4 && (proto == ProtocolId::ESP.0 || proto == ProtocolId::AH.0) =>
            {
                let spi = u32::from_be_bytes([spi[0], spi[1], spi[2], spi[3]]);
                // The peer names it by its inbound SPI: our outbound one.
                match sa.children.iter().find(|c| c.spi_out == spi) {
                    Some(c) if c.state == ChildState::Deleting => {
                        // §2.25.1: we are deleting it.
                        self.respond(
                            &mut sa,
                            ExchangeType::CREATE_CHILD_SA,
                            mid,
                            vec![notify(NotifyType::TEMPORARY_FAILURE, vec![])],
                        );
                        self.kick(now, sa, k);
                        return;
                    }
                    Some(c) => Some(c.spi_in),
                    None => {
                        let n = Payload::Notify(Notify {
                            protocol: proto,
                            spi: spi.to_be_bytes().to_vec(),
                            ty: NotifyType::CHILD_SA_NOT_FOUND,
                            data: Vec::new(),
                        });
                        self.respond(&mut sa, ExchangeType::CREATE_CHILD_SA, mid, vec![n]);
                        self.kick(now, sa, k);
                        return;
                    }
                }
            }
            Some(_) => {
                self.respond(
                    &mut sa,
                    ExchangeType::CREATE_CHILD_SA,
                    mid,
                    vec![notify(NotifyType::INVALID_SYNTAX, vec![])],
                );
                self.kick(now, sa, k);
                return;
            }
            None => None,
        };
        let ni = child_payloads_of(&msg).nonce.cloned().unwrap_or_default();
        let nr = self.random(NONCE_LEN);
        let payloads = match self.answer_child(now, &mut sa, &msg, old, &ni, &nr, true, k) {
            Ok(p) => p,
            Err(n) => vec![n],
        };
        self.respond(&mut sa, ExchangeType::CREATE_CHILD_SA, mid, payloads);
        self.kick(now, sa, k);
    }

    /// Install a Child SA's pair of SAs (and, for a new reqid, its
    /// policies), and record it in `sa`.
    fn install_child(
        &mut self,
        now: Duration,
        sa: &mut IkeSa,
        i: Install<'_>,
        keymat: &[u8],
        k: &mut dyn Kernel,
    ) {
        let child = &self.config.connections[sa.conn].children[i.cfg];
        let chosen = i.chosen;
        let enc_len = chosen.encr.map_or(0, |e| e.keymat_len());
        let dir_len = enc_len + integ_key_len(chosen.integ);
        let (i2r, rest) = keymat.split_at(dir_len.min(keymat.len()));
        let r2i = &rest[..dir_len.min(rest.len())];
        let (out_keys, in_keys) = if i.we_initiated {
            (i2r, r2i)
        } else {
            (r2i, i2r)
        };
        let encap = sa.nat_local || sa.nat_remote;
        let nz = |v: u64| (v != 0).then_some(v);
        // The volume soft limits, with strongSwan's jitter; time is ours.
        let jitter = |limit: u64, rand: u64, r: u64| match limit {
            0 => None,
            l => Some(l - r % (rand.min(l - 1) + 1)),
        };
        let (rb, rp) = (self.rng.next_u64(), self.rng.next_u64());
        let soft_bytes = jitter(child.rekey_bytes, child.rand_bytes, rb);
        let soft_packets = jitter(child.rekey_packets, child.rand_packets, rp);
        let lifetime = Lifetime {
            soft: Limits {
                bytes: soft_bytes,
                packets: soft_packets,
                ..Limits::default()
            },
            hard: Limits {
                bytes: nz(child.life_bytes),
                packets: nz(child.life_packets),
                add_time: (!child.life_time.is_zero()).then_some(child.life_time),
                use_time: None,
            },
        };
        // A trapped child takes the trap's reqid: its policies are there.
        let trap = self
            .traps
            .iter()
            .find(|(_, &(ci, cj))| ci == sa.conn && cj == i.cfg)
            .map(|(r, _)| *r);
        // Another Child SA of the same config and selectors (both ends
        // started it, or `ctl initiate` twice): the same policies serve
        // both, so they share its reqid, as strongSwan's do.
        let twin = self
            .sas
            .values()
            .chain(core::iter::once(&*sa))
            .filter(|s| s.conn == sa.conn)
            .flat_map(|s| s.children.iter())
            .find(|c| c.cfg == i.cfg && c.local_ts == i.local_ts && c.remote_ts == i.remote_ts)
            .map(|c| c.reqid);
        let shared = trap.or(twin);
        let fresh = i.reqid.is_none() && shared.is_none();
        let reqid = match i.reqid.or(shared) {
            Some(r) => r,
            None => {
                self.next_reqid += 1;
                self.next_reqid - 1
            }
        };
        let (local, remote) = (sa.local, sa.remote);
        let make = |spi: u32, src: std::net::SocketAddr, dst: std::net::SocketAddr, keys: &[u8]| {
            let (ek, ik) = keys.split_at(enc_len.min(keys.len()));
            let mut c = SaConfig::esp(spi, i.mode, src.ip(), dst.ip())
                .with_encr(chosen.encr.map_or(EncrId::NULL, |e| e.id), ek)
                .with_integ(chosen.integ, ik);
            c.encap = encap.then_some(UdpEncap {
                src_port: src.port(),
                dst_port: dst.port(),
            });
            c.replay_window = child.replay_window;
            c.esn = chosen.esn;
            c.lifetime = lifetime;
            c.reqid = reqid;
            c
        };
        k.add_sa(make(i.spi_in, remote, local, in_keys));
        // DESIGN.md "Rekeying without loss": the responder of a rekey
        // keeps sending on the old SA until the initiator deletes it (the
        // initiator installs the new inbound SA only when our answer
        // arrives); the new outbound SA waits in the Child SA till then.
        let out = make(chosen.spi, local, remote, out_keys);
        let deferred_out = if i.reqid.is_some() && !i.we_initiated {
            Some(out)
        } else {
            k.add_sa(out);
            None
        };
        let (rekey_time, rand_time, life_time) =
            (child.rekey_time, child.rand_time, child.life_time);
        let name = child.name.clone();
        if fresh {
            self.install_policies(
                reqid,
                i.mode,
                local.ip(),
                remote.ip(),
                &i.local_ts,
                &i.remote_ts,
                k,
            );
        }
        let rekey_at = (!rekey_time.is_zero()).then(|| now + self.jittered(rekey_time, rand_time));
        let fmt_ts = |t: &[TrafficSelector]| t.iter().map(ts_string).collect::<Vec<_>>().join(" ");
        self.events.push(format!(
            "CHILD_SA {name}{{{reqid}}} established with SPIs {:08x}_i {:08x}_o and TS {} === {}",
            i.spi_in,
            chosen.spi,
            fmt_ts(&i.local_ts),
            fmt_ts(&i.remote_ts)
        ));
        sa.children.push(ChildSa {
            cfg: i.cfg,
            reqid,
            mode: i.mode,
            spi_in: i.spi_in,
            spi_out: chosen.spi,
            encr: chosen.encr,
            integ: chosen.integ,
            dh: chosen.dh,
            esn: chosen.esn,
            encap,
            local_ts: i.local_ts,
            remote_ts: i.remote_ts,
            state: ChildState::Installed,
            installed: now,
            rekey_at,
            expire_at: (!life_time.is_zero()).then_some(now + life_time),
            min_nonce: i.min_nonce,
            sa_in: SaId {
                protocol: Protocol::Esp,
                spi: i.spi_in,
                dst: local.ip(),
            },
            sa_out: SaId {
                protocol: Protocol::Esp,
                spi: chosen.spi,
                dst: remote.ip(),
            },
            deferred_out,
        });
    }

    /// The data plane says SA `id` crossed its soft byte or packet limit
    /// (`rekey_bytes`, `rekey_packets`): rekey its Child SA.
    pub fn soft_expired(&mut self, now: Duration, id: SaId, k: &mut dyn Kernel) {
        self.clock = now;
        let owner = self.sas.iter().find_map(|(key, sa)| {
            sa.children
                .iter()
                .find(|c| {
                    c.state == ChildState::Installed && (c.spi_in == id.spi || c.spi_out == id.spi)
                })
                .map(|c| (*key, c.spi_in))
        });
        let Some((key, spi)) = owner else { return };
        let Some(mut sa) = self.sas.remove(&key) else {
            return;
        };
        if !sa.queue.contains(&Todo::RekeyChild(spi)) {
            self.events.push(format!(
                "CHILD_SA with SPI {spi:08x}_i reached its rekey volume: rekeying"
            ));
            sa.queue.push_back(Todo::RekeyChild(spi));
        }
        self.kick(now, sa, k);
    }

    /// Whether some child has a volume limit (the daemon then watches the
    /// SAs' soft state for [`Ike::soft_expired`]).
    pub fn volume_limited(&self) -> bool {
        self.config.connections.iter().any(|c| {
            c.children
                .iter()
                .any(|ch| ch.rekey_bytes > 0 || ch.rekey_packets > 0)
        })
    }

    /// Install the trap policies of child `cj` of connection `ci`: what
    /// matches them and finds no SA makes the data plane ask for one
    /// ([`Ike::acquire`]).
    pub(crate) fn install_trap(
        &mut self,
        ci: usize,
        cj: usize,
        k: &mut dyn Kernel,
    ) -> Result<(), String> {
        let conn = &self.config.connections[ci];
        let child = &conn.children[cj];
        let remote = conn
            .remote_addrs
            .iter()
            .find_map(|a| match a {
                crate::config::AddrSpec::Addr(ip) => Some(*ip),
                _ => None,
            })
            .ok_or_else(|| {
                format!(
                    "{}: start_action = trap needs a single address in remote_addrs",
                    child.name
                )
            })?;
        let local = conn
            .local_addrs
            .iter()
            .find_map(|a| match a {
                crate::config::AddrSpec::Addr(ip) if ip.is_ipv4() == remote.is_ipv4() => Some(*ip),
                _ => None,
            })
            .or_else(|| k.source_for(remote))
            .ok_or_else(|| format!("{}: no local address to reach {remote}", child.name))?;
        let (local_ts, remote_ts) = (
            ts::from_config(&child.local_ts, local),
            ts::from_config(&child.remote_ts, remote),
        );
        let mode = child.mode;
        let name = child.name.clone();
        let reqid = self.next_reqid;
        self.next_reqid += 1;
        self.install_policies(reqid, mode, local, remote, &local_ts, &remote_ts, k);
        self.traps.insert(reqid, (ci, cj));
        let fmt_ts = |t: &[TrafficSelector]| t.iter().map(ts_string).collect::<Vec<_>>().join(" ");
        self.events.push(format!(
            "trap policy {name}{{{reqid}}} installed: {} === {}",
            fmt_ts(&local_ts),
            fmt_ts(&remote_ts)
        ));
        Ok(())
    }

    /// The out and fwd policies of a Child SA (RFC 4301 §4.4.1): traffic
    /// from our selectors to the peer's is protected with the SAs of
    /// `reqid`; what arrives from the peer's must have come through them.
    #[allow(clippy::too_many_arguments)]
    fn install_policies(
        &mut self,
        reqid: u32,
        mode: Mode,
        local: std::net::IpAddr,
        remote: std::net::IpAddr,
        local_ts: &[TrafficSelector],
        remote_ts: &[TrafficSelector],
        k: &mut dyn Kernel,
    ) {
        let template = |src, dst| SaTemplate {
            protocol: Protocol::Esp,
            mode,
            tunnel: (mode == Mode::Tunnel).then_some((src, dst)),
            level: Level::Require,
            reqid,
        };
        let mut installed = Vec::new();
        for (direction, from, to, t) in [
            (Direction::Out, local_ts, remote_ts, template(local, remote)),
            (Direction::Fwd, remote_ts, local_ts, template(remote, local)),
        ] {
            for selector in ts::selectors(from, to) {
                k.add_policy(Policy {
                    direction,
                    selector,
                    action: Action::Protect(vec![t]),
                    priority: 0,
                });
                installed.push((direction, selector));
            }
        }
        self.policies.insert(reqid, installed);
    }

    /// Remove the Child SA with inbound SPI `spi` from `sa` and the data
    /// plane; its policies go with the last SA of its reqid.
    pub(crate) fn remove_child(&mut self, sa: &mut IkeSa, spi: u32, k: &mut dyn Kernel) {
        let Some(at) = sa.children.iter().position(|c| c.spi_in == spi) else {
            return;
        };
        let c = sa.children.remove(at);
        // Its successor starts sending now, before the old SAs go.
        for s in sa.children.iter_mut().filter(|s| s.reqid == c.reqid) {
            if let Some(out) = s.deferred_out.take() {
                k.add_sa(out);
            }
        }
        k.del_sa(c.sa_out);
        // A replaced SA's inbound half stays a while: packets the peer
        // sealed before it switched may still be on their way (DESIGN.md
        // "Rekeying without loss").
        if sa.children.iter().any(|s| s.reqid == c.reqid) {
            self.lingering.push((c.sa_in, self.clock + INBOUND_GRACE));
        } else {
            k.del_sa(c.sa_in);
        }
        let used = sa
            .children
            .iter()
            .chain(self.sas.values().flat_map(|s| s.children.iter()))
            .any(|o| o.reqid == c.reqid);
        // A trap's policies stay: the next packet negotiates again.
        if !used && !self.traps.contains_key(&c.reqid) {
            for (direction, selector) in self.policies.remove(&c.reqid).unwrap_or_default() {
                k.del_policy(direction, selector);
            }
        }
        let name = self.child_name(sa, c.cfg);
        self.events.push(format!(
            "CHILD_SA {name}{{{}}} with SPIs {:08x}_i {:08x}_o removed",
            c.reqid, c.spi_in, c.spi_out
        ));
    }
}

/// What [`Ike::install_child`] installs.
struct Install<'a> {
    cfg: usize,
    chosen: &'a ChildChosen,
    spi_in: u32,
    mode: Mode,
    local_ts: Vec<TrafficSelector>,
    remote_ts: Vec<TrafficSelector>,
    we_initiated: bool,
    reqid: Option<u32>,
    min_nonce: Vec<u8>,
}

/// `10.1.0.0/24` or `10.1.0.1-10.1.0.9`, with `[proto/port]` if narrowed.
pub(crate) fn ts_string(t: &TrafficSelector) -> String {
    let prefixes = ts::range_to_prefixes(t.start, t.end);
    let mut s = if prefixes.len() == 1 {
        format!("{}/{}", prefixes[0].addr(), prefixes[0].prefix_len())
    } else {
        format!("{}-{}", t.start, t.end)
    };
    if t.ip_protocol != 0 || t.start_port != 0 || t.end_port != 0xffff {
        let ports = if t.start_port == 0 && t.end_port == 0xffff {
            String::new()
        } else if t.start_port == t.end_port {
            format!("/{}", t.start_port)
        } else {
            format!("/{}-{}", t.start_port, t.end_port)
        };
        s += &format!("[{}{ports}]", t.ip_protocol);
    }
    s
}
