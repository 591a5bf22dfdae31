//! Gateway layers (DESIGN §4.4 `layers`) on whole runs: attempts multiply, "overloaded; don't
//! retry" stops every layer that honours it, a layer's timeout lets it retry work the server is
//! still doing, and a layer that never hears back hangs up without leaking its operation.

use retrysim::experiment::{self, Experiment, Overrides};
use retrysim::metrics::RunMetrics;

fn load(text: &str, sets: &[&str]) -> Experiment {
    let set = sets.iter().map(|s| experiment::parse_set_arg(s).unwrap()).collect();
    experiment::load_str(text, "layers.toml", &Overrides { set, ..Default::default() })
        .unwrap_or_else(|e| panic!("{e}"))
}

fn metrics(exp: &Experiment) -> Vec<RunMetrics> {
    retrysim::sweep::run(exp, &|_| {}).runs.into_iter().map(|r| r.metrics).collect()
}

/// A total outage: every request is answered 503 at once. 100 operations/s for 5 s.
const OUTAGE: &str = r#"
name = "layers"
seed = 21
runs = 2
horizon = "10s"
[workload]
kind = "open"
rate = 100.0
duration = "5s"
[server]
concurrency = 10
service_time = { dist = "constant", value = "1ms" }
errors = [{ status = 503, probability = 1.0 }]
[[strategies]]
name = "three-layers"
backoff = { kind = "none" }
max_attempts = 3
layers = [
  { name = "edge", max_attempts = 3, backoff = { kind = "none" } },
  { name = "mesh", max_attempts = 3, backoff = { kind = "constant", base = "1ms" } },
]
"#;

#[test]
fn three_layers_of_three_attempts_make_27_server_calls_per_operation() {
    for m in metrics(&load(OUTAGE, &[])) {
        assert!(m.ops > 400, "ops {}", m.ops);
        assert_eq!(m.failed, m.ops, "everything fails");
        assert_eq!(m.calls, 3 * m.ops, "the client sends 3 calls per operation");
        assert_eq!(m.server_calls, 27 * m.ops, "3 x 3 x 3 at the server");
    }
    // One layer of 4 in front of a client of 2: 8.
    let one = load(
        OUTAGE,
        &["strategies.three-layers.max_attempts=2", "strategies.three-layers.layers=[{ max_attempts = 4 }]"],
    );
    for m in metrics(&one) {
        assert_eq!(m.server_calls, 8 * m.ops);
    }
}

#[test]
fn dont_retry_stops_every_layer_that_honours_it() {
    // A server with no queue and one slow worker rejects most requests with "overloaded;
    // don't retry"; every layer and the client honour it: no request is retried anywhere.
    let text = OUTAGE
        .replace("concurrency = 10", "concurrency = 1\nqueue = 0\nreject_dont_retry = true")
        .replace("errors = [{ status = 503, probability = 1.0 }]", "")
        .replace("value = \"1ms\"", "value = \"50ms\"")
        .replace(
            "backoff = { kind = \"none\" } }",
            "backoff = { kind = \"none\" }, honor_dont_retry = true }",
        )
        .replace("base = \"1ms\" } }", "base = \"1ms\" }, honor_dont_retry = true }")
        .replace("max_attempts = 3\nlayers", "max_attempts = 3\nhonor_dont_retry = true\nlayers");
    for m in metrics(&load(&text, &[])) {
        assert!(m.failed > m.ops / 2, "most are rejected: {} of {}", m.failed, m.ops);
        assert_eq!(m.server_calls, m.ops, "no layer retried a don't-retry answer");
        assert_eq!(m.calls, m.ops, "nor did the client");
    }
    // Without honor_dont_retry at the layers, they retry it (the client still honours it).
    let ignoring = text.replace(", honor_dont_retry = true }", " }");
    for m in metrics(&load(&ignoring, &[])) {
        assert_eq!(m.calls, m.ops, "the client does not retry");
        assert!(m.server_calls > 2 * m.ops, "the layers do: {} calls for {} ops", m.server_calls, m.ops);
    }
}

#[test]
fn a_layer_timeout_retries_work_the_server_is_still_doing() {
    // A healthy but slow server (100 ms per request, plenty of workers) behind a gateway that
    // gives up after 30 ms and tries 3 times: each operation executes 3 times, and succeeds
    // only as far as the client waits for the layer's last answer (the layer answers its last
    // timeout: failed).
    let text = r#"
name = "slow"
seed = 3
runs = 2
horizon = "10s"
[workload]
kind = "open"
rate = 50.0
duration = "5s"
[server]
concurrency = 1000
service_time = { dist = "constant", value = "100ms" }
[[strategies]]
name = "impatient-gateway"
backoff = { kind = "none" }
max_attempts = 1
layers = [{ max_attempts = 3, timeout = "30ms" }]
"#;
    for m in metrics(&load(text, &[])) {
        assert_eq!(m.server_calls, 3 * m.ops, "three attempts at the server per operation");
        assert_eq!(m.failed, m.ops, "the gateway times out every attempt, so every operation fails");
        assert_eq!(m.applied, m.ops, "yet every operation took effect");
        assert_eq!(m.duplicates, 2 * m.ops, "three times");
        assert_eq!(
            m.failed_but_applied, m.ops,
            "and the client believes a charge that happened 3 times failed"
        );
    }
}

#[test]
fn a_dropped_request_without_a_layer_timeout_hangs_up_without_leaking() {
    // Requests dropped without an answer (request loss at the server: a queue that drops
    // expired requests) never answer the layer; with no layer timeout, the client's own
    // timeout ends the operation. Every operation ends; nothing is left in flight.
    let text = r#"
name = "hung"
seed = 5
runs = 2
horizon = "30s"
[workload]
kind = "open"
rate = 200.0
duration = "5s"
[server]
concurrency = 1
queue = 1000
drop_expired = true
service_time = { dist = "constant", value = "20ms" }
[[strategies]]
name = "gateway"
backoff = { kind = "none" }
max_attempts = 2
timeout = "200ms"
layers = [{ max_attempts = 2 }]
"#;
    for m in metrics(&load(text, &[])) {
        assert_eq!(m.succeeded + m.failed, m.ops, "every operation ended");
        assert!(m.failed > 0 && m.succeeded > 0, "some of each: {} / {}", m.succeeded, m.failed);
    }
}

#[test]
fn layered_runs_are_deterministic() {
    let exp = load(
        OUTAGE,
        &[
            "strategies.three-layers.layers[1].backoff={ kind = \"full-jitter\", base = \"1ms\", cap = \"10ms\" }",
        ],
    );
    let a: Vec<_> = metrics(&exp).into_iter().map(|m| (m.calls, m.server_calls, m.latency_max_s)).collect();
    let b: Vec<_> = metrics(&exp).into_iter().map(|m| (m.calls, m.server_calls, m.latency_max_s)).collect();
    assert_eq!(a, b);
}

/// A layer's own retry budget (DESIGN §4.4): one per proxy, shared by every request through
/// it. In the total outage, a token bucket of 50 tokens at 1 token a retry (nothing refunded:
/// nothing succeeds) lets the layer make exactly 50 retries in the whole run, whatever the
/// number of operations; the client's own attempts are untouched.
#[test]
fn a_layers_own_budget_caps_its_retries() {
    let budgeted = load(
        OUTAGE,
        &[
            "strategies.three-layers.max_attempts=2",
            "strategies.three-layers.layers=[{ max_attempts = 3, budget = { kind = \"token-bucket\", capacity = 50.0, retry_cost = 1.0, success_refund = 0.0 } }]",
        ],
    );
    for m in metrics(&budgeted) {
        assert!(m.ops > 400, "ops {}", m.ops);
        assert_eq!(m.calls, 2 * m.ops, "the client's two attempts each");
        assert_eq!(m.server_calls, m.calls + 50, "one server call per client attempt, and 50 retries");
        assert_eq!(m.failed, m.ops);
    }
}

/// A layer's own circuit breaker: resilience4j's, counting the last 10 calls, opens once 10
/// calls have failed and then answers the layer's caller a local 503 for 100 s without
/// sending anything down: the server sees exactly 10 calls in the run.
#[test]
fn a_layers_open_breaker_answers_locally() {
    let broken = load(
        OUTAGE,
        &[
            "strategies.three-layers.max_attempts=3",
            "strategies.three-layers.layers=[{ max_attempts = 1, breaker = { window = 10, minimum_calls = 10, open_for = \"100s\" } }]",
        ],
    );
    for m in metrics(&broken) {
        assert_eq!(m.calls, 3 * m.ops, "the client still tries 3 times: a local 503 is retryable");
        assert_eq!(m.server_calls, 10, "the breaker opened after 10 failed calls");
        assert_eq!(m.failed, m.ops);
    }
}

/// `preset` on a layer: the preset's keys that a layer takes, then the layer's own.
#[test]
fn a_layer_takes_a_presets_retry_keys() {
    use retrysim::experiment::{BackoffSpec, BudgetSpec};
    let exp = load(
        OUTAGE,
        &[
            "strategies.three-layers.layers=[{ preset = \"envoy\" }, { preset = \"envoy\", max_attempts = 4 }]",
        ],
    );
    let layers = &exp.points[0].strategies[0].policy.layers;
    assert_eq!(
        (layers[0].max_attempts, layers[1].max_attempts),
        (2, 4),
        "Envoy's num_retries = 1; overridden"
    );
    for l in layers {
        assert!(
            matches!(l.backoff, BackoffSpec::FullJitter { base, cap: Some(cap), .. } if base.as_ns() == 25_000_000 && cap.as_ns() == 250_000_000),
            "{:?}",
            l.backoff
        );
        assert!(
            matches!(l.budget, Some(BudgetSpec::Concurrency { percent, min_concurrency, .. }) if percent == 20.0 && min_concurrency == 3),
            "{:?}",
            l.budget
        );
        assert_eq!(l.timeout, None, "Envoy's per-try timeout is not set by default");
    }
    let err = experiment::load_str(
        OUTAGE,
        "layers.toml",
        &Overrides {
            set: vec![
                experiment::parse_set_arg("strategies.three-layers.layers=[{ preset = \"envoi\" }]").unwrap(),
            ],
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("layers[0].preset") && err.contains("did you mean \"envoy\""), "{err}");
}
