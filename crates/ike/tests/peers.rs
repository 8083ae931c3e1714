//! Two IKE peers in one process on a virtual clock, stepped message by
//! message (ARCHITECTURE.md "Testing pyramid"): every exchange, loss,
//! duplication, the rekey and delete collisions, INVALID_KE, cookies, a
//! dead peer, and hostile input. The exchanges are drawn in comments.

mod pair;

use std::net::SocketAddr;
use std::time::Duration;

use flowsec_ike::random::SeededRandom;
use flowsec_ike::{Datagram, Ike, RecordingKernel, Settings, Transport};
use flowsec_ipsec::EncapTransport;
use flowsec_wire::iana::ExchangeType;
use pair::*;

#[test]
fn ike_sa_init_and_ike_auth_bring_up_the_first_child_sa() {
    let mut p = Pair::default_pair();
    p.start();
    // HDR, SAi1, KEi, Ni, N(NAT_D) x2 -->
    p.b_gets();
    //                     <-- HDR, SAr1, KEr, Nr, N(NAT_D) x2
    p.a_gets();
    // HDR, SK {IDi, IDr, AUTH, N(INITIAL_CONTACT), SAi2, TSi, TSr} -->
    p.b_gets();
    //                     <-- HDR, SK {IDr, AUTH, SAr2, TSi, TSr}
    p.a_gets();
    p.assert_up(1);
    let la = p.a.list(p.now);
    assert_eq!(la[0].remote_id, B);
    assert!(la[0].initiator && !la[0].nat);
    assert_eq!(la[0].children[0].local_ts, ["10.1.0.0/24"]);
    assert_eq!(la[0].children[0].remote_ts, ["10.2.0.0/24"]);
    // An out and a fwd policy on each side, tied to the SAs by reqid.
    assert_eq!(p.ka.policies.len(), 2);
    assert_eq!(p.kb.policies.len(), 2);
    assert!(p
        .ka
        .sas
        .iter()
        .all(|s| s.reqid == p.ka.sas[0].reqid && s.reqid != 0));
    // No NAT between them: plain ESP.
    assert!(p.ka.sas.iter().all(|s| s.encap.is_none()));
}

#[test]
fn a_lost_request_is_retransmitted_and_a_duplicate_answered_from_the_cache() {
    let mut p = Pair::default_pair();
    p.start();
    p.b_gets();
    p.a_gets();
    // HDR, SK {IDi, AUTH, ...} -->   (lost)
    p.collect();
    let lost = p.ab.remove(0);
    // Nothing for 3.9 s, then the first retransmission at 4 s (strongSwan's).
    p.advance(Duration::from_millis(3900));
    assert!(p.ab.is_empty());
    p.advance(Duration::from_millis(100));
    assert_eq!(p.ab.len(), 1);
    assert_eq!(
        p.ab[0].data, lost.data,
        "a retransmission is the same bytes"
    );
    // The retransmission arrives twice: b answers both from its cache.
    let dup = p.ab[0].clone();
    p.b_gets();
    p.b.handle(p.now, dup.remote, dup.local, &dup.data, &mut p.kb);
    p.collect();
    assert_eq!(p.ba.len(), 2);
    assert_eq!(p.ba[0].data, p.ba[1].data);
    assert_eq!(p.b.stats().replayed, 1);
    p.a_gets();
    p.a_gets();
    // The second response answers nothing any more.
    assert_eq!(p.a.stats().bad_message_id, 1);
    p.assert_up(1);
}

#[test]
fn child_sa_rekey_with_pfs_from_either_side_replaces_the_sas() {
    let mut p = Pair::default_pair();
    p.start();
    p.settle();
    p.assert_up(1);
    let old = p.a.list(p.now)[0].children[0].clone();
    // HDR, SK {N(REKEY_SA), SA, Ni, KEi, TSi, TSr} -->
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.b_gets();
    // b installs the new inbound SA before its answer leaves, and goes on
    // sending on the old outbound one: a cannot open the new one yet.
    assert_eq!(p.kb.sas.len(), 3);
    assert!(p.kb.sa(old.sa_in.spi).is_some());
    //                     <-- HDR, SK {SA, Nr, KEr, TSi, TSr}
    p.a_gets();
    // a sends on the new SA at once; b switches when a deletes the old.
    assert_eq!(p.ka.sas.len(), 4);
    // HDR, SK {D(ESP, old SPI)} -->
    p.b_gets();
    // b sends on the new SA; the old inbound one stays 5 s for packets
    // a sealed before it switched.
    assert_eq!(p.kb.sas.len(), 3);
    assert!(p.kb.sa(old.sa_out.spi).is_some() && p.kb.sa(old.sa_in.spi).is_none());
    let log = p.kb.log.join("\n");
    let (added, removed) = (log.rfind("add_sa").unwrap(), log.find("del_sa").unwrap());
    assert!(
        added < removed,
        "the new outbound SA before the old ones go:\n{log}"
    );
    // HDR, SK {D(ESP, old SPI)} -->  <-- HDR, SK {D(ESP, old SPI)}
    p.settle();
    p.assert_up(1);
    let new = p.a.list(p.now)[0].children[0].clone();
    assert_ne!(new.sa_in.spi, old.sa_in.spi);
    assert_eq!(
        new.reqid, old.reqid,
        "the policies stay, the SAs change under them"
    );
    assert!(
        new.proposal.contains("ECP"),
        "PFS group shown: {}",
        new.proposal
    );
    assert!(p.ka.sa(old.sa_in.spi).is_none() && p.kb.sa(old.sa_out.spi).is_none());
    assert_eq!(p.ka.policies.len(), 2, "{:?}", p.ka.log);
    // And from b.
    p.b.rekey(p.now, None, Some("net"), &mut p.kb).unwrap();
    p.settle();
    p.assert_up(1);
    assert_ne!(p.a.list(p.now)[0].children[0].sa_in.spi, new.sa_in.spi);
}

#[test]
fn child_sa_rekey_without_pfs() {
    let a = conf(
        A,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        "",
        "start_action = start",
        "k",
    )
    .replace(
        "esp_proposals = aes128gcm16-ecp256",
        "esp_proposals = aes256-sha256",
    );
    let b = conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "k").replace(
        "esp_proposals = aes128gcm16-ecp256",
        "esp_proposals = aes256-sha256",
    );
    let mut p = Pair::new(&a, &b);
    p.start();
    p.settle();
    p.assert_up(1);
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.settle();
    p.assert_up(1);
    let c = &p.a.list(p.now)[0].children[0];
    assert!(
        !c.proposal.contains("MODP") && !c.proposal.contains("ECP"),
        "{}",
        c.proposal
    );
    let sa = p.ka.sa(c.sa_out.spi).unwrap();
    assert_eq!((sa.encr_key.len(), sa.integ_key.len()), (32, 32));
}

#[test]
fn ike_sa_rekey_moves_the_children_and_deletes_the_old_sa() {
    let mut p = Pair::default_pair();
    p.start();
    p.settle();
    let before = p.a.list(p.now)[0].clone();
    // HDR, SK {SA(SPIi'), Ni, KEi} -->  <-- HDR, SK {SA(SPIr'), Nr, KEr}
    // HDR, SK {D(IKE)} (old SA) -->    <-- HDR, SK {}
    p.a.rekey(p.now, Some("gw"), None, &mut p.ka).unwrap();
    p.settle();
    p.assert_up(1);
    let after = p.a.list(p.now)[0].clone();
    assert_ne!(after.spi_i, before.spi_i);
    assert_eq!(
        after.children[0].sa_in, before.children[0].sa_in,
        "Child SAs keep their SAs"
    );
    // The new SA works: rekey a child through it, then let b rekey the IKE SA.
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.settle();
    p.assert_up(1);
    p.b.rekey(p.now, Some("gw"), None, &mut p.kb).unwrap();
    p.settle();
    p.assert_up(1);
    assert!(
        !p.a.list(p.now)[0].initiator,
        "the rekey's initiator is the new SA's original initiator"
    );
}

#[test]
fn simultaneous_child_rekeys_leave_one_pair() {
    let mut p = Pair::default_pair();
    p.start();
    p.settle();
    // HDR, SK {N(REKEY_SA), SA, Ni1, KEi, ..} -->   <-- HDR, SK {N(REKEY_SA), SA, Ni2, KEi, ..}
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.b.rekey(p.now, None, Some("net"), &mut p.kb).unwrap();
    p.collect();
    assert_eq!((p.ab.len(), p.ba.len()), (1, 1));
    // Both requests arrive, both are answered (two new pairs exist),
    p.b_gets();
    p.a_gets();
    // then the answers: §2.8.1 picks the pair of the lowest nonce to go.
    p.a_gets();
    p.b_gets();
    p.settle();
    p.assert_up(1);
}

#[test]
fn simultaneous_ike_rekeys_leave_one_ike_sa() {
    let mut p = Pair::default_pair();
    p.start();
    p.settle();
    p.a.rekey(p.now, Some("gw"), None, &mut p.ka).unwrap();
    p.b.rekey(p.now, Some("gw"), None, &mut p.kb).unwrap();
    p.collect();
    p.b_gets();
    p.a_gets();
    p.a_gets();
    p.b_gets();
    p.settle();
    p.advance(Duration::from_secs(60));
    p.settle();
    p.assert_up(1);
    // And the survivor works.
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.settle();
    p.assert_up(1);
}

#[test]
fn invalid_ke_payload_makes_the_initiator_retry_with_the_responders_group() {
    let a = conf(
        A,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        "",
        "start_action = start",
        "k",
    )
    .replace(
        "proposals = aes128gcm16-prfsha256-ecp256",
        "proposals = aes256-sha256-ecp256-modp2048",
    );
    let b = conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "k").replace(
        "proposals = aes128gcm16-prfsha256-ecp256",
        "proposals = aes256-sha256-modp2048",
    );
    let mut p = Pair::new(&a, &b);
    p.start();
    // HDR, SAi1, KEi(19), Ni -->  <-- HDR, N(INVALID_KE_PAYLOAD, 14)
    p.b_gets();
    assert_eq!(p.b.stats().invalid_ke_sent, 1);
    assert!(p.b.list(p.now).is_empty(), "the responder keeps no state");
    p.a_gets();
    // HDR, SAi1, KEi(14), Ni -->  ...
    p.settle();
    p.assert_up(1);
    assert!(
        p.a.list(p.now)[0].proposal.contains("MODP-2048"),
        "{}",
        p.a.list(p.now)[0].proposal
    );
}

#[test]
fn cookies_engage_above_the_threshold() {
    let sb = Settings {
        cookie_threshold: 0,
        ..Settings::default()
    };
    let mut p = Pair::with(
        &conf(
            A,
            B,
            "10.1.0.0/24",
            "10.2.0.0/24",
            "",
            "start_action = start",
            "k",
        ),
        &conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "k"),
        Settings::default(),
        sb,
    );
    p.start();
    // HDR, SAi1, KEi, Ni -->  <-- HDR, N(COOKIE)
    p.b_gets();
    assert_eq!(p.b.stats().cookies_sent, 1);
    assert!(p.b.list(p.now).is_empty());
    p.a_gets();
    // HDR, N(COOKIE), SAi1, KEi, Ni -->  ...
    p.settle();
    p.assert_up(1);
}

#[test]
fn a_peer_that_stops_answering_is_declared_dead() {
    let a = conf(
        A,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        "dpd_delay = 30s",
        "start_action = start",
        "k",
    );
    let mut p = Pair::new(&a, &conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "k"));
    p.start();
    p.settle();
    p.assert_up(1);
    // Quiet for dpd_delay: an empty INFORMATIONAL, answered.
    p.advance(Duration::from_secs(30));
    assert_eq!(p.ab.len(), 1);
    p.settle();
    p.assert_up(1);
    // b dies: a retransmits at 4, 11.2, 24.2, 47.5, 89.5 s and gives up at 165 s.
    p.advance(Duration::from_secs(30));
    for _ in 0..200 {
        p.advance(Duration::from_secs(1));
        p.ab.clear();
    }
    assert!(p.a.list(p.now).is_empty());
    assert!(
        p.ka.sas.is_empty() && p.ka.policies.is_empty(),
        "{:?}",
        p.ka.log
    );
    assert_eq!(p.a.stats().peers_dead, 1);
    assert_eq!(p.a.stats().retransmits, 5);
}

#[test]
fn a_wrong_key_fails_authentication_and_installs_nothing() {
    let mut p = Pair::new(
        &conf(
            A,
            B,
            "10.1.0.0/24",
            "10.2.0.0/24",
            "",
            "start_action = start",
            "right",
        ),
        &conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "wrong"),
    );
    p.start();
    p.settle();
    assert!(p.a.list(p.now).is_empty());
    assert!(p.b.list(p.now).iter().all(|s| s.state != "ESTABLISHED"));
    assert!(p.ka.sas.is_empty() && p.kb.sas.is_empty());
}

#[test]
fn deleting_a_child_and_the_ike_sa() {
    let mut p = Pair::default_pair();
    p.start();
    p.settle();
    // A second child of the same config, then delete one.
    p.a.initiate(p.now, Some("gw"), Some("net"), &mut p.ka)
        .unwrap();
    p.settle();
    p.assert_up(2);
    p.b.terminate(p.now, None, Some("net"), &mut p.kb).unwrap();
    p.settle();
    p.assert_up(0);
    assert!(p.ka.policies.is_empty() && p.kb.policies.is_empty());
    p.a.initiate(p.now, Some("gw"), Some("net"), &mut p.ka)
        .unwrap();
    p.settle();
    p.assert_up(1);
    // HDR, SK {D(IKE)} -->  <-- HDR, SK {}
    p.a.terminate(p.now, Some("gw"), None, &mut p.ka).unwrap();
    p.settle();
    assert!(p.a.list(p.now).is_empty() && p.b.list(p.now).is_empty());
    assert!(p.ka.sas.is_empty() && p.kb.sas.is_empty());
}

#[test]
fn narrowing_and_ts_unacceptable() {
    // a asks for 10.0.0.0/8 behind b; b allows only 10.2.0.0/24.
    let a = conf(
        A,
        B,
        "10.1.0.0/24",
        "10.0.0.0/8",
        "",
        "start_action = start",
        "k",
    );
    let mut p = Pair::new(&a, &conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "k"));
    p.start();
    p.settle();
    p.assert_up(1);
    assert_eq!(p.a.list(p.now)[0].children[0].remote_ts, ["10.2.0.0/24"]);
    // Nothing in common: the IKE SA comes up, the child does not.
    let a = conf(
        A,
        B,
        "10.1.0.0/24",
        "172.16.0.0/12",
        "",
        "start_action = start",
        "k",
    );
    let mut p = Pair::new(&a, &conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "k"));
    p.start();
    p.settle();
    p.assert_up(0);
}

#[test]
fn transport_mode_is_negotiated() {
    let a = conf(
        A,
        B,
        "dynamic",
        "dynamic",
        "",
        "start_action = start\n mode = transport",
        "k",
    );
    let b = conf(B, A, "dynamic", "dynamic", "", "mode = transport", "k");
    let mut p = Pair::new(&a, &b);
    p.start();
    p.settle();
    p.assert_up(1);
    let c = &p.a.list(p.now)[0].children[0];
    assert_eq!(c.mode, "TRANSPORT");
    assert_eq!(c.local_ts, [format!("{A}/32")]);
}

#[test]
fn hostile_input_is_dropped_and_counted() {
    let mut p = Pair::default_pair();
    p.start();
    p.settle();
    let from: SocketAddr = format!("{A}:500").parse().unwrap();
    let to: SocketAddr = format!("{B}:500").parse().unwrap();
    let mut rng = SeededRandom::new(9);
    use flowsec_ike::random::Random;
    for len in [0usize, 1, 27, 28, 29, 100, 1500] {
        let mut junk = vec![0u8; len];
        rng.fill(&mut junk);
        p.b.handle(p.now, to, from, &junk, &mut p.kb);
    }
    // A real message, each prefix and each single-bit flip of it.
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.collect();
    let real = p.ab.remove(0);
    for n in 0..real.data.len() {
        p.b.handle(p.now, to, from, &real.data[..n], &mut p.kb);
    }
    for i in 0..real.data.len() * 8 {
        let mut bad = real.data.clone();
        bad[i / 8] ^= 1 << (i % 8);
        p.b.handle(p.now, to, from, &bad, &mut p.kb);
    }
    let s = p.b.stats().clone();
    assert!(s.malformed + s.bad_integrity + s.unknown_spi > 0, "{s:?}");
    // Nothing of it changed b: the real request still works.
    p.b.handle(p.now, to, from, &real.data, &mut p.kb);
    p.settle();
    p.assert_up(1);
}

#[test]
fn a_flood_of_ike_sa_init_stays_bounded_and_established_sas_keep_working() {
    let sb = Settings {
        cookie_threshold: 10,
        max_half_open: 50,
        ..Settings::default()
    };
    let b_conf = conf(B, "%any", "10.2.0.0/24", "10.1.0.0/24", "", "", "k");
    let mut p = Pair::with(
        &conf(
            A,
            B,
            "10.1.0.0/24",
            "10.2.0.0/24",
            "",
            "start_action = start",
            "k",
        ),
        &b_conf,
        Settings::default(),
        sb,
    );
    p.start();
    p.settle();
    p.assert_up(1);
    // IKE_SA_INIT requests from 2000 addresses, as fresh initiators.
    let to: SocketAddr = format!("{B}:500").parse().unwrap();
    for i in 0..2000u32 {
        let ip = std::net::Ipv4Addr::from(0xc633_0000 + i);
        let src = SocketAddr::new(ip.into(), 500);
        let text = conf(
            &ip.to_string(),
            B,
            "10.1.0.0/24",
            "10.2.0.0/24",
            "",
            "start_action = start",
            "k",
        );
        let mut x = ike(&text, 100 + u64::from(i), Settings::default());
        let mut kx = RecordingKernel::default();
        x.start(p.now, &mut kx);
        let d = x.poll_transmit().unwrap();
        p.b.handle(p.now, to, src, &d.data, &mut p.kb);
        while p.b.poll_transmit().is_some() {}
    }
    let half_open =
        p.b.list(p.now)
            .iter()
            .filter(|s| s.state == "CONNECTING")
            .count();
    assert_eq!(half_open, 10, "cookies engaged at the threshold");
    assert!(p.b.stats().cookies_sent >= 1990);
    // The established SA still rekeys.
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.settle();
    assert_eq!(p.a.list(p.now)[0].children.len(), 1);
    // Half-open SAs go after 30 s.
    p.advance(Duration::from_secs(31));
    assert_eq!(p.b.list(p.now).len(), 1);
}

/// The exchange type of an IKE message (octet 18 of the header, RFC 7296 §3.1).
fn exchange_of(d: &Datagram) -> flowsec_wire::iana::ExchangeType {
    flowsec_wire::ike::Header::parse(&d.data)
        .expect("an IKE header")
        .exchange
}

#[test]
fn one_address_answering_cookies_cannot_keep_another_from_establishing() {
    // An attacker at one real address: it receives, so it returns every
    // cookie (RFC 7296 §2.6 proves no more). 2000 fresh initiators from
    // there, 1000 before and 1000 after a's IKE_SA_INIT; a gets through
    // without even a cookie round trip.
    const ATTACKER: &str = "198.51.100.66";
    let b_conf = conf(B, "%any", "10.2.0.0/24", "10.1.0.0/24", "", "", "k");
    let a_conf = conf(
        A,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        "",
        "start_action = start",
        "k",
    );
    let mut p = Pair::with(&a_conf, &b_conf, Settings::default(), Settings::default());
    let x_conf = conf(
        ATTACKER,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        "",
        "start_action = start",
        "k",
    );
    let to: SocketAddr = format!("{B}:500").parse().unwrap();
    let mut made_state = 0;
    let mut flood = |p: &mut Pair, from: u32, to_n: u32| {
        for i in from..to_n {
            let mut x = ike(&x_conf, 10_000 + u64::from(i), Settings::default());
            let mut kx = RecordingKernel::default();
            x.start(p.now, &mut kx);
            let src = SocketAddr::new(ATTACKER.parse().unwrap(), 1024 + i as u16);
            // HDR, SAi1, KEi, Ni -->             <-- HDR, N(COOKIE)
            // HDR, N(COOKIE), SAi1, KEi, Ni -->  <-- HDR, SAr1, KEr, Nr | nothing
            let mut d = x.poll_transmit().unwrap();
            for _ in 0..2 {
                p.b.handle(p.now, to, src, &d.data, &mut p.kb);
                let Some(r) = p.b.poll_transmit() else { break };
                x.handle(p.now, d.local, to, &r.data, &mut kx);
                match x.poll_transmit() {
                    Some(n) if exchange_of(&n) == flowsec_wire::iana::ExchangeType::IKE_SA_INIT => {
                        d = n
                    }
                    // IKE_AUTH next: b keeps a half-open SA for it.
                    Some(_) => {
                        made_state += 1;
                        break;
                    }
                    None => break,
                }
            }
        }
    };
    flood(&mut p, 0, 1000);
    p.start();
    // HDR, SAi1, KEi, Ni -->  <-- HDR, SAr1, KEr, Nr (no COOKIE for a)
    p.b_gets();
    assert_eq!(
        exchange_of(&p.ba[0]),
        flowsec_wire::iana::ExchangeType::IKE_SA_INIT
    );
    flood(&mut p, 1000, 2000);
    p.settle();
    p.assert_up(1);
    let s = p.b.stats();
    // cookie_threshold_ip (3): from the 4th request on, a cookie;
    // block_threshold (5): from the 6th on, dropped with a valid one.
    assert_eq!(made_state, 5);
    assert_eq!(
        (s.cookies_sent, s.blocked_source, s.refused_limit),
        (1997, 1995, 0)
    );
    assert!(s.named().contains(&("blocked_source", 1995)));
    let half_open =
        p.b.list(p.now)
            .iter()
            .filter(|s| s.state == "CONNECTING")
            .count();
    assert!(half_open <= 5, "{half_open} half-open");
}

#[test]
fn a_failed_ike_auth_frees_the_half_open_sa_at_once() {
    // b holds 2 IKE SAs at most: a kept failure would use up its room.
    let sb = Settings {
        max_ike_sas: 2,
        ..Settings::default()
    };
    let a_conf = |secret| {
        conf(
            A,
            B,
            "10.1.0.0/24",
            "10.2.0.0/24",
            "",
            "start_action = start",
            secret,
        )
    };
    let b_conf = conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "right");
    let mut p = Pair::with(&a_conf("wrong"), &b_conf, Settings::default(), sb);
    p.start();
    for round in 1..=10u64 {
        // HDR, SAi1, KEi, Ni -->  <-- HDR, SAr1, KEr, Nr
        p.b_gets();
        p.a_gets();
        // HDR, SK {IDi, AUTH (wrong key), ...} -->
        p.collect();
        let auth = p.ab.remove(0);
        // A forged copy (one bit) fails the integrity check: dropped,
        // and the half-open SA stays (§2.21.2).
        let mut forged = auth.data.clone();
        let last = forged.len() - 1;
        forged[last] ^= 1;
        p.b.handle(p.now, auth.remote, auth.local, &forged, &mut p.kb);
        assert_eq!(p.b.list(p.now).len(), 1);
        assert_eq!(p.b.stats().bad_integrity, round);
        //  <-- HDR, SK {N(AUTHENTICATION_FAILED)}: the SA is gone at once.
        p.b.handle(p.now, auth.remote, auth.local, &auth.data, &mut p.kb);
        assert!(p.b.list(p.now).is_empty(), "round {round}");
        assert_eq!(p.b.stats().auth_failed, round);
        p.a_gets();
        assert!(p.a.list(p.now).is_empty());
        assert_eq!(p.a.stats().auth_failed, round);
        p.a.initiate(p.now, Some("gw"), Some("net"), &mut p.ka)
            .unwrap();
        p.collect();
    }
    assert_eq!(p.b.stats().refused_limit, 0);
    // The right key, from the same address: in.
    p.a = ike(&a_conf("right"), 7, Settings::default());
    p.ka = RecordingKernel::default();
    p.ab.clear();
    p.start();
    p.settle();
    p.assert_up(1);
}

#[test]
fn an_initiator_forgets_a_responder_whose_auth_does_not_verify() {
    // b answers as moon.example; a wants the responder to be B.
    let b_conf = conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "k").replacen(
        &format!("id = {B}"),
        "id = moon.example",
        1,
    );
    let mut p = Pair::new(
        &conf(
            A,
            B,
            "10.1.0.0/24",
            "10.2.0.0/24",
            "",
            "start_action = start",
            "k",
        ),
        &b_conf,
    );
    p.start();
    p.b_gets();
    p.a_gets();
    p.b_gets();
    // <-- HDR, SK {IDr (moon.example), AUTH, ...}: a tells b (an
    // INFORMATIONAL of its own, §2.21.2) and forgets the SA at once.
    p.a_gets();
    assert!(p.a.list(p.now).is_empty());
    assert_eq!(p.a.stats().auth_failed, 1);
    assert!(p.ka.sas.is_empty());
    assert_eq!(p.ab.len(), 1);
    assert_eq!(
        exchange_of(&p.ab[0]),
        flowsec_wire::iana::ExchangeType::INFORMATIONAL
    );
    // Not waited for: nothing is retransmitted.
    p.ab.clear();
    p.advance(Duration::from_secs(60));
    assert!(p.ab.is_empty());
}

#[test]
fn a_cookie_from_before_a_secret_rotation_passes_within_the_grace_only() {
    let sb = Settings {
        cookie_threshold: 0,
        ..Settings::default()
    };
    let a_conf = conf(
        A,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        "",
        "start_action = start",
        "k",
    );
    let b_conf = conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "k");
    for (late, cookies) in [(125, 1), (131, 2)] {
        let mut p = Pair::with(&a_conf, &b_conf, Settings::default(), sb.clone());
        p.start();
        // HDR, SAi1, KEi, Ni -->  <-- HDR, N(COOKIE)
        p.b_gets();
        p.a_gets();
        // HDR, N(COOKIE), SAi1, KEi, Ni --> arrives `late` s later: the
        // secret (120 s in use) is replaced on the way; its cookies pass
        // for 10 s after, then b asks for a new one.
        p.now += Duration::from_secs(late);
        p.b_gets();
        assert_eq!(p.b.stats().cookies_sent, cookies, "{late} s late");
        p.settle();
        p.assert_up(1);
    }
}

#[test]
fn a_trap_policy_negotiates_on_the_first_packet_and_stays() {
    let a = conf(
        A,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        "",
        "start_action = trap",
        "k",
    );
    let mut p = Pair::new(&a, &conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "k"));
    p.start();
    // Policies, no SA, nothing sent.
    assert_eq!((p.ka.policies.len(), p.ka.sas.len(), p.ab.len()), (2, 0, 0));
    let reqid = match &p.ka.policies[0].action {
        flowsec_ipsec::Action::Protect(t) => t[0].reqid,
        other => panic!("{other:?}"),
    };
    // The data plane found no SA for a packet: acquire (twice, as a
    // burst would; one negotiation).
    p.a.acquire(p.now, reqid, &mut p.ka);
    p.a.acquire(p.now, reqid, &mut p.ka);
    p.collect();
    assert_eq!(p.ab.len(), 1);
    p.settle();
    p.assert_up(1);
    assert!(
        p.ka.sas.iter().all(|s| s.reqid == reqid),
        "the child uses the trap's policies"
    );
    assert_eq!(p.ka.policies.len(), 2);
    // Deleted, the trap stays for the next packet.
    p.a.terminate(p.now, Some("gw"), None, &mut p.ka).unwrap();
    p.settle();
    assert!(p.ka.sas.is_empty());
    assert_eq!(p.ka.policies.len(), 2);
    p.a.acquire(p.now, reqid, &mut p.ka);
    p.settle();
    p.assert_up(1);
}

#[test]
fn volume_limits_reach_the_data_plane_and_a_soft_expiry_rekeys() {
    let extra = "start_action = start\n rekey_bytes = 1M\n rekey_packets = 1000";
    let a = conf(A, B, "10.1.0.0/24", "10.2.0.0/24", "", extra, "k");
    let mut p = Pair::new(&a, &conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "k"));
    assert!(p.a.volume_limited() && !p.b.volume_limited());
    p.start();
    p.settle();
    p.assert_up(1);
    let old = p.a.list(p.now)[0].children[0].clone();
    let sa = p.ka.sa(old.sa_out.spi).unwrap();
    // strongSwan's defaults: life = rekey + 10%, jitter up to the difference.
    let (soft, hard) = (
        sa.lifetime.soft.bytes.unwrap(),
        sa.lifetime.hard.bytes.unwrap(),
    );
    assert!(
        (943_718..=1_048_576).contains(&soft) && hard == 1_153_433,
        "{soft} {hard}"
    );
    assert!(sa.lifetime.soft.packets.unwrap() <= 1000 && sa.lifetime.hard.packets == Some(1100));
    // The data plane says the outbound SA is dying: a rekey.
    p.a.soft_expired(p.now, old.sa_out, &mut p.ka);
    p.settle();
    p.assert_up(1);
    assert_ne!(p.a.list(p.now)[0].children[0].sa_in, old.sa_in);
}

#[test]
fn dpd_action_restart_and_close_action_start_bring_the_child_back() {
    let a = conf(
        A,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        "dpd_delay = 10s",
        "start_action = start\n dpd_action = restart\n close_action = start",
        "k",
    );
    let mut p = Pair::new(&a, &conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "k"));
    p.start();
    p.settle();
    p.assert_up(1);
    // b closes the child: a makes it again.
    p.b.terminate(p.now, None, Some("net"), &mut p.kb).unwrap();
    p.settle();
    p.assert_up(1);
    // b goes silent: after DPD gives up, a starts over; b answers again.
    p.advance(Duration::from_secs(10));
    for _ in 0..170 {
        p.advance(Duration::from_secs(1));
        p.ab.retain(|d| d.data.get(18) == Some(&34));
    }
    assert_eq!(p.a.stats().peers_dead, 1);
    // b restarted meanwhile: a fresh responder.
    p.b = ike(
        &conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "k"),
        3,
        Settings::default(),
    );
    p.kb = RecordingKernel::default();
    p.settle();
    p.assert_up(1);
}

#[test]
fn a_forged_message_cannot_use_up_a_message_id() {
    let mut p = Pair::default_pair();
    p.start();
    p.settle();
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.collect();
    let real = p.ab.remove(0);
    // The real request's header (SPIs, message ID) with an unknown critical
    // payload instead of SK: nothing of it is authenticated.
    let mut forged = real.data[..28].to_vec();
    forged[16] = 60;
    forged.extend_from_slice(&[0, 0x80, 0, 8, 1, 2, 3, 4]);
    let len = forged.len() as u32;
    forged[24..28].copy_from_slice(&len.to_be_bytes());
    p.b.handle(p.now, real.remote, real.local, &forged, &mut p.kb);
    p.collect();
    assert!(p.ba.is_empty(), "no answer to an unauthenticated message");
    // A forged message with the right ID but other bytes is not a
    // retransmission either.
    let mut other = real.data.clone();
    let last = other.len() - 1;
    other[last] ^= 1;
    p.b.handle(p.now, real.remote, real.local, &other, &mut p.kb);
    p.collect();
    assert!(p.ba.is_empty());
    // The real request still goes through.
    p.b.handle(p.now, real.remote, real.local, &real.data, &mut p.kb);
    p.settle();
    p.assert_up(1);
    assert_ne!(p.a.list(p.now)[0].children[0].sa_in.spi, 0xc000_0101);
}

#[test]
fn crossed_deletes_both_end_the_child() {
    let mut p = Pair::default_pair();
    p.start();
    p.settle();
    // HDR, SK {D(ESP)} -->   <-- HDR, SK {D(ESP)}   (at once, both ways)
    p.a.terminate(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.b.terminate(p.now, None, Some("net"), &mut p.kb).unwrap();
    p.collect();
    assert_eq!((p.ab.len(), p.ba.len()), (1, 1));
    p.b_gets();
    p.a_gets();
    // §1.4.1: neither answer names the SA again.
    p.settle();
    p.assert_up(0);
    assert!(p.ka.policies.is_empty() && p.kb.policies.is_empty());
}

#[test]
fn selectors_that_would_need_too_many_policies_are_refused() {
    // Each range is dozens of prefixes; their cross product is thousands.
    let wide = |a: &str| format!("{a}.0.0.1-{a}.255.255.254");
    let a = conf(
        A,
        B,
        &wide("10"),
        &wide("11"),
        "",
        "start_action = start",
        "k",
    );
    let b = conf(B, A, &wide("11"), &wide("10"), "", "", "k");
    let mut p = Pair::new(&a, &b);
    p.start();
    p.settle();
    p.assert_up(0);
    assert!(p.kb.policies.is_empty());
}

#[test]
fn ipcomp_is_negotiated_when_both_want_it() {
    let a = conf(
        A,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        "",
        "start_action = start\n ipcomp = yes",
        "k",
    );
    let b = conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "ipcomp = yes", "k");
    let mut p = Pair::new(&a, &b);
    p.start();
    p.settle();
    let c = p.a.list(p.now)[0].children[0].clone();
    let (cpi_in, cpi_out) = c.cpis.expect("IPComp negotiated");
    let comp = |k: &RecordingKernel, cpi: u16| {
        k.sas
            .iter()
            .any(|s| s.protocol == flowsec_ipsec::Protocol::IpComp && s.spi == u32::from(cpi))
    };
    assert!(
        comp(&p.ka, cpi_in) && comp(&p.ka, cpi_out) && comp(&p.kb, cpi_in) && comp(&p.kb, cpi_out)
    );
    // Each policy's bundle: IPComp (use) inside ESP (require).
    for pol in &p.ka.policies {
        match &pol.action {
            flowsec_ipsec::Action::Protect(t) => {
                assert_eq!(t.len(), 2);
                assert_eq!(t[0].protocol, flowsec_ipsec::Protocol::IpComp);
                assert_eq!(t[1].protocol, flowsec_ipsec::Protocol::Esp);
            }
            other => panic!("{other:?}"),
        }
    }
    // A rekey negotiates new CPIs; the old IPComp SAs go with the old ESP ones.
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.settle();
    let n = p.a.list(p.now)[0].children[0].cpis.unwrap();
    assert_ne!(n, (cpi_in, cpi_out));
    assert!(!comp(&p.ka, cpi_in) && !comp(&p.kb, cpi_out));
    assert_eq!((p.ka.sas.len(), p.kb.sas.len()), (4, 4));
    // Only one side wants it: plain ESP.
    let b = conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "k");
    let mut p = Pair::new(&a, &b);
    p.start();
    p.settle();
    p.assert_up(1);
    assert!(p.a.list(p.now)[0].children[0].cpis.is_none());
}

#[test]
fn behind_a_nat_both_float_to_4500_and_follow_a_rebinding() {
    let public: std::net::IpAddr = "198.51.100.7".parse().unwrap();
    let a = conf(
        A,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        "",
        "start_action = start",
        "k",
    );
    let b = conf(B, "%any", "10.2.0.0/24", "10.1.0.0/24", "", "", "k")
        .replace("id = %any", "id = 192.0.2.1");
    let mut p = Pair::new(&a, &b);
    p.nat = Some((public, 20000));
    p.start();
    p.settle();
    p.assert_up(1);
    let (la, lb) = (p.a.list(p.now), p.b.list(p.now));
    assert!(la[0].nat && lb[0].nat, "NAT detected at both ends");
    assert_eq!(
        (la[0].local.port(), la[0].remote.port()),
        (4500, 4500),
        "a floated"
    );
    assert_eq!(
        lb[0].remote,
        SocketAddr::new(public, 24500),
        "b answers the NAT's port"
    );
    // ESP in UDP to where the NAT listens.
    let out_b = p.kb.sa(lb[0].children[0].sa_out.spi).unwrap();
    assert_eq!(
        out_b.encap.map(|e| (e.src_port, e.dst_port)),
        Some((4500, 24500))
    );
    assert_eq!(out_b.dst, public);
    // Behind the NAT, a keeps its mapping alive: one byte 0xFF after 20 s
    // without sending (b, not behind one, sends none).
    let before = p.keepalives;
    p.advance(Duration::from_secs(21));
    p.collect();
    assert!(p
        .ab
        .iter()
        .any(|d| d.is_keepalive() && d.local.port() == 4500));
    assert!(!p.ba.iter().any(|d| d.is_keepalive()));
    p.settle();
    assert!(p.keepalives > before);
    // The NAT forgets a and maps it to another port: b follows on a's next
    // (authenticated, new) message, its ESP SAs too.
    p.nat = Some((public, 30000));
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.settle();
    p.assert_up(1);
    let lb = p.b.list(p.now);
    assert_eq!(lb[0].remote, SocketAddr::new(public, 34500));
    let out_b = p.kb.sa(lb[0].children[0].sa_out.spi).unwrap();
    assert_eq!(out_b.encap.map(|e| e.dst_port), Some(34500));
}

#[test]
fn a_request_arriving_late_and_out_of_order_is_not_answered_again() {
    let mut p = Pair::default_pair();
    p.start();
    p.settle();
    // HDR(mid 0), SK {N(REKEY_SA), ...} -->  (a copy is held back)
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.collect();
    let late = p.ab[0].clone();
    p.settle();
    // HDR(mid 2) DPD etc. moved b's window on; now the old copy arrives.
    p.a.initiate(p.now, Some("gw"), Some("net"), &mut p.ka)
        .unwrap();
    p.settle();
    let before = p.b.stats().clone();
    p.b.handle(p.now, late.remote, late.local, &late.data, &mut p.kb);
    p.collect();
    assert!(p.ba.is_empty(), "an old request gets no answer");
    assert_eq!(p.b.stats().bad_message_id, before.bad_message_id + 1);
    p.assert_up(2);
}

#[test]
fn a_rekey_crossing_a_delete_of_the_same_child_leaves_no_half() {
    let mut p = Pair::default_pair();
    p.start();
    p.settle();
    // HDR, SK {N(REKEY_SA), SA, Ni, KEi, ..} -->   <-- HDR, SK {D(ESP)}
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.b.terminate(p.now, None, Some("net"), &mut p.kb).unwrap();
    p.collect();
    // §2.25.1: b is deleting it: TEMPORARY_FAILURE to the rekey; a answers
    // the DELETE with the other half.
    p.b_gets();
    p.a_gets();
    p.settle();
    // Whatever the order, the two ends agree: no SA on one side only.
    let (ca, cb) = (
        p.a.list(p.now)[0].children.len(),
        p.b.list(p.now)[0].children.len(),
    );
    assert_eq!(ca, cb);
    p.assert_up(ca);
}

#[test]
fn ah_child_sas_when_ah_proposals_are_set() {
    let ah = |c: String| {
        c.replace(
            "esp_proposals = aes128gcm16-ecp256",
            "ah_proposals = sha256-ecp256",
        )
    };
    let a = ah(conf(
        A,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        "",
        "start_action = start",
        "k",
    ));
    let b = ah(conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "k"));
    let mut p = Pair::new(&a, &b);
    p.start();
    p.settle();
    let c = p.a.list(p.now)[0].children[0].clone();
    assert_eq!(c.sa_in.protocol, flowsec_ipsec::Protocol::Ah);
    assert_eq!(c.proposal, "HMAC-SHA2-256-128");
    let sa = p.ka.sa(c.sa_out.spi).unwrap();
    assert_eq!(
        (sa.protocol, sa.integ_key.len(), sa.encr_key.len()),
        (flowsec_ipsec::Protocol::Ah, 32, 0)
    );
    assert_eq!(*sa.integ_key, *p.kb.sa(c.sa_out.spi).unwrap().integ_key);
    // Rekeyed with PFS and deleted like ESP (D payloads name AH).
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.settle();
    let n = p.a.list(p.now)[0].children[0].clone();
    assert!(n.sa_in != c.sa_in && n.dh_group.is_some());
    assert_eq!((p.ka.sas.len(), p.kb.sas.len()), (2, 2));
    p.b.terminate(p.now, None, Some("net"), &mut p.kb).unwrap();
    p.settle();
    assert!(p.ka.sas.is_empty() && p.kb.sas.is_empty());
}

#[test]
fn ah_is_not_negotiated_across_a_nat() {
    let ah = |c: String| {
        c.replace(
            "esp_proposals = aes128gcm16-ecp256",
            "ah_proposals = sha256-ecp256",
        )
    };
    let a = ah(conf(
        A,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        "",
        "start_action = start",
        "k",
    ));
    let b = ah(conf(B, "%any", "10.2.0.0/24", "10.1.0.0/24", "", "", "k"))
        .replace("id = %any", "id = 192.0.2.1");
    let mut p = Pair::new(&a, &b);
    p.nat = Some(("198.51.100.7".parse().unwrap(), 20000));
    p.start();
    p.settle();
    // The IKE SA comes up through the NAT; the AH child does not.
    assert_eq!(p.a.list(p.now)[0].state, "ESTABLISHED");
    assert!(p.a.list(p.now)[0].children.is_empty() && p.kb.sas.is_empty());
}

/// A pair with `per_cpu_sas = yes` on both children (a initiates), a
/// with `ra` resources and b with `rb`; `b_child` replaces b's option.
fn per_cpu_pair(ra: u32, rb: u32, b_child: &str) -> Pair {
    let with = |resources| Settings {
        resources,
        ..Settings::default()
    };
    Pair::with(
        &conf(
            A,
            B,
            "10.1.0.0/24",
            "10.2.0.0/24",
            "",
            "start_action = start\n                per_cpu_sas = yes",
            "s3cret",
        ),
        &conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", b_child, "s3cret"),
        with(ra),
        with(rb),
    )
}

/// Each Child SA's place in its group of per-resource SAs, sorted:
/// (per_cpu, cpu).
fn resources(ike: &Ike, now: Duration) -> Vec<(bool, Option<u32>)> {
    let mut v: Vec<_> = ike
        .list(now)
        .iter()
        .flat_map(|s| s.children.iter())
        .map(|c| (c.per_cpu, c.cpu))
        .collect();
    v.sort();
    v
}

/// RFC 9611 with two resources on each side:
///
/// ```text
/// HDR, SK {IDi, AUTH, N(SA_RESOURCE_INFO), SAi2, TSi, TSr} -->
///                  <-- HDR, SK {IDr, AUTH, N(SA_RESOURCE_INFO), SAr2, TSi, TSr}   (the fallback)
/// HDR, SK {N(SA_RESOURCE_INFO = 0), SA, Ni, KEi, TSi, TSr} -->
///                  <-- HDR, SK {N(SA_RESOURCE_INFO = 0), SA, Nr, KEr, TSi, TSr}
/// … and the same for resource 1
/// ```
///
/// Three Child SAs with the same selectors and one reqid (one pair of
/// policies), the SAs of each marked with its resource on both ends, the
/// inbound SPI steered to it; each rekeys on its own and keeps its
/// resource.
#[test]
fn per_resource_child_sas_one_per_resource_beside_the_fallback() {
    let mut p = per_cpu_pair(2, 2, "per_cpu_sas = yes");
    p.start();
    p.settle();
    p.assert_up(3);
    let group = vec![(true, None), (true, Some(0)), (true, Some(1))];
    assert_eq!(resources(&p.a, p.now), group);
    assert_eq!(resources(&p.b, p.now), group);
    assert_eq!((p.ka.policies.len(), p.kb.policies.len()), (2, 2));
    let before = p.a.list(p.now)[0].children.clone();
    for c in &before {
        assert_eq!(c.reqid, before[0].reqid, "one reqid: the same policies");
        assert_eq!(p.ka.sa(c.sa_out.spi).unwrap().cpu, c.cpu);
        assert_eq!(p.ka.sa(c.sa_in.spi).unwrap().cpu, c.cpu);
    }
    // Every SA of the group rekeys on its own and keeps its place.
    assert_eq!(p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap(), 3);
    p.settle();
    p.assert_up(3);
    assert_eq!(resources(&p.a, p.now), group);
    assert_eq!(resources(&p.b, p.now), group);
    let after = p.a.list(p.now)[0].children.clone();
    for c in &after {
        assert!(before.iter().all(|b| b.sa_in.spi != c.sa_in.spi), "rekeyed");
        assert_eq!(p.ka.sa(c.sa_out.spi).unwrap().cpu, c.cpu);
        assert_eq!(
            p.kb.sa(c.sa_out.spi).unwrap().cpu.is_some(),
            c.cpu.is_some()
        );
    }
    assert_eq!((p.ka.policies.len(), p.kb.policies.len()), (2, 2));
}

/// A responder with fewer resources takes what it can and then answers
/// TS_MAX_QUEUE (RFC 9611 §5.2): the initiator asks no more. One
/// without `per_cpu_sas` (or without RFC 9611: strongSwan 5.9), or with
/// a single resource, answers without SA_RESOURCE_INFO: one ordinary
/// Child SA, nothing more asked.
#[test]
fn ts_max_queue_and_a_peer_without_per_resource_sas() {
    let mut p = per_cpu_pair(3, 2, "per_cpu_sas = yes");
    p.start();
    p.settle();
    // The fallback and b's resources 0 and 1; b refused a's third request.
    p.assert_up(3);
    let two = [(true, None), (true, Some(0)), (true, Some(1))];
    assert_eq!(resources(&p.b, p.now), two);
    assert_eq!(resources(&p.a, p.now), two);
    p.advance(Duration::from_secs(60));
    p.settle();
    p.assert_up(3);

    for (rb, b_child) in [(2, ""), (1, "per_cpu_sas = yes")] {
        let mut p = per_cpu_pair(2, rb, b_child);
        p.start();
        p.settle();
        p.assert_up(1);
        assert_eq!(resources(&p.a, p.now), [(false, None)]);
        assert_eq!(resources(&p.b, p.now), [(false, None)]);
        assert!(p.ka.sas.iter().all(|s| s.cpu.is_none()));
    }
}

/// How often `log` deleted the SA with this SPI.
fn deletions(log: &[String], spi: u32) -> usize {
    let needle = format!("{spi:#010x}");
    log.iter()
        .filter(|l| l.starts_with("del_sa") && l.ends_with(&needle))
        .count()
}

#[test]
fn rekey_switch_prefer_new_sends_on_the_new_sa_at_once_at_both_ends() {
    let a = conf(
        A,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        "",
        "start_action = start\n rekey_switch = prefer-new",
        "k",
    );
    let b = conf(
        B,
        A,
        "10.2.0.0/24",
        "10.1.0.0/24",
        "",
        "rekey_switch = prefer-new",
        "k",
    );
    let mut p = Pair::new(&a, &b);
    p.start();
    p.settle();
    p.assert_up(1);
    let old = p.a.list(p.now)[0].children[0].clone();
    // HDR, SK {N(REKEY_SA), SA, Ni, KEi, TSi, TSr} -->
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.b_gets();
    // b: the new pair only, before its answer leaves (what a still seals
    // on the old SA is lost from here on: study S2's "prefer new").
    assert_eq!(p.kb.sas.len(), 2, "{:?}", p.kb.log);
    assert!(p.kb.sa(old.sa_in.spi).is_none() && p.kb.sa(old.sa_out.spi).is_none());
    //                     <-- HDR, SK {SA, Nr, KEr, TSi, TSr}
    p.a_gets();
    assert_eq!(p.ka.sas.len(), 2, "{:?}", p.ka.log);
    assert!(p.ka.sa(old.sa_in.spi).is_none() && p.ka.sa(old.sa_out.spi).is_none());
    // The DELETE exchange still runs and removes the records, without
    // deleting the SAs a second time (their SPIs may be reused by then).
    p.settle();
    p.assert_up(1);
    for (log, spi) in [
        (&p.ka.log, old.sa_in.spi),
        (&p.ka.log, old.sa_out.spi),
        (&p.kb.log, old.sa_out.spi),
        (&p.kb.log, old.sa_in.spi),
    ] {
        assert_eq!(deletions(log, spi), 1, "{spi:#x}: {log:?}");
    }
    assert!(p.ka.policies.len() == 2 && p.kb.policies.len() == 2);
}

#[test]
fn rekey_switch_keep_old_switches_each_end_at_its_own_expiry_without_a_delete() {
    // a rekeys after 8 s, its SAs live 10 s; b never rekeys and keeps its
    // SAs 12 s: b goes on sending on the old SA 2 s after a dropped it
    // (study S2's skewed lifetimes).
    let a = conf(
        A,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        "",
        "start_action = start\n rekey_switch = keep-old\n rekey_time = 8s\n life_time = 10s\n rand_time = 0",
        "k",
    );
    let b = conf(
        B,
        A,
        "10.2.0.0/24",
        "10.1.0.0/24",
        "",
        "rekey_switch = keep-old\n rekey_time = 0\n life_time = 12s\n rand_time = 0",
        "k",
    );
    let mut p = Pair::new(&a, &b);
    let t0 = p.now;
    p.start();
    // IKE_SA_INIT, IKE_AUTH.
    for _ in 0..2 {
        p.b_gets();
        p.a_gets();
    }
    p.assert_up(1);
    let old = p.a.list(p.now)[0].children[0].clone();
    // The data plane's own expiry comes after the core's.
    let hard = |k: &flowsec_ike::RecordingKernel, spi| k.sa(spi).unwrap().lifetime.hard.add_time;
    assert_eq!(hard(&p.ka, old.sa_out.spi), Some(Duration::from_secs(11)));
    assert_eq!(hard(&p.kb, old.sa_in.spi), Some(Duration::from_secs(13)));
    // 8 s: a rekeys; both install the new SAs but go on sending on the old.
    p.now = t0 + Duration::from_secs(8);
    p.advance(Duration::ZERO);
    p.b_gets();
    p.a_gets();
    p.collect();
    assert!(p.ab.is_empty() && p.ba.is_empty(), "no DELETE");
    assert_eq!((p.ka.sas.len(), p.kb.sas.len()), (3, 3));
    assert!(p.ka.sa(old.sa_out.spi).is_some() && p.kb.sa(old.sa_in.spi).is_some());
    // 10 s: a's old SA expires: a sends on the new one and drops the old
    // pair at once, telling nobody.
    p.now = t0 + Duration::from_secs(10);
    p.advance(Duration::ZERO);
    assert!(p.ab.is_empty() && p.ba.is_empty(), "no DELETE");
    assert_eq!(p.ka.sas.len(), 2, "{:?}", p.ka.log);
    assert!(p.ka.sa(old.sa_in.spi).is_none() && p.ka.sa(old.sa_out.spi).is_none());
    assert_eq!(p.kb.sas.len(), 3, "b still sends on the old SA");
    assert!(p.kb.sa(old.sa_in.spi).is_some());
    // 12 s: b's old SA expires: b switches too.
    p.now = t0 + Duration::from_secs(12);
    p.advance(Duration::ZERO);
    assert!(p.ab.is_empty() && p.ba.is_empty(), "no DELETE");
    p.assert_up(1);
    let new = p.a.list(p.now)[0].children[0].clone();
    assert_ne!(new.sa_in.spi, old.sa_in.spi);
    assert_eq!(new.reqid, old.reqid);
    assert!(p.ka.policies.len() == 2 && p.kb.policies.len() == 2);
    // The next rekey (16 s) goes the same way: both ends are on the
    // newest SA once b's previous one expires (20 s).
    p.now = t0 + Duration::from_secs(16);
    p.advance(Duration::ZERO);
    p.b_gets();
    p.a_gets();
    p.now = t0 + Duration::from_secs(20);
    p.advance(Duration::ZERO);
    p.collect();
    assert!(p.ab.is_empty() && p.ba.is_empty(), "no DELETE");
    p.assert_up(1);
}

/// A pair whose initiator a runs its IKE SA over TCP (RFC 9329):
/// `tcp_extra` are a's connection keys.
fn tcp_pair(tcp_extra: &str) -> Pair {
    Pair::new(
        &conf(
            A,
            B,
            "10.1.0.0/24",
            "10.2.0.0/24",
            tcp_extra,
            "start_action = start",
            "s3cret",
        ),
        &conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "s3cret"),
    )
}

#[test]
fn over_tcp_ike_and_esp_share_the_stream_and_nothing_is_retransmitted() {
    let mut p = tcp_pair("tcp_encap = yes");
    p.start();
    // IKE_SA_INIT goes to the peer's TCP port 4500 from any port of ours.
    let first = &p.ab[0];
    assert_eq!(first.transport, Transport::Tcp);
    assert_eq!((first.local.port(), first.remote.port()), (0, 4500));
    p.settle();
    p.assert_up(1);
    let (la, lb) = (p.a.list(p.now), p.b.list(p.now));
    assert_eq!(
        (la[0].transport, lb[0].transport),
        (Transport::Tcp, Transport::Tcp)
    );
    assert_eq!(lb[0].remote, SocketAddr::new(A.parse().unwrap(), 40000));
    // ESP goes in the same stream (§5): a's SAs name port 0 (its side of
    // the connection) and 4500, b's the connection's ports.
    let out_a = p.ka.sa(la[0].children[0].sa_out.spi).unwrap();
    let out_b = p.kb.sa(lb[0].children[0].sa_out.spi).unwrap();
    let ports =
        |c: &flowsec_ipsec::SaConfig| c.encap.map(|e| (e.transport, e.src_port, e.dst_port));
    assert_eq!(ports(out_a), Some((EncapTransport::Tcp, 0, 4500)));
    assert_eq!(ports(out_b), Some((EncapTransport::Tcp, 4500, 40000)));
    // §6.2: a request lost with its connection is not sent again on a
    // timer; no NAT-keepalives either (§6.6), though b saw a "NAT" (a's
    // port 0 in its NAT detection hash).
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.collect();
    assert_eq!(p.ab.len(), 1);
    p.ab.clear();
    let retransmits = p.a.stats().retransmits;
    for _ in 0..4 {
        p.advance(Duration::from_secs(15));
    }
    assert!(p.ab.is_empty(), "nothing resent over TCP: {:?}", p.ab);
    assert_eq!(p.a.stats().retransmits, retransmits);
    // The timers still run: with no answer, the peer is declared dead.
    for _ in 0..16 {
        p.advance(Duration::from_secs(15));
    }
    assert_eq!(p.a.stats().peers_dead, 1);
}

#[test]
fn after_a_reconnect_the_originator_speaks_first_and_the_responder_follows() {
    let mut p = tcp_pair("tcp_encap = yes");
    p.start();
    p.settle();
    p.assert_up(1);
    let a_local = SocketAddr::new(A.parse().unwrap(), 0);
    let b_remote = SocketAddr::new(B.parse().unwrap(), 4500);
    // The connection breaks; a opens a new one from another port (§6.1).
    // Until a speaks on it, b's answers would go to the old one.
    p.tcp_port_a = 40001;
    p.a.reconnected(p.now, a_local, b_remote, &mut p.ka);
    p.collect();
    assert_eq!(
        p.ab.len(),
        1,
        "an empty INFORMATIONAL on the new connection"
    );
    assert_eq!(exchange_of(&p.ab[0]), ExchangeType::INFORMATIONAL);
    p.settle();
    p.assert_up(1);
    let lb = p.b.list(p.now);
    assert_eq!(
        lb[0].remote.port(),
        40001,
        "b follows to the new connection"
    );
    let out_b = p.kb.sa(lb[0].children[0].sa_out.spi).unwrap();
    assert_eq!(
        out_b.encap.map(|e| (e.transport, e.dst_port)),
        Some((EncapTransport::Tcp, 40001))
    );
    assert_eq!(p.a.stats().reconnects, 1);
    // A request in flight when the connection broke is sent again on the
    // new one (§6.2), and the rekey completes; the IKE SA is the same.
    let uid = p.a.list(p.now)[0].uid;
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.collect();
    p.ab.clear();
    p.tcp_port_a = 40002;
    p.a.reconnected(p.now, a_local, b_remote, &mut p.ka);
    p.collect();
    assert_eq!(exchange_of(&p.ab[0]), ExchangeType::CREATE_CHILD_SA);
    p.settle();
    p.assert_up(1);
    assert_eq!(p.a.list(p.now)[0].uid, uid);
    assert_eq!(p.b.list(p.now)[0].remote.port(), 40002);
    // The responder's own request, lost with the old connection, goes
    // again once it follows the new one.
    let spis_before = p.b.list(p.now)[0].children[0].sa_in.spi;
    p.b.rekey(p.now, None, Some("net"), &mut p.kb).unwrap();
    p.collect();
    p.ba.clear();
    p.tcp_port_a = 40003;
    p.a.reconnected(p.now, a_local, b_remote, &mut p.ka);
    p.settle();
    p.assert_up(1);
    assert_ne!(
        p.b.list(p.now)[0].children[0].sa_in.spi,
        spis_before,
        "b's rekey completed"
    );
    // b answered a's request, but the answer was lost with the connection:
    // a sends the request again on its new one, and b's cached answer goes
    // back there (not to the connection b knew).
    let spis_before = p.a.list(p.now)[0].children[0].sa_in.spi;
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.b_gets();
    p.tcp_port_a = 40004;
    p.a.reconnected(p.now, a_local, b_remote, &mut p.ka);
    p.settle();
    p.assert_up(1);
    let after = p.a.list(p.now)[0].children[0].sa_in.spi;
    assert_ne!(after, spis_before, "a's rekey completed");
    assert!(p.b.stats().replayed >= 1);
    // Three CHILD_SA rekeys, each counted at both ends, all loss-free.
    for s in [p.a.stats(), p.b.stats()] {
        assert_eq!((s.child_rekeys, s.loss_free_handovers), (3, 3));
    }
    // A message for the IKE SA that comes over UDP instead is not acted on.
    let before = p.b.stats().wrong_transport;
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.collect();
    let d = p.ab.remove(0);
    let from = SocketAddr::new(A.parse().unwrap(), 4500);
    p.b.handle(
        p.now,
        SocketAddr::new(B.parse().unwrap(), 4500),
        from,
        &d.data,
        &mut p.kb,
    );
    assert_eq!(p.b.stats().wrong_transport, before + 1);
}

#[test]
fn fallback_tries_udp_first_then_a_new_ike_sa_init_over_tcp() {
    let mut p = tcp_pair("tcp_encap = fallback\n        tcp_fallback_time = 6s");
    p.start();
    assert_eq!(p.ab[0].transport, Transport::Udp);
    let spi_udp = p.a.list(p.now)[0].spi_i;
    // UDP is blocked: the request and its first retransmission are lost.
    p.ab.clear();
    p.advance(Duration::from_secs(5));
    assert_eq!(p.ab.len(), 1, "one retransmission over UDP first");
    assert_eq!(p.ab[0].transport, Transport::Udp);
    p.ab.clear();
    p.advance(Duration::from_secs(1));
    assert_eq!(p.a.stats().tcp_fallbacks, 1);
    assert_eq!(p.ab.len(), 1);
    assert_eq!(p.ab[0].transport, Transport::Tcp);
    p.settle();
    p.assert_up(1);
    let la = p.a.list(p.now);
    assert_eq!(la.len(), 1, "the UDP attempt is gone: {la:#?}");
    assert_ne!(la[0].spi_i, spi_udp, "a new SPIi (RFC 9329 §5.1)");
    assert_eq!(la[0].transport, Transport::Tcp);
}

#[test]
fn over_tls_the_port_is_443_by_default() {
    let mut p = tcp_pair("tcp_encap = yes\n        tcp_tls = yes");
    p.start();
    assert_eq!(p.ab[0].transport, Transport::Tls);
    assert_eq!(p.ab[0].remote.port(), 443);
    p.settle();
    p.assert_up(1);
    assert_eq!(p.b.list(p.now)[0].transport, Transport::Tls);
}
