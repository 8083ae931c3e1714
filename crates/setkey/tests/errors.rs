//! Errors name the exact line and column, and the file.

mod common;

use common::{at, err, key};
use flowsec_setkey::ErrorKind;

const AES: &str = "0x000102030405060708090a0b0c0d0e0f";

#[test]
fn display_names_file_line_and_column() {
    let e = err("flush;\nadd 10.0.0.1 10.0.0.2 esp 4096 -E foo 0x00;");
    assert_eq!(
        e.to_string(),
        "test.conf:2:35: unknown algorithm 'foo' for -E"
    );
}

#[test]
fn unknown_and_unsupported_algorithms() {
    assert_eq!(
        at("add 10.0.0.1 10.0.0.2 ah 4096 -A hmac-sha3 0x00;"),
        "1:34: unknown algorithm 'hmac-sha3' for -A"
    );
    assert_eq!(
        at("add 10.0.0.1 10.0.0.2 ipcomp 4096 -C lzs;"),
        "1:38: algorithm 'lzs' for -C is not supported: only deflate (RFC 2394) is implemented"
    );
    assert!(matches!(
        err("add 10.0.0.1 10.0.0.2 esp 4096 -E des-deriv 0x0011223344556677;").kind,
        ErrorKind::UnsupportedAlgorithm { .. }
    ));
}

#[test]
fn bad_key_length_points_at_the_key() {
    assert_eq!(
        at("add 10.0.0.1 10.0.0.2 esp 4096\n  -E aes-cbc 0x00010203;"),
        "2:14: bad key for aes-cbc: bad key length: 4 bytes, expected 16, 24 or 32"
    );
    // aes-gcm-16 keys include the 4-byte salt: 16 bytes alone is short.
    let e = err(&format!(
        "add 10.0.0.1 10.0.0.2 esp 4096 -E aes-gcm-16 {AES};"
    ));
    assert!(
        matches!(
            e.kind,
            ErrorKind::BadKey {
                algorithm: "aes-gcm-16",
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(
        at(&format!(
            "add 10.0.0.1 10.0.0.2 ah 4096 -A hmac-sha256 {};",
            key(20, 1)
        )),
        "1:46: bad key for hmac-sha256: bad key length: 20 bytes, expected 32"
    );
    // 3DES with K1 = K2 is weak.
    let weak = format!("0x{}{}", "0123456789abcdef".repeat(2), "fedcba9876543210");
    assert!(err(&format!(
        "add 10.0.0.1 10.0.0.2 esp 4096 -E 3des-cbc {weak} -A hmac-sha1 {};",
        key(20, 1)
    ))
    .to_string()
    .contains("weak key"));
}

#[test]
fn bad_hex_points_at_the_digit() {
    assert_eq!(
        at("add 10.0.0.1 10.0.0.2 esp 4096 -E aes-cbc 0x0001020g;"),
        "1:52: bad hex key: not a hex digit"
    );
    assert_eq!(
        at("add 10.0.0.1 10.0.0.2 esp 4096 -E aes-cbc 0x000;"),
        "1:45: bad hex key: odd number of hex digits"
    );
    assert_eq!(
        at("add 10.0.0.1 10.0.0.2 esp 4096 -E aes-cbc secret;"),
        "1:43: bad key: a key is 0x followed by hex digits, or a \"quoted string\""
    );
}

#[test]
fn missing_semicolon() {
    assert_eq!(
        at(&format!(
            "add 10.0.0.1 10.0.0.2 esp 4096 -E aes-cbc {AES}\nadd 10.0.0.1 10.0.0.2 esp 4097 -E aes-cbc {AES};"
        )),
        "1:77: missing ';' before 'add'"
    );
    assert_eq!(at("flush"), "1:6: missing ';' before 'end of input'");
    assert_eq!(
        at("spdadd 10.0.0.1 10.0.0.2 any -P out ipsec esp/transport//require\nspdflush;"),
        "1:65: missing ';' before 'spdflush'"
    );
    assert_eq!(
        at("spdadd 10.0.0.1 10.0.0.2 any -P out none\nspdflush;"),
        "1:41: missing ';' before 'spdflush'"
    );
}

#[test]
fn unknown_option_and_command() {
    assert_eq!(
        at(&format!(
            "add 10.0.0.1 10.0.0.2 esp 4096 -x 1 -E aes-cbc {AES};"
        )),
        "1:32: unknown option '-x'"
    );
    assert_eq!(
        at("\n\n   frobnicate;"),
        "3:4: unknown command 'frobnicate'"
    );
    assert_eq!(
        at(&format!(
            "add 10.0.0.1 10.0.0.2 esp 4096 -r 64 -r 64 -E aes-cbc {AES};"
        )),
        "1:38: option '-r' given twice"
    );
    assert_eq!(
        at("spdadd 10.0.0.1 10.0.0.2 any -X out none;"),
        "1:30: unknown option '-X'"
    );
}

#[test]
fn bad_addresses() {
    assert_eq!(
        at("add myhost.example.com 10.0.0.2 ah 4096 -A null;"),
        "1:5: bad address 'myhost.example.com' (numeric IPv4 or IPv6 expected)"
    );
    assert_eq!(
        at("spdadd 10.0.0.0/33 10.0.0.2 any -P out none;"),
        "1:16: bad prefix length '/33'"
    );
    assert_eq!(
        at("add 10.0.0.1 ::2 ah 4096 -A hmac-md5 0x00;"),
        "1:14: SA addresses mix IPv4 and IPv6"
    );
    assert_eq!(
        at("add -6 10.0.0.1 10.0.0.2 ah 4096 -A hmac-md5 0x00;"),
        "1:8: address family not allowed by -6"
    );
    assert_eq!(
        at("spdadd 10.0.0.0/8 ::/0 any -P out none;"),
        "1:19: selector mix IPv4 and IPv6"
    );
}

#[test]
fn ports_only_where_the_protocol_has_them() {
    assert_eq!(
        at(&format!(
            "add 10.0.0.1[500] 10.0.0.2 esp 4096 -E aes-cbc {AES};"
        )),
        "1:13: a port is not allowed with esp"
    );
    assert_eq!(
        at("spdadd 10.0.0.1[21] 10.0.0.2[any] any -P out none;"),
        "1:16: a port is not allowed with any"
    );
    assert_eq!(
        at("spdadd 10.0.0.1 10.0.0.2[7] icmp -P out none;"),
        "1:25: a port is not allowed with icmp"
    );
    assert_eq!(
        at("spdadd 10.0.0.1[70000] 10.0.0.2 udp -P out none;"),
        "1:16: bad port '[70000]' (a number 0..=65535 or 'any')"
    );
}

#[test]
fn replay_window_out_of_range() {
    for (r, col) in [("16", 35), ("4097", 35), ("-1", 35)] {
        let e = err(&format!(
            "add 10.0.0.1 10.0.0.2 esp 4096 -r {r} -E aes-cbc {AES};"
        ));
        assert_eq!((e.line, e.column), (1, col), "{e}");
    }
    assert_eq!(
        at(&format!(
            "add 10.0.0.1 10.0.0.2 esp 4096 -r 31 -E aes-cbc {AES};"
        )),
        "1:35: replay window 31 outside 32..=4096 packets (or 0 to disable)"
    );
    assert_eq!(
        at("add 10.0.0.1 10.0.0.2 ipcomp 4096 -r 64 -C deflate;"),
        "1:35: option -r does not apply to ipcomp"
    );
}

#[test]
fn protocol_and_algorithm_combinations() {
    assert_eq!(
        at(&format!(
            "add 10.0.0.1 10.0.0.2 esp 4096 -E aes-gcm-16 {} -A hmac-sha1 {};",
            key(20, 1),
            key(20, 2)
        )),
        "1:89: aes-gcm-16 is a combined-mode cipher and takes no -A (RFC 4303 §3.2)"
    );
    assert_eq!(
        at(&format!(
            "add 10.0.0.1 10.0.0.2 ipcomp 4096 -E aes-cbc {AES};"
        )),
        "1:35: option -E does not apply to ipcomp"
    );
    assert_eq!(
        at("add 10.0.0.1 10.0.0.2 ipcomp 4096 -A hmac-md5 0x00;"),
        "1:35: option -A does not apply to ipcomp"
    );
    assert_eq!(
        at(&format!("add 10.0.0.1 10.0.0.2 ah 4096 -E aes-cbc {AES};")),
        "1:31: option -E does not apply to ah"
    );
    assert_eq!(
        at("add 10.0.0.1 10.0.0.2 esp 4096 -m tunnel;"),
        "1:41: esp needs -E"
    );
    assert_eq!(
        at("add 10.0.0.1 10.0.0.2 esp 4096 -E null;"),
        "1:1: SA refused: invalid combination: AEAD with integrity, or NULL without integrity"
    );
    assert_eq!(
        at("add 10.0.0.1 10.0.0.2 ah 4096 -A null;"),
        "1:1: SA refused: AH needs an integrity algorithm"
    );
    assert_eq!(
        at("add 10.0.0.1 10.0.0.2 esp 4096 -E null 0x00;"),
        "1:40: null takes no key"
    );
}

#[test]
fn spi_and_cpi_ranges() {
    assert_eq!(
        at("add 10.0.0.1 10.0.0.2 ah 255 -A hmac-md5 0x00;"),
        "1:26: bad SPI 255: SPIs 0..=255 are reserved (RFC 4303 §2.1)"
    );
    assert!(err("add 10.0.0.1 10.0.0.2 ah 0 -A hmac-md5 0x00;")
        .to_string()
        .contains("reserved"));
    assert_eq!(
        at("add 10.0.0.1 10.0.0.2 ah 0x100000000 -A hmac-md5 0x00;"),
        "1:26: bad SPI 4294967296: an SPI is 32 bits"
    );
    assert!(err("add 10.0.0.1 10.0.0.2 ipcomp 2 -C deflate;")
        .to_string()
        .contains("CPI"));
    assert!(err("add 10.0.0.1 10.0.0.2 ipcomp 0x10000 -C deflate;")
        .to_string()
        .contains("CPI"));
    assert_eq!(at("get 10.0.0.1 10.0.0.2 esp 12x;"), "1:27: bad SPI '12x'");
}

#[test]
fn duplicates_within_a_file() {
    let k = key(16, 1);
    assert_eq!(
        at(&format!(
            "add 10.0.0.1 10.0.0.2 ah 300 -A hmac-md5 {k};\n\
             add 10.0.0.9 10.0.0.2 ah 300 -A hmac-md5 {k};"
        )),
        "2:1: this SA (protocol, SPI, destination) is added twice"
    );
    assert_eq!(
        at("spdadd 10.0.0.1 10.0.0.2 any -P out none;\n\n  spdadd 10.0.0.1 10.0.0.2 any -P out discard;"),
        "3:3: policy refused: a policy with the same selector and direction exists"
    );
    assert!(
        at("spdadd ::/0 ::/0 icmp6 135,0 -P in none;\nspdadd ::/0 ::/0 any -P in discard;")
            .starts_with("2:1: policy refused: overlaps")
    );
    // A different priority makes the order explicit: fine.
    common::ok(
        "spdadd ::/0 ::/0 icmp6 135,0 -P in prio 10 none;\nspdadd ::/0 ::/0 any -P in discard;",
    );
}

#[test]
fn policy_rule_errors() {
    assert_eq!(
        at("spdadd 10.0.0.0/8 10.1.0.0/16 any -P out ipsec esp/tunnel/192.0.2.1-2001:db8::1/require;"),
        "1:69: tunnel endpoints mix IPv4 and IPv6"
    );
    assert_eq!(
        at("spdadd 10.0.0.0/8 10.1.0.0/16 any -P out ipsec esp/tunnel//require;"),
        "1:48: bad rule 'esp/tunnel//require': tunnel mode needs src-dst endpoints"
    );
    assert!(at(
        "spdadd 10.0.0.1 10.0.0.2 any -P out ipsec esp/transport/10.0.0.1-10.0.0.2/require;"
    )
    .contains("transport mode"));
    assert!(
        at("spdadd 10.0.0.1 10.0.0.2 any -P out ipsec esp/transport//unique:40000;")
            .contains("1..=32767")
    );
    assert!(at("spdadd 10.0.0.1 10.0.0.2 any -P out ipsec esp/transport//require esp/tunnel/1.1.1.1-2.2.2.2/use;")
        .contains("twice"));
    assert_eq!(
        at("spdadd 10.0.0.1 10.0.0.2 any -P out ipsec;"),
        "1:42: expected a rule (protocol/mode/src-dst/level), found ';'"
    );
    assert_eq!(
        at("spdadd 10.0.0.1 10.0.0.2 any -P sideways none;"),
        "1:33: bad direction 'sideways' (in, out or fwd)"
    );
    assert_eq!(
        at("spdadd 10.0.0.1 10.0.0.2 any -P out allow;"),
        "1:37: bad policy 'allow' (none, discard or ipsec)"
    );
    assert_eq!(
        at("spdadd 10.0.0.1 10.0.0.2 any -P out prio medium none;"),
        "1:42: bad priority 'medium'"
    );
    assert_eq!(
        at("spdadd 10.0.0.1 10.0.0.2 frob -P out none;"),
        "1:26: bad upper-layer protocol 'frob'"
    );
}

#[test]
fn unsupported_features_are_named() {
    for (text, what) in [
        ("getspi 10.0.0.1 10.0.0.2 esp 0;", "getspi"),
        ("spdupdate 10.0.0.1 10.0.0.2 any -P out none;", "spdupdate"),
        ("add 10.0.0.1 10.0.0.2 tcp 0x1000 -A tcp-md5 \"x\";", "tcp"),
        ("spdadd tagged \"t\" -P out none;", "tagged"),
        (
            "add 10.0.0.1 10.0.0.2 esp-udp 10.9.9.9 4096 -E null;",
            "esp-udp NAT-OA",
        ),
    ] {
        match err(text).kind {
            ErrorKind::Unsupported { what: w, .. } => assert_eq!(w, what),
            other => panic!("{text}: {other:?}"),
        }
    }
}

#[test]
fn truncated_statements() {
    assert_eq!(
        at("add 10.0.0.1"),
        "1:13: expected an address at end of input"
    );
    assert_eq!(
        at("add 10.0.0.1 10.0.0.2 esp 4096 -E"),
        "1:34: expected an algorithm at end of input"
    );
    assert_eq!(
        at("add 10.0.0.1 10.0.0.2 esp 4096 -E aes-cbc;"),
        "1:42: expected a key, found ';'"
    );
    assert_eq!(at("add 10.0.0.1 \"x"), "1:14: unterminated quoted string");
    assert_eq!(
        at(&format!(
            "add 10.0.0.1 10.0.0.2 esp 4096 -ls 10 -lh 5 -E aes-cbc {AES};"
        )),
        "1:32: soft lifetime exceeds hard lifetime (-ls > -lh)"
    );
}
