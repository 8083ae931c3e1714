//! charon's counters (vici `get-counters`): every message counted once
//! per side under charon's name, in total and for the connection, and
//! the rekeys; a forged message counted as invalid, not as a message.

mod pair;

use flowsec_ike::counters::{Counts, NAMES};
use pair::*;

/// The counters that are not zero, by name.
fn nonzero(c: &Counts) -> Vec<(&'static str, u64)> {
    NAMES
        .iter()
        .zip(c)
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| (*k, *n))
        .collect()
}

#[test]
fn messages_and_rekeys_are_counted_as_charon_counts_them() {
    let mut p = Pair::default_pair();
    p.start();
    p.settle();
    p.assert_up(1);
    let up_a = [
        ("ike-init-in-resp", 1),
        ("ike-init-out-req", 1),
        ("ike-auth-in-resp", 1),
        ("ike-auth-out-req", 1),
    ];
    assert_eq!(nonzero(p.a.counters().total()), up_a);
    assert_eq!(nonzero(p.a.counters().of("gw").unwrap()), up_a);
    // The responder's IKE_SA_INIT request came before any connection.
    let up_b = [
        ("ike-init-in-req", 1),
        ("ike-init-out-resp", 1),
        ("ike-auth-in-req", 1),
        ("ike-auth-out-resp", 1),
    ];
    assert_eq!(nonzero(p.b.counters().total()), up_b);
    assert_eq!(nonzero(p.b.counters().of("gw").unwrap()), up_b[1..]);

    // A CHILD_SA rekey (CREATE_CHILD_SA, then the old one's DELETE) and
    // an IKE SA rekey, both from a.
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.settle();
    p.a.rekey(p.now, Some("gw"), None, &mut p.ka).unwrap();
    p.settle();
    p.assert_up(1);
    let a = p.a.counters().of("gw").unwrap();
    let b = p.b.counters().of("gw").unwrap();
    let n = |c: &Counts, name: &str| c[NAMES.iter().position(|k| *k == name).unwrap()];
    assert_eq!((n(a, "child-rekey"), n(b, "child-rekey")), (1, 1));
    assert_eq!((n(a, "ike-rekey-init"), n(b, "ike-rekey-resp")), (1, 1));
    assert_eq!((n(a, "ike-rekey-resp"), n(b, "ike-rekey-init")), (0, 0));
    assert_eq!(n(a, "create-child-out-req"), 2);
    assert_eq!(n(b, "create-child-in-req"), 2);
    assert_eq!(n(b, "create-child-out-resp"), 2);
    // The old Child SA's and the old IKE SA's DELETE, each answered.
    assert_eq!((n(a, "info-out-req"), n(a, "info-in-resp")), (2, 2));
    assert_eq!((n(b, "info-in-req"), n(b, "info-out-resp")), (2, 2));

    // A forged message on the IKE SA: invalid, no INFORMATIONAL counted.
    let before = *p.b.counters().total();
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.collect();
    let mut d = p.ab.pop().expect("a's CREATE_CHILD_SA request");
    let last = d.data.len() - 1;
    d.data[last] ^= 1;
    p.b.handle_on(p.now, d.transport, d.remote, d.local, &d.data, &mut p.kb);
    let after = p.b.counters().total();
    assert_eq!(n(after, "invalid"), n(&before, "invalid") + 1);
    assert_eq!(
        n(after, "create-child-in-req"),
        n(&before, "create-child-in-req")
    );

    // reset: the connection's, then all.
    p.b.reset_counters(Some("gw"), false);
    assert!(p.b.counters().of("gw").is_none());
    assert!(nonzero(p.b.counters().total()).len() > 1);
    p.b.reset_counters(None, true);
    assert!(nonzero(p.b.counters().total()).is_empty());
}
