//! The datapath's decisions, driven directly: no sockets, no clock.

use super::*;

#[test]
fn endpoint_ownership_is_stable_and_spreads() {
    let a: IpAddr = "192.0.2.1".parse().unwrap();
    assert_eq!(owner_of_endpoints(a, a, 1), 0);
    let mut seen = [0usize; 4];
    for i in 0..=255u8 {
        let b = IpAddr::from([198, 51, 100, i]);
        let k = owner_of_endpoints(a, b, 4);
        seen[k] += 1;
    }
    assert!(seen.iter().all(|&n| n > 30), "{seen:?}");
}

/// Every flow a policy sends through one tunnel SA has one owner, even
/// when an inner step keys on the packet's addresses (two owners would
/// use one sequence number, and one GCM nonce, twice).
#[test]
fn a_tunnel_sa_has_one_owner_whatever_the_inner_steps() {
    use flowsec_ipsec::spd::{Level, SaTemplate};
    use flowsec_ipsec::{Mode, Protocol};
    let (a, b): (IpAddr, IpAddr) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
    let step = |protocol, mode, tunnel| SaTemplate {
        protocol,
        mode,
        tunnel,
        level: Level::Require,
        reqid: 0,
    };
    let bundle = [
        step(Protocol::IpComp, Mode::Transport, None),
        step(Protocol::Esp, Mode::Tunnel, Some((a, b))),
    ];
    let owners: std::collections::BTreeSet<usize> = (0..=255u8)
        .map(|i| {
            let flow = Flow {
                src: IpAddr::from([10, 1, 0, i]),
                dst: IpAddr::from([10, 2, 0, 255 - i]),
                protocol: 6,
                src_port: 1000,
                dst_port: 2000,
                fragment: false,
            };
            owner_of(&bundle, &flow, 4)
        })
        .collect();
    assert_eq!(owners.len(), 1, "{owners:?}");
    assert_eq!(owners.into_iter().next(), Some(owner_of_endpoints(a, b, 4)));
}

use std::net::SocketAddr;

use flowsec_crypto::{EncrId, Provider};
use flowsec_ipsec::spd::{IpPrefix, Level, PortRange};
use flowsec_ipsec::{
    Mode, Policy, Protocol, SaConfig, SaId, Sad, SecurityAssociation, Selector, Spd, UdpEncap,
};
use flowsec_wire::iana::IpProtocol;
use flowsec_wire::ip::IpRepr;
use flowsec_wire::udp_encap::Datagram;

const NOW: Duration = Duration::from_secs(100);
const GW_A: &str = "192.0.2.1";
const GW_B: &str = "192.0.2.2";
const REQID: u32 = 7;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn prefix(s: &str) -> IpPrefix {
    let (addr, len) = s.split_once('/').unwrap();
    IpPrefix::new(ip(addr), len.parse().unwrap()).unwrap()
}

/// A UDP datagram between two inner hosts (IPv4 UDP checksum 0 is valid).
fn udp(src: &str, dst: &str, dport: u16, payload: &[u8]) -> Vec<u8> {
    let src = SocketAddr::new(ip(src), 1000);
    Datagram::build(src, SocketAddr::new(ip(dst), dport), 0, payload).unwrap()
}

/// An AES-GCM SA from `src` to `dst`, the same keys at both ends.
fn sa(spi: u32, mode: Mode, src: &str, dst: &str, encap: bool) -> SaConfig {
    let mut c = SaConfig::esp(spi, mode, ip(src), ip(dst)).with_encr(EncrId::AES_GCM_16, &[7; 20]);
    c.reqid = REQID;
    c.replay_window = 64;
    if encap {
        c.encap = Some(UdpEncap::udp(4500, 4500));
    }
    c
}

fn policy(direction: Direction, src: &str, dst: &str, action: Action) -> Policy {
    Policy {
        direction,
        selector: Selector::between(prefix(src), prefix(dst)),
        action,
        priority: 0,
    }
}

fn protect(mode: Mode, tunnel: Option<(&str, &str)>) -> Action {
    Action::Protect(vec![SaTemplate {
        protocol: Protocol::Esp,
        mode,
        tunnel: tunnel.map(|(a, b)| (ip(a), ip(b))),
        level: Level::Require,
        reqid: REQID,
    }])
}

/// Gateway A's and gateway B's datapaths (one worker each) for a tunnel
/// 10.1/16 ⇄ 10.2/16 between 192.0.2.1 and 192.0.2.2, with one SA each
/// way (`sas`: false leaves A without its outbound SA), plus a DISCARD for
/// 10.9/16 and a BYPASS for UDP to port 5003.
fn gateways(sas: bool, encap: bool) -> (Datapath, Datapath) {
    let provider = Provider::fastest();
    let side = |me: &str, peer: &str, local: &str, remote: &str, out_spi, in_spi| {
        let mut spd = Spd::new();
        let tunnel = protect(Mode::Tunnel, Some((me, peer)));
        let back = protect(Mode::Tunnel, Some((peer, me)));
        spd.add(policy(Direction::Out, local, remote, tunnel))
            .unwrap();
        spd.add(policy(Direction::Fwd, remote, local, back))
            .unwrap();
        spd.add(policy(
            Direction::Out,
            local,
            "10.9.0.0/16",
            Action::Discard,
        ))
        .unwrap();
        let mut bypass = policy(Direction::Out, local, remote, Action::Bypass);
        bypass.selector.protocol = Some(17);
        bypass.selector.dst_ports = PortRange::single(5003);
        bypass.priority = -1;
        spd.add(bypass).unwrap();
        let mut sad = Sad::new();
        let mut add = |c: SaConfig| sad.add(SecurityAssociation::new(&c, &provider, NOW).unwrap());
        if sas || me == GW_B {
            add(sa(out_spi, Mode::Tunnel, me, peer, encap)).unwrap();
        }
        add(sa(in_spi, Mode::Tunnel, peer, me, encap)).unwrap();
        Datapath::new(
            0,
            1,
            Databases {
                sad,
                spd,
                spd_epoch: 0,
                generations: Default::default(),
            },
        )
    };
    let a = side(GW_A, GW_B, "10.1.0.0/16", "10.2.0.0/16", 0x1001, 0x2001);
    let b = side(GW_B, GW_A, "10.2.0.0/16", "10.1.0.0/16", 0x2001, 0x1001);
    (a, b)
}

fn out(dp: &mut Datapath, packet: &[u8], stats: &mut Stats) -> (Outbound, PacketBuf) {
    let mut buf = PacketBuf::from_packet(packet);
    let verdict = dp.outbound(&mut buf, Source::TUN, NOW, 0, stats);
    (verdict, buf)
}

/// Tunnel mode, raw ESP: A seals, B opens and delivers the packet as it was.
#[test]
fn a_protected_packet_crosses_the_tunnel() {
    let (mut a, mut b) = gateways(true, false);
    let mut stats = Stats::default();
    let inner = udp("10.1.0.1", "10.2.0.1", 9, b"hello");
    let (verdict, mut buf) = out(&mut a, &inner, &mut stats);
    let whole = false;
    assert_eq!(
        verdict,
        Outbound::Send {
            egress: Egress::Ip,
            whole
        }
    );
    assert_ne!(buf.as_slice(), &inner[..]);
    assert_eq!(
        b.inbound(&mut buf, None, NOW, &mut stats),
        Inbound::Deliver(0)
    );
    assert_eq!(buf.as_slice(), &inner[..]);
    // The same packet again: replayed, counted, nothing delivered.
    let (_, mut again) = out(&mut a, &inner, &mut stats);
    let copy = again.as_slice().to_vec();
    assert_eq!(
        b.inbound(&mut again, None, NOW, &mut stats),
        Inbound::Deliver(0)
    );
    let mut replay = PacketBuf::from_packet(&copy);
    assert_eq!(b.inbound(&mut replay, None, NOW, &mut stats), Inbound::Done);
    assert_eq!(stats.drops.get(DropReason::Replayed), 1);
}

/// DISCARD drops, BYPASS and no policy send in the clear, link-scope
/// traffic without a policy is dropped, and nothing leaves in the clear
/// by policies the worker may no longer have.
#[test]
fn discard_bypass_and_no_policy() {
    let (mut a, _) = gateways(true, false);
    let mut stats = Stats::default();
    let (v, _) = out(&mut a, &udp("10.1.0.1", "10.9.0.1", 9, b"x"), &mut stats);
    assert_eq!(v, Outbound::Done);
    assert_eq!(stats.drops.get(DropReason::PolicyDiscard), 1);
    let (v, _) = out(&mut a, &udp("10.1.0.1", "10.2.0.1", 5003, b"x"), &mut stats);
    assert_eq!(v, Outbound::Clear, "BYPASS for UDP 5003");
    let (v, _) = out(
        &mut a,
        &udp("10.1.0.1", "198.51.100.1", 9, b"x"),
        &mut stats,
    );
    assert_eq!(v, Outbound::Clear, "no policy: setkey's default");
    let (v, _) = out(
        &mut a,
        &udp("169.254.0.1", "198.51.100.1", 9, b"x"),
        &mut stats,
    );
    assert_eq!((v, stats.no_policy), (Outbound::Done, 1), "link scope");
    let mut buf = PacketBuf::from_packet(&udp("10.1.0.1", "198.51.100.1", 9, b"x"));
    let stale = a.outbound(&mut buf, Source::TUN, NOW, 1, &mut stats);
    assert_eq!(
        stale,
        Outbound::Done,
        "a newer SPD exists: not sent in the clear"
    );
    assert_eq!(stats.drops.get(DropReason::PolicyStale), 1);
    // Protected traffic does not depend on the epoch.
    let mut buf = PacketBuf::from_packet(&udp("10.1.0.1", "10.2.0.1", 9, b"x"));
    let sealed = a.outbound(&mut buf, Source::TUN, NOW, 1, &mut stats);
    assert!(matches!(sealed, Outbound::Send { .. }), "{sealed:?}");
}

/// No SA yet: the packet is dropped and IKE asked for the policy's SA,
/// at most once a second.
#[test]
fn no_sa_acquires_once_a_second() {
    let (mut a, _) = gateways(false, false);
    let mut stats = Stats::default();
    let packet = udp("10.1.0.1", "10.2.0.1", 9, b"x");
    let (v, _) = out(&mut a, &packet, &mut stats);
    assert_eq!(v, Outbound::Acquire(REQID));
    let (v, _) = out(&mut a, &packet, &mut stats);
    assert_eq!(v, Outbound::Done, "asked less than a second ago");
    let mut buf = PacketBuf::from_packet(&packet);
    let later = NOW + Duration::from_secs(1);
    assert_eq!(
        a.outbound(&mut buf, Source::TUN, later, 0, &mut stats),
        Outbound::Acquire(REQID)
    );
    assert_eq!(stats.no_outbound_sa, 3);
}

/// With two workers, the one that does not own the endpoint pair hands
/// the packet over; a packet handed over already is not handed on.
#[test]
fn the_owner_of_the_endpoints_seals() {
    let owner = owner_of_endpoints(ip(GW_A), ip(GW_B), 2);
    let (a, _) = gateways(true, false);
    let mut other = Datapath::new(1 - owner, 2, a.db);
    let mut stats = Stats::default();
    let packet = udp("10.1.0.1", "10.2.0.1", 9, b"x");
    let (v, _) = out(&mut other, &packet, &mut stats);
    assert_eq!(
        v,
        Outbound::HandOff {
            to: owner,
            whole: false
        }
    );
    let handed = Source {
        handed: true,
        whole: false,
    };
    let mut buf = PacketBuf::from_packet(&packet);
    assert_eq!(
        other.outbound(&mut buf, handed, NOW, 0, &mut stats),
        Outbound::Done
    );
    assert_eq!(stats.handoff_drops, 1);
}

/// ESP in UDP: the sealed packet is a UDP payload with its endpoints; the
/// peer takes it with the endpoints its socket reports. IKE behind the
/// marker is handed out, a keepalive ends there.
#[test]
fn esp_in_udp_and_what_else_arrives_on_4500() {
    let (mut a, mut b) = gateways(true, true);
    let mut stats = Stats::default();
    let inner = udp("10.1.0.1", "10.2.0.1", 9, b"natted");
    let (v, mut buf) = out(&mut a, &inner, &mut stats);
    let Outbound::Send {
        egress: Egress::Udp(to),
        ..
    } = v
    else {
        panic!("{v:?}");
    };
    assert_eq!(to.remote, SocketAddr::new(ip(GW_B), 4500));
    let from = UdpEndpoints {
        local: to.remote,
        remote: to.local,
        tos: to.tos,
    };
    assert_eq!(
        b.inbound(&mut buf, Some(&from), NOW, &mut stats),
        Inbound::Deliver(0)
    );
    assert_eq!(buf.as_slice(), &inner[..]);
    let mut ike = PacketBuf::from_packet(&[0, 0, 0, 0, 9, 9, 9, 9]);
    assert_eq!(
        b.inbound(&mut ike, Some(&from), NOW, &mut stats),
        Inbound::Ike
    );
    assert_eq!(ike.as_slice(), &[9, 9, 9, 9]);
    let mut keepalive = PacketBuf::from_packet(&[0xff]);
    assert_eq!(
        b.inbound(&mut keepalive, Some(&from), NOW, &mut stats),
        Inbound::Done
    );
    // The same ESP packet as raw ESP (IP protocol 50), for an SA that
    // expects UDP: refused.
    let (_, sealed) = out(&mut a, &inner, &mut stats);
    let esp = IpRepr {
        src: ip(GW_A),
        dst: ip(GW_B),
        next_header: IpProtocol::ESP,
        payload_len: sealed.len(),
        hop_limit: 64,
        tos: 0,
    };
    let mut raw = vec![0; esp.buffer_len()];
    esp.emit(&mut raw).unwrap();
    raw.extend_from_slice(sealed.as_slice());
    let mut raw = PacketBuf::from_packet(&raw);
    assert_eq!(b.inbound(&mut raw, None, NOW, &mut stats), Inbound::Done);
    assert_eq!(stats.drops.get(DropReason::EncapMismatch), 1);
}

/// Inbound: plaintext where a policy requires IPsec is refused, and so is
/// a decapsulated packet no policy allows.
#[test]
fn inbound_refusals() {
    let (mut a, mut b) = gateways(true, false);
    let mut stats = Stats::default();
    let mut plain = PacketBuf::from_packet(&udp("10.1.0.1", "10.2.0.1", 9, b"x"));
    assert_eq!(b.inbound(&mut plain, None, NOW, &mut stats), Inbound::Done);
    assert_eq!(stats.drops.get(DropReason::NotIpsec), 1);
    // Sealed by A's SA, but the inner packet is not one B's policy covers.
    let (_, mut buf) = out(&mut a, &udp("10.1.0.1", "10.2.0.1", 9, b"x"), &mut stats);
    b.db.spd = Spd::new();
    assert_eq!(b.inbound(&mut buf, None, NOW, &mut stats), Inbound::Done);
    assert_eq!(stats.drops.get(DropReason::NoInboundPolicy), 1);
}

/// Transport mode protects whole datagrams only (RFC 4303 §3.1.1): the
/// fragments of one are held, put together, sealed whole and sent as a
/// reassembled datagram (fragmented after ESP where it must be).
#[test]
fn transport_mode_reassembles_fragments_first() {
    let provider = Provider::fastest();
    let (h1, h2) = ("192.0.2.10", "192.0.2.20");
    // Both hosts hold both SAs: 0x3001 from h1 to h2, 0x3002 back.
    let host = |me: &str, peer: &str| {
        let mut spd = Spd::new();
        let (local, remote) = (format!("{me}/32"), format!("{peer}/32"));
        spd.add(policy(
            Direction::Out,
            &local,
            &remote,
            protect(Mode::Transport, None),
        ))
        .unwrap();
        spd.add(policy(
            Direction::In,
            &remote,
            &local,
            protect(Mode::Transport, None),
        ))
        .unwrap();
        let mut sad = Sad::new();
        for (s, d, spi) in [(h1, h2, 0x3001), (h2, h1, 0x3002)] {
            let c = sa(spi, Mode::Transport, s, d, false);
            sad.add(SecurityAssociation::new(&c, &provider, NOW).unwrap())
                .unwrap();
        }
        Datapath::new(
            0,
            1,
            Databases {
                sad,
                spd,
                spd_epoch: 0,
                generations: Default::default(),
            },
        )
    };
    let (mut a, mut b) = (host(h1, h2), host(h2, h1));
    let datagram = udp(h1, h2, 9, &[0x5a; 3000]);
    let mut frags = Vec::new();
    flowsec_wire::frag::fragment_ipv4(&datagram, 1400, |f| frags.push(f.to_vec())).unwrap();
    assert!(frags.len() >= 3);
    let mut stats = Stats::default();
    let last = frags.len() - 1;
    for (i, f) in frags.iter().enumerate() {
        let (v, mut buf) = out(&mut a, f, &mut stats);
        if i < last {
            assert_eq!(v, Outbound::Done, "fragment {i} held");
            continue;
        }
        assert_eq!(
            v,
            Outbound::Send {
                egress: Egress::Ip,
                whole: true
            }
        );
        assert_eq!(stats.reassembled, 1);
        assert_eq!(
            b.inbound(&mut buf, None, NOW, &mut stats),
            Inbound::Deliver(0)
        );
        assert_eq!(buf.as_slice(), &datagram[..]);
    }
}

/// Changes to the databases apply to the very next packet: a younger SA
/// seals as soon as it is added (RFC 4301 §4.4.2.1, a rekey), without its
/// SAs the policy acquires, without its policy the traffic goes in the
/// clear (setkey's default). No decision outlives a change.
#[test]
fn changes_to_the_databases_apply_to_the_next_packet() {
    let (mut a, _) = gateways(true, false);
    let mut stats = Stats::default();
    let packet = udp("10.1.0.1", "10.2.0.1", 9, b"x");
    let spi_of = |buf: &PacketBuf| u32::from_be_bytes(buf.as_slice()[20..24].try_into().unwrap());
    let (v, buf) = out(&mut a, &packet, &mut stats);
    assert!(matches!(v, Outbound::Send { .. }), "{v:?}");
    assert_eq!(spi_of(&buf), 0x1001);

    let later = NOW + Duration::from_secs(1);
    let young = sa(0x1003, Mode::Tunnel, GW_A, GW_B, false);
    let young = SecurityAssociation::new(&young, &Provider::fastest(), later).unwrap();
    a.db.sad.add(young).unwrap();
    let mut buf = PacketBuf::from_packet(&packet);
    let v = a.outbound(&mut buf, Source::TUN, later, 0, &mut stats);
    assert!(matches!(v, Outbound::Send { .. }), "{v:?}");
    assert_eq!(spi_of(&buf), 0x1003, "the younger SA after a rekey");

    for spi in [0x1001, 0x1003] {
        let id = SaId {
            protocol: Protocol::Esp,
            spi,
            dst: ip(GW_B),
        };
        assert!(a.db.sad.remove(&id).is_some());
    }
    let mut buf = PacketBuf::from_packet(&packet);
    assert_eq!(
        a.outbound(&mut buf, Source::TUN, later, 0, &mut stats),
        Outbound::Acquire(REQID)
    );

    let selector = Selector::between(prefix("10.1.0.0/16"), prefix("10.2.0.0/16"));
    a.db.spd.remove(Direction::Out, &selector).unwrap();
    let mut buf = PacketBuf::from_packet(&packet);
    assert_eq!(
        a.outbound(&mut buf, Source::TUN, later, 0, &mut stats),
        Outbound::Clear
    );
}

/// B moves to another address (a MOBIKE update, RFC 4555 §3.5) and, the
/// new path crossing a NAT, to ESP in UDP: A's outbound SA and B's
/// inbound one move with their state (A's counter goes on from 1, once
/// the control plane says from where), the policies' tunnels follow, and
/// the first packet after the move reaches B.
#[test]
fn a_moved_sa_seals_and_opens_on_the_new_path() {
    const GW_B2: &str = "198.51.100.2";
    let (mut a, mut b) = gateways(true, false);
    let mut stats = Stats::default();
    let inner = udp("10.1.0.1", "10.2.0.1", 9, b"moved");
    let (_, mut before) = out(&mut a, &inner, &mut stats);
    let wire = before.as_slice().to_vec();
    assert_eq!(
        b.inbound(&mut before, None, NOW, &mut stats),
        Inbound::Deliver(0)
    );
    let id = |dst: &str| SaId {
        protocol: Protocol::Esp,
        spi: 0x1001,
        dst: ip(dst),
    };
    let to = |src: &str, dst: &str| flowsec_ipsec::Endpoints {
        src: ip(src),
        dst: ip(dst),
        encap: Some(UdpEncap::udp(4500, 4500)),
    };
    let mut spd = Spd::new();
    spd.add(policy(
        Direction::Out,
        "10.1.0.0/16",
        "10.2.0.0/16",
        protect(Mode::Tunnel, Some((GW_A, GW_B2))),
    ))
    .unwrap();
    a.db.apply(vec![
        crate::apply::WorkerChange::Move(id(GW_B), to(GW_A, GW_B2)),
        crate::apply::WorkerChange::Spd(spd, 1),
    ]);
    let mut spd = Spd::new();
    spd.add(policy(
        Direction::Fwd,
        "10.1.0.0/16",
        "10.2.0.0/16",
        protect(Mode::Tunnel, Some((GW_A, GW_B2))),
    ))
    .unwrap();
    b.db.apply(vec![
        crate::apply::WorkerChange::Move(id(GW_B), to(GW_A, GW_B2)),
        crate::apply::WorkerChange::Spd(spd, 1),
    ]);
    assert!(a.db.sad.lookup(&id(GW_B)).is_none(), "not under its old id");
    // Moved, no copy seals until the control plane has seen every copy's
    // number and lets them go on above it.
    let (v, _) = out(&mut a, &inner, &mut stats);
    assert!(!matches!(v, Outbound::Send { .. }), "{v:?}");
    let range = crate::seqstate::SeqRange {
        from: 1,
        ceiling: u64::MAX,
    };
    a.db.apply(vec![crate::apply::WorkerChange::Seq(id(GW_B2), range)]);
    let (v, mut buf) = out(&mut a, &inner, &mut stats);
    let Outbound::Send {
        egress: Egress::Udp(udp_to),
        ..
    } = v
    else {
        panic!("{v:?}");
    };
    assert_eq!(udp_to.remote, SocketAddr::new(ip(GW_B2), 4500));
    assert_eq!(
        buf.as_slice()[4..8],
        2u32.to_be_bytes(),
        "its counter went on"
    );
    assert!(b.db.sad.lookup(&id(GW_B2)).is_some());
    // The packet of before the move, to B's old address: no SA there.
    let mut replay = PacketBuf::from_packet(&wire);
    assert_eq!(b.inbound(&mut replay, None, NOW, &mut stats), Inbound::Done);
    assert_eq!(stats.drops.get(DropReason::UnknownSpi), 1);
    let got = b.inbound(
        &mut buf,
        Some(&UdpEndpoints {
            local: udp_to.remote,
            remote: udp_to.local,
            tos: 0,
        }),
        NOW,
        &mut stats,
    );
    assert_eq!(got, Inbound::Deliver(0), "{:?}", stats.drops);
    assert_eq!(buf.as_slice(), &inner[..]);
}

/// IPv6 inside and outside: sealed by A, opened and delivered by B.
#[test]
fn an_ipv6_tunnel() {
    let (ga, gb) = ("2001:db8::1", "2001:db8::2");
    let provider = Provider::fastest();
    let side = |me: &str, peer: &str, local: &str, remote: &str, out_spi, in_spi| {
        let mut spd = Spd::new();
        spd.add(policy(
            Direction::Out,
            local,
            remote,
            protect(Mode::Tunnel, Some((me, peer))),
        ))
        .unwrap();
        spd.add(policy(
            Direction::Fwd,
            remote,
            local,
            protect(Mode::Tunnel, Some((peer, me))),
        ))
        .unwrap();
        let mut sad = Sad::new();
        for c in [
            sa(out_spi, Mode::Tunnel, me, peer, false),
            sa(in_spi, Mode::Tunnel, peer, me, false),
        ] {
            sad.add(SecurityAssociation::new(&c, &provider, NOW).unwrap())
                .unwrap();
        }
        let db = Databases {
            sad,
            spd,
            spd_epoch: 0,
            generations: Default::default(),
        };
        Datapath::new(0, 1, db)
    };
    let mut a = side(ga, gb, "2001:db8:1::/64", "2001:db8:2::/64", 0x61, 0x62);
    let mut b = side(gb, ga, "2001:db8:2::/64", "2001:db8:1::/64", 0x62, 0x61);
    let mut stats = Stats::default();
    let inner = udp("2001:db8:1::2", "2001:db8:2::2", 9, b"six");
    let (v, mut buf) = out(&mut a, &inner, &mut stats);
    assert_eq!(
        v,
        Outbound::Send {
            egress: Egress::Ip,
            whole: false
        }
    );
    assert_eq!(buf.as_slice()[0] >> 4, 6, "an IPv6 outer header");
    assert_eq!(buf.as_slice()[6], 50, "carrying ESP");
    assert_eq!(
        b.inbound(&mut buf, None, NOW, &mut stats),
        Inbound::Deliver(0)
    );
    assert_eq!(buf.as_slice(), &inner[..]);
}

/// Gateway A's worker `index` of `workers` in `parallel` mode, with an
/// outbound SA per entry of `cpus` (SPI 0x1100 + its position; `None`: a
/// fallback SA, `Some(k)`: worker k's per-resource SA) and the inbound
/// SA 0x2001, for the tunnel of [`gateways`].
fn flow_gateway(
    index: usize,
    workers: usize,
    parallel: Parallel,
    cpus: &[Option<u32>],
) -> Datapath {
    let provider = Provider::fastest();
    let mut spd = Spd::new();
    let tunnel = protect(Mode::Tunnel, Some((GW_A, GW_B)));
    let back = protect(Mode::Tunnel, Some((GW_B, GW_A)));
    spd.add(policy(Direction::Out, "10.1.0.0/16", "10.2.0.0/16", tunnel))
        .unwrap();
    spd.add(policy(Direction::Fwd, "10.2.0.0/16", "10.1.0.0/16", back))
        .unwrap();
    let mut sad = Sad::new();
    for (i, cpu) in cpus.iter().enumerate() {
        let mut c = sa(0x1100 + i as u32, Mode::Tunnel, GW_A, GW_B, false);
        c.cpu = *cpu;
        sad.add(SecurityAssociation::new(&c, &provider, NOW).unwrap())
            .unwrap();
    }
    let inbound = sa(0x2001, Mode::Tunnel, GW_B, GW_A, false);
    sad.add(SecurityAssociation::new(&inbound, &provider, NOW).unwrap())
        .unwrap();
    let db = Databases {
        sad,
        spd,
        spd_epoch: 0,
        generations: Default::default(),
    };
    Datapath::new(index, workers, db).with_parallel(parallel)
}

/// The SPI of the raw ESP packet (IPv4, no options) in `buf`.
fn esp_spi(buf: &PacketBuf) -> u32 {
    u32::from_be_bytes(buf.as_slice()[20..24].try_into().unwrap())
}

/// Flow-parallel (RFC 9611): each worker seals with its own per-resource
/// SA, so nothing is handed over and each SA has one writer; a worker
/// without one hands the packet to the endpoints' owner, which seals with
/// the fallback SA; the default mode ignores the marks.
#[test]
fn per_resource_sas_seal_on_their_own_worker() {
    let packet = udp("10.1.0.1", "10.2.0.1", 9, b"x");
    let owner = owner_of_endpoints(ip(GW_A), ip(GW_B), 2);
    let other = 1 - owner;
    let full = [None, Some(0), Some(1)];
    for index in [0, 1] {
        let mut w = flow_gateway(index, 2, Parallel::Flow, &full);
        let mut stats = Stats::default();
        let (v, buf) = out(&mut w, &packet, &mut stats);
        assert!(matches!(v, Outbound::Send { .. }), "worker {index}: {v:?}");
        assert_eq!(
            esp_spi(&buf),
            0x1101 + index as u32,
            "worker {index}'s own SA"
        );
    }
    // Only the owner has an SA of its own: the other worker hands over,
    // and the owner seals with its own; with no per-resource SA for it, it
    // seals with the fallback.
    let mine_only = [None, Some(owner as u32)];
    let mut stats = Stats::default();
    let (v, _) = out(
        &mut flow_gateway(other, 2, Parallel::Flow, &mine_only),
        &packet,
        &mut stats,
    );
    assert_eq!(
        v,
        Outbound::HandOff {
            to: owner,
            whole: false
        }
    );
    let (_, buf) = out(
        &mut flow_gateway(owner, 2, Parallel::Flow, &mine_only),
        &packet,
        &mut stats,
    );
    assert_eq!(esp_spi(&buf), 0x1101);
    let others_only = [None, Some(other as u32)];
    let (_, buf) = out(
        &mut flow_gateway(owner, 2, Parallel::Flow, &others_only),
        &packet,
        &mut stats,
    );
    assert_eq!(
        esp_spi(&buf),
        0x1100,
        "never another worker's SA: the fallback"
    );
    // No fallback and not its own: the owner has no SA (IKE would be asked).
    let (v, _) = out(
        &mut flow_gateway(owner, 2, Parallel::Flow, &[Some(other as u32)]),
        &packet,
        &mut stats,
    );
    assert_eq!((v, stats.no_outbound_sa), (Outbound::Acquire(REQID), 1));
    // The default mode: the owner seals every packet, with the youngest
    // (here: the last added) SA whatever its mark.
    let (v, _) = out(
        &mut flow_gateway(other, 2, Parallel::Default, &full),
        &packet,
        &mut stats,
    );
    assert_eq!(
        v,
        Outbound::HandOff {
            to: owner,
            whole: false
        }
    );
    let mut w = flow_gateway(owner, 2, Parallel::Default, &full);
    let mut young = sa(0x1200, Mode::Tunnel, GW_A, GW_B, false);
    young.cpu = Some(other as u32);
    let later =
        SecurityAssociation::new(&young, &Provider::fastest(), NOW + Duration::from_secs(1));
    w.db.sad.add(later.unwrap()).unwrap();
    let mut buf = PacketBuf::from_packet(&packet);
    let later = NOW + Duration::from_secs(2);
    assert!(matches!(
        w.outbound(&mut buf, Source::TUN, later, 0, &mut stats),
        Outbound::Send { .. }
    ));
    assert_eq!(esp_spi(&buf), 0x1200);
}

/// Inbound, the flow-parallel worker delivers through its own queue when
/// it seals the replies itself (the TUN device then reads them there);
/// otherwise through the queue of the endpoints' owner.
#[test]
fn replies_go_to_the_worker_that_seals_them() {
    let owner = owner_of_endpoints(ip(GW_A), ip(GW_B), 2);
    let other = 1 - owner;
    let (_, mut b) = gateways(true, false);
    let mut stats = Stats::default();
    let mut sealed =
        |payload: &[u8]| out(&mut b, &udp("10.2.0.1", "10.1.0.1", 9, payload), &mut stats).1;
    let first = sealed(b"1");
    let second = sealed(b"2");
    let third = sealed(b"3");
    let mut stats = Stats::default();
    let mut buf = first;
    let mut w = flow_gateway(other, 2, Parallel::Flow, &[None, Some(0), Some(1)]);
    assert_eq!(
        w.inbound(&mut buf, None, NOW, &mut stats),
        Inbound::Deliver(other)
    );
    let mut buf = second;
    let mut w = flow_gateway(other, 2, Parallel::Flow, &[None]);
    assert_eq!(
        w.inbound(&mut buf, None, NOW, &mut stats),
        Inbound::Deliver(owner)
    );
    let mut buf = third;
    let mut w = flow_gateway(other, 2, Parallel::Default, &[None, Some(0), Some(1)]);
    assert_eq!(
        w.inbound(&mut buf, None, NOW, &mut stats),
        Inbound::Deliver(owner)
    );
}

mod pcrypt;
