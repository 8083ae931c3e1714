//! [`EspTransform`]: the single shape in which ESP sees its crypto, and the
//! three wrappers that give every ESP algorithm that shape:
//!
//! - [`AeadEsp`]: AES-GCM (RFC 4106), AES-CCM (RFC 4309), ChaCha20-Poly1305
//!   (RFC 7634). Explicit IV = the 64-bit sequence number (RFC 4106 §3.1
//!   recommends a counter); AAD = SPI ‖ [ESN high] ‖ sequence (RFC 4106 §5).
//! - [`GmacEsp`]: ENCR_NULL_AUTH_AES_GMAC (RFC 4543 §3): nothing encrypted,
//!   everything from the SPI to the padding authenticated.
//! - [`CipherIntegEsp`]: encrypt-then-MAC for CBC/CTR/NULL ciphers with an
//!   HMAC/XCBC/CMAC integrity transform (RFC 4303 §3.3.2); with ESN the high
//!   32 bits are appended for the ICV only (RFC 4303 §2.2.1).

use std::cell::RefCell;

use flowsec_wire::iana::{EncrId, IntegId};

use crate::traits::{Aead, Cipher, Integrity};
use crate::{CryptoError, Provider};

/// Length of the ESP header (SPI + sequence number), RFC 4303 §2.
pub const ESP_HEADER_LEN: usize = 8;

/// Seals and opens one ESP packet in place.
///
/// The `packet` slice given to [`seal`](Self::seal) and [`open`](Self::open)
/// is the whole ESP packet:
///
/// ```text
/// [0, 8)                  SPI, sequence number (low 32 bits) — written by the caller
/// [8, 8+iv_len)           explicit IV — written by seal, read by open
/// [8+iv_len, len-icv_len) payload + padding + pad length + next header
/// [len-icv_len, len)      ICV — written by seal, checked by open
/// ```
///
/// `seal` encrypts and authenticates; `open` verifies the ICV and leaves
/// the plaintext in place on success. No unverified plaintext is ever
/// released: encrypt-then-MAC suites check the ICV before decrypting
/// (RFC 4303 §3.4.4.1), and AEAD backends that decrypt and verify in one
/// pass (aws-lc's AES-GCM, CCM) wipe the buffer when verification fails.
/// Neither allocates, except that AES-GMAC with ESN grows a per-thread
/// scratch buffer to the largest packet once (its AAD is not contiguous).
pub trait EspTransform: Send + Sync {
    /// Bytes of explicit IV after the ESP header.
    fn iv_len(&self) -> usize;
    /// Payload + padding + 2 trailer bytes must be a multiple of this
    /// (the cipher block size, at least 4: RFC 4303 §2.4).
    fn block_len(&self) -> usize;
    /// Bytes of ICV at the end of the packet.
    fn icv_len(&self) -> usize;
    /// Whether the payload is encrypted (false for NULL and AES-GMAC).
    fn encrypts(&self) -> bool;
    /// Seal `packet` for sequence number `seq` (full 64 bits; the high half
    /// only matters when `esn`).
    fn seal(&self, seq: u64, esn: bool, packet: &mut [u8]) -> Result<(), CryptoError>;
    /// Verify and decrypt `packet` received with (reconstructed) sequence
    /// number `seq`.
    fn open(&self, seq: u64, esn: bool, packet: &mut [u8]) -> Result<(), CryptoError>;
}

/// For AEAD-like ESP ids that are built on another AEAD, the id of that AEAD.
pub(crate) fn aead_backing(encr: EncrId) -> Option<EncrId> {
    (encr == EncrId::NULL_AUTH_AES_GMAC).then_some(EncrId::AES_GCM_16)
}

/// Whether `encr` is a combined-mode algorithm (no separate integrity).
pub fn is_aead(encr: EncrId) -> bool {
    matches!(
        encr,
        EncrId::AES_GCM_8
            | EncrId::AES_GCM_12
            | EncrId::AES_GCM_16
            | EncrId::AES_CCM_8
            | EncrId::AES_CCM_12
            | EncrId::AES_CCM_16
            | EncrId::CHACHA20_POLY1305
            | EncrId::NULL_AUTH_AES_GMAC
    )
}

/// Whether `encr`'s IV is (derived from) the sequence number, so that a
/// repeated sequence number under one key repeats the nonce: the AEADs
/// (RFC 4106 §8.1, RFC 4309 §3.1, RFC 7634 §4, RFC 4543 §3) and AES-CTR
/// (RFC 3686 §2.1).
pub fn nonce_is_counter(encr: EncrId) -> bool {
    is_aead(encr) || encr == EncrId::AES_CTR
}

pub(crate) fn build(
    provider: &Provider,
    encr: EncrId,
    encr_key: &[u8],
    integ: IntegId,
    integ_key: &[u8],
) -> Result<Box<dyn EspTransform>, CryptoError> {
    if is_aead(encr) {
        if integ != IntegId::NONE {
            return Err(CryptoError::BadCombination);
        }
        if let Some(backing) = aead_backing(encr) {
            return Ok(Box::new(GmacEsp {
                aead: provider.aead(backing, encr_key)?,
            }));
        }
        return Ok(Box::new(AeadEsp {
            aead: provider.aead(encr, encr_key)?,
        }));
    }
    // RFC 4303 §3.2: at least one of confidentiality and integrity.
    if encr == EncrId::NULL && integ == IntegId::NONE {
        return Err(CryptoError::BadCombination);
    }
    let cipher = provider.cipher(encr, encr_key)?;
    let integ = match integ {
        IntegId::NONE => None,
        id => Some(provider.integrity(id, integ_key)?),
    };
    Ok(Box::new(CipherIntegEsp {
        cipher,
        integ,
        encrypts: encr != EncrId::NULL,
    }))
}

/// The 8- or 12-byte AAD of RFC 4106 §5 / RFC 4309 §5 / RFC 7634 §2.1.
fn esp_aad(header: &[u8], seq: u64, esn: bool, out: &mut [u8; 12]) -> usize {
    out[..4].copy_from_slice(&header[..4]);
    if esn {
        out[4..8].copy_from_slice(&((seq >> 32) as u32).to_be_bytes());
        out[8..12].copy_from_slice(&header[4..8]);
        12
    } else {
        out[4..8].copy_from_slice(&header[4..8]);
        8
    }
}

/// An ESP packet cut into (header, iv, payload, icv).
type Split<'a> = (&'a mut [u8], &'a mut [u8], &'a mut [u8], &'a mut [u8]);

/// Splits `packet` into (header, iv, payload, icv), or `BadLength`.
fn split(packet: &mut [u8], iv_len: usize, icv_len: usize) -> Result<Split<'_>, CryptoError> {
    if packet.len() < ESP_HEADER_LEN + iv_len + icv_len {
        return Err(CryptoError::BadLength);
    }
    let (header, rest) = packet.split_at_mut(ESP_HEADER_LEN);
    let (iv, rest) = rest.split_at_mut(iv_len);
    let payload_len = rest.len() - icv_len;
    let (payload, icv) = rest.split_at_mut(payload_len);
    Ok((header, iv, payload, icv))
}

/// AES-GCM, AES-CCM and ChaCha20-Poly1305 as ESP uses them.
pub struct AeadEsp {
    aead: Box<dyn Aead>,
}

impl EspTransform for AeadEsp {
    fn iv_len(&self) -> usize {
        8
    }
    fn block_len(&self) -> usize {
        4
    }
    fn icv_len(&self) -> usize {
        self.aead.tag_len()
    }
    fn encrypts(&self) -> bool {
        true
    }

    fn seal(&self, seq: u64, esn: bool, packet: &mut [u8]) -> Result<(), CryptoError> {
        let (header, iv, payload, icv) = split(packet, 8, self.aead.tag_len())?;
        let iv_bytes = seq.to_be_bytes();
        iv.copy_from_slice(&iv_bytes);
        let mut aad = [0u8; 12];
        let aad_len = esp_aad(header, seq, esn, &mut aad);
        self.aead.seal(&iv_bytes, &aad[..aad_len], payload, icv);
        Ok(())
    }

    fn open(&self, seq: u64, esn: bool, packet: &mut [u8]) -> Result<(), CryptoError> {
        let (header, iv, payload, icv) = split(packet, 8, self.aead.tag_len())?;
        let mut iv_bytes = [0u8; 8];
        iv_bytes.copy_from_slice(iv);
        let mut aad = [0u8; 12];
        let aad_len = esp_aad(header, seq, esn, &mut aad);
        self.aead.open(&iv_bytes, &aad[..aad_len], payload, icv)
    }
}

/// ENCR_NULL_AUTH_AES_GMAC (RFC 4543): AES-GCM with an empty plaintext and
/// everything as AAD.
pub struct GmacEsp {
    aead: Box<dyn Aead>,
}

thread_local! {
    /// Scratch for the one case where the AAD is not contiguous in the packet
    /// (GMAC with ESN: the high sequence bits sit between SPI and sequence,
    /// RFC 4543 §3.3). Grows to the largest packet once per thread.
    static GMAC_ESN_SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl GmacEsp {
    fn with_aad<R>(
        packet: &[u8],
        icv_len: usize,
        seq: u64,
        esn: bool,
        f: impl FnOnce(&[u8]) -> R,
    ) -> R {
        let authed = &packet[..packet.len() - icv_len];
        if !esn {
            return f(authed);
        }
        GMAC_ESN_SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            scratch.clear();
            scratch.extend_from_slice(&authed[..4]);
            scratch.extend_from_slice(&((seq >> 32) as u32).to_be_bytes());
            scratch.extend_from_slice(&authed[4..]);
            f(&scratch)
        })
    }
}

impl EspTransform for GmacEsp {
    fn iv_len(&self) -> usize {
        8
    }
    fn block_len(&self) -> usize {
        4
    }
    fn icv_len(&self) -> usize {
        self.aead.tag_len()
    }
    fn encrypts(&self) -> bool {
        false
    }

    fn seal(&self, seq: u64, esn: bool, packet: &mut [u8]) -> Result<(), CryptoError> {
        let icv_len = self.aead.tag_len();
        let iv_bytes = seq.to_be_bytes();
        {
            let (_, iv, _, _) = split(packet, 8, icv_len)?;
            iv.copy_from_slice(&iv_bytes);
        }
        let mut tag = [0u8; 16];
        Self::with_aad(packet, icv_len, seq, esn, |aad| {
            self.aead.seal(&iv_bytes, aad, &mut [], &mut tag[..icv_len])
        });
        let len = packet.len();
        packet[len - icv_len..].copy_from_slice(&tag[..icv_len]);
        Ok(())
    }

    fn open(&self, seq: u64, esn: bool, packet: &mut [u8]) -> Result<(), CryptoError> {
        let icv_len = self.aead.tag_len();
        let (_, iv, _, _) = split(packet, 8, icv_len)?;
        let mut iv_bytes = [0u8; 8];
        iv_bytes.copy_from_slice(iv);
        let icv_at = packet.len() - icv_len;
        let icv = &packet[icv_at..];
        Self::with_aad(packet, icv_len, seq, esn, |aad| {
            self.aead.open(&iv_bytes, aad, &mut [], icv)
        })
    }
}

/// A non-AEAD cipher (possibly NULL) with an optional integrity transform,
/// encrypt-then-MAC (RFC 4303 §3.3.2).
pub struct CipherIntegEsp {
    cipher: Box<dyn Cipher>,
    integ: Option<Box<dyn Integrity>>,
    encrypts: bool,
}

impl CipherIntegEsp {
    fn icv_parts<'a>(authed: &'a [u8], hi: &'a [u8; 4], esn: bool) -> ([&'a [u8]; 2], usize) {
        if esn {
            ([authed, hi], 2)
        } else {
            ([authed, &[]], 1)
        }
    }
}

impl EspTransform for CipherIntegEsp {
    fn iv_len(&self) -> usize {
        self.cipher.iv_len()
    }
    fn block_len(&self) -> usize {
        self.cipher.block_len().max(4)
    }
    fn icv_len(&self) -> usize {
        self.integ.as_ref().map_or(0, |i| i.icv_len())
    }
    fn encrypts(&self) -> bool {
        self.encrypts
    }

    fn seal(&self, seq: u64, esn: bool, packet: &mut [u8]) -> Result<(), CryptoError> {
        let icv_len = self.icv_len();
        let (_, iv, payload, _) = split(packet, self.cipher.iv_len(), icv_len)?;
        if payload.len() % self.cipher.block_len() != 0 {
            return Err(CryptoError::BadLength);
        }
        self.cipher.make_iv(seq, iv);
        self.cipher.encrypt(iv, payload);
        if let Some(integ) = &self.integ {
            let hi = ((seq >> 32) as u32).to_be_bytes();
            let at = packet.len() - icv_len;
            let (authed, icv) = packet.split_at_mut(at);
            let (parts, n) = Self::icv_parts(authed, &hi, esn);
            integ.sign(&parts[..n], icv);
        }
        Ok(())
    }

    fn open(&self, seq: u64, esn: bool, packet: &mut [u8]) -> Result<(), CryptoError> {
        let icv_len = self.icv_len();
        split(packet, self.cipher.iv_len(), icv_len)?;
        if let Some(integ) = &self.integ {
            let hi = ((seq >> 32) as u32).to_be_bytes();
            let (authed, icv) = packet.split_at(packet.len() - icv_len);
            let (parts, n) = Self::icv_parts(authed, &hi, esn);
            if !integ.verify(&parts[..n], icv) {
                return Err(CryptoError::AuthFailed);
            }
        }
        let (_, iv, payload, _) = split(packet, self.cipher.iv_len(), icv_len)?;
        self.cipher.decrypt(iv, payload)
    }
}
