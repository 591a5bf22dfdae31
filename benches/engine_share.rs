//! How much of a run is the engine, and how much the model: `cargo bench --bench engine_share`.
//!
//! For the 10k and 1M herds it records run 0's event-queue calls (`trace/mod.rs`), then times
//! whole runs and replays of those calls alone (the engine without the model: on a calendar
//! queue reused across replays, a new one each time as the runs use today, a binary heap),
//! and the replay loop itself, and prints them per event. Wall times on a shared machine are
//! noisy; `scripts/engine-share.sh` gives the same split in instructions under callgrind,
//! running this binary as `engine_share MODE FILE REPS`.

mod trace;

use retrysim::assembly::simulate_with;
use retrysim::engine::Scheduler;
use retrysim::engine::rng::run_seed;
use retrysim::experiment::{self, Experiment, Overrides};
use retrysim::model::Calendar;
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

fn load(file: &str) -> Experiment {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments").join(file);
    experiment::load(&path, &Overrides::default()).expect("shipped experiments are valid")
}

/// One whole run (run 0 of the first point and strategy): a named function for callgrind.
#[inline(never)]
fn full_run(exp: &Experiment) -> u64 {
    let point = &exp.points[0];
    simulate_with::<Calendar>(&point.spec, &point.strategies[0], run_seed(exp.seed, 0)).events
}

/// The fastest of `reps` calls of `f`, in seconds.
fn fastest(reps: usize, mut f: impl FnMut() -> u64) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            black_box(f());
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    if let [mode, file, reps] = &args[..] {
        return callgrind_mode(mode, file, reps.parse().expect("REPS is a number"));
    }
    for (file, reps) in [("herd-10k.toml", 200), ("herd-1m.toml", 5)] {
        let exp = load(file);
        let (calls, events) = trace::record(&exp);
        let mut reused = Scheduler::default();
        let mut stack = Scheduler::default();
        let run = fastest(reps, || full_run(&exp));
        let engine = fastest(reps, || trace::replay_calendar(&calls, &mut reused));
        let fresh = fastest(reps, || trace::replay_calendar(&calls, &mut Scheduler::default()));
        let heap = fastest(reps.min(20), || trace::replay_heap(&calls, &mut Scheduler::default()));
        let replay_loop = fastest(reps, || trace::replay_stack(&calls, &mut stack));
        let ns = |secs: f64| secs * 1e9 / events as f64;
        println!("{file}: {events} events, {} queue calls; fastest of {reps}, ns per event:", calls.len());
        println!("  whole run (calendar queue, new each run)  {:7.1}", ns(run));
        println!("  queue traffic replayed, calendar reused   {:7.1}", ns(engine));
        println!("  queue traffic replayed, calendar new      {:7.1}", ns(fresh));
        println!("  queue traffic replayed, binary heap new   {:7.1}", ns(heap));
        println!("  replay loop alone (a stack for a queue)   {:7.1}", ns(replay_loop));
        println!(
            "  engine share of a run: {:.0} % (the model: {:.0} %)",
            100.0 * (fresh - replay_loop) / run,
            100.0 * (1.0 - (fresh - replay_loop) / run)
        );
    }
}

/// For `scripts/engine-share.sh` under callgrind: `full` runs run 0 `reps` times; `replay`,
/// `replay-new`, `replay-heap` and `replay-stack` replay its queue calls on a reused
/// calendar queue, a new one each time, a new binary heap each time, or a stack.
fn callgrind_mode(mode: &str, file: &str, reps: usize) {
    let exp = load(file);
    let (calls, events) = trace::record(&exp);
    let sum: u64 = match mode {
        "full" => (0..reps).map(|_| full_run(&exp)).sum(),
        "replay" => {
            let mut s = Scheduler::default();
            (0..reps).map(|_| trace::replay_calendar(&calls, &mut s)).sum()
        }
        "replay-new" => (0..reps).map(|_| trace::replay_calendar(&calls, &mut Scheduler::default())).sum(),
        "replay-heap" => (0..reps).map(|_| trace::replay_heap(&calls, &mut Scheduler::default())).sum(),
        "replay-stack" => {
            let mut s = Scheduler::default();
            (0..reps).map(|_| trace::replay_stack(&calls, &mut s)).sum()
        }
        _ => panic!("mode: full, replay, replay-new, replay-heap or replay-stack"),
    };
    println!("{mode} {file}: {reps} x {events} events (checksum {sum})");
}
