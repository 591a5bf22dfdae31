//! Each charted metric ([`super::charted_metrics`]) against each swept parameter: one line
//! per strategy with its 95 % confidence band, a marker at each measured point, dotted
//! across unmeasured points, runs that never recovered marked "never k/n" above the plot,
//! identical strategies drawn once. With several swept keys, one panel per combination of the other
//! keys' values (at most 6). Without a sweep, each metric per strategy as a dot with its
//! interval.

use super::axis::{Axis, Scale};
use super::{
    Chart, GAP_DASH, Kind, LegendEntry, err, font, legend, legend_height, marker, mesh, mesh_below,
    strategy_color, strategy_dash, styled_line,
};
use crate::experiment::Duration;
use crate::metrics::catalogue::{axis_title, label};
use crate::report::paths;
use crate::report::table::ResultSet;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// At most this many panels per chart (combinations of the other swept keys).
pub const MAX_PANELS: usize = 6;

/// Positions of a swept key's values on an axis.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamAxis {
    /// Position of each point (indexed like `ResultSet::points`).
    pub positions: Vec<f64>,
    /// The axis: numeric (linear or log) or categorical.
    pub axis: Axis,
    /// Axis title, with the unit when the values are durations.
    pub title: String,
}

/// Where the points fall on swept key `k`: numbers as numbers, durations ("50ms") in
/// seconds, anything else as categories in order of first appearance.
pub fn param_axis(set: &ResultSet, k: usize) -> ParamAxis {
    let key = &set.sweep_keys[k];
    let cells: Vec<&str> = set.points.iter().map(|p| p.values[k].trim()).collect();
    let numbers: Option<Vec<f64>> =
        cells.iter().map(|c| c.parse::<f64>().ok().filter(|v| v.is_finite())).collect();
    if let Some(xs) = numbers {
        let axis = Axis::for_values(xs.iter().copied(), true, false);
        return ParamAxis { axis: padded(axis, &xs), positions: xs, title: key.clone() };
    }
    let secs: Option<Vec<f64>> =
        cells.iter().map(|c| Duration::parse(c).ok().map(|d| d.as_ns() as f64 / 1e9)).collect();
    if let Some(xs) = secs {
        let axis = Axis::for_values(xs.iter().copied(), true, false);
        return ParamAxis { axis: padded(axis, &xs), positions: xs, title: format!("{key} (s)") };
    }
    let mut names: Vec<String> = Vec::new();
    let positions = cells
        .iter()
        .map(|c| match names.iter().position(|n| n == c) {
            Some(i) => i as f64,
            None => {
                names.push(c.to_string());
                (names.len() - 1) as f64
            }
        })
        .collect();
    ParamAxis { positions, axis: Axis::categorical(names), title: key.clone() }
}

/// A numeric sweep axis ends at the data on a linear scale when round numbers would leave
/// a wide empty margin.
fn padded(axis: Axis, xs: &[f64]) -> Axis {
    if axis.scale != Scale::Linear {
        return axis;
    }
    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if max > min {
        let pad = (max - min) * 0.04;
        // A non-negative key's axis does not reach below 0.
        let lo = if min >= 0.0 { (min - pad).max(0.0) } else { min - pad };
        Axis::linear(lo, max + pad)
    } else {
        axis
    }
}

/// One point of a line: x, mean, interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinePoint {
    /// Position on the x axis.
    pub x: f64,
    /// Mean over runs.
    pub mean: f64,
    /// Low end of the 95 % interval.
    pub low: f64,
    /// High end.
    pub high: f64,
}

/// Runs of one strategy at one position that never recovered: drawn as a ringed marker
/// above the plot with `never/measured`, never as a time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Never {
    /// Strategy index.
    pub strategy: usize,
    /// Position on the x axis (the strategy's row in a per-strategy chart).
    pub x: f64,
    /// Runs that never recovered.
    pub never: u64,
    /// Runs measured (recovered or not).
    pub measured: u64,
}

/// A panel: its title (the other keys' values) and one line per strategy.
pub struct Panel {
    /// Empty for a single panel.
    pub title: String,
    /// (strategy index, points sorted by x).
    pub lines: Vec<(usize, Vec<LinePoint>)>,
    /// The positions of the panel's sweep points, sorted: a line segment that passes over
    /// one of them has no value there, and is drawn as a gap (see [`gaps`]).
    pub grid: Vec<f64>,
    /// Runs that never recovered, per strategy and position.
    pub nevers: Vec<Never>,
}

/// A metric against a swept parameter, or per strategy without a sweep.
pub struct SweepChart {
    /// The swept parameter (horizontal), or the metric for a per-strategy chart.
    pub x: Axis,
    /// The metric (vertical), or the strategies for a per-strategy chart.
    pub y: Axis,
    /// Title of the x axis.
    pub x_title: String,
    /// Title of the y axis.
    pub y_title: String,
    /// Panels, top to bottom.
    pub panels: Vec<Panel>,
    /// Legend entries: a strategy's index (colour, marker, dash) and the names it stands for.
    pub legend: Vec<(usize, String)>,
    /// Per-strategy dots (no sweep): strategies on the vertical axis.
    pub dots: bool,
}

/// For each segment of `pts` (sorted by x), whether it joins two measured points across a
/// position of `grid` where the line has no value: a gap wider than the sweep's own
/// spacing, drawn dashed so that it does not pass for a measurement.
pub fn gaps(pts: &[LinePoint], grid: &[f64]) -> Vec<bool> {
    pts.windows(2).map(|w| grid.iter().any(|&g| g > w[0].x && g < w[1].x)).collect()
}

/// Draws identical strategies once: strategies whose lines and never-markers are equal in
/// every panel are kept as the first of them, which the legend names `a = b`. Strategies
/// with nothing drawn keep their own entry. Returns the legend, in strategy order.
pub fn merge_identical(panels: &mut [Panel], names: &[String]) -> Vec<(usize, String)> {
    type Signature = Vec<(Option<Vec<LinePoint>>, Vec<(f64, u64, u64)>)>;
    let signature = |s: usize| -> Option<Signature> {
        let sig: Signature = panels
            .iter()
            .map(|p| {
                let line = p.lines.iter().find(|(l, _)| *l == s).map(|(_, pts)| pts.clone());
                let nevers = p.nevers.iter().filter(|n| n.strategy == s).map(|n| (n.x, n.never, n.measured));
                (line, nevers.collect())
            })
            .collect();
        sig.iter().any(|(l, n)| l.is_some() || !n.is_empty()).then_some(sig)
    };
    let groups = super::identical_strategies(names.len(), signature);
    let hidden: Vec<usize> = groups.iter().flat_map(|m| m[1..].iter().copied()).collect();
    for p in panels.iter_mut() {
        p.lines.retain(|(s, _)| !hidden.contains(s));
        p.nevers.retain(|n| !hidden.contains(&n.strategy));
    }
    groups.iter().map(|m| (m[0], super::named_together(names, m))).collect()
}

/// The y (or value) axis of a metric through `values` (means and interval ends), each
/// clamped into the metric's bounds ([`super::metric_bounds`]) so that the axis never
/// reaches below 0 for a metric that cannot. `metastable`, a fraction of runs, always spans
/// 0 to 1.
pub fn value_axis(name: &str, values: impl IntoIterator<Item = f64>) -> Axis {
    if name == "metastable" {
        return Axis::linear(0.0, 1.0);
    }
    let (lo, hi) = super::metric_bounds(name);
    let clamp = |v: f64| hi.map_or(v, |h| v.min(h)).max(lo);
    let mut axis = Axis::for_values(values.into_iter().map(clamp), true, true);
    if axis.scale == Scale::Linear {
        axis.lo = axis.lo.max(lo);
        if let Some(h) = hi
            && axis.hi > h
            && axis.lo < h
        {
            axis.hi = h;
        }
    }
    axis
}

fn point_of(set: &ResultSet, p: usize, s: usize, m: usize, x: f64) -> Option<LinePoint> {
    let e = set.estimate(p, s, m)?;
    let (lo, hi) = super::metric_bounds(&set.metrics[m]);
    let clamp = |v: f64| hi.map_or(v, |h| v.min(h)).max(lo);
    Some(LinePoint { x, mean: e.mean, low: clamp(e.low()), high: clamp(e.high()) })
}

fn never_of(set: &ResultSet, p: usize, s: usize, m: usize, x: f64) -> Option<Never> {
    if set.metrics[m] != "recovery_time_s" {
        return None;
    }
    let (never, measured) = super::never_recovered(set, p, s)?;
    Some(Never { strategy: s, x, never, measured })
}

/// The caption's sentences on never-markers, gaps and merged strategies, when the chart has
/// them.
fn notes(panels: &[Panel], legend: &[(usize, String)]) -> String {
    let mut out = String::new();
    if panels.iter().any(|p| !p.nevers.is_empty()) {
        out.push_str(
            " A ringed marker above the plot, \"never k/n\", counts the runs that never recovered (k of the n \
             measured): they have no recovery time and are not averaged as one; where some runs recovered, the \
             line's point is their mean.",
        );
    }
    if panels.iter().any(|p| p.lines.iter().any(|(_, pts)| gaps(pts, &p.grid).contains(&true))) {
        out.push_str(" A dotted segment joins two points across sweep values where the line has no value.");
    }
    if legend.iter().any(|(_, n)| n.contains(" = ")) {
        out.push_str(super::MERGED_NOTE);
    }
    out
}

/// Charted besides the key metrics: `server_amplification` where it tells more than
/// `amplification` (gateway layers or lost requests make them differ somewhere), then every
/// windowed column (`METRIC@WINDOW`, `[output] windows`).
fn slo_metrics(set: &ResultSet) -> Vec<usize> {
    let differs = match (set.metric_index("server_amplification"), set.metric_index("amplification")) {
        (Some(s), Some(a)) => set.summary.iter().any(|r| r.mean[s] != r.mean[a]).then_some(s),
        _ => None,
    };
    differs.into_iter().chain((0..set.metrics.len()).filter(|&m| set.metrics[m].contains('@'))).collect()
}

/// Every metric chart of the set.
pub fn plan(set: &ResultSet) -> Vec<Chart> {
    let never_somewhere = |m: usize| {
        set.metrics[m] == "recovery_time_s"
            && (0..set.points.len())
                .any(|p| (0..set.strategies.len()).any(|s| super::never_recovered(set, p, s).is_some()))
    };
    let metrics: Vec<usize> = super::charted_metrics()
        .filter_map(|m| set.metric_index(m))
        .chain(slo_metrics(set))
        .filter(|&m| super::worth_charting(set, m) || never_somewhere(m))
        .collect();
    let mut charts = Vec::new();
    if set.sweep_keys.is_empty() {
        for &m in &metrics {
            let name = &set.metrics[m];
            let row = |s: usize| (set.strategies.len() - 1 - s) as f64;
            let dots: Vec<(usize, Vec<LinePoint>)> = (0..set.strategies.len())
                .filter_map(|s| point_of(set, 0, s, m, row(s)).map(|p| (s, vec![p])))
                .collect();
            let nevers = (0..set.strategies.len()).filter_map(|s| never_of(set, 0, s, m, row(s))).collect();
            let values = dots.iter().flat_map(|(_, ps)| ps.iter().flat_map(|p| [p.low, p.high]));
            let x = value_axis(name, values);
            let mut names = set.strategies.clone();
            names.reverse();
            let panels = vec![Panel { title: String::new(), lines: dots, grid: Vec::new(), nevers }];
            charts.push(Chart {
                stem: paths::metric_chart(name),
                title: format!("{} by strategy", capitalise(&label(name))),
                caption: format!(
                    "Mean of {name} over runs per strategy; the bars are 95 % confidence intervals (t distribution \
                     over runs).{}",
                    notes(&panels, &[])
                ),
                section: "Metrics",
                size: (800, 150 + 44 * set.strategies.len() as u32),
                kind: Kind::Sweep(SweepChart {
                    x,
                    y: Axis::categorical(names),
                    x_title: axis_title(name),
                    y_title: String::new(),
                    panels,
                    legend: Vec::new(),
                    dots: true,
                }),
            });
        }
        return charts;
    }
    for k in 0..set.sweep_keys.len() {
        let param = param_axis(set, k);
        // Combinations of the other keys, in order of first appearance.
        let others = |p: usize| -> Vec<String> {
            set.points[p].values.iter().enumerate().filter(|(j, _)| *j != k).map(|(_, v)| v.clone()).collect()
        };
        let mut combos: Vec<Vec<String>> = Vec::new();
        for p in 0..set.points.len() {
            let c = others(p);
            if !combos.contains(&c) {
                combos.push(c);
            }
        }
        let shown = super::capped_points(combos.len(), MAX_PANELS);
        for &m in &metrics {
            let name = &set.metrics[m];
            let mut panels = Vec::new();
            for &ci in &shown {
                let combo = &combos[ci];
                let in_panel: Vec<usize> = (0..set.points.len()).filter(|&p| &others(p) == combo).collect();
                let mut grid: Vec<f64> = in_panel.iter().map(|&p| param.positions[p]).collect();
                grid.sort_by(f64::total_cmp);
                grid.dedup();
                let mut lines = Vec::new();
                let mut nevers = Vec::new();
                for s in 0..set.strategies.len() {
                    let mut pts: Vec<LinePoint> =
                        in_panel.iter().filter_map(|&p| point_of(set, p, s, m, param.positions[p])).collect();
                    pts.sort_by(|a, b| a.x.total_cmp(&b.x));
                    if !pts.is_empty() {
                        lines.push((s, pts));
                    }
                    let mut ns: Vec<Never> =
                        in_panel.iter().filter_map(|&p| never_of(set, p, s, m, param.positions[p])).collect();
                    ns.sort_by(|a, b| a.x.total_cmp(&b.x));
                    nevers.extend(ns);
                }
                let title = set
                    .sweep_keys
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != k)
                    .zip(combo)
                    .map(|((_, key), v)| format!("{key} = {v}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                panels.push(Panel { title, lines, grid, nevers });
            }
            let legend = merge_identical(&mut panels, &set.strategies);
            let values = panels
                .iter()
                .flat_map(|p| p.lines.iter().flat_map(|(_, ps)| ps.iter().flat_map(|p| [p.low, p.high])));
            let y = value_axis(name, values);
            let capped = if shown.len() < combos.len() {
                format!(
                    " {} of the {} combinations of the other swept keys are drawn (first, last and evenly spaced between).",
                    shown.len(),
                    combos.len()
                )
            } else {
                String::new()
            };
            let key = &set.sweep_keys[k];
            let aws = key == "workload.clients" && (name == "calls" || name == "completion_time_s");
            let never_rows = panels.iter().map(|p| never_rows(&p.nevers)).max().unwrap_or(0);
            charts.push(Chart {
                stem: paths::sweep_chart(name, key),
                title: format!("{} vs {}", capitalise(&label(name)), key),
                caption: format!(
                    "Mean of {name} over runs against {key}, one line per strategy, a marker at each measured point; \
                     shaded bands are 95 % confidence intervals (t distribution over runs).{}{}{capped}",
                    if aws {
                        " Together with its companion chart this is the AWS \"Exponential Backoff and Jitter\" pair."
                    } else {
                        ""
                    },
                    notes(&panels, &legend)
                ),
                section: if aws { "AWS study" } else { "Sweeps" },
                size: (
                    800,
                    130 + legend_rows_px(&legend) as u32
                        + (360 + NEVER_ROW as u32 * never_rows as u32) * panels.len() as u32,
                ),
                kind: Kind::Sweep(SweepChart {
                    x: param.axis.clone(),
                    y,
                    x_title: param.title.clone(),
                    y_title: axis_title(name),
                    panels,
                    legend,
                    dots: false,
                }),
            });
        }
    }
    charts
}

/// Height in pixels of one row of never-markers above a plot.
const NEVER_ROW: i32 = 18;

/// Rows of never-markers a panel needs: the most strategies marked at one position.
fn never_rows(nevers: &[Never]) -> usize {
    nevers.iter().map(|n| nevers.iter().filter(|o| o.x == n.x).count()).max().unwrap_or(0)
}

/// Draws a never-marker centred on `at` (area pixels): the strategy's marker in a ring, and
/// `never k/n` to its right in the strategy's colour.
fn never_mark<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    at: (i32, i32),
    n: &Never,
) -> Result<(), String> {
    let color = strategy_color(n.strategy);
    area.draw(&Circle::new(at, 8, WHITE.filled())).map_err(err)?;
    area.draw(&Circle::new(at, 8, color.stroke_width(2))).map_err(err)?;
    marker(area, at, n.strategy)?;
    let text = format!("never {}/{}", n.never, n.measured);
    // To the right of the ring, or to its left where the right would leave the chart.
    let (w, _) = area.dim_in_pixel();
    let (anchor, x) = if at.0 + 12 + super::text_width(&text, 14.0) < w as i32 - 4 {
        (HPos::Left, at.0 + 12)
    } else {
        (HPos::Right, at.0 - 12)
    };
    let style = font(14.0).color(&color).pos(Pos::new(anchor, VPos::Center));
    area.draw(&Text::new(text, (x, at.1), style)).map_err(err)
}

fn legend_rows_px(legend: &[(usize, String)]) -> i32 {
    let entries: Vec<LegendEntry> =
        legend.iter().map(|(s, n)| LegendEntry::Strategy(*s, n.clone())).collect();
    legend_height(&entries, 800)
}

/// First letter upper case.
pub fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

impl SweepChart {
    /// Draws the legend and the panels on `area`.
    pub fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let entries: Vec<LegendEntry> =
            self.legend.iter().map(|(s, n)| LegendEntry::Strategy(*s, n.clone())).collect();
        let (w, _) = area.dim_in_pixel();
        let lh = legend_height(&entries, w as i32);
        let (top, body) = area.split_vertically(lh);
        legend(&top, &entries)?;
        let parts = body.split_evenly((self.panels.len(), 1));
        for (panel, part) in self.panels.iter().zip(&parts) {
            let part = if panel.title.is_empty() {
                part.clone()
            } else {
                part.titled(&panel.title, font(17.0)).map_err(err)?
            };
            if self.dots {
                self.draw_dots(&part, panel)?;
            } else {
                self.draw_lines(&part, panel)?;
            }
        }
        Ok(())
    }

    fn draw_lines<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        panel: &Panel,
    ) -> Result<(), String> {
        let rows = never_rows(&panel.nevers) as i32;
        let top = if rows == 0 { 12 } else { 14 + NEVER_ROW * rows };
        let mut chart =
            mesh_below(area, self.x.clone(), self.y.clone(), &self.x_title, &self.y_title, (56, 84), top)?;
        let clamp = |v: f64| if self.y.scale == Scale::Log { v.max(self.y.lo) } else { v };
        for (s, pts) in &panel.lines {
            let color = strategy_color(*s);
            // One band per run of points joined without a gap; a lone point gets a bar.
            let gaps = gaps(pts, &panel.grid);
            let mut start = 0;
            for end in 0..pts.len() {
                if end + 1 < pts.len() && !gaps[end] {
                    continue;
                }
                let run = &pts[start..=end];
                start = end + 1;
                if run.len() > 1 {
                    let mut band: Vec<(f64, f64)> = run.iter().map(|p| (p.x, clamp(p.high))).collect();
                    band.extend(run.iter().rev().map(|p| (p.x, clamp(p.low))));
                    chart
                        .draw_series(std::iter::once(Polygon::new(band, color.mix(0.18).filled())))
                        .map_err(err)?;
                } else {
                    let p = run[0];
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            vec![(p.x, clamp(p.low)), (p.x, clamp(p.high))],
                            color.stroke_width(2),
                        )))
                        .map_err(err)?;
                }
            }
        }
        for (s, pts) in &panel.lines {
            let color = strategy_color(*s);
            for (w, gap) in pts.windows(2).zip(gaps(pts, &panel.grid)) {
                let seg = vec![(w[0].x, clamp(w[0].mean)), (w[1].x, clamp(w[1].mean))];
                if gap {
                    styled_line(&mut chart, seg, color.stroke_width(2), Some(GAP_DASH))?;
                } else {
                    styled_line(&mut chart, seg, color.stroke_width(3), strategy_dash(*s))?;
                }
            }
            for p in pts {
                marker(chart.plotting_area(), (p.x, clamp(p.mean)), *s)?;
            }
        }
        // Never-markers above the frame, stacked when several strategies share a position.
        let base = area.get_base_pixel();
        for (i, n) in panel.nevers.iter().enumerate() {
            let row = panel.nevers[..i].iter().filter(|o| o.x == n.x).count() as i32;
            let (px, py) = chart.backend_coord(&(n.x, self.y.hi));
            never_mark(area, (px - base.0, py - base.1 - 11 - NEVER_ROW * row), n)?;
        }
        Ok(())
    }

    fn draw_dots<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        panel: &Panel,
    ) -> Result<(), String> {
        let names = match &self.y.scale {
            Scale::Categorical(n) => n.clone(),
            _ => Vec::new(),
        };
        let widest = names.iter().map(|n| super::text_width(n, 15.0)).max().unwrap_or(0);
        let mut chart =
            mesh(area, self.x.clone(), self.y.clone(), &self.x_title, &self.y_title, (56, widest + 24))?;
        let clamp = |v: f64| if self.x.scale == Scale::Log { v.max(self.x.lo) } else { v };
        for (s, pts) in &panel.lines {
            let color = strategy_color(*s);
            for p in pts {
                // The dot's interval, with end caps.
                let (lo, hi, y) = (clamp(p.low), clamp(p.high), p.x);
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(lo, y), (hi, y)],
                        color.stroke_width(3),
                    )))
                    .map_err(err)?;
                for end in [lo, hi] {
                    chart
                        .draw_series(std::iter::once(
                            EmptyElement::at((end, y))
                                + PathElement::new(vec![(0, -7), (0, 7)], color.stroke_width(2)),
                        ))
                        .map_err(err)?;
                }
                marker(chart.plotting_area(), (clamp(p.mean), y), *s)?;
            }
        }
        // Never-markers at the right end of the strategy's row.
        let base = area.get_base_pixel();
        for n in &panel.nevers {
            let (px, py) = chart.backend_coord(&(self.x.hi, n.x));
            never_mark(area, (px - base.0 - 90, py - base.1 - 14), n)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A result folder swept over `client.timeout` (1s..4s) with strategies `a`, `b` (equal
    /// to `a` everywhere) and `c`, whose runs at 2s mostly never recover (1 of 4 did, in
    /// 5 s) and at 3s never do; `latency_p99_s` has an interval reaching far below 0.
    fn folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let mut summary = String::from(
            "client.timeout,strategy,runs,success_rate,success_rate_sd,latency_p99_s,latency_p99_s_sd,\
             recovery_time_s,recovery_time_s_sd,metastable,metastable_sd\n",
        );
        let mut runs = String::from(
            "client.timeout,strategy,run,seed,success_rate,latency_p99_s,recovery_time_s,metastable\n",
        );
        for t in ["1s", "2s", "3s", "4s"] {
            for s in ["a", "b", "c"] {
                // Each run's (recovery time, metastable).
                let per_run: [(Option<f64>, u8); 4] = match (s, t) {
                    ("c", "2s") => [(Some(5.0), 0), (None, 1), (None, 1), (None, 1)],
                    ("c", "3s") => [(None, 1); 4],
                    _ => [(Some(2.0), 0); 4],
                };
                let rec: Vec<f64> = per_run.iter().filter_map(|r| r.0).collect();
                let meta = per_run.iter().map(|r| r.1 as f64).sum::<f64>() / 4.0;
                let rec_mean = if rec.is_empty() {
                    String::new()
                } else {
                    (rec.iter().sum::<f64>() / rec.len() as f64).to_string()
                };
                summary.push_str(&format!("{t},{s},4,0.1,0.5,1,100,{rec_mean},0,{meta},0.5\n"));
                for (i, (r, m)) in per_run.iter().enumerate() {
                    let r = r.map(|v| v.to_string()).unwrap_or_default();
                    runs.push_str(&format!("{t},{s},{i},{i},0.1,1,{r},{m}\n"));
                }
            }
        }
        std::fs::write(dir.path().join("summary.csv"), summary).unwrap();
        std::fs::write(dir.path().join("runs.csv"), runs).unwrap();
        dir
    }

    /// The set of [`folder`] and its charts.
    fn planned() -> (ResultSet, Vec<Chart>) {
        let dir = folder();
        let set = ResultSet::read_dir(dir.path()).unwrap();
        let charts = plan(&set);
        (set, charts)
    }

    fn sweep_of<'a>(charts: &'a [Chart], stem: &str) -> &'a SweepChart {
        match &charts.iter().find(|c| c.stem == stem).unwrap_or_else(|| panic!("no chart {stem}")).kind {
            Kind::Sweep(c) => c,
            _ => panic!("{stem} is not a sweep chart"),
        }
    }

    #[test]
    fn runs_that_never_recovered_are_marked_with_their_fraction() {
        let (set, charts) = planned();
        let rec = sweep_of(&charts, "recovery_time_s-vs-client.timeout");
        let panel = &rec.panels[0];
        let c = set.strategy_index("c").unwrap();
        assert_eq!(
            panel.nevers,
            [
                Never { strategy: c, x: 2.0, never: 3, measured: 4 },
                Never { strategy: c, x: 3.0, never: 4, measured: 4 }
            ]
        );
        // c's line: the one run that recovered at 2s, nothing at 3s (never a 0 there).
        let (_, line) = panel.lines.iter().find(|(s, _)| *s == c).unwrap();
        assert_eq!(
            line.iter().map(|p| (p.x, p.mean)).collect::<Vec<_>>(),
            [(1.0, 2.0), (2.0, 5.0), (4.0, 2.0)]
        );
        // Across the unmeasured 3s, and only there, the line is a gap.
        assert_eq!(gaps(line, &panel.grid), [false, true]);
        assert!(rec.y.lo >= 0.0);
        // The caption explains the markers and the dotted segment.
        let caption =
            &charts.iter().find(|ch| ch.stem == "recovery_time_s-vs-client.timeout").unwrap().caption;
        assert!(caption.contains("never k/n") && caption.contains("dotted"), "{caption}");
    }

    #[test]
    fn identical_strategies_are_drawn_once_and_named_together() {
        let (_, charts) = planned();
        let rec = sweep_of(&charts, "recovery_time_s-vs-client.timeout");
        assert_eq!(rec.legend, [(0, "a = b".to_string()), (2, "c".to_string())]);
        assert_eq!(rec.panels[0].lines.iter().map(|(s, _)| *s).collect::<Vec<_>>(), [0, 2]);
        // In success_rate all three are equal.
        let ok = sweep_of(&charts, "success_rate-vs-client.timeout");
        assert_eq!(ok.legend, [(0, "a = b = c".to_string())]);
    }

    #[test]
    fn axes_of_non_negative_metrics_do_not_go_below_zero() {
        let (set, charts) = planned();
        // latency_p99_s: mean 1, sd 100 over 4 runs: the interval's low end is about -158.
        let p99 = sweep_of(&charts, "latency_p99_s-vs-client.timeout");
        assert_eq!(p99.y.lo, 0.0, "{:?}", p99.y);
        assert!(p99.panels[0].lines.iter().all(|(_, pts)| pts.iter().all(|p| p.low >= 0.0)));
        // success_rate, a fraction: from 0, at most 1.
        let ok = sweep_of(&charts, "success_rate-vs-client.timeout");
        assert!(ok.y.lo >= 0.0 && ok.y.hi <= 1.0, "{:?}", ok.y);
        // metastable has its own chart, on 0..1.
        let meta = sweep_of(&charts, "metastable-vs-client.timeout");
        assert_eq!((meta.y.lo, meta.y.hi), (0.0, 1.0));
        // The sweep axis of a non-negative key does not reach below 0 either.
        let x = param_axis(&set, 0).axis;
        assert!(x.lo >= 0.0, "{x:?}");
        let axis = value_axis("wasted_work_s", [-120_000.0, 3.0, 40_000.0]);
        assert!(axis.lo >= 0.0, "{axis:?}");
    }

    #[test]
    fn gaps_are_segments_over_unmeasured_sweep_values() {
        let p = |x: f64| LinePoint { x, mean: 1.0, low: 1.0, high: 1.0 };
        let grid = [1.0, 10.0, 100.0, 1000.0];
        // Sparse but every value measured: no gap, however far apart on the axis.
        assert_eq!(gaps(&[p(1.0), p(10.0), p(100.0), p(1000.0)], &grid), [false, false, false]);
        assert_eq!(gaps(&[p(1.0), p(100.0), p(1000.0)], &grid), [true, false]);
        assert_eq!(gaps(&[p(1.0), p(1000.0)], &grid), [true]);
        assert!(gaps(&[p(1.0)], &grid).is_empty());
    }
}
