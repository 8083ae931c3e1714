//! MOBIKE (RFC 4555) between two cores: announced in IKE_AUTH both ways;
//! the original initiator moves (its kernel's route to the peer leaves
//! from another address), moves its own SAs and sends
//! UPDATE_SA_ADDRESSES from the new path; the responder follows with
//! every SA, the policies' tunnels and NAT detection; a NAT that appears
//! or goes on the new path switches ESP in UDP on or off at both ends; a
//! replayed or forged update moves nothing; `mobike = no` keeps the old
//! behaviour; the role survives an IKE rekey by the responder.

mod pair;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use flowsec_ipsec::{Action, Direction};
use flowsec_wire::iana::ExchangeType;
use pair::*;

/// a's second address (its new network).
const A2: &str = "198.51.100.7";

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn up(a_extra: &str, b_extra: &str) -> Pair {
    let a = conf(
        A,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        a_extra,
        "start_action = start",
        "k",
    );
    let b = conf(B, A, "10.2.0.0/24", "10.1.0.0/24", b_extra, "", "k");
    let mut p = Pair::new(&a, &b);
    p.start();
    p.settle();
    p.assert_up(1);
    p
}

/// a's route to b leaves from `to` now: a roams; the datagrams that
/// carried the move (a → b).
fn move_a(p: &mut Pair, to: &str) -> Vec<flowsec_ike::Datagram> {
    p.ka.source = Some(ip(to));
    p.a_inside = ip(to);
    p.a.roam(p.now, &mut p.ka);
    p.run().0
}

/// The outer endpoints (src, dst, UDP ports) of the SA with this SPI.
fn outer(k: &flowsec_ike::RecordingKernel, spi: u32) -> (IpAddr, IpAddr, Option<(u16, u16)>) {
    let s = k.sa(spi).expect("SA installed");
    (s.src, s.dst, s.encap.map(|e| (e.src_port, e.dst_port)))
}

/// The tunnel endpoints of every PROTECT policy of `k` in `direction`.
fn tunnels(k: &flowsec_ike::RecordingKernel, direction: Direction) -> Vec<(IpAddr, IpAddr)> {
    k.policies
        .iter()
        .filter(|p| p.direction == direction)
        .filter_map(|p| match &p.action {
            Action::Protect(b) => b[0].tunnel,
            _ => None,
        })
        .collect()
}

#[test]
fn the_responder_follows_an_update_with_every_sa_and_policy() {
    let mut p = up("", "");
    let before = (p.a.list(p.now), p.b.list(p.now));
    let sent = move_a(&mut p, A2);
    // One INFORMATIONAL from the new address, to port 4500 (§3.3).
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(exchange(&sent[0]), ExchangeType::INFORMATIONAL);
    assert_eq!(sent[0].local, SocketAddr::new(ip(A2), 4500));
    assert_eq!(sent[0].remote, SocketAddr::new(ip(B), 4500));
    let (la, lb) = (p.a.list(p.now), p.b.list(p.now));
    // The same IKE SA and Child SA (SPIs kept), on the new path.
    assert_eq!(
        (la[0].spi_i, lb[0].spi_i),
        (before.0[0].spi_i, before.1[0].spi_i)
    );
    assert_eq!(lb[0].remote, SocketAddr::new(ip(A2), 4500));
    assert_eq!(la[0].local, SocketAddr::new(ip(A2), 4500));
    let c = &lb[0].children[0];
    assert_eq!(c.sa_in.spi, before.1[0].children[0].sa_in.spi);
    assert_eq!(outer(&p.kb, c.sa_out.spi), (ip(B), ip(A2), None), "raw ESP");
    assert_eq!(outer(&p.kb, c.sa_in.spi), (ip(A2), ip(B), None));
    let ca = &la[0].children[0];
    assert_eq!(outer(&p.ka, ca.sa_out.spi), (ip(A2), ip(B), None));
    assert_eq!(outer(&p.ka, ca.sa_in.spi), (ip(B), ip(A2), None));
    assert_eq!(tunnels(&p.kb, Direction::Out), vec![(ip(B), ip(A2))]);
    assert_eq!(tunnels(&p.kb, Direction::Fwd), vec![(ip(A2), ip(B))]);
    assert_eq!(tunnels(&p.ka, Direction::Out), vec![(ip(A2), ip(B))]);
    assert_eq!(
        (p.a.stats().mobike_updates, p.b.stats().mobike_updates),
        (1, 1)
    );
    assert!(p
        .events
        .iter()
        .any(|e| e.starts_with("b: ") && e.contains("moved from")));
    // The same request again (a retransmission, or an attacker's replay
    // from anywhere): answered from the cache, nothing moves again.
    let copy = sent[0].clone();
    p.b.handle(
        p.now,
        copy.remote,
        SocketAddr::new(ip("203.0.113.66"), 4500),
        &copy.data,
        &mut p.kb,
    );
    p.collect();
    assert_eq!(p.b.stats().mobike_updates, 1);
    assert_eq!(p.b.list(p.now)[0].remote, SocketAddr::new(ip(A2), 4500));
    p.ba.clear();
    // b's requests go to the new address too: a rekey from b.
    p.b.rekey(p.now, None, Some("net"), &mut p.kb).unwrap();
    p.collect();
    assert!(p.ba.iter().all(|d| d.remote.ip() == ip(A2)), "{:?}", p.ba);
    p.settle();
    p.assert_up(1);
}

#[test]
fn a_forged_update_moves_nothing() {
    let mut p = up("", "");
    p.ka.source = Some(ip(A2));
    p.a.roam(p.now, &mut p.ka);
    p.collect();
    let mut forged = p.ab.remove(0);
    let last = forged.data.len() - 1;
    forged.data[last] ^= 1;
    let from = SocketAddr::new(ip("203.0.113.66"), 4500);
    p.b.handle(p.now, forged.remote, from, &forged.data, &mut p.kb);
    p.collect();
    assert_eq!(p.b.stats().bad_integrity, 1);
    assert_eq!(p.b.stats().mobike_updates, 0);
    assert_eq!(p.b.list(p.now)[0].remote.ip(), ip(A));
    assert!(p.ba.is_empty(), "no answer to a forgery");
}

#[test]
fn a_nat_on_the_new_path_turns_esp_in_udp_on_at_both_ends_and_off_again() {
    let mut p = up("", "");
    let public = ip("203.0.113.5");
    p.nat = Some((public, 20000));
    move_a(&mut p, A2);
    let (la, lb) = (p.a.list(p.now), p.b.list(p.now));
    assert!(la[0].nat && lb[0].nat, "NAT detected at both ends");
    assert_eq!(lb[0].remote, SocketAddr::new(public, 24500));
    let (ca, cb) = (&la[0].children[0], &lb[0].children[0]);
    assert_eq!(
        outer(&p.kb, cb.sa_out.spi),
        (ip(B), public, Some((4500, 24500)))
    );
    assert_eq!(
        outer(&p.ka, ca.sa_out.spi),
        (ip(A2), ip(B), Some((4500, 4500)))
    );
    // a's NAT-keepalives start (RFC 3948 §2.3).
    p.advance(Duration::from_secs(21));
    assert!(p.ab.iter().any(|d| d.is_keepalive()));
    p.settle();
    // Back on a direct path: raw ESP again.
    p.nat = None;
    move_a(&mut p, A);
    let (la, lb) = (p.a.list(p.now), p.b.list(p.now));
    assert!(!la[0].nat && !lb[0].nat);
    let (ca, cb) = (&la[0].children[0], &lb[0].children[0]);
    assert_eq!(outer(&p.kb, cb.sa_out.spi), (ip(B), ip(A), None));
    assert_eq!(outer(&p.ka, ca.sa_out.spi), (ip(A), ip(B), None));
    assert_eq!(p.b.stats().mobike_updates, 2);
}

#[test]
fn without_mobike_at_either_end_nothing_moves() {
    for (a, b) in [("mobike = no", ""), ("", "mobike = no")] {
        let mut p = up(a, b);
        let sent = move_a(&mut p, A2);
        assert!(sent.is_empty(), "no update sent: {sent:?}");
        assert_eq!(p.a.list(p.now)[0].local.ip(), ip(A));
        assert_eq!(p.b.stats().mobike_updates, 0);
    }
}

#[test]
fn the_original_initiator_still_moves_after_the_responder_rekeyed_the_ike_sa() {
    let mut p = up("", "");
    p.b.rekey(p.now, Some("gw"), None, &mut p.kb).unwrap();
    p.settle();
    p.assert_up(1);
    assert!(!p.a.list(p.now)[0].initiator, "b initiated the new IKE SA");
    let sent = move_a(&mut p, A2);
    assert_eq!(sent.len(), 1);
    assert_eq!(p.b.list(p.now)[0].remote.ip(), ip(A2));
    assert_eq!(p.b.stats().mobike_updates, 1);
    // b never moves a's SAs: its kernel's route changing does nothing.
    p.kb.source = Some(ip("192.0.2.99"));
    p.b.roam(p.now, &mut p.kb);
    p.collect();
    assert!(p.ba.is_empty());
}

/// Each end announces its other addresses in IKE_AUTH (§3.6): when a's
/// route to b's address in use goes, a moves to b's other address, and b
/// follows on that one (its own side of the path moves too).
#[test]
fn the_initiator_moves_to_an_address_the_responder_announced() {
    const B2: &str = "192.0.2.3";
    let a = conf(
        A,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        "",
        "start_action = start",
        "k",
    );
    let b = conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "k");
    let mut p = Pair::new(&a, &b);
    p.b.set_local_addresses(vec![ip(B), ip(B2)]);
    p.a.set_local_addresses(vec![ip(A)]);
    p.start();
    p.settle();
    p.assert_up(1);
    // No route to B any more; B2 has one.
    p.ka.source = None;
    p.ka.routes = vec![(ip(B2), ip(A))];
    p.a.roam(p.now, &mut p.ka);
    let sent = p.run().0;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].remote, SocketAddr::new(ip(B2), 4500));
    let (la, lb) = (p.a.list(p.now), p.b.list(p.now));
    assert_eq!(la[0].remote, SocketAddr::new(ip(B2), 4500));
    assert_eq!(lb[0].local, SocketAddr::new(ip(B2), 4500));
    let c = &lb[0].children[0];
    assert_eq!(outer(&p.kb, c.sa_out.spi), (ip(B2), ip(A), None));
    assert_eq!(outer(&p.kb, c.sa_in.spi), (ip(A), ip(B2), None));
    assert_eq!(tunnels(&p.kb, Direction::Out), vec![(ip(B2), ip(A))]);
    // Without a route to any of b's addresses: nothing moves.
    p.ka.routes.clear();
    p.a.roam(p.now, &mut p.ka);
    assert!(p.run().0.is_empty());
}
