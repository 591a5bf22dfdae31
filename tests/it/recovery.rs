//! Recovery after faults (DESIGN §5: `recovery_time_s`, `metastable`) and the fault rules it
//! rests on, checked on whole runs: the congested flagship, a drain of known length, faults
//! past the horizon or too close to the end of the load, the precedence of fault errors over
//! background errors, and the exact maximum latency.

use assert_cmd::cargo::cargo_bin_cmd;
use retrysim::experiment::{self, Experiment, Overrides};
use retrysim::metrics::RunMetrics;
use std::path::Path;

fn load_str(text: &str) -> Experiment {
    experiment::load_str(text, "test.toml", &Overrides::default()).expect("valid experiment")
}

fn runs_of(exp: &Experiment) -> Vec<(String, RunMetrics)> {
    let results = retrysim::sweep::run(exp, &|_| {});
    results
        .runs
        .iter()
        .map(|r| (exp.points[r.point].strategies[r.strategy].name.clone(), r.metrics.clone()))
        .collect()
}

/// The flagship: 1000 payments/s against ~1200/s of capacity with a queue of one second of
/// work, a 5 s outage. Every backoff strategy carries its retries past the outage into a
/// congestion that lasts as long as the load (controls aside: a fleet-wide ratio budget
/// prevents it); immediate retries fail fast inside the outage
/// and the server is healthy again right after it.
#[test]
fn the_congested_flagship_is_metastable_for_every_backoff() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/retry-storm.toml");
    let overrides = Overrides { runs: Some(8), ..Default::default() };
    let exp = experiment::load(&file, &overrides).expect("the flagship is valid");
    let runs = runs_of(&exp);
    let names: Vec<String> = exp.points[0].strategies.iter().map(|s| s.name.clone()).collect();
    let has_controls = |name: &str| {
        let s = exp.points[0].strategies.iter().find(|s| s.name == name).expect("a strategy");
        s.policy.budget.is_some() || s.policy.breaker.is_some() || s.policy.throttle.is_some()
    };
    assert!(names.len() >= 6, "the flagship compares immediate retries with five backoffs");
    for name in &names {
        let mine: Vec<&RunMetrics> = runs.iter().filter(|(n, _)| n == name).map(|(_, m)| m).collect();
        assert!(mine.iter().all(|m| m.metastable.is_some()), "{name}: recovery is measurable");
        if name == "immediate" {
            for m in &mine {
                let r = m.recovery_time_s.expect("immediate retries recover");
                assert!(r <= 2.0, "immediate: recovered after {r} s, expected within 2 s");
            }
        } else if !has_controls(name) {
            let stuck = mine.iter().filter(|m| m.metastable == Some(true)).count();
            assert!(2 * stuck > mine.len(), "{name}: metastable in only {stuck} of {} runs", mine.len());
        } else if name == "jitter+ratio-shared" {
            // A ratio budget shared by the fleet caps retries at 10 % of requests: the
            // congestion never forms.
            assert!(mine.iter().all(|m| m.metastable == Some(false)), "{name}: recovers in every run");
        }
    }
}

/// A capacity drop to zero from 10 s to 15 s with an unbounded queue and no timeout: the
/// requests of those 5 s (rate x 5 s) wait, and once capacity is back the server drains them
/// at (capacity - rate) per second. The first healthy bucket is the one after the drain, so
/// `recovery_time_s` is within one bucket of the drain time.
#[test]
fn recovery_matches_a_drain_of_known_length() {
    let rate = 100.0;
    let capacity = 20.0 / 0.02; // 20 workers, 20 ms each
    let drain_s = rate * 5.0 / (capacity - rate);
    let exp = load_str(
        r#"
name = "drain"
seed = 3
runs = 20
horizon = "40s"
[workload]
kind = "open"
rate = 100.0
duration = "35s"
[server]
concurrency = 20
service_time = { dist = "constant", value = "20ms" }
[[server.faults]]
kind = "capacity"
start = "10s"
duration = "5s"
factor = 0.0
[client]
max_attempts = 1
[[strategies]]
name = "none"
backoff = { kind = "none" }
"#,
    );
    for (_, m) in runs_of(&exp) {
        assert_eq!(m.metastable, Some(false));
        let r = m.recovery_time_s.expect("the drain ends");
        assert!((r - drain_s).abs() <= 1.0, "recovery {r} s vs drain {drain_s} s");
    }
}

const SMALL: &str = r#"
name = "small"
seed = 5
runs = 3
horizon = "30s"
[workload]
kind = "open"
rate = 200.0
duration = "25s"
[server]
concurrency = 10
service_time = { dist = "exponential", mean = "10ms" }
[client]
max_attempts = 3
timeout = "1s"
[[strategies]]
name = "fj"
backoff = { kind = "full-jitter", base = "10ms", cap = "1s" }
"#;

#[test]
fn a_fault_past_the_horizon_does_not_count() {
    let text = format!("{SMALL}[[server.faults]]\nkind = \"outage\"\nstart = \"30s\"\nduration = \"5s\"\n");
    for (_, m) in runs_of(&load_str(&text)) {
        assert_eq!((m.recovery_time_s, m.metastable), (Some(0.0), Some(false)));
    }
}

#[test]
fn too_little_load_after_the_fault_is_unmeasurable_and_check_warns() {
    // The load ends at 25 s; the fault ends 3 s before.
    let text = format!("{SMALL}[[server.faults]]\nkind = \"outage\"\nstart = \"20s\"\nduration = \"2s\"\n");
    for (_, m) in runs_of(&load_str(&text)) {
        assert_eq!((m.recovery_time_s, m.metastable), (None, None));
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("late-fault.toml");
    std::fs::write(&file, &text).unwrap();
    let out = cargo_bin_cmd!("retrysim").arg("check").arg(&file).output().unwrap();
    assert!(out.status.success(), "a warning is not an error");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning:")
            && stderr.contains("`server.faults[0].duration`")
            && stderr.contains("cannot be measured"),
        "{stderr}"
    );
    // The summary averages metastable over the measurable runs only: none here, so empty.
    let out_dir = dir.path().join("out");
    cargo_bin_cmd!("retrysim").arg("run").arg(&file).arg("--out").arg(&out_dir).assert().success();
    let summary = std::fs::read_to_string(out_dir.join("summary.csv")).unwrap();
    let mut lines = summary.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    for col in ["recovery_time_s", "metastable"] {
        let i = header.iter().position(|h| *h == col).unwrap();
        assert_eq!(row[i], "", "{col} is empty when unmeasurable");
    }
}

/// Background errors apply outside faults only: during an `errors` fault its answer replaces
/// them (DESIGN §3.4). A fault answering 503 to everything, next to a background 404 at 20 %,
/// with one attempt: every operation fails with the fault's retryable 503, none with the 404.
#[test]
fn fault_errors_replace_background_errors() {
    let exp = load_str(
        r#"
name = "precedence"
seed = 9
runs = 2
horizon = "12s"
[workload]
kind = "open"
rate = 1000.0
duration = "10s"
[server]
concurrency = 50
service_time = { dist = "constant", value = "1ms" }
errors = [{ status = 404, probability = 0.2 }]
[[server.faults]]
kind = "errors"
start = "0"
duration = "11s"
probability = 1.0
status = 503
[client]
max_attempts = 1
[[strategies]]
name = "once"
backoff = { kind = "none" }
"#,
    );
    for (_, m) in runs_of(&exp) {
        let non_retryable = m.failed_by[retrysim::metrics::FailReason::NonRetryable as usize];
        let exhausted = m.failed_by[retrysim::metrics::FailReason::Exhausted as usize];
        assert!(m.ops > 9000);
        assert_eq!(non_retryable, 0, "the background 404 must not apply during the fault");
        assert_eq!(exhausted, m.ops, "every operation fails with the fault's 503");
    }
}

/// A deterministic latency is reported exactly, not as a histogram bucket edge.
#[test]
fn latency_max_is_exact() {
    let exp = load_str(
        r#"
name = "exact"
runs = 1
horizon = "1m"
[workload]
kind = "closed"
clients = 3
[server]
concurrency = 3
service_time = { dist = "constant", value = "11s" }
[client]
max_attempts = 1
[[strategies]]
name = "none"
backoff = { kind = "none" }
"#,
    );
    for (_, m) in runs_of(&exp) {
        assert_eq!(m.latency_max_s, 11.0);
    }
}
