//! ESP packet (RFC 4303 §2): the cleartext header, and the trailer that
//! sits inside the ciphertext.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+ ----
//! |               Security Parameters Index (SPI)                 | ^Int.
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+ |Cov-
//! |                      Sequence Number                          | |ered
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+ | ----
//! |                    Payload Data* (variable)                   | |   ^
//! ~                                                               ~ |   |
//! |                                                               | |Conf.
//! +               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+ |Cov-
//! |               |     Padding (0-255 bytes)                     | |ered*
//! +-+-+-+-+-+-+-+-+               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+ |   |
//! |                               |  Pad Length   | Next Header   | v   v
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+ ------
//! |         Integrity Check Value-ICV   (variable)                |
//! ~                                                               ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! [`EspPacket`] views SPI, Sequence Number and what follows (IV,
//! ciphertext and ICV together: their split depends on the SA's
//! algorithms). [`EspTrailer`] reads and writes Padding, Pad Length and
//! Next Header at the end of the decrypted plaintext.

use crate::iana::IpProtocol;
use crate::{Error, Result};

mod field {
    use crate::{Field, Rest};
    pub const SPI: Field = 0..4;
    pub const SEQ: Field = 4..8;
    pub const PAYLOAD: Rest = 8..;
}

/// Length of the ESP header (SPI and Sequence Number).
pub const HEADER_LEN: usize = field::SEQ.end;

/// Length of Pad Length and Next Header.
pub const TRAILER_LEN: usize = 2;

/// A read/write view of an ESP packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EspPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EspPacket<T> {
    /// Wraps a buffer without checking it; see the crate's panic contract.
    pub const fn new_unchecked(buffer: T) -> EspPacket<T> {
        EspPacket { buffer }
    }

    /// Wraps a buffer and checks it with [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<EspPacket<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// [`Error::Truncated`] if the buffer is shorter than 8 bytes.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Security Parameters Index.
    pub fn spi(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::SPI];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// Sequence Number (the low 32 bits when ESN is in use).
    pub fn seq_number(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::SEQ];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// Everything after the header: IV, ciphertext, ICV.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EspPacket<T> {
    /// Sets the SPI.
    pub fn set_spi(&mut self, value: u32) {
        self.buffer.as_mut()[field::SPI].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets the Sequence Number.
    pub fn set_seq_number(&mut self, value: u32) {
        self.buffer.as_mut()[field::SEQ].copy_from_slice(&value.to_be_bytes());
    }

    /// Everything after the header, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for EspPacket<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// An ESP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EspRepr {
    /// Security Parameters Index.
    pub spi: u32,
    /// Sequence Number (low 32 bits).
    pub seq_number: u32,
}

impl EspRepr {
    /// Parses a view. An SPI of 0 is [`Error::Malformed`]: it is reserved
    /// for local use and never sent (RFC 4303 §2.1).
    pub fn parse<T: AsRef<[u8]>>(packet: &EspPacket<T>) -> Result<EspRepr> {
        packet.check_len()?;
        if packet.spi() == 0 {
            return Err(Error::Malformed);
        }
        Ok(EspRepr {
            spi: packet.spi(),
            seq_number: packet.seq_number(),
        })
    }

    /// Length of the header `emit` writes: always 8.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes SPI and Sequence Number.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut EspPacket<T>) {
        packet.set_spi(self.spi);
        packet.set_seq_number(self.seq_number);
    }
}

/// The end of ESP's plaintext: Pad Length and Next Header, after the
/// padding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EspTrailer {
    /// Pad Length: bytes of padding before it.
    pub pad_len: u8,
    /// Next Header: the protocol of the payload data (IPV4/IPV6 in tunnel
    /// mode, IPV6_NONXT for a TFC dummy packet, RFC 4303 §2.6).
    pub next_header: IpProtocol,
}

impl EspTrailer {
    /// Reads the trailer at the end of decrypted plaintext (payload data,
    /// padding, Pad Length, Next Header) and returns the payload data's
    /// length with it.
    ///
    /// The padding must be the default 1, 2, 3, … (RFC 4303 §2.4: the
    /// receiver checks it); otherwise [`Error::Malformed`].
    /// [`Error::Truncated`] if there are fewer than 2 bytes,
    /// [`Error::BadLength`] if Pad Length claims more than is there.
    pub fn parse(plaintext_with_trailer: &[u8]) -> Result<(usize, EspTrailer)> {
        let n = plaintext_with_trailer.len();
        if n < TRAILER_LEN {
            return Err(Error::Truncated);
        }
        let pad_len = plaintext_with_trailer[n - 2];
        let next_header = IpProtocol(plaintext_with_trailer[n - 1]);
        let Some(payload_len) = n.checked_sub(TRAILER_LEN + usize::from(pad_len)) else {
            return Err(Error::BadLength);
        };
        let padding = &plaintext_with_trailer[payload_len..n - TRAILER_LEN];
        if !padding.iter().zip(1u8..=255).all(|(&b, want)| b == want) {
            return Err(Error::Malformed);
        }
        Ok((
            payload_len,
            EspTrailer {
                pad_len,
                next_header,
            },
        ))
    }

    /// Length of what [`emit`](Self::emit) writes: `pad_len + 2`.
    pub const fn buffer_len(&self) -> usize {
        self.pad_len as usize + TRAILER_LEN
    }

    /// Writes the default padding 1, 2, …, `pad_len` into
    /// `buf[..pad_len]`.
    ///
    /// # Panics
    /// If `buf` is shorter than `pad_len`.
    pub fn emit_padding(buf: &mut [u8], pad_len: u8) {
        for (b, v) in buf[..usize::from(pad_len)].iter_mut().zip(1u8..=255) {
            *b = v;
        }
    }

    /// Writes padding, Pad Length and Next Header into
    /// `buf[..buffer_len()]`; `buf` starts right after the payload data.
    ///
    /// # Panics
    /// If `buf` is shorter than [`buffer_len`](Self::buffer_len).
    pub fn emit(&self, buf: &mut [u8]) {
        let pad = usize::from(self.pad_len);
        Self::emit_padding(buf, self.pad_len);
        buf[pad] = self.pad_len;
        buf[pad + 1] = self.next_header.0;
    }
}

/// How many padding bytes to add after `payload_len` bytes of payload data
/// (RFC 4303 §2.4): payload + padding + 2 must be a multiple of the
/// cipher's block length (`block_len`; 0 or 1 for stream ciphers and most
/// AEADs) and of 4.
///
/// # Panics
/// If the alignment (the least common multiple of `block_len` and 4) is
/// over 256, since Pad Length could not always hold the result.
pub fn pad_len(payload_len: usize, block_len: usize) -> usize {
    let block = block_len.max(1);
    if block.is_power_of_two() {
        // Every cipher ESP uses: no division on the per-packet path.
        let mask = block.max(4) - 1;
        assert!(mask < 256, "ESP block length {block_len} too large");
        return (mask + 1 - ((payload_len + TRAILER_LEN) & mask)) & mask;
    }
    let align = block / gcd(block, 4) * 4;
    assert!(align <= 256, "ESP block length {block_len} too large");
    (align - (payload_len + TRAILER_LEN) % align) % align
}

fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    // scapy: SecurityAssociation(ESP, spi=0x1234, crypt_algo='NULL',
    //   auth_algo='NULL').encrypt(IP(src="192.0.2.1", dst="192.0.2.2")
    //   /UDP(sport=1, dport=2)/b"ping!")
    // IPv4 header 0..20, ESP header 20..28, UDP 28..41, padding [1],
    // Pad Length 1, Next Header 17.
    pub(crate) const IPV4_ESP_NULL: [u8; 44] = [
        0x45, 0x00, 0x00, 0x2c, 0x00, 0x01, 0x00, 0x00, 0x40, 0x32, 0xf6, 0x9b, 0xc0, 0x00, 0x02,
        0x01, 0xc0, 0x00, 0x02, 0x02, 0x00, 0x00, 0x12, 0x34, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01,
        0x00, 0x02, 0x00, 0x0d, 0x7b, 0xfc, 0x70, 0x69, 0x6e, 0x67, 0x21, 0x01, 0x01, 0x11,
    ];

    #[test]
    fn test_parse() {
        let p = EspPacket::new_checked(&IPV4_ESP_NULL[20..]).unwrap();
        assert_eq!(p.spi(), 0x1234);
        assert_eq!(p.seq_number(), 1);
        assert_eq!(p.payload(), &IPV4_ESP_NULL[28..]);
        assert_eq!(
            EspRepr::parse(&p).unwrap(),
            EspRepr {
                spi: 0x1234,
                seq_number: 1
            }
        );
        // NULL encryption: the payload is the plaintext with its trailer.
        let (len, trailer) = EspTrailer::parse(p.payload()).unwrap();
        assert_eq!(len, 13);
        assert_eq!(
            trailer,
            EspTrailer {
                pad_len: 1,
                next_header: IpProtocol::UDP
            }
        );
    }

    #[test]
    fn test_emit() {
        let mut buf = IPV4_ESP_NULL;
        buf[20..].fill(0);
        buf[28..41].copy_from_slice(&IPV4_ESP_NULL[28..41]);
        let repr = EspRepr {
            spi: 0x1234,
            seq_number: 1,
        };
        repr.emit(&mut EspPacket::new_unchecked(&mut buf[20..]));
        let pad = pad_len(13, 4) as u8;
        let trailer = EspTrailer {
            pad_len: pad,
            next_header: IpProtocol::UDP,
        };
        assert_eq!(trailer.buffer_len(), 3);
        trailer.emit(&mut buf[41..]);
        assert_eq!(buf, IPV4_ESP_NULL);
        assert_eq!(repr.buffer_len(), 8);
    }

    #[test]
    fn pad_len_matches_the_definition() {
        for block in 1..=32usize {
            let align = (1..).map(|k| k * 4).find(|a| a % block == 0).unwrap();
            for len in 0..200 {
                let p = pad_len(len, block);
                assert!(p < align, "block {block} len {len}");
                assert_eq!(
                    (len + p + TRAILER_LEN) % align,
                    0,
                    "block {block} len {len}"
                );
            }
        }
    }

    #[test]
    fn test_pad_len() {
        assert_eq!(pad_len(13, 4), 1);
        assert_eq!(pad_len(13, 1), 1);
        assert_eq!(pad_len(13, 0), 1);
        assert_eq!(pad_len(14, 1), 0);
        assert_eq!(pad_len(14, 16), 0);
        assert_eq!(pad_len(15, 16), 15);
        assert_eq!(pad_len(0, 16), 14);
        assert_eq!(pad_len(0, 8), 6);
        assert_eq!(pad_len(100, 8), 2);
        // A 3-byte block must still end on a 4-byte boundary: lcm = 12.
        assert_eq!(pad_len(0, 3), 10);
        for n in 0..100 {
            for b in [1, 4, 8, 16] {
                let total = n + pad_len(n, b) + 2;
                assert_eq!(total % b.max(4), 0);
            }
        }
    }

    #[test]
    fn test_bad_padding() {
        // Padding 1, 2, 4: wrong third byte.
        let bad = [0xaa, 0xbb, 1, 2, 4, 3, 4];
        assert_eq!(EspTrailer::parse(&bad), Err(Error::Malformed));
        let good = [0xaa, 0xbb, 1, 2, 3, 3, 4];
        assert_eq!(EspTrailer::parse(&good).unwrap().0, 2);
        // Pad Length 0: no padding to check.
        assert_eq!(EspTrailer::parse(&[9, 0, 59]).unwrap().0, 1);
        assert_eq!(EspTrailer::parse(&[0, 59]).unwrap().0, 0);
        // Pad Length larger than what is there.
        assert_eq!(EspTrailer::parse(&[1, 2, 3, 4]), Err(Error::BadLength));
        assert_eq!(EspTrailer::parse(&[0]), Err(Error::Truncated));
        assert_eq!(EspTrailer::parse(&[]), Err(Error::Truncated));
        // 255 bytes of padding are fine.
        let mut big = vec![0u8; 255 + 2];
        EspTrailer::emit_padding(&mut big, 255);
        big[255] = 255;
        big[256] = 4;
        assert_eq!(EspTrailer::parse(&big).unwrap().0, 0);
    }

    #[test]
    fn test_check_len() {
        for n in 0..HEADER_LEN {
            assert_eq!(
                EspPacket::new_checked(&IPV4_ESP_NULL[20..20 + n]).err(),
                Some(Error::Truncated)
            );
        }
        let p = EspPacket::new_checked(&IPV4_ESP_NULL[20..28]).unwrap();
        assert!(p.payload().is_empty());
        let mut zero = [0u8; 8];
        zero[7] = 1;
        let p = EspPacket::new_checked(&zero[..]).unwrap();
        assert_eq!(EspRepr::parse(&p), Err(Error::Malformed));
    }
}
