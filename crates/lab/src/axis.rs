//! A chart's axes ([`crate::chart`]) in drawing units — the log10 of a
//! value on a logarithmic axis, the index on a category axis — with their
//! ticks and tick labels.

use crate::chart::{text_width, Plot, PlotKind, TICK};

/// One axis.
pub(crate) struct Axis {
    /// The ends, in drawing units.
    pub lo: f64,
    pub hi: f64,
    /// Where the labelled ticks are, in drawing units.
    pub ticks: Vec<f64>,
    pub log: bool,
    /// The axis' label (" (log scale)" added on a log axis).
    pub desc: String,
    /// Category names, the first at position 0 (or, `reversed`, at the
    /// far end: the top when categories run down the left).
    categories: Vec<String>,
    reversed: bool,
}

impl Axis {
    /// `v` in drawing units; `None` where it cannot be drawn (not finite,
    /// or not above 0 on a log axis).
    pub fn to(&self, v: f64) -> Option<f64> {
        match (v.is_finite(), self.log) {
            (false, _) => None,
            (true, true) if v > 0.0 => Some(v.log10()),
            (true, true) => None,
            (true, false) => Some(v),
        }
    }

    /// The label of the tick at `u` (drawing units).
    pub fn label(&self, u: f64) -> String {
        if self.is_categories() {
            let n = self.categories.len();
            let i = u.round().clamp(0.0, n as f64 - 1.0) as usize;
            let i = if self.reversed { n - 1 - i } else { i };
            return self.categories.get(i).cloned().unwrap_or_default();
        }
        number(if self.log { 10f64.powf(u) } else { u })
    }

    pub fn is_categories(&self) -> bool {
        !self.categories.is_empty()
    }

    /// Where category `i` sits (drawing units).
    pub fn position(&self, i: f64) -> f64 {
        if self.reversed {
            self.categories.len() as f64 - 1.0 - i
        } else {
            i
        }
    }
}

/// A category per slot, one unit wide; `reversed` puts the first at the
/// far end (the top, when categories run down the left).
pub(crate) fn category_axis(categories: &[String], desc: &str, reversed: bool) -> Axis {
    let n = categories.len().max(1);
    Axis {
        lo: -0.5,
        hi: n as f64 - 0.5,
        ticks: (0..categories.len()).map(|i| i as f64).collect(),
        log: false,
        desc: desc.to_string(),
        categories: categories.to_vec(),
        reversed,
    }
}

/// The value axis: from 0 (or the lowest value, if below) to a round
/// figure above the highest value or whisker; on a log axis, from the
/// 1-2-5 step below the lowest value to the one above the highest
/// (ticks at decades only when that spans more than three).
pub(crate) fn value_axis(p: &Plot) -> Axis {
    let mut values = Vec::new();
    for s in &p.series {
        for (k, &(_, y)) in s.points.iter().enumerate() {
            values.push(y);
            values.push(y + s.errors.get(k).copied().unwrap_or(0.0));
        }
    }
    let bars = matches!(p.kind, PlotKind::Bars { .. });
    let (lo, hi, ticks) = if p.log_y {
        log_ticks(&values, 1.03, bars)
    } else {
        let min = values.iter().copied().fold(0.0, f64::min);
        let max = values.iter().copied().fold(f64::MIN, f64::max);
        let max = if max > min { max * 1.03 } else { min + 1.0 };
        linear_ticks(min, max)
    };
    Axis {
        lo,
        hi,
        ticks,
        log: p.log_y,
        desc: described(&p.y_label, p.log_y),
        categories: Vec::new(),
        reversed: false,
    }
}

/// The x axis of a line chart, `px` pixels long: the data's own x values
/// as ticks when their labels fit side by side, else round steps.
pub(crate) fn x_axis(p: &Plot, px: i32) -> Axis {
    let mut xs: Vec<f64> = p
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|&(x, _)| x))
        .filter(|&x| x.is_finite() && (!p.log_x || x > 0.0))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let units: Vec<f64> = xs
        .iter()
        .map(|&x| if p.log_x { x.log10() } else { x })
        .collect();
    let (min, max) = match (units.first(), units.last()) {
        (Some(&a), Some(&b)) if b > a => (a, b),
        (Some(&a), _) => (a - 0.5, a + 0.5),
        _ => (0.0, 1.0),
    };
    let pad = (max - min) * 0.04;
    let (lo, hi) = (min - pad, max + pad);
    let labels: i32 = xs.iter().map(|&x| text_width(&number(x), TICK) + 12).sum();
    let ticks = if !units.is_empty() && units.len() <= 16 && labels <= px {
        units
    } else if p.log_x {
        let (_, _, decades) = log_ticks(&[10f64.powf(min), 10f64.powf(max)], 1.0, false);
        decades
    } else {
        linear_ticks(min, max).2
    };
    Axis {
        lo,
        hi,
        ticks: ticks
            .into_iter()
            .filter(|t| (lo..=hi).contains(t))
            .collect(),
        log: p.log_x,
        desc: described(&p.x_label, p.log_x),
        categories: Vec::new(),
        reversed: false,
    }
}

fn described(label: &str, log: bool) -> String {
    if log {
        format!("{label} (log scale)")
    } else {
        label.to_string()
    }
}

/// Round steps (1, 2, 2.5 or 5 × a power of ten, about six of them) over
/// `min..max`: the ends, widened to steps, and the ticks.
fn linear_ticks(min: f64, max: f64) -> (f64, f64, Vec<f64>) {
    let raw = (max - min) / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0]
        .iter()
        .map(|m| m * mag)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * mag);
    let (first, last) = ((min / step).floor(), (max / step).ceil());
    let ticks = (first as i64..=last as i64)
        .map(|k| k as f64 * step)
        .collect();
    (first * step, last * step, ticks)
}

/// Log-axis ends and ticks (log10 units) around the positive `values`,
/// the top `headroom` × the highest value: the ends on the 1-2-5 steps
/// nearest outside the data, a tick at each step between. Under `bars`
/// the axis starts a decade below the lowest value or more, so that the
/// shortest bar still shows (a bar on a log axis rises from an arbitrary
/// floor).
fn log_ticks(values: &[f64], headroom: f64, bars: bool) -> (f64, f64, Vec<f64>) {
    let positive = values.iter().copied().filter(|&v| v > 0.0 && v.is_finite());
    let (min, max) = positive.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    if min > max {
        return (0.0, 1.0, vec![0.0, 1.0]);
    }
    let max = max * headroom;
    let min = if bars { min / 1.5 } else { min };
    let (d0, d1) = (min.log10().floor() as i32, max.log10().ceil() as i32);
    let d1 = d1.max(d0 + 1);
    let candidates: Vec<f64> = (d0..=d1)
        .flat_map(|d| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(d)))
        .collect();
    let lo = if bars {
        10f64.powi(d0)
    } else {
        candidates
            .iter()
            .copied()
            .filter(|&c| c <= min * 1.000_001)
            .fold(10f64.powi(d0), f64::max)
    };
    let hi = candidates
        .iter()
        .copied()
        .filter(|&c| c >= max)
        .fold(10f64.powi(d1), f64::min);
    // Beyond three decades, the decades and the ends only.
    let decades = hi / lo > 1e3 * 1.000_001;
    let ticks = candidates
        .iter()
        .filter(|&&c| c >= lo && c <= hi)
        .filter(|&&c| {
            !decades || c == lo || c == hi || (c.log10() - c.log10().round()).abs() < 1e-9
        })
        .map(|c| c.log10())
        .collect();
    (lo.log10(), hi.log10(), ticks)
}

/// A tick label: whole numbers as they are, others to three significant
/// digits (`0.25`, `1.5`).
pub(crate) fn number(v: f64) -> String {
    if v == 0.0 || !v.is_finite() || v.abs() < 1e-9 {
        return "0".into();
    }
    let whole = v.round();
    if whole != 0.0 && ((v - whole) / v).abs() < 1e-6 {
        return format!("{}", whole as i64);
    }
    let d = v.abs().log10().floor() as i32;
    let decimals = (2 - d).max(0) as usize;
    let scale = 10f64.powi(2 - d);
    let s = format!("{:.decimals$}", (v * scale).round() / scale);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_written() {
        let cases = [
            (2048.0, "2048"),
            (10f64.powf(2048f64.log10()), "2048"),
            (10f64.powf(0.2f64.log10()), "0.2"),
            (0.25, "0.25"),
            (0.30000000000000004, "0.3"),
            (1e-17, "0"),
            (11376.79, "11400"),
            (4.56789, "4.57"),
        ];
        for (v, s) in cases {
            assert_eq!(number(v), s, "{v}");
        }
    }

    #[test]
    fn log_ticks_are_1_2_5_or_decades() {
        let (lo, hi, t) = log_ticks(&[4.5, 13.7], 1.0, false);
        let t: Vec<String> = t.iter().map(|u| number(10f64.powf(*u))).collect();
        assert_eq!(t, ["2", "5", "10", "20"]);
        assert_eq!(
            (number(10f64.powf(lo)), number(10f64.powf(hi))),
            ("2".into(), "20".into())
        );
        let (_, _, t) = log_ticks(&[2.8, 3841.0], 1.0, false);
        let t: Vec<String> = t.iter().map(|u| number(10f64.powf(*u))).collect();
        assert_eq!(t, ["2", "10", "100", "1000", "5000"]);
        // Bars: from a decade below the lowest, however close it is.
        let (lo, _, _) = log_ticks(&[5.7, 7500.0], 1.0, true);
        assert_eq!(number(10f64.powf(lo)), "1");
        let (lo, _, _) = log_ticks(&[100.0, 900.0], 1.0, true);
        assert_eq!(number(10f64.powf(lo)), "10");
    }

    #[test]
    fn linear_ticks_are_round() {
        let (lo, hi, t) = linear_ticks(0.0, 3347.0);
        assert_eq!((lo, hi), (0.0, 4000.0));
        assert_eq!(t.len(), 5);
        let (_, _, t) = linear_ticks(0.0, 1.03);
        assert_eq!(
            t.iter().map(|v| number(*v)).collect::<Vec<_>>(),
            ["0", "0.2", "0.4", "0.6", "0.8", "1", "1.2"]
        );
    }
}
