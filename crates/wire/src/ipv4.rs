//! IPv4 header (RFC 791 §3.1) and the Internet checksum (RFC 1071).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Version|  IHL  |   DSCP/ECN    |          Total Length         |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |         Identification        |Flags|      Fragment Offset    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Time to Live |    Protocol   |         Header Checksum       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                       Source Address                          |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                    Destination Address                        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                    Options                    |    Padding    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! Flags: bit 0 reserved (zero), bit 1 DF (don't fragment), bit 2 MF.
//! ```
//!
//! The buffer may be longer than Total Length (Ethernet padding); the bytes
//! after Total Length are neither header nor payload.

use std::net::Ipv4Addr;

use crate::iana::IpProtocol;
use crate::{Error, Field, Result};

/// Where each field of the fixed header is (RFC 791 §3.1). Public for code
/// that must name a field without a view: AH's list of mutable fields
/// (RFC 4302 §3.3.3.1.1) and the IPsec layout's Next Header offset.
pub mod field {
    #![allow(missing_docs)]
    use crate::Field;
    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const LENGTH: Field = 2..4;
    pub const IDENT: Field = 4..6;
    pub const FLG_OFF: Field = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Field = 10..12;
    pub const SRC_ADDR: Field = 12..16;
    pub const DST_ADDR: Field = 16..20;
}

/// Length of an IPv4 header without options.
pub const HEADER_LEN: usize = field::DST_ADDR.end;

const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const OFFSET_MASK: u16 = 0x1fff;

fn read_u16(b: &[u8], f: Field) -> u16 {
    u16::from_be_bytes([b[f.start], b[f.start + 1]])
}

fn write_u16(b: &mut [u8], f: Field, v: u16) {
    b[f].copy_from_slice(&v.to_be_bytes());
}

/// A read/write view of an IPv4 packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps a buffer without checking it; see the crate's panic contract.
    pub const fn new_unchecked(buffer: T) -> Ipv4Packet<T> {
        Ipv4Packet { buffer }
    }

    /// Wraps a buffer and checks its lengths with [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Ipv4Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that no accessor will panic.
    ///
    /// [`Error::Truncated`] if the buffer is shorter than 20 bytes, than the
    /// IHL or than Total Length; [`Error::BadLength`] if IHL < 5 or Total
    /// Length < IHL × 4. The version is not checked here (see
    /// [`Ipv4Repr::parse`]).
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let header_len = self.header_len();
        if header_len < HEADER_LEN {
            return Err(Error::BadLength);
        }
        if header_len > len {
            return Err(Error::Truncated);
        }
        let total_len = usize::from(self.total_len());
        if total_len < header_len {
            return Err(Error::BadLength);
        }
        if total_len > len {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The version field (4 for a valid packet).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length **in bytes** (the IHL field × 4), options included.
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    /// The DSCP/ECN byte (formerly Type of Service).
    pub fn dscp_ecn(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN]
    }

    /// Alias of [`dscp_ecn`](Self::dscp_ecn) under RFC 791's name.
    pub fn tos(&self) -> u8 {
        self.dscp_ecn()
    }

    /// Total Length: header plus payload, in bytes.
    pub fn total_len(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::LENGTH)
    }

    /// Identification.
    pub fn ident(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::IDENT)
    }

    /// The DF (don't fragment) flag.
    pub fn dont_frag(&self) -> bool {
        read_u16(self.buffer.as_ref(), field::FLG_OFF) & FLAG_DF != 0
    }

    /// The MF (more fragments) flag.
    pub fn more_frags(&self) -> bool {
        read_u16(self.buffer.as_ref(), field::FLG_OFF) & FLAG_MF != 0
    }

    /// Fragment offset **in bytes** (the field × 8).
    pub fn frag_offset(&self) -> u16 {
        (read_u16(self.buffer.as_ref(), field::FLG_OFF) & OFFSET_MASK) << 3
    }

    /// Whether this packet is a fragment (MF set or a non-zero offset).
    pub fn is_fragment(&self) -> bool {
        self.more_frags() || self.frag_offset() != 0
    }

    /// Time to Live.
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// Alias of [`hop_limit`](Self::hop_limit) under RFC 791's name.
    pub fn ttl(&self) -> u8 {
        self.hop_limit()
    }

    /// The Protocol field.
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field::PROTOCOL])
    }

    /// Header Checksum.
    pub fn checksum(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[field::SRC_ADDR];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[field::DST_ADDR];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    /// Whether the header checksum is correct.
    pub fn verify_checksum(&self) -> bool {
        checksum::data(&self.buffer.as_ref()[..self.header_len()]) == !0
    }

    /// The options (and their padding): bytes 20..IHL × 4.
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.header_len()]
    }

    /// The payload: bytes IHL × 4..Total Length.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..usize::from(self.total_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets the version field.
    pub fn set_version(&mut self, version: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0x0f) | (version << 4);
    }

    /// Sets the header length in bytes (a multiple of 4, at most 60).
    pub fn set_header_len(&mut self, len: usize) {
        debug_assert!(len & 3 == 0 && len <= 60, "bad IPv4 header length {len}");
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0xf0) | ((len / 4) as u8 & 0x0f);
    }

    /// Sets the DSCP/ECN byte.
    pub fn set_dscp_ecn(&mut self, value: u8) {
        self.buffer.as_mut()[field::DSCP_ECN] = value;
    }

    /// Sets Total Length.
    pub fn set_total_len(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::LENGTH, value);
    }

    /// Sets Identification.
    pub fn set_ident(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::IDENT, value);
    }

    fn set_flg_off(&mut self, mask: u16, value: u16) {
        let old = read_u16(self.buffer.as_ref(), field::FLG_OFF);
        write_u16(
            self.buffer.as_mut(),
            field::FLG_OFF,
            (old & !mask) | (value & mask),
        );
    }

    /// Sets the DF flag.
    pub fn set_dont_frag(&mut self, value: bool) {
        self.set_flg_off(FLAG_DF, if value { FLAG_DF } else { 0 });
    }

    /// Sets the MF flag.
    pub fn set_more_frags(&mut self, value: bool) {
        self.set_flg_off(FLAG_MF, if value { FLAG_MF } else { 0 });
    }

    /// Sets the fragment offset **in bytes** (must be a multiple of 8).
    pub fn set_frag_offset(&mut self, offset: u16) {
        debug_assert!(
            offset & 7 == 0,
            "fragment offset {offset} not a multiple of 8"
        );
        self.set_flg_off(OFFSET_MASK, offset >> 3);
    }

    /// Clears the reserved flag, DF, MF and the fragment offset.
    pub fn clear_flags(&mut self) {
        write_u16(self.buffer.as_mut(), field::FLG_OFF, 0);
    }

    /// Sets Time to Live.
    pub fn set_hop_limit(&mut self, value: u8) {
        self.buffer.as_mut()[field::TTL] = value;
    }

    /// Sets the Protocol field.
    pub fn set_next_header(&mut self, value: IpProtocol) {
        self.buffer.as_mut()[field::PROTOCOL] = value.0;
    }

    /// Sets the Header Checksum field as is (see [`fill_checksum`](Self::fill_checksum)).
    pub fn set_checksum(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::CHECKSUM, value);
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, addr: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&addr.octets());
    }

    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, addr: Ipv4Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&addr.octets());
    }

    /// Computes the header checksum over IHL × 4 bytes and stores it.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let sum = !checksum::data(&self.buffer.as_ref()[..self.header_len()]);
        self.set_checksum(sum);
    }

    /// The options, mutable.
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }

    /// The payload, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let range = self.header_len()..usize::from(self.total_len());
        &mut self.buffer.as_mut()[range]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Ipv4Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// An IPv4 header without options, as flowsec emits it.
///
/// Options, Identification and fragmentation stay with the view: `parse`
/// ignores options and accepts fragments (IPsec protects fragments in tunnel
/// mode), so check [`Ipv4Packet::is_fragment`] where it matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    /// Source address.
    pub src_addr: Ipv4Addr,
    /// Destination address.
    pub dst_addr: Ipv4Addr,
    /// The Protocol field.
    pub next_header: IpProtocol,
    /// Payload length (Total Length minus the header, options included).
    pub payload_len: usize,
    /// Time to Live.
    pub hop_limit: u8,
    /// DSCP/ECN byte.
    pub dscp_ecn: u8,
    /// The DF flag.
    pub dont_frag: bool,
}

impl Ipv4Repr {
    /// Parses a checked view: the version must be 4 ([`Error::BadVersion`])
    /// and the header checksum correct ([`Error::BadChecksum`]).
    pub fn parse<T: AsRef<[u8]>>(packet: &Ipv4Packet<T>) -> Result<Ipv4Repr> {
        packet.check_len()?;
        if packet.version() != 4 {
            return Err(Error::BadVersion);
        }
        if !packet.verify_checksum() {
            return Err(Error::BadChecksum);
        }
        Ok(Ipv4Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: usize::from(packet.total_len()) - packet.header_len(),
            hop_limit: packet.hop_limit(),
            dscp_ecn: packet.dscp_ecn(),
            dont_frag: packet.dont_frag(),
        })
    }

    /// Length of the header `emit` writes: always 20.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes a 20-byte header (Identification 0, no options) with its
    /// checksum; the payload is not touched.
    ///
    /// # Panics
    /// If the buffer is shorter than 20 bytes or `payload_len` exceeds
    /// 65515 (a programming error).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Ipv4Packet<T>) {
        let total = u16::try_from(HEADER_LEN + self.payload_len)
            .expect("Ipv4Repr::payload_len exceeds 65515");
        packet.set_version(4);
        packet.set_header_len(HEADER_LEN);
        packet.set_dscp_ecn(self.dscp_ecn);
        packet.set_total_len(total);
        packet.set_ident(0);
        packet.clear_flags();
        packet.set_dont_frag(self.dont_frag);
        packet.set_hop_limit(self.hop_limit);
        packet.set_next_header(self.next_header);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        packet.fill_checksum();
    }
}

/// The Internet checksum (RFC 1071) and the pseudo-headers of UDP/TCP over
/// IPv4 (RFC 768) and IPv6 (RFC 8200 §8.1).
///
/// All functions return the one's-complement **sum**, not its complement:
/// a checksum field is filled with `!sum`, and data that includes a correct
/// checksum field sums to `0xffff`.
pub mod checksum {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    use crate::iana::IpProtocol;

    fn fold(mut sum: u64) -> u16 {
        while sum >> 16 != 0 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum as u16
    }

    /// One's-complement sum of `data` as big-endian 16-bit words; an odd
    /// final byte is padded with zero.
    pub fn data(data: &[u8]) -> u16 {
        if data.len() < 64 {
            // Headers just written field by field: wide loads over 2-byte
            // stores would defeat store forwarding and stall.
            return fold16(data, 0);
        }
        // The sum is independent of byte order (RFC 1071 §2(B)): add the
        // data as native-endian 32-bit words into four 64-bit accumulators
        // (independent chains the CPU overlaps, and which the compiler may
        // vectorise; none can overflow below 2^32 words), fold, and swap
        // the bytes of the result on a little-endian host. This pass over
        // every TCP segment (segmentation from and coalescing into the TUN
        // device, issue 17) was a third of the data path's user-space time
        // with one 64-bit chain of big-endian loads.
        let mut acc = [0u64; 4];
        let mut blocks = data.chunks_exact(32);
        for b in &mut blocks {
            for (i, w) in b.chunks_exact(4).enumerate() {
                acc[i % 4] += u64::from(u32::from_ne_bytes([w[0], w[1], w[2], w[3]]));
            }
        }
        let mut sum = acc[0] + acc[1] + acc[2] + acc[3];
        let mut words = blocks.remainder().chunks_exact(2);
        for w in &mut words {
            sum += u64::from(u16::from_ne_bytes([w[0], w[1]]));
        }
        if let [last] = words.remainder() {
            sum += u64::from(u16::from_ne_bytes([*last, 0]));
        }
        u16::from_be(fold(sum))
    }

    /// Add `data` to `sum` as big-endian 16-bit words and fold.
    fn fold16(data: &[u8], mut sum: u64) -> u16 {
        let mut pairs = data.chunks_exact(2);
        for c in &mut pairs {
            sum += u64::from(u16::from_be_bytes([c[0], c[1]]));
        }
        if let [last] = pairs.remainder() {
            sum += u64::from(u16::from_be_bytes([*last, 0]));
        }
        fold(sum)
    }

    /// One's-complement sum of partial sums.
    pub fn combine(checksums: &[u16]) -> u16 {
        fold(checksums.iter().map(|&c| u64::from(c)).sum())
    }

    /// Sum of the IPv4 pseudo-header: source, destination, zero, protocol,
    /// upper-layer length.
    pub fn pseudo_header_v4(
        src: &Ipv4Addr,
        dst: &Ipv4Addr,
        next_header: IpProtocol,
        length: u16,
    ) -> u16 {
        combine(&[
            data(&src.octets()),
            data(&dst.octets()),
            u16::from(next_header.0),
            length,
        ])
    }

    /// Sum of the IPv6 pseudo-header: source, destination, 32-bit
    /// upper-layer length, zero, next header.
    pub fn pseudo_header_v6(
        src: &Ipv6Addr,
        dst: &Ipv6Addr,
        next_header: IpProtocol,
        length: u32,
    ) -> u16 {
        combine(&[
            data(&src.octets()),
            data(&dst.octets()),
            (length >> 16) as u16,
            length as u16,
            u16::from(next_header.0),
        ])
    }

    /// The pseudo-header sum for either version. With addresses of
    /// different families (never the case for a real packet) it sums both
    /// addresses' octets, which matches neither RFC but does not panic.
    pub fn pseudo_header(src: &IpAddr, dst: &IpAddr, next_header: IpProtocol, length: u32) -> u16 {
        match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) if length <= 0xffff => {
                pseudo_header_v4(s, d, next_header, length as u16)
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => pseudo_header_v6(s, d, next_header, length),
            _ => {
                let sum = |a: &IpAddr| match a {
                    IpAddr::V4(a) => data(&a.octets()),
                    IpAddr::V6(a) => data(&a.octets()),
                };
                combine(&[
                    sum(src),
                    sum(dst),
                    (length >> 16) as u16,
                    length as u16,
                    u16::from(next_header.0),
                ])
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    // scapy: IP(src="192.168.1.1", dst="192.168.1.2", ttl=64, id=0x1234,
    //           flags="DF", tos=0xb8)/UDP(sport=4500, dport=4500)/b"hello"
    pub(crate) const IPV4_UDP: [u8; 33] = [
        0x45, 0xb8, 0x00, 0x21, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xa4, 0x8c, 0xc0, 0xa8, 0x01,
        0x01, 0xc0, 0xa8, 0x01, 0x02, 0x11, 0x94, 0x11, 0x94, 0x00, 0x0d, 0x15, 0x86, 0x68, 0x65,
        0x6c, 0x6c, 0x6f,
    ];

    // scapy: IP(src="10.0.0.1", dst="10.0.0.2", ttl=1, id=0,
    //           options=[IPOption_Router_Alert()])/UDP(sport=1234, dport=5678)/b"abcd"
    pub(crate) const IPV4_OPTS: [u8; 36] = [
        0x46, 0x00, 0x00, 0x24, 0x00, 0x00, 0x00, 0x00, 0x01, 0x11, 0x10, 0xc3, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02, 0x94, 0x04, 0x00, 0x00, 0x04, 0xd2, 0x16, 0x2e, 0x00, 0x0c,
        0x0c, 0x0d, 0x61, 0x62, 0x63, 0x64,
    ];

    #[test]
    fn test_parse() {
        let p = Ipv4Packet::new_checked(&IPV4_UDP[..]).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.dscp_ecn(), 0xb8);
        assert_eq!(p.tos(), 0xb8);
        assert_eq!(p.total_len(), 33);
        assert_eq!(p.ident(), 0x1234);
        assert!(p.dont_frag());
        assert!(!p.more_frags());
        assert_eq!(p.frag_offset(), 0);
        assert!(!p.is_fragment());
        assert_eq!(p.ttl(), 64);
        assert_eq!(p.next_header(), IpProtocol::UDP);
        assert_eq!(p.checksum(), 0xa48c);
        assert!(p.verify_checksum());
        assert_eq!(p.src_addr(), Ipv4Addr::new(192, 168, 1, 1));
        assert_eq!(p.dst_addr(), Ipv4Addr::new(192, 168, 1, 2));
        assert_eq!(p.options(), &[] as &[u8]);
        assert_eq!(p.payload(), &IPV4_UDP[20..]);

        let repr = Ipv4Repr::parse(&p).unwrap();
        assert_eq!(
            repr,
            Ipv4Repr {
                src_addr: Ipv4Addr::new(192, 168, 1, 1),
                dst_addr: Ipv4Addr::new(192, 168, 1, 2),
                next_header: IpProtocol::UDP,
                payload_len: 13,
                hop_limit: 64,
                dscp_ecn: 0xb8,
                dont_frag: true,
            }
        );
    }

    #[test]
    fn test_parse_options() {
        let p = Ipv4Packet::new_checked(&IPV4_OPTS[..]).unwrap();
        assert_eq!(p.header_len(), 24);
        assert_eq!(p.options(), &[0x94, 0x04, 0x00, 0x00]);
        assert_eq!(p.payload(), &IPV4_OPTS[24..]);
        assert!(p.verify_checksum());
        let repr = Ipv4Repr::parse(&p).unwrap();
        assert_eq!(repr.payload_len, 12);
        assert_eq!(repr.hop_limit, 1);
        assert!(!repr.dont_frag);
    }

    #[test]
    fn test_emit() {
        let p = Ipv4Packet::new_checked(&IPV4_UDP[..]).unwrap();
        let repr = Ipv4Repr::parse(&p).unwrap();
        let mut buf = IPV4_UDP;
        buf[..20].fill(0xaa);
        let mut out = Ipv4Packet::new_unchecked(&mut buf[..]);
        repr.emit(&mut out);
        // Identification differs (emit writes 0), so compare field by field.
        assert_eq!(out.ident(), 0);
        assert!(out.verify_checksum());
        assert_eq!(&buf[..4], &IPV4_UDP[..4]);
        assert_eq!(&buf[6..10], &IPV4_UDP[6..10]);
        assert_eq!(&buf[12..], &IPV4_UDP[12..]);
        assert_eq!(buf.len(), repr.buffer_len() + repr.payload_len);

        // With ident restored, the bytes are scapy's.
        let mut out = Ipv4Packet::new_unchecked(&mut buf[..]);
        out.set_ident(0x1234);
        out.fill_checksum();
        assert_eq!(buf, IPV4_UDP);
    }

    #[test]
    fn test_setters() {
        let mut buf = IPV4_OPTS;
        let mut p = Ipv4Packet::new_unchecked(&mut buf[..]);
        p.set_more_frags(true);
        p.set_frag_offset(1480);
        p.set_dont_frag(true);
        assert!(p.more_frags() && p.dont_frag() && p.is_fragment());
        assert_eq!(p.frag_offset(), 1480);
        p.set_dont_frag(false);
        assert!(p.more_frags() && !p.dont_frag());
        p.options_mut()[0] = 0x01;
        p.payload_mut()[0] = 0xff;
        p.fill_checksum();
        assert!(p.verify_checksum());
        assert_eq!(buf[20], 0x01);
        assert_eq!(buf[24], 0xff);
    }

    #[test]
    fn test_check_len() {
        for n in 0..IPV4_OPTS.len() {
            assert!(Ipv4Packet::new_checked(&IPV4_OPTS[..n]).is_err(), "len {n}");
        }
        // Ethernet padding after Total Length is allowed and not payload.
        let mut padded = [0u8; 60];
        padded[..33].copy_from_slice(&IPV4_UDP);
        let p = Ipv4Packet::new_checked(&padded[..]).unwrap();
        assert_eq!(p.payload().len(), 13);

        let mut bad = IPV4_UDP;
        bad[0] = 0x44; // IHL 4
        assert_eq!(
            Ipv4Packet::new_checked(&bad[..]).err(),
            Some(Error::BadLength)
        );
        bad[0] = 0x4f; // IHL 15: 60 > 33
        assert_eq!(
            Ipv4Packet::new_checked(&bad[..]).err(),
            Some(Error::Truncated)
        );
        let mut bad = IPV4_UDP;
        bad[3] = 19; // Total Length < header
        assert_eq!(
            Ipv4Packet::new_checked(&bad[..]).err(),
            Some(Error::BadLength)
        );
        bad[3] = 34; // Total Length > buffer
        assert_eq!(
            Ipv4Packet::new_checked(&bad[..]).err(),
            Some(Error::Truncated)
        );
    }

    #[test]
    fn test_parse_errors() {
        let mut bad = IPV4_UDP;
        bad[0] = 0x65;
        let p = Ipv4Packet::new_checked(&bad[..]).unwrap();
        assert_eq!(Ipv4Repr::parse(&p), Err(Error::BadVersion));
        let mut bad = IPV4_UDP;
        bad[8] = 63;
        let p = Ipv4Packet::new_checked(&bad[..]).unwrap();
        assert_eq!(Ipv4Repr::parse(&p), Err(Error::BadChecksum));
    }

    #[test]
    fn test_checksum_helpers() {
        // RFC 1071 §3 example: 0001 f203 f4f5 f6f7 sums to ddf2.
        assert_eq!(
            checksum::data(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            0xddf2
        );
        assert_eq!(checksum::data(&[0x01]), 0x0100);
        // The wide path agrees with 16-bit words, every length and
        // alignment, all-ones data included (the carries).
        let reference = |d: &[u8]| {
            let mut s: u64 = d
                .chunks(2)
                .map(|c| u64::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
                .sum();
            while s > 0xffff {
                s = (s & 0xffff) + (s >> 16);
            }
            s as u16
        };
        let mixed: Vec<u8> = (0..1600u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        for d in [mixed, vec![0xff; 1600]] {
            for start in 0..4 {
                for len in (0..=1500).step_by(7).chain(60..70) {
                    let d = &d[start..start + len];
                    assert_eq!(checksum::data(d), reference(d), "len {len} start {start}");
                }
            }
        }
        assert_eq!(checksum::combine(&[0xffff, 0x0001]), 0x0001);
        // The UDP checksum of IPV4_UDP verifies with the v4 pseudo-header.
        let udp = &IPV4_UDP[20..];
        let src = Ipv4Addr::new(192, 168, 1, 1);
        let dst = Ipv4Addr::new(192, 168, 1, 2);
        let ph = checksum::pseudo_header_v4(&src, &dst, IpProtocol::UDP, udp.len() as u16);
        assert_eq!(checksum::combine(&[ph, checksum::data(udp)]), 0xffff);
        let gen = checksum::pseudo_header(&src.into(), &dst.into(), IpProtocol::UDP, 13);
        assert_eq!(gen, ph);
        // Mixed families do not panic.
        let _ = checksum::pseudo_header(
            &src.into(),
            &std::net::Ipv6Addr::LOCALHOST.into(),
            IpProtocol::UDP,
            13,
        );
    }
}
