//! The server's admission stages on whole runs (DESIGN §3.3, §3.6): the idempotency store
//! (duplicates with and without keys, ttl, "conflict" and "wait", keys released when the work
//! is lost), the rate limiter (burst, steady rate, Retry-After), overload with retries
//! (metastable or not), and the ambiguous-outcome metrics (`applied`, `failed_but_applied`).

use crate::support::failed;
use retrysim::assembly::simulate;
use retrysim::engine::rng::run_seed;
use retrysim::experiment::{self, Experiment, Overrides};
use retrysim::metrics::{FailReason, RunMetrics};
use std::path::Path;

/// Loads `text` with `--set` changes (`runs` is `--runs`).
fn load(text: &str, set: &[(&str, &str)]) -> Experiment {
    let overrides = Overrides {
        set: set.iter().filter(|(k, _)| *k != "runs").map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        runs: set.iter().find(|(k, _)| *k == "runs").map(|(_, v)| v.parse().expect("a run count")),
        ..Default::default()
    };
    experiment::load_str(text, "test.toml", &overrides).unwrap_or_else(|e| panic!("valid experiment: {e}"))
}

/// One run's metrics with its point's swept values (as written) and its strategy's name.
struct Run {
    point: Vec<String>,
    strategy: String,
    run: u64,
    m: RunMetrics,
}

fn runs_of(exp: &Experiment) -> Vec<Run> {
    let mut out = Vec::new();
    for point in &exp.points {
        for strategy in &point.strategies {
            for run in 0..exp.runs as u64 {
                out.push(Run {
                    point: point.values.clone(),
                    strategy: strategy.name.clone(),
                    run,
                    m: simulate(&point.spec, strategy, run_seed(exp.seed, run)),
                });
            }
        }
    }
    out
}

/// The only run of a deterministic scenario, for a strategy at the point whose swept values
/// are `point`.
fn only<'a>(runs: &'a [Run], point: &[&str], strategy: &str) -> &'a RunMetrics {
    let mine: Vec<&Run> = runs.iter().filter(|r| r.point == point && r.strategy == strategy).collect();
    assert_eq!(mine.len(), 1, "{point:?} {strategy}");
    &mine[0].m
}

/// Every operation whose effect happened either succeeded or is counted as failed but applied
/// (a success always comes from an execution, or from the store that recorded one).
fn check_ambiguous_outcomes(m: &RunMetrics) {
    assert_eq!(m.applied, m.succeeded + m.failed_but_applied + m.dead_lettered_but_applied, "{m:?}");
    assert!(m.failed_but_applied <= m.failed);
    assert!(m.applied <= m.ops);
}

/// Lost requests and answers, timeouts that race slow service, after-commit 504s, a bounded
/// queue that rejects and `drop_expired`: every way the client can retry an operation whose
/// effect already happened (or is about to).
const LOSSY: &str = r#"
name = "lossy"
seed = 5
runs = 3
horizon = "30s"
[workload]
kind = "open"
rate = 300.0
duration = "10s"
clients = 5
[network]
latency = { dist = "exponential", mean = "2ms" }
[server]
concurrency = 20
service_time = { dist = "exponential", mean = "50ms" }
queue = 50
errors = [{ status = 504, probability = 0.0, after_effect = true }]
idempotency = { ttl = "1h" }
[client]
timeout = "150ms"
max_attempts = 5
backoff = { kind = "full-jitter", base = "20ms", cap = "500ms" }
[[strategies]]
name = "none"
[[strategies]]
name = "per-op"
idempotency = "per-op"
[[strategies]]
name = "per-attempt"
idempotency = "per-attempt"
[sweep]
"network.request_loss" = [0.0, 0.1]
"network.response_loss" = [0.0, 0.3]
"server.errors[0].probability" = [0.0, 0.3]
"server.idempotency.on_in_progress" = ["conflict", "wait"]
"server.drop_expired" = [false, true]
"#;

#[test]
fn per_op_keys_never_duplicate_under_any_loss_or_after_commit_error() {
    let runs = runs_of(&load(LOSSY, &[]));
    let mut without_keys = 0;
    for r in &runs {
        check_ambiguous_outcomes(&r.m);
        match r.strategy.as_str() {
            "per-op" => {
                assert_eq!(r.m.duplicates, 0, "per-op keys at {:?} run {}: {:?}", r.point, r.run, r.m);
                assert!(r.m.idempotency_keys_peak <= r.m.ops);
                assert!(r.m.idempotency_keys_peak > 0);
            }
            "none" => {
                without_keys += r.m.duplicates;
                assert_eq!(r.m.idempotency_keys_peak, 0, "no key, nothing stored");
            }
            _ => assert!(r.m.idempotency_keys_peak >= r.m.applied, "one key per executed attempt"),
        }
    }
    assert!(without_keys > 1000, "the scenario duplicates without keys ({without_keys})");
}

#[test]
fn per_attempt_keys_duplicate_as_much_as_no_keys() {
    let exp = load(
        LOSSY,
        &[
            ("sweep", "{}"),
            ("runs", "40"),
            ("network.response_loss", "0.2"),
            ("server.errors[0].probability", "0.3"),
            ("server.drop_expired", "true"),
        ],
    );
    let runs = runs_of(&exp);
    let dups = |strategy: &str| -> Vec<f64> {
        runs.iter().filter(|r| r.strategy == strategy).map(|r| r.m.duplicates as f64).collect()
    };
    let (none, per_attempt) = (dups("none"), dups("per-attempt"));
    // With common random numbers a key that never repeats changes nothing, run by run.
    assert_eq!(none, per_attempt);
    // In expectation, on independent runs: the first 20 runs without keys against the last 20
    // with per-attempt keys, within 4 standard errors of the difference.
    let stats = |xs: &[f64]| {
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, var / n)
    };
    let (m1, v1) = stats(&none[..20]);
    let (m2, v2) = stats(&per_attempt[20..]);
    assert!(m1 > 100.0, "the scenario duplicates ({m1})");
    assert!((m1 - m2).abs() <= 4.0 * (v1 + v2).sqrt(), "none {m1} vs per-attempt {m2}");
    // ... while per-op keys remove them all.
    assert!(runs.iter().filter(|r| r.strategy == "per-op").all(|r| r.m.duplicates == 0));
}

/// One operation: its first attempt is executed and answered 503 after the effect (the
/// `errors` fault covers [0, 1 s)); the retry comes 2 s later.
const EXPIRY: &str = r#"
name = "expiry"
horizon = "1m"
[workload]
kind = "closed"
[server]
concurrency = 1
service_time = { dist = "constant", value = "100ms" }
idempotency = { ttl = "1s" }
[[server.faults]]
kind = "errors"
start = "0"
duration = "1s"
probability = 1.0
status = 503
after_effect = true
[client]
max_attempts = 2
idempotency = "per-op"
[[strategies]]
name = "per-op"
backoff = { kind = "constant", base = "2s" }
[sweep]
"server.idempotency.ttl" = ["1s", "10s"]
"#;

#[test]
fn a_key_that_expires_before_the_retry_executes_again() {
    let runs = runs_of(&load(EXPIRY, &[]));
    // Done at 0.1 s: with a 1 s ttl the key is gone at 1.1 s, the retry at 2.1 s executes.
    let short = only(&runs, &["1s"], "per-op");
    assert_eq!((short.succeeded, short.duplicates, short.applied), (1, 1, 1));
    assert_eq!(short.latency_max_s, 2.2);
    // With 10 s the retry gets the stored success at once, without the work.
    let long = only(&runs, &["10s"], "per-op");
    assert_eq!((long.succeeded, long.duplicates, long.applied), (1, 0, 1));
    assert_eq!(long.latency_max_s, 2.1);
    assert_eq!(long.idempotency_keys_peak, 1);
}

/// One operation whose work takes 1 s while the client times out after 200 ms and retries
/// 100 ms later: its retries arrive while the first attempt is in progress.
const IN_PROGRESS: &str = r#"
name = "in-progress"
horizon = "1m"
[workload]
kind = "closed"
[server]
concurrency = 10
service_time = { dist = "constant", value = "1s" }
idempotency = { on_in_progress = "conflict" }
[client]
timeout = "200ms"
max_attempts = 5
backoff = { kind = "constant", base = "100ms" }
[[strategies]]
name = "no-key"
[[strategies]]
name = "per-op"
idempotency = "per-op"
[sweep]
"server.idempotency.on_in_progress" = ["conflict", "wait"]
"#;

#[test]
fn conflict_answers_409_and_wait_never_executes_twice() {
    let runs = runs_of(&load(IN_PROGRESS, &[]));
    // "conflict": attempts 2 to 5 (at 0.3, 0.4, 0.5, 0.6 s) are answered 409 at once and
    // retried; the operation fails with its attempts used up at 0.6 s, and its effect happens
    // at 1 s: a failure the client reports although the work was done.
    let c = only(&runs, &["conflict"], "per-op");
    assert_eq!((c.calls, c.server_calls, c.failed, failed(c, FailReason::Exhausted)), (5, 5, 1, 1));
    assert_eq!((c.duplicates, c.applied, c.failed_but_applied), (0, 1, 1));
    assert_eq!(c.latency_max_s, 0.6);
    // With retry_on without 409, the first 409 ends it: proof that 409 was the answer.
    let strict = runs_of(&load(IN_PROGRESS, &[("client.retry_on", "[\"timeout\"]")]));
    let s = only(&strict, &["conflict"], "per-op");
    assert_eq!((s.calls, failed(s, FailReason::NonRetryable)), (2, 1));
    // "wait": attempts 2, 3 and 4 (at 0.3, 0.6, 0.9 s) are parked; at 1 s the first finishes
    // and the parked ones get its success: attempt 4 is the one the client waits for.
    let w = only(&runs, &["wait"], "per-op");
    assert_eq!((w.calls, w.succeeded, w.duplicates, w.applied, w.failed_but_applied), (4, 1, 0, 1, 0));
    assert_eq!(w.latency_max_s, 1.0);
    // Without a key every attempt executes: 4 duplicates, and still a failure.
    for mode in ["conflict", "wait"] {
        let n = only(&runs, &[mode], "no-key");
        assert_eq!((n.calls, n.duplicates, n.succeeded, n.failed_but_applied), (5, 4, 0, 1));
    }
}

/// Two operations on one worker (1 s of work each) whose clients time out after 300 ms and
/// retry every 100 ms, with "wait": the retries of the second park on its key while its first
/// attempt sits in the queue.
const RELEASE: &str = r#"
name = "release"
horizon = "1m"
[workload]
kind = "closed"
clients = 2
[server]
concurrency = 1
service_time = { dist = "constant", value = "1s" }
idempotency = { on_in_progress = "wait" }
[client]
timeout = "300ms"
max_attempts = 10
idempotency = "per-op"
[[strategies]]
name = "per-op"
backoff = { kind = "constant", base = "100ms" }
[sweep]
"server.drop_expired" = [false, true]
"#;

#[test]
fn a_dropped_request_passes_its_key_to_a_parked_one() {
    let runs = runs_of(&load(RELEASE, &[]));
    for drop in ["false", "true"] {
        let m = only(&runs, &[drop], "per-op");
        // With drop_expired the second operation's first attempt (and its first parked retry,
        // also expired) are dropped at 1 s; the key passes to the next parked retry, which is
        // served: without that release the key would stay in progress with nobody executing it
        // and the operation could never succeed.
        assert_eq!((m.succeeded, m.duplicates, m.applied), (2, 0, 2), "drop_expired = {drop}: {m:?}");
    }
    let dropped = only(&runs, &["true"], "per-op");
    let served = only(&runs, &["false"], "per-op");
    assert!(dropped.wasted_work_s < served.wasted_work_s, "{dropped:?} vs {served:?}");
}

#[test]
fn a_request_the_full_queue_rejects_releases_its_key() {
    // One worker, no queue: the second operation's first attempt is rejected (503) while the
    // first operation is served; its retry 1.5 s later must execute, not get 409.
    let text = RELEASE
        .replace("concurrency = 1", "concurrency = 1\nqueue = 0")
        .replace("on_in_progress = \"wait\"", "on_in_progress = \"conflict\"")
        .replace("timeout = \"300ms\"", "timeout = \"10s\"")
        .replace("base = \"100ms\"", "base = \"1500ms\"");
    let runs = runs_of(&load(&text, &[]));
    for drop in ["false", "true"] {
        let m = only(&runs, &[drop], "per-op");
        assert_eq!((m.succeeded, m.calls, m.duplicates, m.applied), (2, 3, 0, 2), "{m:?}");
        assert_eq!(m.latency_max_s, 2.5);
    }
}

/// One batch whose transaction takes exactly 45 s behind a key whose lock lasts `lock_ttl`.
/// The client times out after 5 s and retries 12 s after each failure: attempts at 0 s
/// (times out at 5 s), 17 s and 29 s (409 at once), 41 s, and 53 s after a 409 at 41 s or
/// 58 s after a timeout at 46 s.
const LOCKS: &str = r#"
name = "locks"
horizon = "10m"
[workload]
kind = "closed"
[server]
concurrency = 10
service_time = { dist = "constant", value = "45s" }
idempotency = { ttl = "24h", lock_ttl = "30s" }
[client]
timeout = "5s"
max_attempts = 5
idempotency = "per-op"
[[strategies]]
name = "per-op"
backoff = { kind = "constant", base = "12s" }
[sweep]
"server.idempotency.lock_ttl" = ["30s", "60s"]
"server.idempotency.release" = ["compare-and-delete", "delete"]
"server.idempotency.fencing" = [false, true]
"#;

#[test]
fn a_lock_shorter_than_the_transaction_executes_again_as_the_schedule_predicts() {
    let runs = runs_of(&load(LOCKS, &[]));
    // Side-effect executions the server ran, refused ones included.
    let executions = |m: &RunMetrics| m.applied + m.duplicates + m.fenced;
    for release in ["compare-and-delete", "delete"] {
        for fencing in ["false", "true"] {
            // A 60 s lock outlives the 45 s transaction: attempts 2 to 4 get 409, the first
            // finishes at 45 s and stores its result, attempt 5 (53 s) gets it.
            let m = only(&runs, &["60s", release, fencing], "per-op");
            assert_eq!(
                (m.succeeded, m.calls, executions(m), m.duplicates),
                (1, 5, 1, 0),
                "{release} {fencing}"
            );
            assert_eq!((m.lock_expired, m.fenced), (0, 0));
            assert_eq!(m.latency_max_s, 53.0);
        }
    }
    // A 30 s lock: attempt 4 (41 s) finds it expired and executes again (41 s to 86 s).
    // Without fencing the first holder stores its result at 45 s, attempt 5 (58 s) gets it,
    // and the second execution at 86 s pays again.
    for (release, expired) in [("compare-and-delete", 2), ("delete", 1)] {
        let m = only(&runs, &["30s", release, "false"], "per-op");
        assert_eq!(
            (m.succeeded, m.calls, executions(m), m.duplicates, m.applied),
            (1, 5, 2, 1, 1),
            "{release}"
        );
        // The first lock, taken over at 41 s; with compare-and-delete the second one too (it
        // expires at 71 s, its work ends at 86 s); "delete" removed it at 45 s.
        assert_eq!((m.lock_expired, m.fenced), (expired, 0), "{release}");
        assert_eq!(m.latency_max_s, 58.0);
    }
    // Fencing: the first holder's late work (grant 1 < 2) is refused at 45 s and stores
    // nothing. compare-and-delete keeps the second holder's lock (until 71 s): attempt 5
    // (58 s) gets 409, the operation fails with its attempts used up, and the second
    // execution pays once.
    let m = only(&runs, &["30s", "compare-and-delete", "true"], "per-op");
    assert_eq!((m.succeeded, m.failed, failed(m, FailReason::Exhausted)), (0, 1, 1));
    assert_eq!((executions(m), m.fenced, m.applied, m.duplicates, m.failed_but_applied), (2, 1, 1, 0, 1));
    assert_eq!((m.lock_expired, m.latency_max_s), (2, 58.0));
    // "delete": the fenced first holder's `finally` deletes the second's lock at 45 s, so a
    // third holder (attempt 5, grant 3) gets in at 58 s; the second is fenced in turn at 86 s
    // and the third applies at 103 s: three executions, one effect.
    let m = only(&runs, &["30s", "delete", "true"], "per-op");
    assert_eq!((m.succeeded, m.failed), (0, 1));
    assert_eq!((executions(m), m.fenced, m.applied, m.duplicates, m.failed_but_applied), (3, 2, 1, 0, 1));
    assert_eq!((m.lock_expired, m.latency_max_s), (1, 63.0));
    for r in &runs {
        check_ambiguous_outcomes(&r.m);
    }
}

#[test]
fn a_lock_longer_than_every_transaction_never_executes_twice() {
    // Many batches with per-op keys, random transaction times up to 20 s, a worker for each
    // client (no wait in the queue, which the lock's TTL would count) and a lock of 30 s;
    // clients time out after 1 s and retry: every retry finds the lock or the result.
    let text = LOCKS
        .replace(
            r#"service_time = { dist = "constant", value = "45s" }"#,
            r#"service_time = { dist = "uniform", low = "1s", high = "20s" }"#,
        )
        .replace("kind = \"closed\"", "kind = \"closed\"\nclients = 50\nops_per_client = 4")
        .replace("concurrency = 10", "concurrency = 50")
        .replace("timeout = \"5s\"", "timeout = \"1s\"")
        .replace("max_attempts = 5", "max_attempts = 30")
        .replace("base = \"12s\"", "base = \"700ms\"");
    let runs = runs_of(&load(
        &text,
        &[("sweep", "{}"), ("runs", "5"), ("server.idempotency.release", "\"delete\"")],
    ));
    let mut retries = 0;
    for r in &runs {
        assert_eq!((r.m.duplicates, r.m.lock_expired, r.m.fenced), (0, 0, 0), "run {}", r.run);
        assert_eq!(r.m.applied, r.m.ops);
        retries += r.m.calls - r.m.ops;
    }
    assert!(retries > 1000, "the retries meet the lock ({retries})");
}

const RATE_LIMITED: &str = r#"
name = "rate-limited"
horizon = "1m"
[workload]
kind = "closed"
clients = 50
[server]
concurrency = 100
service_time = { dist = "constant", value = "10ms" }
rate_limit = { rate = 1.0, burst = 10.0 }
[client]
max_attempts = 1
[[strategies]]
name = "once"
backoff = { kind = "none" }
"#;

#[test]
fn the_rate_limiter_bursts_up_to_burst() {
    let runs = runs_of(&load(RATE_LIMITED, &[]));
    let m = only(&runs, &[], "once");
    // 50 requests at once: the full bucket lets 10 through, the rest get 429 (retryable, but
    // one attempt only).
    assert_eq!((m.server_calls, m.succeeded, failed(m, FailReason::Exhausted)), (50, 10, 40));
    assert_eq!(m.applied, 10, "no work for a rejected request");
    let m = &runs_of(&load(RATE_LIMITED, &[("server.rate_limit.burst", "25")]))[0].m;
    assert_eq!(m.succeeded, 25);
}

#[test]
fn the_rate_limiters_retry_after_is_whole_seconds_or_exact() {
    // 0.4 tokens/s, one in the bucket: the second of two requests at t=0 is told to come back
    // when the next token is there, 2.5 s later: "3" in whole seconds, 2.5 s exact.
    let set = [
        ("workload.clients", "2"),
        ("server.rate_limit", "{ rate = 0.4, burst = 1.0 }"),
        ("client.max_attempts", "2"),
        ("client.honor_retry_after", "true"),
        ("sweep", "{ \"server.rate_limit.retry_after\" = [\"seconds\", \"exact\"] }"),
    ];
    let runs = runs_of(&load(RATE_LIMITED, &set));
    let seconds = only(&runs, &["seconds"], "once");
    let exact = only(&runs, &["exact"], "once");
    assert_eq!((seconds.succeeded, exact.succeeded), (2, 2));
    assert_eq!(seconds.latency_max_s, 3.01);
    assert_eq!(exact.latency_max_s, 2.51, "the token is there exactly when the client comes back");
}

#[test]
fn the_rate_limiter_lets_rate_through_in_steady_state() {
    // Poisson arrivals at 400/s for 30 s against 100 tokens/s and a burst of 20: about
    // 100 x 30 + 20 get through (the bucket is almost never idle and full).
    let text = r#"
name = "steady"
seed = 9
runs = 12
horizon = "40s"
[workload]
kind = "open"
rate = 400.0
duration = "30s"
[server]
concurrency = 100
service_time = { dist = "exponential", mean = "10ms" }
rate_limit = { rate = 100.0, burst = 20.0, retry_after = "exact" }
[client]
max_attempts = 1
[[strategies]]
name = "once"
backoff = { kind = "none" }
"#;
    let runs = runs_of(&load(text, &[]));
    let through: Vec<f64> = runs.iter().map(|r| r.m.succeeded as f64).collect();
    let n = through.len() as f64;
    let mean = through.iter().sum::<f64>() / n;
    let se = (through.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0) / n).sqrt();
    let expected = 100.0 * 30.0 + 20.0;
    assert!((mean - expected).abs() <= 4.0 * se + 2.0, "mean {mean} (se {se}) vs {expected}");
    // Below the rate, nothing is limited.
    let slow = runs_of(&load(text, &[("workload.rate", "50.0"), ("runs", "2")]));
    assert!(slow.iter().all(|r| r.m.succeeded == r.m.ops));
}

/// experiments/metastable.toml with a 10 s cut: immediate resends (and full jitter) keep the
/// server down as long as load arrives, with or without `drop_expired`; the same trigger
/// without retries recovers, sooner when expired requests are dropped; full jitter with a
/// fleet-wide ratio budget recovers when expired requests are dropped, and a fast breaker
/// recovers either way.
#[test]
fn immediate_resends_through_a_capacity_cut_are_metastable_without_retries_it_recovers() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/metastable.toml");
    let overrides = Overrides {
        set: vec![
            ("sweep".into(), "{ \"server.drop_expired\" = [false, true] }".into()),
            ("server.faults[0].duration".into(), "10s".into()),
        ],
        runs: Some(3),
        ..Default::default()
    };
    let exp = experiment::load(&file, &overrides).expect("the shipped experiment is valid");
    let runs = runs_of(&exp);
    for drop in ["false", "true"] {
        for r in runs.iter().filter(|r| r.point == [drop]) {
            match r.strategy.as_str() {
                "immediate" | "full-jitter" => {
                    assert_eq!(r.m.metastable, Some(true), "{} drop_expired={drop}: {:?}", r.strategy, r.m);
                    assert!(r.m.success_rate() < 0.4);
                }
                "no-retries" => {
                    let t = r.m.recovery_time_s.expect("without retries it recovers");
                    let bound = if drop == "true" { 15.0 } else { 40.0 };
                    assert!(t <= bound, "no-retries drop_expired={drop}: recovered after {t} s");
                }
                // A fleet-wide ratio budget recovers once expired requests are dropped; with
                // an unbounded FIFO queue its 20 % of extra load still exceeds what the
                // collapsed server serves, and the backlog of abandoned work never drains.
                "jitter+ratio-shared" if drop == "true" => {
                    assert_eq!(r.m.metastable, Some(false), "{:?}", r.m);
                    let t = r.m.recovery_time_s.expect("a shared ratio budget recovers");
                    assert!(t <= 20.0, "jitter+ratio-shared: recovered after {t} s");
                }
                "jitter+ratio-shared" => assert_eq!(r.m.metastable, Some(true), "{:?}", r.m),
                // A fast breaker stops sending during the cut and recovers either way.
                "jitter+breaker-fast" => {
                    assert_eq!(r.m.metastable, Some(false), "drop_expired={drop}: {:?}", r.m);
                    assert!(r.m.recovery_time_s.is_some_and(|t| t <= 25.0), "{:?}", r.m.recovery_time_s);
                }
                "jitter+ratio" | "jitter+token-bucket" => {}
                other => panic!("unexpected strategy {other}"),
            }
        }
    }
    // A 2 s cut leaves a backlog shorter than the timeout: every strategy recovers.
    let short = Overrides {
        set: vec![("sweep".into(), "{}".into()), ("server.faults[0].duration".into(), "2s".into())],
        runs: Some(2),
        ..Default::default()
    };
    let exp = experiment::load(&file, &short).expect("valid");
    for r in runs_of(&exp) {
        assert_eq!(r.m.metastable, Some(false), "{} after a 2 s cut: {:?}", r.strategy, r.m);
    }
}

#[test]
fn reject_dont_retry_stops_clients_that_honour_it() {
    let text = r#"
name = "dont-retry"
horizon = "1m"
[workload]
kind = "closed"
clients = 5
[server]
concurrency = 1
service_time = { dist = "constant", value = "1s" }
queue = 0
reject_dont_retry = true
[client]
max_attempts = 4
[[strategies]]
name = "honours"
honor_dont_retry = true
backoff = { kind = "constant", base = "100ms" }
[[strategies]]
name = "ignores"
backoff = { kind = "constant", base = "100ms" }
"#;
    let runs = runs_of(&load(text, &[]));
    let h = only(&runs, &[], "honours");
    // One served, four rejected with "don't retry": no retry at all.
    assert_eq!((h.calls, h.succeeded, h.failed), (5, 1, 4));
    let i = only(&runs, &[], "ignores");
    assert_eq!(i.calls, 1 + 4 * 4, "the others retry their 503s 3 times");
    let plain = runs_of(&load(text, &[("server.reject_dont_retry", "false")]));
    assert_eq!(only(&plain, &[], "honours").calls, 17, "without the flag a 503 is retried");
}
