//! The call graph of an experiment with `[[services]]` (DESIGN §3.7), drawn from summary.csv's
//! per-service and per-edge columns alone (`service_*@NAME`, `edge_*@FROM:TO`, see
//! [`crate::metrics::graph`]): the services as boxes in rows by depth below the users (the
//! entry service, the first, on top), each saying its calls per user request, its calls per
//! second over the run, the share answered with success and its wasted work; each edge an
//! arrow labelled with its calls per user request and the share of its calls that succeeded,
//! as wide as the log of its calls per request. A fan-out (`count = 100`) is one edge with
//! its count in the label, not 100 boxes. One panel per strategy (identical ones once), one
//! chart per sweep point.

use super::{Chart, Kind, err, font, identical_strategies, named_together, strategy_color};
use crate::report::ReportOptions;
use crate::report::paths;
use crate::report::table::ResultSet;
use crate::stats::sig;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// What one service's box says.
#[derive(Clone, Debug, PartialEq)]
pub struct ServiceBox {
    pub name: String,
    /// Rows below the users: 1 for the entry service, 1 + the longest chain of calls above
    /// for the others.
    pub depth: usize,
    /// `service_amplification@NAME`: calls into it per user request.
    pub calls_per_request: Option<f64>,
    /// `service_calls@NAME / completion_time_s`: its calls per second over the run.
    pub calls_per_s: Option<f64>,
    /// `service_success_rate@NAME`.
    pub success: Option<f64>,
    /// `service_wasted_work_s@NAME`.
    pub wasted_s: Option<f64>,
}

/// What one arrow says. The users' arrow into the entry service has `from` None.
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeArrow {
    /// Index of the caller in the panel's services; None: the users.
    pub from: Option<usize>,
    pub to: usize,
    /// `edge_amplification@FROM:TO` (the users' arrow: `amplification`, the client's calls
    /// per operation).
    pub calls_per_request: Option<f64>,
    /// `edge_success_rate@FROM:TO` (the users' arrow: `success_rate`, per operation).
    pub success: Option<f64>,
}

/// One strategy's (or a group of identical strategies') drawing.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphPanel {
    /// The first strategy of the group (its colour).
    pub strategy: usize,
    /// Its name, or the group's (`a = b`).
    pub name: String,
    pub services: Vec<ServiceBox>,
    pub edges: Vec<EdgeArrow>,
}

/// The call graph at one sweep point, one panel per strategy.
pub struct CallGraphChart {
    pub panels: Vec<GraphPanel>,
}

/// A number as the boxes and labels say it: 3 significant digits, "-" when missing.
pub fn number(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |x| sig(x, 3))
}

impl ServiceBox {
    /// The lines of the box, below its name.
    pub fn lines(&self) -> [String; 4] {
        [
            format!("{} calls/request", number(self.calls_per_request)),
            format!("{} calls/s", number(self.calls_per_s)),
            format!("success {}", number(self.success)),
            format!("wasted {} s", number(self.wasted_s)),
        ]
    }
}

impl EdgeArrow {
    /// The two lines of the arrow's label.
    pub fn lines(&self) -> [String; 2] {
        [format!("{}/request", number(self.calls_per_request)), format!("success {}", number(self.success))]
    }
}

impl GraphPanel {
    /// The panel in words (the SVG's description, for screen readers and search): each
    /// service with its box's lines, then each arrow with its label.
    pub fn description(&self) -> String {
        let mut parts = vec![format!("{}:", self.name)];
        for s in &self.services {
            parts.push(format!("service {}: {};", s.name, s.lines().join(", ")));
        }
        for e in &self.edges {
            let from = e.from.map_or("users", |f| self.services[f].name.as_str());
            parts.push(format!("{from} -> {}: {};", self.services[e.to].name, e.lines().join(", ")));
        }
        parts.join(" ")
    }
}

/// The services (file order) and edges (caller, callee) that summary.csv's columns name.
fn graph_of(set: &ResultSet) -> (Vec<String>, Vec<(usize, usize)>) {
    let services: Vec<String> =
        set.metrics.iter().filter_map(|m| m.strip_prefix("service_calls@")).map(str::to_string).collect();
    let index = |name: &str| services.iter().position(|s| s == name);
    let mut edges = Vec::new();
    for m in &set.metrics {
        let Some(pair) = m.strip_prefix("edge_calls@") else { continue };
        // A service name may hold ':': the split is the one that names two services.
        let split =
            pair.match_indices(':').find_map(|(i, _)| Some((index(&pair[..i])?, index(&pair[i + 1..])?)));
        if let Some(edge) = split
            && !edges.contains(&edge)
        {
            edges.push(edge);
        }
    }
    (services, edges)
}

/// Each service's row: 1 for the services nothing calls (the entry first among them), else
/// one more than its deepest caller (the graph has no cycle: the loader refuses one).
fn depths(n: usize, edges: &[(usize, usize)]) -> Vec<usize> {
    let mut depth = vec![1; n];
    for _ in 0..n {
        let mut changed = false;
        for &(from, to) in edges {
            if depth[to] < depth[from] + 1 && depth[from] < n {
                depth[to] = depth[from] + 1;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    depth
}

/// The call graph charts of `set`: none without `[[services]]` columns; else one per sweep
/// point (at most `max_points`: the first, the last and evenly spaced between).
pub fn plan(set: &ResultSet, opts: &ReportOptions) -> Vec<Chart> {
    let (names, edges) = graph_of(set);
    if names.is_empty() {
        return Vec::new();
    }
    let depth = depths(names.len(), &edges);
    let value = |p: usize, s: usize, metric: &str| -> Option<f64> {
        set.summary_row(p, s)?.mean[set.metric_index(metric)?]
    };
    let shown = super::capped_points(set.points.len(), opts.max_points);
    let values: Vec<Vec<String>> = set.points.iter().map(|p| p.values.clone()).collect();
    let stems = paths::call_graph_charts(&set.sweep_keys, &values);
    let mut charts = Vec::new();
    for &p in &shown {
        let panel = |s: usize| -> Option<(Vec<ServiceBox>, Vec<EdgeArrow>)> {
            set.summary_row(p, s)?;
            let duration = value(p, s, "completion_time_s").filter(|&d| d > 0.0);
            let services = names
                .iter()
                .enumerate()
                .map(|(i, n)| ServiceBox {
                    name: n.clone(),
                    depth: depth[i],
                    calls_per_request: value(p, s, &format!("service_amplification@{n}")),
                    calls_per_s: value(p, s, &format!("service_calls@{n}")).zip(duration).map(|(c, d)| c / d),
                    success: value(p, s, &format!("service_success_rate@{n}")),
                    wasted_s: value(p, s, &format!("service_wasted_work_s@{n}")),
                })
                .collect();
            let users = EdgeArrow {
                from: None,
                to: 0,
                calls_per_request: value(p, s, "amplification"),
                success: value(p, s, "success_rate"),
            };
            let arrows = std::iter::once(users).chain(edges.iter().map(|&(from, to)| {
                let pair = format!("{}:{}", names[from], names[to]);
                EdgeArrow {
                    from: Some(from),
                    to,
                    calls_per_request: value(p, s, &format!("edge_amplification@{pair}")),
                    success: value(p, s, &format!("edge_success_rate@{pair}")),
                }
            }));
            Some((services, arrows.collect()))
        };
        let groups = identical_strategies(set.strategies.len(), panel);
        let panels: Vec<GraphPanel> = groups
            .iter()
            .filter_map(|members| {
                let (services, edges) = panel(members[0])?;
                Some(GraphPanel {
                    strategy: members[0],
                    name: named_together(&set.strategies, members),
                    services,
                    edges,
                })
            })
            .collect();
        if panels.is_empty() {
            continue;
        }
        let merged = if panels.iter().any(|pn| pn.name.contains(" = ")) { super::MERGED_NOTE } else { "" };
        let (capped, at) = super::point_notes(set, shown.len(), p, "; the others are in summary.csv");
        let chart = CallGraphChart { panels };
        let size = (WIDTH as u32, chart.height() as u32);
        charts.push(Chart {
            stem: stems[p].clone(),
            title: format!("Call graph{at}"),
            caption: format!(
                "Per strategy, the services in rows by depth below the users, each box with its calls per user \
                 request, its calls per second (mean calls over mean completion time), the share of its calls \
                 answered with success, and its wasted work (service time spent on requests nobody waited for any \
                 more); a box is shaded by the share of its calls that failed. Each arrow: calls along the edge per \
                 user request (a fan-out's count times the attempts) and the share of the calls along it that \
                 succeeded after their retries, its width growing with the log of the calls per request; the \
                 users' arrow gives the client's calls per operation and the operations' success. Means over \
                 runs, from summary.csv.{merged}{capped}"
            ),
            section: SECTION,
            size,
            kind: Kind::CallGraph(chart),
        });
    }
    charts
}

/// The report section of the call graph charts: first after the verdict.
pub const SECTION: &str = "Call graph";

const WIDTH: i32 = 800;
/// Space for the chart's title.
const TITLE_H: i32 = 40;
const MARGIN: i32 = 10;
const BOX_W: i32 = 150;
const BOX_GAP: i32 = 14;
const NAME_SIZE: f64 = 15.0;
const LINE_SIZE: f64 = 12.5;
const LINE_H: i32 = 15;
/// A box: its name and four lines.
const BOX_H: i32 = 10 + 18 + 4 * LINE_H;
/// Between rows: the arrows and their two-line labels.
const ROW_GAP: i32 = 50;
const HEADER_H: i32 = 24;
/// A panel is at least this wide: a one-box row's arrow labels fit on the right of its
/// middle, and three panels fit across the chart.
const MIN_PANEL_W: i32 = 250;
const USERS_H: i32 = 22;

impl CallGraphChart {
    fn rows(&self) -> usize {
        self.panels.iter().flat_map(|p| p.services.iter().map(|s| s.depth)).max().unwrap_or(1)
    }

    /// The most services in one row.
    fn widest_row(&self) -> usize {
        let rows = self.rows();
        (1..=rows)
            .map(|r| self.panels.first().map_or(0, |p| p.services.iter().filter(|s| s.depth == r).count()))
            .max()
            .unwrap_or(1)
            .max(1)
    }

    /// A box's width: narrower when a row holds many services, so that a panel fits.
    fn box_width(&self) -> i32 {
        let m = self.widest_row() as i32;
        BOX_W.min((WIDTH - 2 * MARGIN - 20 - (m - 1) * BOX_GAP) / m)
    }

    fn panel_size(&self) -> (i32, i32) {
        let m = self.widest_row() as i32;
        // Room beside the last box for the labels of the arrows that leave it.
        let w = (m * self.box_width() + (m - 1) * BOX_GAP + 2 * MARGIN + 20).max(MIN_PANEL_W);
        let h = HEADER_H + USERS_H + self.rows() as i32 * (ROW_GAP + BOX_H) + MARGIN;
        (w, h)
    }

    fn columns(&self) -> usize {
        let (w, _) = self.panel_size();
        (((WIDTH - 2 * MARGIN) / w).max(1) as usize).min(self.panels.len().max(1))
    }

    fn height(&self) -> i32 {
        let (_, h) = self.panel_size();
        TITLE_H + self.panels.len().div_ceil(self.columns()) as i32 * h + MARGIN
    }

    /// The chart in words, panel by panel.
    pub fn description(&self) -> String {
        self.panels.iter().map(GraphPanel::description).collect::<Vec<_>>().join(" ")
    }

    pub fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let (pw, ph) = self.panel_size();
        let cols = self.columns();
        let total_w = cols as i32 * pw;
        let left = ((WIDTH - total_w) / 2).max(0);
        for (k, panel) in self.panels.iter().enumerate() {
            let x0 = left + (k % cols) as i32 * pw;
            let y0 = (k / cols) as i32 * ph;
            self.draw_panel(area, panel, (x0, y0), pw)?;
        }
        Ok(())
    }

    fn draw_panel<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        panel: &GraphPanel,
        (x0, y0): (i32, i32),
        pw: i32,
    ) -> Result<(), String> {
        let color = strategy_color(panel.strategy);
        let bw = self.box_width();
        let name_style = font(16.0).color(&color).pos(Pos::new(HPos::Center, VPos::Center));
        area.draw(&Text::new(panel.name.clone(), (x0 + pw / 2, y0 + HEADER_H / 2), name_style))
            .map_err(err)?;
        // The users: a small box above the first row.
        let users_w = 70;
        let users = (x0 + pw / 2 - users_w / 2, y0 + HEADER_H, users_w, USERS_H);
        area.draw(&Rectangle::new(
            [(users.0, users.1), (users.0 + users.2, users.1 + users.3)],
            RGBColor(0xF0, 0xF0, 0xF0).filled(),
        ))
        .map_err(err)?;
        area.draw(&Rectangle::new([(users.0, users.1), (users.0 + users.2, users.1 + users.3)], super::INK))
            .map_err(err)?;
        area.draw(&Text::new(
            "users".to_string(),
            (users.0 + users.2 / 2, users.1 + users.3 / 2),
            font(LINE_SIZE).pos(Pos::new(HPos::Center, VPos::Center)),
        ))
        .map_err(err)?;
        // Boxes: each row centred in the panel, services in file order.
        let mut at: Vec<(i32, i32)> = vec![(0, 0); panel.services.len()];
        let rows = self.rows();
        for r in 1..=rows {
            let in_row: Vec<usize> =
                (0..panel.services.len()).filter(|&i| panel.services[i].depth == r).collect();
            let m = in_row.len() as i32;
            let row_w = m * bw + (m - 1).max(0) * BOX_GAP;
            let y = y0 + HEADER_H + USERS_H + ROW_GAP + (r as i32 - 1) * (ROW_GAP + BOX_H);
            for (j, &i) in in_row.iter().enumerate() {
                at[i] = (x0 + (pw - row_w) / 2 + j as i32 * (bw + BOX_GAP), y);
            }
        }
        for (i, s) in panel.services.iter().enumerate() {
            draw_box(area, s, at[i], bw)?;
        }
        // Arrows, spread along the caller's bottom and the callee's top when several meet.
        let outgoing = |from: Option<usize>| panel.edges.iter().filter(|e| e.from == from).count() as i32;
        let incoming = |to: usize| panel.edges.iter().filter(|e| e.to == to).count() as i32;
        let mut out_seen = vec![0; panel.services.len() + 1];
        let mut in_seen = vec![0; panel.services.len()];
        for e in &panel.edges {
            let slot = e.from.map_or(0, |f| f + 1);
            out_seen[slot] += 1;
            in_seen[e.to] += 1;
            let (fx, fy, fw) = match e.from {
                None => (users.0, users.1 + users.3, users.2),
                Some(f) => (at[f].0, at[f].1 + BOX_H, bw),
            };
            let start = (fx + fw * out_seen[slot] / (outgoing(e.from) + 1), fy);
            let end = (at[e.to].0 + bw * in_seen[e.to] / (incoming(e.to) + 1), at[e.to].1);
            arrow(area, start, end, e, color, x0 + pw / 2)?;
        }
        Ok(())
    }
}

/// A box's fill: white for a service whose every call succeeded, shading towards vermillion
/// with the share that failed.
fn fill(success: Option<f64>) -> RGBColor {
    let failed = success.map_or(0.0, |s| (1.0 - s).clamp(0.0, 1.0));
    let mix = |c: u8| (255.0 - 0.5 * failed * (255.0 - c as f64)).round() as u8;
    RGBColor(mix(0xD5), mix(0x5E), mix(0x00))
}

fn draw_box<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    s: &ServiceBox,
    (x, y): (i32, i32),
    w: i32,
) -> Result<(), String> {
    let corners = [(x, y), (x + w, y + BOX_H)];
    area.draw(&Rectangle::new(corners, fill(s.success).filled())).map_err(err)?;
    area.draw(&Rectangle::new(corners, super::INK.stroke_width(1))).map_err(err)?;
    let centred = |size: f64| font(size).pos(Pos::new(HPos::Center, VPos::Center));
    area.draw(&Text::new(s.name.clone(), (x + w / 2, y + 6 + 9), centred(NAME_SIZE))).map_err(err)?;
    for (k, line) in s.lines().into_iter().enumerate() {
        let ly = y + 6 + 18 + LINE_H / 2 + k as i32 * LINE_H + 2;
        area.draw(&Text::new(line, (x + w / 2, ly), centred(LINE_SIZE))).map_err(err)?;
    }
    Ok(())
}

/// Stroke width of an arrow: 1 px at one call per request or fewer, one more per doubling,
/// at most 8.
fn arrow_width(calls_per_request: Option<f64>) -> u32 {
    let c = calls_per_request.unwrap_or(1.0).max(1.0);
    (1.0 + c.log2()).round().clamp(1.0, 8.0) as u32
}

fn arrow<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    start: (i32, i32),
    end: (i32, i32),
    e: &EdgeArrow,
    color: RGBColor,
    centre_x: i32,
) -> Result<(), String> {
    let width = arrow_width(e.calls_per_request);
    let (dx, dy) = ((end.0 - start.0) as f64, (end.1 - start.1) as f64);
    let len = (dx * dx + dy * dy).sqrt().max(1.0);
    let (ux, uy) = (dx / len, dy / len);
    // The head: a triangle 10 px long (more for a wide arrow), its tip on the callee's top.
    let head = 10.0 + width as f64;
    let half = 4.0 + width as f64 * 0.6;
    let base = (end.0 as f64 - ux * head, end.1 as f64 - uy * head);
    let to_i = |x: f64, y: f64| (x.round() as i32, y.round() as i32);
    area.draw(&PathElement::new(vec![start, to_i(base.0, base.1)], color.stroke_width(width)))
        .map_err(err)?;
    area.draw(&Polygon::new(
        vec![end, to_i(base.0 - uy * half, base.1 + ux * half), to_i(base.0 + uy * half, base.1 - ux * half)],
        color.filled(),
    ))
    .map_err(err)?;
    // The label beside the arrow's middle, on the panel's outer side (left of an arrow in the
    // left half, else right), so that arrows that meet or part keep their labels apart; clear
    // of a slanted line over the label's two lines.
    let slope = if dy.abs() < 1.0 { 0.0 } else { (dx / dy).abs() };
    let clear = width as i32 / 2 + 6 + (slope * LINE_H as f64).round() as i32;
    let mid_x = (start.0 + end.0) / 2;
    let (x, h) = if mid_x < centre_x - 2 { (-clear, HPos::Right) } else { (clear, HPos::Left) };
    let mid = (mid_x + x, (start.1 + end.1) / 2 - 2);
    let style = font(LINE_SIZE).pos(Pos::new(h, VPos::Center));
    let [a, b] = e.lines();
    area.draw(&Text::new(a, (mid.0, mid.1 - LINE_H / 2), style.clone())).map_err(err)?;
    area.draw(&Text::new(b, (mid.0, mid.1 + LINE_H / 2), style)).map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_is_one_more_than_the_deepest_caller() {
        // a -> b -> c and a -> c: c sits below b, not beside it.
        assert_eq!(depths(3, &[(0, 1), (1, 2), (0, 2)]), [1, 2, 3]);
        // A fan-out: one row below.
        assert_eq!(depths(2, &[(0, 1)]), [1, 2]);
    }

    #[test]
    fn arrows_widen_with_the_log_of_the_calls() {
        assert_eq!(arrow_width(Some(0.5)), 1);
        assert_eq!(arrow_width(Some(1.0)), 1);
        assert_eq!(arrow_width(Some(4.0)), 3);
        assert_eq!(arrow_width(Some(100.0)), 8);
        assert_eq!(fill(Some(1.0)), RGBColor(255, 255, 255));
    }
}
