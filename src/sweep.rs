//! Runs an experiment: every (point, strategy, run) cell, in parallel with rayon. Results come
//! back in cell order whatever the thread count, so outputs are byte-identical on any machine.

use crate::engine::rng::run_seed;
use crate::experiment::Experiment;
use crate::metrics::RunMetrics;
use crate::model::{DefaultQueue, QueueChoice, simulate_with};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

/// One replication's result.
#[derive(Clone, Debug, PartialEq)]
pub struct RunResult {
    pub point: usize,
    pub strategy: usize,
    pub run: u32,
    /// The run's master seed (a function of the experiment seed, point and run only).
    pub seed: u64,
    pub metrics: RunMetrics,
}

/// All results of an experiment, ordered by (point, strategy, run).
#[derive(Clone, Debug)]
pub struct Results {
    pub runs: Vec<RunResult>,
}

impl Results {
    /// Events processed over all runs.
    pub fn events(&self) -> u64 {
        self.runs.iter().map(|r| r.metrics.events).sum()
    }

    /// The runs of one (point, strategy) cell, in run order. Runs are stored in cell order,
    /// so a cell is one contiguous slice.
    pub fn cell(&self, point: usize, strategy: usize) -> &[RunResult] {
        let start = self.runs.partition_point(|r| (r.point, r.strategy) < (point, strategy));
        let len = self.runs[start..].partition_point(|r| (r.point, r.strategy) == (point, strategy));
        &self.runs[start..start + len]
    }
}

/// Every cell of the experiment, in output order.
fn cells(exp: &Experiment) -> Vec<(usize, usize, u32)> {
    let mut cells = Vec::new();
    for (p, point) in exp.points.iter().enumerate() {
        for s in 0..point.strategies.len() {
            for r in 0..exp.runs {
                cells.push((p, s, r));
            }
        }
    }
    cells
}

/// Runs every cell on the current rayon pool; `progress` is called with the number of cells
/// finished so far (from any thread).
pub fn run(exp: &Experiment, progress: &(dyn Fn(u64) + Sync)) -> Results {
    run_with::<DefaultQueue>(exp, progress)
}

/// [`run`] with a chosen event queue.
pub fn run_with<C: QueueChoice>(exp: &Experiment, progress: &(dyn Fn(u64) + Sync)) -> Results {
    let done = AtomicU64::new(0);
    let runs = cells(exp)
        .into_par_iter()
        .map(|(p, s, r)| {
            let point = &exp.points[p];
            let seed = run_seed(exp.seed, r as u64);
            let metrics = simulate_with::<C>(&point.spec, &point.strategies[s], seed);
            progress(done.fetch_add(1, Ordering::Relaxed) + 1);
            RunResult { point: p, strategy: s, run: r, seed, metrics }
        })
        .collect();
    Results { runs }
}

/// Cells in the experiment (for a progress bar's length).
pub fn cell_count(exp: &Experiment) -> u64 {
    exp.points.iter().map(|p| p.strategies.len() as u64 * exp.runs as u64).sum()
}
