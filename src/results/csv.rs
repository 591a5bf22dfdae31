//! runs.csv, summary.csv and timeseries.csv (DESIGN §6): the swept parameter columns,
//! `strategy`, then the metric columns of [`crate::metrics::catalogue::columns`] or the series of
//! [`crate::metrics::series::SERIES`] in order. Each exporter turns results into rows as they
//! stream in; [`super::writer`] does the file writing.

use super::Exporter;
use crate::experiment::Experiment;
use crate::experiment::ServerSpec;
use crate::experiment::deploys::rolling_updates;
use crate::metrics::RunMetrics;
use crate::metrics::aggregate::{CellSeries, CellSummary};
use crate::metrics::replica_series;
use crate::metrics::series::{GAUGES, Gauge, SERIES};
use crate::metrics::{Value, catalogue};
use crate::stats::Stat;
use crate::sweep::Cell;

/// One row per (point, strategy, run).
pub struct RunsCsv;

/// One row per (point, strategy): each metric's mean over runs and `_sd`.
#[derive(Default)]
pub struct SummaryCsv {
    cell: CellSummary,
}

/// One row per (point, strategy, time bucket): each series' mean over runs and `_sd`.
#[derive(Default)]
pub struct TimeseriesCsv {
    cell: CellSeries,
}

/// Floats print in Rust's shortest round-trip form: exact and identical on every platform.
fn cell(v: Value) -> String {
    match v {
        Value::Count(c) => c.to_string(),
        Value::Real(x) => x.to_string(),
        Value::Missing => String::new(),
    }
}

fn opt(x: Option<f64>) -> String {
    x.map(|x| x.to_string()).unwrap_or_default()
}

/// The swept keys' columns, then `extra`.
fn header(exp: &Experiment, extra: &[&str]) -> Vec<String> {
    let mut h = exp.sweep_keys.clone();
    h.extend(extra.iter().map(|s| s.to_string()));
    h
}

/// The swept values of the cell's point, then its strategy's name.
fn key_cells(exp: &Experiment, c: Cell) -> Vec<String> {
    let point = &exp.points[c.point];
    let mut row = point.values.clone();
    row.push(point.strategies[c.strategy].name.clone());
    row
}

fn stat_cells(row: &mut Vec<String>, stats: impl Iterator<Item = Stat>) {
    for s in stats {
        row.push(opt(s.mean));
        row.push(opt(s.sd));
    }
}

impl Exporter for RunsCsv {
    fn file_name(&self) -> &'static str {
        "runs.csv"
    }

    fn header(&self, exp: &Experiment) -> Vec<String> {
        let mut h = header(exp, &["strategy", "run", "seed"]);
        h.extend(catalogue::columns(&exp.windows, &exp.graph_columns));
        h
    }

    fn run_rows(
        &mut self,
        exp: &Experiment,
        c: Cell,
        run: u32,
        seed: u64,
        m: &RunMetrics,
    ) -> Vec<Vec<String>> {
        let mut row = key_cells(exp, c);
        row.push(run.to_string());
        row.push(seed.to_string());
        row.extend(catalogue::values(m).map(cell));
        vec![row]
    }
}

impl Exporter for SummaryCsv {
    fn file_name(&self) -> &'static str {
        "summary.csv"
    }

    fn header(&self, exp: &Experiment) -> Vec<String> {
        let mut h = header(exp, &["strategy", "runs"]);
        for name in catalogue::columns(&exp.windows, &exp.graph_columns) {
            h.push(format!("{name}_sd"));
            h.insert(h.len() - 1, name);
        }
        h
    }

    fn run_rows(&mut self, _: &Experiment, _: Cell, _: u32, _: u64, m: &RunMetrics) -> Vec<Vec<String>> {
        self.cell.push(m);
        Vec::new()
    }

    fn cell_rows(&mut self, exp: &Experiment, c: Cell) -> Vec<Vec<String>> {
        let done = std::mem::take(&mut self.cell);
        let mut row = key_cells(exp, c);
        row.push(done.runs().to_string());
        stat_cells(&mut row, done.stats());
        vec![row]
    }
}

impl Exporter for TimeseriesCsv {
    fn file_name(&self) -> &'static str {
        "timeseries.csv"
    }

    fn header(&self, exp: &Experiment) -> Vec<String> {
        let mut h = header(exp, &["strategy", "t_s"]);
        let gauges = gauges(exp);
        let names = SERIES.iter().chain(gauges.iter().map(|g| &GAUGES[*g as usize])).map(|s| s.to_string());
        for s in names.chain(replica_columns(exp)) {
            h.push(format!("{s}_sd"));
            h.push(s);
            let n = h.len();
            h.swap(n - 2, n - 1);
        }
        h
    }

    fn run_rows(&mut self, _: &Experiment, _: Cell, _: u32, _: u64, m: &RunMetrics) -> Vec<Vec<String>> {
        self.cell.push(&m.series);
        Vec::new()
    }

    fn cell_rows(&mut self, exp: &Experiment, c: Cell) -> Vec<Vec<String>> {
        let done = std::mem::take(&mut self.cell);
        let keys = key_cells(exp, c);
        let gauges = gauges(exp);
        let replica_columns = replica_columns(exp).len();
        let graph_columns = (!exp.points[c.point].spec.services.is_empty())
            .then(|| (replica_columns_of(exp), service_series_columns(&exp.points[c.point].spec)));
        let from = SERIES.len() + GAUGES.len();
        done.rows()
            .map(|(t, stats)| {
                let mut row = keys.clone();
                row.push(t.to_string());
                let series = stats[..SERIES.len()].iter().copied();
                let used = gauges.iter().map(|g| stats[SERIES.len() + *g as usize]);
                // A cell with fewer replicas than the experiment's most leaves the rest empty.
                let empty = Stat { mean: None, sd: None };
                let mut cells: Vec<Stat> = stats[from..].to_vec();
                // A point without the autoscaler in an experiment with one: its columns empty.
                if autoscaled(exp) && !autoscaled_point(exp, c.point) && !cells.is_empty() {
                    cells.splice(1..1, [empty; replica_series::AUTOSCALED]);
                }
                let replicas: Vec<Stat> = match &graph_columns {
                    // A call graph's services: this point's columns placed by name.
                    Some((all, own)) => all
                        .iter()
                        .map(|name| own.iter().position(|o| o == name).and_then(|k| cells.get(k)))
                        .map(|cell| cell.copied().unwrap_or(empty))
                        .collect(),
                    None => (0..replica_columns).map(|k| cells.get(k).copied().unwrap_or(empty)).collect(),
                };
                stat_cells(&mut row, series.chain(used).chain(replicas));
                row
            })
            .collect()
    }
}

/// The replica columns of timeseries.csv, for the most replica slots of any point with
/// `replicas` > 1 (a deploy's surge slots included); none when no point has replicas, so that
/// other experiments keep their columns.
fn replica_columns(exp: &Experiment) -> Vec<String> {
    if exp.points.iter().any(|p| !p.spec.services.is_empty()) {
        return replica_columns_of(exp);
    }
    let slots = exp
        .points
        .iter()
        .filter_map(|p| match &p.spec.server {
            ServerSpec::Queue(q) if q.replicas > 1 => {
                let surge = rolling_updates(q).iter().map(|(_, u)| u.max_surge).max().unwrap_or(0);
                Some((q.replicas + surge).max(q.autoscale_max().unwrap_or(0)))
            }
            _ => None,
        })
        .max();
    slots.map_or_else(Vec::new, |n| replica_series::columns(n, autoscaled(exp)))
}

/// With `[[services]]`: the replica counts of every service that autoscales or deploys at
/// some point, in the order first met (points in order, services in file order).
fn replica_columns_of(exp: &Experiment) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    for p in &exp.points {
        for name in service_series_columns(&p.spec) {
            if !all.contains(&name) {
                all.push(name);
            }
        }
    }
    all
}

/// The replica count columns of a point's services, in the order its runs keep them: each
/// service with replicas that autoscales or deploys, in file order.
fn service_series_columns(spec: &crate::experiment::ExperimentSpec) -> Vec<String> {
    spec.services
        .iter()
        .filter(|s| s.server.replicas > 1 && (s.server.autoscale.is_some() || !s.server.deploys.is_empty()))
        .flat_map(|s| replica_series::service_columns(&s.name, s.server.autoscale.is_some()))
        .collect()
}

/// Whether some point of the experiment has an autoscaler (timeseries.csv then has its
/// columns).
fn autoscaled(exp: &Experiment) -> bool {
    (0..exp.points.len()).any(|p| autoscaled_point(exp, p))
}

fn autoscaled_point(exp: &Experiment, point: usize) -> bool {
    // With `[[services]]`, `server` is the entry service, whose columns are its own.
    exp.points[point].spec.services.is_empty()
        && matches!(&exp.points[point].spec.server, ServerSpec::Queue(q) if q.replicas > 1 && q.autoscale.is_some())
}

/// The gauges timeseries.csv carries: an adaptive limit's column appears only in an
/// experiment where some strategy (client) or point (server) has one, so that other
/// experiments keep their columns.
fn gauges(exp: &Experiment) -> Vec<Gauge> {
    let client = exp.points.iter().any(|p| p.strategies.iter().any(|s| s.policy.limit.is_some()));
    let server = exp
        .points
        .iter()
        .any(|p| matches!(&p.spec.server, ServerSpec::Queue(q) if q.adaptive_concurrency.as_ref().is_some_and(|a| a.enabled)));
    [(client, Gauge::ClientLimit), (server, Gauge::ServerLimit)]
        .into_iter()
        .filter_map(|(used, g)| used.then_some(g))
        .collect()
}
