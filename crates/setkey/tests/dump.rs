//! `setkey -D` / `-DP` style output, without keys.

mod common;

use std::time::Duration;

use common::{key, one};
use flowsec_crypto::Provider;
use flowsec_ipsec::lifetime::SaState;
use flowsec_ipsec::sa::SecurityAssociation;
use flowsec_setkey::{format_policy, format_sa, Command, SaLive};

fn sa(text: &str) -> flowsec_ipsec::sa::SaConfig {
    match one(text) {
        Command::Add(c) => c,
        other => panic!("{other:?}"),
    }
}

fn policy(text: &str) -> flowsec_ipsec::spd::Policy {
    match one(text) {
        Command::SpdAdd(p) => p,
        other => panic!("{other:?}"),
    }
}

#[test]
fn esp_sa_without_keys() {
    let ek = key(16, 1);
    let ak = key(20, 2);
    let c = sa(&format!(
        "add 10.0.11.41 10.0.11.33 esp 0x10001 -r 64 -u 5 -lh 3600 -bs 500\n\
         -E rijndael-cbc {ek} -A hmac-sha1 {ak};"
    ));
    let text = format_sa(&c, None);
    assert_eq!(
        text,
        "10.0.11.41 10.0.11.33\n\
         \tesp mode=transport spi=65537(0x00010001) reqid=5(0x00000005)\n\
         \tE: aes-cbc\n\
         \tA: hmac-sha1\n\
         \tseq=0x00000000 replay=64 flags=0x00000000 state=mature\n\
         \tdiff: 0(s)\thard: 3600(s)\tsoft: 0(s)\n\
         \tlast: never\thard: 0(s)\tsoft: 0(s)\n\
         \tcurrent: 0(bytes)\thard: 0(bytes)\tsoft: 500(bytes)\n\
         \tallocated: 0\thard: 0\tsoft: 0\n"
    );
    assert!(!text.contains(&ek[2..]) && !text.contains(&ak[2..]));
}

#[test]
fn esp_udp_ah_and_ipcomp_headers() {
    let c = sa(&format!(
        "add 192.0.2.1 198.51.100.2[31000] esp-udp 4096 -m tunnel -E aes-gcm-16 {};",
        key(20, 1)
    ));
    let text = format_sa(&c, None);
    assert!(text.starts_with(
        "192.0.2.1[4500] 198.51.100.2[31000]\n\tesp-udp mode=tunnel spi=4096(0x00001000)"
    ));
    assert!(text.contains("\tE: aes-gcm-16\n") && !text.contains("\tA:"));
    let c = sa(&format!(
        "add ::1 ::2 ah 300 -A hmac-sha256 {};",
        key(32, 1)
    ));
    let text = format_sa(&c, None);
    assert!(text.contains("\tah mode=transport") && text.contains("\tA: hmac-sha256\n"));
    assert!(!text.contains("\tE:"));
    let c = sa("add ::1 ::2 ipcomp 300 -C deflate;");
    assert!(format_sa(&c, None).contains("\tipcomp mode=transport spi=300(0x0000012c)"));
    assert!(format_sa(&c, None).contains("\tC: deflate\n"));
}

#[test]
fn live_sa_state() {
    let c = sa(&format!(
        "add 10.0.0.1 10.0.0.2 esp 4096 -E aes-gcm-16 {};",
        key(20, 1)
    ));
    let mut live =
        SecurityAssociation::new(&c, &Provider::rustcrypto(), Duration::from_secs(100)).unwrap();
    live.skip_seq_to(41).unwrap();
    let l = SaLive::of(&live, Duration::from_secs(130));
    assert_eq!(l.age, Duration::from_secs(30));
    assert_eq!(l.state, SaState::Mature);
    let text = format_sa(&c, Some(&l));
    assert!(text.contains("\tseq=0x00000029 replay=0"), "{text}");
    assert!(text.contains("\tdiff: 30(s)"));
}

#[test]
fn policies() {
    let p = policy(
        "spdadd 10.0.11.41/32[21] 10.0.11.0/24[any] tcp -P out ipsec\n\
         esp/tunnel/192.168.0.1-192.168.1.2/require ah/transport//unique:9;",
    );
    assert_eq!(
        format_policy(&p),
        "10.0.11.41[21] 10.0.11.0/24[any] tcp\n\
         \tout prio def ipsec\n\
         \tesp/tunnel/192.168.0.1-192.168.1.2/require\n\
         \tah/transport//unique:9\n"
    );
    let p = policy("spdadd ::/0 ::/0 icmp6 135,0 -P in prio 7 none;");
    assert_eq!(
        format_policy(&p),
        "::/0 ::/0 ipv6-icmp 135,0\n\tin prio def + 7 none\n"
    );
    let p = policy("spdadd 0.0.0.0/0 0.0.0.0/0 any -P fwd prio low - 2 discard;");
    assert_eq!(
        format_policy(&p),
        "0.0.0.0/0[any] 0.0.0.0/0[any] any\n\tfwd prio low - 2 discard\n"
    );
    let p = policy("spdadd 10.0.0.1 10.0.0.2 ipcomp -P out none;");
    assert!(format_policy(&p).starts_with("10.0.0.1[any] 10.0.0.2[any] ipcomp\n"));
}

#[test]
fn dumped_policies_parse_back_the_same() {
    for text in [
        "spdadd 10.0.11.41/32[21] 10.0.11.0/24[any] tcp -P out prio high + 4 ipsec esp/tunnel/192.168.0.1-192.168.1.2/use ipcomp/transport//require;",
        "spdadd ::/0 ::/0 icmp6 135,0 -P in prio -7 none;",
        "spdadd 10.0.0.0/8 10.1.0.0/16 udp -P fwd discard;",
    ] {
        let p = policy(text);
        let dumped = format_policy(&p);
        // Rebuild an spdadd from the dump's lines.
        let lines: Vec<&str> = dumped.lines().map(str::trim).collect();
        let again = format!("spdadd {} -P {} {};", lines[0], lines[1], lines[2..].join(" "));
        assert_eq!(policy(&again), p, "{again}");
    }
}

#[test]
fn a_per_resource_sa_shows_its_worker() {
    let c = sa(&format!(
        "add 192.0.2.1 192.0.2.2 esp 0x1101 -m tunnel -u 7 -cpu 3 -E aes-gcm-16 {};",
        key(20, 1)
    ));
    assert!(format_sa(&c, None)
        .contains("\tesp mode=tunnel spi=4353(0x00001101) reqid=7(0x00000007) cpu=3\n"));
}
