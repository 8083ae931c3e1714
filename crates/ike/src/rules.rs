//! Which payloads each exchange may and must carry (RFC 7296 §1.2–1.4,
//! §3), checked once on every message before any task sees it, as
//! strongSwan's `message.c` payload rules do. A violation answers
//! INVALID_SYNTAX (§2.21.2) or drops the message.

use flowsec_wire::iana::{ExchangeType, NotifyType, PayloadType};
use flowsec_wire::ike::Payload;

/// How often a payload type may appear: (type, at most, at least).
type Rule = (PayloadType, usize, usize);

/// IKE_SA_INIT request: SA, KE, Ni (§1.2).
const INIT_REQUEST: &[Rule] = &[
    (PayloadType::SA, 1, 1),
    (PayloadType::KE, 1, 1),
    (PayloadType::NONCE, 1, 1),
];
/// IKE_AUTH request: at most one of each (§1.2): the first carries IDi
/// (and AUTH unless EAP follows, §2.16), later ones EAP or AUTH alone;
/// the task checks which its state expects.
const AUTH_REQUEST: &[Rule] = &[
    (PayloadType::IDI, 1, 0),
    (PayloadType::IDR, 1, 0),
    (PayloadType::AUTH, 1, 0),
    (PayloadType::EAP, 1, 0),
    (PayloadType::CP, 1, 0),
    (PayloadType::SA, 1, 0),
    (PayloadType::TSI, 1, 0),
    (PayloadType::TSR, 1, 0),
];
/// CREATE_CHILD_SA request: SA and Ni, at most one KE (§1.3).
const CHILD_REQUEST: &[Rule] = &[
    (PayloadType::SA, 1, 1),
    (PayloadType::NONCE, 1, 1),
    (PayloadType::KE, 1, 0),
    (PayloadType::TSI, 1, 0),
    (PayloadType::TSR, 1, 0),
];
/// IKE_INTERMEDIATE request (RFC 9242 §3.2; RFC 9370 §2.2.2): at most one
/// KE (the exchange's payloads are its extension's).
const INTERMEDIATE_REQUEST: &[Rule] = &[(PayloadType::KE, 1, 0)];
/// IKE_FOLLOWUP_KE request (RFC 9370 §2.2.4): the next KE (the task
/// answers one missing) and the link.
const FOLLOWUP_REQUEST: &[Rule] = &[(PayloadType::KE, 1, 0)];
/// Responses: at most one of each; what must be there depends on whether
/// the exchange failed, which the task decides.
const RESPONSE: &[Rule] = &[
    (PayloadType::SA, 1, 0),
    (PayloadType::KE, 1, 0),
    (PayloadType::NONCE, 1, 0),
    (PayloadType::IDR, 1, 0),
    (PayloadType::AUTH, 1, 0),
    (PayloadType::EAP, 1, 0),
    (PayloadType::CP, 1, 0),
    (PayloadType::TSI, 1, 0),
    (PayloadType::TSR, 1, 0),
];

/// Check the payload list of a (decrypted) message against the table;
/// `Err` carries the notify to answer a request with.
pub fn check(
    exchange: ExchangeType,
    response: bool,
    payloads: &[Payload],
) -> Result<(), NotifyType> {
    let rules: &[Rule] = match (exchange, response) {
        (_, true) => RESPONSE,
        (ExchangeType::IKE_SA_INIT, false) => INIT_REQUEST,
        (ExchangeType::IKE_AUTH, false) => AUTH_REQUEST,
        (ExchangeType::CREATE_CHILD_SA, false) => CHILD_REQUEST,
        (ExchangeType::INFORMATIONAL, false) => &[],
        (ExchangeType::IKE_INTERMEDIATE, false) => INTERMEDIATE_REQUEST,
        (ExchangeType::IKE_FOLLOWUP_KE, false) => FOLLOWUP_REQUEST,
        _ => return Err(NotifyType::INVALID_SYNTAX),
    };
    for &(ty, most, least) in rules {
        let n = payloads.iter().filter(|p| p.ty() == ty).count();
        if n > most || n < least {
            return Err(NotifyType::INVALID_SYNTAX);
        }
    }
    // Payloads no exchange of ours carries in these places.
    let misplaced = payloads.iter().any(|p| match p.ty() {
        PayloadType::IDI | PayloadType::AUTH => exchange != ExchangeType::IKE_AUTH,
        PayloadType::EAP => exchange != ExchangeType::IKE_AUTH,
        PayloadType::KE | PayloadType::NONCE | PayloadType::SA => {
            exchange == ExchangeType::INFORMATIONAL
                || exchange == ExchangeType::IKE_AUTH && p.ty() != PayloadType::SA
        }
        _ => false,
    });
    if misplaced {
        return Err(NotifyType::INVALID_SYNTAX);
    }
    // In IKE_AUTH and CREATE_CHILD_SA requests, SA, TSi and TSr come
    // together or not at all (§1.2).
    if !response && exchange == ExchangeType::IKE_AUTH {
        let count = |t| payloads.iter().filter(|p| p.ty() == t).count();
        let (sa, tsi, tsr) = (
            count(PayloadType::SA),
            count(PayloadType::TSI),
            count(PayloadType::TSR),
        );
        if sa != tsi || sa != tsr {
            return Err(NotifyType::INVALID_SYNTAX);
        }
        // Something to authenticate with: IDi (a first message), EAP or
        // AUTH (the later ones of EAP, §2.16).
        if count(PayloadType::IDI) + count(PayloadType::EAP) + count(PayloadType::AUTH) == 0 {
            return Err(NotifyType::INVALID_SYNTAX);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_request_needs_sa_ke_nonce_once() {
        let nonce = Payload::Nonce(vec![0; 32]);
        let sa = Payload::Sa(vec![]);
        let ke = Payload::Ke(flowsec_wire::ike::Ke {
            group: flowsec_wire::iana::DhGroup::ECP_256,
            data: vec![0; 64],
        });
        let ok = [sa.clone(), ke.clone(), nonce.clone()];
        assert_eq!(check(ExchangeType::IKE_SA_INIT, false, &ok), Ok(()));
        assert!(check(ExchangeType::IKE_SA_INIT, false, &ok[..2]).is_err());
        let twice = [sa, ke, nonce.clone(), nonce];
        assert!(check(ExchangeType::IKE_SA_INIT, false, &twice).is_err());
        assert_eq!(check(ExchangeType::INFORMATIONAL, false, &[]), Ok(()));
        assert!(check(ExchangeType::INFORMATIONAL, false, &ok).is_err());
        assert!(check(ExchangeType(99), false, &[]).is_err());
    }
}
