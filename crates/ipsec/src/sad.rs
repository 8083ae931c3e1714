//! The Security Association Database (RFC 4301 §4.4.2): SAs by identity,
//! with stable handles so that a bundle can be applied without holding
//! several mutable borrows at once.

use core::fmt;
use core::time::Duration;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::net::IpAddr;

use crate::sa::{Protocol, SaId, SecurityAssociation};
use crate::spd::SaTemplate;
use crate::SaState;

/// A stable reference to an SA in one [`Sad`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SaHandle(usize);

/// Why an SA could not be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SadError {
    /// An SA with the same protocol, SPI and destination exists.
    Exists(SaId),
}

impl fmt::Display for SadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SadError::Exists(id) => write!(
                f,
                "{} SA with SPI {:#x} to {} exists",
                id.protocol, id.spi, id.dst
            ),
        }
    }
}

impl std::error::Error for SadError {}

/// SAs by (protocol, SPI, destination).
#[derive(Default)]
pub struct Sad {
    slots: Vec<Option<SecurityAssociation>>,
    free: Vec<usize>,
    by_id: HashMap<SaId, usize, BuildHasherDefault<SpiHasher>>,
}

/// A multiply-rotate hasher (FxHash's) for SA identities. SipHash's
/// flooding resistance buys nothing here: the keys are SPIs this side chose
/// at random, so a peer cannot make them collide, and a miss costs one
/// probe. It is measurably faster per packet than the default.
#[derive(Default)]
struct SpiHasher(u64);

impl Hasher for SpiHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }
    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
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
        let slot = match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(sa);
                i
            }
            None => {
                self.slots.push(Some(sa));
                self.slots.len() - 1
            }
        };
        self.by_id.insert(id, slot);
        Ok(SaHandle(slot))
    }

    /// Remove the SA with this identity.
    pub fn remove(&mut self, id: &SaId) -> Option<SecurityAssociation> {
        let slot = self.by_id.remove(id)?;
        self.free.push(slot);
        self.slots[slot].take()
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
        self.by_id.get(id).map(|&i| SaHandle(i))
    }

    /// The SA behind a handle (`None` once removed).
    pub fn get(&self, h: SaHandle) -> Option<&SecurityAssociation> {
        self.slots.get(h.0)?.as_ref()
    }

    /// The SA behind a handle, mutably.
    pub fn get_mut(&mut self, h: SaHandle) -> Option<&mut SecurityAssociation> {
        self.slots.get_mut(h.0)?.as_mut()
    }

    /// Every SA.
    pub fn iter(&self) -> impl Iterator<Item = &SecurityAssociation> {
        self.slots.iter().flatten()
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
    /// (RFC 4301 §4.4.2.1: prefer the newer SA during a rekey).
    pub fn find_outbound(
        &self,
        t: &SaTemplate,
        src: IpAddr,
        dst: IpAddr,
        now: Duration,
    ) -> Option<SaHandle> {
        let (src, dst) = t.tunnel.unwrap_or((src, dst));
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|s| (i, s)))
            .filter(|(_, s)| {
                s.id().protocol == t.protocol
                    && s.mode() == t.mode
                    && s.src() == src
                    && s.dst() == dst
                    && (t.reqid == 0 || s.reqid() == t.reqid)
            })
            .map(|(i, s)| (i, s.state(now), s.usage().added))
            .filter(|&(_, state, _)| state != SaState::Expired)
            .min_by_key(|&(_, state, added)| (state, core::cmp::Reverse(added)))
            .map(|(i, _, _)| SaHandle(i))
    }
}
