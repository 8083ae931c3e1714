//! Two connections to the same peer (same addresses, identities and
//! keys), told apart only by their children: the second IKE SA must not
//! carry INITIAL_CONTACT (RFC 7296 §2.4: it says no other IKE SA with
//! the peer exists, and the peer deletes the first as stale), and the
//! responder must pick the connection whose children take the traffic
//! selectors asked for, not the first that matches the addresses.

mod pair;

use flowsec_ike::{Ike, IkeSaInfo, RecordingKernel};
use pair::*;

/// `one` (10.1.0.0/24 <-> 10.2.0.0/24) and `two` (10.1.1.0/24 <->
/// 10.2.1.0/24), from `me` to `peer`; `flip` swaps the subnets (b's view).
fn conf(me: &str, peer: &str, flip: bool) -> String {
    let conn = |name: &str, mine: &str, theirs: &str| {
        let (local, remote) = if flip { (theirs, mine) } else { (mine, theirs) };
        format!(
            r#"
    {name} {{
        local_addrs = {me}
        remote_addrs = {peer}
        proposals = aes128gcm16-prfsha256-ecp256
        local {{
            auth = psk
            id = {me}
        }}
        remote {{
            auth = psk
            id = {peer}
        }}
        children {{
            net-{name} {{
                local_ts = {local}
                remote_ts = {remote}
                esp_proposals = aes128gcm16
            }}
        }}
    }}"#
        )
    };
    format!(
        "connections {{{}{}\n}}\nsecrets {{\n ike {{\n id-a = {A}\n id-b = {B}\n secret = s3cret\n }}\n}}\n",
        conn("one", "10.1.0.0/24", "10.2.0.0/24"),
        conn("two", "10.1.1.0/24", "10.2.1.0/24"),
    )
}

/// The initiating side of `p` (a, or b when `from_b`), and the other.
fn sides(p: &mut Pair, from_b: bool) -> (&mut Ike, &mut RecordingKernel) {
    if from_b {
        (&mut p.b, &mut p.kb)
    } else {
        (&mut p.a, &mut p.ka)
    }
}

/// Connection name, child name, local and remote TS of each IKE SA in
/// `list`, sorted by connection name.
fn summary(list: &[IkeSaInfo]) -> Vec<(String, &'static str, String, Vec<String>)> {
    let mut v: Vec<_> = list
        .iter()
        .map(|s| {
            let children: Vec<String> = s
                .children
                .iter()
                .map(|c| format!("{} {:?} -> {:?}", c.name, c.local_ts, c.remote_ts))
                .collect();
            (s.name.clone(), s.state, s.remote_id.clone(), children)
        })
        .collect();
    v.sort();
    v
}

fn both_connections_stay_up(from_b: bool) {
    let mut p = Pair::new(&conf(A, B, false), &conf(B, A, true));
    let now = p.now;
    // HDR, SAi1, KEi, Ni -->  <-- HDR, SAr1, KEr, Nr
    // HDR, SK {IDi, IDr, AUTH, N(INITIAL_CONTACT), SAi2, TSi, TSr} -->
    //                     <-- HDR, SK {IDr, AUTH, SAr2, TSi, TSr}
    let (ike, k) = sides(&mut p, from_b);
    ike.initiate(now, Some("one"), Some("net-one"), k).unwrap();
    p.settle();
    // The second: the same peer, the same identities, other selectors.
    // HDR, SK {IDi, IDr, AUTH, SAi2, TSi, TSr} -->   (no INITIAL_CONTACT)
    let now = p.now;
    let (ike, k) = sides(&mut p, from_b);
    ike.initiate(now, Some("two"), Some("net-two"), k).unwrap();
    p.settle();
    let responder = if from_b { &p.a } else { &p.b };
    assert_eq!(
        responder.stats().initial_contacts,
        1,
        "INITIAL_CONTACT on the first IKE SA only"
    );
    for (side, ike, kernel) in [("a", &p.a, &p.ka), ("b", &p.b, &p.kb)] {
        let list = ike.list(p.now);
        let got = summary(&list);
        let names: Vec<_> = got.iter().map(|g| (g.0.as_str(), g.1, g.3.len())).collect();
        // The responder chose `two` for the second: its own child took
        // the selectors (the first's, `one`, would refuse them).
        assert_eq!(
            names,
            [("one", "ESTABLISHED", 1), ("two", "ESTABLISHED", 1)],
            "{side}: {got:#?}"
        );
        assert!(got[0].3[0].starts_with("net-one "), "{side}: {got:#?}");
        assert!(got[1].3[0].starts_with("net-two "), "{side}: {got:#?}");
        assert_eq!(kernel.sas.len(), 4, "{side}: two Child SAs, both ways");
        assert_eq!(ike.stats().auth_failed, 0, "{side}");
    }
}

#[test]
fn a_second_connection_to_the_same_peer_keeps_the_first_a_initiating() {
    both_connections_stay_up(false);
}

#[test]
fn a_second_connection_to_the_same_peer_keeps_the_first_b_initiating() {
    both_connections_stay_up(true);
}
