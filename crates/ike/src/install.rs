//! Installing and removing what a Child SA consists of through the
//! [`crate::kernel::Kernel`]: its pair of ESP SAs (and IPComp SAs, RFC 3173, when both
//! ends offered IPCOMP_SUPPORTED, RFC 7296 §2.22), the policies of its
//! reqid (RFC 4301 §4.4.1), trap policies (`start_action = trap`), and
//! the data plane's volume limits.

use core::time::Duration;
use std::net::SocketAddr;

use flowsec_crypto::suite::integ_key_len;
use flowsec_crypto::EncrId;
use flowsec_ipsec::{Lifetime, Limits, Mode, Protocol, SaConfig, SaId, UdpEncap};
use flowsec_wire::ike::TrafficSelector;

use crate::config::{ChildChosen, ChildConfig, Connection, RekeySwitch};
use crate::context::Cx;
use crate::event::IkeEvent;
use crate::host::Host;
use crate::sa::{ChildSa, ChildState, IkeSa};
use crate::sa::{ChildSuite, ChildTimes, InPlane};
use crate::table::SaMut;

/// How long the inbound SA of a replaced Child SA outlives it.
pub(crate) const INBOUND_GRACE: Duration = Duration::from_secs(5);

/// The SAs of a Child SA, as the data plane takes them.
struct ChildSas {
    /// ESP or AH, then IPComp.
    inbound: Vec<SaConfig>,
    /// ESP or AH, then IPComp.
    outbound: Vec<SaConfig>,
    /// The IPComp SAs (inbound, outbound), when negotiated.
    ipcomp: Option<(SaId, SaId)>,
    /// ESP in UDP.
    encap: bool,
}

/// How much later than the core's own timer the data plane expires a
/// `keep-old` Child SA's SAs: the core removes them itself at `life_time`
/// and switches to the successor in the same step; the data plane must not
/// take the old SA away first (its clock starts when it applies the SA,
/// a little after the core's).
const KEEP_OLD_SLACK: Duration = Duration::from_secs(1);

/// The lifetime of a Child SA's SAs: hard limits as configured, soft
/// volume limits less strongSwan's jitter (`r_bytes`, `r_packets`: random
/// draws); time limits are the core's own timers (the data plane's hard
/// time limit is a backstop).
fn child_lifetime(child: &ChildConfig, r_bytes: u64, r_packets: u64) -> Lifetime {
    let slack = match child.rekey_switch {
        RekeySwitch::KeepOld => KEEP_OLD_SLACK,
        _ => Duration::ZERO,
    };
    let nz = |v: u64| (v != 0).then_some(v);
    let jitter = |limit: u64, rand: u64, r: u64| match limit {
        0 => None,
        l => Some(l - r % (rand.min(l - 1) + 1)),
    };
    Lifetime {
        soft: Limits {
            bytes: jitter(child.rekey_bytes, child.rand_bytes, r_bytes),
            packets: jitter(child.rekey_packets, child.rand_packets, r_packets),
            ..Limits::default()
        },
        hard: Limits {
            bytes: nz(child.life_bytes),
            packets: nz(child.life_packets),
            add_time: (!child.life_time.is_zero()).then_some(child.life_time + slack),
            use_time: None,
        },
    }
}

/// What [`install_child`] installs.
pub(crate) struct Install {
    pub cfg: usize,
    pub chosen: ChildChosen,
    pub spi_in: u32,
    pub mode: Mode,
    pub local_ts: Vec<TrafficSelector>,
    pub remote_ts: Vec<TrafficSelector>,
    pub we_initiated: bool,
    pub reqid: Option<u32>,
    pub min_nonce: Vec<u8>,
    /// IPComp: (our CPI, the peer's).
    pub ipcomp: Option<(u16, u16)>,
    /// One of a group of per-resource Child SAs (RFC 9611).
    pub per_cpu: bool,
    /// The resource (worker) whose SAs these are; `None` for the
    /// fallback and ordinary Child SAs.
    pub cpu: Option<u32>,
}

/// Remove everything `sa` installed; it has left the table, or is
/// about to (its handler says [`crate::table::Then::Destroy`]).
pub(crate) fn destroy(cx: &mut Cx<'_>, sa: &mut SaMut<'_>) {
    if let Some(task) = sa.exch.take_task() {
        task.release(cx.k);
    }
    if let Some(wait) = sa.exch.take_passive() {
        wait.release(cx.k);
    }
    let spis: Vec<u32> = sa.children.iter().map(|c| c.spi_in).collect();
    for spi in spis {
        remove_child(cx, sa, spi);
    }
    crate::vip::release(cx, sa);
}

/// Install a Child SA's pair of SAs (and, for a new reqid, its
/// policies), and record it in `sa`.
pub(crate) fn install_child(cx: &mut Cx<'_>, sa: &mut SaMut<'_>, i: Install, keymat: &[u8]) {
    let (reqid, fresh) = child_reqid(cx, sa, &i);
    let sas = child_sas(cx, sa, &i, keymat, reqid);
    for inbound in sas.inbound {
        cx.k.add_sa(inbound);
    }
    let deferred_out = send_or_defer(cx, &sa.conn, &i, sas.outbound);
    let child = &sa.conn.children[i.cfg];
    let (rekey_time, rand_time, life_time) = (child.rekey_time, child.rand_time, child.life_time);
    let (name, comp) = (child.name.clone(), child.ipcomp);
    let (local, remote) = (sa.path.local, sa.path.remote);
    let protocol = crate::proto::protocol_of(i.chosen.protocol);
    if fresh {
        crate::policies::install_policies(
            cx,
            reqid,
            (i.mode, protocol, comp),
            (local.ip(), remote.ip()),
            &i.local_ts,
            &i.remote_ts,
        );
    }
    crate::policies::release_holds(cx, sa, i.cfg);
    let rekey_at =
        (!rekey_time.is_zero()).then(|| cx.now + cx.host.jittered(rekey_time, rand_time));
    let chosen = &i.chosen;
    cx.host.report(
        sa,
        IkeEvent::ChildInstalled {
            child: name,
            reqid,
            spi_in: i.spi_in,
            spi_out: chosen.spi,
            local_ts: i.local_ts.clone(),
            remote_ts: i.remote_ts.clone(),
            resource: i.per_cpu.then_some(i.cpu),
        },
    );
    let id = |spi, dst: SocketAddr| SaId {
        protocol,
        spi,
        dst: dst.ip(),
    };
    sa.children.push(ChildSa {
        cfg: i.cfg,
        reqid,
        spi_in: i.spi_in,
        spi_out: chosen.spi,
        state: ChildState::Installed,
        suite: ChildSuite {
            mode: i.mode,
            encr: chosen.encr,
            integ: chosen.integ,
            dh: chosen.dh,
            addke: chosen.addke.clone(),
            esn: chosen.esn,
            encap: sas.encap,
        },
        local_ts: i.local_ts,
        remote_ts: i.remote_ts,
        times: ChildTimes {
            installed: cx.now,
            rekey_at,
            expire_at: (!life_time.is_zero()).then_some(cx.now + life_time),
        },
        plane: InPlane {
            sa_in: id(i.spi_in, local),
            sa_out: id(chosen.spi, remote),
            ipcomp: sas.ipcomp,
            deferred_out,
            gone: false,
        },
        min_nonce: i.min_nonce,
        per_cpu: i.per_cpu,
        cpu: i.cpu,
    });
}

/// The new outbound SAs of a Child SA: installed, or (returned) held
/// back in it. ARCHITECTURE.md "Rekeying without loss": the responder
/// of a rekey keeps sending on the old SA until the initiator deletes
/// it (the initiator installs the new inbound SA only when our answer
/// arrives); the new outbound SA waits in the Child SA till then.
/// `prefer-new` sends on it at once; `keep-old` waits, at both ends,
/// until the old SA expires.
fn send_or_defer(
    cx: &mut Cx<'_>,
    conn: &Connection,
    i: &Install,
    outbound: Vec<flowsec_ipsec::SaConfig>,
) -> Vec<flowsec_ipsec::SaConfig> {
    let defer = match switch_of(conn, i.cfg) {
        RekeySwitch::LossFree => !i.we_initiated,
        RekeySwitch::PreferNew => false,
        RekeySwitch::KeepOld => true,
    };
    if i.reqid.is_some() && defer {
        return outbound;
    }
    for out in outbound {
        cx.k.add_sa(out);
    }
    Vec::new()
}

/// `prefer-new`: a replaced Child SA's SAs leave the data plane now,
/// its record stays for the DELETE exchange ([`crate::sa::InPlane::gone`]).
pub(crate) fn drop_replaced(cx: &mut Cx<'_>, sa: &mut IkeSa, spi: u32) {
    let Some(c) = sa
        .children
        .iter_mut()
        .find(|c| c.spi_in == spi && !c.plane.gone)
    else {
        return;
    };
    c.plane.gone = true;
    cx.k.del_sa(c.plane.sa_out);
    cx.k.del_sa(c.plane.sa_in);
    if let Some((inn, out)) = c.plane.ipcomp {
        cx.k.del_sa(out);
        cx.k.del_sa(inn);
    }
}

/// Remove the Child SA with inbound SPI `spi` from `sa` and the data
/// plane; its policies go with the last SA of its reqid.
pub(crate) fn remove_child(cx: &mut Cx<'_>, sa: &mut SaMut<'_>, spi: u32) {
    let Some(at) = sa.children.iter().position(|c| c.spi_in == spi) else {
        return;
    };
    let c = sa.children.remove(at);
    // Its successor starts sending now, before the old SAs go (a
    // per-resource SA's successor is its resource's).
    for s in sa
        .children
        .iter_mut()
        .filter(|s| s.reqid == c.reqid && s.cpu == c.cpu)
    {
        for out in std::mem::take(&mut s.plane.deferred_out) {
            cx.k.add_sa(out);
        }
    }
    let inbound = core::iter::once(c.plane.sa_in).chain(c.plane.ipcomp.map(|(i, _)| i));
    // A replaced SA's inbound half stays a while: packets the peer
    // sealed before it switched may still be on their way (ARCHITECTURE.md
    // "Rekeying without loss"); the other switches do not wait.
    let linger = sa.children.iter().any(|s| s.reqid == c.reqid)
        && switch_of(&sa.conn, c.cfg) == RekeySwitch::LossFree;
    // drop_replaced may have taken them already.
    if !c.plane.gone {
        cx.k.del_sa(c.plane.sa_out);
        if let Some((_, out)) = c.plane.ipcomp {
            cx.k.del_sa(out);
        }
        if linger {
            let until = cx.now + INBOUND_GRACE;
            cx.host.lingering.extend(inbound.map(|id| (id, until)));
        } else {
            for id in inbound {
                cx.k.del_sa(id);
            }
        }
    }
    let used = sa
        .children
        .iter()
        .chain(sa.others.values().flat_map(|s| s.children.iter()))
        .any(|o| o.reqid == c.reqid);
    // A trap's policies stay: the next packet negotiates again. A
    // replaced connection's become DISCARD until its successor's
    // Child SA is up (reload.rs): never a moment in the clear.
    if !used && cx.host.holds.contains_key(&c.reqid) {
        crate::policies::hold_policies(cx, c.reqid);
    } else if !used && !cx.host.traps.contains_key(&c.reqid) {
        crate::policies::remove_policies(cx, c.reqid);
    }
    cx.host.report(
        sa,
        IkeEvent::ChildRemoved {
            child: sa.child_name(c.cfg),
            reqid: c.reqid,
            spi_in: c.spi_in,
            spi_out: c.spi_out,
        },
    );
}

/// The `rekey_switch` of child config `cfg` of connection `conn` (each
/// end follows its own).
pub(crate) fn switch_of(conn: &Connection, cfg: usize) -> RekeySwitch {
    conn.children[cfg].rekey_switch
}
/// The reqid of a new Child SA, and whether it is fresh (its policies
/// are still to be installed): a rekey's is the old SA's; a trapped
/// child takes the trap's (its policies are there); another Child SA
/// of the same config and selectors (both ends started it, or `ctl
/// initiate` twice) shares its own, as strongSwan's do, since the
/// same policies serve both.
fn child_reqid(host: &mut Host, sa: &SaMut<'_>, i: &Install) -> (u32, bool) {
    let trap = host
        .traps
        .iter()
        .find(|(_, (ci, cj))| std::sync::Arc::ptr_eq(ci, &sa.conn) && *cj == i.cfg)
        .map(|(r, _)| *r);
    let twin = sa
        .others
        .values()
        .chain(core::iter::once(&**sa))
        .filter(|s| std::sync::Arc::ptr_eq(&s.conn, &sa.conn))
        .flat_map(|s| s.children.iter())
        .find(|c| {
            c.cfg == i.cfg
                && c.local_ts == i.local_ts
                && c.remote_ts == i.remote_ts
                && c.suite.mode == i.mode
                && (c.plane.sa_in.dst, c.plane.sa_out.dst)
                    == (sa.path.local.ip(), sa.path.remote.ip())
        })
        .map(|c| c.reqid);
    let shared = trap.or(twin);
    match i.reqid.or(shared) {
        Some(r) => (r, false),
        None => {
            host.next_reqid += 1;
            (host.next_reqid - 1, true)
        }
    }
}
/// The SAs of a Child SA with `reqid`, keyed from `keymat` (§2.17:
/// initiator-to-responder keys first): ESP or AH, with IPComp when
/// negotiated, in UDP across a NAT (RFC 3948, ESP only).
fn child_sas(host: &mut Host, sa: &IkeSa, i: &Install, keymat: &[u8], reqid: u32) -> ChildSas {
    let child = &sa.conn.children[i.cfg];
    let chosen = &i.chosen;
    let enc_len = chosen.encr.map_or(0, |e| e.keymat_len());
    let dir_len = enc_len + integ_key_len(chosen.integ);
    let (i2r, rest) = keymat.split_at(dir_len.min(keymat.len()));
    let r2i = &rest[..dir_len.min(rest.len())];
    let (out_keys, in_keys) = if i.we_initiated {
        (i2r, r2i)
    } else {
        (r2i, i2r)
    };
    let protocol = crate::proto::protocol_of(chosen.protocol);
    // AH cannot be carried in UDP (RFC 3948 is for ESP) nor in TCP
    // (RFC 9329 §3); over a stream, ESP always goes in it (§5).
    let stream = sa.path.transport.is_stream();
    let encap = (sa.path.nat_local || sa.path.nat_remote || stream) && protocol == Protocol::Esp;
    let lifetime = child_lifetime(child, host.rng.next_u64(), host.rng.next_u64());
    let make = |spi: u32, src: SocketAddr, dst: SocketAddr, keys: &[u8]| {
        let (ek, ik) = keys.split_at(enc_len.min(keys.len()));
        let mut c = match protocol {
            Protocol::Ah => SaConfig::ah(spi, i.mode, src.ip(), dst.ip()),
            _ => SaConfig::esp(spi, i.mode, src.ip(), dst.ip())
                .with_encr(chosen.encr.map_or(EncrId::NULL, |e| e.id), ek),
        }
        .with_integ(chosen.integ, ik);
        c.encap = encap.then(|| match stream {
            true => UdpEncap::tcp(src.port(), dst.port()),
            false => UdpEncap::udp(src.port(), dst.port()),
        });
        c.replay_window = child.replay_window;
        c.esn = chosen.esn;
        c.lifetime = lifetime;
        c.reqid = reqid;
        c.cpu = i.cpu;
        c
    };
    let (local, remote) = (sa.path.local, sa.path.remote);
    let mut sas = ChildSas {
        inbound: vec![make(i.spi_in, remote, local, in_keys)],
        outbound: vec![make(chosen.spi, local, remote, out_keys)],
        ipcomp: None,
        encap,
    };
    if let Some((ours, theirs)) = i.ipcomp {
        let comp = |cpi: u16, src: SocketAddr, dst: SocketAddr| {
            let mut c = SaConfig::ipcomp(cpi, i.mode, src.ip(), dst.ip());
            c.lifetime.hard.add_time = lifetime.hard.add_time;
            c.reqid = reqid;
            c
        };
        sas.inbound.push(comp(ours, remote, local));
        sas.outbound.push(comp(theirs, local, remote));
        let id = |cpi: u16, dst: SocketAddr| SaId {
            protocol: Protocol::IpComp,
            spi: u32::from(cpi),
            dst: dst.ip(),
        };
        sas.ipcomp = Some((id(ours, local), id(theirs, remote)));
    }
    sas
}
