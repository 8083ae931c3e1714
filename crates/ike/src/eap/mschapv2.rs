//! MS-CHAPv2 (RFC 2759) and its key derivation for EAP (RFC 3079, as
//! strongSwan's `eap_mschapv2.c` builds the MSK): the NT password hash
//! (MD4 of the UTF-16LE password), the challenge hash, the 24-octet
//! NT-Response (three single-DES encryptions), the authenticator response
//! `S=…` and the 64-octet MSK that keys the IKE AUTH payloads (RFC 7296
//! §2.16). Pure functions; MD4 and DES from the crypto provider
//! ([`MsChapV2`]), SHA-1 from [`flowsec_crypto::fixed`].

use flowsec_crypto::fixed::sha1;
use flowsec_crypto::MsChapV2;
use zeroize::Zeroizing;

/// The 16-octet NT password hash: MD4(UTF-16LE(password)) (§8.3).
pub fn nt_password_hash(ms: &dyn MsChapV2, password: &[u8]) -> Zeroizing<[u8; 16]> {
    let text = String::from_utf8_lossy(password);
    let utf16: Zeroizing<Vec<u8>> =
        Zeroizing::new(text.encode_utf16().flat_map(u16::to_le_bytes).collect());
    ms.md4(&utf16[..])
}

/// The user name as it goes into the challenge hash: without a leading
/// `DOMAIN\` (§8.2, strongSwan's `extract_username`).
pub fn user_name(name: &[u8]) -> &[u8] {
    match name.iter().rposition(|&b| b == b'\\') {
        Some(i) => &name[i + 1..],
        None => name,
    }
}

/// ChallengeHash (§8.2): the first 8 octets of SHA-1(PeerChallenge |
/// AuthenticatorChallenge | UserName).
pub fn challenge_hash(peer: &[u8; 16], server: &[u8; 16], user: &[u8]) -> [u8; 8] {
    let h = sha1(&[peer, server, user_name(user)]);
    let mut out = [0u8; 8];
    out.copy_from_slice(&h[..8]);
    out
}

/// GenerateNTResponse (§8.1): ChallengeResponse (§8.5, the provider's)
/// of the challenge hash with the password hash.
pub fn nt_response(
    ms: &dyn MsChapV2,
    server: &[u8; 16],
    peer: &[u8; 16],
    user: &[u8],
    password: &[u8],
) -> [u8; 24] {
    ms.challenge_response(
        &challenge_hash(peer, server, user),
        &nt_password_hash(ms, password),
    )
}

const MAGIC1: &[u8] = b"Magic server to client signing constant";
const MAGIC2: &[u8] = b"Pad to make it do more than one iteration";

/// GenerateAuthenticatorResponse (§8.7): the 20 octets of `S=<hex>`.
pub fn authenticator_response(
    ms: &dyn MsChapV2,
    password: &[u8],
    nt_response: &[u8; 24],
    peer: &[u8; 16],
    server: &[u8; 16],
    user: &[u8],
) -> [u8; 20] {
    let hash_hash = ms.md4(&nt_password_hash(ms, password)[..]);
    let digest = sha1(&[&hash_hash[..], nt_response, MAGIC1]);
    sha1(&[&digest, &challenge_hash(peer, server, user), MAGIC2])
}

/// `S=` and the authenticator response in upper-case hex (42 octets).
pub fn authenticator_string(resp: &[u8; 20]) -> String {
    let mut s = String::from("S=");
    for b in resp {
        s.push_str(&format!("{b:02X}"));
    }
    s
}

/// The MSK (RFC 3079 §3.4 keys, as strongSwan and Windows build it):
/// MasterReceiveKey | MasterSendKey | 32 zero octets.
pub fn msk(ms: &dyn MsChapV2, password: &[u8], nt_response: &[u8; 24]) -> Zeroizing<Vec<u8>> {
    const M1: &[u8] = b"This is the MPPE Master Key";
    const M2: &[u8] =
        b"On the client side, this is the send key; on the server side, it is the receive key.";
    const M3: &[u8] =
        b"On the client side, this is the receive key; on the server side, it is the send key.";
    let hash_hash = ms.md4(&nt_password_hash(ms, password)[..]);
    let master = Zeroizing::new(sha1(&[&hash_hash[..], nt_response, M1]));
    let (pad1, pad2) = ([0u8; 40], [0xf2u8; 40]);
    let recv = Zeroizing::new(sha1(&[&master[..16], &pad1, M2, &pad2]));
    let send = Zeroizing::new(sha1(&[&master[..16], &pad1, M3, &pad2]));
    let mut out = Zeroizing::new(Vec::with_capacity(64));
    out.extend_from_slice(&recv[..16]);
    out.extend_from_slice(&send[..16]);
    out.extend_from_slice(&[0u8; 32]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h<const N: usize>(s: &str) -> [u8; N] {
        hex::decode(s).unwrap().try_into().unwrap()
    }

    fn ms() -> &'static dyn MsChapV2 {
        flowsec_crypto::Provider::fastest().mschapv2().unwrap()
    }

    /// RFC 2759 §9.2.
    #[test]
    fn rfc_2759_test_vectors() {
        let (user, password) = (b"User", b"clientPass");
        let server: [u8; 16] = h("5B5D7C7D7B3F2F3E3C2C602132262628");
        let peer: [u8; 16] = h("21402324255E262A28295F2B3A337C7E");
        assert_eq!(
            challenge_hash(&peer, &server, user),
            h::<8>("D02E4386BCE91226")
        );
        assert_eq!(
            *nt_password_hash(ms(), password),
            h::<16>("44EBBA8D5312B8D611474411F56989AE")
        );
        let nt = nt_response(ms(), &server, &peer, user, password);
        assert_eq!(
            nt,
            h::<24>("82309ECD8D708B5EA08FAA3981CD83544233114A3D85D6DF")
        );
        let auth = authenticator_response(ms(), password, &nt, &peer, &server, user);
        assert_eq!(
            authenticator_string(&auth),
            "S=407A5589115FD0D6209F510FE9C04566932CDA56"
        );
        // A domain before the user name does not count (§8.2).
        assert_eq!(
            challenge_hash(&peer, &server, b"EXAMPLE\\User"),
            h::<8>("D02E4386BCE91226")
        );
    }

    /// RFC 3079 §3.5.3's MasterKey (FDECE3717A8C838CB388E527AE3CDD31,
    /// from RFC 2759's NT-Response and "clientPass") through §3.4's
    /// GetAsymmetricStartKey with Magic2 and Magic3, as strongSwan puts
    /// them in the MSK; the expected halves were computed apart from this
    /// code (Python's hashlib) from that MasterKey.
    #[test]
    fn rfc_3079_keys() {
        let nt: [u8; 24] = h("82309ECD8D708B5EA08FAA3981CD83544233114A3D85D6DF");
        let k = msk(ms(), b"clientPass", &nt);
        assert_eq!(k.len(), 64);
        assert_eq!(&k[..16], &h::<16>("d5f0e9521e3ea9589645e86051c82226"));
        // Magic3's half is the RFC's own SendStartKey128.
        assert_eq!(&k[16..32], &h::<16>("8B7CDC149B993A1BA118CB153F56DCCB"));
        assert!(k[32..].iter().all(|&b| b == 0));
    }
}
