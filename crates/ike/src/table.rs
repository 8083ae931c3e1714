//! The IKE SAs of this host. Each lives in a slot that does not move while
//! it lives, found by our SPI; a message or timer for one is handled with
//! the SA borrowed where it lives ([`SaMut`]), the other SAs beside it
//! ([`Others`]). The table changes shape only when the borrow has ended:
//! a new IKE SA joins it, or one leaves it as its handler said ([`Then`]).
//!
//! ```text
//!  by_spi: our SPI ──► slot ──► slots[slot]: Some(IkeSa)
//!  borrow(slot) ──► SaMut { the SA, Others: every other slot (read, or
//!                   one taken out / changed: INITIAL_CONTACT, §2.8.2) }
//! ```

use core::ops::{Deref, DerefMut};
use std::collections::BTreeMap;

use crate::config::DpdAction;
use crate::sa::{IkeSa, Todo};

/// Where an IKE SA lives in its [`SaTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot(usize);

/// A child's wish once its IKE SA is gone or closed (`dpd_action`,
/// `close_action`): (connection, child, what to do).
pub(crate) type Wish = (crate::config::ConnRef, usize, DpdAction);

/// What becomes of a borrowed IKE SA once its borrow has ended: the one
/// place where a handler changes the table.
#[must_use]
pub(crate) enum Then {
    /// It stays where it is.
    Stay,
    /// It goes, and what it installed with it; then its children's
    /// wishes are carried out.
    Destroy(Vec<Wish>),
    /// It stays; the wishes of the children the peer closed are carried
    /// out (they may negotiate anew, and see it there).
    Revive(Vec<Wish>),
    /// A rekey made `new` (RFC 7296 §1.3.2): it joins the table, its
    /// queued tasks start at once if `start`, and then those of the old
    /// one (its DELETE) do.
    Rekeyed {
        /// The new IKE SA.
        new: Box<IkeSa>,
        /// Start the new SA's queue now (ours), or wait for a poll (the
        /// peer's rekey).
        start: bool,
    },
}

/// The IKE SAs, by our SPI.
#[derive(Default)]
pub(crate) struct SaTable {
    by_spi: BTreeMap<u64, Slot>,
    slots: Vec<Option<IkeSa>>,
    free: Vec<Slot>,
}

impl SaTable {
    /// How many there are.
    pub fn len(&self) -> usize {
        self.by_spi.len()
    }

    /// Whether one of them has our SPI `spi`.
    pub fn contains_spi(&self, spi: u64) -> bool {
        self.by_spi.contains_key(&spi)
    }

    /// Where the SA with our SPI `spi` lives.
    pub fn slot(&self, spi: u64) -> Option<Slot> {
        self.by_spi.get(&spi).copied()
    }

    /// Every SA, by our SPI.
    pub fn values(&self) -> impl Iterator<Item = &IkeSa> {
        self.by_spi
            .values()
            .filter_map(|s| self.slots[s.0].as_ref())
    }

    /// Every SA, to change in place (in no particular order).
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut IkeSa> {
        self.slots.iter_mut().flatten()
    }

    /// Our SPIs, in order: a snapshot to visit each SA that exists now.
    pub fn spis(&self) -> Vec<u64> {
        self.by_spi.keys().copied().collect()
    }

    /// Add `sa` under our SPI (replacing one with the same, as a map
    /// would; new SPIs are drawn unused, so that does not happen).
    pub fn insert(&mut self, sa: IkeSa) -> Slot {
        let spi = sa.our_spi();
        if let Some(at) = self.slot(spi) {
            self.slots[at.0] = Some(sa);
            return at;
        }
        let at = match self.free.pop() {
            Some(at) => {
                self.slots[at.0] = Some(sa);
                at
            }
            None => {
                self.slots.push(Some(sa));
                Slot(self.slots.len() - 1)
            }
        };
        self.by_spi.insert(spi, at);
        at
    }

    /// Take the SA at `at` out of the table.
    pub fn remove(&mut self, at: Slot) -> Option<IkeSa> {
        let sa = self.slots.get_mut(at.0)?.take()?;
        self.by_spi.remove(&sa.our_spi());
        self.free.push(at);
        Some(sa)
    }

    /// The SA at `at`, borrowed in place, and the others beside it.
    pub fn borrow(&mut self, at: Slot) -> Option<SaMut<'_>> {
        if self.slots.get(at.0).is_none_or(|s| s.is_none()) {
            return None;
        }
        let (before, rest) = self.slots.split_at_mut(at.0);
        let (this, after) = rest.split_first_mut()?;
        Some(SaMut {
            sa: this.as_mut()?,
            others: Others {
                by_spi: &mut self.by_spi,
                free: &mut self.free,
                before,
                after,
                hole: Some(at),
            },
        })
    }

    /// The SA with our SPI `spi`, borrowed in place, and where it lives.
    pub fn find(&mut self, spi: u64) -> Option<(Slot, SaMut<'_>)> {
        let at = self.slot(spi)?;
        Some((at, self.borrow(at)?))
    }

    /// All SAs, as the others of one that has left the table.
    pub fn all(&mut self) -> Others<'_> {
        Others {
            by_spi: &mut self.by_spi,
            free: &mut self.free,
            before: &mut self.slots,
            after: &mut [],
            hole: None,
        }
    }
}

/// One IKE SA borrowed where it lives, with the others beside it: what a
/// handler works on. It reads and writes as the [`IkeSa`] it borrows.
pub(crate) struct SaMut<'a> {
    sa: &'a mut IkeSa,
    /// The table's other IKE SAs.
    pub others: Others<'a>,
}

impl<'a> SaMut<'a> {
    /// An SA that is not in the table (any more), with `others`.
    pub fn detached(sa: &'a mut IkeSa, others: Others<'a>) -> SaMut<'a> {
        SaMut { sa, others }
    }

    /// The SA and the others apart, to change both at once.
    pub fn parts(&mut self) -> (&mut IkeSa, &mut Others<'a>) {
        (&mut *self.sa, &mut self.others)
    }
}

impl Deref for SaMut<'_> {
    type Target = IkeSa;

    fn deref(&self) -> &IkeSa {
        self.sa
    }
}

impl DerefMut for SaMut<'_> {
    fn deref_mut(&mut self) -> &mut IkeSa {
        self.sa
    }
}

/// The IKE SAs beside a borrowed one (or all of them, when the one
/// handled has left the table).
pub(crate) struct Others<'a> {
    by_spi: &'a mut BTreeMap<u64, Slot>,
    free: &'a mut Vec<Slot>,
    /// The slots before the hole and after it.
    before: &'a mut [Option<IkeSa>],
    after: &'a mut [Option<IkeSa>],
    /// The borrowed SA's slot, if one is.
    hole: Option<Slot>,
}

impl Others<'_> {
    /// Whether our SPI `spi` is taken, the borrowed SA's included.
    pub fn contains_spi(&self, spi: u64) -> bool {
        self.by_spi.contains_key(&spi)
    }

    /// Every other SA, by our SPI.
    pub fn values(&self) -> impl Iterator<Item = &IkeSa> {
        self.by_spi
            .values()
            .filter_map(|at| self.at(*at).and_then(Option::as_ref))
    }

    /// The other SA with our SPI `spi`.
    pub fn get_mut(&mut self, spi: u64) -> Option<&mut IkeSa> {
        let at = *self.by_spi.get(&spi)?;
        self.at_mut(at)?.as_mut()
    }

    /// Take the other SA with our SPI `spi` out of the table.
    pub fn take(&mut self, spi: u64) -> Option<IkeSa> {
        let at = *self.by_spi.get(&spi)?;
        let sa = self.at_mut(at)?.take()?;
        self.by_spi.remove(&spi);
        self.free.push(at);
        Some(sa)
    }

    /// The same view for a shorter while (to lend it to a helper).
    pub fn reborrow(&mut self) -> Others<'_> {
        Others {
            by_spi: &mut *self.by_spi,
            free: &mut *self.free,
            before: &mut *self.before,
            after: &mut *self.after,
            hole: self.hole,
        }
    }

    fn at(&self, at: Slot) -> Option<&Option<IkeSa>> {
        match at.0.checked_sub(self.before.len()) {
            None => self.before.get(at.0),
            Some(0) if self.hole.is_some() => None,
            Some(i) => self.after.get(i - usize::from(self.hole.is_some())),
        }
    }

    fn at_mut(&mut self, at: Slot) -> Option<&mut Option<IkeSa>> {
        match at.0.checked_sub(self.before.len()) {
            None => self.before.get_mut(at.0),
            Some(0) if self.hole.is_some() => None,
            Some(i) => self.after.get_mut(i - usize::from(self.hole.is_some())),
        }
    }
}

/// The queued tasks of a replaced IKE SA that its successor takes over
/// (all but its own rekey and delete).
pub(crate) fn hand_over(from: &mut IkeSa, to: &mut IkeSa) {
    to.queue.extend(
        from.queue
            .drain(..)
            .filter(|t| !matches!(t, Todo::DeleteIke | Todo::RekeyIke)),
    );
}

/// What the children of a dead IKE SA want (`dpd_action`): restart
/// (negotiate anew) or trap (policies wait for traffic).
pub(crate) fn after_death(sa: &IkeSa) -> Vec<Wish> {
    let conn = &sa.conn;
    let mut out: Vec<Wish> = Vec::new();
    for c in &sa.children {
        let action = conn.children[c.cfg].dpd_action;
        if action != crate::config::DpdAction::Clear && !out.iter().any(|o| o.1 == c.cfg) {
            out.push((sa.conn.clone(), c.cfg, action));
        }
    }
    out
}

/// What children closed by the peer want (`close_action`), in
/// [`after_death`]'s terms; `spis` selects them (all if `None`).
pub(crate) fn after_close(sa: &IkeSa, spis: Option<&[u32]>) -> Vec<Wish> {
    use crate::config::{CloseAction, DpdAction};
    let conn = &sa.conn;
    let mut out: Vec<Wish> = Vec::new();
    for c in sa
        .children
        .iter()
        .filter(|c| spis.is_none_or(|s| s.contains(&c.spi_in)))
    {
        let action = match conn.children[c.cfg].close_action {
            CloseAction::None => continue,
            CloseAction::Trap => DpdAction::Trap,
            CloseAction::Start => DpdAction::Restart,
        };
        if !out.iter().any(|o| o.1 == c.cfg) {
            out.push((sa.conn.clone(), c.cfg, action));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    fn sa(spi: u64) -> IkeSa {
        let addr = "192.0.2.1:500".parse().unwrap();
        let conf = crate::config::parse(
            "t",
            "connections { c { local { auth = psk } remote { auth = psk } } }",
        )
        .unwrap();
        let conn = crate::config::ConnRef::new(conf.connections[0].clone());
        crate::exchange::init::new_sa(
            conn,
            spi as u32,
            (spi, 0),
            true,
            (addr, addr),
            Duration::ZERO,
        )
    }

    fn spis<'a>(it: impl Iterator<Item = &'a IkeSa>) -> Vec<u64> {
        it.map(IkeSa::our_spi).collect()
    }

    #[test]
    fn one_borrowed_the_others_beside_it_by_spi() {
        let mut t = SaTable::default();
        let at = [30, 10, 20, 40].map(|spi| t.insert(sa(spi)));
        assert_eq!(spis(t.values()), [10, 20, 30, 40]);
        let mut b = t.borrow(at[0]).unwrap();
        assert_eq!(b.our_spi(), 30);
        assert_eq!(spis(b.others.values()), [10, 20, 40]);
        assert!(b.others.contains_spi(30) && !b.others.contains_spi(50));
        assert!(
            b.others.get_mut(30).is_none(),
            "the borrowed one is not beside itself"
        );
        b.others.get_mut(40).unwrap().uid = 99;
        let gone = b.others.take(10).unwrap();
        assert_eq!(gone.our_spi(), 10);
        assert_eq!(spis(b.others.reborrow().values()), [20, 40]);
        b.uid = 7;
        assert_eq!(spis(t.values()), [20, 30, 40]);
        assert_eq!(t.values().map(|s| s.uid).collect::<Vec<_>>(), [20, 7, 99]);
        // The freed slot is reused; the slots of the others stay.
        assert_eq!(t.insert(sa(5)), at[1]);
        assert_eq!(t.slot(20), Some(at[2]));
        let mut last = t.remove(at[3]).unwrap();
        let rest = SaMut::detached(&mut last, t.all());
        assert_eq!(spis(rest.others.values()), [5, 20, 30]);
        assert!(t.borrow(at[3]).is_none());
        assert_eq!(t.len(), 3);
    }
}
