//! What `flowsec ctl` asks of the core: terminate and rekey by name, and
//! the IKE and Child SAs as `swanctl --list-sas` shows them.

use core::time::Duration;
use std::net::SocketAddr;

use flowsec_ipsec::{Mode, SaId};
use flowsec_wire::iana::DhGroup;

use crate::context::Cx;
use crate::error::CommandError;
use crate::host::Ike;
use crate::kernel::Kernel;
use crate::sa::{ChildSa, IkeState, Todo};
use crate::ts::ts_string;

/// One IKE SA, for listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IkeSaInfo {
    /// Connection name.
    pub name: String,
    /// Unique id (strongSwan's `#N`).
    pub uid: u32,
    /// ESTABLISHED, CONNECTING, REKEYED, DELETING.
    pub state: &'static str,
    /// We are the original initiator.
    pub initiator: bool,
    /// Initiator's SPI.
    pub spi_i: u64,
    /// Responder's SPI.
    pub spi_r: u64,
    /// Our address and port.
    pub local: SocketAddr,
    /// The peer's.
    pub remote: SocketAddr,
    /// Our identity.
    pub local_id: String,
    /// The peer's identity.
    pub remote_id: String,
    /// Virtual IPs the peer gave us (`vips`).
    pub local_vips: Vec<std::net::IpAddr>,
    /// Virtual IPs we gave the peer (`pools`).
    pub remote_vips: Vec<std::net::IpAddr>,
    /// DNS servers the peer sent with our virtual IPs.
    pub dns: Vec<std::net::IpAddr>,
    /// A NAT was detected (or faked by the peer): ESP in UDP.
    pub nat: bool,
    /// UDP, TCP or TLS (RFC 9329).
    pub transport: crate::transport::Transport,
    /// `AES_GCM_16-128/PRF_HMAC_SHA2_256/ECP_256` style.
    pub proposal: String,
    /// A post-quantum preshared key (RFC 8784) is in its keys.
    pub ppk: bool,
    /// The algorithms one by one (vici's `encr-alg`, `prf-alg`, …);
    /// `None` before IKE_SA_INIT is done.
    pub algorithms: Option<Algorithms>,
    /// Seconds since it was established.
    pub established_s: Option<u64>,
    /// Seconds until it is rekeyed.
    pub rekey_in_s: Option<u64>,
    /// Its Child SAs.
    pub children: Vec<ChildSaInfo>,
}

/// One Child SA, for listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildSaInfo {
    /// Child config name.
    pub name: String,
    /// Ties it to its policies.
    pub reqid: u32,
    /// INSTALLED, REKEYING, REKEYED, DELETING.
    pub state: &'static str,
    /// TUNNEL or TRANSPORT.
    pub mode: &'static str,
    /// ESP in UDP.
    pub encap: bool,
    /// Our inbound SA.
    pub sa_in: SaId,
    /// Our outbound SA.
    pub sa_out: SaId,
    /// `AES_GCM_16-128/ECP_256` (the DH group is the PFS group, if any).
    pub proposal: String,
    /// The DH group of the exchange that made it (PFS), `None` without.
    pub dh_group: Option<String>,
    /// The algorithms one by one (`prf` is `None`: a Child SA has none).
    pub algorithms: Algorithms,
    /// IPComp CPIs (in, out), when negotiated.
    pub cpis: Option<(u16, u16)>,
    /// Seconds since it was installed.
    pub installed_s: u64,
    /// Seconds until it is rekeyed.
    pub rekey_in_s: Option<u64>,
    /// Seconds until it expires.
    pub expire_in_s: Option<u64>,
    /// Our traffic selectors.
    pub local_ts: Vec<String>,
    /// The peer's.
    pub remote_ts: Vec<String>,
    /// One of a group of per-resource Child SAs (RFC 9611).
    pub per_cpu: bool,
    /// Its resource (worker) in that group; `None` for the fallback.
    pub cpu: Option<u32>,
}

/// An SA's algorithms, each on its own (what vici's `list-sa` carries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Algorithms {
    /// Encryption and its key size in bits (`None`: AH, or ESP with
    /// integrity only).
    pub encr: Option<(flowsec_wire::iana::EncrId, u16)>,
    /// Integrity (`NONE` with an AEAD).
    pub integ: flowsec_wire::iana::IntegId,
    /// The PRF (IKE SAs only).
    pub prf: Option<flowsec_wire::iana::PrfId>,
    /// The key exchange (`NONE` for a Child SA without PFS).
    pub dh: flowsec_wire::iana::DhGroup,
    /// The additional key exchanges by slot (RFC 9370; `NONE`: none).
    pub addke: [flowsec_wire::iana::DhGroup; crate::config::ADDKE_SLOTS],
    /// Extended sequence numbers (Child SAs).
    pub esn: bool,
}

/// The body of [`Ike::list`].
pub(crate) fn list(ike: &Ike, now: Duration) -> Vec<IkeSaInfo> {
    let secs = |t: Duration| t.as_secs();
    let until = |t: Option<Duration>| t.map(|t| secs(t.saturating_sub(now)));
    let mut out: Vec<IkeSaInfo> = ike
        .sas
        .values()
        .map(|sa| {
            let conn = &sa.conn;
            let proposal = sa.keys.as_ref().map_or(String::new(), |k| {
                let s = &k.suite;
                let mut p = format!("{}-{}", s.encr.id, s.encr.key_bits);
                if s.integ != flowsec_wire::iana::IntegId::NONE {
                    p += &format!("/{}", s.integ);
                }
                let p = format!("{p}/{}/{}", s.prf, s.dh);
                // strongSwan 6: `…/CURVE_25519/KE1_ML_KEM_768`.
                [p].into_iter()
                    .chain(addke_words(&k.addke))
                    // swanctl: `…/PPK` (RFC 8784).
                    .chain(k.ppk.then(|| "PPK".to_string()))
                    .collect::<Vec<_>>()
                    .join("/")
            });
            IkeSaInfo {
                name: conn.name.clone(),
                uid: sa.uid,
                state: sa.state.name(),
                initiator: sa.initiator,
                spi_i: sa.spi_i,
                spi_r: sa.spi_r,
                local: sa.path.local,
                remote: sa.path.remote,
                local_id: sa
                    .ids
                    .local
                    .as_ref()
                    .map_or_else(|| sa.path.local.ip().to_string(), |i| i.to_string()),
                remote_id: sa
                    .ids
                    .peer
                    .as_ref()
                    .map_or_else(|| "%any".into(), |i| i.to_string()),
                local_vips: sa.vips.local.clone(),
                remote_vips: sa.vips.remote.iter().map(|(_, a)| *a).collect(),
                dns: sa.vips.dns.clone(),
                nat: sa.path.nat_local || sa.path.nat_remote,
                transport: sa.path.transport,
                proposal,
                ppk: sa.keys.as_ref().is_some_and(|k| k.ppk),
                algorithms: sa.keys.as_ref().map(ike_algorithms),
                established_s: sa.times.established.map(|t| secs(now.saturating_sub(t))),
                rekey_in_s: until(sa.times.rekey_at),
                children: sa
                    .children
                    .iter()
                    .map(|c| child_info(conn, c, now))
                    .collect(),
            }
        })
        .collect();
    out.sort_by_key(|s| s.uid);
    out
}

/// An IKE SA's algorithms one by one.
fn ike_algorithms(k: &crate::sa::IkeKeyState) -> Algorithms {
    let s = &k.suite;
    Algorithms {
        encr: Some((s.encr.id, s.encr.key_bits)),
        integ: s.integ,
        prf: Some(s.prf),
        dh: s.dh,
        addke: addke_slots(&k.addke),
        esn: false,
    }
}

/// The additional key exchanges done, by slot, in [`Algorithms`]' form.
fn addke_slots(addke: &[DhGroup]) -> [DhGroup; crate::config::ADDKE_SLOTS] {
    let mut slots = [DhGroup::NONE; crate::config::ADDKE_SLOTS];
    for (slot, g) in addke.iter().take(slots.len()).enumerate() {
        slots[slot] = *g;
    }
    slots
}

/// strongSwan 6's words for the additional key exchanges in a proposal
/// (`KE1_ML-KEM-768`), NONE left out.
fn addke_words(addke: &[DhGroup]) -> impl Iterator<Item = String> + '_ {
    addke
        .iter()
        .enumerate()
        .filter(|(_, g)| **g != DhGroup::NONE)
        .map(|(slot, g)| format!("KE{}_{g}", slot + 1))
}

/// Queue `for_ike` on the IKE SAs of connection `name` (or the one with
/// unique id `name` as a number), or `for_child` on its Child SAs named
/// `child`, and start them; how many.
pub(crate) fn queue_for(
    ike: &mut Ike,
    now: Duration,
    name: Option<&str>,
    child: Option<&str>,
    k: &mut dyn Kernel,
    for_ike: Todo,
    for_child: fn(u32) -> Todo,
) -> Result<usize, CommandError> {
    let mut n = 0;
    for spi in ike.sas.spis() {
        let Some((_, mut sa)) = ike.sas.find(spi) else {
            continue;
        };
        let conn = &sa.conn;
        let ike_match = name.is_some_and(|name| {
            name == conn.name || name.trim_start_matches('#') == sa.uid.to_string()
        });
        let mut todos = Vec::new();
        if sa.state == IkeState::Established {
            if ike_match && child.is_none() {
                todos.push(for_ike.clone());
            } else if let Some(name) = child.filter(|_| name.is_none() || ike_match) {
                todos.extend(
                    sa.children
                        .iter()
                        .filter(|c| {
                            conn.children.get(c.cfg).is_some_and(|ch| ch.name == name)
                                && c.state == crate::sa::ChildState::Installed
                        })
                        .map(|c| for_child(c.spi_in)),
                );
            }
        }
        n += todos.len();
        sa.queue.extend(todos);
        crate::timers::kick(&mut Cx::new(&mut ike.host, now, k), &mut sa);
    }
    if n == 0 {
        return Err(match (name, child) {
            (_, Some(c)) => CommandError::NoChild {
                child: c.to_string(),
            },
            (Some(i), None) => CommandError::NoIke { ike: i.to_string() },
            (None, None) => CommandError::Unnamed,
        });
    }
    Ok(n)
}

/// One Child SA of `conn`, for listing.
fn child_info(conn: &crate::config::Connection, c: &ChildSa, now: Duration) -> ChildSaInfo {
    let until = |t: Option<Duration>| t.map(|t| t.saturating_sub(now).as_secs());
    let mut parts: Vec<String> = c
        .suite
        .encr
        .map(|e| format!("{}-{}", e.id, e.key_bits))
        .into_iter()
        .collect();
    if c.suite.integ != flowsec_wire::iana::IntegId::NONE {
        parts.push(c.suite.integ.to_string());
    }
    if c.suite.dh != flowsec_wire::iana::DhGroup::NONE {
        parts.push(c.suite.dh.to_string());
    }
    parts.extend(addke_words(&c.suite.addke));
    if c.suite.esn {
        parts.push("ESN".into());
    }
    ChildSaInfo {
        name: conn
            .children
            .get(c.cfg)
            .map_or_else(|| "?".into(), |ch| ch.name.clone()),
        reqid: c.reqid,
        state: c.state.name(),
        mode: if c.suite.mode == Mode::Tunnel {
            "TUNNEL"
        } else {
            "TRANSPORT"
        },
        encap: c.suite.encap,
        sa_in: c.plane.sa_in,
        sa_out: c.plane.sa_out,
        proposal: parts.join("/"),
        algorithms: Algorithms {
            encr: c.suite.encr.map(|e| (e.id, e.key_bits)),
            integ: c.suite.integ,
            prf: None,
            dh: c.suite.dh,
            addke: addke_slots(&c.suite.addke),
            esn: c.suite.esn,
        },
        dh_group: (c.suite.dh != flowsec_wire::iana::DhGroup::NONE).then(|| c.suite.dh.to_string()),
        cpis: c.plane.ipcomp.map(|(i, o)| (i.spi as u16, o.spi as u16)),
        installed_s: now.saturating_sub(c.times.installed).as_secs(),
        rekey_in_s: until(c.times.rekey_at),
        expire_in_s: until(c.times.expire_at),
        per_cpu: c.per_cpu,
        cpu: c.cpu,
        local_ts: c.local_ts.iter().map(ts_string).collect(),
        remote_ts: c.remote_ts.iter().map(ts_string).collect(),
    }
}
