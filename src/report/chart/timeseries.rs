//! From timeseries.csv: one panel per strategy (small multiples with shared axes): offered
//! calls per second against the server's capacity and successes per second above, the queue
//! length below, fault windows shaded. One chart per sweep point, for at most
//! [`ReportOptions::max_points`] points.

use super::axis::Axis;
use super::{Chart, INK, Kind, LegendEntry, err, font, legend, legend_height, mesh, strategy_color};
use crate::report::ReportOptions;
use crate::report::paths;
use crate::report::table::ResultSet;
use crate::results::manifest::FaultInfo as Fault;
use crate::stats;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Colour of the successes line (strategy colours are for offered load).
const SUCCESS: RGBColor = RGBColor(0x33, 0x33, 0x33);
/// Colour of the capacity line.
const CAPACITY: RGBColor = RGBColor(0x88, 0x88, 0x88);
/// Shade of a fault window.
const FAULT: RGBAColor = RGBAColor(0xD5, 0x5E, 0x00, 0.13);

/// One strategy's panel.
pub struct StrategyPanel {
    /// Strategy index (colour) and name.
    pub strategy: usize,
    /// Its name.
    pub name: String,
    /// (bucket start s, offered calls/s).
    pub offered: Vec<(f64, f64)>,
    /// (bucket start s, successes/s).
    pub successes: Vec<(f64, f64)>,
    /// (bucket start s, requests queued at the bucket's end).
    pub queued: Vec<(f64, f64)>,
}

/// A timeseries chart for one sweep point.
pub struct TimeseriesChart {
    /// Panels, one per strategy.
    pub panels: Vec<StrategyPanel>,
    /// Shared time axis.
    pub t: Axis,
    /// Shared rate axis.
    pub rate: Axis,
    /// Shared queue axis.
    pub queue: Axis,
    /// Nominal capacity, when known.
    pub capacity_rps: Option<f64>,
    /// Fault windows.
    pub faults: Vec<Fault>,
}

/// Charts for the first, last and evenly spaced points, at most `opts.max_points`.
pub fn plan(set: &ResultSet, opts: &ReportOptions) -> Vec<Chart> {
    let Some(ts) = &set.timeseries else { return Vec::new() };
    let (Some(off), Some(ok)) = (ts.series_index("offered"), ts.series_index("successes")) else {
        return Vec::new();
    };
    let queued = ts.series_index("queued");
    let per_s = |v: Option<f64>| v.unwrap_or(0.0) / ts.bucket_s;
    let shown = super::capped_points(set.points.len(), opts.max_points);
    let mut charts = Vec::new();
    for &p in &shown {
        let panels: Vec<StrategyPanel> = (0..set.strategies.len())
            .filter_map(|s| {
                let rows = ts.cell(p, s);
                if rows.is_empty() {
                    return None;
                }
                Some(StrategyPanel {
                    strategy: s,
                    name: set.strategies[s].clone(),
                    offered: rows.iter().map(|r| (r.t_s, per_s(r.mean[off]))).collect(),
                    successes: rows.iter().map(|r| (r.t_s, per_s(r.mean[ok]))).collect(),
                    queued: queued
                        .map(|q| rows.iter().map(|r| (r.t_s, r.mean[q].unwrap_or(0.0))).collect())
                        .unwrap_or_default(),
                })
            })
            .collect();
        if panels.is_empty() {
            continue;
        }
        let point = &set.points[p];
        let t_end =
            panels.iter().flat_map(|pn| pn.offered.last().map(|l| l.0 + ts.bucket_s)).fold(0.0, f64::max);
        let rates = panels
            .iter()
            .flat_map(|pn| pn.offered.iter().chain(&pn.successes).map(|v| v.1))
            .chain(point.capacity_rps);
        let queues = panels.iter().flat_map(|pn| pn.queued.iter().map(|v| v.1));
        let (capped, at) = super::point_notes(set, shown.len(), p, "; the others are in timeseries.csv");
        charts.push(Chart {
            stem: paths::timeseries_chart(p, set.points.len()),
            title: format!("Load over time{at}"),
            caption: format!(
                "Mean over runs per {} s bucket: offered calls per second (strategy colour) against the server's \
                 capacity (dashed){}, successes per second (dark), and requests queued at each bucket's end (lower \
                 panel). Shaded: fault windows.{capped}",
                stats::sig(ts.bucket_s, 3),
                if point.capacity_rps.is_none() { " (unknown here, not drawn)" } else { "" }
            ),
            section: "Time series",
            size: (800, 110 + 330 * panels.len() as u32),
            kind: Kind::Timeseries(TimeseriesChart {
                t: Axis::linear(0.0, if t_end > 0.0 { t_end } else { 1.0 }),
                rate: Axis::for_values(rates, false, true).with_density(4.0),
                queue: Axis::for_values(queues.chain([0.0, 1.0]), false, true).with_density(2.0),
                capacity_rps: point.capacity_rps,
                faults: point.faults.clone(),
                panels,
            }),
        });
    }
    charts
}

impl TimeseriesChart {
    fn legend_entries(&self) -> Vec<LegendEntry> {
        let mut e = vec![
            LegendEntry::Line(INK, "offered calls/s (strategy colour)".into()),
            LegendEntry::Line(SUCCESS, "successes/s".into()),
        ];
        if self.capacity_rps.is_some() {
            e.push(LegendEntry::Line(CAPACITY, "capacity (requests/s)".into()));
        }
        if !self.faults.is_empty() {
            e.push(LegendEntry::Swatch(FAULT, "fault window".into()));
        }
        e
    }

    /// Draws the legend and one pair of panels per strategy.
    pub fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let entries = self.legend_entries();
        let (w, _) = area.dim_in_pixel();
        let (top, body) = area.split_vertically(legend_height(&entries, w as i32));
        legend(&top, &entries)?;
        let parts = body.split_evenly((self.panels.len(), 1));
        for (panel, part) in self.panels.iter().zip(&parts) {
            let part = part.titled(&panel.name, font(17.0)).map_err(err)?;
            let (_, h) = part.dim_in_pixel();
            let (upper, lower) = part.split_vertically(h as i32 * 58 / 100);
            self.rates(&upper, panel)?;
            self.queue_panel(&lower, panel)?;
        }
        Ok(())
    }

    fn shade<DB: DrawingBackend>(
        &self,
        chart: &mut ChartContext<'_, DB, Cartesian2d<Axis, Axis>>,
        y: &Axis,
    ) -> Result<(), String> {
        for f in &self.faults {
            let (a, b) = (f.start_s.max(self.t.lo), f.end_s.min(self.t.hi));
            if b > a {
                chart
                    .draw_series(std::iter::once(Rectangle::new([(a, y.lo), (b, y.hi)], FAULT.filled())))
                    .map_err(err)?;
            }
        }
        Ok(())
    }

    fn rates<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        panel: &StrategyPanel,
    ) -> Result<(), String> {
        let mut chart = mesh(area, self.t.clone(), self.rate.clone(), "", "per second", (12, 78))?;
        self.shade(&mut chart, &self.rate)?;
        if let Some(c) = self.capacity_rps {
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(self.t.lo, c), (self.t.hi, c)],
                    8,
                    6,
                    CAPACITY.stroke_width(2),
                ))
                .map_err(err)?;
        }
        // Steps: a bucket's count holds over the bucket.
        chart
            .draw_series(LineSeries::new(steps(&panel.successes, self.t.hi), SUCCESS.stroke_width(2)))
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new(
                steps(&panel.offered, self.t.hi),
                strategy_color(panel.strategy).stroke_width(2),
            ))
            .map_err(err)?;
        Ok(())
    }

    fn queue_panel<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        panel: &StrategyPanel,
    ) -> Result<(), String> {
        let mut chart = mesh(area, self.t.clone(), self.queue.clone(), "time (s)", "queued", (44, 78))?;
        self.shade(&mut chart, &self.queue)?;
        let color = strategy_color(panel.strategy);
        chart
            .draw_series(
                AreaSeries::new(steps(&panel.queued, self.t.hi), 0.0, color.mix(0.25))
                    .border_style(color.stroke_width(1)),
            )
            .map_err(err)?;
        Ok(())
    }
}

/// A step line through bucket values: each value holds until the next bucket starts.
fn steps(points: &[(f64, f64)], end: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (i, &(t, v)) in points.iter().enumerate() {
        let next = points.get(i + 1).map_or(end, |n| n.0);
        out.push((t, v));
        out.push((next, v));
    }
    out
}
