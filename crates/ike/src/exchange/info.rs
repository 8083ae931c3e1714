//! INFORMATIONAL exchanges (RFC 7296 §1.4): DELETE of Child SAs and of the
//! IKE SA, dead-peer detection (an empty request), error notifies.
//!
//! ```text
//! Initiator                               Responder
//! HDR, SK {D (ESP, SPIs)}   -->
//!                               <--  HDR, SK {D (ESP, SPIs of the other half)}
//! HDR, SK {D (IKE)}          -->
//!                               <--  HDR, SK {}
//! HDR, SK {}  (DPD)          -->
//!                               <--  HDR, SK {}
//! ```

use flowsec_wire::iana::{ExchangeType, NotifyType, ProtocolId};
use flowsec_wire::ike::{Delete as DeletePayload, Message, Payload};

use crate::context::Cx;
use crate::event::IkeEvent;
use crate::exchange::Exchange;
use crate::exchange::Kind;
use crate::host::error_notify;
use crate::sa::{ChildState, IkeSa, IkeState};
use crate::table::{SaMut, Then};

/// The Child SAs a peer's DELETE payloads name, by our inbound SPI (the
/// peer names its inbound SPI: our outbound one): those whose halves our
/// answer names (§1.4.1), with their protocol, and those we are deleting
/// ourselves (DELETEs crossed: they go too, unnamed).
fn deleted_children(sa: &IkeSa, deletes: &[&DeletePayload]) -> (Vec<(ProtocolId, u32)>, Vec<u32>) {
    let (mut ours, mut crossed) = (Vec::new(), Vec::new());
    for d in deletes
        .iter()
        .filter(|d| d.protocol == ProtocolId::ESP || d.protocol == ProtocolId::AH)
    {
        let want = crate::proto::protocol_of(d.protocol);
        for spi in &d.spis {
            match sa
                .children
                .iter()
                .find(|c| c.spi_out == *spi && c.plane.sa_out.protocol == want)
            {
                Some(c) if c.state == ChildState::Deleting => crossed.push(c.spi_in),
                Some(c) => ours.push((crate::proto::protocol_id(c.plane.sa_in.protocol), c.spi_in)),
                None => {}
            }
        }
    }
    (ours, crossed)
}

/// INFORMATIONAL with DELETE (§1.4.1), initiator: waits for the answer.
pub(crate) enum Delete {
    /// Of these Child SAs (our inbound SPIs); the answer names the other
    /// halves.
    Children(Vec<u32>),
    /// Of the IKE SA, and with it of its Child SAs.
    Ike,
}

/// An empty INFORMATIONAL (§1.4, dead-peer detection), initiator: any
/// answer proves the peer alive.
pub(crate) struct Dpd;

impl Exchange for Delete {
    fn kind(&self) -> Kind {
        match self {
            Delete::Children(_) => Kind::DeleteChildren,
            Delete::Ike => Kind::DeleteIke,
        }
    }

    fn process(self: Box<Self>, cx: &mut Cx<'_>, sa: &mut SaMut<'_>, _: Message) -> Then {
        match *self {
            Delete::Children(spis) => {
                for spi in spis {
                    crate::install::remove_child(cx, sa, spi);
                }
                Then::Stay
            }
            Delete::Ike => {
                let name = cx.conn_name(sa);
                cx.report(
                    sa,
                    IkeEvent::Deleted {
                        name,
                        unique_id: sa.uid,
                        by_peer: false,
                    },
                );
                Then::Destroy(Vec::new())
            }
        }
    }
}

impl Exchange for Dpd {
    fn kind(&self) -> Kind {
        Kind::Dpd
    }

    /// Any answer proves the peer alive (the engine noted when it heard
    /// it).
    fn process(self: Box<Self>, _: &mut Cx<'_>, _: &mut SaMut<'_>, _: Message) -> Then {
        Then::Stay
    }
}

/// Responder: an INFORMATIONAL request.
pub(crate) fn informational_request(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    mid: u32,
    msg: Message,
) -> Then {
    // RFC 5685: our gateway sends us to another one.
    if let Some(then) = crate::exchange::redirect::informational(cx, sa, mid, &msg) {
        return then;
    }
    // MOBIKE (RFC 4555): an address update followed, and what the answer
    // carries for it.
    let mobike = crate::exchange::mobike::informational(cx, sa, &msg);
    let deletes: Vec<&DeletePayload> = msg
        .payloads
        .iter()
        .filter_map(|p| match p {
            Payload::Delete(d) => Some(d),
            _ => None,
        })
        .collect();
    if deletes.iter().any(|d| d.protocol == ProtocolId::IKE) {
        cx.respond(sa, ExchangeType::INFORMATIONAL, mid, mobike);
        cx.host.report(
            sa,
            IkeEvent::Deleted {
                name: cx.host.conn_name(sa),
                unique_id: sa.uid,
                by_peer: true,
            },
        );
        return Then::Destroy(crate::table::after_close(sa, None));
    }
    if let Some(n) = error_notify(&msg) {
        // E.g. AUTHENTICATION_FAILED after IKE_AUTH (§2.21.2).
        let ty = n.ty;
        cx.host.report(
            sa,
            IkeEvent::PeerReports {
                name: cx.host.conn_name(sa),
                unique_id: sa.uid,
                notify: ty,
            },
        );
        if ty == NotifyType::AUTHENTICATION_FAILED {
            cx.respond(sa, ExchangeType::INFORMATIONAL, mid, vec![]);
            return Then::Destroy(Vec::new());
        }
    }
    let (ours, crossed) = deleted_children(sa, &deletes);
    for spi in &crossed {
        crate::install::remove_child(cx, sa, *spi);
    }
    // Those the peer closes on its own (not the old half of a rekey).
    let closed: Vec<u32> = sa
        .children
        .iter()
        .filter(|c| ours.iter().any(|(_, s)| *s == c.spi_in) && c.state == ChildState::Installed)
        .map(|c| c.spi_in)
        .collect();
    let after = crate::table::after_close(sa, Some(&closed));
    for (_, spi) in &ours {
        crate::install::remove_child(cx, sa, *spi);
    }
    // One Delete payload per protocol (§3.11).
    let payloads: Vec<Payload> = [ProtocolId::ESP, ProtocolId::AH]
        .into_iter()
        .filter_map(|protocol| {
            let spis: Vec<u32> = ours
                .iter()
                .filter(|(p, _)| *p == protocol)
                .map(|(_, s)| *s)
                .collect();
            (!spis.is_empty()).then_some(Payload::Delete(DeletePayload { protocol, spis }))
        })
        .chain(mobike)
        .collect();
    cx.respond(sa, ExchangeType::INFORMATIONAL, mid, payloads);
    Then::Revive(after)
}

/// Start deleting the Child SA with inbound SPI `spi`.
pub(crate) fn start_delete_child(cx: &mut Cx<'_>, sa: &mut IkeSa, spi: u32) {
    let Some(c) = sa.children.iter_mut().find(|c| c.spi_in == spi) else {
        return;
    };
    c.state = ChildState::Deleting;
    let d = Payload::Delete(DeletePayload {
        protocol: crate::proto::protocol_id(c.plane.sa_in.protocol),
        spis: vec![spi],
    });
    cx.request(
        sa,
        ExchangeType::INFORMATIONAL,
        vec![d],
        Box::new(Delete::Children(vec![spi])),
    );
}

/// Start deleting the IKE SA (and with it its Child SAs).
pub(crate) fn start_delete_ike(cx: &mut Cx<'_>, sa: &mut IkeSa) {
    sa.state = IkeState::Deleting;
    sa.times.expire_at = None;
    let d = Payload::Delete(DeletePayload {
        protocol: ProtocolId::IKE,
        spis: vec![],
    });
    cx.request(
        sa,
        ExchangeType::INFORMATIONAL,
        vec![d],
        Box::new(Delete::Ike),
    );
}
