//! setkey's algorithm names (setkey(8) "Algorithms", ipsec-tools
//! `token.l`) mapped to IANA transform ids, and back for dumps.
//!
//! Names beyond ipsec-tools' list follow the same pattern and the BSD
//! setkey(8) that has them: `aes-gcm-8/12/16`, `aes-ccm-8/12/16`,
//! `aes-gmac`, `chacha20-poly1305` (RFC 7634), `aes-cmac` (RFC 4494).

use flowsec_crypto::{EncrId, IntegId};
use flowsec_wire::iana::IpcompId;

/// A known algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Alg<Id> {
    pub id: Id,
    /// The canonical setkey name (what dumps print).
    pub name: &'static str,
    /// Whether a key follows the name (`null` takes none, as
    /// `ALG_ENC_NOKEY`/`ALG_AUTH_NOKEY` in `token.l`).
    pub takes_key: bool,
}

/// Why a name did not resolve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lookup {
    Unknown,
    Unsupported(&'static str),
}

const fn alg<Id>(id: Id, name: &'static str) -> Alg<Id> {
    Alg {
        id,
        name,
        takes_key: true,
    }
}

/// `-E` names. Aliases map to the first entry with the same id.
const ENCR: &[(&str, Alg<EncrId>)] = &[
    ("des-cbc", alg(EncrId::DES, "des-cbc")),
    ("3des-cbc", alg(EncrId::TRIPLE_DES, "3des-cbc")),
    (
        "null",
        Alg {
            id: EncrId::NULL,
            name: "null",
            takes_key: false,
        },
    ),
    ("blowfish-cbc", alg(EncrId::BLOWFISH, "blowfish-cbc")),
    ("cast128-cbc", alg(EncrId::CAST, "cast128-cbc")),
    ("aes-cbc", alg(EncrId::AES_CBC, "aes-cbc")),
    ("rijndael-cbc", alg(EncrId::AES_CBC, "aes-cbc")),
    ("twofish-cbc", alg(EncrId::TWOFISH_CBC, "twofish-cbc")),
    ("aes-ctr", alg(EncrId::AES_CTR, "aes-ctr")),
    ("camellia-cbc", alg(EncrId::CAMELLIA_CBC, "camellia-cbc")),
    ("aes-gcm-8", alg(EncrId::AES_GCM_8, "aes-gcm-8")),
    ("aes-gcm-12", alg(EncrId::AES_GCM_12, "aes-gcm-12")),
    ("aes-gcm-16", alg(EncrId::AES_GCM_16, "aes-gcm-16")),
    ("aes-ccm-8", alg(EncrId::AES_CCM_8, "aes-ccm-8")),
    ("aes-ccm-12", alg(EncrId::AES_CCM_12, "aes-ccm-12")),
    ("aes-ccm-16", alg(EncrId::AES_CCM_16, "aes-ccm-16")),
    ("aes-gmac", alg(EncrId::NULL_AUTH_AES_GMAC, "aes-gmac")),
    (
        "chacha20-poly1305",
        alg(EncrId::CHACHA20_POLY1305, "chacha20-poly1305"),
    ),
];

const OLD_ESP: &str = "the pre-RFC 2406 ESP variants (esp-old) are not implemented";

const ENCR_UNSUPPORTED: &[(&str, &str)] = &[
    ("des-deriv", OLD_ESP),
    ("3des-deriv", OLD_ESP),
    ("des-32iv", OLD_ESP),
    ("simple", OLD_ESP),
    ("rc5-cbc", "RC5 is not implemented"),
];

/// `-A` names.
const AUTH: &[(&str, Alg<IntegId>)] = &[
    ("hmac-md5", alg(IntegId::HMAC_MD5_96, "hmac-md5")),
    ("hmac-sha1", alg(IntegId::HMAC_SHA1_96, "hmac-sha1")),
    (
        "hmac-sha256",
        alg(IntegId::HMAC_SHA2_256_128, "hmac-sha256"),
    ),
    (
        "hmac-sha2-256",
        alg(IntegId::HMAC_SHA2_256_128, "hmac-sha256"),
    ),
    (
        "hmac-sha384",
        alg(IntegId::HMAC_SHA2_384_192, "hmac-sha384"),
    ),
    (
        "hmac-sha2-384",
        alg(IntegId::HMAC_SHA2_384_192, "hmac-sha384"),
    ),
    (
        "hmac-sha512",
        alg(IntegId::HMAC_SHA2_512_256, "hmac-sha512"),
    ),
    (
        "hmac-sha2-512",
        alg(IntegId::HMAC_SHA2_512_256, "hmac-sha512"),
    ),
    ("aes-xcbc-mac", alg(IntegId::AES_XCBC_96, "aes-xcbc-mac")),
    ("aes-cmac", alg(IntegId::AES_CMAC_96, "aes-cmac")),
    (
        "null",
        Alg {
            id: IntegId::NONE,
            name: "null",
            takes_key: false,
        },
    ),
];

const AUTH_UNSUPPORTED: &[(&str, &str)] = &[
    (
        "keyed-md5",
        "the keyed hashes of RFC 1828 (ah-old) are not implemented",
    ),
    (
        "keyed-sha1",
        "the keyed hashes of RFC 1852 (ah-old) are not implemented",
    ),
    ("hmac-ripemd160", "HMAC-RIPEMD-160 is not implemented"),
    (
        "tcp-md5",
        "TCP-MD5 (RFC 2385) is a TCP option, not an IPsec SA",
    ),
];

const COMP: &[(&str, Alg<IpcompId>)] = &[("deflate", alg(IpcompId::DEFLATE, "deflate"))];

const COMP_UNSUPPORTED: &[(&str, &str)] = &[
    ("oui", "only deflate (RFC 2394) is implemented"),
    ("lzs", "only deflate (RFC 2394) is implemented"),
];

fn lookup<Id: Copy>(
    table: &[(&str, Alg<Id>)],
    unsupported: &[(&str, &'static str)],
    name: &str,
) -> Result<Alg<Id>, Lookup> {
    if let Some((_, a)) = table.iter().find(|(n, _)| *n == name) {
        return Ok(*a);
    }
    match unsupported.iter().find(|(n, _)| *n == name) {
        Some((_, why)) => Err(Lookup::Unsupported(why)),
        None => Err(Lookup::Unknown),
    }
}

/// An `-E` name.
pub(crate) fn encr(name: &str) -> Result<Alg<EncrId>, Lookup> {
    lookup(ENCR, ENCR_UNSUPPORTED, name)
}

/// An `-A` name.
pub(crate) fn auth(name: &str) -> Result<Alg<IntegId>, Lookup> {
    lookup(AUTH, AUTH_UNSUPPORTED, name)
}

/// A `-C` name.
pub(crate) fn comp(name: &str) -> Result<Alg<IpcompId>, Lookup> {
    lookup(COMP, COMP_UNSUPPORTED, name)
}

/// The setkey name of an encryption id, if setkey has one.
pub fn encr_name(id: EncrId) -> Option<&'static str> {
    ENCR.iter().find(|(_, a)| a.id == id).map(|(_, a)| a.name)
}

/// The setkey name of an integrity id, if setkey has one.
pub fn auth_name(id: IntegId) -> Option<&'static str> {
    AUTH.iter().find(|(_, a)| a.id == id).map(|(_, a)| a.name)
}

/// The setkey name of an IPComp id, if setkey has one.
pub fn comp_name(id: IpcompId) -> Option<&'static str> {
    COMP.iter().find(|(_, a)| a.id == id).map(|(_, a)| a.name)
}

/// Every `-E` name (for tests and `--help`).
pub fn encr_names() -> impl Iterator<Item = &'static str> {
    ENCR.iter().map(|(n, _)| *n)
}

/// Every `-A` name.
pub fn auth_names() -> impl Iterator<Item = &'static str> {
    AUTH.iter().map(|(n, _)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_share_a_canonical_name() {
        assert_eq!(encr("rijndael-cbc").unwrap().name, "aes-cbc");
        assert_eq!(encr_name(EncrId::AES_CBC), Some("aes-cbc"));
        assert_eq!(auth("hmac-sha2-256").unwrap().name, "hmac-sha256");
        assert_eq!(auth_name(IntegId::HMAC_SHA2_512_256), Some("hmac-sha512"));
        assert_eq!(comp_name(IpcompId::DEFLATE), Some("deflate"));
        assert!(!encr("null").unwrap().takes_key);
        assert_eq!(encr("foo"), Err(Lookup::Unknown));
        assert!(matches!(auth("keyed-md5"), Err(Lookup::Unsupported(_))));
        assert!(matches!(comp("lzs"), Err(Lookup::Unsupported(_))));
    }
}
