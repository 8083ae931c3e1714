//! The IKE header (RFC 7296 §3.1).
//!
//! ```text
//!                      1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                       IKE SA Initiator's SPI                  |
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                       IKE SA Responder's SPI                  |
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Next Payload | MjVer | MnVer | Exchange Type |     Flags     |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                          Message ID                           |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                            Length                             |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! Flags:  +-+-+-+-+-+-+-+-+
//!         |X|X|R|V|I|X|X|X|   R = Response, V = Version, I = Initiator
//!         +-+-+-+-+-+-+-+-+
//! ```

use super::{be32, ExchangeType, IkeError, PayloadType};

mod field {
    use crate::Field;
    pub const SPI_I: Field = 0..8;
    pub const SPI_R: Field = 8..16;
    pub const NEXT_PAYLOAD: usize = 16;
    pub const VERSION: usize = 17;
    pub const EXCHANGE: usize = 18;
    pub const FLAGS: usize = 19;
    pub const MESSAGE_ID: usize = 20;
    pub const LENGTH: usize = 24;
}

/// Length of the IKE header.
pub const HEADER_LEN: usize = 28;

/// The Initiator flag (§3.1): set by the original initiator of the IKE SA.
/// (The Version flag, 0x10, "could speak a higher major version", is never
/// set by us and ignored on receipt.)
const FLAG_I: u8 = 0x08;
/// The Response flag (§3.1).
const FLAG_R: u8 = 0x20;

/// An IKE header (RFC 7296 §3.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// IKE SA Initiator's SPI.
    pub spi_i: u64,
    /// IKE SA Responder's SPI (0 in the first IKE_SA_INIT request).
    pub spi_r: u64,
    /// Type of the first payload.
    pub next_payload: PayloadType,
    /// Major version: 2 for IKEv2 (and when we emit).
    pub major_version: u8,
    /// Minor version: 0 when we emit; ignored on receipt (§2.5).
    pub minor_version: u8,
    /// Exchange type.
    pub exchange: ExchangeType,
    /// Initiator flag (0x08): the sender is the IKE SA's original initiator.
    pub initiator: bool,
    /// Response flag (0x20): this message answers a request with the same
    /// Message ID.
    pub response: bool,
    /// Message ID (§2.2).
    pub message_id: u32,
    /// Length of the whole message, header included.
    pub length: u32,
}

impl Header {
    /// Reads the header at the start of `b`.
    ///
    /// Checks only that `b` holds 28 bytes ([`IkeError::Truncated`]), that
    /// Length is at least 28 ([`IkeError::BadLength`]) and at most
    /// `b.len()` ([`IkeError::Truncated`]). A major version other than 2 is
    /// *not* an error here: the core answers INVALID_MAJOR_VERSION (§1.5),
    /// and needs the header for that. The V flag and the X bits are
    /// ignored (§3.1).
    pub fn parse(b: &[u8]) -> Result<Header, IkeError> {
        if b.len() < HEADER_LEN {
            return Err(IkeError::Truncated);
        }
        let length = be32(b, field::LENGTH);
        if (length as usize) < HEADER_LEN {
            return Err(IkeError::BadLength);
        }
        if length as usize > b.len() {
            return Err(IkeError::Truncated);
        }
        let mut spi_i = [0; 8];
        spi_i.copy_from_slice(&b[field::SPI_I]);
        let mut spi_r = [0; 8];
        spi_r.copy_from_slice(&b[field::SPI_R]);
        let version = b[field::VERSION];
        let flags = b[field::FLAGS];
        Ok(Header {
            spi_i: u64::from_be_bytes(spi_i),
            spi_r: u64::from_be_bytes(spi_r),
            next_payload: PayloadType(b[field::NEXT_PAYLOAD]),
            major_version: version >> 4,
            minor_version: version & 0x0f,
            exchange: ExchangeType(b[field::EXCHANGE]),
            initiator: flags & FLAG_I != 0,
            response: flags & FLAG_R != 0,
            message_id: be32(b, field::MESSAGE_ID),
            length,
        })
    }

    /// Writes the header into `b[..28]` as it is (Length and Next Payload
    /// included: [`Message::emit`](super::Message::emit) fills those). The
    /// versions are cut to their 4 bits; the V flag and X bits are zero.
    ///
    /// # Panics
    /// If `b` is shorter than [`HEADER_LEN`].
    pub fn emit(&self, b: &mut [u8]) {
        b[field::SPI_I].copy_from_slice(&self.spi_i.to_be_bytes());
        b[field::SPI_R].copy_from_slice(&self.spi_r.to_be_bytes());
        b[field::NEXT_PAYLOAD] = self.next_payload.0;
        b[field::VERSION] = (self.major_version << 4) | (self.minor_version & 0x0f);
        b[field::EXCHANGE] = self.exchange.0;
        let mut flags = 0;
        if self.initiator {
            flags |= FLAG_I;
        }
        if self.response {
            flags |= FLAG_R;
        }
        b[field::FLAGS] = flags;
        b[field::MESSAGE_ID..field::MESSAGE_ID + 4].copy_from_slice(&self.message_id.to_be_bytes());
        b[field::LENGTH..HEADER_LEN].copy_from_slice(&self.length.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::udp_encap::tests::IKE_ON_4500;

    fn repr() -> Header {
        Header {
            spi_i: 0x0102_0304_0506_0708,
            spi_r: 0,
            next_payload: PayloadType::SA,
            major_version: 2,
            minor_version: 0,
            exchange: ExchangeType::IKE_SA_INIT,
            initiator: true,
            response: false,
            message_id: 0,
            length: 28,
        }
    }

    #[test]
    fn test_parse() {
        assert_eq!(Header::parse(&IKE_ON_4500[4..]).unwrap(), repr());
        // Trailing bytes beyond Length are the caller's business here.
        let mut long = IKE_ON_4500[4..].to_vec();
        long.extend_from_slice(&[0xaa; 5]);
        assert_eq!(Header::parse(&long).unwrap(), repr());
    }

    #[test]
    fn test_emit() {
        let mut b = [0xffu8; HEADER_LEN];
        repr().emit(&mut b);
        assert_eq!(b[..], IKE_ON_4500[4..]);
        let h = Header {
            spi_r: 0x1122_3344_5566_7788,
            exchange: ExchangeType::INFORMATIONAL,
            initiator: false,
            response: true,
            message_id: 0xdead_beef,
            length: 0x1_0000,
            ..repr()
        };
        h.emit(&mut b);
        assert_eq!(b[19], FLAG_R);
        assert_eq!(
            Header::parse(&[&b[..], &[0u8; 0x1_0000 - 28][..]].concat()).unwrap(),
            h
        );
    }

    #[test]
    fn test_flags_and_version() {
        let mut b = IKE_ON_4500[4..].to_vec();
        // V flag and X bits ignored; a future major version still reads.
        b[field::FLAGS] = 0xff;
        b[field::VERSION] = 0x31;
        let h = Header::parse(&b).unwrap();
        assert!(h.initiator && h.response);
        assert_eq!((h.major_version, h.minor_version), (3, 1));
        let mut out = [0u8; HEADER_LEN];
        h.emit(&mut out);
        assert_eq!(out[field::FLAGS], FLAG_I | FLAG_R);
        assert_eq!(out[field::FLAGS] & 0x10, 0); // V
    }

    #[test]
    fn test_check_len() {
        let b = &IKE_ON_4500[4..];
        for n in 0..HEADER_LEN {
            assert_eq!(Header::parse(&b[..n]), Err(IkeError::Truncated));
        }
        let mut v = b.to_vec();
        v[27] = 27;
        assert_eq!(Header::parse(&v), Err(IkeError::BadLength));
        v[27] = 29;
        assert_eq!(Header::parse(&v), Err(IkeError::Truncated));
        v[24] = 0x80;
        assert_eq!(Header::parse(&v), Err(IkeError::Truncated));
        v[24..28].fill(0);
        assert_eq!(Header::parse(&v), Err(IkeError::BadLength));
    }
}
