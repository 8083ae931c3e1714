//! A line plot laid out once as a [`Scene`] of shapes, which
//! [`crate::svg`] writes as SVG and [`crate::raster`] draws into a PNG:
//! axes with ticks, one polyline and marker set per series, a legend.

use crate::report::Plot;

pub const W: f64 = 720.0;
pub const H: f64 = 440.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 220.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;
pub const COLOURS: [[u8; 3]; 8] = [
    [0x1f, 0x77, 0xb4],
    [0xd6, 0x27, 0x28],
    [0x2c, 0xa0, 0x2c],
    [0xff, 0x7f, 0x0e],
    [0x94, 0x67, 0xbd],
    [0x8c, 0x56, 0x4b],
    [0xe3, 0x77, 0xc2],
    [0x7f, 0x7f, 0x7f],
];
pub const BLACK: [u8; 3] = [0, 0, 0];
pub const GRID: [u8; 3] = [0xdd, 0xdd, 0xdd];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

/// One thing to draw, in pixels from the top left.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    Line {
        from: (f64, f64),
        to: (f64, f64),
        colour: [u8; 3],
        width: f64,
    },
    Polyline {
        points: Vec<(f64, f64)>,
        colour: [u8; 3],
    },
    Dot {
        at: (f64, f64),
        colour: [u8; 3],
    },
    /// Text whose baseline starts, centres or ends at `at`; `vertical`
    /// reads bottom to top.
    Text {
        at: (f64, f64),
        text: String,
        anchor: Anchor,
        large: bool,
        vertical: bool,
    },
}

/// A laid-out plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Scene {
    pub shapes: Vec<Shape>,
}

fn text(at: (f64, f64), s: &str, anchor: Anchor) -> Shape {
    Shape::Text {
        at,
        text: s.into(),
        anchor,
        large: false,
        vertical: false,
    }
}

/// Lay out `p`.
pub fn layout(p: &Plot) -> Scene {
    let usable = |&(x, y): &(f64, f64)| x.is_finite() && y.is_finite() && (!p.log_y || y > 0.0);
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in p
        .series
        .iter()
        .flat_map(|s| s.points.iter())
        .filter(|pt| usable(pt))
    {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        (x0, x1, y0, y1) = (0.0, 1.0, 1.0, 10.0);
    }
    if x1 == x0 {
        x1 = x0 + 1.0;
    }
    let (ty0, ty1) = if p.log_y {
        (
            y0.log10().floor(),
            y1.log10().ceil().max(y0.log10().floor() + 1.0),
        )
    } else {
        (0.0f64.min(y0), if y1 > 0.0 { y1 * 1.1 } else { 1.0 })
    };
    let fy = |y: f64| if p.log_y { y.log10() } else { y };
    let px = |x: f64| LEFT + (x - x0) / (x1 - x0) * (W - LEFT - RIGHT);
    let py = |y: f64| H - BOTTOM - (fy(y) - ty0) / (ty1 - ty0) * (H - TOP - BOTTOM);
    let (ax0, ax1, ay0, ay1) = (LEFT, W - RIGHT, TOP, H - BOTTOM);
    let line = |from, to, colour| Shape::Line {
        from,
        to,
        colour,
        width: 1.0,
    };
    let mut shapes = vec![Shape::Text {
        at: ((W - RIGHT + LEFT) / 2.0, 22.0),
        text: p.title.clone(),
        anchor: Anchor::Middle,
        large: true,
        vertical: false,
    }];
    // Y ticks and grid first (under the data): decades on a log axis,
    // 5 steps otherwise.
    let ticks: Vec<f64> = if p.log_y {
        (ty0 as i32..=ty1 as i32).map(|e| 10f64.powi(e)).collect()
    } else {
        (0..=5)
            .map(|i| ty0 + (ty1 - ty0) * i as f64 / 5.0)
            .collect()
    };
    for y in ticks {
        shapes.push(line((ax0, py(y)), (ax1, py(y)), GRID));
        shapes.push(text((ax0 - 6.0, py(y) + 4.0), &trim(y), Anchor::End));
    }
    shapes.push(line((ax0, ay0), (ax0, ay1), BLACK));
    shapes.push(line((ax0, ay1), (ax1, ay1), BLACK));
    // X ticks: at the data's x values when few, else 5 even steps.
    let mut xs: Vec<f64> = p
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|&(x, _)| x))
        .filter(|x| x.is_finite())
        .collect();
    xs.sort_by(|a, b| a.total_cmp(b));
    xs.dedup();
    if xs.len() > 8 {
        xs = (0..=4).map(|i| x0 + (x1 - x0) * i as f64 / 4.0).collect();
    }
    for x in xs {
        shapes.push(line((px(x), ay1), (px(x), ay1 + 5.0), BLACK));
        shapes.push(text((px(x), ay1 + 20.0), &trim(x), Anchor::Middle));
    }
    shapes.push(text(
        ((ax0 + ax1) / 2.0, H - 15.0),
        &p.x_label,
        Anchor::Middle,
    ));
    shapes.push(Shape::Text {
        at: (18.0, (ay0 + ay1) / 2.0),
        text: p.y_label.clone(),
        anchor: Anchor::Middle,
        large: false,
        vertical: true,
    });
    for (i, series) in p.series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let points: Vec<(f64, f64)> = series
            .points
            .iter()
            .filter(|pt| usable(pt))
            .map(|&(x, y)| (px(x), py(y)))
            .collect();
        for &at in &points {
            shapes.push(Shape::Dot { at, colour });
        }
        shapes.push(Shape::Polyline { points, colour });
        let ly = TOP + 10.0 + 20.0 * i as f64;
        shapes.push(Shape::Line {
            from: (W - RIGHT + 15.0, ly),
            to: (W - RIGHT + 40.0, ly),
            colour,
            width: 2.0,
        });
        shapes.push(text(
            (W - RIGHT + 46.0, ly + 4.0),
            &series.label,
            Anchor::Start,
        ));
    }
    Scene { shapes }
}

/// A tick label: integers without decimals, else up to 3 significant-ish.
fn trim(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 && v.abs() < 1e12 {
        format!("{}", v.round() as i64)
    } else if v.abs() >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}
