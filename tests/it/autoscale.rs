//! The Kubernetes HPA driving a replica set (`[server] autoscale`, DESIGN §3.3) on whole runs:
//! the documentation's vectors (50 replicas at 90 % against 75 % -> 60; within the tolerance
//! no change; a scale-down held for the stabilisation window, then stepped by the rate
//! policy), the start-up delay to the bucket, min and max, and determinism.
//!
//! The load is exact: arrivals at fixed intervals, round robin, one worker per replica and
//! constant service times, so that each replica's utilisation is a known constant.

use crate::support::run_one;
use assert_cmd::Command;
use retrysim::metrics::RunMetrics;

/// 50 replicas of one worker; 450 arrivals/s at fixed intervals, round robin: each replica
/// gets one every 111.1 ms and is busy `service_ms` of it. `autoscale` is the table's keys
/// after `kind`.
fn fixed_load(service_ms: f64, horizon_s: u32, bucket: &str, autoscale: &str) -> String {
    format!(
        r#"
name = "hpa"
seed = 1
runs = 1
horizon = "{horizon_s}s"

[workload]
kind = "open"
rate = 450.0
duration = "{horizon_s}s"
arrivals = "fixed"

[server]
concurrency = 1
service_time = {{ dist = "constant", value = "{service_ms}ms" }}
queue = 10
replicas = 50
autoscale = {{ kind = "hpa", target_utilization = 0.75, {autoscale} }}

[client]
max_attempts = 1
backoff = {{ kind = "none" }}

[output]
bucket = "{bucket}"

[[strategies]]
name = "one-attempt"
"#
    )
}

/// Column `k` of the replica part of timeseries.csv (0 `replicas_up`, 1 `replicas_desired`,
/// 2 `replicas_ready`, 3 `utilization`, then per replica), bucket by bucket.
fn column(m: &RunMetrics, k: usize) -> Vec<Option<f64>> {
    (0..m.series.len()).map(|b| m.series.replica_row(b).unwrap()[k]).collect()
}

/// Buckets are 1 s unless said otherwise, so bucket `b` starts at `b` seconds.
///
/// The docs' example: 90.45 % reads 90 % (the metric is truncated to a whole percent), and
/// ceil(50 x 90 / 75) = 60 at the first sync (15 s). The 10 new replicas are ready 30 s later
/// (45 s): no sync in between changes the count (with 10 starting, 90 % over the 50 ready is
/// 75 % over the 60, within the tolerance), and after it 60 replicas run at 75.4 %.
#[test]
fn ninety_percent_on_fifty_replicas_against_seventy_five_scales_to_sixty_at_the_first_sync() {
    let m = run_one(&fixed_load(100.5, 70, "1s", "max = 100, startup = \"30s\""), &[]);
    let desired = column(&m, 1);
    let ready = column(&m, 2);
    let utilization = column(&m, 3);
    assert_eq!(desired[14], Some(50.0));
    for (b, d) in desired.iter().enumerate().take(70).skip(15) {
        assert_eq!(*d, Some(60.0), "bucket {b}");
    }
    assert_eq!(ready[44], Some(50.0));
    assert_eq!(ready[45], Some(60.0));
    for (b, u) in utilization.iter().enumerate().take(15).skip(2) {
        let u = u.unwrap();
        assert!((u - 0.9045).abs() < 1e-6, "bucket {b}: {u}");
    }
    for (b, u) in utilization.iter().enumerate().take(69).skip(47) {
        let u = u.unwrap();
        assert!((u - 0.9045 * 50.0 / 60.0).abs() < 0.002, "bucket {b}: {u}");
    }
}

/// The start-up delay to the bucket: with 100 ms buckets and `startup` = 30.35 s, the new
/// replicas are ready in the bucket of 45.35 s, and the first new one (slot 50) gets no
/// request before it.
#[test]
fn a_new_replica_takes_requests_exactly_startup_after_the_sync() {
    let m = run_one(&fixed_load(100.5, 50, "100ms", "max = 100, startup = \"30.35s\""), &[]);
    let to_slot_50 = column(&m, 4 + 3 * 50);
    let first = to_slot_50.iter().position(|r| r.is_some_and(|n| n > 0.0)).expect("slot 50 serves");
    // Round robin reaches it within one turn over the 60 (133 ms).
    assert!((453..=454).contains(&first), "first request in bucket {first}");
    let ready = column(&m, 2);
    assert_eq!(ready[452], Some(50.0));
    assert_eq!(ready[453], Some(60.0));
}

/// Within the tolerance nothing moves: 79.2 % reads 79 %, ratio 1.053.
#[test]
fn within_the_tolerance_the_replicas_never_change() {
    let m = run_one(&fixed_load(88.0, 120, "1s", "max = 100, startup = \"30s\""), &[]);
    let desired = column(&m, 1);
    assert!(desired.iter().take(120).all(|d| *d == Some(50.0)), "{desired:?}");
}

/// 30.15 % on 50 replicas recommends ceil(30 / 75 x 50) = 20 from the first sync, but the
/// count at the controller's start (50) holds for the 300 s window. Then a policy of 5 pods
/// per 60 s steps it down: 45 at 300 s, 40 at 360 s, 35 at 420 s, 30 at 480 s, 25 at 540 s.
/// The same work over 35 replicas reads 43 % (15.075 / 35 truncated) and recommends
/// ceil(43 / 75 x 35) = 21, which the window then holds: 21 at 600 s, not 20. A removed
/// replica leaves the balancer at once: ready follows desired.
#[test]
fn scale_down_waits_the_stabilisation_window_then_steps_by_the_rate_policy() {
    let policy =
        "max = 100, startup = \"30s\", scale_down = [{ type = \"pods\", value = 5, period = \"60s\" }]";
    let m = run_one(&fixed_load(33.5, 640, "1s", policy), &[]);
    let desired = column(&m, 1);
    let ready = column(&m, 2);
    let steps = [(0, 50.0), (300, 45.0), (360, 40.0), (420, 35.0), (480, 30.0), (540, 25.0), (600, 21.0)];
    for b in 0..640 {
        let expected = steps.iter().rev().find(|(from, _)| b >= *from).unwrap().1;
        assert_eq!(desired[b], Some(expected), "bucket {b}");
        assert_eq!(ready[b], Some(expected), "bucket {b}");
    }
}

/// `max` caps a scale-up (60 wanted, 55 allowed) and `min` a scale-down (20 wanted, 30 kept).
#[test]
fn max_and_min_bound_the_replicas() {
    let m = run_one(&fixed_load(100.5, 30, "1s", "max = 55, startup = \"5s\""), &[]);
    assert_eq!(column(&m, 1)[20], Some(55.0));
    assert_eq!(column(&m, 2)[20], Some(55.0));
    let m = run_one(&fixed_load(33.5, 330, "1s", "min = 30, max = 100, startup = \"5s\""), &[]);
    let desired = column(&m, 1);
    assert_eq!(desired[299], Some(50.0));
    assert_eq!(desired[300], Some(30.0));
    assert_eq!(desired[329], Some(30.0));
}

/// DESIGN §2 with the autoscaler: the shipped experiment gives the same bytes on one thread
/// and two.
#[test]
fn byte_identical_on_one_and_two_threads() {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/autoscale-storm.toml");
    let tmp = tempfile::tempdir().unwrap();
    let run = |threads: &str, dir: &str| {
        let out = tmp.path().join(dir);
        Command::new(env!("CARGO_BIN_EXE_retrysim"))
            .arg("run")
            .arg(&file)
            .args(["--runs", "2", "--set", "horizon=150s", "--quiet", "--threads", threads, "--out"])
            .arg(&out)
            .assert()
            .success();
        ["runs.csv", "summary.csv", "timeseries.csv"].map(|f| std::fs::read(out.join(f)).unwrap())
    };
    let one = run("1", "one");
    let two = run("2", "two");
    assert!(one == two, "the CSVs differ between 1 and 2 threads");
    let header = String::from_utf8(one[2].clone()).unwrap();
    assert!(header.lines().next().unwrap().contains("replicas_desired"), "the autoscaler's columns");
}
