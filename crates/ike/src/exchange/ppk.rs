//! Post-quantum preshared keys in IKE_AUTH (RFC 8784), as strongSwan 6
//! does them (`ppk_id`, `ppk_required`, `secrets { ppk-… }`).
//!
//! ```text
//! Initiator                               Responder
//! HDR, SAi1, KEi, Ni, N(USE_PPK)  -->
//!                               <--  HDR, SAr1, KEr, Nr, N(USE_PPK)
//! HDR, SK {IDi, AUTH, …, N(PPK_IDENTITY, PPK_ID), [N(NO_PPK_AUTH)]}  -->
//!                               <--  HDR, SK {IDr, AUTH, …, N(PPK_IDENTITY)}
//! ```
//! With a PPK both ends replace SK_d, SK_pi and SK_pr (§3):
//! SK_x = prf+(PPK, SK_x'), as long as SK_x'; the AUTH payloads (through
//! `prf(SK_p, ID')`) and every key from SK_d after them depend on it.
//! NO_PPK_AUTH carries the initiator's AUTH data computed without it, for
//! a responder that has no PPK while the initiator does not require one.
//! The responder says it used the PPK with an empty PPK_IDENTITY; the
//! initiator goes back to the keys without it otherwise (or gives up,
//! `ppk_required`). PPK_IDs are PPK_ID_FIXED (§5.1), the one type
//! strongSwan sends and takes.

use flowsec_wire::iana::NotifyType;
use flowsec_wire::ike::{Message, Payload};
use zeroize::Zeroizing;

use crate::error::NegotiationError;
use crate::host::{has_notify, notifies, notify, Host};
use crate::sa::IkeSa;

/// PPK_ID_FIXED (RFC 8784 §5.1).
const PPK_ID_FIXED: u8 = 2;

/// The keys a PPK replaced (§3), to go back to.
pub(crate) struct Unmixed {
    sk_d: Zeroizing<Vec<u8>>,
    sk_pi: Zeroizing<Vec<u8>>,
    sk_pr: Zeroizing<Vec<u8>>,
}

/// The initiator's PPK, found by its `ppk_id`.
pub(crate) struct Ppk {
    pub id: String,
    pub key: Zeroizing<Vec<u8>>,
}

/// Mix `ppk` into `sa`'s SK_d, SK_pi and SK_pr (§3); the keys it
/// replaced. `None` (nothing changed) if the PRF cannot.
pub(crate) fn mix(host: &Host, sa: &mut IkeSa, ppk: &[u8]) -> Option<Unmixed> {
    let keys = sa.keys.as_mut()?;
    let (p, prf) = (&host.provider, keys.suite.prf);
    let d = crate::crypto::ppk_key(p, prf, ppk, &keys.sk_d).ok()?;
    let pi = crate::crypto::ppk_key(p, prf, ppk, &keys.sk_pi).ok()?;
    let pr = crate::crypto::ppk_key(p, prf, ppk, &keys.sk_pr).ok()?;
    keys.ppk = true;
    Some(Unmixed {
        sk_d: std::mem::replace(&mut keys.sk_d, d),
        sk_pi: std::mem::replace(&mut keys.sk_pi, pi),
        sk_pr: std::mem::replace(&mut keys.sk_pr, pr),
    })
}

/// Back to the keys without the PPK (the responder did not use it).
pub(crate) fn unmix(sa: &mut IkeSa, old: Unmixed) {
    if let Some(keys) = sa.keys.as_mut() {
        (keys.sk_d, keys.sk_pi, keys.sk_pr) = (old.sk_d, old.sk_pi, old.sk_pr);
        keys.ppk = false;
    }
}

/// Whether we announce USE_PPK in IKE_SA_INIT: as initiator with a
/// `ppk_id`; as responder when the initiator did and we hold a PPK at
/// all (strongSwan's rule: not per connection, which IKE_AUTH may
/// change).
pub(crate) fn announce(host: &Host, sa: &IkeSa, peer_asked: bool) -> bool {
    match sa.initiator {
        true => sa.conn.ppk_id.is_some(),
        false => peer_asked && !host.config.ppk_secrets.is_empty(),
    }
}

/// Initiator, before our first AUTH: the PPK to use, if any (strongSwan's
/// `get_ppk_i()`); an error when `ppk_required` cannot be met.
pub(crate) fn initiator(host: &Host, sa: &IkeSa) -> Result<Option<Ppk>, NegotiationError> {
    let conn = &sa.conn;
    let without = |why| match conn.ppk_required {
        true => Err(NegotiationError::Ppk(why)),
        false => Ok(None),
    };
    if !sa.announced.ppk {
        return without("the peer does not support PPK (no USE_PPK)");
    }
    let Some(id) = &conn.ppk_id else {
        return without("no ppk_id configured");
    };
    match host.config.find_ppk(id.as_bytes()) {
        Some(key) => Ok(Some(Ppk {
            id: id.clone(),
            key: Zeroizing::new(key.to_vec()),
        })),
        None => without("no ppk secret for our ppk_id"),
    }
}

/// PPK_IDENTITY naming `id` (PPK_ID_FIXED).
pub(crate) fn identity(id: &str) -> Payload {
    let mut data = vec![PPK_ID_FIXED];
    data.extend_from_slice(id.as_bytes());
    notify(NotifyType::PPK_IDENTITY, data)
}

/// The empty PPK_IDENTITY of the responder's answer: it used the PPK.
pub(crate) fn used() -> Payload {
    notify(NotifyType::PPK_IDENTITY, vec![])
}

/// Whether the responder's answer says it used the PPK.
pub(crate) fn peer_used(msg: &Message) -> bool {
    has_notify(msg, NotifyType::PPK_IDENTITY)
}

/// NO_PPK_AUTH with our AUTH data computed without the PPK.
pub(crate) fn no_ppk_auth(data: Vec<u8>) -> Payload {
    notify(NotifyType::NO_PPK_AUTH, data)
}

/// Why the responder refuses the initiator's first AUTH over its PPK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `ppk_required`, and the peer announced none, named none or one we
    /// do not hold.
    Required,
    /// The peer named another PPK_ID than our `ppk_id`.
    OtherId,
    /// The keys could not be derived with it.
    Keys,
}

/// Responder, the initiator's first IKE_AUTH `msg`, before its AUTH is
/// checked: with the PPK it names mixed into our keys (`true`), or
/// without one (`false`, and the request to check instead of `msg` when
/// its AUTH is in NO_PPK_AUTH); or why it is refused.
pub(crate) fn responder_keys(
    host: &Host,
    sa: &mut IkeSa,
    msg: &Message,
) -> Result<(bool, Option<Message>), Refusal> {
    match responder(host, sa, msg)? {
        Some(key) => {
            mix(host, sa, &key).ok_or(Refusal::Keys)?;
            Ok((true, None))
        }
        None => Ok((false, without_ppk(sa, msg))),
    }
}

/// Responder: the PPK the initiator's request `msg` names, `None` to go
/// without (strongSwan's `get_ppk_r()`), or why it is refused.
fn responder(
    host: &Host,
    sa: &IkeSa,
    msg: &Message,
) -> Result<Option<Zeroizing<Vec<u8>>>, Refusal> {
    let conn = &sa.conn;
    let without = match conn.ppk_required {
        true => Err(Refusal::Required),
        false => Ok(None),
    };
    if !sa.announced.ppk {
        return without;
    }
    let named = notifies(msg)
        .find(|n| n.ty == NotifyType::PPK_IDENTITY)
        .and_then(|n| match n.data.split_first() {
            Some((&PPK_ID_FIXED, id)) if !id.is_empty() => Some(id),
            _ => None,
        });
    let Some(id) = named else {
        return without;
    };
    if conn
        .ppk_id
        .as_ref()
        .is_some_and(|ours| ours.as_bytes() != id)
    {
        return Err(Refusal::OtherId);
    }
    match host.config.find_ppk(id) {
        Some(key) => Ok(Some(Zeroizing::new(key.to_vec()))),
        None => without,
    }
}

/// Responder without a PPK: the initiator's request with its AUTH data
/// replaced by NO_PPK_AUTH's, when USE_PPK was exchanged and it sent one
/// (§3: the AUTH computed without the PPK); `None` to check AUTH as it
/// is.
fn without_ppk(sa: &IkeSa, msg: &Message) -> Option<Message> {
    if !sa.announced.ppk {
        return None;
    }
    let data = notifies(msg)
        .find(|n| n.ty == NotifyType::NO_PPK_AUTH)?
        .data
        .clone();
    let mut msg = msg.clone();
    for p in &mut msg.payloads {
        if let Payload::Auth(auth) = p {
            auth.data = data.clone();
        }
    }
    Some(msg)
}
