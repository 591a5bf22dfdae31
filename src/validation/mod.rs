//! `retrysim validate`: every model checked against theory and the published studies, in one
//! generated file, VALIDATION.md.
//!
//! The suite is `experiments/validation/`: one experiment file per check, whose leading
//! comment states the check and its source. For each check, [`checks::CHECKS`] names the file
//! and says how to turn the runs into comparisons ([`Row`]s): the expected value (theory, or a
//! published mean with its standard error), the simulated value (a mean over independent runs
//! with its standard error), and the tolerance, always [`stats::Z_TOLERANCE`] standard errors
//! of the difference plus a stated resolution ([`stats::tolerance`]). Nothing in the output
//! depends on the clock or the thread count, so the file is the same bytes every time.
//!
//! | file | concept |
//! |---|---|
//! | [`checks`] | the check list: which file, which quantities, which formula (queueing theory, the controls, the AWS 2015 study) |
//! | [`theory`] | the closed forms (Erlang B/C, Pollaczek-Khinchine, backoff laws) |
//! | [`checks::aws`] | the AWS 2015 study: z-scores against its simulator's numbers, its claims |
//! | [`crate::stats`] | standard errors, t and normal quantiles, z-scores, the tolerance rule |
//! | [`markdown`] | VALIDATION.md |

pub mod checks;
pub mod markdown;
pub mod theory;

use crate::experiment::{self, Experiment, Overrides};
use crate::metrics::RunMetrics;
use crate::metrics::series::TimeSeries;
use crate::stats::{self, Estimate};
use crate::sweep;
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// The suite's folder, relative to the repository root.
pub const SUITE_DIR: &str = "experiments/validation";

/// The generated file's name.
pub const FILE: &str = "VALIDATION.md";

/// How a row's numbers are printed: values are multiplied by `scale` and followed by `suffix`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Unit {
    pub scale: f64,
    pub suffix: &'static str,
}

impl Unit {
    /// A pure number.
    pub const NUMBER: Unit = Unit { scale: 1.0, suffix: "" };
    /// Seconds, printed in milliseconds.
    pub const MS: Unit = Unit { scale: 1e3, suffix: " ms" };
    /// Calls per second.
    pub const PER_S: Unit = Unit { scale: 1.0, suffix: " /s" };
}

/// What a row expects.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Expected {
    /// A value: from theory (`se = 0`), or a published mean with its standard error.
    Value { value: f64, se: f64 },
    /// Every observation within `[low, high]`.
    Within { low: f64, high: f64 },
}

/// What the simulation gave.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Observed {
    /// A mean over runs with its standard error.
    Mean(Estimate),
    /// The smallest and largest observation over every run.
    Range { min: f64, max: f64 },
}

/// One comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The quantity, e.g. "p = 0.5, n = 3: calls per operation".
    pub what: String,
    pub unit: Unit,
    pub expected: Expected,
    pub observed: Observed,
    /// `observed - expected` (for a paired row, the mean of the per-run differences); 0 for
    /// ranges.
    pub deviation: f64,
    /// Standard error of the deviation (0 for exact comparisons and ranges).
    pub deviation_se: f64,
    /// A known bound on non-statistical error, added to the tolerance.
    pub resolution: f64,
    /// [`stats::tolerance`] of the two above.
    pub tolerance: f64,
    pub pass: bool,
}

impl Row {
    /// A simulated mean against an expected value with its own standard error (0 for theory):
    /// the difference's standard error combines both.
    pub fn value(
        what: impl Into<String>,
        unit: Unit,
        expected: f64,
        expected_se: f64,
        observed: Estimate,
        resolution: f64,
    ) -> Row {
        let deviation_se = stats::combined_se(expected_se, observed.se);
        Row::with_deviation(
            what,
            unit,
            Expected::Value { value: expected, se: expected_se },
            observed,
            observed.mean - expected,
            deviation_se,
            resolution,
        )
    }

    /// A simulated mean against an expected value computed from the same runs (e.g. Little's
    /// `lambda W`): `deviation` is the per-run difference's mean and standard error.
    pub fn paired(
        what: impl Into<String>,
        unit: Unit,
        expected: f64,
        observed: Estimate,
        deviation: Estimate,
        resolution: f64,
    ) -> Row {
        Row::with_deviation(
            what,
            unit,
            Expected::Value { value: expected, se: 0.0 },
            observed,
            deviation.mean,
            deviation.se,
            resolution,
        )
    }

    fn with_deviation(
        what: impl Into<String>,
        unit: Unit,
        expected: Expected,
        observed: Estimate,
        deviation: f64,
        deviation_se: f64,
        resolution: f64,
    ) -> Row {
        let tolerance = stats::tolerance(deviation_se, resolution);
        Row {
            what: what.into(),
            unit,
            expected,
            observed: Observed::Mean(observed),
            deviation,
            deviation_se,
            resolution,
            tolerance,
            pass: deviation.abs() <= tolerance,
        }
    }

    /// Every observation in `[min, max]` must lie within `[low, high]`, give or take
    /// `resolution`.
    pub fn within(
        what: impl Into<String>,
        unit: Unit,
        low: f64,
        high: f64,
        min: f64,
        max: f64,
        resolution: f64,
    ) -> Row {
        Row {
            what: what.into(),
            unit,
            expected: Expected::Within { low, high },
            observed: Observed::Range { min, max },
            deviation: 0.0,
            deviation_se: 0.0,
            resolution,
            tolerance: resolution,
            pass: min >= low - resolution && max <= high + resolution,
        }
    }

    /// The deviation in standard errors, when the standard error is not 0.
    pub fn z(&self) -> Option<f64> {
        stats::z_score(self.deviation, 0.0, self.deviation_se)
    }
}

/// What a check's evaluation returns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evaluation {
    pub rows: Vec<Row>,
    /// Markdown sections after the table (distributions, claims).
    pub sections: Vec<String>,
    /// Failures that are not rows (e.g. a claim the simulation contradicts).
    pub failures: Vec<String>,
    /// The summary table's (expected, simulated) cells; the first row's when None.
    pub summary: Option<(String, String)>,
}

/// One check's result.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// The experiment file's stem in [`SUITE_DIR`].
    pub id: String,
    pub title: String,
    /// The experiment file's leading comment: the check and its source.
    pub statement: String,
    /// How the simulated values are computed and the tolerance derived, beyond the general rule.
    pub method: String,
    /// Points x strategies x runs, for the reader.
    pub shape: String,
    pub evaluation: Evaluation,
}

impl Finding {
    pub fn passed(&self) -> bool {
        self.evaluation.failures.is_empty() && self.evaluation.rows.iter().all(|r| r.pass)
    }

    /// The command that reproduces the check's runs.
    pub fn command(&self) -> String {
        format!("cargo run --release -- run {SUITE_DIR}/{}.toml", self.id)
    }
}

/// Why the suite could not run.
#[derive(Debug, thiserror::Error)]
pub enum ValidationError {
    /// An experiment file of the suite is missing or invalid.
    #[error(transparent)]
    Config(#[from] experiment::ConfigError),
    /// An experiment file does not have what its check reads (a strategy, a sweep point).
    #[error("{file}: {reason}")]
    Suite { file: String, reason: String },
    /// `--check` named no check of the suite.
    #[error("no check named `{0}`; the checks are: {1}")]
    UnknownCheck(String, String),
    /// The stop flag was raised (a signal) before every check had run.
    #[error("interrupted")]
    Interrupted,
}

/// Runs the checks of `suite` (all of them when `only` is empty), in the list's order.
/// `progress(id, finding, events)` is called after each.
pub fn run(
    suite: &Path,
    only: &[String],
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&Finding, u64),
) -> Result<Vec<Finding>, ValidationError> {
    let ids: Vec<&str> = checks::CHECKS.iter().map(|c| c.id).collect();
    for o in only {
        if !ids.contains(&o.as_str()) {
            return Err(ValidationError::UnknownCheck(o.clone(), ids.join(", ")));
        }
    }
    let mut out = Vec::new();
    for def in checks::CHECKS.iter().filter(|c| only.is_empty() || only.iter().any(|o| o == c.id)) {
        let file = suite.join(format!("{}.toml", def.id));
        let exp = experiment::load(&file, &Overrides::default())?;
        let results = collect(&exp, def.series, stop)?;
        let suite_err = |reason: String| ValidationError::Suite { file: file.display().to_string(), reason };
        let evaluation = (def.evaluate)(&exp, &results, suite).map_err(suite_err)?;
        let finding = Finding {
            id: def.id.to_string(),
            title: def.title.to_string(),
            statement: exp.description.clone(),
            method: def.method.to_string(),
            shape: shape(&exp),
            evaluation,
        };
        progress(&finding, results.events());
        out.push(finding);
    }
    Ok(out)
}

/// Runs every cell of `exp` on one thread per core and keeps the metrics in memory, without
/// their time series unless `series` (a long horizon makes them the bulk of the memory).
fn collect(exp: &Experiment, series: bool, stop: &AtomicBool) -> Result<sweep::Results, ValidationError> {
    struct Collect {
        series: bool,
        results: sweep::Results,
    }
    impl sweep::Sink for Collect {
        type Error = std::convert::Infallible;
        fn run(&mut self, cell: sweep::Cell, run: u32, seed: u64, m: &RunMetrics) -> Result<(), Self::Error> {
            let metrics =
                if self.series { m.clone() } else { RunMetrics { series: TimeSeries::none(), ..m.clone() } };
            self.results.runs.push(sweep::RunResult {
                point: cell.point,
                strategy: cell.strategy,
                run,
                seed,
                metrics,
            });
            Ok(())
        }
        fn cell_done(&mut self, _: sweep::Cell) -> Result<(), Self::Error> {
            Ok(())
        }
    }
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let mut sink = Collect { series, results: sweep::Results::default() };
    match sweep::execute(exp, &sweep::cells(exp, None), threads, &mut sink, &mut |_, _| {}, stop) {
        Ok(()) => Ok(sink.results),
        Err(sweep::Stopped::Interrupted) => Err(ValidationError::Interrupted),
        Err(sweep::Stopped::Sink(never)) => match never {},
    }
}

/// "3 points x 1 strategy x 20 runs".
fn shape(exp: &Experiment) -> String {
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    format!(
        "{} x {} x {}",
        plural(exp.points.len(), "point", "points"),
        plural(exp.points[0].strategies.len(), "strategy", "strategies"),
        plural(exp.runs as usize, "run", "runs")
    )
}
