//! Whole-message tests: an IKE_SA_INIT request laid out byte for byte as
//! strongSwan 5.9 sends it, and message-level round trips and length
//! checks.

use std::net::Ipv4Addr;

use super::*;

/// An IKE_SA_INIT request as strongSwan 5.9 sends it for
/// `proposals = aes128-sha256-ecp256` (payload order, transform order,
/// attribute and notify layout as in its captures), hand-built with fixed
/// values: SPIi c5d3a1e4b2f60718, the P-256 base point as KE data (RFC
/// 5903 §7: x || y), nonce a0..bf, made-up NAT-D hashes.
///
/// ```text
/// HDR(SPIi, SPIr=0, SA, 2.0, IKE_SA_INIT, I, MID 0, len 240)   0..28
/// SA { P#1 IKE: ENCR AES-CBC/128, INTEG SHA2-256-128,
///      PRF SHA2-256, DH 19 }                                   28..76
/// KE(19, 64 bytes)                                             76..148
/// Ni(32 bytes)                                                 148..184
/// N(NAT_DETECTION_SOURCE_IP)                                   184..212
/// N(NAT_DETECTION_DESTINATION_IP)                              212..240
/// ```
pub(crate) const IKE_SA_INIT: [u8; 240] = [
    // IKE header
    0xc5, 0xd3, 0xa1, 0xe4, 0xb2, 0xf6, 0x07, 0x18, 0x00, 0x00, 0x00, 0x00, // 0
    0x00, 0x00, 0x00, 0x00, 0x21, 0x20, 0x22, 0x08, 0x00, 0x00, 0x00, 0x00, // 12
    0x00, 0x00, 0x00, 0xf0, // 24
    // SA
    0x22, 0x00, 0x00, 0x30, 0x00, 0x00, 0x00, 0x2c, 0x01, 0x01, 0x00, 0x04, // 28
    0x03, 0x00, 0x00, 0x0c, 0x01, 0x00, 0x00, 0x0c, 0x80, 0x0e, 0x00, 0x80, // 40
    0x03, 0x00, 0x00, 0x08, 0x03, 0x00, 0x00, 0x0c, 0x03, 0x00, 0x00, 0x08, // 52
    0x02, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x08, 0x04, 0x00, 0x00, 0x13, // 64
    // KE
    0x28, 0x00, 0x00, 0x48, 0x00, 0x13, 0x00, 0x00, 0x6b, 0x17, 0xd1, 0xf2, // 76
    0xe1, 0x2c, 0x42, 0x47, 0xf8, 0xbc, 0xe6, 0xe5, 0x63, 0xa4, 0x40, 0xf2, // 88
    0x77, 0x03, 0x7d, 0x81, 0x2d, 0xeb, 0x33, 0xa0, 0xf4, 0xa1, 0x39, 0x45, // 100
    0xd8, 0x98, 0xc2, 0x96, 0x4f, 0xe3, 0x42, 0xe2, 0xfe, 0x1a, 0x7f, 0x9b, // 112
    0x8e, 0xe7, 0xeb, 0x4a, 0x7c, 0x0f, 0x9e, 0x16, 0x2b, 0xce, 0x33, 0x57, // 124
    0x6b, 0x31, 0x5e, 0xce, 0xcb, 0xb6, 0x40, 0x68, 0x37, 0xbf, 0x51, 0xf5, // 136
    // Nonce
    0x29, 0x00, 0x00, 0x24, 0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, // 148
    0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0, 0xb1, 0xb2, 0xb3, // 160
    0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xbb, 0xbc, 0xbd, 0xbe, 0xbf, // 172
    // N(NAT_DETECTION_SOURCE_IP)
    0x29, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x40, 0x04, 0x5a, 0xd0, 0xc3, 0xe3, // 184
    0xb0, 0xb4, 0xc2, 0xf7, 0xe4, 0xd1, 0xe7, 0xb2, 0xa9, 0xc1, 0xf0, 0xd2, // 196
    0xe3, 0xf4, 0xa5, 0xb6, // 208
    // N(NAT_DETECTION_DESTINATION_IP)
    0x00, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x40, 0x05, 0xc6, 0xf3, 0xb1, 0xa2, // 212
    0xd4, 0xe5, 0xf6, 0x07, 0x18, 0x29, 0x3a, 0x4b, 0x5c, 0x6d, 0x7e, 0x8f, // 224
    0x90, 0xa1, 0xb2, 0xc3, // 236
];

/// An IKE_AUTH request before encryption: the header as sent and the
/// inner payloads as a plaintext message (what the SK payload carries,
/// here left in the clear so that every interpreted payload type appears
/// in one message).
pub(crate) fn ike_auth_plain() -> Message {
    let ts = |a: [u8; 4], b: [u8; 4]| TrafficSelector {
        ip_protocol: 0,
        start_port: 0,
        end_port: 65535,
        start: Ipv4Addr::from(a).into(),
        end: Ipv4Addr::from(b).into(),
    };
    let esp = Proposal {
        num: 1,
        protocol: ProtocolId::ESP,
        spi: vec![0xc1, 0x2b, 0x3e, 0x44],
        transforms: vec![
            Transform {
                key_len: Some(128),
                ..Transform::new(TransformType::ENCR, crate::iana::EncrId::AES_GCM_16.0)
            },
            Transform::new(TransformType::ESN, EsnId::NO_ESN.0),
        ],
    };
    Message {
        header: Header {
            spi_i: 0xc5d3_a1e4_b2f6_0718,
            spi_r: 0x2f4a_9b0c_11d2_e3f4,
            next_payload: PayloadType::IDI,
            major_version: 2,
            minor_version: 0,
            exchange: ExchangeType::IKE_AUTH,
            initiator: true,
            response: false,
            message_id: 1,
            length: 0,
        },
        payloads: vec![
            Payload::IdI(Id {
                ty: IdType::FQDN,
                data: b"carol@strongswan.org".to_vec(),
            }),
            Payload::Notify(Notify::new(NotifyType::INITIAL_CONTACT, vec![])),
            Payload::IdR(Id {
                ty: IdType::IPV4_ADDR,
                data: vec![192, 0, 2, 1],
            }),
            Payload::Auth(Auth {
                method: AuthMethod::SHARED_KEY_MIC,
                data: vec![0x3c; 32],
            }),
            Payload::Sa(vec![esp]),
            Payload::TsI(vec![ts([10, 1, 0, 0], [10, 1, 255, 255])]),
            Payload::TsR(vec![ts([10, 2, 0, 0], [10, 2, 255, 255])]),
            Payload::Notify(Notify::new(NotifyType::MOBIKE_SUPPORTED, vec![])),
        ],
    }
}

/// An INFORMATIONAL request as sent: an SK payload whose first inner
/// payload is a Delete (body: 16-byte IV, 32 bytes, 16-byte ICV).
pub(crate) fn informational_sk() -> Message {
    Message {
        header: Header {
            exchange: ExchangeType::INFORMATIONAL,
            next_payload: PayloadType::SK,
            message_id: 7,
            response: true,
            ..ike_auth_plain().header
        },
        payloads: vec![Payload::Encrypted {
            first: PayloadType::DELETE,
            body: (0..64).collect(),
        }],
    }
}

#[test]
fn test_parse_strongswan_ike_sa_init() {
    let m = Message::parse(&IKE_SA_INIT).unwrap();
    let h = &m.header;
    assert_eq!(h.spi_i, 0xc5d3_a1e4_b2f6_0718);
    assert_eq!(h.spi_r, 0);
    assert_eq!(h.next_payload, PayloadType::SA);
    assert_eq!((h.major_version, h.minor_version), (2, 0));
    assert_eq!(h.exchange, ExchangeType::IKE_SA_INIT);
    assert!(h.initiator && !h.response);
    assert_eq!((h.message_id, h.length), (0, 240));
    assert_eq!(m.payloads.len(), 5);

    let Payload::Sa(proposals) = &m.payloads[0] else {
        panic!("{:?}", m.payloads[0]);
    };
    assert_eq!(proposals.len(), 1);
    let p = &proposals[0];
    assert_eq!((p.num, p.protocol), (1, ProtocolId::IKE));
    assert!(p.spi.is_empty());
    let t: Vec<_> = p
        .transforms
        .iter()
        .map(|t| (t.ty, t.id, t.key_len, t.unknown_attributes))
        .collect();
    assert_eq!(
        t,
        [
            (
                TransformType::ENCR,
                crate::iana::EncrId::AES_CBC.0,
                Some(128),
                false
            ),
            (
                TransformType::INTEG,
                crate::iana::IntegId::HMAC_SHA2_256_128.0,
                None,
                false
            ),
            (TransformType::PRF, PrfId::HMAC_SHA2_256.0, None, false),
            (TransformType::DH, DhGroup::ECP_256.0, None, false),
        ]
    );

    let Payload::Ke(ke) = &m.payloads[1] else {
        panic!("{:?}", m.payloads[1]);
    };
    assert_eq!(ke.group, DhGroup::ECP_256);
    assert_eq!(ke.data, IKE_SA_INIT[84..148]);
    assert_eq!(ke.data[..4], [0x6b, 0x17, 0xd1, 0xf2]);

    assert_eq!(m.payloads[2], Payload::Nonce((0xa0..=0xbf).collect()));

    for (i, ty, at) in [
        (3, NotifyType::NAT_DETECTION_SOURCE_IP, 192),
        (4, NotifyType::NAT_DETECTION_DESTINATION_IP, 220),
    ] {
        let Payload::Notify(n) = &m.payloads[i] else {
            panic!("{:?}", m.payloads[i]);
        };
        assert_eq!((n.protocol, n.ty), (0, ty));
        assert!(n.spi.is_empty());
        assert_eq!(n.data, IKE_SA_INIT[at..at + 20]);
    }
    assert_eq!(
        m.payloads.iter().map(Payload::ty).collect::<Vec<_>>(),
        [
            PayloadType::SA,
            PayloadType::KE,
            PayloadType::NONCE,
            PayloadType::NOTIFY,
            PayloadType::NOTIFY
        ]
    );
}

#[test]
fn test_emit_strongswan_ike_sa_init() {
    let m = Message::parse(&IKE_SA_INIT).unwrap();
    assert_eq!(m.emit(), IKE_SA_INIT);
    // Length and Next Payload come from the payloads.
    let mut m2 = m.clone();
    m2.header.length = 0;
    m2.header.next_payload = PayloadType::NONE;
    assert_eq!(m2.emit(), IKE_SA_INIT);
    // The SA payload body is sa.rs's proposal.
    assert_eq!(IKE_SA_INIT[32..76], sa::tests::IKE_PROPOSAL);
}

#[test]
fn test_round_trip() {
    for m in [ike_auth_plain(), informational_sk()] {
        let b = m.emit();
        let back = Message::parse(&b).unwrap();
        assert_eq!(back.payloads, m.payloads);
        assert_eq!(back.header.length as usize, b.len());
        assert_eq!(back.header.next_payload, first_type(&m.payloads));
        assert_eq!(back.emit(), b);
    }
    let b = informational_sk().emit();
    // SK's generic header: Next Payload DELETE, length 68.
    assert_eq!(b[28..32], [42, 0, 0, 68]);
    // An empty INFORMATIONAL (liveness check) in the clear: no payloads.
    let empty = Message {
        payloads: vec![],
        ..informational_sk()
    };
    let b = empty.emit();
    assert_eq!(b.len(), HEADER_LEN);
    assert_eq!(b[16], 0);
    assert!(Message::parse(&b).unwrap().payloads.is_empty());
}

#[test]
fn test_check_len() {
    for n in 0..IKE_SA_INIT.len() {
        let r = Message::parse(&IKE_SA_INIT[..n]);
        assert!(r.is_err(), "len {n}");
    }
    for n in 0..HEADER_LEN {
        assert_eq!(Message::parse(&IKE_SA_INIT[..n]), Err(IkeError::Truncated));
    }
    // Length says more than there is.
    assert_eq!(
        Message::parse(&IKE_SA_INIT[..239]),
        Err(IkeError::Truncated)
    );
    // A byte more than Length says.
    let mut long = IKE_SA_INIT.to_vec();
    long.push(0);
    assert_eq!(Message::parse(&long), Err(IkeError::BadLength));
    // Length consistent with the buffer, but a payload runs past it.
    let mut v = IKE_SA_INIT[..239].to_vec();
    v[27] = 239;
    assert_eq!(Message::parse(&v), Err(IkeError::BadLength));
    // The last notify says another payload follows.
    let mut v = IKE_SA_INIT.to_vec();
    v[212] = PayloadType::VENDOR.0;
    assert_eq!(Message::parse(&v), Err(IkeError::Truncated));
    // A nonce of 15 bytes.
    let mut v = IKE_SA_INIT.to_vec();
    v.drain(167..184);
    v[151] -= 17;
    v[27] -= 17;
    assert!(matches!(
        Message::parse(&v),
        Err(IkeError::Malformed(PayloadType::NONCE, _))
    ));
    // Major version 3 still parses: the core answers it.
    let mut v = IKE_SA_INIT.to_vec();
    v[17] = 0x30;
    assert_eq!(Message::parse(&v).unwrap().header.major_version, 3);
}

#[test]
fn test_errors() {
    assert_eq!(
        IkeError::UnsupportedCritical(PayloadType(99)).notify_type(),
        NotifyType::UNSUPPORTED_CRITICAL_PAYLOAD
    );
    assert_eq!(
        IkeError::BadLength.notify_type(),
        NotifyType::INVALID_SYNTAX
    );
    assert_eq!(
        IkeError::Malformed(PayloadType::SA, "Proposal Num 0").to_string(),
        "malformed SA payload: Proposal Num 0"
    );
    assert_eq!(
        IkeError::UnsupportedCritical(PayloadType(99)).to_string(),
        "unsupported critical payload PayloadType(99)"
    );
    assert_eq!(
        IkeError::TooManyPayloads.to_string(),
        "more than 64 payloads"
    );
}
