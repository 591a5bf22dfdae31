//! Retry controls on whole runs (DESIGN §4): attempts and independent failures against
//! theory, budgets and breakers in a total outage, a breaker driven through its states by a
//! scripted server, Retry-After honoured, clamped and ignored, and presets resolved to the
//! reference's values.

use retrysim::experiment::{self, BackoffSpec, BudgetSpec, Duration, Experiment, Overrides};
use retrysim::metrics::{FailReason, RunMetrics};

fn load(text: &str, sets: &[&str]) -> Experiment {
    let set = sets.iter().map(|s| experiment::parse_set_arg(s).unwrap()).collect();
    experiment::load_str(text, "controls.toml", &Overrides { set, ..Default::default() })
        .unwrap_or_else(|e| panic!("{e}"))
}

fn metrics(exp: &Experiment) -> Vec<RunMetrics> {
    retrysim::sweep::run(exp, &|_| {}).runs.into_iter().map(|r| r.metrics).collect()
}

/// A fast server (1 ms, plenty of workers) answering 503 with probability p, no latency,
/// 2000 operations per second for 10 s, immediate retries.
const FAILING: &str = r#"
name = "failing"
seed = 11
runs = 8
horizon = "12s"
[workload]
kind = "open"
rate = 2000.0
duration = "10s"
[server]
concurrency = 200
service_time = { dist = "constant", value = "1ms" }
errors = [{ status = 503, probability = 0.3 }]
[client]
max_attempts = 3
[[strategies]]
name = "immediate"
backoff = { kind = "none" }
"#;

/// Mean of `f` over runs and its standard error.
fn mean_se(ms: &[RunMetrics], f: impl Fn(&RunMetrics) -> f64) -> (f64, f64) {
    let xs: Vec<f64> = ms.iter().map(f).collect();
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

/// Independent failures with probability p and n attempts: each operation makes
/// (1 - p^n) / (1 - p) calls on average and succeeds with probability 1 - p^n.
#[test]
fn independent_failures_match_theory() {
    for (p, n) in [(0.1f64, 2u32), (0.3, 3), (0.5, 4), (0.8, 5)] {
        let exp = load(
            FAILING,
            &[
                &format!("server.errors=[{{ status = 503, probability = {p} }}]"),
                &format!("client.max_attempts={n}"),
            ],
        );
        let ms = metrics(&exp);
        let amp = (1.0 - p.powi(n as i32)) / (1.0 - p);
        let success = 1.0 - p.powi(n as i32);
        let (a, a_se) = mean_se(&ms, |m| m.amplification());
        let (s, s_se) = mean_se(&ms, |m| m.success_rate());
        // Binomial standard errors from theory as a floor, since 8 run means can underestimate.
        let ops = ms.iter().map(|m| m.ops as f64).sum::<f64>();
        let s_theory = (success * (1.0 - success) / ops).sqrt();
        assert!(
            (a - amp).abs() < 5.0 * a_se.max(1e-3),
            "p={p} n={n}: amplification {a} vs {amp} (se {a_se})"
        );
        assert!((s - success).abs() < 5.0 * s_se.max(s_theory), "p={p} n={n}: success {s} vs {success}");
        for m in &ms {
            assert_eq!(
                m.failed,
                m.failed_by[FailReason::Exhausted as usize],
                "every failure used up its attempts"
            );
        }
    }
}

/// Every request answered 503: a shared 500-token bucket with retry cost 5 grants exactly 100
/// retries (nothing succeeds, so nothing is refunded), so amplification is
/// 1 + capacity / (retry_cost x ops); the rest end as failed_budget.
#[test]
fn a_token_bucket_bounds_retries_in_a_total_outage() {
    let exp = load(
        FAILING,
        &[
            "server.errors=[{ status = 503, probability = 1.0 }]",
            "client.max_attempts=4",
            "strategies.immediate.budget={ kind = \"token-bucket\", scope = \"shared\" }",
        ],
    );
    for m in metrics(&exp) {
        assert_eq!(m.calls - m.ops, 100, "500 tokens / 5 per retry");
        assert_eq!(m.succeeded, 0);
        assert!(m.failed_by[FailReason::Budget as usize] > m.ops - 100);
        let bound = 1.0 + 500.0 / (5.0 * m.ops as f64);
        assert!(m.amplification() <= bound + 1e-12);
    }
}

/// A shared breaker (count window of 20, open for longer than the run) opens after its 20th
/// failure, then fails every call locally: the server sees 20 calls.
#[test]
fn an_open_breaker_stops_sending() {
    let exp = load(
        FAILING,
        &[
            "server.errors=[{ status = 503, probability = 1.0 }]",
            "strategies.immediate.breaker={ window = 20, minimum_calls = 20, open_for = \"1h\", scope = \"shared\" }",
        ],
    );
    for m in metrics(&exp) {
        assert_eq!(m.server_calls, 20, "the breaker opens after its minimum_calls failures");
        // Six operations use their 3 attempts (18 calls); the seventh fails twice, the 20th
        // failure opens the breaker, and its retry is refused; every later one fails locally.
        assert_eq!(m.failed_by[FailReason::Exhausted as usize], 6);
        assert_eq!(m.failed_by[FailReason::Breaker as usize], m.ops - 6);
    }
}

/// A scripted server: healthy, then an outage from 10 s to 20 s, healthy again. A breaker
/// shared by 100 clients (count window 50, open for 1 s, 3 probes) opens during the outage,
/// lets at most 3 probes per half-open period through (they fail: back to open), and closes
/// once the outage is over. Checked second by second from the time series.
#[test]
fn a_shared_breaker_goes_closed_open_half_open_closed() {
    let text = r#"
name = "breaker"
seed = 5
runs = 3
horizon = "40s"
[workload]
kind = "open"
rate = 500.0
duration = "35s"
clients = 100
[server]
concurrency = 100
service_time = { dist = "constant", value = "1ms" }
[[server.faults]]
kind = "outage"
start = "10s"
duration = "10s"
status = 503
[client]
max_attempts = 1
[[strategies]]
name = "breaker"
backoff = { kind = "none" }
breaker = { window = 50, minimum_calls = 50, failure_rate = 0.5, open_for = "1s", half_open_calls = 3, scope = "shared" }
"#;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let file = dir.path().join("breaker.toml");
    std::fs::write(&file, text).unwrap();
    assert_cmd::cargo::cargo_bin_cmd!("retrysim")
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .arg("-q")
        .assert()
        .success();
    let mut r = csv::Reader::from_path(out.join("timeseries.csv")).unwrap();
    let header = r.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (t, offered, successes) = (col("t_s"), col("offered"), col("successes"));
    let rows: Vec<(f64, f64, f64)> = r
        .records()
        .map(|rec| {
            let rec = rec.unwrap();
            (rec[t].parse().unwrap(), rec[offered].parse().unwrap(), rec[successes].parse().unwrap())
        })
        .collect();
    for &(t, offered, successes) in &rows {
        if (11.0..20.0).contains(&t) {
            // Open, with one half-open period per second at most: at most 3 probes a second.
            assert!(
                offered <= 3.0 + 1e-9,
                "t={t}: {offered} calls sent while the breaker guards a dead server"
            );
        }
        if (23.0..35.0).contains(&t) {
            // Closed again: everything goes through and succeeds.
            assert!(successes > 450.0, "t={t}: {successes} successes after the outage");
        }
        if t < 10.0 {
            assert!(offered > 400.0, "t={t}: closed before the outage");
        }
    }
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert!(summary.contains("breaker"), "{summary}");
}

/// An outage answering 503 with `Retry-After: 2` from 10 s to 11 s: clients that honour it
/// wait 2 s before their retry, clients that clamp it at 500 ms wait 500 ms, and the others
/// use their 100 ms backoff. The longest operation shows which.
#[test]
fn retry_after_is_honoured_clamped_or_ignored() {
    let text = r#"
name = "retry-after"
runs = 1
horizon = "20s"
[workload]
kind = "open"
rate = 100.0
duration = "15s"
[server]
concurrency = 10
service_time = { dist = "constant", value = "1ms" }
[[server.faults]]
kind = "outage"
start = "10s"
duration = "1s"
status = 503
retry_after = "2s"
[client]
max_attempts = 2
[[strategies]]
name = "ignore"
backoff = { kind = "constant", base = "100ms" }
[[strategies]]
name = "honour"
backoff = { kind = "constant", base = "100ms" }
honor_retry_after = true
[[strategies]]
name = "clamp"
backoff = { kind = "constant", base = "100ms" }
honor_retry_after = true
retry_after_cap = "500ms"
"#;
    let exp = load(text, &[]);
    let results = retrysim::sweep::run(&exp, &|_| {});
    let max = |s: usize| results.cell(0, s)[0].metrics.latency_max_s;
    // The outage answers at once; the retry, after the outage, is served in 1 ms: the longest
    // operation takes the delay + 1 ms.
    assert!((max(0) - 0.101).abs() < 1e-6, "ignore: {}", max(0));
    assert!((max(1) - 2.001).abs() < 1e-6, "honour: {}", max(1));
    assert!((max(2) - 0.501).abs() < 1e-6, "clamp: {}", max(2));
}

/// A preset's values, resolved through the loader, are the reference's
/// (`docs/retry-policies.md`), and a strategy's own keys override them.
#[test]
fn presets_resolve_to_the_reference_values() {
    let text = r#"
name = "presets"
[workload]
kind = "open"
rate = 10.0
duration = "10s"
[server]
concurrency = 2
service_time = { dist = "constant", value = "1ms" }
[client]
timeout = "1s"
[[strategies]]
name = "aws"
preset = "aws-standard"
[[strategies]]
name = "aws-longer"
preset = "aws-standard"
max_attempts = 5
backoff = { base = "2s" }
[[strategies]]
name = "grpc"
preset = "grpc"
[[strategies]]
name = "r4j"
preset = "resilience4j"
"#;
    let exp = load(text, &[]);
    let s = &exp.points[0].strategies;
    let ms = |v: u64| Duration(v * 1_000_000);
    // §1b: 3 attempts, U(0,1) * min(2^(n-1), 20) s, quota 500 / 5 / 10 / +1.
    assert_eq!(s[0].policy.max_attempts, Some(3));
    assert_eq!(
        s[0].policy.backoff,
        BackoffSpec::FullJitter { base: ms(1000), cap: Some(ms(20_000)), multiplier: 2.0 }
    );
    let Some(BudgetSpec::TokenBucket { capacity, retry_cost, timeout_cost, success_refund, .. }) =
        s[0].policy.budget
    else {
        panic!("aws-standard has a token bucket: {:?}", s[0].policy.budget)
    };
    assert_eq!((capacity, retry_cost, timeout_cost, success_refund), (500.0, 5.0, 10.0, 1.0));
    assert_eq!(s[0].policy.timeout, Some(ms(1000)), "[client] fills what the preset leaves out");
    // The strategy's own keys win, and a backoff without `kind` keeps the preset's kind.
    assert_eq!(s[1].policy.max_attempts, Some(5));
    assert_eq!(
        s[1].policy.backoff,
        BackoffSpec::FullJitter { base: ms(2000), cap: Some(ms(20_000)), multiplier: 2.0 }
    );
    // §2: gRFC A6 example 4 attempts, 0.1 s..1 s x2, +-20 %, throttling 10 / 0.1.
    assert_eq!(s[2].policy.max_attempts, Some(4));
    assert_eq!(
        s[2].policy.backoff,
        BackoffSpec::ProportionalJitter { base: ms(100), cap: Some(ms(1000)), multiplier: 2.0, p: 0.2 }
    );
    assert_eq!(
        s[2].policy.budget,
        Some(BudgetSpec::GrpcThrottle {
            max_tokens: 10.0,
            token_ratio: 0.1,
            scope: experiment::Scope::Client
        })
    );
    // §6: resilience4j Retry 3 attempts, constant 500 ms; breaker defaults.
    assert_eq!(s[3].policy.max_attempts, Some(3));
    assert_eq!(s[3].policy.backoff, BackoffSpec::Constant { base: ms(500) });
    let Some(experiment::BreakerSpec::Resilience4j(b)) = s[3].policy.breaker.as_ref() else {
        panic!("resilience4j has a resilience4j breaker")
    };
    assert_eq!((b.failure_rate, b.minimum_calls, b.half_open_calls), (0.5, 100, 10));
    assert_eq!(b.open_for, ms(60_000));
}
