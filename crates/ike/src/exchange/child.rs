//! Child SAs (RFC 7296 §1.3.1, §1.3.3, §2.17), initiator: the request
//! for one (in IKE_AUTH or CREATE_CHILD_SA, with and without PFS), the
//! check of the answer and its install (install.rs); what the
//! CREATE_CHILD_SA answer does (additional key exchanges, rekeys and
//! their §2.8.1 collisions, refusals) is child_answer.rs; the
//! responder's side is child_responder.rs.
//!
//! ```text
//! Initiator                               Responder
//! HDR, SK {[N(REKEY_SA),] [N(USE_TRANSPORT_MODE),]
//!          SA, Ni, [KEi,] TSi, TSr}  -->
//!                               <--  HDR, SK {[N(USE_TRANSPORT_MODE),] SA, Nr, [KEr,] TSi, TSr}
//! ```
//! KEYMAT = prf+(SK_d, [g^ir (new) |] Ni | Nr [| SK(1) | … | SK(n)]):
//! initiator-to-responder encryption and integrity keys first, then
//! responder-to-initiator.

use flowsec_crypto::suite::integ_key_len;
use flowsec_ipsec::{Mode, Protocol};
use flowsec_wire::iana::{DhGroup, ExchangeType, NotifyType, ProtocolId};
use flowsec_wire::ike::{Ke, Message, Notify, Payload, Proposal, TrafficSelector};

use crate::config::{self, ChildChosen};
use crate::context::Cx;
use crate::crypto;
use crate::crypto::KeyExchange;
use crate::error::ChildError;
use crate::event::IkeEvent;
use crate::host::{has_notify, notifies, notify, Host};
use crate::install::Install;
use crate::kernel::Kernel;
use crate::sa::{ChildState, IkeSa, Todo};
use crate::table::SaMut;
use crate::ts;

/// Bytes of our nonces in CREATE_CHILD_SA.
pub(crate) const NONCE_LEN: usize = 32;

/// A request of ours for a Child SA (in IKE_AUTH or CREATE_CHILD_SA):
/// what we offered and reserved, and our half of its key exchange.
pub(crate) struct ChildRequest {
    /// Its config: `children[cfg]` of the connection.
    pub cfg: usize,
    /// Our inbound SPI, reserved.
    pub spi_in: u32,
    /// Ni (CREATE_CHILD_SA only).
    pub ni: Vec<u8>,
    /// KEi, for PFS (CREATE_CHILD_SA only, §1.3.1).
    pub ke: Option<Box<dyn KeyExchange>>,
    /// SA: our proposals.
    pub offer: Vec<Proposal>,
    /// TSi, TSr.
    pub tsi: Vec<TrafficSelector>,
    pub tsr: Vec<TrafficSelector>,
    pub mode: Mode,
    /// Our CPI, when we offer IPComp (IPCOMP_SUPPORTED, §2.22).
    pub cpi_in: Option<u16>,
    /// ESP or AH.
    pub protocol: Protocol,
    /// What it says of per-resource SAs (RFC 9611).
    pub resource: Resource,
}

/// What a Child SA request says of RFC 9611's per-resource Child SAs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resource {
    /// Nothing: `per_cpu_sas = no`, or a rekey (the new SA keeps the old
    /// one's resource on both ends; strongSwan sends no SA_RESOURCE_INFO
    /// in a rekey either).
    Plain,
    /// The first Child SA of a `per_cpu_sas` child: the group's fallback,
    /// with an empty SA_RESOURCE_INFO (RFC 9611 §5.1: the data is
    /// optional).
    Fallback,
    /// Resource `cpu`'s SA: SA_RESOURCE_INFO carries the number in four
    /// octets, as strongSwan's does (the peer may only log it).
    Cpu(u32),
}

impl Resource {
    /// The SA_RESOURCE_INFO notify it sends, if any.
    pub fn notify(self) -> Option<Payload> {
        match self {
            Resource::Plain => None,
            Resource::Fallback => Some(notify(NotifyType::SA_RESOURCE_INFO, vec![])),
            Resource::Cpu(cpu) => Some(notify(
                NotifyType::SA_RESOURCE_INFO,
                cpu.to_be_bytes().to_vec(),
            )),
        }
    }
}

/// What a Child SA request of ours reserved in the data plane: given back
/// when it does not complete.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reserved {
    protocol: Protocol,
    spi_in: u32,
    cpi_in: Option<u16>,
}

impl ChildRequest {
    /// What it reserved.
    pub fn reserved(&self) -> Reserved {
        Reserved {
            protocol: self.protocol,
            spi_in: self.spi_in,
            cpi_in: self.cpi_in,
        }
    }
}

impl Reserved {
    /// Give back the SPI (and CPI) it will not use.
    pub fn release(self, k: &mut dyn Kernel) {
        k.release_spi(self.protocol, self.spi_in);
        if let Some(cpi) = self.cpi_in {
            k.release_spi(Protocol::IpComp, u32::from(cpi));
        }
    }
}

/// CREATE_CHILD_SA for a new Child SA (§1.3.1), initiator: waits for the
/// response.
pub(crate) struct ChildCreate {
    /// What we asked for.
    pub req: ChildRequest,
}

/// CREATE_CHILD_SA rekeying the Child SA with our inbound SPI `old`
/// (§1.3.3, §2.8), initiator: waits for the response.
pub(crate) struct ChildRekey {
    /// The Child SA it replaces.
    pub old: u32,
    /// What we asked for.
    pub req: ChildRequest,
    /// The peer rekeyed `old` too, and we answered while this was in
    /// flight (§2.8.1): the Child SA its rekey made (our inbound SPI).
    pub collision: Option<u32>,
}

/// The answer to a Child SA request of ours, with what its KEYMAT comes
/// from (§2.17): g^ir (PFS), Ni and Nr, and the secrets of the
/// additional key exchanges (RFC 9370 §2.2.4).
pub(crate) struct Answered<'a> {
    pub msg: &'a Message,
    pub ni: &'a [u8],
    pub nr: &'a [u8],
    pub g_ir: Option<&'a [u8]>,
    pub added: &'a [u8],
}

pub(crate) fn min_nonce(a: &[u8], b: &[u8]) -> Vec<u8> {
    a.min(b).to_vec()
}

/// A request for a Child SA of `cfg` (rekeying `rekey` if given);
/// `create` for CREATE_CHILD_SA (a nonce, and a KE for PFS with the
/// first group of the proposals or `group`); `resource`: what it asks
/// of per-resource SAs.
#[allow(clippy::too_many_arguments)]
pub(crate) fn child_request_for(
    cx: &mut Cx<'_>,
    sa: &mut IkeSa,
    cfg: usize,
    rekey: Option<u32>,
    create: bool,
    group: Option<DhGroup>,
    resource: Resource,
) -> ChildRequest {
    let child = &sa.conn.children[cfg];
    let (proposals, protocol) = crate::proto::suites(child);
    // A per-resource SA's inbound SPI is one the data plane steers to
    // its resource; a rekey's, to the old SA's.
    let cpu = match resource {
        Resource::Cpu(cpu) => Some(cpu),
        _ => rekey
            .and_then(|old| sa.children.iter().find(|c| c.spi_in == old))
            .and_then(|c| c.cpu),
    };
    let spi_in = cx.k.alloc_spi_on(protocol, cpu);
    let dh = if create {
        group.or_else(|| {
            proposals
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
            ts::from_config_dynamic(&child.local_ts, &crate::vip::local_dynamic(sa)),
            ts::from_config(&child.remote_ts, sa.path.remote.ip()),
        ),
    };
    let offer = config::child_offer(
        proposals,
        crate::proto::protocol_id(protocol),
        spi_in,
        dh.is_some(),
    );
    let mode = child.mode;
    // Without a CPI left, no IPComp (strongSwan does the same).
    let cpi_in = if child.ipcomp { cpi(cx.k) } else { None };
    let ke = dh.and_then(|g| crypto::key_exchange(&cx.host.provider, g, cx.host.rng.as_mut()).ok());
    let ni = if create {
        cx.host.random(NONCE_LEN)
    } else {
        Vec::new()
    };
    ChildRequest {
        cfg,
        spi_in,
        ni,
        ke,
        offer,
        tsi,
        tsr,
        mode,
        cpi_in,
        protocol,
        resource,
    }
}

/// Start a CREATE_CHILD_SA exchange for a new Child SA of `cfg`, or a
/// rekey of the one with inbound SPI `rekey`.
pub(crate) fn start_child(cx: &mut Cx<'_>, sa: &mut IkeSa, cfg: usize, rekey: Option<u32>) {
    let resource = first_resource(sa, cfg, rekey);
    start_child_with(cx, sa, cfg, rekey, None, resource);
}

/// Start a CREATE_CHILD_SA exchange for resource `cpu`'s Child SA of
/// `cfg` (RFC 9611), unless the group has one for it already.
pub(crate) fn start_resource_child(cx: &mut Cx<'_>, sa: &mut IkeSa, cfg: usize, cpu: u32) {
    let has = sa.children.iter().any(|c| {
        c.cfg == cfg && c.per_cpu && c.cpu == Some(cpu) && c.state != ChildState::Deleting
    });
    if !has {
        start_child_with(cx, sa, cfg, None, None, Resource::Cpu(cpu));
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn start_child_with(
    cx: &mut Cx<'_>,
    sa: &mut IkeSa,
    cfg: usize,
    rekey: Option<u32>,
    group: Option<DhGroup>,
    resource: Resource,
) {
    let req = child_request_for(cx, sa, cfg, rekey, true, group, resource);
    let payloads = child_payloads(&req, rekey, true);
    if let Some(old) = sa.children.iter_mut().find(|c| Some(c.spi_in) == rekey) {
        old.state = ChildState::Rekeying;
    }
    let task: crate::exchange::Task = match rekey {
        Some(old) => Box::new(ChildRekey {
            old,
            req,
            collision: None,
        }),
        None => Box::new(ChildCreate { req }),
    };
    cx.request(sa, ExchangeType::CREATE_CHILD_SA, payloads, task);
}

/// Initiator: install the Child SA `answer` describes, for our
/// request `req` (rekeying `rekey`, if given); its inbound SPI.
pub(crate) fn complete_child(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    req: ChildRequest,
    rekey: Option<u32>,
    answer: Answered<'_>,
) -> Result<u32, ChildError> {
    let Answered {
        msg,
        ni,
        nr,
        g_ir,
        added,
    } = answer;
    let c = crate::host::parts(msg);
    let (Some(sar), Some(tsi), Some(tsr)) = (c.sa.and_then(|s| s.first()), c.tsi, c.tsr) else {
        return Err(ChildError::MissingPayloads);
    };
    let chosen = config::child_accepts(&req.offer, sar).ok_or(ChildError::NotOffered)?;
    if !ts::within(tsi, &req.tsi)
        || !ts::within(tsr, &req.tsr)
        || ts::selector_count(tsi, tsr) > ts::MAX_SELECTORS
    {
        return Err(ChildError::SelectorsNotWithin);
    }
    if chosen.protocol == ProtocolId::AH
        && (sa.path.nat_local || sa.path.nat_remote || sa.path.transport.is_stream())
    {
        return Err(ChildError::AhAcrossNat);
    }
    let transport = has_notify(msg, NotifyType::USE_TRANSPORT_MODE);
    let mode = match (req.mode, transport) {
        (Mode::Transport, true) => Mode::Transport,
        (Mode::Transport, false) => return Err(ChildError::TransportRefused),
        _ => Mode::Tunnel,
    };
    let keymat =
        keymat(cx, sa, &chosen, (g_ir, added), (ni, nr)).ok_or(ChildError::KeyDerivation)?;
    let old = rekey.and_then(|old| sa.children.iter().find(|c| c.spi_in == old));
    let reqid = old.map(|c| c.reqid);
    let kept = old.map(|c| (c.per_cpu, c.cpu));
    let (per_cpu, cpu) = answered_resource(cx, sa, &req, kept, msg);
    let ipcomp = answered_ipcomp(cx, req.cpi_in, msg);
    let install = Install {
        cfg: req.cfg,
        chosen,
        spi_in: req.spi_in,
        mode,
        local_ts: tsi.clone(),
        remote_ts: tsr.clone(),
        we_initiated: true,
        reqid,
        min_nonce: min_nonce(ni, nr),
        ipcomp,
        per_cpu,
        cpu,
    };
    crate::install::install_child(cx, sa, install, &keymat);
    if per_cpu && cpu.is_none() && rekey.is_none() {
        ask_for_resources(cx, sa, req.cfg);
    }
    Ok(req.spi_in)
}

/// Initiator: whether the Child SA our request `req` made is one of a
/// per-resource group (RFC 9611), and whose: a rekey keeps the old
/// SA's (`kept`: its per-CPU flag and resource); else what we asked
/// for, if the peer's answer takes part.
fn answered_resource(
    cx: &mut Cx<'_>,
    sa: &mut IkeSa,
    req: &ChildRequest,
    kept: Option<(bool, Option<u32>)>,
    msg: &Message,
) -> (bool, Option<u32>) {
    match (kept, req.resource) {
        (Some(kept), _) => kept,
        (None, Resource::Plain) => (false, None),
        // RFC 9611: a peer that answers without SA_RESOURCE_INFO does
        // not take part; the SA is an ordinary one, and we ask no more.
        (None, _) if !has_notify(msg, NotifyType::SA_RESOURCE_INFO) => {
            cx.host.report(
                sa,
                IkeEvent::ChildNoResources {
                    child: sa.child_name(req.cfg),
                },
            );
            sa.queue
                .retain(|t| !matches!(t, Todo::CreateResource(c, _) if *c == req.cfg));
            (false, None)
        }
        (None, Resource::Fallback) => (true, None),
        (None, Resource::Cpu(cpu)) => (true, Some(cpu)),
    }
}

/// Initiator: IPComp (our CPI, the peer's) only if the peer answered
/// our offer with its CPI (RFC 7296 §2.22); else our CPI `cpi_in` is
/// given back.
fn answered_ipcomp(cx: &mut Cx<'_>, cpi_in: Option<u16>, msg: &Message) -> Option<(u16, u16)> {
    match (cpi_in, peer_cpi(msg)) {
        (Some(ours), Some(theirs)) => Some((ours, theirs)),
        (Some(ours), None) => {
            cx.k.release_spi(Protocol::IpComp, u32::from(ours));
            None
        }
        _ => None,
    }
}

/// A fresh CPI (RFC 3173 §3.3: 256 and up; the kernel interface hands out
/// one that fits 16 bits for IPComp).
pub(crate) fn cpi(k: &mut dyn Kernel) -> Option<u16> {
    u16::try_from(k.alloc_spi(Protocol::IpComp))
        .ok()
        .filter(|c| *c >= 256)
}

/// IPCOMP_SUPPORTED with our CPI and DEFLATE, the one transform we have
/// (RFC 7296 §3.10.1: a 2-byte CPI, then a 1-byte transform ID).
pub(crate) fn ipcomp_supported(cpi: u16) -> Payload {
    let [hi, lo] = cpi.to_be_bytes();
    notify(NotifyType::IPCOMP_SUPPORTED, vec![hi, lo, IPCOMP_DEFLATE])
}

/// The peer's CPI, if it offered (or accepted) IPComp with DEFLATE.
pub(crate) fn peer_cpi(msg: &Message) -> Option<u16> {
    notifies(msg)
        .filter(|n| n.ty == NotifyType::IPCOMP_SUPPORTED)
        .find_map(|n| match n.data[..] {
            [hi, lo, IPCOMP_DEFLATE] if u16::from_be_bytes([hi, lo]) >= 256 => {
                Some(u16::from_be_bytes([hi, lo]))
            }
            _ => None,
        })
}

/// The IPComp transform ID of DEFLATE (RFC 3173 §3.3, IANA).
const IPCOMP_DEFLATE: u8 = 2;

/// The payloads of a Child SA request (rekeying the Child SA with our
/// inbound SPI `rekey`, if given); with `create` its nonce and KE.
pub(crate) fn child_payloads(req: &ChildRequest, rekey: Option<u32>, create: bool) -> Vec<Payload> {
    let mut p = Vec::new();
    if let Some(old) = rekey {
        p.push(Payload::Notify(Notify {
            protocol: crate::proto::protocol_id(req.protocol).0,
            spi: old.to_be_bytes().to_vec(),
            ty: NotifyType::REKEY_SA,
            data: Vec::new(),
        }));
    }
    if req.mode == Mode::Transport {
        p.push(notify(NotifyType::USE_TRANSPORT_MODE, vec![]));
    }
    p.extend(req.resource.notify());
    if let Some(cpi) = req.cpi_in {
        p.push(ipcomp_supported(cpi));
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
/// What a new Child SA of `cfg` (not a rekey) asks of per-resource
/// SAs: the fallback of a `per_cpu_sas` child, else nothing.
pub(crate) fn first_resource(sa: &IkeSa, cfg: usize, rekey: Option<u32>) -> Resource {
    let child = &sa.conn.children[cfg];
    if child.per_cpu_sas && rekey.is_none() {
        Resource::Fallback
    } else {
        Resource::Plain
    }
}
/// The KEYMAT for a Child SA (§2.17): from `secrets`, g^ir with PFS
/// and SK(1) | … | SK(n) of the additional key exchanges (RFC 9370
/// §2.2.4), and the nonces (Ni, Nr).
pub(crate) fn keymat(
    host: &Host,
    sa: &IkeSa,
    chosen: &ChildChosen,
    secrets: (Option<&[u8]>, &[u8]),
    nonces: (&[u8], &[u8]),
) -> Option<zeroize::Zeroizing<Vec<u8>>> {
    let keys = sa.keys.as_ref()?;
    let len = 2 * (chosen.encr.map_or(0, |e| e.keymat_len()) + integ_key_len(chosen.integ));
    let (p, prf) = (&host.provider, keys.suite.prf);
    crypto::child_keymat(p, prf, &keys.sk_d, secrets, nonces, len).ok()
}
/// The fallback of a `per_cpu_sas` child is up (we initiated it and
/// the peer takes part): ask for one SA per resource of ours, RFC
/// 9611 §3 (all at once; strongSwan waits for the kernel to ask per
/// CPU). With one resource the fallback serves it.
fn ask_for_resources(host: &mut Host, sa: &mut IkeSa, cfg: usize) {
    let n = host.settings.resources;
    if n <= 1 {
        return;
    }
    for cpu in 0..n {
        let todo = Todo::CreateResource(cfg, cpu);
        if !sa.queue.contains(&todo) {
            sa.queue.push_back(todo);
        }
    }
    host.report(
        sa,
        IkeEvent::ChildResources {
            child: sa.child_name(cfg),
            resources: n,
        },
    );
}
