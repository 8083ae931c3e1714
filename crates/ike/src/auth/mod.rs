//! Authenticating the peer and ourselves in IKE_AUTH (RFC 7296 §2.15,
//! §2.16): with a shared key, a signature ([`pubkey`]) or EAP ([`eap`]).

pub(crate) mod eap;
pub(crate) mod pubkey;
