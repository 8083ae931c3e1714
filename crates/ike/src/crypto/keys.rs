//! Key derivation (RFC 7296 §2.14, §2.17, §2.18) and the shared-key AUTH
//! value (§2.15).
//!
//! ```text
//! SKEYSEED = prf(Ni | Nr, g^ir)                                      §2.14
//! {SK_d | SK_ai | SK_ar | SK_ei | SK_er | SK_pi | SK_pr}
//!          = prf+(SKEYSEED, Ni | Nr | SPIi | SPIr)
//! SKEYSEED = prf(SK_d (old), g^ir (new) | Ni | Nr)                   §2.18
//! KEYMAT   = prf+(SK_d, [g^ir (new) |] Ni | Nr)                      §2.17
//! AUTH     = prf(prf(Shared Secret, "Key Pad for IKEv2"),
//!                <message octets> | Nonce | prf(SK_p, IDx'))         §2.15
//! ```
//!
//! Key lengths: SK_d, SK_pi and SK_pr are the PRF's preferred key length,
//! its output length (§2.13, 16 for the AES PRFs); SK_ai/SK_ar are the
//! integrity algorithm's key length (none with an AEAD); SK_ei/SK_er are
//! the cipher key plus salt or nonce (RFC 5282 §7.1, RFC 5930 §2,
//! RFC 7634 §3): [`Encr::keymat_len`].

use flowsec_crypto::suite::{integ_key_len, Encr};
use flowsec_crypto::{CryptoError, Prf, Provider};
use flowsec_wire::iana::{DhGroup, IntegId, PrfId};
use zeroize::Zeroizing;

use super::prf::{prf_plus, PRF_PLUS_MAX_ITERATIONS};

/// The four algorithms an IKE SA runs with (§3.3.2: transform types 1–4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IkeSuite {
    /// Encryption (or AEAD) and its key size.
    pub encr: Encr,
    /// Integrity; `IntegId::NONE` with an AEAD.
    pub integ: IntegId,
    /// Pseudorandom function.
    pub prf: PrfId,
    /// Key exchange group.
    pub dh: DhGroup,
}

/// The seven secrets of an IKE SA (§2.14). `Debug` shows only lengths.
pub struct IkeKeys {
    /// Derives Child SA keys and rekeyed IKE SAs.
    pub sk_d: Zeroizing<Vec<u8>>,
    /// Integrity, initiator to responder (empty with an AEAD).
    pub sk_ai: Zeroizing<Vec<u8>>,
    /// Integrity, responder to initiator (empty with an AEAD).
    pub sk_ar: Zeroizing<Vec<u8>>,
    /// Encryption (with salt/nonce), initiator to responder.
    pub sk_ei: Zeroizing<Vec<u8>>,
    /// Encryption (with salt/nonce), responder to initiator.
    pub sk_er: Zeroizing<Vec<u8>>,
    /// The initiator's AUTH computation.
    pub sk_pi: Zeroizing<Vec<u8>>,
    /// The responder's AUTH computation.
    pub sk_pr: Zeroizing<Vec<u8>>,
}

impl core::fmt::Debug for IkeKeys {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("IkeKeys")
            .field("sk_d_len", &self.sk_d.len())
            .field("sk_a_len", &self.sk_ai.len())
            .field("sk_e_len", &self.sk_ei.len())
            .field("sk_p_len", &self.sk_pi.len())
            .finish_non_exhaustive()
    }
}

/// The first 64 bits of each nonce key the AES PRFs (§2.14).
const AES_PRF_NONCE_PREFIX: usize = 8;

/// SKEYSEED = prf(Ni | Nr, g^ir) (§2.14). For AES128_XCBC and AES128_CMAC,
/// whose keys are 128 bits, the key is the first 64 bits of Ni and the
/// first 64 bits of Nr.
///
/// # Errors
/// `UnsupportedPrf` when `provider` lacks `prf`; `BadKeyLength` if a
/// nonce is shorter than 8 bytes with an AES PRF (the wire parser already
/// refuses nonces under 16).
pub fn skeyseed(
    provider: &Provider,
    prf: PrfId,
    ni: &[u8],
    nr: &[u8],
    g_ir: &[u8],
) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
    let p = prf_of(provider, prf)?;
    let mut key = Zeroizing::new(Vec::with_capacity(ni.len() + nr.len()));
    if matches!(prf, PrfId::AES128_XCBC | PrfId::AES128_CMAC) {
        let shortest = ni.len().min(nr.len());
        if shortest < AES_PRF_NONCE_PREFIX {
            return Err(CryptoError::BadKeyLength {
                expected: "nonces of at least 8 bytes",
                got: shortest,
            });
        }
        key.extend_from_slice(&ni[..AES_PRF_NONCE_PREFIX]);
        key.extend_from_slice(&nr[..AES_PRF_NONCE_PREFIX]);
    } else {
        key.extend_from_slice(ni);
        key.extend_from_slice(nr);
    }
    Ok(p.prf(&key, &[g_ir]))
}

/// SKEYSEED of a rekeyed IKE SA: prf(SK_d (old), g^ir (new) | Ni | Nr)
/// (§2.18), with the old SA's PRF (`prf`: SK_d is its key, as strongSwan
/// does) and the rekey exchange's nonces; the new SA's own PRF then runs
/// prf+ in [`ike_keys`]. `added`: the secrets of the additional key
/// exchanges, SK(1) | … | SK(n), which RFC 9370 §2.2.4 appends; empty
/// without (and for the key update after an IKE_INTERMEDIATE, §2.2.2,
/// whose SK(n) is `g_ir`).
pub fn rekey_skeyseed(
    provider: &Provider,
    prf: PrfId,
    old_sk_d: &[u8],
    g_ir: &[u8],
    (ni, nr): (&[u8], &[u8]),
    added: &[u8],
) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
    Ok(prf_of(provider, prf)?.prf(old_sk_d, &[g_ir, ni, nr, added]))
}

/// RFC 8784 §3: a key with a post-quantum preshared key mixed in,
/// prf+(PPK, key), as long as `key` (SK_d, SK_pi, SK_pr), with the IKE
/// SA's PRF (strongSwan's `derive_ppk_key`).
pub fn ppk_key(
    provider: &Provider,
    prf: PrfId,
    ppk: &[u8],
    key: &[u8],
) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
    let p = prf_of(provider, prf)?;
    check_prf_plus_len(p, key.len())?;
    Ok(prf_plus(p, ppk, key, key.len()))
}

/// The seven IKE SA keys from SKEYSEED (§2.14). `spi_i` and `spi_r` are
/// the header's SPIs (initiator's first, whoever we are).
pub fn ike_keys(
    provider: &Provider,
    suite: &IkeSuite,
    skeyseed: &[u8],
    ni: &[u8],
    nr: &[u8],
    spi_i: u64,
    spi_r: u64,
) -> Result<IkeKeys, CryptoError> {
    let p = prf_of(provider, suite.prf)?;
    // §2.14: SK_d, SK_pi and SK_pr are the PRF's preferred key length.
    let prf_len = p.preferred_key_len();
    let integ_len = integ_key_len(suite.integ);
    let encr_len = suite.encr.keymat_len();
    let total = 3 * prf_len + 2 * integ_len + 2 * encr_len;
    check_prf_plus_len(p, total)?;

    let mut seed = Zeroizing::new(Vec::with_capacity(ni.len() + nr.len() + 16));
    seed.extend_from_slice(ni);
    seed.extend_from_slice(nr);
    seed.extend_from_slice(&spi_i.to_be_bytes());
    seed.extend_from_slice(&spi_r.to_be_bytes());
    let keymat = prf_plus(p, skeyseed, &seed, total);

    let mut rest = &keymat[..];
    let mut take = |n: usize| {
        let (k, r) = rest.split_at(n);
        rest = r;
        Zeroizing::new(k.to_vec())
    };
    Ok(IkeKeys {
        sk_d: take(prf_len),
        sk_ai: take(integ_len),
        sk_ar: take(integ_len),
        sk_ei: take(encr_len),
        sk_er: take(encr_len),
        sk_pi: take(prf_len),
        sk_pr: take(prf_len),
    })
}

/// KEYMAT = prf+(SK_d, [g^ir (new)] | Ni | Nr [| SK(1) | … | SK(n)])
/// (§2.17; RFC 9370 §2.2.4 appends the secrets of the additional key
/// exchanges, `added`), `len` bytes. The caller cuts it: encryption then
/// integrity key for the initiator-to-responder SA, then the same for
/// the other direction.
///
/// # Errors
/// `UnsupportedPrf`; `BadLength` when `len` exceeds prf+'s 255 blocks.
pub fn child_keymat(
    provider: &Provider,
    prf: PrfId,
    sk_d: &[u8],
    (g_ir, added): (Option<&[u8]>, &[u8]),
    (ni, nr): (&[u8], &[u8]),
    len: usize,
) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
    let p = prf_of(provider, prf)?;
    check_prf_plus_len(p, len)?;
    let g_ir = g_ir.unwrap_or_default();
    let mut seed = Zeroizing::new(Vec::with_capacity(
        g_ir.len() + ni.len() + nr.len() + added.len(),
    ));
    seed.extend_from_slice(g_ir);
    seed.extend_from_slice(ni);
    seed.extend_from_slice(nr);
    seed.extend_from_slice(added);
    Ok(prf_plus(p, sk_d, &seed, len))
}

/// The AUTH payload's data for a shared key (§2.15, method 2):
/// `prf(prf(psk, "Key Pad for IKEv2"), real_message | peer_nonce |
/// prf(sk_p, id_body))`.
///
/// For the initiator's AUTH, `real_message` is its IKE_SA_INIT request,
/// `peer_nonce` Nr, `sk_p` SK_pi and `id_body` IDi' (the IDi payload body,
/// [`flowsec_wire::ike::Id::body`]); for the responder's, its IKE_SA_INIT
/// response, Ni, SK_pr and IDr'.
pub fn psk_auth(
    provider: &Provider,
    prf: PrfId,
    psk: &[u8],
    real_message: &[u8],
    peer_nonce: &[u8],
    sk_p: &[u8],
    id_body: &[u8],
) -> Result<Vec<u8>, CryptoError> {
    let octets = signed_octets(provider, prf, real_message, peer_nonce, sk_p, id_body)?;
    keyed_auth(provider, prf, psk, &octets)
}

/// A shared key's AUTH over `octets` (§2.15): `prf(prf(key, "Key Pad for
/// IKEv2"), octets)`, the signed octets with anything appended to them
/// (RFC 9242's IntAuth).
pub fn keyed_auth(
    provider: &Provider,
    prf: PrfId,
    key: &[u8],
    octets: &[u8],
) -> Result<Vec<u8>, CryptoError> {
    /// §2.15: the pad string, 17 ASCII characters without a terminator.
    const KEY_PAD: &[u8] = b"Key Pad for IKEv2";
    let p = prf_of(provider, prf)?;
    let pad_key = p.prf(key, &[KEY_PAD]);
    Ok(p.prf(&pad_key, &[octets]).to_vec())
}

/// The octets an AUTH payload signs (RFC 7296 §2.15):
/// `RealMessage | Nonce of the peer | prf(SK_p, ID')` — the
/// InitiatorSignedOctets or ResponderSignedOctets, as for [`psk_auth`].
pub fn signed_octets(
    provider: &Provider,
    prf: PrfId,
    real_message: &[u8],
    peer_nonce: &[u8],
    sk_p: &[u8],
    id_body: &[u8],
) -> Result<Vec<u8>, CryptoError> {
    let p = prf_of(provider, prf)?;
    let maced_id = p.prf(sk_p, &[id_body]);
    let mut out = Vec::with_capacity(real_message.len() + peer_nonce.len() + maced_id.len());
    out.extend_from_slice(real_message);
    out.extend_from_slice(peer_nonce);
    out.extend_from_slice(&maced_id);
    Ok(out)
}

/// The provider's PRF `id`, or `UnsupportedPrf`.
fn prf_of(provider: &Provider, id: PrfId) -> Result<&'static dyn Prf, CryptoError> {
    provider.prf(id).ok_or(CryptoError::UnsupportedPrf(id))
}

fn check_prf_plus_len(p: &dyn Prf, len: usize) -> Result<(), CryptoError> {
    if len > PRF_PLUS_MAX_ITERATIONS * p.output_len() {
        return Err(CryptoError::BadLength);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use flowsec_wire::iana::EncrId;

    fn p() -> Provider {
        Provider::fastest()
    }

    fn h(s: &str) -> Vec<u8> {
        hex::decode(s.replace([' ', '\n'], "")).unwrap()
    }

    /// NIST SP 800-135 IKEv2 KDF (CAVS 14.x `ikev2.rsp`), [SHA-1], Ni and
    /// Nr 64 bits, g^ir 256 bits, DKM 1056 bits, COUNT = 0 (as quoted in
    /// libreswan's programs/cavp; recomputed with Python's hmac module,
    /// which agrees).
    #[test]
    fn cavs_sha1_count0() {
        let gir = h("4b2c1f971981a8ad8d0abeafabf38cf75fc8349c148142465ed9c8b516b8be52");
        let gir_new = h("863f3c9d06efd39d2b907b97f8699e5dd5251ef64a2a176f36ee40c87d4f9330");
        let ni = h("32b50d5f4a3763f3");
        let nr = h("9206a04b26564cb1");
        let spi_i = 0x34c9e7c188868785;
        let spi_r = 0x3ff77d760d2b2199;
        let prf = PrfId::HMAC_SHA1;

        let seed = skeyseed(&p(), prf, &ni, &nr, &gir).unwrap();
        assert_eq!(
            &seed[..],
            &h("a9a7b222b59f8f48645f28a1db5b5f5d7479cba7")[..]
        );

        // DKM through prf+ directly: 1056 bits.
        let mut s = ni.clone();
        s.extend_from_slice(&nr);
        s.extend_from_slice(&u64::to_be_bytes(spi_i));
        s.extend_from_slice(&u64::to_be_bytes(spi_r));
        let dkm = prf_plus(p().prf(prf).unwrap(), &seed, &s, 132);
        let want_dkm = h(
            "a14293677cc80ff8f9cc0eee30d895da9d8f405666e30ef0dfcb63c634a46002
             a2a63080e514a062768b76606f9fa5e992204fc5a670bde3f10d6b027113936a
             5c55b648a194ae587b0088d52204b702c979fa280870d2ed41efa9c549fd1119
             8af1670b143d384bd275c5f594cf266b05ebadca855e4249520a441a81157435
             a7a56cc4",
        );
        assert_eq!(&dkm[..], &want_dkm[..]);

        // The same bytes through ike_keys: SK_d is the first 20.
        let suite = IkeSuite {
            encr: Encr {
                id: EncrId::AES_CBC,
                key_bits: 128,
            },
            integ: IntegId::HMAC_SHA1_96,
            prf,
            dh: DhGroup::MODP_2048,
        };
        let keys = ike_keys(&p(), &suite, &seed, &ni, &nr, spi_i, spi_r).unwrap();
        assert_eq!(&keys.sk_d[..], &want_dkm[..20]);
        assert_eq!(&keys.sk_ai[..], &want_dkm[20..40]);
        assert_eq!(&keys.sk_er[..], &want_dkm[76..92]);
        assert_eq!(&keys.sk_pr[..], &want_dkm[132 - 20..]);

        let sk_d = &want_dkm[..20];
        assert_eq!(
            &child_keymat(&p(), prf, sk_d, (None, &[]), (&ni, &nr), 132).unwrap()[..],
            &h(
                "8059e3ee8810e6c3a91bc8bcd2a7a41151b8d0e6ae239c7b38093ad85ef4c581
                1a8e7b5d1cdabd9560b2d5e092d1f24e2d4b85eccdf0ad0dc9abd94b51ee7181
                4ca6dbc8bb51b6309f5b9545c7eb35cf5580b1e521a8fe20754a2d883ba0c2cf
                285f524aea6545b33106bc03e614296d319d41d4b50b3f510b1c0a22f3e66499
                4d234cb4"
            )[..]
        );
        assert_eq!(
            &child_keymat(&p(), prf, sk_d, (Some(&gir_new), &[]), (&ni, &nr), 132).unwrap()[..],
            &h(
                "bb43244c1860ad65ee1e211ffe8bb3661750c8f89cb9f547df7f4fa61d373016
                28190e38c66232eab4b3ab14c400a5197dd3730ed4820a8a10394d51e1c04000
                52f63ebd36b0e7ef53aaed31eba4a5080d7d4b5666023a8bbb5ffb7857240f9a
                05884d1b7d2f933708450b7b3288f1fc863ab49fa901227cffc06e27899c7054
                d56fd74c"
            )[..]
        );
        assert_eq!(
            &rekey_skeyseed(&p(), prf, sk_d, &gir_new, (&ni, &nr), &[]).unwrap()[..],
            &h("63e81194946ebd05df7df5ebf5d8750056bf1f1d")[..]
        );
    }

    /// RFC 9370 §2.2.4: the secrets of the additional key exchanges
    /// follow the nonces, SK(0) | Ni | Nr | SK(1) | … | SK(n), in KEYMAT
    /// and in a rekey's SKEYSEED.
    #[test]
    fn additional_secrets_follow_the_nonces() {
        let prf = PrfId::HMAC_SHA2_256;
        let (sk_d, g, added) = ([7u8; 32], [1u8; 32], [2u8; 64]);
        let (ni, nr) = ([3u8; 32], [4u8; 32]);
        let with = child_keymat(&p(), prf, &sk_d, (Some(&g), &added), (&ni, &nr), 64).unwrap();
        let seed_i = [&g[..], &ni[..]].concat();
        let seed_r = [&nr[..], &added[..]].concat();
        let flat = child_keymat(&p(), prf, &sk_d, (None, &[]), (&seed_i, &seed_r), 64).unwrap();
        assert_eq!(*with, *flat);
        let without = child_keymat(&p(), prf, &sk_d, (Some(&g), &[]), (&ni, &nr), 64).unwrap();
        assert_ne!(*with, *without);
        let seed = rekey_skeyseed(&p(), prf, &sk_d, &g, (&ni, &nr), &added).unwrap();
        let flat = rekey_skeyseed(&p(), prf, &sk_d, &seed_i, (&seed_r, &[]), &[]).unwrap();
        assert_eq!(*seed, *flat);
    }

    // Inputs of the Python cross-checks below (expected values computed
    // with Python's hmac/hashlib and cryptography's CMAC, independently of
    // this code): Ni = 00..1f, Nr = 20..3f, g^ir = ab * 64,
    // SPIi = 0102030405060708, SPIr = 1112131415161718.
    fn inputs() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        ((0..32).collect(), (32..64).collect(), vec![0xab; 64])
    }
    const SPI_I: u64 = 0x0102_0304_0506_0708;
    const SPI_R: u64 = 0x1112_1314_1516_1718;

    /// AES-CBC-128 / HMAC-SHA2-256-128 / PRF-HMAC-SHA2-256: the split of
    /// prf+'s output, against Python (`hmac`, `hashlib`):
    /// `skeyseed = hmac(Ni+Nr, gir, sha256)`; `prf+(skeyseed,
    /// Ni+Nr+SPIi+SPIr)` cut at 32/32/32/16/16/32/32.
    #[test]
    fn ike_keys_split_sha256_python() {
        let (ni, nr, gir) = inputs();
        let suite = IkeSuite {
            encr: Encr {
                id: EncrId::AES_CBC,
                key_bits: 128,
            },
            integ: IntegId::HMAC_SHA2_256_128,
            prf: PrfId::HMAC_SHA2_256,
            dh: DhGroup::ECP_256,
        };
        let seed = skeyseed(&p(), suite.prf, &ni, &nr, &gir).unwrap();
        assert_eq!(
            &seed[..],
            &h("9a3294dbe0fa2a20cab5a965be7aeb48bb965218e0a26191dfdfad7c08e658b7")[..]
        );
        let k = ike_keys(&p(), &suite, &seed, &ni, &nr, SPI_I, SPI_R).unwrap();
        let want = [
            (
                &k.sk_d,
                "df5353a1acfde697af135c89fdf85bc22db24734fe98b094a64ec607ae303ef9",
            ),
            (
                &k.sk_ai,
                "2fd5ffaf41245a963a5493f69b6081f9d2ff1973a369de9e0b22a7a0fce41607",
            ),
            (
                &k.sk_ar,
                "5ad08f34172bbd9747a620f4a1d282f72f9bbb9ef1afbf8bd8881ef4636b903e",
            ),
            (&k.sk_ei, "32e40312dd41e320923273c42db0697d"),
            (&k.sk_er, "8b70805c52084315799bbc8554f197af"),
            (
                &k.sk_pi,
                "4183d408229e5819f35d0c82b58cf9370ab0a9c222f9237e6d4d51f19ac3e8e2",
            ),
            (
                &k.sk_pr,
                "45a1ca650284382f1ec856f8741637e3be5636f4c2c57ca200491cf137c7845a",
            ),
        ];
        for (i, (got, w)) in want.iter().enumerate() {
            assert_eq!(&got[..], &h(w)[..], "key {i}");
        }
        let d = format!("{k:?}");
        assert!(!d.contains("df5353") && !d.contains("223"), "{d}");
    }

    /// AES-GCM-16-256: SK_a empty, SK_e 36 bytes (key + 4-byte salt).
    #[test]
    fn ike_keys_aead_python() {
        let (ni, nr, gir) = inputs();
        let suite = IkeSuite {
            encr: Encr {
                id: EncrId::AES_GCM_16,
                key_bits: 256,
            },
            integ: IntegId::NONE,
            prf: PrfId::HMAC_SHA2_256,
            dh: DhGroup::CURVE25519,
        };
        let seed = skeyseed(&p(), suite.prf, &ni, &nr, &gir).unwrap();
        let k = ike_keys(&p(), &suite, &seed, &ni, &nr, SPI_I, SPI_R).unwrap();
        assert!(k.sk_ai.is_empty() && k.sk_ar.is_empty());
        assert_eq!(
            &k.sk_ei[..],
            &h("2fd5ffaf41245a963a5493f69b6081f9d2ff1973a369de9e0b22a7a0fce416075ad08f34")[..]
        );
        assert_eq!(
            &k.sk_er[..],
            &h("172bbd9747a620f4a1d282f72f9bbb9ef1afbf8bd8881ef4636b903e32e40312dd41e320")[..]
        );
        assert_eq!(
            &k.sk_pr[..],
            &h("f35d0c82b58cf9370ab0a9c222f9237e6d4d51f19ac3e8e245a1ca650284382f")[..]
        );
    }

    /// §2.14: with AES-CMAC-PRF the key is Ni[..8] | Nr[..8]. Python
    /// (`cryptography`): `CMAC(AES(Ni[:8] + Nr[:8]))` over g^ir, with
    /// Ni = a0..af, Nr = b0..bf.
    #[test]
    fn skeyseed_aes_prf_uses_64_bits_of_each_nonce() {
        let ni: Vec<u8> = (0xa0..0xb0).collect();
        let nr: Vec<u8> = (0xb0..0xc0).collect();
        let gir = vec![0xab; 64];
        let s = skeyseed(&p(), PrfId::AES128_CMAC, &ni, &nr, &gir).unwrap();
        assert_eq!(&s[..], &h("f2edbf21551cb47e0819532dfc91ca5f")[..]);
        // Only the first 8 bytes of each nonce matter.
        let mut ni2 = ni.clone();
        ni2[15] ^= 1;
        assert_eq!(
            skeyseed(&p(), PrfId::AES128_CMAC, &ni2, &nr, &gir).unwrap(),
            s
        );
        assert_ne!(
            skeyseed(&p(), PrfId::HMAC_SHA2_256, &ni2, &nr, &gir).unwrap(),
            { skeyseed(&p(), PrfId::HMAC_SHA2_256, &ni, &nr, &gir).unwrap() }
        );
        // XCBC likewise.
        let x = skeyseed(&p(), PrfId::AES128_XCBC, &ni, &nr, &gir).unwrap();
        let mut key = ni[..8].to_vec();
        key.extend_from_slice(&nr[..8]);
        assert_eq!(x, p().prf(PrfId::AES128_XCBC).unwrap().prf(&key, &[&gir]));
        assert!(skeyseed(&p(), PrfId::AES128_XCBC, &ni[..7], &nr, &gir).is_err());
    }

    /// §2.15 against Python: `hmac(hmac(psk, b"Key Pad for IKEv2"),
    /// msg + nonce + hmac(sk_p, id_body))`, all SHA-256.
    #[test]
    fn psk_auth_python() {
        let id_body = b"\x02\x00\x00\x00moon.strongswan.org";
        let msg: Vec<u8> = (0..100).collect();
        let auth = psk_auth(
            &p(),
            PrfId::HMAC_SHA2_256,
            b"secret",
            &msg,
            &[0x5a; 32],
            &[0x77; 32],
            id_body,
        )
        .unwrap();
        assert_eq!(
            auth,
            h("4493a5358050a1b40935dd4a1e72e246ee90f3c8d67d5f8d1aea8f5ec0ff1760")
        );
    }

    #[test]
    fn refusals() {
        assert_eq!(
            skeyseed(&p(), PrfId(99), b"n", b"n", b"g").unwrap_err(),
            CryptoError::UnsupportedPrf(PrfId(99))
        );
        // A provider without the PRF refuses it: the lookup is the
        // provider's, not a table of ours.
        let no_md5 = p().with_prfs(
            flowsec_crypto::backend::IKE_PRFS
                .iter()
                .copied()
                .filter(|x| x.id() != PrfId::HMAC_MD5)
                .collect(),
        );
        assert_eq!(
            psk_auth(&no_md5, PrfId::HMAC_MD5, b"k", b"m", b"n", b"s", b"i").unwrap_err(),
            CryptoError::UnsupportedPrf(PrfId::HMAC_MD5)
        );
        assert!(psk_auth(&no_md5, PrfId::HMAC_SHA1, b"k", b"m", b"n", b"s", b"i").is_ok());
        assert_eq!(
            child_keymat(
                &p(),
                PrfId::HMAC_SHA1,
                &[1; 20],
                (None, &[]),
                (b"n", b"n"),
                255 * 20 + 1
            )
            .unwrap_err(),
            CryptoError::BadLength
        );
        assert_eq!(
            child_keymat(
                &p(),
                PrfId::HMAC_SHA1,
                &[1; 20],
                (None, &[]),
                (b"n", b"n"),
                255 * 20
            )
            .unwrap()
            .len(),
            255 * 20
        );
    }
}
