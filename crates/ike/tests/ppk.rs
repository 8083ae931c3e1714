//! Post-quantum preshared keys (RFC 8784) between two cores, as strongSwan
//! 6 configures them (`ppk_id`, `ppk_required`, `secrets { ppk-… }`): used
//! when both hold it, NO_PPK_AUTH when the responder does not and the
//! initiator allows it, refused when either requires one it cannot have,
//! and what a wrong PPK does.

mod pair;

use flowsec_ike::Settings;
use pair::*;

/// A `ppk-…` secret section.
fn ppk_secret(name: &str, id: &str, secret: &str) -> String {
    format!("    {name} {{\n        id = {id}\n        secret = \"{secret}\"\n    }}\n")
}

/// `pair::conf` with connection keys `conn` and extra secrets `secrets`.
fn side(
    me: &str,
    peer: &str,
    nets: (&str, &str),
    conn: &str,
    secrets: &str,
    start: bool,
) -> String {
    let child = if start { "start_action = start" } else { "" };
    let c = conf(me, peer, nets.0, nets.1, conn, child, "k");
    // Before the closing brace of `secrets`.
    let at = c.rfind('}').unwrap();
    format!("{}{secrets}{}", &c[..at], &c[at..])
}

fn pair_with(a: (&str, &str), b: (&str, &str)) -> Pair {
    let a = side(A, B, ("10.1.0.0/24", "10.2.0.0/24"), a.0, a.1, true);
    let b = side(B, A, ("10.2.0.0/24", "10.1.0.0/24"), b.0, b.1, false);
    Pair::with(&a, &b, Settings::default(), Settings::default())
}

const USE: &str = "ppk_id = ppk-gw";
const REQUIRE: &str = "ppk_id = ppk-gw\n        ppk_required = yes";

fn secret() -> String {
    ppk_secret(
        "ppk-1",
        "ppk-gw",
        "a post-quantum preshared key of 32+ bytes",
    )
}

fn ppk_used(p: &Pair) -> (bool, bool) {
    let used = |l: Vec<flowsec_ike::IkeSaInfo>| l.first().is_some_and(|s| s.ppk);
    (used(p.a.list(p.now)), used(p.b.list(p.now)))
}

#[test]
fn both_holding_the_ppk_use_it_and_keep_it_across_rekeys() {
    let mut p = pair_with((USE, &secret()), ("", &secret()));
    p.start();
    p.settle();
    p.assert_up(1);
    assert_eq!(ppk_used(&p), (true, true));
    let sa = &p.a.list(p.now)[0];
    assert!(sa.proposal.ends_with("/PPK"), "{}", sa.proposal);
    // The Child SAs' keys came from the mixed SK_d at both ends
    // (assert_up compares them); a rekey of each keeps working.
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.settle();
    p.a.rekey(p.now, Some("gw"), None, &mut p.ka).unwrap();
    p.settle();
    p.assert_up(1);
    assert_eq!(ppk_used(&p), (true, true), "inherited through SK_d");
}

#[test]
fn required_on_both_ends_works_and_a_wrong_ppk_fails_authentication() {
    let mut p = pair_with((REQUIRE, &secret()), ("ppk_required = yes", &secret()));
    p.start();
    p.settle();
    p.assert_up(1);
    assert_eq!(ppk_used(&p), (true, true));
    let other = ppk_secret("ppk-1", "ppk-gw", "another key under the same PPK_ID");
    let mut p = pair_with((USE, &secret()), ("", &other));
    p.start();
    p.settle();
    assert!(p.a.list(p.now).is_empty() && p.b.list(p.now).is_empty());
    assert_eq!(p.b.stats().auth_failed, 1);
}

#[test]
fn a_responder_without_the_ppk_takes_no_ppk_auth_when_it_is_optional() {
    // b holds a PPK (so it answers USE_PPK), not the one a names.
    let b_secret = ppk_secret("ppk-1", "ppk-other", "some other post-quantum key");
    let mut p = pair_with((USE, &secret()), ("", &b_secret));
    p.start();
    p.settle();
    p.assert_up(1);
    assert_eq!(ppk_used(&p), (false, false));
    // b holds none at all: no USE_PPK, a classical SA.
    let mut p = pair_with((USE, &secret()), ("", ""));
    p.start();
    p.settle();
    p.assert_up(1);
    assert_eq!(ppk_used(&p), (false, false));
}

#[test]
fn a_required_ppk_the_other_end_cannot_use_means_no_sa() {
    let b_secret = ppk_secret("ppk-1", "ppk-other", "some other post-quantum key");
    let cases = [
        // a requires it; b holds another one: no NO_PPK_AUTH to fall
        // back to, b refuses the AUTH.
        ((REQUIRE, secret()), ("", b_secret.clone())),
        // a requires it; b announces no USE_PPK: a gives up before AUTH.
        ((REQUIRE, secret()), ("", String::new())),
        // b requires it; a has no ppk_id.
        (("", secret()), ("ppk_required = yes", secret())),
        // b requires another PPK_ID than a names.
        (
            (USE, secret()),
            ("ppk_id = ppk-other\n ppk_required = yes", secret()),
        ),
    ];
    for ((a_conn, a_secrets), (b_conn, b_secrets)) in cases {
        let mut p = pair_with((a_conn, &a_secrets), (b_conn, &b_secrets));
        p.start();
        p.settle();
        let up = |l: Vec<flowsec_ike::IkeSaInfo>| l.iter().any(|s| s.state == "ESTABLISHED");
        assert!(
            !up(p.a.list(p.now)) && !up(p.b.list(p.now)),
            "{a_conn:?} / {b_conn:?}: {:#?}",
            p.events
        );
        assert!(p.ka.sas.is_empty() && p.kb.sas.is_empty());
    }
}

#[test]
fn ppk_configuration_errors_name_the_line() {
    let bad = [
        (
            side(
                A,
                B,
                ("10.1.0.0/24", "10.2.0.0/24"),
                "ppk_id = 192.0.2.9",
                "",
                false,
            ),
            "a PPK_ID is a plain name",
        ),
        (
            side(
                A,
                B,
                ("10.1.0.0/24", "10.2.0.0/24"),
                "",
                "    ppk-1 {\n        secret = x\n    }\n",
                false,
            ),
            "a ppk secret needs id",
        ),
    ];
    for (text, want) in bad {
        let e = flowsec_ike::config::parse("test.conf", &text).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("test.conf:") && msg.contains(want), "{msg}");
    }
}
