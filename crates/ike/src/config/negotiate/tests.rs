use super::*;
use crate::config::proposal::{
    default_esp_proposals, default_ike_proposals, parse_ah_proposal, parse_esp_proposal,
    parse_ike_proposal,
};

fn ike(s: &str) -> IkeProposal {
    parse_ike_proposal(s).unwrap()
}

fn esp(s: &str) -> ChildProposal {
    parse_esp_proposal(s).unwrap()
}

fn t(ty: TransformType, id: u16) -> Transform {
    Transform::new(ty, id)
}

fn aes_t(id: EncrId, bits: u16) -> Transform {
    Transform {
        key_len: Some(bits),
        ..t(TransformType::ENCR, id.0)
    }
}

#[test]
fn ike_offer_encodes_key_lengths_and_numbers() {
    let offer = ike_offer(&[
        ike("aes256-sha256-modp2048"),
        ike("chacha20poly1305-prfsha256-x25519"),
    ]);
    assert_eq!(offer.len(), 2);
    assert_eq!(offer[0].num, 1);
    assert_eq!(offer[1].num, 2);
    assert!(offer[0].spi.is_empty());
    assert_eq!(
        offer[0].transforms,
        vec![
            aes_t(EncrId::AES_CBC, 256),
            t(TransformType::PRF, PrfId::HMAC_SHA2_256.0),
            t(TransformType::INTEG, IntegId::HMAC_SHA2_256_128.0),
            t(TransformType::DH, DhGroup::MODP_2048.0),
        ]
    );
    // RFC 7634 §3: no Key Length for ChaCha20-Poly1305; no INTEG with an AEAD.
    assert_eq!(
        offer[1].transforms[0],
        t(TransformType::ENCR, EncrId::CHACHA20_POLY1305.0)
    );
    assert!(!offer[1]
        .transforms
        .iter()
        .any(|x| x.ty == TransformType::INTEG));
}

#[test]
fn responder_prefers_its_own_order() {
    // The peer (initiator) prefers AES-CBC, we prefer AES-GCM: ours wins.
    let peer = ike_offer(&[
        ike("aes128-sha256-ecp256"),
        ike("aes256gcm16-prfsha384-ecp384-ecp256"),
    ]);
    let ours = [
        ike("aes256gcm16-prfsha384-ecp256"),
        ike("aes128-sha256-ecp256"),
    ];
    let c = select_ike(&ours, &peer, false).unwrap();
    assert_eq!(c.num, 2);
    assert_eq!(
        c.suite.encr,
        Encr {
            id: EncrId::AES_GCM_16,
            key_bits: 256
        }
    );
    assert_eq!(c.suite.integ, IntegId::NONE);
    assert_eq!(c.suite.prf, PrfId::HMAC_SHA2_384);
    assert_eq!(c.suite.dh, DhGroup::ECP_256);
    // The other way round, the peer's first proposal matches our second.
    let c = select_ike(&[ours[1].clone()], &peer, false).unwrap();
    assert_eq!(c.num, 1);
    assert_eq!(c.suite.integ, IntegId::HMAC_SHA2_256_128);
}

#[test]
fn strongswan_multi_algorithm_proposal() {
    // strongSwan's default offer against a narrow responder, both ways.
    let strongswan = ike_offer(&default_ike_proposals());
    let narrow = [ike("aes256-sha384-prfsha384-modp3072")];
    let c = select_ike(&narrow, &strongswan, false).unwrap();
    assert_eq!(c.num, 1);
    assert_eq!(
        c.suite,
        IkeSuite {
            encr: Encr {
                id: EncrId::AES_CBC,
                key_bits: 256
            },
            integ: IntegId::HMAC_SHA2_384_192,
            prf: PrfId::HMAC_SHA2_384,
            dh: DhGroup::MODP_3072,
        }
    );
    // A strongSwan-style responder with the defaults picks its first of
    // each kind that the narrow initiator offers.
    let c = select_ike(&default_ike_proposals(), &ike_offer(&narrow), false).unwrap();
    assert_eq!(c.suite.dh, DhGroup::MODP_3072);
    assert_eq!(c.suite.integ, IntegId::HMAC_SHA2_384_192);
    // Several of each: our order decides within the proposal.
    let multi = ike_offer(&[ike("aes128-aes256-sha1-sha256-modp2048-ecp256")]);
    let c = select_ike(
        &[ike("aes256-aes128-sha256-sha1-ecp256-modp2048")],
        &multi,
        false,
    )
    .unwrap();
    assert_eq!(c.suite.encr.key_bits, 256);
    assert_eq!(c.suite.integ, IntegId::HMAC_SHA2_256_128);
    assert_eq!(c.suite.prf, PrfId::HMAC_SHA2_256);
    assert_eq!(c.suite.dh, DhGroup::ECP_256);
    // The initiator accepts the answer built from the choice.
    assert_eq!(ike_accepts(&multi, &ike_answer(&c)), Some(c));
}

#[test]
fn key_length_must_equal_ours() {
    let peer = ike_offer(&[ike("aes128-sha256-ecp256")]);
    assert!(select_ike(&[ike("aes256-sha256-ecp256")], &peer, false).is_none());
    // A peer AES transform without Key Length matches nothing.
    let mut bare = peer.clone();
    bare[0].transforms[0].key_len = None;
    assert!(select_ike(&[ike("aes128-sha256-ecp256")], &bare, false).is_none());
}

#[test]
fn unknown_attributes_and_types() {
    let mut peer = ike_offer(&[ike("aes128-aes256-sha256-ecp256")]);
    // The AES-128 transform carries an attribute we do not know: ignored,
    // so AES-256 is chosen.
    peer[0].transforms[0].unknown_attributes = true;
    let c = select_ike(&[ike("aes128-aes256-sha256-ecp256")], &peer, false).unwrap();
    assert_eq!(c.suite.encr.key_bits, 256);
    // Only such transforms for a type: no match.
    peer[0].transforms[1].unknown_attributes = true;
    assert!(select_ike(&[ike("aes128-aes256-sha256-ecp256")], &peer, false).is_none());
    // A transform type that does not belong in IKE (ESN) or is unknown:
    // the proposal is unacceptable (§3.3.6).
    for ty in [TransformType::ESN, TransformType(9)] {
        let mut p = ike_offer(&[ike("aes128-sha256-ecp256")]);
        p[0].transforms.push(t(ty, 0));
        assert!(select_ike(&[ike("aes128-sha256-ecp256")], &p, false).is_none());
    }
    // Protocol must be IKE.
    let mut p = ike_offer(&[ike("aes128-sha256-ecp256")]);
    p[0].protocol = ProtocolId::ESP;
    assert!(select_ike(&[ike("aes128-sha256-ecp256")], &p, false).is_none());
}

#[test]
fn missing_mandatory_types() {
    let ours = [ike("aes128-sha256-ecp256")];
    for drop in [TransformType::PRF, TransformType::INTEG, TransformType::DH] {
        let mut p = ike_offer(&ours);
        p[0].transforms.retain(|x| x.ty != drop);
        assert!(select_ike(&ours, &p, false).is_none(), "{drop}");
    }
}

#[test]
fn esp_selection_both_ways() {
    let initiator = default_esp_proposals();
    let offer = child_offer(&initiator, ProtocolId::ESP, 0xc001_d00d, false);
    assert_eq!(offer[0].spi, vec![0xc0, 0x01, 0xd0, 0x0d]);
    assert!(offer[0]
        .transforms
        .contains(&t(TransformType::ESN, EsnId::NO_ESN.0)));
    let responder = [esp("aes256-sha256-esn-noesn"), esp("aes128gcm16")];
    let c = select_child(&responder, &offer, false).unwrap();
    assert_eq!(c.num, 2);
    assert_eq!(c.protocol, ProtocolId::ESP);
    assert_eq!(c.spi, 0xc001_d00d);
    assert_eq!(
        c.encr,
        Some(Encr {
            id: EncrId::AES_CBC,
            key_bits: 256
        })
    );
    assert_eq!(c.integ, IntegId::HMAC_SHA2_256_128);
    assert!(!c.esn);
    assert_eq!(c.dh, DhGroup::NONE);
    let answer = child_answer(&c, 0x1234_5678);
    assert_eq!(answer.spi, vec![0x12, 0x34, 0x56, 0x78]);
    let mut seen = c.clone();
    seen.spi = 0x1234_5678;
    assert_eq!(child_accepts(&offer, &answer), Some(seen));

    // Responder with the defaults against an initiator asking for ESN.
    let offer = child_offer(&[esp("aes128gcm16-esn")], ProtocolId::ESP, 7, false);
    assert!(select_child(&default_esp_proposals(), &offer, false).is_none());
    let c = select_child(&[esp("aes128gcm16-esn-noesn")], &offer, false).unwrap();
    assert!(c.esn);
    assert_eq!(c.integ, IntegId::NONE);
    // A peer proposal without ESN transform counts as NO_ESN.
    let mut no_esn = child_offer(&[esp("aes128gcm16")], ProtocolId::ESP, 7, false);
    no_esn[0].transforms.retain(|x| x.ty != TransformType::ESN);
    assert!(
        !select_child(&[esp("aes128gcm16")], &no_esn, false)
            .unwrap()
            .esn
    );
    // AH proposals do not match ESP ones.
    let ah = child_offer(
        &[parse_ah_proposal("sha256").unwrap()],
        ProtocolId::AH,
        9,
        false,
    );
    assert!(select_child(&[esp("aes128-sha256")], &ah, false).is_none());
    let c = select_child(&[parse_ah_proposal("sha256").unwrap()], &ah, false).unwrap();
    assert_eq!(
        (c.protocol, c.encr, c.integ),
        (ProtocolId::AH, None, IntegId::HMAC_SHA2_256_128)
    );
    assert_eq!(
        child_accepts(&ah, &child_answer(&c, 9)).unwrap().integ,
        c.integ
    );
}

#[test]
fn pfs_rules() {
    let pfs = [esp("aes128gcm16-modp2048")];
    let opt = [esp("aes128gcm16-modp2048-none")];
    let nopfs = [esp("aes128gcm16")];
    let sel = |ours: &[ChildProposal], peer: &[ChildProposal], want| {
        let offer = child_offer(peer, ProtocolId::ESP, 1, true);
        select_child(ours, &offer, want).map(|c| c.dh)
    };
    // IKE_AUTH (want_dh false): DH ignored either way.
    assert_eq!(sel(&nopfs, &pfs, false), Some(DhGroup::NONE));
    assert_eq!(sel(&pfs, &nopfs, false), Some(DhGroup::NONE));
    // CREATE_CHILD_SA: groups must match.
    assert_eq!(sel(&pfs, &pfs, true), Some(DhGroup::MODP_2048));
    assert_eq!(sel(&[esp("aes128gcm16-ecp256")], &pfs, true), None);
    // The peer wants PFS, we do not: no match; unless it allows NONE.
    assert_eq!(sel(&nopfs, &pfs, true), None);
    assert_eq!(sel(&nopfs, &opt, true), Some(DhGroup::NONE));
    // We want PFS, the peer offers none: only if we allow none.
    assert_eq!(sel(&pfs, &nopfs, true), None);
    assert_eq!(sel(&opt, &nopfs, true), Some(DhGroup::NONE));
    assert_eq!(sel(&nopfs, &nopfs, true), Some(DhGroup::NONE));
    // NONE offered but a common group exists: ours first.
    assert_eq!(sel(&opt, &opt, true), Some(DhGroup::MODP_2048));
    // NONE is common only if we also allow it.
    assert_eq!(
        sel(
            &[esp("aes128gcm16-ecp384")],
            &[esp("aes128gcm16-ecp256-none")],
            true
        ),
        None
    );

    // Initiator side: an answer without DH to an offer insisting on PFS.
    let offer = child_offer(&pfs, ProtocolId::ESP, 1, true);
    let c = select_child(&pfs, &offer, true).unwrap();
    let mut answer = child_answer(&c, 2);
    assert_eq!(
        child_accepts(&offer, &answer).unwrap().dh,
        DhGroup::MODP_2048
    );
    answer.transforms.retain(|x| x.ty != TransformType::DH);
    assert!(child_accepts(&offer, &answer).is_none());
    let offer = child_offer(&opt, ProtocolId::ESP, 1, true);
    assert_eq!(child_accepts(&offer, &answer).unwrap().dh, DhGroup::NONE);
}

#[test]
fn esp_without_integrity() {
    let offer = child_offer(&[esp("aes128")], ProtocolId::ESP, 1, false);
    let c = select_child(&[esp("aes128")], &offer, false).unwrap();
    assert_eq!(c.integ, IntegId::NONE);
    assert_eq!(
        child_accepts(&offer, &child_answer(&c, 2)).unwrap().integ,
        IntegId::NONE
    );
    // The peer insists on integrity, we have none configured.
    let offer = child_offer(&[esp("aes128-sha1")], ProtocolId::ESP, 1, false);
    assert!(select_child(&[esp("aes128")], &offer, false).is_none());
}

#[test]
fn initiator_refuses_answers_outside_its_offer() {
    let offer = ike_offer(&[ike("aes128-sha256-ecp256")]);
    let good = ike_answer(&select_ike(&[ike("aes128-sha256-ecp256")], &offer, false).unwrap());
    assert!(ike_accepts(&offer, &good).is_some());
    let mut bad = good.clone();
    bad.transforms[3] = t(TransformType::DH, DhGroup::MODP_2048.0);
    assert!(ike_accepts(&offer, &bad).is_none());
    let mut two = good.clone();
    two.transforms
        .push(t(TransformType::DH, DhGroup::ECP_256.0));
    assert!(ike_accepts(&offer, &two).is_none());
    let mut missing = good.clone();
    missing.transforms.retain(|x| x.ty != TransformType::INTEG);
    assert!(ike_accepts(&offer, &missing).is_none());
    let mut num = good.clone();
    num.num = 2;
    assert!(ike_accepts(&offer, &num).is_none());
    let mut keylen = good;
    keylen.transforms[0].key_len = Some(256);
    assert!(ike_accepts(&offer, &keylen).is_none());
    // ESP: the SPI must be 4 bytes; ENCR must be there.
    let offer = child_offer(&[esp("aes128gcm16")], ProtocolId::ESP, 1, false);
    let c = select_child(&[esp("aes128gcm16")], &offer, false).unwrap();
    let mut a = child_answer(&c, 5);
    a.spi = vec![0; 8];
    assert!(child_accepts(&offer, &a).is_none());
    let mut a = child_answer(&c, 5);
    a.transforms.retain(|x| x.ty != TransformType::ENCR);
    assert!(child_accepts(&offer, &a).is_none());
}

#[test]
fn aead_answer_with_integ_none() {
    let offer = ike_offer(&[ike("aes128gcm16-prfsha256-ecp256")]);
    let c = select_ike(&[ike("aes128gcm16-prfsha256-ecp256")], &offer, false).unwrap();
    let mut a = ike_answer(&c);
    assert_eq!(a.transforms.len(), 3);
    a.transforms.push(t(TransformType::INTEG, IntegId::NONE.0));
    assert_eq!(ike_accepts(&offer, &a), Some(c));
}

/// RFC 9370 §2.2.1 as strongSwan 6 selects (its `proposal.c` tests): one
/// method per ADDKE slot, the responder's order first; a slot one side
/// lacks is NONE only if the other allows it; no method twice, the first
/// key exchange included; ADDKEs only with IKE_INTERMEDIATE.
#[test]
fn additional_key_exchanges_are_chosen_as_strongswan_chooses_them() {
    let chosen = |ours: &str, peer: &str| {
        let c = select_ike(&[ike(ours)], &ike_offer(&[ike(peer)]), true)?;
        Some(c.additional())
    };
    let hybrid = "aes256gcm16-prfsha384-x25519-ke1_mlkem768";
    assert_eq!(chosen(hybrid, hybrid), Some(vec![DhGroup::ML_KEM_768]));
    // Ours first among several in a slot.
    assert_eq!(
        chosen(
            "aes256gcm16-prfsha384-x25519-ke1_mlkem1024-ke1_mlkem768",
            "aes256gcm16-prfsha384-x25519-ke1_mlkem768-ke1_mlkem1024"
        ),
        Some(vec![DhGroup::ML_KEM_1024])
    );
    // Required on one side only: no match; optional there: skipped.
    assert_eq!(chosen(hybrid, "aes256gcm16-prfsha384-x25519"), None);
    assert_eq!(chosen("aes256gcm16-prfsha384-x25519", hybrid), None);
    let optional = "aes256gcm16-prfsha384-x25519-ke1_mlkem768-ke1_none";
    assert_eq!(
        chosen(optional, "aes256gcm16-prfsha384-x25519"),
        Some(vec![])
    );
    assert_eq!(chosen(optional, optional), Some(vec![DhGroup::ML_KEM_768]));
    // No method twice: `modp3072-ke1_modp3072` cannot match itself, and
    // with `ke1_none` as well the slot is skipped (strongSwan's tests).
    let twice = "aes128-sha256-modp3072-ke1_modp3072";
    assert_eq!(chosen(twice, twice), None);
    let or_none = "aes128-sha256-modp3072-ke1_modp3072-ke1_none";
    assert_eq!(chosen(or_none, or_none), Some(vec![]));
    // Slots in order, gaps allowed (RFC 9370's example uses 2, 3 and 5).
    let gaps = "aes128gcm16-prfsha256-ecp256-ke2_ecp384-ke5_mlkem512";
    assert_eq!(
        chosen(gaps, gaps),
        Some(vec![DhGroup::ECP_384, DhGroup::ML_KEM_512])
    );
    // Without INTERMEDIATE_EXCHANGE_SUPPORTED a proposal with ADDKEs is
    // one of unknown transform types: skipped.
    let offer = ike_offer(&[ike(optional)]);
    assert!(select_ike(&[ike(optional)], &offer, false).is_none());
    let classical = ike_offer(&[ike("aes256gcm16-prfsha384-x25519")]);
    let c = select_ike(&[ike(optional)], &classical, false).unwrap();
    assert!(c.additional().is_empty());
}

/// The initiator's check of the answer: the chosen ADDKEs must be ones it
/// offered in that slot; a required slot left out is refused, an
/// optional one reads as NONE; a method twice is refused.
#[test]
fn the_initiator_checks_the_additional_key_exchanges_chosen() {
    let offer = ike_offer(&[ike(
        "aes256gcm16-prfsha384-x25519-ke1_mlkem768-ke2_ecp384-ke2_none",
    )]);
    let answer = |addke: &[(usize, DhGroup)]| {
        let mut a = Proposal {
            num: 1,
            protocol: ProtocolId::IKE,
            spi: Vec::new(),
            transforms: vec![
                aes_t(EncrId::AES_GCM_16, 256),
                t(TransformType::PRF, PrfId::HMAC_SHA2_384.0),
                t(TransformType::DH, DhGroup::CURVE25519.0),
            ],
        };
        for (slot, g) in addke {
            a.transforms.push(t(addke_type(*slot), g.0));
        }
        ike_accepts(&offer, &a).map(|c| c.additional())
    };
    assert_eq!(
        answer(&[(0, DhGroup::ML_KEM_768), (1, DhGroup::ECP_384)]),
        Some(vec![DhGroup::ML_KEM_768, DhGroup::ECP_384])
    );
    // Slot 2 optional: left out or NONE.
    assert_eq!(
        answer(&[(0, DhGroup::ML_KEM_768)]),
        Some(vec![DhGroup::ML_KEM_768])
    );
    assert_eq!(
        answer(&[(0, DhGroup::ML_KEM_768), (1, DhGroup::NONE)]),
        Some(vec![DhGroup::ML_KEM_768])
    );
    // Slot 1 required; a method not offered there; a slot not offered.
    assert_eq!(answer(&[]), None);
    assert_eq!(answer(&[(0, DhGroup::ML_KEM_1024)]), None);
    assert_eq!(
        answer(&[(0, DhGroup::ML_KEM_768), (2, DhGroup::ECP_384)]),
        None
    );
    // The answer encodes what was chosen and nothing chosen NONE.
    let ours = [ike(
        "aes256gcm16-prfsha384-x25519-ke1_mlkem768-ke2_ecp384-ke2_none",
    )];
    let c = select_ike(&ours, &ike_offer(&ours), true).unwrap();
    let encoded = ike_answer(&c);
    let addkes: Vec<(TransformType, u16)> = encoded
        .transforms
        .iter()
        .filter(|x| x.ty.0 >= TransformType::ADDKE1.0)
        .map(|x| (x.ty, x.id))
        .collect();
    assert_eq!(
        addkes,
        [
            (TransformType::ADDKE1, DhGroup::ML_KEM_768.0),
            (TransformType::ADDKE2, DhGroup::ECP_384.0)
        ]
    );
}

/// ESP (RFC 9370 §2.2.4): additional key exchanges only in
/// CREATE_CHILD_SA, after a PFS group; left out of IKE_AUTH's offer and
/// ignored there; the answer and the initiator's check carry them.
#[test]
fn child_additional_key_exchanges_follow_pfs() {
    let hybrid = [esp("aes128gcm16-x25519-ke1_mlkem768")];
    let with = child_offer(&hybrid, ProtocolId::ESP, 0x100, true);
    assert!(with[0]
        .transforms
        .iter()
        .any(|x| x.ty == TransformType::ADDKE1 && x.id == DhGroup::ML_KEM_768.0));
    let c = select_child(&hybrid, &with, true).unwrap();
    assert_eq!(c.additional(), [DhGroup::ML_KEM_768]);
    let answer = child_answer(&c, 0x200);
    let back = child_accepts(&with, &answer).unwrap();
    assert_eq!(back.additional(), [DhGroup::ML_KEM_768]);
    // IKE_AUTH: neither KE nor ADDKE offered, nothing chosen.
    let auth = child_offer(&hybrid, ProtocolId::ESP, 0x100, false);
    assert!(auth[0]
        .transforms
        .iter()
        .all(|x| x.ty.0 < TransformType::ADDKE1.0 && x.ty != TransformType::DH));
    let c = select_child(&hybrid, &auth, false).unwrap();
    assert!(c.additional().is_empty() && c.dh == DhGroup::NONE);
    // Required on one side only: no proposal; optional: skipped.
    let plain = [esp("aes128gcm16-x25519")];
    let plain_offer = child_offer(&plain, ProtocolId::ESP, 0x100, true);
    assert!(select_child(&hybrid, &plain_offer, true).is_none());
    let optional = [esp("aes128gcm16-x25519-ke1_mlkem768-ke1_none")];
    let c = select_child(&optional, &plain_offer, true).unwrap();
    assert!(c.additional().is_empty());
    // An answer with ADDKE but no PFS group is refused.
    let mut bad = child_answer(&select_child(&hybrid, &with, true).unwrap(), 0x200);
    bad.transforms.retain(|x| x.ty != TransformType::DH);
    assert!(child_accepts(&with, &bad).is_none());
}

#[test]
fn esp_proposals_print_their_additional_key_exchanges() {
    let p = esp("aes256gcm16-x25519-ke1_mlkem768-ke2_ecp384-ke2_none");
    assert_eq!(
        p.to_string(),
        "aes256gcm16-curve25519-ke1_mlkem768-ke2_ecp384-ke2_none-noesn"
    );
    assert_eq!(esp(&p.to_string()), p);
    assert!(parse_esp_proposal("aes128gcm16-none-ke1_mlkem768").is_err());
}
