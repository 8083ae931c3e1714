//! From configured proposals to SA payload contents and back (RFC 7296
//! §2.7, §3.3): what we offer, what a responder chooses, what it answers,
//! and an initiator's check of the answer.
//!
//! Selection is strongSwan's (`proposal_select()` with the configured
//! proposals preferred, `select_algos()`): the responder walks its own
//! proposals in order and, for each, the peer's proposals in order, and
//! takes the first pair where every transform type has an algorithm in
//! common, again taken in our order. Per RFC 7296 §3.3.6 a peer's
//! transform carrying an attribute we do not understand is ignored, and a
//! proposal with a transform type that does not belong to its protocol is
//! unacceptable. Ciphers with a variable key size match only when the Key
//! Length attribute equals ours (§3.3.5).
//!
//! - IKE: ENCR, PRF, DH and (unless the cipher is an AEAD) INTEG needed.
//! - ESP: ENCR, INTEG unless AEAD (a proposal of ours without integrity
//!   matches a peer's without INTEG or with INTEG NONE), ESN (a peer's
//!   proposal without ESN counts as NO_ESN). AH: INTEG, ESN.
//! - DH in ESP/AH only when `want_dh` (CREATE_CHILD_SA; in IKE_AUTH the
//!   Child SA's keys come from the IKE SA, RFC 7296 §1.2, so DH transforms
//!   are left out of offers and ignored in peers' proposals). Then
//!   strongSwan's rule: neither side proposing DH is a match without PFS; a
//!   peer proposing DH while we propose none matches only if it offers NONE
//!   as well, and we proposing DH while the peer proposes none matches only
//!   if ours include `none`; otherwise a common group (possibly NONE).
//! - ADDKE1–7 (RFC 9370 §2.2.1) slot by slot as strongSwan's
//!   `select_algo()`: in IKE proposals, and in ESP/AH ones after a PFS
//!   group (§2.2.4; none without one); no method twice.

use flowsec_crypto::esp::is_aead;
use flowsec_crypto::suite::Encr;
use flowsec_wire::iana::{DhGroup, EncrId, EsnId, IntegId, PrfId, ProtocolId, TransformType};
use flowsec_wire::ike::{Proposal, Transform};

use super::proposal::{ChildProposal, IkeProposal};
use crate::crypto::IkeSuite;

/// The responder's choice of an IKE proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IkeChosen {
    /// The chosen proposal's number in the offer.
    pub num: u8,
    /// The algorithms, one of each kind (`integ` NONE with an AEAD).
    pub suite: IkeSuite,
    /// The additional key exchanges (RFC 9370 §2.2.1), by slot: NONE for
    /// one not done. Empty: none.
    pub addke: Vec<DhGroup>,
}

impl IkeChosen {
    /// The additional key exchanges to run, in slot order (RFC 9370
    /// §2.2.2: ADDKEn before ADDKEn+1, NONE skipped).
    pub fn additional(&self) -> Vec<DhGroup> {
        additional(&self.addke)
    }
}

/// The methods of the slots chosen, in slot order, NONE skipped.
fn additional(addke: &[DhGroup]) -> Vec<DhGroup> {
    addke
        .iter()
        .copied()
        .filter(|g| *g != DhGroup::NONE)
        .collect()
}

/// The transform type of additional key exchange slot `slot` (from 0):
/// ADDKE1 (6) to ADDKE7 (12).
pub fn addke_type(slot: usize) -> TransformType {
    TransformType(TransformType::ADDKE1.0 + slot as u8)
}

/// The ADDKE transform types, ADDKE1 to ADDKE7.
fn addke_types() -> impl Iterator<Item = TransformType> {
    (0..super::proposal::ADDKE_SLOTS).map(addke_type)
}

/// The responder's choice of an ESP or AH proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildChosen {
    /// The chosen proposal's number in the offer.
    pub num: u8,
    /// ESP or AH.
    pub protocol: ProtocolId,
    /// The SPI from the peer's proposal: the one the peer receives on.
    pub spi: u32,
    /// The cipher (ESP), `None` for AH.
    pub encr: Option<Encr>,
    /// Integrity; NONE with an AEAD or for ESP without integrity.
    pub integ: IntegId,
    /// The PFS group, NONE if none.
    pub dh: DhGroup,
    /// Extended Sequence Numbers.
    pub esn: bool,
    /// The additional key exchanges after the PFS one (RFC 9370
    /// §2.2.4), by slot as [`IkeChosen::addke`]; empty without PFS.
    pub addke: Vec<DhGroup>,
}

impl ChildChosen {
    /// The additional key exchanges to run in IKE_FOLLOWUP_KE, in slot
    /// order.
    pub fn additional(&self) -> Vec<DhGroup> {
        additional(&self.addke)
    }
}

/// Our SA payload for IKE_SA_INIT: one proposal per configured one,
/// numbered from 1 (at most 255), with an empty SPI (the caller sets the
/// 8-byte SPI for an IKE SA rekey, §3.3.1).
pub fn ike_offer(p: &[IkeProposal]) -> Vec<Proposal> {
    numbered(p.iter().map(|p| {
        let mut t: Vec<Transform> = p.encr.iter().map(|&e| encr_transform(e)).collect();
        t.extend(
            p.prf
                .iter()
                .map(|&x| Transform::new(TransformType::PRF, x.0)),
        );
        t.extend(
            p.integ
                .iter()
                .map(|&x| Transform::new(TransformType::INTEG, x.0)),
        );
        t.extend(p.dh.iter().map(|&x| Transform::new(TransformType::DH, x.0)));
        t.extend(addke_transforms(&p.addke));
        (ProtocolId::IKE, Vec::new(), t)
    }))
}

/// The ADDKE transforms of a proposal's slots (RFC 9370 §2.2.1).
fn addke_transforms(addke: &[Vec<DhGroup>]) -> impl Iterator<Item = Transform> + '_ {
    addke.iter().enumerate().flat_map(|(slot, methods)| {
        let ty = addke_type(slot);
        methods.iter().map(move |&x| Transform::new(ty, x.0))
    })
}

/// Our ESP or AH proposals with our inbound `spi`. DH (and ADDKE)
/// transforms only `with_dh` (CREATE_CHILD_SA with PFS); AH proposals
/// have no ENCR.
pub fn child_offer(
    p: &[ChildProposal],
    protocol: ProtocolId,
    spi: u32,
    with_dh: bool,
) -> Vec<Proposal> {
    numbered(p.iter().map(|p| {
        let mut t: Vec<Transform> = Vec::new();
        if protocol == ProtocolId::ESP {
            t.extend(p.encr.iter().map(|&e| encr_transform(e)));
        }
        t.extend(
            p.integ
                .iter()
                .map(|&x| Transform::new(TransformType::INTEG, x.0)),
        );
        if with_dh {
            t.extend(p.dh.iter().map(|&x| Transform::new(TransformType::DH, x.0)));
            t.extend(addke_transforms(&p.addke));
        }
        let esn = if p.esn.is_empty() {
            &[EsnId::NO_ESN][..]
        } else {
            &p.esn
        };
        t.extend(esn.iter().map(|&x| Transform::new(TransformType::ESN, x.0)));
        (protocol, spi.to_be_bytes().to_vec(), t)
    }))
}

fn numbered(it: impl Iterator<Item = (ProtocolId, Vec<u8>, Vec<Transform>)>) -> Vec<Proposal> {
    it.zip(1..=u8::MAX)
        .map(|((protocol, spi, transforms), num)| Proposal {
            num,
            protocol,
            spi,
            transforms,
        })
        .collect()
}

/// The responder's choice among the peer's IKE proposals (§2.7, §3.3.6).
/// `addke`: additional key exchanges may be chosen (IKE_SA_INIT with
/// INTERMEDIATE_EXCHANGE_SUPPORTED from the peer, RFC 9370 §2.2.1);
/// otherwise a peer's proposal with ADDKE transforms is one with unknown
/// transform types, skipped, and ours must let theirs be optional.
pub fn select_ike(ours: &[IkeProposal], offered: &[Proposal], addke: bool) -> Option<IkeChosen> {
    ours.iter().find_map(|our| {
        offered
            .iter()
            .filter(|p| p.protocol == ProtocolId::IKE)
            .find_map(|peer| match_ike(our, peer, addke))
    })
}

/// The responder's choice among the peer's ESP/AH proposals; `want_dh`
/// for CREATE_CHILD_SA (see the module docs).
pub fn select_child(
    ours: &[ChildProposal],
    offered: &[Proposal],
    want_dh: bool,
) -> Option<ChildChosen> {
    ours.iter().find_map(|our| {
        let protocol = child_protocol(our);
        offered
            .iter()
            .filter(|p| p.protocol == protocol)
            .find_map(|peer| match_child(our, protocol, peer, want_dh))
    })
}

/// The one-proposal SA payload answering with `c` (SPI empty; the caller
/// sets it for an IKE SA rekey).
pub fn ike_answer(c: &IkeChosen) -> Proposal {
    let s = &c.suite;
    let mut t = vec![
        encr_transform(s.encr),
        Transform::new(TransformType::PRF, s.prf.0),
    ];
    if s.integ != IntegId::NONE {
        t.push(Transform::new(TransformType::INTEG, s.integ.0));
    }
    t.push(Transform::new(TransformType::DH, s.dh.0));
    t.extend(chosen_addke(&c.addke));
    Proposal {
        num: c.num,
        protocol: ProtocolId::IKE,
        spi: Vec::new(),
        transforms: t,
    }
}

/// The ADDKE transforms of an answer: a slot chosen NONE is left out,
/// as strongSwan answers (RFC 9370 §2.2.1 shows it sent; both read the
/// same).
fn chosen_addke(addke: &[DhGroup]) -> impl Iterator<Item = Transform> + '_ {
    addke
        .iter()
        .enumerate()
        .filter(|(_, g)| **g != DhGroup::NONE)
        .map(|(slot, g)| Transform::new(addke_type(slot), g.0))
}

/// The one-proposal SA payload answering with `c`, carrying our inbound
/// SPI.
pub fn child_answer(c: &ChildChosen, our_spi: u32) -> Proposal {
    let mut t = Vec::new();
    if let Some(e) = c.encr {
        t.push(encr_transform(e));
    }
    if c.integ != IntegId::NONE {
        t.push(Transform::new(TransformType::INTEG, c.integ.0));
    }
    if c.dh != DhGroup::NONE {
        t.push(Transform::new(TransformType::DH, c.dh.0));
    }
    t.extend(chosen_addke(&c.addke));
    let esn = if c.esn { EsnId::ESN } else { EsnId::NO_ESN };
    t.push(Transform::new(TransformType::ESN, esn.0));
    Proposal {
        num: c.num,
        protocol: c.protocol,
        spi: our_spi.to_be_bytes().to_vec(),
        transforms: t,
    }
}

/// Initiator: whether `answer` is a valid choice from our `offer` (the
/// proposal it numbers, one transform of each needed type, each one we
/// offered in that proposal), and what it chose.
pub fn ike_accepts(offer: &[Proposal], answer: &Proposal) -> Option<IkeChosen> {
    if answer.protocol != ProtocolId::IKE {
        return None;
    }
    let ours = offer
        .iter()
        .find(|p| p.num == answer.num && p.protocol == ProtocolId::IKE)?;
    let types: Vec<TransformType> = [
        TransformType::ENCR,
        TransformType::PRF,
        TransformType::INTEG,
        TransformType::DH,
    ]
    .into_iter()
    .chain(addke_types())
    .collect();
    let one = Single::of(answer, ours, &types)?;
    let encr = encr_from_wire(one.get(TransformType::ENCR)?)?;
    let prf = PrfId(one.get(TransformType::PRF)?.id);
    let dh = DhGroup(one.get(TransformType::DH)?.id);
    if dh == DhGroup::NONE {
        return None;
    }
    let integ = match one.get(TransformType::INTEG) {
        Some(t) if !is_aead(encr.id) && t.id != IntegId::NONE.0 => IntegId(t.id),
        Some(t) if is_aead(encr.id) && t.id == IntegId::NONE.0 => IntegId::NONE,
        None if is_aead(encr.id) => IntegId::NONE,
        _ => return None,
    };
    let addke = accepted_addke(ours, &one, dh)?;
    Some(IkeChosen {
        num: answer.num,
        suite: IkeSuite {
            encr,
            integ,
            prf,
            dh,
        },
        addke,
    })
}

/// Initiator: the additional key exchanges an answer chose from our
/// offered proposal `ours`, after the key exchange `first`. Each slot
/// we offered: the method chosen, or NONE where we let it be optional
/// (absent or NONE in the answer read the same); no method twice (RFC
/// 9370 §2.2.1).
fn accepted_addke(ours: &Proposal, one: &Single<'_>, first: DhGroup) -> Option<Vec<DhGroup>> {
    let mut addke = Vec::new();
    for ty in addke_types() {
        let offered: Vec<u16> = ids(ours, ty).collect();
        let g = match one.get(ty) {
            Some(t) => DhGroup(t.id),
            None if offered.is_empty() || offered.contains(&DhGroup::NONE.0) => DhGroup::NONE,
            None => return None,
        };
        addke.push(g);
    }
    trim_none(&mut addke);
    let mut used = vec![first];
    for g in addke.iter().filter(|g| **g != DhGroup::NONE) {
        if used.contains(g) {
            return None;
        }
        used.push(*g);
    }
    Some(addke)
}

/// Trailing NONE slots dropped: a choice without additional key
/// exchanges is an empty list.
fn trim_none(addke: &mut Vec<DhGroup>) {
    while addke.last() == Some(&DhGroup::NONE) {
        addke.pop();
    }
}

/// Initiator: whether `answer` is a valid choice from our ESP/AH `offer`,
/// and what it chose (`spi` is the responder's).
pub fn child_accepts(offer: &[Proposal], answer: &Proposal) -> Option<ChildChosen> {
    let protocol = answer.protocol;
    if protocol != ProtocolId::ESP && protocol != ProtocolId::AH {
        return None;
    }
    let ours = offer
        .iter()
        .find(|p| p.num == answer.num && p.protocol == protocol)?;
    let spi = u32::from_be_bytes(answer.spi.as_slice().try_into().ok()?);
    let mut types = vec![TransformType::INTEG, TransformType::DH, TransformType::ESN];
    if protocol == ProtocolId::ESP {
        types.push(TransformType::ENCR);
    }
    types.extend(addke_types());
    let one = Single::of(answer, ours, &types)?;
    let encr = match one.get(TransformType::ENCR) {
        Some(t) => Some(encr_from_wire(t)?),
        None if protocol == ProtocolId::AH => None,
        None => return None,
    };
    let aead = encr.is_some_and(|e| is_aead(e.id));
    let offered_integ = ours.transforms.iter().any(|t| t.ty == TransformType::INTEG);
    let integ = match one.get(TransformType::INTEG) {
        Some(t) if t.id != IntegId::NONE.0 && !aead => IntegId(t.id),
        Some(_) if aead || !offered_integ => IntegId::NONE,
        None if aead || (!offered_integ && protocol == ProtocolId::ESP) => IntegId::NONE,
        _ => return None,
    };
    let dh = match one.get(TransformType::DH) {
        Some(t) => DhGroup(t.id),
        None => {
            // No PFS in the answer: fine unless we insisted on a group.
            let offered: Vec<u16> = ids(ours, TransformType::DH).collect();
            if !offered.is_empty() && !offered.contains(&DhGroup::NONE.0) {
                return None;
            }
            DhGroup::NONE
        }
    };
    let esn = match one.get(TransformType::ESN) {
        Some(t) => EsnId(t.id),
        None if ids(ours, TransformType::ESN).any(|x| x == EsnId::NO_ESN.0) => EsnId::NO_ESN,
        None => return None,
    };
    // Additional key exchanges follow PFS only (RFC 9370 §2.2.4).
    let addke = match dh {
        DhGroup::NONE if (addke_types()).any(|ty| one.get(ty).is_some()) => return None,
        DhGroup::NONE => Vec::new(),
        _ => accepted_addke(ours, &one, dh)?,
    };
    Some(ChildChosen {
        num: answer.num,
        protocol,
        spi,
        encr,
        integ,
        dh,
        esn: esn == EsnId::ESN,
        addke,
    })
}

/// An answer's transforms, at most one of each type, all among `types`
/// and all present in our offered proposal.
struct Single<'a>(Vec<&'a Transform>);

impl<'a> Single<'a> {
    fn of(answer: &'a Proposal, ours: &Proposal, types: &[TransformType]) -> Option<Single<'a>> {
        let mut seen: Vec<&Transform> = Vec::new();
        for t in &answer.transforms {
            if t.unknown_attributes || !types.contains(&t.ty) || seen.iter().any(|s| s.ty == t.ty) {
                return None;
            }
            // INTEG NONE with an AEAD need not have been offered.
            let none_integ = t.ty == TransformType::INTEG && t.id == IntegId::NONE.0;
            if !none_integ && !ours.transforms.iter().any(|o| same(o, t)) {
                return None;
            }
            seen.push(t);
        }
        Some(Single(seen))
    }

    fn get(&self, ty: TransformType) -> Option<&'a Transform> {
        self.0.iter().copied().find(|t| t.ty == ty)
    }
}

fn same(a: &Transform, b: &Transform) -> bool {
    a.ty == b.ty && a.id == b.id && a.key_len == b.key_len && !a.unknown_attributes
}

/// The ids of a proposal's usable transforms of one type, in its order.
fn ids(p: &Proposal, ty: TransformType) -> impl Iterator<Item = u16> + '_ {
    p.transforms
        .iter()
        .filter(move |t| t.ty == ty && !t.unknown_attributes)
        .map(|t| t.id)
}

fn child_protocol(p: &ChildProposal) -> ProtocolId {
    if p.encr.is_empty() {
        ProtocolId::AH
    } else {
        ProtocolId::ESP
    }
}

/// Whether the proposal holds only transform types of `allowed` (§3.3.6:
/// otherwise it is unacceptable). Transforms with unknown attributes are
/// ignored even here.
fn only_types(p: &Proposal, allowed: &[TransformType]) -> bool {
    p.transforms
        .iter()
        .all(|t| t.unknown_attributes || allowed.contains(&t.ty))
}

/// The first of `ours` the peer also proposes (by transform id).
fn first_common<T: Copy>(ours: &[T], id: impl Fn(T) -> u16, peer: &[u16]) -> Option<T> {
    ours.iter().copied().find(|&o| peer.contains(&id(o)))
}

fn first_common_encr(ours: &[Encr], peer: &Proposal) -> Option<Encr> {
    ours.iter().copied().find(|&e| {
        let want = encr_transform(e);
        peer.transforms.iter().any(|t| same(t, &want))
    })
}

fn match_ike(our: &IkeProposal, peer: &Proposal, addke_ok: bool) -> Option<IkeChosen> {
    use TransformType as T;
    let mut allowed = vec![T::ENCR, T::PRF, T::INTEG, T::DH];
    if addke_ok {
        allowed.extend(addke_types());
    }
    if !only_types(peer, &allowed) {
        return None;
    }
    let encr = first_common_encr(&our.encr, peer)?;
    let prf = first_common(&our.prf, |x| x.0, &ids(peer, T::PRF).collect::<Vec<_>>())?;
    let integ = if is_aead(encr.id) {
        IntegId::NONE
    } else {
        first_common(
            &our.integ,
            |x| x.0,
            &ids(peer, T::INTEG).collect::<Vec<_>>(),
        )?
    };
    let dh = first_common(&our.dh, |x| x.0, &ids(peer, T::DH).collect::<Vec<_>>())?;
    let addke = select_addke(&our.addke, peer, dh)?;
    Some(IkeChosen {
        num: peer.num,
        suite: IkeSuite {
            encr,
            integ,
            prf,
            dh,
        },
        addke,
    })
}

/// The additional key exchanges of `our` proposal and the peer's, slot by
/// slot (RFC 9370 §2.2.1; strongSwan's `select_algo()`): a slot neither
/// proposes is NONE; one only one side proposes is NONE if that side
/// allows it; else the first of ours the peer proposes that is not chosen
/// already (no method twice, the first key exchange `dh` included; NONE
/// may repeat).
fn select_addke(our: &[Vec<DhGroup>], peer: &Proposal, dh: DhGroup) -> Option<Vec<DhGroup>> {
    let none = DhGroup::NONE;
    let mut used = vec![dh];
    let mut chosen = Vec::new();
    for (slot, ty) in addke_types().enumerate() {
        let ours: &[DhGroup] = our.get(slot).map_or(&[], Vec::as_slice);
        let theirs: Vec<u16> = ids(peer, ty).collect();
        let g = match (ours.is_empty(), theirs.is_empty()) {
            (true, true) => none,
            (true, false) => theirs.contains(&none.0).then_some(none)?,
            (false, true) => ours.contains(&none).then_some(none)?,
            (false, false) => ours
                .iter()
                .copied()
                .find(|g| theirs.contains(&g.0) && (*g == none || !used.contains(g)))?,
        };
        if g != none {
            used.push(g);
        }
        chosen.push(g);
    }
    trim_none(&mut chosen);
    Some(chosen)
}

fn match_child(
    our: &ChildProposal,
    protocol: ProtocolId,
    peer: &Proposal,
    want_dh: bool,
) -> Option<ChildChosen> {
    use TransformType as T;
    // DH and ADDKE are looked at only `want_dh` (IKE_AUTH ignores them).
    let mut allowed = vec![T::INTEG, T::DH, T::ESN];
    if protocol == ProtocolId::ESP {
        allowed.push(T::ENCR);
    }
    allowed.extend(addke_types());
    if !only_types(peer, &allowed) {
        return None;
    }
    let spi = u32::from_be_bytes(peer.spi.as_slice().try_into().ok()?);
    let encr = match protocol {
        ProtocolId::ESP => Some(first_common_encr(&our.encr, peer)?),
        _ => None,
    };
    let peer_integ: Vec<u16> = ids(peer, T::INTEG).collect();
    let integ = if encr.is_some_and(|e| is_aead(e.id)) {
        IntegId::NONE
    } else if our.integ.is_empty() {
        // ESP without integrity: the peer must not insist on one.
        if !peer_integ.is_empty() && !peer_integ.contains(&IntegId::NONE.0) {
            return None;
        }
        IntegId::NONE
    } else {
        first_common(&our.integ, |x| x.0, &peer_integ)?
    };
    let mut peer_esn: Vec<u16> = ids(peer, T::ESN).collect();
    if peer_esn.is_empty() {
        peer_esn.push(EsnId::NO_ESN.0);
    }
    let our_esn = if our.esn.is_empty() {
        &[EsnId::NO_ESN][..]
    } else {
        &our.esn
    };
    let esn = first_common(our_esn, |x| x.0, &peer_esn)?;
    let dh = if want_dh {
        select_pfs(&our.dh, &ids(peer, T::DH).collect::<Vec<_>>())?
    } else {
        DhGroup::NONE
    };
    // Additional key exchanges follow PFS only (RFC 9370 §2.2.4;
    // strongSwan's `determine_key_exchanges()`).
    let addke = match dh {
        DhGroup::NONE => Vec::new(),
        _ => select_addke(&our.addke, peer, dh)?,
    };
    Some(ChildChosen {
        num: peer.num,
        protocol,
        spi,
        encr,
        integ,
        dh,
        esn: esn == EsnId::ESN,
        addke,
    })
}

/// strongSwan's `select_algo()` for the optional DH transform of ESP/AH.
fn select_pfs(ours: &[DhGroup], peer: &[u16]) -> Option<DhGroup> {
    let none = DhGroup::NONE;
    match (ours.is_empty(), peer.is_empty()) {
        (true, true) => Some(none),
        (true, false) => peer.contains(&none.0).then_some(none),
        (false, true) => ours.contains(&none).then_some(none),
        (false, false) => first_common(ours, |x| x.0, peer),
    }
}

/// The Key Length attribute (§3.3.5) for a cipher: present for those with
/// a variable key size, absent for DES, 3DES, NULL and
/// ChaCha20-Poly1305 (RFC 7634 §3: "MUST NOT be sent").
pub fn key_length_attribute(e: Encr) -> Option<u16> {
    match e.id {
        EncrId::NULL | EncrId::DES | EncrId::TRIPLE_DES | EncrId::CHACHA20_POLY1305 => None,
        _ => Some(e.key_bits),
    }
}

fn encr_transform(e: Encr) -> Transform {
    Transform {
        key_len: key_length_attribute(e),
        ..Transform::new(TransformType::ENCR, e.id.0)
    }
}

/// The [`Encr`] an ENCR transform names, if it has a Key Length exactly
/// when the cipher takes one.
fn encr_from_wire(t: &Transform) -> Option<Encr> {
    let id = EncrId(t.id);
    let fixed = match id {
        EncrId::NULL => Some(0),
        EncrId::DES => Some(64),
        EncrId::TRIPLE_DES => Some(192),
        EncrId::CHACHA20_POLY1305 => Some(256),
        _ => None,
    };
    match (fixed, t.key_len) {
        (Some(bits), None) => Some(Encr { id, key_bits: bits }),
        (None, Some(bits)) if bits != 0 => Some(Encr { id, key_bits: bits }),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
