//! The Encrypted (SK) payload (RFC 7296 §3.14), with AEADs as RFC 5282
//! (AES-GCM, AES-CCM) and RFC 7634 (ChaCha20-Poly1305) use them, and AES-CTR
//! as RFC 5930 does.
//!
//! ```text
//!  IKE header (28)                  ─┐
//!  unencrypted payloads (if any)     │ AEAD: associated data
//!  SK generic header (4)            ─┘ (RFC 5282 §5.1)          ─┐
//!  IV                                                             │ encrypt-then-MAC:
//!  ┌ inner payloads                                               │ the ICV covers all
//!  │ padding (zeros when we send; ignored when received)          │ of this (§3.14)
//!  └ pad length (1)      ← encrypted                             ─┘
//!  ICV / AEAD tag
//! ```
//!
//! IVs: CBC ciphers take a block of the caller's [`Random`] (§3.14: "MUST
//! be unpredictable"); CTR and the AEADs take 8 bytes of it (RFC 5930 §2,
//! RFC 5282 §3.1, RFC 7634 §2: "MUST NOT repeat for a key"; IKE SAs carry
//! few messages, so a random 64-bit IV is safe). We pad only to the
//! cipher's block (none for CTR and AEADs): the pad length byte is always
//! there, and a receiver takes any padding contents.
//!
//! [`SkCrypto::open`] verifies before it decrypts (encrypt-then-MAC; an
//! AEAD verifies in the same call) and fails with [`SkError`] on any input,
//! never panicking.

use flowsec_crypto::esp::is_aead;
use flowsec_crypto::suite::{integ_key_len, Encr};
use flowsec_crypto::{Aead, Cipher, CryptoError, EncrId, IntegId, Integrity, Provider};
use flowsec_wire::ike::{
    emit_payloads, first_type, parse_payloads, Header, IkeError, Message, Payload, PayloadType,
    GENERIC_HEADER_LEN, HEADER_LEN,
};
use zeroize::Zeroizing;

use crate::random::Random;

/// Explicit IV length of CTR (RFC 5930 §2) and of the AEADs (RFC 5282 §3.1,
/// RFC 7634 §2).
const SHORT_IV_LEN: usize = 8;

/// Why a received SK payload was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkError {
    /// The message, or the payload chain inside the SK payload, is not
    /// well formed (or the SK payload is too short for IV, pad length and
    /// ICV, or its ciphertext is not whole blocks).
    Malformed(IkeError),
    /// The payload chain inside the SK payload is not well formed: the
    /// message passed its integrity check, so this one may be answered
    /// (e.g. UNSUPPORTED_CRITICAL_PAYLOAD, RFC 7296 §2.5).
    Inner(IkeError),
    /// The message has no SK payload.
    NoSk,
    /// The ICV or AEAD tag does not verify: drop the message (§2.21.2).
    Integrity,
    /// The pad length points before the start of the plaintext.
    BadPadding,
}

impl core::fmt::Display for SkError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SkError::Malformed(e) => write!(f, "malformed encrypted message: {e}"),
            SkError::Inner(e) => write!(f, "malformed payloads inside the SK payload: {e}"),
            SkError::NoSk => f.write_str("no SK payload"),
            SkError::Integrity => f.write_str("SK payload integrity check failed"),
            SkError::BadPadding => f.write_str("SK payload pad length out of range"),
        }
    }
}

impl std::error::Error for SkError {}

/// Protection of the SK payload in one direction: built from SK_ei and
/// SK_ai (initiator to responder) or SK_er and SK_ar.
pub struct SkCrypto {
    mode: Mode,
}

enum Mode {
    /// AES-GCM, AES-CCM, ChaCha20-Poly1305: 8-byte IV, no padding needed.
    Aead(Box<dyn Aead>),
    /// CBC or CTR with a separate integrity transform (encrypt-then-MAC).
    CipherInteg {
        cipher: Box<dyn Cipher>,
        integ: Box<dyn Integrity>,
    },
}

impl core::fmt::Debug for SkCrypto {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mode = match self.mode {
            Mode::Aead(_) => "aead",
            Mode::CipherInteg { .. } => "cipher+integrity",
        };
        f.debug_struct("SkCrypto")
            .field("mode", &mode)
            .field("iv_len", &self.iv_len())
            .field("icv_len", &self.icv_len())
            .finish_non_exhaustive()
    }
}

impl SkCrypto {
    /// One direction's SK protection. `encr_key` is SK_e (cipher key plus
    /// salt or nonce: [`Encr::keymat_len`] bytes), `integ_key` SK_a
    /// (empty, and `integ` NONE, with an AEAD).
    ///
    /// # Errors
    /// `BadCombination` for an AEAD with integrity, a cipher without it,
    /// ENCR_NULL or NULL_AUTH_AES_GMAC (IKE must encrypt, RFC 7296 §5 and
    /// RFC 4543 §1); `BadKeyLength` when a key does not have the suite's
    /// length; whatever the provider says of the algorithm and key.
    pub fn new(
        provider: &Provider,
        encr: Encr,
        integ: IntegId,
        encr_key: &[u8],
        integ_key: &[u8],
    ) -> Result<SkCrypto, CryptoError> {
        if encr_key.len() != encr.keymat_len() {
            return Err(CryptoError::BadKeyLength {
                expected: "the encryption algorithm's key and salt length",
                got: encr_key.len(),
            });
        }
        if matches!(encr.id, EncrId::NULL | EncrId::NULL_AUTH_AES_GMAC) {
            return Err(CryptoError::BadCombination);
        }
        let mode = if is_aead(encr.id) {
            if integ != IntegId::NONE || !integ_key.is_empty() {
                return Err(CryptoError::BadCombination);
            }
            Mode::Aead(provider.aead(encr.id, encr_key)?)
        } else {
            if integ == IntegId::NONE {
                return Err(CryptoError::BadCombination);
            }
            if integ_key.len() != integ_key_len(integ) {
                return Err(CryptoError::BadKeyLength {
                    expected: "the integrity algorithm's key length",
                    got: integ_key.len(),
                });
            }
            Mode::CipherInteg {
                cipher: provider.cipher(encr.id, encr_key)?,
                integ: provider.integrity(integ, integ_key)?,
            }
        };
        Ok(SkCrypto { mode })
    }

    fn iv_len(&self) -> usize {
        match &self.mode {
            Mode::Aead(_) => SHORT_IV_LEN,
            Mode::CipherInteg { cipher, .. } => cipher.iv_len(),
        }
    }

    /// Plaintext (inner payloads, padding, pad length) must be a multiple
    /// of this.
    fn block_len(&self) -> usize {
        match &self.mode {
            Mode::Aead(_) => 1,
            Mode::CipherInteg { cipher, .. } => cipher.block_len().max(1),
        }
    }

    fn icv_len(&self) -> usize {
        match &self.mode {
            Mode::Aead(aead) => aead.tag_len(),
            Mode::CipherInteg { integ, .. } => integ.icv_len(),
        }
    }

    /// Bytes an SK payload adds around `inner_len` bytes of inner payloads
    /// (generic header, IV, padding, pad length, ICV).
    pub fn overhead(&self, inner_len: usize) -> usize {
        let block = self.block_len();
        let padded = (inner_len + 1).div_ceil(block) * block;
        GENERIC_HEADER_LEN + self.iv_len() + (padded - inner_len) + self.icv_len()
    }

    /// The whole message bytes: `header` (its length and next_payload are
    /// overwritten), an SK payload whose generic header names
    /// `inner_first`, containing `inner` (already-emitted inner payload
    /// chain) padded, encrypted and integrity-protected.
    ///
    /// # Panics
    /// If the SK payload would exceed 65535 bytes (its length field): the
    /// caller fragments (RFC 7383) or sends less; a programming error.
    pub fn seal(
        &self,
        header: &Header,
        inner_first: PayloadType,
        inner: &[u8],
        rng: &mut dyn Random,
    ) -> Vec<u8> {
        self.seal_after(header, &[], inner_first, inner, rng)
    }

    /// As [`seal`](Self::seal), with `unencrypted` payloads between the
    /// header and the SK payload (RFC 7296 §3.14 allows them; they are
    /// integrity-protected but not encrypted).
    ///
    /// # Panics
    /// As [`seal`](Self::seal); and if `unencrypted` holds an SK payload.
    pub fn seal_after(
        &self,
        header: &Header,
        unencrypted: &[Payload],
        inner_first: PayloadType,
        inner: &[u8],
        rng: &mut dyn Random,
    ) -> Vec<u8> {
        assert!(
            !unencrypted.iter().any(|p| p.ty() == PayloadType::SK),
            "an SK payload among the unencrypted ones"
        );
        // The chain up to and including the SK generic header, emitted by
        // the wire module (it links each Next Payload, the last to SK).
        let mut chain = unencrypted.to_vec();
        chain.push(Payload::Encrypted {
            first: inner_first,
            body: Vec::new(),
        });
        let prefix = emit_payloads(&chain);
        let sk = HEADER_LEN + prefix.len() - GENERIC_HEADER_LEN;
        let iv_len = self.iv_len();
        let icv_len = self.icv_len();
        let sk_len = inner.len() + self.overhead(inner.len());
        let pt_len = sk_len - GENERIC_HEADER_LEN - iv_len - icv_len;
        let pad_len = pt_len - inner.len() - 1;
        let Ok(sk_len16) = u16::try_from(sk_len) else {
            panic!("SK payload of {sk_len} bytes does not fit its length field");
        };
        let total = sk + sk_len;
        let Ok(length) = u32::try_from(total) else {
            panic!("IKE message of {total} bytes");
        };
        let header = Header {
            next_payload: first_type(&chain),
            length,
            ..header.clone()
        };

        let mut out = vec![0u8; total];
        header.emit(&mut out[..HEADER_LEN]);
        out[HEADER_LEN..sk + GENERIC_HEADER_LEN].copy_from_slice(&prefix);
        out[sk + 2..sk + 4].copy_from_slice(&sk_len16.to_be_bytes());
        let iv_at = sk + GENERIC_HEADER_LEN;
        let pt_at = iv_at + iv_len;
        let icv_at = pt_at + pt_len;
        out[pt_at..pt_at + inner.len()].copy_from_slice(inner);
        // Padding stays zero; pad_len < block length <= 255.
        out[icv_at - 1] = pad_len as u8;
        self.seal_in_place(&mut out, iv_at, pt_len, rng);
        out
    }

    /// Encrypt and protect `out` in place: everything before `iv_at` is
    /// authenticated (AEAD: associated data), the IV is drawn, the
    /// `pt_len` bytes after it (inner payloads, padding, pad length) are
    /// encrypted, and the ICV fills the rest.
    fn seal_in_place(&self, out: &mut [u8], iv_at: usize, pt_len: usize, rng: &mut dyn Random) {
        let iv_len = self.iv_len();
        let pt_at = iv_at + iv_len;
        let icv_at = pt_at + pt_len;
        rng.fill(&mut out[iv_at..pt_at]);
        match &self.mode {
            Mode::Aead(aead) => {
                let (aad, rest) = out.split_at_mut(iv_at);
                let (iv, rest) = rest.split_at_mut(iv_len);
                let (data, tag) = rest.split_at_mut(pt_len);
                let mut iv8 = [0u8; SHORT_IV_LEN];
                iv8.copy_from_slice(iv);
                aead.seal(&iv8, aad, data, tag);
            }
            Mode::CipherInteg { cipher, integ } => {
                let (head, data) = out[..icv_at].split_at_mut(pt_at);
                cipher.encrypt(&head[iv_at..], data);
                let (signed, icv) = out.split_at_mut(icv_at);
                integ.sign(&[signed], icv);
            }
        }
    }

    /// Verify and decrypt a received message whose last payload is SK;
    /// returns the inner payloads parsed (`parse_payloads(first,
    /// plaintext)`) appended after the unencrypted ones. The header is
    /// returned as received (Next Payload names the first unencrypted
    /// payload, or SK).
    pub fn open(&self, raw: &[u8]) -> Result<Message, SkError> {
        let mut msg = Message::parse(raw).map_err(SkError::Malformed)?;
        let (first, body) = match msg.payloads.pop() {
            Some(Payload::Encrypted { first, body }) => (first, Zeroizing::new(body)),
            _ => return Err(SkError::NoSk),
        };
        // Message::parse checked that the SK payload ends the message.
        let iv_at = raw.len() - body.len();
        let inner = self.open_in_place(raw, iv_at, PayloadType::SK)?;
        let inner = parse_payloads(first, &inner).map_err(SkError::Inner)?;
        msg.payloads.extend(inner);
        Ok(msg)
    }

    /// Verify and decrypt `raw` whose IV starts at `iv_at` and whose ICV
    /// ends it (everything before `iv_at` authenticated): the inner bytes,
    /// padding and pad length taken off. `ty` names the payload in errors.
    fn open_in_place(
        &self,
        raw: &[u8],
        iv_at: usize,
        ty: PayloadType,
    ) -> Result<Zeroizing<Vec<u8>>, SkError> {
        let mut body = Zeroizing::new(raw[iv_at..].to_vec());
        let iv_len = self.iv_len();
        let icv_len = self.icv_len();
        let block = self.block_len();
        let too_short = IkeError::Malformed(ty, "shorter than IV, pad length and ICV");
        let ct_len = body
            .len()
            .checked_sub(iv_len + icv_len)
            .filter(|&n| n >= 1)
            .ok_or(SkError::Malformed(too_short))?;
        if ct_len % block != 0 {
            return Err(SkError::Malformed(IkeError::Malformed(
                ty,
                "ciphertext is not whole cipher blocks",
            )));
        }
        let (iv, rest) = body.split_at_mut(iv_len);
        let (data, icv) = rest.split_at_mut(ct_len);
        match &self.mode {
            Mode::Aead(aead) => {
                let aad = &raw[..iv_at];
                let mut iv8 = [0u8; SHORT_IV_LEN];
                iv8.copy_from_slice(iv);
                aead.open(&iv8, aad, data, icv)
                    .map_err(|_| SkError::Integrity)?;
            }
            Mode::CipherInteg { cipher, integ } => {
                if !integ.verify(&[&raw[..raw.len() - icv_len]], icv) {
                    return Err(SkError::Integrity);
                }
                cipher
                    .decrypt(iv, data)
                    .map_err(|_| SkError::Malformed(too_short))?;
            }
        }
        let pad_len = usize::from(data[ct_len - 1]);
        if pad_len + 1 > ct_len {
            return Err(SkError::BadPadding);
        }
        let inner_len = ct_len - 1 - pad_len;
        Ok(Zeroizing::new(data[..inner_len].to_vec()))
    }
}

mod fragment;
pub use fragment::{fragment_number, Fragment, SKF_HEADER_LEN};

#[cfg(test)]
mod tests;
