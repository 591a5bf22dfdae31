//! Speed benchmarks (issue "Speed and scale"): `cargo bench --bench engine`.
//!
//! Each group reports a throughput: events per second for whole runs, operations per second
//! for the event queues and the backoff draws. benches/README.md quotes them.
//!
//! On a shared machine, shorten and repeat: `cargo bench --bench engine -- --warm-up-time 1
//! --measurement-time 3 herd_10k`.

mod trace;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use retrysim::assembly::simulate_with;
use retrysim::engine::rng::run_seed;
use retrysim::engine::{CalendarQueue, EventQueue, HeapQueue, RadixQueue, Scheduler};
use retrysim::experiment::{self, BackoffSpec, Duration, Experiment, Overrides};
use retrysim::metrics::RunMetrics;
use retrysim::model::{Calendar, Heap, QueueChoice, Radix};
use retrysim::sweep::Cell;
use std::hint::black_box;
use std::path::Path;

fn load(file: &str, set: &[(&str, &str)]) -> Experiment {
    let overrides = Overrides {
        set: set.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Default::default()
    };
    experiment::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments").join(file), &overrides)
        .expect("shipped experiments are valid")
}

/// The "hold" model: `pending` events stay queued; each step pops the earliest and pushes one
/// a random (exponential-ish) time later, as a simulation does.
fn hold<Q: EventQueue<u32>>(pending: usize, steps: u64) -> u64 {
    let mut q = Q::default();
    let mut r = Xoshiro256PlusPlus::seed_from_u64(7);
    let mut seq = 0;
    for i in 0..pending {
        q.push(r.next_u64() % 1_000_000_000, seq, i as u32);
        seq += 1;
    }
    let mut sum = 0u64;
    for _ in 0..steps {
        let (t, e) = q.pop_if_at_most(u64::MAX).expect("never empty");
        sum = sum.wrapping_add(t);
        q.push(t + (r.next_u64() % 2_000_000_000), seq, e);
        seq += 1;
    }
    sum
}

fn event_queues(c: &mut Criterion) {
    let mut g = c.benchmark_group("queue_hold");
    const STEPS: u64 = 100_000;
    g.throughput(Throughput::Elements(STEPS));
    for pending in [100usize, 10_000, 1_000_000] {
        if pending >= 1_000_000 {
            g.sample_size(10);
        }
        g.bench_with_input(BenchmarkId::new("heap", pending), &pending, |b, &n| {
            b.iter(|| hold::<HeapQueue<u32>>(n, STEPS))
        });
        g.bench_with_input(BenchmarkId::new("radix", pending), &pending, |b, &n| {
            b.iter(|| hold::<RadixQueue<u32>>(n, STEPS))
        });
        g.bench_with_input(BenchmarkId::new("calendar", pending), &pending, |b, &n| {
            b.iter(|| hold::<CalendarQueue<u32>>(n, STEPS))
        });
    }
    g.finish();
}

fn backoff_draws(c: &mut Criterion) {
    let ms = |v: u64| Duration(v * 1_000_000);
    let (base, cap) = (ms(10), Some(ms(1000)));
    let kinds = [
        ("none", BackoffSpec::None {}),
        ("constant", BackoffSpec::Constant { base }),
        ("linear", BackoffSpec::Linear { base, cap }),
        ("exponential", BackoffSpec::Exponential { base, cap, multiplier: 2.0, immediate_first: false }),
        ("full-jitter", BackoffSpec::FullJitter { base, cap, multiplier: 2.0 }),
        ("equal-jitter", BackoffSpec::EqualJitter { base, cap, multiplier: 2.0 }),
        ("decorrelated-jitter", BackoffSpec::DecorrelatedJitter { base, cap }),
        ("decorrelated-jitter-v2", BackoffSpec::DecorrelatedJitterV2 { base, cap }),
        (
            "additive-jitter",
            BackoffSpec::AdditiveJitter { base, cap, multiplier: 2.0, jitter: ms(5), immediate_first: false },
        ),
        ("proportional-jitter", BackoffSpec::ProportionalJitter { base, cap, multiplier: 2.0, p: 0.2 }),
    ];
    let mut g = c.benchmark_group("backoff_delay");
    const DRAWS: u64 = 1000;
    g.throughput(Throughput::Elements(DRAWS));
    for (name, spec) in kinds {
        let b = retrysim::assembly::client::backoff(&spec);
        g.bench_function(name, |bench| {
            let mut rng = rand_xoshiro::SplitMix64::seed_from_u64(3);
            bench.iter(|| {
                let mut st = b.initial_state();
                let mut sum = 0u64;
                for i in 0..DRAWS {
                    sum = sum.wrapping_add(b.delay((i % 6 + 1) as u32, &mut st, &mut rng).as_ns());
                }
                black_box(sum)
            })
        });
    }
    g.finish();
}

/// One run of the experiment's first point and strategy; throughput = its events.
fn one_run<C: QueueChoice>(c: &mut Criterion, group: &str, id: &str, exp: &Experiment, samples: usize) {
    let point = &exp.points[0];
    let seed = run_seed(exp.seed, 0);
    let events = simulate_with::<C>(&point.spec, &point.strategies[0], seed).events;
    let mut g = c.benchmark_group(group);
    g.sample_size(samples).throughput(Throughput::Elements(events));
    g.bench_function(id, |b| b.iter(|| simulate_with::<C>(&point.spec, &point.strategies[0], seed)));
    g.finish();
}

fn herds(c: &mut Criterion) {
    let herd = load("herd-10k.toml", &[]);
    one_run::<Calendar>(c, "herd_10k", "calendar", &herd, 50);
    one_run::<Radix>(c, "herd_10k", "radix", &herd, 50);
    one_run::<Heap>(c, "herd_10k", "heap", &herd, 50);
    let million = load("herd-1m.toml", &[]);
    one_run::<Calendar>(c, "herd_1m", "calendar", &million, 10);
    one_run::<Heap>(c, "herd_1m", "heap", &million, 10);
}

/// The call graph's speed target (issue 25: at least 3 M events/s per thread): 5 services of
/// 10 replicas each at 10,000 user requests/s, every hop retrying (`benches/graph-5x10.toml`).
fn graph_5x10(c: &mut Criterion) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/graph-5x10.toml");
    let exp = experiment::load(&file, &Overrides::default()).expect("the bench's experiment is valid");
    one_run::<Calendar>(c, "graph_5x10", "calendar", &exp, 20);
}

/// The engine alone on the 10k herd's event-queue traffic (run 0's calls, recorded once and
/// replayed without the model, `trace/mod.rs`): on one calendar queue reused across runs
/// (`Scheduler::reset`, how a worker thread can run its replications), on a new calendar
/// queue each run (how runs are made today), and on a new binary heap each run.
fn herd_engine(c: &mut Criterion) {
    let herd = load("herd-10k.toml", &[]);
    let (calls, events) = trace::record(&herd);
    let mut g = c.benchmark_group("herd_10k_engine");
    g.sample_size(50).throughput(Throughput::Elements(events));
    let mut reused = Scheduler::default();
    g.bench_function("calendar_reused", |b| b.iter(|| trace::replay_calendar(&calls, &mut reused)));
    g.bench_function("calendar_new", |b| {
        b.iter(|| trace::replay_calendar(&calls, &mut Scheduler::default()))
    });
    g.bench_function("heap_new", |b| b.iter(|| trace::replay_heap(&calls, &mut Scheduler::default())));
    g.finish();
}

fn occ_study(c: &mut Criterion) {
    let exp = load("aws-2015-jitter.toml", &[("workload.clients", "100")]);
    let point = &exp.points[0];
    let seed = run_seed(exp.seed, 0);
    let events: u64 =
        point.strategies.iter().map(|s| simulate_with::<Calendar>(&point.spec, s, seed).events).sum();
    let mut g = c.benchmark_group("occ_100_clients");
    g.throughput(Throughput::Elements(events));
    g.bench_function("five_strategies_one_run_each", |b| {
        b.iter(|| {
            point
                .strategies
                .iter()
                .map(|s| simulate_with::<Calendar>(&point.spec, s, seed).events)
                .sum::<u64>()
        })
    });
    g.finish();
}

/// Runs every cell of `exp` on `threads` of the sweep's worker threads, as `retrysim run`
/// does, keeping nothing; returns the events processed.
fn sweep_events(exp: &Experiment, threads: usize) -> u64 {
    struct Discard;
    impl retrysim::sweep::Sink for Discard {
        type Error = std::convert::Infallible;
        fn run(&mut self, _: Cell, _: u32, _: u64, _: &RunMetrics) -> Result<(), Self::Error> {
            Ok(())
        }
        fn cell_done(&mut self, _: Cell) -> Result<(), Self::Error> {
            Ok(())
        }
    }
    let mut events = 0;
    let never = std::sync::atomic::AtomicBool::new(false);
    let cells = retrysim::sweep::cells(exp, None);
    let outcome =
        retrysim::sweep::execute(exp, &cells, threads, &mut Discard, &mut |_, ev| events = ev, &never);
    assert!(outcome.is_ok(), "the stop flag is never raised");
    events
}

/// The AWS study with fewer runs per point (19 client counts x 5 strategies x 4 runs), on 1
/// and 2 threads: the speed-up of a sweep of many cells.
fn sweep_threads(c: &mut Criterion) {
    let exp = load("aws-2015-jitter.toml", &[]);
    let exp = Experiment { runs: 4, ..exp };
    let events = retrysim::sweep::run(&exp, &|_| {}).events();
    let mut g = c.benchmark_group("sweep_aws_4_runs");
    g.sample_size(10).throughput(Throughput::Elements(events));
    for threads in [1usize, 2] {
        g.bench_with_input(BenchmarkId::new("threads", threads), &threads, |b, &threads| {
            b.iter(|| sweep_events(&exp, threads))
        });
    }
    g.finish();
}

/// The whole AWS study as shipped (19 client counts x 5 strategies x 100 runs) on 2 threads.
fn sweep_aws(c: &mut Criterion) {
    let exp = load("aws-2015-jitter.toml", &[]);
    let events = retrysim::sweep::run(&exp, &|_| {}).events();
    let mut g = c.benchmark_group("sweep_aws");
    g.sample_size(10).throughput(Throughput::Elements(events));
    g.bench_function("threads_2", |b| b.iter(|| sweep_events(&exp, 2)));
    g.finish();
}

criterion_group!(
    benches,
    event_queues,
    backoff_draws,
    herds,
    graph_5x10,
    herd_engine,
    occ_study,
    sweep_threads,
    sweep_aws
);
criterion_main!(benches);
