//! `cargo fuzz run esp_inbound`: see fuzz/README.md. The body is
//! [`common::esp_inbound`], which `crates/ipsec/tests/fuzz_corpus.rs` replays on
//! stable Rust.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;

#[path = "../common.rs"]
mod common;

fuzz_target!(|data: &[u8]| common::esp_inbound(data));
