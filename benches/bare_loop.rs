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

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;

const CLIENTS: u32 = 10_000;
const WORKERS: u32 = 100;
const MAX_ATTEMPTS: u8 = 6;
const SERVICE_MEAN_NS: f64 = 10e6;
const BASE_NS: f64 = 10e6;
const CAP_NS: f64 = 1e9;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Attempt(u32),
    Done,
}

#[derive(Clone, Copy, Debug, Default)]
struct Outcome {
    succeeded: u64,
    calls: u64,
    completion_ns: u64,
    events: u64,
}

/// `U(0, 1)` from the top 53 bits of one draw.
#[inline]
fn u01(rng: &mut Xoshiro256PlusPlus) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

fn run(seed: u64) -> Outcome {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut heap = BinaryHeap::with_capacity(CLIENTS as usize);
    let mut attempts = vec![0u8; CLIENTS as usize];
    let mut seq = 0u64;
    for c in 0..CLIENTS {
        heap.push(Reverse((0u64, seq, Ev::Attempt(c))));
        seq += 1;
    }
    let mut busy = 0u32;
    let mut out = Outcome::default();
    while let Some(Reverse((now, _, ev))) = heap.pop() {
        out.events += 1;
        match ev {
            Ev::Attempt(c) => {
                out.calls += 1;
                let a = &mut attempts[c as usize];
                *a += 1;
                if busy < WORKERS {
                    busy += 1;
                    // Exponential by inversion; 1 - u is in (0, 1].
                    let service = (-SERVICE_MEAN_NS * (1.0 - u01(&mut rng)).ln()).round() as u64;
                    heap.push(Reverse((now + service, seq, Ev::Done)));
                    seq += 1;
                } else if *a < MAX_ATTEMPTS {
                    let k = *a as i32; // the retry number: 1 after the first rejection
                    let delay = u01(&mut rng) * CAP_NS.min(BASE_NS * 2f64.powi(k - 1));
                    heap.push(Reverse((now + delay.round() as u64, seq, Ev::Attempt(c))));
                    seq += 1;
                } else {
                    out.completion_ns = now; // failed: 6 rejections
                }
            }
            Ev::Done => {
                busy -= 1;
                out.succeeded += 1;
                out.completion_ns = now;
            }
        }
    }
    out
}

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
