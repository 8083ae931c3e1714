//! A [`Scene`] drawn into pixels and encoded as PNG: lines with a
//! thickness, dots, and text in the public-domain 8×8 bitmap font of
//! `font8x8` (doubled for titles), so that plots open anywhere without
//! a font or an SVG renderer.

use font8x8::{UnicodeFonts, BASIC_FONTS};

use crate::plot::{layout, Anchor, Scene, Shape, H, W};
use crate::report::Plot;

struct Canvas {
    w: usize,
    h: usize,
    rgb: Vec<u8>,
}

impl Canvas {
    fn new(w: usize, h: usize) -> Canvas {
        Canvas {
            w,
            h,
            rgb: vec![0xff; w * h * 3],
        }
    }

    fn put(&mut self, x: i64, y: i64, c: [u8; 3]) {
        if x >= 0 && y >= 0 && (x as usize) < self.w && (y as usize) < self.h {
            let i = (y as usize * self.w + x as usize) * 3;
            self.rgb[i..i + 3].copy_from_slice(&c);
        }
    }

    /// A disc of radius `r` around (x, y).
    fn disc(&mut self, x: f64, y: f64, r: f64, c: [u8; 3]) {
        let ri = r.ceil() as i64;
        let (cx, cy) = (x.round() as i64, y.round() as i64);
        for dy in -ri..=ri {
            for dx in -ri..=ri {
                if ((dx * dx + dy * dy) as f64) <= r * r {
                    self.put(cx + dx, cy + dy, c);
                }
            }
        }
    }

    /// A line `width` pixels wide: discs stepped along it.
    fn line(&mut self, a: (f64, f64), b: (f64, f64), width: f64, c: [u8; 3]) {
        let steps = (b.0 - a.0).abs().max((b.1 - a.1).abs()).ceil().max(1.0) as usize;
        for i in 0..=steps {
            let t = i as f64 / steps as f64;
            let (x, y) = (a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t);
            if width <= 1.0 {
                self.put(x.round() as i64, y.round() as i64, c);
            } else {
                self.disc(x, y, width / 2.0, c);
            }
        }
    }

    /// Text with its baseline at `at`, `scale` pixels per font pixel.
    fn text(&mut self, at: (f64, f64), s: &str, anchor: Anchor, scale: i64, vertical: bool) {
        let advance = 8 * scale;
        let len = s.chars().count() as i64 * advance;
        let shift = match anchor {
            Anchor::Start => 0,
            Anchor::Middle => len / 2,
            Anchor::End => len,
        };
        let (ax, ay) = (at.0.round() as i64, at.1.round() as i64);
        for (i, ch) in s.chars().enumerate() {
            let glyph = BASIC_FONTS
                .get(ch)
                .or_else(|| BASIC_FONTS.get('?'))
                .unwrap_or([0; 8]);
            let off = i as i64 * advance - shift;
            for (row, bits) in glyph.iter().enumerate() {
                for col in 0..8 {
                    if bits & (1 << col) == 0 {
                        continue;
                    }
                    for sy in 0..scale {
                        for sx in 0..scale {
                            // Glyph pixel (gx, gy) above the baseline.
                            let (gx, gy) =
                                (off + col * scale + sx, row as i64 * scale + sy - 7 * scale);
                            let (x, y) = if vertical {
                                (ax + gy, ay - gx)
                            } else {
                                (ax + gx, ay + gy)
                            };
                            self.put(x, y, [0, 0, 0]);
                        }
                    }
                }
            }
        }
    }
}

fn draw(scene: &Scene) -> Canvas {
    let mut c = Canvas::new(W as usize, H as usize);
    for shape in &scene.shapes {
        match shape {
            Shape::Line {
                from,
                to,
                colour,
                width,
            } => c.line(*from, *to, *width, *colour),
            Shape::Polyline { points, colour } => {
                for pair in points.windows(2) {
                    c.line(pair[0], pair[1], 2.0, *colour);
                }
            }
            Shape::Dot { at, colour } => c.disc(at.0, at.1, 3.0, *colour),
            Shape::Text {
                at,
                text,
                anchor,
                large,
                vertical,
            } => {
                // Doubled only where it fits the width.
                let fits = (text.chars().count() * 16) as f64 <= W - 20.0;
                let scale = if *large && fits { 2 } else { 1 };
                let at = if *large && !fits {
                    (W / 2.0, at.1)
                } else {
                    *at
                };
                c.text(at, text, *anchor, scale, *vertical)
            }
        }
    }
    c
}

/// Render `p` as a PNG file's bytes.
pub fn line_plot_png(p: &Plot) -> Vec<u8> {
    let c = draw(&layout(p));
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, c.w as u32, c.h as u32);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        // Writing into a Vec cannot fail.
        if let Ok(mut w) = enc.write_header() {
            let _ = w.write_image_data(&c.rgb);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Series;

    #[test]
    fn a_png_decodes_with_the_series_colours_in_it() {
        let p = Plot {
            file: "t".into(),
            title: "Throughput".into(),
            x_label: "bytes".into(),
            y_label: "Mbit/s".into(),
            log_y: false,
            series: vec![
                Series {
                    label: "a".into(),
                    points: vec![(1.0, 1.0), (2.0, 4.0)],
                },
                Series {
                    label: "b".into(),
                    points: vec![(1.0, 2.0), (2.0, 1.0)],
                },
            ],
        };
        let bytes = line_plot_png(&p);
        let decoder = png::Decoder::new(&bytes[..]);
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (W as u32, H as u32));
        let px: Vec<[u8; 3]> = buf.chunks(3).map(|c| [c[0], c[1], c[2]]).collect();
        for colour in &crate::plot::COLOURS[..2] {
            assert!(px.contains(colour), "series colour {colour:?} drawn");
        }
        assert!(px.contains(&[0, 0, 0]), "text and axes drawn");
        assert!(px.iter().filter(|c| **c == [0xff; 3]).count() > px.len() / 2);
    }
}
