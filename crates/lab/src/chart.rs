//! Charts as data, drawn with plotters. A scenario describes each figure
//! as a [`Plot`], which `results.json` keeps (so `flowsec lab plot` redraws
//! a saved run), and [`png()`] and [`svg()`] draw it:
//!
//! - [`PlotKind::Bars`]: a group of bars per category (suites, modes), a
//!   bar per series; laid across, the categories down the left, when
//!   their names would not fit under the bars;
//! - [`PlotKind::Lines`]: a line per series over a numeric sweep (sizes,
//!   load, time).
//!
//! A series marked `study` is a figure the study published: drawn tinted
//! (bars) or dashed with hollow markers (lines), in the colour of the
//! run it is compared with. Whiskers are ± a series' `errors`. A
//! logarithmic axis says so in its label. Top to bottom the image holds
//! the title, the chart, the legend and the note, each wrapped to the
//! width: the legend is below the chart, so it never covers data, and
//! no entry runs past the edge.
//!
//! Text is DejaVu Sans, embedded from `assets/` and rasterised by
//! ab_glyph: drawing needs no font library and no installed font.

use std::ops::Range;
use std::sync::OnceLock;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::{Deserialize, Serialize};

use crate::axis::{category_axis, value_axis, x_axis, Axis};

/// A chart: what is drawn, not how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plot {
    /// File name without extension.
    pub file: String,
    pub title: String,
    pub kind: PlotKind,
    /// What x is, with its unit (lines), or what the categories are (bars;
    /// may be empty).
    pub x_label: String,
    /// What the values are, with their unit.
    pub y_label: String,
    /// A logarithmic value axis (values spanning decades).
    pub log_y: bool,
    /// A logarithmic x axis (lines only: sizes that double).
    #[serde(default)]
    pub log_x: bool,
    pub series: Vec<Series>,
    /// Lines only: x values marked by a dashed vertical line across the
    /// chart (events: the rekeys of a stream).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub markers: Vec<f64>,
    /// Printed under the legend: what the whiskers are, where the study's
    /// figures come from.
    #[serde(default)]
    pub note: String,
}

/// How the series are drawn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlotKind {
    /// A line per series over a numeric x.
    Lines,
    /// A group of bars per category, a bar per series: a series' point
    /// `(i, y)` is its bar in `categories[i]`; a series without a point
    /// there leaves its place in the group empty.
    Bars { categories: Vec<String> },
}

/// One series: today's measurements or the study's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    /// ± about each point, in the order of `points`; empty: no whiskers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<f64>,
    /// A figure the study published, not a measurement of this run.
    #[serde(default)]
    pub study: bool,
    /// Palette index; a study series takes the colour of the run it is
    /// compared with.
    #[serde(default)]
    pub colour: usize,
}

impl Series {
    /// Today's measurements. Points that are not finite are left out
    /// (JSON has no NaN), as everywhere in this type.
    pub fn today(
        label: impl Into<String>,
        colour: usize,
        points: impl IntoIterator<Item = (f64, f64)>,
    ) -> Series {
        Series::new(label, colour, false, no_errors(points))
    }

    /// Today's measurements with whiskers: `(x, y, ±)`.
    pub fn today_with_errors(
        label: impl Into<String>,
        colour: usize,
        points: impl IntoIterator<Item = (f64, f64, f64)>,
    ) -> Series {
        Series::new(label, colour, false, points)
    }

    /// Figures the study published.
    pub fn study(
        label: impl Into<String>,
        colour: usize,
        points: impl IntoIterator<Item = (f64, f64)>,
    ) -> Series {
        Series::new(label, colour, true, no_errors(points))
    }

    fn new(
        label: impl Into<String>,
        colour: usize,
        study: bool,
        points: impl IntoIterator<Item = (f64, f64, f64)>,
    ) -> Series {
        let (mut xy, mut errors) = (Vec::new(), Vec::new());
        for (x, y, e) in points {
            if x.is_finite() && y.is_finite() {
                xy.push((x, y));
                errors.push(if e.is_finite() { e.abs() } else { 0.0 });
            }
        }
        if errors.iter().all(|&e| e == 0.0) {
            errors.clear();
        }
        Series {
            label: label.into(),
            points: xy,
            errors,
            study,
            colour,
        }
    }
}

/// `(x, y)` points as `(x, y, 0)`: no whiskers.
fn no_errors(
    points: impl IntoIterator<Item = (f64, f64)>,
) -> impl Iterator<Item = (f64, f64, f64)> {
    points.into_iter().map(|(x, y)| (x, y, 0.0))
}

/// Why a chart could not be drawn.
#[derive(Debug)]
#[non_exhaustive]
pub enum ChartError {
    /// The embedded font does not parse (a broken build).
    Font,
    /// plotters failed to draw.
    Draw(Box<dyn std::error::Error + Send + Sync>),
    /// The PNG encoder failed.
    Png(png::EncodingError),
}

impl core::fmt::Display for ChartError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ChartError::Font => f.write_str("the embedded font does not parse"),
            ChartError::Draw(e) => write!(f, "drawing failed: {e}"),
            ChartError::Png(e) => write!(f, "PNG encoding failed: {e}"),
        }
    }
}

impl std::error::Error for ChartError {}

impl<E: std::error::Error + Send + Sync + 'static> From<DrawingAreaErrorKind<E>> for ChartError {
    fn from(e: DrawingAreaErrorKind<E>) -> ChartError {
        ChartError::Draw(Box::new(e))
    }
}

/// `p` as a PNG image.
pub fn png(p: &Plot) -> Result<Vec<u8>, ChartError> {
    let l = Layout::of(p)?;
    let mut rgb = vec![0xffu8; l.width as usize * l.height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (l.width, l.height)).into_drawing_area();
        draw(&root, p, &l, Target::Raster)?;
        root.present()?;
    }
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, l.width, l.height);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::Best);
    let mut w = enc.write_header().map_err(ChartError::Png)?;
    w.write_image_data(&rgb).map_err(ChartError::Png)?;
    w.finish().map_err(ChartError::Png)?;
    Ok(out)
}

/// `p` as an SVG document (text as text, in the reader's sans-serif).
pub fn svg(p: &Plot) -> Result<String, ChartError> {
    let l = Layout::of(p)?;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (l.width, l.height)).into_drawing_area();
        draw(&root, p, &l, Target::Svg)?;
        root.present()?;
    }
    Ok(out)
}

/// What is drawn into: pixels by ab_glyph, or SVG text the reader's
/// renderer lays out.
#[derive(Clone, Copy)]
enum Target {
    Raster,
    Svg,
}

impl Target {
    /// How far down to move text anchored at its vertical centre: plotters
    /// puts ab_glyph's baseline half the font size below the top of the
    /// text's box, which draws digits about 0.22 × the size above where an
    /// SVG renderer centres them.
    fn lift(self, size: f64) -> i32 {
        match self {
            Target::Raster => (size * 0.22).round() as i32,
            Target::Svg => 0,
        }
    }
}

/// The family the embedded font is registered as (an SVG names it, and
/// falls back to the reader's own sans-serif).
const FAMILY: &str = "sans-serif";
static DEJAVU_SANS: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

fn register_font() -> Result<(), ChartError> {
    static OK: OnceLock<bool> = OnceLock::new();
    let ok = *OK.get_or_init(|| {
        plotters::style::register_font(FAMILY, FontStyle::Normal, DEJAVU_SANS).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(ChartError::Font)
    }
}

/// Text sizes (plotters' font size: about 1.24 × the em) and line pitches,
/// in pixels.
const TITLE: f64 = 24.0;
const DESC: f64 = 18.0;
pub(crate) const TICK: f64 = 16.0;
const LEGEND: f64 = 16.0;
const NOTE: f64 = 15.0;
const TITLE_LINE: i32 = 28;
const LEGEND_ROW: i32 = 24;
const NOTE_LINE: i32 = 19;
const WIDTH: u32 = 960;
const MARGIN: i32 = 14;
/// Plot height of a line chart or upright bars; one category's height
/// when bars lie across.
const CHART_H: i32 = 420;
const BAR_PX: i32 = 9;
/// The x tick labels and the x axis' label under the plot; the tick
/// labels alone.
const BOTTOM: u32 = 62;
const BOTTOM_BARE: u32 = 34;
const SWATCH_BAR: i32 = 16;
const SWATCH_LINE: i32 = 34;
const LEGEND_GAP: i32 = 24;

const PALETTE: [RGBColor; 8] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
];
const GRID: RGBColor = RGBColor(0xe0, 0xe0, 0xe0);
const INK: RGBColor = RGBColor(0x20, 0x20, 0x20);
const NOTE_INK: RGBColor = RGBColor(0x50, 0x50, 0x50);

fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// A study bar's fill: its run's colour, mostly white.
fn tint(c: RGBColor) -> RGBColor {
    let f = |v: u8| v + ((255 - v) as f64 * 0.6) as u8;
    RGBColor(f(c.0), f(c.1), f(c.2))
}

fn style(size: f64, c: &RGBColor) -> TextStyle<'static> {
    (FAMILY, size).into_font().color(c)
}

/// The width of `text` in pixels.
pub(crate) fn text_width(text: &str, size: f64) -> i32 {
    (FAMILY, size).into_font().box_size(text).map_or(
        (text.chars().count() as f64 * size * 0.6) as i32,
        |(w, _)| w as i32,
    )
}

/// `text` broken at spaces into lines of at most `width` pixels.
fn wrap(text: &str, size: f64, width: i32) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let candidate = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if line.is_empty() || text_width(&candidate, size) <= width {
            line = candidate;
        } else {
            lines.push(std::mem::replace(&mut line, word.to_string()));
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// `text` cut to at most `width` pixels, an ellipsis marking the cut.
fn fit(text: &str, size: f64, width: i32) -> String {
    if text_width(text, size) <= width {
        return text.to_string();
    }
    let mut cut: String = text.to_string();
    while !cut.is_empty() && text_width(&format!("{cut}…"), size) > width {
        cut.pop();
    }
    format!("{}…", cut.trim_end())
}

/// Where everything goes, in pixels, and the two axes.
struct Layout {
    width: u32,
    height: u32,
    title: Vec<String>,
    chart_top: i32,
    chart_h: i32,
    /// The label areas left of and under the plot.
    left: u32,
    bottom: u32,
    /// Bars laid across: categories on y, values on x.
    across: bool,
    x: Axis,
    y: Axis,
    legend: Vec<Vec<Entry>>,
    legend_top: i32,
    note: Vec<String>,
    note_top: i32,
}

/// One legend entry: its series, the x of its swatch, its label as drawn.
struct Entry {
    series: usize,
    x: i32,
    label: String,
}

impl Layout {
    fn of(p: &Plot) -> Result<Layout, ChartError> {
        register_font()?;
        let inner = WIDTH as i32 - 2 * MARGIN;
        let title = wrap(&p.title, TITLE, inner);
        let chart_top = MARGIN / 2 + title.len() as i32 * TITLE_LINE + 4;
        let values = value_axis(p);
        // The plot's width, less about what the y labels take.
        let plot_w = inner - 120;
        let (across, x, y, chart_h) = match &p.kind {
            PlotKind::Lines => (false, x_axis(p, plot_w), values, CHART_H),
            PlotKind::Bars { categories } if lie_across(categories, plot_w) => {
                let group = (p.series.len() as i32 * BAR_PX + 12).max(36);
                let h = categories.len() as i32 * group + BOTTOM as i32 + 16;
                let cats = category_axis(categories, &p.x_label, true);
                (true, values, cats, h)
            }
            PlotKind::Bars { categories } => {
                let cats = category_axis(categories, &p.x_label, false);
                (false, cats, values, CHART_H)
            }
        };
        let tick_w = y.ticks.iter().map(|&t| text_width(&y.label(t), TICK)).max();
        let desc_w = if y.desc.is_empty() { 0 } else { 34 };
        let left = (tick_w.unwrap_or(0) + 14 + desc_w) as u32;
        let bottom = if x.desc.is_empty() {
            BOTTOM_BARE
        } else {
            BOTTOM
        };
        let chart_h = chart_h - (BOTTOM - bottom) as i32;
        let legend_top = chart_top + chart_h + 8;
        let legend = legend_rows(p, inner);
        let note_top = legend_top + legend.len() as i32 * LEGEND_ROW + 6;
        let note = wrap(&p.note, NOTE, inner);
        let height = note_top + note.len() as i32 * NOTE_LINE + MARGIN;
        Ok(Layout {
            width: WIDTH,
            height: height as u32,
            title,
            chart_top,
            chart_h,
            left,
            bottom,
            across,
            x,
            y,
            legend,
            legend_top,
            note,
            note_top,
        })
    }
}

/// Whether bars go across, the categories down the left: when a
/// category's name is wider than its slot under upright bars, or there
/// are too many to read side by side.
fn lie_across(categories: &[String], plot_w: i32) -> bool {
    let slot = plot_w / categories.len().max(1) as i32;
    let widest = categories.iter().map(|c| text_width(c, TICK)).max();
    widest.unwrap_or(0) > slot - 8 || categories.len() > 12
}

/// The legend's entries flowed into rows of at most `width` pixels, each
/// row centred.
fn legend_rows(p: &Plot, width: i32) -> Vec<Vec<Entry>> {
    let swatch = match p.kind {
        PlotKind::Lines => SWATCH_LINE,
        PlotKind::Bars { .. } => SWATCH_BAR,
    };
    let entry_w = |label: &str| swatch + 6 + text_width(label, LEGEND);
    let mut rows: Vec<Vec<Entry>> = Vec::new();
    let mut row: Vec<Entry> = Vec::new();
    let mut x = 0;
    for (series, s) in p.series.iter().enumerate() {
        let label = fit(&s.label, LEGEND, width - swatch - 6);
        let w = entry_w(&label);
        if x > 0 && x + w > width {
            rows.push(std::mem::take(&mut row));
            x = 0;
        }
        row.push(Entry { series, x, label });
        x += w + LEGEND_GAP;
    }
    if !row.is_empty() {
        rows.push(row);
    }
    for row in &mut rows {
        let used = row.last().map_or(0, |e| e.x + entry_w(&e.label));
        let shift = MARGIN + (width - used) / 2;
        for entry in row.iter_mut() {
            entry.x += shift;
        }
    }
    rows
}

/// An [`Axis`] as plotters takes it: linear in drawing units, ticks
/// (and grid lines) only where the axis puts them.
#[derive(Clone)]
struct Ticked {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ticked {
    fn of(a: &Axis) -> Ticked {
        Ticked {
            lo: a.lo,
            hi: a.hi,
            ticks: a.ticks.clone(),
        }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        // Every axis has hi > lo (see `axis`); the guard keeps a bad one
        // finite.
        let t = (v - self.lo) / (self.hi - self.lo).max(f64::MIN_POSITIVE);
        limit.0 + (f64::from(limit.1 - limit.0) * t).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

type Coord = Cartesian2d<Ticked, Ticked>;

/// The title, the chart, the legend and the note, where `l` puts them.
fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    p: &Plot,
    l: &Layout,
    target: Target,
) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let centre = Pos::new(HPos::Center, VPos::Top);
    for (i, line) in l.title.iter().enumerate() {
        let at = (l.width as i32 / 2, MARGIN / 2 + i as i32 * TITLE_LINE);
        root.draw(&Text::new(line.clone(), at, style(TITLE, &INK).pos(centre)))?;
    }
    let area = root.clone().shrink(
        (MARGIN, l.chart_top),
        (l.width - 2 * MARGIN as u32, l.chart_h as u32),
    );
    let mut chart = ChartBuilder::on(&area)
        .margin_top(10)
        .margin_right(28)
        .x_label_area_size(l.bottom)
        .y_label_area_size(l.left)
        .build_cartesian_2d(Ticked::of(&l.x), Ticked::of(&l.y))?;
    let (fx, fy) = (|u: &f64| l.x.label(*u), |u: &f64| l.y.label(*u));
    let mut mesh = chart.configure_mesh();
    mesh.x_labels(l.x.ticks.len() + 1)
        .y_labels(l.y.ticks.len() + 1)
        .x_label_formatter(&fx)
        .y_label_formatter(&fy)
        .x_desc(l.x.desc.clone())
        .y_desc(l.y.desc.clone())
        .label_style(style(TICK, &INK))
        .y_label_offset(target.lift(TICK))
        .axis_desc_style(style(DESC, &INK))
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(INK);
    if l.x.is_categories() {
        mesh.disable_x_mesh();
    }
    if l.y.is_categories() {
        mesh.disable_y_mesh();
    }
    mesh.draw()?;
    match p.kind {
        PlotKind::Bars { .. } => bars(&chart, p, l)?,
        PlotKind::Lines => lines(&mut chart, p, l)?,
    }
    legend(root, p, l, target)?;
    for (i, line) in l.note.iter().enumerate() {
        let at = (MARGIN, l.note_top + i as i32 * NOTE_LINE);
        let left = Pos::new(HPos::Left, VPos::Top);
        root.draw(&Text::new(
            line.clone(),
            at,
            style(NOTE, &NOTE_INK).pos(left),
        ))?;
    }
    Ok(())
}

/// Grouped bars: each category's group is 0.8 of its slot, a place per
/// series, bars from the axis' floor (0, or its lowest tick on a log
/// axis).
fn bars<DB: DrawingBackend>(
    chart: &ChartContext<'_, DB, Coord>,
    p: &Plot,
    l: &Layout,
) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    let (values, cats) = if l.across { (&l.x, &l.y) } else { (&l.y, &l.x) };
    let at = |c: f64, v: f64| if l.across { (v, c) } else { (c, v) };
    let area = chart.plotting_area();
    let w = 0.8 / p.series.len().max(1) as f64;
    let floor = if values.log { values.lo } else { 0.0 };
    for (s, series) in p.series.iter().enumerate() {
        let c = colour(series.colour);
        for (k, &(i, v)) in series.points.iter().enumerate() {
            let Some(top) = values.to(v) else { continue };
            // The legend's order: left to right, or top down when across.
            let offset = w * (s as f64 + 0.5) - 0.4;
            let mid = cats.position(i) + if l.across { -offset } else { offset };
            let corners = [at(mid - w * 0.45, floor), at(mid + w * 0.45, top)];
            if series.study {
                area.draw(&Rectangle::new(corners, tint(c).filled()))?;
                area.draw(&Rectangle::new(corners, c.stroke_width(1)))?;
            } else {
                area.draw(&Rectangle::new(corners, c.filled()))?;
            }
            let e = series.errors.get(k).copied().unwrap_or(0.0);
            if e > 0.0 {
                let lo = values.to(v - e).unwrap_or(values.lo).max(values.lo);
                let hi = values.to(v + e).unwrap_or(top);
                let cap = w * 0.22;
                for path in [
                    vec![at(mid, lo), at(mid, hi)],
                    vec![at(mid - cap, lo), at(mid + cap, lo)],
                    vec![at(mid - cap, hi), at(mid + cap, hi)],
                ] {
                    area.draw(&PathElement::new(path, INK.stroke_width(1)))?;
                }
            }
        }
    }
    Ok(())
}

/// A line and markers per series; the study's dashed, its markers hollow.
fn lines<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Coord>,
    p: &Plot,
    l: &Layout,
) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    for &m in &p.markers {
        if let Some(x) = l.x.to(m).filter(|x| (l.x.lo..=l.x.hi).contains(x)) {
            let path = vec![(x, l.y.lo), (x, l.y.hi)];
            chart.draw_series(DashedLineSeries::new(path, 6, 4, NOTE_INK.stroke_width(1)))?;
        }
    }
    let cap = (l.x.hi - l.x.lo) * 0.005;
    for series in &p.series {
        let c = colour(series.colour);
        let pts: Vec<(f64, f64, f64)> = series
            .points
            .iter()
            .enumerate()
            .filter_map(|(k, &(x, y))| {
                let e = series.errors.get(k).copied().unwrap_or(0.0);
                Some((l.x.to(x)?, y, e))
            })
            .filter(|&(_, y, _)| l.y.to(y).is_some())
            .collect();
        let xy: Vec<(f64, f64)> = pts
            .iter()
            .filter_map(|&(x, y, _)| Some((x, l.y.to(y)?)))
            .collect();
        for &(x, y, e) in pts.iter().filter(|p| p.2 > 0.0) {
            let lo = l.y.to(y - e).unwrap_or(l.y.lo).max(l.y.lo);
            let hi = l.y.to(y + e).unwrap_or(l.y.hi).min(l.y.hi);
            for path in [
                vec![(x, lo), (x, hi)],
                vec![(x - cap, lo), (x + cap, lo)],
                vec![(x - cap, hi), (x + cap, hi)],
            ] {
                chart.draw_series(std::iter::once(PathElement::new(path, c.stroke_width(1))))?;
            }
        }
        if series.study {
            chart.draw_series(DashedLineSeries::new(xy.clone(), 10, 6, c.stroke_width(2)))?;
            chart.draw_series(xy.iter().map(|&pt| Circle::new(pt, 4, WHITE.filled())))?;
            chart.draw_series(xy.iter().map(|&pt| Circle::new(pt, 4, c.stroke_width(2))))?;
        } else {
            chart.draw_series(LineSeries::new(xy.clone(), c.stroke_width(2)))?;
            chart.draw_series(xy.iter().map(|&pt| Circle::new(pt, 4, c.filled())))?;
        }
    }
    Ok(())
}

/// The legend rows of the layout, each entry a swatch drawn as its series
/// is, then the label.
fn legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    p: &Plot,
    l: &Layout,
    target: Target,
) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    let bars = matches!(p.kind, PlotKind::Bars { .. });
    for (r, row) in l.legend.iter().enumerate() {
        let y = l.legend_top + r as i32 * LEGEND_ROW + LEGEND_ROW / 2;
        for Entry { series, x, label } in row {
            let (s, x) = (&p.series[*series], *x);
            let c = colour(s.colour);
            let swatch = if bars {
                let corners = [(x, y - 7), (x + SWATCH_BAR, y + 7)];
                if s.study {
                    root.draw(&Rectangle::new(corners, tint(c).filled()))?;
                    root.draw(&Rectangle::new(corners, c.stroke_width(1)))?;
                } else {
                    root.draw(&Rectangle::new(corners, c.filled()))?;
                }
                SWATCH_BAR
            } else {
                let mid = x + SWATCH_LINE / 2;
                if s.study {
                    for (a, b) in [(x, x + 10), (x + SWATCH_LINE - 10, x + SWATCH_LINE)] {
                        root.draw(&PathElement::new(vec![(a, y), (b, y)], c.stroke_width(2)))?;
                    }
                    root.draw(&Circle::new((mid, y), 4, WHITE.filled()))?;
                    root.draw(&Circle::new((mid, y), 4, c.stroke_width(2)))?;
                } else {
                    let path = vec![(x, y), (x + SWATCH_LINE, y)];
                    root.draw(&PathElement::new(path, c.stroke_width(2)))?;
                    root.draw(&Circle::new((mid, y), 4, c.filled()))?;
                }
                SWATCH_LINE
            };
            let left = Pos::new(HPos::Left, VPos::Center);
            let text = style(LEGEND, &INK).pos(left);
            let at = (x + swatch + 6, y + target.lift(LEGEND));
            root.draw(&Text::new(label.clone(), at, text))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bars(categories: &[&str]) -> Plot {
        Plot {
            file: "t".into(),
            title: "TCP throughput by suite: gwA ↔ gwB".into(),
            kind: PlotKind::Bars {
                categories: categories.iter().map(|c| c.to_string()).collect(),
            },
            x_label: String::new(),
            y_label: "Mbit/s".into(),
            log_y: true,
            log_x: false,
            markers: Vec::new(),
            series: vec![
                Series::study("study 1999 – idle", 0, [(0.0, 65.18), (1.0, 26.0)]),
                Series::today_with_errors(
                    "today gwA ↔ gwB",
                    0,
                    [(0.0, 2500.0, 300.0), (1.0, 790.0, 20.0)],
                ),
                Series::today("today µs", 1, [(0.0, 7500.0), (1.0, 650.0)]),
            ],
            note: "Whiskers: ±1 s.d. of per-second throughput.".into(),
        }
    }

    fn lines() -> Plot {
        Plot {
            file: "l".into(),
            title: "AES-128-CBC + SHA-1 per data size".into(),
            kind: PlotKind::Lines,
            x_label: "data size (bytes)".into(),
            y_label: "Mbit/s".into(),
            log_y: true,
            log_x: true,
            markers: Vec::new(),
            series: vec![
                Series::study("study software", 0, [(256.0, 4.5), (2048.0, 11.9)]),
                Series::today("today inline", 0, [(256.0, 1635.0), (2048.0, 3841.0)]),
            ],
            note: String::new(),
        }
    }

    /// The text of every `<text>` element.
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let body = &t[t.find('>')? + 1..];
                Some(body[..body.find("</text>")?].trim().to_string())
            })
            .collect()
    }

    #[test]
    fn grouped_bars_render_to_png_and_svg() {
        let p = bars(&["none", "AH"]);
        let png = png(&p).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let svg = svg(&p).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        // Non-ASCII text is kept as text, not replaced.
        let texts = texts(&svg);
        for s in [
            "TCP throughput by suite: gwA ↔ gwB",
            "today µs",
            "study 1999 – idle",
        ] {
            assert!(texts.iter().any(|t| t == s), "{s} missing: {texts:?}");
        }
        assert!(svg.contains("±1 s.d."));
        assert!(svg.contains("Mbit/s (log scale)"));
        assert!(!Layout::of(&p).unwrap().across);
    }

    #[test]
    fn log_axes_are_labelled_and_say_so() {
        let p = lines();
        assert!(png(&p).is_ok());
        let svg = svg(&p).unwrap();
        let texts = texts(&svg);
        for tick in ["2", "10", "100", "1000", "5000", "256", "2048"] {
            assert!(
                texts.iter().any(|t| t == tick),
                "tick {tick} missing: {texts:?}"
            );
        }
        assert!(svg.contains("data size (bytes) (log scale)"));
    }

    #[test]
    fn long_categories_lie_across_and_the_legend_fits() {
        let long: Vec<String> = (0..22)
            .map(|i| format!("hmac-sha256/camellia-cbc {i}"))
            .collect();
        let cats: Vec<&str> = long.iter().map(String::as_str).collect();
        let mut p = bars(&cats);
        for i in 0..6 {
            p.series.push(Series::today(
                format!("a rather long series label number {i}"),
                i,
                [(3.0, 10.0)],
            ));
        }
        let l = Layout::of(&p).unwrap();
        assert!(l.across);
        assert!(l.legend.len() > 1, "wrapped into rows");
        for e in l.legend.iter().flatten() {
            let right = e.x + SWATCH_BAR + 6 + text_width(&e.label, LEGEND);
            assert!(
                e.x >= MARGIN && right <= WIDTH as i32 - MARGIN,
                "{}",
                e.label
            );
        }
        assert!(l.height as i32 > l.legend_top + LEGEND_ROW * l.legend.len() as i32);
        assert!(svg(&p).unwrap().contains("hmac-sha256/camellia-cbc 21"));
    }

    #[test]
    fn series_leave_out_what_json_cannot_hold() {
        let s = Series::today_with_errors(
            "s",
            0,
            [(0.0, f64::NAN, 1.0), (1.0, 2.0, f64::NAN), (2.0, 3.0, 0.5)],
        );
        assert_eq!(s.points, [(1.0, 2.0), (2.0, 3.0)]);
        assert_eq!(s.errors, [0.0, 0.5]);
        assert!(Series::today("t", 0, [(1.0, 1.0)]).errors.is_empty());
        let empty = Plot {
            markers: Vec::new(),
            series: vec![],
            ..lines()
        };
        assert!(png(&empty).is_ok() && svg(&empty).is_ok());
    }

    #[test]
    fn text_wraps_and_fits_the_width() {
        let lines = wrap(
            "one two three four five six seven eight nine ten",
            NOTE,
            120,
        );
        assert!(
            lines.len() > 2 && lines.iter().all(|l| text_width(l, NOTE) <= 120),
            "{lines:?}"
        );
        let cut = fit("a label far too long for its place", LEGEND, 90);
        assert!(
            cut.ends_with('…') && text_width(&cut, LEGEND) <= 90,
            "{cut}"
        );
    }
}
