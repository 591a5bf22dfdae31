//! The queue server against queueing theory: the simulator must reproduce closed-form results
//! where they exist. Tolerances are 5 standard errors of the mean over independent runs (the
//! across-run spread captures the autocorrelation inside a run), plus the histogram's 0.1 %.

use retrysim::experiment::{Overrides, load_str};
use retrysim::metrics::{FailReason, RunMetrics};
use retrysim::sweep;

fn runs(text: &str) -> Vec<RunMetrics> {
    let exp = load_str(text, "theory", &Overrides::default()).expect("valid experiment");
    sweep::run(&exp, &|_| {}).runs.into_iter().map(|r| r.metrics).collect()
}

/// Mean and standard error of the mean.
fn mean_se(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

fn assert_close(what: &str, xs: &[f64], expected: f64, relative_slack: f64) {
    let (m, se) = mean_se(xs);
    let tolerance = 5.0 * se + relative_slack * expected;
    assert!(
        (m - expected).abs() <= tolerance,
        "{what}: mean {m} vs theory {expected} (se {se}, tolerance {tolerance})"
    );
}

/// M/M/1: Poisson arrivals at 800/s, one worker, exponential service at 1000/s, unbounded
/// queue. The time in system is exponential with rate mu - lambda = 200/s, so its median is
/// ln 2 / 200 s and its 99th percentile ln 100 / 200 s.
#[test]
fn m_m_1_sojourn_time_is_exponential() {
    let m = runs(
        r#"
name = "mm1"
seed = 5
runs = 12
horizon = "300s"
[workload]
kind = "open"
rate = 800.0
duration = "150s"
[server]
concurrency = 1
service_time = { dist = "exponential", mean = "1ms" }
[[strategies]]
name = "no-retries-needed"
backoff = { kind = "none" }
max_attempts = 1
"#,
    );
    for r in &m {
        assert_eq!(r.failed, 0, "nothing fails on an unbounded queue");
    }
    let rate = 200.0;
    let p50: Vec<f64> = m.iter().map(|r| r.latency_p50_s).collect();
    let p99: Vec<f64> = m.iter().map(|r| r.latency_p99_s).collect();
    assert_close("median sojourn", &p50, 2f64.ln() / rate, 0.001);
    assert_close("p99 sojourn", &p99, 100f64.ln() / rate, 0.001);
}

/// Erlang B: M/M/c/c (c workers, no waiting room), offered load A = lambda / mu. The share of
/// arrivals rejected is B(c, A) = (A^c / c!) / sum_k (A^k / k!), whatever the service-time
/// distribution (insensitivity): checked with exponential and with constant service.
#[test]
fn m_m_c_c_blocking_is_erlang_b() {
    let (c, a) = (10u32, 8.0f64);
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..=c {
        term *= a / k as f64;
        sum += term;
    }
    let erlang_b = term / sum;
    for service in
        [r#"{ dist = "exponential", mean = "100ms" }"#, r#"{ dist = "constant", value = "100ms" }"#]
    {
        let m = runs(&format!(
            r#"
name = "erlang-b"
seed = 9
runs = 12
horizon = "410s"
[workload]
kind = "open"
rate = 80.0
duration = "400s"
[server]
concurrency = {c}
queue = 0
service_time = {service}
[[strategies]]
name = "no-retries"
backoff = {{ kind = "none" }}
max_attempts = 1
"#
        ));
        let blocked: Vec<f64> = m
            .iter()
            .map(|r| {
                assert_eq!(r.failed, r.failed_by[FailReason::Exhausted as usize]);
                r.failed as f64 / r.ops as f64
            })
            .collect();
        assert_close(&format!("blocking with service {service}"), &blocked, erlang_b, 0.0);
    }
}
