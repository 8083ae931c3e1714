//! IANA-assigned numbers, as newtypes so that unknown values round-trip.
//!
//! Sources: IANA "Internet Key Exchange Version 2 (IKEv2) Parameters"
//! (Transform Type 1 and 3 registries), "Assigned Internet Protocol Numbers",
//! and "IPComp transform identifiers" (RFC 3173 §4, RFC 2394).

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
}
