//! Envoy's admission control (`throttle = { kind = "envoy-admission-control" }`, DESIGN §4.4) on
//! whole runs: a healthy backend is never throttled; a backend answering half of its requests
//! 503 has the share the formula gives rejected locally (`failed_throttled`), and the share
//! falls back to 0 once the failures stop and age out of the window.

use crate::support::run_one as run;
use retrysim::metrics::FailReason;

/// 100 operations a second (one every 10 ms) for 300 s, one attempt each, at a server with
/// room for all.
const BASE: &str = r#"
name = "admission"
seed = 3
runs = 1
[workload]
kind = "open"
arrivals = "fixed"
rate = 100.0
duration = "300s"
[server]
concurrency = 10
service_time = { dist = "constant", value = "1ms" }
[client]
max_attempts = 1
throttle = { kind = "envoy-admission-control" }
[[strategies]]
name = "once"
backoff = { kind = "none" }
"#;

#[test]
fn a_healthy_backend_is_never_throttled() {
    let m = run(BASE, &[]);
    // Fixed arrivals every 10 ms from 10 ms, none at 300 s: 29,999 operations.
    assert_eq!((m.ops, m.succeeded, m.failed_by[FailReason::Throttled as usize]), (29_999, 29_999, 0));
}

/// Half the answers are 503 throughout. With n requests let through in the 30 s window, half of
/// them successes, each operation is rejected with p = (n - 0.5 n / 0.95) / (n + 1), under the
/// 80 % cap; n is about 30 s x 100/s x (1 - p) = 1580, so p = 0.4734. Two things spread the
/// count: the Bernoulli draws (binomial standard error, 86) and the window's own success rate,
/// whose standard deviation 0.5 / sqrt(1580) = 0.0126 moves p by 0.0133, correlated over a
/// window, so the mean of p over 300 s (10 windows) by about 0.0042, or 127 operations.
#[test]
fn a_success_rate_of_one_half_rejects_the_share_the_formula_gives() {
    let m = run(BASE, &["server.errors=[{ status = 503, probability = 0.5 }]"]);
    let throttled = m.failed_by[FailReason::Throttled as usize] as f64;
    let n = m.ops as f64;
    let p = (1.0 - 0.5 / 0.95) * 1580.0 / 1581.0;
    let se = (n * p * (1.0 - p) + (n * 0.0133 / 10f64.sqrt()).powi(2)).sqrt();
    assert!((throttled - n * p).abs() <= 5.0 * se, "throttled {throttled}, expected {} (se {se})", n * p);
    // Every operation let through was answered: half succeeded.
    let sent = n - throttled;
    assert_eq!(m.calls as f64, sent);
    let ok_se = (sent * 0.25).sqrt();
    assert!((m.succeeded as f64 - sent / 2.0).abs() <= 5.0 * ok_se, "{} of {sent}", m.succeeded);
    // A looser threshold rejects less: at 0.5 exactly half succeeding is not below it.
    let loose = run(
        BASE,
        &["server.errors=[{ status = 503, probability = 0.5 }]", "client.throttle.sr_threshold=0.4"],
    );
    assert_eq!(loose.failed_by[FailReason::Throttled as usize], 0);
}

/// A 60 s burst of errors from 100 s: rejections start with it, and stop once its failures
/// have left the 30 s window: the last comes before 160 s + 30 s = 190 s, so a run whose
/// arrivals stop at 190 s rejects exactly as many.
#[test]
fn a_success_rate_drop_raises_rejections_and_its_end_lowers_them() {
    let fault = "server.faults=[{ kind = \"errors\", start = \"100s\", duration = \"60s\", status = 503, probability = 0.5 }]";
    let m = run(BASE, &[fault]);
    let throttled = m.failed_by[FailReason::Throttled as usize];
    assert!(throttled > 2_000, "{throttled}");
    // At most 90 s of rejections (the fault and one window after it), each below 0.4737.
    assert!((throttled as f64) < 90.0 * 100.0 * 0.4737, "{throttled}");
    // Cut the run at 190 s: every rejection happened before; the 110 s after it add none.
    let cut = run(BASE, &[fault, "workload.duration=190s"]);
    assert_eq!(cut.failed_by[FailReason::Throttled as usize], throttled);
}
