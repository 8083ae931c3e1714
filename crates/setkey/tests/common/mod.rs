//! Helpers shared by the test files.
#![allow(dead_code)]

use flowsec_setkey::{parse, Command, ParseError};

/// `n` bytes of key as `0x` hex, distinct per `seed` and free of DES weak
/// keys and repeated 3DES thirds.
pub fn key(n: usize, seed: u8) -> String {
    let mut s = String::from("0x");
    for i in 0..n {
        let b = (i as u8)
            .wrapping_mul(37)
            .wrapping_add(seed)
            .wrapping_add(i as u8 / 8);
        s.push_str(&format!("{b:02x}"));
    }
    s
}

pub fn ok(text: &str) -> Vec<Command> {
    match parse("test.conf", text) {
        Ok(c) => c,
        Err(e) => panic!("{e}\n--- input ---\n{text}"),
    }
}

pub fn one(text: &str) -> Command {
    let mut c = ok(text);
    assert_eq!(c.len(), 1, "{c:?}");
    c.remove(0)
}

pub fn err(text: &str) -> ParseError {
    match parse("test.conf", text) {
        Ok(c) => panic!("parsed: {c:?}\n--- input ---\n{text}"),
        Err(e) => e,
    }
}

/// The error as `LINE:COL: message`.
pub fn at(text: &str) -> String {
    let e = err(text);
    format!("{}:{}: {}", e.line, e.column, e.kind)
}
