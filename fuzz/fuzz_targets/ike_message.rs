//! `cargo fuzz run ike_message`: see fuzz/README.md. The body is
//! [`common::ike_message`], which `crates/ipsec/tests/fuzz_corpus.rs` can
//! replay on stable Rust.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;

#[path = "../common.rs"]
mod common;

fuzz_target!(|data: &[u8]| common::ike_message(data));
