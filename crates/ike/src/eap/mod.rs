//! EAP in IKEv2 (RFC 7296 §2.16, RFC 3748): the packets, and EAP-MSCHAPv2
//! (draft-kamath-pppext-eap-mschapv2, RFC 2759) as server (a gateway
//! authenticating road warriors by user name and password) and as peer.

pub mod method;
pub mod mschapv2;
pub mod packet;
