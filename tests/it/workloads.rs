//! The open workload's arrival processes (`[workload] arrivals`): per-client Poisson streams
//! with a first call at each client's wake-up (Brooker's retry_sim), and fixed-interval
//! arrivals (the OSDI '22 retry experiment's client); `rate_changes = "at-next-arrival"`
//! (Brooker's simple_collapse_sim). Tolerances are 5 standard errors.

use retrysim::experiment::{Overrides, load_str};
use retrysim::metrics::RunMetrics;
use retrysim::sweep;

fn runs(text: &str) -> Vec<RunMetrics> {
    let exp = load_str(text, "workloads", &Overrides::default()).expect("valid experiment");
    sweep::run(&exp, &|_| {}).runs.into_iter().map(|r| r.metrics).collect()
}

/// A fast server that never queues much, no retries: `ops` counts the arrivals.
fn open(runs: u32, rate: f64, clients: u32, extra: &str) -> String {
    format!(
        r#"
name = "w"
seed = 5
runs = {runs}
horizon = "12s"
[workload]
kind = "open"
rate = {rate:?}
duration = "10s"
clients = {clients}
{extra}
[server]
concurrency = 100000
service_time = {{ dist = "constant", value = "500us" }}
[client]
max_attempts = 1
[[strategies]]
name = "once"
backoff = {{ kind = "none" }}
"#
    )
}

fn mean_var(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    (m, xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0))
}

/// One client with its own stream and a first call at wake-up 0: each run's operations are
/// 1 + Poisson(rate x duration), so at least 1, with mean 1 + 50 and variance 50.
#[test]
fn per_client_count_is_one_plus_poisson() {
    let first = r#"arrivals = "per-client"
first_call = { dist = "constant", value = "0" }"#;
    let ops: Vec<f64> = runs(&open(400, 5.0, 1, first)).iter().map(|m| m.ops as f64).collect();
    assert!(ops.iter().all(|&n| n >= 1.0), "the wake-up call always happens");
    let (m, var) = mean_var(&ops);
    let lambda = 5.0 * 10.0;
    let se = (lambda / ops.len() as f64).sqrt();
    assert!((m - (1.0 + lambda)).abs() < 5.0 * se, "mean {m} vs {}", 1.0 + lambda);
    // The sample variance of 400 Poisson(50) draws has sd about 50 * sqrt(2 / 400) (plus the
    // kurtosis term 50 / 400, negligible).
    let var_se = lambda * (2.0 / ops.len() as f64).sqrt() + (lambda / ops.len() as f64).sqrt();
    assert!((var - lambda).abs() < 5.0 * var_se, "variance {var} vs {lambda}");
    // Without the first call, the same stream is Poisson(50) alone.
    let plain: Vec<f64> =
        runs(&open(400, 5.0, 1, r#"arrivals = "per-client""#)).iter().map(|m| m.ops as f64).collect();
    let (m0, _) = mean_var(&plain);
    assert!((m0 - lambda).abs() < 5.0 * se, "mean {m0} vs {lambda}");
}

/// Twenty clients share the fleet's rate: the total is 20 wake-up calls plus Poisson(rate x
/// duration) whatever the number of clients (each client's stream runs at rate / 20).
#[test]
fn per_client_streams_share_the_fleet_rate() {
    let first = r#"arrivals = "per-client"
first_call = { dist = "exponential", mean = "10ms" }"#;
    let ops: Vec<f64> = runs(&open(100, 200.0, 20, first)).iter().map(|m| m.ops as f64).collect();
    let (m, _) = mean_var(&ops);
    // The streams start at the wake-ups (mean 10 ms): 200/s x (10 s - 10 ms) arrivals.
    let expected = 20.0 + 200.0 * 9.99;
    let se = (expected / ops.len() as f64).sqrt();
    assert!((m - expected).abs() < 5.0 * se, "mean {m} vs {expected}");
}

/// Fixed-interval arrivals: exactly 1 / rate apart, the first 1 / rate after 0, so a run of
/// 10 s at 1000/s has 9,999 arrivals (the 10,000th would be at the end, which is excluded),
/// and with a 500 us service on one worker no request ever waits (Poisson arrivals would).
#[test]
fn fixed_arrivals_are_exactly_one_over_rate_apart() {
    let text = open(3, 1000.0, 1, r#"arrivals = "fixed""#).replace("concurrency = 100000", "concurrency = 1");
    for m in runs(&text) {
        assert_eq!(m.ops, 9_999);
        assert_eq!(m.succeeded, 9_999);
        assert_eq!(m.queued_fraction, 0.0, "no arrival finds the worker busy");
        assert_eq!(m.latency_max_s, m.latency_min_s, "every operation takes the service time");
    }
    let poisson = open(3, 1000.0, 1, "").replace("concurrency = 100000", "concurrency = 1");
    assert!(runs(&poisson).iter().all(|m| m.queued_fraction > 0.1), "Poisson arrivals do queue");
}

/// `rate_changes = "at-next-arrival"` keeps the gap drawn before a rate change: when the rate
/// drops to 0 at 5 s, the gap that crosses 5 s still brings one more operation (Brooker's
/// ramp, whose generator keeps going after its rate reaches 0), where the exact stream stops.
/// Per-client streams keep it too: one more operation per client.
#[test]
fn at_next_arrival_carries_one_gap_past_a_drop_to_zero() {
    let ramp_down = |extra: &str| {
        open(20, 100.0, 4, &format!("schedule = [{{ at = \"5s\", rate = 0.0 }}]\n{extra}"))
            .replace("[client]", "[output]\nwindows = { after = [\"5s\", \"10s\"] }\n[client]")
    };
    let after = |text: &str| runs(text).iter().map(|m| m.windows[0].ops).collect::<Vec<_>>();
    assert_eq!(after(&ramp_down("")), vec![0; 20], "exact: nothing arrives at rate 0");
    assert_eq!(after(&ramp_down(r#"rate_changes = "at-next-arrival""#)), vec![1; 20]);
    let per_client = ramp_down("arrivals = \"per-client\"\nrate_changes = \"at-next-arrival\"");
    assert_eq!(after(&per_client), vec![4; 20], "one carried gap per client stream");
}

/// A serial workload of `clients` clients with a `gap` and a constant service time.
fn serial(runs: u32, clients: u32, gap: &str, service: &str) -> String {
    format!(
        r#"
name = "s"
seed = 3
runs = {runs}
horizon = "12s"
[workload]
kind = "serial"
clients = {clients}
gap = {gap}
duration = "10s"
[server]
concurrency = 100000
service_time = {{ dist = "constant", value = "{service}" }}
[client]
max_attempts = 1
[[strategies]]
name = "once"
backoff = {{ kind = "none" }}
"#
    )
}

/// Serial clients start their next call at max(end of the previous one, its start + gap): with
/// a constant 100 ms gap and a 30 ms call the starts are 100 ms, 200 ms, ... 9.9 s (99 per
/// client); with a 150 ms call, one every 150 ms from 100 ms on: 100 ms ... 9.85 s (66).
#[test]
fn serial_clients_start_at_the_later_of_the_end_and_the_gap() {
    let gap = r#"{ dist = "constant", value = "100ms" }"#;
    for m in runs(&serial(2, 7, gap, "30ms")) {
        assert_eq!(m.ops, 7 * 99);
        assert_eq!(m.latency_max_s, 0.03);
    }
    for m in runs(&serial(2, 7, gap, "150ms")) {
        assert_eq!(m.ops, 7 * 66);
        // One call at a time per client: never more than 7 at the server.
        assert!(m.in_server_mean <= 7.0, "{}", m.in_server_mean);
    }
}

/// With calls that take no time, a serial client's starts are its gaps' renewal process: with
/// exponential gaps, Poisson(duration / mean gap) calls.
#[test]
fn serial_clients_with_exponential_gaps_and_instant_calls_are_poisson() {
    let gap = r#"{ dist = "exponential", mean = "100ms" }"#;
    let ops: Vec<f64> = runs(&serial(300, 1, gap, "0")).iter().map(|m| m.ops as f64).collect();
    let (m, _) = mean_var(&ops);
    let lambda = 100.0;
    let se = (lambda / ops.len() as f64).sqrt();
    assert!((m - lambda).abs() < 5.0 * se, "mean {m} vs {lambda}");
}
