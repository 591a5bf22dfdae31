//! Two swept parameters: one heatmap per (strategy, chosen metric), cells coloured by the
//! metric's mean on the viridis scale (colour-blind safe, readable in grey), the same scale
//! for every strategy of a metric, with a colour bar.

use super::axis::{Axis, Scale};
use super::sweep_lines::param_axis;
use super::{Chart, INK, Kind, err, font, mesh};
use crate::metrics::catalogue::{axis_title, label};
use crate::report::ReportOptions;
use crate::report::paths;
use crate::report::table::ResultSet;
use crate::stats;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Viridis at 9 evenly spaced stops (matplotlib's values).
const VIRIDIS: [(u8, u8, u8); 9] = [
    (68, 1, 84),
    (71, 44, 122),
    (59, 81, 139),
    (44, 113, 142),
    (33, 144, 141),
    (39, 173, 129),
    (92, 200, 99),
    (170, 220, 50),
    (253, 231, 37),
];

/// The viridis colour at `t` in [0, 1].
pub fn viridis(t: f64) -> RGBColor {
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 };
    let x = t * (VIRIDIS.len() - 1) as f64;
    let i = (x.floor() as usize).min(VIRIDIS.len() - 2);
    let f = x - i as f64;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    let mix = |p: u8, q: u8| (p as f64 + (q as f64 - p as f64) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// A heatmap's data.
pub struct HeatmapChart {
    /// Column labels (first swept key), in value order.
    pub x_names: Vec<String>,
    /// Row labels (second swept key), in value order.
    pub y_names: Vec<String>,
    /// Axis titles.
    pub x_title: String,
    /// Axis titles.
    pub y_title: String,
    /// (column, row, mean).
    pub cells: Vec<(usize, usize, Option<f64>)>,
    /// The colour scale: linear or log over [lo, hi].
    pub scale: Axis,
    /// Title of the colour bar.
    pub metric_title: String,
}

/// Distinct values of a swept key, ordered by their axis position.
fn ordered_values(set: &ResultSet, k: usize) -> (Vec<String>, Vec<usize>, String) {
    let axis = param_axis(set, k);
    let mut distinct: Vec<(f64, String)> = Vec::new();
    for (p, point) in set.points.iter().enumerate() {
        let v = &point.values[k];
        if !distinct.iter().any(|(_, d)| d == v) {
            distinct.push((axis.positions[p], v.clone()));
        }
    }
    distinct.sort_by(|a, b| a.0.total_cmp(&b.0));
    let names: Vec<String> = distinct.into_iter().map(|(_, v)| v).collect();
    let index =
        set.points.iter().map(|pt| names.iter().position(|n| *n == pt.values[k]).unwrap_or(0)).collect();
    (names, index, set.sweep_keys[k].clone())
}

/// One heatmap per (chosen metric, strategy) when exactly two keys are swept; strategies
/// equal in every cell share one, named by the first (`heatmap-METRIC-FIRST`) and titled with
/// them all (`a = b`).
pub fn plan(set: &ResultSet, opts: &ReportOptions) -> Vec<Chart> {
    if set.sweep_keys.len() != 2 {
        return Vec::new();
    }
    let (x_names, xi, x_title) = ordered_values(set, 0);
    let (y_names, yi, y_title) = ordered_values(set, 1);
    let mut charts = Vec::new();
    for name in &opts.heatmap_metrics {
        let Some(m) = set.metric_index(name) else { continue };
        if !super::worth_charting(set, m) {
            continue;
        }
        let all: Vec<f64> = set.summary.iter().filter_map(|r| r.mean[m]).collect();
        let mut scale = Axis::for_values(all.iter().copied(), true, false);
        if name == "metastable" {
            // A fraction of runs: 0 and 1 keep their colours whatever the cells hold.
            scale = Axis::linear(0.0, 1.0);
        } else if scale.scale == Scale::Linear {
            let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if hi > lo {
                scale = Axis::linear(lo, hi);
            }
        }
        let cells = |s: usize| -> Vec<(usize, usize, Option<f64>)> {
            (0..set.points.len())
                .map(|p| (xi[p], yi[p], set.summary_row(p, s).and_then(|r| r.mean[m])))
                .collect()
        };
        // Strategies with the same value in every cell get one heatmap, named together.
        let groups = super::identical_strategies(set.strategies.len(), |s| {
            let c = cells(s);
            c.iter().any(|c| c.2.is_some()).then_some(c)
        });
        for members in &groups {
            let strategy = super::named_together(&set.strategies, members);
            let merged = if members.len() > 1 { super::MERGED_NOTE } else { "" };
            charts.push(Chart {
                stem: paths::heatmap_chart(name, &set.strategies[members[0]]),
                title: format!("{}: {}", strategy, label(name)),
                caption: format!(
                    "Mean of {name} over runs for {strategy}, over {} and {}; the colour scale is shared by every \
                     strategy's heatmap of this metric. Empty cells have no value.{merged}",
                    set.sweep_keys[0], set.sweep_keys[1]
                ),
                section: "Heatmaps",
                size: (800, 560),
                kind: Kind::Heatmap(HeatmapChart {
                    x_names: x_names.clone(),
                    y_names: y_names.clone(),
                    x_title: x_title.clone(),
                    y_title: y_title.clone(),
                    cells: cells(members[0]),
                    scale: scale.clone(),
                    metric_title: axis_title(name),
                }),
            });
        }
    }
    charts
}

impl HeatmapChart {
    /// Draws the grid of cells and the colour bar.
    pub fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let (w, _) = area.dim_in_pixel();
        let (main, bar) = area.split_horizontally(w as i32 - 150);
        let widest = self.y_names.iter().map(|n| super::text_width(n, 15.0)).max().unwrap_or(0);
        let chart = mesh(
            &main,
            Axis::categorical(self.x_names.clone()),
            Axis::categorical(self.y_names.clone()),
            &self.x_title,
            &self.y_title,
            (56, widest + 40),
        )?;
        let plot = chart.plotting_area();
        let (pw, _) = plot.dim_in_pixel();
        let show_values = pw as usize / self.x_names.len().max(1) >= 56;
        for &(x, y, v) in &self.cells {
            let (x, y) = (x as f64, y as f64);
            let fill = match v {
                Some(v) => viridis(self.scale.fraction(v)).filled(),
                None => RGBColor(0xEE, 0xEE, 0xEE).filled(),
            };
            plot.draw(&Rectangle::new([(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)], fill)).map_err(err)?;
            plot.draw(&Rectangle::new([(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)], WHITE.stroke_width(2)))
                .map_err(err)?;
            if show_values && let Some(v) = v {
                let ink = if self.scale.fraction(v) > 0.55 { INK } else { WHITE };
                let style = font(15.0).color(&ink).pos(Pos::new(HPos::Center, VPos::Center));
                plot.draw(&Text::new(stats::sig(v, 3), (x, y), style)).map_err(err)?;
            }
        }
        colour_bar(&bar, &self.scale, &self.metric_title)
    }
}

/// A vertical viridis bar for a colour `scale` titled `title`, with its ticks (the heatmaps'
/// and the tune chart's).
pub fn colour_bar<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    scale: &Axis,
    title: &str,
) -> Result<(), String> {
    let (_, h) = area.dim_in_pixel();
    let (top, bottom) = (40, h as i32 - 70);
    let (x0, x1) = (20, 44);
    let steps = (bottom - top).max(1);
    for i in 0..steps {
        let t = 1.0 - i as f64 / steps as f64;
        area.draw(&Rectangle::new([(x0, top + i), (x1, (top + i + 2).min(bottom))], viridis(t).filled()))
            .map_err(err)?;
    }
    area.draw(&Rectangle::new([(x0, top), (x1, bottom)], INK.stroke_width(1))).map_err(err)?;
    for tick in scale.ticks() {
        let t = scale.fraction(tick);
        if !(-1e-9..=1.0 + 1e-9).contains(&t) {
            continue;
        }
        let y = bottom - (t * (bottom - top) as f64).round() as i32;
        area.draw(&PathElement::new(vec![(x1, y), (x1 + 5, y)], INK.stroke_width(1))).map_err(err)?;
        let style = font(15.0).pos(Pos::new(HPos::Left, VPos::Center));
        area.draw(&Text::new(scale.label(tick), (x1 + 8, y), style)).map_err(err)?;
    }
    let style = font(17.0).transform(FontTransform::Rotate270).pos(Pos::new(HPos::Center, VPos::Top));
    area.draw(&Text::new(title.to_owned(), (x1 + 70, (top + bottom) / 2), style)).map_err(err)?;
    Ok(())
}
