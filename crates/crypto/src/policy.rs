//! Implementation requirement levels from RFC 8221 §5 (ESP/AH algorithms),
//! so that the CLI can warn about algorithms that exist here only because
//! the studies measured them.

use core::fmt;

use flowsec_wire::iana::{EncrId, IntegId};

/// An RFC 8221 requirement level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requirement {
    /// MUST / MUST- / SHOULD / SHOULD+: fine to use.
    Recommended,
    /// MAY, or not listed in RFC 8221.
    May,
    /// SHOULD NOT: works, but should be phased out.
    ShouldNot,
    /// MUST NOT: broken or obsolete; only for reproducing old studies.
    MustNot,
}

impl Requirement {
    /// Whether the CLI should print a warning when this is configured.
    pub fn warn(self) -> bool {
        matches!(self, Requirement::ShouldNot | Requirement::MustNot)
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Requirement::Recommended => "recommended",
            Requirement::May => "MAY",
            Requirement::ShouldNot => "SHOULD NOT (RFC 8221)",
            Requirement::MustNot => "MUST NOT (RFC 8221)",
        })
    }
}

/// RFC 8221 §5, Table 1 (ESP encryption). Twofish and Camellia are not
/// listed there; CAST was marked MUST NOT in the drafts and is treated as
/// such (64-bit block, like Blowfish).
pub fn encr_requirement(id: EncrId) -> Requirement {
    match id {
        EncrId::DES | EncrId::BLOWFISH | EncrId::CAST => Requirement::MustNot,
        EncrId::TRIPLE_DES => Requirement::ShouldNot,
        EncrId::NULL
        | EncrId::AES_CBC
        | EncrId::AES_CCM_8
        | EncrId::AES_CCM_16
        | EncrId::AES_GCM_16
        | EncrId::CHACHA20_POLY1305 => Requirement::Recommended,
        _ => Requirement::May,
    }
}

/// RFC 8221 §5, Table 2 (ESP/AH integrity). `NONE` is MUST with an AEAD
/// and MUST NOT otherwise; callers that know the cipher decide that case.
pub fn integ_requirement(id: IntegId) -> Requirement {
    match id {
        IntegId::HMAC_MD5_96 => Requirement::MustNot,
        IntegId::HMAC_SHA1_96
        | IntegId::AES_XCBC_96
        | IntegId::HMAC_SHA2_256_128
        | IntegId::HMAC_SHA2_512_256 => Requirement::Recommended,
        _ => Requirement::May,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_algorithms_warn() {
        assert!(encr_requirement(EncrId::DES).warn());
        assert!(encr_requirement(EncrId::TRIPLE_DES).warn());
        assert!(encr_requirement(EncrId::BLOWFISH).warn());
        assert!(integ_requirement(IntegId::HMAC_MD5_96).warn());
        assert!(!encr_requirement(EncrId::AES_GCM_16).warn());
        assert!(!integ_requirement(IntegId::HMAC_SHA2_256_128).warn());
    }
}
