//! A [`Scene`] written as an SVG document.

use std::fmt::Write as _;

use crate::plot::{layout, Anchor, Scene, Shape, H, W};
use crate::report::Plot;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn hex(c: [u8; 3]) -> String {
    format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2])
}

/// Render `p` as an SVG document.
pub fn line_plot(p: &Plot) -> String {
    render(&layout(p))
}

fn render(scene: &Scene) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    for shape in &scene.shapes {
        let _ = match shape {
            Shape::Line {
                from,
                to,
                colour,
                width,
            } => writeln!(
                s,
                r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="{width}"/>"#,
                from.0,
                from.1,
                to.0,
                to.1,
                hex(*colour)
            ),
            Shape::Polyline { points, colour } => writeln!(
                s,
                r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"/>"#,
                points
                    .iter()
                    .map(|(x, y)| format!("{x:.1},{y:.1}"))
                    .collect::<Vec<_>>()
                    .join(" "),
                hex(*colour)
            ),
            Shape::Dot { at, colour } => writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}"/>"#,
                at.0,
                at.1,
                hex(*colour)
            ),
            Shape::Text {
                at,
                text,
                anchor,
                large,
                vertical,
            } => {
                let anchor = match anchor {
                    Anchor::Start => "start",
                    Anchor::Middle => "middle",
                    Anchor::End => "end",
                };
                let size = if *large { r#" font-size="15""# } else { "" };
                let rotate = if *vertical {
                    format!(r#" transform="rotate(-90 {:.1} {:.1})""#, at.0, at.1)
                } else {
                    String::new()
                };
                writeln!(
                    s,
                    r#"<text x="{:.1}" y="{:.1}" text-anchor="{anchor}"{size}{rotate}>{}</text>"#,
                    at.0,
                    at.1,
                    escape(text)
                )
            }
        };
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Series;

    pub(crate) fn sample() -> Plot {
        Plot {
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
        }
    }

    #[test]
    fn a_plot_has_every_series_and_escapes_text() {
        let p = sample();
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
