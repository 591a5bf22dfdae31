//! Each key summary metric against each swept parameter: one line per strategy with its
//! 95 % confidence band. With several swept keys, one panel per combination of the other
//! keys' values (at most 6). Without a sweep, each metric per strategy as a dot with its
//! interval.

use super::KEY_METRICS;
use super::axis::{Axis, Scale};
use super::{Chart, Kind, LegendEntry, err, font, legend, legend_height, marker, mesh, strategy_color};
use crate::experiment::Duration;
use crate::metrics::catalogue::{axis_title, label};
use crate::report::paths;
use crate::report::table::ResultSet;
use plotters::coord::Shift;
use plotters::prelude::*;

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
        Axis::linear(min - pad, max + pad)
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

/// A panel: its title (the other keys' values) and one line per strategy.
pub struct Panel {
    /// Empty for a single panel.
    pub title: String,
    /// (strategy index, points sorted by x).
    pub lines: Vec<(usize, Vec<LinePoint>)>,
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
    /// Strategies for the legend.
    pub legend: Vec<(usize, String)>,
    /// Per-strategy dots (no sweep): strategies on the vertical axis.
    pub dots: bool,
}

fn point_of(set: &ResultSet, p: usize, s: usize, m: usize, x: f64) -> Option<LinePoint> {
    let e = set.estimate(p, s, m)?;
    Some(LinePoint { x, mean: e.mean, low: e.low(), high: e.high() })
}

/// Every metric chart of the set.
pub fn plan(set: &ResultSet) -> Vec<Chart> {
    let metrics: Vec<usize> =
        KEY_METRICS.iter().filter_map(|m| set.metric_index(m)).filter(|&m| set.has_values(m)).collect();
    let legend: Vec<(usize, String)> = set.strategies.iter().cloned().enumerate().collect();
    let mut charts = Vec::new();
    if set.sweep_keys.is_empty() {
        for &m in &metrics {
            let name = &set.metrics[m];
            let dots: Vec<(usize, Vec<LinePoint>)> = (0..set.strategies.len())
                .filter_map(|s| {
                    let y = (set.strategies.len() - 1 - s) as f64;
                    point_of(set, 0, s, m, y).map(|p| (s, vec![p]))
                })
                .collect();
            let values = dots.iter().flat_map(|(_, ps)| ps.iter().flat_map(|p| [p.low, p.high]));
            let x = Axis::for_values(values, true, true);
            let mut names = set.strategies.clone();
            names.reverse();
            charts.push(Chart {
                stem: paths::metric_chart(name),
                title: format!("{} by strategy", capitalise(&label(name))),
                caption: format!(
                    "Mean of {name} over runs per strategy; the bars are 95 % confidence intervals (t distribution over runs)."
                ),
                section: "Metrics",
                size: (800, 150 + 44 * set.strategies.len() as u32),
                kind: Kind::Sweep(SweepChart {
                    x,
                    y: Axis::categorical(names),
                    x_title: axis_title(name),
                    y_title: String::new(),
                    panels: vec![Panel { title: String::new(), lines: dots }],
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
                let mut lines = Vec::new();
                for s in 0..set.strategies.len() {
                    let mut pts: Vec<LinePoint> = (0..set.points.len())
                        .filter(|&p| &others(p) == combo)
                        .filter_map(|p| point_of(set, p, s, m, param.positions[p]))
                        .collect();
                    pts.sort_by(|a, b| a.x.total_cmp(&b.x));
                    if !pts.is_empty() {
                        lines.push((s, pts));
                    }
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
                panels.push(Panel { title, lines });
            }
            let values = panels.iter().flat_map(|p| {
                p.lines
                    .iter()
                    .flat_map(|(_, ps)| ps.iter().flat_map(|p| [p.low.max(p.mean * 0.0 + p.low), p.high]))
            });
            let y = Axis::for_values(values, true, true);
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
            charts.push(Chart {
                stem: paths::sweep_chart(name, key),
                title: format!("{} vs {}", capitalise(&label(name)), key),
                caption: format!(
                    "Mean of {name} over runs against {key}, one line per strategy; shaded bands are 95 % \
                     confidence intervals (t distribution over runs).{}{capped}",
                    if aws {
                        " Together with its companion chart this is the AWS \"Exponential Backoff and Jitter\" pair."
                    } else {
                        ""
                    }
                ),
                section: if aws { "AWS study" } else { "Sweeps" },
                size: (800, 130 + legend_rows_px(&legend) as u32 + 360 * panels.len() as u32),
                kind: Kind::Sweep(SweepChart {
                    x: param.axis.clone(),
                    y,
                    x_title: param.title.clone(),
                    y_title: axis_title(name),
                    panels,
                    legend: legend.clone(),
                    dots: false,
                }),
            });
        }
    }
    charts
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
        let mut chart = mesh(area, self.x.clone(), self.y.clone(), &self.x_title, &self.y_title, (56, 84))?;
        let clamp = |v: f64| if self.y.scale == Scale::Log { v.max(self.y.lo) } else { v };
        for (s, pts) in &panel.lines {
            let color = strategy_color(*s);
            if pts.len() > 1 {
                let mut band: Vec<(f64, f64)> = pts.iter().map(|p| (p.x, clamp(p.high))).collect();
                band.extend(pts.iter().rev().map(|p| (p.x, clamp(p.low))));
                chart
                    .draw_series(std::iter::once(Polygon::new(band, color.mix(0.18).filled())))
                    .map_err(err)?;
            } else if let Some(p) = pts.first() {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(p.x, clamp(p.low)), (p.x, clamp(p.high))],
                        color.stroke_width(2),
                    )))
                    .map_err(err)?;
            }
        }
        for (s, pts) in &panel.lines {
            let color = strategy_color(*s);
            chart
                .draw_series(LineSeries::new(pts.iter().map(|p| (p.x, clamp(p.mean))), color.stroke_width(3)))
                .map_err(err)?;
            for p in pts {
                marker(chart.plotting_area(), (p.x, clamp(p.mean)), *s)?;
            }
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
        Ok(())
    }
}
