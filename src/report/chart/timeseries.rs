//! From timeseries.csv: one panel per strategy (small multiples with shared axes): offered
//! calls per second and the calls that reached the server (after gateway layers) against the
//! server's capacity as it was (following capacity faults, slowdowns and outages), and
//! successes per second above, the queue length below, each fault window shaded and labelled
//! on its own. The model has no replicas: its one server's workers are all the capacity there
//! is. One chart per sweep point, for at most
//! [`ReportOptions::max_timeseries`] points. Empty buckets are left out, never drawn as 0.

use super::axis::Axis;
use super::{Chart, INK, Kind, LegendEntry, err, font, legend, legend_height, mesh, strategy_color};
use crate::report::ReportOptions;
use crate::report::paths;
use crate::report::table::ResultSet;
use crate::results::manifest::FaultInfo as Fault;
use crate::stats;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Colour of the successes line (strategy colours are for offered load).
const SUCCESS: RGBColor = RGBColor(0x33, 0x33, 0x33);
/// Colour of the capacity line.
const CAPACITY: RGBColor = RGBColor(0x88, 0x88, 0x88);
/// Shade of a fault window; consecutive windows alternate with [`FAULT_ALT`] so that two
/// touching windows do not read as one.
const FAULT: RGBAColor = RGBAColor(0xD5, 0x5E, 0x00, 0.13);
/// The other shade of alternating fault windows.
const FAULT_ALT: RGBAColor = RGBAColor(0xD5, 0x5E, 0x00, 0.24);
/// A fault window's edges and label.
const FAULT_EDGE: RGBColor = RGBColor(0xA0, 0x46, 0x00);

/// One strategy's panel.
pub struct StrategyPanel {
    /// Strategy index (colour) and name.
    pub strategy: usize,
    /// Its name.
    pub name: String,
    /// (bucket start s, offered calls/s).
    pub offered: Vec<(f64, f64)>,
    /// (bucket start s, calls/s that reached the server); empty in folders written before
    /// `server_calls` was a series.
    pub server_calls: Vec<(f64, f64)>,
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
    /// The capacity over time as a step line (see [`capacity_steps`]); empty when unknown.
    pub capacity: Vec<(f64, f64)>,
    /// Fault windows.
    pub faults: Vec<Fault>,
}

/// The server's capacity over `[0, end)` as a step line through `(time, requests/s)`, as the
/// model applies the faults (`model/server/faults.rs`): `nominal` times the usable share of
/// the `workers` (`floor(workers x the product of the capacity factors in force) / workers`;
/// the bare product when the workers are unknown), divided by the `factor` of every slowdown
/// in force, and 0 during an outage (no request is served). Error faults, and faults without
/// a factor (manifests written before factors were recorded), leave it as it is.
pub fn capacity_steps(nominal: f64, workers: Option<u32>, faults: &[Fault], end: f64) -> Vec<(f64, f64)> {
    let mut cuts: Vec<f64> = vec![0.0, end];
    cuts.extend(faults.iter().flat_map(|f| [f.start_s, f.end_s]).filter(|t| *t > 0.0 && *t < end));
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();
    let at = |t: f64| {
        let active = || faults.iter().filter(|f| f.start_s <= t && t < f.end_s);
        if active().any(|f| f.kind == "outage") {
            return 0.0;
        }
        let share: f64 = active().filter(|f| f.kind == "capacity").filter_map(|f| f.factor).product();
        let share = match workers {
            Some(n) if n > 0 => (n as f64 * share).floor() / n as f64,
            _ => share,
        };
        active().fold(nominal * share, |c, f| match (f.kind.as_str(), f.factor) {
            ("slowdown", Some(k)) if k > 0.0 => c / k,
            _ => c,
        })
    };
    cuts.windows(2).flat_map(|w| [(w[0], at(w[0])), (w[1], at(w[0]))]).collect()
}

/// A fault's label: its number (1-based, in file order), kind and factor (`2 capacity ×0.5`).
pub fn fault_label(i: usize, f: &Fault) -> String {
    match f.factor {
        Some(k) => format!("{} {} ×{}", i + 1, f.kind, stats::sig(k, 3)),
        None => format!("{} {}", i + 1, f.kind),
    }
}

/// Charts for the first, last and evenly spaced points, at most `opts.max_points`.
pub fn plan(set: &ResultSet, opts: &ReportOptions) -> Vec<Chart> {
    let Some(ts) = &set.timeseries else { return Vec::new() };
    let (Some(off), Some(ok)) = (ts.series_index("offered"), ts.series_index("successes")) else {
        return Vec::new();
    };
    let queued = ts.series_index("queued");
    let server_calls = ts.series_index("server_calls");
    // An empty cell is no bucket: left out, not drawn as 0.
    let series = |rows: &[&crate::report::table::TimeRow], i: usize, scale: f64| -> Vec<(f64, f64)> {
        rows.iter().filter_map(|r| r.mean[i].map(|v| (r.t_s, v / scale))).collect()
    };
    let shown = super::capped_points(set.points.len(), opts.max_timeseries);
    let values: Vec<Vec<String>> = set.points.iter().map(|p| p.values.clone()).collect();
    let stems = paths::timeseries_charts(&set.sweep_keys, &values);
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
                    offered: series(&rows, off, ts.bucket_s),
                    server_calls: server_calls.map(|c| series(&rows, c, ts.bucket_s)).unwrap_or_default(),
                    successes: series(&rows, ok, ts.bucket_s),
                    queued: queued.map(|q| series(&rows, q, 1.0)).unwrap_or_default(),
                })
            })
            .collect();
        if panels.is_empty() {
            continue;
        }
        let panels = merge_identical(panels);
        let merged = if panels.iter().any(|pn| pn.name.contains(" = ")) { super::MERGED_NOTE } else { "" };
        let point = &set.points[p];
        let t_end =
            panels.iter().flat_map(|pn| pn.offered.last().map(|l| l.0 + ts.bucket_s)).fold(0.0, f64::max);
        let t_end = if t_end > 0.0 { t_end } else { 1.0 };
        let capacity = point
            .capacity_rps
            .map(|c| capacity_steps(c, point.concurrency, &point.faults, t_end))
            .unwrap_or_default();
        let rates = panels
            .iter()
            .flat_map(|pn| pn.offered.iter().chain(&pn.server_calls).chain(&pn.successes).map(|v| v.1))
            .chain(capacity.iter().map(|c| c.1));
        let queues = panels.iter().flat_map(|pn| pn.queued.iter().map(|v| v.1));
        let (capped, at) = super::point_notes(set, shown.len(), p, "; the others are in timeseries.csv");
        charts.push(Chart {
            stem: stems[p].clone(),
            title: format!("Load over time{at}"),
            caption: format!(
                "Mean over runs per {} s bucket: offered calls per second (strategy colour){} against the server's \
                 capacity (dashed{}), successes per second (dark), and requests queued at each bucket's end (lower \
                 panel). Shaded: each fault window, numbered with its kind (and factor).{merged}{capped}",
                stats::sig(ts.bucket_s, 3),
                if server_calls.is_some() {
                    ", calls that reached the server after every gateway layer (dotted, strategy colour; \
                     on the offered line when no layer retries)"
                } else {
                    ""
                },
                if point.capacity_rps.is_none() {
                    "; unknown here, not drawn"
                } else {
                    ": the workers a capacity fault leaves, divided by each slowdown's factor, 0 in an outage"
                }
            ),
            section: "Time series",
            size: (800, 110 + 330 * panels.len() as u32),
            kind: Kind::Timeseries(TimeseriesChart {
                t: Axis::linear(0.0, t_end),
                rate: Axis::for_values(rates, false, true).with_density(4.0),
                queue: Axis::for_values(queues.chain([0.0, 1.0]), false, true).with_density(2.0),
                capacity,
                faults: point.faults.clone(),
                panels,
            }),
        });
    }
    charts
}

/// Draws identical strategies once: panels whose series are all equal are kept as the first,
/// titled with every strategy it stands for (`a = b`).
fn merge_identical(panels: Vec<StrategyPanel>) -> Vec<StrategyPanel> {
    let names: Vec<String> = panels.iter().map(|p| p.name.clone()).collect();
    let groups = super::identical_strategies(panels.len(), |i| {
        let p = &panels[i];
        Some([&p.offered, &p.server_calls, &p.successes, &p.queued])
    });
    let mut kept: Vec<Option<StrategyPanel>> = panels.into_iter().map(Some).collect();
    groups
        .iter()
        .filter_map(|m| {
            let mut first = kept[m[0]].take()?;
            first.name = super::named_together(&names, m);
            Some(first)
        })
        .collect()
}

impl TimeseriesChart {
    fn legend_entries(&self) -> Vec<LegendEntry> {
        let mut e = vec![LegendEntry::Line(INK, "offered calls/s (strategy colour)".into())];
        if self.panels.iter().any(|p| !p.server_calls.is_empty()) {
            e.push(LegendEntry::Line(INK, "server calls/s (dotted, strategy colour)".into()));
        }
        e.extend([LegendEntry::Line(SUCCESS, "successes/s".into())]);
        if !self.capacity.is_empty() {
            e.push(LegendEntry::Line(CAPACITY, "capacity (requests/s)".into()));
        }
        if !self.faults.is_empty() {
            e.push(LegendEntry::Swatch(FAULT, "fault windows (numbered)".into()));
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

    /// Shades each fault window on its own (alternating shades, edges drawn), and with
    /// `labels` writes each one's label at its top left, on the first row where it does not
    /// overlap an earlier label.
    fn shade<DB: DrawingBackend>(
        &self,
        chart: &mut ChartContext<'_, DB, Cartesian2d<Axis, Axis>>,
        y: &Axis,
        labels: bool,
    ) -> Result<(), String> {
        let mut taken: Vec<(i32, i32, i32)> = Vec::new();
        for (i, f) in self.faults.iter().enumerate() {
            let (a, b) = (f.start_s.max(self.t.lo), f.end_s.min(self.t.hi));
            if b <= a {
                continue;
            }
            let shade = if i % 2 == 0 { FAULT } else { FAULT_ALT };
            chart
                .draw_series(std::iter::once(Rectangle::new([(a, y.lo), (b, y.hi)], shade.filled())))
                .map_err(err)?;
            for edge in [a, b] {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(edge, y.lo), (edge, y.hi)],
                        FAULT_EDGE.stroke_width(1),
                    )))
                    .map_err(err)?;
            }
            if labels {
                let text = fault_label(i, f);
                let (x0, top) = chart.backend_coord(&(a, y.hi));
                let x1 = x0 + 4 + super::text_width(&text, 13.0);
                let row = (0..)
                    .find(|r| !taken.iter().any(|&(s, e, tr)| tr == *r && s < x1 && x0 < e))
                    .unwrap_or(0);
                taken.push((x0, x1 + 6, row));
                let style = font(13.0).color(&FAULT_EDGE).pos(Pos::new(HPos::Left, VPos::Top));
                let plot = chart.plotting_area().strip_coord_spec();
                let base = plot.get_base_pixel();
                let at = (x0 - base.0 + 3, top - base.1 + 3 + 15 * row);
                plot.draw(&Text::new(text, at, style)).map_err(err)?;
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
        self.shade(&mut chart, &self.rate, true)?;
        if !self.capacity.is_empty() {
            chart
                .draw_series(DashedLineSeries::new(self.capacity.clone(), 8, 6, CAPACITY.stroke_width(2)))
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
        // Above the offered line, so that where a gateway retries the gap shows, and where it
        // does not the dots sit on the line.
        if !panel.server_calls.is_empty() {
            chart
                .draw_series(DashedLineSeries::new(
                    steps(&panel.server_calls, self.t.hi),
                    2,
                    4,
                    strategy_color(panel.strategy).stroke_width(3),
                ))
                .map_err(err)?;
        }
        Ok(())
    }

    fn queue_panel<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        panel: &StrategyPanel,
    ) -> Result<(), String> {
        let mut chart = mesh(area, self.t.clone(), self.queue.clone(), "time (s)", "queued", (44, 78))?;
        self.shade(&mut chart, &self.queue, false)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(kind: &str, start_s: f64, end_s: f64, factor: Option<f64>) -> Fault {
        Fault { kind: kind.into(), start_s, end_s, factor }
    }

    #[test]
    fn the_capacity_line_follows_every_fault_as_the_model_applies_it() {
        let faults = [
            fault("capacity", 10.0, 15.0, Some(0.5)),
            fault("slowdown", 15.0, 20.0, Some(4.0)),
            fault("outage", 30.0, 35.0, None),
            fault("errors", 35.0, 38.0, None),
        ];
        let steps = capacity_steps(1000.0, Some(120), &faults, 40.0);
        assert_eq!(
            steps,
            [
                (0.0, 1000.0),
                (10.0, 1000.0),
                (10.0, 500.0),
                (15.0, 500.0),
                (15.0, 250.0),
                (20.0, 250.0),
                (20.0, 1000.0),
                (30.0, 1000.0),
                (30.0, 0.0),
                (35.0, 0.0),
                (35.0, 1000.0),
                (38.0, 1000.0),
                (38.0, 1000.0),
                (40.0, 1000.0)
            ],
            "an outage serves nothing; an error fault leaves the capacity"
        );
        // Overlapping capacity faults multiply, as the model's do.
        let both = [fault("capacity", 0.0, 10.0, Some(0.5)), fault("capacity", 5.0, 10.0, Some(0.5))];
        assert_eq!(
            capacity_steps(100.0, Some(100), &both, 10.0),
            [(0.0, 50.0), (5.0, 50.0), (5.0, 25.0), (10.0, 25.0)]
        );
        // The model rounds the workers down: 0.5 x 5 workers leaves 2, 40 % of the capacity.
        let odd = [fault("capacity", 0.0, 1.0, Some(0.5))];
        assert_eq!(capacity_steps(100.0, Some(5), &odd, 1.0), [(0.0, 40.0), (1.0, 40.0)]);
        assert_eq!(capacity_steps(100.0, None, &odd, 1.0), [(0.0, 50.0), (1.0, 50.0)], "workers unknown");
        // Without factors (an older manifest) it stays flat.
        assert!(
            capacity_steps(100.0, None, &[fault("capacity", 1.0, 2.0, None)], 3.0)
                .iter()
                .all(|s| s.1 == 100.0)
        );
    }

    #[test]
    fn each_fault_has_its_own_label() {
        assert_eq!(fault_label(0, &fault("capacity", 10.0, 15.0, Some(0.5))), "1 capacity ×0.5");
        assert_eq!(fault_label(1, &fault("outage", 15.0, 20.0, None)), "2 outage");
    }
}
