//! Child SAs, responder (RFC 7296 §1.3.1, §1.3.3, §2.9): a request for
//! one, new or a rekey (REKEY_SA), in CREATE_CHILD_SA or IKE_AUTH: the
//! child config and proposal chosen, the selectors narrowed to ours, PFS,
//! the SAs installed before the answer leaves (ARCHITECTURE.md "Rekeying
//! without loss").
//!
//! ```text
//!  HDR, SK {[N(REKEY_SA),] SA, Ni, [KEi,] TSi, TSr} -->
//!      REKEY_SA names one of ours? ──► no: N(CHILD_SA_NOT_FOUND | TEMPORARY_FAILURE)
//!      a config whose TS meet, mode, proposal? ──► no: N(TS_UNACCEPTABLE | NO_PROPOSAL_CHOSEN)
//!      KEi of the group chosen? ──► no: N(INVALID_KE_PAYLOAD)
//!                       <-- HDR, SK {SA, Nr, [KEr,] TSi, TSr}   (installed)
//! ```

use flowsec_ipsec::{Mode, Protocol};
use flowsec_wire::iana::{DhGroup, ExchangeType, NotifyType, ProtocolId};
use flowsec_wire::ike::{Ke, Message, Notify, Payload, TrafficSelector};

use crate::config::{self, ChildChosen, RekeySwitch};
use crate::context::Cx;
use crate::crypto;
use crate::event::IkeEvent;
use crate::exchange::child::{cpi, ipcomp_supported, min_nonce, peer_cpi, Resource, NONCE_LEN};
use crate::exchange::followup;
use crate::exchange::selectors::narrowed;
use crate::exchange::Collision;
use crate::host::{has_notify, notifies, notify, Host};
use crate::install::Install;
use crate::proto::{protocol_of, suites};
use crate::sa::{ChildState, IkeSa};
use crate::table::{SaMut, Then};

/// Most Child SAs one IKE SA may hold (implementation limit; a peer
/// asking for more gets NO_ADDITIONAL_SAS).
const MAX_CHILDREN: usize = 256;

/// A request of the peer for a Child SA (in IKE_AUTH or CREATE_CHILD_SA),
/// as the responder sees it.
pub(crate) struct ChildAsked<'a> {
    /// The request.
    pub msg: &'a Message,
    /// The Child SA it rekeys (our inbound SPI), named by REKEY_SA.
    pub rekey: Option<u32>,
    /// The nonces of KEYMAT (§2.17): this exchange's, or IKE_SA_INIT's
    /// for IKE_AUTH.
    pub ni: &'a [u8],
    pub nr: &'a [u8],
    /// CREATE_CHILD_SA: the answer carries Nr.
    pub create: bool,
}

/// What the responder chose for a Child SA request: the child config,
/// proposal, mode and the narrowed selectors (ours, the peer's).
struct ChildChoice {
    cfg: usize,
    chosen: ChildChosen,
    mode: Mode,
    local_ts: Vec<TrafficSelector>,
    remote_ts: Vec<TrafficSelector>,
}

/// The responder's KE payload and g^ir, with PFS.
type ChildKe = (Option<Ke>, Option<zeroize::Zeroizing<Vec<u8>>>);

/// Responder: choose, narrow and install a Child SA for the request
/// `asked`, and return the payloads of the answer, or the notify that
/// refuses it (§1.3.1, §2.9).
pub(crate) fn answer_child(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    asked: ChildAsked<'_>,
) -> Result<Vec<Payload>, Payload> {
    let c = crate::host::parts(asked.msg);
    if c.sa.is_none() || c.tsi.is_none() || c.tsr.is_none() {
        return Err(notify(NotifyType::INVALID_SYNTAX, vec![]));
    }
    let old = asked
        .rekey
        .and_then(|spi| sa.children.iter().find(|c| c.spi_in == spi));
    let candidates: Vec<usize> = match old {
        Some(old) => vec![old.cfg],
        None => (0..sa.conn.children.len()).collect(),
    };
    let mut refusal = NotifyType::TS_UNACCEPTABLE;
    for cfg in candidates {
        let choice = match child_choice(sa, &asked, cfg) {
            Ok(choice) => choice,
            Err(why) => {
                refusal = why.unwrap_or(refusal);
                continue;
            }
        };
        let ke = child_ke(cx, c.ke, &choice.chosen)?;
        let protocol = protocol_of(choice.chosen.protocol);
        if protocol == Protocol::Ah
            && (sa.path.nat_local || sa.path.nat_remote || sa.path.transport.is_stream())
        {
            // AH covers the outer addresses a NAT rewrites, and RFC
            // 3948 carries only ESP in UDP.
            refusal = NotifyType::NO_PROPOSAL_CHOSEN;
            continue;
        }
        return accept_child(cx, sa, &asked, choice, ke);
    }
    cx.host.report(
        sa,
        IkeEvent::ChildRequestRefused {
            from: sa.path.remote.ip(),
            notify: refusal,
        },
    );
    Err(notify(refusal, vec![]))
}

/// Responder: install the Child SA `choice` describes (our SPI, and
/// CPI if both want IPComp, §2.22), and the payloads of the answer.
/// With additional key exchanges chosen (RFC 9370 §2.2.4) it is
/// installed after the last of them, and the answer carries our link.
fn accept_child(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    asked: &ChildAsked<'_>,
    choice: ChildChoice,
    (ker, g_ir): ChildKe,
) -> Result<Vec<Payload>, Payload> {
    let ChildChoice {
        cfg,
        chosen,
        mode,
        local_ts,
        remote_ts,
    } = choice;
    let protocol = protocol_of(chosen.protocol);
    let (per_cpu, cpu) = match resource_for(cx, sa, asked, cfg, (&local_ts, &remote_ts)) {
        Ok(place) => place,
        Err(refusal) => {
            cx.host.report(
                sa,
                IkeEvent::ChildRequestRefused {
                    from: sa.path.remote.ip(),
                    notify: NotifyType::TS_MAX_QUEUE,
                },
            );
            return Err(refusal);
        }
    };
    let spi_in = cx.k.alloc_spi_on(protocol, cpu);
    // IPComp if both want it (§2.22): our CPI in the answer.
    let ipcomp = match peer_cpi(asked.msg) {
        Some(theirs) if sa.conn.children[cfg].ipcomp => cpi(cx.k).map(|ours| (ours, theirs)),
        _ => None,
    };
    let reqid = asked
        .rekey
        .and_then(|spi| sa.children.iter().find(|c| c.spi_in == spi))
        .map(|o| o.reqid);
    let additional = chosen.additional();
    let install = Install {
        cfg,
        chosen,
        spi_in,
        mode,
        local_ts,
        remote_ts,
        we_initiated: false,
        reqid,
        min_nonce: min_nonce(asked.ni, asked.nr),
        ipcomp,
        per_cpu,
        cpu,
    };
    let mut answer = child_answer(asked, &install, ker);
    let accepted = AcceptedChild {
        install,
        rekey: asked.rekey,
        g_ir,
        nonces: (asked.ni.to_vec(), asked.nr.to_vec()),
    };
    if additional.is_empty() {
        accepted.make(cx, sa, &[])?;
    } else {
        followup::await_followups(cx, sa, &mut answer, additional, Box::new(accepted));
    }
    Ok(answer)
}

/// Responder: a Child SA we agreed to, to be installed once its keys
/// are known (at once, or after its additional key exchanges).
struct AcceptedChild {
    install: Install,
    /// The Child SA it rekeys (our inbound SPI).
    rekey: Option<u32>,
    /// SK(0): g^ir with PFS.
    g_ir: Option<zeroize::Zeroizing<Vec<u8>>>,
    /// Ni, Nr of the CREATE_CHILD_SA (or IKE_SA_INIT's, for IKE_AUTH).
    nonces: (Vec<u8>, Vec<u8>),
}

impl AcceptedChild {
    /// Install it, `added` (SK(1) | … | SK(n)) in its KEYMAT, and
    /// settle the rekey; else the refusal, with its SPI and CPI given
    /// back.
    fn make(self, cx: &mut Cx<'_>, sa: &mut SaMut<'_>, added: &[u8]) -> Result<(), Payload> {
        let g_ir = self.g_ir.as_deref().map(|v| v.as_slice());
        let (ni, nr) = (&self.nonces.0[..], &self.nonces.1[..]);
        let keymat =
            crate::exchange::child::keymat(cx, sa, &self.install.chosen, (g_ir, added), (ni, nr));
        let Some(keymat) = keymat else {
            followup::Completes::release(&self, cx.k);
            return Err(notify(NotifyType::NO_PROPOSAL_CHOSEN, vec![]));
        };
        let spi_in = self.install.spi_in;
        crate::install::install_child(cx, sa, self.install, &keymat);
        if let Some(old) = self.rekey {
            replaced_by_peer(cx, sa, old, spi_in);
        }
        Ok(())
    }
}

impl followup::Completes for AcceptedChild {
    fn complete(
        self: Box<Self>,
        cx: &mut Cx<'_>,
        sa: &mut SaMut<'_>,
        mid: u32,
        last: Payload,
        added: &[u8],
    ) -> Then {
        let payloads = match self.make(cx, sa, added) {
            Ok(()) => vec![last],
            Err(refusal) => vec![refusal],
        };
        cx.respond(sa, ExchangeType::IKE_FOLLOWUP_KE, mid, payloads);
        Then::Stay
    }

    fn release(&self, k: &mut dyn crate::kernel::Kernel) {
        let i = &self.install;
        k.release_spi(protocol_of(i.chosen.protocol), i.spi_in);
        if let Some((ours, _)) = i.ipcomp {
            k.release_spi(Protocol::IpComp, u32::from(ours));
        }
    }
}

/// Responder: the payloads of the answer that accepts the Child SA
/// `i` (§1.3.1, §2.9): the mode and IPComp notifies (§1.3.1, §2.22),
/// our SA proposal with our SPI, Nr for CREATE_CHILD_SA, KEr with
/// PFS, and the narrowed selectors.
fn child_answer(asked: &ChildAsked<'_>, i: &Install, ker: Option<Ke>) -> Vec<Payload> {
    let mut out = Vec::new();
    if i.mode == Mode::Transport {
        out.push(notify(NotifyType::USE_TRANSPORT_MODE, vec![]));
    }
    if let Some((ours, _)) = i.ipcomp {
        out.push(ipcomp_supported(ours));
    }
    // RFC 9611 §3: we take part, and this SA is ours for `cpu`.
    if i.per_cpu && asked.rekey.is_none() {
        out.extend(i.cpu.map_or(Resource::Fallback, Resource::Cpu).notify());
    }
    out.push(Payload::Sa(vec![config::child_answer(&i.chosen, i.spi_in)]));
    if asked.create {
        out.push(Payload::Nonce(asked.nr.to_vec()));
    }
    if let Some(ke) = ker {
        out.push(Payload::Ke(ke));
    }
    out.push(Payload::TsI(i.remote_ts.clone()));
    out.push(Payload::TsR(i.local_ts.clone()));
    out
}

/// Responder: the peer's rekey replaced Child SA `old` by `new` (our
/// inbound SPIs). The rekey's initiator deletes the old one; if it
/// never does, we do after the grace time. If we were rekeying it
/// too, our request in flight learns of the collision (§2.8.1: our
/// response decides).
/// `prefer-new` takes the old SAs out of the data plane at once;
/// `keep-old` keeps them (and its lifetime) until it expires.
fn replaced_by_peer(cx: &mut Cx<'_>, sa: &mut SaMut<'_>, old: u32, new: u32) {
    let grace = cx.host.settings.rekeyed_grace;
    let mut collided = false;
    let mut drop = false;
    let conn = sa.conn.clone();
    if let Some(c) = sa.children.iter_mut().find(|c| c.spi_in == old) {
        collided = c.state == ChildState::Rekeying;
        c.state = ChildState::Rekeyed;
        c.times.rekey_at = None;
        let switch = crate::install::switch_of(&conn, c.cfg);
        cx.host.stats.count_rekey(switch);
        let rekeyed = crate::counters::Counter::ChildRekey;
        cx.host.counters.count(Some(&conn.name), rekeyed);
        if switch != RekeySwitch::KeepOld {
            c.times.expire_at = Some(cx.now + grace);
        }
        drop = switch == RekeySwitch::PreferNew;
    }
    if drop {
        crate::install::drop_replaced(cx, sa, old);
    }
    if collided {
        sa.exch.collided(Collision::Child { old, theirs: new });
    }
}

/// Responder: a CREATE_CHILD_SA request (§1.3): for the IKE SA (a
/// rekey, rekey.rs), or for a Child SA, new or a rekey of one.
pub(crate) fn child_request(cx: &mut Cx<'_>, sa: &mut SaMut<'_>, mid: u32, msg: Message) -> Then {
    let is_ike = msg.payloads.iter().any(
        |p| matches!(p, Payload::Sa(s) if s.first().is_some_and(|p| p.protocol == ProtocolId::IKE)),
    );
    if is_ike {
        return crate::exchange::rekey::ike_rekey_request(cx, sa, mid, msg);
    }
    let payloads = match rekeyed_child(sa, &msg) {
        Err(refusal) => vec![refusal],
        Ok(None) if sa.children.len() >= MAX_CHILDREN => {
            // A bound on what one peer can make us hold (RFC 7296 §3.10.1).
            vec![notify(NotifyType::NO_ADDITIONAL_SAS, vec![])]
        }
        Ok(old) => {
            let ni = crate::host::parts(&msg).nonce.cloned().unwrap_or_default();
            let nr = cx.host.random(NONCE_LEN);
            let asked = ChildAsked {
                msg: &msg,
                rekey: old,
                ni: &ni,
                nr: &nr,
                create: true,
            };
            answer_child(cx, sa, asked).unwrap_or_else(|n| vec![n])
        }
    };
    cx.respond(sa, ExchangeType::CREATE_CHILD_SA, mid, payloads);
    Then::Stay
}

/// The Child SA a CREATE_CHILD_SA request rekeys (REKEY_SA, §1.3.3), by
/// our inbound SPI; `None` for a new one. Else the notify that refuses
/// it: TEMPORARY_FAILURE while we delete it (§2.25.1), CHILD_SA_NOT_FOUND
/// for one we do not have, INVALID_SYNTAX for a REKEY_SA of no ESP or AH
/// SPI.
fn rekeyed_child(sa: &IkeSa, msg: &Message) -> Result<Option<u32>, Payload> {
    let Some(n) = notifies(msg).find(|n| n.ty == NotifyType::REKEY_SA) else {
        return Ok(None);
    };
    let (proto, spi) = (n.protocol, n.spi.as_slice());
    let (Ok(spi), true) = (
        <[u8; 4]>::try_from(spi),
        proto == ProtocolId::ESP.0 || proto == ProtocolId::AH.0,
    ) else {
        return Err(notify(NotifyType::INVALID_SYNTAX, vec![]));
    };
    let spi = u32::from_be_bytes(spi);
    // The peer names it by its inbound SPI: our outbound one.
    let want = protocol_of(ProtocolId(proto));
    match sa
        .children
        .iter()
        .find(|c| c.spi_out == spi && c.plane.sa_out.protocol == want)
    {
        Some(c) if c.state == ChildState::Deleting => {
            Err(notify(NotifyType::TEMPORARY_FAILURE, vec![]))
        }
        Some(c) => Ok(Some(c.spi_in)),
        None => Err(Payload::Notify(Notify {
            protocol: proto,
            spi: spi.to_be_bytes().to_vec(),
            ty: NotifyType::CHILD_SA_NOT_FOUND,
            data: Vec::new(),
        })),
    }
}

/// Whether child config `cfg` fits the request: the selectors narrowed
/// to ours (§2.9), the mode, a proposal (§2.7, the group of the
/// peer's KE payload first). Else why not: the refusal to answer, or
/// `None` for selectors that do not meet (TS_UNACCEPTABLE, unless
/// another config says more).
fn child_choice(
    sa: &IkeSa,
    asked: &ChildAsked<'_>,
    cfg: usize,
) -> Result<ChildChoice, Option<NotifyType>> {
    let c = crate::host::parts(asked.msg);
    let (Some(sai), Some(tsi), Some(tsr)) = (c.sa, c.tsi, c.tsr) else {
        return Err(Some(NotifyType::INVALID_SYNTAX));
    };
    let child = &sa.conn.children[cfg];
    let (local_ts, remote_ts) = narrowed(sa, child, tsi, tsr).ok_or(None)?;
    let transport = has_notify(asked.msg, NotifyType::USE_TRANSPORT_MODE);
    if child.mode == Mode::Transport && !transport {
        return Err(Some(NotifyType::NO_PROPOSAL_CHOSEN));
    }
    let group = c.ke.map_or(DhGroup::NONE, |k| k.group);
    let ours = crate::exchange::init::promote_child(suites(child).0, group);
    let chosen = config::select_child(&ours, sai, c.ke.is_some())
        .ok_or(Some(NotifyType::NO_PROPOSAL_CHOSEN))?;
    let mode = if transport && child.mode == Mode::Transport {
        Mode::Transport
    } else {
        Mode::Tunnel
    };
    Ok(ChildChoice {
        cfg,
        chosen,
        mode,
        local_ts,
        remote_ts,
    })
}
/// Responder, PFS (§1.3.1): our KE payload and g^ir for the peer's
/// `kei`, which must be of the group chosen (else INVALID_KE_PAYLOAD
/// with ours, §1.3); nothing without one.
fn child_ke(host: &mut Host, kei: Option<&Ke>, chosen: &ChildChosen) -> Result<ChildKe, Payload> {
    let Some(kei) = kei else {
        return Ok((None, None));
    };
    if kei.group != chosen.dh {
        let group = chosen.dh.0.to_be_bytes().to_vec();
        return Err(notify(NotifyType::INVALID_KE_PAYLOAD, group));
    }
    let (ours, g_ir) = crypto::respond(&host.provider, chosen.dh, host.rng.as_mut(), &kei.data)
        .map_err(|e| match e {
            flowsec_crypto::CryptoError::BadPublicValue => {
                notify(NotifyType::INVALID_SYNTAX, vec![])
            }
            _ => notify(NotifyType::NO_PROPOSAL_CHOSEN, vec![]),
        })?;
    let ker = Ke {
        group: ours.group(),
        data: ours.public_value().to_vec(),
    };
    Ok((Some(ker), Some(g_ir)))
}
/// Responder, RFC 9611: whether the Child SA asked for joins a group
/// of per-resource SAs and as whose. A rekey keeps the old SA's
/// place. A request with SA_RESOURCE_INFO for a `per_cpu_sas` child
/// makes the group's fallback if it has none, else the SA of the
/// lowest resource of ours without one (the number the peer sent is
/// for debugging only, §5.1); with every resource taken it is refused
/// with TS_MAX_QUEUE (§5.2). Without the notify, or for a child
/// without `per_cpu_sas`, an ordinary Child SA (the peer sees no
/// SA_RESOURCE_INFO in our answer and asks no more).
fn resource_for(
    host: &Host,
    sa: &IkeSa,
    asked: &ChildAsked<'_>,
    cfg: usize,
    (local_ts, remote_ts): (&[TrafficSelector], &[TrafficSelector]),
) -> Result<(bool, Option<u32>), Payload> {
    if let Some(old) = asked
        .rekey
        .and_then(|spi| sa.children.iter().find(|c| c.spi_in == spi))
    {
        return Ok((old.per_cpu, old.cpu));
    }
    // With one resource (one worker, or a mode without per-resource
    // SAs) we take no part: an ordinary Child SA, no notify back.
    let wanted = sa.conn.children[cfg].per_cpu_sas && host.settings.resources > 1;
    if !wanted || !has_notify(asked.msg, NotifyType::SA_RESOURCE_INFO) {
        return Ok((false, None));
    }
    let group: Vec<Option<u32>> = sa
        .children
        .iter()
        .filter(|c| {
            c.cfg == cfg
                && c.per_cpu
                && c.state != ChildState::Deleting
                && c.local_ts == local_ts
                && c.remote_ts == remote_ts
        })
        .map(|c| c.cpu)
        .collect();
    if !group.contains(&None) {
        return Ok((true, None));
    }
    match (0..host.settings.resources).find(|cpu| !group.contains(&Some(*cpu))) {
        Some(cpu) => Ok((true, Some(cpu))),
        None => Err(notify(NotifyType::TS_MAX_QUEUE, vec![])),
    }
}
