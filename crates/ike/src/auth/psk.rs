//! Pre-shared keys (RFC 7296 §2.15): AUTH = prf(prf(Shared Secret, "Key
//! Pad for IKEv2"), octets), method 2 (Shared Key Message Integrity
//! Code), the peer's compared in constant time. The key is the secret
//! `secrets` holds for the two identities (strongSwan's `ike-…` lookup).

use flowsec_wire::iana::AuthMethod;
use flowsec_wire::ike::{Auth, Message, Payload};
use subtle::ConstantTimeEq;

use super::{Authenticator, Claim, Octets};
use crate::cert::Rejection;
use crate::context::Cx;
use crate::error::NegotiationError;

/// A pre-shared key between the claimed identities.
pub(crate) struct Psk;

impl Authenticator for Psk {
    fn build(
        &self,
        cx: &Cx<'_>,
        octets: &Octets<'_>,
        claim: Claim<'_>,
        _: bool,
    ) -> Result<(Vec<Payload>, Auth), NegotiationError> {
        let no_key = || NegotiationError::NoSharedKey {
            me: claim.me.clone(),
            peer: claim.peer.clone(),
        };
        let key = cx
            .config
            .find_psk(claim.me, claim.peer)
            .ok_or_else(no_key)?;
        let data = octets.keyed(&cx.provider, key).ok_or_else(no_key)?;
        Ok((Vec::new(), mic(data)))
    }

    fn verify(
        &self,
        cx: &mut Cx<'_>,
        octets: &Octets<'_>,
        claim: Claim<'_>,
        _: &Message,
        auth: &Auth,
    ) -> Result<(), Option<Rejection>> {
        let key = cx.config.find_psk(claim.me, claim.peer).ok_or(None)?;
        check_mic(&octets.keyed(&cx.provider, key), auth)
    }
}

/// An AUTH payload with a shared-key MAC.
pub(crate) fn mic(data: Vec<u8>) -> Auth {
    Auth {
        method: AuthMethod::SHARED_KEY_MIC,
        data,
    }
}

/// The peer's shared-key `auth` against what it should be (`want`), in
/// constant time.
pub(crate) fn check_mic(want: &Option<Vec<u8>>, auth: &Auth) -> Result<(), Option<Rejection>> {
    match want {
        Some(w) if auth.method == AuthMethod::SHARED_KEY_MIC && bool::from(w.ct_eq(&auth.data)) => {
            Ok(())
        }
        _ => Err(None),
    }
}
