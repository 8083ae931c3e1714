//! Helpers shared by the known-answer test files.

use core::fmt::Display;

use flowsec_crypto::{CryptoError, Provider};

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

/// What `make` builds with every backend, by name. A backend without the
/// algorithm is left out, except RustCrypto, which must have every one;
/// any other error fails the test, naming `what`.
#[allow(dead_code)] // kat_kx and kat_prf build no transforms
pub fn from_each<T>(
    what: impl Display,
    make: impl Fn(&Provider) -> Result<T, CryptoError>,
) -> Vec<(&'static str, T)> {
    let mut found = Vec::new();
    for (name, provider) in providers() {
        match make(&provider) {
            Ok(t) => found.push((name, t)),
            Err(CryptoError::UnsupportedEncr(_) | CryptoError::UnsupportedInteg(_))
                if name != "rustcrypto" => {}
            Err(e) => panic!("{name}: {what}: {e}"),
        }
    }
    found
}
