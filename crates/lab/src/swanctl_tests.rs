//! The generator's text for each shape the lab and the e2e scripts ask
//! for, and flowsec's parser reading every one (strongSwan reads them in
//! the e2e scripts).

use super::*;

fn conf(words: &str) -> String {
    let words: Vec<&str> = words.split_whitespace().collect();
    SwanctlConf::from_args(&words).unwrap().render()
}

/// Parsed by flowsec; the text back for more checks.
fn parses(text: &str) -> flowsec_ike::config::Config {
    flowsec_ike::config::parse("swanctl.conf", text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// tests/e2e/ike_lib.sh's gen_swanctl_conf: a site-to-site PSK
/// connection with CONN_ARGS and CHILD_ARGS, an EXTRA_CONN without
/// children, and the secret.
#[test]
fn site_to_site_psk() {
    let mut words: Vec<&str> = "--comment"
        .split(' ')
        .chain(["flowsec e2e ike: gwB (flowsec), responder"])
        .collect();
    words.extend(
        "conn gw --version 2 --local-addrs 192.0.2.2 --remote-addrs 192.0.2.1 \
         --proposals aes128gcm16-prfsha256-ecp256 --dpd-delay 2s --tcp-encap yes \
         --local-auth psk --local-id 192.0.2.2 --remote-auth psk --remote-id 192.0.2.1 \
         child net --local-ts 10.2.0.0/24,2001:db8:2::/64 --remote-ts 10.1.0.0/24,2001:db8:1::/64 \
         --esp-proposals aes128gcm16 --mode tunnel --start-action none --dpd-action clear \
         --rekey-time 1h --ipcomp yes --ah-proposals sha256-ecp256 --per-cpu-sas yes \
         conn attacker --version 2 --local-addrs 192.0.2.2 --remote-addrs 198.51.100.2 \
         --proposals aes128gcm16-prfsha256-ecp256 --auth psk --local-id 192.0.2.2 \
         --remote-id 198.51.100.2 secret ike-gw --id 192.0.2.1"
            .split_whitespace(),
    );
    words.extend(["--secret", "flowsec-e2e-ike psk, not a secret"]);
    let text = SwanctlConf::from_args(&words).unwrap().render();
    let want = "# flowsec e2e ike: gwB (flowsec), responder
connections {
    gw {
        version = 2
        local_addrs = 192.0.2.2
        remote_addrs = 192.0.2.1
        proposals = aes128gcm16-prfsha256-ecp256
        dpd_delay = 2s
        tcp_encap = yes
        local {
            auth = psk
            id = 192.0.2.2
        }
        remote {
            auth = psk
            id = 192.0.2.1
        }
        children {
            net {
                local_ts = 10.2.0.0/24,2001:db8:2::/64
                remote_ts = 10.1.0.0/24,2001:db8:1::/64
                esp_proposals = aes128gcm16
                mode = tunnel
                start_action = none
                dpd_action = clear
                rekey_time = 1h
                ipcomp = yes
                ah_proposals = sha256-ecp256
                per_cpu_sas = yes
            }
        }
    }
    attacker {
        version = 2
        local_addrs = 192.0.2.2
        remote_addrs = 198.51.100.2
        proposals = aes128gcm16-prfsha256-ecp256
        local {
            auth = psk
            id = 192.0.2.2
        }
        remote {
            auth = psk
            id = 198.51.100.2
        }
    }
}
secrets {
    ike-gw {
        id = 192.0.2.1
        secret = \"flowsec-e2e-ike psk, not a secret\"
    }
}
";
    assert_eq!(text, want);
    let c = parses(&text);
    assert_eq!(c.connections.len(), 2);
    let ch = &c.connections[0].children[0];
    assert!(ch.ipcomp && ch.per_cpu_sas, "{ch:?}");
    assert!(c.connections[1].children.is_empty());
}

/// tests/e2e/ike_cert.sh: certificates, a quoted identity, an RSA-PSS
/// auth, and fragmentation forced.
#[test]
fn site_to_site_certificates() {
    let text = conf(
        "conn gw --version 2 --local-addrs 192.0.2.1 --remote-addrs 192.0.2.2 \
         --proposals aes128gcm16-prfsha256-ecp256 --fragmentation force \
         --local-auth pubkey --local-certs marsCert.pem --local-id \"mars.flowsec.test\" \
         --remote-auth ike:rsa/pss-sha256 --remote-id sunpss.flowsec.test \
         --remote-cacerts caCert.pem \
         child gw --local-ts 10.1.0.0/24 --remote-ts 10.2.0.0/24 --esp-proposals aes128gcm16",
    );
    for want in [
        "            certs = marsCert.pem\n            id = \"mars.flowsec.test\"\n",
        "            auth = ike:rsa/pss-sha256\n",
        "            cacerts = caCert.pem\n        }\n",
        "        fragmentation = force\n",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
    // No secrets section without a secret.
    assert!(!text.contains("secrets"), "{text}");
    parses(&text);
}

/// tests/e2e/ike_rw.sh's gateway: pools, EAP from the road warriors.
#[test]
fn road_warrior_gateway() {
    let text = conf(
        "conn rw --version 2 --proposals aes128gcm16-prfsha256-ecp256 --pools rw4,rw6 \
         --local-auth pubkey --local-certs moonCert.pem --local-id moon.flowsec.test \
         --remote-auth eap-mschapv2 --remote-eap-id %any \
         child rw --local-ts 10.2.0.0/24,fd00:2::/64 --esp-proposals aes128gcm16 \
         pool rw4 --addrs 10.3.0.0/24 --dns 10.2.0.53 \
         pool rw6 --addrs fd00:3::/120 --dns fd00:2::53 \
         secret eap-carol --id carol --secret pw1",
    );
    let pools = "pools {
    rw4 {
        addrs = 10.3.0.0/24
        dns = 10.2.0.53
    }
    rw6 {
        addrs = fd00:3::/120
        dns = fd00:2::53
    }
}
secrets {
    eap-carol {
        id = carol
        secret = \"pw1\"
    }
}
";
    assert!(text.ends_with(pools), "{text}");
    assert!(text.contains("            eap_id = %any\n"), "{text}");
    let c = parses(&text);
    assert_eq!(c.connections[0].pools.len(), 2);
}

/// tests/e2e/ike_rw.sh's road warrior: virtual IPs of both families,
/// no local address, a second connection.
#[test]
fn road_warrior() {
    let text = conf(
        "conn home --version 2 --remote-addrs 192.0.2.1 --proposals aes128gcm16-prfsha256-ecp256 \
         --vips 0.0.0.0,:: --local-auth eap-mschapv2 --local-id carol@flowsec.test \
         --local-eap-id carol --remote-auth pubkey --remote-id moon.flowsec.test \
         child home --remote-ts 10.2.0.0/24,fd00:2::/64 --esp-proposals aes128gcm16 \
         conn bad --version 2 --remote-addrs 192.0.2.1 --proposals aes128gcm16-prfsha256-ecp256 \
         --vips 0.0.0.0 --local-auth eap-mschapv2 --local-id dave@flowsec.test \
         --local-eap-id dave --remote-auth pubkey --remote-id moon.flowsec.test \
         child bad --remote-ts 10.2.0.0/24 --esp-proposals aes128gcm16 \
         secret eap-carol --id carol --secret pw secret eap-dave --id dave --secret x",
    );
    assert!(text.contains("        vips = 0.0.0.0,::\n"), "{text}");
    let c = parses(&text);
    assert_eq!(c.connections[0].vips.len(), 2);
    assert_eq!(c.connections[1].name, "bad");
}

/// tests/e2e/reload.sh and scripts/soak.sh: several connections without
/// `version`, one secret for all, `start_action = start`, IKE and Child
/// SA rekey times; and the lab's `id-a`/`id-b` secret.
#[test]
fn several_connections_and_secret_ids() {
    let text = conf(
        "conn one --local-addrs 192.0.2.1 --remote-addrs 192.0.2.2 \
         --proposals aes128gcm16-prfsha256-ecp256 --rekey-time 60s \
         --auth psk --local-id 192.0.2.1 --remote-id 192.0.2.2 \
         child one-net --local-ts 10.1.0.0/24 --remote-ts 10.2.0.0/24 \
         --esp-proposals aes128gcm16 --rekey-time 1h --start-action start \
         conn two --local-addrs 192.0.2.1 --remote-addrs 192.0.2.2 \
         --proposals aes256gcm16-prfsha384-ecp384 --auth psk \
         child two-net --local-ts 2001:db8:1::/64 --remote-ts 2001:db8:2::/64 \
         --esp-proposals aes128gcm16,aes256gcm16 \
         secret ike-all --id-a 192.0.2.1 --id-b 192.0.2.2 --secret s",
    );
    assert!(!text.contains("version"), "{text}");
    assert!(
        text.contains("        id-a = 192.0.2.1\n        id-b = 192.0.2.2\n"),
        "{text}"
    );
    let c = parses(&text);
    assert_eq!(c.connections.len(), 2);
    assert_eq!(c.connections[0].rekey_time.as_secs(), 60);
}

/// The words `lab conf` refuses, each for its reason.
#[test]
fn refused_words() {
    let err = |w: &str| {
        let words: Vec<&str> = w.split_whitespace().collect();
        SwanctlConf::from_args(&words).unwrap_err()
    };
    assert_eq!(
        err("--proposals x"),
        ConfArgError::Outside("--proposals".into())
    );
    assert_eq!(err("child net"), ConfArgError::ChildOutsideConn);
    assert_eq!(err("conn"), ConfArgError::NoName("conn"));
    assert_eq!(
        err("conn a --dpd-delay"),
        ConfArgError::NoValue("--dpd-delay".into())
    );
    assert_eq!(
        err("conn a bogus"),
        ConfArgError::UnknownWord("bogus".into())
    );
    let e = err("conn a --esp-proposals aes128");
    assert_eq!(
        e.to_string(),
        "--esp-proposals: no such key in a conn section"
    );
    let e = err("conn a --local-bogus x");
    assert_eq!(
        e.to_string(),
        "--local-bogus: no such key in a local section"
    );
    let e = err("conn a child b --proposals x");
    assert_eq!(e.to_string(), "--proposals: no such key in a child section");
    let e = err("secret s --key x");
    assert_eq!(e.to_string(), "--key: no such key in a secret section");
    assert_eq!(
        SwanctlConf::from_args(&["conn", "a", "--local-id", "a\"b"]).unwrap_err(),
        ConfArgError::Unquotable {
            flag: "--local-id".into()
        }
    );
    assert_eq!(SwanctlConf::from_args::<&str>(&[]).unwrap().render(), "");
}
