//! Parallel crypto on one SA (study S5's pcrypt, Linux's `pcrypt`
//! template): the SA's owner — the one worker that holds its sequence
//! counter and its replay window — assigns each packet its sequence
//! number, any worker's copy of the SA does the crypto under that number,
//! and the owner puts the results back in their order (the daemon's
//! `pcrypt` module) and keeps the window.
//!
//! ```text
//! outbound: reserve_outbound (owner) → seal_assigned (any copy) → in order, sent
//! inbound:  check_inbound (owner) → open_assigned (any copy)
//!           → in order: commit_inbound (owner) [→ inbound_rest (owner)]
//! ```
//!
//! Only an ESP SA of tunnel mode is sealed this way (a transport-mode SA
//! may have to wait for fragments, RFC 4303 §3.1.1, and a bundle of
//! several numbered SAs would need several owners' numbers); inbound, the
//! outermost ESP header is opened elsewhere, and whatever ESP or AH
//! header follows it is left to the owner. Everything else goes the
//! serial way ([`crate::process`]). RFC 4303 §3.4.3 holds as it does
//! serially: the window is checked before the ICV (by the owner) and
//! moved only after the ICV verified (by the owner, in order), so a
//! packet replayed while its first copy was being opened is refused at
//! the commit.

use core::time::Duration;

use flowsec_wire::esp::EspPacket;
use flowsec_wire::udp_encap::{self, UdpEncap};

use crate::buf::PacketBuf;
use crate::layout::{self, Layout};
use crate::process::{
    inbound_udp_until, inbound_until, lookup, replay_reason, sa_mut, Bundle, Decap, Egress,
    Inbound, SealError, UdpEndpoints,
};
use crate::sa::{Mode, Protocol, SaId};
use crate::sad::{SaHandle, Sad};
use crate::DropReason;

/// A packet's sequence number on an SA, as the SA's owner assigned or
/// checked it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Assigned {
    /// The SA (each worker has its own copy of it).
    pub id: SaId,
    /// The full (ESN) sequence number.
    pub seq: u64,
}

/// Owner, outbound: when `bundle` is one ESP SA in tunnel mode, take its
/// next sequence number and count the packet in `buf` on it (as sealing
/// would); `None` for any other bundle, to be sealed as usual.
pub fn reserve_outbound(
    sad: &mut Sad,
    bundle: &Bundle,
    buf: &PacketBuf,
    now: Duration,
) -> Result<Option<Assigned>, SealError> {
    let mut sas = bundle.iter();
    let (Some(h), None) = (sas.next(), sas.next()) else {
        return Ok(None);
    };
    let sa = sad.get_mut(h).ok_or(SealError::NoSa)?;
    if sa.id().protocol != Protocol::Esp || sa.mode() != Mode::Tunnel {
        return Ok(None);
    }
    sa.check_lifetime(now)?;
    let seq = crate::sa::next_seq(&mut sa.seq, sa.esn, sa.seq_ceiling)?;
    sa.usage.record(buf.len(), now);
    Ok(Some(Assigned { id: sa.id(), seq }))
}

/// Any worker, outbound: seal the packet in `buf` with this worker's copy
/// of the SA under the sequence number its owner assigned; the copy's own
/// counter and usage stay as they are.
pub fn seal_assigned(
    sad: &mut Sad,
    a: Assigned,
    buf: &mut PacketBuf,
    now: Duration,
) -> Result<Egress, SealError> {
    let h = sad.lookup(&a.id).ok_or(SealError::NoSa)?;
    sa_mut(sad, h).assigned = Some(a.seq);
    let mut bundle = Bundle::default();
    bundle.push(h)?;
    let sealed = crate::process::outbound(sad, &bundle, buf, now);
    // Taken by the ESP step, unless it failed before it.
    sa_mut(sad, h).assigned = None;
    sealed
}

/// Owner, inbound: when the packet in `buf` (an IP packet from a raw
/// socket, or with `from` a UDP payload) is ESP, its SA and the sequence
/// number it carries, checked against the owner's replay window before
/// anyone spends crypto on it (RFC 4303 §3.4.3), and the SA's lifetime.
/// `None` for anything else (AH, IPComp, IKE, keepalives): processed as
/// usual.
pub fn check_inbound(
    sad: &mut Sad,
    buf: &PacketBuf,
    from: Option<&UdpEndpoints>,
    now: Duration,
) -> Result<Option<Assigned>, DropReason> {
    let packet = buf.as_slice();
    let (esp, dst, udp) = match from {
        None => {
            let lay = Layout::inbound(packet)?;
            if lay.next_header(packet) != flowsec_wire::iana::IpProtocol::ESP {
                return Ok(None);
            }
            let (_, dst) = layout::addresses(packet, lay.version);
            (&packet[lay.at..], dst, false)
        }
        Some(from) => match udp_encap::classify(packet) {
            Ok(UdpEncap::Esp(esp)) => (esp, from.local.ip(), true),
            _ => return Ok(None),
        },
    };
    let esp = EspPacket::new_checked(esp).map_err(|_| DropReason::Truncated)?;
    let h = lookup(sad, Protocol::Esp, esp.spi(), dst)?;
    let sa = sa_mut(sad, h);
    let checked = if sa.encap().is_some() != udp {
        Err(DropReason::EncapMismatch)
    } else {
        sa.replay
            .check(esp.seq_number())
            .map_err(replay_reason)
            .and_then(|seq| sa.check_lifetime(now).map(|()| seq))
    };
    match checked {
        Ok(seq) => Ok(Some(Assigned { id: sa.id(), seq })),
        Err(reason) => {
            sa.stats.count(reason);
            Err(reason)
        }
    }
}

/// What a worker's copy of the SA made of an inbound packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opened {
    /// Every IPsec header removed; `ipcomp`: the IPComp SA it passed
    /// through after the ESP one, if any.
    Done {
        /// That IPComp SA.
        ipcomp: Option<SaId>,
    },
    /// Another ESP or AH header follows (its window is its owner's):
    /// [`inbound_rest`] on the owner.
    More,
    /// Not data: an IKE message or a keepalive after all (cannot come
    /// from a packet [`check_inbound`] passed, but is not lost if it
    /// does).
    Other(Inbound),
}

/// Any worker, inbound: verify and decrypt the packet in `buf` with this
/// worker's copy of the SA under the sequence number its owner checked;
/// the copy's window and usage stay as they are.
pub fn open_assigned(
    sad: &mut Sad,
    buf: &mut PacketBuf,
    from: Option<&UdpEndpoints>,
    a: Assigned,
    now: Duration,
) -> Result<Opened, DropReason> {
    let h = sad.lookup(&a.id).ok_or(DropReason::UnknownSpi)?;
    sa_mut(sad, h).assigned = Some(a.seq);
    let opened = match from {
        None => inbound_until(sad, buf, now, true),
        Some(from) => inbound_udp_until(sad, buf, from, now, true),
    };
    // Taken by the ESP step, unless it failed before it.
    sa_mut(sad, h).assigned = None;
    Ok(match opened? {
        Decap::Numbered => Opened::More,
        Decap::Done(Inbound::Decapsulated(applied)) => Opened::Done {
            ipcomp: applied
                .iter()
                .skip(1)
                .filter_map(|h| sad.get(h))
                .map(|sa| sa.id())
                .find(|id| id.protocol == Protocol::IpComp),
        },
        Decap::Done(other) => Opened::Other(other),
    })
}

/// Owner, inbound, in order: the packet opened elsewhere verified; commit
/// its sequence number to the window (refused if the same number was
/// committed meanwhile: a replay) and count `len` bytes on the SA.
pub fn commit_inbound(
    sad: &mut Sad,
    a: Assigned,
    len: usize,
    now: Duration,
) -> Result<SaHandle, DropReason> {
    let h = sad.lookup(&a.id).ok_or(DropReason::UnknownSpi)?;
    let sa = sa_mut(sad, h);
    if let Err(reason) = sa.replay.commit(a.seq).map_err(replay_reason) {
        sa.stats.count(reason);
        return Err(reason);
    }
    sa.usage.record(len, now);
    Ok(h)
}

/// Owner, inbound: the SAs an [`Opened::Done`] packet passed, as this
/// worker's handles (`first` from [`commit_inbound`]).
pub fn applied(sad: &Sad, first: SaHandle, ipcomp: Option<SaId>) -> Result<Bundle, DropReason> {
    let mut bundle = Bundle::default();
    bundle.push(first)?;
    if let Some(id) = ipcomp {
        bundle.push(sad.lookup(&id).ok_or(DropReason::UnknownSpi)?)?;
    }
    Ok(bundle)
}

/// Owner, inbound, after [`Opened::More`]: the headers left, as
/// [`crate::process::inbound`] would have gone on.
pub fn inbound_rest(
    sad: &mut Sad,
    buf: &mut PacketBuf,
    first: SaHandle,
    now: Duration,
) -> Result<Inbound, DropReason> {
    let mut applied = Bundle::default();
    applied.push(first)?;
    crate::process::decapsulate(sad, buf, applied, now)
}
