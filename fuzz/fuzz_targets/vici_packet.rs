//! `cargo fuzz run vici_packet`: see fuzz/README.md. The body is
//! [`common::vici_packet`], which `crates/ipsec/tests/fuzz_corpus.rs` can
//! replay on stable Rust.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;

#[path = "../common.rs"]
mod common;

fuzz_target!(|data: &[u8]| common::vici_packet(data));
