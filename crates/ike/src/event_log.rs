//! Events with the IKE SA they happened in, and how a log ranks them:
//! strongSwan prints `<gw|3>` before every line of an IKE SA's context,
//! Child SA lines included, and files each line under a subsystem (IKE,
//! CHD, CFG) at a level. Whoever reports an event names the IKE SA it is
//! about ([`Events::about`], `Host::report`): no context is kept between
//! reports. Nothing here reads a clock or writes a line.

use core::fmt;

use crate::event::IkeEvent;

/// The IKE SA a line is about: its connection and unique id
/// (strongSwan's `<name|id>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaTag {
    /// The connection.
    pub name: String,
    /// The IKE SA's unique id.
    pub unique_id: u32,
}

impl fmt::Display for SaTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}|{}", self.name, self.unique_id)
    }
}

/// One event and the IKE SA whose handling reported it, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    /// The IKE SA being handled when it happened.
    pub sa: Option<SaTag>,
    /// What happened.
    pub event: IkeEvent,
}

/// Which part of IKE an event is about (strongSwan's log groups).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subsystem {
    /// IKE SAs and their exchanges (`IKE`).
    Ike,
    /// Child SAs and trap policies (`CHD`).
    Chd,
    /// The configuration (`CFG`).
    Cfg,
}

/// How much an event matters to whoever reads the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Something failed (authentication, a negotiation, a dead peer).
    Failure,
    /// An SA's life: initiated, established, rekeyed, deleted.
    Lifecycle,
}

impl IkeEvent {
    /// The subsystem it is filed under.
    pub fn subsystem(&self) -> Subsystem {
        use IkeEvent as E;
        match self {
            E::ConfigRestricted(_)
            | E::Reloaded(_)
            | E::CommandFailed(_)
            | E::VirtualIpAssigned { .. }
            | E::NoVirtualIp { .. } => Subsystem::Cfg,
            E::Acquire { .. }
            | E::ChildInstalled { .. }
            | E::ChildNotEstablished { .. }
            | E::ChildFailed { .. }
            | E::ChildRequestRefused { .. }
            | E::ChildRefused { .. }
            | E::ChildResources { .. }
            | E::ChildNoResources { .. }
            | E::ChildRetry { .. }
            | E::ChildRekeyCollision { .. }
            | E::ChildVolumeReached { .. }
            | E::ChildExpired { .. }
            | E::ChildSwitched { .. }
            | E::ChildRemoved { .. }
            | E::Restarting { .. }
            | E::TrapInstalled { .. }
            | E::TrapRemoved { .. }
            | E::PoliciesHeld { .. } => Subsystem::Chd,
            _ => Subsystem::Ike,
        }
    }

    /// The IKE SA it names itself, if it does.
    pub fn names_sa(&self) -> Option<SaTag> {
        use IkeEvent as E;
        let (name, unique_id) = match self {
            E::Deleted {
                name, unique_id, ..
            }
            | E::Established {
                name, unique_id, ..
            }
            | E::InitIgnored {
                name, unique_id, ..
            }
            | E::InitRefused {
                name, unique_id, ..
            }
            | E::InitialContact {
                name, unique_id, ..
            }
            | E::Initiating {
                name, unique_id, ..
            }
            | E::NegotiationFailed {
                name, unique_id, ..
            }
            | E::PeerDead {
                name, unique_id, ..
            }
            | E::PeerReports {
                name, unique_id, ..
            }
            | E::RekeyCollisionLost {
                name, unique_id, ..
            }
            | E::RekeyFailed {
                name, unique_id, ..
            }
            | E::Rekeyed {
                name, unique_id, ..
            } => (name, *unique_id),
            _ => return None,
        };
        Some(SaTag {
            name: name.clone(),
            unique_id,
        })
    }

    /// Whether it reports a failure or an SA's ordinary life.
    pub fn severity(&self) -> Severity {
        use IkeEvent as E;
        match self {
            E::CommandFailed(_)
            | E::NoProposal { .. }
            | E::NegotiationFailed { .. }
            | E::AuthFailed { .. }
            | E::PeerDead { .. }
            | E::RekeyFailed { .. }
            | E::ChildNotEstablished { .. }
            | E::ChildFailed { .. }
            | E::ChildRefused { .. }
            | E::NoVirtualIp { .. } => Severity::Failure,
            _ => Severity::Lifecycle,
        }
    }
}

/// What the core reported and not yet taken, each tagged with the IKE SA
/// it is about: the one its reporter named ([`Events::about`]), or the one
/// the event names itself, or none. No context is kept between calls.
#[derive(Debug, Default)]
pub(crate) struct Events {
    list: Vec<Logged>,
}

impl Events {
    /// Report `event`, about the IKE SA it names, if any.
    pub(crate) fn push(&mut self, event: IkeEvent) {
        let sa = event.names_sa();
        self.list.push(Logged { sa, event });
    }

    /// Report `event` about the IKE SA `sa` (unless it names one itself).
    pub(crate) fn about(&mut self, sa: SaTag, event: IkeEvent) {
        let sa = event.names_sa().or(Some(sa));
        self.list.push(Logged { sa, event });
    }

    /// Everything reported, in order.
    pub(crate) fn take(&mut self) -> Vec<Logged> {
        std::mem::take(&mut self.list)
    }
}
