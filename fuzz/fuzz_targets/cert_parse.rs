//! `cargo fuzz run cert_parse`: see fuzz/README.md. The body is
//! [`common_cert::cert_parse`], which `crates/ike/tests/fuzz_cert_corpus.rs`
//! replays on stable Rust.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;

#[path = "../common_cert.rs"]
mod common_cert;

fuzz_target!(|data: &[u8]| common_cert::cert_parse(data));
