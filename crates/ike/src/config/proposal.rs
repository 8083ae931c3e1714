//! IKE, ESP and AH proposals in strongSwan's syntax (strongSwan 5.9.8
//! `proposal.c`, `proposal_keywords_static.txt`): algorithm keywords joined
//! by `-`, e.g. `aes128gcm16-prfsha256-ecp256`, `aes256-sha256-modp2048`,
//! `aes128-aes256-sha256-sha1-ecp256-modp2048` (several algorithms of a
//! kind: the peer picks one of each).
//!
//! Keywords: the encryption and integrity names of
//! [`flowsec_crypto::suite`] (`aes128`, `aes256gcm16`, `chacha20poly1305`,
//! `3des`, `sha256`, `aesxcbc`, …, plus strongSwan's aliases `aes` =
//! `aes128` and `gcm64`/`gcm96`/`gcm128`, `ccm64`/`ccm96`/`ccm128` for the
//! 8/12/16-byte ICVs); PRFs `prfsha1`, `prfsha256`, `prfsha384`,
//! `prfsha512`, `prfmd5`, `prfaesxcbc`, `prfaescmac`; groups `modp768`,
//! `modp1024`, `modp1536`, `modp2048`, `modp3072`, `modp4096`, `modp6144`,
//! `modp8192`, `ecp256`, `ecp384`, `ecp521`, `curve25519` = `x25519`,
//! ML-KEM (FIPS 203, strongSwan 6's names) `mlkem512`, `mlkem768`,
//! `mlkem1024` as the key exchange itself (its KE payload in IKE_SA_INIT
//! or CREATE_CHILD_SA: 800–1568 bytes, so IKE_SA_INIT, which cannot be
//! fragmented, may need IP fragmentation), and `none` = `modpnone` (no
//! PFS, ESP/AH only); `esn`, `noesn`.
//!
//! The rules of strongSwan's `check_proposal()`:
//! - IKE: an encryption algorithm, a DH group (`none` is dropped) and a
//!   PRF are mandatory. Without a PRF keyword the PRFs are taken from the
//!   integrity algorithms, in order (`sha256` → `prfsha256`, `aesxcbc` →
//!   `prfaesxcbc`, …). So an AEAD IKE proposal needs an explicit PRF
//!   (`aes128gcm16-ecp256` is refused: "a PRF algorithm is mandatory"),
//!   unless an integrity keyword names one (`aes128gcm16-sha256-ecp256`
//!   gives PRF HMAC-SHA-256; the integrity algorithm itself is then dropped).
//!   Classic ciphers need an integrity algorithm.
//! - AEAD and classic ciphers cannot share a proposal; with AEADs any
//!   integrity algorithm is dropped (RFC 7296 §3.3: none may be proposed).
//! - ESP: an encryption algorithm is mandatory, integrity optional (as in
//!   strongSwan; `null` needs one); PRF keywords are dropped. ESN defaults
//!   to `noesn`.
//! - AH: an integrity algorithm is mandatory; strongSwan drops encryption
//!   keywords in AH proposals (mapping `aesXXXgmac` to AH-GMAC), flowsec
//!   refuses them.
//!
//! Differences: NULL encryption and AES-GMAC are refused in IKE proposals
//! (RFC 7296 §3.3.2 / RFC 5282 allow neither for IKE), `esn`/`noesn` in IKE
//! proposals, and strongSwan keywords for algorithms flowsec lacks
//! (Camellia CTR/CCM, Serpent, Brainpool and Curve448 groups, NTRU, …) are
//! refused by name.

use core::fmt;

use flowsec_crypto::esp::is_aead;
use flowsec_crypto::suite::{encr_keyword, integ_keyword, Encr};
use flowsec_wire::iana::{DhGroup, EncrId, EsnId, IntegId, PrfId};

use super::value_error::{EmptyListItem, ProposalError, ProposalKind};

pub use super::negotiate::{
    child_accepts, child_answer, child_offer, ike_accepts, ike_answer, ike_offer, select_child,
    select_ike, ChildChosen, IkeChosen,
};

/// An IKE proposal: the algorithms of each kind, in preference order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IkeProposal {
    /// Encryption (or AEAD) algorithms.
    pub encr: Vec<Encr>,
    /// Integrity algorithms; empty with AEADs.
    pub integ: Vec<IntegId>,
    /// Pseudorandom functions.
    pub prf: Vec<PrfId>,
    /// Key exchange methods (never NONE).
    pub dh: Vec<DhGroup>,
    /// Additional key exchanges (RFC 9370 §2.2.1), slot by slot (`ke1_…`
    /// is `addke[0]`): the methods of each, in preference order, NONE
    /// making that one optional; a slot with none is not proposed.
    /// Empty: no additional key exchange.
    pub addke: Vec<Vec<DhGroup>>,
}

/// The seven additional key exchange slots of RFC 9370 (ADDKE1–ADDKE7).
pub const ADDKE_SLOTS: usize = 7;

/// An ESP or AH proposal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChildProposal {
    /// Encryption (or AEAD) algorithms; empty for AH.
    pub encr: Vec<Encr>,
    /// Integrity algorithms; empty with AEADs, and possibly for ESP without
    /// integrity protection.
    pub integ: Vec<IntegId>,
    /// Groups for PFS (CREATE_CHILD_SA); may include NONE (`none`), which
    /// makes PFS optional. Empty: no PFS.
    pub dh: Vec<DhGroup>,
    /// Extended Sequence Number modes (`noesn` unless configured).
    pub esn: Vec<EsnId>,
    /// Additional key exchanges after the PFS one (RFC 9370 §2.2.4, in
    /// IKE_FOLLOWUP_KE), slot by slot as [`IkeProposal::addke`].
    pub addke: Vec<Vec<DhGroup>>,
}

/// Parse one IKE proposal. `default` is refused here: it stands for two
/// proposals, see [`parse_ike_proposals`].
pub fn parse_ike_proposal(s: &str) -> Result<IkeProposal, ProposalError> {
    let t = tokens(s)?;
    if !t.esn.is_empty() {
        return Err(ProposalError::EsnInIke { proposal: s.into() });
    }
    if t.encr.is_empty() {
        return Err(ProposalError::NoEncryption {
            proposal: s.into(),
            kind: ProposalKind::Ike,
        });
    }
    if let Some(e) = t
        .encr
        .iter()
        .find(|e| matches!(e.id, EncrId::NULL | EncrId::NULL_AUTH_AES_GMAC))
    {
        return Err(ProposalError::NotForIke {
            proposal: s.into(),
            encr: e.id,
        });
    }
    let aead = all_aead(s, &t.encr)?;
    let mut prf = t.prf;
    if prf.is_empty() {
        // strongSwan: "No explicit PRF found. We assume the same algorithm
        // as used for integrity checking."
        for &i in &t.integ {
            if let Some(p) = integ_prf(i) {
                push_unique(&mut prf, p);
            }
        }
    }
    if prf.is_empty() {
        return Err(ProposalError::NoPrf { proposal: s.into() });
    }
    let dh: Vec<DhGroup> = t.dh.into_iter().filter(|&g| g != DhGroup::NONE).collect();
    if dh.is_empty() {
        return Err(ProposalError::NoDhGroup { proposal: s.into() });
    }
    let integ = if aead { Vec::new() } else { t.integ };
    if !aead && integ.is_empty() {
        return Err(ProposalError::NoIntegrity {
            proposal: s.into(),
            kind: ProposalKind::Ike,
        });
    }
    Ok(IkeProposal {
        encr: t.encr,
        integ,
        prf,
        dh,
        addke: t.addke,
    })
}

/// Parse one ESP proposal (`default` refused, see [`parse_esp_proposals`]).
pub fn parse_esp_proposal(s: &str) -> Result<ChildProposal, ProposalError> {
    let t = tokens(s)?;
    additional_needs_pfs(s, &t)?;
    if t.encr.is_empty() {
        return Err(ProposalError::NoEncryption {
            proposal: s.into(),
            kind: ProposalKind::Esp,
        });
    }
    let aead = all_aead(s, &t.encr)?;
    let integ = if aead { Vec::new() } else { t.integ };
    if integ.is_empty() && t.encr.iter().any(|e| e.id == EncrId::NULL) {
        return Err(ProposalError::NullWithoutIntegrity { proposal: s.into() });
    }
    Ok(ChildProposal {
        encr: t.encr,
        integ,
        dh: t.dh,
        esn: or_noesn(t.esn),
        addke: t.addke,
    })
}

/// Additional key exchanges in an ESP or AH proposal follow its PFS key
/// exchange (RFC 9370 §2.2.4; strongSwan runs none without one), so
/// they need a group other than `none` beside them.
fn additional_needs_pfs(s: &str, t: &Tokens) -> Result<(), ProposalError> {
    if !t.addke.is_empty() && t.dh.iter().all(|g| *g == DhGroup::NONE) {
        return Err(ProposalError::AdditionalKeWithoutPfs { proposal: s.into() });
    }
    Ok(())
}

/// Parse one AH proposal (`default` refused, see [`parse_ah_proposals`]).
pub fn parse_ah_proposal(s: &str) -> Result<ChildProposal, ProposalError> {
    let t = tokens(s)?;
    additional_needs_pfs(s, &t)?;
    if !t.encr.is_empty() {
        return Err(ProposalError::EncryptionInAh { proposal: s.into() });
    }
    if t.integ.is_empty() {
        return Err(ProposalError::NoIntegrity {
            proposal: s.into(),
            kind: ProposalKind::Ah,
        });
    }
    Ok(ChildProposal {
        encr: Vec::new(),
        integ: t.integ,
        dh: t.dh,
        esn: or_noesn(t.esn),
        addke: t.addke,
    })
}

/// A comma-separated `proposals` list; `default` adds strongSwan's two
/// default proposals, [`default_ike_proposals`].
pub fn parse_ike_proposals(list: &str) -> Result<Vec<IkeProposal>, ProposalError> {
    proposal_list(list, default_ike_proposals, parse_ike_proposal)
}

/// A comma-separated `esp_proposals` list; `default` adds strongSwan's
/// default ESP proposals, classic first then AEAD (as strongSwan's
/// `parse_proposal()` does for the keyword).
pub fn parse_esp_proposals(list: &str) -> Result<Vec<ChildProposal>, ProposalError> {
    let classic_first = || {
        let [aead, classic] = default_esp_proposals();
        [classic, aead]
    };
    proposal_list(list, classic_first, parse_esp_proposal)
}

/// A comma-separated `ah_proposals` list; `default` adds strongSwan's
/// default AH proposal.
pub fn parse_ah_proposals(list: &str) -> Result<Vec<ChildProposal>, ProposalError> {
    proposal_list(list, || [default_ah_proposal()], parse_ah_proposal)
}

/// Each item of the comma-separated `list` parsed by `one`, the keyword
/// `default` (any case) standing for `defaults`.
fn proposal_list<P, const N: usize>(
    list: &str,
    defaults: impl Fn() -> [P; N],
    one: fn(&str) -> Result<P, ProposalError>,
) -> Result<Vec<P>, ProposalError> {
    let mut out = Vec::new();
    for item in split_list(list)? {
        if item.eq_ignore_ascii_case("default") {
            out.extend(defaults());
        } else {
            out.push(one(item)?);
        }
    }
    Ok(out)
}

/// strongSwan 5.9.8's default IKE proposals (`proposal_create_default()`
/// then `proposal_create_default_aead()` for PROTO_IKE), limited to the
/// algorithms flowsec implements, in strongSwan's order:
///
/// 1. `aes128-aes192-aes256-sha256-sha384-sha512-sha1-aesxcbc-prfsha256-`
///    `prfsha384-prfsha512-prfaesxcbc-prfsha1-ecp256-ecp384-ecp521-`
///    `curve25519-modp3072-modp4096-modp6144-modp8192-modp2048`
/// 2. `aes128gcm16-aes192gcm16-aes256gcm16-chacha20poly1305-` and the same
///    PRFs and groups.
///
/// strongSwan's lists depend on its loaded plugins; these follow the usual
/// build (openssl) minus Camellia, Brainpool and Curve448 groups, and the
/// AEADs with 8- and 12-byte ICVs.
pub fn default_ike_proposals() -> [IkeProposal; 2] {
    let prf = vec![
        PrfId::HMAC_SHA2_256,
        PrfId::HMAC_SHA2_384,
        PrfId::HMAC_SHA2_512,
        PrfId::AES128_XCBC,
        PrfId::HMAC_SHA1,
    ];
    let dh = vec![
        DhGroup::ECP_256,
        DhGroup::ECP_384,
        DhGroup::ECP_521,
        DhGroup::CURVE25519,
        DhGroup::MODP_3072,
        DhGroup::MODP_4096,
        DhGroup::MODP_6144,
        DhGroup::MODP_8192,
        DhGroup::MODP_2048,
    ];
    [
        IkeProposal {
            encr: aes_sizes(EncrId::AES_CBC),
            integ: default_integ(),
            prf: prf.clone(),
            dh: dh.clone(),
            addke: Vec::new(),
        },
        IkeProposal {
            encr: [
                aes_sizes(EncrId::AES_GCM_16),
                vec![Encr {
                    id: EncrId::CHACHA20_POLY1305,
                    key_bits: 256,
                }],
            ]
            .concat(),
            integ: Vec::new(),
            prf,
            dh,
            addke: Vec::new(),
        },
    ]
}

/// strongSwan 5.9.8's default ESP proposals, in the order used when
/// `esp_proposals` is not set (`children_sn()`: AEAD first):
/// `aes128gcm16-aes192gcm16-aes256gcm16-noesn`, then
/// `aes128-aes192-aes256-sha256-sha384-sha512-sha1-aesxcbc-noesn`.
pub fn default_esp_proposals() -> [ChildProposal; 2] {
    [
        ChildProposal {
            encr: aes_sizes(EncrId::AES_GCM_16),
            integ: Vec::new(),
            dh: Vec::new(),
            esn: vec![EsnId::NO_ESN],
            addke: Vec::new(),
        },
        ChildProposal {
            encr: aes_sizes(EncrId::AES_CBC),
            integ: default_integ(),
            dh: Vec::new(),
            esn: vec![EsnId::NO_ESN],
            addke: Vec::new(),
        },
    ]
}

/// strongSwan 5.9.8's default AH proposal:
/// `sha256-sha384-sha512-sha1-aesxcbc-noesn`.
pub fn default_ah_proposal() -> ChildProposal {
    ChildProposal {
        encr: Vec::new(),
        integ: default_integ(),
        dh: Vec::new(),
        esn: vec![EsnId::NO_ESN],
        addke: Vec::new(),
    }
}

fn default_integ() -> Vec<IntegId> {
    vec![
        IntegId::HMAC_SHA2_256_128,
        IntegId::HMAC_SHA2_384_192,
        IntegId::HMAC_SHA2_512_256,
        IntegId::HMAC_SHA1_96,
        IntegId::AES_XCBC_96,
    ]
}

fn aes_sizes(id: EncrId) -> Vec<Encr> {
    [128, 192, 256]
        .into_iter()
        .map(|key_bits| Encr { id, key_bits })
        .collect()
}

/// strongSwan's `integ_prf_map`, for the integrity algorithms flowsec has.
pub(crate) fn integ_prf(i: IntegId) -> Option<PrfId> {
    Some(match i {
        IntegId::HMAC_SHA1_96 => PrfId::HMAC_SHA1,
        IntegId::HMAC_SHA2_256_128 => PrfId::HMAC_SHA2_256,
        IntegId::HMAC_SHA2_384_192 => PrfId::HMAC_SHA2_384,
        IntegId::HMAC_SHA2_512_256 => PrfId::HMAC_SHA2_512,
        IntegId::HMAC_MD5_96 => PrfId::HMAC_MD5,
        IntegId::AES_XCBC_96 => PrfId::AES128_XCBC,
        IntegId::AES_CMAC_96 => PrfId::AES128_CMAC,
        _ => return None,
    })
}

/// Items of a comma-separated list (spaces around items allowed).
pub(crate) fn split_list(list: &str) -> Result<Vec<&str>, EmptyListItem> {
    let items: Vec<&str> = list.split(',').map(str::trim).collect();
    if items.iter().any(|i| i.is_empty()) {
        return Err(EmptyListItem { list: list.into() });
    }
    Ok(items)
}

fn or_noesn(esn: Vec<EsnId>) -> Vec<EsnId> {
    if esn.is_empty() {
        vec![EsnId::NO_ESN]
    } else {
        esn
    }
}

/// Whether the encryption algorithms are all AEADs (they may not mix).
fn all_aead(s: &str, encr: &[Encr]) -> Result<bool, ProposalError> {
    let aeads = encr.iter().filter(|e| is_aead(e.id)).count();
    if aeads != 0 && aeads != encr.len() {
        return Err(ProposalError::MixedAead { proposal: s.into() });
    }
    Ok(aeads != 0)
}

fn push_unique<T: PartialEq>(v: &mut Vec<T>, x: T) {
    if !v.contains(&x) {
        v.push(x);
    }
}

#[derive(Default)]
struct Tokens {
    encr: Vec<Encr>,
    integ: Vec<IntegId>,
    prf: Vec<PrfId>,
    dh: Vec<DhGroup>,
    esn: Vec<EsnId>,
    /// `ke1_…` to `ke7_…` by slot (as many slots as the highest named).
    addke: Vec<Vec<DhGroup>>,
}

fn tokens(s: &str) -> Result<Tokens, ProposalError> {
    if s.eq_ignore_ascii_case("default") {
        return Err(ProposalError::DefaultAlone);
    }
    let mut t = Tokens::default();
    for word in s.split('-') {
        let word = word.trim();
        if word.is_empty() {
            return Err(ProposalError::EmptyAlgorithm { proposal: s.into() });
        }
        let w = word.to_ascii_lowercase();
        if let Some((slot, g)) = addke_keyword(&w) {
            if t.addke.len() <= slot {
                t.addke.resize(slot + 1, Vec::new());
            }
            push_unique(&mut t.addke[slot], g);
        } else if let Some(p) = prf_keyword(&w) {
            push_unique(&mut t.prf, p);
        } else if let Some(g) = dh_keyword(&w) {
            push_unique(&mut t.dh, g);
        } else if let Some(e) = esn_keyword(&w) {
            push_unique(&mut t.esn, e);
        } else if let Some(i) = integ_keyword(&w).filter(|&i| i != IntegId::NONE) {
            push_unique(&mut t.integ, i);
        } else if let Some(e) = encr_keyword(&encr_alias(&w)) {
            push_unique(&mut t.encr, e);
        } else if UNSUPPORTED.contains(&w.as_str()) || is_unsupported_family(&w) {
            return Err(ProposalError::AlgorithmNotSupported {
                proposal: s.into(),
                algorithm: word.into(),
            });
        } else {
            return Err(ProposalError::UnknownAlgorithm {
                proposal: s.into(),
                algorithm: word.into(),
            });
        }
    }
    Ok(t)
}

/// strongSwan's spellings that `encr_keyword` does not take.
fn encr_alias(w: &str) -> String {
    if w == "aes" {
        return "aes128".into();
    }
    for (long, short) in [
        ("gcm64", "gcm8"),
        ("gcm96", "gcm12"),
        ("gcm128", "gcm16"),
        ("ccm64", "ccm8"),
        ("ccm96", "ccm12"),
        ("ccm128", "ccm16"),
    ] {
        if let Some(stem) = w.strip_suffix(long) {
            if stem.starts_with("aes") {
                return format!("{stem}{short}");
            }
        }
    }
    w.to_string()
}

fn prf_keyword(w: &str) -> Option<PrfId> {
    Some(match w {
        "prfsha1" => PrfId::HMAC_SHA1,
        "prfsha256" => PrfId::HMAC_SHA2_256,
        "prfsha384" => PrfId::HMAC_SHA2_384,
        "prfsha512" => PrfId::HMAC_SHA2_512,
        "prfmd5" => PrfId::HMAC_MD5,
        "prfaesxcbc" => PrfId::AES128_XCBC,
        "prfaescmac" => PrfId::AES128_CMAC,
        _ => return None,
    })
}

fn dh_keyword(w: &str) -> Option<DhGroup> {
    Some(match w {
        "none" | "modpnone" => DhGroup::NONE,
        "modp768" => DhGroup::MODP_768,
        "modp1024" => DhGroup::MODP_1024,
        "modp1536" => DhGroup::MODP_1536,
        "modp2048" => DhGroup::MODP_2048,
        "modp3072" => DhGroup::MODP_3072,
        "modp4096" => DhGroup::MODP_4096,
        "modp6144" => DhGroup::MODP_6144,
        "modp8192" => DhGroup::MODP_8192,
        "ecp256" => DhGroup::ECP_256,
        "ecp384" => DhGroup::ECP_384,
        "ecp521" => DhGroup::ECP_521,
        "curve25519" | "x25519" => DhGroup::CURVE25519,
        "mlkem512" => DhGroup::ML_KEM_512,
        "mlkem768" => DhGroup::ML_KEM_768,
        "mlkem1024" => DhGroup::ML_KEM_1024,
        _ => return None,
    })
}

/// strongSwan 6's `ke<n>_<method>` (n from 1 to 7; `ke1_none` makes
/// slot 1 optional): the slot (from 0) and the method.
fn addke_keyword(w: &str) -> Option<(usize, DhGroup)> {
    let rest = w.strip_prefix("ke")?;
    let (digit, method) = rest.split_once('_')?;
    let slot = match digit.parse::<usize>() {
        Ok(n @ 1..=ADDKE_SLOTS) if digit.len() == 1 => n - 1,
        _ => return None,
    };
    let g = match method {
        "none" => DhGroup::NONE,
        m => dh_keyword(m).filter(|g| *g != DhGroup::NONE)?,
    };
    Some((slot, g))
}

fn esn_keyword(w: &str) -> Option<EsnId> {
    Some(match w {
        "esn" => EsnId::ESN,
        "noesn" => EsnId::NO_ESN,
        _ => return None,
    })
}

/// strongSwan keywords for algorithms flowsec does not implement.
const UNSUPPORTED: &[&str] = &[
    "sha1_160",
    "sha256_96",
    "sha2_256_96",
    "md5_128",
    "camelliaxcbc",
    "prfcamelliaxcbc",
    "modpnull",
    "ecp192",
    "ecp224",
    "modp1024s160",
    "modp2048s224",
    "modp2048s256",
    "ecp224bp",
    "ecp256bp",
    "ecp384bp",
    "ecp512bp",
    "curve448",
    "x448",
    "ntru112",
    "ntru128",
    "ntru192",
    "ntru256",
    "newhope128",
    "chacha20poly1305compat",
];

fn is_unsupported_family(w: &str) -> bool {
    w.starts_with("serpent")
        || (w.starts_with("camellia") && (w.contains("ctr") || w.contains("ccm")))
}

impl fmt::Display for IkeProposal {
    /// strongSwan's syntax, explicit PRFs included (parses back).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut words: Vec<String> = self.encr.iter().map(|&e| encr_name(e)).collect();
        words.extend(self.integ.iter().map(|&i| integ_name(i)));
        words.extend(self.prf.iter().map(|&p| prf_name(p)));
        words.extend(self.dh.iter().map(|&g| dh_name(g)));
        words.extend(addke_words(&self.addke));
        f.write_str(&words.join("-"))
    }
}

/// `ke1_…` to `ke7_…`, slot by slot.
fn addke_words(addke: &[Vec<DhGroup>]) -> impl Iterator<Item = String> + '_ {
    addke.iter().enumerate().flat_map(|(slot, methods)| {
        let n = slot + 1;
        methods
            .iter()
            .map(move |&g| format!("ke{n}_{}", dh_name(g)))
    })
}

impl fmt::Display for ChildProposal {
    /// strongSwan's syntax (parses back).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut words: Vec<String> = self.encr.iter().map(|&e| encr_name(e)).collect();
        words.extend(self.integ.iter().map(|&i| integ_name(i)));
        words.extend(self.dh.iter().map(|&g| dh_name(g)));
        words.extend(addke_words(&self.addke));
        words.extend(self.esn.iter().map(|&e| {
            if e == EsnId::ESN {
                "esn".to_string()
            } else if e == EsnId::NO_ESN {
                "noesn".to_string()
            } else {
                e.to_string()
            }
        }));
        f.write_str(&words.join("-"))
    }
}

fn encr_name(e: Encr) -> String {
    let b = e.key_bits;
    match e.id {
        EncrId::AES_CBC => format!("aes{b}"),
        EncrId::AES_CTR => format!("aes{b}ctr"),
        EncrId::AES_GCM_8 => format!("aes{b}gcm8"),
        EncrId::AES_GCM_12 => format!("aes{b}gcm12"),
        EncrId::AES_GCM_16 => format!("aes{b}gcm16"),
        EncrId::AES_CCM_8 => format!("aes{b}ccm8"),
        EncrId::AES_CCM_12 => format!("aes{b}ccm12"),
        EncrId::AES_CCM_16 => format!("aes{b}ccm16"),
        EncrId::NULL_AUTH_AES_GMAC => format!("aes{b}gmac"),
        EncrId::CHACHA20_POLY1305 => "chacha20poly1305".into(),
        EncrId::NULL => "null".into(),
        EncrId::DES => "des".into(),
        EncrId::TRIPLE_DES => "3des".into(),
        EncrId::CAST => "cast128".into(),
        EncrId::BLOWFISH => format!("blowfish{b}"),
        EncrId::CAMELLIA_CBC => format!("camellia{b}"),
        EncrId::TWOFISH_CBC => format!("twofish{b}"),
        other => other.to_string(),
    }
}

fn integ_name(i: IntegId) -> String {
    match i {
        IntegId::HMAC_MD5_96 => "md5",
        IntegId::HMAC_SHA1_96 => "sha1",
        IntegId::HMAC_SHA2_256_128 => "sha256",
        IntegId::HMAC_SHA2_384_192 => "sha384",
        IntegId::HMAC_SHA2_512_256 => "sha512",
        IntegId::AES_XCBC_96 => "aesxcbc",
        IntegId::AES_CMAC_96 => "aescmac",
        other => return other.to_string(),
    }
    .to_string()
}

fn prf_name(p: PrfId) -> String {
    match p {
        PrfId::HMAC_MD5 => "prfmd5",
        PrfId::HMAC_SHA1 => "prfsha1",
        PrfId::AES128_XCBC => "prfaesxcbc",
        PrfId::HMAC_SHA2_256 => "prfsha256",
        PrfId::HMAC_SHA2_384 => "prfsha384",
        PrfId::HMAC_SHA2_512 => "prfsha512",
        PrfId::AES128_CMAC => "prfaescmac",
        other => return other.to_string(),
    }
    .to_string()
}

fn dh_name(g: DhGroup) -> String {
    match g {
        DhGroup::NONE => "none",
        DhGroup::MODP_768 => "modp768",
        DhGroup::MODP_1024 => "modp1024",
        DhGroup::MODP_1536 => "modp1536",
        DhGroup::MODP_2048 => "modp2048",
        DhGroup::MODP_3072 => "modp3072",
        DhGroup::MODP_4096 => "modp4096",
        DhGroup::MODP_6144 => "modp6144",
        DhGroup::MODP_8192 => "modp8192",
        DhGroup::ECP_256 => "ecp256",
        DhGroup::ECP_384 => "ecp384",
        DhGroup::ECP_521 => "ecp521",
        DhGroup::CURVE25519 => "curve25519",
        DhGroup::ML_KEM_512 => "mlkem512",
        DhGroup::ML_KEM_768 => "mlkem768",
        DhGroup::ML_KEM_1024 => "mlkem1024",
        other => return other.to_string(),
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aes(id: EncrId, key_bits: u16) -> Encr {
        Encr { id, key_bits }
    }

    #[test]
    fn ike_proposals() {
        let p = parse_ike_proposal("aes256-sha256-modp2048").unwrap();
        assert_eq!(p.encr, vec![aes(EncrId::AES_CBC, 256)]);
        assert_eq!(p.integ, vec![IntegId::HMAC_SHA2_256_128]);
        // PRF from the integrity algorithm (strongSwan's integ_prf_map).
        assert_eq!(p.prf, vec![PrfId::HMAC_SHA2_256]);
        assert_eq!(p.dh, vec![DhGroup::MODP_2048]);

        let p = parse_ike_proposal("aes128gcm16-prfsha256-ecp256").unwrap();
        assert_eq!(p.encr, vec![aes(EncrId::AES_GCM_16, 128)]);
        assert!(p.integ.is_empty());
        assert_eq!(p.prf, vec![PrfId::HMAC_SHA2_256]);
        assert_eq!(p.dh, vec![DhGroup::ECP_256]);

        // An AEAD with an integrity keyword: the PRF comes from it and the
        // integrity algorithm is dropped, as in strongSwan.
        let p = parse_ike_proposal("aes256gcm16-sha384-x25519").unwrap();
        assert!(p.integ.is_empty());
        assert_eq!(p.prf, vec![PrfId::HMAC_SHA2_384]);
        assert_eq!(p.dh, vec![DhGroup::CURVE25519]);

        let p =
            parse_ike_proposal("aes128-aes256-sha256-sha1-aesxcbc-ecp256-modp2048-none").unwrap();
        assert_eq!(
            p.prf,
            vec![PrfId::HMAC_SHA2_256, PrfId::HMAC_SHA1, PrfId::AES128_XCBC]
        );
        assert_eq!(p.dh, vec![DhGroup::ECP_256, DhGroup::MODP_2048]);

        let p = parse_ike_proposal("aes-sha1-prfmd5-modp1024").unwrap();
        assert_eq!(p.encr, vec![aes(EncrId::AES_CBC, 128)]);
        assert_eq!(p.prf, vec![PrfId::HMAC_MD5]);
        let p = parse_ike_proposal("aes128gcm128-prfaescmac-ecp521").unwrap();
        assert_eq!(p.encr, vec![aes(EncrId::AES_GCM_16, 128)]);
        assert_eq!(p.prf, vec![PrfId::AES128_CMAC]);
        assert_eq!(
            parse_ike_proposal("chacha20poly1305-prfsha512-curve25519")
                .unwrap()
                .encr[0]
                .id,
            EncrId::CHACHA20_POLY1305
        );
    }

    #[test]
    fn ike_refusals() {
        let cases = [
            ("aes128gcm16-ecp256", "a PRF algorithm is mandatory"),
            ("aes128-sha256", "a DH group is mandatory"),
            ("aes128-sha256-none", "a DH group is mandatory"),
            (
                "aes128-prfsha256-ecp256",
                "an integrity algorithm is mandatory",
            ),
            ("sha256-ecp256", "an encryption algorithm is mandatory"),
            (
                "aes128-aes128gcm16-sha256-ecp256",
                "classic and combined-mode",
            ),
            ("aes128-sha256-ecp256-esn", "ESP and AH proposals only"),
            ("null-sha256-ecp256", "not allowed for IKE"),
            ("aes128-sha256-ecp256bp", "not supported by flowsec"),
            ("aes128-sha3-ecp256", "not recognized"),
            ("aes128--sha256-ecp256", "empty algorithm name"),
            ("default", "several proposals"),
        ];
        for (s, why) in cases {
            let e = parse_ike_proposal(s).unwrap_err().to_string();
            assert!(e.contains(why), "{s}: {e}");
        }
    }

    #[test]
    fn esp_and_ah_proposals() {
        let p = parse_esp_proposal("aes128gcm128-x25519").unwrap();
        assert_eq!(p.encr, vec![aes(EncrId::AES_GCM_16, 128)]);
        assert_eq!(p.dh, vec![DhGroup::CURVE25519]);
        assert_eq!(p.esn, vec![EsnId::NO_ESN]);
        let p = parse_esp_proposal("aes256-sha512-modp4096-none-esn-noesn").unwrap();
        assert_eq!(p.dh, vec![DhGroup::MODP_4096, DhGroup::NONE]);
        assert_eq!(p.esn, vec![EsnId::ESN, EsnId::NO_ESN]);
        // An AEAD's integrity keyword is dropped; PRFs too.
        let p = parse_esp_proposal("aes256gcm16-sha256-prfsha256").unwrap();
        assert!(p.integ.is_empty());
        // Encryption without integrity is allowed for ESP (strongSwan),
        // not with NULL.
        assert!(parse_esp_proposal("aes128").unwrap().integ.is_empty());
        assert!(parse_esp_proposal("null").is_err());
        assert!(parse_esp_proposal("null-sha1").is_ok());
        assert!(parse_esp_proposal("sha256").is_err());
        assert!(parse_esp_proposal("aes128-aes128gcm16").is_err());

        let p = parse_ah_proposal("sha256-sha1-modp2048").unwrap();
        assert_eq!(
            p.integ,
            vec![IntegId::HMAC_SHA2_256_128, IntegId::HMAC_SHA1_96]
        );
        assert!(parse_ah_proposal("aes128-sha256").is_err());
        assert!(parse_ah_proposal("modp2048").is_err());
    }

    #[test]
    fn lists_and_defaults() {
        let v = parse_ike_proposals("aes128-sha256-ecp256, default").unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v[1].to_string().split('-').next(), Some("aes128"));
        assert_eq!(v[2].encr[0].id, EncrId::AES_GCM_16);
        // `default` in esp_proposals: classic first, then AEAD.
        let v = parse_esp_proposals("default").unwrap();
        assert_eq!(v[0].encr[0].id, EncrId::AES_CBC);
        assert_eq!(v[1].encr[0].id, EncrId::AES_GCM_16);
        assert_eq!(
            default_esp_proposals()[1].to_string(),
            "aes128-aes192-aes256-sha256-sha384-sha512-sha1-aesxcbc-noesn"
        );
        assert_eq!(
            default_ike_proposals()[0].to_string(),
            "aes128-aes192-aes256-sha256-sha384-sha512-sha1-aesxcbc-prfsha256-prfsha384-\
             prfsha512-prfaesxcbc-prfsha1-ecp256-ecp384-ecp521-curve25519-modp3072-modp4096-\
             modp6144-modp8192-modp2048"
        );
        assert!(parse_ike_proposals("aes128-sha256-ecp256,").is_err());
        assert_eq!(
            parse_ah_proposals("default").unwrap(),
            vec![default_ah_proposal()]
        );
        // Display parses back.
        for p in default_ike_proposals() {
            assert_eq!(parse_ike_proposal(&p.to_string()).unwrap(), p);
        }
        for p in default_esp_proposals() {
            assert_eq!(parse_esp_proposal(&p.to_string()).unwrap(), p);
        }
    }
}
