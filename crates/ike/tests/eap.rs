//! IKE_AUTH with EAP-MSCHAPv2 (RFC 7296 §2.16) between two flowsec
//! cores: a road warrior with a user name and password, a gateway with a
//! certificate; the virtual IP and the first Child SA come with the last
//! answer; a wrong password or an unknown user is refused and counted.

mod pair;

use std::time::Duration;

use flowsec_ike::IkeEvent;
use pair::{Pair, A, B};

/// 2027-01-01 at the pair's `now`.
const UNIX: Duration = Duration::from_secs(1_798_761_600);

fn confs(password: &str) -> (String, String) {
    let a = format!(
        r#"
connections {{
    home {{
        local_addrs = {A}
        remote_addrs = {B}
        vips = 0.0.0.0
        local {{
            auth = eap-mschapv2
            id = carol@flowsec.test
            eap_id = carol
        }}
        remote {{
            auth = pubkey
            id = moon.flowsec.test
        }}
        children {{
            home {{
                remote_ts = 10.2.0.0/24
                start_action = start
            }}
        }}
    }}
}}
secrets {{
    eap-carol {{
        id = carol
        secret = "{password}"
    }}
}}
"#
    );
    let b = format!(
        r#"
connections {{
    rw {{
        local_addrs = {B}
        remote_addrs = {A}
        pools = rw4
        local {{
            auth = pubkey
            certs = moonCert.pem
            id = moon.flowsec.test
        }}
        remote {{
            auth = eap-mschapv2
            eap_id = %any
        }}
        children {{
            rw {{
                local_ts = 10.2.0.0/24
            }}
        }}
    }}
}}
pools {{
    rw4 {{
        addrs = 10.3.0.0/24
    }}
}}
secrets {{
    eap-carol {{
        id = carol
        secret = "Ar3s.ajeNt"
    }}
    eap-dave {{
        id = dave
        secret = "other"
    }}
}}
"#
    );
    (a, b)
}

fn pair(password: &str) -> Pair {
    let (a, b) = confs(password);
    pair_of(&a, &b)
}

/// The road warrior `a` and the gateway `b` (moon's certificate), with a
/// wall clock.
fn pair_of(a: &str, b: &str) -> Pair {
    let a = pair::loaded("eap-a", a, &[("caCert.pem", "x509ca")], 1);
    let files = [
        ("moonCert.pem", "x509"),
        ("moonKey.pem", "ecdsa"),
        ("caCert.pem", "x509ca"),
    ];
    let b = pair::loaded("eap-b", b, &files, 2);
    let mut p = Pair::of(a, b);
    p.a.set_wall_clock(p.now, UNIX);
    p.b.set_wall_clock(p.now, UNIX);
    p
}

#[test]
fn a_road_warrior_with_a_password_gets_its_address_and_child_sa() {
    let mut p = pair("Ar3s.ajeNt");
    p.start();
    p.settle();
    p.assert_up(1);
    let (la, lb) = (p.a.list(p.now), p.b.list(p.now));
    // Who the gateway knows: the identity EAP proved (IDi was a claim).
    assert_eq!(lb[0].remote_id, "@carol");
    assert_eq!(la[0].remote_id, "@moon.flowsec.test");
    assert_eq!(
        la[0].local_vips,
        ["10.3.0.1".parse::<std::net::IpAddr>().unwrap()]
    );
    assert_eq!(la[0].children[0].local_ts, ["10.3.0.1/32"]);
    assert_eq!((p.a.stats().auth_failed, p.b.stats().auth_failed), (0, 0));
}

#[test]
fn a_wrong_password_is_refused_and_counted() {
    let mut p = pair("guess");
    p.start();
    let mut events = Vec::new();
    for _ in 0..30 {
        p.collect();
        if p.ab.is_empty() && p.ba.is_empty() {
            break;
        }
        if !p.ab.is_empty() {
            let d = p.ab.remove(0);
            p.b.handle_on(p.now, d.transport, d.remote, d.local, &d.data, &mut p.kb);
            events.extend(p.b.take_events().iter().map(IkeEvent::to_string));
        }
        if !p.ba.is_empty() {
            p.a_gets();
        }
    }
    assert!(
        events
            .iter()
            .any(|e| e.contains("authentication failed: EAP-MSCHAPv2: wrong password")),
        "{events:?}"
    );
    assert_eq!(p.b.stats().auth_failed, 1);
    assert!(p.a.list(p.now).iter().all(|s| s.state != "ESTABLISHED"));
    assert!(p.b.list(p.now).is_empty());
    assert!(p.ka.vips.is_empty());
}

#[test]
fn eap_configuration_errors() {
    let dir = std::env::temp_dir().join(format!("flowsec-eap-conf-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("x509ca")).unwrap();
    std::fs::copy(
        pair::fixtures().join("caCert.pem"),
        dir.join("x509ca/caCert.pem"),
    )
    .unwrap();
    let path = dir.join("swanctl.conf");
    let (a, _) = confs("pw");
    std::fs::write(&path, a.replace("eap_id = carol", "eap_id = nobody")).unwrap();
    let e = flowsec_ike::config::load(&flowsec_crypto::Provider::fastest(), &path)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(
            "connections.home.local: auth = eap-mschapv2 needs a secrets.eap-… with id = @nobody"
        ),
        "{e}"
    );
    std::fs::write(&path, a.replace("auth = pubkey", "auth = eap-mschapv2")).unwrap();
    let e = flowsec_ike::config::load(&flowsec_crypto::Provider::fastest(), &path)
        .unwrap_err()
        .to_string();
    assert!(e.contains("EAP authenticates the initiator only"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_gateway_switches_to_the_connection_for_eap_at_ike_auth() {
    // b's first connection takes certificates from anyone; the EAP one
    // comes second, with the same addresses and proposals: IKE_SA_INIT
    // picks the first, IKE_AUTH (no AUTH: EAP) the second.
    let (a, b) = confs("Ar3s.ajeNt");
    let cert_first = format!(
        "connections {{\n    certs {{\n        local_addrs = {B}\n        remote_addrs = {A}\n        local {{\n            auth = pubkey\n            certs = moonCert.pem\n        }}\n        remote {{\n            auth = pubkey\n        }}\n    }}\n"
    );
    let b = b.replacen("connections {\n", &cert_first, 1);
    let a = pair::loaded("eap-a2", &a, &[("caCert.pem", "x509ca")], 1);
    let files = [
        ("moonCert.pem", "x509"),
        ("moonKey.pem", "ecdsa"),
        ("caCert.pem", "x509ca"),
    ];
    let b = pair::loaded("eap-b2", &b, &files, 2);
    let mut p = Pair::of(a, b);
    p.a.set_wall_clock(p.now, UNIX);
    p.b.set_wall_clock(p.now, UNIX);
    p.start();
    p.settle();
    p.assert_up(1);
    assert_eq!(p.b.list(p.now)[0].name, "rw");
}

/// a's conf (made by `confs(password)`) as another EAP user, IDi
/// unchanged.
fn as_user(a: &str, user: &str) -> String {
    a.replace("eap_id = carol", &format!("eap_id = {user}"))
        .replace(
            "eap-carol {\n        id = carol",
            &format!("eap-x {{\n        id = {user}"),
        )
}

fn run(a: &str, b: &str) -> Pair {
    let mut p = pair_of(a, b);
    p.start();
    p.settle();
    p
}

#[test]
fn the_identity_proved_by_eap_is_the_peer_not_the_claimed_idi() {
    // dave, with dave's password, claims IDi carol@flowsec.test: the
    // gateway (eap_id = %any) knows him as dave.
    let (a, b) = confs("other");
    let a = as_user(&a, "dave");
    let p = run(&a, &b);
    p.assert_up(1);
    assert_eq!(p.b.list(p.now)[0].remote_id, "@dave");
}

#[test]
fn without_eap_id_the_eap_user_must_be_the_ike_identity() {
    // The gateway has no eap_id: the EAP user is IDi (carol@flowsec.test),
    // asked at once; a answers as "carol": refused.
    let (a, b) = confs("Ar3s.ajeNt");
    let b = b.replace("            eap_id = %any\n", "");
    let p = run(&a, &b);
    assert_eq!(p.b.stats().auth_failed, 1);
    assert!(p.a.list(p.now).iter().all(|s| s.state != "ESTABLISHED"));
    // With the IKE identity as user name (and its password): up.
    let (a2, _) = confs("full");
    let a2 = as_user(&a2, "carol@flowsec.test");
    let b2 = b.replace("    eap-dave {", "    eap-full {\n        id = carol@flowsec.test\n        secret = \"full\"\n    }\n    eap-dave {");
    let p = run(&a2, &b2);
    p.assert_up(1);
}

#[test]
fn an_eap_id_on_the_gateway_admits_that_user_only() {
    let (a, b) = confs("other");
    let b = b.replace("eap_id = %any", "eap_id = carol");
    let a = as_user(&a, "dave");
    let p = run(&a, &b);
    assert_eq!(p.b.stats().auth_failed, 1);
    assert!(p.b.list(p.now).is_empty());
}

#[test]
fn a_half_open_eap_sa_stays_where_its_ike_sa_init_came_from() {
    // Issue 29, 1: an unauthenticated initiator sends its IKE_AUTH (EAP:
    // the SA stays half-open) from a forged source. The SA stays with the
    // address IKE_SA_INIT came from, so it is counted there (the victim's
    // own IKE_SA_INIT is not blocked by it), and answers go there; a copy
    // of the request gets the cached answer where it came from, but only
    // once a second (no reflector).
    let (a, b) = confs("Ar3s.ajeNt");
    let b = b.replace(&format!("remote_addrs = {A}"), "remote_addrs = %any");
    let mut p = pair_of(&a, &b);
    // a behind a NAT (b then follows an established peer's new port).
    let public: std::net::IpAddr = "198.51.100.1".parse().unwrap();
    p.nat = Some((public, 20000));
    // Where a's IKE_SA_INIT came from, and its port 4500 (RFC 7296 §2.23).
    let from_a = std::net::SocketAddr::new(public, 20500);
    let nat_t = std::net::SocketAddr::new(public, 24500);
    let victim: std::net::SocketAddr = "203.0.113.9:4500".parse().unwrap();
    p.start();
    // HDR, SAi1, KEi, Ni -->  <-- HDR, SAr1, KEr, Nr
    p.b_gets();
    p.a_gets();
    // HDR, SK {IDi, IDr, SAi2, TSi, TSr} -->   (from the victim's address)
    p.collect();
    let auth = p.ab.remove(0);
    p.b.handle(p.now, auth.remote, victim, &auth.data, &mut p.kb);
    p.collect();
    //  <-- HDR, SK {IDr, CERT, AUTH, EAP}   (to a, where IKE_SA_INIT came from)
    assert_eq!(p.ba.len(), 1);
    assert_eq!(p.ba[0].remote, from_a);
    let sa = &p.b.list(p.now)[0];
    assert_eq!((sa.state, sa.remote, sa.nat), ("CONNECTING", from_a, true));
    // The request again, from a's port 4500: answered there. At once from
    // the victim's address: not answered; a second later: answered there
    // (strongSwan answers a retransmission where it came from).
    p.ba.clear();
    p.b.handle(p.now, auth.remote, nat_t, &auth.data, &mut p.kb);
    p.b.handle(p.now, auth.remote, victim, &auth.data, &mut p.kb);
    p.collect();
    assert_eq!(p.ba.iter().map(|d| d.remote).collect::<Vec<_>>(), [nat_t]);
    assert_eq!((p.b.stats().replayed, p.b.stats().resend_limited), (1, 1));
    p.now += Duration::from_secs(1);
    p.b.handle(p.now, auth.remote, victim, &auth.data, &mut p.kb);
    p.collect();
    assert_eq!(p.ba.last().map(|d| d.remote), Some(victim));
    assert_eq!(p.b.list(p.now)[0].remote, from_a);
    // The honest exchange goes on.
    p.ba.truncate(1);
    p.settle();
    p.assert_up(1);
}
