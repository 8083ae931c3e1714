//! IKE message fragmentation (RFC 7383) between two cores: announced in
//! IKE_SA_INIT, IKE_AUTH cut into fragments of `fragment_size`, lost and
//! duplicated fragments, forged ones, and the `fragmentation` settings.

mod pair;

use std::time::Duration;

use flowsec_ike::Settings;
use flowsec_wire::iana::ExchangeType;
use pair::*;

/// A pair whose gateways say `fragmentation = FA` / `FB`, with datagrams
/// of at most `size` bytes (IP and UDP headers included).
fn pair(fa: &str, fb: &str, size: usize) -> Pair {
    let settings = Settings {
        fragment_size: size,
        ..Settings::default()
    };
    Pair::with(
        &conf(
            A,
            B,
            "10.1.0.0/24",
            "10.2.0.0/24",
            &format!("fragmentation = {fa}"),
            "start_action = start",
            "k",
        ),
        &conf(
            B,
            A,
            "10.2.0.0/24",
            "10.1.0.0/24",
            &format!("fragmentation = {fb}"),
            "",
            "k",
        ),
        settings.clone(),
        settings,
    )
}

fn is_fragment(d: &flowsec_ike::Datagram) -> bool {
    d.data.len() > 16 && d.data[16] == flowsec_wire::iana::PayloadType::SKF.0
}

fn exchange(d: &flowsec_ike::Datagram) -> ExchangeType {
    ExchangeType(d.data[18])
}

#[test]
fn ike_auth_goes_in_fragments_that_fit_and_the_sas_come_up() {
    let mut p = pair("yes", "yes", 200);
    p.start();
    p.b_gets();
    p.a_gets();
    // IKE_AUTH request: fragments, each within 200 - 20 - 8 bytes.
    p.collect();
    let auth: Vec<_> =
        p.ab.iter()
            .filter(|d| exchange(d) == ExchangeType::IKE_AUTH)
            .collect();
    assert!(
        auth.len() > 1,
        "{} datagrams: {:?}",
        auth.len(),
        auth.iter().map(|d| d.data.len()).collect::<Vec<_>>()
    );
    assert!(
        auth.iter().all(|d| is_fragment(d) && d.data.len() <= 172),
        "{:?}",
        auth.iter().map(|d| d.data.len()).collect::<Vec<_>>()
    );
    p.settle();
    p.assert_up(1);
    assert!(p.a.stats().fragmented >= 1 && p.b.stats().fragmented >= 1);
    assert!(p.a.stats().reassembled >= 1 && p.b.stats().reassembled >= 1);
    // A CHILD_SA rekey is fragmented too, and works; so after an IKE SA
    // rekey (the new IKE SA inherits what IKE_SA_INIT negotiated).
    let before = p.a.stats().fragmented;
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.settle();
    p.assert_up(1);
    assert!(p.a.stats().fragmented > before);
    p.a.rekey(p.now, Some("gw"), None, &mut p.ka).unwrap();
    p.settle();
    let before = p.a.stats().fragmented;
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.settle();
    p.assert_up(1);
    assert!(
        p.a.stats().fragmented > before,
        "the rekeyed IKE SA fragments"
    );
}

#[test]
fn a_lost_fragment_is_resent_with_its_siblings_and_duplicates_change_nothing() {
    let mut p = pair("yes", "yes", 200);
    p.start();
    p.b_gets();
    p.a_gets();
    p.collect();
    // The second fragment of IKE_AUTH is lost; the first arrives twice.
    let lost = p.ab.remove(1);
    assert!(is_fragment(&lost));
    let first = p.ab[0].clone();
    p.ab.insert(1, first);
    while !p.ab.is_empty() {
        p.b_gets();
    }
    assert!(p.b.list(p.now).iter().all(|s| s.state != "ESTABLISHED"));
    // a retransmits every fragment at 4 s.
    p.advance(Duration::from_secs(5));
    p.settle();
    p.assert_up(1);
    assert!(p.a.stats().retransmits >= 1);
}

#[test]
fn a_forged_fragment_is_dropped_and_counted() {
    let mut p = pair("yes", "yes", 200);
    p.start();
    p.b_gets();
    p.a_gets();
    p.collect();
    assert!(is_fragment(&p.ab[0]));
    let last = p.ab[0].data.len() - 1;
    p.ab[0].data[last] ^= 1;
    while !p.ab.is_empty() {
        p.b_gets();
    }
    assert_eq!(p.b.stats().bad_integrity, 1);
    p.advance(Duration::from_secs(5));
    p.settle();
    p.assert_up(1);
}

#[test]
fn who_fragments_follows_the_fragmentation_setting() {
    // accept: announced, never sent; the peer's fragments are taken.
    let mut p = pair("accept", "yes", 200);
    p.start();
    p.settle();
    p.assert_up(1);
    assert_eq!(p.a.stats().fragmented, 0);
    assert!(p.a.stats().reassembled >= 1);
    // no at one end: nobody fragments (the other did not hear it announced).
    let mut p = pair("yes", "no", 200);
    p.start();
    p.settle();
    p.assert_up(1);
    assert_eq!((p.a.stats().fragmented, p.b.stats().fragmented), (0, 0));
    // force: fragmented though the peer did not announce it; a peer with
    // `no` drops the fragments, and the IKE SA never comes up.
    let mut p = pair("force", "no", 200);
    p.start();
    for _ in 0..4 {
        p.settle();
    }
    assert!(p.a.stats().fragmented >= 1);
    assert!(p.b.stats().fragments_dropped >= 1);
    assert!(p.b.list(p.now).iter().all(|s| s.state != "ESTABLISHED"));
    // Large enough datagrams: nothing is fragmented.
    let mut p = pair("yes", "yes", 1280);
    p.start();
    p.settle();
    p.assert_up(1);
    assert_eq!((p.a.stats().fragmented, p.b.stats().fragmented), (0, 0));
}

/// Behind a NAT the responder sends from 4500 to the NAT's port (not
/// 4500): its fragments still leave room for the non-ESP marker, so none
/// is above the fragment size once the daemon puts it in front.
#[test]
fn behind_a_nat_the_responders_fragments_leave_room_for_the_marker() {
    let public: std::net::IpAddr = "198.51.100.7".parse().unwrap();
    let settings = Settings {
        fragment_size: 200,
        ..Settings::default()
    };
    let a = conf(
        A,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        "fragmentation = yes",
        "start_action = start",
        "k",
    );
    let b = conf(B, "%any", "10.2.0.0/24", "10.1.0.0/24", "", "", "k")
        .replace("id = %any", "id = 192.0.2.1");
    let mut p = Pair::with(&a, &b, settings.clone(), settings);
    p.nat = Some((public, 20000));
    p.start();
    p.settle();
    p.assert_up(1);
    assert_eq!(p.b.list(p.now)[0].remote.port(), 24500);
    // b rekeys the CHILD_SA (a KE for PFS makes the request large): from
    // 4500 to the NAT's 24500, every datagram at most 200 - 20 - 8 - 4.
    let before = p.b.stats().fragmented;
    p.b.rekey(p.now, None, Some("net"), &mut p.kb).unwrap();
    p.collect();
    assert!(p.ba.len() > 1, "{} datagrams", p.ba.len());
    for d in &p.ba {
        assert_eq!((d.local.port(), d.remote.port()), (4500, 24500));
        assert!(d.data.len() <= 168, "{} bytes", d.data.len());
    }
    assert!(p.b.stats().fragmented > before);
    p.settle();
    p.assert_up(1);
}
