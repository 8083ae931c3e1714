//! Helpers shared by the known-answer test files.

use flowsec_crypto::Provider;

/// Bytes from a hex string as RFCs print them (whitespace ignored).
pub fn h(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    hex::decode(s).expect("valid hex in test vector")
}

/// Every backend on its own, by name.
pub fn providers() -> [(&'static str, Provider); 2] {
    [
        ("aws-lc", Provider::aws_lc()),
        ("rustcrypto", Provider::rustcrypto()),
    ]
}
