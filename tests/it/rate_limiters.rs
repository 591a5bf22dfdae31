//! `[server.rate_limit]`'s six kinds on whole runs (docs/overload-and-topology.md §1.4): each
//! kind's burst and exact Retry-After, nginx's delayed burst and its 503, the fixed window's
//! synchronised return at the window boundary and the jitter that spreads it. Every scenario
//! but the last is deterministic (constant service, clients that all start at t=0): exact.

use retrysim::assembly::simulate;
use retrysim::engine::rng::run_seed;
use retrysim::experiment::{self, Overrides};
use retrysim::metrics::{FailReason, RunMetrics};

/// 50 clients calling once each at t=0 through `rate_limit`; constant 10 ms service.
const HERD: &str = r#"
name = "limited"
horizon = "1m"
[workload]
kind = "closed"
clients = 50
[server]
concurrency = 100
service_time = { dist = "constant", value = "10ms" }
rate_limit = { rate = 1.0 }
[output]
bucket = "10ms"
[client]
max_attempts = 1
[[strategies]]
name = "once"
backoff = { kind = "none" }
"#;

/// The runs of `HERD` with `--set` changes, one per seed in `runs`.
fn runs(set: &[(&str, &str)], runs: u64) -> Vec<RunMetrics> {
    let overrides = Overrides {
        set: set.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Default::default()
    };
    let exp = experiment::load_str(HERD, "test.toml", &overrides).unwrap_or_else(|e| panic!("{e}"));
    let point = &exp.points[0];
    (0..runs).map(|r| simulate(&point.spec, &point.strategies[0], run_seed(exp.seed, r))).collect()
}

fn run(set: &[(&str, &str)]) -> RunMetrics {
    runs(set, 1).remove(0)
}

/// Server calls per 10 ms bucket.
fn server_calls(m: &RunMetrics) -> Vec<u64> {
    (0..m.series.len()).map(|i| m.series.row(i)[1].unwrap_or(0.0) as u64).collect()
}

/// Each kind, set to let 10 requests through at once and then 1 per second.
const TEN_THEN_ONE_PER_SECOND: [&str; 7] = [
    "{ kind = \"token-bucket\", rate = 1.0, burst = 10.0 }",
    "{ kind = \"token-bucket\", fill_interval = \"1s\", burst = 10.0 }",
    "{ kind = \"leaky-bucket\", rate = 1.0, burst = 9, nodelay = true }",
    "{ kind = \"fixed-window\", limit = 10, window = \"10s\" }",
    "{ kind = \"sliding-window\", limit = 10, window = \"10s\", segments = 10 }",
    "{ kind = \"sliding-log\", limit = 10, window = \"10s\" }",
    "{ kind = \"gcra\", max_burst = 9, count = 1, period = \"1s\" }",
];

#[test]
fn every_kind_lets_its_burst_through_and_refuses_the_rest_without_work() {
    for limiter in TEN_THEN_ONE_PER_SECOND {
        let m = run(&[("server.rate_limit", limiter)]);
        let failed = m.failed_by[FailReason::Exhausted as usize];
        assert_eq!((m.server_calls, m.succeeded, failed, m.applied), (50, 10, 40, 10), "{limiter}");
    }
}

#[test]
fn every_kinds_exact_retry_after_points_at_its_next_admission() {
    // Two clients at t=0, one admitted; the other is told when it would be admitted and
    // comes back then: every kind below admits its next request exactly 1 s later.
    for limiter in [
        "{ kind = \"token-bucket\", rate = 1.0 }",
        "{ kind = \"token-bucket\", fill_interval = \"1s\" }",
        "{ kind = \"leaky-bucket\", rate = 1.0 }",
        "{ kind = \"fixed-window\", limit = 1, window = \"1s\" }",
        "{ kind = \"sliding-window\", limit = 1, window = \"1s\", segments = 4 }",
        "{ kind = \"sliding-log\", limit = 1, window = \"1s\" }",
        "{ kind = \"gcra\", max_burst = 0, count = 1, period = \"1s\" }",
    ] {
        let exact = limiter.replace(" }", ", retry_after = \"exact\" }");
        let m = run(&[
            ("workload.clients", "2"),
            ("server.rate_limit", &exact),
            ("client.max_attempts", "2"),
            ("client.honor_retry_after", "true"),
        ]);
        assert_eq!((m.succeeded, m.calls), (2, 3), "{limiter}");
        assert_eq!(m.latency_max_s, 1.01, "{limiter}: back at 1 s, served in 10 ms");
    }
}

#[test]
fn nginx_delays_the_burst_at_the_server_and_refuses_beyond_it_with_503() {
    // overload-and-topology.md §2.4: rate 1r/s, burst 5, 7 requests at once: #1 passes,
    // #2-#6 wait 1-5 s at the server, #7 is refused with 503.
    let seven = [
        ("workload.clients", "7"),
        ("server.rate_limit", "{ kind = \"leaky-bucket\", rate = 1.0, burst = 5 }"),
    ];
    let m = run(&seven);
    assert_eq!((m.server_calls, m.succeeded, m.applied), (7, 6, 6));
    // Served 10 ms after their release at 0, 1, ..., 5 s.
    assert_eq!(m.latency_max_s, 5.01);
    // A delayed request is counted in the time series when it is released (accepted then).
    let calls = server_calls(&m);
    let counted: Vec<(usize, u64)> = calls.iter().copied().enumerate().filter(|&(_, c)| c > 0).collect();
    assert_eq!(counted, [(0, 2), (100, 1), (200, 1), (300, 1), (400, 1), (500, 1)]);
    // The refusal is nginx's 503: not retried when only 429 is.
    let m = run(&[seven[0], seven[1], ("client.max_attempts", "2"), ("client.retry_on", "[429]")]);
    assert_eq!(m.failed_by[FailReason::NonRetryable as usize], 1);
    // With nodelay the six pass at once.
    let m = run(&[
        seven[0],
        ("server.rate_limit", "{ kind = \"leaky-bucket\", rate = 1.0, burst = 5, nodelay = true }"),
    ]);
    assert_eq!((m.succeeded, m.latency_max_s), (6, 0.01));
}

#[test]
fn a_fixed_window_reservation_holds_the_request_until_its_window() {
    // resilience4j with timeoutDuration: 2 per second, waits up to 2 s: of 7 at t=0, 2 pass,
    // 4 are held for the next two windows (1 s and 2 s), the 7th would wait 3 s: refused.
    let m = run(&[
        ("workload.clients", "7"),
        ("server.rate_limit", "{ kind = \"fixed-window\", limit = 2, window = \"1s\", max_wait = \"2s\" }"),
    ]);
    assert_eq!((m.succeeded, m.failed_by[FailReason::Exhausted as usize]), (6, 1));
    assert_eq!(m.latency_max_s, 2.01);
}

#[test]
fn a_fixed_windows_exact_retry_after_brings_the_refused_back_at_the_boundary() {
    // 10 clients at t=0, 2 per 1 s window, exact Retry-After obeyed: every refused client
    // is sent to the next window's first nanosecond; 2 get in, the rest go to the next.
    let set = [
        ("workload.clients", "10"),
        (
            "server.rate_limit",
            "{ kind = \"fixed-window\", limit = 2, window = \"1s\", retry_after = \"exact\" }",
        ),
        ("client.max_attempts", "10"),
        ("client.honor_retry_after", "true"),
    ];
    let m = run(&set);
    assert_eq!((m.succeeded, m.calls), (10, 10 + 8 + 6 + 4 + 2));
    assert_eq!(m.latency_max_s, 4.01);
    let calls = server_calls(&m);
    let herd: Vec<(usize, u64)> = calls.iter().copied().enumerate().filter(|&(_, c)| c > 0).collect();
    assert_eq!(
        herd,
        [(0, 10), (100, 8), (200, 6), (300, 4), (400, 2)],
        "every return in the boundary's 10 ms"
    );
    // Envoy's U(v, 1.5 v) spreads each return over half a window: no 10 ms bucket after the
    // first holds more than a few, in any of 20 runs (8 uniform returns over 500 ms, 50
    // buckets: 4 or more in one bucket has probability below 1e-3 per run).
    let mut jittered: Vec<(&str, &str)> = set.to_vec();
    jittered.push(("client.retry_after_mode", "\"envoy\""));
    for m in runs(&jittered, 20) {
        let peak = server_calls(&m)[1..].iter().copied().max().unwrap();
        assert!(peak <= 3, "jittered returns still bunched: {peak} in 10 ms");
    }
}
