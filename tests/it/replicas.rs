//! Replicas behind a load balancer, outlier ejection and retries to another replica (DESIGN
//! §3.3, §3.4, §4) on whole runs: the previous-hosts arithmetic of envoy#27317, Envoy's
//! host re-selection, Mitzenmacher's supermarket model, ejection timing, and determinism.

use assert_cmd::Command;
use retrysim::assembly::simulate;
use retrysim::engine::rng::run_seed;
use retrysim::experiment::{self, Overrides};
use retrysim::metrics::RunMetrics;

/// Runs `runs` replications of the file's one strategy with `--set` overrides.
fn runs(text: &str, sets: &[String], runs: u32) -> Vec<RunMetrics> {
    let set = sets.iter().map(|s| experiment::parse_set_arg(s).unwrap()).collect();
    let exp = experiment::load_str(text, "replicas.toml", &Overrides { set, ..Default::default() })
        .unwrap_or_else(|e| panic!("{e}"));
    let point = &exp.points[0];
    (0..runs).map(|r| simulate(&point.spec, &point.strategies[0], run_seed(exp.seed, r as u64))).collect()
}

fn one(text: &str, sets: &[String]) -> RunMetrics {
    runs(text, sets, 1).remove(0)
}

/// Asserts that a share measured over `n` independent operations is `p` within 4 standard
/// errors.
fn assert_share(what: &str, measured: f64, p: f64, n: u64) {
    let se = (p * (1.0 - p) / n as f64).sqrt();
    assert!(
        (measured - p).abs() <= 4.0 * se,
        "{what}: {measured:.5} vs {p:.5} (4 standard errors: {:.5}, n = {n})",
        4.0 * se
    );
}

/// About 20,000 operations (Poisson arrivals, 200 a second), each retried at once on failure; `replicas` replicas of
/// ample capacity, the last of which answers every request 503 for the whole run.
fn one_down(replicas: u32, balancer: &str) -> String {
    format!(
        r#"
name = "one-down"
seed = 11
runs = 1
horizon = "120s"
[workload]
kind = "open"
rate = 200.0
duration = "100s"
[server]
concurrency = 1000
service_time = {{ dist = "constant", value = "1ms" }}
replicas = {replicas}
balancer = "{balancer}"
[[server.faults]]
kind = "outage"
start = "0s"
duration = "200s"
replica = {last}
status = 503
[client]
max_attempts = 1
[[strategies]]
name = "retry"
backoff = {{ kind = "none" }}
"#,
        last = replicas - 1
    )
}

/// envoy#27317: two replicas, one failing, random balancer, no host exclusion: success after
/// 0, 1, 2, 3 retries is 1 - 0.5^(k+1) = 50, 75, 87.5, 93.75 %.
#[test]
fn one_of_two_failing_random_balancer_without_exclusion() {
    let text = one_down(2, "random");
    for (retries, expected) in [(0, 0.5), (1, 0.75), (2, 0.875), (3, 0.9375)] {
        let m = one(&text, &[format!("client.max_attempts={}", retries + 1)]);
        assert!(m.ops > 19_000, "{}", m.ops);
        assert_share(&format!("{retries} retries"), m.succeeded as f64 / m.ops as f64, expected, m.ops);
    }
}

/// With `retry_other_replica`, Envoy's `chooseHost` re-picks a tried replica at most
/// `host_selection_retry_max_attempts` times and then keeps the last pick: with random picks
/// over two replicas and the default of 1, one retry still lands on the failing replica with
/// probability 1/2 x 1/2, so success is 1 - 1/2 x 1/4 = 87.5 %, not the 100 % the issue's
/// author expected. With 60 re-picks the chance that every pick is the tried replica is 2^-61
/// per operation: every one of the 20,000 operations succeeds.
#[test]
fn one_of_two_failing_with_retry_other_replica() {
    let text = one_down(2, "random");
    let other = "client.retry_other_replica=true".to_owned();
    let m = one(&text, &["client.max_attempts=2".into(), other.clone()]);
    assert_share("one retry, default re-pick", m.succeeded as f64 / m.ops as f64, 0.875, m.ops);
    let m = one(
        &text,
        &[
            "client.max_attempts=2".into(),
            other.clone(),
            "client.host_selection_retry_max_attempts=60".into(),
        ],
    );
    assert_eq!(m.succeeded, m.ops, "exactly 100 % after one retry");
    // Round robin: two consecutive picks over two replicas always differ, so the re-pick
    // never lands on the tried replica, whatever the traffic in between.
    let m = one(&one_down(2, "round-robin"), &["client.max_attempts=2".into(), other]);
    assert_eq!(m.succeeded, m.ops);
}

/// One of three replicas down, two attempts, random balancer: without exclusion an operation
/// fails when both picks hit it, 1/9, so 8/9 succeed; with `retry_other_replica` the retry
/// lands there only when all its 1 + k picks do: 1 - 1/3 x (1/3)^(1+k), 26/27 with Envoy's
/// default k = 1 and 242/243 (> 0.99) with k = 3.
#[test]
fn one_of_three_down_with_two_attempts() {
    let text = one_down(3, "random");
    let two = "client.max_attempts=2".to_owned();
    let m = one(&text, std::slice::from_ref(&two));
    assert_share("without exclusion", m.succeeded as f64 / m.ops as f64, 8.0 / 9.0, m.ops);
    let other = "client.retry_other_replica=true".to_owned();
    let m = one(&text, &[two.clone(), other.clone()]);
    assert_share("previous_hosts, 1 re-pick", m.succeeded as f64 / m.ops as f64, 26.0 / 27.0, m.ops);
    let m = one(&text, &[two, other, "client.host_selection_retry_max_attempts=3".into()]);
    let rate = m.succeeded as f64 / m.ops as f64;
    assert_share("previous_hosts, 3 re-picks", rate, 242.0 / 243.0, m.ops);
    assert!(rate > 0.99, "{rate}");
}

/// Ring hash keys the pick on the operation: without re-selection its retries go where its
/// first attempt went, so exactly the operations hashed to the failing replica fail, however
/// often they retry.
#[test]
fn ring_hash_retries_land_on_the_same_replica() {
    let text = one_down(2, "ring-hash");
    let once = one(&text, &["client.max_attempts=1".into()]);
    let four = one(&text, &["client.max_attempts=4".into()]);
    assert_eq!(once.succeeded, four.succeeded, "retries change nothing");
    assert_eq!(four.server_calls, once.server_calls + 3 * (once.ops - once.succeeded));
    assert_share("keys on the healthy replica", once.succeeded as f64 / once.ops as f64, 0.5, once.ops);
}

/// Mitzenmacher's supermarket model (IEEE TPDS 12(10), 2001): n FIFO single-worker servers,
/// Poisson arrivals at rate 0.9 n, exponential service of mean 1; each arrival joins the
/// shorter of 2 sampled queues. As n -> infinity the mean time in system is
/// T_2(0.9) = sum_{i >= 1} 0.9^(2^i - 2) = 2.614 service times, against 1/(1 - 0.9) = 10 for one random
/// choice. With n = 100 the value is a little above the limit (the paper's own simulations at
/// finite n sit above T_2, and Envoy draws with replacement, the same server twice 1 % of the
/// time): we accept [T_2, T_2 + 6 %]. Random choice is exactly M/M/1 at each server
/// (a Poisson stream split at random): 10 service times, within 4 standard errors over 4 runs.
#[test]
fn supermarket_model_least_request_and_random() {
    let text = r#"
name = "supermarket"
seed = 3
runs = 4
horizon = "110s"
[workload]
kind = "open"
rate = 9000.0
duration = "100s"
[server]
concurrency = 1
service_time = { dist = "exponential", mean = "10ms" }
replicas = 100
balancer = "least-request"
[client]
max_attempts = 1
[[strategies]]
name = "once"
backoff = { kind = "none" }
"#;
    let t2: f64 = (1..25).map(|i| 0.9f64.powi((1 << i) - 2)).sum();
    assert!((t2 - 2.614).abs() < 5e-4, "{t2}");
    let mean_in_service_times =
        |ms: &[RunMetrics]| -> Vec<f64> { ms.iter().map(|m| m.latency_mean_s / 0.010).collect() };
    let p2c = mean_in_service_times(&runs(text, &[], 2));
    for t in &p2c {
        assert!(
            *t >= t2 - 0.01 && *t <= t2 * 1.06,
            "least-request, 2 choices: {t:.3} service times, T_2 = {t2:.3}"
        );
    }
    let random = mean_in_service_times(&runs(text, &["server.balancer=\"random\"".into()], 4));
    let mean = random.iter().sum::<f64>() / random.len() as f64;
    let sd = (random.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / (random.len() - 1) as f64).sqrt();
    let se = sd / (random.len() as f64).sqrt();
    assert!(
        (mean - 10.0).abs() <= 4.0 * se.max(0.05),
        "random: {mean:.3} +- {se:.3} service times, expected 10"
    );
    assert!(mean > 3.0 * p2c[0], "two choices are far better than one");
}

/// Envoy's consecutive-5xx ejection on a whole run: 10 replicas in turn (100 operations a
/// second, so the failing replica gets one every 0.1 s), no retries. Its 5th failure (at about
/// 0.45 s) ejects it; it is back at the first 10 s tick 30 s later (40 s), fails 5 more and is
/// ejected for 2 x 30 s, back at 110 s, after the arrivals end at 100 s: exactly 10 operations
/// fail. Without detection every tenth fails.
#[test]
fn ejection_after_five_consecutive_5xx_back_after_30_s_then_60_s() {
    let text = r#"
name = "eject"
seed = 1
runs = 1
horizon = "120s"
[workload]
kind = "open"
arrivals = "fixed"
rate = 100.0
duration = "100s"
[server]
concurrency = 10
service_time = { dist = "constant", value = "1ms" }
replicas = 10
balancer = "round-robin"
outlier = {}
[[server.faults]]
kind = "outage"
start = "0s"
duration = "500s"
replica = 3
[client]
max_attempts = 1
[[strategies]]
name = "once"
backoff = { kind = "none" }
"#;
    let m = one(text, &[]);
    // Arrivals every 10 ms from 10 ms: 9,999 in the 100 s.
    assert_eq!((m.ops, m.failed), (9_999, 10));
    let later = one(text, &["workload.duration=\"115s\"".into(), "horizon=\"130s\"".into()]);
    assert_eq!(later.failed, 15, "back at 110 s: five more failures");
    let without = one(&text.replace("outlier = {}\n", ""), &[]);
    // Requests 0, 1, 2, ... go to replicas 0, 1, 2, ... in turn: 3, 13, ... fail.
    assert_eq!(without.failed, (0..9_999).filter(|i| i % 10 == 3).count() as u64);
    // Three replicas: ejecting one would be 33 % > max_ejection_percent 10 %: nothing is ejected.
    let three =
        one(&text.replace("replicas = 10", "replicas = 3").replace("replica = 3", "replica = 2"), &[]);
    assert_eq!(three.failed, (0..9_999).filter(|i| i % 3 == 2).count() as u64);
}

/// A slow replica: peak EWMA learns its latency and sends it less than its share; round robin
/// sends it exactly its share.
#[test]
fn peak_ewma_avoids_a_slow_replica() {
    let text = r#"
name = "slow"
seed = 5
runs = 1
horizon = "40s"
[workload]
kind = "open"
rate = 500.0
duration = "30s"
[server]
concurrency = 4
service_time = { dist = "exponential", mean = "5ms" }
replicas = 4
balancer = "peak-ewma"
[[server.faults]]
kind = "slowdown"
start = "0s"
duration = "100s"
replica = 0
factor = 20.0
[client]
max_attempts = 1
[[strategies]]
name = "once"
backoff = { kind = "none" }
"#;
    let ewma = one(text, &[]);
    let rr = one(text, &["server.balancer=\"round-robin\"".into()]);
    assert!(
        ewma.latency_mean_s < 0.5 * rr.latency_mean_s,
        "{} vs {}",
        ewma.latency_mean_s,
        rr.latency_mean_s
    );
}

/// DESIGN §2 with replicas, every balancer, the detector and `retry_other_replica`: the same
/// bytes on one thread and on two.
#[test]
fn byte_identical_on_one_and_two_threads() {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/replica-outage.toml");
    let tmp = tempfile::tempdir().unwrap();
    let run = |threads: &str, dir: &str| {
        let out = tmp.path().join(dir);
        Command::new(env!("CARGO_BIN_EXE_retrysim"))
            .arg("run")
            .arg(&file)
            .args(["--runs", "2", "--quiet", "--threads", threads, "--out"])
            .arg(&out)
            .assert()
            .success();
        ["runs.csv", "summary.csv", "timeseries.csv"].map(|f| std::fs::read(out.join(f)).unwrap())
    };
    let one = run("1", "t1");
    let two = run("2", "t2");
    assert!(one == two, "outputs differ between 1 and 2 threads");
}
