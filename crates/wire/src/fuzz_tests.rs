//! No-panic test: every prefix and suffix of the captured packets, mutated
//! copies of them and a few thousand pseudo-random byte strings go through
//! every `new_checked`, every accessor and every `parse`. The panic
//! contract (lib.rs) says none of it may panic.
//!
//! The IKE messages get the same treatment through `ike::Header::parse`,
//! `ike::Message::parse` and `ike::parse_payloads` with every first payload
//! type; what parses is emitted and parsed again and must come back equal.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::ike::{self, PayloadType};
use crate::ipv6ext::Ipv6FragmentRepr;
use crate::*;

/// xorshift64*: enough randomness for this, and no dependency.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn captured() -> Vec<&'static [u8]> {
    vec![
        &ipv4::tests::IPV4_UDP,
        &ipv4::tests::IPV4_OPTS,
        &ipv6::tests::IPV6_UDP,
        &ipv6ext::tests::IPV6_CHAIN,
        &esp::tests::IPV4_ESP_NULL,
        &ah::tests::IPV4_AH,
        &ah::tests::IPV6_AH,
        &ipcomp::tests::IPV4_IPCOMP,
        &udp_encap::tests::IKE_ON_4500,
    ]
}

fn ipv4(b: &[u8]) {
    if let Ok(p) = Ipv4Packet::new_checked(b) {
        let _ = (
            p.version(),
            p.header_len(),
            p.dscp_ecn(),
            p.tos(),
            p.total_len(),
        );
        let _ = (p.ident(), p.dont_frag(), p.more_frags(), p.frag_offset());
        let _ = (
            p.is_fragment(),
            p.ttl(),
            p.hop_limit(),
            p.next_header(),
            p.checksum(),
        );
        let _ = (p.src_addr(), p.dst_addr(), p.verify_checksum());
        let _ = (p.options(), p.payload());
        let _ = Ipv4Repr::parse(&p);
        let mut v = b.to_vec();
        let mut p = Ipv4Packet::new_checked(&mut v[..]).unwrap();
        p.fill_checksum();
        p.options_mut().fill(1);
        p.payload_mut().fill(2);
    }
}

fn ipv6(b: &[u8]) {
    if let Ok(p) = Ipv6Packet::new_checked(b) {
        let _ = (
            p.version(),
            p.traffic_class(),
            p.flow_label(),
            p.payload_len(),
        );
        let _ = (p.next_header(), p.hop_limit(), p.src_addr(), p.dst_addr());
        let _ = (p.payload(), p.packet());
        let _ = Ipv6Repr::parse(&p);
        let mut v = b.to_vec();
        Ipv6Packet::new_checked(&mut v[..])
            .unwrap()
            .payload_mut()
            .fill(1);
    }
    if let Ok(chain) = ipv6_header_chain(b) {
        assert!(chain.packet_len() <= b.len());
        assert!(chain.headers().len() <= ipv6ext::MAX_EXT_HEADERS);
        for h in chain.headers() {
            assert!(h.offset + h.len <= chain.packet_len());
        }
        assert!(chain.upper_offset() <= chain.packet_len());
        assert!(chain.ipsec_insert_offset() <= chain.upper_offset());
        assert!(chain.ipsec_next_header_field() < chain.ipsec_insert_offset());
        assert!(chain.upper_next_header_field() < chain.upper_offset());
        assert_eq!(
            b[chain.ipsec_next_header_field()],
            chain.ipsec_next_header().0
        );
        assert_eq!(b[chain.upper_next_header_field()], chain.upper_protocol().0);
    }
}

fn ipv6ext(b: &[u8]) {
    if let Ok(h) = Ipv6OptionsHeader::new_checked(b) {
        let _ = (
            h.next_header(),
            h.header_len(),
            h.byte_len(),
            h.options_data(),
        );
        let total: usize = h
            .options()
            .map(|(ty, d)| if ty == 0 { 1 } else { 2 + d.len() })
            .sum();
        assert_eq!(total, h.options_data().len());
        let mut v = b.to_vec();
        Ipv6OptionsHeader::new_checked(&mut v[..])
            .unwrap()
            .zero_mutable_options();
    }
    // Unchecked options iteration over any 8+ bytes whose length fits.
    if b.len() >= 2 && (usize::from(b[1]) + 1) * 8 <= b.len() {
        let _ = Ipv6OptionsHeader::new_unchecked(b).options().count();
    }
    if let Ok(h) = Ipv6RoutingHeader::new_checked(b) {
        let _ = (
            h.next_header(),
            h.header_len(),
            h.byte_len(),
            h.routing_type(),
        );
        let _ = (h.segments_left(), h.data());
    }
    if let Ok(h) = Ipv6FragmentHeader::new_checked(b) {
        let _ = (
            h.next_header(),
            h.reserved(),
            h.frag_offset(),
            h.more_frags(),
            h.ident(),
        );
        let _ = Ipv6FragmentRepr::parse(&h);
    }
}

fn transport(b: &[u8]) {
    let addrs: [(IpAddr, IpAddr); 2] = [
        (
            Ipv4Addr::new(192, 0, 2, 1).into(),
            Ipv4Addr::new(192, 0, 2, 2).into(),
        ),
        (Ipv6Addr::LOCALHOST.into(), Ipv6Addr::UNSPECIFIED.into()),
    ];
    if let Ok(p) = UdpPacket::new_checked(b) {
        let _ = (
            p.src_port(),
            p.dst_port(),
            p.len(),
            p.is_empty(),
            p.checksum(),
            p.payload(),
        );
        for (s, d) in &addrs {
            let _ = p.verify_checksum(s, d);
            let _ = UdpRepr::parse(&p, s, d);
        }
        let mut v = b.to_vec();
        let mut p = UdpPacket::new_checked(&mut v[..]).unwrap();
        p.fill_checksum(&addrs[1].0, &addrs[1].1);
        p.payload_mut().fill(0);
    }
    if let Ok(p) = EspPacket::new_checked(b) {
        let _ = (p.spi(), p.seq_number(), p.payload(), EspRepr::parse(&p));
    }
    if let Ok((len, t)) = EspTrailer::parse(b) {
        assert_eq!(len + t.buffer_len(), b.len());
    }
    if let Ok(p) = AhPacket::new_checked(b) {
        let _ = (
            p.next_header(),
            p.payload_len(),
            p.header_len(),
            p.icv_len(),
        );
        let _ = (p.reserved(), p.spi(), p.seq_number(), p.icv(), p.payload());
        let _ = (AhRepr::parse(&p, false), AhRepr::parse(&p, true));
        let mut v = b.to_vec();
        let mut p = AhPacket::new_checked(&mut v[..]).unwrap();
        p.icv_mut().fill(0);
        p.payload_mut().fill(0);
    }
    if let Ok(p) = IpCompPacket::new_checked(b) {
        let _ = (
            p.next_header(),
            p.flags(),
            p.cpi(),
            p.transform(),
            p.payload(),
        );
        let _ = IpCompRepr::parse(&p);
    }
    if let Ok(UdpEncap::Ike(m) | UdpEncap::Esp(m)) = udp_encap::classify(b) {
        assert!(m.len() >= 4);
    }
}

fn exercise(b: &[u8]) {
    let _ = version_of(b);
    let _ = checksum::data(b);
    ipv4(b);
    ipv6(b);
    ipv6ext(b);
    transport(b);
}

#[test]
fn every_prefix_and_suffix_of_captured_packets() {
    for p in captured() {
        for start in 0..=p.len() {
            for end in start..=p.len() {
                exercise(&p[start..end]);
            }
        }
    }
}

#[test]
fn mutated_captured_packets() {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let packets = captured();
    for _ in 0..20_000 {
        let mut v = packets[rng.below(packets.len())].to_vec();
        for _ in 0..1 + rng.below(4) {
            let i = rng.below(v.len());
            v[i] = rng.next() as u8;
        }
        exercise(&v);
    }
}

#[test]
fn pseudo_random_bytes() {
    let mut rng = XorShift(0x1234_5678_9abc_def1);
    for i in 0..5_000 {
        let len = rng.below(160);
        let mut v: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        // Steer half of them towards deeper parsing: a plausible version
        // nibble and small length fields.
        if i % 2 == 0 && len > 8 {
            v[0] = if i % 4 == 0 { 0x45 } else { 0x60 };
            v[1] &= 0x03;
        }
        exercise(&v);
    }
}

// ---------------------------------------------------------------------------
// IKE
// ---------------------------------------------------------------------------

fn ike_messages() -> Vec<Vec<u8>> {
    vec![
        ike::tests::IKE_SA_INIT.to_vec(),
        ike::tests::ike_auth_plain().emit(),
        ike::tests::informational_sk().emit(),
    ]
}

/// The payload types a chain may start with that reach different code:
/// every registered one and an unregistered one.
const FIRST_TYPES: [u8; 20] = [
    0, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 53, 1, 200,
];

/// Parses `b` as a chain starting with `first`; re-emits what parsed and
/// checks that it reads back the same.
fn ike_chain(first: PayloadType, b: &[u8]) {
    if let Ok(p) = ike::parse_payloads(first, b) {
        assert!(p.len() <= ike::MAX_PAYLOADS);
        assert_eq!(
            ike::first_type(&p),
            if p.is_empty() {
                PayloadType::NONE
            } else {
                first
            }
        );
        let again = ike::emit_payloads(&p);
        assert!(again.len() <= b.len());
        assert_eq!(ike::parse_payloads(first, &again).as_ref(), Ok(&p));
    }
}

fn ike_exercise(b: &[u8], first_types: &[u8]) {
    if let Ok(h) = ike::Header::parse(b) {
        assert!(h.length as usize <= b.len());
        let mut again = b.to_vec();
        h.emit(&mut again);
        assert_eq!(ike::Header::parse(&again).as_ref(), Ok(&h));
    }
    if let Ok(m) = ike::Message::parse(b) {
        let again = ike::Message::parse(&m.emit()).unwrap();
        assert_eq!(again.payloads, m.payloads);
        let header = ike::Header {
            length: again.header.length,
            ..m.header.clone()
        };
        assert_eq!(again.header, header);
    }
    for &t in first_types {
        ike_chain(PayloadType(t), b);
    }
}

#[test]
fn ike_every_prefix_and_suffix() {
    for m in ike_messages() {
        for start in 0..=m.len() {
            for end in start..=m.len() {
                ike_exercise(&m[start..end], &FIRST_TYPES);
            }
        }
    }
}

#[test]
fn ike_mutated_messages() {
    let mut rng = XorShift(0x5851_f42d_4c95_7f2d);
    let messages = ike_messages();
    for _ in 0..20_000 {
        let mut v = messages[rng.below(messages.len())].clone();
        for _ in 0..1 + rng.below(4) {
            let i = rng.below(v.len());
            // Small values half the time: they hit counts, sizes and
            // Last Substruc fields where they mean something.
            v[i] = if rng.below(2) == 0 {
                rng.next() as u8
            } else {
                rng.below(9) as u8
            };
        }
        if rng.below(4) == 0 {
            v.truncate(rng.below(v.len() + 1));
            let len = v.len() as u32;
            if v.len() >= ike::HEADER_LEN {
                v[24..28].copy_from_slice(&len.to_be_bytes());
            }
        }
        ike_exercise(&v, &FIRST_TYPES);
        if v.len() > ike::HEADER_LEN {
            ike_exercise(&v[ike::HEADER_LEN..], &[v[16]]);
        }
    }
}

#[test]
fn ike_pseudo_random_bytes() {
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let all: Vec<u8> = (0..=255).collect();
    for i in 0..5_000 {
        let len = rng.below(200);
        let mut v: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        // Steer half of them past the header: Length right, Next Payload
        // a registered type, and a first generic header of sane length.
        if i % 2 == 0 && len >= ike::HEADER_LEN + 4 {
            v[16] = FIRST_TYPES[rng.below(FIRST_TYPES.len())];
            v[24..28].copy_from_slice(&(len as u32).to_be_bytes());
            let first = (rng.below(len - ike::HEADER_LEN - 3) + 4) as u16;
            v[30..32].copy_from_slice(&first.to_be_bytes());
        }
        ike_exercise(&v, &all);
    }
}

/// Writes fuzz/seeds/ike_message/: `cargo test -p flowsec-wire --lib --
/// --ignored generate_ike_fuzz_seeds`. A seed is read by the target both as
/// a message and as a selector byte plus a payload chain, so each message
/// is written both ways.
#[test]
#[ignore = "writes fuzz/seeds; run by hand"]
fn generate_ike_fuzz_seeds() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/ike_message");
    std::fs::create_dir_all(&dir).unwrap();
    let names = ["ike-sa-init", "ike-auth-plain", "informational-sk"];
    for (name, m) in names.iter().zip(ike_messages()) {
        std::fs::write(dir.join(name), &m).unwrap();
        let mut chain = vec![m[16]];
        chain.extend_from_slice(&m[ike::HEADER_LEN..]);
        std::fs::write(dir.join(format!("chain-{name}")), chain).unwrap();
    }
}

/// RFC 9329 streams: a valid stream (prefix, IKE, ESP, keepalive and
/// empty frames), mutated and cut anywhere, fed in pieces of every size;
/// the deframer never panics, never holds more than one frame, and what it
/// yields fits the length field.
#[test]
fn tcp_streams_mutated_and_cut() {
    use crate::tcp_encap::{push_frame, Deframer, LENGTH_LEN, MAX_MESSAGE, PREFIX};
    let mut stream = PREFIX.to_vec();
    push_frame(&mut stream, &udp_encap::tests::IKE_ON_4500);
    push_frame(&mut stream, &esp::tests::IPV4_ESP_NULL[20..]);
    push_frame(&mut stream, &[udp_encap::NAT_KEEPALIVE]);
    stream.extend_from_slice(&[0, 2]);
    let mut rng = XorShift(0x9329);
    for round in 0..3000 {
        let mut s = stream.clone();
        for _ in 0..rng.below(4) {
            let i = rng.below(s.len());
            s[i] = rng.next() as u8;
        }
        s.truncate(rng.below(s.len() + 1));
        let piece = 1 + round % 17;
        let mut d = if round % 2 == 0 {
            Deframer::responder()
        } else {
            Deframer::originator()
        };
        for chunk in s.chunks(piece) {
            d.feed(chunk);
            while let Ok(Some(f)) = d.next() {
                assert!(!f.is_empty() && f.len() <= MAX_MESSAGE);
                let _ = udp_encap::classify(f);
            }
            assert!(d.pending() <= PREFIX.len() + LENGTH_LEN + MAX_MESSAGE + piece);
        }
    }
}
