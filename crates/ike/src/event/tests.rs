use super::*;

fn ts(net: &str) -> TrafficSelector {
    let spec = crate::config::TsSpec::parse(net).unwrap();
    crate::ts::from_config(&[spec], "0.0.0.0".parse().unwrap()).remove(0)
}

/// The log lines are the ones flowsec wrote before events were typed.
#[test]
fn each_event_displays_as_its_log_line() {
    let gw = || "gw".to_string();
    let cases = [
        (
            IkeEvent::Established {
                name: gw(),
                unique_id: 1,
                local: "192.0.2.1".parse().unwrap(),
                local_id: Identity::from_ip("192.0.2.1".parse().unwrap()),
                remote: "192.0.2.2".parse().unwrap(),
                remote_id: Identity::Any,
            },
            "IKE_SA gw[1] established between 192.0.2.1[192.0.2.1]...192.0.2.2[%any]",
        ),
        (
            IkeEvent::Rekeyed {
                name: gw(),
                unique_id: 1,
                new_unique_id: 3,
                by_peer: true,
            },
            "IKE_SA gw[1] rekeyed by the peer as [3]",
        ),
        (
            IkeEvent::Deleted {
                name: gw(),
                unique_id: 2,
                by_peer: false,
            },
            "IKE_SA gw[2] deleted",
        ),
        (
            IkeEvent::AuthFailed {
                from: "192.0.2.2".parse().unwrap(),
                id: None,
                why: None,
            },
            "IKE_AUTH from 192.0.2.2 (?): authentication failed",
        ),
        (
            IkeEvent::ChildInstalled {
                child: "net".into(),
                reqid: 1,
                spi_in: 0xc000_0101,
                spi_out: 0xc000_0201,
                local_ts: vec![ts("10.1.0.0/24")],
                remote_ts: vec![ts("10.2.0.0/24"), ts("10.3.0.0/24")],
                resource: None,
            },
            "CHILD_SA net{1} established with SPIs c0000101_i c0000201_o and TS 10.1.0.0/24 === 10.2.0.0/24 10.3.0.0/24",
        ),
        (
            IkeEvent::ChildExpired { spi_in: 0x1234 },
            "CHILD_SA with SPI 0x00001234 reached its life_time: deleting",
        ),
        (
            IkeEvent::ChildSwitched { spi_in: 0x1234 },
            "CHILD_SA with SPI 0x00001234 reached its life_time: its successor takes over \
             (keep-old, no DELETE)",
        ),
        (
            IkeEvent::NegotiationFailed {
                name: gw(),
                unique_id: 4,
                remote: "192.0.2.2".parse().unwrap(),
                reason: NegotiationError::TooManyCookies,
            },
            "IKE_SA gw[4] with 192.0.2.2 failed: too many COOKIE requests",
        ),
    ];
    for (event, line) in cases {
        assert_eq!(event.to_string(), line);
    }
}

/// The events the two-peer tests do not make, against the lines.
#[test]
fn the_rarer_events_display_as_their_log_lines() {
    let gw = || "gw".to_string();
    let net = || "net".to_string();
    let a: SocketAddr = "192.0.2.1:4500".parse().unwrap();
    let b: SocketAddr = "192.0.2.9:4500".parse().unwrap();
    let ip: IpAddr = "192.0.2.2".parse().unwrap();
    let cases = [
        (
            IkeEvent::InitRefused {
                name: gw(),
                unique_id: 3,
                notify: NotifyType::NO_PROPOSAL_CHOSEN,
            },
            "IKE_SA gw[3]: IKE_SA_INIT answered with NO_PROPOSAL_CHOSEN (unauthenticated): still waiting",
        ),
        (
            IkeEvent::InitIgnored {
                name: gw(),
                unique_id: 3,
                why: InitResponseError::BadKe,
            },
            "IKE_SA gw[3]: bad KE payload in IKE_SA_INIT response: ignored",
        ),
        (
            IkeEvent::NegotiationFailed {
                name: gw(),
                unique_id: 3,
                remote: ip,
                reason: NegotiationError::NoSharedKey {
                    me: Identity::from_ip(ip),
                    peer: Identity::Any,
                },
            },
            "IKE_SA gw[3] with 192.0.2.2 failed: no shared key for 192.0.2.2 - %any in secrets",
        ),
        (
            IkeEvent::InitialContact {
                name: gw(),
                unique_id: 2,
            },
            "IKE_SA gw[2]: the peer made contact anew (INITIAL_CONTACT): deleting the stale SA",
        ),
        (
            IkeEvent::PeerMoved { from: a, to: b },
            "the peer moved from 192.0.2.1:4500 to 192.0.2.9:4500: its CHILD_SAs keep the old address (not supported yet)",
        ),
        (
            IkeEvent::PeerReports {
                name: gw(),
                unique_id: 2,
                notify: NotifyType::AUTHENTICATION_FAILED,
            },
            "IKE_SA gw[2]: peer reports AUTHENTICATION_FAILED",
        ),
        (
            IkeEvent::RekeyFailed {
                name: gw(),
                unique_id: 2,
                notify: NotifyType::TEMPORARY_FAILURE,
            },
            "IKE_SA gw[2] rekey failed: TEMPORARY_FAILURE",
        ),
        (
            IkeEvent::NoProposal { from: a },
            "IKE_SA_INIT from 192.0.2.1:4500: no acceptable proposal: NO_PROPOSAL_CHOSEN",
        ),
        (
            IkeEvent::ChildFailed {
                child: net(),
                reason: ChildError::TransportRefused,
            },
            "CHILD_SA net: the peer refused transport mode",
        ),
        (
            IkeEvent::ChildRetry {
                child: net(),
                group: DhGroup(19),
            },
            "CHILD_SA net: peer wants DH group ECP-256: retrying",
        ),
        (
            IkeEvent::AuthFailed {
                from: ip,
                id: Some(Identity::from_ip(ip)),
                why: Some(crate::cert::Rejection::Revoked),
            },
            "IKE_AUTH from 192.0.2.2 (192.0.2.2): authentication failed: certificate revoked (CRL)",
        ),
        (
            IkeEvent::CommandFailed(CommandError::NoGroup { conn: gw() }),
            "gw: no supported DH group in proposals",
        ),
        (
            IkeEvent::ConfigRestricted("gw: no IKE proposal left".into()),
            "gw: no IKE proposal left",
        ),
    ];
    for (event, line) in cases {
        assert_eq!(event.to_string(), line);
    }
}
