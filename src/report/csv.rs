//! runs.csv and summary.csv (DESIGN §6): swept parameter columns, `strategy`, then the metrics
//! of [`crate::metrics::summary::METRICS`] in order.

use super::Exporter;
use crate::experiment::Experiment;
use crate::metrics::summary::{METRICS, Value, summarize};
use crate::sweep::Results;

/// One row per (point, strategy, run).
pub struct RunsCsv;
/// One row per (point, strategy): each metric's mean and `_sd`.
pub struct SummaryCsv;

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

fn writer() -> csv::Writer<Vec<u8>> {
    csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new())
}

/// Writing CSV into memory cannot fail (no IO happens), so a failure here is a bug.
const IN_MEMORY: &str = "writing CSV into memory cannot fail";

fn finish(w: csv::Writer<Vec<u8>>) -> Vec<u8> {
    w.into_inner().expect(IN_MEMORY)
}

impl Exporter for RunsCsv {
    fn file_name(&self) -> &'static str {
        "runs.csv"
    }

    fn render(&self, exp: &Experiment, results: &Results) -> Vec<u8> {
        let mut w = writer();
        let mut header: Vec<String> = exp.sweep_keys.clone();
        header.extend(["strategy", "run", "seed"].map(String::from));
        header.extend(METRICS.iter().map(|m| m.name.to_string()));
        w.write_record(&header).expect(IN_MEMORY);
        for r in &results.runs {
            let point = &exp.points[r.point];
            let mut row: Vec<String> = point.values.clone();
            row.push(point.strategies[r.strategy].name.clone());
            row.push(r.run.to_string());
            row.push(r.seed.to_string());
            row.extend(METRICS.iter().map(|m| cell((m.read)(&r.metrics))));
            w.write_record(&row).expect(IN_MEMORY);
        }
        finish(w)
    }
}

impl Exporter for SummaryCsv {
    fn file_name(&self) -> &'static str {
        "summary.csv"
    }

    fn render(&self, exp: &Experiment, results: &Results) -> Vec<u8> {
        let mut w = writer();
        let mut header: Vec<String> = exp.sweep_keys.clone();
        header.extend(["strategy", "runs"].map(String::from));
        for m in METRICS {
            header.push(m.name.to_string());
            header.push(format!("{}_sd", m.name));
        }
        w.write_record(&header).expect(IN_MEMORY);
        for (p, point) in exp.points.iter().enumerate() {
            for (s, strategy) in point.strategies.iter().enumerate() {
                let runs: Vec<_> = results.cell(p, s).iter().map(|r| &r.metrics).collect();
                let mut row: Vec<String> = point.values.clone();
                row.push(strategy.name.clone());
                row.push(runs.len().to_string());
                for stat in summarize(&runs) {
                    row.push(opt(stat.mean));
                    row.push(opt(stat.sd));
                }
                w.write_record(&row).expect(IN_MEMORY);
            }
        }
        finish(w)
    }
}
