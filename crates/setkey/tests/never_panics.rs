//! The fuzz-friendly guarantee: `parse` returns `Ok` or `Err` for any
//! input, never panics. Here over every prefix of a valid file, over
//! pseudo-random bytes, and over random splices of setkey words.

mod common;

use common::key;
use flowsec_setkey::{format_policy, format_sa, parse, Command};

fn valid_file() -> String {
    format!(
        "# all statement kinds\n\
         flush;\nspdflush;\n\
         add 192.0.2.1 192.0.2.2 esp 0x1001 -m tunnel -r 64 -u 3 -lh 60 -ls 50\n\
         \t-E rijndael-cbc {} -A hmac-sha256 {};\n\
         add 2001:db8::1 2001:db8::2 ah 4096 -A hmac-sha1 \"0123456789abcdefghij\";\n\
         add 192.0.2.1[4500] 192.0.2.2[4500] esp-udp 0x2002 -E aes-gcm-16 {};\n\
         add 192.0.2.1 192.0.2.2 ipcomp 0x3003 -C deflate -R;\n\
         get 192.0.2.1 192.0.2.2 esp 0x1001;\n\
         delete 192.0.2.1 192.0.2.2 esp 0x1001;\n\
         deleteall 192.0.2.1 192.0.2.2 ah;\n\
         dump esp;\n\
         spdadd 10.0.0.0/8[any] 10.1.0.0/16[80] tcp -P out prio def + 3 ipsec\n\
         \tipcomp/transport//use esp/tunnel/192.0.2.1-192.0.2.2/unique:7;\n\
         spdadd ::/0 ::/0 icmp6 135,0 -P in none;\n\
         spddelete ::/0 ::/0 icmp6 135,0 -P in;\n\
         spddump;\n",
        key(16, 1),
        key(32, 2),
        key(20, 3)
    )
}

/// Also exercise the dumps on whatever parses.
fn parse_and_dump(text: &str) {
    if let Ok(commands) = parse("fuzz", text) {
        for c in commands {
            match c {
                Command::Add(c) => drop(format_sa(&c, None)),
                Command::SpdAdd(p) => drop(format_policy(&p)),
                _ => {}
            }
        }
    }
}

#[test]
fn the_valid_file_parses() {
    assert_eq!(parse("f", &valid_file()).unwrap().len(), 14);
}

#[test]
fn every_prefix_of_a_valid_file() {
    let text = valid_file();
    for (i, _) in text.char_indices() {
        parse_and_dump(&text[..i]);
    }
    // And every suffix, which starts mid-statement.
    for (i, _) in text.char_indices() {
        parse_and_dump(&text[i..]);
    }
}

/// xorshift64*: deterministic, no dependencies.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[test]
fn pseudo_random_bytes() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let alphabet = b" \n\t;#\"[]/-,:.0123456789abcdefx\xc3\xa9";
    for round in 0..3000 {
        let len = (rng.next() % 200) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                let r = rng.next();
                if round % 2 == 0 {
                    r as u8
                } else {
                    alphabet[(r % alphabet.len() as u64) as usize]
                }
            })
            .collect();
        parse_and_dump(&String::from_utf8_lossy(&bytes));
    }
}

#[test]
fn random_splices_of_setkey_words() {
    let words: Vec<String> = valid_file()
        .split_whitespace()
        .map(str::to_string)
        .chain(
            [
                ";",
                "-E",
                "-A",
                "-C",
                "-r",
                "-m",
                "-P",
                "0",
                "255",
                "65536",
                "4096",
                "0x",
                "[",
                "]",
                "/",
                "-",
                "prio",
                "high",
                "+",
                "-2147483648",
                "icmp",
                "99,99",
                "esp/tunnel/::1-10.0.0.1/require",
                "unique:0",
                "\"",
                "#",
            ]
            .iter()
            .map(|s| s.to_string()),
        )
        .collect();
    let mut rng = Rng(42);
    for _ in 0..5000 {
        let n = (rng.next() % 30) as usize;
        let text: Vec<&str> = (0..n)
            .map(|_| words[(rng.next() % words.len() as u64) as usize].as_str())
            .collect();
        parse_and_dump(&text.join(" "));
    }
}
