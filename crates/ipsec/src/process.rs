//! Bundle processing: applying a policy's SAs to an outbound packet, and
//! removing every IPsec header of an inbound packet, then checking the
//! result against the inbound policy (RFC 4301 §5.1 and §5.2).
//!
//! ```text
//! outbound: resolve(policy) → [IPComp] → [ESP] → [AH], innermost first;
//!           a tunnel-mode SA adds the outer header once per endpoint pair
//! inbound:  outer header → ESP/AH/IPComp … → tunnel: inner packet;
//!           ESP in UDP: the UDP payload and its endpoints → ESP → …;
//!           then check_inbound(SPD, applied SAs)
//! ```
//!
//! ESP in UDP (RFC 3948) crosses this interface as a UDP payload with its
//! [`UdpEndpoints`] beside it, never as IP and UDP headers: the caller's UDP
//! socket writes those on sending and removes them on receipt.

use core::time::Duration;
use std::net::{IpAddr, SocketAddr};

use flowsec_wire::ah::{self as wire_ah, AhPacket};
use flowsec_wire::esp::EspPacket;
use flowsec_wire::iana::IpProtocol;
use flowsec_wire::ip::IpRepr;
use flowsec_wire::ipcomp::IpCompPacket;
use flowsec_wire::ipv4::Ipv4Packet;
use flowsec_wire::udp_encap::{self, Datagram, UdpEncap, NON_ESP_MARKER};

use crate::buf::PacketBuf;
use crate::layout::{self, Layout};
use crate::replay::ReplayError;
use crate::sa::{EncapTransport, Mode, Protocol, SaId};
use crate::sad::{SaHandle, Sad, Sealer};
use crate::spd::{Action, Flow, Level, Policy, SaTemplate};
use crate::tunnel::InnerInfo;
use crate::{ah, esp, ipcomp, tunnel, DropReason, SecurityAssociation};

/// The most SAs one packet may pass through (e.g. IPComp + ESP + AH is 3).
pub const MAX_BUNDLE: usize = 4;

/// Hop limit of an IP header rebuilt for a packet that arrived as ESP in
/// UDP in transport mode (the socket took the real one off).
const REBUILT_HOP_LIMIT: u8 = 64;

/// A short list of SAs: a resolved outbound bundle, or those an inbound
/// packet passed through (in the order their headers were removed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bundle {
    handles: [Option<SaHandle>; MAX_BUNDLE],
    len: usize,
}

impl Bundle {
    pub(crate) fn push(&mut self, h: SaHandle) -> Result<(), DropReason> {
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

/// The two ends of an ESP-in-UDP datagram (RFC 3948 §2.1) and its outer
/// TOS: what a UDP socket reports on receipt, and what it is given to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpEndpoints {
    /// Our address and port.
    pub local: SocketAddr,
    /// The peer's address and port (its NAT's, behind one).
    pub remote: SocketAddr,
    /// The outer IPv4 DSCP/ECN byte or IPv6 Traffic Class: copied from the
    /// inner packet on sending (RFC 4301 §5.1.2.1); on receipt, merged
    /// into the inner packet's ECN field (RFC 6040 §4.2).
    pub tos: u8,
}

/// Why [`outbound`] (or [`resolve`]) did not protect a packet: two outcomes
/// that ask the caller for a next step, and drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SealError {
    /// A fragment met a transport-mode step, which protects whole datagrams
    /// only (RFC 4303 §3.1.1, RFC 4302 §3.1.1): refused untouched, no SA
    /// counted anything; reassemble its datagram and try again.
    Reassemble,
    /// A `require`/`unique` step of the policy has no SA: drop the packet
    /// and ask IKE for one (an ACQUIRE, RFC 4301 §4.4.1.1's trap).
    NoSa,
    /// Dropped, for this reason.
    Drop(DropReason),
}

impl core::fmt::Display for SealError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SealError::Reassemble => f.write_str("a fragment for transport mode: reassemble first"),
            SealError::NoSa => f.write_str("no outbound SA for the policy"),
            SealError::Drop(reason) => reason.fmt(f),
        }
    }
}

impl std::error::Error for SealError {}

impl From<DropReason> for SealError {
    fn from(reason: DropReason) -> Self {
        SealError::Drop(reason)
    }
}

/// Where a packet [`outbound`] protected goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Egress {
    /// The buffer holds an IP packet, to be sent as it is.
    Ip,
    /// ESP in UDP: the buffer holds the UDP payload (the ESP packet), to
    /// be sent by a UDP socket between these endpoints.
    Udp(UdpEndpoints),
    /// ESP in a TCP stream (RFC 9329): the buffer holds the ESP packet, to
    /// be framed into the stream between these endpoints.
    Tcp(UdpEndpoints),
}

impl Egress {
    /// The packet as the network carries it: for [`Egress::Udp`], the IP
    /// and UDP headers a socket would put in front of `sealed`. For tools
    /// and tests that write captures; the daemon hands the parts to its
    /// sockets instead.
    pub fn to_packet(&self, sealed: &[u8]) -> Result<Vec<u8>, DropReason> {
        match self {
            Egress::Ip => Ok(sealed.to_vec()),
            Egress::Udp(e) => {
                Datagram::build(e.local, e.remote, e.tos, sealed).map_err(|_| DropReason::TooBig)
            }
            // A stream has no packet of its own: the frame's message.
            Egress::Tcp(_) => Ok(sealed.to_vec()),
        }
    }
}

/// Choose the SAs for a PROTECT policy's templates and the packet's
/// addresses: [`SealError::NoSa`] if a `require`/`unique` step has none
/// (the caller would start IKE here); `use` steps without an SA are skipped.
pub fn resolve(
    sad: &Sad,
    templates: &[SaTemplate],
    flow: &Flow,
    now: Duration,
) -> Result<Bundle, SealError> {
    resolve_by(sad, templates, flow, now, Sealer::Any)
}

/// [`resolve`] for one sealer: a flow-parallel worker's own per-resource
/// SAs first ([`Sad::find_outbound_by`]).
pub fn resolve_by(
    sad: &Sad,
    templates: &[SaTemplate],
    flow: &Flow,
    now: Duration,
    sealer: Sealer,
) -> Result<Bundle, SealError> {
    let mut bundle = Bundle::default();
    for t in templates {
        match sad.find_outbound_by(t, flow.src, flow.dst, now, sealer) {
            Some(h) => bundle.push(h)?,
            None if t.level == Level::Use => {}
            None => return Err(SealError::NoSa),
        }
    }
    Ok(bundle)
}

/// Apply `bundle` to the IP packet in `buf`, innermost SA first, and say
/// where the result goes. On error the buffer holds a partly processed
/// packet that must be dropped, except for [`SealError::Reassemble`]: only
/// the packet as it came can be a fragment (every step before a transport
/// one leaves a whole packet), so it is refused untouched and no SA
/// counted anything (RFC 4303 §3.1.1).
///
/// A UDP-encapsulated ESP SA must be the bundle's last (outermost) step:
/// what it leaves is a UDP payload, which no header can follow
/// ([`DropReason::EncapMismatch`] otherwise).
pub fn outbound(
    sad: &mut Sad,
    bundle: &Bundle,
    buf: &mut PacketBuf,
    now: Duration,
) -> Result<Egress, SealError> {
    // The endpoints of the outer header added last (by a tunnel-mode SA).
    let mut outer: Option<(IpAddr, IpAddr)> = None;
    for (i, h) in bundle.iter().enumerate() {
        let sa = sad.get_mut(h).ok_or(SealError::NoSa)?;
        let endpoints = (sa.src(), sa.dst());
        // Tunnel-mode SAs sharing an outer header already added are in
        // "transport adjacency" (RFC 4301 §4.5).
        let new_tunnel = sa.mode() == Mode::Tunnel && outer != Some(endpoints);
        if new_tunnel {
            outer = Some(endpoints);
        }
        if let Some(encap) = sa.encap() {
            if i + 1 != bundle.len() {
                return Err(DropReason::EncapMismatch.into());
            }
            let lay = match new_tunnel {
                true => None,
                false => Some(Layout::outbound(buf.as_slice())?),
            };
            let to = esp::encapsulate_udp(sa, buf, lay.as_ref(), now)?;
            return Ok(match encap.transport {
                EncapTransport::Udp => Egress::Udp(to),
                EncapTransport::Tcp => Egress::Tcp(to),
            });
        }
        apply_outbound(sa, buf, new_tunnel, now)?;
    }
    Ok(Egress::Ip)
}

/// One outbound step of a bundle: `new_tunnel` when `sa` adds the outer
/// header (a tunnel-mode SA whose endpoints are not those of the outer
/// header already there).
fn apply_outbound(
    sa: &mut SecurityAssociation,
    buf: &mut PacketBuf,
    new_tunnel: bool,
    now: Duration,
) -> Result<(), SealError> {
    // The IPv4 ID only has to be unique per (src, dst, protocol) while
    // fragments are in flight (RFC 6864 §4.1): the sequence number, offset
    // by the SPI so that per-resource SAs to one peer, which all count
    // from 1, do not send the same IDs.
    let ident = sa
        .assigned
        .unwrap_or_else(|| sa.seq().wrapping_add(1))
        .wrapping_add(u64::from(sa.id().spi)) as u16;
    let lay = if new_tunnel {
        if sa.id().protocol == Protocol::Esp {
            return Ok(esp::encapsulate_tunnel(sa, buf, ident, now)?);
        }
        // AH covers the outer header, and IPComp may leave the packet as
        // it is: both go after it.
        let inner = InnerInfo::of(buf.as_slice())?;
        let outer_header = sa.outer.as_ref().ok_or(DropReason::BadInnerPacket)?;
        outer_header.push(buf, ident, &inner, inner.next_header)?
    } else {
        Layout::outbound(buf.as_slice())?
    };
    Ok(match sa.id().protocol {
        Protocol::Esp => esp::encapsulate(sa, buf, &lay, now),
        Protocol::Ah => ah::encapsulate(sa, buf, &lay, now),
        Protocol::IpComp => ipcomp::encapsulate(sa, buf, &lay, now),
    }?)
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

/// Remove the IPsec headers of the IP packet in `buf` (raw ESP, AH or
/// IPComp as IP protocols 50, 51 and 108).
pub fn inbound(sad: &mut Sad, buf: &mut PacketBuf, now: Duration) -> Result<Inbound, DropReason> {
    done(inbound_until(sad, buf, now, false)?)
}

/// [`inbound`]; with `stop`, see [`decapsulate_until`].
pub(crate) fn inbound_until(
    sad: &mut Sad,
    buf: &mut PacketBuf,
    now: Duration,
    stop: bool,
) -> Result<Decap, DropReason> {
    let len = layout::ip_packet_len(buf.as_slice())?;
    buf.trim_back(buf.len().saturating_sub(len));
    decapsulate_until(sad, buf, Bundle::default(), now, stop)
}

/// The end of a decapsulation that was not asked to stop.
fn done(d: Decap) -> Result<Inbound, DropReason> {
    match d {
        Decap::Done(inbound) => Ok(inbound),
        Decap::Numbered => Err(DropReason::BundleTooDeep),
    }
}

/// What a UDP socket on the encapsulation port received: `buf` holds the
/// UDP payload, `from` says who sent it to which of our addresses. A
/// NAT-keepalive, an IKE message (non-ESP marker), or ESP (RFC 3948
/// §2.1–2.3), whose headers are then removed as [`inbound`] does.
pub fn inbound_udp(
    sad: &mut Sad,
    buf: &mut PacketBuf,
    from: &UdpEndpoints,
    now: Duration,
) -> Result<Inbound, DropReason> {
    done(inbound_udp_until(sad, buf, from, now, false)?)
}

/// [`inbound_udp`]; with `stop`, see [`decapsulate_until`].
pub(crate) fn inbound_udp_until(
    sad: &mut Sad,
    buf: &mut PacketBuf,
    from: &UdpEndpoints,
    now: Duration,
    stop: bool,
) -> Result<Decap, DropReason> {
    let spi = match udp_encap::classify(buf.as_slice()).map_err(|_| DropReason::BadUdpEncap)? {
        UdpEncap::NatKeepalive => return Ok(Decap::Done(Inbound::NatKeepalive)),
        UdpEncap::Ike(_) => {
            buf.trim_front(NON_ESP_MARKER.len());
            return Ok(Decap::Done(Inbound::Ike));
        }
        UdpEncap::Esp(esp) => EspPacket::new_checked(esp)
            .map_err(|_| DropReason::Truncated)?
            .spi(),
    };
    let handle = lookup(sad, Protocol::Esp, spi, from.local.ip())?;
    let sa = sa_mut(sad, handle);
    let mode = sa.mode();
    // The packet must arrive as the SA was set up: in UDP or not.
    let result = match sa.encap() {
        None => Err(DropReason::EncapMismatch),
        Some(_) => esp::open_at(sa, buf, 0, now),
    };
    if let Err(reason) = result {
        sa.stats.count(reason);
    }
    let next = result?;
    let mut applied = Bundle::default();
    applied.push(handle)?;
    match (mode, next) {
        (Mode::Tunnel, IpProtocol::IPV4 | IpProtocol::IPV6) => {
            tunnel::finish_inner(buf, next, from.tos)?;
            Ok(Decap::Done(Inbound::Decapsulated(applied)))
        }
        (Mode::Tunnel, IpProtocol::ESP | IpProtocol::AH | IpProtocol::IPCOMP)
        | (Mode::Transport, _) => {
            // Transport mode, or another SA's header under the tunnel's
            // outer header: what follows is processed, and delivered, as
            // the IP packet it was before the socket took its header off.
            push_ip_header(buf, from, next)?;
            decapsulate_until(sad, buf, applied, now, stop)
        }
        (Mode::Tunnel, _) => Err(DropReason::BadNextHeader),
    }
}

/// A whole packet as a capture holds it: an IP/UDP datagram goes to
/// [`inbound_udp`] as a UDP socket would hand it over (payload and
/// endpoints), anything else to [`inbound`]. For tools and tests that
/// read captures; the daemon's sockets give the parts directly.
pub fn inbound_packet(
    sad: &mut Sad,
    buf: &mut PacketBuf,
    now: Duration,
) -> Result<Inbound, DropReason> {
    let Ok(d) = Datagram::parse(buf.as_slice()) else {
        return inbound(sad, buf, now);
    };
    let from = UdpEndpoints {
        local: d.dst,
        remote: d.src,
        tos: d.tos,
    };
    buf.trim_back(buf.len() - d.payload.end);
    buf.trim_front(d.payload.start);
    inbound_udp(sad, buf, &from, now)
}

/// Put back the IP header of a datagram that a UDP socket received, naming
/// `next` as what follows it. An IPv4 header is rebuilt atomic (DF, ID 0):
/// the socket does not tell the original ID, and the ID of an atomic
/// datagram means nothing (RFC 6864 §4), where a run of datagrams with ID
/// 0 and no DF would claim IDs that are not unique (§4.1), and a receiver
/// merging datagrams (GRO, `offload::udp`) could not take them.
pub(crate) fn push_ip_header(
    buf: &mut PacketBuf,
    from: &UdpEndpoints,
    next: IpProtocol,
) -> Result<(), DropReason> {
    let ip = IpRepr {
        src: from.remote.ip(),
        dst: from.local.ip(),
        next_header: next,
        payload_len: buf.len(),
        hop_limit: REBUILT_HOP_LIMIT,
        tos: from.tos,
    };
    let hdr = buf
        .prepend(ip.buffer_len())
        .map_err(|_| DropReason::NoRoom)?;
    ip.emit(&mut *hdr).map_err(|_| DropReason::BadIpHeader)?;
    if from.remote.is_ipv4() {
        let mut v4 = Ipv4Packet::new_unchecked(hdr);
        v4.set_dont_frag(true);
        v4.fill_checksum();
    }
    Ok(())
}

/// Remove the IPsec headers that follow the IP header of `buf`, adding the
/// SAs to `applied` (those already removed), until what follows is not
/// IPsec or a tunnel's inner packet is reached.
pub(crate) fn decapsulate(
    sad: &mut Sad,
    buf: &mut PacketBuf,
    applied: Bundle,
    now: Duration,
) -> Result<Inbound, DropReason> {
    done(decapsulate_until(sad, buf, applied, now, false)?)
}

/// How far [`decapsulate_until`] went.
pub(crate) enum Decap {
    Done(Inbound),
    /// An ESP or AH header follows the ones removed: left for the SA's
    /// owner (parallel crypto: its replay window is the owner's).
    Numbered,
}

/// [`decapsulate`]; with `stop`, before any ESP or AH header after the
/// first one removed.
pub(crate) fn decapsulate_until(
    sad: &mut Sad,
    buf: &mut PacketBuf,
    mut applied: Bundle,
    now: Duration,
    stop: bool,
) -> Result<Decap, DropReason> {
    loop {
        let lay = Layout::inbound(buf.as_slice())?;
        let packet = buf.as_slice();
        let (_, dst) = layout::addresses(packet, lay.version);
        let Some((protocol, spi)) = ipsec_header(lay.next_header(packet), &packet[lay.at..])?
        else {
            return match applied.is_empty() {
                true => Err(DropReason::NotIpsec),
                false => Ok(Decap::Done(Inbound::Decapsulated(applied))),
            };
        };
        if stop && !applied.is_empty() && protocol != Protocol::IpComp {
            return Ok(Decap::Numbered);
        }
        let handle = lookup(sad, protocol, spi, dst)?;
        // Each protocol is processed, and its refusals counted on the SA,
        // in one place.
        let sa = sa_mut(sad, handle);
        let result = match protocol {
            // The packet must arrive as the SA was set up: in UDP or not.
            Protocol::Esp if sa.encap().is_some() => Err(DropReason::EncapMismatch),
            Protocol::Esp => esp::decapsulate(sa, buf, &lay, now),
            Protocol::Ah => ah::decapsulate(sa, buf, &lay, now),
            Protocol::IpComp => ipcomp::decapsulate(sa, buf, &lay, now),
        };
        if let Err(reason) = result {
            sa.stats.count(reason);
        }
        let next = result?;
        let tunnel = sa.mode() == Mode::Tunnel;
        applied.push(handle)?;
        if tunnel {
            match next {
                IpProtocol::IPV4 | IpProtocol::IPV6 => {
                    tunnel::pop_outer(buf, &lay, next)?;
                    return Ok(Decap::Done(Inbound::Decapsulated(applied)));
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

/// The IPsec protocol `next` names and the SPI (or CPI) of its header at
/// the start of `rest`; `None` if `next` is not ESP, AH or IPComp.
fn ipsec_header(next: IpProtocol, rest: &[u8]) -> Result<Option<(Protocol, u32)>, DropReason> {
    let truncated = |_| DropReason::Truncated;
    Ok(Some(match next {
        IpProtocol::ESP => (
            Protocol::Esp,
            EspPacket::new_checked(rest).map_err(truncated)?.spi(),
        ),
        IpProtocol::AH => {
            // Its length field is checked against the SA's ICV later.
            let fixed = rest
                .get(..wire_ah::FIXED_LEN)
                .ok_or(DropReason::Truncated)?;
            (Protocol::Ah, AhPacket::new_unchecked(fixed).spi())
        }
        IpProtocol::IPCOMP => {
            let cpi = IpCompPacket::new_checked(rest).map_err(truncated)?.cpi();
            (Protocol::IpComp, u32::from(cpi))
        }
        _ => return Ok(None),
    }))
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

pub(crate) fn lookup(
    sad: &Sad,
    protocol: Protocol,
    spi: u32,
    dst: IpAddr,
) -> Result<SaHandle, DropReason> {
    sad.lookup(&SaId { protocol, spi, dst })
        .ok_or(DropReason::UnknownSpi)
}

pub(crate) fn sa_mut(sad: &mut Sad, h: SaHandle) -> &mut SecurityAssociation {
    // A handle just returned by `lookup` names a live SA.
    sad.get_mut(h).expect("handle from lookup")
}
