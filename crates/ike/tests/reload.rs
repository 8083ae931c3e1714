//! A new configuration while the IKE SAs run (`Ike::reload`, behind
//! `flowsec ctl reload`): unchanged connections keep their SAs, changed
//! ones are replaced, removed ones deleted at both ends, new ones started.

mod pair;

use std::time::Duration;

use flowsec_ike::{config, IkeSaInfo, Reloaded};
use pair::*;

/// One connection between a and b for `net` (10.N.0.0/24 behind a,
/// 10.N+100.0.0/24 behind b; a's view, or b's with `b`), told apart at
/// IKE_SA_INIT by its IKE proposal (a responder picks the connection there).
fn connection(name: &str, n: u8, ike: &str, esp: &str, start: &str, b: bool) -> String {
    let (me, peer, mine, theirs) = match b {
        false => (A, B, n, n + 100),
        true => (B, A, n + 100, n),
    };
    format!(
        r#"
    {name} {{
        local_addrs = {me}
        remote_addrs = {peer}
        proposals = {ike}
        local {{
            auth = psk
            id = {me}
        }}
        remote {{
            auth = psk
            id = {peer}
        }}
        children {{
            {name}-net {{
                local_ts = 10.{mine}.0.0/24
                remote_ts = 10.{theirs}.0.0/24
                esp_proposals = {esp}
                {start}
            }}
        }}
    }}"#
    )
}

fn file(conns: &[String]) -> String {
    format!(
        "connections {{{}\n}}\nsecrets {{\n    ike-all {{\n        id-a = {A}\n        id-b = {B}\n        secret = \"k\"\n    }}\n}}\n",
        conns.concat()
    )
}

const IKE1: &str = "aes128gcm16-prfsha256-ecp256";
const IKE2: &str = "aes256gcm16-prfsha384-ecp384";
const IKE3: &str = "aes128gcm16-prfsha256-x25519";
const ESP: &str = "aes128gcm16";
const ESP_NEW: &str = "aes256gcm16";
const START: &str = "start_action = start";

fn a_conf(two_esp: &str, three: bool) -> String {
    let mut c = vec![
        connection("one", 1, IKE1, ESP, START, false),
        connection("two", 2, IKE2, two_esp, START, false),
    ];
    if three {
        c.push(connection("three", 3, IKE3, ESP, START, false));
    }
    file(&c)
}

fn b_conf() -> String {
    let both = format!("{ESP},{ESP_NEW}");
    file(&[
        connection("one", 1, IKE1, ESP, "", true),
        connection("two", 2, IKE2, &both, "", true),
        connection("three", 3, IKE3, ESP, "", true),
    ])
}

fn by_name<'a>(l: &'a [IkeSaInfo], name: &str) -> Vec<&'a IkeSaInfo> {
    l.iter()
        .filter(|s| s.name == name && s.state == "ESTABLISHED")
        .collect()
}

fn parse(text: &str) -> config::Config {
    config::parse("reload.conf", text).expect("config")
}

#[test]
fn unchanged_connections_keep_their_sas_changed_ones_are_replaced_new_ones_start() {
    let mut p = Pair::new(&a_conf(ESP, false), &b_conf());
    p.start();
    p.settle();
    let before = p.a.list(p.now);
    let one = by_name(&before, "one")[0].clone();
    let two = by_name(&before, "two")[0].clone();
    assert_eq!(two.children[0].proposal, "AES-GCM-16-128");
    let log_len = p.ka.log.len();

    // two's ESP proposal changes, three is new.
    let r = p.a.reload(p.now, parse(&a_conf(ESP_NEW, true)), &mut p.ka);
    assert_eq!(
        r,
        Reloaded {
            added: vec!["three".into()],
            replaced: vec!["two".into()],
            removed: vec![],
            unchanged: vec!["one".into()],
        }
    );
    p.settle();
    let after = p.a.list(p.now);
    // one: the same IKE SA and Child SA, nothing done to its SAs.
    let one_after = by_name(&after, "one");
    assert_eq!(one_after.len(), 1);
    assert_eq!(
        (one_after[0].uid, one_after[0].spi_i, one_after[0].spi_r),
        (one.uid, one.spi_i, one.spi_r)
    );
    assert_eq!(one_after[0].children, {
        let mut c = one.children.clone();
        // Only the clocks moved.
        c[0].installed_s = one_after[0].children[0].installed_s;
        c[0].rekey_in_s = one_after[0].children[0].rekey_in_s;
        c[0].expire_in_s = one_after[0].children[0].expire_in_s;
        c
    });
    let touched_one = p.ka.log[log_len..].iter().any(|l| {
        [one.children[0].sa_in.spi, one.children[0].sa_out.spi]
            .iter()
            .any(|spi| l.contains(&format!("{spi:08x}")))
    });
    assert!(!touched_one, "{:#?}", &p.ka.log[log_len..]);
    // two: a new IKE SA with the new proposal, the old one gone at both ends.
    let two_after = by_name(&after, "two");
    assert_eq!(two_after.len(), 1, "{after:#?}");
    assert_ne!(two_after[0].uid, two.uid);
    assert_eq!(two_after[0].children[0].proposal, "AES-GCM-16-256");
    assert!(p.b.list(p.now).iter().all(|s| s.spi_i != two.spi_i));
    // three: up at both ends.
    assert_eq!(by_name(&after, "three").len(), 1);
    assert_eq!(by_name(&p.b.list(p.now), "three").len(), 1);
    assert_eq!(p.a.connections().len(), 3, "the retired two is forgotten");
    // One pair of SAs per Child SA, one out and fwd policy each.
    assert_eq!((p.ka.sas.len(), p.ka.policies.len()), (6, 6));
    assert_eq!((p.kb.sas.len(), p.kb.policies.len()), (6, 6));

    // three removed: deleted at both ends, the others stay.
    let r = p.a.reload(p.now, parse(&a_conf(ESP_NEW, false)), &mut p.ka);
    assert_eq!(r.removed, vec!["three".to_string()]);
    assert_eq!(r.unchanged, vec!["one".to_string(), "two".to_string()]);
    p.settle();
    assert!(by_name(&p.a.list(p.now), "three").is_empty());
    assert!(by_name(&p.b.list(p.now), "three").is_empty());
    assert_eq!(by_name(&p.a.list(p.now), "two")[0].uid, two_after[0].uid);
    assert_eq!((p.ka.sas.len(), p.ka.policies.len()), (4, 4));
    assert_eq!((p.kb.sas.len(), p.kb.policies.len()), (4, 4));
    // A retired connection is found by nothing.
    assert!(p.a.initiate(p.now, Some("three"), None, &mut p.ka).is_err());
}

#[test]
fn a_replaced_connection_takes_its_policies_over_before_the_old_sa_goes() {
    let mut p = Pair::new(&a_conf(ESP, false), &b_conf());
    p.start();
    p.settle();
    p.a.reload(p.now, parse(&a_conf(ESP_NEW, false)), &mut p.ka);
    // Deliver b's answers to the new IKE SA before b sees the DELETE
    // of the old one: both Child SAs of two are up at a for a while.
    p.collect();
    let delete = p.ab.remove(0);
    p.settle();
    p.ab.push(delete);
    p.settle();
    assert_eq!(by_name(&p.a.list(p.now), "two").len(), 1);
    // Each policy once, and the new Child SA's.
    assert_eq!(p.ka.policies.len(), 4, "{:#?}", p.ka.log);
    let reqid_two = by_name(&p.a.list(p.now), "two")[0].children[0].reqid;
    let of_two =
        p.ka.policies
            .iter()
            .filter(|pol| match &pol.action {
                flowsec_ipsec::Action::Protect(t) => t[0].reqid == reqid_two,
                _ => false,
            })
            .count();
    assert_eq!(of_two, 2);
}

#[test]
fn a_replaced_trap_is_reinstalled_and_a_removed_one_goes() {
    let trap = |esp: &str| {
        file(&[
            connection("one", 1, IKE1, ESP, START, false),
            connection("two", 2, IKE2, esp, "start_action = trap", false),
        ])
    };
    let mut p = Pair::new(&trap(ESP), &b_conf());
    p.start();
    p.settle();
    assert_eq!(p.ka.policies.len(), 4);
    let r = p.a.reload(p.now, parse(&trap(ESP_NEW)), &mut p.ka);
    assert_eq!(r.replaced, vec!["two".to_string()]);
    p.settle();
    assert_eq!(p.ka.policies.len(), 4, "{:#?}", p.ka.log);
    p.a.reload(
        p.now,
        parse(&file(&[connection("one", 1, IKE1, ESP, START, false)])),
        &mut p.ka,
    );
    p.settle();
    assert_eq!(p.ka.policies.len(), 2);
    assert_eq!(by_name(&p.a.list(p.now), "one").len(), 1);
}

#[test]
fn an_sa_still_connecting_of_a_removed_connection_is_dropped() {
    let mut p = Pair::new(&a_conf(ESP, true), &b_conf());
    p.start();
    // IKE_SA_INITs in flight, never answered.
    p.collect();
    p.ab.clear();
    p.a.reload(
        p.now,
        parse(&file(&[connection("one", 1, IKE1, ESP, START, false)])),
        &mut p.ka,
    );
    assert_eq!(p.a.list(p.now).len(), 1, "{:#?}", p.a.list(p.now));
    p.advance(Duration::from_secs(10));
    p.settle();
    assert_eq!(by_name(&p.a.list(p.now), "one").len(), 1);
    assert_eq!(p.a.connections().len(), 1);
}

/// strongSwan's `<name|id>` on every line of an IKE SA: the Child SA's
/// events carry the IKE SA that made them, at both ends.
#[test]
fn events_carry_the_ike_sa_they_happened_in() {
    let mut p = Pair::new(&a_conf(ESP, false), &b_conf());
    p.a.start(p.now, &mut p.ka);
    let mut logged = (Vec::new(), Vec::new());
    for _ in 0..10 {
        while let Some(d) = p.a.poll_transmit() {
            p.b.handle_on(p.now, d.transport, d.remote, d.local, &d.data, &mut p.kb);
        }
        while let Some(d) = p.b.poll_transmit() {
            p.a.handle_on(p.now, d.transport, d.remote, d.local, &d.data, &mut p.ka);
        }
        logged.0.extend(p.a.take_logged());
        logged.1.extend(p.b.take_logged());
    }
    for (who, log) in [("a", &logged.0), ("b", &logged.1)] {
        let installed: Vec<String> = log
            .iter()
            .filter(|l| matches!(l.event, flowsec_ike::IkeEvent::ChildInstalled { .. }))
            .map(|l| l.sa.as_ref().map_or("none".into(), |t| t.to_string()))
            .collect();
        assert_eq!(installed, ["one|1", "two|2"], "{who}: {log:#?}");
        assert!(log.iter().all(|l| l.sa.is_some()), "{who}: {log:#?}");
    }
}

#[test]
fn the_reload_line_is_about_no_ike_sa() {
    let mut p = Pair::new(&a_conf(ESP, true), &b_conf());
    p.start();
    p.settle();
    p.a.take_logged();
    p.a.reload(p.now, parse(&a_conf(ESP, false)), &mut p.ka);
    let log = p.a.take_logged();
    let line = log
        .iter()
        .find(|l| matches!(l.event, flowsec_ike::IkeEvent::Reloaded(_)))
        .expect("a Reloaded event");
    assert_eq!(line.sa, None, "{log:#?}");
    assert_eq!(
        line.event.to_string(),
        "configuration reloaded: removed three; 2 unchanged"
    );
}

/// Two connections for the same traffic: the newer CHILD_SA's policies
/// take the older's place, and when it goes, the older's come back (at
/// both ends), so the older CHILD_SA is never left without its policies.
#[test]
fn a_policy_taken_over_comes_back_when_the_newer_child_sa_goes() {
    let reqids = |k: &flowsec_ike::RecordingKernel| -> Vec<u32> {
        k.policies
            .iter()
            .map(|pol| match &pol.action {
                flowsec_ipsec::Action::Protect(t) => t[0].reqid,
                _ => 0,
            })
            .collect()
    };
    let a = file(&[
        connection("one", 1, IKE1, ESP, START, false),
        connection("dup", 1, IKE2, ESP, START, false),
    ]);
    let b = file(&[
        connection("one", 1, IKE1, ESP, "", true),
        connection("dup", 1, IKE2, ESP, "", true),
    ]);
    let mut p = Pair::new(&a, &b);
    p.start();
    p.settle();
    let list = p.a.list(p.now);
    let (one, dup) = (by_name(&list, "one")[0], by_name(&list, "dup")[0]);
    let (r_one, r_dup) = (one.children[0].reqid, dup.children[0].reqid);
    assert_ne!(r_one, r_dup);
    // One policy per direction: whichever came last holds it.
    assert_eq!(p.ka.policies.len(), 2, "{:#?}", p.ka.log);
    let last = reqids(&p.ka)[0];
    assert!(reqids(&p.ka).iter().all(|r| *r == last));
    let (gone, stays) = if last == r_dup {
        ("dup", r_one)
    } else {
        ("one", r_dup)
    };
    p.a.terminate(p.now, Some(gone), None, &mut p.ka).unwrap();
    p.settle();
    assert_eq!(reqids(&p.ka), [stays, stays], "{:#?}", p.ka.log);
    assert_eq!(p.kb.policies.len(), 2, "{:#?}", p.kb.log);
}

/// The action of `k`'s outbound policy from 10.`from`.0.0/24 to
/// 10.`to`.0.0/24: `Some("protect")`, `Some("discard")`, or `None` (the
/// traffic would leave in the clear).
fn out_policy(k: &flowsec_ike::RecordingKernel, from: u8, to: u8) -> Option<&'static str> {
    let (src, dst) = (format!("10.{from}.0.0/24"), format!("10.{to}.0.0/24"));
    k.policies
        .iter()
        .find(|pol| {
            pol.direction == flowsec_ipsec::spd::Direction::Out
                && pol.selector.src.to_string() == src
                && pol.selector.dst.to_string() == dst
        })
        .map(|pol| match pol.action {
            flowsec_ipsec::Action::Protect(_) => "protect",
            flowsec_ipsec::Action::Discard => "discard",
            flowsec_ipsec::Action::Bypass => "bypass",
        })
}

#[test]
fn a_replaced_connection_is_made_before_it_is_broken() {
    // Issue 29, 9: two's ESP proposal changes. The new IKE SA comes up
    // beside the old one, and the old one is deleted only then: at no
    // step of the exchanges is two's traffic without a PROTECT policy, at
    // either end.
    let mut p = Pair::new(&a_conf(ESP, false), &b_conf());
    p.start();
    p.settle();
    let old = by_name(&p.a.list(p.now), "two")[0].uid;
    p.a.reload(p.now, parse(&a_conf(ESP_NEW, false)), &mut p.ka);
    let mut steps = 0;
    loop {
        assert_eq!(out_policy(&p.ka, 2, 102), Some("protect"), "step {steps}");
        assert_eq!(out_policy(&p.kb, 102, 2), Some("protect"), "step {steps}");
        // Not a word about the old IKE SA before the new one is up.
        let new_up = by_name(&p.a.list(p.now), "two")
            .iter()
            .any(|s| s.uid != old && !s.children.is_empty());
        let old_alive = p.b.list(p.now).iter().any(|s| s.uid == old);
        assert!(new_up || old_alive, "step {steps}: b lost the old SA early");
        steps += 1;
        if !p.step() {
            break;
        }
    }
    p.settle();
    let list = p.a.list(p.now);
    let two = by_name(&list, "two");
    assert_eq!(two.len(), 1);
    assert_ne!(two[0].uid, old);
    assert_eq!(two[0].children[0].proposal, "AES-GCM-16-256");
    assert_eq!((p.ka.policies.len(), p.kb.policies.len()), (4, 4));
    assert!(p
        .ka
        .policies
        .iter()
        .chain(&p.kb.policies)
        .all(|pol| matches!(pol.action, flowsec_ipsec::Action::Protect(_))));
}

#[test]
fn a_replaced_responder_drops_the_traffic_until_the_new_child_sa_is_up() {
    // Issue 29, 9: a answers for two (b starts it and starts it again
    // when it is closed); a reload at a changes two: a cannot start the
    // new one itself, so the old IKE SA goes at once. Between the old
    // Child SA's end and the new one's, a's policies for two are DISCARD,
    // never gone.
    let both = format!("{ESP},{ESP_NEW}");
    let a = |esp: &str| {
        file(&[
            connection("one", 1, IKE1, ESP, START, false),
            connection("two", 2, IKE2, esp, "", false),
        ])
    };
    let b = file(&[
        connection("one", 1, IKE1, ESP, "", true),
        connection(
            "two",
            2,
            IKE2,
            &both,
            "start_action = start\n                close_action = start",
            true,
        ),
    ]);
    let mut p = Pair::new(&a(ESP), &b);
    p.start();
    p.b.start(p.now, &mut p.kb);
    p.settle();
    assert_eq!(by_name(&p.a.list(p.now), "two").len(), 1);
    p.a.reload(p.now, parse(&a(ESP_NEW)), &mut p.ka);
    // INFORMATIONAL { D } -->   <-- INFORMATIONAL { }
    p.b_gets();
    p.a_gets();
    assert!(by_name(&p.a.list(p.now), "two").is_empty());
    assert_eq!(
        out_policy(&p.ka, 2, 102),
        Some("discard"),
        "{:#?}",
        p.ka.log
    );
    // b starts two again (close_action = start): a's new Child SA takes
    // the held policies over; nothing is left of the hold.
    p.settle();
    let list = p.a.list(p.now);
    let two = by_name(&list, "two");
    assert_eq!(two.len(), 1, "{:#?}", p.a.list(p.now));
    assert_eq!(two[0].children[0].proposal, "AES-GCM-16-256");
    assert_eq!(out_policy(&p.ka, 2, 102), Some("protect"));
    assert_eq!(p.ka.policies.len(), 4, "{:#?}", p.ka.policies);
    // Removed by the next reload: a hold would not outlive its connection.
    p.a.reload(
        p.now,
        parse(&file(&[connection("one", 1, IKE1, ESP, START, false)])),
        &mut p.ka,
    );
    p.settle();
    assert_eq!(out_policy(&p.ka, 2, 102), None);
}
