//! What the core reports: one [`IkeEvent`] per thing that happened to an
//! IKE or Child SA, for the caller to match on or to log. `Display` writes
//! the log line (strongSwan's words where it has them; never a key).

use core::fmt;
use std::net::{IpAddr, SocketAddr};

use flowsec_wire::iana::{DhGroup, NotifyType};
use flowsec_wire::ike::TrafficSelector;

use crate::config::Identity;
use crate::error::{ChildError, CommandError, InitResponseError, NegotiationError};

/// Something that happened, in the order it happened
/// ([`crate::Ike::take_events`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IkeEvent {
    /// The configuration was cut to what the crypto provider runs
    /// ([`crate::config::restrict_to`]): what was dropped.
    ConfigRestricted(String),
    /// A `start_action`, `dpd_action` or `close_action` could do nothing.
    CommandFailed(CommandError),
    /// Traffic hit the trap policy of `reqid`: its Child SA is negotiated.
    Acquire {
        /// The child config.
        child: String,
        /// The trap's reqid.
        reqid: u32,
    },
    /// A new IKE SA, as initiator: IKE_SA_INIT went out.
    Initiating {
        /// The connection.
        name: String,
        /// The IKE SA's unique id.
        unique_id: u32,
        /// Where to.
        remote: IpAddr,
    },
    /// An IKE_SA_INIT request met no connection or proposal of ours
    /// (answered NO_PROPOSAL_CHOSEN, no state kept).
    NoProposal {
        /// Its sender.
        from: SocketAddr,
    },
    /// The responder asked for another DH group (INVALID_KE_PAYLOAD,
    /// RFC 7296 §1.2): IKE_SA_INIT goes again with it.
    InitRetry {
        /// The group it wants.
        group: DhGroup,
    },
    /// Our IKE_SA_INIT was answered with an error notify; unauthenticated
    /// (§2.21.1), so we keep waiting for a valid answer.
    InitRefused {
        /// The connection.
        name: String,
        /// The IKE SA's unique id.
        unique_id: u32,
        /// The notify.
        notify: NotifyType,
    },
    /// An IKE_SA_INIT answer we cannot use, ignored (§2.21.1).
    InitIgnored {
        /// The connection.
        name: String,
        /// The IKE SA's unique id.
        unique_id: u32,
        /// What was wrong with it.
        why: InitResponseError,
    },
    /// An IKE SA that was not established yet is given up.
    NegotiationFailed {
        /// The connection.
        name: String,
        /// The IKE SA's unique id.
        unique_id: u32,
        /// The peer's address.
        remote: IpAddr,
        /// Why.
        reason: NegotiationError,
    },
    /// An IKE_AUTH request did not authenticate: answered
    /// AUTHENTICATION_FAILED, the half-open IKE SA gone.
    AuthFailed {
        /// Its sender.
        from: IpAddr,
        /// The identity it claimed, if it was one.
        id: Option<Identity>,
        /// Why, for a certificate or signature (`None`: a wrong PSK, a
        /// missing payload or an identity the connection does not accept).
        why: Option<crate::cert::Rejection>,
    },
    /// IKE_AUTH done: the IKE SA is established.
    Established {
        /// The connection.
        name: String,
        /// The IKE SA's unique id.
        unique_id: u32,
        /// Our address.
        local: IpAddr,
        /// Our identity.
        local_id: Identity,
        /// The peer's address.
        remote: IpAddr,
        /// The peer's identity.
        remote_id: Identity,
    },
    /// The peer said INITIAL_CONTACT (§2.4): an IKE SA we still held with
    /// it is stale and deleted.
    InitialContact {
        /// The connection.
        name: String,
        /// The stale IKE SA's unique id.
        unique_id: u32,
    },
    /// Responder: EAP-MSCHAPv2 authenticated `user` (the IKE AUTH with
    /// the MSK follows).
    EapSucceeded {
        /// The EAP identity.
        user: String,
    },
    /// Responder: a virtual IP from a pool given to a peer (RFC 7296
    /// §3.15).
    VirtualIpAssigned {
        /// The peer's identity.
        peer: Identity,
        /// The address.
        addr: std::net::IpAddr,
        /// The pool.
        pool: String,
    },
    /// Responder: the peer asked for a virtual IP and no pool of the
    /// connection had one (none configured, or exhausted).
    NoVirtualIp {
        /// The peer's identity.
        peer: Identity,
    },
    /// Initiator: the responder gave us virtual IPs (now on the tunnel
    /// device) and DNS servers.
    VirtualIpInstalled {
        /// The addresses.
        addrs: Vec<std::net::IpAddr>,
        /// The DNS servers (not installed: flowsec leaves resolv.conf
        /// alone).
        dns: Vec<std::net::IpAddr>,
    },
    /// An authenticated message came from another address than the IKE
    /// SA's: the peer moved, which its Child SAs do not follow yet.
    PeerMoved {
        /// The address before.
        from: SocketAddr,
        /// The address now.
        to: SocketAddr,
    },
    /// MOBIKE (RFC 4555 §3.5): the IKE SA and its Child SAs moved to
    /// another path.
    Moved {
        /// The connection.
        name: String,
        /// The IKE SA's unique id.
        unique_id: u32,
        /// (local, remote) before.
        from: (SocketAddr, SocketAddr),
        /// (local, remote) now.
        to: (SocketAddr, SocketAddr),
        /// ESP in UDP on the new path.
        encap: bool,
    },
    /// MOBIKE: a move did not go through: the answer to our
    /// UPDATE_SA_ADDRESSES did not echo our COOKIE2 (§3.7: the IKE SA is
    /// closed), or the data plane refused to move an SA.
    MoveFailed {
        /// The connection.
        name: String,
        /// The IKE SA's unique id.
        unique_id: u32,
        /// What happened.
        why: &'static str,
    },
    /// We send a client to another gateway (RFC 5685).
    Redirecting {
        /// The connection.
        name: String,
        /// Its IKE SA's unique id (none at IKE_SA_INIT: no state kept).
        unique_id: Option<u32>,
        /// The client's address.
        peer: IpAddr,
        /// The gateway.
        to: String,
        /// IKE_SA_INIT, IKE_AUTH or INFORMATIONAL.
        phase: &'static str,
    },
    /// Our gateway sent us to another one (RFC 5685): we go.
    Redirected {
        /// The connection.
        name: String,
        /// The IKE SA's unique id.
        unique_id: u32,
        /// The gateway.
        to: String,
        /// IKE_SA_INIT, IKE_AUTH or INFORMATIONAL.
        phase: &'static str,
    },
    /// A redirect we do not follow.
    RedirectRefused {
        /// The connection.
        name: String,
        /// Why.
        why: &'static str,
    },
    /// A NAT in front of the peer gave it another port (§2.23): the IKE
    /// SA and its Child SAs' ESP in UDP follow.
    PeerRebound {
        /// The address before.
        from: SocketAddr,
        /// The address now.
        to: SocketAddr,
    },
    /// `tcp_encap = fallback`: IKE_SA_INIT over UDP got no answer; a new
    /// one goes over TCP (RFC 9329 §5.1).
    TcpFallback {
        /// The connection.
        name: String,
    },
    /// No answer after every retransmission: the IKE SA is deleted.
    PeerDead {
        /// The connection.
        name: String,
        /// The IKE SA's unique id.
        unique_id: u32,
        /// The peer.
        remote: SocketAddr,
        /// Retransmissions made.
        retransmits: u32,
    },
    /// The peer reported an error notify in an INFORMATIONAL request.
    PeerReports {
        /// The connection.
        name: String,
        /// The IKE SA's unique id.
        unique_id: u32,
        /// The notify.
        notify: NotifyType,
    },
    /// An IKE SA was rekeyed (§1.3.2): its Child SAs moved to the new one.
    Rekeyed {
        /// The connection.
        name: String,
        /// The old IKE SA's unique id.
        unique_id: u32,
        /// The new one's.
        new_unique_id: u32,
        /// The peer started the rekey.
        by_peer: bool,
    },
    /// Our rekey of an IKE SA was refused.
    RekeyFailed {
        /// The connection.
        name: String,
        /// The IKE SA's unique id.
        unique_id: u32,
        /// The peer's notify.
        notify: NotifyType,
    },
    /// Both ends rekeyed the IKE SA at once and ours made the lowest nonce
    /// (§2.8.2): the SA it made is deleted.
    RekeyCollisionLost {
        /// The connection.
        name: String,
        /// The old IKE SA's unique id.
        unique_id: u32,
    },
    /// An IKE SA is gone, deleted by us or by the peer.
    Deleted {
        /// The connection.
        name: String,
        /// The IKE SA's unique id.
        unique_id: u32,
        /// The peer deleted it.
        by_peer: bool,
    },
    /// A Child SA's pair of SAs is installed.
    ChildInstalled {
        /// The child config.
        child: String,
        /// Its reqid.
        reqid: u32,
        /// Our inbound SPI.
        spi_in: u32,
        /// Our outbound SPI.
        spi_out: u32,
        /// Our traffic selectors.
        local_ts: Vec<TrafficSelector>,
        /// The peer's.
        remote_ts: Vec<TrafficSelector>,
        /// RFC 9611: `Some(None)` for a group's fallback, `Some(Some(k))`
        /// for resource k's SA; `None` for an ordinary Child SA.
        resource: Option<Option<u32>>,
    },
    /// The peer's answer carried an error notify for the Child SA of
    /// IKE_AUTH: the IKE SA is up without it.
    ChildNotEstablished {
        /// The child config.
        child: String,
        /// The notify.
        notify: NotifyType,
    },
    /// The peer's answer for a Child SA could not be used.
    ChildFailed {
        /// The child config.
        child: String,
        /// Why.
        reason: ChildError,
    },
    /// We refused a CREATE_CHILD_SA or IKE_AUTH request for a Child SA.
    ChildRequestRefused {
        /// Its sender.
        from: IpAddr,
        /// The notify we answered.
        notify: NotifyType,
    },
    /// The peer refused our CREATE_CHILD_SA.
    ChildRefused {
        /// The child config.
        child: String,
        /// Its notify.
        notify: NotifyType,
    },
    /// The fallback of a `per_cpu_sas` child is up: one per-resource
    /// Child SA per resource is asked for (RFC 9611).
    ChildResources {
        /// The child config.
        child: String,
        /// How many.
        resources: u32,
    },
    /// The peer answered a per-resource request without SA_RESOURCE_INFO:
    /// it does not take part (RFC 9611), the SA is an ordinary one.
    ChildNoResources {
        /// The child config.
        child: String,
    },
    /// The peer wants another DH group for the Child SA (§1.3, PFS): the
    /// request goes again with it.
    ChildRetry {
        /// The child config.
        child: String,
        /// The group it wants.
        group: DhGroup,
    },
    /// Both ends rekeyed a Child SA at once (§2.8.1): which of the SAs
    /// made goes.
    ChildRekeyCollision {
        /// The child config.
        child: String,
        /// Ours did not make the lowest nonce: the old SA goes (else the
        /// redundant one ours made).
        ours_won: bool,
    },
    /// A Child SA reached its soft byte or packet limit: it is rekeyed.
    ChildVolumeReached {
        /// Its inbound SPI.
        spi_in: u32,
    },
    /// A Child SA reached its hard lifetime: it is deleted.
    ChildExpired {
        /// Its inbound SPI.
        spi_in: u32,
    },
    /// `rekey_switch = keep-old`: a rekeyed Child SA reached its hard
    /// lifetime: its successor carries the traffic from now, and it is
    /// removed without a DELETE.
    ChildSwitched {
        /// Its inbound SPI.
        spi_in: u32,
    },
    /// A Child SA's SAs are removed.
    ChildRemoved {
        /// The child config.
        child: String,
        /// Its reqid.
        reqid: u32,
        /// Our inbound SPI.
        spi_in: u32,
        /// Our outbound SPI.
        spi_out: u32,
    },
    /// A child's `dpd_action` or `close_action` negotiates it again.
    Restarting {
        /// The child config.
        child: String,
    },
    /// A trap policy is installed (`start_action = trap`).
    TrapInstalled {
        /// The child config.
        child: String,
        /// Its reqid.
        reqid: u32,
        /// Our traffic selectors.
        local_ts: Vec<TrafficSelector>,
        /// The peer's.
        remote_ts: Vec<TrafficSelector>,
    },
    /// A trap policy is removed (its connection was reloaded away).
    TrapRemoved {
        /// The child config.
        child: String,
        /// Its reqid.
        reqid: u32,
    },
    /// `reauth_time`: a new IKE SA authenticates again in this one's
    /// place (RFC 7296 §2.8.3).
    Reauthenticating {
        /// Its connection.
        name: String,
        /// The IKE SA reauthenticated.
        unique_id: u32,
    },
    /// A reload's credentials no longer let the peer in: its IKE SA is
    /// deleted.
    PeerRevoked {
        /// Its connection.
        name: String,
        /// The IKE SA.
        unique_id: u32,
        /// Why.
        why: crate::error::Distrust,
    },
    /// A replaced connection's Child SA is gone before its successor is
    /// up: its policies drop the traffic meanwhile ([`crate::reload`]).
    PoliciesHeld {
        /// The child config.
        child: String,
        /// Its reqid.
        reqid: u32,
    },
    /// A new configuration runs ([`crate::Ike::reload`]).
    Reloaded(Reloaded),
}

impl IkeEvent {
    /// The lines of MOBIKE's and redirect's events (RFC 4555, RFC 5685).
    fn fmt_mobility(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IkeEvent::Moved {
                name,
                unique_id,
                from,
                to,
                encap,
            } => write!(
                f,
                "IKE_SA {name}[{unique_id}] moved from {} - {} to {} - {} (MOBIKE), CHILD_SAs follow with {}",
                from.0,
                from.1,
                to.0,
                to.1,
                if *encap { "ESP in UDP" } else { "raw ESP" }
            ),
            IkeEvent::Redirecting {
                name,
                unique_id,
                peer,
                to,
                phase,
            } => match unique_id {
                Some(id) => write!(f, "IKE_SA {name}[{id}]: redirecting {peer} to {to} ({phase})"),
                None => write!(f, "{name}: redirecting {peer} to {to} ({phase}, no state kept)"),
            },
            IkeEvent::Redirected {
                name,
                unique_id,
                to,
                phase,
            } => write!(f, "IKE_SA {name}[{unique_id}]: redirected to {to} ({phase})"),
            IkeEvent::RedirectRefused { name, why } => write!(f, "{name}: redirect not followed: {why}"),
            IkeEvent::MoveFailed {
                name,
                unique_id,
                why,
            } => write!(f, "IKE_SA {name}[{unique_id}]: MOBIKE: {why}"),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for IkeEvent {
    // One arm per variant: the table of the log's lines. It is longer than
    // our ~80 lines, and kept whole on purpose: split by size, the compiler
    // could no longer check that every variant has its line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use IkeEvent as E;
        match self {
            E::ConfigRestricted(note) => f.write_str(note),
            E::CommandFailed(e) => write!(f, "{e}"),
            E::Acquire { child, reqid } => {
                write!(f, "acquire for CHILD_SA {child}{{{reqid}}}: initiating")
            }
            E::Initiating {
                name,
                unique_id,
                remote,
            } => write!(f, "initiating IKE_SA {name}[{unique_id}] to {remote}"),
            E::NoProposal { from } => write!(
                f,
                "IKE_SA_INIT from {from}: no acceptable proposal: NO_PROPOSAL_CHOSEN"
            ),
            E::InitRetry { group } => {
                write!(f, "peer wants DH group {group}: retrying IKE_SA_INIT")
            }
            E::InitRefused {
                name,
                unique_id,
                notify,
            } => write!(
                f,
                "IKE_SA {name}[{unique_id}]: IKE_SA_INIT answered with {notify} (unauthenticated): still waiting"
            ),
            E::InitIgnored {
                name,
                unique_id,
                why,
            } => write!(f, "IKE_SA {name}[{unique_id}]: {why}: ignored"),
            E::NegotiationFailed {
                name,
                unique_id,
                remote,
                reason,
            } => write!(f, "IKE_SA {name}[{unique_id}] with {remote} failed: {reason}"),
            E::AuthFailed { from, id, why } => {
                write!(f, "IKE_AUTH from {from} (")?;
                match id {
                    Some(id) => write!(f, "{id}")?,
                    None => f.write_str("?")?,
                }
                f.write_str("): authentication failed")?;
                match why {
                    Some(why) => write!(f, ": {why}"),
                    None => Ok(()),
                }
            }
            E::Established {
                name,
                unique_id,
                local,
                local_id,
                remote,
                remote_id,
            } => write!(
                f,
                "IKE_SA {name}[{unique_id}] established between {local}[{local_id}]...{remote}[{remote_id}]"
            ),
            E::EapSucceeded { user } => {
                write!(f, "EAP-MSCHAPv2 authenticated '{}', MSK established", user.escape_debug())
            }
            E::VirtualIpAssigned { peer, addr, pool } => {
                write!(f, "assigning virtual IP {addr} to peer '{peer}' (pool {pool})")
            }
            E::NoVirtualIp { peer } => {
                write!(f, "no virtual IP for peer '{peer}': no pool has one left")
            }
            E::VirtualIpInstalled { addrs, dns } => {
                f.write_str("installing virtual IP")?;
                for a in addrs {
                    write!(f, " {a}")?;
                }
                if !dns.is_empty() {
                    f.write_str(", DNS")?;
                    for d in dns {
                        write!(f, " {d}")?;
                    }
                }
                Ok(())
            }
            E::InitialContact { name, unique_id } => write!(
                f,
                "IKE_SA {name}[{unique_id}]: the peer made contact anew (INITIAL_CONTACT): deleting the stale SA"
            ),
            E::PeerMoved { from, to } => write!(
                f,
                "the peer moved from {from} to {to}: its CHILD_SAs keep the old address (not supported yet)"
            ),
            E::Moved { .. }
            | E::MoveFailed { .. }
            | E::Redirecting { .. }
            | E::Redirected { .. }
            | E::RedirectRefused { .. } => self.fmt_mobility(f),
            E::TcpFallback { name } => write!(
                f,
                "{name}: no answer over UDP, trying again over TCP (tcp_encap = fallback)"
            ),
            E::PeerRebound { from, to } => write!(
                f,
                "the peer's NAT rebound it from {from} to {to}: CHILD_SAs follow"
            ),
            E::PeerDead {
                name,
                unique_id,
                remote,
                retransmits,
            } => write!(
                f,
                "IKE_SA {name}[{unique_id}]: no answer from {remote} after {retransmits} retransmissions: peer is dead, deleting"
            ),
            E::PeerReports {
                name,
                unique_id,
                notify,
            } => write!(f, "IKE_SA {name}[{unique_id}]: peer reports {notify}"),
            E::Rekeyed {
                name,
                unique_id,
                new_unique_id,
                by_peer,
            } => {
                let by = if *by_peer { " by the peer" } else { "" };
                write!(f, "IKE_SA {name}[{unique_id}] rekeyed{by} as [{new_unique_id}]")
            }
            E::RekeyFailed {
                name,
                unique_id,
                notify,
            } => write!(f, "IKE_SA {name}[{unique_id}] rekey failed: {notify}"),
            E::RekeyCollisionLost { name, unique_id } => {
                write!(f, "IKE_SA {name}[{unique_id}]: rekey collision, ours lost")
            }
            E::Deleted {
                name,
                unique_id,
                by_peer,
            } => {
                let by = if *by_peer { " by the peer" } else { "" };
                write!(f, "IKE_SA {name}[{unique_id}] deleted{by}")
            }
            E::ChildInstalled {
                child,
                reqid,
                spi_in,
                spi_out,
                local_ts,
                remote_ts,
                resource,
            } => {
                write!(
                    f,
                    "CHILD_SA {child}{{{reqid}}} established with SPIs {spi_in:08x}_i {spi_out:08x}_o and TS {} === {}",
                    Selectors(local_ts),
                    Selectors(remote_ts)
                )?;
                match resource {
                    None => Ok(()),
                    Some(None) => f.write_str(", per-resource fallback"),
                    Some(Some(cpu)) => write!(f, ", per-resource cpu={cpu}"),
                }
            }
            E::ChildNotEstablished { child, notify } => {
                write!(f, "CHILD_SA {child} not established: {notify}")
            }
            E::ChildFailed { child, reason } => write!(f, "CHILD_SA {child}: {reason}"),
            E::ChildRequestRefused { from, notify } => {
                write!(f, "CHILD_SA request from {from} refused: {notify}")
            }
            E::ChildRefused { child, notify } => {
                write!(f, "CHILD_SA {child}: peer refused: {notify}")
            }
            E::ChildResources { child, resources } => write!(
                f,
                "CHILD_SA {child}: asking for {resources} per-resource CHILD_SAs (RFC 9611)"
            ),
            E::ChildNoResources { child } => write!(
                f,
                "CHILD_SA {child}: peer sent no SA_RESOURCE_INFO: no per-resource CHILD_SAs"
            ),
            E::ChildRetry { child, group } => {
                write!(f, "CHILD_SA {child}: peer wants DH group {group}: retrying")
            }
            E::ChildRekeyCollision { child, ours_won } => {
                if *ours_won {
                    write!(
                        f,
                        "CHILD_SA {child}: rekey collision, ours won: deleting the old SA"
                    )
                } else {
                    write!(
                        f,
                        "CHILD_SA {child}: rekey collision, ours lost: deleting the redundant SA"
                    )
                }
            }
            E::ChildVolumeReached { spi_in } => write!(
                f,
                "CHILD_SA with SPI {spi_in:08x}_i reached its rekey volume: rekeying"
            ),
            E::ChildExpired { spi_in } => write!(
                f,
                "CHILD_SA with SPI {spi_in:#010x} reached its life_time: deleting"
            ),
            E::ChildSwitched { spi_in } => write!(
                f,
                "CHILD_SA with SPI {spi_in:#010x} reached its life_time: its successor takes \
                 over (keep-old, no DELETE)"
            ),
            E::ChildRemoved {
                child,
                reqid,
                spi_in,
                spi_out,
            } => write!(
                f,
                "CHILD_SA {child}{{{reqid}}} with SPIs {spi_in:08x}_i {spi_out:08x}_o removed"
            ),
            E::Restarting { child } => write!(
                f,
                "initiating CHILD_SA {child} again (dpd_action or close_action)"
            ),
            E::TrapInstalled {
                child,
                reqid,
                local_ts,
                remote_ts,
            } => write!(
                f,
                "trap policy {child}{{{reqid}}} installed: {} === {}",
                Selectors(local_ts),
                Selectors(remote_ts)
            ),
            E::TrapRemoved { child, reqid } => {
                write!(f, "trap policy {child}{{{reqid}}} removed")
            }
            E::Reauthenticating { name, unique_id } => {
                write!(f, "IKE_SA {name}[{unique_id}]: reauthenticating (reauth_time)")
            }
            E::PeerRevoked {
                name,
                unique_id,
                why,
            } => write!(
                f,
                "IKE_SA {name}[{unique_id}]: the peer's credentials no longer hold ({why}): deleting"
            ),
            E::PoliciesHeld { child, reqid } => write!(
                f,
                "CHILD_SA {child}{{{reqid}}} replaced: its traffic is dropped until the new one is up"
            ),
            E::Reloaded(r) => write!(f, "configuration reloaded: {r}"),
        }
    }
}

/// Traffic selectors as `swanctl --list-sas` writes them, space apart.
struct Selectors<'a>(&'a [TrafficSelector]);

impl fmt::Display for Selectors<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            f.write_str(&crate::ts::ts_string(t))?;
        }
        Ok(())
    }
}

/// What a reload did to each connection, by name, in the new file's
/// order (removed ones in the old file's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reloaded {
    /// New connections, started as their `start_action` says.
    pub added: Vec<String>,
    /// Changed connections: the old one's IKE SAs deleted, the new one
    /// started.
    pub replaced: Vec<String>,
    /// Connections no longer in the file: their IKE SAs deleted.
    pub removed: Vec<String>,
    /// Connections that stayed as they were, with their SAs.
    pub unchanged: Vec<String>,
}

impl core::fmt::Display for Reloaded {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut parts = Vec::new();
        for (what, names) in [
            ("added", &self.added),
            ("replaced", &self.replaced),
            ("removed", &self.removed),
        ] {
            if !names.is_empty() {
                parts.push(format!("{what} {}", names.join(", ")));
            }
        }
        parts.push(format!("{} unchanged", self.unchanged.len()));
        f.write_str(&parts.join("; "))
    }
}

#[cfg(test)]
mod tests;
