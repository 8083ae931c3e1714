//! Road warriors (RFC 7296 §3.15): a responder with `pools` hands out
//! virtual IPs and DNS servers to initiators with `vips`; the initiator
//! puts its address on the tunnel device (the Kernel is told) and its
//! selectors follow it; the address stays across an IKE SA rekey, goes
//! back to the pool when the IKE SA goes, and comes back to the same
//! identity.

mod pair;

use std::net::IpAddr;

use pair::{conf, Pair, A, B};

fn rw_pair(vips: &str, pools: &str) -> Pair {
    let a = conf(
        A,
        B,
        "dynamic",
        "10.2.0.0/24",
        &format!("vips = {vips}"),
        "start_action = start",
        "s3cret",
    );
    let b = conf(B, A, "10.2.0.0/24", "dynamic", &format!("pools = {pools}"), "", "s3cret")
        + "pools {\n v4 {\n  addrs = 10.3.0.0/24\n  dns = 10.2.0.53\n }\n v6 {\n  addrs = fd00:3::/120\n  dns = fd00:2::53\n }\n empty {\n  addrs = 10.9.0.1-10.9.0.1\n }\n}\n";
    Pair::new(&a, &b)
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn a_road_warrior_gets_an_address_of_each_family_and_its_selectors_follow() {
    let mut p = rw_pair("0.0.0.0, ::", "v4, v6");
    p.start();
    p.settle();
    p.assert_up(1);
    assert_eq!(p.ka.vips, [ip("10.3.0.1"), ip("fd00:3::1")]);
    let (la, lb) = (p.a.list(p.now), p.b.list(p.now));
    assert_eq!(la[0].local_vips, [ip("10.3.0.1"), ip("fd00:3::1")]);
    assert_eq!(la[0].dns, [ip("10.2.0.53"), ip("fd00:2::53")]);
    assert_eq!(lb[0].remote_vips, [ip("10.3.0.1"), ip("fd00:3::1")]);
    // The Child SA carries the virtual IPs, not the outer address.
    let child = &la[0].children[0];
    assert_eq!(child.local_ts, ["10.3.0.1/32", "fd00:3::1/128"]);
    assert_eq!(lb[0].children[0].remote_ts, child.local_ts);
}

#[test]
fn the_address_stays_across_a_rekey_goes_back_with_the_sa_and_returns_to_its_owner() {
    let mut p = rw_pair("0.0.0.0", "v4");
    p.start();
    p.settle();
    p.assert_up(1);
    assert_eq!(p.ka.vips, [ip("10.3.0.1")]);
    p.a.rekey(p.now, Some("gw"), None, &mut p.ka).unwrap();
    p.settle();
    p.assert_up(1);
    assert_eq!(p.ka.vips, [ip("10.3.0.1")], "kept across the IKE SA rekey");
    assert!(!p.ka.log.iter().any(|l| l.starts_with("del_vip")));
    p.a.terminate(p.now, Some("gw"), None, &mut p.ka).unwrap();
    p.settle();
    assert!(p.ka.vips.is_empty(), "{:?}", p.ka.log);
    assert!(p.b.list(p.now).is_empty());
    // Up again: the same address for the same identity.
    p.a.initiate(p.now, Some("gw"), None, &mut p.ka).ok();
    p.settle();
    p.assert_up(1);
    assert_eq!(p.ka.vips, [ip("10.3.0.1")]);
}

#[test]
fn without_an_address_the_road_warrior_gives_up() {
    // b offers only an IPv4 pool, a asks only for IPv6.
    let mut p = rw_pair("::", "v4");
    p.start();
    p.settle();
    assert!(p.ka.vips.is_empty());
    assert!(p.a.list(p.now).iter().all(|s| s.state != "ESTABLISHED"));
    // b answered INTERNAL_ADDRESS_FAILURE without a Child SA, and a's
    // DELETE took b's IKE SA away.
    assert!(p.kb.sas.is_empty(), "{:?}", p.kb.log);
    assert!(p.b.list(p.now).is_empty(), "{:#?}", p.b.list(p.now));
}
