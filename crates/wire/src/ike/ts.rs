//! Traffic Selector payload bodies, TSi and TSr (RFC 7296 §3.13).
//!
//! ```text
//! Traffic Selectors payload body (§3.13):
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Number of TSs |                 RESERVED                      |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ~                       <Traffic Selectors>                     ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! Traffic Selector (§3.13.1):
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |   TS Type     |IP Protocol ID*|       Selector Length         |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |           Start Port*         |           End Port*           |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ~                         Starting Address*                     ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ~                         Ending Address*                       ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! TS_IPV4_ADDR_RANGE selectors are 16 bytes long, TS_IPV6_ADDR_RANGE
//! ones 40; other TS types (RFC 4595 Fibre Channel, RFC 9478 security
//! labels) are not read.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::{be16, count8, IkeError, PayloadType, TsType, MAX_TS};

/// Fixed part of the payload body, before the selectors.
const HEAD_LEN: usize = 4;
/// Selector Length of a TS_IPV4_ADDR_RANGE selector.
const V4_LEN: usize = 8 + 2 * 4;
/// Selector Length of a TS_IPV6_ADDR_RANGE selector.
const V6_LEN: usize = 8 + 2 * 16;

/// One traffic selector (RFC 7296 §3.13.1): an address range, a port
/// range and an IP protocol. The TS type follows from the addresses'
/// family; both addresses are of the same family.
///
/// Start after end is not an error: §3.13.1 uses start port 65535, end
/// port 0 for "OPAQUE" ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrafficSelector {
    /// IP protocol, 0 for any.
    pub ip_protocol: u8,
    /// Start Port (0 with end 65535: any port).
    pub start_port: u16,
    /// End Port.
    pub end_port: u16,
    /// Starting Address.
    pub start: IpAddr,
    /// Ending Address.
    pub end: IpAddr,
}

impl TrafficSelector {
    /// The TS type of this selector: from the family of `start`.
    pub fn ts_type(&self) -> TsType {
        match self.start {
            IpAddr::V4(_) => TsType::IPV4_ADDR_RANGE,
            IpAddr::V6(_) => TsType::IPV6_ADDR_RANGE,
        }
    }

    /// Reads the selector at the start of `b`; returns it and its length.
    fn parse(ty: PayloadType, b: &[u8]) -> Result<(TrafficSelector, usize), IkeError> {
        let malformed = |what| IkeError::Malformed(ty, what);
        if b.len() < 4 {
            return Err(malformed("selector runs past the payload"));
        }
        let (ts_type, len) = (TsType(b[0]), usize::from(be16(b, 2)));
        let want = match ts_type {
            TsType::IPV4_ADDR_RANGE => V4_LEN,
            TsType::IPV6_ADDR_RANGE => V6_LEN,
            _ => return Err(malformed("TS type not an IPv4 or IPv6 range")),
        };
        if len != want {
            return Err(malformed("Selector Length wrong for the TS type"));
        }
        if len > b.len() {
            return Err(malformed("selector runs past the payload"));
        }
        let addrs = &b[8..len];
        let (start, end) = if ts_type == TsType::IPV4_ADDR_RANGE {
            let mut s = [0; 4];
            let mut e = [0; 4];
            s.copy_from_slice(&addrs[..4]);
            e.copy_from_slice(&addrs[4..]);
            (Ipv4Addr::from(s).into(), Ipv4Addr::from(e).into())
        } else {
            let mut s = [0; 16];
            let mut e = [0; 16];
            s.copy_from_slice(&addrs[..16]);
            e.copy_from_slice(&addrs[16..]);
            (Ipv6Addr::from(s).into(), Ipv6Addr::from(e).into())
        };
        let ts = TrafficSelector {
            ip_protocol: b[1],
            start_port: be16(b, 4),
            end_port: be16(b, 6),
            start,
            end,
        };
        Ok((ts, len))
    }

    /// # Panics
    /// If `start` and `end` are of different families (the configuration
    /// must not build such a selector).
    fn emit(&self, out: &mut Vec<u8>) {
        let len = match self.start {
            IpAddr::V4(_) => V4_LEN,
            IpAddr::V6(_) => V6_LEN,
        };
        out.extend_from_slice(&[self.ts_type().0, self.ip_protocol, 0, len as u8]);
        out.extend_from_slice(&self.start_port.to_be_bytes());
        out.extend_from_slice(&self.end_port.to_be_bytes());
        match (self.start, self.end) {
            (IpAddr::V4(s), IpAddr::V4(e)) => {
                out.extend_from_slice(&s.octets());
                out.extend_from_slice(&e.octets());
            }
            (IpAddr::V6(s), IpAddr::V6(e)) => {
                out.extend_from_slice(&s.octets());
                out.extend_from_slice(&e.octets());
            }
            _ => panic!("traffic selector {self:?} mixes address families"),
        }
    }
}

/// Reads a TSi or TSr payload body (`ty` says which, for errors): one to
/// [`MAX_TS`] selectors, as many as Number of TSs says, filling the body.
pub(crate) fn parse_ts(ty: PayloadType, body: &[u8]) -> Result<Vec<TrafficSelector>, IkeError> {
    let malformed = |what| IkeError::Malformed(ty, what);
    if body.len() < HEAD_LEN {
        return Err(malformed("shorter than 4 bytes"));
    }
    let num = usize::from(body[0]);
    if num == 0 {
        return Err(malformed("Number of TSs 0"));
    }
    if num > MAX_TS {
        return Err(malformed("more than MAX_TS selectors"));
    }
    let mut rest = &body[HEAD_LEN..];
    let mut selectors = Vec::with_capacity(num);
    for _ in 0..num {
        let (ts, len) = TrafficSelector::parse(ty, rest)?;
        selectors.push(ts);
        rest = &rest[len..];
    }
    if !rest.is_empty() {
        return Err(malformed("data after the last selector"));
    }
    Ok(selectors)
}

/// Appends a TSi or TSr payload body to `out`.
///
/// # Panics
/// If there are over 255 selectors, or one mixes address families.
pub(crate) fn emit_ts(selectors: &[TrafficSelector], out: &mut Vec<u8>) {
    out.extend_from_slice(&[count8(selectors.len(), "number of TSs"), 0, 0, 0]);
    for ts in selectors {
        ts.emit(out);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    // strongSwan's TSi for 10.1.0.0/16, any protocol and port, then
    // 2001:db8::/32 UDP port 500 only.
    pub(crate) const TS_BODY: [u8; 60] = [
        0x02, 0x00, 0x00, 0x00, // 2 selectors
        0x07, 0x00, 0x00, 0x10, 0x00, 0x00, 0xff, 0xff, // v4, any, 16, ports 0-65535
        0x0a, 0x01, 0x00, 0x00, 0x0a, 0x01, 0xff, 0xff, // 10.1.0.0 - 10.1.255.255
        0x08, 0x11, 0x00, 0x28, 0x01, 0xf4, 0x01, 0xf4, // v6, UDP, 40, ports 500-500
        0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff,
    ];

    pub(crate) fn selectors() -> Vec<TrafficSelector> {
        vec![
            TrafficSelector {
                ip_protocol: 0,
                start_port: 0,
                end_port: 65535,
                start: Ipv4Addr::new(10, 1, 0, 0).into(),
                end: Ipv4Addr::new(10, 1, 255, 255).into(),
            },
            TrafficSelector {
                ip_protocol: 17,
                start_port: 500,
                end_port: 500,
                start: "2001:db8::".parse().unwrap(),
                end: "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff".parse().unwrap(),
            },
        ]
    }

    #[test]
    fn test_parse() {
        let ts = parse_ts(PayloadType::TSI, &TS_BODY).unwrap();
        assert_eq!(ts, selectors());
        assert_eq!(ts[0].ts_type(), TsType::IPV4_ADDR_RANGE);
        assert_eq!(ts[1].ts_type(), TsType::IPV6_ADDR_RANGE);
    }

    #[test]
    fn test_emit() {
        let mut out = Vec::new();
        emit_ts(&selectors(), &mut out);
        assert_eq!(out, TS_BODY);
        // OPAQUE ports (start > end) round-trip.
        let opaque = vec![TrafficSelector {
            start_port: 65535,
            end_port: 0,
            ..selectors()[0].clone()
        }];
        let mut out = Vec::new();
        emit_ts(&opaque, &mut out);
        assert_eq!(parse_ts(PayloadType::TSR, &out).unwrap(), opaque);
    }

    #[test]
    #[should_panic(expected = "mixes address families")]
    fn emit_refuses_mixed_families() {
        let mut ts = selectors();
        ts[0].end = Ipv6Addr::LOCALHOST.into();
        emit_ts(&ts, &mut Vec::new());
    }

    #[test]
    fn test_bad_fields() {
        let bad = |at: usize, v: u8| {
            let mut b = TS_BODY.to_vec();
            b[at] = v;
            parse_ts(PayloadType::TSR, &b)
        };
        let err = |r: Result<Vec<TrafficSelector>, IkeError>| {
            assert!(
                matches!(r, Err(IkeError::Malformed(PayloadType::TSR, _))),
                "{r:?}"
            );
        };
        err(bad(0, 0)); // no selectors
        err(bad(0, 1)); // one announced, two there
        err(bad(0, 3)); // three announced
        err(bad(0, MAX_TS as u8 + 1));
        err(bad(4, 8)); // v6 type with v4 length
        err(bad(4, 9)); // unknown TS type
        err(bad(7, 0x28)); // v4 type with v6 length
        err(bad(7, 0x0f));
        err(bad(23, 0x10)); // v6 type with v4 length
        err(bad(23, 0x29));
        // The second selector's type changed to v4: its length says 40.
        err(bad(20, 7));
        // Reserved bytes are ignored.
        assert!(bad(1, 0xff).is_ok());
    }

    #[test]
    fn test_check_len() {
        for n in 0..TS_BODY.len() {
            assert!(
                parse_ts(PayloadType::TSI, &TS_BODY[..n]).is_err(),
                "len {n}"
            );
        }
        let mut long = TS_BODY.to_vec();
        long.push(0);
        assert!(parse_ts(PayloadType::TSI, &long).is_err());
        // MAX_TS selectors read.
        let many = vec![selectors()[0].clone(); MAX_TS];
        let mut out = Vec::new();
        emit_ts(&many, &mut out);
        assert_eq!(parse_ts(PayloadType::TSI, &out).unwrap().len(), MAX_TS);
    }
}
