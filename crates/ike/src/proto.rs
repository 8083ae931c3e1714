//! IPsec protocols as the wire, the configuration and the data plane name
//! them (ESP, AH), and which proposals a child offers for which.

use flowsec_ipsec::Protocol;
use flowsec_wire::iana::ProtocolId;

use crate::config;

/// The proposals of a child and the protocol they are for: AH when
/// `ah_proposals` is set (strongSwan then negotiates AH), else ESP.
pub(crate) fn suites(child: &config::ChildConfig) -> (&[config::ChildProposal], Protocol) {
    if child.ah_proposals.is_empty() {
        (&child.esp_proposals, Protocol::Esp)
    } else {
        (&child.ah_proposals, Protocol::Ah)
    }
}

/// The IKE protocol ID of an IPsec protocol.
pub(crate) fn protocol_id(p: Protocol) -> ProtocolId {
    match p {
        Protocol::Ah => ProtocolId::AH,
        _ => ProtocolId::ESP,
    }
}

/// The IPsec protocol of an IKE protocol ID (ESP unless AH).
pub(crate) fn protocol_of(p: ProtocolId) -> Protocol {
    if p == ProtocolId::AH {
        Protocol::Ah
    } else {
        Protocol::Esp
    }
}
