//! strongSwan's value syntax, as swanctl.conf's keys take it ([`super::swanctl`]
//! says which key takes which): numbers, durations and byte counts
//! (`parse_time()`, `parse_bytes()`), booleans and keywords without regard
//! to case, ports, actions, comma lists of addresses and selectors, and
//! secrets (`load_creds.c`). The errors are [`ValueError`] and its
//! siblings in `value_error`.

use std::time::Duration;

use flowsec_ipsec::Mode;
use zeroize::Zeroizing;

use super::error::ConfigErrorKind;
use super::identity::decode_hex;
use super::proposal::split_list;
use super::value_error::{EmptyListItem, SecretError, SelectorError, ValueError};
use super::{AddrSpec, AuthKind, KeyFamily, PubkeyAuth, TsSpec};
use crate::cert::Hash;

/// `"string"` (already unquoted by the lexer), `0x` hex or `0s` base64,
/// as `load_creds.c` reads them.
pub(super) fn decode_secret(v: &str) -> Result<Zeroizing<Vec<u8>>, SecretError> {
    let lower = v.get(..2).map(str::to_ascii_lowercase);
    let bytes = match lower.as_deref() {
        Some("0x") => decode_hex(&v[2..]).map_err(SecretError::Hex)?,
        Some("0s") => decode_base64(&v[2..])?,
        _ => v.as_bytes().to_vec(),
    };
    if bytes.is_empty() {
        return Err(SecretError::Empty);
    }
    Ok(Zeroizing::new(bytes))
}

/// Standard base64 (RFC 4648 §4) with optional padding.
pub(super) fn decode_base64(s: &str) -> Result<Vec<u8>, SecretError> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let body = s.trim_end_matches('=');
    if s.len() - body.len() > 2 {
        return Err(SecretError::Base64Padding);
    }
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in body.bytes() {
        let v = val(c).ok_or(SecretError::Base64Char)?;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    if bits >= 6 || acc != 0 {
        return Err(SecretError::Base64Truncated);
    }
    Ok(out)
}

pub(super) fn same_as_default(v: &str, default: &str) -> bool {
    if v.eq_ignore_ascii_case(default) {
        return true;
    }
    if let (Ok(a), Ok(b)) = (parse_bool(v), parse_bool(default)) {
        return a == b;
    }
    if default == "0" {
        return parse_duration(v).map(|d| d.is_zero()).unwrap_or(false);
    }
    if default == "0/0x00000000" {
        return matches!(v, "0" | "0/0" | "0x0" | "0/0x0" | "0x00000000/0x00000000");
    }
    false
}

pub(super) fn parse_auth(v: &str) -> Result<AuthKind, ValueError> {
    let l = v.to_ascii_lowercase();
    if l == "psk" {
        return Ok(AuthKind::Psk);
    }
    // strongSwan's `auth = pubkey | rsa | ecdsa | ed25519 | rsa/pss`, each
    // with optional `-HASH` constraints; `ike:` (IKE-only constraints)
    // means the same here (flowsec checks no certificate signature
    // schemes beyond webpki's).
    let body = l.strip_prefix("ike:").unwrap_or(&l);
    let mut parts = body.split('-');
    let family = match parts.next() {
        Some("pubkey") => Some((None, false)),
        Some("rsa") => Some((Some(KeyFamily::Rsa), false)),
        Some("rsa/pss") => Some((Some(KeyFamily::Rsa), true)),
        Some("ecdsa") => Some((Some(KeyFamily::Ecdsa), false)),
        Some("ed25519") => Some((Some(KeyFamily::Ed25519), false)),
        _ => None,
    };
    if let Some((key, pss)) = family {
        let mut auth = PubkeyAuth {
            key,
            pss,
            ..PubkeyAuth::default()
        };
        for h in parts {
            let hash = match h {
                "sha256" | "sha2_256" => Hash::Sha256,
                "sha384" | "sha2_384" => Hash::Sha384,
                "sha512" | "sha2_512" => Hash::Sha512,
                "identity" => Hash::Identity,
                _ => return Err(ValueError::AuthUnknown(v.into())),
            };
            auth.hashes.insert(hash);
        }
        return Ok(AuthKind::Pubkey(auth));
    }
    if l == "eap" || l == "eap-mschapv2" {
        return Ok(AuthKind::Eap);
    }
    let known = ["bliss", "eap", "xauth"];
    if known.iter().any(|k| l.starts_with(k)) {
        Err(ValueError::AuthNotSupported(v.into()))
    } else {
        Err(ValueError::AuthUnknown(v.into()))
    }
}

pub(super) fn parse_mode(v: &str) -> Result<Mode, ValueError> {
    match keyword(
        v,
        &[
            "tunnel",
            "transport",
            "transport_proxy",
            "beet",
            "drop",
            "pass",
        ],
    )? {
        0 => Ok(Mode::Tunnel),
        1 => Ok(Mode::Transport),
        _ => Err(ValueError::Mode(v.into())),
    }
}

pub(super) enum Act {
    None,
    Start,
    Trap,
}

/// strongSwan's `parse_action()`.
pub(super) fn action(v: &str) -> Result<Act, ValueError> {
    if v.contains('|') {
        return Err(ValueError::CombinedActions(v.into()));
    }
    Ok(
        match keyword(v, &["none", "clear", "start", "restart", "trap", "route"])? {
            0 | 1 => Act::None,
            2 | 3 => Act::Start,
            _ => Act::Trap,
        },
    )
}

/// The index of `v` in `words`, ignoring ASCII case.
pub(super) fn keyword(v: &str, words: &'static [&'static str]) -> Result<usize, ValueError> {
    words
        .iter()
        .position(|w| w.eq_ignore_ascii_case(v))
        .ok_or_else(|| ValueError::Keyword {
            value: v.into(),
            words,
        })
}

/// strongSwan's `parse_bool()`.
pub(super) fn parse_bool(v: &str) -> Result<bool, ValueError> {
    match keyword(
        v,
        &[
            "yes", "true", "enabled", "1", "no", "false", "disabled", "0",
        ],
    ) {
        Ok(i) => Ok(i < 4),
        Err(_) => Err(ValueError::Bool(v.into())),
    }
}

pub(super) fn digits_then(v: &str) -> Result<(u64, &str), ValueError> {
    let end = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    if end == 0 {
        return Err(ValueError::NotANumber(v.into()));
    }
    let n = v[..end]
        .parse::<u64>()
        .map_err(|_| ValueError::TooLarge(v.into()))?;
    Ok((n, v[end..].trim_start()))
}

/// strongSwan's `parse_time()`: seconds, or a number with `s`, `m`, `h`,
/// `d` (decimal only).
pub fn parse_duration(v: &str) -> Result<Duration, ValueError> {
    let (n, rest) = digits_then(v)?;
    let mult = match rest.to_ascii_lowercase().as_str() {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => return Err(ValueError::Duration(v.into())),
    };
    n.checked_mul(mult)
        .map(Duration::from_secs)
        .ok_or_else(|| ValueError::TooLarge(v.into()))
}

/// strongSwan's `parse_bytes()`: a number with optional `k`, `M`, `G`
/// (1024-based, either case).
pub fn parse_bytes(v: &str) -> Result<u64, ValueError> {
    let (n, rest) = digits_then(v)?;
    let mult: u64 = match rest.to_ascii_lowercase().as_str() {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        _ => return Err(ValueError::Bytes(v.into())),
    };
    n.checked_mul(mult)
        .ok_or_else(|| ValueError::TooLarge(v.into()))
}

pub(super) fn parse_num<T: TryFrom<u64>>(v: &str) -> Result<T, ValueError> {
    match digits_then(v)? {
        (n, "") => T::try_from(n).map_err(|_| ValueError::TooLarge(v.into())),
        _ => Err(ValueError::NotANumber(v.into())),
    }
}

pub(super) fn parse_port(v: &str) -> Result<u16, ValueError> {
    match parse_num::<u16>(v) {
        Ok(0) | Err(_) => Err(ValueError::Port(v.into())),
        Ok(p) => Ok(p),
    }
}

/// A comma-separated list of plain addresses (`vips`).
pub(super) fn addresses(v: &str) -> Result<Vec<std::net::IpAddr>, ConfigErrorKind> {
    split_list(v)
        .map_err(ConfigErrorKind::List)?
        .iter()
        .map(|a| {
            a.parse()
                .map_err(|_| ConfigErrorKind::BadAddress(a.to_string()))
        })
        .collect()
}

/// A comma-separated list of names (`pools`, `redirect_load`).
pub(super) fn names(v: &str) -> Result<Vec<String>, ConfigErrorKind> {
    Ok(split_list(v)
        .map_err(ConfigErrorKind::List)?
        .iter()
        .map(|p| p.to_string())
        .collect())
}

pub(super) fn addr_list(v: &str) -> Result<Vec<AddrSpec>, ConfigErrorKind> {
    items(v, AddrSpec::parse)
}

pub(super) fn ts_list(v: &str) -> Result<Vec<TsSpec>, ConfigErrorKind> {
    items(v, TsSpec::parse)
}

/// Each item of the comma-separated list `v`, parsed.
pub(super) fn items<T>(
    v: &str,
    parse: impl Fn(&str) -> Result<T, SelectorError>,
) -> Result<Vec<T>, ConfigErrorKind> {
    let list = split_list(v).map_err(|e: EmptyListItem| ConfigErrorKind::List(e))?;
    Ok(list.into_iter().map(parse).collect::<Result<_, _>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_counts() {
        assert_eq!(parse_duration("5400").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("90m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("4h").unwrap(), Duration::from_secs(14400));
        assert_eq!(parse_duration("1D").unwrap(), Duration::from_secs(86400));
        assert_eq!(parse_duration("2 h").unwrap(), Duration::from_secs(7200));
        for bad in ["", "h", "1w", "1hh", "-1", "99999999999999999999", "1.5h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_bytes("500000000").unwrap(), 500_000_000);
        assert_eq!(parse_bytes("1k").unwrap(), 1024);
        assert_eq!(parse_bytes("2M").unwrap(), 2 << 20);
        assert_eq!(parse_bytes("1G").unwrap(), 1 << 30);
        assert!(parse_bytes("1T").is_err());
        assert!(parse_bytes("18446744073709551615G").is_err());
        assert_eq!(parse_num::<u64>("1000000").unwrap(), 1_000_000);
        assert!(parse_num::<u64>("1k").is_err());
        assert!(parse_num::<u32>("4294967296").is_err());
    }

    #[test]
    fn secrets_and_booleans() {
        assert_eq!(
            decode_secret("0x45a30759df97dc26a15b88ff")
                .unwrap()
                .as_slice(),
            [0x45, 0xa3, 0x07, 0x59, 0xdf, 0x97, 0xdc, 0x26, 0xa1, 0x5b, 0x88, 0xff]
        );
        assert_eq!(decode_secret("0sTWFu").unwrap().as_slice(), b"Man");
        assert_eq!(decode_secret("0sTWE=").unwrap().as_slice(), b"Ma");
        assert_eq!(decode_secret("0sTQ==").unwrap().as_slice(), b"M");
        assert_eq!(
            decode_secret("plain text").unwrap().as_slice(),
            b"plain text"
        );
        assert!(decode_secret("0xabc").is_err());
        assert!(decode_secret("0s!!").is_err());
        assert!(decode_secret("0sT").is_err());
        assert!(decode_secret("0x").is_err());
        assert_eq!(parse_bool("Yes"), Ok(true));
        assert_eq!(parse_bool("disabled"), Ok(false));
        assert!(parse_bool("maybe").is_err());
        assert!(same_as_default("0s", "0"));
        assert!(same_as_default("false", "no"));
        assert!(!same_as_default("yes", "no"));
    }
}
