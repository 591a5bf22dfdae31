//! retrysim against the bare binary-heap loop on the 10,000-client herd, side by side in one
//! process: `cargo bench --bench compare -- [N]` (default 20 repetitions). With
//! `--retrysim-only` it runs retrysim's N runs alone, for a profiler.
//!
//! Each repetition times one whole run of each, alternating (so a burst of load on a shared
//! machine hits both): retrysim's run 0 of `experiments/herd-10k.toml` (as `retrysim run`
//! does it: `assembly::simulate_with` on the default calendar queue, new queue and tables each
//! run) and the bare loop (`benches/bare/mod.rs`). It prints the fastest and the median per
//! run, and the ratio of the fastest. `scripts/bench-compare.sh` runs it (and its PGO build,
//! when `scripts/pgo.sh` has made one) next to SimPy and the larger benchmarks.

mod bare;

use retrysim::assembly::simulate_with;
use retrysim::engine::rng::run_seed;
use retrysim::experiment::{self, Overrides};
use retrysim::model::Calendar;
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

fn time(f: impl FnOnce() -> u64) -> f64 {
    let t = Instant::now();
    black_box(f());
    t.elapsed().as_secs_f64()
}

fn summary(name: &str, mut secs: Vec<f64>, events: u64) -> f64 {
    secs.sort_by(f64::total_cmp);
    let (min, median) = (secs[0], secs[secs.len() / 2]);
    println!(
        "{name:<28} fastest {:7.3} ms  median {:7.3} ms  ({events} events, {:.1} M events/s at the fastest)",
        min * 1e3,
        median * 1e3,
        events as f64 / min / 1e6
    );
    min
}

fn main() {
    let reps: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(20);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/herd-10k.toml");
    let exp = experiment::load(&path, &Overrides::default()).expect("shipped experiments are valid");
    let (point, seed) = (&exp.points[0], run_seed(exp.seed, 0));
    let retrysim_run = || simulate_with::<Calendar>(&point.spec, &point.strategies[0], seed).events;
    let bare_run = || bare::run(1).events;
    if std::env::args().any(|a| a == "--retrysim-only") {
        // For profilers (perf, callgrind): retrysim's runs alone, nothing else in the process.
        let events: u64 = (0..reps).map(|_| retrysim_run()).sum();
        println!("retrysim alone: {reps} runs, {events} events");
        return;
    }
    let (events, bare_events) = (retrysim_run(), bare_run());
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        ours.push(time(retrysim_run));
        theirs.push(time(bare_run));
    }
    println!("10,000-client herd, one run, {reps} repetitions each:");
    let a = summary("retrysim (calendar queue)", ours, events);
    let b = summary("bare binary-heap loop", theirs, bare_events);
    println!("retrysim is {:.2}x the bare loop's speed (fastest run against fastest run)", b / a);
}
