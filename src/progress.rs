//! Progress of a long run on stderr: a bar on a terminal, a plain line every few seconds on a
//! pipe (cells done, events per second, time left), nothing with `--quiet`. Never part of
//! results; the peak memory `--stats` prints.
//!
//! The time left is [`Eta`]'s: the time spent so far times the work left over the work done,
//! each run weighed by its point's expected events. indicatif's own estimate is a rate over
//! the last 15 s that decays while no run is handed over, so a few slow runs at the start (a
//! storm's cells, or workers waiting on the oldest run, since results are handed over in
//! order) made it say 13 minutes for a 55 s run.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How progress is shown.
pub enum Progress {
    Bar { bar: indicatif::ProgressBar, eta: Eta, started: Instant, last: Option<Instant> },
    Lines { name: String, total: u64, every: Duration, started: Instant, last: Instant, eta: Eta },
    Quiet,
}

/// Seconds between two updates of the bar's time left.
const BAR_ETA_EVERY: Duration = Duration::from_millis(250);

/// The time left of `total` runs, from the time the first `done` took. Runs are weighed by
/// their cell's expected cost when known ([`Eta::weighted`]), else counted alike; the
/// estimate is cumulative (every run done so far counts), so that a few slow runs move it
/// by their share of the work, not by their rate.
#[derive(Clone, Debug, Default)]
pub struct Eta {
    /// Per cell in order: the weight of one of its runs, and the total weight before it.
    cells: Vec<(f64, f64)>,
    runs_per_cell: u64,
}

impl Eta {
    /// Every run weighs the same.
    pub fn uniform() -> Eta {
        Eta::default()
    }

    /// Runs in order, `runs_per_cell` of each cell, one run of cell `i` weighing
    /// `weights[i]` (any unit; only ratios matter). Non-finite or non-positive weights count
    /// as the smallest positive one.
    pub fn weighted(weights: &[f64], runs_per_cell: u32) -> Eta {
        let floor =
            weights.iter().copied().filter(|w| w.is_finite() && *w > 0.0).fold(f64::INFINITY, f64::min);
        let floor = if floor.is_finite() { floor } else { 1.0 };
        let mut before = 0.0;
        let cells = weights
            .iter()
            .map(|&w| {
                let w = if w.is_finite() && w > 0.0 { w } else { floor };
                let cell = (w, before);
                before += w * runs_per_cell as f64;
                cell
            })
            .collect();
        Eta { cells, runs_per_cell: runs_per_cell as u64 }
    }

    /// The weight of the first `done` runs.
    fn work(&self, done: u64) -> f64 {
        if self.cells.is_empty() || self.runs_per_cell == 0 {
            return done as f64;
        }
        let cell = (done / self.runs_per_cell) as usize;
        match self.cells.get(cell) {
            Some(&(w, before)) => before + w * (done % self.runs_per_cell) as f64,
            None => {
                let &(w, before) = self.cells.last().expect("not empty");
                before + w * self.runs_per_cell as f64
            }
        }
    }

    /// Seconds left once `done` of `total` runs took `elapsed_s`; `None` before the first run.
    pub fn left_s(&self, done: u64, total: u64, elapsed_s: f64) -> Option<f64> {
        if done == 0 {
            return None;
        }
        let (done_w, total_w) = (self.work(done), self.work(total.max(done)));
        if done_w <= 0.0 {
            return None;
        }
        Some((elapsed_s * (total_w - done_w) / done_w).max(0.0))
    }
}

impl Progress {
    /// A bar when stderr is a terminal, lines every `every` otherwise, or nothing.
    pub fn new(name: &str, total: u64, quiet: bool, every: Duration) -> Progress {
        if quiet {
            return Progress::Quiet;
        }
        if std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::new(total);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{msg} [{bar:30}] {pos}/{len} runs, {elapsed} ({prefix} left)",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar.set_message(name.to_owned());
            bar.set_prefix("?");
            return Progress::Bar { bar, eta: Eta::uniform(), started: Instant::now(), last: None };
        }
        let now = Instant::now();
        Progress::Lines { name: name.to_owned(), total, every, started: now, last: now, eta: Eta::uniform() }
    }

    /// Weighs the time left by each run's expected cost (see [`Eta::weighted`]); `weights`
    /// holds one run's weight per cell, in order, each cell having the same runs.
    pub fn weigh(&mut self, weights: Vec<f64>) {
        let runs_per_cell = |total: u64| (total / weights.len().max(1) as u64) as u32;
        match self {
            Progress::Bar { bar, eta, .. } => {
                *eta = Eta::weighted(&weights, runs_per_cell(bar.length().unwrap_or(0)))
            }
            Progress::Lines { eta, total, .. } => *eta = Eta::weighted(&weights, runs_per_cell(*total)),
            Progress::Quiet => {}
        }
    }

    /// `done` runs are finished, having processed `events` events.
    pub fn update(&mut self, done: u64, events: u64) {
        match self {
            Progress::Bar { bar, eta, started, last } => {
                bar.set_position(done);
                let now = Instant::now();
                if last.is_none_or(|l| now.duration_since(l) >= BAR_ETA_EVERY) {
                    *last = Some(now);
                    let total = bar.length().unwrap_or(done);
                    let left = eta.left_s(done, total, now.duration_since(*started).as_secs_f64());
                    bar.set_prefix(left.map_or("?".to_owned(), human));
                }
            }
            Progress::Lines { name, total, every, started, last, eta } => {
                let now = Instant::now();
                if now.duration_since(*last) < *every || done >= *total {
                    return;
                }
                *last = now;
                let elapsed = now.duration_since(*started).as_secs_f64();
                let left = eta.left_s(done, *total, elapsed).unwrap_or(0.0);
                eprintln!(
                    "{name}: {done}/{total} runs, {:.1} M events/s, about {} left",
                    events as f64 / elapsed.max(1e-9) / 1e6,
                    human(left)
                );
            }
            Progress::Quiet => {}
        }
    }

    /// The work grew (or shrank) to `total` runs: `retrysim tune` learns its length as it goes.
    pub fn set_total(&mut self, new_total: u64) {
        match self {
            Progress::Bar { bar, .. } => bar.set_length(new_total),
            Progress::Lines { total, .. } => *total = new_total,
            Progress::Quiet => {}
        }
    }

    /// What is being done now (the bar's label; the name of the lines).
    pub fn set_message(&mut self, message: &str) {
        match self {
            Progress::Bar { bar, .. } => bar.set_message(message.to_owned()),
            Progress::Lines { name, .. } => *name = message.to_owned(),
            Progress::Quiet => {}
        }
    }

    /// The run ended; `line` says what it cost.
    pub fn finish(&self, line: &str) {
        if let Progress::Bar { bar, .. } = self {
            bar.finish_with_message(line.to_owned());
        }
    }
}

/// `73 s`, `4 min 12 s`, `2 h 5 min`.
fn human(seconds: f64) -> String {
    let s = seconds.round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

/// Peak resident memory of this process in bytes (Linux `VmHWM`), if the system tells.
pub fn peak_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::Eta;

    /// A sweep whose first points are storms: their runs process 20 times the events of the
    /// others (the cost estimate knows it within a factor of 1.5 either way), and each run's
    /// time scatters by up to 1.6x around its events. After 10 % of the runs the weighted
    /// estimate is within 2x of the truth; counting runs alike is not.
    #[test]
    fn the_time_left_is_within_2x_after_a_tenth_of_the_runs() {
        let (cells, runs) = (20usize, 50u32);
        let events: Vec<f64> = (0..cells).map(|c| if c < 4 { 20.0 } else { 1.0 }).collect();
        // What the estimate says: off by a factor between 1/1.5 and 1.5, cell by cell.
        let estimated: Vec<f64> =
            events.iter().enumerate().map(|(c, e)| e * [1.5, 0.7, 1.0][c % 3]).collect();
        let duration = |i: usize| events[i / runs as usize] * [0.6, 1.0, 1.4, 0.8, 1.2][i % 5] * 1e-3;
        let total = cells as u64 * runs as u64;
        let all: f64 = (0..total as usize).map(duration).sum();
        let (weighted, uniform) = (Eta::weighted(&estimated, runs), Eta::uniform());
        let mut elapsed = 0.0;
        let mut worst_uniform: f64 = 1.0;
        for done in 1..total {
            elapsed += duration(done as usize - 1);
            if done * 10 < total {
                continue;
            }
            let truth = all - elapsed;
            let ratio = |e: &Eta| {
                let left = e.left_s(done, total, elapsed).unwrap();
                (left / truth).max(truth / left)
            };
            assert!(
                ratio(&weighted) <= 2.0,
                "after {done} runs: {} vs {truth}",
                weighted.left_s(done, total, elapsed).unwrap()
            );
            worst_uniform = worst_uniform.max(ratio(&uniform));
        }
        assert!(
            worst_uniform > 2.0,
            "the scripted sequence is too easy: counting runs gives {worst_uniform}"
        );
    }

    #[test]
    fn no_estimate_before_the_first_run_and_none_left_at_the_end() {
        let e = Eta::weighted(&[2.0, 0.0, f64::NAN], 3);
        assert_eq!(e.left_s(0, 9, 1.0), None);
        assert_eq!(e.left_s(9, 9, 5.0), Some(0.0));
        // A cell without a usable weight counts as the lightest one: 3 runs of 2, then 6 of 2.
        assert!((e.left_s(3, 9, 1.0).unwrap() - 2.0).abs() < 1e-12);
    }

    #[test]
    fn human_durations() {
        assert_eq!(super::human(4.4), "4 s");
        assert_eq!(super::human(252.0), "4 min 12 s");
        assert_eq!(super::human(7500.0), "2 h 5 min");
    }
}
