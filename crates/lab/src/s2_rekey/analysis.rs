//! s2-rekey's arithmetic on what was measured: which seconds belong to
//! which rekey, loss near rekeys against away from them, the probe's gap
//! statistics.

use super::{Leg, PAYLOAD};

/// The seconds of a stream that belong to rekey `k`: from the second
/// before it up to the second before the next (the last one to the end).
/// Loss before the first rekey's window belongs to none.
pub(super) fn windows(rekeys: &[f64], len: usize) -> Vec<std::ops::Range<usize>> {
    let start = |r: f64| (r.floor().max(1.0) as usize - 1).min(len);
    rekeys
        .iter()
        .enumerate()
        .map(|(k, &r)| {
            let end = rekeys.get(k + 1).map_or(len, |&n| start(n));
            start(r)..end.max(start(r))
        })
        .collect()
}

/// Datagrams lost in each rekey's window.
pub(super) fn loss_per_rekey(leg: &Leg) -> Vec<u64> {
    windows(&leg.rekeys, leg.lost.len())
        .into_iter()
        .map(|w| leg.lost[w].iter().sum())
        .collect()
}

/// The largest share of a second's datagrams lost (0–1).
pub(super) fn worst_second(leg: &Leg, payload: usize) -> f64 {
    let per_s = leg.rate_bps / (8.0 * payload as f64);
    let worst = leg.lost.iter().copied().max().unwrap_or(0) as f64;
    if per_s > 0.0 {
        (worst / per_s).min(1.0)
    } else {
        0.0
    }
}

pub(super) fn median(mut xs: Vec<f64>) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(f64::total_cmp);
    let m = xs.len() / 2;
    if xs.len() % 2 == 1 {
        xs[m]
    } else {
        (xs[m - 1] + xs[m]) / 2.0
    }
}

/// The probe's gaps, over both directions: the median over rekeys of the
/// longest gap in the two seconds around each (from half a second before
/// it: the initiator's key generation comes before the new SA is seen),
/// and the median of the two-second windows that share no second with
/// those (the first and the last, partial, second left out).
pub(super) fn gap_stats(legs: &[Leg]) -> (f64, f64) {
    let Some(first) = legs.first() else {
        return (f64::NAN, f64::NAN);
    };
    let len = legs.iter().map(|l| l.gaps.len()).min().unwrap_or(0);
    let gap = |i: usize| legs.iter().map(|l| l.gaps[i]).fold(0.0, f64::max);
    let pair = |i: usize| gap(i).max(gap(i + 1));
    let usable = 1..len.saturating_sub(2);
    let near: Vec<usize> = first
        .rekeys
        .iter()
        .map(|r| (r - 0.5).floor().max(0.0) as usize)
        .filter(|i| usable.contains(i))
        .collect();
    let at = near.iter().map(|&i| pair(i)).collect();
    let base = usable
        .clone()
        .filter(|i| !near.iter().any(|&n| n + 2 > *i && *i + 2 > n))
        .map(pair)
        .collect();
    (median(at), median(base))
}

/// Totals of one leg: rekeys, lost, rekeys that lost something, worst
/// second; and lost in the seconds within one of a rekey (the second it
/// was seen in, the one before and the one after) against the others, to
/// tell a rekey's loss from a saturated path's own.
pub(super) struct LegSum {
    pub(super) rekeys: usize,
    pub(super) lost: u64,
    pub(super) lossy_rekeys: usize,
    pub(super) worst: f64,
    pub(super) near: (u64, usize),
    pub(super) away: (u64, usize),
}

pub(super) fn sum(leg: &Leg) -> LegSum {
    let per = loss_per_rekey(leg);
    let is_near = |i: usize| {
        leg.rekeys
            .iter()
            .any(|r| (i as f64 - r.floor()).abs() <= 1.0)
    };
    let (mut near, mut away) = ((0, 0), (0, 0));
    for (i, &l) in leg.lost.iter().enumerate() {
        let side = if is_near(i) { &mut near } else { &mut away };
        *side = (side.0 + l, side.1 + 1);
    }
    LegSum {
        rekeys: per.len(),
        lost: leg.lost.iter().sum(),
        lossy_rekeys: per.iter().filter(|&&l| l > 0).count(),
        worst: worst_second(leg, PAYLOAD),
        near,
        away,
    }
}

impl LegSum {
    /// Lost per second near rekeys and away from them.
    pub(super) fn rates(&self) -> (f64, f64) {
        let per = |(l, s): (u64, usize)| l as f64 / s.max(1) as f64;
        (per(self.near), per(self.away))
    }
}
