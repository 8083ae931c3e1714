//! IPv6 extension headers (RFC 8200 §4) and a bounded walker over the
//! header chain that finds where IPsec goes.
//!
//! Hop-by-Hop Options and Destination Options (§4.3, §4.6):
//!
//! ```text
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Next Header  |  Hdr Ext Len  |                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
//! .                            Options                            .
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! Options are TLVs: | Option Type | Opt Data Len | Option Data...
//! except Pad1, which is the single byte 0.
//! ```
//!
//! Routing (§4.4):
//!
//! ```text
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Next Header  |  Hdr Ext Len  |  Routing Type | Segments Left |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! .                       type-specific data                      .
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Fragment (§4.5):
//!
//! ```text
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Next Header  |   Reserved    |      Fragment Offset    |Res|M|
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                         Identification                        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Hdr Ext Len counts 8-octet units beyond the first 8 octets, so every
//! header here is `(Hdr Ext Len + 1) * 8` bytes long ([`byte_len`]).
//!
//! [`byte_len`]: Ipv6OptionsHeader::byte_len

use core::ops::Range;

use crate::iana::IpProtocol;
use crate::ipv6::{Ipv6Packet, HEADER_LEN as IPV6_HEADER_LEN, NEXT_HEADER_OFFSET};
use crate::{Error, Result};

mod field {
    use crate::Field;
    pub const NXT_HDR: usize = 0;
    pub const LENGTH: usize = 1;
    // Options headers.
    pub const OPTIONS: usize = 2;
    // Routing header.
    pub const ROUTING_TYPE: usize = 2;
    pub const SEG_LEFT: usize = 3;
    pub const ROUTING_DATA: usize = 4;
    // Fragment header.
    pub const FRAG_RESERVED: usize = 1;
    pub const FRAG_OFF_M: Field = 2..4;
    pub const FRAG_IDENT: Field = 4..8;
}

/// Length of a Fragment header, and the minimum of every extension header.
pub const FRAGMENT_HEADER_LEN: usize = 8;

/// Pad1 option type (RFC 8200 §4.2): a single zero byte, no length.
pub const OPT_PAD1: u8 = 0;
/// PadN option type (RFC 8200 §4.2).
pub const OPT_PADN: u8 = 1;

/// Whether an option's data may change en route (the third-highest bit of
/// its type, RFC 8200 §4.2). AH zeroes such data when computing its ICV
/// (RFC 4302 §3.3.3.1.2.1).
pub const fn option_type_is_mutable(ty: u8) -> bool {
    ty & 0x20 != 0
}

/// What a node that does not know the option must do: the two high-order
/// bits of its type, 0 (skip) to 3 (discard and send ICMP unless multicast).
pub const fn option_type_action(ty: u8) -> u8 {
    ty >> 6
}

/// `(Hdr Ext Len + 1) * 8`, shared by options and routing headers.
fn ext_byte_len(b: &[u8]) -> usize {
    (usize::from(b[field::LENGTH]) + 1) * 8
}

/// Checks the common part: at least two bytes and the whole header there.
fn check_ext_len(b: &[u8]) -> Result<()> {
    if b.len() < 2 || ext_byte_len(b) > b.len() {
        return Err(Error::Truncated);
    }
    Ok(())
}

/// One option in `data` at `pos`: its type, the range of its data, and the
/// position of the next one. [`Error::Malformed`] if it overruns `data`.
fn option_at(data: &[u8], pos: usize) -> Result<(u8, Range<usize>, usize)> {
    let ty = data[pos];
    if ty == OPT_PAD1 {
        return Ok((ty, pos + 1..pos + 1, pos + 1));
    }
    let len = usize::from(*data.get(pos + 1).ok_or(Error::Malformed)?);
    let end = pos + 2 + len;
    if end > data.len() {
        return Err(Error::Malformed);
    }
    Ok((ty, pos + 2..end, end))
}

/// A view of a Hop-by-Hop Options or Destination Options header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv6OptionsHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6OptionsHeader<T> {
    /// Wraps a buffer without checking it; see the crate's panic contract.
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv6OptionsHeader { buffer }
    }

    /// Wraps a buffer and checks it with [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let h = Self::new_unchecked(buffer);
        h.check_len()?;
        Ok(h)
    }

    /// [`Error::Truncated`] if the buffer is shorter than the header;
    /// [`Error::Malformed`] if an option runs past the header's end.
    pub fn check_len(&self) -> Result<()> {
        check_ext_len(self.buffer.as_ref())?;
        let data = self.options_data();
        let mut pos = 0;
        while pos < data.len() {
            pos = option_at(data, pos)?.2;
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

    /// Hdr Ext Len: 8-octet units, not counting the first 8 octets.
    pub fn header_len(&self) -> u8 {
        self.buffer.as_ref()[field::LENGTH]
    }

    /// Length of the whole header in bytes: `(header_len + 1) * 8`.
    pub fn byte_len(&self) -> usize {
        ext_byte_len(self.buffer.as_ref())
    }

    /// The options area: bytes 2..byte_len.
    pub fn options_data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::OPTIONS..self.byte_len()]
    }

    /// The options as `(type, data)`, padding included: Pad1 yields
    /// `(OPT_PAD1, &[])`, PadN `(OPT_PADN, padding)`. Stops at the first
    /// malformed option (which `check_len` rejects).
    pub fn options(&self) -> Ipv6OptionsIter<'_> {
        Ipv6OptionsIter {
            data: self.options_data(),
            pos: 0,
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6OptionsHeader<T> {
    /// Sets Next Header.
    pub fn set_next_header(&mut self, value: IpProtocol) {
        self.buffer.as_mut()[field::NXT_HDR] = value.0;
    }

    /// Sets Hdr Ext Len (8-octet units beyond the first 8).
    pub fn set_header_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::LENGTH] = value;
    }

    /// The options area, mutable.
    pub fn options_data_mut(&mut self) -> &mut [u8] {
        let end = self.byte_len();
        &mut self.buffer.as_mut()[field::OPTIONS..end]
    }

    /// Zeroes the data of every option whose type has the "may change en
    /// route" bit, as AH's ICV computation requires (RFC 4302
    /// §3.3.3.1.2.1). Stops at a malformed option.
    pub fn zero_mutable_options(&mut self) {
        let data = self.options_data_mut();
        let mut pos = 0;
        while pos < data.len() {
            let Ok((ty, range, next)) = option_at(data, pos) else {
                return;
            };
            if option_type_is_mutable(ty) {
                data[range].fill(0);
            }
            pos = next;
        }
    }
}

/// Iterator over the options of an [`Ipv6OptionsHeader`].
#[derive(Debug, Clone)]
pub struct Ipv6OptionsIter<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for Ipv6OptionsIter<'a> {
    type Item = (u8, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.data.len() {
            return None;
        }
        match option_at(self.data, self.pos) {
            Ok((ty, range, next)) => {
                self.pos = next;
                Some((ty, &self.data[range]))
            }
            Err(_) => {
                self.pos = self.data.len();
                None
            }
        }
    }
}

/// A view of a Routing header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv6RoutingHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6RoutingHeader<T> {
    /// Wraps a buffer without checking it; see the crate's panic contract.
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv6RoutingHeader { buffer }
    }

    /// Wraps a buffer and checks it with [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let h = Self::new_unchecked(buffer);
        h.check_len()?;
        Ok(h)
    }

    /// [`Error::Truncated`] if the buffer is shorter than the header.
    pub fn check_len(&self) -> Result<()> {
        check_ext_len(self.buffer.as_ref())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Next Header.
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field::NXT_HDR])
    }

    /// Hdr Ext Len: 8-octet units, not counting the first 8 octets.
    pub fn header_len(&self) -> u8 {
        self.buffer.as_ref()[field::LENGTH]
    }

    /// Length of the whole header in bytes: `(header_len + 1) * 8`.
    pub fn byte_len(&self) -> usize {
        ext_byte_len(self.buffer.as_ref())
    }

    /// Routing Type.
    pub fn routing_type(&self) -> u8 {
        self.buffer.as_ref()[field::ROUTING_TYPE]
    }

    /// Segments Left.
    pub fn segments_left(&self) -> u8 {
        self.buffer.as_ref()[field::SEG_LEFT]
    }

    /// Type-specific data: bytes 4..byte_len.
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::ROUTING_DATA..self.byte_len()]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6RoutingHeader<T> {
    /// Sets Next Header.
    pub fn set_next_header(&mut self, value: IpProtocol) {
        self.buffer.as_mut()[field::NXT_HDR] = value.0;
    }

    /// Sets Hdr Ext Len.
    pub fn set_header_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::LENGTH] = value;
    }

    /// Sets Routing Type.
    pub fn set_routing_type(&mut self, value: u8) {
        self.buffer.as_mut()[field::ROUTING_TYPE] = value;
    }

    /// Sets Segments Left.
    pub fn set_segments_left(&mut self, value: u8) {
        self.buffer.as_mut()[field::SEG_LEFT] = value;
    }

    /// Type-specific data, mutable.
    pub fn data_mut(&mut self) -> &mut [u8] {
        let end = self.byte_len();
        &mut self.buffer.as_mut()[field::ROUTING_DATA..end]
    }
}

/// A view of a Fragment header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv6FragmentHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6FragmentHeader<T> {
    /// Wraps a buffer without checking it; see the crate's panic contract.
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv6FragmentHeader { buffer }
    }

    /// Wraps a buffer and checks it with [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let h = Self::new_unchecked(buffer);
        h.check_len()?;
        Ok(h)
    }

    /// [`Error::Truncated`] if the buffer is shorter than 8 bytes.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < FRAGMENT_HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn off_m(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::FRAG_OFF_M];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// Next Header.
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field::NXT_HDR])
    }

    /// The Reserved byte.
    pub fn reserved(&self) -> u8 {
        self.buffer.as_ref()[field::FRAG_RESERVED]
    }

    /// Fragment Offset **in bytes** (the field × 8).
    pub fn frag_offset(&self) -> u16 {
        self.off_m() & 0xfff8
    }

    /// The M (more fragments) flag.
    pub fn more_frags(&self) -> bool {
        self.off_m() & 1 != 0
    }

    /// Identification.
    pub fn ident(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::FRAG_IDENT];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6FragmentHeader<T> {
    /// Sets Next Header.
    pub fn set_next_header(&mut self, value: IpProtocol) {
        self.buffer.as_mut()[field::NXT_HDR] = value.0;
    }

    /// Sets the Reserved byte.
    pub fn set_reserved(&mut self, value: u8) {
        self.buffer.as_mut()[field::FRAG_RESERVED] = value;
    }

    fn set_off_m(&mut self, value: u16) {
        self.buffer.as_mut()[field::FRAG_OFF_M].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets Fragment Offset **in bytes** (a multiple of 8); clears the two
    /// reserved bits.
    pub fn set_frag_offset(&mut self, offset: u16) {
        debug_assert!(
            offset & 7 == 0,
            "fragment offset {offset} not a multiple of 8"
        );
        let m = self.off_m() & 1;
        self.set_off_m((offset & 0xfff8) | m);
    }

    /// Sets the M flag.
    pub fn set_more_frags(&mut self, value: bool) {
        let off = self.off_m() & 0xfffe;
        self.set_off_m(off | u16::from(value));
    }

    /// Sets Identification.
    pub fn set_ident(&mut self, value: u32) {
        self.buffer.as_mut()[field::FRAG_IDENT].copy_from_slice(&value.to_be_bytes());
    }
}

/// A Fragment header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6FragmentRepr {
    /// Next Header.
    pub next_header: IpProtocol,
    /// Fragment Offset in bytes (a multiple of 8).
    pub frag_offset: u16,
    /// The M flag.
    pub more_frags: bool,
    /// Identification.
    pub ident: u32,
}

impl Ipv6FragmentRepr {
    /// Parses a view (reserved fields are ignored, RFC 8200 §4.5).
    pub fn parse<T: AsRef<[u8]>>(header: &Ipv6FragmentHeader<T>) -> Result<Self> {
        header.check_len()?;
        Ok(Ipv6FragmentRepr {
            next_header: header.next_header(),
            frag_offset: header.frag_offset(),
            more_frags: header.more_frags(),
            ident: header.ident(),
        })
    }

    /// Length of the header `emit` writes: 8.
    pub const fn buffer_len(&self) -> usize {
        FRAGMENT_HEADER_LEN
    }

    /// Writes the header, reserved fields zero.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, header: &mut Ipv6FragmentHeader<T>) {
        header.set_next_header(self.next_header);
        header.set_reserved(0);
        header.set_off_m(0);
        header.set_frag_offset(self.frag_offset);
        header.set_more_frags(self.more_frags);
        header.set_ident(self.ident);
    }
}

/// The most extension headers [`ipv6_header_chain`] walks before giving up
/// with [`Error::Malformed`] (an implementation limit, not an RFC one).
pub const MAX_EXT_HEADERS: usize = 16;

/// One extension header found by [`ipv6_header_chain`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChainEntry {
    /// Which header this is (HOPOPT, IPV6_ROUTE, IPV6_FRAG, IPV6_OPTS).
    pub protocol: IpProtocol,
    /// Offset from the start of the IPv6 packet.
    pub offset: usize,
    /// Length in bytes.
    pub len: usize,
}

impl ChainEntry {
    const EMPTY: ChainEntry = ChainEntry {
        protocol: IpProtocol::IPV6_NONXT,
        offset: 0,
        len: 0,
    };
}

/// The header chain of an IPv6 packet, from [`ipv6_header_chain`].
///
/// Offsets are from the start of the IPv6 packet. A "next header field" is
/// the offset of the byte that names a header: 6 (in the fixed header) or
/// the first byte of the preceding extension header; rewrite it when you
/// insert or remove a header there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv6Chain {
    entries: [ChainEntry; MAX_EXT_HEADERS],
    count: usize,
    upper_protocol: IpProtocol,
    upper_offset: usize,
    upper_field: usize,
    insert_offset: usize,
    insert_field: usize,
    insert_protocol: IpProtocol,
    packet_len: usize,
    fragment: bool,
    fragment_offset: u16,
}

impl Ipv6Chain {
    /// The extension headers walked, in order.
    pub fn headers(&self) -> &[ChainEntry] {
        &self.entries[..self.count]
    }

    /// The first header that is not HOPOPT, IPV6_ROUTE, IPV6_FRAG or
    /// IPV6_OPTS: the upper-layer protocol, or ESP/AH/IPComp, or
    /// IPV6_NONXT. After a non-first fragment it is the Fragment header's
    /// Next Header and the bytes at `upper_offset` are not a header.
    pub fn upper_protocol(&self) -> IpProtocol {
        self.upper_protocol
    }

    /// Offset of the upper-layer header.
    pub fn upper_offset(&self) -> usize {
        self.upper_offset
    }

    /// Offset of the next header field that names the upper-layer
    /// protocol (where inbound processing writes the ESP trailer's Next
    /// Header back after removing ESP in transport mode).
    pub fn upper_next_header_field(&self) -> usize {
        self.upper_field
    }

    /// Where an ESP or AH header goes in transport mode (RFC 4303 §3.1.1,
    /// RFC 4302 §3.1.1): after Hop-by-Hop, Routing and Fragment headers
    /// (and so after any Destination Options before a Routing header), and
    /// before Destination Options that follow them.
    pub fn ipsec_insert_offset(&self) -> usize {
        self.insert_offset
    }

    /// Offset of the next header field that names the header now at
    /// [`ipsec_insert_offset`](Self::ipsec_insert_offset); it must be set
    /// to ESP/AH after insertion.
    pub fn ipsec_next_header_field(&self) -> usize {
        self.insert_field
    }

    /// The protocol now at [`ipsec_insert_offset`](Self::ipsec_insert_offset):
    /// the Next Header that the ESP trailer or AH header carries.
    pub fn ipsec_next_header(&self) -> IpProtocol {
        self.insert_protocol
    }

    /// 40 + Payload Length: where the packet ends (trailing bytes of the
    /// buffer are not part of it).
    pub fn packet_len(&self) -> usize {
        self.packet_len
    }

    /// Whether a Fragment header was seen.
    pub fn has_fragment(&self) -> bool {
        self.fragment
    }

    /// The Fragment header's Fragment Offset in bytes (0 without one): not 0
    /// for a fragment that does not start the datagram, whose upper-layer
    /// header (ports) is elsewhere.
    pub fn fragment_offset(&self) -> u16 {
        self.fragment_offset
    }
}

/// Walks an IPv6 packet's extension headers.
///
/// Starts at the fixed header and walks Hop-by-Hop, Routing, Fragment and
/// Destination Options headers; stops at any other protocol (the
/// upper layer, ESP, AH, IPComp, No Next Header) and after a Fragment
/// header with a non-zero offset (what follows is not a header).
///
/// Errors: [`Error::Truncated`] if a header runs past the buffer or the
/// packet's Payload Length; [`Error::BadVersion`] if the version is not 6;
/// [`Error::Malformed`] if Hop-by-Hop is not first (RFC 8200 §4.1), an
/// option overruns its header, or there are more than [`MAX_EXT_HEADERS`].
pub fn ipv6_header_chain(packet: &[u8]) -> Result<Ipv6Chain> {
    let ip = Ipv6Packet::new_checked(packet)?;
    if ip.version() != 6 {
        return Err(Error::BadVersion);
    }
    let packet = ip.packet();
    let mut chain = Ipv6Chain {
        entries: [ChainEntry::EMPTY; MAX_EXT_HEADERS],
        count: 0,
        upper_protocol: ip.next_header(),
        upper_offset: IPV6_HEADER_LEN,
        upper_field: NEXT_HEADER_OFFSET,
        insert_offset: IPV6_HEADER_LEN,
        insert_field: NEXT_HEADER_OFFSET,
        insert_protocol: ip.next_header(),
        packet_len: packet.len(),
        fragment: false,
        fragment_offset: 0,
    };
    let mut next = ip.next_header();
    let mut offset = IPV6_HEADER_LEN;
    loop {
        if !matches!(
            next,
            IpProtocol::HOPOPT
                | IpProtocol::IPV6_ROUTE
                | IpProtocol::IPV6_FRAG
                | IpProtocol::IPV6_OPTS
        ) {
            break;
        }
        if (next == IpProtocol::HOPOPT && chain.count != 0) || chain.count == MAX_EXT_HEADERS {
            return Err(Error::Malformed);
        }
        let rest = &packet[offset..];
        let (len, following, stop) = match next {
            IpProtocol::IPV6_FRAG => {
                let h = Ipv6FragmentHeader::new_checked(rest)?;
                chain.fragment = true;
                chain.fragment_offset = h.frag_offset();
                (FRAGMENT_HEADER_LEN, h.next_header(), h.frag_offset() != 0)
            }
            IpProtocol::IPV6_ROUTE => {
                let h = Ipv6RoutingHeader::new_checked(rest)?;
                (h.byte_len(), h.next_header(), false)
            }
            _ => {
                let h = Ipv6OptionsHeader::new_checked(rest)?;
                (h.byte_len(), h.next_header(), false)
            }
        };
        chain.entries[chain.count] = ChainEntry {
            protocol: next,
            offset,
            len,
        };
        chain.count += 1;
        if next != IpProtocol::IPV6_OPTS {
            // Destination Options before a Routing header are covered too,
            // since the Routing header that follows them moves the point.
            chain.insert_offset = offset + len;
            chain.insert_field = offset;
            chain.insert_protocol = following;
        }
        chain.upper_field = offset;
        offset += len;
        next = following;
        if stop {
            break;
        }
    }
    chain.upper_protocol = next;
    chain.upper_offset = offset;
    Ok(chain)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    // scapy: IPv6(src="2001:db8::1", dst="2001:db8::2", hlim=64)
    //   /IPv6ExtHdrHopByHop(options=[RouterAlert()])
    //   /IPv6ExtHdrDestOpt(options=[PadN(optdata=b"\0\0\0\0")])
    //   /IPv6ExtHdrRouting(addresses=["2001:db8::3"])
    //   /IPv6ExtHdrFragment(id=0xdeadbeef, offset=0, m=0)
    //   /IPv6ExtHdrDestOpt(options=[HAO(hoa="2001:db8::99")])
    //   /UDP(sport=1000, dport=2000)/b"xyz"
    // Layout: fixed 0..40, HBH 40..48, DO 48..56, RH 56..80, FH 80..88,
    // DO 88..112, UDP 112..123.
    pub(crate) const IPV6_CHAIN: [u8; 123] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x53, 0x00, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x3c, 0x00, 0x05, 0x02, 0x00,
        0x00, 0x01, 0x00, 0x2b, 0x00, 0x01, 0x04, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x02, 0x00, 0x01,
        0x00, 0x00, 0x00, 0x00, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x03, 0x3c, 0x00, 0x00, 0x00, 0xde, 0xad, 0xbe, 0xef, 0x11, 0x02,
        0x01, 0x02, 0x00, 0x00, 0xc9, 0x10, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x99, 0x03, 0xe8, 0x07, 0xd0, 0x00, 0x0b, 0xa5, 0x98,
        0x78, 0x79, 0x7a,
    ];

    fn entry(protocol: IpProtocol, offset: usize, len: usize) -> ChainEntry {
        ChainEntry {
            protocol,
            offset,
            len,
        }
    }

    #[test]
    fn test_parse() {
        let hbh = Ipv6OptionsHeader::new_checked(&IPV6_CHAIN[40..48]).unwrap();
        assert_eq!(hbh.next_header(), IpProtocol::IPV6_OPTS);
        assert_eq!(hbh.header_len(), 0);
        assert_eq!(hbh.byte_len(), 8);
        let opts: Vec<_> = hbh.options().collect();
        assert_eq!(opts, vec![(5, &[0u8, 0][..]), (OPT_PADN, &[][..])]);

        let rh = Ipv6RoutingHeader::new_checked(&IPV6_CHAIN[56..]).unwrap();
        assert_eq!(rh.next_header(), IpProtocol::IPV6_FRAG);
        assert_eq!(rh.header_len(), 2);
        assert_eq!(rh.byte_len(), 24);
        assert_eq!(rh.routing_type(), 0);
        assert_eq!(rh.segments_left(), 1);
        assert_eq!(rh.data(), &IPV6_CHAIN[60..80]);

        let fh = Ipv6FragmentHeader::new_checked(&IPV6_CHAIN[80..]).unwrap();
        assert_eq!(fh.next_header(), IpProtocol::IPV6_OPTS);
        assert_eq!(fh.frag_offset(), 0);
        assert!(!fh.more_frags());
        assert_eq!(fh.ident(), 0xdead_beef);
        assert_eq!(fh.reserved(), 0);
        let repr = Ipv6FragmentRepr::parse(&fh).unwrap();
        assert_eq!(repr.ident, 0xdead_beef);

        let dst = Ipv6OptionsHeader::new_checked(&IPV6_CHAIN[88..]).unwrap();
        assert_eq!(dst.byte_len(), 24);
        let opts: Vec<_> = dst.options().collect();
        assert_eq!(opts.len(), 2);
        assert_eq!(opts[0], (OPT_PADN, &[0u8, 0][..]));
        assert_eq!(opts[1].0, 0xc9);
        assert_eq!(opts[1].1, &IPV6_CHAIN[96..112]);
        assert!(option_type_is_mutable(0x3e));
        assert!(!option_type_is_mutable(0xc9));
        assert_eq!(option_type_action(0xc9), 3);
    }

    #[test]
    fn test_chain() {
        let chain = ipv6_header_chain(&IPV6_CHAIN).unwrap();
        assert_eq!(
            chain.headers(),
            &[
                entry(IpProtocol::HOPOPT, 40, 8),
                entry(IpProtocol::IPV6_OPTS, 48, 8),
                entry(IpProtocol::IPV6_ROUTE, 56, 24),
                entry(IpProtocol::IPV6_FRAG, 80, 8),
                entry(IpProtocol::IPV6_OPTS, 88, 24),
            ]
        );
        assert_eq!(chain.upper_protocol(), IpProtocol::UDP);
        assert_eq!(chain.upper_offset(), 112);
        assert_eq!(chain.upper_next_header_field(), 88);
        // ESP/AH go after the Fragment header, before the last Dest. Opts.
        assert_eq!(chain.ipsec_insert_offset(), 88);
        assert_eq!(chain.ipsec_next_header_field(), 80);
        assert_eq!(chain.ipsec_next_header(), IpProtocol::IPV6_OPTS);
        assert_eq!(chain.packet_len(), 123);
        assert!(chain.has_fragment());
    }

    #[test]
    fn test_chain_simple_and_dest_opts_only() {
        let chain = ipv6_header_chain(&crate::ipv6::tests::IPV6_UDP).unwrap();
        assert!(chain.headers().is_empty());
        assert_eq!(chain.upper_protocol(), IpProtocol::UDP);
        assert_eq!(chain.upper_offset(), 40);
        assert_eq!(chain.ipsec_insert_offset(), 40);
        assert_eq!(chain.ipsec_next_header_field(), 6);
        assert_eq!(chain.ipsec_next_header(), IpProtocol::UDP);

        // Fixed header + HBH(next = DO) + DO(next = UDP): insert after HBH.
        let mut p = [0u8; 56];
        p[..40].copy_from_slice(&IPV6_CHAIN[..40]);
        p[5] = 16;
        p[40..48].copy_from_slice(&IPV6_CHAIN[40..48]);
        p[48..56].copy_from_slice(&[17, 0, 1, 4, 0, 0, 0, 0]);
        let chain = ipv6_header_chain(&p).unwrap();
        assert_eq!(chain.ipsec_insert_offset(), 48);
        assert_eq!(chain.ipsec_next_header_field(), 40);
        assert_eq!(chain.upper_offset(), 56);
        assert_eq!(chain.upper_protocol(), IpProtocol::UDP);
        assert!(!chain.has_fragment());
    }

    #[test]
    fn test_chain_errors() {
        // Every truncation is an error, never a panic.
        for n in 0..IPV6_CHAIN.len() {
            assert!(ipv6_header_chain(&IPV6_CHAIN[..n]).is_err(), "len {n}");
        }
        // A Payload Length that cuts the chain: Truncated.
        let mut p = IPV6_CHAIN;
        p[5] = 50;
        assert_eq!(ipv6_header_chain(&p[..90]).err(), Some(Error::Truncated));
        // Hop-by-Hop not first.
        let mut p = IPV6_CHAIN;
        p[48] = 0;
        assert_eq!(ipv6_header_chain(&p).err(), Some(Error::Malformed));
        // An option overrunning its header.
        let mut p = IPV6_CHAIN;
        p[43] = 6;
        assert_eq!(ipv6_header_chain(&p).err(), Some(Error::Malformed));
        // 17 Destination Options headers in a row: over the bound.
        let mut p = [0u8; 40 + 8 * 17];
        p[..40].copy_from_slice(&IPV6_CHAIN[..40]);
        p[4..6].copy_from_slice(&(8u16 * 17).to_be_bytes());
        p[6] = 60;
        for i in 0..17 {
            p[40 + 8 * i] = if i == 16 { 59 } else { 60 };
            p[40 + 8 * i + 2] = 1;
            p[40 + 8 * i + 3] = 4;
        }
        assert_eq!(ipv6_header_chain(&p).err(), Some(Error::Malformed));
        // 16 is fine.
        p[40 + 8 * 15] = 59;
        let chain = ipv6_header_chain(&p).unwrap();
        assert_eq!(chain.headers().len(), 16);
        assert_eq!(chain.upper_protocol(), IpProtocol::IPV6_NONXT);
        // Version 4 in the fixed header.
        let mut p = IPV6_CHAIN;
        p[0] = 0x40;
        assert_eq!(ipv6_header_chain(&p).err(), Some(Error::BadVersion));
    }

    #[test]
    fn test_non_first_fragment_stops_walk() {
        let mut p = IPV6_CHAIN;
        p[82..84].copy_from_slice(&0x0100u16.to_be_bytes()); // offset 256
        let chain = ipv6_header_chain(&p).unwrap();
        assert_eq!(chain.headers().len(), 4);
        assert_eq!(chain.upper_protocol(), IpProtocol::IPV6_OPTS);
        assert_eq!(chain.upper_offset(), 88);
    }

    #[test]
    fn test_emit() {
        let repr = Ipv6FragmentRepr {
            next_header: IpProtocol::IPV6_OPTS,
            frag_offset: 0,
            more_frags: false,
            ident: 0xdead_beef,
        };
        let mut buf = [0xffu8; 8];
        repr.emit(&mut Ipv6FragmentHeader::new_unchecked(&mut buf[..]));
        assert_eq!(buf, IPV6_CHAIN[80..88]);
        assert_eq!(repr.buffer_len(), 8);
        let mut h = Ipv6FragmentHeader::new_unchecked(&mut buf[..]);
        h.set_frag_offset(1448);
        h.set_more_frags(true);
        assert_eq!((h.frag_offset(), h.more_frags()), (1448, true));
        h.set_more_frags(false);
        assert_eq!((h.frag_offset(), h.more_frags()), (1448, false));

        let mut rh = IPV6_CHAIN;
        let mut h = Ipv6RoutingHeader::new_unchecked(&mut rh[56..80]);
        h.set_segments_left(0);
        h.set_routing_type(2);
        h.data_mut()[0] = 1;
        assert_eq!((rh[58], rh[59], rh[60]), (2, 0, 1));
    }

    #[test]
    fn test_zero_mutable_options() {
        // A Destination Options header with a mutable option 0x3e of 4 bytes
        // and an immutable one 0x1e of 0 bytes.
        let mut b = [17, 0, 0x3e, 4, 1, 2, 3, 4];
        let mut h = Ipv6OptionsHeader::new_checked(&mut b[..]).unwrap();
        h.zero_mutable_options();
        assert_eq!(b, [17, 0, 0x3e, 4, 0, 0, 0, 0]);
        let mut b = [17, 0, 0x1e, 4, 1, 2, 3, 4];
        Ipv6OptionsHeader::new_checked(&mut b[..])
            .unwrap()
            .zero_mutable_options();
        assert_eq!(b, [17, 0, 0x1e, 4, 1, 2, 3, 4]);
    }

    #[test]
    fn test_check_len() {
        for n in 0..8 {
            assert_eq!(
                Ipv6OptionsHeader::new_checked(&IPV6_CHAIN[40..40 + n]).err(),
                Some(Error::Truncated)
            );
            assert!(Ipv6FragmentHeader::new_checked(&IPV6_CHAIN[80..80 + n]).is_err());
        }
        for n in 0..24 {
            assert!(Ipv6RoutingHeader::new_checked(&IPV6_CHAIN[56..56 + n]).is_err());
            assert!(Ipv6OptionsHeader::new_checked(&IPV6_CHAIN[88..88 + n]).is_err());
        }
        // Pad1 everywhere is fine; an option type at the last byte is not.
        assert!(Ipv6OptionsHeader::new_checked(&[17u8, 0, 0, 0, 0, 0, 0, 0][..]).is_ok());
        assert_eq!(
            Ipv6OptionsHeader::new_checked(&[17u8, 0, 0, 0, 0, 0, 0, 5][..]).err(),
            Some(Error::Malformed)
        );
        // The iterator over an unchecked malformed header just stops.
        let h = Ipv6OptionsHeader::new_unchecked(&[17u8, 0, 0, 0, 0, 0, 0, 5][..]);
        assert_eq!(h.options().count(), 5);
    }
}
