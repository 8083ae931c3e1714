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

use core::ops::Range;
use std::net::{IpAddr, SocketAddr};

use crate::iana::IpProtocol;
use crate::ip::{version_of, IpRepr, IpVersion};
use crate::ipv4::Ipv4Packet;
use crate::ipv6::{self, Ipv6Packet};
use crate::ipv6ext::ipv6_header_chain;
use crate::udp::{self, UdpPacket, UdpRepr};
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

/// A whole IP/UDP datagram, as a capture or a fuzzer holds it: who sent it
/// to whom, its TOS / traffic class, and where its payload is. The daemon
/// does not need this (its UDP sockets hand over the payload and the
/// addresses, and take them back); tools and tests that work on whole
/// packets do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datagram {
    /// The sender.
    pub src: SocketAddr,
    /// The receiver.
    pub dst: SocketAddr,
    /// IPv4 DSCP/ECN or IPv6 Traffic Class.
    pub tos: u8,
    /// Where the UDP payload is in the packet.
    pub payload: Range<usize>,
}

impl Datagram {
    /// Reads an IPv4 or IPv6 packet (options and extension headers are
    /// skipped) that carries one whole UDP datagram ([`Error::Malformed`] for
    /// another protocol or a fragment). The checksum is not verified.
    pub fn parse(packet: &[u8]) -> Result<Datagram> {
        let (src, dst, tos, at, end): (IpAddr, IpAddr, u8, usize, usize) = match version_of(packet)?
        {
            IpVersion::V4 => {
                let p = Ipv4Packet::new_checked(packet)?;
                if p.next_header() != IpProtocol::UDP || p.is_fragment() {
                    return Err(Error::Malformed);
                }
                let (src, dst) = (p.src_addr().into(), p.dst_addr().into());
                (
                    src,
                    dst,
                    p.dscp_ecn(),
                    p.header_len(),
                    usize::from(p.total_len()),
                )
            }
            IpVersion::V6 => {
                let p = Ipv6Packet::new_checked(packet)?;
                let chain = ipv6_header_chain(packet)?;
                if chain.upper_protocol() != IpProtocol::UDP || chain.has_fragment() {
                    return Err(Error::Malformed);
                }
                let (src, dst) = (p.src_addr().into(), p.dst_addr().into());
                let (at, end) = (chain.upper_offset(), chain.packet_len());
                (src, dst, p.traffic_class(), at, end)
            }
        };
        let u = UdpPacket::new_checked(packet.get(at..end).ok_or(Error::Truncated)?)?;
        Ok(Datagram {
            src: SocketAddr::new(src, u.src_port()),
            dst: SocketAddr::new(dst, u.dst_port()),
            tos,
            payload: at + udp::HEADER_LEN..at + usize::from(u.len()),
        })
    }

    /// The packet a UDP socket would send: IP and UDP headers in front of
    /// `payload`, the UDP checksum zero over IPv4 (RFC 3948 §2.1 allows it)
    /// and filled over IPv6 (RFC 8200 §8.1). [`Error::Malformed`] for mixed
    /// families or a payload too large for one datagram.
    pub fn build(src: SocketAddr, dst: SocketAddr, tos: u8, payload: &[u8]) -> Result<Vec<u8>> {
        let udp_len = udp::HEADER_LEN + payload.len();
        if udp_len > usize::from(u16::MAX) - ipv6::HEADER_LEN {
            return Err(Error::Malformed);
        }
        let ip = IpRepr {
            src: src.ip(),
            dst: dst.ip(),
            next_header: IpProtocol::UDP,
            payload_len: udp_len,
            hop_limit: 64,
            tos,
        };
        let at = ip.buffer_len();
        let mut packet = vec![0u8; at + udp_len];
        ip.emit(&mut packet)?;
        let mut u = UdpPacket::new_unchecked(&mut packet[at..]);
        UdpRepr {
            src_port: src.port(),
            dst_port: dst.port(),
            payload_len: payload.len(),
        }
        .emit(&mut u);
        u.payload_mut().copy_from_slice(payload);
        if src.is_ipv6() {
            u.fill_checksum(&src.ip(), &dst.ip());
        }
        Ok(packet)
    }
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
    fn test_datagram_round_trip() {
        for (a, b) in [
            ("192.0.2.1:4500", "192.0.2.2:4501"),
            ("[2001:db8::1]:4500", "[2001:db8::2]:4500"),
        ] {
            let (src, dst): (SocketAddr, SocketAddr) = (a.parse().unwrap(), b.parse().unwrap());
            let packet = Datagram::build(src, dst, 0x03, b"payload").unwrap();
            let d = Datagram::parse(&packet).unwrap();
            assert_eq!((d.src, d.dst, d.tos), (src, dst, 0x03));
            assert_eq!(&packet[d.payload], b"payload");
        }
        let v4: SocketAddr = "192.0.2.1:1".parse().unwrap();
        let v6: SocketAddr = "[2001:db8::1]:1".parse().unwrap();
        assert_eq!(Datagram::build(v4, v6, 0, b""), Err(Error::Malformed));
        let mut tcp = Datagram::build(v4, v4, 0, b"x").unwrap();
        tcp[9] = 6;
        assert_eq!(Datagram::parse(&tcp), Err(Error::Malformed));
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
