//! The hashes IKEv2 fixes instead of negotiating: they have no transform
//! id, so they are not a [`Provider`](crate::Provider)'s to choose, and
//! they are not secret-keyed transforms of an SA. They live here so that
//! the protocol crate holds no algorithm code or algorithm crates.
//!
//! - SHA-1 of the NAT_DETECTION notifies (RFC 7296 §2.23).
//! - HMAC-SHA-256 of a responder's stateless cookies (§2.6 leaves the
//!   function to the responder; strongSwan uses the same).
//! - SHA-256 of a request, to tell a retransmission (§2.1) from another
//!   request with the same message ID.
//!
//! All RustCrypto, as the IKE crate had them.

use hmac::digest::{Digest, Mac};
use hmac::{Hmac, KeyInit};
use sha1::Sha1;
use sha2::Sha256;

/// SHA-1 of the concatenation of `parts`.
pub fn sha1(parts: &[&[u8]]) -> [u8; 20] {
    let mut h = Sha1::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// SHA-256 of the concatenation of `parts`.
pub fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// HMAC-SHA-256 (RFC 2104) under `key` of the concatenation of `parts`.
/// The tag is returned as it is: callers use it where it is public (a
/// cookie), and compare it in constant time.
pub fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    // Invariant: HMAC takes keys of any length (RFC 2104 §2), so
    // `new_from_slice` cannot fail.
    let mut mac =
        <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes keys of any length");
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(s: &str) -> Vec<u8> {
        hex::decode(s).unwrap()
    }

    /// FIPS 180 "abc", whole and split.
    #[test]
    fn sha_abc() {
        let want1 = h("a9993e364706816aba3e25717850c26c9cd0d89d");
        let want256 = h("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(&sha1(&[b"abc"])[..], &want1[..]);
        assert_eq!(&sha1(&[b"a", b"", b"bc"])[..], &want1[..]);
        assert_eq!(&sha256(&[b"abc"])[..], &want256[..]);
        assert_eq!(&sha256(&[b"ab", b"c"])[..], &want256[..]);
    }

    /// RFC 4231 test cases 2 and 6 (a 131-byte key), and a 64-byte key as
    /// the cookie secret is, split into parts.
    #[test]
    fn hmac_sha256_rfc4231() {
        assert_eq!(
            &hmac_sha256(b"Jefe", &[b"what do ya want ", b"for nothing?"])[..],
            &h("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")[..]
        );
        assert_eq!(
            &hmac_sha256(
                &[0xaa; 131],
                &[b"Test Using Larger Than Block-Size Key - Hash Key First"]
            )[..],
            &h("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")[..]
        );
        let key = [7u8; 64];
        assert_eq!(
            hmac_sha256(&key, &[b"abc", b"def"]),
            hmac_sha256(&key, &[b"abcdef"])
        );
    }
}
