//! UDP encapsulation of ESP (RFC 3948): telling apart what arrives on UDP
//! port 4500.
//!
//! ```text
//! ESP (§2.1): the UDP payload starts with a non-zero SPI.
//!  0                   1                   2                   3
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                 ESP header (SPI != 0, Seq) ...                |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! IKE (§2.2): four zero bytes, the non-ESP marker, then the IKE header.
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                      Non-ESP Marker (0)                       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                      IKE header ...                           |
//!
//! NAT-keepalive (§2.3): one byte, 0xFF.
//! +-+-+-+-+-+-+-+-+
//! |     0xFF      |
//! +-+-+-+-+-+-+-+-+
//! ```

use crate::{Error, Result};

/// The UDP port for IKE and UDP-encapsulated ESP after NAT detection
/// (RFC 3948 §1, RFC 7296 §2.23).
pub const NAT_T_PORT: u16 = 4500;

/// The UDP port IKE starts on (RFC 7296 §2).
pub const IKE_PORT: u16 = 500;

/// The non-ESP marker that precedes IKE messages on port 4500 (RFC 3948 §2.2).
pub const NON_ESP_MARKER: [u8; 4] = [0; 4];

/// The single byte of a NAT-keepalive packet (RFC 3948 §2.3).
pub const NAT_KEEPALIVE: u8 = 0xff;

/// Smallest ESP packet: SPI and Sequence Number.
const MIN_ESP_LEN: usize = 8;

/// What a UDP payload on port 4500 holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UdpEncap<'a> {
    /// A NAT-keepalive: drop it.
    NatKeepalive,
    /// An IKE message, the non-ESP marker stripped.
    Ike(&'a [u8]),
    /// An ESP packet, starting at its SPI.
    Esp(&'a [u8]),
}

/// Classifies a UDP payload received on port 4500.
///
/// Exactly one byte 0xFF is a keepalive; four leading zero bytes are the
/// non-ESP marker (an ESP SPI is never 0, RFC 4303 §2.1); anything else is
/// ESP. [`Error::Truncated`] for an empty payload, or one of 1 to 7 bytes
/// that is not a keepalive (an ESP header alone takes 8, and so do a marker
/// and the smallest thing after it).
pub fn classify(payload: &[u8]) -> Result<UdpEncap<'_>> {
    if payload == [NAT_KEEPALIVE] {
        return Ok(UdpEncap::NatKeepalive);
    }
    if payload.len() < MIN_ESP_LEN {
        return Err(Error::Truncated);
    }
    match payload.split_at(NON_ESP_MARKER.len()) {
        (marker, ike) if marker == NON_ESP_MARKER => Ok(UdpEncap::Ike(ike)),
        _ => Ok(UdpEncap::Esp(payload)),
    }
}

/// The payload of a NAT-keepalive packet.
pub const fn encode_keepalive() -> [u8; 1] {
    [NAT_KEEPALIVE]
}

/// Writes the non-ESP marker into `buf[..4]`; the IKE message follows.
///
/// # Panics
/// If `buf` is shorter than 4 bytes.
pub fn emit_non_esp_marker(buf: &mut [u8]) {
    buf[..NON_ESP_MARKER.len()].copy_from_slice(&NON_ESP_MARKER);
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::esp::tests::IPV4_ESP_NULL;

    // Non-ESP marker + the first 28 bytes of an IKE_SA_INIT request
    // (IKE header: SPIi 0x0102030405060708, SPIr 0, Next Payload SA (33),
    // version 2.0, exchange 34, flags Initiator, message ID 0, length 28).
    pub(crate) const IKE_ON_4500: [u8; 32] = [
        0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x21, 0x20, 0x22, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x1c,
    ];

    #[test]
    fn test_parse() {
        assert_eq!(classify(&[0xff]), Ok(UdpEncap::NatKeepalive));
        assert_eq!(classify(&IKE_ON_4500), Ok(UdpEncap::Ike(&IKE_ON_4500[4..])));
        let esp = &IPV4_ESP_NULL[20..];
        assert_eq!(classify(esp), Ok(UdpEncap::Esp(esp)));
        // Exactly 8 bytes of ESP header, nothing after: still ESP here.
        assert_eq!(classify(&esp[..8]), Ok(UdpEncap::Esp(&esp[..8])));
        // A marker followed by four bytes: IKE (its own parser rejects it).
        assert_eq!(classify(&[0; 8]), Ok(UdpEncap::Ike(&[0; 4])));
    }

    #[test]
    fn test_emit() {
        assert_eq!(encode_keepalive(), [0xff]);
        let mut buf = [0xaau8; 6];
        emit_non_esp_marker(&mut buf);
        assert_eq!(buf, [0, 0, 0, 0, 0xaa, 0xaa]);
    }

    #[test]
    fn test_check_len() {
        assert_eq!(classify(&[]), Err(Error::Truncated));
        for n in 1..8 {
            assert_eq!(
                classify(&IKE_ON_4500[..n]),
                Err(Error::Truncated),
                "len {n}"
            );
            assert_eq!(classify(&IPV4_ESP_NULL[20..20 + n]), Err(Error::Truncated));
        }
        // 0xFF followed by more bytes is not a keepalive.
        assert_eq!(classify(&[0xff, 0]), Err(Error::Truncated));
        assert_eq!(
            classify(&[0xff, 0, 0, 0, 0, 0, 0, 1]).unwrap(),
            UdpEncap::Esp(&[0xff, 0, 0, 0, 0, 0, 0, 1])
        );
    }
}
