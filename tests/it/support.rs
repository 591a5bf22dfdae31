//! Helpers shared by the integration tests' modules (`use crate::support::...`).

use retrysim::assembly::simulate;
use retrysim::engine::rng::run_seed;
use retrysim::experiment::{self, Experiment, Overrides};
use retrysim::metrics::{FailReason, RunMetrics};
use std::path::{Path, PathBuf};

/// A shipped experiment file (`experiments/NAME`).
pub fn experiment_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments").join(name)
}

/// A shipped experiment, loaded with `--set KEY=VALUE` overrides.
pub fn shipped(file: &str, set: &[(&str, &str)]) -> Experiment {
    let overrides = Overrides {
        set: set.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Default::default()
    };
    experiment::load(&experiment_file(file), &overrides).expect("shipped experiments are valid")
}

/// A CSV file as (header, rows).
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn read(path: &Path) -> Table {
        let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let header = r.headers().unwrap().iter().map(String::from).collect();
        let rows = r.records().map(|rec| rec.unwrap().iter().map(String::from).collect()).collect();
        Table { header, rows }
    }

    /// The index of column `name`.
    pub fn col(&self, name: &str) -> usize {
        self.header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name} in {:?}", self.header))
    }

    /// Every row's cell of column `name`.
    pub fn column(&self, name: &str) -> Vec<&str> {
        let i = self.col(name);
        self.rows.iter().map(|r| r[i].as_str()).collect()
    }

    /// `row`'s cell of column `name`.
    pub fn get<'a>(&self, row: &'a [String], name: &str) -> &'a str {
        &row[self.col(name)]
    }

    /// `row`'s cell of column `name`, as a number.
    pub fn num(&self, row: &[String], name: &str) -> f64 {
        let cell = self.get(row, name);
        cell.parse().unwrap_or_else(|_| panic!("{name} = {cell:?} is not a number"))
    }
}

/// The first run of each (point, strategy) of the experiment `text` with `--set KEY=VALUE`
/// changes, with the point's swept values (for scripted, deterministic scenarios).
pub fn first_runs(text: &str, set: &[(&str, &str)]) -> Vec<(Vec<String>, RunMetrics)> {
    let overrides = Overrides {
        set: set.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Default::default()
    };
    let exp = experiment::load_str(text, "test.toml", &overrides).unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    for point in &exp.points {
        for strategy in &point.strategies {
            out.push((point.values.clone(), simulate(&point.spec, strategy, run_seed(exp.seed, 0))));
        }
    }
    out
}

/// The run of [`first_runs`] at the point whose swept values are `point`.
pub fn at_point<'a>(runs: &'a [(Vec<String>, RunMetrics)], point: &[&str]) -> &'a RunMetrics {
    &runs.iter().find(|(p, _)| p == point).unwrap_or_else(|| panic!("no point {point:?}")).1
}

/// Every operation ends once (succeeded, failed or dead-lettered), and every applied one is
/// one of them; re-drives never outnumber dead letters.
pub fn check_endings(m: &RunMetrics) {
    assert_eq!(m.ops, m.succeeded + m.failed + m.dead_lettered, "{m:?}");
    assert_eq!(m.applied, m.succeeded + m.failed_but_applied + m.dead_lettered_but_applied, "{m:?}");
    assert!(m.redrive_succeeded <= m.redriven && m.redriven <= m.dead_lettered, "{m:?}");
}

/// An experiment written in the test, loaded with `--set KEY=VALUE` overrides (`sets`).
pub fn load_text(text: &str, sets: &[&str]) -> Experiment {
    let set = sets.iter().map(|s| experiment::parse_set_arg(s).unwrap()).collect();
    experiment::load_str(text, "test.toml", &Overrides { set, ..Default::default() })
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The first run of strategy number `strategy` at the first point of an experiment written in
/// the test.
pub fn run_strategy(text: &str, sets: &[&str], strategy: usize) -> RunMetrics {
    let exp = load_text(text, sets);
    let point = &exp.points[0];
    simulate(&point.spec, &point.strategies[strategy], run_seed(exp.seed, 0))
}

/// The first run of the first strategy at the first point of an experiment written in the test.
pub fn run_one(text: &str, sets: &[&str]) -> RunMetrics {
    run_strategy(text, sets, 0)
}

/// The operations that failed for `reason`.
pub fn failed(m: &RunMetrics, reason: FailReason) -> u64 {
    m.failed_by[reason as usize]
}
