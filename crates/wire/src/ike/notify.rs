//! Notify (RFC 7296 §3.10) and Delete (§3.11) payload bodies.
//!
//! ```text
//! Notify payload body (§3.10):
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Protocol ID  |   SPI Size    |      Notify Message Type      |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ~                Security Parameter Index (SPI)                 ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ~                       Notification Data                       ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! Delete payload body (§3.11):
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Protocol ID   |   SPI Size    |          Num of SPIs          |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ~               Security Parameter Index(es) (SPI)              ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use super::{be16, be32, count8, IkeError, NotifyType, PayloadType, ProtocolId, MAX_SPIS};

/// Fixed part of both bodies.
const HEAD_LEN: usize = 4;
/// SPI Size of AH and ESP SPIs (§3.11).
const CHILD_SPI_LEN: usize = 4;

/// A Notify payload (RFC 7296 §3.10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notify {
    /// Protocol ID: 0 (or IKE) for notifications about the IKE SA, AH or
    /// ESP for those about a Child SA. Kept raw: §3.10 allows 0, which is
    /// not a [`ProtocolId`].
    pub protocol: u8,
    /// The SPI the notification is about; empty for the IKE SA. Any size
    /// that fits the payload is read.
    pub spi: Vec<u8>,
    /// Notify Message Type.
    pub ty: NotifyType,
    /// Notification Data.
    pub data: Vec<u8>,
}

impl Notify {
    /// A notification about the IKE SA (Protocol ID 0, no SPI, §3.10).
    pub fn new(ty: NotifyType, data: Vec<u8>) -> Notify {
        Notify {
            protocol: 0,
            spi: Vec::new(),
            ty,
            data,
        }
    }

    pub(crate) fn parse(body: &[u8]) -> Result<Notify, IkeError> {
        if body.len() < HEAD_LEN {
            return Err(IkeError::Malformed(
                PayloadType::NOTIFY,
                "shorter than 4 bytes",
            ));
        }
        let spi_end = HEAD_LEN + usize::from(body[1]);
        if spi_end > body.len() {
            return Err(IkeError::Malformed(
                PayloadType::NOTIFY,
                "SPI runs past the payload",
            ));
        }
        Ok(Notify {
            protocol: body[0],
            spi: body[HEAD_LEN..spi_end].to_vec(),
            ty: NotifyType(be16(body, 2)),
            data: body[spi_end..].to_vec(),
        })
    }

    /// # Panics
    /// If the SPI is over 255 bytes.
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[self.protocol, count8(self.spi.len(), "notify SPI size")]);
        out.extend_from_slice(&self.ty.0.to_be_bytes());
        out.extend_from_slice(&self.spi);
        out.extend_from_slice(&self.data);
    }
}

/// A Delete payload (RFC 7296 §3.11).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delete {
    /// IKE (the IKE SA of the message: SPI Size 0, no SPIs), AH or ESP.
    pub protocol: ProtocolId,
    /// The SPIs of the Child SAs to delete, as the recipient knows them
    /// (its inbound SPIs); empty for IKE.
    pub spis: Vec<u32>,
}

impl Delete {
    pub(crate) fn parse(body: &[u8]) -> Result<Delete, IkeError> {
        let malformed = |what| IkeError::Malformed(PayloadType::DELETE, what);
        if body.len() < HEAD_LEN {
            return Err(malformed("shorter than 4 bytes"));
        }
        let protocol = ProtocolId(body[0]);
        let spi_size = usize::from(body[1]);
        let num = usize::from(be16(body, 2));
        let want_size = match protocol {
            ProtocolId::IKE => 0,
            ProtocolId::AH | ProtocolId::ESP => CHILD_SPI_LEN,
            _ => return Err(malformed("Protocol ID not IKE, AH or ESP")),
        };
        if spi_size != want_size {
            return Err(malformed("SPI Size wrong for the protocol"));
        }
        if protocol == ProtocolId::IKE && num != 0 {
            return Err(malformed("SPIs in an IKE SA delete"));
        }
        if num > MAX_SPIS {
            return Err(malformed("more than MAX_SPIS SPIs"));
        }
        if body.len() != HEAD_LEN + num * spi_size {
            return Err(malformed("Num of SPIs disagrees with the payload length"));
        }
        let spis = body[HEAD_LEN..]
            .chunks_exact(CHILD_SPI_LEN)
            .map(|s| be32(s, 0))
            .collect();
        Ok(Delete { protocol, spis })
    }

    /// Writes SPI Size 0 and no SPIs for IKE (whatever `spis` holds), SPI
    /// Size 4 and `spis` otherwise.
    ///
    /// # Panics
    /// If there are over 65535 SPIs.
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        let spis: &[u32] = if self.protocol == ProtocolId::IKE {
            &[]
        } else {
            &self.spis
        };
        let size = if self.protocol == ProtocolId::IKE {
            0
        } else {
            CHILD_SPI_LEN as u8
        };
        let Ok(num) = u16::try_from(spis.len()) else {
            panic!("IKE Delete of {} SPIs does not fit Num of SPIs", spis.len());
        };
        out.extend_from_slice(&[self.protocol.0, size]);
        out.extend_from_slice(&num.to_be_bytes());
        for spi in spis {
            out.extend_from_slice(&spi.to_be_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // NAT_DETECTION_SOURCE_IP: no SPI, 20 bytes of SHA-1 (§2.23).
    const NAT_D: [u8; 24] = [
        0x00, 0x00, 0x40, 0x04, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
        0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14,
    ];
    // REKEY_SA for ESP SPI 0xc0ffee01, no data.
    const REKEY_SA: [u8; 8] = [0x03, 0x04, 0x40, 0x09, 0xc0, 0xff, 0xee, 0x01];
    // Delete of two ESP SPIs.
    const DELETE_ESP: [u8; 12] = [
        0x03, 0x04, 0x00, 0x02, 0xc0, 0xff, 0xee, 0x01, 0xc0, 0xff, 0xee, 0x02,
    ];

    #[test]
    fn test_parse() {
        let n = Notify::parse(&NAT_D).unwrap();
        assert_eq!(n.ty, NotifyType::NAT_DETECTION_SOURCE_IP);
        assert_eq!((n.protocol, n.spi.len()), (0, 0));
        assert_eq!(n.data, (1..=20).collect::<Vec<u8>>());
        let n = Notify::parse(&REKEY_SA).unwrap();
        assert_eq!((n.protocol, n.ty), (3, NotifyType::REKEY_SA));
        assert_eq!(n.spi, [0xc0, 0xff, 0xee, 0x01]);
        assert!(n.data.is_empty());
        let d = Delete::parse(&DELETE_ESP).unwrap();
        assert_eq!(d.protocol, ProtocolId::ESP);
        assert_eq!(d.spis, [0xc0ff_ee01, 0xc0ff_ee02]);
        let d = Delete::parse(&[1, 0, 0, 0]).unwrap();
        assert_eq!((d.protocol, d.spis.len()), (ProtocolId::IKE, 0));
    }

    #[test]
    fn test_emit() {
        for b in [&NAT_D[..], &REKEY_SA[..]] {
            let mut out = Vec::new();
            Notify::parse(b).unwrap().emit(&mut out);
            assert_eq!(out, b);
        }
        let mut out = Vec::new();
        Notify::new(NotifyType::INITIAL_CONTACT, vec![]).emit(&mut out);
        assert_eq!(out, [0, 0, 0x40, 0x00]);
        let mut out = Vec::new();
        Delete::parse(&DELETE_ESP).unwrap().emit(&mut out);
        assert_eq!(out, DELETE_ESP);
        let mut out = Vec::new();
        Delete {
            protocol: ProtocolId::IKE,
            spis: vec![7],
        }
        .emit(&mut out);
        assert_eq!(out, [1, 0, 0, 0]);
    }

    #[test]
    fn test_check_len() {
        for n in 0..HEAD_LEN {
            assert!(Notify::parse(&NAT_D[..n]).is_err());
            assert!(Delete::parse(&DELETE_ESP[..n]).is_err());
        }
        for n in HEAD_LEN..REKEY_SA.len() {
            assert!(Notify::parse(&REKEY_SA[..n]).is_err(), "len {n}");
        }
        for n in HEAD_LEN..DELETE_ESP.len() {
            assert!(Delete::parse(&DELETE_ESP[..n]).is_err(), "len {n}");
        }
        let mut long = DELETE_ESP.to_vec();
        long.push(0);
        assert!(Delete::parse(&long).is_err());
        // Wrong sizes, protocols and counts.
        assert!(Delete::parse(&[1, 4, 0, 0]).is_err());
        assert!(Delete::parse(&[1, 0, 0, 1]).is_err());
        assert!(Delete::parse(&[3, 8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]).is_err());
        assert!(Delete::parse(&[4, 4, 0, 0]).is_err());
        assert!(Delete::parse(&[3, 4, 0, 0]).unwrap().spis.is_empty());
        let mut many = vec![3, 4, 0x01, 0x01];
        many.resize(HEAD_LEN + 4 * 257, 1);
        assert_eq!(
            Delete::parse(&many),
            Err(IkeError::Malformed(
                PayloadType::DELETE,
                "more than MAX_SPIS SPIs"
            ))
        );
        many[2..4].copy_from_slice(&256u16.to_be_bytes());
        many.truncate(HEAD_LEN + 4 * 256);
        assert_eq!(Delete::parse(&many).unwrap().spis.len(), MAX_SPIS);
    }
}
