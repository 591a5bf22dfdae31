//! The latency distribution per strategy, as far as the files tell it: runs.csv holds each
//! run's p50 and p99 latency, so this is the empirical CDF *over runs* of those percentiles
//! (how the p99 varies from run to run), not a per-request latency CDF. A cell with more
//! runs than [`EXACT_RUNS`] is drawn through that many quantiles of its runs
//! ([`crate::report::run_distribution`]), so the chart's size does not grow with the runs.

use super::axis::{Axis, Scale};
use super::{Chart, Kind, LegendEntry, err, font, legend, legend_height, marker, mesh, strategy_color};
use crate::report::ReportOptions;
use crate::report::paths;
use crate::report::run_distribution::EXACT_RUNS;
use crate::report::table::ResultSet;
use plotters::coord::Shift;
use plotters::prelude::*;

/// One panel: a percentile's values per strategy, sorted.
pub struct CdfPanel {
    /// `p50` or `p99`.
    pub title: String,
    /// (strategy, sorted run values).
    pub lines: Vec<(usize, Vec<f64>)>,
}

/// The chart for one sweep point.
pub struct LatencyChart {
    /// Panels (p99 first: it is the one people ask about).
    pub panels: Vec<CdfPanel>,
    /// Shared latency axis.
    pub x: Axis,
    /// Strategies for the legend.
    pub legend: Vec<(usize, String)>,
}

/// One chart per shown point (at most `opts.max_points`).
pub fn plan(set: &ResultSet, opts: &ReportOptions) -> Vec<Chart> {
    let has_runs = |metric: &str| {
        set.runs.keys().any(|&(p, s)| set.run_distribution(p, s, metric).is_some_and(|d| !d.is_empty()))
    };
    let cols: Vec<(&str, &str)> = [("p99", "latency_p99_s"), ("p50", "latency_p50_s")]
        .into_iter()
        .filter(|&(_, m)| has_runs(m))
        .collect();
    if cols.is_empty() {
        return Vec::new();
    }
    let shown = super::capped_points(set.points.len(), opts.max_points);
    let values: Vec<Vec<String>> = set.points.iter().map(|p| p.values.clone()).collect();
    let stems = paths::latency_charts(&set.sweep_keys, &values);
    let mut charts = Vec::new();
    for &p in &shown {
        let mut summarised = false;
        let mut panels: Vec<CdfPanel> = cols
            .iter()
            .map(|&(title, m)| CdfPanel {
                title: format!("{title} latency of each run"),
                lines: (0..set.strategies.len())
                    .filter_map(|s| {
                        let d = set.run_distribution(p, s, m)?;
                        summarised |= d.is_summarised();
                        (!d.is_empty()).then(|| (s, d.plotted()))
                    })
                    .collect(),
            })
            .collect();
        let legend = merge_identical(&mut panels, &set.strategies);
        let merged = if legend.iter().any(|(_, n)| n.contains(" = ")) { super::MERGED_NOTE } else { "" };
        let values = panels.iter().flat_map(|pn| pn.lines.iter().flat_map(|(_, v)| v.iter().copied()));
        let x = Axis::for_values(values, true, true);
        let (capped, at) = super::point_notes(set, shown.len(), p, "");
        let summarised = if summarised {
            format!(
                " Strategies with more than {EXACT_RUNS} runs are drawn through {EXACT_RUNS} evenly spaced quantiles of \
                 their runs (each within 1 %)."
            )
        } else {
            String::new()
        };
        charts.push(Chart {
            stem: stems[p].clone(),
            title: format!("Distribution over runs of the p99 and p50 latency{at}"),
            caption: format!(
                "Empirical CDF over runs of each run's p99 (and p50) operation latency, per strategy: a point \
                 (x, y) says that a fraction y of the runs had that percentile at or below x. runs.csv holds only \
                 per-run percentiles, so this is not a per-request latency distribution.{merged}{summarised}{capped}"
            ),
            section: "Latency",
            size: (800, 110 + 340 * panels.len() as u32),
            kind: Kind::Latency(LatencyChart { panels, x, legend }),
        });
    }
    charts
}

/// Draws identical strategies once: strategies whose lines are equal in every panel keep the
/// first of them, which the legend names `a = b`. Returns the legend: the strategies with a
/// line, in order.
fn merge_identical(panels: &mut [CdfPanel], names: &[String]) -> Vec<(usize, String)> {
    let drawn = |s: usize| {
        let lines: Vec<Option<&Vec<f64>>> =
            panels.iter().map(|p| p.lines.iter().find(|(l, _)| *l == s).map(|(_, v)| v)).collect();
        lines.iter().any(Option::is_some).then(|| lines.into_iter().map(|l| l.cloned()).collect::<Vec<_>>())
    };
    let groups = super::identical_strategies(names.len(), drawn);
    let hidden: Vec<usize> = groups.iter().flat_map(|m| m[1..].iter().copied()).collect();
    for p in panels.iter_mut() {
        p.lines.retain(|(s, _)| !hidden.contains(s));
    }
    groups
        .iter()
        .filter(|m| panels.iter().any(|p| p.lines.iter().any(|(s, _)| *s == m[0])))
        .map(|m| (m[0], super::named_together(names, m)))
        .collect()
}

impl LatencyChart {
    /// Draws the legend and one panel per percentile.
    pub fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let entries: Vec<LegendEntry> =
            self.legend.iter().map(|(s, n)| LegendEntry::Strategy(*s, n.clone())).collect();
        let (w, _) = area.dim_in_pixel();
        let (top, body) = area.split_vertically(legend_height(&entries, w as i32));
        legend(&top, &entries)?;
        let parts = body.split_evenly((self.panels.len(), 1));
        for (panel, part) in self.panels.iter().zip(&parts) {
            let part = part.titled(&panel.title, font(17.0)).map_err(err)?;
            let mut chart = mesh(
                &part,
                self.x.clone(),
                Axis::linear(0.0, 1.0),
                "latency (s)",
                "fraction of runs",
                (56, 84),
            )?;
            let lo = if self.x.scale == Scale::Log { self.x.lo } else { self.x.lo.min(0.0) };
            for (s, v) in &panel.lines {
                let n = v.len() as f64;
                // The ECDF as a step: 0 before the smallest value, i/n from the i-th on.
                let mut pts = vec![(v[0].max(lo), 0.0)];
                for (i, x) in v.iter().enumerate() {
                    pts.push((*x, i as f64 / n));
                    pts.push((*x, (i + 1) as f64 / n));
                }
                pts.push((self.x.hi, 1.0));
                super::styled_line(
                    &mut chart,
                    pts,
                    strategy_color(*s).stroke_width(2),
                    super::strategy_dash(*s),
                )?;
                // Mark the median run so strategies are told apart without colour.
                let mid = v[v.len() / 2];
                marker(chart.plotting_area(), (mid, (v.len() / 2) as f64 / n + 0.5 / n), *s)?;
            }
        }
        Ok(())
    }
}
