//! Bundle processing: applying a policy's SAs to an outbound packet, and
//! removing every IPsec header of an inbound packet, then checking the
//! result against the inbound policy (RFC 4301 §5.1 and §5.2).
//!
//! ```text
//! outbound: resolve(policy) → [IPComp] → [ESP] → [AH], innermost first;
//!           a tunnel-mode SA adds the outer header once per endpoint pair
//! inbound:  outer header → (UDP-encap?) → ESP/AH/IPComp … → tunnel: inner
//!           packet; then check_inbound(SPD, applied SAs)
//! ```

use core::time::Duration;
use std::net::IpAddr;

use flowsec_wire::iana::IpProtocol;
use flowsec_wire::udp::UdpPacket;
use flowsec_wire::udp_encap::{self, UdpEncap};

use crate::buf::PacketBuf;
use crate::layout::{self, Layout};
use crate::replay::ReplayError;
use crate::sa::{Mode, Protocol, SaId};
use crate::sad::{SaHandle, Sad};
use crate::spd::{Action, Flow, Level, Policy, SaTemplate};
use crate::tunnel::InnerInfo;
use crate::{ah, esp, ipcomp, tunnel, DropReason};

/// The most SAs one packet may pass through (e.g. IPComp + ESP + AH is 3).
pub const MAX_BUNDLE: usize = 4;

/// A short list of SAs: a resolved outbound bundle, or those an inbound
/// packet passed through (in the order their headers were removed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bundle {
    handles: [Option<SaHandle>; MAX_BUNDLE],
    len: usize,
}

impl Bundle {
    fn push(&mut self, h: SaHandle) -> Result<(), DropReason> {
        let slot = self
            .handles
            .get_mut(self.len)
            .ok_or(DropReason::BundleTooDeep)?;
        *slot = Some(h);
        self.len += 1;
        Ok(())
    }

    /// The SAs.
    pub fn iter(&self) -> impl Iterator<Item = SaHandle> + '_ {
        self.handles[..self.len].iter().flatten().copied()
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Choose the SAs for a PROTECT policy's templates and the packet's
/// addresses: `Err(NoOutboundSa)` if a `require`/`unique` step has none
/// (the caller would start IKE here); `use` steps without an SA are skipped.
pub fn resolve(
    sad: &Sad,
    templates: &[SaTemplate],
    flow: &Flow,
    now: Duration,
) -> Result<Bundle, DropReason> {
    let mut bundle = Bundle::default();
    for t in templates {
        match sad.find_outbound(t, flow.src, flow.dst, now) {
            Some(h) => bundle.push(h)?,
            None if t.level == Level::Use => {}
            None => return Err(DropReason::NoOutboundSa),
        }
    }
    Ok(bundle)
}

/// Apply `bundle` to the IP packet in `buf`, innermost SA first. On error
/// the buffer holds a partly processed packet that must be dropped, except
/// for [`DropReason::TransportFragment`]: only the packet as it came can be
/// a fragment (every step before a transport one leaves a whole packet), so
/// it is refused untouched and no SA counted anything; the caller may
/// reassemble its datagram and try again (RFC 4303 §3.1.1).
pub fn outbound(
    sad: &mut Sad,
    bundle: &Bundle,
    buf: &mut PacketBuf,
    now: Duration,
) -> Result<(), DropReason> {
    let mut outer: Option<(IpAddr, IpAddr)> = None;
    for h in bundle.iter() {
        let sa = sad.get_mut(h).ok_or(DropReason::NoOutboundSa)?;
        let endpoints = (sa.src(), sa.dst());
        // The IPv4 ID only has to be unique per (src, dst, protocol) while
        // fragments are in flight (RFC 6864 §4.1): the sequence number, offset
        // by the SPI so that per-resource SAs to one peer, which all count
        // from 1, do not send the same IDs.
        let ident = sa
            .seq()
            .wrapping_add(1)
            .wrapping_add(u64::from(sa.id().spi)) as u16;
        let lay = if sa.mode() == Mode::Tunnel && outer != Some(endpoints) {
            outer = Some(endpoints);
            if sa.id().protocol == Protocol::Esp {
                esp::encapsulate_tunnel(sa, buf, ident, now)?;
                continue;
            }
            // AH covers the outer header, and IPComp may leave the packet
            // as it is: both go after it.
            let inner = InnerInfo::of(buf.as_slice())?;
            let outer_header = sa.outer.as_ref().ok_or(DropReason::BadInnerPacket)?;
            outer_header.push(buf, ident, &inner, inner.next_header)?
        } else {
            // Transport mode, or tunnel-mode SAs sharing the outer header
            // already added ("transport adjacency", RFC 4301 §4.5).
            Layout::outbound(buf.as_slice())?
        };
        match sa.id().protocol {
            Protocol::Esp => esp::encapsulate(sa, buf, &lay, now)?,
            Protocol::Ah => ah::encapsulate(sa, buf, &lay, now)?,
            Protocol::IpComp => ipcomp::encapsulate(sa, buf, &lay, now)?,
        }
    }
    Ok(())
}

/// What an inbound packet turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inbound {
    /// Every IPsec header was removed; the buffer holds the resulting
    /// packet (the inner packet in tunnel mode).
    Decapsulated(Bundle),
    /// A NAT-keepalive on the UDP encapsulation port (RFC 3948 §2.3).
    NatKeepalive,
    /// An IKE message on the UDP encapsulation port (non-ESP marker,
    /// RFC 3948 §2.2); the buffer holds just the IKE message.
    Ike,
}

/// How an inbound SA's header is removed.
#[derive(Clone, Copy)]
enum Step {
    /// ESP, raw or behind a UDP header (RFC 3948).
    Esp {
        udp: bool,
    },
    Ah,
    IpComp,
}

/// Remove the IPsec headers of the IP packet in `buf`.
///
/// A UDP datagram is taken as UDP-encapsulated ESP: call this only for
/// packets that arrived on the encapsulation port.
pub fn inbound(sad: &mut Sad, buf: &mut PacketBuf, now: Duration) -> Result<Inbound, DropReason> {
    let len = layout::ip_packet_len(buf.as_slice())?;
    buf.trim_back(buf.len().saturating_sub(len));
    let mut applied = Bundle::default();
    loop {
        let lay = Layout::inbound(buf.as_slice())?;
        let packet = buf.as_slice();
        let next_header = IpProtocol(packet[lay.nh_field]);
        let (_, dst) = layout::addresses(packet, lay.version);
        let rest = &packet[lay.at..];
        // Which SA, and how to remove its header; each protocol is then
        // processed, and its refusals counted on the SA, in one place.
        let (handle, step) = match next_header {
            IpProtocol::ESP => (
                lookup(sad, Protocol::Esp, spi_at(rest, 0)?, dst)?,
                Step::Esp { udp: false },
            ),
            IpProtocol::UDP if applied.is_empty() => {
                let udp = UdpPacket::new_checked(rest).map_err(|_| DropReason::BadUdpEncap)?;
                if usize::from(udp.len()) != rest.len() {
                    return Err(DropReason::BadUdpEncap);
                }
                match udp_encap::classify(udp.payload()).map_err(|_| DropReason::BadUdpEncap)? {
                    UdpEncap::NatKeepalive => return Ok(Inbound::NatKeepalive),
                    UdpEncap::Ike(ike) => {
                        let start = lay.at + 8 + udp_encap::NON_ESP_MARKER.len();
                        let ike_len = ike.len();
                        buf.trim_front(start);
                        buf.trim_back(buf.len() - ike_len);
                        return Ok(Inbound::Ike);
                    }
                    UdpEncap::Esp(esp) => (
                        lookup(sad, Protocol::Esp, spi_at(esp, 0)?, dst)?,
                        Step::Esp { udp: true },
                    ),
                }
            }
            IpProtocol::AH => (lookup(sad, Protocol::Ah, spi_at(rest, 4)?, dst)?, Step::Ah),
            IpProtocol::IPCOMP => {
                let cpi = rest.get(2..4).ok_or(DropReason::Truncated)?;
                let cpi = u32::from(u16::from_be_bytes([cpi[0], cpi[1]]));
                (lookup(sad, Protocol::IpComp, cpi, dst)?, Step::IpComp)
            }
            _ if applied.is_empty() => return Err(DropReason::NotIpsec),
            _ => return Ok(Inbound::Decapsulated(applied)),
        };
        let sa = sa_mut(sad, handle);
        let result = match step {
            // The packet must arrive as the SA was set up: in UDP or not.
            Step::Esp { udp } if sa.encap().is_some() != udp => Err(DropReason::EncapMismatch),
            Step::Esp { udp } => esp::decapsulate(sa, buf, &lay, udp, now),
            Step::Ah => ah::decapsulate(sa, buf, &lay, now),
            Step::IpComp => ipcomp::decapsulate(sa, buf, &lay, now),
        };
        if let Err(reason) = result {
            sa.stats.count(reason);
        }
        let next = result?;
        applied.push(handle)?;
        let tunnel = sad.get(handle).is_some_and(|sa| sa.mode() == Mode::Tunnel);
        if tunnel {
            match IpProtocol(next) {
                IpProtocol::IPV4 | IpProtocol::IPV6 => {
                    tunnel::pop_outer(buf, &lay, next)?;
                    return Ok(Inbound::Decapsulated(applied));
                }
                // Transport adjacency: another SA's header under the same
                // outer header (RFC 4301 §4.5).
                IpProtocol::ESP | IpProtocol::AH | IpProtocol::IPCOMP => {}
                // A tunnel-mode SA carries IP packets only.
                _ => return Err(DropReason::BadNextHeader),
            }
        }
    }
}

/// Check the SAs an inbound packet passed through against the policy that
/// matches its (inner) flow (RFC 4301 §5.2 step 4): every required step of
/// a PROTECT policy must have been applied by a matching SA; plaintext that
/// a PROTECT policy covers is refused, and so is anything DISCARD covers.
/// Traffic no policy covers is accepted.
///
/// SAs carry no traffic selectors of their own here: an SA satisfies a
/// template by protocol, mode, tunnel endpoints and, when the template names
/// one, reqid. Give policies and SAs reqids (setkey `unique:N`, IKE does
/// this) where one peer has SAs for several policies, or an SA keyed for one
/// policy could carry traffic another policy covers.
pub fn check_inbound(
    sad: &Sad,
    policy: Option<&Policy>,
    applied: &Bundle,
) -> Result<(), DropReason> {
    let Some(policy) = policy else { return Ok(()) };
    match &policy.action {
        Action::Bypass => Ok(()),
        Action::Discard => Err(DropReason::PolicyDiscard),
        Action::Protect(templates) => {
            if applied.is_empty() {
                return Err(DropReason::PolicyMismatch);
            }
            let satisfied = |t: &SaTemplate| {
                applied.iter().filter_map(|h| sad.get(h)).any(|sa| {
                    sa.id().protocol == t.protocol
                        && sa.mode() == t.mode
                        && (t.reqid == 0 || sa.reqid() == t.reqid)
                        && t.tunnel
                            .is_none_or(|(src, dst)| sa.src() == src && sa.dst() == dst)
                })
            };
            // IPComp steps are optional on receipt: small or incompressible
            // payloads travel without an IPComp header (RFC 3173 §2.2).
            let optional = |t: &SaTemplate| t.level == Level::Use || t.protocol == Protocol::IpComp;
            let ok = templates.iter().all(|t| optional(t) || satisfied(t));
            ok.then_some(()).ok_or(DropReason::PolicyMismatch)
        }
    }
}

pub(crate) fn replay_reason(e: ReplayError) -> DropReason {
    match e {
        ReplayError::Replayed => DropReason::Replayed,
        ReplayError::TooOld => DropReason::TooOld,
        ReplayError::Zero => DropReason::SeqZero,
    }
}

fn spi_at(bytes: &[u8], at: usize) -> Result<u32, DropReason> {
    let b = bytes.get(at..at + 4).ok_or(DropReason::Truncated)?;
    Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn lookup(sad: &Sad, protocol: Protocol, spi: u32, dst: IpAddr) -> Result<SaHandle, DropReason> {
    sad.lookup(&SaId { protocol, spi, dst })
        .ok_or(DropReason::UnknownSpi)
}

fn sa_mut(sad: &mut Sad, h: SaHandle) -> &mut crate::SecurityAssociation {
    // A handle just returned by `lookup` names a live SA.
    sad.get_mut(h).expect("handle from lookup")
}
