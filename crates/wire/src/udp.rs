//! UDP header (RFC 768), with the checksum over the IPv4 or IPv6
//! pseudo-header (RFC 768, RFC 8200 §8.1).
//!
//! ```text
//!  0      7 8     15 16    23 24    31
//! +--------+--------+--------+--------+
//! |     Source      |   Destination   |
//! |      Port       |      Port       |
//! +--------+--------+--------+--------+
//! |                 |                 |
//! |     Length      |    Checksum     |
//! +--------+--------+--------+--------+
//! |          data octets ...
//! +---------------- ...
//! ```
//!
//! Length covers header and data; bytes of the buffer after Length are not
//! part of the datagram.

use std::net::IpAddr;

use crate::iana::IpProtocol;
use crate::ipv4::checksum;
use crate::{Error, Result};

mod field {
    use crate::Field;
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const LENGTH: Field = 4..6;
    pub const CHECKSUM: Field = 6..8;
}

/// Length of a UDP header.
pub const HEADER_LEN: usize = field::CHECKSUM.end;

/// A read/write view of a UDP datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Wraps a buffer without checking it; see the crate's panic contract.
    pub const fn new_unchecked(buffer: T) -> UdpPacket<T> {
        UdpPacket { buffer }
    }

    /// Wraps a buffer and checks its lengths with [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<UdpPacket<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// [`Error::Truncated`] if the buffer is shorter than 8 bytes or than
    /// Length; [`Error::BadLength`] if Length < 8.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let field_len = usize::from(self.len());
        if field_len < HEADER_LEN {
            return Err(Error::BadLength);
        }
        if field_len > len {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn read(&self, f: crate::Field) -> u16 {
        let b = &self.buffer.as_ref()[f];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// Source Port.
    pub fn src_port(&self) -> u16 {
        self.read(field::SRC_PORT)
    }

    /// Destination Port.
    pub fn dst_port(&self) -> u16 {
        self.read(field::DST_PORT)
    }

    /// Length: header plus data, in bytes.
    pub fn len(&self) -> u16 {
        self.read(field::LENGTH)
    }

    /// Whether the datagram carries no data (Length is 8).
    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) <= HEADER_LEN
    }

    /// Checksum (0: none was computed, allowed over IPv4 only).
    pub fn checksum(&self) -> u16 {
        self.read(field::CHECKSUM)
    }

    /// The data: bytes 8..Length.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }

    /// Whether the checksum is correct for these addresses.
    ///
    /// A zero checksum means "none" and is accepted over IPv4 (RFC 768)
    /// and rejected over IPv6 (RFC 8200 §8.1).
    pub fn verify_checksum(&self, src: &IpAddr, dst: &IpAddr) -> bool {
        if self.checksum() == 0 {
            return src.is_ipv4();
        }
        let datagram = &self.buffer.as_ref()[..usize::from(self.len())];
        let ph = checksum::pseudo_header(src, dst, IpProtocol::UDP, u32::from(self.len()));
        checksum::combine(&[ph, checksum::data(datagram)]) == !0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    fn write(&mut self, f: crate::Field, v: u16) {
        self.buffer.as_mut()[f].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets Source Port.
    pub fn set_src_port(&mut self, value: u16) {
        self.write(field::SRC_PORT, value);
    }

    /// Sets Destination Port.
    pub fn set_dst_port(&mut self, value: u16) {
        self.write(field::DST_PORT, value);
    }

    /// Sets Length.
    pub fn set_len(&mut self, value: u16) {
        self.write(field::LENGTH, value);
    }

    /// Sets Checksum as is (see [`fill_checksum`](Self::fill_checksum)).
    pub fn set_checksum(&mut self, value: u16) {
        self.write(field::CHECKSUM, value);
    }

    /// Computes the checksum over the pseudo-header and the first Length
    /// bytes and stores it (a computed 0 is sent as 0xffff, RFC 768).
    pub fn fill_checksum(&mut self, src: &IpAddr, dst: &IpAddr) {
        self.set_checksum(0);
        let len = self.len();
        let datagram = &self.buffer.as_ref()[..usize::from(len)];
        let ph = checksum::pseudo_header(src, dst, IpProtocol::UDP, u32::from(len));
        let sum = !checksum::combine(&[ph, checksum::data(datagram)]);
        self.set_checksum(if sum == 0 { 0xffff } else { sum });
    }

    /// The data, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for UdpPacket<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpRepr {
    /// Source Port.
    pub src_port: u16,
    /// Destination Port.
    pub dst_port: u16,
    /// Length of the data (Length minus 8).
    pub payload_len: usize,
}

impl UdpRepr {
    /// Parses a view: lengths as in `check_len`, the checksum must verify
    /// for these addresses ([`Error::BadChecksum`]; zero is accepted over
    /// IPv4 only) and the destination port must not be 0
    /// ([`Error::Malformed`]).
    pub fn parse<T: AsRef<[u8]>>(
        packet: &UdpPacket<T>,
        src: &IpAddr,
        dst: &IpAddr,
    ) -> Result<UdpRepr> {
        packet.check_len()?;
        if packet.dst_port() == 0 {
            return Err(Error::Malformed);
        }
        if !packet.verify_checksum(src, dst) {
            return Err(Error::BadChecksum);
        }
        Ok(UdpRepr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            payload_len: usize::from(packet.len()) - HEADER_LEN,
        })
    }

    /// Length of the header `emit` writes: always 8.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header with a zero checksum; the data is not touched.
    /// Once the data is in place, call [`UdpPacket::fill_checksum`] (or,
    /// over IPv4 for ESP-in-UDP, leave it zero: RFC 3948 §2.1).
    ///
    /// # Panics
    /// If the buffer is shorter than 8 bytes or `payload_len` exceeds
    /// 65527 (a programming error).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut UdpPacket<T>) {
        let len = u16::try_from(HEADER_LEN + self.payload_len)
            .expect("UdpRepr::payload_len exceeds 65527");
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len(len);
        packet.set_checksum(0);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ipv4::tests::IPV4_UDP;
    use crate::ipv6::tests::IPV6_UDP;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn v4() -> (IpAddr, IpAddr) {
        (
            Ipv4Addr::new(192, 168, 1, 1).into(),
            Ipv4Addr::new(192, 168, 1, 2).into(),
        )
    }

    fn v6() -> (IpAddr, IpAddr) {
        let s: Ipv6Addr = "2001:db8::1".parse().unwrap();
        let d: Ipv6Addr = "2001:db8::2".parse().unwrap();
        (s.into(), d.into())
    }

    #[test]
    fn test_parse() {
        let (s, d) = v4();
        let p = UdpPacket::new_checked(&IPV4_UDP[20..]).unwrap();
        assert_eq!(p.src_port(), 4500);
        assert_eq!(p.dst_port(), 4500);
        assert_eq!(p.len(), 13);
        assert!(!p.is_empty());
        assert_eq!(p.checksum(), 0x1586);
        assert_eq!(p.payload(), b"hello");
        assert!(p.verify_checksum(&s, &d));
        assert!(!p.verify_checksum(&d, &d));
        let repr = UdpRepr::parse(&p, &s, &d).unwrap();
        assert_eq!(
            repr,
            UdpRepr {
                src_port: 4500,
                dst_port: 4500,
                payload_len: 5
            }
        );

        let (s, d) = v6();
        let p = UdpPacket::new_checked(&IPV6_UDP[40..]).unwrap();
        assert_eq!(p.src_port(), 500);
        assert!(p.verify_checksum(&s, &d));
        assert_eq!(UdpRepr::parse(&p, &s, &d).unwrap().payload_len, 5);
    }

    #[test]
    fn test_emit() {
        for (datagram, (s, d)) in [(&IPV4_UDP[20..], v4()), (&IPV6_UDP[40..], v6())] {
            let repr = UdpRepr::parse(&UdpPacket::new_checked(datagram).unwrap(), &s, &d).unwrap();
            let mut buf = datagram.to_vec();
            buf[..8].fill(0xee);
            let mut p = UdpPacket::new_unchecked(&mut buf[..]);
            repr.emit(&mut p);
            assert_eq!(p.checksum(), 0);
            p.fill_checksum(&s, &d);
            assert_eq!(buf, datagram);
            assert_eq!(repr.buffer_len(), 8);
        }
    }

    #[test]
    fn test_zero_checksum() {
        let mut buf = IPV4_UDP;
        let mut p = UdpPacket::new_unchecked(&mut buf[20..]);
        p.set_checksum(0);
        let (s, d) = v4();
        assert!(p.verify_checksum(&s, &d));
        let (s, d) = v6();
        assert!(!p.verify_checksum(&s, &d));
        assert_eq!(
            UdpRepr::parse(&UdpPacket::new_checked(&buf[20..]).unwrap(), &s, &d),
            Err(Error::BadChecksum)
        );
    }

    #[test]
    fn test_bad_port_and_payload_mut() {
        let (s, d) = v4();
        let mut buf = IPV4_UDP;
        let mut p = UdpPacket::new_unchecked(&mut buf[20..]);
        p.payload_mut()[0] = b'j';
        p.fill_checksum(&s, &d);
        assert!(p.verify_checksum(&s, &d));
        p.set_dst_port(0);
        p.fill_checksum(&s, &d);
        assert_eq!(UdpRepr::parse(&p, &s, &d), Err(Error::Malformed));
    }

    #[test]
    fn test_check_len() {
        let datagram = &IPV4_UDP[20..];
        for n in 0..datagram.len() {
            assert_eq!(
                UdpPacket::new_checked(&datagram[..n]).err(),
                Some(Error::Truncated)
            );
        }
        let mut buf = IPV4_UDP;
        buf[25] = 7;
        assert_eq!(
            UdpPacket::new_checked(&buf[20..]).err(),
            Some(Error::BadLength)
        );
        // Trailing bytes beyond Length are not data.
        let mut long = datagram.to_vec();
        long.extend_from_slice(&[0; 5]);
        assert_eq!(
            UdpPacket::new_checked(&long[..]).unwrap().payload(),
            b"hello"
        );
    }
}
