//! Conservation laws of the simulator, checked on random small experiments.
//!
//! Each case is an experiment file written from random choices (workload, server, network,
//! faults, client settings, several strategies), loaded through `load_str` so it goes through
//! the same parsing and validation as a user's file. Every run must then satisfy accounting
//! identities that hold whatever the dice say (every operation ends exactly once, attempts
//! are bounded by `max_attempts`, ...), and running it on an event queue that checks the
//! engine's ordering contract must give exactly the same metrics as the default queue.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use retrysim::assembly::{simulate, simulate_with};
use retrysim::engine::rng::run_seed;
use retrysim::engine::{EventQueue, HeapQueue, Nanos};
use retrysim::experiment::{Overrides, load_str};
use retrysim::metrics::{FailReason, RunMetrics};
use retrysim::model::{QueueChoice, occ_model, queue_model};
use std::cell::Cell;
use std::collections::BTreeSet;

// ---------------------------------------------------------------------------------------------
// A checking event queue.
// ---------------------------------------------------------------------------------------------

thread_local! {
    /// Events popped by `CheckedQueue`s on this thread (to check the `events` metric).
    static POPS: Cell<u64> = const { Cell::new(0) };
}

/// A `HeapQueue` that checks the engine's contract on every operation: nothing is scheduled
/// before the last event handled, sequence numbers increase with scheduling order, and every
/// pop returns the smallest pending `(time, seq)` (checked against an independent ordered
/// set, not against the heap itself), within the horizon.
struct CheckedQueue<E> {
    inner: HeapQueue<(u64, E)>,
    pending: BTreeSet<(Nanos, u64)>,
    last_pop: Option<(Nanos, u64)>,
    last_seq: Option<u64>,
}

impl<E> Default for CheckedQueue<E> {
    fn default() -> Self {
        CheckedQueue { inner: HeapQueue::default(), pending: BTreeSet::new(), last_pop: None, last_seq: None }
    }
}

impl<E> EventQueue<E> for CheckedQueue<E> {
    fn push(&mut self, time: Nanos, seq: u64, event: E) {
        if let Some((now, _)) = self.last_pop {
            assert!(time >= now, "event scheduled at {time}, before the current time {now}");
        }
        if let Some(last) = self.last_seq {
            assert!(seq > last, "sequence numbers must increase with scheduling order: {seq} after {last}");
        }
        self.last_seq = Some(seq);
        assert!(self.pending.insert((time, seq)), "duplicate key ({time}, {seq})");
        self.inner.push(time, seq, (seq, event));
    }

    fn pop_if_at_most(&mut self, horizon: Nanos) -> Option<(Nanos, E)> {
        let expected = self.pending.first().copied();
        match self.inner.pop_if_at_most(horizon) {
            None => {
                if let Some((t, seq)) = expected {
                    assert!(t > horizon, "({t}, {seq}) is due by the horizon {horizon} but was not popped");
                }
                None
            }
            Some((t, (seq, event))) => {
                assert_eq!(Some((t, seq)), expected, "popped out of (time, seq) order");
                assert!(t <= horizon, "popped ({t}, {seq}) after the horizon {horizon}");
                if let Some(last) = self.last_pop {
                    assert!((t, seq) > last, "time ran backwards: ({t}, {seq}) after {last:?}");
                }
                self.pending.pop_first();
                self.last_pop = Some((t, seq));
                POPS.with(|p| p.set(p.get() + 1));
                Some((t, event))
            }
        }
    }

    fn len(&self) -> usize {
        assert_eq!(self.inner.len(), self.pending.len());
        self.pending.len()
    }
}

struct Checked;
impl QueueChoice for Checked {
    type Occ = CheckedQueue<occ_model::Ev>;
    type Queue = CheckedQueue<queue_model::Ev>;
}

// ---------------------------------------------------------------------------------------------
// Random experiments.
// ---------------------------------------------------------------------------------------------

/// A duration distribution; times in microseconds.
#[derive(Clone, Debug)]
enum Dist {
    Constant(u32),
    Uniform(u32, u32),
    Normal(u32, u32),
    Exponential(u32),
    Lognormal(u32, f64),
}

impl Dist {
    fn toml(&self) -> String {
        match *self {
            Dist::Constant(v) => format!(r#"{{ dist = "constant", value = "{v}us" }}"#),
            Dist::Uniform(lo, hi) => format!(r#"{{ dist = "uniform", low = "{lo}us", high = "{hi}us" }}"#),
            Dist::Normal(m, sd) => format!(r#"{{ dist = "normal", mean = "{m}us", sd = "{sd}us" }}"#),
            Dist::Exponential(m) => format!(r#"{{ dist = "exponential", mean = "{m}us" }}"#),
            Dist::Lognormal(m, s) => format!(r#"{{ dist = "lognormal", median = "{m}us", sigma = {s:?} }}"#),
        }
    }

    fn always_zero(&self) -> bool {
        matches!(*self, Dist::Constant(0) | Dist::Uniform(_, 0) | Dist::Normal(0, 0) | Dist::Exponential(0))
    }
}

/// Non-negative durations up to `max_us`, every family, zero included.
fn dist(max_us: u32) -> impl Strategy<Value = Dist> {
    prop_oneof![
        2 => Just(Dist::Constant(0)),
        1 => (1..=max_us).prop_map(Dist::Constant),
        1 => (0..=max_us, 0..=max_us).prop_map(|(a, b)| Dist::Uniform(a.min(b), a.max(b))),
        1 => (0..=max_us, 0..=max_us / 2).prop_map(|(m, sd)| Dist::Normal(m, sd)),
        1 => (1..=max_us).prop_map(Dist::Exponential),
        1 => (1..=max_us, 0.0..1.5f64).prop_map(|(m, s)| Dist::Lognormal(m, s)),
    ]
}

#[derive(Clone, Debug)]
enum Workload {
    Closed { clients: u32, ops_per_client: u32, think_ms: u32, ramp_ms: u32 },
    Open { rate: f64, duration_ms: u32, spike: Option<(u32, f64)>, clients: u32 },
}

fn closed() -> impl Strategy<Value = Workload> {
    (1..=40u32, 1..=4u32, prop_oneof![Just(0u32), 1..=200u32], prop_oneof![Just(0u32), 1..=3000u32]).prop_map(
        |(clients, ops_per_client, think_ms, ramp_ms)| Workload::Closed {
            clients,
            ops_per_client,
            think_ms,
            ramp_ms,
        },
    )
}

fn open() -> impl Strategy<Value = Workload> {
    (1.0..200.0f64, 100..=10_000u32, proptest::option::of((1..=2000u32, 0.0..300.0f64)), 1..=20u32)
        .prop_map(|(rate, duration_ms, spike, clients)| Workload::Open { rate, duration_ms, spike, clients })
}

#[derive(Clone, Debug)]
enum OutageStatus {
    Status(u16),
    Timeout,
    ConnectionError,
}

#[derive(Clone, Debug)]
enum Fault {
    Outage { start_ms: u32, duration_ms: u32, status: OutageStatus },
    Capacity { start_ms: u32, duration_ms: u32, factor: f64 },
    Slowdown { start_ms: u32, duration_ms: u32, factor: f64 },
    Errors { start_ms: u32, duration_ms: u32, probability: f64, status: u16, after_effect: bool },
}

impl Fault {
    fn toml_lines(&self) -> Vec<String> {
        let window = |kind: &str, start_ms: u32, duration_ms: u32| {
            vec![
                format!("kind = \"{kind}\""),
                format!("start = \"{start_ms}ms\""),
                format!("duration = \"{duration_ms}ms\""),
            ]
        };
        match *self {
            Fault::Outage { start_ms, duration_ms, ref status } => {
                let mut l = window("outage", start_ms, duration_ms);
                l.push(match status {
                    OutageStatus::Status(s) => format!("status = {s}"),
                    OutageStatus::Timeout => "status = \"timeout\"".to_owned(),
                    OutageStatus::ConnectionError => "status = \"connection-error\"".to_owned(),
                });
                l
            }
            Fault::Capacity { start_ms, duration_ms, factor } => {
                let mut l = window("capacity", start_ms, duration_ms);
                l.push(format!("factor = {factor:?}"));
                l
            }
            Fault::Slowdown { start_ms, duration_ms, factor } => {
                let mut l = window("slowdown", start_ms, duration_ms);
                l.push(format!("factor = {factor:?}"));
                l
            }
            Fault::Errors { start_ms, duration_ms, probability, status, after_effect } => {
                let mut l = window("errors", start_ms, duration_ms);
                l.push(format!("probability = {probability:?}"));
                l.push(format!("status = {status}"));
                l.push(format!("after_effect = {after_effect}"));
                l
            }
        }
    }
}

fn fault() -> impl Strategy<Value = Fault> {
    let window = (0..3000u32, 1..=2000u32);
    let status = prop_oneof![
        Just(OutageStatus::Status(503)),
        Just(OutageStatus::Status(500)),
        Just(OutageStatus::Status(429)),
        Just(OutageStatus::Timeout),
        Just(OutageStatus::ConnectionError),
    ];
    prop_oneof![
        (window.clone(), status).prop_map(|((start_ms, duration_ms), status)| Fault::Outage {
            start_ms,
            duration_ms,
            status
        }),
        (window.clone(), prop_oneof![Just(0.0), 0.0..=1.0f64]).prop_map(
            |((start_ms, duration_ms), factor)| { Fault::Capacity { start_ms, duration_ms, factor } }
        ),
        (window.clone(), 0.2..5.0f64).prop_map(|((start_ms, duration_ms), factor)| Fault::Slowdown {
            start_ms,
            duration_ms,
            factor
        }),
        (window, 0.0..=1.0f64, prop_oneof![Just(503u16), Just(500), Just(502), Just(429)], any::<bool>())
            .prop_map(|((start_ms, duration_ms), probability, status, after_effect)| Fault::Errors {
                start_ms,
                duration_ms,
                probability,
                status,
                after_effect
            }),
    ]
}

#[derive(Clone, Debug)]
struct QueueServer {
    concurrency: u32,
    service: Dist,
    /// `None` = unbounded.
    queue: Option<u32>,
    reject_status: u16,
    drop_expired: bool,
    /// `(status, probability, after_effect)`; probabilities add up to at most 0.3.
    errors: Vec<(u16, f64, bool)>,
    faults: Vec<Fault>,
    stages: Stages,
}

/// The optional admission stages of a queue server.
#[derive(Clone, Debug)]
struct Stages {
    /// `(rate, burst, exact Retry-After)`.
    rate_limit: Option<(f64, f64, bool)>,
    /// `(ttl in ms, on_in_progress = "wait")`.
    idempotency: Option<(u32, bool)>,
    /// With `"conflict"`: `(lock_ttl in ms, release = "delete", fencing)`.
    lock: Option<(u32, bool, bool)>,
    /// `(alpha, knee as a fraction of concurrency)`.
    overload: Option<(f64, f64)>,
    /// A discipline other than FIFO, `(index into DISCIPLINES, target in us, interval in ms)`.
    discipline: Option<(usize, u32, u32)>,
    reject_dont_retry: bool,
}

const DISCIPLINES: [&str; 4] = ["lifo", "codel", "codel-rpc", "adaptive-lifo"];

fn stages() -> impl Strategy<Value = Stages> {
    (
        proptest::option::of((1.0..500.0f64, 1.0..20.0f64, any::<bool>())),
        proptest::option::of((prop_oneof![1..=2000u32, Just(100_000_000u32)], any::<bool>())),
        proptest::option::of((0.0..0.5f64, 0.0..=1.0f64)),
        any::<bool>(),
        proptest::option::of((1..=200u32, any::<bool>(), any::<bool>())),
        proptest::option::of((0..DISCIPLINES.len(), 10..=20_000u32, 1..=200u32)),
    )
        .prop_map(|(rate_limit, idempotency, overload, reject_dont_retry, lock, discipline)| Stages {
            rate_limit,
            // Locks that expire are modelled with "conflict" only.
            lock: lock.filter(|_| idempotency.is_some_and(|(_, wait)| !wait)),
            idempotency,
            overload,
            discipline,
            reject_dont_retry,
        })
}

fn queue_server() -> impl Strategy<Value = QueueServer> {
    (
        1..=8u32,
        dist(50_000),
        prop_oneof![Just(None), Just(Some(0u32)), (1..=30u32).prop_map(Some)],
        prop_oneof![Just(429u16), Just(503)],
        any::<bool>(),
        proptest::collection::vec(
            (prop_oneof![Just(503u16), Just(500), Just(429)], 0.0..=0.15f64, any::<bool>()),
            0..=2,
        ),
        proptest::collection::vec(fault(), 0..=3),
        prop_oneof![1 => Just(None), 1 => stages().prop_map(Some)],
    )
        .prop_map(
            |(concurrency, service, queue, reject_status, drop_expired, errors, faults, stages)| {
                let stages = stages.unwrap_or(Stages {
                    rate_limit: None,
                    idempotency: None,
                    lock: None,
                    overload: None,
                    discipline: Default::default(),
                    reject_dont_retry: false,
                });
                QueueServer {
                    concurrency,
                    service,
                    queue,
                    reject_status,
                    drop_expired,
                    errors,
                    faults,
                    stages,
                }
            },
        )
}

#[derive(Clone, Debug)]
enum Backoff {
    None,
    Constant { base_us: u32 },
    Linear { base_us: u32, cap: Option<u32> },
    Exponential { base_us: u32, cap: Option<u32>, multiplier: f64 },
    FullJitter { base_us: u32, cap: Option<u32>, multiplier: f64 },
    EqualJitter { base_us: u32, cap: Option<u32>, multiplier: f64 },
    Decorrelated { base_us: u32, cap: Option<u32> },
    DecorrelatedV2 { base_us: u32, cap: Option<u32> },
    Additive { base_us: u32, cap: Option<u32>, multiplier: f64, jitter_us: u32 },
    Proportional { base_us: u32, cap: Option<u32>, multiplier: f64, p: f64 },
}

impl Backoff {
    /// The TOML inline table; `cap` is a factor >= 1 of `base`.
    fn toml(&self) -> String {
        let base = |kind: &str, base_us: u32| format!(r#"kind = "{kind}", base = "{base_us}us""#);
        let cap = |base_us: u32, cap: Option<u32>| {
            cap.map_or(String::new(), |f| format!(r#", cap = "{}us""#, base_us * f))
        };
        let fields = match *self {
            Backoff::None => r#"kind = "none""#.to_owned(),
            Backoff::Constant { base_us } => base("constant", base_us),
            Backoff::Linear { base_us, cap: c } => base("linear", base_us) + &cap(base_us, c),
            Backoff::Exponential { base_us, cap: c, multiplier } => {
                base("exponential", base_us) + &cap(base_us, c) + &format!(", multiplier = {multiplier:?}")
            }
            Backoff::FullJitter { base_us, cap: c, multiplier } => {
                base("full-jitter", base_us) + &cap(base_us, c) + &format!(", multiplier = {multiplier:?}")
            }
            Backoff::EqualJitter { base_us, cap: c, multiplier } => {
                base("equal-jitter", base_us) + &cap(base_us, c) + &format!(", multiplier = {multiplier:?}")
            }
            Backoff::Decorrelated { base_us, cap: c } => {
                base("decorrelated-jitter", base_us) + &cap(base_us, c)
            }
            Backoff::DecorrelatedV2 { base_us, cap: c } => {
                base("decorrelated-jitter-v2", base_us) + &cap(base_us, c)
            }
            Backoff::Additive { base_us, cap: c, multiplier, jitter_us } => {
                base("additive-jitter", base_us)
                    + &cap(base_us, c)
                    + &format!(r#", multiplier = {multiplier:?}, jitter = "{jitter_us}us""#)
            }
            Backoff::Proportional { base_us, cap: c, multiplier, p } => {
                base("proportional-jitter", base_us)
                    + &cap(base_us, c)
                    + &format!(", multiplier = {multiplier:?}, p = {p:?}")
            }
        };
        format!("{{ {fields} }}")
    }

    /// Whether retries can follow each other with (almost) no delay: with unlimited attempts
    /// such a strategy could make a run very long, so unlimited attempts use slower ones.
    fn fast(&self) -> bool {
        match *self {
            Backoff::None => true,
            Backoff::Constant { base_us } | Backoff::Linear { base_us, .. } => base_us < 10_000,
            Backoff::Exponential { base_us, multiplier, .. }
            | Backoff::FullJitter { base_us, multiplier, .. }
            | Backoff::EqualJitter { base_us, multiplier, .. }
            | Backoff::Additive { base_us, multiplier, .. }
            | Backoff::Proportional { base_us, multiplier, .. } => base_us < 1_000 || multiplier < 1.5,
            Backoff::Decorrelated { base_us, .. } => base_us < 10_000,
            Backoff::DecorrelatedV2 { base_us, .. } => base_us < 1_000,
        }
    }
}

fn backoff() -> impl Strategy<Value = Backoff> {
    let base = prop_oneof![1 => Just(0u32), 6 => 1..=50_000u32];
    let cap = proptest::option::of(1..=20u32);
    let mult = prop_oneof![Just(2.0f64), 1.0..4.0f64];
    prop_oneof![
        Just(Backoff::None),
        base.clone().prop_map(|base_us| Backoff::Constant { base_us }),
        (base.clone(), cap.clone()).prop_map(|(base_us, cap)| Backoff::Linear { base_us, cap }),
        (base.clone(), cap.clone(), mult.clone())
            .prop_map(|(base_us, cap, multiplier)| Backoff::Exponential { base_us, cap, multiplier }),
        (base.clone(), cap.clone(), mult.clone())
            .prop_map(|(base_us, cap, multiplier)| Backoff::FullJitter { base_us, cap, multiplier }),
        (base.clone(), cap.clone(), mult.clone())
            .prop_map(|(base_us, cap, multiplier)| Backoff::EqualJitter { base_us, cap, multiplier }),
        (base.clone(), cap.clone()).prop_map(|(base_us, cap)| Backoff::Decorrelated { base_us, cap }),
        (base.clone(), cap.clone()).prop_map(|(base_us, cap)| Backoff::DecorrelatedV2 { base_us, cap }),
        (base.clone(), cap.clone(), mult.clone(), 0..=20_000u32).prop_map(
            |(base_us, cap, multiplier, jitter_us)| {
                Backoff::Additive { base_us, cap, multiplier, jitter_us }
            }
        ),
        (base, cap, mult, 0.0..=1.0f64).prop_map(|(base_us, cap, multiplier, p)| Backoff::Proportional {
            base_us,
            cap,
            multiplier,
            p
        }),
    ]
}

#[derive(Clone, Debug)]
struct StrategyCase {
    backoff: Backoff,
    /// Overrides `[client] max_attempts` when set.
    max_attempts: Option<u32>,
    /// `idempotency`: "none", "per-op" or "per-attempt".
    keys: &'static str,
    honor_dont_retry: bool,
    /// A connection pool (queue server without network loss only, validated).
    pool: Option<Pool>,
    /// `dead_letter.after` (kept at most the strategy's `max_attempts`) and the re-drive: after
    /// so many ms, with a new key or not (queue server only).
    dead_letter: Option<(u32, Option<(u32, bool)>)>,
    /// A bulkhead (queue server only, validated).
    bulkhead: Option<Bulkhead>,
}

#[derive(Clone, Debug)]
struct Pool {
    size: u32,
    max_wait_ms: Option<u32>,
    close_on_timeout: bool,
    connect_us: u32,
    shared: bool,
}

impl Pool {
    fn toml(&self) -> String {
        let max_wait = self.max_wait_ms.map_or(String::new(), |w| format!(", max_wait = \"{w}ms\""));
        let scope = if self.shared { "shared" } else { "client" };
        format!(
            "{{ size = {}, close_on_timeout = {}, connect_time = \"{}us\", scope = \"{scope}\"{max_wait} }}",
            self.size, self.close_on_timeout, self.connect_us
        )
    }
}

#[derive(Clone, Debug)]
struct Bulkhead {
    max_in_flight: u32,
    max_wait_ms: u32,
    shared: bool,
}

impl Bulkhead {
    fn toml(&self) -> String {
        let scope = if self.shared { "shared" } else { "client" };
        format!(
            "{{ max_in_flight = {}, max_wait = \"{}ms\", scope = \"{scope}\" }}",
            self.max_in_flight, self.max_wait_ms
        )
    }
}

/// Small bulkheads, so that they bind; a wait of 0 (fail at once) as often as not.
fn bulkhead() -> impl Strategy<Value = Bulkhead> {
    (1..=6u32, prop_oneof![Just(0u32), 1..=500u32], any::<bool>())
        .prop_map(|(max_in_flight, max_wait_ms, shared)| Bulkhead { max_in_flight, max_wait_ms, shared })
}

fn pool() -> impl Strategy<Value = Pool> {
    (
        1..=6u32,
        proptest::option::of(1..=300u32),
        any::<bool>(),
        prop_oneof![Just(0u32), 1..=20_000u32],
        any::<bool>(),
    )
        .prop_map(|(size, max_wait_ms, close_on_timeout, connect_us, shared)| Pool {
            size,
            max_wait_ms,
            close_on_timeout,
            connect_us,
            shared,
        })
}

#[derive(Clone, Debug)]
struct Case {
    seed: u64,
    horizon_ms: u32,
    workload: Workload,
    latency: Dist,
    request_loss: f64,
    response_loss: f64,
    /// `None` = the OCC server.
    server: Option<QueueServer>,
    timeout_ms: Option<u32>,
    deadline_ms: Option<u32>,
    max_attempts: Option<u32>,
    retry_on: Option<&'static str>,
    strategies: Vec<StrategyCase>,
}

impl Case {
    fn max_attempts(&self, s: &StrategyCase) -> Option<u32> {
        s.max_attempts.or(self.max_attempts)
    }

    /// Keeps runs cheap when attempts are unlimited: slow enough retries and a short horizon.
    /// (It also avoids a zero delay with zero latency, which validation refuses.)
    fn bounded(mut self) -> Case {
        let mut unlimited = false;
        for i in 0..self.strategies.len() {
            if self.max_attempts(&self.strategies[i]).is_none() {
                unlimited = true;
                if self.strategies[i].backoff.fast() {
                    self.strategies[i].backoff =
                        Backoff::FullJitter { base_us: 10_000, cap: None, multiplier: 2.0 };
                }
            }
        }
        if unlimited {
            self.horizon_ms = self.horizon_ms.min(20_000);
        }
        // Lost requests or answers need a timeout or a deadline to be noticed (validated):
        // give such a case a deadline, which also keeps its clients from waiting forever.
        let silent_outage = self.server.as_ref().is_some_and(|q| {
            q.faults.iter().any(|f| matches!(f, Fault::Outage { status: OutageStatus::Timeout, .. }))
        });
        let lossy = self.request_loss > 0.0 || self.response_loss > 0.0;
        if (lossy || silent_outage) && self.timeout_ms.is_none() && self.deadline_ms.is_none() {
            self.deadline_ms = Some(1_000);
        }
        self
    }

    fn horizon_ns(&self) -> Nanos {
        self.horizon_ms as Nanos * 1_000_000
    }

    fn has_faults(&self) -> bool {
        self.server.as_ref().is_some_and(|q| !q.faults.is_empty())
    }

    fn toml(&self) -> String {
        let mut lines = vec![
            "name = \"prop\"".to_owned(),
            format!("seed = {}", self.seed),
            "runs = 2".to_owned(),
            format!("horizon = \"{}ms\"", self.horizon_ms),
            "[workload]".to_owned(),
        ];
        match &self.workload {
            Workload::Closed { clients, ops_per_client, think_ms, ramp_ms } => lines.extend([
                "kind = \"closed\"".to_owned(),
                format!("clients = {clients}"),
                format!("ops_per_client = {ops_per_client}"),
                format!("think_time = \"{think_ms}ms\""),
                format!("ramp = \"{ramp_ms}ms\""),
            ]),
            Workload::Open { rate, duration_ms, spike, clients } => {
                lines.extend([
                    "kind = \"open\"".to_owned(),
                    format!("rate = {rate:?}"),
                    format!("duration = \"{duration_ms}ms\""),
                    format!("clients = {clients}"),
                ]);
                if let Some((at, r)) = spike {
                    // A spike of 300 ms, then back to the base rate.
                    let spike = format!("{{ at = \"{at}ms\", rate = {r:?} }}");
                    let back = format!("{{ at = \"{}ms\", rate = {rate:?} }}", at + 300);
                    lines.push(format!("schedule = [{spike}, {back}]"));
                }
            }
        }
        lines.extend([
            "[network]".to_owned(),
            format!("latency = {}", self.latency.toml()),
            format!("request_loss = {:?}", self.request_loss),
            format!("response_loss = {:?}", self.response_loss),
            "[server]".to_owned(),
        ]);
        match &self.server {
            None => lines.push("kind = \"occ\"".to_owned()),
            Some(q) => {
                lines.extend([
                    "kind = \"queue\"".to_owned(),
                    format!("concurrency = {}", q.concurrency),
                    format!("service_time = {}", q.service.toml()),
                    format!("reject_status = {}", q.reject_status),
                    format!("drop_expired = {}", q.drop_expired),
                ]);
                if let Some(n) = q.queue {
                    lines.push(format!("queue = {n}"));
                }
                let errors: Vec<String> = q
                    .errors
                    .iter()
                    .map(|(s, p, a)| format!("{{ status = {s}, probability = {p:?}, after_effect = {a} }}"))
                    .collect();
                lines.push(format!("errors = [{}]", errors.join(", ")));
                let st = &q.stages;
                lines.push(format!("reject_dont_retry = {}", st.reject_dont_retry));
                if let Some((rate, burst, exact)) = st.rate_limit {
                    let format = if exact { "exact" } else { "seconds" };
                    lines.push(format!(
                        "rate_limit = {{ rate = {rate:?}, burst = {burst:?}, retry_after = \"{format}\" }}"
                    ));
                }
                if let Some((ttl_ms, wait)) = st.idempotency {
                    let mode = if wait { "wait" } else { "conflict" };
                    let lock = st.lock.map_or(String::new(), |(lock_ms, delete, fencing)| {
                        let release = if delete { "delete" } else { "compare-and-delete" };
                        format!(", lock_ttl = \"{lock_ms}ms\", release = \"{release}\", fencing = {fencing}")
                    });
                    lines.push(format!(
                        "idempotency = {{ ttl = \"{ttl_ms}ms\", on_in_progress = \"{mode}\"{lock} }}"
                    ));
                }
                if let Some((alpha, knee)) = st.overload {
                    let knee = (knee * q.concurrency as f64) as u32;
                    lines.push(format!("overload = {{ alpha = {alpha:?}, knee = {knee} }}"));
                }
                if let Some((kind, target_us, interval_ms)) = st.discipline {
                    lines.push(format!("discipline = \"{}\"", DISCIPLINES[kind]));
                    lines.push(format!(
                        "codel = {{ target = \"{target_us}us\", interval = \"{interval_ms}ms\" }}"
                    ));
                }
                for f in &q.faults {
                    lines.push("[[server.faults]]".to_owned());
                    lines.extend(f.toml_lines());
                }
            }
        }
        lines.push("[client]".to_owned());
        lines.extend(self.timeout_ms.map(|t| format!("timeout = \"{t}ms\"")));
        lines.extend(self.deadline_ms.map(|d| format!("deadline = \"{d}ms\"")));
        lines.extend(self.max_attempts.map(|m| format!("max_attempts = {m}")));
        lines.extend(self.retry_on.map(|r| format!("retry_on = {r}")));
        for (i, s) in self.strategies.iter().enumerate() {
            lines.extend([
                "[[strategies]]".to_owned(),
                format!("name = \"s{i}\""),
                format!("backoff = {}", s.backoff.toml()),
            ]);
            lines.extend(s.max_attempts.map(|m| format!("max_attempts = {m}")));
            lines.push(format!("idempotency = \"{}\"", s.keys));
            lines.push(format!("honor_dont_retry = {}", s.honor_dont_retry));
            lines.extend(s.pool.as_ref().map(|p| format!("pool = {}", p.toml())));
            if let Some((after, redrive)) = s.dead_letter.filter(|_| self.server.is_some()) {
                let after = self.max_attempts(s).map_or(after, |max| after.min(max));
                lines.push(format!("dead_letter = {{ after = {after} }}"));
                if let Some((after_ms, new_key)) = redrive {
                    let key = if new_key { "new" } else { "same" };
                    lines.push(format!("redrive = {{ after = \"{after_ms}ms\", key = \"{key}\" }}"));
                }
            }
            lines.extend(s.bulkhead.as_ref().map(|b| format!("bulkhead = {}", b.toml())));
        }
        lines.join("\n") + "\n"
    }
}

fn case() -> impl Strategy<Value = Case> {
    let occ = (closed(), dist(5_000)).prop_map(|(w, latency)| (w, latency, 0.0, 0.0, None));
    let queue = (
        prop_oneof![closed(), open()],
        dist(5_000),
        prop_oneof![2 => Just(0.0f64), 1 => 0.0..0.3f64],
        prop_oneof![2 => Just(0.0f64), 1 => 0.0..0.3f64],
        queue_server(),
    )
        .prop_map(|(w, latency, rl, sl, q)| (w, latency, rl, sl, Some(q)));
    let timeout = proptest::option::of(5..=500u32);
    let deadline = proptest::option::of(20..=3000u32);
    let retry_on = proptest::option::of(prop_oneof![
        Just(r#"[503, "timeout"]"#),
        Just(r#"[429, 500, 502, 503, "timeout", "connection-error"]"#),
    ]);
    (
        // A TOML integer is an i64.
        0..=i64::MAX as u64,
        prop_oneof![1 => 1..=300u32, 2 => 300..=20_000u32, 2 => Just(600_000u32)],
        prop_oneof![1 => occ, 3 => queue],
        timeout,
        deadline,
        proptest::option::of(1..=6u32),
        retry_on,
        proptest::collection::vec(
            (
                backoff(),
                proptest::option::of(1..=6u32),
                prop_oneof![Just("none"), Just("per-op"), Just("per-attempt")],
                any::<bool>(),
                prop_oneof![2 => Just(None), 1 => pool().prop_map(Some)],
                proptest::option::of((1..=6u32, proptest::option::of((0..=2_000u32, any::<bool>())))),
                prop_oneof![2 => Just(None), 1 => bulkhead().prop_map(Some)],
            ),
            1..=3,
        ),
    )
        .prop_map(
            |(seed, horizon_ms, server_side, timeout_ms, deadline_ms, max_attempts, retry_on, strategies)| {
                let (workload, latency, request_loss, response_loss, server) = server_side;
                let occ = server.is_none();
                let lossy = request_loss > 0.0 || response_loss > 0.0;
                Case {
                    seed,
                    horizon_ms,
                    workload,
                    latency,
                    request_loss,
                    response_loss,
                    server,
                    // The OCC resource has neither attempt timeouts nor deadlines (validated).
                    timeout_ms: timeout_ms.filter(|_| !occ),
                    deadline_ms: deadline_ms.filter(|_| !occ),
                    max_attempts,
                    retry_on,
                    strategies: strategies
                        .into_iter()
                        .map(
                            |(backoff, max_attempts, keys, honor_dont_retry, pool, dead_letter, bulkhead)| {
                                StrategyCase {
                                    backoff,
                                    max_attempts,
                                    keys,
                                    honor_dont_retry,
                                    // A pool needs the queue server and a lossless network (validated).
                                    pool: pool.filter(|_| !occ && !lossy),
                                    dead_letter: dead_letter.filter(|_| !occ),
                                    // A bulkhead needs the queue server and no dead-letter queue
                                    // (validated).
                                    bulkhead: bulkhead.filter(|_| !occ && dead_letter.is_none()),
                                }
                            },
                        )
                        .collect(),
                }
                .bounded()
            },
        )
}

// ---------------------------------------------------------------------------------------------
// The properties.
// ---------------------------------------------------------------------------------------------

fn check_run(c: &Case, s: &StrategyCase, m: &RunMetrics) -> Result<(), TestCaseError> {
    let failed_by = |r: FailReason| m.failed_by[r as usize];
    let occ = c.server.is_none();

    // Every operation ends exactly once: success, one failure reason (unfinished included),
    // or dead-lettered; a re-drive changes none of these counts.
    prop_assert_eq!(
        m.succeeded + m.failed + m.dead_lettered,
        m.ops,
        "succeeded + failed + dead_lettered != ops"
    );
    let dead_letter = s.dead_letter.filter(|_| !occ);
    let redrive = dead_letter.and_then(|(_, r)| r);
    if dead_letter.is_none() {
        prop_assert_eq!((m.dead_lettered, m.dead_lettered_but_applied), (0, 0), "no dead-letter queue");
    } else {
        prop_assert_eq!(failed_by(FailReason::Exhausted), 0, "used-up tries are dead-lettered, not failed");
    }
    if redrive.is_none() {
        prop_assert_eq!(m.redriven, 0, "no re-drive");
    }
    prop_assert!(m.redrive_succeeded <= m.redriven && m.redriven <= m.dead_lettered, "{m:?}");
    prop_assert_eq!(m.failed, m.failed_by.iter().sum::<u64>(), "failed != sum of failed_by");
    if m.ops > 0 {
        prop_assert_eq!(m.amplification(), m.calls as f64 / m.ops as f64);
        prop_assert_eq!(m.success_rate(), m.succeeded as f64 / m.ops as f64);
    }

    // Attempts: each one reaches the server at most once; every started operation sends its
    // first attempt at once (queue), unless its bulkhead refuses it (failed_bulkhead) or it
    // still waits for a permit at the horizon (unfinished). An
    // OCC attempt's call is its write, two hops after the operation starts, so only operations
    // that ended are sure to have made one.
    let refused = failed_by(FailReason::Bulkhead);
    let unfinished = failed_by(FailReason::Unfinished);
    let never_sent = refused + if s.bulkhead.is_some() { unfinished } else { 0 };
    prop_assert!(m.server_calls <= m.calls, "server_calls {} > calls {}", m.server_calls, m.calls);
    if occ {
        prop_assert!(m.calls >= m.ops - unfinished, "calls {} < ended ops", m.calls);
    } else {
        prop_assert!(m.calls + never_sent >= m.ops, "calls {} < ops {}", m.calls, m.ops);
    }
    if s.bulkhead.is_none() {
        prop_assert_eq!(refused, 0, "failed_bulkhead without a bulkhead");
    }
    // A re-drive is a new pass of the retry loop.
    let passes = m.ops + m.redriven;
    let tries = c.max_attempts(s).map(|max| dead_letter.map_or(max, |(after, _)| after.min(max)));
    if let Some(max) = tries {
        prop_assert!(m.calls <= max as u64 * passes, "calls {} > {max} x passes {}", m.calls, passes);
        if max == 1 && !occ && s.bulkhead.is_none() {
            prop_assert_eq!(m.calls, passes, "max_attempts = 1 means no retries");
        }
        if max == 1 && s.bulkhead.is_some() {
            // One attempt per operation that got a permit; the others failed or still wait.
            prop_assert!(m.calls + refused <= m.ops && m.calls + never_sent >= m.ops);
        }
    } else if dead_letter.is_none() {
        prop_assert_eq!(failed_by(FailReason::Exhausted), 0, "unlimited attempts are never exhausted");
    }
    if c.deadline_ms.is_none() {
        prop_assert_eq!(failed_by(FailReason::Deadline), 0, "no deadline, yet deadline failures");
    }
    // Nothing configures budgets, breakers or throttling.
    prop_assert_eq!(
        failed_by(FailReason::Budget) + failed_by(FailReason::Breaker) + failed_by(FailReason::Throttled),
        0
    );

    // Instant network without request loss: every attempt reaches the server at once, or,
    // with a pool, once it has a connection: those still waiting (or opening one) at the
    // horizon are the current attempts of unfinished operations.
    if !occ && c.latency.always_zero() && c.request_loss == 0.0 {
        if s.pool.is_none() {
            prop_assert_eq!(m.server_calls, m.calls, "instant, lossless requests all reach the server");
        } else {
            let out = m.calls - m.server_calls - m.pool_timeouts;
            prop_assert!(
                out <= failed_by(FailReason::Unfinished),
                "{out} calls neither arrived nor timed out"
            );
        }
    }
    // A pool timeout is a call that never reached the server; without a pool there are none,
    // and without anything that gives up (timeout, deadline, max_wait) no wait ends.
    prop_assert!(m.server_calls + m.pool_timeouts <= m.calls);
    match &s.pool {
        None => prop_assert_eq!(m.pool_timeouts, 0),
        Some(p) if p.max_wait_ms.is_none() && c.timeout_ms.is_none() && c.deadline_ms.is_none() => {
            prop_assert_eq!(m.pool_timeouts, 0)
        }
        Some(_) => {}
    }

    // Ambiguous outcomes: every operation whose effect happened succeeded (a success comes
    // from an execution of it, or from the store that recorded one) or is counted as failed
    // but applied; nothing is applied without a server that executes (the OCC row has no side
    // effect of its own in these counts).
    if occ {
        prop_assert_eq!((m.applied, m.failed_but_applied), (0, 0));
    } else {
        prop_assert_eq!(
            m.applied,
            m.succeeded + m.failed_but_applied + m.dead_lettered_but_applied,
            "applied != succeeded + failed_but_applied + dead_lettered_but_applied"
        );
        prop_assert!(m.failed_but_applied <= m.failed);
        prop_assert!(m.dead_lettered_but_applied <= m.dead_lettered);
    }
    // The dedup store: per-op keys kept longer than the run never execute an operation twice,
    // unless a lock expires under work and no fencing stops the late holder; without a store
    // or without keys nothing is stored. Fencing refuses only work whose lock expired.
    let store = c.server.as_ref().and_then(|q| q.stages.idempotency);
    let lock = c.server.as_ref().and_then(|q| q.stages.lock);
    // (A re-drive with a new key executes again by design.)
    let kept_all_run = store.is_some_and(|(ttl_ms, _)| ttl_ms >= c.horizon_ms)
        && s.keys == "per-op"
        && !redrive.is_some_and(|(_, new_key)| new_key);
    if kept_all_run && (lock.is_none_or(|(_, _, fencing)| fencing) || m.lock_expired == 0) {
        prop_assert_eq!(m.duplicates, 0, "per-op keys kept for the whole run, yet duplicates");
    }
    if lock.is_none() || s.keys == "none" {
        prop_assert_eq!((m.lock_expired, m.fenced), (0, 0), "no lock_ttl or no keys: no lock expires");
    }
    if !lock.is_some_and(|(_, _, fencing)| fencing) {
        prop_assert_eq!(m.fenced, 0, "fenced without fencing");
    } else {
        // A holder is fenced when a later grant exists while it works: the first such grant
        // took a lock that expired under a holder's work.
        prop_assert!(m.fenced == 0 || m.lock_expired > 0, "fenced {} without an expired lock", m.fenced);
    }
    if store.is_none() || s.keys == "none" {
        prop_assert_eq!(m.idempotency_keys_peak, 0);
    } else if m.server_calls > 0 && m.applied > 0 {
        prop_assert!(m.idempotency_keys_peak > 0, "keys executed but none stored");
    }

    // Side effects: a duplicate is an execution, so it needs a request served.
    prop_assert!(
        m.duplicates <= m.server_calls,
        "duplicates {} > server_calls {}",
        m.duplicates,
        m.server_calls
    );
    let waits_forever = c.timeout_ms.is_none() && c.deadline_ms.is_none();
    let after_effects = c.server.as_ref().is_some_and(|q| {
        q.errors.iter().any(|e| e.2)
            || q.faults.iter().any(|f| matches!(f, Fault::Errors { after_effect: true, .. }))
    });
    if occ || (waits_forever && c.response_loss == 0.0 && !after_effects) {
        // A served request is answered with success to a client still waiting for it, so an
        // operation is never executed twice.
        prop_assert_eq!(m.duplicates, 0, "duplicates without lost answers, timeouts or after-effect errors");
    }
    prop_assert!(m.wasted_work_s >= 0.0);
    if waits_forever {
        prop_assert_eq!(m.wasted_work_s, 0.0, "wasted work while every client waits for its answer");
    }

    // Time.
    let horizon_s = c.horizon_ns() as f64 / 1e9;
    prop_assert!(
        m.completion_time_s >= 0.0 && m.completion_time_s <= horizon_s,
        "completion {}",
        m.completion_time_s
    );
    if failed_by(FailReason::Unfinished) > 0 {
        prop_assert_eq!(m.completion_time_s, horizon_s, "unfinished operations end at the horizon");
    }
    let ended = m.ops - failed_by(FailReason::Unfinished);
    if ended > 0 {
        prop_assert!(m.latency_p50_s <= m.latency_p99_s && m.latency_p99_s <= m.latency_max_s);
        // The histogram keeps 3 significant digits.
        prop_assert!(
            m.latency_max_s <= m.completion_time_s * 1.001 + 1e-9,
            "max latency {} > makespan",
            m.latency_max_s
        );
    } else {
        prop_assert_eq!((m.latency_p50_s, m.latency_p99_s, m.latency_max_s), (0.0, 0.0, 0.0));
    }
    prop_assert!(m.peak_offered_rps <= m.calls);
    let seconds = c.horizon_ns() / 1_000_000_000 + 1;
    prop_assert!(
        m.peak_offered_rps * seconds >= m.calls,
        "peak {} too low for {} calls",
        m.peak_offered_rps,
        m.calls
    );
    // Every operation is started by an event of its own.
    prop_assert!(m.events >= m.ops);

    // Recovery.
    // Recovered (a time) exactly when measurable and not metastable.
    prop_assert_eq!(m.metastable == Some(false), m.recovery_time_s.is_some());
    if c.has_faults() {
        prop_assert!(m.recovery_time_s.is_none_or(|r| r >= 0.0));
    } else {
        prop_assert_eq!(m.recovery_time_s, Some(0.0), "no faults: recovery 0");
        prop_assert_eq!(m.metastable, Some(false), "no faults: not metastable");
    }

    // Workload: a closed workload has clients x ops_per_client operations. When nothing is
    // pending, every client has started, and the last operation ended early enough for any
    // next one to have started, every client did all its operations.
    if let Workload::Closed { clients, ops_per_client, think_ms, ramp_ms } = c.workload {
        let total = clients as u64 * ops_per_client as u64;
        prop_assert!(m.ops <= total);
        if ramp_ms <= c.horizon_ms {
            // Every client starts within the ramp.
            prop_assert!(m.ops >= clients as u64, "{} ops for {clients} clients", m.ops);
        }
        let think_s = think_ms as f64 / 1e3;
        if failed_by(FailReason::Unfinished) == 0
            && ramp_ms <= c.horizon_ms
            && m.completion_time_s + think_s + 1e-6 < horizon_s
        {
            prop_assert_eq!(m.ops, total, "a closed workload that finished in time did all its ops");
        }
    }

    // A healthy queue server: no losses, faults, errors, rejections or timeouts. Every
    // operation that ends succeeds at its first attempt.
    let healthy = c.server.as_ref().is_some_and(|q| {
        q.faults.is_empty() && q.errors.is_empty() && q.queue.is_none() && q.stages.rate_limit.is_none()
    });
    let pool_gives_up = s.pool.as_ref().is_some_and(|p| p.max_wait_ms.is_some());
    if healthy && waits_forever && !pool_gives_up && c.request_loss == 0.0 && c.response_loss == 0.0 {
        prop_assert_eq!(
            m.failed,
            failed_by(FailReason::Unfinished) + refused,
            "a healthy server fails nothing (a full bulkhead may)"
        );
        if s.bulkhead.is_none() {
            prop_assert_eq!(m.calls, m.ops, "a healthy server needs no retries");
        } else {
            // One attempt per operation that got its permit (some may wait at the horizon).
            prop_assert!(m.calls + refused <= m.ops && m.calls + refused + unfinished >= m.ops);
        }
        prop_assert_eq!(m.duplicates, 0);
    }
    Ok(())
}

/// Loads the case's file and checks every run of every strategy, on the default queue and on
/// the checking queue.
fn check_case(c: &Case) -> Result<(), TestCaseError> {
    let text = c.toml();
    let exp = load_str(&text, "proptest", &Overrides::default())
        .map_err(|e| TestCaseError::fail(format!("a valid experiment was refused: {e}\n{text}")))?;
    prop_assert_eq!(exp.points.len(), 1);
    let point = &exp.points[0];
    prop_assert_eq!(point.strategies.len(), c.strategies.len());
    for run in 0..exp.runs as u64 {
        let seed = run_seed(exp.seed, run);
        for (s, strategy) in c.strategies.iter().zip(&point.strategies) {
            let m = simulate(&point.spec, strategy, seed);
            check_run(c, s, &m).map_err(|e| {
                TestCaseError::fail(format!("{e}\nstrategy {}, run {run}: {m:?}\n{text}", strategy.name))
            })?;
            // The checking queue: same results, and it saw every event the run counted.
            POPS.with(|p| p.set(0));
            let checked = simulate_with::<Checked>(&point.spec, strategy, seed);
            prop_assert_eq!(POPS.with(Cell::get), m.events, "`events` is the number of events popped");
            prop_assert_eq!(&checked, &m, "the event queue changed the results\n{}", text);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        // PROPTEST_CASES=10000 for a longer hunt.
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(256),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_run_conserves_operations_and_respects_time(c in case()) {
        check_case(&c)?;
    }
}
