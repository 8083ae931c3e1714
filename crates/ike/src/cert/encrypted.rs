//! Password-encrypted private keys, as swanctl decrypts them with the
//! `secret` of a `secrets.rsa…`/`ecdsa…`/`pkcs8…`/`private…` section
//! (`load_creds.c` `decrypt_with_config()`):
//!
//! - PKCS#8 `EncryptedPrivateKeyInfo` (RFC 5958 §3; PEM `ENCRYPTED
//!   PRIVATE KEY` or DER) with PBES2 (RFC 8018 §6.2): PBKDF2 with
//!   HMAC-SHA-1, -SHA-256, -SHA-384 or -SHA-512, and AES-128/192/256-CBC
//!   or DES-EDE3-CBC, what `openssl pkcs8 -topk8 -v2 …` writes;
//! - OpenSSL's legacy PEM encryption (`Proc-Type: 4,ENCRYPTED`,
//!   `DEK-Info: AES-256-CBC,IV`), key from `EVP_BytesToKey()` with MD5 and
//!   one iteration, what `openssl genrsa -aes256` and strongSwan's own
//!   `pem_builder.c` read.
//!
//! The primitives come from the [`Provider`]: its IKE ciphers (AES-CBC,
//! 3DES), PRFs (HMAC) and hashes (MD5). PBES1 and PKCS#12 are not read.

use const_oid::ObjectIdentifier as Oid;
use der::asn1::OctetString;
use der::{Encode, Reader, SliceReader};
use flowsec_crypto::backend::HashAlg;
use flowsec_crypto::{EncrId, PrfId, Provider};
use spki::AlgorithmIdentifierOwned;
use zeroize::Zeroizing;

/// Most PBKDF2 iterations tried (implementation limit, against a key file
/// that would hold the daemon for hours; OpenSSL 3 writes 2048, current
/// advice is below a million).
pub const MAX_PBKDF2_ITERATIONS: u32 = 10_000_000;

/// The encoding of a decrypted key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plain {
    /// PKCS#1 `RSAPrivateKey`.
    Pkcs1,
    /// SEC1 `ECPrivateKey`.
    Sec1,
    /// PKCS#8 `PrivateKeyInfo`.
    Pkcs8,
}

/// Why a key could not be decrypted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DecryptError {
    /// Not an encrypted key this module reads.
    NotEncrypted,
    /// The padding did not check out: another password.
    WrongPassword,
    /// Encrypted with something flowsec does not read.
    Unsupported(String),
}

/// The plain key in `bytes` (a PEM or DER file), decrypted with
/// `password`.
pub(crate) fn decrypt(
    provider: &Provider,
    bytes: &[u8],
    password: &[u8],
) -> Result<(Plain, Zeroizing<Vec<u8>>), DecryptError> {
    if let Some(legacy) = legacy_pem(bytes)? {
        return legacy.decrypt(provider, password);
    }
    let der = match pem_rfc7468::decode_vec(bytes.trim_ascii()) {
        Ok(("ENCRYPTED PRIVATE KEY", der)) => Zeroizing::new(der),
        Ok(_) => return Err(DecryptError::NotEncrypted),
        Err(_) => Zeroizing::new(bytes.to_vec()),
    };
    let plain = pkcs8(provider, &der, password)?;
    Ok((Plain::Pkcs8, plain))
}

const PBES2: Oid = Oid::new_unwrap("1.2.840.113549.1.5.13");
const PBKDF2: Oid = Oid::new_unwrap("1.2.840.113549.1.5.12");
const HMAC_SHA1: Oid = Oid::new_unwrap("1.2.840.113549.2.7");
const HMAC_SHA256: Oid = Oid::new_unwrap("1.2.840.113549.2.9");
const HMAC_SHA384: Oid = Oid::new_unwrap("1.2.840.113549.2.10");
const HMAC_SHA512: Oid = Oid::new_unwrap("1.2.840.113549.2.11");
const AES128_CBC: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.1.2");
const AES192_CBC: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.1.22");
const AES256_CBC: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.1.42");
const DES_EDE3_CBC: Oid = Oid::new_unwrap("1.2.840.113549.3.7");

fn unsupported(what: impl core::fmt::Display) -> DecryptError {
    DecryptError::Unsupported(what.to_string())
}

/// ```text
/// EncryptedPrivateKeyInfo ::= SEQUENCE {            -- RFC 5958 §3
///     encryptionAlgorithm  AlgorithmIdentifier,     -- PBES2 here
///     encryptedData        OCTET STRING }
/// PBES2-params ::= SEQUENCE {                       -- RFC 8018 A.4
///     keyDerivationFunc  AlgorithmIdentifier {PBKDF2},
///     encryptionScheme   AlgorithmIdentifier }      -- IV in its parameters
/// ```
fn pkcs8(
    provider: &Provider,
    der: &[u8],
    password: &[u8],
) -> Result<Zeroizing<Vec<u8>>, DecryptError> {
    let bad = |_| DecryptError::NotEncrypted;
    let mut r = SliceReader::new(der).map_err(bad)?;
    let (alg, data) = r
        .sequence(|r| {
            Ok((
                r.decode::<AlgorithmIdentifierOwned>()?,
                r.decode::<OctetString>()?,
            ))
        })
        .map_err(bad)?;
    if alg.oid != PBES2 {
        return Err(unsupported(format_args!(
            "encryption {} (flowsec reads PBES2)",
            alg.oid
        )));
    }
    let params = alg
        .parameters
        .ok_or(DecryptError::NotEncrypted)?
        .to_der()
        .map_err(bad)?;
    let (kdf, scheme) = SliceReader::new(&params)
        .and_then(|mut r| {
            r.sequence(|r| {
                Ok((
                    r.decode::<AlgorithmIdentifierOwned>()?,
                    r.decode::<AlgorithmIdentifierOwned>()?,
                ))
            })
        })
        .map_err(|e| unsupported(format_args!("PBES2 parameters: {e}")))?;
    let (cipher, key_len) = cipher_of(&scheme.oid)?;
    let iv = scheme
        .parameters
        .and_then(|p| p.decode_as::<OctetString>().ok())
        .ok_or_else(|| unsupported("no IV in the PBES2 encryption scheme"))?;
    let key = pbkdf2(provider, &kdf, password, key_len)?;
    cbc_decrypt(provider, cipher, &key, iv.as_bytes(), data.as_bytes())
}

/// The cipher and its key length for a PBES2 encryption scheme.
fn cipher_of(oid: &Oid) -> Result<(EncrId, usize), DecryptError> {
    Ok(match *oid {
        AES128_CBC => (EncrId::AES_CBC, 16),
        AES192_CBC => (EncrId::AES_CBC, 24),
        AES256_CBC => (EncrId::AES_CBC, 32),
        DES_EDE3_CBC => (EncrId::TRIPLE_DES, 24),
        other => return Err(unsupported(format_args!("PBES2 cipher {other}"))),
    })
}

/// ```text
/// PBKDF2-params ::= SEQUENCE {                      -- RFC 8018 A.2
///     salt            OCTET STRING,
///     iterationCount  INTEGER (1..MAX),
///     keyLength       INTEGER (1..MAX) OPTIONAL,
///     prf             AlgorithmIdentifier DEFAULT hmacWithSHA1 }
/// ```
fn pbkdf2(
    provider: &Provider,
    kdf: &AlgorithmIdentifierOwned,
    password: &[u8],
    key_len: usize,
) -> Result<Zeroizing<Vec<u8>>, DecryptError> {
    if kdf.oid != PBKDF2 {
        return Err(unsupported(format_args!("key derivation {}", kdf.oid)));
    }
    let params = kdf
        .parameters
        .as_ref()
        .and_then(|p| p.to_der().ok())
        .ok_or_else(|| unsupported("PBKDF2 without parameters"))?;
    let (salt, iterations, _len, prf) = SliceReader::new(&params)
        .and_then(|mut r| {
            r.sequence(|r| {
                Ok((
                    r.decode::<OctetString>()?,
                    r.decode::<u32>()?,
                    r.decode::<Option<u32>>()?,
                    r.decode::<Option<AlgorithmIdentifierOwned>>()?,
                ))
            })
        })
        .map_err(|e| unsupported(format_args!("PBKDF2 parameters: {e}")))?;
    if iterations == 0 || iterations > MAX_PBKDF2_ITERATIONS {
        return Err(unsupported(format_args!("{iterations} PBKDF2 iterations")));
    }
    let prf_id = match prf.map_or(HMAC_SHA1, |p| p.oid) {
        HMAC_SHA1 => PrfId::HMAC_SHA1,
        HMAC_SHA256 => PrfId::HMAC_SHA2_256,
        HMAC_SHA384 => PrfId::HMAC_SHA2_384,
        HMAC_SHA512 => PrfId::HMAC_SHA2_512,
        other => return Err(unsupported(format_args!("PBKDF2 PRF {other}"))),
    };
    let prf = provider
        .prf(prf_id)
        .ok_or_else(|| unsupported(format_args!("PBKDF2 PRF {prf_id:?} (not in the provider)")))?;
    // RFC 8018 §5.2: T_i = U_1 ^ ... ^ U_c, U_1 = PRF(P, S || INT(i)),
    // U_j = PRF(P, U_{j-1}).
    let mut key = Zeroizing::new(Vec::with_capacity(key_len));
    let mut block = 1u32;
    while key.len() < key_len {
        let mut u = prf.prf(password, &[salt.as_bytes(), &block.to_be_bytes()]);
        let mut t = u.clone();
        for _ in 1..iterations {
            u = prf.prf(password, &[&u]);
            t.iter_mut().zip(u.iter()).for_each(|(t, u)| *t ^= u);
        }
        let take = (key_len - key.len()).min(t.len());
        key.extend_from_slice(&t[..take]);
        block += 1;
    }
    Ok(key)
}

/// CBC decryption and PKCS#7 padding removal (RFC 8018 §6.1.1 4., RFC
/// 1423 §1.1): bad padding is a wrong password.
#[allow(clippy::manual_is_multiple_of)] // MSRV 1.80
fn cbc_decrypt(
    provider: &Provider,
    cipher: EncrId,
    key: &[u8],
    iv: &[u8],
    data: &[u8],
) -> Result<Zeroizing<Vec<u8>>, DecryptError> {
    let c = provider
        .cipher(cipher, key)
        .map_err(|e| unsupported(format_args!("{cipher:?}: {e}")))?;
    let block = c.block_len();
    if iv.len() != block || data.is_empty() || data.len() % block != 0 {
        return Err(DecryptError::WrongPassword);
    }
    let mut plain = Zeroizing::new(data.to_vec());
    c.decrypt(iv, &mut plain)
        .map_err(|_| DecryptError::WrongPassword)?;
    let pad = usize::from(*plain.last().unwrap_or(&0));
    let ok = (1..=block).contains(&pad)
        && plain[plain.len() - pad..]
            .iter()
            .all(|&b| usize::from(b) == pad);
    if !ok {
        return Err(DecryptError::WrongPassword);
    }
    let keep = plain.len() - pad;
    plain.truncate(keep);
    Ok(plain)
}

/// An OpenSSL legacy-encrypted PEM block: its label, cipher, IV and
/// ciphertext.
struct LegacyPem {
    label: String,
    cipher: EncrId,
    key_len: usize,
    iv: Vec<u8>,
    data: Zeroizing<Vec<u8>>,
}

/// The PEM block with `Proc-Type: 4,ENCRYPTED` headers (RFC 1421 §4.6),
/// if `bytes` hold one.
fn legacy_pem(bytes: &[u8]) -> Result<Option<LegacyPem>, DecryptError> {
    let text = String::from_utf8_lossy(bytes);
    if !text.contains("Proc-Type: 4,ENCRYPTED") {
        return Ok(None);
    }
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let begin = lines
        .iter()
        .position(|l| l.starts_with("-----BEGIN ") && l.ends_with("PRIVATE KEY-----"))
        .ok_or(DecryptError::NotEncrypted)?;
    let label = lines[begin]["-----BEGIN ".len()..lines[begin].len() - 5].to_string();
    let end = format!("-----END {label}-----");
    let stop = lines
        .iter()
        .position(|l| *l == end)
        .ok_or(DecryptError::NotEncrypted)?;
    let body = lines
        .get(begin + 1..stop)
        .ok_or(DecryptError::NotEncrypted)?;
    let dek = body
        .iter()
        .find_map(|l| l.strip_prefix("DEK-Info:"))
        .ok_or_else(|| unsupported("encrypted PEM without DEK-Info"))?;
    let (alg, iv_hex) = dek
        .trim()
        .split_once(',')
        .ok_or(DecryptError::NotEncrypted)?;
    let (cipher, key_len) = match alg.to_ascii_uppercase().as_str() {
        "AES-128-CBC" => (EncrId::AES_CBC, 16),
        "AES-192-CBC" => (EncrId::AES_CBC, 24),
        "AES-256-CBC" => (EncrId::AES_CBC, 32),
        "DES-EDE3-CBC" => (EncrId::TRIPLE_DES, 24),
        other => return Err(unsupported(format_args!("PEM encryption {other}"))),
    };
    let iv = unhex(iv_hex.trim()).ok_or(DecryptError::NotEncrypted)?;
    // The base64 after the headers' blank line, as a PEM of its own.
    let first = body.iter().position(|l| l.is_empty()).map_or(0, |i| i + 1);
    let mut clean = format!("-----BEGIN {label}-----\n");
    for l in &body[first..] {
        clean.push_str(l);
        clean.push('\n');
    }
    clean.push_str(&end);
    let clean = Zeroizing::new(clean);
    let (_, data) = pem_rfc7468::decode_vec(clean.as_bytes())
        .map_err(|e| unsupported(format_args!("encrypted PEM body: {e}")))?;
    Ok(Some(LegacyPem {
        label,
        cipher,
        key_len,
        iv,
        data: Zeroizing::new(data),
    }))
}

impl LegacyPem {
    fn decrypt(
        &self,
        provider: &Provider,
        password: &[u8],
    ) -> Result<(Plain, Zeroizing<Vec<u8>>), DecryptError> {
        let plain = match self.label.as_str() {
            "RSA PRIVATE KEY" => Plain::Pkcs1,
            "EC PRIVATE KEY" => Plain::Sec1,
            "PRIVATE KEY" => Plain::Pkcs8,
            other => return Err(unsupported(format_args!("PEM label {other}"))),
        };
        let salt = self.iv.get(..8).ok_or(DecryptError::NotEncrypted)?;
        let key = bytes_to_key(provider, password, salt, self.key_len)?;
        let der = cbc_decrypt(provider, self.cipher, &key, &self.iv, &self.data)?;
        Ok((plain, der))
    }
}

/// OpenSSL's `EVP_BytesToKey()` with MD5 and one iteration:
/// D_i = MD5(D_{i-1} || password || salt), the key their concatenation.
fn bytes_to_key(
    provider: &Provider,
    password: &[u8],
    salt: &[u8],
    key_len: usize,
) -> Result<Zeroizing<Vec<u8>>, DecryptError> {
    let md5 = provider
        .hash(HashAlg::Md5)
        .ok_or_else(|| unsupported("MD5 (not in the provider)"))?;
    let mut key = Zeroizing::new(Vec::with_capacity(key_len + 16));
    let mut d = Zeroizing::new(Vec::new());
    while key.len() < key_len {
        let mut input = Zeroizing::new(Vec::with_capacity(d.len() + password.len() + 8));
        input.extend_from_slice(&d);
        input.extend_from_slice(password);
        input.extend_from_slice(salt);
        let mut out = Zeroizing::new(vec![0u8; md5.output_len()]);
        md5.digest(&input, &mut out);
        key.extend_from_slice(&out);
        d = out;
    }
    key.truncate(key_len);
    Ok(key)
}

#[allow(clippy::manual_is_multiple_of)] // MSRV 1.80
fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}
