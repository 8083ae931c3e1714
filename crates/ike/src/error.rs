//! Why the core could not do what it was asked: a command of the user
//! (initiate, terminate, rekey, a trap policy), an IKE SA that could not
//! be negotiated, or a Child SA the peer answered for. Each way has its
//! variant; the text is the log's.

use core::fmt;
use std::net::IpAddr;

use flowsec_crypto::CryptoError;

use crate::config::Identity;

/// Why [`crate::Ike::initiate`], [`crate::Ike::terminate`],
/// [`crate::Ike::rekey`] or a trap policy (`start_action = trap`) could
/// do nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommandError {
    /// No connection of that name, or none with a child of that name
    /// (`None`: any).
    NoConnection {
        /// The connection asked for.
        conn: Option<String>,
        /// The child asked for.
        child: Option<String>,
    },
    /// The connection's `remote_addrs` has no single address to
    /// initiate to.
    NoRemoteAddress {
        /// The connection.
        conn: String,
    },
    /// A trap policy needs a single address in `remote_addrs`.
    TrapWithoutAddress {
        /// The child whose `start_action` is `trap`.
        child: String,
    },
    /// Neither `local_addrs` nor the routing table gives an address of
    /// ours to reach the peer's.
    NoLocalAddress {
        /// The connection (initiating) or child (a trap policy).
        name: String,
        /// The peer's address.
        remote: IpAddr,
    },
    /// None of the connection's DH groups is in the crypto provider.
    NoGroup {
        /// The connection.
        conn: String,
    },
    /// The key exchange of IKE_SA_INIT could not start.
    KeyExchange {
        /// The connection.
        conn: String,
        /// What the provider said.
        error: CryptoError,
    },
    /// No established CHILD_SA of that name.
    NoChild {
        /// The name asked for.
        child: String,
    },
    /// No established IKE_SA of that name or unique id.
    NoIke {
        /// The name (or `#N`) asked for.
        ike: String,
    },
    /// Neither an IKE_SA nor a CHILD_SA was named.
    Unnamed,
    /// `redirect` without a selector (strongSwan: "missing redirect
    /// selector").
    RedirectWithoutSelector,
    /// A `peer-ip` that is no address, prefix or range.
    BadPeerIp(String),
    /// A `peer-id` that is no identity.
    BadPeerId(String),
    /// `redirect` matched no IKE SA of a client that announced redirect.
    NoRedirectMatch,
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandError::NoConnection { conn, child } => {
                write!(f, "no connection {}", conn.as_deref().unwrap_or("*"))?;
                match child {
                    Some(c) => write!(f, " with child {c}"),
                    None => Ok(()),
                }
            }
            CommandError::NoRemoteAddress { conn } => {
                write!(
                    f,
                    "{conn}: remote_addrs has no single address to initiate to"
                )
            }
            CommandError::TrapWithoutAddress { child } => write!(
                f,
                "{child}: start_action = trap needs a single address in remote_addrs"
            ),
            CommandError::NoLocalAddress { name, remote } => {
                write!(f, "{name}: no local address to reach {remote}")
            }
            CommandError::NoGroup { conn } => {
                write!(f, "{conn}: no supported DH group in proposals")
            }
            CommandError::KeyExchange { conn, error } => write!(f, "{conn}: {error}"),
            CommandError::NoChild { child } => write!(f, "no established CHILD_SA named {child}"),
            CommandError::NoIke { ike } => write!(f, "no established IKE_SA {ike}"),
            CommandError::Unnamed => f.write_str("name an IKE_SA (--ike) or a CHILD_SA (--child)"),
            CommandError::RedirectWithoutSelector => f.write_str("missing redirect selector"),
            CommandError::BadPeerIp(s) => write!(f, "invalid peer IP selector: {s}"),
            CommandError::BadPeerId(s) => write!(f, "invalid peer identity selector: {s}"),
            CommandError::NoRedirectMatch => f.write_str("no matching SAs to redirect found"),
        }
    }
}

impl std::error::Error for CommandError {}

/// Why the answer to our request for a Child SA (IKE_AUTH or
/// CREATE_CHILD_SA, RFC 7296 §1.3) installs nothing. The peer did not
/// refuse (that is an error notify); it answered with something we
/// cannot use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChildError {
    /// No SA, TSi or TSr payload in the answer.
    MissingPayloads,
    /// No nonce in a CREATE_CHILD_SA answer (§1.3.1).
    NoNonce,
    /// A KE payload without ours, ours without one, or of another group.
    KeMismatch,
    /// The peer's KE payload gives no shared secret (RFC 6989).
    BadKe,
    /// The peer chose a proposal or transform we did not offer (§3.3.6).
    NotOffered,
    /// The peer's traffic selectors are not a subset of ours (§2.9).
    SelectorsNotWithin,
    /// AH was chosen across a NAT (RFC 3948 carries ESP only).
    AhAcrossNat,
    /// We asked for transport mode; the peer answered without
    /// USE_TRANSPORT_MODE (§1.3.1).
    TransportRefused,
    /// KEYMAT (§2.17) could not be derived.
    KeyDerivation,
    /// The answer chose additional key exchanges but carries no
    /// ADDITIONAL_KEY_EXCHANGE notify to go on with (RFC 9370 §2.2.4).
    NoFollowupLink,
}

impl fmt::Display for ChildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ChildError::MissingPayloads => "answer without SA, TSi and TSr",
            ChildError::NoNonce => "answer without a nonce",
            ChildError::KeMismatch => "KE payloads do not match",
            ChildError::BadKe => "bad KE payload",
            ChildError::NotOffered => "the peer chose what we did not offer",
            ChildError::SelectorsNotWithin => "the peer's traffic selectors are not within ours",
            ChildError::AhAcrossNat => "AH cannot cross the NAT between us",
            ChildError::TransportRefused => "the peer refused transport mode",
            ChildError::KeyDerivation => "key derivation failed",
            ChildError::NoFollowupLink => {
                "additional key exchanges chosen without an ADDITIONAL_KEY_EXCHANGE link"
            }
        })
    }
}

impl std::error::Error for ChildError {}

/// Why we give up an IKE SA that is not established yet.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NegotiationError {
    /// The responder asked for a COOKIE again and again (RFC 7296 §2.6),
    /// or sent one of a length §2.6 does not allow.
    TooManyCookies,
    /// SKEYSEED or the keys from it (§2.14) could not be derived.
    KeyDerivation,
    /// No shared key in `secrets` for these identities.
    NoSharedKey {
        /// Ours.
        me: Identity,
        /// The peer's (`%any` when not configured).
        peer: Identity,
    },
    /// The responder answered IKE_AUTH with AUTHENTICATION_FAILED.
    PeerAuthFailed,
    /// The responder's AUTH payload did not verify (§2.15).
    ResponderAuthBad,
    /// We sign, but have no certificate or key for it (the configuration
    /// was checked at load; the credentials changed since).
    NoLocalCert,
    /// We asked for a virtual IP (`vips`) and the responder gave none.
    NoVirtualIp,
    /// EAP failed on our side (why).
    EapFailed(&'static str),
    /// We sign, but the peer announced no hash (RFC 7427 §4) or none our
    /// key and `auth` allow.
    NoSignatureScheme,
    /// An additional key exchange (RFC 9370 §2.2.2) in IKE_INTERMEDIATE
    /// failed: the peer's KE payload was missing, of another method, or
    /// failed its checks (what), or the peer refused ours (its notify).
    AdditionalKeyExchange(String),
    /// A post-quantum preshared key (RFC 8784) we require could not be
    /// used: why.
    Ppk(&'static str),
}

impl fmt::Display for NegotiationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NegotiationError::TooManyCookies => f.write_str("too many COOKIE requests"),
            NegotiationError::KeyDerivation => f.write_str("key derivation failed"),
            NegotiationError::NoSharedKey { me, peer } => {
                write!(f, "no shared key for {me} - {peer} in secrets")
            }
            NegotiationError::PeerAuthFailed => f.write_str("peer says AUTHENTICATION_FAILED"),
            NegotiationError::ResponderAuthBad => {
                f.write_str("the responder's AUTH did not verify")
            }
            NegotiationError::EapFailed(why) => write!(f, "EAP-MSCHAPv2: {why}"),
            NegotiationError::NoVirtualIp => {
                f.write_str("no virtual IP in the responder's answer (CFG_REPLY)")
            }
            NegotiationError::NoLocalCert => {
                f.write_str("no certificate with its private key to sign with")
            }
            NegotiationError::NoSignatureScheme => f.write_str(
                "no signature scheme in common (the peer announced no SIGNATURE_HASH_ALGORITHMS \
                 our key and auth allow)",
            ),
            NegotiationError::AdditionalKeyExchange(why) => {
                write!(f, "additional key exchange (IKE_INTERMEDIATE): {why}")
            }
            NegotiationError::Ppk(why) => write!(f, "post-quantum preshared key: {why}"),
        }
    }
}

impl std::error::Error for NegotiationError {}

/// What is wrong with an IKE_SA_INIT response we ignore (unauthenticated,
/// it ends nothing: RFC 7296 §2.21.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InitResponseError {
    /// No SA, KE or nonce payload (§1.2).
    MissingPayloads,
    /// A proposal or group we did not offer, or no responder SPI.
    NotOffered,
    /// The peer's KE payload gives no shared secret (RFC 6989).
    BadKe,
    /// Additional key exchanges chosen without INTERMEDIATE_EXCHANGE_SUPPORTED
    /// (RFC 9370 §2.2.1).
    NoIntermediate,
}

impl fmt::Display for InitResponseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InitResponseError::MissingPayloads => "IKE_SA_INIT response without SA, KE and nonce",
            InitResponseError::NotOffered => "IKE_SA_INIT response chose what we did not offer",
            InitResponseError::BadKe => "bad KE payload in IKE_SA_INIT response",
            InitResponseError::NoIntermediate => {
                "IKE_SA_INIT response chose additional key exchanges without \
                 INTERMEDIATE_EXCHANGE_SUPPORTED"
            }
        })
    }
}

impl std::error::Error for InitResponseError {}

/// Why an authenticated peer would not be let in any more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Distrust {
    /// A certificate it sent no longer parses (as it did once).
    Unreadable(String),
    /// Its certificate chain no longer validates with our credentials
    /// (revoked, expired, no longer under a CA we trust).
    Certificate(crate::cert::Rejection),
    /// Its EAP user has no `eap-…` secret any more.
    EapSecretGone(crate::config::Identity),
}

impl core::fmt::Display for Distrust {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Distrust::Unreadable(why) => f.write_str(why),
            Distrust::Certificate(r) => r.fmt(f),
            Distrust::EapSecretGone(user) => write!(f, "EAP user {user} has no secret any more"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_texts_are_the_logs() {
        let e = CommandError::NoConnection {
            conn: None,
            child: Some("net".into()),
        };
        assert_eq!(e.to_string(), "no connection * with child net");
        let e = CommandError::NoConnection {
            conn: Some("gw".into()),
            child: None,
        };
        assert_eq!(e.to_string(), "no connection gw");
        let e = CommandError::NoLocalAddress {
            name: "gw".into(),
            remote: "192.0.2.2".parse().unwrap(),
        };
        assert_eq!(e.to_string(), "gw: no local address to reach 192.0.2.2");
        assert_eq!(
            CommandError::Unnamed.to_string(),
            "name an IKE_SA (--ike) or a CHILD_SA (--child)"
        );
        assert_eq!(
            ChildError::SelectorsNotWithin.to_string(),
            "the peer's traffic selectors are not within ours"
        );
    }
}
