//! `cargo fuzz run eap`: see fuzz/README.md. The body is
//! [`common_eap::eap`], which `crates/ike/tests/fuzz_eap_corpus.rs`
//! replays on stable Rust.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;

#[path = "../common_eap.rs"]
mod common_eap;

fuzz_target!(|data: &[u8]| common_eap::eap(data));
