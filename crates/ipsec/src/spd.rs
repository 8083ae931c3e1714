//! The Security Policy Database (RFC 4301 §4.4.1): ordered policies with
//! traffic selectors, each saying PROTECT (with which SAs), BYPASS or
//! DISCARD.
//!
//! Lookup is first match in order (setkey's order, then priority). Two
//! policies in the same direction and priority whose selectors overlap are
//! refused: their order would silently decide which one applies.

use core::fmt;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use flowsec_wire::iana::IpProtocol;
use flowsec_wire::ip::{version_of, IpVersion};
use flowsec_wire::ipv4::Ipv4Packet;
use flowsec_wire::ipv6::Ipv6Packet;
use flowsec_wire::ipv6ext::ipv6_header_chain;

use crate::sa::{Mode, Protocol};
use crate::DropReason;

/// Which traffic a policy applies to (setkey `-P in|out|fwd`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Arriving for this host (or after decapsulation, for the inbound check).
    In,
    /// Leaving this host.
    Out,
    /// Forwarded through this host (a gateway's decapsulated traffic).
    Fwd,
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::In => "in",
            Direction::Out => "out",
            Direction::Fwd => "fwd",
        })
    }
}

/// An address prefix, `10.1.0.0/16` or `fd00::/64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpPrefix {
    addr: IpAddr,
    len: u8,
}

impl IpPrefix {
    /// A prefix; the address is masked to `len` bits. `None` if `len` is
    /// longer than the address.
    pub fn new(addr: IpAddr, len: u8) -> Option<Self> {
        let max = if addr.is_ipv4() { 32 } else { 128 };
        (len <= max).then(|| IpPrefix {
            addr: mask(addr, len),
            len,
        })
    }

    /// The host prefix (/32 or /128) of `addr`.
    pub fn host(addr: IpAddr) -> Self {
        IpPrefix {
            addr,
            len: if addr.is_ipv4() { 32 } else { 128 },
        }
    }

    /// The (masked) address.
    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    /// The prefix length.
    pub fn prefix_len(&self) -> u8 {
        self.len
    }

    /// Whether `addr` is inside the prefix.
    pub fn contains(&self, addr: IpAddr) -> bool {
        addr.is_ipv4() == self.addr.is_ipv4() && mask(addr, self.len) == self.addr
    }

    /// Whether the two prefixes share an address.
    pub fn overlaps(&self, other: &IpPrefix) -> bool {
        let len = self.len.min(other.len);
        self.addr.is_ipv4() == other.addr.is_ipv4() && mask(self.addr, len) == mask(other.addr, len)
    }
}

impl fmt::Display for IpPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

fn mask(addr: IpAddr, len: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let m = if len == 0 {
                0
            } else {
                u32::MAX << (32 - u32::from(len))
            };
            IpAddr::V4((u32::from(a) & m).into())
        }
        IpAddr::V6(a) => {
            let m = if len == 0 {
                0
            } else {
                u128::MAX << (128 - u32::from(len))
            };
            IpAddr::V6((u128::from(a) & m).into())
        }
    }
}

/// An inclusive port range; `0..=65535` is "any".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PortRange {
    /// Lowest port.
    pub start: u16,
    /// Highest port.
    pub end: u16,
}

impl PortRange {
    /// Every port.
    pub const ANY: PortRange = PortRange {
        start: 0,
        end: u16::MAX,
    };

    /// One port.
    pub fn single(port: u16) -> Self {
        PortRange {
            start: port,
            end: port,
        }
    }

    fn contains(&self, port: u16) -> bool {
        (self.start..=self.end).contains(&port)
    }

    fn overlaps(&self, other: &PortRange) -> bool {
        self.start <= other.end && other.start <= self.end
    }
}

/// RFC 4301 §4.4.1.1 selectors: addresses, next-layer protocol and ports.
/// For ICMP the "ports" are the message type and code (RFC 4301 §4.4.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Selector {
    /// Source prefix.
    pub src: IpPrefix,
    /// Destination prefix.
    pub dst: IpPrefix,
    /// Upper-layer protocol; `None` is any.
    pub protocol: Option<u8>,
    /// Source ports.
    pub src_ports: PortRange,
    /// Destination ports.
    pub dst_ports: PortRange,
}

impl Selector {
    /// Any traffic from `src` to `dst`.
    pub fn between(src: IpPrefix, dst: IpPrefix) -> Self {
        Selector {
            src,
            dst,
            protocol: None,
            src_ports: PortRange::ANY,
            dst_ports: PortRange::ANY,
        }
    }

    /// Whether the flow matches.
    pub fn matches(&self, flow: &Flow) -> bool {
        self.src.contains(flow.src)
            && self.dst.contains(flow.dst)
            && self.protocol.is_none_or(|p| p == flow.protocol)
            && self.src_ports.contains(flow.src_port)
            && self.dst_ports.contains(flow.dst_port)
    }

    /// Whether some flow could match both.
    pub fn overlaps(&self, other: &Selector) -> bool {
        self.src.overlaps(&other.src)
            && self.dst.overlaps(&other.dst)
            && match (self.protocol, other.protocol) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
            && self.src_ports.overlaps(&other.src_ports)
            && self.dst_ports.overlaps(&other.dst_ports)
    }
}

/// The selector fields of one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Flow {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Upper-layer protocol. For a later IPv6 fragment, the Fragment
    /// header's Next Header: the first header of the datagram's
    /// fragmentable part (RFC 8200 §4.5), which may be Destination Options
    /// or Routing, and then the protocol is unknown ([`Flow::protocol_known`]).
    pub protocol: u8,
    /// Source port (ICMP: type), 0 if none.
    pub src_port: u16,
    /// Destination port (ICMP: code), 0 if none.
    pub dst_port: u16,
    /// Part of a fragmented datagram. A non-first fragment carries no
    /// ports (RFC 4301 §4.4.1.1 "OPAQUE": both 0 here), so a lookup that
    /// depends on ports cannot decide it: see [`Spd::lookup_opaque`].
    pub fragment: bool,
}

impl Flow {
    /// Whether `protocol` is the datagram's upper-layer protocol. Not for
    /// a later IPv6 fragment whose Fragment header names an extension
    /// header (HOPOPT, IPV6_ROUTE, IPV6_FRAG, IPV6_OPTS): only the first
    /// fragment has what follows it. A first fragment or a whole packet
    /// has its chain walked past them.
    pub fn protocol_known(&self) -> bool {
        !(self.fragment && self.src.is_ipv6() && matches!(self.protocol, 0 | 43 | 44 | 60))
    }

    /// The selector fields of an IP packet (RFC 4301 §4.4.1.1): addresses,
    /// upper-layer protocol, and TCP/UDP/SCTP ports or ICMP type and code.
    /// Non-first fragments have no ports (they count as "OPAQUE": 0).
    pub fn of_packet(packet: &[u8]) -> Result<Flow, DropReason> {
        // `fragment`: any fragment; `opaque`: one without the first
        // bytes of the upper layer (offset not 0).
        let version = version_of(packet).map_err(|_| DropReason::BadIpHeader)?;
        let (src, dst, protocol, upper, fragment, opaque) = match version {
            IpVersion::V4 => {
                let p = Ipv4Packet::new_checked(packet).map_err(|_| DropReason::BadIpHeader)?;
                let upper = &packet[p.header_len()..usize::from(p.total_len())];
                (
                    p.src_addr().into(),
                    p.dst_addr().into(),
                    p.next_header().0,
                    upper,
                    p.is_fragment(),
                    p.frag_offset() != 0,
                )
            }
            IpVersion::V6 => {
                let p = Ipv6Packet::new_checked(packet).map_err(|_| DropReason::BadIpHeader)?;
                let chain =
                    ipv6_header_chain(packet).map_err(|_| DropReason::BadExtensionHeaders)?;
                let upper =
                    &packet[chain.upper_offset().min(chain.packet_len())..chain.packet_len()];
                let fragment = chain.has_fragment();
                (
                    p.src_addr().into(),
                    p.dst_addr().into(),
                    chain.upper_protocol().0,
                    upper,
                    fragment,
                    // The chain's upper offset is the first fragment's data;
                    // a later fragment's data is not an upper-layer header.
                    fragment && chain.fragment_offset() != 0,
                )
            }
        };
        let first = !fragment || !opaque;
        let (src_port, dst_port) = match (IpProtocol(protocol), upper) {
            (_, _) if !first => (0, 0),
            (IpProtocol::TCP | IpProtocol::UDP | SCTP, [a, b, c, d, ..]) => {
                (u16::from_be_bytes([*a, *b]), u16::from_be_bytes([*c, *d]))
            }
            (IpProtocol::ICMP | IpProtocol::ICMPV6, [t, c, ..]) => (u16::from(*t), u16::from(*c)),
            _ => (0, 0),
        };
        Ok(Flow {
            src,
            dst,
            protocol,
            src_port,
            dst_port,
            fragment,
        })
    }
}

/// SCTP (RFC 9260) carries ports where TCP and UDP do.
const SCTP: IpProtocol = IpProtocol(132);

/// How strictly an SA of a template is required (setkey levels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Level {
    /// `require`: no SA, no traffic.
    Require,
    /// `use`: apply the SA if there is one, else skip this step.
    Use,
    /// `unique`: like require, bound to the SA with the policy's reqid.
    Unique,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Require => "require",
            Level::Use => "use",
            Level::Unique => "unique",
        })
    }
}

/// One step of a PROTECT policy's bundle: which kind of SA to apply
/// (setkey's `esp/tunnel/192.0.2.1-192.0.2.2/require`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SaTemplate {
    /// ESP, AH or IPComp.
    pub protocol: Protocol,
    /// Tunnel or transport.
    pub mode: Mode,
    /// Tunnel endpoints (source, destination); for transport mode `None`:
    /// the packet's own addresses.
    pub tunnel: Option<(IpAddr, IpAddr)>,
    /// Required, optional or unique.
    pub level: Level,
    /// Request id binding to specific SAs (0: any).
    pub reqid: u32,
}

/// What to do with matching traffic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send or accept in the clear.
    Bypass,
    /// Drop.
    Discard,
    /// Apply these SAs, innermost first (setkey order: `ipcomp esp ah`).
    Protect(Vec<SaTemplate>),
}

/// One SPD entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Direction.
    pub direction: Direction,
    /// Traffic it applies to.
    pub selector: Selector,
    /// What it does.
    pub action: Action,
    /// Lower is consulted first (setkey `prio`); default 0.
    pub priority: i32,
}

/// What [`Spd::lookup_opaque`] can say of a fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpaqueLookup<'a> {
    /// The policy (or none) whatever the ports.
    Decided(Option<&'a Policy>),
    /// The ports decide: look the whole datagram up.
    NeedsPorts,
}

/// Why a policy could not be added or removed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpdError {
    /// A policy with the same direction and selector exists.
    Exists,
    /// A policy with the same direction and priority overlaps this one.
    Overlaps(Selector),
    /// No such policy.
    NotFound,
}

impl fmt::Display for SpdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpdError::Exists => f.write_str("a policy with the same selector and direction exists"),
            SpdError::Overlaps(s) => write!(
                f,
                "overlaps the existing policy {} -> {}; give one a different priority",
                s.src, s.dst
            ),
            SpdError::NotFound => f.write_str("no such policy"),
        }
    }
}

impl std::error::Error for SpdError {}

/// The ordered policy list.
#[derive(Debug, Clone)]
pub struct Spd {
    policies: Vec<Policy>,
    /// Which list this is ([`Spd::generation`]).
    generation: u64,
}

/// Generations of every [`Spd`] in the process, so that no two lists
/// (nor one list before and after a change) ever share one.
static GENERATIONS: AtomicU64 = AtomicU64::new(1);

fn next_generation() -> u64 {
    GENERATIONS.fetch_add(1, Ordering::Relaxed)
}

impl Default for Spd {
    fn default() -> Self {
        Spd {
            policies: Vec::new(),
            generation: next_generation(),
        }
    }
}

impl Spd {
    /// An empty SPD (everything matches nothing: the caller's default
    /// applies).
    pub fn new() -> Self {
        Spd::default()
    }

    /// Add a policy after all policies of equal or lower priority value.
    pub fn add(&mut self, policy: Policy) -> Result<(), SpdError> {
        for p in self
            .policies
            .iter()
            .filter(|p| p.direction == policy.direction)
        {
            if p.selector == policy.selector {
                return Err(SpdError::Exists);
            }
            if p.priority == policy.priority && p.selector.overlaps(&policy.selector) {
                return Err(SpdError::Overlaps(p.selector));
            }
        }
        let at = self
            .policies
            .iter()
            .position(|p| p.priority > policy.priority)
            .unwrap_or(self.policies.len());
        self.policies.insert(at, policy);
        self.generation = next_generation();
        Ok(())
    }

    /// Remove the policy with this direction and selector.
    pub fn remove(
        &mut self,
        direction: Direction,
        selector: &Selector,
    ) -> Result<Policy, SpdError> {
        let at = self
            .policies
            .iter()
            .position(|p| p.direction == direction && p.selector == *selector)
            .ok_or(SpdError::NotFound)?;
        self.generation = next_generation();
        Ok(self.policies.remove(at))
    }

    /// Remove every policy.
    pub fn flush(&mut self) {
        self.generation = next_generation();
        self.policies.clear();
    }

    /// The first policy matching `flow` in `direction`.
    pub fn lookup(&self, direction: Direction, flow: &Flow) -> Option<&Policy> {
        self.lookup_at(direction, flow).map(|at| &self.policies[at])
    }

    /// Like [`Spd::lookup`], the policy's position in the list: for a cache
    /// of lookups, with [`Spd::get`] and [`Spd::generation`].
    pub fn lookup_at(&self, direction: Direction, flow: &Flow) -> Option<usize> {
        self.policies
            .iter()
            .position(|p| p.direction == direction && p.selector.matches(flow))
    }

    /// The policy at position `at` ([`Spd::lookup_at`]).
    pub fn get(&self, at: usize) -> Option<&Policy> {
        self.policies.get(at)
    }

    /// Changes whenever the policies do, and no two lists in the process
    /// (a replacement, a clone that was changed) ever share one: while it
    /// is the same, every lookup gives the same answer, so a cache of
    /// lookups keyed by flow is valid exactly as long as it is.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The lookup for a fragment, whose ports a non-first fragment does not
    /// carry (RFC 4301 §7): `Decided` when the result cannot depend on the
    /// ports (the first policy that matches the addresses and protocol
    /// takes every port, and no policy before it names ports), else
    /// `NeedsPorts` — the caller must reassemble the datagram and look it
    /// up whole (RFC 4301 §7.3's stateful checking comes to the same: the
    /// decision waits for the first fragment). A fragment is never sent
    /// or accepted by a guess at its ports.
    pub fn lookup_opaque(&self, direction: Direction, flow: &Flow) -> OpaqueLookup<'_> {
        match self.candidates(direction, flow).next() {
            None => OpaqueLookup::Decided(None),
            // Without the protocol, only a policy for every protocol
            // decides alone.
            Some(p)
                if p.selector.src_ports == PortRange::ANY
                    && p.selector.dst_ports == PortRange::ANY
                    && (flow.protocol_known() || p.selector.protocol.is_none()) =>
            {
                OpaqueLookup::Decided(Some(p))
            }
            Some(_) => OpaqueLookup::NeedsPorts,
        }
    }

    /// The candidates for a fragment: every policy of `direction` whose
    /// addresses and protocol match `flow` (any protocol where the
    /// fragment does not say it, [`Flow::protocol_known`]), whatever its
    /// ports, in lookup order.
    pub fn candidates(
        &self,
        direction: Direction,
        flow: &Flow,
    ) -> impl Iterator<Item = &Policy> + '_ {
        let flow = *flow;
        self.policies.iter().filter(move |p| {
            let s = &p.selector;
            p.direction == direction
                && s.src.contains(flow.src)
                && s.dst.contains(flow.dst)
                && s.protocol
                    .is_none_or(|proto| proto == flow.protocol || !flow.protocol_known())
        })
    }

    /// All policies, in lookup order.
    pub fn iter(&self) -> impl Iterator<Item = &Policy> {
        self.policies.iter()
    }

    /// Number of policies.
    pub fn len(&self) -> usize {
        self.policies.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.policies.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefix(s: &str) -> IpPrefix {
        let (a, l) = s.split_once('/').unwrap();
        IpPrefix::new(a.parse().unwrap(), l.parse().unwrap()).unwrap()
    }

    fn flow(src: &str, dst: &str, protocol: u8, dst_port: u16) -> Flow {
        Flow {
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
            protocol,
            src_port: 40000,
            dst_port,
            fragment: false,
        }
    }

    #[test]
    fn flows_of_packets() {
        let mut udp4 = vec![
            0x45, 0, 0, 32, 0, 0, 0, 0, 64, 17, 0, 0, 10, 1, 0, 1, 10, 2, 0, 1,
        ];
        udp4.extend_from_slice(&[0x04, 0xd2, 0x00, 0x35, 0, 12, 0, 0, 1, 2, 3, 4]);
        let f = Flow::of_packet(&udp4).unwrap();
        assert_eq!(
            f,
            Flow {
                src_port: 1234,
                ..flow("10.1.0.1", "10.2.0.1", 17, 53)
            }
        );
        let mut frag = udp4.clone();
        frag[6..8].copy_from_slice(&[0, 1]); // offset 8: not the first fragment
        assert_eq!(Flow::of_packet(&frag).unwrap().dst_port, 0);
        let mut icmp6 = vec![0x60, 0, 0, 0, 0, 8, 58, 64];
        icmp6.extend_from_slice(&"fd01::1".parse::<std::net::Ipv6Addr>().unwrap().octets());
        icmp6.extend_from_slice(&"fd02::1".parse::<std::net::Ipv6Addr>().unwrap().octets());
        icmp6.extend_from_slice(&[128, 0, 0, 0, 0, 1, 0, 1]);
        let f = Flow::of_packet(&icmp6).unwrap();
        assert_eq!((f.protocol, f.src_port, f.dst_port), (58, 128, 0));
        for cut in 0..udp4.len() {
            assert!(Flow::of_packet(&udp4[..cut]).is_err() || cut >= 20);
        }
    }

    /// RFC 4301 §7: a fragment whose policy depends on its ports is not
    /// decided by (0, 0) ports; one whose first matching policy takes every
    /// port is.
    #[test]
    fn fragments_are_decided_only_without_ports() {
        let mut udp4 = vec![
            0x45, 0, 0, 32, 0, 0, 0x20, 0, 64, 17, 0, 0, 10, 1, 0, 1, 10, 2, 0, 1,
        ];
        udp4.extend_from_slice(&[0x13, 0x8c, 0x13, 0x8c, 0, 12, 0, 0, 1, 2, 3, 4]);
        // MF set, offset 0: the first fragment, with its ports.
        let first = Flow::of_packet(&udp4).unwrap();
        assert!(first.fragment);
        assert_eq!(first.dst_port, 5004);
        let mut later = udp4.clone();
        later[6..8].copy_from_slice(&[0, 1]);
        let later = Flow::of_packet(&later).unwrap();
        assert!(later.fragment);
        assert_eq!((later.src_port, later.dst_port), (0, 0));
        assert!(!flow("10.1.0.1", "10.2.0.1", 17, 5004).fragment);

        let protect = |sel| Policy {
            direction: Direction::Out,
            selector: sel,
            action: Action::Discard,
            priority: 0,
        };
        let mut spd = Spd::new();
        let mut rtp = Selector::between(prefix("10.1.0.0/16"), prefix("10.2.0.0/16"));
        rtp.protocol = Some(17);
        rtp.dst_ports = PortRange::single(5004);
        spd.add(protect(rtp)).unwrap();
        // A plain lookup misses the later fragment (the hole this closes).
        assert!(spd.lookup(Direction::Out, &later).is_none());
        assert_eq!(
            spd.lookup_opaque(Direction::Out, &later),
            OpaqueLookup::NeedsPorts
        );
        // Another protocol between the same hosts: no policy, decided.
        let tcp = Flow {
            protocol: 6,
            ..later
        };
        assert_eq!(
            spd.lookup_opaque(Direction::Out, &tcp),
            OpaqueLookup::Decided(None)
        );
        // A policy that takes every port decides alone when it comes first.
        let mut spd = Spd::new();
        let all = Selector::between(prefix("10.1.0.0/16"), prefix("10.2.0.0/16"));
        spd.add(protect(all)).unwrap();
        spd.add(Policy {
            priority: 1,
            ..protect(rtp)
        })
        .unwrap();
        assert_eq!(
            spd.lookup_opaque(Direction::Out, &later),
            OpaqueLookup::Decided(spd.lookup(Direction::Out, &later))
        );
        assert_eq!(spd.candidates(Direction::Out, &later).count(), 2);
        assert_eq!(spd.candidates(Direction::In, &later).count(), 0);
    }

    /// A later IPv6 fragment of a datagram with Destination Options after
    /// its Fragment header names those (60), not UDP (RFC 8200 §4.5): it
    /// must not be decided as "another protocol, no policy" (it would
    /// leave in the clear under a UDP-5004 policy).
    #[test]
    fn a_later_ipv6_fragment_may_not_know_its_protocol() {
        let mut later = vec![0x60, 0, 0, 0, 0, 16, 44, 64];
        later.extend_from_slice(&"fd01::1".parse::<std::net::Ipv6Addr>().unwrap().octets());
        later.extend_from_slice(&"fd02::1".parse::<std::net::Ipv6Addr>().unwrap().octets());
        // Fragment header: next header 60 (Destination Options), offset 8.
        later.extend_from_slice(&[60, 0, 0, 8, 0, 0, 0, 7]);
        later.extend_from_slice(&[0; 8]);
        let f = Flow::of_packet(&later).unwrap();
        assert!(f.fragment && !f.protocol_known(), "{f:?}");
        let udp_later = Flow { protocol: 17, ..f };
        assert!(udp_later.protocol_known());

        let policy = |sel, priority| Policy {
            direction: Direction::Out,
            selector: sel,
            action: Action::Discard,
            priority,
        };
        let mut rtp = Selector::between(prefix("fd01::/64"), prefix("fd02::/64"));
        rtp.protocol = Some(17);
        rtp.dst_ports = PortRange::single(5004);
        let mut spd = Spd::new();
        spd.add(policy(rtp, 0)).unwrap();
        assert_eq!(
            spd.lookup_opaque(Direction::Out, &f),
            OpaqueLookup::NeedsPorts
        );
        // A protocol without ports, but not the fragment's: still unknown.
        let mut tcp = Selector::between(prefix("fd01::/64"), prefix("fd02::/64"));
        tcp.protocol = Some(6);
        let mut spd = Spd::new();
        spd.add(policy(tcp, 0)).unwrap();
        assert_eq!(
            spd.lookup_opaque(Direction::Out, &f),
            OpaqueLookup::NeedsPorts
        );
        // Every protocol, every port: decided.
        let mut spd = Spd::new();
        spd.add(policy(
            Selector::between(prefix("fd01::/64"), prefix("fd02::/64")),
            0,
        ))
        .unwrap();
        assert!(matches!(
            spd.lookup_opaque(Direction::Out, &f),
            OpaqueLookup::Decided(Some(_))
        ));
    }

    #[test]
    fn prefixes() {
        assert!(prefix("10.1.0.0/16").contains("10.1.200.3".parse().unwrap()));
        assert!(!prefix("10.1.0.0/16").contains("10.2.0.1".parse().unwrap()));
        assert!(
            !prefix("0.0.0.0/0").contains("::1".parse().unwrap()),
            "families never match"
        );
        assert!(prefix("fd00::/8").contains("fd12::1".parse().unwrap()));
        assert_eq!(prefix("10.1.2.3/8").to_string(), "10.0.0.0/8");
        assert!(IpPrefix::new("10.0.0.0".parse().unwrap(), 33).is_none());
        assert!(prefix("10.0.0.0/8").overlaps(&prefix("10.3.0.0/16")));
        assert!(!prefix("10.0.0.0/16").overlaps(&prefix("10.3.0.0/16")));
    }

    #[test]
    fn first_match_and_ports() {
        let mut spd = Spd::new();
        let mut web = Selector::between(prefix("10.0.0.0/8"), prefix("10.9.0.0/16"));
        web.protocol = Some(6);
        web.dst_ports = PortRange::single(80);
        spd.add(Policy {
            direction: Direction::Out,
            selector: web,
            action: Action::Bypass,
            priority: -1,
        })
        .unwrap();
        let all = Selector::between(prefix("10.0.0.0/8"), prefix("10.0.0.0/8"));
        spd.add(Policy {
            direction: Direction::Out,
            selector: all,
            action: Action::Discard,
            priority: 0,
        })
        .unwrap();
        assert_eq!(
            spd.lookup(Direction::Out, &flow("10.1.1.1", "10.9.0.1", 6, 80))
                .unwrap()
                .action,
            Action::Bypass
        );
        assert_eq!(
            spd.lookup(Direction::Out, &flow("10.1.1.1", "10.9.0.1", 6, 81))
                .unwrap()
                .action,
            Action::Discard
        );
        assert_eq!(
            spd.lookup(Direction::Out, &flow("10.1.1.1", "10.9.0.1", 17, 80))
                .unwrap()
                .action,
            Action::Discard
        );
        assert!(spd
            .lookup(Direction::In, &flow("10.1.1.1", "10.9.0.1", 6, 80))
            .is_none());
        assert!(spd
            .lookup(Direction::Out, &flow("192.0.2.1", "10.9.0.1", 6, 80))
            .is_none());
    }

    #[test]
    fn duplicates_and_overlaps_refused() {
        let mut spd = Spd::new();
        let a = Selector::between(prefix("10.0.0.0/8"), prefix("10.0.0.0/8"));
        let p = Policy {
            direction: Direction::Out,
            selector: a,
            action: Action::Bypass,
            priority: 0,
        };
        spd.add(p.clone()).unwrap();
        assert_eq!(spd.add(p.clone()), Err(SpdError::Exists));
        let b = Selector::between(prefix("10.1.0.0/16"), prefix("10.2.0.0/16"));
        let q = Policy {
            direction: Direction::Out,
            selector: b,
            action: Action::Discard,
            priority: 0,
        };
        assert_eq!(spd.add(q.clone()), Err(SpdError::Overlaps(a)));
        // Same selector in the other direction is fine, and so is a
        // different priority.
        spd.add(Policy {
            direction: Direction::In,
            ..p.clone()
        })
        .unwrap();
        spd.add(Policy { priority: -5, ..q }).unwrap();
        assert_eq!(spd.remove(Direction::Out, &a).unwrap(), p);
        assert_eq!(spd.remove(Direction::Out, &a), Err(SpdError::NotFound));
    }
}
