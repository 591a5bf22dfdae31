//! Runs an experiment: every (point, strategy) cell x run, in parallel on worker threads, with
//! results handed to a [`Sink`] in (cell, run) order whatever the thread count, so outputs are
//! byte-identical on any machine. Results stream: a run's result is handed over as soon as the
//! runs before it are, and nothing is kept once the sink has it, so memory does not grow with
//! the number of runs or cells.
//!
//! `--shard I/N` runs a deterministic 1/N of the cells (contiguous, in output order), so that
//! the shards' files, concatenated in shard order, are the whole run's files.

use crate::assembly::simulate_with;
use crate::engine::rng::run_seed;
use crate::experiment::{Experiment, ExperimentSpec, Strategy};
use crate::metrics::RunMetrics;
use crate::model::{DefaultQueue, QueueChoice};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

/// One (point, strategy) pair: its runs are aggregated together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cell {
    pub point: usize,
    pub strategy: usize,
}

/// One part of N of an experiment's cells (`--shard I/N`, `index` from 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// Parses `I/N` (1 <= I <= N).
    pub fn parse(text: &str) -> Result<Shard, String> {
        let (i, n) = text.split_once('/').ok_or_else(|| {
            format!("`{text}` is not I/N: write the shard as e.g. 2/4 (the second of four)")
        })?;
        let parse = |s: &str, what: &str| {
            s.trim().parse::<u32>().map_err(|_| format!("`{text}`: {what} `{s}` is not a whole number"))
        };
        let (index, count) = (parse(i, "I")?, parse(n, "N")?);
        if count == 0 {
            return Err(format!("`{text}`: N must be at least 1"));
        }
        if index == 0 || index > count {
            return Err(format!("`{text}`: I must be between 1 and N ({count}); shards are numbered from 1"));
        }
        Ok(Shard { index, count })
    }

    /// This shard's slice of `n` items: contiguous, sizes differing by at most one.
    pub fn range(&self, n: usize) -> std::ops::Range<usize> {
        let (i, k) = (self.index as usize - 1, self.count as usize);
        (n * i / k)..(n * (i + 1) / k)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The experiment's cells in output order: by point, then strategy; the shard's part only.
pub fn cells(exp: &Experiment, shard: Option<Shard>) -> Vec<Cell> {
    let all: Vec<Cell> = exp
        .points
        .iter()
        .enumerate()
        .flat_map(|(p, point)| (0..point.strategies.len()).map(move |s| Cell { point: p, strategy: s }))
        .collect();
    match shard {
        Some(sh) => all[sh.range(all.len())].to_vec(),
        None => all,
    }
}

/// Runs in the experiment (cells x runs), for a progress bar's length.
pub fn run_count(exp: &Experiment, shard: Option<Shard>) -> u64 {
    cells(exp, shard).len() as u64 * exp.runs as u64
}

/// Receives the results in order.
pub trait Sink {
    type Error;
    /// Run `run` of `cell` (with its master seed) finished; runs arrive in order within a cell,
    /// and cells in the order given.
    fn run(&mut self, cell: Cell, run: u32, seed: u64, metrics: &RunMetrics) -> Result<(), Self::Error>;
    /// Every run of `cell` has been handed over.
    fn cell_done(&mut self, cell: Cell) -> Result<(), Self::Error>;
}

/// How a run ended early.
#[derive(Debug, PartialEq, Eq)]
pub enum Stopped<E> {
    /// The stop flag was raised (Ctrl-C).
    Interrupted,
    /// The sink failed.
    Sink(E),
}

/// Runs every run of `cells` on `threads` worker threads, handing results to `sink` in order.
/// `progress(done, events)` is called on the calling thread after each run is handed over.
/// When `stop` is raised, workers finish the run they are in and nothing more is handed over.
pub fn execute<S: Sink>(
    exp: &Experiment,
    cells: &[Cell],
    threads: usize,
    sink: &mut S,
    progress: &mut dyn FnMut(u64, u64),
    stop: &AtomicBool,
) -> Result<(), Stopped<S::Error>> {
    execute_with::<DefaultQueue, S>(exp, cells, threads, sink, progress, stop)
}

/// [`execute`] with a chosen event queue.
pub fn execute_with<C: QueueChoice, S: Sink>(
    exp: &Experiment,
    cells: &[Cell],
    threads: usize,
    sink: &mut S,
    progress: &mut dyn FnMut(u64, u64),
    stop: &AtomicBool,
) -> Result<(), Stopped<S::Error>> {
    let runs = exp.runs as usize;
    let tasks = cells.len() * runs;
    let work = |i: usize| {
        let cell = cells[i / runs];
        let run = (i % runs) as u32;
        let point = &exp.points[cell.point];
        let seed = run_seed(exp.seed, run as u64);
        (seed, simulate_with::<C>(&point.spec, &point.strategies[cell.strategy], seed))
    };
    let mut events = 0u64;
    let mut consume = |i: usize, (seed, m): (u64, RunMetrics)| -> Result<(), Stopped<S::Error>> {
        let cell = cells[i / runs];
        let run = (i % runs) as u32;
        events += m.events;
        sink.run(cell, run, seed, &m).map_err(Stopped::Sink)?;
        if run as usize + 1 == runs {
            sink.cell_done(cell).map_err(Stopped::Sink)?;
        }
        progress(i as u64 + 1, events);
        Ok(())
    };
    ordered_parallel(tasks, threads.max(1), &work, &mut consume, stop)
}

/// One replication chosen by the caller: a spec, one of its strategies and a run index (its
/// seed is `run_seed(experiment seed, run)`, as in every cell). `retrysim tune` runs its
/// candidates this way, each for as many runs as the search gives it.
#[derive(Clone, Copy, Debug)]
pub struct Job<'a> {
    pub spec: &'a ExperimentSpec,
    pub strategy: &'a Strategy,
    pub run: u32,
}

/// Runs every job on `threads` worker threads and hands `(index, metrics)` to `consume` in job
/// order, on the calling thread; `progress(done, events)` after each. When `stop` is raised,
/// workers finish the run they are in and nothing more is handed over.
pub fn execute_jobs(
    seed: u64,
    jobs: &[Job<'_>],
    threads: usize,
    consume: &mut dyn FnMut(usize, &RunMetrics),
    progress: &mut dyn FnMut(u64, u64),
    stop: &AtomicBool,
) -> Result<(), Stopped<std::convert::Infallible>> {
    let work = |i: usize| {
        let job = &jobs[i];
        simulate_with::<DefaultQueue>(job.spec, job.strategy, run_seed(seed, job.run as u64))
    };
    let mut events = 0u64;
    let mut handle = |i: usize, m: RunMetrics| -> Result<(), Stopped<std::convert::Infallible>> {
        events += m.events;
        consume(i, &m);
        progress(i as u64 + 1, events);
        Ok(())
    };
    ordered_parallel(jobs.len(), threads.max(1), &work, &mut handle, stop)
}

/// Runs `work(0..n)` on `threads` threads and hands each result to `consume` in index order, on
/// the calling thread. Workers take indices in order and stay at most `window` ahead of the
/// oldest result not yet consumed, so at most `window` results wait in memory.
fn ordered_parallel<T: Send, E>(
    n: usize,
    threads: usize,
    work: &(dyn Fn(usize) -> T + Sync),
    consume: &mut dyn FnMut(usize, T) -> Result<(), Stopped<E>>,
    stop: &AtomicBool,
) -> Result<(), Stopped<E>> {
    struct State<T> {
        next_task: usize,
        next_result: usize,
        done: BTreeMap<usize, T>,
        /// Set when the consumer gives up (error or interruption): workers stop taking tasks.
        abandoned: bool,
    }
    let window = 4 * threads;
    let state = Mutex::new(State { next_task: 0, next_result: 0, done: BTreeMap::new(), abandoned: false });
    let changed = Condvar::new();
    let lock = || state.lock().unwrap_or_else(|e| e.into_inner());
    std::thread::scope(|scope| {
        for _ in 0..threads.min(n) {
            scope.spawn(|| {
                loop {
                    let i = {
                        let mut st = lock();
                        while !st.abandoned && st.next_task < n && st.next_task >= st.next_result + window {
                            st = changed.wait(st).unwrap_or_else(|e| e.into_inner());
                        }
                        if st.abandoned || st.next_task >= n || stop.load(Ordering::Relaxed) {
                            return;
                        }
                        st.next_task += 1;
                        st.next_task - 1
                    };
                    let result = work(i);
                    lock().done.insert(i, result);
                    changed.notify_all();
                }
            });
        }
        let outcome = (|| {
            for i in 0..n {
                let result = {
                    let mut st = lock();
                    loop {
                        if let Some(r) = st.done.remove(&i) {
                            st.next_result = i + 1;
                            break r;
                        }
                        if stop.load(Ordering::Relaxed) && st.next_task <= i {
                            return Err(Stopped::Interrupted);
                        }
                        st = changed
                            .wait_timeout(st, std::time::Duration::from_millis(100))
                            .unwrap_or_else(|e| e.into_inner())
                            .0;
                    }
                };
                changed.notify_all();
                consume(i, result)?;
                if stop.load(Ordering::Relaxed) && i + 1 < n {
                    return Err(Stopped::Interrupted);
                }
            }
            Ok(())
        })();
        lock().abandoned = true;
        changed.notify_all();
        outcome
    })
}

/// One replication's result, kept in memory by [`run`].
#[derive(Clone, Debug, PartialEq)]
pub struct RunResult {
    pub point: usize,
    pub strategy: usize,
    pub run: u32,
    /// The run's master seed (a function of the experiment seed and the run only).
    pub seed: u64,
    pub metrics: RunMetrics,
}

/// All results of an experiment in memory, ordered by (point, strategy, run): for tests and
/// library users with small experiments. `retrysim run` streams to files instead.
#[derive(Clone, Debug, Default)]
pub struct Results {
    pub runs: Vec<RunResult>,
}

impl Results {
    /// Events processed over all runs.
    pub fn events(&self) -> u64 {
        self.runs.iter().map(|r| r.metrics.events).sum()
    }

    /// The runs of one (point, strategy) cell, in run order (a contiguous slice).
    pub fn cell(&self, point: usize, strategy: usize) -> &[RunResult] {
        let start = self.runs.partition_point(|r| (r.point, r.strategy) < (point, strategy));
        let len = self.runs[start..].partition_point(|r| (r.point, r.strategy) == (point, strategy));
        &self.runs[start..start + len]
    }
}

impl Sink for Results {
    type Error = std::convert::Infallible;
    fn run(&mut self, cell: Cell, run: u32, seed: u64, metrics: &RunMetrics) -> Result<(), Self::Error> {
        self.runs.push(RunResult {
            point: cell.point,
            strategy: cell.strategy,
            run,
            seed,
            metrics: metrics.clone(),
        });
        Ok(())
    }
    fn cell_done(&mut self, _: Cell) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// Runs the whole experiment on one thread per core and keeps every result in memory;
/// `progress` is called with the number of runs done.
pub fn run(exp: &Experiment, progress: &dyn Fn(u64)) -> Results {
    run_with::<DefaultQueue>(exp, progress)
}

/// [`run`] with a chosen event queue.
pub fn run_with<C: QueueChoice>(exp: &Experiment, progress: &dyn Fn(u64)) -> Results {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let mut results = Results::default();
    let never = AtomicBool::new(false);
    let outcome = execute_with::<C, _>(
        exp,
        &cells(exp, None),
        threads,
        &mut results,
        &mut |done, _| progress(done),
        &never,
    );
    match outcome {
        Ok(()) => results,
        Err(Stopped::Interrupted) => unreachable!("the stop flag is never raised"),
        Err(Stopped::Sink(never)) => match never {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_every_cell_once_in_order() {
        for n in [1usize, 5, 12, 13] {
            for count in 1..=6u32 {
                let mut covered = Vec::new();
                for index in 1..=count {
                    covered.extend(Shard { index, count }.range(n));
                }
                assert_eq!(covered, (0..n).collect::<Vec<_>>(), "n={n} count={count}");
            }
        }
    }

    #[test]
    fn shard_syntax() {
        assert_eq!(Shard::parse("2/3"), Ok(Shard { index: 2, count: 3 }));
        assert!(Shard::parse("0/3").unwrap_err().contains("between 1 and N"));
        assert!(Shard::parse("4/3").unwrap_err().contains("between 1 and N"));
        assert!(Shard::parse("1/0").unwrap_err().contains("at least 1"));
        assert!(Shard::parse("x/3").unwrap_err().contains("not a whole number"));
        assert!(Shard::parse("3").unwrap_err().contains("not I/N"));
    }

    #[test]
    fn results_come_in_order_whatever_the_threads() {
        for threads in [1, 2, 3, 8] {
            let mut seen = Vec::new();
            let work = |i: usize| {
                // Uneven work: later tasks often finish first.
                std::thread::sleep(std::time::Duration::from_micros(((97 * i) % 13) as u64 * 50));
                i * 10
            };
            let never = AtomicBool::new(false);
            let r: Result<(), Stopped<()>> = ordered_parallel(
                100,
                threads,
                &work,
                &mut |i, v| {
                    seen.push((i, v));
                    Ok(())
                },
                &never,
            );
            assert_eq!(r, Ok(()));
            assert_eq!(seen, (0..100).map(|i| (i, i * 10)).collect::<Vec<_>>(), "threads={threads}");
        }
    }

    #[test]
    fn a_raised_stop_flag_ends_early() {
        let stop = AtomicBool::new(false);
        let mut consumed = 0;
        let r: Result<(), Stopped<()>> = ordered_parallel(
            1000,
            2,
            &|i| i,
            &mut |i, _| {
                consumed += 1;
                if i == 10 {
                    stop.store(true, Ordering::Relaxed);
                }
                Ok(())
            },
            &stop,
        );
        assert_eq!(r, Err(Stopped::Interrupted));
        assert_eq!(consumed, 11);
    }
}
