//! Experiment files: TOML text -> [`ExperimentSpec`] (serde) -> `--set` overrides -> sweep
//! expansion -> validated [`Experiment`], refusing bad input before anything runs.
//!
//! ```no_run
//! use retrysim::experiment::{self, Overrides};
//! let exp = experiment::load(std::path::Path::new("experiments/retry-storm.toml"), &Overrides::default())?;
//! println!("{} points x {} strategies x {} runs", exp.points.len(), exp.points[0].strategies.len(), exp.runs);
//! # Ok::<(), retrysim::experiment::ConfigError>(())
//! ```

pub mod capacity;
pub mod cost;
pub mod deploys;
pub mod duration;
mod error;
mod load;
pub mod presets;
pub mod provenance;
pub mod schema;
pub mod spec;
mod validate;
mod warnings;

pub use duration::Duration;
pub use error::ConfigError;
pub use load::{
    BadReference, Skipped, SpecError, effective_strategy, effective_strategy_in, key_order, load, load_str,
    merged_strategy, parse_set_arg, resolve_reference, same_value, select_strategies, spec_with,
    strategy_key, value_number, value_text,
};
pub use spec::*;
pub use warnings::{Warning, warnings};

/// Command-line changes applied on top of the file, in this order: `--set`, then `--runs` and
/// `--seed`.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// `--set KEY=VALUE` pairs, in command-line order (a later one wins).
    pub set: Vec<(String, String)>,
    pub runs: Option<u32>,
    pub seed: Option<u64>,
}

impl Overrides {
    /// The changes as command-line arguments, in the order they apply.
    pub fn describe(&self) -> Vec<String> {
        let mut all: Vec<String> = self.set.iter().map(|(k, v)| format!("--set {k}={v}")).collect();
        all.extend(self.runs.map(|r| format!("--runs {r}")));
        all.extend(self.seed.map(|s| format!("--seed {s}")));
        all
    }
}

/// A validated experiment: every sweep point is a complete, checked spec.
#[derive(Clone, Debug)]
pub struct Experiment {
    pub name: String,
    /// The file's leading comment block (what the experiment asks), as text.
    pub description: String,
    /// The experiment file as read, before command-line changes.
    pub source: String,
    /// The command-line changes, in the order applied (`--set K=V`, `--runs N`, `--seed N`).
    pub overrides: Vec<String>,
    /// The experiment as run, every `--set` applied, as TOML; empty without `--set`.
    pub effective_toml: String,
    /// The command line that ran it, when a command records one (`retrysim run`).
    pub command_line: Vec<String>,
    /// Identifies the experiment as run (text, changes, retrysim version): shards and resumed
    /// runs of one experiment share it.
    pub fingerprint: String,
    pub seed: u64,
    pub runs: u32,
    /// Whether `timeseries.csv` is written (`[output] timeseries`).
    pub timeseries: bool,
    /// The names of `[output] windows`, in name order, then with `[workload] priorities` the
    /// four classes' (`critical_plus`, `critical`, `sheddable_plus`, `sheddable`): each adds
    /// its windowed metrics to runs.csv and summary.csv
    /// ([`crate::metrics::catalogue::columns`]).
    pub windows: Vec<String>,
    /// With `[[services]]`, the per-service and per-edge columns of runs.csv and summary.csv
    /// ([`crate::metrics::graph::columns`]), after the windows'; empty without.
    pub graph_columns: Vec<String>,
    /// `[output] reference`, checked against the sweep: the verdict's reference point as
    /// (swept key, value as in its CSV column) pairs; empty for the first point.
    pub reference: Vec<(String, String)>,
    /// The swept keys, in file order: the leading columns of runs.csv and summary.csv.
    pub sweep_keys: Vec<String>,
    /// The cartesian product of the sweep values (one point when there is no `[sweep]`), the
    /// last key varying fastest.
    pub points: Vec<Point>,
    /// Points that `[sweep] skip_invalid` left out, with the reason.
    pub skipped: Vec<Skipped>,
    /// The file's `[tune]`, unchecked: what `retrysim tune` searches (`run` ignores it).
    pub tune: Option<TuneSection>,
    /// The files the strategies import (`import = { kind, file }`), each as its path and its
    /// text, concatenated; empty without imports. Part of the fingerprint.
    pub imported: String,
}

/// `[tune]` as the file gives it, with what checking it needs. The file format only carries
/// it: its meaning (strategy, metrics, space, scenarios) is the `tune` layer's, which checks it
/// against the rest of the file and builds the candidates from [`TuneSection::base`].
#[derive(Clone, Debug)]
pub struct TuneSection {
    /// `[tune]` after `--set`.
    pub raw: toml::Value,
    /// The file after `--set`, without `[sweep]` and `[tune]`: what scenarios and candidates
    /// change.
    pub base: toml::Table,
    /// Names the file in messages.
    pub origin: String,
}

/// One point of the sweep.
#[derive(Clone, Debug)]
pub struct Point {
    /// The value of each swept key at this point, as written in the CSV columns.
    pub values: Vec<String>,
    pub spec: ExperimentSpec,
    /// `spec.strategies`: each resolved over `[client]` and its preset.
    pub strategies: Vec<Strategy>,
    /// Where each strategy's keys came from (`retrysim explain`), in the same order.
    pub sources: Vec<provenance::Sources>,
}
