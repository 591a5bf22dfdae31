//! The "bare binary-heap loop": the 10,000-client thundering herd of `experiments/herd-10k.toml`
//! written as the smallest honest Rust simulation, with no retrysim code: one standard-library
//! `BinaryHeap` of `Reverse((time_ns, seq, event))`, one `Vec` of attempt counters, one
//! xoshiro256++ stream seeded once. It is the comparator for retrysim's `herd_10k` benchmark.
//!
//! The model: 10,000 clients send their first attempt at t=0; 100 workers and no waiting room,
//! so a request that finds every worker busy is rejected at once (429); service is exponential
//! with mean 10 ms; no network delay; at most 6 attempts; retry k (k = 1 first) waits
//! `U(0, min(1 s, 10 ms * 2^(k-1)))`. Events: a client's attempt, a worker's service done
//! (so events = calls + succeeded, as retrysim counts them for this file).
//!
//! `cargo bench --bench bare_loop` first prints the means over 20 seeds (`BARE_LOOP_SEEDS=N` for
//! more; compare with `retrysim run experiments/herd-10k.toml --runs 20`), then times one run
//! (`bare_loop/herd_10k`).

mod bare;

use bare::{Outcome, run};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

fn mean_se(xs: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let n = xs.clone().count() as f64;
    let m = xs.clone().sum::<f64>() / n;
    let var = xs.map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

fn herd(c: &mut Criterion) {
    // `BARE_LOOP_SEEDS=N` checks the agreement over more seeds (default 20).
    let seeds: u64 = std::env::var("BARE_LOOP_SEEDS").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let runs: Vec<Outcome> = (1..=seeds).map(run).collect();
    let (s, s_se) = mean_se(runs.iter().map(|o| o.succeeded as f64));
    let (k, k_se) = mean_se(runs.iter().map(|o| o.calls as f64));
    let (t, t_se) = mean_se(runs.iter().map(|o| o.completion_ns as f64 / 1e9));
    let (e, e_se) = mean_se(runs.iter().map(|o| o.events as f64));
    println!(
        "bare_loop over {seeds} seeds (mean ± s.e.): succeeded {s:.2} ± {s_se:.2}, calls {k:.1} ± {k_se:.1}, \
         completion {t:.4} ± {t_se:.4} s, events {e:.1} ± {e_se:.1}"
    );
    let seed = 1;
    let mut g = c.benchmark_group("bare_loop");
    g.sample_size(50).throughput(Throughput::Elements(run(seed).events));
    g.bench_function("herd_10k", |b| b.iter(|| run(black_box(seed))));
    g.finish();
}

criterion_group!(benches, herd);
criterion_main!(benches);
