//! Parallel crypto on one SA (`flowsec_ipsec::assigned`, the pcrypt
//! mode): the owner's copy assigns sequence numbers and keeps the replay
//! window, other copies of the same SA do the crypto. The bytes on the
//! wire are the serial path's, a replay is refused at the commit even
//! when both copies of it were opened, the copies' own state never moves,
//! and ESN's high half comes from the owner.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use flowsec_crypto::{EncrId, IntegId, Provider};
use flowsec_ipsec::assigned::{self, Opened};
use flowsec_ipsec::process::{self, Bundle};
use flowsec_ipsec::{
    DropReason, Egress, Mode, PacketBuf, SaConfig, SaId, Sad, SecurityAssociation, UdpEncap,
    UdpEndpoints,
};

const NOW: Duration = Duration::from_secs(1000);

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// An IPv4 UDP packet 10.1.0.1 → 10.2.0.1 carrying `payload` (UDP
/// checksum 0: valid over IPv4).
fn inner(payload: &[u8]) -> Vec<u8> {
    let src = SocketAddr::new(ip("10.1.0.1"), 1000);
    let dst = SocketAddr::new(ip("10.2.0.1"), 2000);
    flowsec_wire::udp_encap::Datagram::build(src, dst, 0, payload).unwrap()
}

fn config(encr: EncrId, integ: IntegId, udp: bool, esn: bool) -> SaConfig {
    let key_len = if integ == IntegId::NONE { 20 } else { 16 };
    let mut c = SaConfig::esp(0x4242, Mode::Tunnel, ip("192.0.2.1"), ip("192.0.2.2"))
        .with_encr(encr, &vec![7; key_len])
        .with_integ(integ, &vec![9; if integ == IntegId::NONE { 0 } else { 20 }]);
    c.replay_window = 64;
    c.esn = esn;
    if udp {
        c.encap = Some(UdpEncap::udp(4500, 4500));
    }
    c
}

/// `n` workers' copies of the SA `c`.
fn copies(c: &SaConfig, n: usize) -> Vec<Sad> {
    (0..n)
        .map(|_| {
            let mut sad = Sad::new();
            sad.add(SecurityAssociation::new(c, &Provider::fastest(), NOW).unwrap())
                .unwrap();
            sad
        })
        .collect()
}

fn id(c: &SaConfig) -> SaId {
    SaId {
        protocol: c.protocol,
        spi: c.spi,
        dst: c.dst,
    }
}

fn one(sad: &Sad, c: &SaConfig) -> Bundle {
    let h = sad.lookup(&id(c)).unwrap();
    let templates = [flowsec_ipsec::spd::SaTemplate {
        protocol: c.protocol,
        mode: c.mode,
        tunnel: Some((c.src, c.dst)),
        level: flowsec_ipsec::spd::Level::Require,
        reqid: 0,
    }];
    let flow = flowsec_ipsec::Flow {
        src: ip("10.1.0.1"),
        dst: ip("10.2.0.1"),
        protocol: 17,
        src_port: 1000,
        dst_port: 2000,
        fragment: false,
    };
    let b = process::resolve(sad, &templates, &flow, NOW).unwrap();
    assert_eq!(b.iter().next(), Some(h));
    b
}

/// Sealed on copies 1, 2, 1, … under the owner's numbers, opened on the
/// receiver's copies 2, 1, … under its owner's check: the packets the
/// owner would have sealed alone (byte for byte with AES-GCM), every one
/// back as it was, and only the owners' counters and windows moved.
#[test]
fn sealed_and_opened_elsewhere_as_the_owner_would() {
    let cases = [
        (EncrId::AES_GCM_16, IntegId::NONE, false),
        (EncrId::AES_CBC, IntegId::HMAC_SHA1_96, false),
        (EncrId::AES_GCM_16, IntegId::NONE, true),
    ];
    for (encr, integ, udp) in cases {
        let c = config(encr, integ, udp, false);
        let mut tx = copies(&c, 3);
        let mut serial = copies(&c, 1).remove(0);
        let mut rx = copies(&c, 3);
        let bundle = one(&tx[0], &c);
        let sbundle = one(&serial, &c);
        for i in 0..10u8 {
            let packet = inner(&[i; 40]);
            let mut buf = PacketBuf::from_packet(&packet);
            let a = assigned::reserve_outbound(&mut tx[0], &bundle, &buf, NOW)
                .unwrap()
                .expect("one tunnel-mode ESP SA");
            assert_eq!(a.seq, u64::from(i) + 1);
            let w = 1 + usize::from(i % 2);
            let egress = assigned::seal_assigned(&mut tx[w], a, &mut buf, NOW).unwrap();
            let mut alone = PacketBuf::from_packet(&packet);
            let egress2 = process::outbound(&mut serial, &sbundle, &mut alone, NOW).unwrap();
            // The same bytes where the IV is the sequence number (GCM);
            // a CBC IV is a PRF of it under a key each copy draws.
            assert_eq!(egress, egress2);
            assert_eq!(buf.len(), alone.len());
            if integ == IntegId::NONE {
                assert_eq!(buf.as_slice(), alone.as_slice(), "{encr:?}");
            }
            let from = match egress {
                Egress::Udp(e) | Egress::Tcp(e) => Some(UdpEndpoints {
                    local: e.remote,
                    remote: e.local,
                    tos: e.tos,
                }),
                Egress::Ip => None,
            };
            let a = assigned::check_inbound(&mut rx[0], &buf, from.as_ref(), NOW)
                .unwrap()
                .expect("ESP");
            let w = 2 - usize::from(i % 2);
            let opened =
                assigned::open_assigned(&mut rx[w], &mut buf, from.as_ref(), a, NOW).unwrap();
            assert_eq!(opened, Opened::Done { ipcomp: None });
            assert_eq!(buf.as_slice(), &packet[..]);
            assigned::commit_inbound(&mut rx[0], a, buf.len(), NOW).unwrap();
        }
        let seq = |sad: &Sad| sad.iter().next().unwrap().seq();
        let packets = |sad: &Sad| sad.iter().next().unwrap().usage().packets;
        assert_eq!((seq(&tx[0]), seq(&tx[1]), seq(&tx[2])), (10, 0, 0));
        assert_eq!((packets(&tx[0]), packets(&tx[1])), (10, 0));
        assert_eq!(
            (packets(&rx[0]), packets(&rx[1]), packets(&rx[2])),
            (10, 0, 0)
        );
    }
}

/// A packet and its replay both pass the owner's check while neither is
/// committed, both are opened: the second commit is refused as a replay.
/// Out of order commits within the window are fine; a packet behind the
/// window is refused before any crypto.
#[test]
fn replays_are_refused_at_the_commit() {
    let c = config(EncrId::AES_GCM_16, IntegId::NONE, false, false);
    let mut tx = copies(&c, 1).remove(0);
    let mut rx = copies(&c, 2);
    let bundle = one(&tx, &c);
    let mut wire = Vec::new();
    for i in 0..100u8 {
        let mut buf = PacketBuf::from_packet(&inner(&[i; 8]));
        process::outbound(&mut tx, &bundle, &mut buf, NOW).unwrap();
        wire.push(buf.as_slice().to_vec());
    }
    let open = |rx: &mut Vec<Sad>, bytes: &[u8]| {
        let mut buf = PacketBuf::from_packet(bytes);
        let a = assigned::check_inbound(&mut rx[0], &buf, None, NOW)?.unwrap();
        assigned::open_assigned(&mut rx[1], &mut buf, None, a, NOW)?;
        Ok::<_, DropReason>(a)
    };
    let first = open(&mut rx, &wire[0]).unwrap();
    let again = open(&mut rx, &wire[0]).unwrap();
    assigned::commit_inbound(&mut rx[0], first, 10, NOW).unwrap();
    assert_eq!(
        assigned::commit_inbound(&mut rx[0], again, 10, NOW),
        Err(DropReason::Replayed)
    );
    // Later packets first, then an earlier one: within the window.
    for i in [5, 3, 4] {
        let a = open(&mut rx, &wire[i]).unwrap();
        assigned::commit_inbound(&mut rx[0], a, 10, NOW).unwrap();
    }
    // Packet 99 moves the window; packet 1 is now behind it.
    let a = open(&mut rx, &wire[99]).unwrap();
    assigned::commit_inbound(&mut rx[0], a, 10, NOW).unwrap();
    assert_eq!(open(&mut rx, &wire[1]), Err(DropReason::TooOld));
    // A forged packet fails on the copy that opens it, and its number
    // was never committed: the real one still gets in.
    let mut forged = wire[50].clone();
    let last = forged.len() - 1;
    forged[last] ^= 1;
    assert_eq!(open(&mut rx, &forged), Err(DropReason::AuthFailed));
    let a = open(&mut rx, &wire[50]).unwrap();
    assigned::commit_inbound(&mut rx[0], a, 10, NOW).unwrap();
}

/// ESN: the high half of the sequence number, which only the ICV carries,
/// comes from the owner's counter and window, not from the copy's.
#[test]
fn esn_numbers_come_from_the_owner() {
    let c = config(EncrId::AES_GCM_16, IntegId::NONE, false, true);
    let mut tx = copies(&c, 2);
    let mut rx = copies(&c, 2);
    let bundle = one(&tx[0], &c);
    let start = u64::from(u32::MAX) - 2;
    let h = tx[0].lookup(&id(&c)).unwrap();
    tx[0].get_mut(h).unwrap().skip_seq_to(start).unwrap();
    let h = rx[0].lookup(&id(&c)).unwrap();
    rx[0]
        .get_mut(h)
        .unwrap()
        .replay_window_mut()
        .commit(start)
        .unwrap();
    for i in 0..6u8 {
        let packet = inner(&[i; 16]);
        let mut buf = PacketBuf::from_packet(&packet);
        let a = assigned::reserve_outbound(&mut tx[0], &bundle, &buf, NOW)
            .unwrap()
            .unwrap();
        assigned::seal_assigned(&mut tx[1], a, &mut buf, NOW).unwrap();
        let a = assigned::check_inbound(&mut rx[0], &buf, None, NOW)
            .unwrap()
            .unwrap();
        assigned::open_assigned(&mut rx[1], &mut buf, None, a, NOW).unwrap();
        assigned::commit_inbound(&mut rx[0], a, buf.len(), NOW).unwrap();
        assert_eq!(buf.as_slice(), &packet[..], "packet {i}, seq {:#x}", a.seq);
    }
}

/// Only a tunnel-mode ESP SA is reserved; anything else goes the serial
/// way. Inbound, what is not ESP is not checked here.
#[test]
fn other_shapes_are_left_to_the_serial_path() {
    let mut c = config(EncrId::AES_GCM_16, IntegId::NONE, false, false);
    c.mode = Mode::Transport;
    let mut tx = copies(&c, 1).remove(0);
    let h = tx.lookup(&id(&c)).unwrap();
    let templates = [flowsec_ipsec::spd::SaTemplate {
        protocol: c.protocol,
        mode: Mode::Transport,
        tunnel: None,
        level: flowsec_ipsec::spd::Level::Require,
        reqid: 0,
    }];
    let flow = flowsec_ipsec::Flow {
        src: c.src,
        dst: c.dst,
        protocol: 17,
        src_port: 1,
        dst_port: 2,
        fragment: false,
    };
    let b = process::resolve(&tx, &templates, &flow, NOW).unwrap();
    assert_eq!(b.iter().next(), Some(h));
    let buf = PacketBuf::from_packet(&inner(b"x"));
    assert_eq!(assigned::reserve_outbound(&mut tx, &b, &buf, NOW), Ok(None));
    let mut rx = copies(&config(EncrId::AES_GCM_16, IntegId::NONE, false, false), 1).remove(0);
    assert_eq!(
        assigned::check_inbound(&mut rx, &buf, None, NOW),
        Ok(None),
        "UDP, not ESP"
    );
}
