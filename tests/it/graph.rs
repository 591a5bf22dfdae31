//! The call graph (DESIGN §3.7, `[[services]]`) on whole runs: attempts multiply down a
//! chain, a fan-out's tail decides the user's latency, cancellation and deadline propagation
//! cut the work nobody waits for. Deterministic scenarios are checked exactly; the fan-out
//! against 1 - 0.99^100 within four standard errors.

use crate::support::{load_text, run_one, run_strategy};
use retrysim::metrics::RunMetrics;

/// A 3-deep chain a -> b -> c whose bottom answers 503 to everything; the client and both
/// edges make 4 attempts without backoff.
pub const DEAD_CHAIN: &str = r#"
name = "chain"
seed = 3
horizon = "60s"
[workload]
kind = "closed"
clients = 10
ops_per_client = 10
[[services]]
name = "a"
concurrency = 100
service_time = { dist = "constant", value = "1ms" }
calls = [{ service = "b", max_attempts = 4 }]
[[services]]
name = "b"
concurrency = 100
service_time = { dist = "constant", value = "1ms" }
calls = [{ service = "c", max_attempts = 4 }]
[[services]]
name = "c"
concurrency = 100
service_time = { dist = "constant", value = "1ms" }
errors = [{ status = 503, probability = 1.0 }]
[[strategies]]
name = "every-layer"
max_attempts = 4
backoff = { kind = "none" }
[[strategies]]
name = "top-only"
max_attempts = 4
backoff = { kind = "none" }
hop_policy = { max_attempts = 1 }
"#;

/// Calls into service `s` per operation.
fn per_op(m: &RunMetrics, s: usize) -> f64 {
    m.graph.services[s].calls as f64 / m.ops as f64
}

#[test]
fn every_layer_retrying_multiplies_attempts_down_a_chain() {
    let every = run_strategy(DEAD_CHAIN, &[], 0);
    assert_eq!(every.ops, 100);
    assert_eq!(every.succeeded, 0);
    assert_eq!([per_op(&every, 0), per_op(&every, 1), per_op(&every, 2)], [4.0, 16.0, 64.0], "4 x 4 x 4");
    assert_eq!(every.graph.edges[1].calls, 6400, "b -> c carries the bottom's calls");
    assert_eq!(every.server_calls, 400, "the entry service is the server the clients call");
    let top = run_strategy(DEAD_CHAIN, &[], 1);
    assert_eq!(
        [per_op(&top, 0), per_op(&top, 1), per_op(&top, 2)],
        [4.0, 4.0, 4.0],
        "only the client retries"
    );
    assert_eq!(top.graph.edges[0].ended, 400);
    assert_eq!(top.graph.edges[0].succeeded, 0);
}

/// A front that fans out to 100 backends; a backend answers in 1 ms, or 100 ms with
/// probability 1 %. The client waits 50 ms: an operation succeeds only if none of its 100
/// calls is slow.
const FAN_OUT: &str = r#"
name = "fanout"
seed = 11
horizon = "200s"
[workload]
kind = "open"
rate = 100.0
duration = "100s"
clients = 100
[[services]]
name = "front"
concurrency = 1000
service_time = { dist = "constant", value = "0ms" }
calls = [{ service = "backend", count = 100 }]
[[services]]
name = "backend"
concurrency = 10000
service_time = { dist = "discrete", points = [{ value = "1ms", weight = 0.99 }, { value = "100ms", weight = 0.01 }] }
[[strategies]]
name = "fan-out"
max_attempts = 1
timeout = "50ms"
backoff = { kind = "none" }
"#;

#[test]
fn a_fan_out_to_100_is_slow_when_any_backend_is() {
    let m = run_one(FAN_OUT, &[]);
    let p = 0.99_f64.powi(100);
    let n = m.ops as f64;
    let se = (p * (1.0 - p) / n).sqrt();
    let fast = m.succeeded as f64 / n;
    assert!(m.ops > 9_500, "{}", m.ops);
    assert!((fast - p).abs() < 4.0 * se, "fast share {fast}, expected {p} +- {}", 4.0 * se);
    assert_eq!(m.graph.services[1].calls, 100 * m.ops, "100 calls per operation");
}

#[test]
fn an_optional_edge_answers_without_its_slow_calls() {
    let text = FAN_OUT.replace(
        "calls = [{ service = \"backend\", count = 100 }]",
        "calls = [{ service = \"backend\", count = 100, optional = true, timeout = \"20ms\" }]",
    );
    let m = run_one(&text, &[]);
    assert_eq!(m.succeeded, m.ops, "every operation answers, with partial results");
    let edge = &m.graph.edges[0];
    let ok = edge.succeeded as f64 / edge.ended as f64;
    let se = (0.99 * 0.01 / edge.ended as f64).sqrt();
    assert!((ok - 0.99).abs() < 4.0 * se, "{ok}");
}

/// One client, ten operations one after another; a -> b -> c, the bottom takes 100 ms and
/// the client gives up after 10 ms (no retries), then starts its next operation.
const SLOW_BOTTOM: &str = r#"
name = "slow-bottom"
horizon = "10s"
[workload]
kind = "closed"
clients = 1
ops_per_client = 10
[[services]]
name = "a"
concurrency = 20
service_time = { dist = "constant", value = "1ms" }
calls = [{ service = "b" }]
[[services]]
name = "b"
concurrency = 20
service_time = { dist = "constant", value = "1ms" }
calls = [{ service = "c" }]
[[services]]
name = "c"
concurrency = 20
service_time = { dist = "constant", value = "100ms" }
[[strategies]]
name = "no-cancellation"
max_attempts = 1
timeout = "10ms"
backoff = { kind = "none" }
[[strategies]]
name = "cancel-queued"
max_attempts = 1
timeout = "10ms"
backoff = { kind = "none" }
propagate_cancellation = true
[[strategies]]
name = "cancel-in-service"
max_attempts = 1
timeout = "10ms"
backoff = { kind = "none" }
propagate_cancellation = true
cancel_in_service = true
"#;

fn wasted_s(m: &RunMetrics, s: usize) -> f64 {
    m.graph.services[s].wasted_ns as f64 / 1e9
}

#[test]
fn cancellation_propagation_stops_the_work_nobody_waits_for() {
    // c works from 2 ms to 102 ms of each operation; everyone gave up at 10 ms: 92 ms wasted
    // at each service per operation (a and b hold their workers while they wait).
    let none = run_strategy(SLOW_BOTTOM, &[], 0);
    assert_eq!((none.ops, none.succeeded), (10, 0));
    for s in 0..3 {
        assert!((wasted_s(&none, s) - 0.92).abs() < 1e-9, "service {s}: {}", wasted_s(&none, s));
    }
    assert!((none.wasted_work_s - 0.92).abs() < 1e-9, "the entry service's is the run's");
    // Cancelled at 10 ms: a and b let go at once; c's work in service runs on unless it is
    // stopped too.
    let queued = run_strategy(SLOW_BOTTOM, &[], 1);
    assert_eq!((wasted_s(&queued, 0), wasted_s(&queued, 1)), (0.0, 0.0));
    assert!((wasted_s(&queued, 2) - 0.92).abs() < 1e-9, "{}", wasted_s(&queued, 2));
    let stopped = run_strategy(SLOW_BOTTOM, &[], 2);
    assert_eq!([wasted_s(&stopped, 0), wasted_s(&stopped, 1), wasted_s(&stopped, 2)], [0.0; 3]);
    assert_eq!(stopped.graph.services[2].calls, 10);
}

#[test]
fn cancellation_removes_queued_requests() {
    // c has one worker: the ten requests queue behind each other; each client gave up at
    // 10 ms. Without cancellation c serves all of them (all but the first wasted, in full
    // or in part); with it, only the first starts, and is stopped at 10 ms.
    let text = SLOW_BOTTOM.replace(
        "concurrency = 20\nservice_time = { dist = \"constant\", value = \"100ms\" }",
        "concurrency = 1\nservice_time = { dist = \"constant\", value = \"100ms\" }",
    );
    let none = run_strategy(&text, &[], 0);
    // Request k (0-based) arrives at 10k + 2 ms, starts at max(2 + 100k, ...) = 2 + 100k ms and
    // was abandoned at 10k + 10 ms: all of its 100 ms are wasted but the first's 92.
    let expected = 0.092 + 9.0 * 0.1;
    assert!((wasted_s(&none, 2) - expected).abs() < 1e-9, "{}", wasted_s(&none, 2));
    let stopped = run_strategy(&text, &[], 2);
    assert_eq!(wasted_s(&stopped, 2), 0.0);
}

/// Five operations at once; a (1 ms) calls b, which has one worker and takes 20 ms; the
/// clients wait 30 ms, no retries.
const QUEUED_BOTTOM: &str = r#"
name = "deadline"
horizon = "10s"
[workload]
kind = "closed"
clients = 5
ops_per_client = 1
[[services]]
name = "a"
concurrency = 10
service_time = { dist = "constant", value = "1ms" }
calls = [{ service = "b" }]
[[services]]
name = "b"
concurrency = 1
service_time = { dist = "constant", value = "20ms" }
[[strategies]]
name = "no-propagation"
max_attempts = 1
timeout = "30ms"
backoff = { kind = "none" }
[[strategies]]
name = "deadline"
max_attempts = 1
timeout = "30ms"
backoff = { kind = "none" }
propagate_deadline = true
"#;

#[test]
fn deadline_propagation_stops_hops_from_starting_work_they_cannot_finish() {
    // b serves [1, 21), [21, 41), [41, 61), [61, 81), [81, 101) ms; everyone gives up at 30.
    let none = run_strategy(QUEUED_BOTTOM, &[], 0);
    assert_eq!(none.succeeded, 1);
    assert!((wasted_s(&none, 1) - 0.071).abs() < 1e-9, "11 + 20 + 20 + 20 ms: {}", wasted_s(&none, 1));
    // With the deadline, the three requests still queued at 30 ms never start; the one in
    // service when it passed runs to its end (11 ms wasted).
    let deadline = run_strategy(QUEUED_BOTTOM, &[], 1);
    assert_eq!(deadline.succeeded, 1);
    assert!((wasted_s(&deadline, 1) - 0.011).abs() < 1e-9, "{}", wasted_s(&deadline, 1));
    assert_eq!(deadline.graph.services[1].calls, 5);
    assert_eq!(deadline.graph.services[1].succeeded, 2, "the first, and the one that ran to its end");
}

#[test]
fn the_graph_columns_follow_the_services_in_file_order() {
    let exp = load_text(DEAD_CHAIN, &[]);
    let names: Vec<&str> = exp.graph_columns.iter().map(String::as_str).collect();
    assert_eq!(names.len(), 3 * 4 + 2 * 4);
    assert_eq!(
        &names[..4],
        ["service_calls@a", "service_amplification@a", "service_success_rate@a", "service_wasted_work_s@a"]
    );
    assert_eq!(names[12], "edge_calls@a:b");
    assert_eq!(names[16], "edge_calls@b:c");
}

#[test]
fn an_edge_takes_a_presets_policy_keys() {
    // Envoy's router: 2 attempts (1 retry), full jitter 25 ms .. 250 ms, its retry budget.
    let text = DEAD_CHAIN.replace(
        "calls = [{ service = \"c\", max_attempts = 4 }]",
        "calls = [{ service = \"c\", preset = \"envoy\" }]",
    );
    let exp = load_text(&text, &[]);
    let edge = &exp.points[0].spec.services[1].calls[0].policy;
    assert_eq!(edge.max_attempts, 2);
    assert!(edge.budget.is_some(), "{edge:?}");
    let own = load_text(&text.replace("preset = \"envoy\"", "preset = \"envoy\", max_attempts = 3"), &[]);
    assert_eq!(own.points[0].spec.services[1].calls[0].policy.max_attempts, 3, "its own keys override it");
}

/// a -> b, where b never answers in time (its work takes 100 s); one client, operations one
/// after another. The edge tries 10 times with a 300 ms per-try timeout under a 1 s route
/// timeout (Envoy's `timeout` apart from `per_try_timeout`).
const STUCK: &str = r#"
name = "stuck"
seed = 4
horizon = "100s"
[workload]
kind = "closed"
clients = 1
ops_per_client = 20
[[services]]
name = "a"
concurrency = 100
service_time = { dist = "constant", value = "0ms" }
calls = [{ service = "b", max_attempts = 10, timeout = "300ms", route_timeout = "1s" }]
[[services]]
name = "b"
concurrency = 1000
service_time = { dist = "constant", value = "100s" }
[[strategies]]
name = "one-try"
max_attempts = 1
timeout = "10s"
backoff = { kind = "none" }
"#;

/// The tries that start before the route's end (0, 300, 600, 900 ms), then a 504 at exactly
/// 1 s; with a 250 ms backoff, 0 and 550 ms only (the next would start at 1100 ms).
#[test]
fn an_edges_route_timeout_stops_after_the_tries_that_fit() {
    let backoff = STUCK.replace(
        "route_timeout = \"1s\" }",
        "route_timeout = \"1s\", backoff = { kind = \"constant\", base = \"250ms\" } }",
    );
    for (text, tries) in [(STUCK.to_owned(), 4.0), (backoff, 2.0)] {
        let m = run_one(&text, &[]);
        assert_eq!((m.ops, m.failed), (20, 20));
        assert_eq!(per_op(&m, 1), tries, "the tries that fit in 1 s");
        assert_eq!((m.latency_min_s, m.latency_max_s), (1.0, 1.0), "the 504 at the route's end");
        assert_eq!(m.graph.edges[0].ended, 20);
    }
}

/// a -> b -> c, c answers 503 to everything. b's edge to c has a breaker that opens after 10
/// failed calls (1 attempt); a's edge to b makes 3 attempts. One client, 20 operations one
/// after another: operations 1-3 make 3 calls into b (and c); operation 4's first reaches c
/// (the 10th call: the breaker opens), its second fails at b's breaker with a 503 marked
/// overloaded. An edge that honours the mark (`honor_overloaded`) does not retry it: 9 + 2 +
/// 16 = 27 calls into b; one that does not: 3 per operation, 60.
#[test]
fn an_overflow_503_is_not_retried_by_an_edge_that_honours_it() {
    let text = DEAD_CHAIN
        .replace("clients = 10\nops_per_client = 10", "clients = 1\nops_per_client = 20")
        .replace(
            "calls = [{ service = \"b\", max_attempts = 4 }]",
            "calls = [{ service = \"b\", max_attempts = 3, honor_overloaded = true }]",
        )
        .replace(
            "calls = [{ service = \"c\", max_attempts = 4 }]",
            "calls = [{ service = \"c\", max_attempts = 1, breaker = { window = 10, minimum_calls = 10, open_for = \"100s\" } }]",
        );
    let honouring = run_strategy(&text, &["strategies.every-layer.max_attempts=1"], 0);
    assert_eq!(honouring.graph.services[2].calls, 10, "the breaker opened after 10 calls");
    assert_eq!(honouring.graph.services[1].calls, 9 + 2 + 16);
    let retrying = run_strategy(
        &text.replace(", honor_overloaded = true", ""),
        &["strategies.every-layer.max_attempts=1"],
        0,
    );
    assert_eq!(retrying.graph.services[2].calls, 10);
    assert_eq!(retrying.graph.services[1].calls, 60);
}

/// `retry_on = ["reset"]` on an edge does not retry the bottom's 503s; `gateway-error` does.
#[test]
fn an_edges_reset_group_does_not_retry_a_503() {
    let reset = DEAD_CHAIN.replace(
        "calls = [{ service = \"c\", max_attempts = 4 }]",
        "calls = [{ service = \"c\", max_attempts = 4, retry_on = [\"reset\"] }]",
    );
    let m = run_strategy(&reset, &[], 0);
    assert_eq!([per_op(&m, 1), per_op(&m, 2)], [16.0, 16.0], "b -> c tries once per call");
    let m = run_strategy(&reset.replace("\"reset\"", "\"gateway-error\""), &[], 0);
    assert_eq!([per_op(&m, 1), per_op(&m, 2)], [16.0, 64.0]);
}

/// Hedging on an edge (gRPC A6 hedgingPolicy): the fan-out of 100 with a 1 % slow tail
/// (100 ms), each call hedged after 10 ms with a second copy. A call is slow only when both
/// copies are (0.01^2), so a user request is slow with probability 1 - (1 - 0.0001)^100 =
/// 0.995 %, against 63.4 % unhedged; the backend gets one hedge per slow first copy, 1 per
/// request on average (100 x 0.01).
#[test]
fn a_hedged_edge_cuts_the_fan_out_tail_to_what_the_arithmetic_says() {
    let text = FAN_OUT.replace(
        "calls = [{ service = \"backend\", count = 100 }]",
        "calls = [{ service = \"backend\", count = 100, hedge = { max_attempts = 2, delay = \"10ms\" } }]",
    );
    let m = run_one(&text, &[]);
    let n = m.ops as f64;
    let p = (1.0 - 0.01_f64 * 0.01).powi(100);
    let se = (p * (1.0 - p) / n).sqrt();
    let fast = m.succeeded as f64 / n;
    assert!(m.ops > 9_500, "{}", m.ops);
    assert!((fast - p).abs() < 4.0 * se, "fast share {fast}, expected {p} +- {}", 4.0 * se);
    let hedges = (m.graph.services[1].calls - 100 * m.ops) as f64 / n;
    let se_hedges = (100.0 * 0.01 * 0.99 / n).sqrt();
    assert!(
        (hedges - 1.0).abs() < 4.0 * se_hedges,
        "hedges per request {hedges}, expected 1 +- {}",
        4.0 * se_hedges
    );
    assert_eq!(m.graph.edges[0].ended, 100 * m.ops, "every call ends once, whatever its copies");
    assert_eq!(m.graph.edges[0].succeeded, 100 * m.ops, "every call succeeds: the client only times out");
}

/// A6's answer handling on an edge, a -> b, each call hedged with up to 3 copies 5 ms apart:
/// an answer in 1 ms wins before any hedge; with b answering 503 to everything and 503
/// non-fatal, each 503 sends the next copy at once and the call fails after its 3 copies (the
/// client's 4 attempts: 12 calls into b); without `non_fatal` (gRPC's default) the first 503
/// is fatal: one copy per call.
#[test]
fn a_hedged_edge_fails_only_when_every_copy_failed() {
    // b always answers 503: 3 copies, each non-fatal, then the call fails with the 503.
    let text = DEAD_CHAIN
        .replace(
            "calls = [{ service = \"b\", max_attempts = 4 }]",
            "calls = [{ service = \"b\", hedge = { max_attempts = 3, delay = \"5ms\", non_fatal = [503] } }]",
        )
        .replace("calls = [{ service = \"c\", max_attempts = 4 }]", "");
    let m = run_strategy(&text.replace("errors = [{ status = 503, probability = 1.0 }]", ""), &[], 0);
    assert_eq!(m.succeeded, m.ops, "c answers: the first copy wins");
    assert_eq!(per_op(&m, 1), 1.0, "a 1 ms answer comes before the 5 ms hedge");
    let failing = text.replace(
        "name = \"b\"\nconcurrency = 100\nservice_time = { dist = \"constant\", value = \"1ms\" }",
        "name = \"b\"\nconcurrency = 100\nservice_time = { dist = \"constant\", value = \"1ms\" }\nerrors = [{ status = 503, probability = 1.0 }]",
    );
    let m = run_strategy(&failing, &[], 0);
    assert_eq!(m.succeeded, 0);
    assert_eq!(
        per_op(&m, 1),
        4.0 * 3.0,
        "4 client attempts x 3 copies, each sent at once after a non-fatal 503"
    );
    // Without non_fatal (gRPC's default), the first 503 is fatal: one copy per call.
    let m = run_strategy(&failing.replace(", non_fatal = [503]", ""), &[], 0);
    assert_eq!(per_op(&m, 1), 4.0);
}

/// The recovery analysis sees a fault anywhere in the graph, not only at the entry: an outage
/// of the bottom service (every call answered 503, nothing retried) is what the user's
/// requests recover from, as the same outage at the entry is. From 10 s to 20 s of a 40 s
/// load they recover at once (within a bucket); from 10 s to 38 s there are not 5 seconds of
/// load left to see a recovery, so it is unmeasurable (empty), where a run without a fault
/// reports 0.
#[test]
fn a_fault_below_the_entry_is_what_the_requests_recover_from() {
    let chain = |faults_at: Option<usize>, duration_s: u32| {
        let fault = format!(
            "[[services.faults]]\nkind = \"outage\"\nstart = \"10s\"\nduration = \"{duration_s}s\"\nstatus = 503\n"
        );
        let services: String = (0..2)
            .map(|i| {
                let calls = if i == 0 { "calls = [{ service = \"s1\" }]\n" } else { "" };
                let f = if faults_at == Some(i) { fault.as_str() } else { "" };
                format!(
                    "[[services]]\nname = \"s{i}\"\nconcurrency = 100\nservice_time = {{ dist = \"constant\", value = \"1ms\" }}\n{calls}{f}"
                )
            })
            .collect();
        format!(
            "name = \"recovery\"\nseed = 3\nruns = 1\nhorizon = \"40s\"\n[workload]\nkind = \"open\"\nrate = 200.0\nduration = \"40s\"\narrivals = \"fixed\"\n{services}[client]\nmax_attempts = 1\nbackoff = {{ kind = \"none\" }}\n[[strategies]]\nname = \"once\"\n"
        )
    };
    let measured = |m: &RunMetrics| (m.recovery_time_s, m.metastable);
    let none = run_one(&chain(None, 10), &[]);
    assert_eq!(measured(&none), (Some(0.0), Some(false)), "no fault: 0");
    for duration_s in [10, 28] {
        let bottom = run_one(&chain(Some(1), duration_s), &[]);
        let entry = run_one(&chain(Some(0), duration_s), &[]);
        assert!(bottom.succeeded < bottom.ops, "the outage fails requests");
        assert_eq!(measured(&bottom), measured(&entry), "{duration_s} s: a fault is a fault wherever it is");
        if duration_s == 10 {
            let r = bottom.recovery_time_s.expect("recovered");
            assert!(r <= 1.0 && bottom.metastable == Some(false), "{r}");
        } else {
            assert_eq!(measured(&bottom), (None, None), "2 s of load after the fault: unmeasurable");
        }
    }
}
