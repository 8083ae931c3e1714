//! What the core gives a peer that has not proved who it is (issue 29,
//! items 2 and 3): copies of its IKE_SA_INIT are answered at most once a
//! second (exchange.rs `RESEND_INTERVAL`), and a stream's message counts as authenticated
//! (`Ike::stream_authenticated`) only once it verified under an IKE SA
//! that is established.

mod pair;

use std::time::Duration;

use flowsec_wire::iana::ExchangeType;
use flowsec_wire::ike::Header;
use pair::*;

#[test]
fn copies_of_an_ike_sa_init_are_answered_at_most_once_a_second() {
    let mut p = Pair::default_pair();
    p.start();
    // HDR, SAi1, KEi, Ni -->
    let init = p.b_gets();
    assert_eq!(p.ba.len(), 1, "the first copy is answered");
    // The same request nine times more within the same instant: one more
    // answer (a peer that writes it in a loop gets one a second).
    for _ in 0..9 {
        p.b.handle(p.now, init.remote, init.local, &init.data, &mut p.kb);
    }
    p.collect();
    assert_eq!(p.ba.len(), 2, "of ten copies at once, one is answered");
    assert_eq!(p.b.stats().resend_limited, 8);
    // A second later a retransmission is answered again (§2.1).
    p.now += Duration::from_secs(1);
    p.b.handle(p.now, init.remote, init.local, &init.data, &mut p.kb);
    p.collect();
    assert_eq!(p.ba.len(), 3);
    assert!(p.ba.iter().all(|d| d.data == p.ba[0].data));
    assert_eq!(p.b.stats().replayed, 2);
    p.ba.truncate(1);
    p.settle();
    p.assert_up(1);
}

/// A pair whose initiator a runs its IKE SA over TCP (RFC 9329).
fn tcp_pair() -> Pair {
    Pair::new(
        &conf(
            A,
            B,
            "10.1.0.0/24",
            "10.2.0.0/24",
            "tcp_encap = yes",
            "start_action = start",
            "s3cret",
        ),
        &conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "s3cret"),
    )
}

#[test]
fn a_stream_message_authenticates_only_once_its_ike_sa_is_established() {
    let mut p = tcp_pair();
    p.start();
    // HDR, SAi1, KEi, Ni -->   (half-open at b: nothing proved)
    let verified = p.b.stats().verified;
    let init = p.b_gets();
    assert_eq!(p.b.stats().verified, verified);
    assert!(!p.b.stream_authenticated(&init.data));
    // <-- HDR, SAr1, KEr, Nr
    p.a_gets();
    // HDR, SK {IDi, AUTH, SA, TSi, TSr} -->   (b established)
    let auth = p.b_gets();
    assert_eq!(
        Header::parse(&auth.data).unwrap().exchange,
        ExchangeType::IKE_AUTH
    );
    assert_eq!(p.b.stats().verified, verified + 1);
    assert!(p.b.stream_authenticated(&auth.data));
    p.settle();
    p.assert_up(1);
    // a's next request (CREATE_CHILD_SA, a message ID b has not seen) with
    // its ICV changed does not verify: the caller sees `verified` stay
    // (the bytes alone name an established SA).
    p.a.initiate(p.now, Some("gw"), Some("net"), &mut p.ka)
        .unwrap();
    p.collect();
    let next = p.ab.remove(0);
    assert_eq!(
        Header::parse(&next.data).unwrap().exchange,
        ExchangeType::CREATE_CHILD_SA
    );
    let mut forged = next.data.clone();
    *forged.last_mut().unwrap() ^= 1;
    let (verified, bad) = (p.b.stats().verified, p.b.stats().bad_integrity);
    p.b.handle_on(
        p.now,
        next.transport,
        next.remote,
        next.local,
        &forged,
        &mut p.kb,
    );
    assert_eq!(p.b.stats().verified, verified);
    assert_eq!(p.b.stats().bad_integrity, bad + 1, "its ICV was checked");
}
