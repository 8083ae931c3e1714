//! `cargo fuzz run ike_fragments`: see fuzz/README.md. The body is
//! [`common_ike::ike_fragments`], which `crates/ike/tests/fuzz_corpus.rs`
//! replays on stable Rust.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;

#[path = "../common_ike.rs"]
mod common_ike;

fuzz_target!(|data: &[u8]| common_ike::ike_fragments(data));
