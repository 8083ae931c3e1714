//! Additional key exchanges after CREATE_CHILD_SA, each in an
//! IKE_FOLLOWUP_KE (RFC 9370 §2.2.4), between two cores: Child SA rekeys
//! with `esp_proposals = …-x25519-ke1_mlkem768` (strongSwan 6's syntax),
//! IKE SA rekeys with a hybrid proposal, three exchanges in a row with
//! their links, optional and required ones against a peer without them,
//! and a follow-up that comes too late (STATE_NOT_FOUND).

mod pair;

use std::time::Duration;

use flowsec_ike::Settings;
use flowsec_wire::iana::{DhGroup, ExchangeType};
use pair::*;

/// `pair::conf` of both ends with ESP proposals `esp_a` / `esp_b` and
/// IKE proposals `ike`.
fn pair_with(ike: &str, esp_a: &str, esp_b: &str) -> Pair {
    let with = |c: String, esp: &str| {
        c.replace(
            "proposals = aes128gcm16-prfsha256-ecp256",
            &format!("proposals = {ike}"),
        )
        .replace(
            "esp_proposals = aes128gcm16-ecp256",
            &format!("esp_proposals = {esp}"),
        )
    };
    let a = conf(
        A,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        "",
        "start_action = start",
        "k",
    );
    let b = conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "k");
    let settings = Settings::default();
    Pair::with(&with(a, esp_a), &with(b, esp_b), settings.clone(), settings)
}

const IKE: &str = "aes128gcm16-prfsha256-ecp256";
const HYBRID_ESP: &str = "aes128gcm16-x25519-ke1_mlkem768";

#[test]
fn a_child_rekey_runs_one_followup_per_additional_exchange() {
    let mut p = pair_with(IKE, HYBRID_ESP, HYBRID_ESP);
    p.start();
    p.settle();
    p.assert_up(1);
    // IKE_AUTH's Child SA has its keys from the IKE SA: no key exchange
    // (RFC 9370 §2.2.3).
    let first = p.a.list(p.now)[0].children[0].clone();
    assert!(!first.proposal.contains("KE1"), "{}", first.proposal);
    // HDR(CREATE_CHILD_SA), SK {N(REKEY_SA), SA, Ni, KEi, TSi, TSr} -->
    //   <-- HDR, SK {SA, Nr, KEr, TSi, TSr, N(ADDITIONAL_KEY_EXCHANGE)}
    // HDR(IKE_FOLLOWUP_KE), SK {N(ADDITIONAL_KEY_EXCHANGE), KEi(1)} -->
    //   <-- HDR(IKE_FOLLOWUP_KE), SK {KEr(1)}
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    let (ab, _) = p.run();
    let kinds: Vec<ExchangeType> = ab.iter().map(exchange).collect();
    assert_eq!(
        kinds[..2],
        [ExchangeType::CREATE_CHILD_SA, ExchangeType::IKE_FOLLOWUP_KE]
    );
    p.settle();
    // Both ends keyed the new SAs alike (assert_up compares the keys).
    p.assert_up(1);
    for ike in [&p.a, &p.b] {
        let c = &ike.list(p.now)[0].children[0];
        assert_ne!(c.sa_in.spi, first.sa_in.spi);
        assert!(
            c.proposal.ends_with("CURVE25519/KE1_ML-KEM-768"),
            "{}",
            c.proposal
        );
        assert_eq!(c.algorithms.addke[0], DhGroup::ML_KEM_768);
        assert_eq!(ike.stats().followups, 1);
    }
    // And from b.
    p.b.rekey(p.now, None, Some("net"), &mut p.kb).unwrap();
    p.settle();
    p.assert_up(1);
    assert_eq!(p.b.stats().followups, 2);
}

#[test]
fn three_additional_exchanges_follow_each_other_by_their_links() {
    let esp = "aes128gcm16-ecp256-ke1_ecp384-ke2_modp3072-ke3_mlkem512";
    let mut p = pair_with(IKE, esp, esp);
    p.start();
    p.settle();
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    let (ab, _) = p.run();
    let followups = ab
        .iter()
        .filter(|d| exchange(d) == ExchangeType::IKE_FOLLOWUP_KE)
        .count();
    assert_eq!(followups, 3);
    p.settle();
    p.assert_up(1);
    let c = &p.b.list(p.now)[0].children[0];
    assert!(
        c.proposal
            .ends_with("ECP-256/KE1_ECP-384/KE2_MODP-3072/KE3_ML-KEM-512"),
        "{}",
        c.proposal
    );
}

#[test]
fn an_ike_sa_rekey_with_a_hybrid_proposal_runs_a_followup() {
    let hybrid = "aes256gcm16-prfsha384-x25519-ke1_mlkem768";
    let mut p = pair_with(hybrid, "aes128gcm16", "aes128gcm16");
    p.start();
    p.settle();
    let before = p.a.list(p.now)[0].clone();
    p.a.rekey(p.now, Some("gw"), None, &mut p.ka).unwrap();
    let (ab, _) = p.run();
    let kinds: Vec<ExchangeType> = ab.iter().map(exchange).collect();
    assert_eq!(
        kinds[..2],
        [ExchangeType::CREATE_CHILD_SA, ExchangeType::IKE_FOLLOWUP_KE]
    );
    p.settle();
    p.assert_up(1);
    for ike in [&p.a, &p.b] {
        let sa = &ike.list(p.now)[0];
        assert_ne!(sa.spi_i, before.spi_i);
        assert!(
            sa.proposal.ends_with("/CURVE25519/KE1_ML-KEM-768"),
            "{}",
            sa.proposal
        );
    }
    // The new IKE SA works both ways: b rekeys it again.
    p.b.rekey(p.now, Some("gw"), None, &mut p.kb).unwrap();
    p.settle();
    p.assert_up(1);
    assert_eq!(p.a.stats().followups, 2);
}

#[test]
fn an_optional_additional_exchange_is_skipped_and_a_required_one_refused() {
    // Optional on a, absent on b: a rekey without IKE_FOLLOWUP_KE.
    let optional = "aes128gcm16-x25519-ke1_mlkem768-ke1_none";
    let mut p = pair_with(IKE, optional, "aes128gcm16-x25519");
    p.start();
    p.settle();
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    let (ab, _) = p.run();
    assert!(ab
        .iter()
        .all(|d| exchange(d) != ExchangeType::IKE_FOLLOWUP_KE));
    p.settle();
    p.assert_up(1);
    // Required on b, absent on a: b refuses a's rekey, and the old
    // Child SA goes on.
    let mut p = pair_with(IKE, "aes128gcm16-x25519", HYBRID_ESP);
    p.start();
    p.settle();
    let old = p.a.list(p.now)[0].children[0].clone();
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    let (ab, _) = p.run();
    assert!(ab
        .iter()
        .all(|d| exchange(d) != ExchangeType::IKE_FOLLOWUP_KE));
    assert!(
        p.events
            .iter()
            .any(|e| e.starts_with("a: ") && e.contains("NO_PROPOSAL_CHOSEN")),
        "{:#?}",
        p.events
    );
    p.settle();
    p.assert_up(1);
    assert_eq!(p.a.list(p.now)[0].children[0].sa_in, old.sa_in);
}

#[test]
fn a_followup_after_the_wait_finds_no_state_and_the_old_child_goes_on() {
    let mut p = pair_with(IKE, HYBRID_ESP, HYBRID_ESP);
    p.start();
    p.settle();
    let old = p.a.list(p.now)[0].children[0].clone();
    let sas_b = p.kb.sas.len();
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.b_gets(); // CREATE_CHILD_SA
    p.a_gets(); // its answer, with the link
    p.collect();
    assert_eq!(exchange(&p.ab[0]), ExchangeType::IKE_FOLLOWUP_KE);
    // The follow-up is lost, and so are a's retransmissions, until b
    // gave up waiting (RFC 9370 §2.2.4: 5 to 20 s).
    p.ab.clear();
    let mut waited = Duration::ZERO;
    while waited < Duration::from_secs(21) {
        p.advance(Duration::from_secs(1));
        waited += Duration::from_secs(1);
        if waited < Duration::from_secs(21) {
            p.ab.clear();
        }
    }
    // a retransmits once more; b answers STATE_NOT_FOUND.
    p.ab.clear();
    while p.ab.is_empty() {
        p.advance(Duration::from_secs(1));
    }
    // (In fragments: ML-KEM-768's key does not fit one, RFC 7383.)
    while !p.ab.is_empty() {
        p.b_gets();
    }
    assert_eq!(exchange(&p.ba[0]), ExchangeType::IKE_FOLLOWUP_KE);
    assert_eq!(p.b.stats().followup_refused, 1);
    // b gave back the SPI it kept for the new Child SA, and a its own;
    // the old Child SA goes on at both ends.
    p.settle();
    assert_eq!(p.kb.sas.len(), sas_b);
    p.assert_up(1);
    assert_eq!(p.a.list(p.now)[0].children[0].sa_in, old.sa_in);
    let refused = p
        .events
        .iter()
        .any(|e| e.starts_with("a: ") && e.contains("STATE_NOT_FOUND"));
    assert!(refused, "{:#?}", p.events);
}

#[test]
fn additional_exchanges_in_esp_need_a_pfs_group() {
    let text = conf(A, B, "10.1.0.0/24", "10.2.0.0/24", "", "", "k").replace(
        "esp_proposals = aes128gcm16-ecp256",
        "esp_proposals = aes128gcm16-ke1_mlkem768",
    );
    let err = flowsec_ike::config::parse("test.conf", &text).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("test.conf:"), "{msg}");
    assert!(msg.contains("follow the PFS key exchange"), "{msg}");
}
