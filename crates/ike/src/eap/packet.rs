//! EAP packets (RFC 3748 §4) and the EAP-MSCHAPv2 messages inside them
//! (draft-kamath-pppext-eap-mschapv2-02 §2): parsed within bounds, every
//! malformed one `None`.
//!
//! ```text
//! | Code | Identifier | Length (2) | Type | Type-Data ...
//! MSCHAPv2: | OpCode | MS-CHAPv2-ID | MS-Length (2) | Value-Size | Value | Name
//! ```

/// Code: Request.
pub const REQUEST: u8 = 1;
/// Code: Response.
pub const RESPONSE: u8 = 2;
/// Code: Success.
pub const SUCCESS: u8 = 3;
/// Code: Failure.
pub const FAILURE: u8 = 4;
/// Type: Identity.
pub const IDENTITY: u8 = 1;
/// Type: Nak (a peer proposing another method).
pub const NAK: u8 = 3;
/// Type: EAP-MSCHAPv2.
pub const MSCHAPV2: u8 = 26;

/// MS-CHAPv2 OpCode: Challenge.
pub const OP_CHALLENGE: u8 = 1;
/// OpCode: Response.
pub const OP_RESPONSE: u8 = 2;
/// OpCode: Success.
pub const OP_SUCCESS: u8 = 3;
/// OpCode: Failure.
pub const OP_FAILURE: u8 = 4;

/// The longest identity or MS-CHAPv2 name taken (RFC 2759's user names
/// are at most 256 octets).
pub const MAX_NAME: usize = 255;

/// One EAP packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// Code.
    pub code: u8,
    /// Identifier.
    pub id: u8,
    /// Type (Request and Response only).
    pub ty: Option<u8>,
    /// Type-Data.
    pub data: Vec<u8>,
}

impl Packet {
    /// Parses one packet; the Length field must be the whole of `b`.
    pub fn parse(b: &[u8]) -> Option<Packet> {
        if b.len() < 4 || usize::from(u16::from_be_bytes([b[2], b[3]])) != b.len() {
            return None;
        }
        let (code, id) = (b[0], b[1]);
        match code {
            REQUEST | RESPONSE => {
                let (&ty, data) = b[4..].split_first()?;
                Some(Packet {
                    code,
                    id,
                    ty: Some(ty),
                    data: data.to_vec(),
                })
            }
            SUCCESS | FAILURE if b.len() == 4 => Some(Packet {
                code,
                id,
                ty: None,
                data: Vec::new(),
            }),
            _ => None,
        }
    }

    /// The packet's octets.
    pub fn emit(&self) -> Vec<u8> {
        let len = 4 + usize::from(self.ty.is_some()) + self.data.len();
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(&[self.code, self.id]);
        out.extend_from_slice(&(len as u16).to_be_bytes());
        if let Some(t) = self.ty {
            out.push(t);
        }
        out.extend_from_slice(&self.data);
        out
    }

    /// A Request or Response of `ty` with `data`.
    pub fn new(code: u8, id: u8, ty: u8, data: Vec<u8>) -> Packet {
        Packet {
            code,
            id,
            ty: Some(ty),
            data,
        }
    }

    /// Success or Failure.
    pub fn result(code: u8, id: u8) -> Packet {
        Packet {
            code,
            id,
            ty: None,
            data: Vec::new(),
        }
    }
}

/// An MS-CHAPv2 message: OpCode, MS-CHAPv2-ID and what follows MS-Length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MsChap {
    /// OpCode.
    pub op: u8,
    /// MS-CHAPv2-ID.
    pub ms_id: u8,
    /// The rest (Value-Size, Value, Name; or a Success/Failure message).
    pub rest: Vec<u8>,
}

impl MsChap {
    /// The MS-CHAPv2 message in an EAP-MSCHAPv2 packet's Type-Data; a
    /// peer's Success or Failure answer is the OpCode alone.
    pub fn parse(data: &[u8]) -> Option<MsChap> {
        let (&op, rest) = data.split_first()?;
        if rest.is_empty() && matches!(op, OP_SUCCESS | OP_FAILURE) {
            return Some(MsChap {
                op,
                ms_id: 0,
                rest: Vec::new(),
            });
        }
        if rest.len() < 3 {
            return None;
        }
        let ms_len = usize::from(u16::from_be_bytes([rest[1], rest[2]]));
        // MS-Length counts from the OpCode (the EAP length less 5).
        if ms_len != data.len() {
            return None;
        }
        Some(MsChap {
            op,
            ms_id: rest[0],
            rest: rest[3..].to_vec(),
        })
    }

    /// The Type-Data octets.
    pub fn emit(&self) -> Vec<u8> {
        let mut out = vec![self.op, self.ms_id];
        out.extend_from_slice(&((4 + self.rest.len()) as u16).to_be_bytes());
        out.extend_from_slice(&self.rest);
        out
    }

    /// A peer's Success or Failure answer: the OpCode alone.
    pub fn short(op: u8) -> Vec<u8> {
        vec![op]
    }
}

/// A Challenge's value (16 octets) and the authenticator's name.
pub fn challenge_of(m: &MsChap) -> Option<([u8; 16], &[u8])> {
    let (&size, rest) = m.rest.split_first()?;
    if size != 16 || rest.len() < 16 {
        return None;
    }
    let value: [u8; 16] = rest[..16].try_into().ok()?;
    Some((value, &rest[16..rest.len().min(16 + MAX_NAME)]))
}

/// A Response's peer challenge, NT-Response and name.
pub fn response_of(m: &MsChap) -> Option<([u8; 16], [u8; 24], &[u8])> {
    let (&size, rest) = m.rest.split_first()?;
    if size != 49 || rest.len() < 49 {
        return None;
    }
    let peer: [u8; 16] = rest[..16].try_into().ok()?;
    let nt: [u8; 24] = rest[24..48].try_into().ok()?;
    let name = &rest[49..];
    if name.len() > MAX_NAME {
        return None;
    }
    Some((peer, nt, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_round_trip_and_hostile_ones_are_refused() {
        let p = Packet::new(REQUEST, 7, IDENTITY, vec![]);
        assert_eq!(Packet::parse(&p.emit()), Some(p));
        let s = Packet::result(SUCCESS, 9);
        assert_eq!(s.emit(), [3, 9, 0, 4]);
        assert_eq!(Packet::parse(&s.emit()), Some(s));
        let m = MsChap {
            op: OP_CHALLENGE,
            ms_id: 3,
            rest: vec![16; 20],
        };
        assert_eq!(MsChap::parse(&m.emit()), Some(m));
        for bad in [
            &[][..],
            &[1, 1, 0, 9, 1],
            &[1, 1, 0, 4],
            &[3, 1, 0, 5, 0],
            &[9, 1, 0, 4],
        ] {
            assert_eq!(Packet::parse(bad), None, "{bad:?}");
        }
        assert_eq!(MsChap::parse(&[OP_RESPONSE, 1, 0, 99]), None);
        assert_eq!(MsChap::parse(&[OP_SUCCESS]).map(|m| m.op), Some(OP_SUCCESS));
    }
}
