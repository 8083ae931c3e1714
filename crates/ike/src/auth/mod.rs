//! Authenticating the peer and ourselves in IKE_AUTH (RFC 7296 §2.15,
//! §2.16), as strongSwan's `authenticator_t`: one [`Authenticator`] per
//! method builds our AUTH payload and verifies the peer's, both over the
//! octets §2.15 defines ([`Octets`], the one place that says what an AUTH
//! covers).
//!
//! ```text
//!  local.auth / remote.auth ──► of(kind) ──► Psk      (psk.rs: prf(prf(key, pad), octets))
//!                                       ├──► Pubkey   (pubkey.rs: RFC 7427 signature + CERTs)
//!                                       └──► Eap      (eap.rs: the conversation first,
//!                                                       then Msk: the PSK MAC keyed by the MSK)
//! ```

pub(crate) mod eap;
pub(crate) mod psk;
pub(crate) mod pubkey;

use flowsec_wire::iana::PrfId;
use flowsec_wire::ike::{Auth, Id, Message, Payload, CERT_X509_SIGNATURE};

use crate::cert::Rejection;
use crate::config::{AuthKind, Identity};
use crate::context::Cx;
use crate::error::NegotiationError;
use crate::exchange::InitMessages;
use crate::sa::{IkeSa, PeerAuth};

/// What one AUTH payload covers (§2.15): the signer's IKE_SA_INIT message
/// as it went, the other side's nonce and `prf(SK_px, ID')` of the
/// signer's ID payload. `RealMessage | Nonce | MACedIDFor…`.
pub(crate) struct Octets<'a> {
    pub sa: &'a IkeSa,
    pub init: &'a InitMessages,
    /// Our AUTH (`true`) or the peer's.
    pub ours: bool,
    /// The signer's ID payload.
    pub id: &'a Id,
}

/// The signer's side of [`Octets`]: its PRF, real message, the other
/// side's nonce and its SK_p.
struct Signer<'a> {
    prf: PrfId,
    message: &'a [u8],
    nonce: &'a [u8],
    sk_p: &'a [u8],
}

impl Octets<'_> {
    /// The initiator signs message 1 and Nr with SK_pi, the responder
    /// message 2 and Ni with SK_pr. `None` before the SA has keys.
    fn signer(&self) -> Option<Signer<'_>> {
        let keys = self.sa.keys.as_ref()?;
        let init = self.init;
        let (message, nonce, sk_p) = match self.ours == self.sa.initiator {
            true => (&init.request, &init.nr, &keys.sk_pi),
            false => (&init.response, &init.ni, &keys.sk_pr),
        };
        Some(Signer {
            prf: keys.suite.prf,
            message,
            nonce,
            sk_p,
        })
    }

    /// The octets themselves (what a signature covers), with IntAuth
    /// after IKE_INTERMEDIATE exchanges (RFC 9242 §3.3.2).
    pub fn bytes(&self, provider: &flowsec_crypto::Provider) -> Option<Vec<u8>> {
        let s = self.signer()?;
        let id = self.id.body();
        let mut octets =
            crate::crypto::signed_octets(provider, s.prf, s.message, s.nonce, s.sk_p, &id).ok()?;
        octets.extend_from_slice(&self.init.int_auth());
        Some(octets)
    }

    /// A shared key's AUTH over them: `prf(prf(key, "Key Pad for
    /// IKEv2"), octets)` (§2.15; §2.16 with the MSK as the key).
    pub fn keyed(&self, provider: &flowsec_crypto::Provider, key: &[u8]) -> Option<Vec<u8>> {
        let prf = self.signer()?.prf;
        let octets = self.bytes(provider)?;
        crate::crypto::keyed_auth(provider, prf, key, &octets).ok()
    }
}

/// The identities an AUTH is between: ours and the peer's.
#[derive(Clone, Copy)]
pub(crate) struct Claim<'a> {
    pub me: &'a Identity,
    pub peer: &'a Identity,
}

/// One way of authenticating in IKE_AUTH.
pub(crate) trait Authenticator {
    /// Our AUTH over `octets`, with the CERT payloads that go before it
    /// (`peer_asked`: the peer sent CERTREQ).
    fn build(
        &self,
        cx: &Cx<'_>,
        octets: &Octets<'_>,
        claim: Claim<'_>,
        peer_asked: bool,
    ) -> Result<(Vec<Payload>, Auth), NegotiationError>;

    /// Whether the peer's `auth` (in `msg`, with the CERTs it carries)
    /// proves `claim.peer`; why not, when a certificate or signature was
    /// refused.
    fn verify(
        &self,
        cx: &mut Cx<'_>,
        octets: &Octets<'_>,
        claim: Claim<'_>,
        msg: &Message,
        auth: &Auth,
    ) -> Result<(), Option<Rejection>>;
}

/// The authenticator for a connection's `local.auth` or `remote.auth`.
/// EAP's conversation comes first in exchanges of its own ([`eap`]); this
/// one refuses, and [`eap::Msk`] checks the AUTHs that end it.
pub(crate) fn of(kind: AuthKind) -> &'static dyn Authenticator {
    match kind {
        AuthKind::Psk => &psk::Psk,
        AuthKind::Pubkey(_) => &pubkey::Pubkey,
        AuthKind::Eap => &eap::Conversation,
    }
}

/// The peer of `sa` authenticated at `now` with `msg` (the IKE_AUTH
/// message that carried its certificates, if any).
pub(crate) fn peer_authenticated_at(cx: &mut Cx<'_>, sa: &mut IkeSa, msg: &Message) {
    let conn = &sa.conn;
    let (reauth, rand) = (conn.reauth_time, conn.rand_time);
    // A raw-key peer's certificates (if it sent any) are not validated,
    // so not kept for revocation checks either.
    let pubkey = matches!(conn.remote.auth, AuthKind::Pubkey(_)) && conn.remote.pubkeys.is_empty();
    sa.auth = PeerAuth {
        at: cx.now,
        reauth_at: (sa.initiator && !reauth.is_zero())
            .then(|| cx.now + cx.host.jittered(reauth, rand)),
        reauth_by: None,
        certs: if pubkey { cert_ders(msg) } else { Vec::new() },
        revoked: false,
    };
}

/// The X.509 certificates of CERT payloads in `msg`, as the peer sent them.
pub(crate) fn cert_ders(msg: &Message) -> Vec<Vec<u8>> {
    msg.payloads
        .iter()
        .filter_map(|p| match p {
            Payload::Cert(c) if c.encoding == CERT_X509_SIGNATURE => Some(c.data.clone()),
            _ => None,
        })
        .take(crate::auth::pubkey::MAX_CERTS)
        .collect()
}

/// Our identity on `sa`: configured, or our certificate's subject
/// when we sign, or our IP address (strongSwan's defaults).
pub(crate) fn our_id(host: &crate::host::Host, sa: &IkeSa) -> Identity {
    let local = &sa.conn.local;
    if let Some(id) = &local.id {
        return id.clone();
    }
    match (local.auth, crate::auth::pubkey::local_cert(host, sa)) {
        // An empty subject is refused at load (credentials.rs).
        (AuthKind::Pubkey(_), Some(cert)) => Identity::Dn(cert.subject.clone()),
        _ => Identity::from_ip(sa.path.local.ip()),
    }
}
