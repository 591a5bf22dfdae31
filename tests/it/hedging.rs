//! Hedged requests (DESIGN §4.10 `hedge`) on whole runs. Scripted runs (one operation at a
//! fixed instant, constant service times) are checked exactly: gRPC A6's worked example, a
//! non-fatal answer sending the next copy at once, a fatal one cancelling the rest, queued
//! copies removed, duplicates without a key and none with one. A fixed delay against
//! exponential service times with room for every copy is checked against the theory of
//! `min(X1, d + X2)` within the standard error.

use crate::support::{failed, run_one as run};
use retrysim::metrics::FailReason;

/// One operation at 0.5 s (fixed arrivals at 2/s for 0.6 s), served in a constant 2 s by a
/// server with room for every copy: A6's example policy, 4 copies 0.5 s apart.
const A6: &str = r#"
name = "a6"
seed = 1
runs = 1
horizon = "5s"
[workload]
kind = "open"
arrivals = "fixed"
rate = 2.0
duration = "0.6s"
[server]
concurrency = 10
service_time = { dist = "constant", value = "2s" }
[client]
max_attempts = 1
[[strategies]]
name = "a6"
backoff = { kind = "none" }
hedge = { max_attempts = 4, delay = "0.5s" }
"#;

/// A6's worked example: 1, 2, 3, 4 copies outstanding at 0, 0.5, 1.0 and 1.5 s after the
/// call starts (nothing is answered before 2 s, so the copies sent are the copies out).
#[test]
fn grpc_a6_worked_example() {
    for (horizon, out) in [("0.75s", 1), ("1.25s", 2), ("1.75s", 3), ("2.25s", 4)] {
        let m = run(A6, &[&format!("horizon=\"{horizon}\"")]);
        assert_eq!((m.ops, m.calls, m.server_calls, m.succeeded), (1, out, out, 0), "at {horizon}");
        assert_eq!(m.hedges, out - 1);
    }
    // The first copy answers at 2.5 s and wins; the three others are cancelled, but each is in
    // service and finishes (no cancel_in_service): without a key, 4 executions.
    let m = run(A6, &[]);
    assert_eq!((m.succeeded, m.calls, m.hedges, m.hedge_wins, m.cancelled), (1, 4, 3, 0, 3));
    assert_eq!(m.latency_max_s, 2.0);
    assert_eq!(m.duplicates, 3, "every copy executed");
    // A delay of 0 sends every copy at once.
    let m = run(A6, &["horizon=\"0.51s\"", "strategies.a6.hedge.delay=\"0s\""]);
    assert_eq!((m.calls, m.hedges), (4, 3));
}

/// Stopping cancelled copies in service: their work and effect do not happen.
#[test]
fn cancel_in_service_stops_the_losers() {
    let m = run(A6, &["strategies.a6.hedge.cancel_in_service=true"]);
    assert_eq!((m.succeeded, m.calls, m.cancelled, m.duplicates), (1, 4, 3, 0));
}

/// The copy sent at the 503 of the first: the first copy (at 0.5 s) meets an error fault that
/// answers 503 after the work (0.3 s); with 503 non-fatal the second copy goes out at 0.8 s,
/// not at the 0.5 s delay's 1.0 s, and wins at 1.1 s.
const NON_FATAL: &str = r#"
name = "non-fatal"
seed = 1
runs = 1
horizon = "5s"
[workload]
kind = "open"
arrivals = "fixed"
rate = 2.0
duration = "0.6s"
[server]
concurrency = 10
service_time = { dist = "constant", value = "300ms" }
[[server.faults]]
kind = "errors"
start = "0.5s"
duration = "0.1s"
probability = 1.0
status = 503
after_effect = true
[[server.faults]]
kind = "slowdown"
start = "0.85s"
duration = "0.1s"
factor = 10.0
[client]
max_attempts = 1
[[strategies]]
name = "h"
backoff = { kind = "none" }
hedge = { max_attempts = 3, delay = "0.5s", non_fatal = [503] }
"#;

#[test]
fn a_non_fatal_answer_sends_the_next_copy_at_once() {
    let m = run(NON_FATAL, &[]);
    assert_eq!((m.succeeded, m.calls, m.hedges, m.hedge_wins, m.cancelled), (1, 2, 1, 1, 0));
    assert!((m.latency_max_s - 0.6).abs() < 1e-9, "{}", m.latency_max_s);
    // Later copies resume on the delay grid from the non-fatal answer: with a 0.4 s service
    // the first copy fails at 0.9 s and the second goes out then, slowed ten times by the
    // slowdown; the third goes out at 1.4 s (0.9 + 0.5), not at the first grid's 1.5 s, and
    // wins at 1.8 s.
    let slow = "server.service_time.value=\"0.4s\"";
    let at = |h: &str| run(NON_FATAL, &[slow, &format!("horizon=\"{h}\"")]);
    assert_eq!(at("1.35s").calls, 2);
    assert_eq!(at("1.45s").calls, 3, "the third copy at 0.9 + 0.5 s");
    let m = run(NON_FATAL, &[slow]);
    assert_eq!((m.succeeded, m.calls, m.hedges, m.hedge_wins, m.cancelled), (1, 3, 2, 1, 1));
    assert!((m.latency_max_s - 1.3).abs() < 1e-9, "{}", m.latency_max_s);
}

/// Without 503 among the non-fatal codes the 503 is fatal: the call fails at 0.8 s and the
/// second copy (sent at 0.7 s, 0.2 s delay) is cancelled; in service, it finishes and executes
/// unless `cancel_in_service`.
#[test]
fn a_fatal_answer_cancels_every_copy() {
    let fatal = ["strategies.h.hedge.non_fatal=[]", "strategies.h.hedge.delay=\"0.2s\""];
    let m = run(NON_FATAL, &fatal);
    assert_eq!((m.ops, m.succeeded, m.calls, m.cancelled), (1, 0, 2, 1));
    assert_eq!(failed(&m, FailReason::NonRetryable), 1);
    assert_eq!(m.duplicates, 1, "the cancelled copy in service executed too");
    let m = run(NON_FATAL, &[fatal[0], fatal[1], "strategies.h.hedge.cancel_in_service=true"]);
    assert_eq!((m.calls, m.cancelled, m.duplicates, m.failed_but_applied), (2, 1, 0, 1));
}

/// One worker, 1 s of service, 3 copies at once: the first is served, two wait. Operations
/// at 0.5 s and 1.0 s.
const QUEUED: &str = r#"
name = "queued"
seed = 1
runs = 1
horizon = "10s"
[workload]
kind = "open"
arrivals = "fixed"
rate = 2.0
duration = "1.1s"
[server]
concurrency = 1
service_time = { dist = "constant", value = "1s" }
[client]
max_attempts = 1
[[strategies]]
name = "h"
backoff = { kind = "none" }
hedge = { max_attempts = 3, delay = "0s" }
"#;

/// The queued copies of a decided call are removed: the second operation's first copy is
/// served as soon as the first operation's first copy is done (1.5 s), so it ends at 2.5 s
/// (1.5 s after it started) instead of after the two copies left in the queue.
#[test]
fn cancellation_removes_queued_copies() {
    let m = run(QUEUED, &[]);
    assert_eq!((m.ops, m.succeeded, m.calls, m.hedges, m.cancelled), (2, 2, 6, 4, 4));
    assert_eq!((m.latency_min_s, m.latency_max_s), (1.0, 1.5));
    assert_eq!(m.duplicates, 0, "no cancelled copy was served");
}

/// Two copies at once on two workers: both execute. Without a key that is a duplicate per
/// operation; with the operation's key and a dedup store that makes a repeat wait for the
/// first one's answer (`on_in_progress = "wait"`), the second copy gets that answer and
/// nothing executes twice. With the store's default 409 for a repeat in progress, the 409 is
/// a fatal answer (not among `non_fatal`): the call fails while its first copy executes.
#[test]
fn keyless_copies_execute_twice_keyed_ones_once() {
    let both = ["server.concurrency=2", "strategies.h.hedge.max_attempts=2"];
    let m = run(QUEUED, &both);
    assert_eq!((m.ops, m.succeeded, m.calls), (2, 2, 4));
    assert_eq!(m.duplicates, 2);
    let keyed = |on_in_progress: &str| {
        QUEUED.replace(
            "concurrency = 1\n",
            &format!("concurrency = 1\nidempotency = {{ on_in_progress = \"{on_in_progress}\" }}\n"),
        ) + "idempotency = \"per-op\"\n"
    };
    let m = run(&keyed("wait"), &both);
    assert_eq!((m.ops, m.succeeded, m.calls), (2, 2, 4));
    assert_eq!(m.duplicates, 0);
    let m = run(&keyed("conflict"), &both);
    assert_eq!((m.ops, m.succeeded, m.failed_but_applied, m.duplicates), (2, 0, 2, 0));
    assert_eq!(failed(&m, FailReason::NonRetryable), 2);
}

/// Hedging after a fixed delay `d` with room for every copy and exponential service (mean 1 s):
/// the latency is `min(X1, d + X2)`, `P(L > t) = e^-t` before `d` and `e^-(2t - d)` after, so
/// `E[L] = 1 - e^-d / 2`; the extra load is `P(X1 > d) = e^-d` hedges per operation.
#[test]
fn a_fixed_delay_matches_the_minimum_of_the_delayed_draws() {
    let text = r#"
name = "theory"
seed = 11
runs = 1
horizon = "400s"
[workload]
kind = "open"
rate = 100.0
duration = "200s"
[server]
concurrency = 100000
service_time = { dist = "exponential", mean = "1s" }
[client]
max_attempts = 1
[[strategies]]
name = "h"
backoff = { kind = "none" }
hedge = { max_attempts = 2, delay = "1s" }
"#;
    let d: f64 = 1.0;
    let m = run(text, &[]);
    let n = m.ops as f64;
    assert_eq!(m.succeeded, m.ops);
    // E[L] and E[L^2] = ∫ 2t P(L > t) dt, in closed form for the survival above.
    let mean = 1.0 - (-d).exp() / 2.0;
    let second = {
        // ∫_0^d 2t e^-t dt + ∫_d^∞ 2t e^(d - 2t) dt
        let head = 2.0 * (1.0 - (-d).exp() * (1.0 + d));
        let tail = (d).exp() * (-2.0 * d).exp() * (d + 0.5);
        head + tail
    };
    let se = ((second - mean * mean) / n).sqrt();
    assert!((m.latency_mean_s - mean).abs() < 4.0 * se, "mean {} vs {mean} +- {se}", m.latency_mean_s);
    let p = (-d).exp();
    let hedge_se = (p * (1.0 - p) / n).sqrt();
    let per_op = m.hedges as f64 / n;
    assert!((per_op - p).abs() < 4.0 * hedge_se, "hedges per op {per_op} vs {p} +- {hedge_se}");
    assert_eq!(m.server_calls, m.ops + m.hedges, "every hedge reached the server");
    // A hedge wins when its copy ends first: P(d + X2 < X1 | X1 > d) = 1/2.
    let wins = m.hedge_wins as f64 / m.hedges as f64;
    let win_se = (0.25 / m.hedges as f64).sqrt();
    assert!((wins - 0.5).abs() < 4.0 * win_se, "{wins}");
}

/// tower's design: a percentile delay hedges nothing until a complete window holds
/// `min_samples` latencies; a budget bounds the hedges to its ratio (plus its capacity).
#[test]
fn a_percentile_delay_waits_for_samples_and_a_budget_bounds_it() {
    let text = r#"
name = "p95"
seed = 3
runs = 1
horizon = "60s"
[workload]
kind = "open"
rate = 100.0
duration = "50s"
[server]
concurrency = 100000
service_time = { dist = "lognormal", median = "10ms", sigma = 1.0 }
[client]
max_attempts = 1
[[strategies]]
name = "h"
backoff = { kind = "none" }
hedge = { max_attempts = 2, delay = "p95", window = "10s", min_samples = 100 }
"#;
    let first = run(text, &["horizon=\"9.9s\"", "workload.duration=\"9.9s\""]);
    assert!(first.ops > 900);
    assert_eq!(first.hedges, 0, "the first window is not complete");
    let m = run(text, &[]);
    let per_op = m.hedges as f64 / m.ops as f64;
    assert!(per_op > 0.03 && per_op < 0.15, "about 5 % of the calls after the first window: {per_op}");
    let budgeted = run(text, &["strategies.h.hedge.budget={ ratio = 0.01, capacity = 5.0 }"]);
    assert!(budgeted.hedges as f64 <= 0.01 * budgeted.ops as f64 + 5.0, "{}", budgeted.hedges);
    assert!(budgeted.hedges > 0);
}
