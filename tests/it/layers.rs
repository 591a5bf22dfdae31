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
        assert_eq!(l.route_timeout.map(|d| d.as_ns()), Some(15_000_000_000), "Envoy's route timeout, 15 s");
        assert!(l.honor_overloaded, "Envoy's router never retries x-envoy-overloaded");
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

/// A server that never answers: every request is lost (an outage answering "timeout").
const SILENT: &str = r#"
name = "route"
seed = 5
runs = 1
horizon = "20s"
[workload]
kind = "open"
rate = 10.0
duration = "5s"
[server]
concurrency = 100
service_time = { dist = "constant", value = "1ms" }
faults = [{ kind = "outage", start = "0s", duration = "100s", status = "timeout" }]
[[strategies]]
name = "envoy"
backoff = { kind = "none" }
max_attempts = 1
timeout = "10s"
layers = [{ max_attempts = 10, timeout = "300ms", route_timeout = "1s", backoff = { kind = "none" } }]
"#;

/// Envoy's route timeout (`RouteAction.timeout`) apart from its per-try timeout: against a
/// server that never answers, a layer with per-try 300 ms and a 1 s route timeout makes the
/// tries that start before 1 s (at 0, 300, 600 and 900 ms: 4, of its 10), the last one cut to
/// the 100 ms the route has left, and answers 504 at exactly 1 s. With per-try 400 ms: 3 tries
/// (0, 400, 800 ms). A backoff that would end past the route's end ends there: per-try 300 ms
/// and a 250 ms constant backoff try at 0 and 550 ms, and the next try (at 1100 ms) never
/// starts.
#[test]
fn a_route_timeout_stops_after_the_tries_that_fit() {
    for (sets, tries) in [
        (vec![], 4),
        (vec!["strategies.envoy.layers[0].timeout=\"400ms\""], 3),
        (vec!["strategies.envoy.layers[0].backoff={ kind = \"constant\", base = \"250ms\" }"], 2),
    ] {
        let m = &metrics(&load(SILENT, &sets))[0];
        assert!(m.ops > 30, "{sets:?}: {}", m.ops);
        assert_eq!(m.failed, m.ops, "{sets:?}");
        assert_eq!(m.server_calls, tries * m.ops, "{sets:?}: the tries that fit in 1 s");
        assert_eq!(
            (m.latency_min_s, m.latency_max_s),
            (1.0, 1.0),
            "{sets:?}: the 504 comes at the route's end"
        );
    }
    // Without the route timeout, the layer makes all its 10 tries (3 s).
    let m = &metrics(&load(SILENT, &["strategies.envoy.layers[0].route_timeout=\"100s\""]))[0];
    assert_eq!(m.server_calls, 10 * m.ops);
    assert_eq!(m.latency_max_s, 3.0);
}

/// The 504 of a route timeout is an answer the layer above (and the client) may retry: a
/// client of 2 attempts over the same layer sends 8 tries per operation to the server.
#[test]
fn a_route_timeout_is_a_504_the_caller_may_retry() {
    let m = &metrics(&load(SILENT, &["strategies.envoy.max_attempts=2"]))[0];
    assert_eq!(m.calls, 2 * m.ops, "the client retries the 504");
    assert_eq!(m.server_calls, 8 * m.ops);
    assert_eq!(m.latency_max_s, 2.0);
}

/// Local overflow 503s are not retried (Envoy's router: its own overflow answer carries
/// `x-envoy-overloaded`, which `RetryPolicyImpl::wouldRetryFromHeaders` never retries). The
/// bottom layer's breaker opens after 10 failed calls and then answers every try at once with
/// its local 503, marked overloaded. A top layer that honours the mark (`honor_overloaded`,
/// preset envoy) answers it up unretried: the client sees the 503 at once (median latency 0).
/// A top layer that does not retries it twice, 100 ms apart: every operation takes 200 ms.
/// The server sees 10 calls either way.
#[test]
fn an_overflow_503_reaches_the_top_unretried() {
    let layers = |top: &str| {
        format!(
            "strategies.three-layers.layers=[{{ max_attempts = 3, backoff = {{ kind = \"constant\", base = \"100ms\" }}{top} }}, {{ max_attempts = 1, breaker = {{ window = 10, minimum_calls = 10, open_for = \"100s\" }} }}]"
        )
    };
    let run = |top: &str| {
        let exp = load(OUTAGE, &["strategies.three-layers.max_attempts=1", &layers(top)]);
        metrics(&exp)
    };
    for m in run(", honor_overloaded = true") {
        assert_eq!(m.server_calls, 10, "the breaker opened after 10 failed calls");
        assert_eq!((m.calls, m.failed), (m.ops, m.ops));
        assert_eq!(m.latency_p50_s, 0.0, "the overflow 503 reached the client at once");
    }
    for m in run("") {
        assert_eq!(m.server_calls, 10);
        assert!(m.latency_min_s >= 0.2, "retried twice, 100 ms apart: {}", m.latency_min_s);
    }
    // A budget's refusal is not an overflow answer: the budget's layer answers the failure it
    // had (Envoy's retry overflow forwards the upstream's answer), and the layer above retries
    // it. Bottom: 2 attempts with a budget that never has a retry's tokens; top: 3 attempts, honouring.
    let budget = "strategies.three-layers.layers=[{ max_attempts = 3, honor_overloaded = true }, { max_attempts = 2, budget = { kind = \"token-bucket\", capacity = 1.0, retry_cost = 5.0 } }]";
    for m in metrics(&load(OUTAGE, &["strategies.three-layers.max_attempts=1", budget])) {
        assert_eq!(m.server_calls, 3 * m.ops, "the top layer retried the bottom's unmarked 503");
    }
}

/// Envoy's `retry_on` groups on a layer (DESIGN §3.5; `RetryPolicyImpl`): `reset` retries no
/// answer (the total outage's 503s: one server call per client attempt), `gateway-error` and
/// `5xx` retry the 503, `retriable-4xx` does not.
#[test]
fn retry_on_groups_on_a_layer() {
    for (on, per_op) in [
        ("\"reset\"", 1),
        ("\"connect-failure\"", 1),
        ("\"retriable-4xx\"", 1),
        ("\"gateway-error\"", 3),
        ("\"5xx\"", 3),
    ] {
        let set = format!("strategies.three-layers.layers=[{{ max_attempts = 3, retry_on = [{on}] }}]");
        for m in metrics(&load(OUTAGE, &["strategies.three-layers.max_attempts=1", &set])) {
            assert_eq!(m.server_calls, per_op * m.ops, "retry_on = [{on}]");
        }
    }
    // A per-try timeout is a reset: `reset` retries it (the silent server: 3 tries).
    let set = "strategies.envoy.layers=[{ max_attempts = 3, timeout = \"100ms\", retry_on = [\"reset\"] }]";
    let m = &metrics(&load(SILENT, &[set]))[0];
    assert_eq!(m.server_calls, 3 * m.ops);
}

/// Layers are a chain of the call graph's proxy nodes (DESIGN §3.7): the shipped layered
/// experiment's first replication of every strategy reproduces its published row of
/// results/layered-retries/runs.csv byte for byte (same draws, same event order).
#[test]
fn the_shipped_layered_experiment_reproduces_its_published_runs() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(["run", "experiments/layered-retries.toml", "--runs", "1", "-q", "--out"])
        .arg(tmp.path())
        .current_dir(root)
        .status()
        .unwrap();
    assert!(status.success());
    let published = std::fs::read_to_string(root.join("results/layered-retries/runs.csv")).unwrap();
    let ran = std::fs::read_to_string(tmp.path().join("runs.csv")).unwrap();
    let rows: Vec<&str> = ran.lines().skip(1).collect();
    assert_eq!(rows.len(), 5, "one run of each strategy");
    for row in rows {
        assert!(published.lines().any(|p| p == row), "not a published row: {row}");
    }
}
