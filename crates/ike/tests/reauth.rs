//! Sessions end with their credentials (issue 29, 7; RFC 7296 §2.8.3):
//! `reauth_time` counts from the peer's authentication, not from the
//! last IKE rekey; the initiator authenticates again make before break;
//! a reload that revokes a certificate or deletes an EAP user ends the
//! sessions it proved.

mod pair;

use std::time::Duration;

use pair::*;

const MIN: Duration = Duration::from_secs(60);

/// `minutes` of time (a few seconds more) in steps of at most a minute,
/// every exchange delivered (`settle` lets some seconds pass too).
fn run_for(p: &mut Pair, minutes: u32) {
    let end = p.now + MIN * minutes;
    while p.now < end {
        p.advance(MIN.min(end - p.now));
        p.settle();
    }
}

fn established(ike: &flowsec_ike::Ike, now: Duration) -> usize {
    ike.list(now)
        .iter()
        .filter(|s| s.state == "ESTABLISHED")
        .count()
}

#[test]
fn reauth_time_counts_from_the_authentication_not_the_last_ike_rekey() {
    // b, a gateway for any address, wants its peers to authenticate every
    // 3 h (+ 10 min over_time); a rekeys the IKE SA every hour. b cannot
    // reach a to authenticate again: the session ends at 3 h 10 min, not a
    // rekey later.
    let a = conf(
        A,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        "rekey_time = 1h\n        rand_time = 0s",
        "start_action = start",
        "k",
    );
    let b = conf(
        B,
        "%any",
        "10.2.0.0/24",
        "10.1.0.0/24",
        "reauth_time = 3h\n        over_time = 10m\n        rand_time = 0s",
        "",
        "k",
    );
    let mut p = Pair::new(&a, &b);
    p.start();
    p.settle();
    let first = p.b.list(p.now)[0].spi_i;
    run_for(&mut p, 3 * 60 + 8);
    assert_eq!(established(&p.b, p.now), 1);
    assert_ne!(
        p.b.list(p.now)[0].spi_i,
        first,
        "a rekeyed the IKE SA meanwhile"
    );
    run_for(&mut p, 3);
    assert_eq!(established(&p.b, p.now), 0, "{:#?}", p.b.list(p.now));
    assert_eq!(established(&p.a, p.now), 0, "b's DELETE reached a");
}

/// The action of `k`'s outbound policy for 10.1.0.0/24 → 10.2.0.0/24.
fn protected(k: &flowsec_ike::RecordingKernel) -> bool {
    k.policies.iter().any(|pol| {
        pol.direction == flowsec_ipsec::spd::Direction::Out
            && pol.selector.dst.to_string() == "10.2.0.0/24"
            && matches!(pol.action, flowsec_ipsec::Action::Protect(_))
    })
}

#[test]
fn the_initiator_authenticates_again_make_before_break() {
    // a authenticates every 2 h and rekeys every hour: at 2 h a new IKE SA
    // (IKE_SA_INIT, IKE_AUTH with the Child SA) comes up beside the old
    // one, which is deleted then. The traffic is protected at every step.
    let a = conf(
        A,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        "rekey_time = 1h\n        reauth_time = 2h\n        over_time = 10m\n        rand_time = 0s",
        "start_action = start",
        "k",
    );
    let b = conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "k");
    let mut p = Pair::new(&a, &b);
    p.start();
    p.settle();
    let first = p.a.list(p.now)[0].clone();
    run_for(&mut p, 119);
    assert_eq!(p.a.stats().reauthentications, 0);
    let before = p.a.list(p.now)[0].clone();
    assert_ne!(before.spi_i, first.spi_i, "rekeyed meanwhile");
    p.advance(2 * MIN);
    let mut step = 0;
    loop {
        assert!(protected(&p.ka), "step {step}");
        step += 1;
        if !p.step() {
            break;
        }
    }
    p.settle();
    assert_eq!(p.a.stats().reauthentications, 1);
    let (la, lb) = (p.a.list(p.now), p.b.list(p.now));
    assert_eq!((la.len(), lb.len()), (1, 1), "{la:#?}");
    assert!(la[0].spi_i != before.spi_i && la[0].children.len() == 1);
    assert_eq!(la[0].spi_i, lb[0].spi_i);
    assert!(protected(&p.ka));
    assert_eq!(p.ka.policies.len(), 2, "{:#?}", p.ka.policies);
    // The new session has a new hard limit: it lives on past 2 h 10 min
    // from the first authentication.
    run_for(&mut p, 30);
    assert_eq!(established(&p.a, p.now), 1);
}

/// 2027-01-01 at the pair's `now`.
const UNIX: Duration = Duration::from_secs(1_798_761_600);

fn cert_conf(me: &str, peer: &str, local: &str, (mine, theirs): (u8, u8), start: &str) -> String {
    format!(
        r#"
connections {{
    gw {{
        local_addrs = {me}
        remote_addrs = {peer}
        local {{
            {local}
        }}
        remote {{
            auth = pubkey
        }}
        children {{
            net {{
                local_ts = 10.{mine}.0.0/24
                remote_ts = 10.{theirs}.0.0/24
                {start}
            }}
        }}
    }}
}}
"#
    )
}

#[test]
fn a_reload_with_a_crl_revoking_the_peers_certificate_ends_its_session() {
    let a_conf = cert_conf(
        A,
        B,
        "auth = pubkey\n certs = moonCert.pem",
        (1, 2),
        "start_action = start",
    );
    let a_files = [
        ("moonCert.pem", "x509"),
        ("moonKey.pem", "ecdsa"),
        ("caCert.pem", "x509ca"),
    ];
    let b_conf = cert_conf(B, A, "auth = pubkey\n certs = revokedCert.pem", (2, 1), "");
    let b_files = [
        ("revokedCert.pem", "x509"),
        ("revokedKey.pem", "ecdsa"),
        ("caCert.pem", "x509ca"),
    ];
    let mut p = Pair::of(
        loaded("ra", &a_conf, &a_files, 1),
        loaded("rb", &b_conf, &b_files, 2),
    );
    p.a.set_wall_clock(p.now, UNIX);
    p.b.set_wall_clock(p.now, UNIX);
    p.start();
    p.settle();
    p.assert_up(1);
    // The same file, and the root's CRL now: b's certificate is revoked.
    let mut with_crl = a_files.to_vec();
    with_crl.push(("rootCrl.pem", "x509crl"));
    let config = loaded_config("ra2", &a_conf, &with_crl);
    let r = p.a.reload(p.now, config, &mut p.ka);
    assert_eq!(r.unchanged, ["gw"]);
    p.settle();
    assert_eq!(p.a.stats().peers_revoked, 1);
    assert!(p.a.list(p.now).is_empty() && p.b.list(p.now).is_empty());
    assert!(p.ka.policies.is_empty() && p.ka.sas.is_empty());
}

#[test]
fn a_reload_without_the_eap_user_ends_its_session_and_keeps_the_others() {
    let client = |user: &str, pass: &str| {
        format!(
            "connections {{\n home {{\n  local_addrs = {A}\n  remote_addrs = {B}\n  local {{\n   auth = eap-mschapv2\n   id = {user}\n  }}\n  remote {{\n   auth = pubkey\n   id = moon.flowsec.test\n  }}\n  children {{\n   home {{\n    remote_ts = 10.2.0.0/24\n    start_action = start\n   }}\n  }}\n }}\n}}\nsecrets {{\n eap-me {{\n  id = {user}\n  secret = \"{pass}\"\n }}\n}}\n"
        )
    };
    let gateway = |users: &[(&str, &str)]| {
        let secrets: String = users
            .iter()
            .map(|(u, s)| format!(" eap-{u} {{\n  id = {u}\n  secret = \"{s}\"\n }}\n"))
            .collect();
        format!(
            "connections {{\n rw {{\n  local_addrs = {B}\n  local {{\n   auth = pubkey\n   certs = moonCert.pem\n   id = moon.flowsec.test\n  }}\n  remote {{\n   auth = eap-mschapv2\n  }}\n  children {{\n   rw {{\n    local_ts = 10.2.0.0/24\n   }}\n  }}\n }}\n}}\nsecrets {{\n{secrets}}}\n"
        )
    };
    let files = [
        ("moonCert.pem", "x509"),
        ("moonKey.pem", "ecdsa"),
        ("caCert.pem", "x509ca"),
    ];
    let a = loaded(
        "ea",
        &client("carol", "c4rol"),
        &[("caCert.pem", "x509ca")],
        1,
    );
    let b = loaded(
        "eb",
        &gateway(&[("carol", "c4rol"), ("dave", "d4ve")]),
        &files,
        2,
    );
    let mut p = Pair::of(a, b);
    p.a.set_wall_clock(p.now, UNIX);
    p.b.set_wall_clock(p.now, UNIX);
    p.start();
    p.settle();
    p.assert_up(1);
    // dave's password changes: carol stays.
    let config = loaded_config(
        "eb2",
        &gateway(&[("carol", "c4rol"), ("dave", "new")]),
        &files,
    );
    p.b.reload(p.now, config, &mut p.kb);
    p.settle();
    assert_eq!(
        (established(&p.a, p.now), p.b.stats().peers_revoked),
        (1, 0)
    );
    // carol is deleted from the file: her session ends.
    let config = loaded_config("eb3", &gateway(&[("dave", "new")]), &files);
    let r = p.b.reload(p.now, config, &mut p.kb);
    assert_eq!(r.unchanged, ["rw"]);
    p.settle();
    assert_eq!(p.b.stats().peers_revoked, 1);
    assert_eq!((established(&p.a, p.now), established(&p.b, p.now)), (0, 0));
}

/// A site-to-site pair with two Child SAs (10.1/10.2 and 10.11/10.12),
/// `extra` in both connections.
fn two_children(me: &str, peer: &str, extra: &str, start: &str) -> String {
    let (mine, theirs) = if me == A { (1, 2) } else { (2, 1) };
    format!(
        r#"
connections {{
    gw {{
        local_addrs = {me}
        remote_addrs = {peer}
        {extra}
        local {{
            auth = psk
            id = {me}
        }}
        remote {{
            auth = psk
            id = {peer}
        }}
        children {{
            one {{
                local_ts = 10.{mine}.0.0/24
                remote_ts = 10.{theirs}.0.0/24
                {start}
            }}
            two {{
                local_ts = 10.1{mine}.0.0/24
                remote_ts = 10.1{theirs}.0.0/24
                {start}
            }}
        }}
    }}
}}
secrets {{
    ike-gw {{
        id-a = {A}
        id-b = {B}
        secret = "k"
    }}
}}
"#
    )
}

/// Whether `k` protects the traffic to 10.`to`.0.0/24.
fn protects(k: &flowsec_ike::RecordingKernel, to: &str) -> bool {
    k.policies.iter().any(|pol| {
        pol.direction == flowsec_ipsec::spd::Direction::Out
            && pol.selector.dst.to_string() == to
            && matches!(pol.action, flowsec_ipsec::Action::Protect(_))
    })
}

#[test]
fn with_reauth_time_at_both_ends_one_side_reauthenticates_every_child_sa() {
    // Both ends want 2 h; only a (the initiator) authenticates again, so
    // the IKE SAs do not double; the old IKE SA goes only once both Child
    // SAs have their successors (no moment without a policy for either).
    let extra = "reauth_time = 2h\n        over_time = 10m\n        rand_time = 0s";
    let a = two_children(A, B, extra, "start_action = start");
    let b = two_children(B, A, extra, "");
    let mut p = Pair::new(&a, &b);
    p.start();
    p.settle();
    assert_eq!(p.a.list(p.now)[0].children.len(), 2);
    for period in 1..=3 {
        run_for(&mut p, 119);
        p.advance(2 * MIN);
        loop {
            for (k, to) in [(&p.ka, "10.2.0.0/24"), (&p.ka, "10.12.0.0/24")] {
                assert!(protects(k, to), "period {period}: a to {to}");
            }
            for (k, to) in [(&p.kb, "10.1.0.0/24"), (&p.kb, "10.11.0.0/24")] {
                assert!(protects(k, to), "period {period}: b to {to}");
            }
            if !p.step() {
                break;
            }
        }
        p.settle();
        let (la, lb) = (p.a.list(p.now), p.b.list(p.now));
        assert_eq!((la.len(), lb.len()), (1, 1), "period {period}: {la:#?}");
        assert_eq!(la[0].children.len(), 2);
        assert_eq!(p.a.stats().reauthentications, period);
        assert_eq!(p.b.stats().reauthentications, 0);
    }
}
