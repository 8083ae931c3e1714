//! IPv6 fixed header (RFC 8200 §3).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Version| Traffic Class |           Flow Label                  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |         Payload Length        |  Next Header  |   Hop Limit   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                                                               |
//! +                         Source Address                        +
//! |                          (128 bits)                           |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                                                               |
//! +                      Destination Address                      +
//! |                          (128 bits)                           |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Jumbograms (RFC 2675, Payload Length 0 with a Jumbo option) are not
//! supported: Payload Length 0 means an empty payload. Bytes after
//! 40 + Payload Length are neither header nor payload.
//!
//! Extension headers are in [`crate::ipv6ext`].

use std::net::Ipv6Addr;

use crate::iana::IpProtocol;
use crate::{Error, Result};

/// Where each field of the fixed header is (RFC 8200 §3). Public for code
/// that must name a field without a view: AH's list of mutable fields
/// (RFC 4302 §3.3.3.1.2).
pub mod field {
    #![allow(missing_docs)]
    use crate::Field;
    pub const VER_TC_FLOW: Field = 0..4;
    pub const LENGTH: Field = 4..6;
    pub const NXT_HDR: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC_ADDR: Field = 8..24;
    pub const DST_ADDR: Field = 24..40;
}

/// Length of the IPv6 fixed header.
pub const HEADER_LEN: usize = field::DST_ADDR.end;

/// Offset of the fixed header's Next Header field.
pub const NEXT_HEADER_OFFSET: usize = field::NXT_HDR;

/// A read/write view of an IPv6 packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Wraps a buffer without checking it; see the crate's panic contract.
    pub const fn new_unchecked(buffer: T) -> Ipv6Packet<T> {
        Ipv6Packet { buffer }
    }

    /// Wraps a buffer and checks its lengths with [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Ipv6Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that no accessor will panic: [`Error::Truncated`] if the
    /// buffer is shorter than 40 bytes or than 40 + Payload Length. The
    /// version is not checked here (see [`Ipv6Repr::parse`]).
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN || HEADER_LEN + usize::from(self.payload_len()) > len {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn word0(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::VER_TC_FLOW];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// The version field (6 for a valid packet).
    pub fn version(&self) -> u8 {
        (self.word0() >> 28) as u8
    }

    /// Traffic Class (DSCP and ECN).
    pub fn traffic_class(&self) -> u8 {
        (self.word0() >> 20) as u8
    }

    /// Flow Label (20 bits).
    pub fn flow_label(&self) -> u32 {
        self.word0() & 0x000f_ffff
    }

    /// Payload Length: everything after the fixed header, extension
    /// headers included.
    pub fn payload_len(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::LENGTH];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// Next Header of the fixed header.
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field::NXT_HDR])
    }

    /// Hop Limit.
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.buffer.as_ref()[field::SRC_ADDR]);
        Ipv6Addr::from(a)
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.buffer.as_ref()[field::DST_ADDR]);
        Ipv6Addr::from(a)
    }

    /// The payload: bytes 40..40 + Payload Length (extension headers
    /// included).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..HEADER_LEN + usize::from(self.payload_len())]
    }

    /// The whole packet: header and payload, without trailing bytes.
    pub fn packet(&self) -> &[u8] {
        &self.buffer.as_ref()[..HEADER_LEN + usize::from(self.payload_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    fn set_word0(&mut self, mask: u32, value: u32) {
        let w = (self.word0() & !mask) | (value & mask);
        self.buffer.as_mut()[field::VER_TC_FLOW].copy_from_slice(&w.to_be_bytes());
    }

    /// Sets the version field.
    pub fn set_version(&mut self, version: u8) {
        self.set_word0(0xf000_0000, u32::from(version) << 28);
    }

    /// Sets Traffic Class.
    pub fn set_traffic_class(&mut self, value: u8) {
        self.set_word0(0x0ff0_0000, u32::from(value) << 20);
    }

    /// Sets Flow Label (the low 20 bits of `value`).
    pub fn set_flow_label(&mut self, value: u32) {
        self.set_word0(0x000f_ffff, value);
    }

    /// Sets Payload Length.
    pub fn set_payload_len(&mut self, value: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets Next Header.
    pub fn set_next_header(&mut self, value: IpProtocol) {
        self.buffer.as_mut()[field::NXT_HDR] = value.0;
    }

    /// Sets Hop Limit.
    pub fn set_hop_limit(&mut self, value: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = value;
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, addr: Ipv6Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&addr.octets());
    }

    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, addr: Ipv6Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&addr.octets());
    }

    /// The payload, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = HEADER_LEN + usize::from(self.payload_len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Ipv6Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// An IPv6 fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6Repr {
    /// Source address.
    pub src_addr: Ipv6Addr,
    /// Destination address.
    pub dst_addr: Ipv6Addr,
    /// Next Header of the fixed header.
    pub next_header: IpProtocol,
    /// Payload Length (extension headers included).
    pub payload_len: usize,
    /// Hop Limit.
    pub hop_limit: u8,
    /// Traffic Class.
    pub traffic_class: u8,
    /// Flow Label (20 bits).
    pub flow_label: u32,
}

impl Ipv6Repr {
    /// Parses a view: lengths as in `check_len`, and the version must be 6
    /// ([`Error::BadVersion`]).
    pub fn parse<T: AsRef<[u8]>>(packet: &Ipv6Packet<T>) -> Result<Ipv6Repr> {
        packet.check_len()?;
        if packet.version() != 6 {
            return Err(Error::BadVersion);
        }
        Ok(Ipv6Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: usize::from(packet.payload_len()),
            hop_limit: packet.hop_limit(),
            traffic_class: packet.traffic_class(),
            flow_label: packet.flow_label(),
        })
    }

    /// Length of the header `emit` writes: always 40.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the fixed header; the payload is not touched.
    ///
    /// # Panics
    /// If the buffer is shorter than 40 bytes or `payload_len` exceeds
    /// 65535 (a programming error; jumbograms are not supported).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Ipv6Packet<T>) {
        let len = u16::try_from(self.payload_len).expect("Ipv6Repr::payload_len exceeds 65535");
        packet.set_word0(!0, 6 << 28);
        packet.set_traffic_class(self.traffic_class);
        packet.set_flow_label(self.flow_label);
        packet.set_payload_len(len);
        packet.set_next_header(self.next_header);
        packet.set_hop_limit(self.hop_limit);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    // scapy: IPv6(src="2001:db8::1", dst="2001:db8::2", hlim=64, tc=0x12,
    //             fl=0x12345)/UDP(sport=500, dport=500)/b"hello"
    pub(crate) const IPV6_UDP: [u8; 53] = [
        0x61, 0x21, 0x23, 0x45, 0x00, 0x0d, 0x11, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x01, 0xf4, 0x01, 0xf4, 0x00,
        0x0d, 0x5c, 0xa5, 0x68, 0x65, 0x6c, 0x6c, 0x6f,
    ];

    fn repr() -> Ipv6Repr {
        Ipv6Repr {
            src_addr: "2001:db8::1".parse().unwrap(),
            dst_addr: "2001:db8::2".parse().unwrap(),
            next_header: IpProtocol::UDP,
            payload_len: 13,
            hop_limit: 64,
            traffic_class: 0x12,
            flow_label: 0x12345,
        }
    }

    #[test]
    fn test_parse() {
        let p = Ipv6Packet::new_checked(&IPV6_UDP[..]).unwrap();
        assert_eq!(p.version(), 6);
        assert_eq!(p.traffic_class(), 0x12);
        assert_eq!(p.flow_label(), 0x12345);
        assert_eq!(p.payload_len(), 13);
        assert_eq!(p.next_header(), IpProtocol::UDP);
        assert_eq!(p.hop_limit(), 64);
        assert_eq!(p.payload(), &IPV6_UDP[40..]);
        assert_eq!(p.packet(), &IPV6_UDP[..]);
        assert_eq!(Ipv6Repr::parse(&p).unwrap(), repr());
    }

    #[test]
    fn test_emit() {
        let mut buf = IPV6_UDP;
        buf[..40].fill(0xff);
        let mut p = Ipv6Packet::new_unchecked(&mut buf[..]);
        repr().emit(&mut p);
        assert_eq!(buf, IPV6_UDP);
        assert_eq!(repr().buffer_len(), 40);
    }

    #[test]
    fn test_setters() {
        let mut buf = IPV6_UDP;
        let mut p = Ipv6Packet::new_unchecked(&mut buf[..]);
        p.set_traffic_class(0xff);
        assert_eq!(p.flow_label(), 0x12345);
        assert_eq!(p.version(), 6);
        p.set_flow_label(0xfffff);
        assert_eq!(p.traffic_class(), 0xff);
        p.set_version(4);
        assert_eq!(p.version(), 4);
        assert_eq!(p.traffic_class(), 0xff);
        p.payload_mut()[0] = 9;
        assert_eq!(buf[40], 9);
    }

    #[test]
    fn test_check_len() {
        for n in 0..IPV6_UDP.len() {
            assert_eq!(
                Ipv6Packet::new_checked(&IPV6_UDP[..n]).err(),
                Some(Error::Truncated)
            );
        }
        let mut padded = [0u8; 64];
        padded[..53].copy_from_slice(&IPV6_UDP);
        assert_eq!(
            Ipv6Packet::new_checked(&padded[..])
                .unwrap()
                .payload()
                .len(),
            13
        );
        let mut bad = IPV6_UDP;
        bad[0] = 0x41;
        let p = Ipv6Packet::new_checked(&bad[..]).unwrap();
        assert_eq!(Ipv6Repr::parse(&p), Err(Error::BadVersion));
    }
}
