//! Charts of a result folder, drawn with plotters as SVG and PNG.
//!
//! [`plan`] decides which charts a [`ResultSet`] gets and extracts their data; each chart
//! kind lives in its own module and draws on any plotters backend, so the SVG and the PNG
//! come from the same code. Text uses the embedded DejaVu Sans (`assets/fonts/`): PNGs are
//! rasterised with it and SVGs carry its glyph outlines, so nothing depends on the fonts of
//! the machine that draws or shows a chart.

/// The `DrawingBackend` methods that the outlined-text backends ([`bitmap_text`],
/// [`svg_text`]) hand to the plotters backend they wrap (`self.inner`) unchanged: all but
/// `draw_text`. Expanded inside their `impl DrawingBackend`, where `Err` is the wrapped
/// backend's error type.
macro_rules! delegate_to_inner {
    () => {
        fn get_size(&self) -> (u32, u32) {
            self.inner.get_size()
        }
        fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Err>> {
            self.inner.ensure_prepared()
        }
        fn present(&mut self) -> Result<(), DrawingErrorKind<Err>> {
            self.inner.present()
        }
        fn draw_pixel(
            &mut self,
            point: BackendCoord,
            color: BackendColor,
        ) -> Result<(), DrawingErrorKind<Err>> {
            self.inner.draw_pixel(point, color)
        }
        fn draw_line<S: BackendStyle>(
            &mut self,
            from: BackendCoord,
            to: BackendCoord,
            style: &S,
        ) -> Result<(), DrawingErrorKind<Err>> {
            self.inner.draw_line(from, to, style)
        }
        fn draw_rect<S: BackendStyle>(
            &mut self,
            a: BackendCoord,
            b: BackendCoord,
            style: &S,
            fill: bool,
        ) -> Result<(), DrawingErrorKind<Err>> {
            self.inner.draw_rect(a, b, style, fill)
        }
        fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
            &mut self,
            path: I,
            style: &S,
        ) -> Result<(), DrawingErrorKind<Err>> {
            self.inner.draw_path(path, style)
        }
        fn draw_circle<S: BackendStyle>(
            &mut self,
            center: BackendCoord,
            radius: u32,
            style: &S,
            fill: bool,
        ) -> Result<(), DrawingErrorKind<Err>> {
            self.inner.draw_circle(center, radius, style, fill)
        }
        fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
            &mut self,
            vert: I,
            style: &S,
        ) -> Result<(), DrawingErrorKind<Err>> {
            self.inner.fill_polygon(vert, style)
        }
        fn blit_bitmap(
            &mut self,
            pos: BackendCoord,
            size: (u32, u32),
            src: &[u8],
        ) -> Result<(), DrawingErrorKind<Err>> {
            self.inner.blit_bitmap(pos, size, src)
        }
    };
}

pub mod axis;
pub mod bitmap_text;
pub mod call_graph;
pub mod heatmap;
pub mod latency_cdf;
pub mod svg_text;
pub mod sweep_lines;
pub mod timeseries;
pub mod tune;

use super::ReportError;
use super::ReportOptions;
use super::paths;
use super::table::ResultSet;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;
use std::sync::Once;

/// The key summary metrics charted against each swept parameter, in chart order.
pub const KEY_METRICS: &[&str] = &[
    "success_rate",
    "amplification",
    "calls",
    "completion_time_s",
    "latency_p99_s",
    "duplicates",
    "recovery_time_s",
    "peak_offered_rps",
    "wasted_work_s",
];

/// The metrics charted against each swept key (and in the per-strategy charts): the key
/// metrics, then `metastable`, the fraction of runs that never recovered while load was
/// arriving. It is charted without being a key metric, so that the tables and `tune`, which
/// read [`KEY_METRICS`], keep their columns.
pub fn charted_metrics() -> impl Iterator<Item = &'static str> {
    KEY_METRICS.iter().copied().chain(["metastable"])
}

/// Whether metric `m` is worth a chart: it has a value somewhere, except that `metastable`
/// is left out when it is 0 everywhere and no point has a fault (no fault, no storm to
/// sustain: the chart would say nothing).
pub fn worth_charting(set: &ResultSet, m: usize) -> bool {
    if !set.has_values(m) {
        return false;
    }
    set.metrics[m] != "metastable"
        || set.points.iter().any(|p| !p.faults.is_empty())
        || set.summary.iter().any(|r| r.mean[m].is_some_and(|v| v != 0.0))
}

/// The range a metric's values can take: every metric of the catalogue is a count, a
/// duration, a rate or a fraction, so none is below 0, and a fraction (its unit says
/// `fraction of ...`) is at most 1. Interval ends outside it are clamped, so that a wide
/// interval does not stretch an axis below 0.
pub fn metric_bounds(name: &str) -> (f64, Option<f64>) {
    let fraction = crate::metrics::catalogue::find(name).is_some_and(|m| m.unit.starts_with("fraction"));
    (0.0, fraction.then_some(1.0))
}

/// Runs of one cell that never recovered and the runs measured, when at least one never
/// recovered ([`ResultSet::never_recovered`]): an empty `recovery_time_s` is never drawn as a
/// time, these runs are drawn as "never".
pub fn never_recovered(set: &ResultSet, point: usize, strategy: usize) -> Option<(u64, u64)> {
    set.never_recovered(point, strategy).filter(|&(never, _)| never > 0)
}

/// Strategies (`0..n`) grouped by what a chart would draw for them: those whose `drawn` is
/// `Some` and equal form one group, drawn once and named together ([`named_together`]);
/// those with nothing drawn (`None`) stay alone. Groups in order of their first member,
/// members in strategy order.
pub fn identical_strategies<T: PartialEq>(n: usize, drawn: impl Fn(usize) -> Option<T>) -> Vec<Vec<usize>> {
    let mut groups: Vec<(Option<T>, Vec<usize>)> = Vec::new();
    for s in 0..n {
        let d = drawn(s);
        match groups.iter_mut().find(|(g, _)| g.is_some() && *g == d) {
            Some((_, members)) => members.push(s),
            None => groups.push((d, vec![s])),
        }
    }
    groups.into_iter().map(|(_, m)| m).collect()
}

/// The name of a group of identical strategies: `a = b = c`.
pub fn named_together(names: &[String], members: &[usize]) -> String {
    members.iter().map(|&s| names[s].as_str()).collect::<Vec<_>>().join(" = ")
}

/// The caption's sentence when a chart draws identical strategies once.
pub const MERGED_NOTE: &str =
    " Strategies with equal values at every point are drawn once, named together (a = b).";

/// DejaVu Sans 2.37 (Bitstream Vera license, `assets/fonts/DejaVuSans-LICENSE.txt`).
pub(crate) const FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");
/// The family name the embedded font is registered under.
pub const FAMILY: &str = "retrysim-sans";

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The font is part of the binary and parses: a failure here is a build error.
        if plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_err() {
            panic!("the embedded font assets/fonts/DejaVuSans.ttf does not parse");
        }
    });
}

/// Text in the embedded font, `size` pixels high (ascent to descent), dark grey.
pub fn font(size: f64) -> TextStyle<'static> {
    register_font();
    TextStyle::from((FAMILY, size).into_font()).color(&INK)
}

/// Text and axis colour.
pub const INK: RGBColor = RGBColor(0x22, 0x22, 0x22);
/// Grid lines.
pub const GRID: RGBColor = RGBColor(0xDD, 0xDD, 0xDD);
/// Minor grid lines.
pub const GRID_LIGHT: RGBColor = RGBColor(0xF0, 0xF0, 0xF0);

/// Okabe & Ito's colour-blind-safe palette, most distinct first (yellow last: faint on white).
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0x00, 0x72, 0xB2), // blue
    RGBColor(0xD5, 0x5E, 0x00), // vermillion
    RGBColor(0x00, 0x9E, 0x73), // bluish green
    RGBColor(0xCC, 0x79, 0xA7), // reddish purple
    RGBColor(0xE6, 0x9F, 0x00), // orange
    RGBColor(0x56, 0xB4, 0xE9), // sky blue
    RGBColor(0x00, 0x00, 0x00), // black
    RGBColor(0xB8, 0xA8, 0x00), // yellow, darkened to show on white
];

/// A strategy's colour: fixed by its index in the experiment, the same in every chart.
pub fn strategy_color(strategy: usize) -> RGBColor {
    PALETTE[strategy % PALETTE.len()]
}

/// Marker shapes, so that strategies differ by more than colour.
const MARKERS: usize = 6;

/// Dash patterns (dash, gap in pixels; `None` solid) of the strategies' lines: a second cue
/// beside the colour. None is as sparse as [`GAP_DASH`], which marks a line crossing
/// unmeasured points.
const DASHES: [Option<(u32, u32)>; 4] = [None, Some((10, 4)), Some((5, 4)), Some((18, 5))];

/// The dash pattern of a line segment that joins two measured points across unmeasured ones.
pub const GAP_DASH: (u32, u32) = (2, 7);

/// A strategy's dash pattern, fixed by its index like its colour.
pub fn strategy_dash(strategy: usize) -> Option<(u32, u32)> {
    DASHES[strategy % DASHES.len()]
}

/// Draws the polyline `pts` in `style`, solid or dashed (`dash`: dash and gap in pixels).
pub fn styled_line<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<axis::Axis, axis::Axis>>,
    pts: Vec<(f64, f64)>,
    style: ShapeStyle,
    dash: Option<(u32, u32)>,
) -> Result<(), String> {
    match dash {
        None => chart.draw_series(LineSeries::new(pts, style)).map(|_| ()).map_err(err),
        Some((d, g)) => chart.draw_series(DashedLineSeries::new(pts, d, g, style)).map(|_| ()).map_err(err),
    }
}

/// Draws strategy `strategy`'s marker centred on `at`, in the area's own coordinates.
pub fn marker<DB, CT>(area: &DrawingArea<DB, CT>, at: CT::From, strategy: usize) -> Result<(), String>
where
    DB: DrawingBackend,
    CT: plotters::coord::CoordTranslate,
    CT::From: Clone + 'static,
{
    let style = strategy_color(strategy).filled();
    let s = 5;
    let at = EmptyElement::at(at);
    let poly = |pts: Vec<(i32, i32)>| Polygon::new(pts, style);
    let r = match (strategy / PALETTE.len() + strategy) % MARKERS {
        0 => area.draw(&(at + Circle::new((0, 0), s, style))),
        1 => {
            area.draw(&(at + poly(vec![(-s + 1, -s + 1), (s - 1, -s + 1), (s - 1, s - 1), (-s + 1, s - 1)])))
        }
        2 => area.draw(&(at + poly(vec![(0, -s - 1), (s, s - 1), (-s, s - 1)]))),
        3 => area.draw(&(at + poly(vec![(0, -s - 1), (s + 1, 0), (0, s + 1), (-s - 1, 0)]))),
        4 => area.draw(&(at + poly(vec![(0, s + 1), (s, -s + 1), (-s, -s + 1)]))),
        _ => area.draw(
            &(at + poly(vec![
                (-s, -2),
                (-2, -2),
                (-2, -s),
                (2, -s),
                (2, -2),
                (s, -2),
                (s, 2),
                (2, 2),
                (2, s),
                (-2, s),
                (-2, 2),
                (-s, 2),
            ])),
        ),
    };
    r.map_err(err)
}

/// A drawing error as text.
pub fn err<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> String {
    e.to_string()
}

/// Width in pixels of `text` at `size`, as plotters lays it out.
pub fn text_width(text: &str, size: f64) -> i32 {
    font(size).font.box_size(text).map(|(w, _)| w as i32).unwrap_or(0)
}

/// One legend entry: a strategy (coloured line and marker) or a plain swatch.
#[derive(Clone)]
pub enum LegendEntry {
    /// A strategy by index: its colour and marker.
    Strategy(usize, String),
    /// A filled swatch of a colour.
    Swatch(RGBAColor, String),
    /// A line of a colour.
    Line(RGBColor, String),
    /// The rest of the previous entry's text, on the next row (a long name broken to fit).
    Continued(String),
}

const LEGEND_FONT: f64 = 16.0;
const LEGEND_ROW: i32 = 24;

fn entry_text(e: &LegendEntry) -> &str {
    match e {
        LegendEntry::Strategy(_, t)
        | LegendEntry::Swatch(_, t)
        | LegendEntry::Line(_, t)
        | LegendEntry::Continued(t) => t,
    }
}

fn entry_width(e: &LegendEntry) -> i32 {
    34 + text_width(entry_text(e), LEGEND_FONT) + 18
}

/// The entries with any strategy entry wider than `width` (identical strategies named
/// together: `a = b = c ...`) broken after an `=` into rows that fit, the rest
/// [`LegendEntry::Continued`], so that no name runs off the chart.
fn fitted(entries: &[LegendEntry], width: i32) -> Vec<LegendEntry> {
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        let LegendEntry::Strategy(s, text) = e else {
            out.push(e.clone());
            continue;
        };
        if entry_width(e) <= width || !text.contains(" = ") {
            out.push(e.clone());
            continue;
        }
        let names: Vec<&str> = text.split(" = ").collect();
        let mut chunks: Vec<String> = vec![String::new()];
        for (i, name) in names.iter().enumerate() {
            let piece = if i + 1 < names.len() { format!("{name} =") } else { name.to_string() };
            let current = chunks.last_mut().expect("not empty");
            let longer = if current.is_empty() { piece.clone() } else { format!("{current} {piece}") };
            if current.is_empty() || 34 + text_width(&longer, LEGEND_FONT) + 18 <= width {
                *current = longer;
            } else {
                chunks.push(piece);
            }
        }
        let mut chunks = chunks.into_iter();
        out.push(LegendEntry::Strategy(*s, chunks.next().unwrap_or_default()));
        out.extend(chunks.map(LegendEntry::Continued));
    }
    out
}

/// Rows the legend needs at `width` pixels (the entries [`fitted`] to it). A continued
/// entry starts a row of its own.
fn legend_rows(entries: &[LegendEntry], width: i32) -> Vec<Vec<LegendEntry>> {
    let mut rows: Vec<Vec<LegendEntry>> = vec![Vec::new()];
    let mut x = 0;
    for e in fitted(entries, width) {
        let w = entry_width(&e);
        let continued = matches!(e, LegendEntry::Continued(_));
        if (continued || x + w > width) && !rows.last().is_some_and(|r| r.is_empty()) {
            rows.push(Vec::new());
            x = 0;
        }
        if let Some(r) = rows.last_mut() {
            r.push(e);
        }
        x += w;
    }
    rows
}

/// Height of the legend strip for `entries` at `width` pixels.
pub fn legend_height(entries: &[LegendEntry], width: i32) -> i32 {
    if entries.is_empty() { 0 } else { legend_rows(entries, width - 40).len() as i32 * LEGEND_ROW + 6 }
}

/// Draws a legend strip across `area` (rows of entries, wrapped to its width).
pub fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[LegendEntry],
) -> Result<(), String> {
    let (w, _) = area.dim_in_pixel();
    let rows = legend_rows(entries, w as i32 - 40);
    for (r, row) in rows.iter().enumerate() {
        let total: i32 = row.iter().map(entry_width).sum();
        let mut x = ((w as i32 - total) / 2).max(4);
        let y = r as i32 * LEGEND_ROW + LEGEND_ROW / 2 + 2;
        for e in row {
            match e {
                LegendEntry::Strategy(s, _) => {
                    let line = vec![(x, y), (x + 26, y)];
                    let style = strategy_color(*s).stroke_width(3);
                    match strategy_dash(*s) {
                        None => area.draw(&PathElement::new(line, style)).map_err(err)?,
                        Some((d, g)) => area
                            .draw(&plotters::element::DashedPathElement::new(line, d, g, style))
                            .map_err(err)?,
                    }
                    marker(area, (x + 13, y), *s)?;
                }
                LegendEntry::Swatch(c, _) => {
                    area.draw(&Rectangle::new([(x + 2, y - 7), (x + 24, y + 7)], c.filled())).map_err(err)?;
                }
                LegendEntry::Line(c, _) => {
                    area.draw(&PathElement::new(vec![(x, y), (x + 26, y)], c.stroke_width(2)))
                        .map_err(err)?;
                }
                LegendEntry::Continued(_) => {}
            }
            area.draw(&Text::new(
                entry_text(e).to_owned(),
                (x + 34, y),
                font(LEGEND_FONT).pos(plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Left,
                    plotters::style::text_anchor::VPos::Center,
                )),
            ))
            .map_err(err)?;
            x += entry_width(e);
        }
    }
    Ok(())
}

/// Fills the chart white, writes its title, and returns the area below it.
pub fn titled<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
) -> Result<DrawingArea<DB, Shift>, String> {
    root.fill(&WHITE).map_err(err)?;
    // A title that names a point can be long: smaller type rather than cut off at the edge.
    let (w, _) = root.dim_in_pixel();
    let size = (21.0 * (w as f64 - 16.0) / text_width(title, 21.0).max(1) as f64).clamp(12.0, 21.0);
    root.titled(title, font(size)).map_err(err)
}

/// A chart's data, by kind.
pub enum Kind {
    /// A metric against a swept parameter (or per strategy without a sweep).
    Sweep(sweep_lines::SweepChart),
    /// A metric over two swept parameters, for one strategy.
    Heatmap(heatmap::HeatmapChart),
    /// Offered load, successes and queue over time, one panel per strategy.
    Timeseries(timeseries::TimeseriesChart),
    /// The distribution over runs of latency percentiles.
    Latency(latency_cdf::LatencyChart),
    /// `retrysim tune`: the objective over the searched space.
    Tune(tune::TuneChart),
    /// The call graph of `[[services]]`, one panel per strategy.
    CallGraph(call_graph::CallGraphChart),
}

/// One chart: what it shows, its file stem, and its data.
pub struct Chart {
    /// File stem (`paths::chart_file` adds `.svg` / `.png`); stable across runs.
    pub stem: String,
    /// Title drawn on the chart.
    pub title: String,
    /// A sentence for the report under the chart.
    pub caption: String,
    /// The report section it belongs to.
    pub section: &'static str,
    /// Pixel size.
    pub size: (u32, u32),
    /// The data.
    pub kind: Kind,
}

impl Chart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let area = titled(root, &self.title)?;
        match &self.kind {
            Kind::Sweep(c) => c.draw(&area),
            Kind::Heatmap(c) => c.draw(&area),
            Kind::Timeseries(c) => c.draw(&area),
            Kind::Latency(c) => c.draw(&area),
            Kind::Tune(c) => c.draw(&area),
            Kind::CallGraph(c) => c.draw(&area),
        }
    }

    fn error(&self, message: String) -> ReportError {
        ReportError::Chart { name: self.stem.clone(), message }
    }

    /// The chart as an SVG document (text as outlines of the embedded font). Glyph ids are
    /// prefixed with the stem, so several charts can be inlined in one page.
    pub fn svg(&self) -> Result<String, ReportError> {
        let mut svg = String::new();
        let mut text = svg_text::TextLayer::default();
        {
            let root = svg_text::OutlinedSvg::new(&mut svg, self.size, &mut text).into_drawing_area();
            self.draw(&root).map_err(|m| self.error(m))?;
            root.present().map_err(|e| self.error(e.to_string()))?;
        }
        text.finish(&mut svg, &paths::svg_id_prefix(&self.stem));
        // Name the picture for screen readers and search; a call graph also says its numbers
        // (its text is outlines).
        let mut title = format!("<title>{}</title>\n", super::text::escape(&self.title));
        if let Kind::CallGraph(c) = &self.kind {
            title.push_str(&format!("<desc>{}</desc>\n", super::text::escape(&c.description())));
        }
        if let Some(at) = svg.find('>') {
            svg.insert_str(at + 1, &format!("\n{title}"));
        }
        Ok(svg)
    }

    /// The chart as a PNG image (RGB, no metadata: the same bytes on every machine).
    pub fn png(&self) -> Result<Vec<u8>, ReportError> {
        let (w, h) = self.size;
        let mut buf = vec![0u8; w as usize * h as usize * 3];
        {
            let root = bitmap_text::OutlinedBitmap::new(&mut buf, (w, h)).into_drawing_area();
            self.draw(&root).map_err(|m| self.error(m))?;
            root.present().map_err(|e| self.error(e.to_string()))?;
        }
        let mut out = Vec::new();
        {
            let mut enc = png::Encoder::new(&mut out, w, h);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            enc.set_compression(png::Compression::Best);
            let mut writer = enc.write_header().map_err(|e| self.error(e.to_string()))?;
            writer.write_image_data(&buf).map_err(|e| self.error(e.to_string()))?;
        }
        Ok(out)
    }
}

/// Every chart of a result set, in report order: the call graph (with `[[services]]`), metric
/// charts (sweep lines or per-strategy dots), heatmaps, time series, latency distributions.
pub fn plan(set: &ResultSet, opts: &ReportOptions) -> Vec<Chart> {
    let mut charts = call_graph::plan(set, opts);
    charts.extend(sweep_lines::plan(set));
    charts.extend(heatmap::plan(set, opts));
    charts.extend(timeseries::plan(set, opts));
    charts.extend(latency_cdf::plan(set, opts));
    charts
}

/// The notes of a chart drawn per sweep point, for point `p` when `shown` of the points get
/// one: a caption sentence saying which points are drawn (empty when all are; `more` ends it)
/// and a title suffix naming the point (" at KEY=VALUE", empty without a sweep).
fn point_notes(set: &ResultSet, shown: usize, p: usize, more: &str) -> (String, String) {
    let capped = if shown < set.points.len() {
        format!(
            " Drawn for {shown} of the {} sweep points (first, last and evenly spaced between){more}.",
            set.points.len()
        )
    } else {
        String::new()
    };
    let at = if set.sweep_keys.is_empty() { String::new() } else { format!(" at {}", set.point_label(p)) };
    (capped, at)
}

/// Points to draw when a chart is drawn per point and there are more than `cap`: the first,
/// the last and evenly spaced ones between, in order.
pub fn capped_points(n: usize, cap: usize) -> Vec<usize> {
    if n <= cap || cap < 2 {
        return (0..n.min(cap.max(1))).collect();
    }
    let mut v: Vec<usize> = (0..cap).map(|i| (i * (n - 1) + (cap - 1) / 2) / (cap - 1)).collect();
    v.dedup();
    v
}

/// Draws a plot's frame, grid and axis labels on `area`, with `x` and `y` axes.
pub fn mesh<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    x: axis::Axis,
    y: axis::Axis,
    x_title: &str,
    y_title: &str,
    margins: (i32, i32),
) -> Result<ChartContext<'a, DB, Cartesian2d<axis::Axis, axis::Axis>>, String> {
    mesh_below(area, x, y, x_title, y_title, margins, 12)
}

/// [`mesh`] with `top` pixels free above the plot (for marks drawn above its frame).
pub fn mesh_below<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    x: axis::Axis,
    y: axis::Axis,
    x_title: &str,
    y_title: &str,
    margins: (i32, i32),
    top: i32,
) -> Result<ChartContext<'a, DB, Cartesian2d<axis::Axis, axis::Axis>>, String> {
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .margin_top(top)
        .margin_right(24)
        .x_label_area_size(margins.0)
        .y_label_area_size(margins.1)
        .build_cartesian_2d(x, y)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(x_title)
        .y_desc(y_title)
        .axis_desc_style(font(17.0))
        .label_style(font(15.0))
        .bold_line_style(GRID)
        .light_line_style(GRID_LIGHT)
        .axis_style(INK)
        .x_labels(20)
        .y_labels(20)
        .draw()
        .map_err(err)?;
    Ok(chart)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_strategies_are_grouped_and_nothing_drawn_stays_alone() {
        let drawn = [Some(1), Some(2), Some(1), None, None, Some(2)];
        assert_eq!(identical_strategies(6, |s| drawn[s]), [vec![0, 2], vec![1, 5], vec![3], vec![4]]);
        let names: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        assert_eq!(named_together(&names, &[0, 2]), "a = c");
    }

    #[test]
    fn a_long_merged_name_is_broken_after_an_equals_sign_into_rows_that_fit() {
        let names: Vec<String> = (0..8).map(|i| format!("strategy-number-{i}")).collect();
        let long = names.join(" = ");
        let entries = [LegendEntry::Strategy(0, long.clone()), LegendEntry::Strategy(1, "short".into())];
        let rows = legend_rows(&entries, 760);
        assert!(rows.len() >= 2, "{} rows", rows.len());
        for row in &rows {
            assert!(row.iter().map(entry_width).sum::<i32>() <= 760);
        }
        // The rows read as the name: the pieces joined again give it back.
        let pieces: Vec<&str> = rows.iter().flatten().map(entry_text).collect();
        assert_eq!(pieces[..pieces.len() - 1].join(" "), long);
        assert!(
            matches!(rows[0][0], LegendEntry::Strategy(0, _))
                && matches!(rows[1][0], LegendEntry::Continued(_))
        );
        // A name that fits is left whole.
        assert_eq!(legend_rows(&entries[1..], 760).len(), 1);
    }
}
