//! The [`Provider`]: an ordered list of backends asked in turn for each
//! ESP/AH algorithm, IKE's PRFs and key exchange groups keyed by their
//! transform ids, and IKE's key provider, signature verification
//! algorithms and EAP-MSCHAPv2 primitives, in the manner of rustls'
//! `CryptoProvider` — a value passed explicitly, never a process-wide
//! default.

use std::sync::Arc;

use flowsec_wire::iana::{DhGroup, EncrId, IntegId, PrfId};

use crate::backend::{self, HashAlg};
use crate::esp::{self, EspTransform};
use crate::sign::{
    KeyProvider, PrivateKeyDer, SignatureScheme, SignatureVerificationAlgorithms, SigningKey,
};
use crate::traits::{Aead, Cipher, Hash, Integrity, KeyExchangeGroup, MsChapV2, Prf};
use crate::CryptoError;

/// One implementation of some algorithms. Each method returns `None` when
/// the backend does not implement the algorithm, so that a [`Provider`] can
/// ask the next one; `Some(Err(..))` when it does but the key is unusable.
pub trait Backend: Send + Sync {
    /// Short name, as `flowsec speed --backend` takes it.
    fn name(&self) -> &'static str;
    /// An ESP AEAD (AES-GCM-8/12/16, AES-CCM-8/12/16, ChaCha20-Poly1305).
    /// `key` is the IKE/setkey key material including the salt.
    fn aead(&self, id: EncrId, key: &[u8]) -> Option<Result<Box<dyn Aead>, CryptoError>>;
    /// A non-AEAD cipher with its ESP IV rules (NULL, CBC and CTR modes).
    /// For AES-CTR `key` includes the 4-byte nonce (RFC 3686 §5.1).
    fn cipher(&self, id: EncrId, key: &[u8]) -> Option<Result<Box<dyn Cipher>, CryptoError>>;
    /// A truncated MAC as ESP/AH use it.
    fn integrity(&self, id: IntegId, key: &[u8])
        -> Option<Result<Box<dyn Integrity>, CryptoError>>;
    /// An unkeyed hash (for `flowsec speed` only).
    fn hash(&self, alg: HashAlg) -> Option<Box<dyn Hash>>;
}

/// Maps IANA transform ids to algorithms: ESP/AH transforms by asking its
/// backends in order; IKE's PRFs (transform type 2) and key exchange
/// groups (type 4) from its own lists, one entry per id; and IKE's
/// signatures (a key provider and signature verification algorithms, as
/// rustls' `CryptoProvider` has them) and EAP-MSCHAPv2's MD4 and DES.
///
/// The backend choice (`--backend`) is a data path knob, measured by the
/// studies; IKE's algorithms run a few times per SA on the control thread
/// and do not depend on it: every constructor starts with the complete
/// sets, [`backend::IKE_PRFS`], [`backend::IKE_KEY_EXCHANGES`],
/// [`backend::KEY_PROVIDER`], [`backend::SIGNATURE_VERIFICATION`] and
/// [`backend::MSCHAPV2`] (so the `rustcrypto` provider's ECDH and
/// signatures are still aws-lc's). The `with_…` methods replace them.
#[derive(Clone)]
pub struct Provider {
    backends: Vec<Arc<dyn Backend>>,
    /// ESP transforms run on this engine (the `engine` backend).
    engine: Option<Arc<crate::engine::Engine>>,
    /// IKE's PRFs, at most one per id.
    prfs: Vec<&'static dyn Prf>,
    /// IKE's key exchange groups, at most one per id.
    key_exchanges: Vec<&'static dyn KeyExchangeGroup>,
    /// Loads IKE's private keys.
    key_provider: &'static dyn KeyProvider,
    /// Verifies certificate paths and AUTH signatures.
    signature_verification: SignatureVerificationAlgorithms,
    /// MD4 and DES for EAP-MSCHAPv2, if this provider has them.
    mschapv2: Option<&'static dyn MsChapV2>,
}

impl Provider {
    /// A provider that asks `backends` in order, with every IKE PRF and
    /// key exchange group.
    pub fn new(backends: Vec<Arc<dyn Backend>>) -> Self {
        Provider {
            backends,
            engine: None,
            prfs: backend::IKE_PRFS.to_vec(),
            key_exchanges: backend::IKE_KEY_EXCHANGES.to_vec(),
            key_provider: backend::KEY_PROVIDER,
            signature_verification: backend::SIGNATURE_VERIFICATION,
            mschapv2: Some(backend::MSCHAPV2),
        }
    }

    /// This provider with `keys` loading IKE's private keys.
    pub fn with_key_provider(self, keys: &'static dyn KeyProvider) -> Self {
        Provider {
            key_provider: keys,
            ..self
        }
    }

    /// This provider with `algs` verifying certificate paths and AUTH
    /// signatures.
    pub fn with_signature_verification(self, algs: SignatureVerificationAlgorithms) -> Self {
        Provider {
            signature_verification: algs,
            ..self
        }
    }

    /// This provider with `mschapv2` for EAP-MSCHAPv2 (`None`: without
    /// it, as a provider without MD4 and single DES is).
    pub fn with_mschapv2(self, mschapv2: Option<&'static dyn MsChapV2>) -> Self {
        Provider { mschapv2, ..self }
    }

    /// This provider with only `prfs` for IKE (the first of an id wins).
    pub fn with_prfs(self, prfs: Vec<&'static dyn Prf>) -> Self {
        Provider { prfs, ..self }
    }

    /// This provider with only `groups` for IKE's key exchanges (the
    /// first of an id wins).
    pub fn with_key_exchanges(self, groups: Vec<&'static dyn KeyExchangeGroup>) -> Self {
        Provider {
            key_exchanges: groups,
            ..self
        }
    }

    /// The IKE PRF `id` (RFC 7296 §3.3.2 transform type 2), or `None` if
    /// this provider has none.
    pub fn prf(&self, id: PrfId) -> Option<&'static dyn Prf> {
        self.prfs.iter().copied().find(|p| p.id() == id)
    }

    /// The key exchange group `id` (transform type 4), or `None` if this
    /// provider has none (`DhGroup::NONE` included).
    pub fn key_exchange(&self, id: DhGroup) -> Option<&'static dyn KeyExchangeGroup> {
        self.key_exchanges.iter().copied().find(|g| g.group() == id)
    }

    /// The ids of the IKE PRFs this provider has, in its order.
    pub fn prf_ids(&self) -> Vec<PrfId> {
        self.prfs.iter().map(|p| p.id()).collect()
    }

    /// The ids of the key exchange groups this provider has, in its order.
    pub fn key_exchange_ids(&self) -> Vec<DhGroup> {
        self.key_exchanges.iter().map(|g| g.group()).collect()
    }

    /// The key provider that loads IKE's private keys.
    pub fn key_provider(&self) -> &'static dyn KeyProvider {
        self.key_provider
    }

    /// The private key in `der`, by this provider's key provider.
    ///
    /// # Errors
    /// `KeyRejected` when it does not load (see [`KeyProvider`]).
    pub fn load_private_key(
        &self,
        der: PrivateKeyDer<'_>,
    ) -> Result<Box<dyn SigningKey>, CryptoError> {
        self.key_provider.load_private_key(der)
    }

    /// The signature verification algorithms, for certificate paths
    /// (`.all`, as webpki takes them) and AUTH payloads.
    pub fn signature_verification(&self) -> &SignatureVerificationAlgorithms {
        &self.signature_verification
    }

    /// Verifies `signature` over `message` by `scheme` with the key of
    /// `spki`, a DER SubjectPublicKeyInfo (IKE's AUTH check, RFC 7427).
    ///
    /// # Errors
    /// See [`SignatureVerificationAlgorithms::verify`].
    pub fn verify_signature(
        &self,
        scheme: SignatureScheme,
        spki: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), CryptoError> {
        self.signature_verification
            .verify(scheme, spki, message, signature)
    }

    /// MD4 and DES for EAP-MSCHAPv2, or `None` if this provider has none.
    pub fn mschapv2(&self) -> Option<&'static dyn MsChapV2> {
        self.mschapv2
    }

    /// `inner`'s algorithms, with every ESP transform run on a crypto
    /// engine thread of its own, reached through a request queue (study
    /// S4's look-aside offload; see [`crate::engine`]).
    pub fn engine(inner: Provider) -> Self {
        Provider {
            engine: Some(crate::engine::Engine::start()),
            ..inner
        }
    }

    /// Whether ESP transforms run on an engine thread.
    pub fn is_engine(&self) -> bool {
        self.engine.is_some()
    }

    /// aws-lc-rs for what it does fastest on this class of CPU, RustCrypto
    /// for everything else (see docs/BENCHMARKS.md for the measurements).
    pub fn fastest() -> Self {
        Provider::new(vec![
            Arc::new(backend::AwsLc),
            Arc::new(backend::RustCrypto),
        ])
    }

    /// RustCrypto only for ESP/AH: every algorithm, pure Rust. (IKE's
    /// ECP and Curve25519 groups are aws-lc's in every provider.)
    pub fn rustcrypto() -> Self {
        Provider::new(vec![Arc::new(backend::RustCrypto)])
    }

    /// aws-lc-rs only for ESP/AH: fewer algorithms. (IKE's PRFs and
    /// MODP groups are RustCrypto's in every provider.)
    pub fn aws_lc() -> Self {
        Provider::new(vec![Arc::new(backend::AwsLc)])
    }

    /// The provider a `--backend NAME` option names: `auto`, `aws-lc`,
    /// `rustcrypto`, or `engine` (auto's algorithms on an engine thread).
    pub fn by_name(name: &str) -> Option<Self> {
        Some(match Provider::canonical_name(name)? {
            "aws-lc" => Provider::aws_lc(),
            "rustcrypto" => Provider::rustcrypto(),
            "engine" => Provider::engine(Provider::fastest()),
            _ => Provider::fastest(),
        })
    }

    /// The backend a `--backend NAME` option names (`auto`, `aws-lc`,
    /// `rustcrypto`, `engine`), aliases resolved, without making it (the
    /// engine starts a thread).
    pub fn canonical_name(name: &str) -> Option<&'static str> {
        match name {
            "auto" | "fastest" => Some("auto"),
            "aws-lc" | "aws-lc-rs" | "awslc" => Some("aws-lc"),
            "rustcrypto" | "rust-crypto" => Some("rustcrypto"),
            "engine" => Some("engine"),
            _ => None,
        }
    }

    /// Names of the backends, in the order they are asked.
    pub fn backend_names(&self) -> Vec<&'static str> {
        self.backends.iter().map(|b| b.name()).collect()
    }

    /// The ESP transform for an SA: `encr` with `encr_key` and, unless it is
    /// an AEAD, `integ` with `integ_key`.
    pub fn esp(
        &self,
        encr: EncrId,
        encr_key: &[u8],
        integ: IntegId,
        integ_key: &[u8],
    ) -> Result<Box<dyn EspTransform>, CryptoError> {
        let inline = esp::build(self, encr, encr_key, integ, integ_key)?;
        Ok(match &self.engine {
            Some(engine) => engine.wrap(inline),
            None => inline,
        })
    }

    /// The name of the backend that implements `encr` (for display).
    pub fn encr_backend(&self, encr: EncrId, key: &[u8]) -> Option<&'static str> {
        let id = esp::aead_backing(encr).unwrap_or(encr);
        self.backends.iter().find_map(|b| {
            let found = b
                .aead(id, key)
                .map(|_| ())
                .or_else(|| b.cipher(id, key).map(|_| ()));
            found.map(|()| b.name())
        })
    }

    /// The name of the backend that implements `integ` (for display).
    pub fn integ_backend(&self, integ: IntegId, key: &[u8]) -> Option<&'static str> {
        self.backends
            .iter()
            .find_map(|b| b.integrity(integ, key).map(|_| b.name()))
    }

    /// An ESP AEAD by id.
    pub fn aead(&self, id: EncrId, key: &[u8]) -> Result<Box<dyn Aead>, CryptoError> {
        self.backends
            .iter()
            .find_map(|b| b.aead(id, key))
            .unwrap_or(Err(CryptoError::UnsupportedEncr(id)))
    }

    /// A non-AEAD ESP cipher by id.
    pub fn cipher(&self, id: EncrId, key: &[u8]) -> Result<Box<dyn Cipher>, CryptoError> {
        self.backends
            .iter()
            .find_map(|b| b.cipher(id, key))
            .unwrap_or(Err(CryptoError::UnsupportedEncr(id)))
    }

    /// An integrity transform by id (AH, or ESP with a non-AEAD cipher).
    pub fn integrity(&self, id: IntegId, key: &[u8]) -> Result<Box<dyn Integrity>, CryptoError> {
        self.backends
            .iter()
            .find_map(|b| b.integrity(id, key))
            .unwrap_or(Err(CryptoError::UnsupportedInteg(id)))
    }

    /// An unkeyed hash, if any backend has it.
    pub fn hash(&self, alg: HashAlg) -> Option<Box<dyn Hash>> {
        self.backends.iter().find_map(|b| b.hash(alg))
    }
}

impl core::fmt::Debug for Provider {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Provider")
            .field("backends", &self.backend_names())
            .field("prfs", &self.prfs)
            .field("key_exchanges", &self.key_exchanges)
            .field("signature_verification", &self.signature_verification)
            .field("mschapv2", &self.mschapv2.is_some())
            .finish()
    }
}
