//! ESP/AH algorithm suites written the way strongSwan writes proposals
//! (`aes128gcm16`, `aes256-sha256`, `3des-md5`, `chacha20poly1305`), with
//! the key lengths each algorithm takes. IKE proposals reuse the same
//! algorithm names (strongSwan's `proposal_keywords`).

use core::fmt;

use flowsec_wire::iana::{EncrId, IntegId};

use crate::esp::is_aead;

/// An encryption algorithm with its key size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Encr {
    /// IANA transform id.
    pub id: EncrId,
    /// Cipher key bits (without salt or nonce).
    pub key_bits: u16,
}

impl Encr {
    /// Bytes of key material the SA needs: the cipher key plus the salt of
    /// GCM/GMAC/ChaCha20 (4, RFC 4106 §8.1, RFC 7634 §2), CCM (3, RFC 4309
    /// §7.1) or the CTR nonce (4, RFC 3686 §5.1).
    pub fn keymat_len(&self) -> usize {
        let salt = match self.id {
            EncrId::AES_GCM_8
            | EncrId::AES_GCM_12
            | EncrId::AES_GCM_16
            | EncrId::NULL_AUTH_AES_GMAC
            | EncrId::CHACHA20_POLY1305
            | EncrId::AES_CTR => 4,
            EncrId::AES_CCM_8 | EncrId::AES_CCM_12 | EncrId::AES_CCM_16 => 3,
            _ => 0,
        };
        usize::from(self.key_bits) / 8 + salt
    }
}

/// Key length in bytes of an integrity algorithm (RFC 2403, 2404, 4868,
/// 3566, 4494), 0 for NONE.
pub fn integ_key_len(id: IntegId) -> usize {
    match id {
        IntegId::HMAC_MD5_96 | IntegId::AES_XCBC_96 | IntegId::AES_CMAC_96 => 16,
        IntegId::HMAC_SHA1_96 => 20,
        IntegId::HMAC_SHA2_256_128 => 32,
        IntegId::HMAC_SHA2_384_192 => 48,
        IntegId::HMAC_SHA2_512_256 => 64,
        _ => 0,
    }
}

/// One ESP or AH suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Suite {
    /// ESP encryption (or AEAD); `None` for AH.
    pub encr: Option<Encr>,
    /// Integrity (`NONE` with an AEAD).
    pub integ: IntegId,
}

/// A suite string that could not be understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadSuite {
    /// The token that was not understood.
    pub token: String,
    /// Why.
    pub reason: &'static str,
}

impl fmt::Display for BadSuite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}': {}", self.token, self.reason)
    }
}

impl std::error::Error for BadSuite {}

impl Suite {
    /// Parse an ESP suite: an encryption keyword, optionally followed by
    /// `-` and an integrity keyword (an AEAD takes none and NULL needs
    /// one; any other cipher without one is encryption without integrity,
    /// accepted here). `ah-sha1` style names an AH suite.
    pub fn parse(s: &str) -> Result<Suite, BadSuite> {
        let bad = |token: &str, reason| BadSuite {
            token: token.to_string(),
            reason,
        };
        let mut parts = s.split('-');
        let first = parts.next().unwrap_or_default();
        let second = parts.next();
        if let Some(extra) = parts.next() {
            return Err(bad(
                extra,
                "too many parts (expected ENCR[-INTEG] or ah-INTEG)",
            ));
        }
        if first == "ah" {
            let t = second.ok_or_else(|| bad(s, "AH needs an integrity algorithm"))?;
            let integ = integ_keyword(t).ok_or_else(|| bad(t, "unknown integrity algorithm"))?;
            if integ == IntegId::NONE {
                return Err(bad(t, "AH needs an integrity algorithm"));
            }
            return Ok(Suite { encr: None, integ });
        }
        let encr = encr_keyword(first).ok_or_else(|| bad(first, "unknown encryption algorithm"))?;
        let integ = match second {
            Some(t) => integ_keyword(t).ok_or_else(|| bad(t, "unknown integrity algorithm"))?,
            None => IntegId::NONE,
        };
        if is_aead(encr.id) && integ != IntegId::NONE {
            return Err(bad(s, "an AEAD takes no separate integrity algorithm"));
        }
        if encr.id == EncrId::NULL && integ == IntegId::NONE {
            return Err(bad(
                s,
                "NULL encryption needs an integrity algorithm (RFC 4303 §3.2)",
            ));
        }
        Ok(Suite {
            encr: Some(encr),
            integ,
        })
    }
}

/// strongSwan's encryption keywords.
pub fn encr_keyword(s: &str) -> Option<Encr> {
    let e = |id, key_bits| Some(Encr { id, key_bits });
    // AES family: aes128, aes192ctr, aes256gcm16, aes128ccm12, aes128gmac.
    if let Some(rest) = s.strip_prefix("aes") {
        let (bits, mode) = rest.split_at(
            rest.find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len()),
        );
        let bits: u16 = bits.parse().ok().filter(|b| [128, 192, 256].contains(b))?;
        let id = match mode {
            "" | "cbc" => EncrId::AES_CBC,
            "ctr" => EncrId::AES_CTR,
            "gcm8" => EncrId::AES_GCM_8,
            "gcm12" => EncrId::AES_GCM_12,
            "gcm16" | "gcm" => EncrId::AES_GCM_16,
            "ccm8" => EncrId::AES_CCM_8,
            "ccm12" => EncrId::AES_CCM_12,
            "ccm16" | "ccm" => EncrId::AES_CCM_16,
            "gmac" => EncrId::NULL_AUTH_AES_GMAC,
            _ => return None,
        };
        return e(id, bits);
    }
    let with_bits = |prefix: &str, default: u16, allowed: &[u16]| -> Option<u16> {
        let rest = s.strip_prefix(prefix)?;
        if rest.is_empty() {
            return Some(default);
        }
        rest.parse().ok().filter(|b| allowed.contains(b))
    };
    match s {
        "null" => e(EncrId::NULL, 0),
        "des" => e(EncrId::DES, 64),
        "3des" => e(EncrId::TRIPLE_DES, 192),
        "chacha20poly1305" => e(EncrId::CHACHA20_POLY1305, 256),
        "cast128" | "cast" => e(EncrId::CAST, 128),
        _ => {
            if let Some(b) = with_bits("blowfish", 128, &[40, 64, 128, 192, 256, 320, 384, 448]) {
                e(EncrId::BLOWFISH, b)
            } else if let Some(b) = with_bits("camellia", 128, &[128, 192, 256]) {
                e(EncrId::CAMELLIA_CBC, b)
            } else if let Some(b) = with_bits("twofish", 128, &[128, 192, 256]) {
                e(EncrId::TWOFISH_CBC, b)
            } else {
                None
            }
        }
    }
}

/// strongSwan's integrity keywords.
pub fn integ_keyword(s: &str) -> Option<IntegId> {
    Some(match s {
        "md5" => IntegId::HMAC_MD5_96,
        "sha1" | "sha" => IntegId::HMAC_SHA1_96,
        "sha256" | "sha2_256" => IntegId::HMAC_SHA2_256_128,
        "sha384" | "sha2_384" => IntegId::HMAC_SHA2_384_192,
        "sha512" | "sha2_512" => IntegId::HMAC_SHA2_512_256,
        "aesxcbc" => IntegId::AES_XCBC_96,
        "aescmac" => IntegId::AES_CMAC_96,
        "none" => IntegId::NONE,
        _ => return None,
    })
}

impl fmt::Display for Suite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.encr {
            None => write!(f, "ah-{}", self.integ),
            Some(e) if self.integ == IntegId::NONE => write!(f, "{}-{}", e.id, e.key_bits),
            Some(e) => write!(f, "{}-{}/{}", e.id, e.key_bits, self.integ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strongswan_keywords() {
        let s = Suite::parse("aes128gcm16").unwrap();
        assert_eq!(
            s.encr,
            Some(Encr {
                id: EncrId::AES_GCM_16,
                key_bits: 128
            })
        );
        assert_eq!(s.encr.unwrap().keymat_len(), 20);
        let s = Suite::parse("aes256-sha256").unwrap();
        assert_eq!(s.encr.unwrap().id, EncrId::AES_CBC);
        assert_eq!(s.integ, IntegId::HMAC_SHA2_256_128);
        assert_eq!(
            Suite::parse("3des-md5").unwrap().encr.unwrap().keymat_len(),
            24
        );
        assert_eq!(
            Suite::parse("blowfish192-sha1")
                .unwrap()
                .encr
                .unwrap()
                .keymat_len(),
            24
        );
        assert_eq!(
            Suite::parse("aes128ctr-aesxcbc")
                .unwrap()
                .encr
                .unwrap()
                .keymat_len(),
            20
        );
        assert_eq!(
            Suite::parse("aes128ccm8")
                .unwrap()
                .encr
                .unwrap()
                .keymat_len(),
            19
        );
        assert_eq!(
            Suite::parse("ah-sha1").unwrap(),
            Suite {
                encr: None,
                integ: IntegId::HMAC_SHA1_96
            }
        );
        assert_eq!(integ_key_len(IntegId::HMAC_SHA2_512_256), 64);
    }

    #[test]
    fn refusals_name_the_token() {
        assert_eq!(Suite::parse("aes127-sha1").unwrap_err().token, "aes127");
        assert_eq!(Suite::parse("aes128-sha3").unwrap_err().token, "sha3");
        assert!(Suite::parse("aes128gcm16-sha1").is_err());
        assert!(Suite::parse("null").is_err());
        assert!(Suite::parse("ah").is_err());
        assert!(Suite::parse("aes128-sha1-x").is_err());
    }
}
