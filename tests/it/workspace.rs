//! A worker thread reuses its event queue, op table and latency histogram from one run to the
//! next (`model::workspace`). Reuse must not show in the results: a run gives the same
//! metrics after any other run on its thread as on a thread of its own.

use crate::support::shipped;
use retrysim::assembly::{simulate, simulate_with};
use retrysim::engine::rng::run_seed;
use retrysim::experiment::Experiment;
use retrysim::metrics::RunMetrics;
use retrysim::model::{Calendar, Heap};

/// Run `run` of every strategy at every point of `exp`, on the calling thread.
fn every_cell(exp: &Experiment, run: u64) -> Vec<RunMetrics> {
    let mut out = Vec::new();
    for point in &exp.points {
        for strategy in &point.strategies {
            out.push(simulate(&point.spec, strategy, run_seed(exp.seed, run)));
        }
    }
    out
}

/// On a new thread: nothing left over from other runs.
fn fresh(exp: &Experiment, run: u64) -> Vec<RunMetrics> {
    std::thread::scope(|s| s.spawn(|| every_cell(exp, run)).join().expect("no panic"))
}

#[test]
fn a_run_after_others_on_its_thread_gives_what_it_gives_alone() {
    // Different shapes in turn: a herd (big queue and table), layered gateways, idempotency
    // keys (a table with per-operation ids), the OCC server (another queue type), and back.
    let herd = shipped("herd-10k.toml", &[]);
    let layered = shipped("layered-retries.toml", &[]);
    let payments = shipped("payment-outage.toml", &[]);
    let aws = shipped("aws-2015-jitter.toml", &[]);
    let alone = [fresh(&herd, 0), fresh(&layered, 0), fresh(&payments, 0), fresh(&aws, 3)];
    std::thread::scope(|s| {
        s.spawn(|| {
            for round in 0..2 {
                // The second round finds every buffer grown by the first.
                assert_eq!(every_cell(&herd, 0), alone[0], "herd, round {round}");
                assert_eq!(every_cell(&layered, 0), alone[1], "layered, round {round}");
                assert_eq!(every_cell(&payments, 0), alone[2], "payments, round {round}");
                assert_eq!(every_cell(&aws, 3), alone[3], "aws, round {round}");
            }
            // Another queue implementation in between takes its own buffers.
            let point = &herd.points[0];
            let heap = simulate_with::<Heap>(&point.spec, &point.strategies[0], run_seed(herd.seed, 0));
            let calendar =
                simulate_with::<Calendar>(&point.spec, &point.strategies[0], run_seed(herd.seed, 0));
            assert_eq!(heap, alone[0][0]);
            assert_eq!(calendar, alone[0][0]);
        })
        .join()
        .expect("no panic")
    });
}
