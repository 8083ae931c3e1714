//! The Security Association payload body (RFC 7296 §3.3): proposals,
//! transforms and transform attributes.
//!
//! ```text
//! SA payload body (§3.3): one or more proposals.
//!
//! Proposal Substructure (§3.3.1):
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Last Substruc |   RESERVED    |         Proposal Length       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Proposal Num  |  Protocol ID  |    SPI Size   |Num  Transforms|
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ~                        SPI (variable)                         ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ~                        <Transforms>                           ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! Transform Substructure (§3.3.2):
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Last Substruc |   RESERVED    |        Transform Length       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Transform Type |   RESERVED    |          Transform ID         |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ~                      Transform Attributes                     ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! Data Attributes (§3.3.5):
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |A|       Attribute Type        |    AF=0  Attribute Length     |
//! |F|                             |    AF=1  Attribute Value      |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                   AF=0  Attribute Value                       |
//! |                   AF=1  Not Transmitted                       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Last Substruc is 0 for the last proposal / transform, 2 (proposal) or
//! 3 (transform) before another one (§3.3.1, §3.3.2).

use super::{
    be16, count8, patch_len16, IkeError, PayloadType, ProtocolId, TransformType, MAX_PROPOSALS,
    MAX_TRANSFORMS,
};

/// Fixed part of a proposal substructure, before the SPI.
const PROPOSAL_FIXED_LEN: usize = 8;
/// Fixed part of a transform substructure, before the attributes.
const TRANSFORM_FIXED_LEN: usize = 8;
/// Header of a data attribute (the whole attribute when AF=1).
const ATTRIBUTE_HEADER_LEN: usize = 4;

/// Last Substruc: this is the last proposal or transform.
const LAST: u8 = 0;
/// Last Substruc: another proposal follows (§3.3.1).
const MORE_PROPOSALS: u8 = 2;
/// Last Substruc: another transform follows (§3.3.2).
const MORE_TRANSFORMS: u8 = 3;

/// The Attribute Format bit: the attribute is TV (type/value, 2-byte value
/// in place of the length).
const AF_TV: u16 = 0x8000;
/// Attribute type Key Length (§3.3.5), in bits, TV format.
const ATTR_KEY_LENGTH: u16 = 14;
/// The attribute [`Transform::emit`] writes for `unknown_attributes`:
/// TV, type 0 (reserved by §3.3.5, so no peer understands it).
const ATTR_PLACEHOLDER: [u8; 4] = [0x80, 0x00, 0x00, 0x00];

fn malformed(what: &'static str) -> IkeError {
    IkeError::Malformed(PayloadType::SA, what)
}

/// A transform (RFC 7296 §3.3.2) with its attributes (§3.3.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transform {
    /// Transform type: which kind of algorithm `id` is.
    pub ty: TransformType,
    /// Transform ID: an [`EncrId`](crate::iana::EncrId),
    /// [`PrfId`](crate::iana::PrfId), [`IntegId`](crate::iana::IntegId),
    /// [`DhGroup`](crate::iana::DhGroup) or [`EsnId`](crate::iana::EsnId)
    /// value, after `ty`.
    pub id: u16,
    /// The Key Length attribute (type 14, TV), in bits, if present.
    pub key_len: Option<u16>,
    /// Whether the transform carried any attribute other than Key Length.
    /// A responder ignores such a transform (§3.3.6). When set,
    /// `emit` writes one attribute of the reserved type 0 to
    /// keep that meaning (our own offers never set it).
    pub unknown_attributes: bool,
}

impl Transform {
    /// A transform without attributes.
    pub fn new(ty: TransformType, id: u16) -> Transform {
        Transform {
            ty,
            id,
            key_len: None,
            unknown_attributes: false,
        }
    }

    /// Reads the transform at the start of `b`; returns it, whether Last
    /// Substruc says it is the last one, and its length.
    fn parse(b: &[u8]) -> Result<(Transform, bool, usize), IkeError> {
        if b.len() < TRANSFORM_FIXED_LEN {
            return Err(malformed("transform runs past its proposal"));
        }
        let last = match b[0] {
            LAST => true,
            MORE_TRANSFORMS => false,
            _ => return Err(malformed("transform Last Substruc neither 0 nor 3")),
        };
        let len = usize::from(be16(b, 2));
        if len < TRANSFORM_FIXED_LEN {
            return Err(malformed("Transform Length below 8"));
        }
        if len > b.len() {
            return Err(malformed("transform runs past its proposal"));
        }
        let mut t = Transform::new(TransformType(b[4]), be16(b, 6));
        let mut attrs = &b[TRANSFORM_FIXED_LEN..len];
        while !attrs.is_empty() {
            if attrs.len() < ATTRIBUTE_HEADER_LEN {
                return Err(malformed("attribute runs past its transform"));
            }
            let format_type = be16(attrs, 0);
            let value = be16(attrs, 2);
            let attr_len = if format_type & AF_TV != 0 {
                ATTRIBUTE_HEADER_LEN
            } else {
                ATTRIBUTE_HEADER_LEN + usize::from(value)
            };
            if attr_len > attrs.len() {
                return Err(malformed("attribute runs past its transform"));
            }
            if format_type == AF_TV | ATTR_KEY_LENGTH {
                if t.key_len.is_some() {
                    return Err(malformed("two Key Length attributes"));
                }
                t.key_len = Some(value);
            } else {
                // Any other type, or Key Length in TLV format (§3.3.5 says
                // it is TV only): not understood.
                t.unknown_attributes = true;
            }
            attrs = &attrs[attr_len..];
        }
        Ok((t, last, len))
    }

    /// Appends the transform substructure to `out`.
    ///
    /// # Panics
    /// Never for the values `parse` yields; the attributes are at most 8
    /// bytes.
    fn emit(&self, last: bool, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[if last { LAST } else { MORE_TRANSFORMS }, 0, 0, 0]);
        out.extend_from_slice(&[self.ty.0, 0]);
        out.extend_from_slice(&self.id.to_be_bytes());
        if let Some(bits) = self.key_len {
            out.extend_from_slice(&(AF_TV | ATTR_KEY_LENGTH).to_be_bytes());
            out.extend_from_slice(&bits.to_be_bytes());
        }
        if self.unknown_attributes {
            out.extend_from_slice(&ATTR_PLACEHOLDER);
        }
        patch_len16(out, start, "transform");
    }
}

/// A proposal (RFC 7296 §3.3.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    /// Proposal Num: 1, 2, … in an offer; the accepted one's number in an
    /// answer.
    pub num: u8,
    /// Protocol ID: IKE, AH or ESP.
    pub protocol: ProtocolId,
    /// The sender's SPI: empty in IKE_SA_INIT, 8 bytes for an IKE SA
    /// rekey, 4 bytes for AH and ESP.
    pub spi: Vec<u8>,
    /// The transforms, in the sender's order.
    pub transforms: Vec<Transform>,
}

impl Proposal {
    /// Reads the proposal at the start of `b`; returns it, whether Last
    /// Substruc says it is the last one, and its length.
    fn parse(b: &[u8]) -> Result<(Proposal, bool, usize), IkeError> {
        if b.len() < PROPOSAL_FIXED_LEN {
            return Err(malformed("proposal runs past the payload"));
        }
        let last = match b[0] {
            LAST => true,
            MORE_PROPOSALS => false,
            _ => return Err(malformed("proposal Last Substruc neither 0 nor 2")),
        };
        let len = usize::from(be16(b, 2));
        let (num, protocol, spi_size) = (b[4], ProtocolId(b[5]), usize::from(b[6]));
        let num_transforms = usize::from(b[7]);
        if num == 0 {
            return Err(malformed("Proposal Num 0"));
        }
        let spi_ok = match protocol {
            ProtocolId::IKE => spi_size == 0 || spi_size == 8,
            ProtocolId::AH | ProtocolId::ESP => spi_size == 4,
            _ => matches!(spi_size, 0 | 4 | 8),
        };
        if !spi_ok {
            return Err(malformed("SPI Size wrong for the protocol"));
        }
        if len < PROPOSAL_FIXED_LEN + spi_size {
            return Err(malformed("Proposal Length shorter than its SPI"));
        }
        if len > b.len() {
            return Err(malformed("proposal runs past the payload"));
        }
        if num_transforms > MAX_TRANSFORMS {
            return Err(malformed("more than MAX_TRANSFORMS transforms"));
        }
        let spi = b[PROPOSAL_FIXED_LEN..PROPOSAL_FIXED_LEN + spi_size].to_vec();
        let mut rest = &b[PROPOSAL_FIXED_LEN + spi_size..len];
        let mut transforms = Vec::with_capacity(num_transforms);
        for i in 0..num_transforms {
            let (t, t_last, t_len) = Transform::parse(rest)?;
            if t_last != (i + 1 == num_transforms) {
                return Err(malformed(
                    "transform Last Substruc disagrees with Num Transforms",
                ));
            }
            transforms.push(t);
            rest = &rest[t_len..];
        }
        if !rest.is_empty() {
            return Err(malformed("Proposal Length disagrees with its transforms"));
        }
        let p = Proposal {
            num,
            protocol,
            spi,
            transforms,
        };
        Ok((p, last, len))
    }

    /// Appends the proposal substructure to `out`.
    ///
    /// # Panics
    /// If the SPI is over 255 bytes, there are over 255 transforms, or the
    /// proposal is over 65535 bytes.
    fn emit(&self, last: bool, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[if last { LAST } else { MORE_PROPOSALS }, 0, 0, 0]);
        out.extend_from_slice(&[
            self.num,
            self.protocol.0,
            count8(self.spi.len(), "proposal SPI size"),
            count8(self.transforms.len(), "number of transforms"),
        ]);
        out.extend_from_slice(&self.spi);
        for (i, t) in self.transforms.iter().enumerate() {
            t.emit(i + 1 == self.transforms.len(), out);
        }
        patch_len16(out, start, "proposal");
    }
}

/// Parses an SA payload body: one or more proposals, numbered 1, 2, … when
/// there are several (§3.3.1: an offer), any non-zero number when there is
/// one (it may be an answer).
pub(crate) fn parse_sa(body: &[u8]) -> Result<Vec<Proposal>, IkeError> {
    let mut proposals: Vec<Proposal> = Vec::new();
    let mut rest = body;
    loop {
        if proposals.len() == MAX_PROPOSALS {
            return Err(malformed("more than MAX_PROPOSALS proposals"));
        }
        let (p, last, len) = Proposal::parse(rest)?;
        if let Some(prev) = proposals.last() {
            if proposals[0].num != 1 || Some(p.num) != prev.num.checked_add(1) {
                return Err(malformed("proposals not numbered 1, 2, ..."));
            }
        }
        proposals.push(p);
        rest = &rest[len..];
        match (last, rest.is_empty()) {
            (true, true) => return Ok(proposals),
            (true, false) => return Err(malformed("data after the last proposal")),
            (false, true) => return Err(malformed("proposal Last Substruc 2 ends the payload")),
            (false, false) => {}
        }
    }
}

/// Appends an SA payload body to `out`.
///
/// # Panics
/// See [`Proposal::emit`].
pub(crate) fn emit_sa(proposals: &[Proposal], out: &mut Vec<u8>) {
    for (i, p) in proposals.iter().enumerate() {
        p.emit(i + 1 == proposals.len(), out);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::iana::{DhGroup, EncrId, IntegId, PrfId};

    /// strongSwan's IKE proposal aes128-sha256-ecp256 in IKE_SA_INIT:
    /// ENCR AES-CBC (Key Length 128), INTEG HMAC-SHA2-256-128, PRF
    /// HMAC-SHA2-256, DH 19 (strongSwan writes the transform types in this
    /// order).
    pub(crate) const IKE_PROPOSAL: [u8; 44] = [
        0x00, 0x00, 0x00, 0x2c, 0x01, 0x01, 0x00, 0x04, // last, len 44, #1 IKE, no SPI, 4
        0x03, 0x00, 0x00, 0x0c, 0x01, 0x00, 0x00, 0x0c, 0x80, 0x0e, 0x00, 0x80, // ENCR 12, KL
        0x03, 0x00, 0x00, 0x08, 0x03, 0x00, 0x00, 0x0c, // INTEG 12
        0x03, 0x00, 0x00, 0x08, 0x02, 0x00, 0x00, 0x05, // PRF 5
        0x00, 0x00, 0x00, 0x08, 0x04, 0x00, 0x00, 0x13, // DH 19, last
    ];

    pub(crate) fn ike_proposal() -> Proposal {
        Proposal {
            num: 1,
            protocol: ProtocolId::IKE,
            spi: vec![],
            transforms: vec![
                Transform {
                    key_len: Some(128),
                    ..Transform::new(TransformType::ENCR, EncrId::AES_CBC.0)
                },
                Transform::new(TransformType::INTEG, IntegId::HMAC_SHA2_256_128.0),
                Transform::new(TransformType::PRF, PrfId::HMAC_SHA2_256.0),
                Transform::new(TransformType::DH, DhGroup::ECP_256.0),
            ],
        }
    }

    fn esp_proposal(num: u8) -> Proposal {
        Proposal {
            num,
            protocol: ProtocolId::ESP,
            spi: vec![0xc0, 0x01, 0x02, 0x03],
            transforms: vec![
                Transform {
                    key_len: Some(256),
                    ..Transform::new(TransformType::ENCR, EncrId::AES_GCM_16.0)
                },
                Transform::new(TransformType::ESN, 0),
            ],
        }
    }

    fn emit(p: &[Proposal]) -> Vec<u8> {
        let mut out = Vec::new();
        emit_sa(p, &mut out);
        out
    }

    #[test]
    fn test_parse() {
        assert_eq!(parse_sa(&IKE_PROPOSAL).unwrap(), vec![ike_proposal()]);
    }

    #[test]
    fn test_emit() {
        assert_eq!(emit(&[ike_proposal()]), IKE_PROPOSAL);
        let two = [esp_proposal(1), esp_proposal(2)];
        let b = emit(&two);
        assert_eq!(b[0], MORE_PROPOSALS);
        assert_eq!(parse_sa(&b).unwrap(), two);
        // An 8-byte IKE SPI (rekey).
        let rekey = Proposal {
            spi: vec![1, 2, 3, 4, 5, 6, 7, 8],
            ..ike_proposal()
        };
        assert_eq!(
            parse_sa(&emit(std::slice::from_ref(&rekey))).unwrap(),
            vec![rekey]
        );
    }

    #[test]
    fn test_attributes() {
        // A TLV attribute of type 17 (3 value bytes) after Key Length.
        let mut b = IKE_PROPOSAL.to_vec();
        b.splice(20..20, [0x00, 0x11, 0x00, 0x03, 0xaa, 0xbb, 0xcc]);
        b[3] += 7;
        b[11] += 7;
        let p = &parse_sa(&b).unwrap()[0];
        assert_eq!(p.transforms[0].key_len, Some(128));
        assert!(p.transforms[0].unknown_attributes);
        assert!(!p.transforms[1].unknown_attributes);
        // Re-emitted with the placeholder; still unknown when read back.
        assert_eq!(
            parse_sa(&emit(std::slice::from_ref(p))).unwrap(),
            vec![p.clone()]
        );
        // Key Length in TLV format is not understood either.
        let mut b = IKE_PROPOSAL.to_vec();
        b[16..20].copy_from_slice(&[0x00, 0x0e, 0x00, 0x00]);
        let t = &parse_sa(&b).unwrap()[0].transforms[0];
        assert_eq!((t.key_len, t.unknown_attributes), (None, true));
        // Two Key Lengths.
        let mut b = IKE_PROPOSAL.to_vec();
        b.splice(20..20, [0x80, 0x0e, 0x01, 0x00]);
        b[3] += 4;
        b[11] += 4;
        assert!(matches!(
            parse_sa(&b),
            Err(IkeError::Malformed(PayloadType::SA, _))
        ));
        // A TLV attribute whose length runs past the transform.
        let mut b = IKE_PROPOSAL.to_vec();
        b[16..20].copy_from_slice(&[0x00, 0x11, 0x00, 0x01]);
        assert!(parse_sa(&b).is_err());
    }

    #[test]
    fn test_bad_fields() {
        let bad = |at: usize, v: u8| {
            let mut b = IKE_PROPOSAL.to_vec();
            b[at] = v;
            parse_sa(&b)
        };
        let err = |r: Result<Vec<Proposal>, IkeError>| {
            assert!(
                matches!(r, Err(IkeError::Malformed(PayloadType::SA, _))),
                "{r:?}"
            );
        };
        err(bad(0, 2)); // more proposals announced, none follows
        err(bad(0, 1)); // Last Substruc 1 is not a proposal's
        err(bad(4, 0)); // Proposal Num 0
        err(bad(6, 4)); // 4-byte SPI for IKE
        err(bad(7, 3)); // Num Transforms 3, 4 present
        err(bad(7, 5)); // 5 announced
        err(bad(7, 65)); // over MAX_TRANSFORMS
        err(bad(8, 0)); // first transform says it is the last
        err(bad(36, 3)); // last transform says more follow
        err(bad(8, 2)); // Last Substruc 2 is not a transform's
        err(bad(11, 7)); // Transform Length below 8
        err(bad(11, 13)); // Transform Length past the next transform's start
        err(bad(3, 43)); // Proposal Length one short
        err(bad(3, 45)); // one long
        err(bad(3, 7));
        assert!(parse_sa(&[]).is_err());
        // An ESP proposal with no SPI.
        let mut p = esp_proposal(1);
        p.spi.clear();
        err(parse_sa(&emit(&[p])));
        // Proposals numbered 1, 3 and 2, 3.
        err(parse_sa(&emit(&[esp_proposal(1), esp_proposal(3)])));
        err(parse_sa(&emit(&[esp_proposal(2), esp_proposal(3)])));
        // One proposal numbered 3 (an answer) is fine.
        assert_eq!(parse_sa(&emit(&[esp_proposal(3)])).unwrap()[0].num, 3);
        // Trailing byte after the last proposal.
        let mut b = IKE_PROPOSAL.to_vec();
        b.push(0);
        err(parse_sa(&b));
    }

    #[test]
    fn test_limits() {
        let many: Vec<Proposal> = (1..=MAX_PROPOSALS as u8 + 1).map(esp_proposal).collect();
        let b = emit(&many);
        assert!(parse_sa(&b).is_err());
        assert_eq!(
            parse_sa(&emit(&many[..MAX_PROPOSALS])).unwrap().len(),
            MAX_PROPOSALS
        );
        let mut p = esp_proposal(1);
        p.transforms = vec![Transform::new(TransformType::INTEG, 12); MAX_TRANSFORMS];
        assert_eq!(
            parse_sa(&emit(std::slice::from_ref(&p))).unwrap()[0]
                .transforms
                .len(),
            64
        );
        p.transforms.push(Transform::new(TransformType::INTEG, 12));
        assert!(parse_sa(&emit(&[p])).is_err());
        // A proposal with no transforms reads (selection will refuse it).
        let mut p = esp_proposal(1);
        p.transforms.clear();
        assert_eq!(parse_sa(&emit(std::slice::from_ref(&p))).unwrap(), vec![p]);
    }

    #[test]
    fn test_check_len() {
        for n in 0..IKE_PROPOSAL.len() {
            assert!(parse_sa(&IKE_PROPOSAL[..n]).is_err(), "len {n}");
        }
    }
}
