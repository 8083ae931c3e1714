//! The generic payload header and payload chain (RFC 7296 §3.2), the
//! [`Payload`] enum, and whole [`Message`]s.
//!
//! ```text
//! Generic Payload Header (§3.2):
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Next Payload  |C|  RESERVED   |         Payload Length        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Each payload's Next Payload names the type of the one after it (the IKE
//! header names the first); 0 ends the chain. The SK payload (§3.14) is
//! the exception: its Next Payload names the first payload *inside* it,
//! so it must be the last one. Payload Length counts the generic header.

use super::header::{Header, HEADER_LEN};
use super::notify::{Delete, Notify};
use super::sa::{self, Proposal};
use super::simple::{self, Auth, Cert, Cp, Id, Ke};
use super::ts::{self, TrafficSelector};
use super::{be16, patch_len16, IkeError, PayloadType, MAX_PAYLOADS};

/// Length of the generic payload header.
pub const GENERIC_HEADER_LEN: usize = 4;

/// The Critical bit (§2.5, §3.2).
const CRITICAL: u8 = 0x80;

/// One payload of a chain (RFC 7296 §3.2 to §3.14), its body parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// Security Association (§3.3): the proposals.
    Sa(Vec<Proposal>),
    /// Key Exchange (§3.4).
    Ke(Ke),
    /// Identification of the initiator (§3.5).
    IdI(Id),
    /// Identification of the responder (§3.5).
    IdR(Id),
    /// Authentication (§3.8).
    Auth(Auth),
    /// Nonce (§3.9): Nonce Data, 16 to 256 bytes.
    Nonce(Vec<u8>),
    /// Notify (§3.10).
    Notify(Notify),
    /// Delete (§3.11).
    Delete(Delete),
    /// Vendor ID (§3.12): the opaque ID.
    Vendor(Vec<u8>),
    /// Traffic Selector - Initiator (§3.13).
    TsI(Vec<TrafficSelector>),
    /// Traffic Selector - Responder (§3.13).
    TsR(Vec<TrafficSelector>),
    /// SK (§3.14): `first` is the type of the first inner payload (the generic
    /// header's Next Payload), `body` the IV || ciphertext || ICV. It must be
    /// the last payload.
    Encrypted {
        /// Type of the first payload inside (NONE if there is none).
        first: PayloadType,
        /// Initialization Vector, encrypted payloads and padding, ICV.
        body: Vec<u8>,
    },
    /// Certificate (§3.6).
    Cert(Cert),
    /// Certificate Request (§3.7).
    CertReq(Cert),
    /// Configuration (§3.15).
    Cp(Cp),
    /// Extensible Authentication (§3.16): one EAP message (RFC 3748).
    Eap(Vec<u8>),
    /// A payload we do not interpret (CP, unknown non-critical types): kept, skipped.
    Unknown {
        /// Its payload type.
        ty: PayloadType,
        /// Its Critical bit (only ever set on a type RFC 7296 defines: an
        /// unknown critical payload is [`IkeError::UnsupportedCritical`]).
        critical: bool,
        /// The body after the generic header.
        body: Vec<u8>,
    },
}

impl Payload {
    /// The payload type this payload is sent as.
    pub fn ty(&self) -> PayloadType {
        match self {
            Payload::Sa(_) => PayloadType::SA,
            Payload::Ke(_) => PayloadType::KE,
            Payload::IdI(_) => PayloadType::IDI,
            Payload::IdR(_) => PayloadType::IDR,
            Payload::Auth(_) => PayloadType::AUTH,
            Payload::Nonce(_) => PayloadType::NONCE,
            Payload::Notify(_) => PayloadType::NOTIFY,
            Payload::Delete(_) => PayloadType::DELETE,
            Payload::Vendor(_) => PayloadType::VENDOR,
            Payload::TsI(_) => PayloadType::TSI,
            Payload::TsR(_) => PayloadType::TSR,
            Payload::Encrypted { .. } => PayloadType::SK,
            Payload::Cert(_) => PayloadType::CERT,
            Payload::CertReq(_) => PayloadType::CERTREQ,
            Payload::Cp(_) => PayloadType::CP,
            Payload::Eap(_) => PayloadType::EAP,
            Payload::Unknown { ty, .. } => *ty,
        }
    }

    /// Parses one body. `next` is the generic header's Next Payload (SK
    /// keeps it as `first`).
    fn parse(
        ty: PayloadType,
        critical: bool,
        next: PayloadType,
        body: &[u8],
    ) -> Result<Payload, IkeError> {
        Ok(match ty {
            PayloadType::SA => Payload::Sa(sa::parse_sa(body)?),
            PayloadType::KE => Payload::Ke(Ke::parse(body)?),
            PayloadType::IDI => Payload::IdI(Id::parse(ty, body)?),
            PayloadType::IDR => Payload::IdR(Id::parse(ty, body)?),
            PayloadType::AUTH => Payload::Auth(Auth::parse(body)?),
            PayloadType::NONCE => Payload::Nonce(simple::parse_nonce(body)?),
            PayloadType::NOTIFY => Payload::Notify(Notify::parse(body)?),
            PayloadType::DELETE => Payload::Delete(Delete::parse(body)?),
            PayloadType::VENDOR => Payload::Vendor(body.to_vec()),
            PayloadType::CERT => Payload::Cert(Cert::parse(ty, body)?),
            PayloadType::CERTREQ => Payload::CertReq(Cert::parse(ty, body)?),
            PayloadType::CP => Payload::Cp(Cp::parse(body)?),
            PayloadType::EAP => Payload::Eap(body.to_vec()),
            PayloadType::TSI => Payload::TsI(ts::parse_ts(ty, body)?),
            PayloadType::TSR => Payload::TsR(ts::parse_ts(ty, body)?),
            PayloadType::SK => Payload::Encrypted {
                first: next,
                body: body.to_vec(),
            },
            // §2.5: the Critical bit matters only for types the receiver
            // does not recognize; SKF is
            // recognized (defined by RFC 7296 / RFC 7383), just not
            // interpreted here.
            _ if critical && ty.name().is_none() => return Err(IkeError::UnsupportedCritical(ty)),
            _ => Payload::Unknown {
                ty,
                critical,
                body: body.to_vec(),
            },
        })
    }

    /// Appends the body (without the generic header) to `out`.
    fn emit_body(&self, out: &mut Vec<u8>) {
        match self {
            Payload::Sa(p) => sa::emit_sa(p, out),
            Payload::Ke(ke) => ke.emit(out),
            Payload::IdI(id) | Payload::IdR(id) => id.emit(out),
            Payload::Auth(auth) => auth.emit(out),
            Payload::Cert(c) | Payload::CertReq(c) => c.emit(out),
            Payload::Cp(c) => c.emit(out),
            Payload::Notify(n) => n.emit(out),
            Payload::Delete(d) => d.emit(out),
            Payload::TsI(t) | Payload::TsR(t) => ts::emit_ts(t, out),
            Payload::Nonce(b) | Payload::Vendor(b) | Payload::Eap(b) => out.extend_from_slice(b),
            Payload::Encrypted { body, .. } | Payload::Unknown { body, .. } => {
                out.extend_from_slice(body)
            }
        }
    }
}

/// Parses a payload chain: `b` holds the payloads one after the other, the
/// first of type `first` (the IKE header's or SK payload's Next Payload).
///
/// The chain must end exactly at the end of `b`, with Next Payload NONE or
/// with an SK payload ([`IkeError::SkNotLast`] if bytes follow one). An
/// empty `b` with `first` NONE is an empty chain. Errors:
/// [`IkeError::Truncated`] when a generic header is cut short,
/// [`IkeError::BadLength`] for a Payload Length below 4 or past the end
/// of `b`, or bytes after the last payload, [`IkeError::TooManyPayloads`]
/// after [`MAX_PAYLOADS`], and each payload's own errors.
pub fn parse_payloads(first: PayloadType, b: &[u8]) -> Result<Vec<Payload>, IkeError> {
    let mut payloads = Vec::new();
    let mut ty = first;
    let mut rest = b;
    while ty != PayloadType::NONE {
        if payloads.len() == MAX_PAYLOADS {
            return Err(IkeError::TooManyPayloads);
        }
        if rest.len() < GENERIC_HEADER_LEN {
            return Err(IkeError::Truncated);
        }
        let next = PayloadType(rest[0]);
        let critical = rest[1] & CRITICAL != 0;
        let len = usize::from(be16(rest, 2));
        if len < GENERIC_HEADER_LEN || len > rest.len() {
            return Err(IkeError::BadLength);
        }
        let payload = Payload::parse(ty, critical, next, &rest[GENERIC_HEADER_LEN..len])?;
        rest = &rest[len..];
        payloads.push(payload);
        if ty == PayloadType::SK {
            if !rest.is_empty() {
                return Err(IkeError::SkNotLast);
            }
            return Ok(payloads);
        }
        ty = next;
    }
    if !rest.is_empty() {
        return Err(IkeError::BadLength);
    }
    Ok(payloads)
}

/// Emits a payload chain: each generic header's Next Payload names the
/// payload after it, the last one's is NONE (or, for an SK payload, its
/// `first`). The Critical bit is set only for an `Unknown` payload that
/// has it; reserved bits are zero.
///
/// An SK payload anywhere but last gives bytes that
/// [`parse_payloads`] refuses ([`IkeError::SkNotLast`]).
///
/// # Panics
/// If a payload's encoding does not fit its length or count fields (over
/// 65535 bytes, over 255 transforms / selectors, …): a programming error.
pub fn emit_payloads(p: &[Payload]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, payload) in p.iter().enumerate() {
        let next = match payload {
            Payload::Encrypted { first, .. } => *first,
            _ => first_type(&p[i + 1..]),
        };
        let critical = match payload {
            Payload::Unknown { critical: true, .. } => CRITICAL,
            _ => 0,
        };
        let start = out.len();
        out.extend_from_slice(&[next.0, critical, 0, 0]);
        payload.emit_body(&mut out);
        patch_len16(&mut out, start, "payload");
    }
    out
}

/// The type of the first payload of a chain; [`PayloadType::NONE`] for an
/// empty one.
pub fn first_type(p: &[Payload]) -> PayloadType {
    p.first().map_or(PayloadType::NONE, Payload::ty)
}

/// An IKE message: the header and the payloads outside any SK payload
/// (RFC 7296 §3.1, §3.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The IKE header.
    pub header: Header,
    /// The payloads, in order; an SK payload, if any, is last.
    pub payloads: Vec<Payload>,
}

impl Message {
    /// Parses a whole message (the UDP payload, non-ESP marker removed).
    ///
    /// The header's Length must equal `b.len()` ([`IkeError::BadLength`],
    /// or [`IkeError::Truncated`] when it claims more). The major version
    /// is not checked (see [`Header::parse`]): the core checks it first.
    pub fn parse(b: &[u8]) -> Result<Message, IkeError> {
        let header = Header::parse(b)?;
        if header.length as usize != b.len() {
            return Err(IkeError::BadLength);
        }
        let payloads = parse_payloads(header.next_payload, &b[HEADER_LEN..])?;
        Ok(Message { header, payloads })
    }

    /// Emits the message, with the header's Length and Next Payload filled
    /// in from the payloads (whatever `header` holds there).
    ///
    /// # Panics
    /// See [`emit_payloads`].
    pub fn emit(&self) -> Vec<u8> {
        let body = emit_payloads(&self.payloads);
        let Ok(length) = u32::try_from(HEADER_LEN + body.len()) else {
            panic!("IKE message of {} bytes", HEADER_LEN + body.len());
        };
        let header = Header {
            next_payload: first_type(&self.payloads),
            length,
            ..self.header.clone()
        };
        let mut out = vec![0; HEADER_LEN];
        header.emit(&mut out);
        out.extend_from_slice(&body);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iana::{AuthMethod, IdType, NotifyType, ProtocolId};

    fn chain() -> Vec<Payload> {
        vec![
            Payload::IdI(Id {
                ty: IdType::FQDN,
                data: b"moon.strongswan.org".to_vec(),
            }),
            Payload::Auth(Auth {
                method: AuthMethod::SHARED_KEY_MIC,
                data: vec![0x5a; 32],
            }),
            Payload::Sa(vec![sa::tests::ike_proposal()]),
            Payload::TsI(ts::tests::selectors()),
            Payload::TsR(ts::tests::selectors()),
            Payload::Notify(Notify::new(NotifyType::INITIAL_CONTACT, vec![])),
            Payload::Delete(Delete {
                protocol: ProtocolId::ESP,
                spis: vec![1, 2],
            }),
            Payload::Vendor(b"strongSwan".to_vec()),
            Payload::CertReq(Cert {
                encoding: 4,
                data: vec![0xab; 40],
            }),
            Payload::Cert(Cert {
                encoding: 4,
                data: vec![0x30, 0x00],
            }),
            Payload::Cp(Cp {
                ty: 2,
                attrs: vec![(1, vec![10, 3, 0, 1]), (3, vec![]), (8, vec![0xfd; 17])],
            }),
            Payload::Unknown {
                ty: PayloadType(200),
                critical: false,
                body: vec![],
            },
        ]
    }

    #[test]
    fn test_round_trip() {
        let p = chain();
        let b = emit_payloads(&p);
        assert_eq!(parse_payloads(first_type(&p), &b).unwrap(), p);
        // The first generic header: Next Payload AUTH, not critical,
        // length 4 + 4 + 19.
        assert_eq!(b[..4], [39, 0, 0, 27]);
        // An SK payload names its first inner payload and ends the chain.
        let mut p = vec![Payload::Nonce(vec![1; 16])];
        p.push(Payload::Encrypted {
            first: PayloadType::IDI,
            body: vec![0xee; 48],
        });
        let b = emit_payloads(&p);
        assert_eq!(b[20], PayloadType::IDI.0);
        assert_eq!(parse_payloads(PayloadType::NONCE, &b).unwrap(), p);
        // Empty.
        assert!(emit_payloads(&[]).is_empty());
        assert_eq!(first_type(&[]), PayloadType::NONE);
        assert_eq!(parse_payloads(PayloadType::NONE, &[]).unwrap(), vec![]);
    }

    #[test]
    fn test_critical() {
        // Unknown type 200, critical: refused by name.
        let b = [0, 0x80, 0, 5, 0xaa];
        assert_eq!(
            parse_payloads(PayloadType(200), &b),
            Err(IkeError::UnsupportedCritical(PayloadType(200)))
        );
        // Not critical: kept.
        let p = parse_payloads(PayloadType(200), &[0, 0x7f, 0, 5, 0xaa]).unwrap();
        assert_eq!(
            p,
            vec![Payload::Unknown {
                ty: PayloadType(200),
                critical: false,
                body: vec![0xaa],
            }]
        );
        // A known type we do not interpret (SKF, outside reassembly),
        // critical: kept, and the bit round-trips.
        let p = parse_payloads(PayloadType::SKF, &b).unwrap();
        assert_eq!(emit_payloads(&p), b);
        // The bit on a payload we interpret is ignored.
        let b = [
            0, 0x80, 0, 24, 0, 0, 0x40, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ];
        let p = parse_payloads(PayloadType::NOTIFY, &b).unwrap();
        assert!(matches!(&p[0], Payload::Notify(n) if n.data.len() == 16));
    }

    #[test]
    fn test_chain_errors() {
        let b = emit_payloads(&chain());
        let first = PayloadType::IDI;
        for n in 0..b.len() {
            assert!(parse_payloads(first, &b[..n]).is_err(), "len {n}");
        }
        let mut long = b.clone();
        long.push(0);
        assert_eq!(parse_payloads(first, &long), Err(IkeError::BadLength));
        // Payload Length below 4, and past the end.
        let mut v = b.clone();
        v[3] = 3;
        assert_eq!(parse_payloads(first, &v), Err(IkeError::BadLength));
        v[2] = 0xff;
        assert_eq!(parse_payloads(first, &v), Err(IkeError::BadLength));
        assert_eq!(parse_payloads(first, &[0, 0]), Err(IkeError::Truncated));
        assert_eq!(
            parse_payloads(PayloadType::NONE, &[0]),
            Err(IkeError::BadLength)
        );
        // Something after SK.
        let mut p = chain();
        p.insert(
            3,
            Payload::Encrypted {
                first: PayloadType::NONE,
                body: vec![],
            },
        );
        assert_eq!(
            parse_payloads(first, &emit_payloads(&p)),
            Err(IkeError::SkNotLast)
        );
        // A payload error names the payload.
        let bad_nonce = emit_payloads(&[Payload::Nonce(vec![0; 8])]);
        assert!(matches!(
            parse_payloads(PayloadType::NONCE, &bad_nonce),
            Err(IkeError::Malformed(PayloadType::NONCE, _))
        ));
    }

    #[test]
    fn test_too_many_payloads() {
        let p = vec![Payload::Vendor(vec![]); MAX_PAYLOADS];
        let b = emit_payloads(&p);
        assert_eq!(
            parse_payloads(PayloadType::VENDOR, &b).unwrap().len(),
            MAX_PAYLOADS
        );
        let p = vec![Payload::Vendor(vec![]); MAX_PAYLOADS + 1];
        let b = emit_payloads(&p);
        assert_eq!(
            parse_payloads(PayloadType::VENDOR, &b),
            Err(IkeError::TooManyPayloads)
        );
        // The same limit applies when the chain points at itself forever:
        // a payload whose Next Payload is its own type, 4 bytes each.
        let b = [43u8, 0, 0, 4].repeat(1000);
        assert_eq!(
            parse_payloads(PayloadType::VENDOR, &b),
            Err(IkeError::TooManyPayloads)
        );
    }
}
