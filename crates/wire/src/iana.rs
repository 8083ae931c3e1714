//! IANA-assigned numbers, as newtypes so that unknown values round-trip.
//!
//! Sources: IANA "Internet Key Exchange Version 2 (IKEv2) Parameters"
//! (RFC 7296 §3 and the registries it created: exchange types, payload
//! types, transform types 1 to 5, notify message types, ID types,
//! authentication methods, traffic selector types), "Assigned Internet
//! Protocol Numbers", and "IPComp transform identifiers" (RFC 3173 §4,
//! RFC 2394).

use core::fmt;

macro_rules! iana_enum {
    ($(#[$meta:meta])* $name:ident($int:ty) { $($(#[$vmeta:meta])* $variant:ident = $value:expr => $text:expr,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub $int);

        #[allow(missing_docs)]
        impl $name {
            $($(#[$vmeta])* pub const $variant: $name = $name($value);)*

            /// The registry's name for this value, if it is one we know.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some($text),)*
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, "{}({})", stringify!($name), self.0),
                }
            }
        }

        impl From<$int> for $name {
            fn from(v: $int) -> Self { $name(v) }
        }
        impl From<$name> for $int {
            fn from(v: $name) -> Self { v.0 }
        }
    };
}

iana_enum! {
    /// IP protocol / IPv6 next-header numbers.
    IpProtocol(u8) {
        HOPOPT = 0 => "HOPOPT",
        ICMP = 1 => "ICMP",
        IPV4 = 4 => "IPv4",
        TCP = 6 => "TCP",
        UDP = 17 => "UDP",
        IPV6 = 41 => "IPv6",
        IPV6_ROUTE = 43 => "IPv6-Route",
        IPV6_FRAG = 44 => "IPv6-Frag",
        ESP = 50 => "ESP",
        AH = 51 => "AH",
        ICMPV6 = 58 => "IPv6-ICMP",
        IPV6_NONXT = 59 => "IPv6-NoNxt",
        IPV6_OPTS = 60 => "IPv6-Opts",
        IPCOMP = 108 => "IPComp",
    }
}

iana_enum! {
    /// IKEv2 Transform Type 1: encryption algorithm transform IDs (RFC 7296 §3.3.2).
    ///
    /// `TWOFISH_CBC` has no IANA number; it uses strongSwan's private-use value
    /// (1027) so that both agree.
    EncrId(u16) {
        DES = 2 => "DES-CBC",
        TRIPLE_DES = 3 => "3DES-CBC",
        CAST = 6 => "CAST5-CBC",
        BLOWFISH = 7 => "BLOWFISH-CBC",
        NULL = 11 => "NULL",
        AES_CBC = 12 => "AES-CBC",
        AES_CTR = 13 => "AES-CTR",
        AES_CCM_8 = 14 => "AES-CCM-8",
        AES_CCM_12 = 15 => "AES-CCM-12",
        AES_CCM_16 = 16 => "AES-CCM-16",
        AES_GCM_8 = 18 => "AES-GCM-8",
        AES_GCM_12 = 19 => "AES-GCM-12",
        AES_GCM_16 = 20 => "AES-GCM-16",
        NULL_AUTH_AES_GMAC = 21 => "AES-GMAC",
        CAMELLIA_CBC = 23 => "CAMELLIA-CBC",
        CHACHA20_POLY1305 = 28 => "CHACHA20-POLY1305",
        TWOFISH_CBC = 1027 => "TWOFISH-CBC",
    }
}

iana_enum! {
    /// IKEv2 Transform Type 3: integrity algorithm transform IDs (RFC 7296 §3.3.2).
    IntegId(u16) {
        NONE = 0 => "NONE",
        HMAC_MD5_96 = 1 => "HMAC-MD5-96",
        HMAC_SHA1_96 = 2 => "HMAC-SHA1-96",
        AES_XCBC_96 = 5 => "AES-XCBC-MAC-96",
        AES_CMAC_96 = 8 => "AES-CMAC-96",
        HMAC_SHA2_256_128 = 12 => "HMAC-SHA2-256-128",
        HMAC_SHA2_384_192 = 13 => "HMAC-SHA2-384-192",
        HMAC_SHA2_512_256 = 14 => "HMAC-SHA2-512-256",
    }
}

iana_enum! {
    /// IPComp transform identifiers (the CPI values below 256, RFC 3173 §3.3).
    IpcompId(u16) {
        OUI = 1 => "OUI",
        DEFLATE = 2 => "DEFLATE",
        LZS = 3 => "LZS",
        LZJH = 4 => "LZJH",
    }
}

iana_enum! {
    /// IKEv2 Transform Type 2: pseudorandom functions (RFC 7296 §3.3.2,
    /// RFC 4434, RFC 4615, RFC 4868).
    PrfId(u16) {
        HMAC_MD5 = 1 => "PRF_HMAC_MD5",
        HMAC_SHA1 = 2 => "PRF_HMAC_SHA1",
        AES128_XCBC = 4 => "PRF_AES128_XCBC",
        HMAC_SHA2_256 = 5 => "PRF_HMAC_SHA2_256",
        HMAC_SHA2_384 = 6 => "PRF_HMAC_SHA2_384",
        HMAC_SHA2_512 = 7 => "PRF_HMAC_SHA2_512",
        AES128_CMAC = 8 => "PRF_AES128_CMAC",
    }
}

iana_enum! {
    /// IKEv2 Transform Type 4: key exchange methods (RFC 7296 §3.3.2,
    /// RFC 9370 §2.2.1; RFC 3526 MODP, RFC 5903 ECP, RFC 8031 Curve25519,
    /// draft-ietf-ipsecme-ikev2-mlkem ML-KEM).
    DhGroup(u16) {
        NONE = 0 => "NONE",
        MODP_768 = 1 => "MODP-768",
        MODP_1024 = 2 => "MODP-1024",
        MODP_1536 = 5 => "MODP-1536",
        MODP_2048 = 14 => "MODP-2048",
        MODP_3072 = 15 => "MODP-3072",
        MODP_4096 = 16 => "MODP-4096",
        MODP_6144 = 17 => "MODP-6144",
        MODP_8192 = 18 => "MODP-8192",
        ECP_256 = 19 => "ECP-256",
        ECP_384 = 20 => "ECP-384",
        ECP_521 = 21 => "ECP-521",
        CURVE25519 = 31 => "CURVE25519",
        ML_KEM_512 = 35 => "ML-KEM-512",
        ML_KEM_768 = 36 => "ML-KEM-768",
        ML_KEM_1024 = 37 => "ML-KEM-1024",
    }
}

iana_enum! {
    /// IKEv2 Transform Type 5: Extended Sequence Numbers (RFC 7296 §3.3.2).
    EsnId(u16) {
        NO_ESN = 0 => "NO_ESN",
        ESN = 1 => "ESN",
    }
}

iana_enum! {
    /// IKEv2 exchange types (RFC 7296 §3.1, RFC 9242 §3.2, RFC 9370
    /// §2.2.4).
    ExchangeType(u8) {
        IKE_SA_INIT = 34 => "IKE_SA_INIT",
        IKE_AUTH = 35 => "IKE_AUTH",
        CREATE_CHILD_SA = 36 => "CREATE_CHILD_SA",
        INFORMATIONAL = 37 => "INFORMATIONAL",
        IKE_INTERMEDIATE = 43 => "IKE_INTERMEDIATE",
        IKE_FOLLOWUP_KE = 44 => "IKE_FOLLOWUP_KE",
    }
}

iana_enum! {
    /// IKEv2 payload types (RFC 7296 §3.2; SKF: RFC 7383 §2.5).
    PayloadType(u8) {
        /// No Next Payload: the end of a chain.
        NONE = 0 => "NONE",
        SA = 33 => "SA",
        KE = 34 => "KE",
        IDI = 35 => "IDi",
        IDR = 36 => "IDr",
        CERT = 37 => "CERT",
        CERTREQ = 38 => "CERTREQ",
        AUTH = 39 => "AUTH",
        NONCE = 40 => "Nonce",
        NOTIFY = 41 => "N",
        DELETE = 42 => "D",
        VENDOR = 43 => "V",
        TSI = 44 => "TSi",
        TSR = 45 => "TSr",
        SK = 46 => "SK",
        CP = 47 => "CP",
        EAP = 48 => "EAP",
        SKF = 53 => "SKF",
    }
}

iana_enum! {
    /// IKEv2 Notify Message Types (RFC 7296 §3.10.1; RFC 4555 MOBIKE,
    /// RFC 4739 multiple auth, RFC 5685 redirect, RFC 7383 fragmentation,
    /// RFC 7427 signature hash algorithms, RFC 9611 per-resource Child
    /// SAs). Below 16384: errors; from
    /// 16384: status types.
    NotifyType(u16) {
        UNSUPPORTED_CRITICAL_PAYLOAD = 1 => "UNSUPPORTED_CRITICAL_PAYLOAD",
        INVALID_IKE_SPI = 4 => "INVALID_IKE_SPI",
        INVALID_MAJOR_VERSION = 5 => "INVALID_MAJOR_VERSION",
        INVALID_SYNTAX = 7 => "INVALID_SYNTAX",
        INVALID_MESSAGE_ID = 9 => "INVALID_MESSAGE_ID",
        INVALID_SPI = 11 => "INVALID_SPI",
        NO_PROPOSAL_CHOSEN = 14 => "NO_PROPOSAL_CHOSEN",
        INVALID_KE_PAYLOAD = 17 => "INVALID_KE_PAYLOAD",
        AUTHENTICATION_FAILED = 24 => "AUTHENTICATION_FAILED",
        SINGLE_PAIR_REQUIRED = 34 => "SINGLE_PAIR_REQUIRED",
        NO_ADDITIONAL_SAS = 35 => "NO_ADDITIONAL_SAS",
        INTERNAL_ADDRESS_FAILURE = 36 => "INTERNAL_ADDRESS_FAILURE",
        FAILED_CP_REQUIRED = 37 => "FAILED_CP_REQUIRED",
        TS_UNACCEPTABLE = 38 => "TS_UNACCEPTABLE",
        INVALID_SELECTORS = 39 => "INVALID_SELECTORS",
        UNACCEPTABLE_ADDRESSES = 40 => "UNACCEPTABLE_ADDRESSES",
        UNEXPECTED_NAT_DETECTED = 41 => "UNEXPECTED_NAT_DETECTED",
        TEMPORARY_FAILURE = 43 => "TEMPORARY_FAILURE",
        CHILD_SA_NOT_FOUND = 44 => "CHILD_SA_NOT_FOUND",
        STATE_NOT_FOUND = 47 => "STATE_NOT_FOUND",
        TS_MAX_QUEUE = 48 => "TS_MAX_QUEUE",
        INITIAL_CONTACT = 16384 => "INITIAL_CONTACT",
        SET_WINDOW_SIZE = 16385 => "SET_WINDOW_SIZE",
        ADDITIONAL_TS_POSSIBLE = 16386 => "ADDITIONAL_TS_POSSIBLE",
        IPCOMP_SUPPORTED = 16387 => "IPCOMP_SUPPORTED",
        NAT_DETECTION_SOURCE_IP = 16388 => "NAT_DETECTION_SOURCE_IP",
        NAT_DETECTION_DESTINATION_IP = 16389 => "NAT_DETECTION_DESTINATION_IP",
        COOKIE = 16390 => "COOKIE",
        USE_TRANSPORT_MODE = 16391 => "USE_TRANSPORT_MODE",
        HTTP_CERT_LOOKUP_SUPPORTED = 16392 => "HTTP_CERT_LOOKUP_SUPPORTED",
        REKEY_SA = 16393 => "REKEY_SA",
        ESP_TFC_PADDING_NOT_SUPPORTED = 16394 => "ESP_TFC_PADDING_NOT_SUPPORTED",
        NON_FIRST_FRAGMENTS_ALSO = 16395 => "NON_FIRST_FRAGMENTS_ALSO",
        MOBIKE_SUPPORTED = 16396 => "MOBIKE_SUPPORTED",
        ADDITIONAL_IP4_ADDRESS = 16397 => "ADDITIONAL_IP4_ADDRESS",
        ADDITIONAL_IP6_ADDRESS = 16398 => "ADDITIONAL_IP6_ADDRESS",
        NO_ADDITIONAL_ADDRESSES = 16399 => "NO_ADDITIONAL_ADDRESSES",
        UPDATE_SA_ADDRESSES = 16400 => "UPDATE_SA_ADDRESSES",
        COOKIE2 = 16401 => "COOKIE2",
        NO_NATS_ALLOWED = 16402 => "NO_NATS_ALLOWED",
        MULTIPLE_AUTH_SUPPORTED = 16404 => "MULTIPLE_AUTH_SUPPORTED",
        REDIRECT_SUPPORTED = 16406 => "REDIRECT_SUPPORTED",
        REDIRECT = 16407 => "REDIRECT",
        REDIRECTED_FROM = 16408 => "REDIRECTED_FROM",
        IKEV2_FRAGMENTATION_SUPPORTED = 16430 => "IKEV2_FRAGMENTATION_SUPPORTED",
        USE_PPK = 16435 => "USE_PPK",
        PPK_IDENTITY = 16436 => "PPK_IDENTITY",
        NO_PPK_AUTH = 16437 => "NO_PPK_AUTH",
        INTERMEDIATE_EXCHANGE_SUPPORTED = 16438 => "INTERMEDIATE_EXCHANGE_SUPPORTED",
        ADDITIONAL_KEY_EXCHANGE = 16441 => "ADDITIONAL_KEY_EXCHANGE",
        SIGNATURE_HASH_ALGORITHMS = 16431 => "SIGNATURE_HASH_ALGORITHMS",
        SA_RESOURCE_INFO = 16444 => "SA_RESOURCE_INFO",
    }
}

impl NotifyType {
    /// Whether this is an error type (0 to 16383, RFC 7296 §3.10.1); the
    /// rest are status types.
    pub fn is_error(self) -> bool {
        self.0 < 16384
    }
}

iana_enum! {
    /// IKEv2 Security Protocol Identifiers (RFC 7296 §3.3.1).
    ProtocolId(u8) {
        IKE = 1 => "IKE",
        AH = 2 => "AH",
        ESP = 3 => "ESP",
    }
}

iana_enum! {
    /// IKEv2 transform types (RFC 7296 §3.3.2).
    TransformType(u8) {
        /// Encryption algorithm: IDs are [`EncrId`].
        ENCR = 1 => "ENCR",
        /// Pseudorandom function: IDs are [`PrfId`].
        PRF = 2 => "PRF",
        /// Integrity algorithm: IDs are [`IntegId`].
        INTEG = 3 => "INTEG",
        /// Diffie-Hellman group: IDs are [`DhGroup`].
        DH = 4 => "DH",
        /// Extended Sequence Numbers: IDs are [`EsnId`].
        ESN = 5 => "ESN",
        /// Additional key exchanges 1–7 (RFC 9370 §2.2.1): IDs are
        /// [`DhGroup`] (NONE: optional).
        ADDKE1 = 6 => "ADDKE1",
        /// See [`TransformType::ADDKE1`].
        ADDKE2 = 7 => "ADDKE2",
        /// See [`TransformType::ADDKE1`].
        ADDKE3 = 8 => "ADDKE3",
        /// See [`TransformType::ADDKE1`].
        ADDKE4 = 9 => "ADDKE4",
        /// See [`TransformType::ADDKE1`].
        ADDKE5 = 10 => "ADDKE5",
        /// See [`TransformType::ADDKE1`].
        ADDKE6 = 11 => "ADDKE6",
        /// See [`TransformType::ADDKE1`].
        ADDKE7 = 12 => "ADDKE7",
    }
}

iana_enum! {
    /// IKEv2 identification payload ID types (RFC 7296 §3.5).
    IdType(u8) {
        IPV4_ADDR = 1 => "ID_IPV4_ADDR",
        FQDN = 2 => "ID_FQDN",
        RFC822_ADDR = 3 => "ID_RFC822_ADDR",
        IPV6_ADDR = 5 => "ID_IPV6_ADDR",
        DER_ASN1_DN = 9 => "ID_DER_ASN1_DN",
        DER_ASN1_GN = 10 => "ID_DER_ASN1_GN",
        KEY_ID = 11 => "ID_KEY_ID",
    }
}

iana_enum! {
    /// IKEv2 authentication methods (RFC 7296 §3.8; RFC 7427 §3 for
    /// Digital Signature).
    AuthMethod(u8) {
        RSA_SIG = 1 => "RSA Digital Signature",
        SHARED_KEY_MIC = 2 => "Shared Key Message Integrity Code",
        DSS_SIG = 3 => "DSS Digital Signature",
        DIGITAL_SIGNATURE = 14 => "Digital Signature",
    }
}

iana_enum! {
    /// IKEv2 traffic selector types (RFC 7296 §3.13.1).
    TsType(u8) {
        IPV4_ADDR_RANGE = 7 => "TS_IPV4_ADDR_RANGE",
        IPV6_ADDR_RANGE = 8 => "TS_IPV6_ADDR_RANGE",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_values_round_trip_and_display() {
        assert_eq!(EncrId::from(20u16), EncrId::AES_GCM_16);
        assert_eq!(EncrId::AES_GCM_16.to_string(), "AES-GCM-16");
        assert_eq!(EncrId(999).to_string(), "EncrId(999)");
        assert_eq!(u16::from(EncrId(999)), 999);
        assert_eq!(IpProtocol::ESP.0, 50);
    }

    #[test]
    fn ike_registries() {
        assert!(NotifyType::INVALID_SYNTAX.is_error());
        assert!(NotifyType(16383).is_error());
        assert!(!NotifyType::INITIAL_CONTACT.is_error());
        assert!(!NotifyType::COOKIE.is_error());
        assert_eq!(PayloadType::NONCE.to_string(), "Nonce");
        assert_eq!(PayloadType(99).to_string(), "PayloadType(99)");
        assert_eq!(DhGroup::ECP_256.0, 19);
        assert_eq!(PrfId::HMAC_SHA2_256.name(), Some("PRF_HMAC_SHA2_256"));
        assert_eq!(ExchangeType::from(37u8), ExchangeType::INFORMATIONAL);
        assert_eq!(u8::from(TsType::IPV6_ADDR_RANGE), 8);
    }
}
