//! The payloads with a fixed 4-byte head and opaque data: Key Exchange
//! (RFC 7296 §3.4), Identification (§3.5), Authentication (§3.8), and
//! Nonce (§3.9), which has no head at all.
//!
//! ```text
//! Key Exchange payload body (§3.4):
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |   Diffie-Hellman Group Num    |           RESERVED            |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ~                       Key Exchange Data                       ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! Identification payload body (§3.5):
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |   ID Type     |                 RESERVED                      |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ~                   Identification Data                         ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! Authentication payload body (§3.8):
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Auth Method   |                RESERVED                       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ~                      Authentication Data                      ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! Nonce payload body (§3.9):
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ~                            Nonce Data                         ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use super::{be16, AuthMethod, DhGroup, IdType, IkeError, PayloadType};

/// Length of the head of the KE, ID and AUTH bodies.
const HEAD_LEN: usize = 4;

/// Shortest Nonce Data (§3.9: at least 128 bits).
pub const NONCE_MIN_LEN: usize = 16;
/// Longest Nonce Data (§3.9: at most 256 bytes).
pub const NONCE_MAX_LEN: usize = 256;

/// A Key Exchange payload (RFC 7296 §3.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ke {
    /// Diffie-Hellman Group Num.
    pub group: DhGroup,
    /// Key Exchange Data: the public value. Its length for the group is
    /// checked by the key exchange, not here.
    pub data: Vec<u8>,
}

impl Ke {
    pub(crate) fn parse(body: &[u8]) -> Result<Ke, IkeError> {
        if body.len() < HEAD_LEN {
            return Err(IkeError::Malformed(PayloadType::KE, "shorter than 4 bytes"));
        }
        Ok(Ke {
            group: DhGroup(be16(body, 0)),
            data: body[HEAD_LEN..].to_vec(),
        })
    }

    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.group.0.to_be_bytes());
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&self.data);
    }
}

/// An Identification payload, IDi or IDr (RFC 7296 §3.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Id {
    /// ID Type.
    pub ty: IdType,
    /// Identification Data: 4 bytes for ID_IPV4_ADDR, 16 for ID_IPV6_ADDR
    /// (checked by `parse`), the name's bytes otherwise.
    pub data: Vec<u8>,
}

impl Id {
    /// The payload body as AUTH signs it (RFC 7296 §2.15 "IDx'"): type, 3
    /// reserved, data.
    pub fn body(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEAD_LEN + self.data.len());
        self.emit(&mut out);
        out
    }

    pub(crate) fn parse(ty: PayloadType, body: &[u8]) -> Result<Id, IkeError> {
        if body.len() < HEAD_LEN {
            return Err(IkeError::Malformed(ty, "shorter than 4 bytes"));
        }
        let id = Id {
            ty: IdType(body[0]),
            data: body[HEAD_LEN..].to_vec(),
        };
        let want = match id.ty {
            IdType::IPV4_ADDR => Some(4),
            IdType::IPV6_ADDR => Some(16),
            _ => None,
        };
        if want.is_some_and(|n| n != id.data.len()) {
            return Err(IkeError::Malformed(ty, "address ID of the wrong length"));
        }
        Ok(id)
    }

    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[self.ty.0, 0, 0, 0]);
        out.extend_from_slice(&self.data);
    }
}

/// An Authentication payload (RFC 7296 §3.8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Auth {
    /// Auth Method.
    pub method: AuthMethod,
    /// Authentication Data.
    pub data: Vec<u8>,
}

impl Auth {
    pub(crate) fn parse(body: &[u8]) -> Result<Auth, IkeError> {
        if body.len() < HEAD_LEN {
            return Err(IkeError::Malformed(
                PayloadType::AUTH,
                "shorter than 4 bytes",
            ));
        }
        Ok(Auth {
            method: AuthMethod(body[0]),
            data: body[HEAD_LEN..].to_vec(),
        })
    }

    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[self.method.0, 0, 0, 0]);
        out.extend_from_slice(&self.data);
    }
}

/// Certificate Encoding (RFC 7296 §3.6): X.509 Certificate - Signature,
/// the only one flowsec sends or reads (the others are skipped).
pub const CERT_X509_SIGNATURE: u8 = 4;

/// A Certificate payload (§3.6) or a Certificate Request payload (§3.7):
/// the encoding and its data (a DER certificate; for CERTREQ, SHA-1
/// hashes of the acceptable CAs' SubjectPublicKeyInfo, 20 bytes each).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cert {
    /// Cert Encoding.
    pub encoding: u8,
    /// Certificate Data / Certification Authority.
    pub data: Vec<u8>,
}

impl Cert {
    pub(crate) fn parse(ty: PayloadType, body: &[u8]) -> Result<Cert, IkeError> {
        let (&encoding, data) = body
            .split_first()
            .ok_or(IkeError::Malformed(ty, "no Cert Encoding"))?;
        Ok(Cert {
            encoding,
            data: data.to_vec(),
        })
    }

    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.push(self.encoding);
        out.extend_from_slice(&self.data);
    }

    /// A CERTREQ's CA hashes (§3.7: 20-byte SHA-1 hashes, concatenated);
    /// a trailing partial hash is left out.
    pub fn authorities(&self) -> impl Iterator<Item = &[u8]> {
        self.data.chunks_exact(20)
    }
}

/// CFG Type of a Configuration payload (RFC 7296 §3.15).
pub const CFG_REQUEST: u8 = 1;
/// CFG_REPLY.
pub const CFG_REPLY: u8 = 2;
/// CFG_SET.
pub const CFG_SET: u8 = 3;
/// CFG_ACK.
pub const CFG_ACK: u8 = 4;

/// Configuration attribute types (RFC 7296 §3.15.1) flowsec uses.
pub mod cfg_attr {
    /// INTERNAL_IP4_ADDRESS: 0 or 4 octets.
    pub const INTERNAL_IP4_ADDRESS: u16 = 1;
    /// INTERNAL_IP4_NETMASK.
    pub const INTERNAL_IP4_NETMASK: u16 = 2;
    /// INTERNAL_IP4_DNS: 0 or 4 octets.
    pub const INTERNAL_IP4_DNS: u16 = 3;
    /// INTERNAL_IP6_ADDRESS: 0 or 17 octets (address, prefix length).
    pub const INTERNAL_IP6_ADDRESS: u16 = 8;
    /// INTERNAL_IP6_DNS: 0 or 16 octets.
    pub const INTERNAL_IP6_DNS: u16 = 10;
}

/// A Configuration payload (§3.15): its CFG Type and attributes (type
/// without the reserved high bit, value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cp {
    /// CFG Type.
    pub ty: u8,
    /// The attributes, in order.
    pub attrs: Vec<(u16, Vec<u8>)>,
}

impl Cp {
    pub(crate) fn parse(body: &[u8]) -> Result<Cp, IkeError> {
        let bad = |why| IkeError::Malformed(PayloadType::CP, why);
        if body.len() < HEAD_LEN {
            return Err(bad("shorter than 4 bytes"));
        }
        let mut attrs = Vec::new();
        let mut rest = &body[HEAD_LEN..];
        while !rest.is_empty() {
            if rest.len() < 4 {
                return Err(bad("attribute header cut"));
            }
            let ty = u16::from_be_bytes([rest[0], rest[1]]) & 0x7fff;
            let len = usize::from(u16::from_be_bytes([rest[2], rest[3]]));
            let value = rest
                .get(4..4 + len)
                .ok_or(bad("attribute longer than the payload"))?;
            attrs.push((ty, value.to_vec()));
            rest = &rest[4 + len..];
        }
        Ok(Cp { ty: body[0], attrs })
    }

    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[self.ty, 0, 0, 0]);
        for (ty, value) in &self.attrs {
            out.extend_from_slice(&(ty & 0x7fff).to_be_bytes());
            out.extend_from_slice(&(value.len() as u16).to_be_bytes());
            out.extend_from_slice(value);
        }
    }
}

/// Reads a Nonce payload body: [`NONCE_MIN_LEN`] to [`NONCE_MAX_LEN`]
/// bytes (§3.9).
pub(crate) fn parse_nonce(body: &[u8]) -> Result<Vec<u8>, IkeError> {
    if !(NONCE_MIN_LEN..=NONCE_MAX_LEN).contains(&body.len()) {
        return Err(IkeError::Malformed(
            PayloadType::NONCE,
            "not 16 to 256 bytes",
        ));
    }
    Ok(body.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_parse() {
        let ke = Ke::parse(&[0x00, 0x13, 0xff, 0xff, 1, 2, 3]).unwrap();
        assert_eq!(ke.group, DhGroup::ECP_256);
        assert_eq!(ke.data, [1, 2, 3]);
        let id = Id::parse(PayloadType::IDI, &[2, 9, 9, 9, b'a', b'.', b'b']).unwrap();
        assert_eq!((id.ty, &id.data[..]), (IdType::FQDN, &b"a.b"[..]));
        let id = Id::parse(PayloadType::IDR, &[1, 0, 0, 0, 192, 0, 2, 1]).unwrap();
        assert_eq!(id.ty, IdType::IPV4_ADDR);
        let auth = Auth::parse(&[2, 0, 0, 0, 0xaa]).unwrap();
        assert_eq!(auth.method, AuthMethod::SHARED_KEY_MIC);
        assert_eq!(auth.data, [0xaa]);
        assert_eq!(parse_nonce(&[7; 32]).unwrap(), vec![7; 32]);
    }

    #[test]
    fn test_emit() {
        let mut out = Vec::new();
        Ke {
            group: DhGroup::CURVE25519,
            data: vec![9; 32],
        }
        .emit(&mut out);
        assert_eq!(out[..4], [0, 31, 0, 0]);
        assert_eq!(Ke::parse(&out).unwrap().data, vec![9; 32]);
        let id = Id {
            ty: IdType::RFC822_ADDR,
            data: b"a@b".to_vec(),
        };
        assert_eq!(id.body(), [3, 0, 0, 0, b'a', b'@', b'b']);
        assert_eq!(Id::parse(PayloadType::IDI, &id.body()).unwrap(), id);
        let auth = Auth {
            method: AuthMethod::DIGITAL_SIGNATURE,
            data: vec![1; 40],
        };
        let mut out = Vec::new();
        auth.emit(&mut out);
        assert_eq!(Auth::parse(&out).unwrap(), auth);
    }

    #[test]
    fn test_check_len() {
        for n in 0..HEAD_LEN {
            let b = vec![0u8; n];
            assert!(Ke::parse(&b).is_err());
            assert!(Auth::parse(&b).is_err());
            assert_eq!(
                Id::parse(PayloadType::IDR, &b),
                Err(IkeError::Malformed(
                    PayloadType::IDR,
                    "shorter than 4 bytes"
                ))
            );
        }
        // Empty data after the head is fine at this layer.
        assert!(Ke::parse(&[0, 19, 0, 0]).unwrap().data.is_empty());
        // Address IDs of the wrong length.
        assert!(Id::parse(PayloadType::IDI, &[1, 0, 0, 0, 192, 0, 2]).is_err());
        assert!(Id::parse(PayloadType::IDI, &[5, 0, 0, 0, 1, 2, 3, 4]).is_err());
        assert!(Id::parse(PayloadType::IDI, &[5; 20]).is_ok());
        // Nonce bounds (§3.9).
        assert!(parse_nonce(&[0; NONCE_MIN_LEN - 1]).is_err());
        assert!(parse_nonce(&[0; NONCE_MIN_LEN]).is_ok());
        assert!(parse_nonce(&[0; NONCE_MAX_LEN]).is_ok());
        assert!(parse_nonce(&[0; NONCE_MAX_LEN + 1]).is_err());
        assert!(parse_nonce(&[]).is_err());
    }
}
