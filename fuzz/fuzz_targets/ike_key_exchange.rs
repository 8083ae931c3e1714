//! `cargo fuzz run ike_key_exchange`: see fuzz/README.md. The body is
//! [`common_kx::ike_key_exchange`], which
//! `crates/ike/tests/fuzz_kx_corpus.rs` replays on stable Rust.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;

#[path = "../common_kx.rs"]
mod common_kx;

fuzz_target!(|data: &[u8]| common_kx::ike_key_exchange(data));
