//! `[server] discipline` on whole runs (DESIGN §3.3): CoDel against sustained overload, with
//! clients that back off when shed (the responsiveness its control law assumes) and with
//! open-loop arrivals that do not; shed requests reach the client as retryable 503s.

use retrysim::assembly::simulate;
use retrysim::engine::rng::run_seed;
use retrysim::experiment::{self, Overrides};
use retrysim::metrics::{FailReason, RunMetrics};

/// Every run of `text`'s only strategy at its only point, with `discipline`.
fn runs(text: &str, discipline: &str) -> Vec<RunMetrics> {
    let overrides = Overrides {
        set: vec![("server.discipline".to_owned(), format!("\"{discipline}\""))],
        ..Default::default()
    };
    let exp = experiment::load_str(text, "test.toml", &overrides).unwrap_or_else(|e| panic!("valid: {e}"));
    let point = &exp.points[0];
    (0..exp.runs as u64)
        .map(|run| simulate(&point.spec, &point.strategies[0], run_seed(exp.seed, run)))
        .collect()
}

/// The mean over runs of `f` and its standard error.
fn mean_se(runs: &[RunMetrics], f: impl Fn(&RunMetrics) -> f64) -> (f64, f64) {
    let n = runs.len() as f64;
    let mean = runs.iter().map(&f).sum::<f64>() / n;
    let var = runs.iter().map(|m| (f(m) - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

/// 50 closed-loop clients against one worker (1 ms exponential service): the queue always
/// holds the other 49 requests under FIFO. A client whose request is shed waits 1 s before
/// retrying, so each drop takes load away, as TCP's window halving does for the RFC.
const CLOSED: &str = r#"
name = "codel-closed"
seed = 11
runs = 20
horizon = "20s"
[workload]
kind = "closed"
clients = 50
ops_per_client = 100000
[server]
concurrency = 1
service_time = { dist = "exponential", mean = "1ms" }
[[strategies]]
name = "backoff"
backoff = { kind = "constant", base = "1s" }
"#;

#[test]
fn codel_holds_the_queueing_delay_near_its_target_against_clients_that_back_off() {
    let target_s = 0.005;
    let fifo = runs(CLOSED, "fifo");
    let (fifo_wait, fifo_se) = mean_se(&fifo, |m| m.wait_mean_s);
    // FIFO: a request waits for the 48 queued ahead of it and the one in service: 49 ms.
    assert!((fifo_wait - 0.049).abs() < 4.0 * fifo_se + 0.001, "FIFO waits {fifo_wait} s");
    let codel = runs(CLOSED, "codel");
    let (wait, se) = mean_se(&codel, |m| m.wait_mean_s);
    eprintln!("CoDel: mean wait {wait:.5} s +- {se:.5} (FIFO {fifo_wait:.5} s)");
    // The standing delay CoDel allows is its target; the sawtooth of each drop cycle (an
    // interval above target before the first drop) sits on top of it: within 4 x target.
    assert!(wait - 4.0 * se > target_s, "mean wait {wait} s is below the target: CoDel over-dropped");
    assert!(wait + 4.0 * se < 4.0 * target_s, "mean wait {wait} s is not near the 5 ms target");
    // The same work is done (the worker never idles): shedding moved the queue, not the goodput.
    let (ok, ok_se) = mean_se(&codel, |m| m.succeeded as f64);
    let (fifo_ok, _) = mean_se(&fifo, |m| m.succeeded as f64);
    assert!((ok - fifo_ok).abs() <= 4.0 * ok_se + 0.01 * fifo_ok, "{ok} vs {fifo_ok}");
}

/// Poisson arrivals at 1.2 x capacity for 20 s that never back off, and no retries.
const OPEN: &str = r#"
name = "codel-open"
seed = 11
runs = 20
horizon = "21s"
[workload]
kind = "open"
rate = 1200.0
duration = "20s"
[server]
concurrency = 1
service_time = { dist = "exponential", mean = "1ms" }
[client]
max_attempts = 1
[[strategies]]
name = "none"
backoff = { kind = "constant", base = "10ms" }
"#;

#[test]
fn against_arrivals_that_do_not_back_off_codel_bounds_the_queue_and_sheds_the_excess_as_retryable_503s() {
    let fifo = runs(OPEN, "fifo");
    let codel = runs(OPEN, "codel");
    let (fifo_wait, _) = mean_se(&fifo, |m| m.wait_mean_s);
    let (wait, se) = mean_se(&codel, |m| m.wait_mean_s);
    eprintln!("open loop: CoDel mean wait {wait:.4} s +- {se:.4}, FIFO {fifo_wait:.4} s");
    // FIFO's queue grows by 200 requests a second: the mean wait is about 2 s. CoDel's square
    // root control law ramps too slowly for load that does not respond to drops to hold 5 ms,
    // but the queue stays bounded.
    assert!(fifo_wait > 1.5, "{fifo_wait}");
    assert!(wait + 4.0 * se < fifo_wait / 5.0, "{wait} vs FIFO {fifo_wait}");
    for m in &codel {
        // A shed request is answered 503, retryable: with max_attempts = 1 its operation ends
        // "exhausted", never "non-retryable"; FIFO leaves the excess unfinished instead.
        assert_eq!(m.failed_by[FailReason::NonRetryable as usize], 0);
        assert!(m.failed_by[FailReason::Exhausted as usize] > 0);
        assert_eq!(m.succeeded + m.failed, m.ops);
    }
    // What CoDel sheds is about the excess: 20 % of the arrivals.
    let (shed_share, se) =
        mean_se(&codel, |m| m.failed_by[FailReason::Exhausted as usize] as f64 / m.ops as f64);
    assert!((shed_share - 0.2 / 1.2).abs() < 4.0 * se + 0.02, "shed {shed_share}");
}
