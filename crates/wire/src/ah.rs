//! Authentication Header (RFC 4302 §2).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Next Header   |  Payload Len  |          RESERVED             |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                 Security Parameters Index (SPI)               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                    Sequence Number Field                      |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                                                               |
//! +                Integrity Check Value-ICV (variable)           |
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Payload Len is the header's length in 32-bit words minus 2 (§2.2). The
//! ICV field may end with padding so the header is a multiple of 4 bytes
//! (IPv4) or 8 bytes (IPv6) (§2.6, §3.3.3.2.1).

use crate::iana::IpProtocol;
use crate::{Error, Result};

mod field {
    use crate::Field;
    pub const NXT_HDR: usize = 0;
    pub const PAYLOAD_LEN: usize = 1;
    pub const RESERVED: Field = 2..4;
    pub const SPI: Field = 4..8;
    pub const SEQ: Field = 8..12;
    pub const ICV: usize = 12;
}

/// Length of the AH header without the ICV.
pub const FIXED_LEN: usize = field::ICV;

/// Longest possible AH header: Payload Len 255.
pub const MAX_HEADER_LEN: usize = (255 + 2) * 4;

fn read_u32(b: &[u8], f: crate::Field) -> u32 {
    u32::from_be_bytes([b[f.start], b[f.start + 1], b[f.start + 2], b[f.start + 3]])
}

/// A read/write view of an AH header and what follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AhPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> AhPacket<T> {
    /// Wraps a buffer without checking it; see the crate's panic contract.
    pub const fn new_unchecked(buffer: T) -> AhPacket<T> {
        AhPacket { buffer }
    }

    /// Wraps a buffer and checks it with [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<AhPacket<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// [`Error::Truncated`] if the buffer is shorter than 12 bytes or than
    /// the header length; [`Error::BadLength`] if Payload Len is 0 (the
    /// header would be shorter than its fixed part). The header length is a
    /// multiple of 4 by construction; the IPv6 rule (multiple of 8) is
    /// checked by [`AhRepr::parse`].
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < FIXED_LEN {
            return Err(Error::Truncated);
        }
        let header_len = self.header_len();
        if header_len < FIXED_LEN {
            return Err(Error::BadLength);
        }
        if header_len > len {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Next Header.
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field::NXT_HDR])
    }

    /// The Payload Len field: the header length in 32-bit words minus 2.
    pub fn payload_len(&self) -> u8 {
        self.buffer.as_ref()[field::PAYLOAD_LEN]
    }

    /// Header length in bytes, ICV included: `(payload_len + 2) * 4`.
    pub fn header_len(&self) -> usize {
        (usize::from(self.payload_len()) + 2) * 4
    }

    /// Length of the ICV field in bytes (with any alignment padding).
    pub fn icv_len(&self) -> usize {
        self.header_len().saturating_sub(FIXED_LEN)
    }

    /// The RESERVED field (zero when sent, ignored when received).
    pub fn reserved(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::RESERVED];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// Security Parameters Index.
    pub fn spi(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::SPI)
    }

    /// Sequence Number (the low 32 bits when ESN is in use).
    pub fn seq_number(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::SEQ)
    }

    /// The ICV field: bytes 12..header_len.
    pub fn icv(&self) -> &[u8] {
        &self.buffer.as_ref()[field::ICV..self.header_len()]
    }

    /// What follows the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> AhPacket<T> {
    /// Sets Next Header.
    pub fn set_next_header(&mut self, value: IpProtocol) {
        self.buffer.as_mut()[field::NXT_HDR] = value.0;
    }

    /// Sets the Payload Len field (32-bit words minus 2).
    pub fn set_payload_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::PAYLOAD_LEN] = value;
    }

    /// Sets RESERVED.
    pub fn set_reserved(&mut self, value: u16) {
        self.buffer.as_mut()[field::RESERVED].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets the SPI.
    pub fn set_spi(&mut self, value: u32) {
        self.buffer.as_mut()[field::SPI].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets the Sequence Number.
    pub fn set_seq_number(&mut self, value: u32) {
        self.buffer.as_mut()[field::SEQ].copy_from_slice(&value.to_be_bytes());
    }

    /// The ICV field, mutable (zero it before computing the ICV, RFC 4302
    /// §3.3.3.1).
    pub fn icv_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        &mut self.buffer.as_mut()[field::ICV..end]
    }

    /// What follows the header, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = self.header_len();
        &mut self.buffer.as_mut()[start..]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for AhPacket<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// An AH header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AhRepr {
    /// Next Header.
    pub next_header: IpProtocol,
    /// Security Parameters Index.
    pub spi: u32,
    /// Sequence Number (low 32 bits).
    pub seq_number: u32,
    /// ICV length in bytes. From `parse`, the ICV field's length, alignment
    /// padding included: compare `AhRepr::header_len(sa_icv_len, ipv6)`
    /// with [`AhPacket::header_len`] to check it against the SA.
    pub icv_len: usize,
}

impl AhRepr {
    /// Header length for an ICV of `icv_len` bytes: 12 + ICV, rounded up
    /// to a multiple of 8 over IPv6 and of 4 over IPv4 (RFC 4302 §2.6).
    pub const fn header_len(icv_len: usize, ipv6: bool) -> usize {
        let align = if ipv6 { 8 } else { 4 };
        (FIXED_LEN + icv_len).div_ceil(align) * align
    }

    /// Parses a view. [`Error::Malformed`] if the SPI is 0 (RFC 4302 §2.4)
    /// or, over IPv6, the header is not a multiple of 8 bytes.
    pub fn parse<T: AsRef<[u8]>>(packet: &AhPacket<T>, ipv6: bool) -> Result<AhRepr> {
        packet.check_len()?;
        if packet.spi() == 0 || (ipv6 && packet.header_len() & 7 != 0) {
            return Err(Error::Malformed);
        }
        Ok(AhRepr {
            next_header: packet.next_header(),
            spi: packet.spi(),
            seq_number: packet.seq_number(),
            icv_len: packet.icv_len(),
        })
    }

    /// Length of the header `emit` writes, ICV and padding included.
    pub const fn buffer_len(&self, ipv6: bool) -> usize {
        Self::header_len(self.icv_len, ipv6)
    }

    /// Writes the header with RESERVED and the whole ICV field (padding
    /// included) zero; the payload is not touched.
    ///
    /// # Panics
    /// If the buffer is shorter than [`buffer_len`](Self::buffer_len) or
    /// the header would exceed 1028 bytes (a programming error).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut AhPacket<T>, ipv6: bool) {
        let len = self.buffer_len(ipv6);
        assert!(
            len <= MAX_HEADER_LEN,
            "AH ICV of {} bytes too long",
            self.icv_len
        );
        packet.set_next_header(self.next_header);
        // len is a multiple of 4 in 12..=1028, so this fits a u8.
        packet.set_payload_len((len / 4 - 2) as u8);
        packet.set_reserved(0);
        packet.set_spi(self.spi);
        packet.set_seq_number(self.seq_number);
        packet.icv_mut().fill(0);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    // scapy: SecurityAssociation(AH, spi=0xabc, auth_algo='HMAC-SHA1-96',
    //   auth_key=b'\x01'*20).encrypt(IP(src="192.0.2.1", dst="192.0.2.2")
    //   /UDP(sport=1, dport=2)/b"ping!")
    // IPv4 0..20, AH 20..44 (ICV 32..44), UDP 44..57.
    pub(crate) const IPV4_AH: [u8; 57] = [
        0x45, 0x00, 0x00, 0x39, 0x00, 0x01, 0x00, 0x00, 0x40, 0x33, 0xf6, 0x8d, 0xc0, 0x00, 0x02,
        0x01, 0xc0, 0x00, 0x02, 0x02, 0x11, 0x04, 0x00, 0x00, 0x00, 0x00, 0x0a, 0xbc, 0x00, 0x00,
        0x00, 0x01, 0xd8, 0x82, 0xa2, 0xe6, 0xf3, 0x60, 0x59, 0x04, 0x9f, 0xc0, 0xa3, 0x50, 0x00,
        0x01, 0x00, 0x02, 0x00, 0x0d, 0x7b, 0xfc, 0x70, 0x69, 0x6e, 0x67, 0x21,
    ];

    // The same over IPv6 (src 2001:db8::1, dst 2001:db8::2): AH 40..64.
    pub(crate) const IPV6_AH: [u8; 77] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x25, 0x33, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x11, 0x04, 0x00, 0x00, 0x00,
        0x00, 0x0a, 0xbc, 0x00, 0x00, 0x00, 0x01, 0x53, 0x4d, 0x6f, 0x29, 0x4a, 0xae, 0x39, 0x33,
        0x47, 0xa8, 0xa6, 0x42, 0x00, 0x01, 0x00, 0x02, 0x00, 0x0d, 0xa4, 0x8b, 0x70, 0x69, 0x6e,
        0x67, 0x21,
    ];

    fn repr() -> AhRepr {
        AhRepr {
            next_header: IpProtocol::UDP,
            spi: 0xabc,
            seq_number: 1,
            icv_len: 12,
        }
    }

    #[test]
    fn test_parse() {
        let p = AhPacket::new_checked(&IPV4_AH[20..]).unwrap();
        assert_eq!(p.next_header(), IpProtocol::UDP);
        assert_eq!(p.payload_len(), 4);
        assert_eq!(p.header_len(), 24);
        assert_eq!(p.icv_len(), 12);
        assert_eq!(p.reserved(), 0);
        assert_eq!(p.spi(), 0xabc);
        assert_eq!(p.seq_number(), 1);
        assert_eq!(p.icv(), &IPV4_AH[32..44]);
        assert_eq!(p.payload(), &IPV4_AH[44..]);
        assert_eq!(AhRepr::parse(&p, false).unwrap(), repr());

        let p = AhPacket::new_checked(&IPV6_AH[40..]).unwrap();
        assert_eq!(p.icv(), &IPV6_AH[52..64]);
        assert_eq!(AhRepr::parse(&p, true).unwrap(), repr());
    }

    #[test]
    fn test_emit() {
        let mut buf = [0xffu8; 24];
        let mut p = AhPacket::new_unchecked(&mut buf[..]);
        repr().emit(&mut p, false);
        p.icv_mut().copy_from_slice(&IPV4_AH[32..44]);
        assert_eq!(&buf[..], &IPV4_AH[20..44]);
        assert_eq!(repr().buffer_len(false), 24);
        assert_eq!(repr().buffer_len(true), 24);
    }

    #[test]
    fn test_alignment() {
        // HMAC-SHA2-256-128: 16-byte ICV. IPv4: 28 bytes; IPv6: 32 bytes.
        assert_eq!(AhRepr::header_len(16, false), 28);
        assert_eq!(AhRepr::header_len(16, true), 32);
        assert_eq!(AhRepr::header_len(12, true), 24);
        assert_eq!(AhRepr::header_len(0, false), 12);
        assert_eq!(AhRepr::header_len(0, true), 16);
        let r = AhRepr {
            icv_len: 16,
            ..repr()
        };
        let mut buf = [0xffu8; 40];
        r.emit(&mut AhPacket::new_unchecked(&mut buf[..]), true);
        assert_eq!(buf[1], 6);
        assert!(buf[12..32].iter().all(|&b| b == 0));
        assert_eq!(buf[32], 0xff);
        let p = AhPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(p.header_len(), 32);
        assert_eq!(AhRepr::parse(&p, true).unwrap().icv_len, 20);

        r.emit(&mut AhPacket::new_unchecked(&mut buf[..]), false);
        assert_eq!(buf[1], 5);
        let p = AhPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(AhRepr::parse(&p, false).unwrap().icv_len, 16);
        // 28 bytes is not a valid IPv6 AH header.
        assert_eq!(AhRepr::parse(&p, true), Err(Error::Malformed));
    }

    #[test]
    fn test_check_len() {
        let ah = &IPV4_AH[20..44];
        for n in 0..ah.len() {
            assert_eq!(
                AhPacket::new_checked(&ah[..n]).err(),
                Some(Error::Truncated)
            );
        }
        let mut bad = [0u8; 16];
        bad[1] = 0; // 8-byte header: shorter than the fixed part
        assert_eq!(
            AhPacket::new_checked(&bad[..]).err(),
            Some(Error::BadLength)
        );
        bad[1] = 1; // 12 bytes, empty ICV; SPI 0
        let p = AhPacket::new_checked(&bad[..]).unwrap();
        assert!(p.icv().is_empty());
        assert_eq!(AhRepr::parse(&p, false), Err(Error::Malformed));
        bad[1] = 255;
        assert_eq!(
            AhPacket::new_checked(&bad[..]).err(),
            Some(Error::Truncated)
        );
    }
}
