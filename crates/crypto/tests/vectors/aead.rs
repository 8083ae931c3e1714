//! Known-answer vectors for the ESP AEADs, with their sources. Every vector
//! transcribed from a document was checked against pyca/cryptography 48
//! before it was put here.
//!
//! - AES-GCM and AES-GMAC: draft-mcgrew-gcm-test-01, "Test Cases for the use
//!   of Galois/Counter Mode (GCM) and Galois Message Authentication Code
//!   (GMAC) in IPsec ESP", §4 (March 2009). Its seventeen cases, in order,
//!   are `GCM_DRAFT[0..14]`, `GMAC_DRAFT` (#15) and `GCM_DRAFT[14..16]`.
//! - ChaCha20-Poly1305: RFC 7634 Appendix A (the ESP example) and RFC 8439
//!   §2.8.2 (the AEAD example).
//! - AES-CCM: RFC 4309 has no test vectors, and those of RFC 3610 and NIST
//!   SP 800-38C use 13-, 7-, 8- or 12-byte nonces, never ESP's 11, so these
//!   were made with pyca/cryptography (OpenSSL) as an independent
//!   implementation, together with whole ESP packets in exactly the form
//!   `EspTransform::seal` produces (IV = sequence number), which no
//!   published vector has. The script, run as `python3 gen.py`:
//!
//! ```python
//! # Generates the AES-CCM and ESP-seal vectors of kat_aead.rs with pyca/cryptography 48.
//! from cryptography.hazmat.primitives.ciphers.aead import AESCCM, AESGCM, ChaCha20Poly1305
//!
//! key_of = lambda n: bytes(range(0x40, 0x40 + n))
//! payload = bytes(range(0x20, 0x40)) + bytes.fromhex("01020204")  # data, pad 1 2, pad len 2, NH 4
//!
//! # AES-CCM at the AEAD level: nonce = salt(3) || iv(8), L = 4.
//! salt3, iv = bytes.fromhex("a1b2c3"), bytes.fromhex("0011223344556677")
//! aad8, aad12 = bytes.fromhex("0000cafe00000011"), bytes.fromhex("0000cafe0000000100000011")
//! pt = bytes(range(37))  # not a multiple of 16: exercises the partial last block
//! for klen in (16, 24, 32):
//!     for tlen in (8, 12, 16):
//!         aad = aad12 if tlen == 12 else aad8
//!         out = AESCCM(key_of(klen), tag_length=tlen).encrypt(salt3 + iv, pt, aad)
//!         print("ccm", klen, tlen, (key_of(klen) + salt3).hex(), aad.hex(), out.hex())
//!
//! # Whole ESP packets as EspTransform::seal must produce them: IV = 64-bit seq,
//! # AAD = SPI || [seq hi if ESN] || seq lo.
//! spi = bytes.fromhex("0000cafe")
//! def esp(name, make, klen, salt, seq, esn, gmac=False):
//!     k = key_of(klen)
//!     seq_b = seq.to_bytes(8, "big")
//!     iv, hi, lo = seq_b, seq_b[:4], seq_b[4:]
//!     aad = spi + (hi if esn else b"") + lo
//!     if gmac:  # RFC 4543: everything from SPI to NH authenticated, nothing encrypted
//!         body = payload + make(k).encrypt(salt + iv, b"", aad + iv + payload)
//!     else:
//!         body = make(k).encrypt(salt + iv, payload, aad)
//!     print("esp", name, (k + salt).hex(), hex(seq), esn, (spi + lo + iv + body).hex())
//!
//! esp("AES_GCM_16", AESGCM, 16, bytes.fromhex("d00df00d"), 0x11, False)
//! esp("AES_GCM_16", AESGCM, 32, bytes.fromhex("d00df00d"), 0x1_0000_0011, True)
//! esp("CHACHA20_POLY1305", ChaCha20Poly1305, 32, bytes.fromhex("d00df00d"), 0x11, False)
//! esp("AES_CCM_16", lambda k: AESCCM(k, tag_length=16), 16, bytes.fromhex("a1b2c3"), 0x11, False)
//! esp("AES_CCM_8", lambda k: AESCCM(k, tag_length=8), 32, bytes.fromhex("a1b2c3"), 0x1_0000_0011, True)
//! esp("NULL_AUTH_AES_GMAC", AESGCM, 16, bytes.fromhex("d00df00d"), 0x11, False, gmac=True)
//! esp("NULL_AUTH_AES_GMAC", AESGCM, 16, bytes.fromhex("d00df00d"), 0x1_0000_0011, True, gmac=True)
//! ```

use flowsec_crypto::EncrId;

/// One AES-GCM ESP test case of draft-mcgrew-gcm-test-01.
pub struct GcmEspCase {
    pub source: &'static str,
    /// AES key followed by the 4-byte salt (RFC 4106 §8.1).
    pub key_salt: &'static str,
    /// The full sequence number; the packet carries its low 32 bits.
    pub seq: u64,
    pub esn: bool,
    pub iv: &'static str,
    pub aad: &'static str,
    pub plaintext: &'static str,
    /// Ciphertext followed by the 16-byte tag.
    pub ct_tag: &'static str,
    /// The whole ESP packet: SPI, sequence, IV, ciphertext, ICV.
    pub packet: &'static str,
}

pub const GCM_DRAFT: &[GcmEspCase] = &[
    GcmEspCase {
        source: "draft-mcgrew-gcm-test-01 §4 #1 (p.7), AES-128",
        key_salt: "4c80cdefbb5d10da906ac73c3613a6342e443b68",
        seq: 0x8765432100000000,
        esn: true,
        iv: "4956ed7e3b244cfe",
        aad: "000043218765432100000000",
        plaintext: "45000048699a000080114db7c0a80102c0a801010a9bf15638d3010000010000\
            00000000045f736970045f756470037369700963796265726369747902646b00\
            0021000101020201",
        ct_tag: "fecf537e729d5b07dc30df528dd22b768d1b98736696a6fd348509fa13ceac34\
            cfa2436f14a3f3cf65925bf1f4a13c5d15b21e1884f5ff6247aeabb786b93bce\
            61bc17d768fd9732459018148f6cbe722fd04796562dfdb4",
        packet: "00004321000000004956ed7e3b244cfefecf537e729d5b07dc30df528dd22b76\
            8d1b98736696a6fd348509fa13ceac34cfa2436f14a3f3cf65925bf1f4a13c5d\
            15b21e1884f5ff6247aeabb786b93bce61bc17d768fd9732459018148f6cbe72\
            2fd04796562dfdb4",
    },
    GcmEspCase {
        source: "draft-mcgrew-gcm-test-01 §4 #2 (p.8), AES-128",
        key_salt: "feffe9928665731c6d6a8f9467308308cafebabe",
        seq: 0xa,
        esn: false,
        iv: "facedbaddecaf888",
        aad: "0000a5f80000000a",
        plaintext: "4500003e698f000080114dccc0a80102c0a801010a980035002a2343b2d00100\
            0001000000000000037369700963796265726369747902646b00000100010001",
        ct_tag: "deb22cd9b07c72c16e3a65beeb8df304a5a5897d33ae530f1ba76d5d114d2a5c\
            3de81827c10e9a4f51330d0eec416642cfbb85a5b47e48a4ec3b9ba95d918bd1\
            83b70d3aa8bc6ee4c309e9d85a41ad4a",
        packet: "0000a5f80000000afacedbaddecaf888deb22cd9b07c72c16e3a65beeb8df304\
            a5a5897d33ae530f1ba76d5d114d2a5c3de81827c10e9a4f51330d0eec416642\
            cfbb85a5b47e48a4ec3b9ba95d918bd183b70d3aa8bc6ee4c309e9d85a41ad4a",
    },
    GcmEspCase {
        source: "draft-mcgrew-gcm-test-01 §4 #3 (p.9), AES-256",
        key_salt: "abbccddef00112233445566778899aababbccddef00112233445566778899aab\
            11223344",
        seq: 0x2,
        esn: false,
        iv: "0102030405060708",
        aad: "4a2cbfe300000002",
        plaintext: "4500003069a6400080062690c0a801029389155e0a9e008b2dc57ee000000000\
            7002400020bf0000020405b40101040201020201",
        ct_tag: "ff425c9b724599df7a3bcd510194e00d6a78107f1b0b1cbf06efae9d65a5d763\
            748a637985771d347f0545659f14e99def842d8eb335f4eecfdbf831824b4c49\
            15956c96",
        packet: "4a2cbfe3000000020102030405060708ff425c9b724599df7a3bcd510194e00d\
            6a78107f1b0b1cbf06efae9d65a5d763748a637985771d347f0545659f14e99d\
            ef842d8eb335f4eecfdbf831824b4c4915956c96",
    },
    GcmEspCase {
        source: "draft-mcgrew-gcm-test-01 §4 #4 (p.10), AES-128",
        key_salt: "0000000000000000000000000000000000000000",
        seq: 0x1,
        esn: false,
        iv: "0000000000000000",
        aad: "0000000000000001",
        plaintext: "4500003c99c500008001cb7a40679318010101010800075c0200440061626364\
            65666768696a6b6c6d6e6f707172737475767761626364656667686901020201",
        ct_tag: "4688daf2f973a392732909c331d56d60f694abaa414b5e7ff5fdcdfff5e9a284\
            456476492719ffb64de7d9dca1e1d894bc3bd57873ed4d181d19d4d5c8c18af3\
            f821d496eeb096e98ad2b69e4799c71d",
        packet: "000000000000000100000000000000004688daf2f973a392732909c331d56d60\
            f694abaa414b5e7ff5fdcdfff5e9a284456476492719ffb64de7d9dca1e1d894\
            bc3bd57873ed4d181d19d4d5c8c18af3f821d496eeb096e98ad2b69e4799c71d",
    },
    GcmEspCase {
        source: "draft-mcgrew-gcm-test-01 §4 #5 (p.11), AES-128",
        key_salt: "3de09874b388e6491988d0c3607eae1f57690e43",
        seq: 0x1010101010101010,
        esn: true,
        iv: "4e280000a2fca1a3",
        aad: "42f67e3f1010101010101010",
        plaintext: "4500003c99c300008001cb7c40679318010101010800085c0200430061626364\
            65666768696a6b6c6d6e6f707172737475767761626364656667686901020201",
        ct_tag: "fba2caa4853cf9f0f22cb10d86dd83b0fec75691cf1a04b00d1138ec9c357917\
            65acbd8701ad79845bf9fe3fba487bc91755e6662b4c8d0d1f5e22739530320a\
            e0d731cc978ecafaeae88f00e80d6e48",
        packet: "42f67e3f101010104e280000a2fca1a3fba2caa4853cf9f0f22cb10d86dd83b0\
            fec75691cf1a04b00d1138ec9c35791765acbd8701ad79845bf9fe3fba487bc9\
            1755e6662b4c8d0d1f5e22739530320ae0d731cc978ecafaeae88f00e80d6e48",
    },
    GcmEspCase {
        source: "draft-mcgrew-gcm-test-01 §4 #6 (p.12), AES-128",
        key_salt: "3de09874b388e6491988d0c3607eae1f57690e43",
        seq: 0x1010101010101010,
        esn: true,
        iv: "4e280000a2fca1a3",
        aad: "42f67e3f1010101010101010",
        plaintext: "4500001c42a200008001441f406793b6e00000020a00f5ff01020201",
        ct_tag: "fba2ca845e5df9f0f22c3e6e86dd831e1fc65792cd1af9130e1379ed369f071f\
            35e034be95f112e4e7d05d35",
        packet: "42f67e3f101010104e280000a2fca1a3fba2ca845e5df9f0f22c3e6e86dd831e\
            1fc65792cd1af9130e1379ed369f071f35e034be95f112e4e7d05d35",
    },
    GcmEspCase {
        source: "draft-mcgrew-gcm-test-01 §4 #7 (p.12), AES-192",
        key_salt: "feffe9928665731c6d6a8f9467308308feffe9928665731ccafebabe",
        seq: 0xa,
        esn: false,
        iv: "facedbaddecaf888",
        aad: "0000a5f80000000a",
        plaintext: "45000028a4ad4000400678800a01038f0a010612802306b8cb712602dd6bb03e\
            501016d075680001",
        ct_tag: "a5b1f8066029aea40e598b8122de02420938b3ab33f828e687b8858b5bfbdbd0\
            315b27452144cc7795457b9652037f5318027b5b4cd7a636",
        packet: "0000a5f80000000afacedbaddecaf888a5b1f8066029aea40e598b8122de0242\
            0938b3ab33f828e687b8858b5bfbdbd0315b27452144cc7795457b9652037f53\
            18027b5b4cd7a636",
    },
    GcmEspCase {
        source: "draft-mcgrew-gcm-test-01 §4 #8 (p.13), AES-128",
        key_salt: "abbccddef00112233445566778899aabdecaf888",
        seq: 0x1,
        esn: true,
        iv: "cafedebaceface74",
        aad: "000001000000000000000001",
        plaintext: "4500004933ba00007f119106c3fb1d10c2b1d326c02831ce0035dd7b800302d5\
            00004e20001e8c18d75b81dc91baa0476b91b924b280389d92c963bac046ec95\
            9b6266c04722b14923010101",
        ct_tag: "18a6fd42f72cbf4ab2a2ea901f73d814e3e7f243d95412e1c349c1d2fbec168f\
            9190feebaf2cb01984e65863965d7472b79da345e0e780191f0d2f0e0f496c22\
            6f2127b27db35724e7845d68651f57e65f354f75ff17015769623436",
        packet: "0000010000000001cafedebaceface7418a6fd42f72cbf4ab2a2ea901f73d814\
            e3e7f243d95412e1c349c1d2fbec168f9190feebaf2cb01984e65863965d7472\
            b79da345e0e780191f0d2f0e0f496c226f2127b27db35724e7845d68651f57e6\
            5f354f75ff17015769623436",
    },
    GcmEspCase {
        source: "draft-mcgrew-gcm-test-01 §4 #9 (p.14), AES-256",
        key_salt: "abbccddef00112233445566778899aababbccddef00112233445566778899aab\
            73616c74",
        seq: 0x156f3126dd0db99b,
        esn: true,
        iv: "616e640169766563",
        aad: "17405e67156f3126dd0db99b",
        plaintext: "45080028732c00004006e9f90a0106120a01038f06b88023dd6bafbecb712602\
            50101f646d540001",
        ct_tag: "f2d69ecdbd5a0d5b8d5ef38bad4da58d1f278fde98ef67549d524a3018d9a57f\
            f4d3a31ce673119e451626c2415771e3b7eebca614c89b35",
        packet: "17405e67dd0db99b616e640169766563f2d69ecdbd5a0d5b8d5ef38bad4da58d\
            1f278fde98ef67549d524a3018d9a57ff4d3a31ce673119e451626c2415771e3\
            b7eebca614c89b35",
    },
    GcmEspCase {
        source: "draft-mcgrew-gcm-test-01 §4 #10 (p.15), AES-128",
        key_salt: "3de09874b388e6491988d0c3607eae1f57690e43",
        seq: 0x1010101010101010,
        esn: true,
        iv: "4e280000a2fca1a3",
        aad: "42f67e3f1010101010101010",
        plaintext: "45000049333e00007f119182c3fb1d10c2b1d326c02831ce0035cb458003025b\
            000001e0001e8c18d65759d52284a0352c71475c8880391c764d6e5ee0496b32\
            5ae270c03899493915010101",
        ct_tag: "fba2cad12fc1f9f00d3cebf305410db83d7784b607323d220f24b0a97d541828\
            00cadb0f68d99ef0e0c0c89ae9bea8884e52d65bc1afd0740f742444747b5b39\
            ab533163aad4550ee5160975cdb608c5769189609763b8e18caa81e2",
        packet: "42f67e3f101010104e280000a2fca1a3fba2cad12fc1f9f00d3cebf305410db8\
            3d7784b607323d220f24b0a97d54182800cadb0f68d99ef0e0c0c89ae9bea888\
            4e52d65bc1afd0740f742444747b5b39ab533163aad4550ee5160975cdb608c5\
            769189609763b8e18caa81e2",
    },
    GcmEspCase {
        source: "draft-mcgrew-gcm-test-01 §4 #11 (p.16), AES-256",
        key_salt: "abbccddef00112233445566778899aababbccddef00112233445566778899aab\
            73616c74",
        seq: 0x156f3126dd0db99b,
        esn: true,
        iv: "616e640169766563",
        aad: "17405e67156f3126dd0db99b",
        plaintext: "636973636f0172756c657301746865016e6574776501646566696e6501746865\
            746563686e6f6c6f67696573017468617477696c6c01646566696e65746f6d6f\
            72726f7701020201",
        ct_tag: "d4b7ed86a1777f2ea13d6973d324c69e7b43f826fb56831226508bebd2dceb18\
            d0a6df10e5487df074113e14c641024e3e6773d91a62ee429b043a10e3efe6b0\
            12a49363412364f8c0cac587f249e56b11e24f30e44ccc76",
        packet: "17405e67dd0db99b616e640169766563d4b7ed86a1777f2ea13d6973d324c69e\
            7b43f826fb56831226508bebd2dceb18d0a6df10e5487df074113e14c641024e\
            3e6773d91a62ee429b043a10e3efe6b012a49363412364f8c0cac587f249e56b\
            11e24f30e44ccc76",
    },
    GcmEspCase {
        source: "draft-mcgrew-gcm-test-01 §4 #12 (p.17), AES-128",
        key_salt: "7d773d00c144c525ac619d18c84a3f47d9664267",
        seq: 0xffffffff,
        esn: false,
        iv: "43457e9182443bc6",
        aad: "335467aeffffffff",
        plaintext: "01020201",
        ct_tag: "437f866bcb3f699fe9b0822bac961c4504bef270",
        packet: "335467aeffffffff43457e9182443bc6437f866bcb3f699fe9b0822bac961c45\
            04bef270",
    },
    GcmEspCase {
        source: "draft-mcgrew-gcm-test-01 §4 #13 (p.17), AES-128",
        key_salt: "abbccddef00112233445566778899aabdecaf888",
        seq: 0x1,
        esn: true,
        iv: "cafedebaceface74",
        aad: "000001000000000000000001",
        plaintext: "746f016265016f72016e6f7401746f0162650001",
        ct_tag: "29c9fc69a197d038ccdd14e2ddfcaa0543332164412503524303ed3c6c5f2838\
            43af8c3e",
        packet: "0000010000000001cafedebaceface7429c9fc69a197d038ccdd14e2ddfcaa05\
            43332164412503524303ed3c6c5f283843af8c3e",
    },
    GcmEspCase {
        source: "draft-mcgrew-gcm-test-01 §4 #14 (p.18), AES-256",
        key_salt: "6c6567616c697a656d6172696a75616e61616e64646f69746265666f72656961\
            7475726e",
        seq: 0xffffffffffffffff,
        esn: true,
        iv: "333021696765746d",
        aad: "796b6963ffffffffffffffff",
        plaintext: "45000030da3a00008001df3bc0a80005c0a800010800c6cd0200070061626364\
            65666768696a6b6c6d6e6f707172737401020201",
        ct_tag: "f97ab2aa356d8edce17644ac8c78e25dd24dedbb29ebf1b64a274b39b49c3a86\
            4cd3d78ca4ae68a32b42458fb57dbe821dcc63b9d0937ba2945f669368661a32\
            9fb4c053",
        packet: "796b6963ffffffff333021696765746df97ab2aa356d8edce17644ac8c78e25d\
            d24dedbb29ebf1b64a274b39b49c3a864cd3d78ca4ae68a32b42458fb57dbe82\
            1dcc63b9d0937ba2945f669368661a329fb4c053",
    },
    GcmEspCase {
        source: "draft-mcgrew-gcm-test-01 §4 #16 (p.20), AES-128",
        key_salt: "3de09874b388e6491988d0c3607eae1f57690e43",
        seq: 0x1010101010101010,
        esn: true,
        iv: "4e280000a2fca1a3",
        aad: "3f7ef6421010101010101010",
        plaintext: "45000030da3a00008001df3bc0a80005c0a800010800c6cd0200070061626364\
            65666768696a6b6c6d6e6f707172737401020201",
        ct_tag: "fba2caa8c6c5f9f0f22ca54a061210ad3f6e5791cf1aca210d117cec9c357917\
            65acbd8701ad79845bf9fe3fba487bc96321930684eecadb56912546e7a95c97\
            40d7cb05",
        packet: "3f7ef642101010104e280000a2fca1a3fba2caa8c6c5f9f0f22ca54a061210ad\
            3f6e5791cf1aca210d117cec9c35791765acbd8701ad79845bf9fe3fba487bc9\
            6321930684eecadb56912546e7a95c9740d7cb05",
    },
    GcmEspCase {
        source: "draft-mcgrew-gcm-test-01 §4 #17 (p.21), AES-128",
        key_salt: "4c80cdefbb5d10da906ac73c3613a63422433c64",
        seq: 0x8765432100000007,
        esn: true,
        iv: "4855ec7d3a234bfd",
        aad: "000043218765432100000007",
        plaintext: "0800c6cd020007006162636465666768696a6b6c6d6e6f707172737401020201",
        ct_tag: "74752e8aeb5d873cd7c0f4acc36c4bff84b7d7b98f0ca8b6acda6894bc619069\
            ef9cbc28fe1b56a7c4e0d58c86cd2bc0",
        packet: "00004321000000074855ec7d3a234bfd74752e8aeb5d873cd7c0f4acc36c4bff\
            84b7d7b98f0ca8b6acda6894bc619069ef9cbc28fe1b56a7c4e0d58c86cd2bc0",
    },
];

/// draft-mcgrew-gcm-test-01 §4 #15 (p.19): AES-GMAC-ESP, AES-128. Nothing
/// is encrypted; the AAD is the whole packet up to the ICV (RFC 4543 §3.3).
pub const GMAC_DRAFT: GcmEspCase = GcmEspCase {
    source: "draft-mcgrew-gcm-test-01 §4 #15 (p.19), AES-GMAC-128",
    key_salt: "4c80cdefbb5d10da906ac73c3613a63422433c64",
    seq: 7,
    esn: false,
    iv: "0000000000000000",
    aad: "0000432100000007000000000000000045000030da3a00008001df3bc0a80005\
        c0a800010800c6cd020007006162636465666768696a6b6c6d6e6f7071727374\
        01020201",
    plaintext: "",
    ct_tag: "f2a9a836e155106aa8dcd618e4099aaa",
    packet: "0000432100000007000000000000000045000030da3a00008001df3bc0a80005\
        c0a800010800c6cd020007006162636465666768696a6b6c6d6e6f7071727374\
        01020201f2a9a836e155106aa8dcd618e4099aaa",
};

/// An AEAD known answer at the `Aead` level.
pub struct AeadCase {
    pub source: &'static str,
    pub id: EncrId,
    /// Key followed by the salt.
    pub key_salt: &'static str,
    pub iv: &'static str,
    pub aad: &'static str,
    pub plaintext: &'static str,
    pub ciphertext: &'static str,
    pub tag: &'static str,
}

const CHACHA_KEY_SALT: &str = "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f\
    a0a1a2a3";

/// RFC 7634 Appendix A: the ESP example (SPI 0x01020304, sequence 5).
pub const CHACHA_RFC7634: AeadCase = AeadCase {
    source: "RFC 7634 Appendix A",
    id: EncrId::CHACHA20_POLY1305,
    key_salt: CHACHA_KEY_SALT,
    iv: "1011121314151617",
    aad: "0102030400000005",
    plaintext: "45000054a6f200004001e778c6336405c000020508005b7a3a080000553bec10\
        0007362708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20212223\
        2425262728292a2b2c2d2e2f303132333435363701020204",
    ciphertext: "24039428b97f417e3c13753a4f05087b67c352e6a7fab1b982d466ef407ae5c6\
        14ee8099d52844eb61aa95dfab4c02f72aa71e7c4c4f64c9befe2facc638e8f3\
        cbec163fac469b502773f6fb94e664da9165b82829f641e0",
    tag: "76aaa8266b7fb0f7b11b369907e1ad43",
};

/// RFC 7634 Appendix A as the ESP packet on the wire.
pub const CHACHA_RFC7634_SPI: &str = "01020304";
pub const CHACHA_RFC7634_SEQ: u64 = 5;

/// RFC 8439 §2.8.2; its nonce 07000000 ‖ 4041424344454647 read as
/// salt ‖ IV.
pub const CHACHA_RFC8439: AeadCase = AeadCase {
    source: "RFC 8439 §2.8.2",
    id: EncrId::CHACHA20_POLY1305,
    key_salt: "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f\
        07000000",
    iv: "4041424344454647",
    aad: "50515253c0c1c2c3c4c5c6c7",
    plaintext: "4c616469657320616e642047656e746c656d656e206f662074686520636c6173\
        73206f66202739393a204966204920636f756c64206f6666657220796f75206f\
        6e6c79206f6e652074697020666f7220746865206675747572652c2073756e73\
        637265656e20776f756c642062652069742e",
    ciphertext: "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6\
        3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36\
        92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc\
        3ff4def08e4b7a9de576d26586cec64b6116",
    tag: "1ae10b594f09e26a7e902ecbd0600691",
};

const CCM_IV: &str = "0011223344556677";
const CCM_PLAINTEXT: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\
    2021222324";

/// AES-CCM, every key size and ICV length (generated, see the module doc).
pub const CCM_GENERATED: &[AeadCase] = &[
    AeadCase {
        source: "pyca/cryptography AESCCM, AES-128, 8-byte tag",
        id: EncrId::AES_CCM_8,
        key_salt: "404142434445464748494a4b4c4d4e4fa1b2c3",
        iv: CCM_IV,
        aad: "0000cafe00000011",
        plaintext: CCM_PLAINTEXT,
        ciphertext: "5913b0721601b1101cd641cc4a98ee3d58b36b275d2f5920417dcbce36f2e371\
            8efec36e53",
        tag: "3ca7a28b4965be27",
    },
    AeadCase {
        source: "pyca/cryptography AESCCM, AES-128, 12-byte tag",
        id: EncrId::AES_CCM_12,
        key_salt: "404142434445464748494a4b4c4d4e4fa1b2c3",
        iv: CCM_IV,
        aad: "0000cafe0000000100000011",
        plaintext: CCM_PLAINTEXT,
        ciphertext: "5913b0721601b1101cd641cc4a98ee3d58b36b275d2f5920417dcbce36f2e371\
            8efec36e53",
        tag: "701cef2bcdbfafdae67c2bd6",
    },
    AeadCase {
        source: "pyca/cryptography AESCCM, AES-128, 16-byte tag",
        id: EncrId::AES_CCM_16,
        key_salt: "404142434445464748494a4b4c4d4e4fa1b2c3",
        iv: CCM_IV,
        aad: "0000cafe00000011",
        plaintext: CCM_PLAINTEXT,
        ciphertext: "5913b0721601b1101cd641cc4a98ee3d58b36b275d2f5920417dcbce36f2e371\
            8efec36e53",
        tag: "91074b60c1eec134ff98ed474de8cbfa",
    },
    AeadCase {
        source: "pyca/cryptography AESCCM, AES-192, 8-byte tag",
        id: EncrId::AES_CCM_8,
        key_salt: "404142434445464748494a4b4c4d4e4f5051525354555657a1b2c3",
        iv: CCM_IV,
        aad: "0000cafe00000011",
        plaintext: CCM_PLAINTEXT,
        ciphertext: "a0ffd733f3bd3eb123d3cafb7eb22c803008c483106638e3e3b6e9fb3fb70b7b\
            32557ba3af",
        tag: "90171308b34da91e",
    },
    AeadCase {
        source: "pyca/cryptography AESCCM, AES-192, 12-byte tag",
        id: EncrId::AES_CCM_12,
        key_salt: "404142434445464748494a4b4c4d4e4f5051525354555657a1b2c3",
        iv: CCM_IV,
        aad: "0000cafe0000000100000011",
        plaintext: CCM_PLAINTEXT,
        ciphertext: "a0ffd733f3bd3eb123d3cafb7eb22c803008c483106638e3e3b6e9fb3fb70b7b\
            32557ba3af",
        tag: "7cd9da678d8ba2708e5bb5ac",
    },
    AeadCase {
        source: "pyca/cryptography AESCCM, AES-192, 16-byte tag",
        id: EncrId::AES_CCM_16,
        key_salt: "404142434445464748494a4b4c4d4e4f5051525354555657a1b2c3",
        iv: CCM_IV,
        aad: "0000cafe00000011",
        plaintext: CCM_PLAINTEXT,
        ciphertext: "a0ffd733f3bd3eb123d3cafb7eb22c803008c483106638e3e3b6e9fb3fb70b7b\
            32557ba3af",
        tag: "cdad1defd7d7e125a8c1750135912c39",
    },
    AeadCase {
        source: "pyca/cryptography AESCCM, AES-256, 8-byte tag",
        id: EncrId::AES_CCM_8,
        key_salt: "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f\
            a1b2c3",
        iv: CCM_IV,
        aad: "0000cafe00000011",
        plaintext: CCM_PLAINTEXT,
        ciphertext: "216d66c3cb8897e2572e1133bad8ddbbda9c9eaabdc6863f0b0b57ab1ac72177\
            0a10e0070d",
        tag: "7509e1098e32a16f",
    },
    AeadCase {
        source: "pyca/cryptography AESCCM, AES-256, 12-byte tag",
        id: EncrId::AES_CCM_12,
        key_salt: "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f\
            a1b2c3",
        iv: CCM_IV,
        aad: "0000cafe0000000100000011",
        plaintext: CCM_PLAINTEXT,
        ciphertext: "216d66c3cb8897e2572e1133bad8ddbbda9c9eaabdc6863f0b0b57ab1ac72177\
            0a10e0070d",
        tag: "3ed5fd810f678d92593889df",
    },
    AeadCase {
        source: "pyca/cryptography AESCCM, AES-256, 16-byte tag",
        id: EncrId::AES_CCM_16,
        key_salt: "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f\
            a1b2c3",
        iv: CCM_IV,
        aad: "0000cafe00000011",
        plaintext: CCM_PLAINTEXT,
        ciphertext: "216d66c3cb8897e2572e1133bad8ddbbda9c9eaabdc6863f0b0b57ab1ac72177\
            0a10e0070d",
        tag: "25ada8c52a47b0fece73fd6450e0fc55",
    },
];

/// A whole ESP packet as `EspTransform::seal` must produce it for SPI
/// 0x0000cafe (generated, see the module doc).
pub struct EspSealCase {
    pub source: &'static str,
    pub id: EncrId,
    pub key_salt: &'static str,
    pub seq: u64,
    pub esn: bool,
    pub packet: &'static str,
}

/// The payload every `EspSealCase` carries: 32 bytes of data, padding 1 2,
/// pad length 2, next header 4.
pub const ESP_PAYLOAD: &str = "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f\
    01020204";

pub const ESP_SEAL_GENERATED: &[EspSealCase] = &[
    EspSealCase {
        source: "pyca/cryptography, AES_GCM_16, 20-byte key material",
        id: EncrId::AES_GCM_16,
        key_salt: "404142434445464748494a4b4c4d4e4fd00df00d",
        seq: 0x11,
        esn: false,
        packet: "0000cafe0000001100000000000000112b4484e291fac877130b2afe615d2d58\
            0bcf2396d699a675cca37691b0d84bb8934dee370f8778c4b7063715d522d4c2\
            eff7fdac",
    },
    EspSealCase {
        source: "pyca/cryptography, AES_GCM_16, 36-byte key material, ESN",
        id: EncrId::AES_GCM_16,
        key_salt: "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f\
            d00df00d",
        seq: 0x100000011,
        esn: true,
        packet: "0000cafe000000110000000100000011c8baee4d333c4339494c30d968db0e7a\
            3f3355fe8019145e8de59db246d429e66654ab27c6dea90d5205d75a36996eed\
            778e8b0a",
    },
    EspSealCase {
        source: "pyca/cryptography, CHACHA20_POLY1305, 36-byte key material",
        id: EncrId::CHACHA20_POLY1305,
        key_salt: "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f\
            d00df00d",
        seq: 0x11,
        esn: false,
        packet: "0000cafe0000001100000000000000115e2facb3961ae6072a8f75865357bc95\
            2b39ce3c04edac1c133b60bd2fe828674f4b48aecf08aa025794d900049a5b39\
            36bccf7f",
    },
    EspSealCase {
        source: "pyca/cryptography, AES_CCM_16, 19-byte key material",
        id: EncrId::AES_CCM_16,
        key_salt: "404142434445464748494a4b4c4d4e4fa1b2c3",
        seq: 0x11,
        esn: false,
        packet: "0000cafe0000001100000000000000111ee02ed296292ef35e2ddaf0927b2f94\
            0ab1df4be637664cce15cb0e84d602d4226872282b95c81134718444c5757760\
            e13eb17b",
    },
    EspSealCase {
        source: "pyca/cryptography, AES_CCM_8, 35-byte key material, ESN",
        id: EncrId::AES_CCM_8,
        key_salt: "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f\
            a1b2c3",
        seq: 0x100000011,
        esn: true,
        packet: "0000cafe000000110000000100000011294900c27a45c35450e2acb1ac3ccea0\
            809db89079eb84ef33c6909e64db8bf6931320c921964c56d7146289",
    },
    EspSealCase {
        source: "pyca/cryptography, NULL_AUTH_AES_GMAC, 20-byte key material",
        id: EncrId::NULL_AUTH_AES_GMAC,
        key_salt: "404142434445464748494a4b4c4d4e4fd00df00d",
        seq: 0x11,
        esn: false,
        packet: "0000cafe000000110000000000000011202122232425262728292a2b2c2d2e2f\
            303132333435363738393a3b3c3d3e3f010202040191421bf5ca89be08dd295c\
            2d160568",
    },
    EspSealCase {
        source: "pyca/cryptography, NULL_AUTH_AES_GMAC, 20-byte key material, ESN",
        id: EncrId::NULL_AUTH_AES_GMAC,
        key_salt: "404142434445464748494a4b4c4d4e4fd00df00d",
        seq: 0x100000011,
        esn: true,
        packet: "0000cafe000000110000000100000011202122232425262728292a2b2c2d2e2f\
            303132333435363738393a3b3c3d3e3f010202043625b6a25cce3e1531996e6b\
            88767afc",
    },
];
