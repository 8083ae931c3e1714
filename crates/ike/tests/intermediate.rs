//! Hybrid key exchange (RFC 9370) over IKE_INTERMEDIATE (RFC 9242)
//! between two cores, as strongSwan 6 writes it
//! (`aes256gcm16-prfsha384-x25519-ke1_mlkem768`): the exchanges on the
//! wire, their message IDs, IntAuth in both AUTHs (the SAs come up only
//! if both ends computed it alike), fragments of a large KE, optional and
//! required additional exchanges against a peer without them.

mod pair;

use flowsec_ike::{Datagram, Settings};
use flowsec_wire::iana::{DhGroup, ExchangeType, NotifyType, PayloadType};
use flowsec_wire::ike::{Message, Payload};
use pair::*;

/// `pair::conf` of both ends with IKE proposals `ike_a` / `ike_b` and
/// `fragment_size` `size`.
fn pair_with(ike_a: &str, ike_b: &str, size: usize) -> Pair {
    let with = |c: String, ike: &str| {
        c.replace(
            "proposals = aes128gcm16-prfsha256-ecp256",
            &format!("proposals = {ike}"),
        )
    };
    let settings = Settings {
        fragment_size: size,
        ..Settings::default()
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
    Pair::with(&with(a, ike_a), &with(b, ike_b), settings.clone(), settings)
}

fn message_id(d: &Datagram) -> u32 {
    u32::from_be_bytes(d.data[20..24].try_into().unwrap())
}

const HYBRID: &str = "aes256gcm16-prfsha384-x25519-ke1_mlkem768";

#[test]
fn a_hybrid_proposal_runs_one_ike_intermediate_then_ike_auth() {
    let mut p = pair_with(HYBRID, HYBRID, 1280);
    p.start();
    let (ab, _) = p.run();
    p.assert_up(1);
    // IKE_SA_INIT (0), IKE_INTERMEDIATE (1), IKE_AUTH (2): RFC 9242
    // Appendix A's numbering.
    let requests: Vec<(ExchangeType, u32)> =
        ab.iter().map(|d| (exchange(d), message_id(d))).collect();
    assert_eq!(
        requests,
        [
            (ExchangeType::IKE_SA_INIT, 0),
            (ExchangeType::IKE_INTERMEDIATE, 1),
            (ExchangeType::IKE_AUTH, 2)
        ]
    );
    // Both announced IKE_INTERMEDIATE in IKE_SA_INIT.
    let init = Message::parse(&ab[0].data).unwrap();
    let announced = init.payloads.iter().any(
        |p| matches!(p, Payload::Notify(n) if n.ty == NotifyType::INTERMEDIATE_EXCHANGE_SUPPORTED),
    );
    assert!(announced);
    for ike in [&p.a, &p.b] {
        let sa = &ike.list(p.now)[0];
        assert!(
            sa.proposal.ends_with("/CURVE25519/KE1_ML-KEM-768"),
            "{}",
            sa.proposal
        );
        let algs = sa.algorithms.unwrap();
        assert_eq!(algs.addke[0], DhGroup::ML_KEM_768);
    }
    // Child and IKE SA rekeys after it (the IKE SA's with IKE_FOLLOWUP_KE,
    // tests/followup.rs).
    p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
    p.settle();
    p.b.rekey(p.now, Some("gw"), None, &mut p.kb).unwrap();
    p.settle();
    p.assert_up(1);
}

#[test]
fn three_additional_key_exchanges_each_have_their_own_exchange() {
    let ike = "aes128gcm16-prfsha256-ecp256-ke1_ecp384-ke2_modp3072-ke3_mlkem512";
    let mut p = pair_with(ike, ike, 1280);
    p.start();
    let (ab, ba) = p.run();
    p.assert_up(1);
    let kinds: Vec<ExchangeType> = ab.iter().map(exchange).collect();
    assert_eq!(
        kinds,
        [
            ExchangeType::IKE_SA_INIT,
            ExchangeType::IKE_INTERMEDIATE,
            ExchangeType::IKE_INTERMEDIATE,
            ExchangeType::IKE_INTERMEDIATE,
            ExchangeType::IKE_AUTH
        ]
    );
    assert_eq!(message_id(ab.last().unwrap()), 4);
    assert_eq!(ba.len(), 5);
    let sa = &p.a.list(p.now)[0];
    assert!(
        sa.proposal
            .ends_with("/ECP-256/KE1_ECP-384/KE2_MODP-3072/KE3_ML-KEM-512"),
        "{}",
        sa.proposal
    );
}

#[test]
fn a_large_key_goes_in_fragments() {
    // ML-KEM-1024: 1568 bytes each way, over fragments of 576-byte
    // datagrams (RFC 7383; IKE_SA_INIT itself is never fragmented).
    let ike = "aes256gcm16-prfsha384-x25519-ke1_mlkem1024";
    let mut p = pair_with(ike, ike, 576);
    p.start();
    let (ab, ba) = p.run();
    p.assert_up(1);
    let fragments = |ds: &[Datagram]| {
        ds.iter()
            .filter(|d| {
                exchange(d) == ExchangeType::IKE_INTERMEDIATE && d.data[16] == PayloadType::SKF.0
            })
            .count()
    };
    assert!(
        fragments(&ab) >= 3 && fragments(&ba) >= 3,
        "{} {}",
        fragments(&ab),
        fragments(&ba)
    );
    assert!(ab
        .iter()
        .chain(&ba)
        .skip(1)
        .all(|d| d.data.len() <= 576 - 28));
}

#[test]
fn an_optional_additional_exchange_is_skipped_with_a_classical_peer() {
    let mut p = pair_with(
        "aes256gcm16-prfsha384-x25519-ke1_mlkem768-ke1_none",
        "aes256gcm16-prfsha384-x25519",
        1280,
    );
    p.start();
    let (ab, _) = p.run();
    p.assert_up(1);
    assert!(ab
        .iter()
        .all(|d| exchange(d) != ExchangeType::IKE_INTERMEDIATE));
    assert!(!p.a.list(p.now)[0].proposal.contains("KE1"));
}

#[test]
fn a_required_additional_exchange_meets_no_proposal_chosen() {
    // Either way round: no SA, and the responder said why.
    for (a, b) in [
        (HYBRID, "aes256gcm16-prfsha384-x25519"),
        ("aes256gcm16-prfsha384-x25519", HYBRID),
    ] {
        let mut p = pair_with(a, b, 1280);
        p.start();
        p.b_gets();
        p.collect();
        let answer = Message::parse(&p.ba[0].data).unwrap();
        let refused = answer
            .payloads
            .iter()
            .any(|x| matches!(x, Payload::Notify(n) if n.ty == NotifyType::NO_PROPOSAL_CHOSEN));
        assert!(refused, "{a} -> {b}: {:?}", answer.payloads);
        assert!(p.b.list(p.now).is_empty());
    }
}
