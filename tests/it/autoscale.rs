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

/// Knative's KPA (`kind = "kpa"`) on `replicas` replicas of 200 workers (no request ever
/// waits, so the concurrency is exactly the arrivals of the last 100 ms: Little's law at
/// every instant), target 10 at 70 % (7 per replica), arrivals at fixed intervals following
/// `schedule`, a replica ready 1 s after the tick that asks for it.
fn kpa_load(replicas: u32, rate: f64, schedule: &str, horizon_s: u32) -> String {
    format!(
        r#"
name = "kpa"
seed = 1
runs = 1
horizon = "{horizon_s}s"

[workload]
kind = "open"
rate = {rate}
duration = "{horizon_s}s"
arrivals = "fixed"
schedule = [{schedule}]

[server]
concurrency = 200
service_time = {{ dist = "constant", value = "100ms" }}
queue = 10
replicas = {replicas}
balancer = "round-robin"
autoscale = {{ kind = "kpa", target = 10, target_utilization = 0.7, max = 100, startup = "1s" }}

[client]
max_attempts = 1
backoff = {{ kind = "none" }}

[output]
bucket = "1s"

[[strategies]]
name = "one-attempt"
"#
    )
}

/// The reference's vector: 100 concurrent requests against 10 x 70 % = 7 per replica ask for
/// ceil(100 / 7) = 15 replicas. The first ticks average what there is: 97.5 at 2 s (the
/// first 100 ms fill up) asks for 14, 98.75 at 4 s for 15, and 15 it stays. Created over 10
/// replicas, the KPA starts in panic mode, which only delays scale-downs.
#[test]
fn kpa_a_hundred_concurrent_requests_at_seven_per_replica_run_on_fifteen() {
    let m = run_one(&kpa_load(10, 1000.0, "", 120), &[]);
    let desired = column(&m, 1);
    let ready = column(&m, 2);
    assert_eq!(desired[1], Some(10.0));
    assert_eq!(desired[2], Some(14.0));
    for (b, d) in desired.iter().enumerate().take(120).skip(4) {
        assert_eq!(*d, Some(15.0), "bucket {b}");
    }
    assert_eq!(ready[4], Some(14.0), "the 4 asked for at 2 s are ready at 3 s");
    assert_eq!(ready[6], Some(15.0));
}

/// Panic mode: 2 replicas carry 10 concurrent requests (2 asked for) until a surge to 100 at
/// 100 s. At the tick of 102 s the 60 s window averages 12.9 (still 2 replicas) but the 6 s
/// window 39.25: 6 replicas, 3 times the 2 ready, over the 200 % threshold: it panics and
/// takes the panic count. Then 10 (69.25 at 104 s) and 15 (99.25 at 106 s). The surge ends
/// at 125 s: while panicking nothing goes down, and the panic ends at the first tick more
/// than a stable window after the threshold was last crossed (102 s): 164 s, where the stable
/// count (41.6 / 7 -> 6) is held to half the 15 ready (7); at the end 10 concurrent run on 2.
#[test]
fn kpa_a_surge_panics_within_a_tick_and_holds_the_scale_for_a_stable_window() {
    let schedule = r#"{ at = "100s", rate = 1000.0 }, { at = "125s", rate = 100.0 }"#;
    let m = run_one(&kpa_load(2, 100.0, schedule, 250), &[]);
    let desired = column(&m, 1);
    for (b, d) in desired.iter().enumerate().take(102) {
        assert_eq!(*d, Some(2.0), "bucket {b}");
    }
    assert_eq!(desired[102], Some(6.0));
    assert_eq!(desired[104], Some(10.0));
    for (b, d) in desired.iter().enumerate().take(164).skip(106) {
        assert_eq!(*d, Some(15.0), "bucket {b}: no scale-down while panicking");
    }
    assert_eq!(desired[164], Some(7.0), "out of panic, at most halved per tick");
    assert_eq!(desired[249], Some(2.0));
}

/// The KPA's own bounds are refused with the key named, before anything runs.
#[test]
fn kpa_bad_settings_exit_2_naming_the_key() {
    for (setting, key) in [
        ("stable_window = \"7.5s\"", "server.autoscale.stable_window"),
        ("stable_window = \"2s\"", "server.autoscale.stable_window"),
        ("target_utilization = 1.5", "server.autoscale.target_utilization"),
        ("target = 0", "server.autoscale.target"),
        ("panic_threshold_percentage = 100", "server.autoscale.panic_threshold_percentage"),
    ] {
        let name = setting.split(" = ").next().unwrap();
        let file = kpa_load(2, 100.0, "", 10)
            .replace("target = 10, target_utilization = 0.7, ", "")
            .replace("startup = \"1s\"", &format!("startup = \"1s\", {setting}"));
        assert!(file.contains(&format!("{name} =")));
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("kpa.toml");
        std::fs::write(&path, file).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
            .arg("run")
            .arg(&path)
            .args(["--quiet", "--out"])
            .arg(tmp.path().join("out"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{setting}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(key), "{setting}: {err}");
    }
}
