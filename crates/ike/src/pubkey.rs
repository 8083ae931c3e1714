//! IKE_AUTH with certificates (RFC 7296 §2.15, §3.6–3.8) and RFC 7427
//! digital signatures, both roles: what we sign and send (CERT payloads
//! with our certificate and the intermediates above it, AUTH with method
//! 14), what we ask for (CERTREQ naming our CAs by the SHA-1 of their
//! SubjectPublicKeyInfo, §3.7), and how the peer's AUTH is checked: its
//! end-entity certificate (the first CERT, §3.6) validated to a CA we trust,
//! revocation by our CRLs, its identity held by the certificate (subject
//! DN or subjectAltName, as strongSwan), and the signature over the
//! octets §2.15 defines.
//!
//! ```text
//! AUTH data (RFC 7427 §3): | len | AlgorithmIdentifier | signature |
//! ```

use flowsec_wire::iana::{AuthMethod, NotifyType};
use flowsec_wire::ike::{Auth, Cert, Id, Message, Payload, CERT_X509_SIGNATURE};

use crate::auth::InitMessages;
use crate::cert::{verify, Certificate, Hash, HashSet, Rejection, Scheme};
use crate::config::{AuthKind, IdMatch, Identity, SendCert};
use crate::crypto;
use crate::error::NegotiationError;
use crate::host::Host;
use crate::sa::IkeSa;

/// The most CERT payloads of one message looked at (the end entity and
/// its intermediates; strongSwan's chains are 2–4 deep).
pub(crate) const MAX_CERTS: usize = 8;

/// The hashes a message's SIGNATURE_HASH_ALGORITHMS announces.
pub(crate) fn announced_hashes(msg: &Message) -> HashSet {
    msg.payloads
        .iter()
        .find_map(|p| match p {
            Payload::Notify(n) if n.ty == NotifyType::SIGNATURE_HASH_ALGORITHMS => {
                Some(HashSet::from_notify(&n.data))
            }
            _ => None,
        })
        .unwrap_or_default()
}

/// Whether `msg` carries a CERTREQ.
pub(crate) fn has_certreq(msg: &Message) -> bool {
    msg.payloads
        .iter()
        .any(|p| matches!(p, Payload::CertReq(_)))
}

/// What we put in IKE_AUTH when we sign: CERT payloads and AUTH.
pub(crate) struct Signed {
    pub certs: Vec<Payload>,
    pub auth: Auth,
}

impl Host {
    /// The CAs the peer of connection `conn` must chain to: `cacerts`, or
    /// every CA we hold.
    pub(crate) fn trusted_cas(&self, conn: usize) -> Vec<&Certificate> {
        let creds = &self.config.credentials;
        let names = &self.config.connections[conn].remote.cacerts;
        if names.is_empty() {
            creds.cas().collect()
        } else {
            names.iter().filter_map(|n| creds.ca(n)).collect()
        }
    }

    /// CERTREQ naming our trusted CAs (§3.7), when the peer of `conn`
    /// authenticates with a certificate and `send_certreq` is on.
    pub(crate) fn certreq(&self, conn: usize) -> Option<Payload> {
        let c = self.config.connections.get(conn)?;
        if !c.send_certreq || !matches!(c.remote.auth, AuthKind::Pubkey(_)) {
            return None;
        }
        let cas = self.trusted_cas(conn);
        if cas.is_empty() {
            return None;
        }
        let data = cas.iter().flat_map(|ca| ca.spki_sha1).collect();
        Some(Payload::CertReq(Cert {
            encoding: CERT_X509_SIGNATURE,
            data,
        }))
    }

    /// Our certificate on `sa`, if its connection signs.
    pub(crate) fn local_cert(&self, sa: &IkeSa) -> Option<&Certificate> {
        let c = &self.config.connections[sa.conn];
        crate::config::local_cert(&self.config, &c.local.certs, c.local.id.as_ref())
    }

    /// The octets the AUTH of `ours` (or the peer's) covers (§2.15).
    fn octets(&self, sa: &IkeSa, init: &InitMessages, ours: bool, id: &Id) -> Option<Vec<u8>> {
        let keys = sa.keys.as_ref()?;
        let signer_is_initiator = ours == sa.initiator;
        let (msg, nonce, sk_p) = if signer_is_initiator {
            (&init.request, &init.nr, &keys.sk_pi)
        } else {
            (&init.response, &init.ni, &keys.sk_pr)
        };
        crypto::signed_octets(&self.provider, keys.suite.prf, msg, nonce, sk_p, &id.body()).ok()
    }

    /// Sign our AUTH for `id` (§2.15, RFC 7427) and add the CERT payloads
    /// `send_cert` asks for (`peer_asked`: the peer sent CERTREQ).
    pub(crate) fn sign_auth(
        &self,
        sa: &IkeSa,
        init: &InitMessages,
        id: &Id,
        peer_asked: bool,
    ) -> Result<Signed, NegotiationError> {
        let conn = &self.config.connections[sa.conn];
        let AuthKind::Pubkey(allowed) = conn.local.auth else {
            return Err(NegotiationError::NoLocalCert);
        };
        let cert = self.local_cert(sa).ok_or(NegotiationError::NoLocalCert)?;
        let key = self
            .config
            .credentials
            .key_for(cert)
            .ok_or(NegotiationError::NoLocalCert)?;
        let scheme = choose_scheme(cert, &allowed, sa.peer_hashes)
            .ok_or(NegotiationError::NoSignatureScheme)?;
        let octets = self
            .octets(sa, init, true, id)
            .ok_or(NegotiationError::KeyDerivation)?;
        let sig = key
            .sign(scheme, &octets)
            .ok_or(NegotiationError::NoSignatureScheme)?;
        let send = match conn.send_cert {
            SendCert::Always => true,
            SendCert::IfAsked => peer_asked,
            SendCert::Never => false,
        };
        let mut certs = Vec::new();
        if send {
            let chain = std::iter::once(cert).chain(self.config.credentials.chain_of(cert));
            certs.extend(chain.map(|c| {
                Payload::Cert(Cert {
                    encoding: CERT_X509_SIGNATURE,
                    data: c.der.clone(),
                })
            }));
        }
        Ok(Signed {
            certs,
            auth: Auth {
                method: AuthMethod::DIGITAL_SIGNATURE,
                data: scheme.auth_data(&sig),
            },
        })
    }

    /// Check the peer's signature AUTH in `msg` for identity `peer` (its
    /// ID payload `id`) against connection policy; counted by reason.
    pub(crate) fn verify_pubkey(
        &mut self,
        sa: &IkeSa,
        init: &InitMessages,
        msg: &Message,
        (id, auth): (&Id, &Auth),
        peer: &Identity,
    ) -> Result<(), Rejection> {
        let r = self.check_pubkey(sa, init, msg, (id, auth), peer);
        if let Err(why) = &r {
            let s = &mut self.stats;
            match why {
                Rejection::BadCertificate(_) | Rejection::NoCertificate => s.cert_malformed += 1,
                Rejection::Untrusted(_) | Rejection::IdMismatch { .. } | Rejection::NoClock => {
                    s.cert_untrusted += 1
                }
                Rejection::Revoked => s.cert_revoked += 1,
                Rejection::BadScheme | Rejection::SchemeNotAllowed(_) | Rejection::BadSignature => {
                    s.bad_signature += 1
                }
                Rejection::Eap(_) => {}
            }
        }
        r
    }

    fn check_pubkey(
        &self,
        sa: &IkeSa,
        init: &InitMessages,
        msg: &Message,
        (id, auth): (&Id, &Auth),
        peer: &Identity,
    ) -> Result<(), Rejection> {
        let AuthKind::Pubkey(allowed) = self.config.connections[sa.conn].remote.auth else {
            return Err(Rejection::BadScheme);
        };
        if auth.method != AuthMethod::DIGITAL_SIGNATURE {
            return Err(Rejection::BadScheme);
        }
        let (scheme, sig) = Scheme::split_auth_data(&auth.data).ok_or(Rejection::BadScheme)?;
        let mut certs = msg
            .payloads
            .iter()
            .filter_map(|p| match p {
                Payload::Cert(c) if c.encoding == CERT_X509_SIGNATURE => Some(&c.data),
                _ => None,
            })
            .take(MAX_CERTS)
            .map(|der| {
                Certificate::parse(der).map_err(|e| Rejection::BadCertificate(e.to_string()))
            });
        let ee = certs.next().ok_or(Rejection::NoCertificate)??;
        let intermediates = certs.collect::<Result<Vec<_>, _>>()?;
        if ee.has_subject(peer) != IdMatch::Perfect {
            return Err(Rejection::IdMismatch {
                subject: ee.subject_text(),
            });
        }
        let now = self.unix_time(self.clock).ok_or(Rejection::NoClock)?;
        let inter: Vec<&Certificate> = intermediates.iter().collect();
        let anchors = self.trusted_cas(sa.conn);
        let strict = self.config.connections[sa.conn].remote.revocation_strict;
        let crls = self.config.credentials.crls();
        verify::validate_with(&self.provider, &ee, &inter, &anchors, &crls, now, strict)?;
        if !allowed.allows(scheme, ee.key) {
            return Err(Rejection::SchemeNotAllowed(scheme));
        }
        let octets = self
            .octets(sa, init, false, id)
            .ok_or(Rejection::BadSignature)?;
        verify::verify_signature(&self.provider, &ee, scheme, &octets, sig)
    }
}

/// The scheme we sign with: strongSwan's default for the key (or what
/// `auth` asks), among the hashes the peer announced (RFC 7427 §4: without
/// an announcement there is no RFC 7427 signature; flowsec has no
/// fallback to the older RSA/ECDSA methods).
fn choose_scheme(
    cert: &Certificate,
    allowed: &crate::config::PubkeyAuth,
    peer: HashSet,
) -> Option<Scheme> {
    let preferred = Scheme::default_for(cert.key, allowed.pss, None);
    let hashes = [Hash::Sha256, Hash::Sha384, Hash::Sha512];
    std::iter::once(preferred)
        .chain(
            hashes
                .into_iter()
                .map(|h| Scheme::default_for(cert.key, allowed.pss, Some(h))),
        )
        .find(|s| {
            peer.has(s.hash())
                && allowed.allows(*s, cert.key)
                && match (cert.key, s) {
                    // aws-lc-rs binds an ECDSA key to its curve's hash.
                    (crate::cert::KeyKind::Ecdsa(c), Scheme::Ecdsa(h)) => {
                        crate::cert::key::curve_hash(c) == *h
                    }
                    _ => true,
                }
        })
}
