//! Traffic selectors (RFC 7296 §2.9, §3.13): from the configuration to the
//! wire, narrowing by the responder, and from negotiated selectors to the
//! SPD's prefix selectors.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use flowsec_ipsec::spd::{IpPrefix, PortRange};
use flowsec_ipsec::Selector;
use flowsec_wire::ike::TrafficSelector;

use crate::config::TsSpec;

/// Most selectors one side of a Child SA may carry once narrowed
/// (implementation limit: the SPD gets the cross product).
pub const MAX_NARROWED: usize = 16;

/// The configured selectors as sent, `dynamic` standing for `host` (the
/// IKE endpoint address, RFC 7296 §2.9: "the address of the IKE SA").
pub fn from_config(specs: &[TsSpec], host: IpAddr) -> Vec<TrafficSelector> {
    from_config_dynamic(specs, &[whole(host, host)])
}

/// A selector of all ports and protocols from `start` to `end`.
pub fn whole(start: IpAddr, end: IpAddr) -> TrafficSelector {
    TrafficSelector {
        ip_protocol: 0,
        start_port: 0,
        end_port: 0xffff,
        start,
        end,
    }
}

/// A family's whole address range (what an initiator asking for a
/// virtual IP proposes for `dynamic` until it has one, as strongSwan).
pub fn whole_family(v4: bool) -> TrafficSelector {
    if v4 {
        whole(Ipv4Addr::UNSPECIFIED.into(), Ipv4Addr::BROADCAST.into())
    } else {
        whole(
            Ipv6Addr::UNSPECIFIED.into(),
            Ipv6Addr::from(u128::MAX).into(),
        )
    }
}

/// The configured selectors as sent, `dynamic` standing for `dynamic`
/// (the IKE address, or the virtual IPs, RFC 7296 §2.9 and §3.15).
pub fn from_config_dynamic(specs: &[TsSpec], dynamic: &[TrafficSelector]) -> Vec<TrafficSelector> {
    let mut out: Vec<TrafficSelector> = specs
        .iter()
        .flat_map(|s| match s {
            TsSpec::Dynamic => dynamic.to_vec(),
            TsSpec::Range {
                start,
                end,
                protocol,
                start_port,
                end_port,
            } => vec![TrafficSelector {
                ip_protocol: *protocol,
                start_port: *start_port,
                end_port: *end_port,
                start: *start,
                end: *end,
            }],
        })
        .collect();
    if out.is_empty() {
        out.extend_from_slice(dynamic);
    }
    out
}

/// The responder's narrowing (§2.9): every non-empty intersection of one
/// of the peer's selectors with one of ours, in the peer's order, at most
/// [`MAX_NARROWED`]. Empty: TS_UNACCEPTABLE.
pub fn narrow(proposed: &[TrafficSelector], ours: &[TrafficSelector]) -> Vec<TrafficSelector> {
    let mut out = Vec::new();
    for p in proposed {
        for o in ours {
            if let Some(i) = intersect(p, o) {
                if !out.contains(&i) && out.len() < MAX_NARROWED {
                    out.push(i);
                }
            }
        }
    }
    out
}

/// Whether every selector of `answer` lies inside one of `offered` (the
/// initiator's check that the responder only narrowed).
pub fn within(answer: &[TrafficSelector], offered: &[TrafficSelector]) -> bool {
    !answer.is_empty()
        && answer
            .iter()
            .all(|a| offered.iter().any(|o| intersect(a, o).as_ref() == Some(a)))
}

fn intersect(a: &TrafficSelector, b: &TrafficSelector) -> Option<TrafficSelector> {
    let protocol = match (a.ip_protocol, b.ip_protocol) {
        (0, p) | (p, 0) => p,
        (p, q) if p == q => p,
        _ => return None,
    };
    let start_port = a.start_port.max(b.start_port);
    let end_port = a.end_port.min(b.end_port);
    if start_port > end_port {
        return None;
    }
    let (start, end) = match (a.start, a.end, b.start, b.end) {
        (IpAddr::V4(s1), IpAddr::V4(e1), IpAddr::V4(s2), IpAddr::V4(e2)) => {
            let (s, e) = (s1.max(s2), e1.min(e2));
            (s <= e).then_some((IpAddr::V4(s), IpAddr::V4(e)))?
        }
        (IpAddr::V6(s1), IpAddr::V6(e1), IpAddr::V6(s2), IpAddr::V6(e2)) => {
            let (s, e) = (s1.max(s2), e1.min(e2));
            (s <= e).then_some((IpAddr::V6(s), IpAddr::V6(e)))?
        }
        _ => return None,
    };
    Some(TrafficSelector {
        ip_protocol: protocol,
        start_port,
        end_port,
        start,
        end,
    })
}

/// The smallest list of prefixes that covers exactly `start..=end`.
pub fn range_to_prefixes(start: IpAddr, end: IpAddr) -> Vec<IpPrefix> {
    let (s, e, bits, v4) = match (start, end) {
        (IpAddr::V4(s), IpAddr::V4(e)) => (
            u128::from(u32::from(s)),
            u128::from(u32::from(e)),
            32u32,
            true,
        ),
        (IpAddr::V6(s), IpAddr::V6(e)) => (u128::from(s), u128::from(e), 128u32, false),
        _ => return Vec::new(),
    };
    let mut out = Vec::new();
    let mut cur = s;
    while cur <= e && out.len() < 256 {
        // The largest block aligned at `cur` that stays within `e`.
        let align = if cur == 0 {
            bits
        } else {
            cur.trailing_zeros().min(bits)
        };
        let left = e - cur;
        let fit = match left.checked_add(1) {
            Some(n) => 127 - n.leading_zeros(),
            None => 128,
        };
        let size = align.min(fit);
        let addr = if v4 {
            IpAddr::V4(Ipv4Addr::from(cur as u32))
        } else {
            IpAddr::V6(Ipv6Addr::from(cur))
        };
        // Aligned by construction, so the prefix is valid.
        if let Some(p) = IpPrefix::new(addr, (bits - size) as u8) {
            out.push(p);
        }
        match 1u128
            .checked_shl(size)
            .and_then(|step| cur.checked_add(step))
        {
            Some(next) if size < 128 => cur = next,
            _ => break,
        }
    }
    out
}

/// Most SPD selectors one direction of a Child SA may need (implementation
/// limit: a peer's selectors must not turn into unbounded policies).
pub const MAX_SELECTORS: usize = 256;

/// How many SPD selectors [`selectors`] makes of these, counting no
/// further than just past [`MAX_SELECTORS`].
pub fn selector_count(src: &[TrafficSelector], dst: &[TrafficSelector]) -> usize {
    let mut n = 0usize;
    for s in src {
        for d in dst {
            if s.start.is_ipv4() != d.start.is_ipv4() {
                continue;
            }
            let a = range_to_prefixes(s.start, s.end).len();
            let b = range_to_prefixes(d.start, d.end).len();
            n = n.saturating_add(a.saturating_mul(b));
            if n > MAX_SELECTORS {
                return n;
            }
        }
    }
    n
}

/// The SPD selectors from `src` selectors to `dst` selectors: the cross
/// product of their prefixes, with protocol and ports (a selector pair of
/// different families yields nothing; OPAQUE port ranges map to any).
pub fn selectors(src: &[TrafficSelector], dst: &[TrafficSelector]) -> Vec<Selector> {
    let mut out = Vec::new();
    for s in src {
        for d in dst {
            if s.start.is_ipv4() != d.start.is_ipv4() {
                continue;
            }
            let protocol = match (s.ip_protocol, d.ip_protocol) {
                (0, 0) => None,
                (0, p) | (p, 0) => Some(p),
                (p, q) if p == q => Some(p),
                _ => continue,
            };
            for sp in range_to_prefixes(s.start, s.end) {
                for dp in range_to_prefixes(d.start, d.end) {
                    out.push(Selector {
                        src: sp,
                        dst: dp,
                        protocol,
                        src_ports: ports(s),
                        dst_ports: ports(d),
                    });
                }
            }
        }
    }
    out
}

fn ports(t: &TrafficSelector) -> PortRange {
    if t.start_port > t.end_port {
        PortRange::ANY
    } else {
        PortRange {
            start: t.start_port,
            end: t.end_port,
        }
    }
}

/// `10.1.0.0/24` or `10.1.0.1-10.1.0.9`, with `[proto/port]` if narrowed.
pub(crate) fn ts_string(t: &TrafficSelector) -> String {
    let prefixes = range_to_prefixes(t.start, t.end);
    let mut s = if prefixes.len() == 1 {
        format!("{}/{}", prefixes[0].addr(), prefixes[0].prefix_len())
    } else {
        format!("{}-{}", t.start, t.end)
    };
    if t.ip_protocol != 0 || t.start_port != 0 || t.end_port != 0xffff {
        let ports = if t.start_port == 0 && t.end_port == 0xffff {
            String::new()
        } else if t.start_port == t.end_port {
            format!("/{}", t.start_port)
        } else {
            format!("/{}-{}", t.start_port, t.end_port)
        };
        s += &format!("[{}{ports}]", t.ip_protocol);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str, e: &str) -> TrafficSelector {
        TrafficSelector {
            ip_protocol: 0,
            start_port: 0,
            end_port: 0xffff,
            start: s.parse().unwrap(),
            end: e.parse().unwrap(),
        }
    }

    #[test]
    fn narrowing_takes_the_intersection() {
        let peer = [ts("10.0.0.0", "10.255.255.255")];
        let ours = [
            ts("10.1.0.0", "10.1.0.255"),
            ts("192.168.0.0", "192.168.0.255"),
        ];
        assert_eq!(narrow(&peer, &ours), vec![ts("10.1.0.0", "10.1.0.255")]);
        assert!(narrow(&[ts("172.16.0.0", "172.16.0.255")], &ours).is_empty());
        assert!(within(&[ts("10.1.0.0", "10.1.0.255")], &peer));
        assert!(!within(&[ts("9.0.0.0", "10.1.0.255")], &peer));
        let mut tcp = ts("10.1.0.0", "10.1.0.255");
        tcp.ip_protocol = 6;
        let mut udp = tcp.clone();
        udp.ip_protocol = 17;
        assert!(narrow(&[tcp.clone()], &[udp]).is_empty());
        assert_eq!(narrow(&[tcp.clone()], &ours), vec![tcp]);
        assert!(narrow(&[ts("::", "::ffff")], &ours).is_empty());
    }

    #[test]
    fn ranges_become_prefixes() {
        let p = |s: &str, e: &str| -> Vec<String> {
            range_to_prefixes(s.parse().unwrap(), e.parse().unwrap())
                .iter()
                .map(|p| format!("{}/{}", p.addr(), p.prefix_len()))
                .collect()
        };
        assert_eq!(p("10.1.0.0", "10.1.0.255"), ["10.1.0.0/24"]);
        assert_eq!(p("0.0.0.0", "255.255.255.255"), ["0.0.0.0/0"]);
        assert_eq!(
            p("10.0.0.1", "10.0.0.6"),
            ["10.0.0.1/32", "10.0.0.2/31", "10.0.0.4/31", "10.0.0.6/32"]
        );
        assert_eq!(p("::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), ["::/0"]);
        assert_eq!(p("fd00::", "fd00::ffff"), ["fd00::/112"]);
        assert_eq!(p("192.0.2.7", "192.0.2.7"), ["192.0.2.7/32"]);
    }

    #[test]
    fn selectors_are_the_cross_product() {
        let s = selectors(
            &[ts("10.1.0.0", "10.1.0.255")],
            &[ts("10.2.0.0", "10.2.0.255"), ts("fd00::", "fd00::ffff")],
        );
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].src.prefix_len(), 24);
        assert_eq!(s[0].protocol, None);
    }
}
