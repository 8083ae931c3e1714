//! IP Payload Compression header (RFC 3173 §2.2).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Next Header  |     Flags     | Compression Parameter Index   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                      compressed payload ...
//! ```
//!
//! Flags are reserved: zero when sent, ignored when received. A CPI below
//! 256 is a well-known transform ([`IpcompId`]);
//! larger ones are negotiated.

use crate::iana::{IpProtocol, IpcompId};
use crate::{Error, Result};

mod field {
    use crate::{Field, Rest};
    pub const NXT_HDR: usize = 0;
    pub const FLAGS: usize = 1;
    pub const CPI: Field = 2..4;
    pub const PAYLOAD: Rest = 4..;
}

/// Length of the IPComp header.
pub const HEADER_LEN: usize = field::CPI.end;

/// A read/write view of an IPComp header and its compressed payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpCompPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> IpCompPacket<T> {
    /// Wraps a buffer without checking it; see the crate's panic contract.
    pub const fn new_unchecked(buffer: T) -> IpCompPacket<T> {
        IpCompPacket { buffer }
    }

    /// Wraps a buffer and checks it with [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<IpCompPacket<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// [`Error::Truncated`] if the buffer is shorter than 4 bytes.
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

    /// Next Header (of the decompressed payload).
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field::NXT_HDR])
    }

    /// Flags (reserved).
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// Compression Parameter Index.
    pub fn cpi(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::CPI];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// The well-known transform, if the CPI is below 256 (RFC 3173 §3.3).
    pub fn transform(&self) -> Option<IpcompId> {
        let cpi = self.cpi();
        (cpi < 256).then_some(IpcompId(cpi))
    }

    /// The compressed payload.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> IpCompPacket<T> {
    /// Sets Next Header.
    pub fn set_next_header(&mut self, value: IpProtocol) {
        self.buffer.as_mut()[field::NXT_HDR] = value.0;
    }

    /// Sets Flags.
    pub fn set_flags(&mut self, value: u8) {
        self.buffer.as_mut()[field::FLAGS] = value;
    }

    /// Sets the CPI.
    pub fn set_cpi(&mut self, value: u16) {
        self.buffer.as_mut()[field::CPI].copy_from_slice(&value.to_be_bytes());
    }

    /// The compressed payload, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for IpCompPacket<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// An IPComp header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpCompRepr {
    /// Next Header of the decompressed payload.
    pub next_header: IpProtocol,
    /// Compression Parameter Index.
    pub cpi: u16,
}

impl IpCompRepr {
    /// Parses a view (Flags are ignored, RFC 3173 §2.2).
    pub fn parse<T: AsRef<[u8]>>(packet: &IpCompPacket<T>) -> Result<IpCompRepr> {
        packet.check_len()?;
        Ok(IpCompRepr {
            next_header: packet.next_header(),
            cpi: packet.cpi(),
        })
    }

    /// Length of the header `emit` writes: always 4.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header with Flags zero.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut IpCompPacket<T>) {
        packet.set_next_header(self.next_header);
        packet.set_flags(0);
        packet.set_cpi(self.cpi);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    // IP(src="192.0.2.1", dst="192.0.2.2", proto=108) / IPComp(next UDP,
    // CPI 2 = DEFLATE) / raw-deflate(UDP(sport=1, dport=2)/b"A"*40), built
    // with scapy and Python's zlib (wbits -15, RFC 2394).
    pub(crate) const IPV4_IPCOMP: [u8; 37] = [
        0x45, 0x00, 0x00, 0x25, 0x00, 0x01, 0x00, 0x00, 0x40, 0x6c, 0xf6, 0x68, 0xc0, 0x00, 0x02,
        0x01, 0xc0, 0x00, 0x02, 0x02, 0x11, 0x00, 0x00, 0x02, 0x63, 0x60, 0x64, 0x60, 0x62, 0x30,
        0x60, 0x60, 0x70, 0x24, 0x12, 0x00, 0x00,
    ];

    #[test]
    fn test_parse() {
        let p = IpCompPacket::new_checked(&IPV4_IPCOMP[20..]).unwrap();
        assert_eq!(p.next_header(), IpProtocol::UDP);
        assert_eq!(p.flags(), 0);
        assert_eq!(p.cpi(), 2);
        assert_eq!(p.transform(), Some(IpcompId::DEFLATE));
        assert_eq!(p.payload(), &IPV4_IPCOMP[24..]);
        assert_eq!(
            IpCompRepr::parse(&p).unwrap(),
            IpCompRepr {
                next_header: IpProtocol::UDP,
                cpi: 2
            }
        );
    }

    #[test]
    fn test_emit() {
        let mut buf = IPV4_IPCOMP;
        buf[20..24].fill(0xff);
        let repr = IpCompRepr {
            next_header: IpProtocol::UDP,
            cpi: 2,
        };
        repr.emit(&mut IpCompPacket::new_unchecked(&mut buf[20..]));
        assert_eq!(buf, IPV4_IPCOMP);
        assert_eq!(repr.buffer_len(), 4);
        let mut p = IpCompPacket::new_unchecked(&mut buf[20..]);
        p.set_cpi(0x1234);
        p.payload_mut()[0] = 0;
        assert_eq!(p.transform(), None);
        assert_eq!(buf[24], 0);
    }

    #[test]
    fn test_check_len() {
        for n in 0..HEADER_LEN {
            assert_eq!(
                IpCompPacket::new_checked(&IPV4_IPCOMP[20..20 + n]).err(),
                Some(Error::Truncated)
            );
        }
        assert!(IpCompPacket::new_checked(&IPV4_IPCOMP[20..24]).is_ok());
    }
}
