//! Redirect (RFC 5685) between two cores: b has two addresses, a front
//! one (B) whose connection redirects to the back one (B2), where another
//! connection serves the client. The client follows at IKE_SA_INIT (no
//! state kept at the front), in IKE_AUTH (after the gateway's AUTH) and
//! for an established SA (`Ike::redirect`), makes the new IKE SA and its
//! Child SA before it deletes the old one; a forged IKE_SA_INIT redirect
//! (not our nonce) is not followed; a redirect loop stops after 5.

mod pair;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use flowsec_ike::{CommandError, GatewayId, RedirectSelector, Settings};
use flowsec_wire::iana::NotifyType;
use pair::*;

/// b's back address.
const B2: &str = "192.0.2.3";

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// One connection of b's: `name` on `local`, with `extra` keys.
fn gw_conn(name: &str, local: &str, extra: &str) -> String {
    format!(
        r#"
    {name} {{
        local_addrs = {local}
        remote_addrs = {A}
        proposals = aes128gcm16-prfsha256-ecp256
        {extra}
        local {{
            auth = psk
            id = gw.example
        }}
        remote {{
            auth = psk
            id = {A}
        }}
        children {{
            net {{
                local_ts = 10.2.0.0/24
                remote_ts = 10.1.0.0/24
                esp_proposals = aes128gcm16-ecp256
            }}
        }}
    }}"#
    )
}

fn secrets() -> String {
    format!("secrets {{\n    ike-1 {{\n        id-a = {A}\n        id-b = gw.example\n        secret = k\n    }}\n}}\n")
}

/// a (client of gw.example at B) and b with a `front` connection on B
/// (`front` keys) and a `back` one on B2 (`back` keys).
fn pair_with(front: &str, back: &str) -> Pair {
    pair_of(front, back, "", "")
}

/// `pair_with`, and `a_conn` in a's connection, `b_more` after b's
/// sections.
fn pair_of(front: &str, back: &str, a_conn: &str, b_more: &str) -> Pair {
    let a = conf(
        A,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        a_conn,
        "start_action = start",
        "k",
    )
    .replace(&format!("id = {B}"), "id = gw.example")
    .replace(&format!("id-b = {B}"), "id-b = gw.example");
    let b = format!(
        "connections {{{}{}\n}}\n{}{b_more}",
        gw_conn("front", B, front),
        gw_conn("back", B2, back),
        secrets()
    );
    Pair::with(&a, &b, Settings::default(), Settings::default())
}

/// Deliver everything, letting both cores follow what is due.
fn run(p: &mut Pair) {
    for _ in 0..50 {
        p.run();
        p.advance(Duration::ZERO);
        p.collect();
        if p.ab.is_empty() && p.ba.is_empty() {
            return;
        }
    }
}

/// a's one established IKE SA is with b's back address, under `back`,
/// with its Child SA, and nothing else is left at either end.
fn up_at_back(p: &Pair) {
    p.assert_up(1);
    let (la, lb) = (p.a.list(p.now), p.b.list(p.now));
    assert_eq!(la.len(), 1, "{la:#?}");
    assert_eq!(la[0].remote, SocketAddr::new(ip(B2), 500));
    assert_eq!(lb.len(), 1, "{lb:#?}");
    assert_eq!(lb[0].name, "back");
}

#[test]
fn a_client_redirected_at_ike_sa_init_comes_up_at_the_new_gateway() {
    let mut p = pair_with(&format!("redirect_to = {B2}"), "");
    p.start();
    // HDR, SAi1, KEi, Ni, N(REDIRECT_SUPPORTED) --> <-- HDR, N(REDIRECT{B2, Ni})
    p.b_gets();
    assert!(p.b.list(p.now).is_empty(), "the front keeps no state");
    let answer = p.a_gets();
    assert_eq!(
        answer.data.len(),
        28 + 8 + 2 + 4 + 32,
        "one notify: B2 and Ni"
    );
    run(&mut p);
    up_at_back(&p);
    assert_eq!((p.b.stats().redirects, p.a.stats().redirected), (1, 1));
    assert!(p
        .events
        .iter()
        .any(|e| e.starts_with("a: ") && e.contains("redirected to 192.0.2.3 (IKE_SA_INIT)")));
}

#[test]
fn a_forged_ike_sa_init_redirect_is_not_followed() {
    let mut p = pair_with("", "");
    p.start();
    p.collect();
    let request = p.ab[0].clone();
    // An off-path attacker answers first: REDIRECT with another nonce.
    let forged = flowsec_wire::ike::Message {
        header: flowsec_wire::ike::Header {
            spi_r: 0,
            response: true,
            initiator: false,
            next_payload: flowsec_wire::iana::PayloadType::NONE,
            length: 0,
            ..flowsec_wire::ike::Header::parse(&request.data).unwrap()
        },
        payloads: vec![flowsec_wire::ike::Payload::Notify(
            flowsec_wire::ike::Notify {
                protocol: 0,
                spi: vec![],
                ty: NotifyType::REDIRECT,
                data: GatewayId::Addr(ip("203.0.113.66")).emit(&[7; 32]),
            },
        )],
    };
    p.a.handle(
        p.now,
        request.local,
        request.remote,
        &forged.emit(),
        &mut p.ka,
    );
    assert_eq!(p.a.stats().redirect_refused, 1);
    run(&mut p);
    p.assert_up(1);
    assert_eq!(p.a.list(p.now)[0].remote, SocketAddr::new(ip(B), 500));
}

#[test]
fn a_client_redirected_in_ike_auth_moves_before_it_breaks() {
    // A road warrior: the front has addresses too, and gives it none.
    let pools = "pools {\n    front {\n        addrs = 10.3.0.0/24\n    }\n    back {\n        addrs = 10.3.1.0/24\n    }\n}\n";
    let mut p = pair_of(
        &format!("redirect_to = {B2}\n        redirect_on = auth\n        pools = front"),
        "pools = back",
        "vips = 0.0.0.0",
        pools,
    );
    p.start();
    run(&mut p);
    up_at_back(&p);
    let leases: Vec<&String> = p
        .events
        .iter()
        .filter(|e| e.contains("assigning virtual IP"))
        .collect();
    assert_eq!(leases.len(), 1, "{leases:?}");
    assert!(leases[0].contains("10.3.1."), "{leases:?}");
    assert_eq!(p.a.list(p.now)[0].local_vips, vec![ip("10.3.1.1")]);
    assert!(p
        .events
        .iter()
        .any(|e| e.contains("redirecting 192.0.2.1 to 192.0.2.3 (IKE_AUTH)")));
    assert!(p
        .events
        .iter()
        .any(|e| e.starts_with("a: ") && e.contains("(IKE_AUTH)")));
    // The front SA never had a Child SA (no SA payload in its answer).
    assert!(
        !p.kb.log.iter().any(|l| l.starts_with("del_sa")),
        "{:?}",
        p.kb.log
    );
}

#[test]
fn an_established_client_is_redirected_by_command() {
    let mut p = pair_with("", "");
    p.start();
    run(&mut p);
    p.assert_up(1);
    let to: GatewayId = B2.parse().unwrap();
    let none = RedirectSelector::default();
    assert_eq!(
        p.b.redirect(p.now, &none, &to, &mut p.kb),
        Err(CommandError::RedirectWithoutSelector)
    );
    let other = RedirectSelector {
        peer_ip: Some("198.51.100.0/24".into()),
        ..Default::default()
    };
    assert_eq!(
        p.b.redirect(p.now, &other, &to, &mut p.kb),
        Err(CommandError::NoRedirectMatch)
    );
    // The client may not redirect its gateway.
    let front = RedirectSelector {
        ike: Some("gw".into()),
        ..Default::default()
    };
    assert_eq!(
        p.a.redirect(p.now, &front, &to, &mut p.ka),
        Err(CommandError::NoRedirectMatch)
    );
    let select = RedirectSelector {
        ike: Some("front".into()),
        peer_ip: Some("192.0.2.0-192.0.2.9".into()),
        peer_id: Some(A.into()),
        ike_id: None,
    };
    assert_eq!(p.b.redirect(p.now, &select, &to, &mut p.kb), Ok(1));
    assert_eq!(
        p.b.redirect(p.now, &select, &to, &mut p.kb),
        Err(CommandError::NoRedirectMatch),
        "on its way already: not sent twice"
    );
    run(&mut p);
    p.advance(Duration::from_secs(1));
    run(&mut p);
    up_at_back(&p);
    assert!(p.events.iter().any(|e| e.contains("(INFORMATIONAL)")));
}

#[test]
fn a_redirect_loop_stops_after_five() {
    // front → back → front → …: each sends the client to the other.
    let mut p = pair_with(
        &format!("redirect_to = {B2}"),
        &format!("redirect_to = {B}"),
    );
    p.start();
    run(&mut p);
    assert_eq!(p.a.stats().redirected, 6, "each redirect seen");
    assert_eq!(p.a.stats().redirect_refused, 1, "the sixth not followed");
    assert!(p.a.list(p.now).is_empty());
    assert!(p
        .events
        .iter()
        .any(|e| e.contains("5 redirects within 300 s")));
    // Five minutes on, the client may be redirected again.
    p.now += Duration::from_secs(301);
    p.a.initiate(p.now, Some("gw"), None, &mut p.ka).unwrap();
    run(&mut p);
    assert!(p.a.stats().redirected > 6);
}
