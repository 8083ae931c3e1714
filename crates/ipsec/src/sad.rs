//! The Security Association Database (RFC 4301 §4.4.2): SAs by identity,
//! with stable handles so that a bundle can be applied without holding
//! several mutable borrows at once.

use core::fmt;
use core::time::Duration;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::net::IpAddr;

use crate::fxhash::FxHasher;
use crate::sa::{Endpoints, Protocol, SaId, SecurityAssociation};
use crate::spd::SaTemplate;
use crate::SaState;

/// A reference to an SA in one [`Sad`]. Once that SA is removed the handle
/// names nothing, even after its slot is reused (each slot counts its
/// generations), so a cached bundle can never seal with the wrong SA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SaHandle {
    slot: usize,
    generation: u64,
}

/// Why an SA could not be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SadError {
    /// An SA with the same protocol, SPI and destination exists.
    Exists(SaId),
    /// No SA has this identity.
    Unknown(SaId),
    /// The SA refused what it was asked ([`Sad::move_sa`]).
    Sa(crate::SaError),
}

impl fmt::Display for SadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SadError::Exists(id) => write!(
                f,
                "{} SA with SPI {:#x} to {} exists",
                id.protocol, id.spi, id.dst
            ),
            SadError::Unknown(id) => write!(
                f,
                "no {} SA with SPI {:#x} to {}",
                id.protocol, id.spi, id.dst
            ),
            SadError::Sa(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SadError {}

/// SAs by (protocol, SPI, destination).
#[derive(Default)]
pub struct Sad {
    slots: Vec<Slot>,
    free: Vec<usize>,
    /// FxHash, not SipHash: its flooding resistance buys nothing here,
    /// since the table holds only SAs this side installed (with SPIs it
    /// chose), so a peer's made-up SPIs can only miss, never grow a
    /// chain; and it is measurably faster per packet.
    by_id: HashMap<SaId, usize, BuildHasherDefault<FxHasher>>,
    /// Slots by (source, destination), in slot order: the candidates of
    /// [`Sad::find_outbound`], which is asked for every outbound packet
    /// and would otherwise scan every SA (issue 17).
    by_pair: HashMap<(IpAddr, IpAddr), Vec<usize>, BuildHasherDefault<FxHasher>>,
}

#[derive(Default)]
struct Slot {
    generation: u64,
    sa: Option<SecurityAssociation>,
}

impl fmt::Debug for Sad {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Sad {
    /// An empty SAD.
    pub fn new() -> Self {
        Sad::default()
    }

    /// Add an SA.
    pub fn add(&mut self, sa: SecurityAssociation) -> Result<SaHandle, SadError> {
        let id = sa.id();
        if self.by_id.contains_key(&id) {
            return Err(SadError::Exists(id));
        }
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Slot::default());
            self.slots.len() - 1
        });
        let pair = self.by_pair.entry((sa.src(), sa.dst())).or_default();
        let at = pair.partition_point(|&s| s < slot);
        pair.insert(at, slot);
        self.slots[slot].sa = Some(sa);
        self.by_id.insert(id, slot);
        Ok(SaHandle {
            slot,
            generation: self.slots[slot].generation,
        })
    }

    /// Remove the SA with this identity; handles to it go stale.
    pub fn remove(&mut self, id: &SaId) -> Option<SecurityAssociation> {
        let slot = self.by_id.remove(id)?;
        self.free.push(slot);
        let entry = &mut self.slots[slot];
        entry.generation += 1;
        let sa = entry.sa.take()?;
        let key = (sa.src(), sa.dst());
        if let Some(pair) = self.by_pair.get_mut(&key) {
            pair.retain(|&s| s != slot);
            if pair.is_empty() {
                self.by_pair.remove(&key);
            }
        }
        Some(sa)
    }

    /// Move the SA `id` to new outer addresses and encapsulation
    /// ([`SecurityAssociation::set_endpoints`]), keeping its state: the
    /// handle of it under its new id. Refused, with nothing changed, when
    /// `id` is unknown, another SA has the new id already, or the SA
    /// refuses the endpoints (it stays where it was, under a new handle).
    pub fn move_sa(&mut self, id: &SaId, to: Endpoints) -> Result<SaHandle, SadError> {
        let new = SaId { dst: to.dst, ..*id };
        if new != *id && self.by_id.contains_key(&new) {
            return Err(SadError::Exists(new));
        }
        let mut sa = self.remove(id).ok_or(SadError::Unknown(*id))?;
        let moved = sa.set_endpoints(to);
        let handle = self.add(sa).expect("its slot and id were free");
        moved.map(|()| handle).map_err(SadError::Sa)
    }

    /// Remove every SA (setkey `flush`), or every SA of one protocol.
    pub fn flush(&mut self, protocol: Option<Protocol>) {
        let ids: Vec<SaId> = self
            .by_id
            .keys()
            .filter(|id| protocol.is_none_or(|p| p == id.protocol))
            .copied()
            .collect();
        for id in ids {
            self.remove(&id);
        }
    }

    /// The handle of the SA with this identity.
    pub fn lookup(&self, id: &SaId) -> Option<SaHandle> {
        self.by_id.get(id).map(|&slot| SaHandle {
            slot,
            generation: self.slots[slot].generation,
        })
    }

    /// The SA behind a handle (`None` once removed).
    pub fn get(&self, h: SaHandle) -> Option<&SecurityAssociation> {
        let entry = self.slots.get(h.slot)?;
        (entry.generation == h.generation)
            .then_some(entry.sa.as_ref())
            .flatten()
    }

    /// The SA behind a handle, mutably.
    pub fn get_mut(&mut self, h: SaHandle) -> Option<&mut SecurityAssociation> {
        let entry = self.slots.get_mut(h.slot)?;
        (entry.generation == h.generation)
            .then_some(entry.sa.as_mut())
            .flatten()
    }

    /// Every SA.
    pub fn iter(&self) -> impl Iterator<Item = &SecurityAssociation> {
        self.slots.iter().filter_map(|e| e.sa.as_ref())
    }

    /// Number of SAs.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The SA to use for one step of an outbound bundle: same protocol and
    /// mode, the template's tunnel endpoints (or the packet's addresses in
    /// transport mode), the template's reqid if it names one, not expired;
    /// among those the youngest mature one, else the youngest dying one
    /// (RFC 4301 §4.4.2.1: prefer the newer SA during a rekey). Any SA of
    /// a per-resource set may be chosen: see [`Sad::find_outbound_by`].
    pub fn find_outbound(
        &self,
        t: &SaTemplate,
        src: IpAddr,
        dst: IpAddr,
        now: Duration,
    ) -> Option<SaHandle> {
        self.find_outbound_by(t, src, dst, now, Sealer::Any)
    }

    /// [`Sad::find_outbound`] for one sealer: a worker in the
    /// flow-parallel mode takes its own per-resource SA before the
    /// policy's fallback SAs, and never another worker's (RFC 9611 §2:
    /// one SA per resource, so that a sequence number has one writer).
    pub fn find_outbound_by(
        &self,
        t: &SaTemplate,
        src: IpAddr,
        dst: IpAddr,
        now: Duration,
        sealer: Sealer,
    ) -> Option<SaHandle> {
        let (src, dst) = t.tunnel.unwrap_or((src, dst));
        let candidates = self.by_pair.get(&(src, dst)).map_or(&[][..], |v| &v[..]);
        candidates
            .iter()
            .filter_map(|&i| {
                let e = &self.slots[i];
                e.sa.as_ref().map(|s| (i, e.generation, s))
            })
            .filter(|(_, _, s)| {
                s.id().protocol == t.protocol
                    && s.mode() == t.mode
                    && (t.reqid == 0 || s.reqid() == t.reqid)
            })
            .filter_map(|(i, g, s)| Some((i, g, sealer.rank(s.cpu())?, s)))
            .map(|(i, g, rank, s)| (i, g, rank, s.state(now), s.usage().added))
            .filter(|&(_, _, _, state, _)| state != SaState::Expired)
            .min_by_key(|&(_, _, rank, state, added)| (rank, state, core::cmp::Reverse(added)))
            .map(|(slot, generation, _, _, _)| SaHandle { slot, generation })
    }
}

/// Who seals, for choosing among a policy's SAs
/// ([`Sad::find_outbound_by`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sealer {
    /// Anyone: every SA is a candidate, per-resource or not (one SA per
    /// policy at a time, the youngest: the default mode).
    Any,
    /// Worker `index` of `of` in the flow-parallel mode: its own
    /// per-resource SAs (`cpu` ≡ `index` modulo `of`), else the fallback
    /// SAs (no `cpu`).
    Worker {
        /// This worker.
        index: u32,
        /// How many there are.
        of: u32,
    },
}

impl Sealer {
    /// The order in which an SA with this `cpu` is preferred (lower
    /// first), or `None` when this sealer must not use it.
    fn rank(self, cpu: Option<u32>) -> Option<u8> {
        match (self, cpu) {
            (Sealer::Any, _) => Some(0),
            (Sealer::Worker { index, of }, Some(c)) => (c % of.max(1) == index).then_some(0),
            (Sealer::Worker { .. }, None) => Some(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa::{Mode, SaConfig};
    use flowsec_crypto::{EncrId, Provider};

    fn sa(spi: u32) -> SecurityAssociation {
        let c = SaConfig::esp(
            spi,
            Mode::Tunnel,
            "192.0.2.1".parse().unwrap(),
            "192.0.2.2".parse().unwrap(),
        )
        .with_encr(EncrId::AES_GCM_16, &[7; 20]);
        SecurityAssociation::new(&c, &Provider::rustcrypto(), Duration::ZERO).unwrap()
    }

    #[test]
    fn handles_go_stale_when_their_sa_is_removed() {
        let mut sad = Sad::new();
        let a = sad.add(sa(0x8001)).unwrap();
        let id = sad.get(a).unwrap().id();
        assert!(sad.add(sa(0x8001)).is_err());
        sad.remove(&id).unwrap();
        let b = sad.add(sa(0x8002)).unwrap();
        assert!(
            sad.get(a).is_none(),
            "the old handle must not name the SA in the reused slot"
        );
        assert!(sad.get_mut(a).is_none());
        assert_eq!(sad.get(b).unwrap().id().spi, 0x8002);
        assert_eq!(sad.lookup(&sad.get(b).unwrap().id()), Some(b));
        sad.flush(None);
        assert!(sad.is_empty() && sad.get(b).is_none());
    }

    /// The endpoint index follows every add, removal, slot reuse and
    /// flush: `find_outbound` answers as a scan of every SA would.
    #[test]
    fn the_endpoint_index_follows_every_change() {
        use crate::spd::{Level, SaTemplate};
        let to = |spi: u32, dst: &str, added: u64| {
            let c = SaConfig::esp(
                spi,
                Mode::Tunnel,
                "192.0.2.1".parse().unwrap(),
                dst.parse().unwrap(),
            )
            .with_encr(EncrId::AES_GCM_16, &[7; 20]);
            SecurityAssociation::new(&c, &Provider::rustcrypto(), Duration::from_secs(added))
                .unwrap()
        };
        let template = |dst: &str| SaTemplate {
            protocol: Protocol::Esp,
            mode: Mode::Tunnel,
            tunnel: Some(("192.0.2.1".parse().unwrap(), dst.parse().unwrap())),
            level: Level::Require,
            reqid: 0,
        };
        let any: IpAddr = "0.0.0.0".parse().unwrap();
        let now = Duration::from_secs(100);
        let spi_for = |sad: &Sad, dst: &str| {
            sad.find_outbound(&template(dst), any, any, now)
                .and_then(|h| sad.get(h))
                .map(|s| s.id().spi)
        };
        let mut sad = Sad::new();
        sad.add(to(1, "192.0.2.2", 1)).unwrap();
        sad.add(to(2, "192.0.2.3", 1)).unwrap();
        sad.add(to(3, "192.0.2.2", 2)).unwrap();
        assert_eq!(spi_for(&sad, "192.0.2.2"), Some(3), "the younger of two");
        assert_eq!(spi_for(&sad, "192.0.2.3"), Some(2));
        let id = |spi, dst: &str| SaId {
            protocol: Protocol::Esp,
            spi,
            dst: dst.parse().unwrap(),
        };
        sad.remove(&id(3, "192.0.2.2")).unwrap();
        assert_eq!(spi_for(&sad, "192.0.2.2"), Some(1));
        // The freed slot now holds an SA to another peer.
        sad.add(to(4, "192.0.2.4", 3)).unwrap();
        assert_eq!(spi_for(&sad, "192.0.2.2"), Some(1));
        assert_eq!(spi_for(&sad, "192.0.2.4"), Some(4));
        sad.remove(&id(1, "192.0.2.2")).unwrap();
        assert_eq!(spi_for(&sad, "192.0.2.2"), None);
        sad.flush(None);
        assert_eq!(spi_for(&sad, "192.0.2.3"), None);
        assert_eq!(spi_for(&sad, "192.0.2.4"), None);
        assert!(sad.by_pair.is_empty(), "no empty lists left behind");
    }
}
