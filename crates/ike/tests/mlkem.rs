//! ML-KEM (FIPS 203) as the key exchange itself
//! (draft-ietf-ipsecme-ikev2-mlkem §2, strongSwan 6's `mlkem768`): in
//! IKE_SA_INIT, as a CHILD_SA's PFS in CREATE_CHILD_SA, and in an IKE SA
//! rekey; the initiator sends its encapsulation key, the responder the
//! ciphertext. A key that fails FIPS 203 §7.2's checks is answered with
//! INVALID_SYNTAX and makes no SA.

mod pair;

use flowsec_ike::Settings;
use flowsec_wire::iana::{DhGroup, NotifyType};
use flowsec_wire::ike::{Message, Payload};
use pair::*;

/// Both ends of `pair::conf`, with ML-KEM method `kem` for IKE and as the
/// child's PFS.
fn kem_pair(kem: &str) -> Pair {
    let with = |c: String| {
        c.replace(
            "proposals = aes128gcm16-prfsha256-ecp256",
            &format!("proposals = aes256gcm16-prfsha384-{kem}"),
        )
        .replace(
            "esp_proposals = aes128gcm16-ecp256",
            &format!("esp_proposals = aes256gcm16-{kem}"),
        )
    };
    let a = with(conf(
        A,
        B,
        "10.1.0.0/24",
        "10.2.0.0/24",
        "",
        "start_action = start",
        "s3cret",
    ));
    let b = with(conf(B, A, "10.2.0.0/24", "10.1.0.0/24", "", "", "s3cret"));
    Pair::with(&a, &b, Settings::default(), Settings::default())
}

/// The KE payload of an unprotected IKE_SA_INIT message.
fn ke_of(data: &[u8]) -> (DhGroup, usize) {
    let msg = Message::parse(data).expect("IKE_SA_INIT parses");
    msg.payloads
        .iter()
        .find_map(|p| match p {
            Payload::Ke(ke) => Some((ke.group, ke.data.len())),
            _ => None,
        })
        .expect("a KE payload")
}

#[test]
fn each_parameter_set_brings_up_and_rekeys_an_ike_sa() {
    for (kem, group, ek, c) in [
        ("mlkem512", DhGroup::ML_KEM_512, 800, 768),
        ("mlkem768", DhGroup::ML_KEM_768, 1184, 1088),
        ("mlkem1024", DhGroup::ML_KEM_1024, 1568, 1568),
    ] {
        let mut p = kem_pair(kem);
        p.start();
        // IKE_SA_INIT: a's encapsulation key, b's ciphertext.
        let request = p.b_gets();
        assert_eq!(ke_of(&request.data), (group, ek), "{kem}");
        let response = p.a_gets();
        assert_eq!(ke_of(&response.data), (group, c), "{kem}");
        p.settle();
        p.assert_up(1);
        let sa = &p.a.list(p.now)[0];
        assert!(
            sa.proposal.contains("ML_KEM") || sa.proposal.contains("ML-KEM"),
            "{}",
            sa.proposal
        );
        // The child's PFS (CREATE_CHILD_SA with KE), from either end, and
        // the IKE SA's rekey: the keys still agree.
        let old = p.a.list(p.now)[0].children[0].sa_in;
        p.a.rekey(p.now, None, Some("net"), &mut p.ka).unwrap();
        p.settle();
        p.b.rekey(p.now, None, Some("net"), &mut p.kb).unwrap();
        p.settle();
        p.a.rekey(p.now, Some("gw"), None, &mut p.ka).unwrap();
        p.settle();
        p.assert_up(1);
        let now = &p.a.list(p.now)[0];
        assert_ne!(now.children[0].sa_in, old, "{kem}");
        // Both rekeys, ours and the peer's.
        assert_eq!(p.a.stats().child_rekeys, 2, "{kem}");
    }
}

#[test]
fn a_key_that_fails_the_modulus_check_is_answered_with_invalid_syntax() {
    let mut p = kem_pair("mlkem768");
    p.start();
    p.collect();
    let mut d = p.ab.remove(0);
    // The KE payload's data, found in the datagram by its bytes (the
    // unencrypted IKE_SA_INIT): its first coefficient set to q.
    let msg = Message::parse(&d.data).unwrap();
    let Some(Payload::Ke(ke)) = msg.payloads.iter().find(|p| matches!(p, Payload::Ke(_))) else {
        panic!("no KE")
    };
    let at = d
        .data
        .windows(ke.data.len())
        .position(|w| w == ke.data.as_slice())
        .unwrap();
    // Coefficient 0 = 3329 = q: 0x01, then 0x0d in the low nibble.
    d.data[at] = 0x01;
    d.data[at + 1] = (d.data[at + 1] & 0xf0) | 0x0d;
    p.b.handle_on(p.now, d.transport, d.remote, d.local, &d.data, &mut p.kb);
    p.collect();
    let answer = p.ba.pop().expect("an answer");
    let msg = Message::parse(&answer.data).unwrap();
    let refused = msg
        .payloads
        .iter()
        .any(|p| matches!(p, Payload::Notify(n) if n.ty == NotifyType::INVALID_SYNTAX));
    assert!(refused, "{:?}", msg.payloads);
    assert!(p.b.list(p.now).is_empty());
}
