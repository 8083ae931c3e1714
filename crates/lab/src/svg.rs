//! A small SVG line plot: axes with ticks, one polyline and marker set per
//! series, a legend. Enough for the lab's figures without a plotting
//! dependency.

use std::fmt::Write as _;

use crate::report::Plot;

const W: f64 = 720.0;
const H: f64 = 440.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 220.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;
const COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Render `p` as an SVG document.
pub fn line_plot(p: &Plot) -> String {
    let points = p.series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in points {
        if x.is_finite() && y.is_finite() && (!p.log_y || y > 0.0) {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
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
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>"#,
        (W - RIGHT + LEFT) / 2.0,
        escape(&p.title)
    );
    // Axes.
    let (ax0, ax1, ay0, ay1) = (LEFT, W - RIGHT, TOP, H - BOTTOM);
    let _ = writeln!(
        s,
        r#"<path d="M{ax0},{ay0} V{ay1} H{ax1}" stroke="black" fill="none"/>"#
    );
    // X ticks: at the data's x values when few, else 5 even steps.
    let mut xs: Vec<f64> = p
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|&(x, _)| x))
        .collect();
    xs.sort_by(|a, b| a.total_cmp(b));
    xs.dedup();
    if xs.len() > 8 {
        xs = (0..=4).map(|i| x0 + (x1 - x0) * i as f64 / 4.0).collect();
    }
    for x in xs {
        let _ = writeln!(
            s,
            r#"<line x1="{0}" y1="{ay1}" x2="{0}" y2="{1}" stroke="black"/><text x="{0}" y="{2}" text-anchor="middle">{3}</text>"#,
            px(x),
            ay1 + 5.0,
            ay1 + 20.0,
            trim(x)
        );
    }
    // Y ticks: decades on a log axis, 5 steps otherwise.
    let ticks: Vec<f64> = if p.log_y {
        (ty0 as i32..=ty1 as i32).map(|e| 10f64.powi(e)).collect()
    } else {
        (0..=5)
            .map(|i| ty0 + (ty1 - ty0) * i as f64 / 5.0)
            .collect()
    };
    for y in ticks {
        let _ = writeln!(
            s,
            r##"<line x1="{ax0}" y1="{0}" x2="{1}" y2="{0}" stroke="#ddd"/><text x="{2}" y="{3}" text-anchor="end">{4}</text>"##,
            py(y),
            ax1,
            ax0 - 6.0,
            py(y) + 4.0,
            trim(y)
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        (ax0 + ax1) / 2.0,
        H - 15.0,
        escape(&p.x_label)
    );
    let _ = writeln!(
        s,
        r#"<text x="18" y="{0}" text-anchor="middle" transform="rotate(-90 18 {0})">{1}</text>"#,
        (ay0 + ay1) / 2.0,
        escape(&p.y_label)
    );
    for (i, series) in p.series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let pts: Vec<String> = series
            .points
            .iter()
            .filter(|&&(x, y)| x.is_finite() && y.is_finite() && (!p.log_y || y > 0.0))
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
            pts.join(" ")
        );
        for pt in &pts {
            let (x, y) = pt.split_once(',').unwrap_or(("0", "0"));
            let _ = writeln!(s, r#"<circle cx="{x}" cy="{y}" r="3" fill="{colour}"/>"#);
        }
        let ly = TOP + 10.0 + 20.0 * i as f64;
        let _ = writeln!(
            s,
            r#"<line x1="{0}" y1="{ly}" x2="{1}" y2="{ly}" stroke="{colour}" stroke-width="2"/><text x="{2}" y="{3}">{4}</text>"#,
            W - RIGHT + 15.0,
            W - RIGHT + 40.0,
            W - RIGHT + 46.0,
            ly + 4.0,
            escape(&series.label)
        );
    }
    s.push_str("</svg>\n");
    s
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Series;

    #[test]
    fn a_plot_has_every_series_and_escapes_text() {
        let p = Plot {
            file: "t".into(),
            title: "A <b> & c".into(),
            x_label: "bytes".into(),
            y_label: "Mbit/s".into(),
            log_y: true,
            series: vec![
                Series {
                    label: "inline".into(),
                    points: vec![(256.0, 3000.0), (2048.0, 9000.0)],
                },
                Series {
                    label: "engine".into(),
                    points: vec![(256.0, 30.0), (2048.0, 300.0), (4096.0, f64::NAN)],
                },
            ],
        };
        let svg = line_plot(&p);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 4, "NaN points are left out");
        assert!(svg.contains("A &lt;b&gt; &amp; c"));
        assert!(
            svg.contains(">1000<") || svg.contains(">10000<"),
            "decade ticks"
        );
        // Empty plots still render.
        let empty = Plot {
            series: vec![],
            ..p
        };
        assert!(line_plot(&empty).contains("</svg>"));
    }
}
