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
use flowsec_wire::ike::{Auth, Cert, Message, Payload, CERT_X509_SIGNATURE};

use super::{Authenticator, Claim, Octets};
use crate::cert::{verify, Certificate, Hash, HashSet, Rejection, Scheme};
use crate::config::Connection;
use crate::config::{AuthKind, IdMatch, Identity, SendCert};
use crate::context::Cx;
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

/// A signature with a certificate (RFC 7427, method 14).
pub(crate) struct Pubkey;

impl Authenticator for Pubkey {
    fn build(
        &self,
        cx: &Cx<'_>,
        octets: &Octets<'_>,
        _: Claim<'_>,
        peer_asked: bool,
    ) -> Result<(Vec<Payload>, Auth), NegotiationError> {
        let signed = sign(cx, octets, peer_asked)?;
        Ok((signed.certs, signed.auth))
    }

    /// Counted by reason.
    fn verify(
        &self,
        cx: &mut Cx<'_>,
        octets: &Octets<'_>,
        claim: Claim<'_>,
        msg: &Message,
        auth: &Auth,
    ) -> Result<(), Option<Rejection>> {
        let r = check(cx, octets, msg, auth, claim.peer);
        if let Err(why) = &r {
            let s = &mut cx.stats;
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
        r.map_err(Some)
    }
}

/// The peer's signature AUTH `auth` (in `msg`, with its CERTs) for
/// identity `peer`, against the connection's policy.
fn check(
    cx: &Cx<'_>,
    octets: &Octets<'_>,
    msg: &Message,
    auth: &Auth,
    peer: &Identity,
) -> Result<(), Rejection> {
    let sa = octets.sa;
    let AuthKind::Pubkey(allowed) = sa.conn.remote.auth else {
        return Err(Rejection::BadScheme);
    };
    if auth.method != AuthMethod::DIGITAL_SIGNATURE {
        return Err(Rejection::BadScheme);
    }
    let (scheme, sig) = Scheme::split_auth_data(&auth.data).ok_or(Rejection::BadScheme)?;
    if !sa.conn.remote.pubkeys.is_empty() {
        return check_raw(cx, octets, msg, allowed, (scheme, sig));
    }
    let mut certs = msg
        .payloads
        .iter()
        .filter_map(|p| match p {
            Payload::Cert(c) if c.encoding == CERT_X509_SIGNATURE => Some(&c.data),
            _ => None,
        })
        .take(MAX_CERTS)
        .map(|der| Certificate::parse(der).map_err(|e| Rejection::BadCertificate(e.to_string())));
    let ee = certs.next().ok_or(Rejection::NoCertificate)??;
    let intermediates = certs.collect::<Result<Vec<_>, _>>()?;
    if ee.has_subject(peer) != IdMatch::Perfect {
        return Err(Rejection::IdMismatch {
            subject: ee.subject_text(),
        });
    }
    let unix = cx.unix_time(cx.now).ok_or(Rejection::NoClock)?;
    let inter = path_intermediates(cx, &intermediates);
    let anchors = trusted_cas(cx, &sa.conn);
    let strict = sa.conn.remote.revocation_strict;
    let crls = cx.config.credentials.crls();
    verify::validate_with(&cx.provider, &ee, &inter, &anchors, &crls, unix, strict)?;
    if !allowed.allows(scheme, ee.key) {
        return Err(Rejection::SchemeNotAllowed(scheme));
    }
    let bytes = octets.bytes(&cx.provider).ok_or(Rejection::BadSignature)?;
    verify::verify_signature(&cx.provider, &ee, scheme, &bytes, sig)
}

/// The peer's signature with a raw public key (`remote.pubkeys`, RFC 7427
/// with a key trusted as configured, no CA): it must verify with one of
/// the keys; a certificate the peer sends anyway must hold that key (its
/// path is not validated: the key is what is trusted, as strongSwan
/// trusts a `pubkeys` key). Who the peer is was checked against
/// `remote.id`, which `pubkeys` requires, before.
fn check_raw(
    cx: &Cx<'_>,
    octets: &Octets<'_>,
    msg: &Message,
    allowed: crate::config::PubkeyAuth,
    (scheme, sig): (Scheme, &[u8]),
) -> Result<(), Rejection> {
    let creds = &cx.config.credentials;
    let sent = msg.payloads.iter().find_map(|p| match p {
        Payload::Cert(c) if c.encoding == CERT_X509_SIGNATURE => Some(&c.data),
        _ => None,
    });
    let sent = sent
        .map(|der| Certificate::parse(der).map_err(|e| Rejection::BadCertificate(e.to_string())))
        .transpose()?;
    let bytes = octets.bytes(&cx.provider).ok_or(Rejection::BadSignature)?;
    let mut why = Rejection::Untrusted("not one of the configured public keys".into());
    let keys = octets.sa.conn.remote.pubkeys.iter();
    for key in keys.filter_map(|n| creds.pubkey(n)) {
        // A key of another kind than the signature's is simply not the
        // signer's.
        if sent.as_ref().is_some_and(|c| !key.is_in(c)) || !scheme.fits(key.key) {
            continue;
        }
        if !allowed.allows(scheme, key.key) {
            why = Rejection::SchemeNotAllowed(scheme);
            continue;
        }
        match verify::verify_raw(&cx.provider, key, scheme, &bytes, sig) {
            Ok(()) => return Ok(()),
            Err(e) => why = e,
        }
    }
    Err(why)
}

/// The scheme we sign with: strongSwan's default for the key (or what
/// `auth` asks), among the hashes the peer announced (RFC 7427 §4: without
/// an announcement there is no RFC 7427 signature; flowsec has no
/// fallback to the older RSA/ECDSA methods).
fn choose_scheme(
    key: crate::cert::KeyKind,
    allowed: &crate::config::PubkeyAuth,
    peer: HashSet,
) -> Option<Scheme> {
    let preferred = Scheme::default_for(key, allowed.pss, None);
    let hashes = [Hash::Sha256, Hash::Sha384, Hash::Sha512];
    std::iter::once(preferred)
        .chain(
            hashes
                .into_iter()
                .map(|h| Scheme::default_for(key, allowed.pss, Some(h))),
        )
        .find(|s| {
            peer.has(s.hash())
                && allowed.allows(*s, key)
                && match (key, s) {
                    // aws-lc-rs binds an ECDSA key to its curve's hash.
                    (crate::cert::KeyKind::Ecdsa(c), Scheme::Ecdsa(h)) => {
                        crate::cert::key::curve_hash(c) == *h
                    }
                    _ => true,
                }
        })
}

/// The intermediates a peer's path is built from: what it `sent`, then
/// those we hold in `x509/` (a peer may leave out a CA it expects us to
/// have; strongSwan completes paths from its own store too).
pub(crate) fn path_intermediates<'a>(
    host: &'a Host,
    sent: &'a [Certificate],
) -> Vec<&'a Certificate> {
    let held = host.config.credentials.intermediates();
    sent.iter().chain(held).collect()
}

/// The CAs the peer of connection `conn` must chain to: `cacerts`, or
/// every CA we hold.
pub(crate) fn trusted_cas<'h>(host: &'h Host, conn: &Connection) -> Vec<&'h Certificate> {
    let creds = &host.config.credentials;
    let names = &conn.remote.cacerts;
    if names.is_empty() {
        creds.cas().collect()
    } else {
        names.iter().filter_map(|n| creds.ca(n)).collect()
    }
}

/// CERTREQ naming our trusted CAs (§3.7), when the peer of `c`
/// authenticates with a certificate and `send_certreq` is on.
pub(crate) fn certreq(host: &Host, c: &Connection) -> Option<Payload> {
    if !c.send_certreq || !matches!(c.remote.auth, AuthKind::Pubkey(_)) {
        return None;
    }
    let cas = trusted_cas(host, c);
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
pub(crate) fn local_cert<'h>(host: &'h Host, sa: &IkeSa) -> Option<&'h Certificate> {
    let c = &sa.conn;
    crate::config::local_cert(&host.config, &c.local.certs, c.local.id.as_ref())
}

/// Sign our AUTH over `octets` (§2.15, RFC 7427) and add the CERT payloads
/// `send_cert` asks for (`peer_asked`: the peer sent CERTREQ).
fn sign(host: &Host, octets: &Octets<'_>, peer_asked: bool) -> Result<Signed, NegotiationError> {
    let sa = octets.sa;
    let conn = &sa.conn;
    let AuthKind::Pubkey(allowed) = conn.local.auth else {
        return Err(NegotiationError::NoLocalCert);
    };
    let creds = &host.config.credentials;
    // `local.pubkeys`: the private key of the first, and no certificate.
    let (cert, key) = match conn.local.pubkeys.first() {
        Some(name) => {
            let public = creds.pubkey(name).ok_or(NegotiationError::NoLocalCert)?;
            (
                None,
                creds.key_of(public).ok_or(NegotiationError::NoLocalCert)?,
            )
        }
        None => {
            let cert = local_cert(host, sa).ok_or(NegotiationError::NoLocalCert)?;
            (
                Some(cert),
                creds.key_for(cert).ok_or(NegotiationError::NoLocalCert)?,
            )
        }
    };
    let scheme = choose_scheme(key.kind(), &allowed, sa.announced.hashes)
        .ok_or(NegotiationError::NoSignatureScheme)?;
    let bytes = octets
        .bytes(&host.provider)
        .ok_or(NegotiationError::KeyDerivation)?;
    let sig = key
        .sign(scheme, &bytes)
        .ok_or(NegotiationError::NoSignatureScheme)?;
    let send = match conn.send_cert {
        SendCert::Always => true,
        SendCert::IfAsked => peer_asked,
        SendCert::Never => false,
    };
    let mut certs = Vec::new();
    if let (true, Some(cert)) = (send, cert) {
        let chain = std::iter::once(cert).chain(host.config.credentials.chain_of(cert));
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
