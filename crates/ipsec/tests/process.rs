//! Outbound → inbound round trips through the sans-I/O core for every
//! protocol, mode and address family, and the hostile-input cases: each
//! must be refused with its named reason, never a panic.

use std::net::IpAddr;
use std::time::Duration;

use flowsec_crypto::{EncrId, IntegId, Provider};
use flowsec_ipsec::process::{self, check_inbound, Inbound, SealError};
use flowsec_ipsec::spd::{IpPrefix, Level, SaTemplate};
use flowsec_ipsec::{
    Action, Direction, DropReason, Flow, Mode, PacketBuf, Policy, Protocol, SaConfig, Sad,
    SecurityAssociation, Selector, UdpEncap,
};
use flowsec_wire::iana::IpProtocol;

const NOW: Duration = Duration::from_secs(1000);

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// A UDP packet with `payload` from `src` to `dst` (ports 1234 → 5678).
fn udp_packet(src: &str, dst: &str, payload: &[u8]) -> Vec<u8> {
    let (src, dst) = (ip(src), ip(dst));
    let udp_len = 8 + payload.len();
    let mut udp = vec![0x04, 0xd2, 0x16, 0x2e];
    udp.extend_from_slice(&(udp_len as u16).to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(payload);
    let mut p = match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let mut h = vec![0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, 17, 0, 0];
            h[2..4].copy_from_slice(&((20 + udp_len) as u16).to_be_bytes());
            h.extend_from_slice(&s.octets());
            h.extend_from_slice(&d.octets());
            let sum = checksum(&h);
            h[10..12].copy_from_slice(&sum.to_be_bytes());
            h
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let mut h = vec![0x60, 0, 0, 0];
            h.extend_from_slice(&(udp_len as u16).to_be_bytes());
            h.extend_from_slice(&[17, 64]);
            h.extend_from_slice(&s.octets());
            h.extend_from_slice(&d.octets());
            h
        }
        _ => panic!("mixed families"),
    };
    p.extend_from_slice(&udp);
    p
}

fn checksum(data: &[u8]) -> u16 {
    let mut sum = 0u32;
    for c in data.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

struct Suite {
    protocol: Protocol,
    encr: EncrId,
    encr_key_len: usize,
    integ: IntegId,
    integ_key_len: usize,
}

const SUITES: &[Suite] = &[
    Suite {
        protocol: Protocol::Esp,
        encr: EncrId::AES_GCM_16,
        encr_key_len: 20,
        integ: IntegId::NONE,
        integ_key_len: 0,
    },
    Suite {
        protocol: Protocol::Esp,
        encr: EncrId::AES_CBC,
        encr_key_len: 16,
        integ: IntegId::HMAC_SHA1_96,
        integ_key_len: 20,
    },
    Suite {
        protocol: Protocol::Esp,
        encr: EncrId::TRIPLE_DES,
        encr_key_len: 24,
        integ: IntegId::HMAC_MD5_96,
        integ_key_len: 16,
    },
    Suite {
        protocol: Protocol::Esp,
        encr: EncrId::CHACHA20_POLY1305,
        encr_key_len: 36,
        integ: IntegId::NONE,
        integ_key_len: 0,
    },
    Suite {
        protocol: Protocol::Esp,
        encr: EncrId::NULL_AUTH_AES_GMAC,
        encr_key_len: 20,
        integ: IntegId::NONE,
        integ_key_len: 0,
    },
    Suite {
        protocol: Protocol::Esp,
        encr: EncrId::NULL,
        encr_key_len: 0,
        integ: IntegId::HMAC_SHA2_256_128,
        integ_key_len: 32,
    },
    Suite {
        protocol: Protocol::Ah,
        encr: EncrId::NULL,
        encr_key_len: 0,
        integ: IntegId::HMAC_SHA1_96,
        integ_key_len: 20,
    },
    Suite {
        protocol: Protocol::Ah,
        encr: EncrId::NULL,
        encr_key_len: 0,
        integ: IntegId::HMAC_SHA2_512_256,
        integ_key_len: 64,
    },
];

fn key(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn config(s: &Suite, spi: u32, mode: Mode, src: &str, dst: &str) -> SaConfig {
    let mut c = SaConfig::esp(spi, mode, ip(src), ip(dst));
    c.protocol = s.protocol;
    if s.protocol == Protocol::Esp {
        c = c.with_encr(s.encr, &key(s.encr_key_len, 1));
    }
    c.with_integ(s.integ, &key(s.integ_key_len, 2))
}

/// Two SADs, sender and receiver, each with the same SA.
fn pair(configs: &[SaConfig]) -> (Sad, Sad, process::Bundle) {
    let provider = Provider::fastest();
    let (mut out, mut inb) = (Sad::new(), Sad::new());
    let mut bundle_handles = Vec::new();
    for c in configs {
        bundle_handles.push(
            out.add(SecurityAssociation::new(c, &provider, NOW).unwrap())
                .unwrap(),
        );
        inb.add(SecurityAssociation::new(c, &provider, NOW).unwrap())
            .unwrap();
    }
    let templates: Vec<SaTemplate> = configs
        .iter()
        .map(|c| SaTemplate {
            protocol: c.protocol,
            mode: c.mode,
            tunnel: (c.mode == Mode::Tunnel).then_some((c.src, c.dst)),
            level: Level::Require,
            reqid: 0,
        })
        .collect();
    let _ = bundle_handles;
    let (src, dst) = match configs[0].mode {
        Mode::Tunnel => (ip("10.1.0.1"), ip("10.2.0.1")),
        Mode::Transport => (configs[0].src, configs[0].dst),
    };
    let flow = Flow {
        src,
        dst,
        protocol: 17,
        src_port: 1234,
        dst_port: 5678,
        fragment: false,
    };
    let bundle = process::resolve(&out, &templates, &flow, NOW).unwrap();
    (out, inb, bundle)
}

fn round_trip(configs: &[SaConfig], inner: &[u8]) -> Vec<u8> {
    let (mut out, mut inb, bundle) = pair(configs);
    let mut buf = PacketBuf::from_packet(inner);
    let egress = process::outbound(&mut out, &bundle, &mut buf, NOW).unwrap();
    let wire = egress.to_packet(buf.as_slice()).unwrap();
    assert_ne!(wire, inner);
    let mut buf = PacketBuf::from_packet(&wire);
    let Inbound::Decapsulated(applied) = process::inbound_packet(&mut inb, &mut buf, NOW).unwrap()
    else {
        panic!("not decapsulated")
    };
    assert_eq!(applied.len(), configs.len());
    assert_eq!(buf.as_slice(), inner, "inner packet restored byte for byte");
    // The same packet again is a replay.
    let mut again = PacketBuf::from_packet(&wire);
    assert_eq!(
        process::inbound_packet(&mut inb, &mut again, NOW),
        Err(DropReason::Replayed)
    );
    wire
}

#[test]
fn every_suite_tunnel_and_transport_v4_v6_and_mixed() {
    for s in SUITES {
        for (outer_src, outer_dst, inner_src, inner_dst) in [
            ("192.0.2.1", "192.0.2.2", "10.1.0.1", "10.2.0.1"),
            ("2001:db8::1", "2001:db8::2", "fd01::1", "fd02::1"),
            ("2001:db8::1", "2001:db8::2", "10.1.0.1", "10.2.0.1"), // 4-in-6
            ("192.0.2.1", "192.0.2.2", "fd01::1", "fd02::1"),       // 6-in-4
        ] {
            for len in [0usize, 1, 3, 100, 1400] {
                let inner = udp_packet(inner_src, inner_dst, &key(len, 9));
                let c = config(s, 0x1000, Mode::Tunnel, outer_src, outer_dst);
                let wire = round_trip(&[c], &inner);
                assert_eq!(wire[0] >> 4, if outer_src.contains(':') { 6 } else { 4 });
            }
        }
        for (src, dst) in [("192.0.2.1", "192.0.2.2"), ("2001:db8::1", "2001:db8::2")] {
            let inner = udp_packet(src, dst, b"transport mode payload");
            let c = config(s, 0x2000, Mode::Transport, src, dst);
            let wire = round_trip(&[c], &inner);
            let proto_at = if src.contains(':') { 6 } else { 9 };
            assert_eq!(wire[proto_at], s.protocol_number());
        }
    }
}

trait ProtoNum {
    fn protocol_number(&self) -> u8;
}
impl ProtoNum for Suite {
    fn protocol_number(&self) -> u8 {
        self.protocol.ip_protocol().0
    }
}

/// ESP in UDP crosses the core as a UDP payload and its endpoints, in both
/// modes (RFC 3948 §2.1): the socket's addresses and ports come from the
/// SA, the outer TOS from the inner packet; a keepalive and an IKE message
/// on the port are told apart (§2.2, §2.3); and a UDP-encapsulated SA
/// must be its bundle's outermost step.
#[test]
fn esp_in_udp_is_a_payload_and_endpoints() {
    use flowsec_ipsec::{Egress, UdpEndpoints};
    for (mode, src, dst) in [
        (Mode::Tunnel, "192.0.2.1", "192.0.2.2"),
        (Mode::Transport, "2001:db8::1", "2001:db8::2"),
    ] {
        let mut c = config(&SUITES[1], 0x3100, mode, src, dst);
        c.encap = Some(UdpEncap::udp(4500, 4501));
        let inner = match mode {
            Mode::Tunnel => udp_packet("10.1.0.1", "10.2.0.1", b"natted"),
            Mode::Transport => udp_packet(src, dst, b"natted"),
        };
        let (mut out, mut inb, bundle) = pair(std::slice::from_ref(&c));
        let mut buf = PacketBuf::from_packet(&inner);
        let Egress::Udp(to) = process::outbound(&mut out, &bundle, &mut buf, NOW).unwrap() else {
            panic!("{mode:?}: not ESP in UDP");
        };
        assert_eq!(to.local, format!("{}:4500", bracket(src)).parse().unwrap());
        assert_eq!(to.remote, format!("{}:4501", bracket(dst)).parse().unwrap());
        assert_eq!(
            &buf.as_slice()[..4],
            &0x3100u32.to_be_bytes(),
            "starts at the SPI"
        );
        // What the peer's socket reports: the ends swapped.
        let from = UdpEndpoints {
            local: to.remote,
            remote: to.local,
            tos: to.tos,
        };
        let got = process::inbound_udp(&mut inb, &mut buf, &from, NOW);
        assert!(
            matches!(got, Ok(Inbound::Decapsulated(_))),
            "{mode:?}: {got:?}"
        );
        assert_eq!(buf.as_slice(), &inner[..], "{mode:?}");
    }
    // IPv4 transport mode: the header the socket took off is rebuilt
    // atomic (DF, ID 0: RFC 6864 §4), its checksum right.
    let mut c = config(
        &SUITES[1],
        0x3101,
        Mode::Transport,
        "192.0.2.1",
        "192.0.2.2",
    );
    c.encap = Some(UdpEncap::udp(4500, 4500));
    let inner = udp_packet("192.0.2.1", "192.0.2.2", b"natted");
    let (mut out, mut inb, bundle) = pair(std::slice::from_ref(&c));
    let mut buf = PacketBuf::from_packet(&inner);
    let Egress::Udp(to) = process::outbound(&mut out, &bundle, &mut buf, NOW).unwrap() else {
        panic!("not ESP in UDP");
    };
    let from = UdpEndpoints {
        local: to.remote,
        remote: to.local,
        tos: to.tos,
    };
    let got = process::inbound_udp(&mut inb, &mut buf, &from, NOW);
    assert!(matches!(got, Ok(Inbound::Decapsulated(_))), "{got:?}");
    let v4 = flowsec_wire::ipv4::Ipv4Packet::new_checked(buf.as_slice()).unwrap();
    assert!(
        v4.dont_frag() && v4.verify_checksum(),
        "{:02x?}",
        &buf.as_slice()[..20]
    );
    assert_eq!(buf.as_slice()[20..], inner[20..]);
    let from = UdpEndpoints {
        local: "192.0.2.2:4500".parse().unwrap(),
        remote: "192.0.2.1:4500".parse().unwrap(),
        tos: 0,
    };
    let mut sad = Sad::new();
    let mut keepalive = PacketBuf::from_packet(&[0xff]);
    assert_eq!(
        process::inbound_udp(&mut sad, &mut keepalive, &from, NOW),
        Ok(Inbound::NatKeepalive)
    );
    let mut ike = PacketBuf::from_packet(&[0, 0, 0, 0, 1, 2, 3, 4, 5]);
    assert_eq!(
        process::inbound_udp(&mut sad, &mut ike, &from, NOW),
        Ok(Inbound::Ike)
    );
    assert_eq!(ike.as_slice(), &[1, 2, 3, 4, 5], "the marker is removed");
    // IPComp cannot go around a UDP payload.
    let (a, b) = ("192.0.2.1", "192.0.2.2");
    let mut esp = config(&SUITES[0], 0x3200, Mode::Tunnel, a, b);
    esp.encap = Some(UdpEncap::udp(4500, 4500));
    let comp = SaConfig::ipcomp(0x3201, Mode::Tunnel, ip(a), ip(b));
    let (mut out, _, bundle) = pair(&[esp, comp]);
    let mut buf = PacketBuf::from_packet(&udp_packet("10.1.0.1", "10.2.0.1", b"x"));
    assert_eq!(
        process::outbound(&mut out, &bundle, &mut buf, NOW),
        Err(SealError::Drop(DropReason::EncapMismatch))
    );
}

fn bracket(addr: &str) -> String {
    match addr.contains(':') {
        true => format!("[{addr}]"),
        false => addr.to_string(),
    }
}

#[test]
fn udp_encapsulated_esp_v4_and_v6() {
    for (src, dst) in [("192.0.2.1", "192.0.2.2"), ("2001:db8::1", "2001:db8::2")] {
        let mut c = config(&SUITES[0], 0x3000, Mode::Tunnel, src, dst);
        c.encap = Some(UdpEncap::udp(4500, 4500));
        let wire = round_trip(&[c], &udp_packet("10.1.0.1", "10.2.0.1", b"natted"));
        let at = if src.contains(':') { 40 } else { 20 };
        assert_eq!(wire[if src.contains(':') { 6 } else { 9 }], 17);
        assert_eq!(&wire[at + 2..at + 4], &4500u16.to_be_bytes());
        if src.contains(':') {
            assert_ne!(&wire[at + 6..at + 8], &[0, 0], "IPv6 UDP needs a checksum");
        }
    }
}

#[test]
fn bundles_ipcomp_esp_ah() {
    let big = udp_packet("10.1.0.1", "10.2.0.1", &b"compress me please ".repeat(60));
    let ipcomp = SaConfig::ipcomp(0x4001, Mode::Tunnel, ip("192.0.2.1"), ip("192.0.2.2"));
    let esp = config(&SUITES[1], 0x4002, Mode::Tunnel, "192.0.2.1", "192.0.2.2");
    let ah = config(&SUITES[6], 0x4003, Mode::Tunnel, "192.0.2.1", "192.0.2.2");
    let wire = round_trip(&[ipcomp.clone(), esp.clone(), ah.clone()], &big);
    assert_eq!(wire[9], IpProtocol::AH.0, "outermost is AH");
    assert_eq!(wire[20], IpProtocol::ESP.0, "AH's next header is ESP");
    assert!(wire.len() < big.len(), "IPComp shrank the packet");
    // Transport mode AH + ESP (study S1's AH+ESP case), both families.
    for (src, dst) in [("192.0.2.1", "192.0.2.2"), ("2001:db8::1", "2001:db8::2")] {
        let esp = config(&SUITES[2], 0x5001, Mode::Transport, src, dst);
        let ah = config(&SUITES[6], 0x5002, Mode::Transport, src, dst);
        round_trip(&[esp, ah], &udp_packet(src, dst, b"ah+esp"));
    }
}

#[test]
fn tampering_anywhere_is_detected() {
    for s in SUITES {
        let inner = udp_packet("10.1.0.1", "10.2.0.1", b"do not touch");
        let c = config(s, 0x6000, Mode::Tunnel, "192.0.2.1", "192.0.2.2");
        let (mut out, mut inb, bundle) = pair(std::slice::from_ref(&c));
        let mut buf = PacketBuf::from_packet(&inner);
        process::outbound(&mut out, &bundle, &mut buf, NOW).unwrap();
        let wire = buf.as_slice().to_vec();
        // Flip one bit in every byte after the outer header's mutable and
        // unauthenticated fields: each must be refused.
        for i in 20..wire.len() {
            let mut bad = wire.clone();
            bad[i] ^= 0x01;
            let mut b = PacketBuf::from_packet(&bad);
            let r = process::inbound(&mut inb, &mut b, NOW);
            assert!(r.is_err(), "{:?}: flipped byte {i} accepted", s.encr);
        }
        // And the untouched packet still opens (nothing moved the window).
        let mut b = PacketBuf::from_packet(&wire);
        assert!(matches!(
            process::inbound(&mut inb, &mut b, NOW),
            Ok(Inbound::Decapsulated(_))
        ));
    }
}

#[test]
fn truncation_at_every_offset_and_garbage() {
    for s in SUITES {
        let c = config(s, 0x7000, Mode::Tunnel, "192.0.2.1", "192.0.2.2");
        let (mut out, mut inb, bundle) = pair(std::slice::from_ref(&c));
        let mut buf = PacketBuf::from_packet(&udp_packet("10.1.0.1", "10.2.0.1", b"0123456789"));
        process::outbound(&mut out, &bundle, &mut buf, NOW).unwrap();
        let wire = buf.as_slice().to_vec();
        for cut in 0..wire.len() {
            let mut b = PacketBuf::from_packet(&wire[..cut]);
            assert!(
                process::inbound(&mut inb, &mut b, NOW).is_err(),
                "cut at {cut}"
            );
            // Truncated but with a consistent IP length field.
            let mut fixed = wire[..cut].to_vec();
            if cut >= 20 {
                fixed[2..4].copy_from_slice(&(cut as u16).to_be_bytes());
                let mut b = PacketBuf::from_packet(&fixed);
                assert!(
                    process::inbound(&mut inb, &mut b, NOW).is_err(),
                    "cut at {cut}, length fixed"
                );
            }
        }
    }
    let mut sad = Sad::new();
    let mut x = 0x1234_5678u32;
    for len in 0..300 {
        let garbage: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        let mut b = PacketBuf::from_packet(&garbage);
        let _ = process::inbound(&mut sad, &mut b, NOW);
    }
}

#[test]
fn unknown_spi_and_not_ipsec() {
    let c = config(&SUITES[0], 0x8000, Mode::Tunnel, "192.0.2.1", "192.0.2.2");
    let (mut out, _, bundle) = pair(std::slice::from_ref(&c));
    let mut buf = PacketBuf::from_packet(&udp_packet("10.1.0.1", "10.2.0.1", b"x"));
    process::outbound(&mut out, &bundle, &mut buf, NOW).unwrap();
    let mut empty = Sad::new();
    assert_eq!(
        process::inbound(&mut empty, &mut buf, NOW),
        Err(DropReason::UnknownSpi)
    );
    let mut plain = PacketBuf::from_packet(&udp_packet("10.1.0.1", "10.2.0.1", b"x"));
    // UDP on a raw socket is not IPsec; as a UDP socket's datagram, its
    // payload is shorter than an ESP header.
    assert_eq!(
        process::inbound(&mut empty, &mut plain.clone(), NOW),
        Err(DropReason::NotIpsec)
    );
    assert_eq!(
        process::inbound_packet(&mut empty, &mut plain, NOW),
        Err(DropReason::BadUdpEncap)
    );
    let mut tcpish = udp_packet("10.1.0.1", "10.2.0.1", b"x");
    tcpish[9] = 6;
    let mut b = PacketBuf::from_packet(&tcpish);
    assert_eq!(
        process::inbound(&mut empty, &mut b, NOW),
        Err(DropReason::NotIpsec)
    );
}

#[test]
fn sequence_number_never_wraps_without_esn() {
    let c = config(&SUITES[0], 0x9000, Mode::Tunnel, "192.0.2.1", "192.0.2.2");
    let (mut out, _, bundle) = pair(std::slice::from_ref(&c));
    let h = bundle.iter().next().unwrap();
    out.get_mut(h)
        .unwrap()
        .skip_seq_to(u64::from(u32::MAX) - 1)
        .unwrap();
    let inner = udp_packet("10.1.0.1", "10.2.0.1", b"x");
    let mut buf = PacketBuf::from_packet(&inner);
    process::outbound(&mut out, &bundle, &mut buf, NOW).unwrap();
    let mut buf = PacketBuf::from_packet(&inner);
    assert_eq!(
        process::outbound(&mut out, &bundle, &mut buf, NOW),
        Err(SealError::Drop(DropReason::SeqExhausted))
    );
}

/// Without ESN the SA dies (asks to be rekeyed) long before its counter
/// stops; with ESN it does not.
#[test]
fn sequence_number_near_2_pow_32_is_a_soft_limit() {
    use flowsec_ipsec::sa::SEQ_SOFT_NO_ESN;
    use flowsec_ipsec::SaState;
    for esn in [false, true] {
        let mut c = config(&SUITES[0], 0x9200, Mode::Tunnel, "192.0.2.1", "192.0.2.2");
        c.esn = esn;
        let (mut out, _, bundle) = pair(std::slice::from_ref(&c));
        let h = bundle.iter().next().unwrap();
        let sa = out.get_mut(h).unwrap();
        sa.skip_seq_to(SEQ_SOFT_NO_ESN - 1).unwrap();
        assert_eq!(sa.state(NOW), SaState::Mature);
        let inner = udp_packet("10.1.0.1", "10.2.0.1", b"x");
        let mut buf = PacketBuf::from_packet(&inner);
        process::outbound(&mut out, &bundle, &mut buf, NOW).unwrap();
        let want = if esn { SaState::Mature } else { SaState::Dying };
        assert_eq!(out.get(h).unwrap().state(NOW), want, "esn {esn}");
    }
    assert!(SEQ_SOFT_NO_ESN < u64::from(u32::MAX) - (1 << 27));
}

/// A manual SA stops at its ceiling (the sequence numbers recorded as
/// used) instead of using one the state directory does not cover, and
/// goes on once the ceiling is raised.
#[test]
fn sequence_number_stops_at_its_ceiling() {
    let c = config(&SUITES[0], 0x9100, Mode::Tunnel, "192.0.2.1", "192.0.2.2");
    let (mut out, _, bundle) = pair(std::slice::from_ref(&c));
    let h = bundle.iter().next().unwrap();
    out.get_mut(h).unwrap().set_seq_ceiling(2);
    let inner = udp_packet("10.1.0.1", "10.2.0.1", b"x");
    let seal = |out: &mut flowsec_ipsec::Sad| {
        let mut buf = PacketBuf::from_packet(&inner);
        process::outbound(out, &bundle, &mut buf, NOW)
    };
    seal(&mut out).unwrap();
    seal(&mut out).unwrap();
    assert_eq!(
        seal(&mut out),
        Err(SealError::Drop(DropReason::SeqUnreserved))
    );
    assert_eq!(out.get(h).unwrap().seq(), 2);
    out.get_mut(h).unwrap().set_seq_ceiling(3);
    seal(&mut out).unwrap();
    assert_eq!(out.get(h).unwrap().seq(), 3);
}

#[test]
fn esn_round_trip_across_2_pow_32() {
    for s in SUITES {
        let mut c = config(s, 0xa000, Mode::Tunnel, "192.0.2.1", "192.0.2.2");
        c.esn = true;
        let (mut out, mut inb, bundle) = pair(std::slice::from_ref(&c));
        let h = bundle.iter().next().unwrap();
        let start = u64::from(u32::MAX) - 3;
        out.get_mut(h).unwrap().skip_seq_to(start).unwrap();
        // Bring the receiver's window near the top without sending 4 billion packets.
        let rh = inb.lookup(&c_id(&c)).unwrap();
        inb.get_mut(rh)
            .unwrap()
            .replay_window_mut()
            .commit(start)
            .unwrap();
        for i in 0..8 {
            let inner = udp_packet("10.1.0.1", "10.2.0.1", &[i; 5]);
            let mut buf = PacketBuf::from_packet(&inner);
            process::outbound(&mut out, &bundle, &mut buf, NOW).unwrap();
            let r = process::inbound(&mut inb, &mut buf, NOW);
            assert!(
                matches!(r, Ok(Inbound::Decapsulated(_))),
                "{:?} packet {i}: {r:?}",
                s.encr
            );
            assert_eq!(buf.as_slice(), inner);
        }
        assert!(out.get(h).unwrap().seq() > 1 << 32);
    }
}

fn c_id(c: &SaConfig) -> flowsec_ipsec::SaId {
    flowsec_ipsec::SaId {
        protocol: c.protocol,
        spi: c.spi,
        dst: c.dst,
    }
}

#[test]
fn inbound_policy_check() {
    let c = config(&SUITES[0], 0xb000, Mode::Tunnel, "192.0.2.1", "192.0.2.2");
    let (mut out, mut inb, bundle) = pair(std::slice::from_ref(&c));
    let inner = udp_packet("10.1.0.1", "10.2.0.1", b"x");
    let mut buf = PacketBuf::from_packet(&inner);
    process::outbound(&mut out, &bundle, &mut buf, NOW).unwrap();
    let Ok(Inbound::Decapsulated(applied)) = process::inbound(&mut inb, &mut buf, NOW) else {
        panic!()
    };
    let sel = Selector::between(
        IpPrefix::new(ip("10.1.0.0"), 16).unwrap(),
        IpPrefix::new(ip("10.2.0.0"), 16).unwrap(),
    );
    let template = |protocol| SaTemplate {
        protocol,
        mode: Mode::Tunnel,
        tunnel: Some((ip("192.0.2.1"), ip("192.0.2.2"))),
        level: Level::Require,
        reqid: 0,
    };
    let esp_policy = Policy {
        direction: Direction::In,
        selector: sel,
        action: Action::Protect(vec![template(Protocol::Esp)]),
        priority: 0,
    };
    assert_eq!(check_inbound(&inb, Some(&esp_policy), &applied), Ok(()));
    let ah_policy = Policy {
        action: Action::Protect(vec![template(Protocol::Ah)]),
        ..esp_policy.clone()
    };
    assert_eq!(
        check_inbound(&inb, Some(&ah_policy), &applied),
        Err(DropReason::PolicyMismatch)
    );
    assert_eq!(
        check_inbound(&inb, Some(&esp_policy), &process::Bundle::default()),
        Err(DropReason::PolicyMismatch),
        "plaintext where the policy requires ESP"
    );
}

/// A NULL-encryption ESP packet whose trailer we rewrite, then re-sign with
/// the SA's own integrity key, so that only the trailer is wrong.
fn forged_null_esp(mutate: impl Fn(&mut [u8])) -> Result<Inbound, DropReason> {
    let c = config(&SUITES[5], 0xc000, Mode::Tunnel, "192.0.2.1", "192.0.2.2");
    let (mut out, mut inb, bundle) = pair(std::slice::from_ref(&c));
    let mut buf = PacketBuf::from_packet(&udp_packet("10.1.0.1", "10.2.0.1", b"forge"));
    process::outbound(&mut out, &bundle, &mut buf, NOW).unwrap();
    let mut wire = buf.as_slice().to_vec();
    let icv_len = 16;
    let body_end = wire.len() - icv_len;
    mutate(&mut wire[20..body_end]);
    let integ = Provider::rustcrypto()
        .integrity(IntegId::HMAC_SHA2_256_128, &key(32, 2))
        .unwrap();
    let mut icv = [0u8; 16];
    integ.sign(&[&wire[20..body_end]], &mut icv);
    wire[body_end..].copy_from_slice(&icv);
    let mut b = PacketBuf::from_packet(&wire);
    process::inbound(&mut inb, &mut b, NOW)
}

#[test]
fn forged_trailers_are_refused_by_name() {
    // Untouched, the forgery machinery produces a valid packet.
    assert!(matches!(
        forged_null_esp(|_| {}),
        Ok(Inbound::Decapsulated(_))
    ));
    // Padding bytes must be 1, 2, 3, … (RFC 4303 §2.4).
    let bad_padding = forged_null_esp(|esp| {
        let n = esp.len();
        let pad = usize::from(esp[n - 2]);
        assert!(pad > 0, "the test packet has padding");
        esp[n - 3] ^= 0xff;
    });
    assert_eq!(bad_padding, Err(DropReason::BadPadding));
    // Pad length longer than the payload.
    let n_pad = forged_null_esp(|esp| {
        let n = esp.len();
        esp[n - 2] = 250;
    });
    assert_eq!(n_pad, Err(DropReason::BadPadding));
    // A tunnel SA whose trailer says TCP: not an inner IP packet.
    let tcp = forged_null_esp(|esp| {
        let n = esp.len();
        esp[n - 1] = 6;
    });
    assert_eq!(tcp, Err(DropReason::BadNextHeader));
    // Next header 59: a dummy packet (RFC 4303 §2.6), dropped by design.
    let dummy = forged_null_esp(|esp| {
        let n = esp.len();
        esp[n - 1] = 59;
    });
    assert_eq!(dummy, Err(DropReason::DummyPacket));
    // An inner IPv4 header whose length claims more than was carried.
    let long_inner = forged_null_esp(|esp| {
        esp[8 + 2..8 + 4].copy_from_slice(&9000u16.to_be_bytes());
    });
    assert_eq!(long_inner, Err(DropReason::BadInnerPacket));
}

#[test]
fn oversize_and_inconsistent_outer_lengths() {
    let c = config(&SUITES[0], 0xd000, Mode::Tunnel, "192.0.2.1", "192.0.2.2");
    let (mut out, mut inb, bundle) = pair(std::slice::from_ref(&c));
    let mut buf = PacketBuf::from_packet(&udp_packet("10.1.0.1", "10.2.0.1", b"len"));
    process::outbound(&mut out, &bundle, &mut buf, NOW).unwrap();
    let wire = buf.as_slice().to_vec();
    for total in [0u16, 19, wire.len() as u16 + 1, u16::MAX] {
        let mut bad = wire.clone();
        bad[2..4].copy_from_slice(&total.to_be_bytes());
        let mut b = PacketBuf::from_packet(&bad);
        assert_eq!(
            process::inbound(&mut inb, &mut b, NOW),
            Err(DropReason::BadIpHeader),
            "total length {total}"
        );
    }
    // Trailing link-layer padding is ignored, the packet still opens.
    let mut padded = wire.clone();
    padded.extend_from_slice(&[0; 6]);
    let mut b = PacketBuf::from_packet(&padded);
    assert!(matches!(
        process::inbound(&mut inb, &mut b, NOW),
        Ok(Inbound::Decapsulated(_))
    ));
    // A packet that would exceed 65535 bytes once sealed is refused.
    let mut huge = PacketBuf::new(256 + 70_000, 256);
    huge.set(&udp_packet("10.1.0.1", "10.2.0.1", &vec![0; 65_500]))
        .unwrap();
    assert_eq!(
        process::outbound(&mut out, &bundle, &mut huge, NOW),
        Err(SealError::Drop(DropReason::TooBig))
    );
}

#[test]
fn lifetimes_expire_the_sa() {
    let mut c = config(&SUITES[0], 0xe000, Mode::Tunnel, "192.0.2.1", "192.0.2.2");
    c.lifetime.hard.packets = Some(2);
    c.lifetime.soft.packets = Some(1);
    let (mut out, _, bundle) = pair(std::slice::from_ref(&c));
    let h = bundle.iter().next().unwrap();
    let inner = udp_packet("10.1.0.1", "10.2.0.1", b"life");
    for _ in 0..2 {
        let mut buf = PacketBuf::from_packet(&inner);
        process::outbound(&mut out, &bundle, &mut buf, NOW).unwrap();
    }
    assert_eq!(
        out.get(h).unwrap().state(NOW),
        flowsec_ipsec::SaState::Expired
    );
    let mut buf = PacketBuf::from_packet(&inner);
    assert_eq!(
        process::outbound(&mut out, &bundle, &mut buf, NOW),
        Err(SealError::Drop(DropReason::SaExpired))
    );
    // And an expired SA is no longer chosen for new traffic.
    let t = SaTemplate {
        protocol: Protocol::Esp,
        mode: Mode::Tunnel,
        tunnel: Some((c.src, c.dst)),
        level: Level::Require,
        reqid: 0,
    };
    let flow = Flow {
        src: ip("10.1.0.1"),
        dst: ip("10.2.0.1"),
        protocol: 17,
        src_port: 1,
        dst_port: 1,
        fragment: false,
    };
    assert_eq!(
        process::resolve(&out, &[t], &flow, NOW),
        Err(SealError::NoSa)
    );
}

#[test]
fn tfc_padding_hides_the_inner_length_and_is_removed() {
    let mut c = config(&SUITES[0], 0xf000, Mode::Tunnel, "192.0.2.1", "192.0.2.2");
    c.tfc_pad_to = 600;
    let inner = udp_packet("10.1.0.1", "10.2.0.1", b"short");
    let (mut out, mut inb, bundle) = pair(std::slice::from_ref(&c));
    let mut buf = PacketBuf::from_packet(&inner);
    process::outbound(&mut out, &bundle, &mut buf, NOW).unwrap();
    assert!(
        buf.len() >= 20 + 8 + 8 + 600 + 2 + 16,
        "padded to the TFC size: {}",
        buf.len()
    );
    assert!(matches!(
        process::inbound(&mut inb, &mut buf, NOW),
        Ok(Inbound::Decapsulated(_))
    ));
    assert_eq!(buf.as_slice(), inner);
}

/// IPv6 with a hop-by-hop header (one option routers may change, one they
/// may not) and destination options, transport-mode AH: routers changing
/// the mutable fields must not break the ICV; changing anything else must.
#[test]
fn ah_ipv6_mutable_fields_and_extension_headers() {
    let base = udp_packet("2001:db8::1", "2001:db8::2", b"extension headers");
    let udp = base[40..].to_vec();
    // Hop-by-hop: option 0x3e has the "may change en route" bit (0x20), then
    // PadN. Destination options: option 0x1e (immutable), then PadN.
    let hbh = [60u8, 0, 0x3e, 2, 0xaa, 0xbb, 0x01, 0x00];
    let dst = [17u8, 0, 0x1e, 2, 0xcc, 0xdd, 0x01, 0x00];
    let mut p = base[..40].to_vec();
    p[6] = 0; // next header: hop-by-hop
    p[4..6].copy_from_slice(&((hbh.len() + dst.len() + udp.len()) as u16).to_be_bytes());
    p.extend_from_slice(&hbh);
    p.extend_from_slice(&dst);
    p.extend_from_slice(&udp);
    let c = config(
        &SUITES[6],
        0x1_0000,
        Mode::Transport,
        "2001:db8::1",
        "2001:db8::2",
    );
    let (mut out, mut inb, bundle) = pair(std::slice::from_ref(&c));
    let mut buf = PacketBuf::from_packet(&p);
    process::outbound(&mut out, &bundle, &mut buf, NOW).unwrap();
    let wire = buf.as_slice().to_vec();
    // AH goes after hop-by-hop and before the destination options.
    assert_eq!(wire[40], IpProtocol::AH.0, "hop-by-hop now names AH");
    assert_eq!(wire[48], 60, "AH names the destination options");
    let en_route = |w: &mut Vec<u8>| {
        w[7] = 3; // hop limit
        w[1] ^= 0x0f; // traffic class / flow label
        w[44] = 0x11; // the mutable option's data
        w[45] = 0x22;
    };
    let mut routed = wire.clone();
    en_route(&mut routed);
    let mut b = PacketBuf::from_packet(&routed);
    assert!(matches!(
        process::inbound(&mut inb, &mut b, NOW),
        Ok(Inbound::Decapsulated(_))
    ));
    let got = b.as_slice();
    assert_eq!(got[8..44], p[8..44], "addresses and headers restored");
    assert_eq!(
        got[44..46],
        [0x11, 0x22],
        "the routers' change to the mutable option stays"
    );
    assert_eq!(got[46..], p[46..], "the rest restored");
    // Changing the immutable option of the destination header is detected.
    let mut forged = wire.clone();
    en_route(&mut forged);
    let dst_at = 48 + 24; // after AH (12 + 12-byte ICV)
    forged[dst_at + 4] ^= 1;
    let (_, mut inb2, _) = pair(std::slice::from_ref(&c));
    let mut b = PacketBuf::from_packet(&forged);
    assert_eq!(
        process::inbound(&mut inb2, &mut b, NOW),
        Err(DropReason::AuthFailed)
    );
}

/// Encryption-only ESP has no ICV, so it gets no anti-replay window: a
/// forged sequence number must not be able to move one (RFC 4303 §3.4.3).
#[test]
fn encryption_only_esp_has_no_window_to_poison() {
    let mut c = SaConfig::esp(0x2_0000, Mode::Tunnel, ip("192.0.2.1"), ip("192.0.2.2"))
        .with_encr(EncrId::AES_CBC, &key(16, 1));
    c.replay_window = 64;
    assert!(!c.has_integrity());
    assert!(c.warnings().iter().any(|w| w.contains("no anti-replay")));
    let (mut out, mut inb, bundle) = pair(std::slice::from_ref(&c));
    assert_eq!(inb.iter().next().unwrap().replay_window().size(), 0);
    let inner = udp_packet("10.1.0.1", "10.2.0.1", b"no icv");
    let mut buf = PacketBuf::from_packet(&inner);
    process::outbound(&mut out, &bundle, &mut buf, NOW).unwrap();
    let genuine = buf.as_slice().to_vec();
    let mut forged = genuine.clone();
    forged[24..28].copy_from_slice(&0x7000_0000u32.to_be_bytes());
    let mut b = PacketBuf::from_packet(&forged);
    let _ = process::inbound(&mut inb, &mut b, NOW);
    let mut b = PacketBuf::from_packet(&genuine);
    assert!(
        matches!(
            process::inbound(&mut inb, &mut b, NOW),
            Ok(Inbound::Decapsulated(_))
        ),
        "genuine packet still accepted"
    );
}

/// An IPComp-only tunnel with a packet too small to compress: the outer
/// header must still carry the right length and checksum, and the
/// receiver's policy must accept the packet without an IPComp header.
#[test]
fn ipcomp_tunnel_uncompressed_packets() {
    for (src, dst) in [("192.0.2.1", "192.0.2.2"), ("2001:db8::1", "2001:db8::2")] {
        let ipcomp = SaConfig::ipcomp(0x3001, Mode::Tunnel, ip(src), ip(dst));
        let esp = config(&SUITES[0], 0x3002, Mode::Tunnel, src, dst);
        for configs in [vec![ipcomp.clone()], vec![ipcomp.clone(), esp]] {
            let (mut out, mut inb, bundle) = pair(&configs);
            let inner = udp_packet("10.1.0.1", "10.2.0.1", b"tiny");
            let mut buf = PacketBuf::from_packet(&inner);
            process::outbound(&mut out, &bundle, &mut buf, NOW).unwrap();
            let wire = buf.as_slice();
            if src.contains(':') {
                assert_eq!(
                    usize::from(u16::from_be_bytes([wire[4], wire[5]])),
                    wire.len() - 40
                );
            } else {
                assert_eq!(
                    usize::from(u16::from_be_bytes([wire[2], wire[3]])),
                    wire.len()
                );
                let mut sum = 0u32;
                for c in wire[..20].chunks(2) {
                    sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
                }
                while sum > 0xffff {
                    sum = (sum & 0xffff) + (sum >> 16);
                }
                assert_eq!(sum, 0xffff, "outer IPv4 checksum");
            }
            if configs.len() == 1 {
                // Nothing to decapsulate: the packet is plain IP-in-IP.
                continue;
            }
            let r = process::inbound(&mut inb, &mut buf, NOW);
            let Ok(Inbound::Decapsulated(applied)) = r else {
                panic!("{r:?}")
            };
            assert_eq!(applied.len(), 1, "only ESP was applied");
            let template = |protocol| SaTemplate {
                protocol,
                mode: Mode::Tunnel,
                tunnel: Some((ip(src), ip(dst))),
                level: Level::Require,
                reqid: 0,
            };
            let sel = Selector::between(
                IpPrefix::host(ip("10.1.0.1")),
                IpPrefix::host(ip("10.2.0.1")),
            );
            let policy = Policy {
                direction: Direction::In,
                selector: sel,
                action: Action::Protect(vec![template(Protocol::IpComp), template(Protocol::Esp)]),
                priority: 0,
            };
            assert_eq!(check_inbound(&inb, Some(&policy), &applied), Ok(()));
        }
    }
}

/// RFC 6040: congestion marked on the outer header reaches the inner one.
#[test]
fn ecn_congestion_survives_the_tunnel() {
    let c = config(&SUITES[0], 0x4_0000, Mode::Tunnel, "192.0.2.1", "192.0.2.2");
    for (inner_ecn, expect) in [(0b10u8, Ok(0b11u8)), (0b00, Err(DropReason::EcnCeOnNotEct))] {
        let (mut out, mut inb, bundle) = pair(std::slice::from_ref(&c));
        let mut inner = udp_packet("10.1.0.1", "10.2.0.1", b"ecn");
        inner[1] = inner_ecn;
        inner[10..12].fill(0);
        let sum = checksum(&inner[..20]);
        inner[10..12].copy_from_slice(&sum.to_be_bytes());
        let mut buf = PacketBuf::from_packet(&inner);
        process::outbound(&mut out, &bundle, &mut buf, NOW).unwrap();
        assert_eq!(
            buf.as_slice()[1] & 0b11,
            inner_ecn,
            "ECN copied on encapsulation"
        );
        let mut wire = buf.as_slice().to_vec();
        wire[1] |= 0b11; // a router marks congestion on the outer header
        let mut b = PacketBuf::from_packet(&wire);
        match (process::inbound(&mut inb, &mut b, NOW), expect) {
            (Ok(Inbound::Decapsulated(_)), Ok(ecn)) => {
                assert_eq!(b.as_slice()[1] & 0b11, ecn);
                assert_eq!(checksum(&b.as_slice()[..20]), 0, "inner checksum refreshed");
            }
            (r, e) => assert_eq!(r.map(|_| ()), e.map(|_| ())),
        }
    }
}

#[test]
fn udp_encapsulation_must_match_the_sa() {
    let mut encap = config(&SUITES[0], 0x5_0000, Mode::Tunnel, "192.0.2.1", "192.0.2.2");
    encap.encap = Some(UdpEncap::udp(4500, 4500));
    let raw = SaConfig {
        encap: None,
        ..encap.clone()
    };
    let inner = udp_packet("10.1.0.1", "10.2.0.1", b"nat");
    // Sealed raw, received by an SA that expects UDP, and the reverse.
    for (sender, receiver) in [(&raw, &encap), (&encap, &raw)] {
        let (mut out, _, bundle) = pair(std::slice::from_ref(sender));
        let (_, mut inb, _) = pair(std::slice::from_ref(receiver));
        let mut buf = PacketBuf::from_packet(&inner);
        let egress = process::outbound(&mut out, &bundle, &mut buf, NOW).unwrap();
        let mut buf = PacketBuf::from_packet(&egress.to_packet(buf.as_slice()).unwrap());
        assert_eq!(
            process::inbound_packet(&mut inb, &mut buf, NOW),
            Err(DropReason::EncapMismatch)
        );
    }
}

/// Transport mode refuses a fragment before any step has touched it, so
/// that the data path can reassemble its datagram and try again (RFC 4303
/// §3.1.1): the buffer is the packet as it came, no SA counted anything.
#[test]
fn a_transport_fragment_is_refused_untouched() {
    let (src, dst) = ("192.0.2.1", "192.0.2.2");
    let esp = config(&SUITES[2], 0x6001, Mode::Transport, src, dst);
    let ah = config(&SUITES[6], 0x6002, Mode::Transport, src, dst);
    let (mut out, mut inb, bundle) = pair(&[esp, ah]);
    let whole = udp_packet(src, dst, b"first fragment");
    let mut first = whole.clone();
    first[6] |= 0x20; // More Fragments
    let mut buf = PacketBuf::from_packet(&first);
    assert_eq!(
        process::outbound(&mut out, &bundle, &mut buf, NOW),
        Err(SealError::Reassemble)
    );
    assert_eq!(buf.as_slice(), &first[..]);
    assert!(bundle.iter().all(|h| out.get(h).unwrap().seq() == 0));
    // The whole datagram then goes through with the first sequence numbers.
    let mut buf = PacketBuf::from_packet(&whole);
    process::outbound(&mut out, &bundle, &mut buf, NOW).unwrap();
    assert!(bundle.iter().all(|h| out.get(h).unwrap().seq() == 1));
    assert!(matches!(
        process::inbound(&mut inb, &mut buf, NOW),
        Ok(Inbound::Decapsulated(_))
    ));
    assert_eq!(buf.as_slice(), &whole[..]);
}

/// A MOBIKE move (RFC 4555 §3.5): both SADs move the SA to new outer
/// addresses, raw ESP to ESP in UDP and back; the outbound one goes on
/// counting where it was, the inbound one keeps its replay window (a
/// packet sealed before the move is a replay after it), and the index of
/// outbound SAs answers for the new pair only.
#[test]
fn a_moved_sa_keeps_its_state() {
    use flowsec_ipsec::{Egress, Endpoints, SadError, UdpEndpoints};
    let ends = |src, dst, encap| Endpoints { src, dst, encap };
    let (a, b, a2) = ("192.0.2.1", "192.0.2.2", "198.51.100.7");
    let c = config(&SUITES[1], 0x4100, Mode::Tunnel, a, b);
    let (mut out, mut inb, bundle) = pair(std::slice::from_ref(&c));
    let inner = udp_packet("10.1.0.1", "10.2.0.1", b"before");
    let mut buf = PacketBuf::from_packet(&inner);
    let wire = process::outbound(&mut out, &bundle, &mut buf, NOW)
        .unwrap()
        .to_packet(buf.as_slice())
        .unwrap();
    let mut before = PacketBuf::from_packet(&wire);
    assert!(process::inbound_packet(&mut inb, &mut before, NOW).is_ok());
    let id = c_id(&c);
    // To ESP in UDP from a new address of ours (the sender's).
    let encap = Some(UdpEncap::udp(4500, 4500));
    let h = out.move_sa(&id, ends(ip(a2), ip(b), encap)).unwrap();
    assert_eq!(out.get(h).unwrap().seq(), 1, "the counter goes on");
    inb.move_sa(&id, ends(ip(a2), ip(b), encap)).unwrap();
    let template = SaTemplate {
        protocol: Protocol::Esp,
        mode: Mode::Tunnel,
        tunnel: Some((ip(a2), ip(b))),
        level: Level::Require,
        reqid: 0,
    };
    let flow = Flow {
        src: ip("10.1.0.1"),
        dst: ip("10.2.0.1"),
        protocol: 17,
        src_port: 1234,
        dst_port: 5678,
        fragment: false,
    };
    assert!(process::resolve(&out, &[template], &flow, NOW).is_ok());
    let old = SaTemplate {
        tunnel: Some((ip(a), ip(b))),
        ..template
    };
    assert!(
        process::resolve(&out, &[old], &flow, NOW).is_err(),
        "the old pair is gone"
    );
    let bundle = process::resolve(&out, &[template], &flow, NOW).unwrap();
    let mut buf = PacketBuf::from_packet(&inner);
    let Egress::Udp(udp) = process::outbound(&mut out, &bundle, &mut buf, NOW).unwrap() else {
        panic!("not ESP in UDP after the move");
    };
    assert_eq!(udp.local, format!("{a2}:4500").parse().unwrap());
    assert_eq!(
        buf.as_slice()[4..8],
        2u32.to_be_bytes(),
        "sequence number 2"
    );
    let from = UdpEndpoints {
        local: udp.remote,
        remote: udp.local,
        tos: 0,
    };
    assert!(matches!(
        process::inbound_udp(&mut inb, &mut buf, &from, NOW),
        Ok(Inbound::Decapsulated(_))
    ));
    // Back to raw ESP; the packet of before the move is a replay now.
    inb.move_sa(&id, ends(ip(a2), ip(b), None)).unwrap();
    let mut again = PacketBuf::from_packet(&wire);
    assert!(process::inbound_packet(&mut inb, &mut again, NOW).is_err());
    // Refused, nothing moved: mixed families, another SA's id, an unknown SA.
    assert!(matches!(
        inb.move_sa(&id, ends(ip("2001:db8::1"), ip(b), None)),
        Err(SadError::Sa(_))
    ));
    assert!(inb.lookup(&id).is_some(), "still there after a refusal");
    let other = config(&SUITES[1], 0x4100, Mode::Tunnel, a, "192.0.2.9");
    inb.add(SecurityAssociation::new(&other, &Provider::fastest(), NOW).unwrap())
        .unwrap();
    assert!(matches!(
        inb.move_sa(&id, ends(ip(a), ip("192.0.2.9"), None)),
        Err(SadError::Exists(_))
    ));
    let gone = flowsec_ipsec::SaId { spi: 0x4199, ..id };
    assert!(matches!(
        inb.move_sa(&gone, ends(ip(a), ip(b), None)),
        Err(SadError::Unknown(_))
    ));
}
