//! Restarts, rolling deploys and slow start (DESIGN §3.3, §3.4) on whole runs: exactly what a
//! restart drops, Kubernetes' bound on unavailable replicas over a deploy, Envoy's slow-start
//! ramp, and determinism.

use crate::support::run_one;
use assert_cmd::Command;
use retrysim::metrics::RunMetrics;

/// Requests arrive every 0.25 s from 0.25 s to 4.75 s (19 of them); each replica has one
/// worker and an unbounded queue, service takes exactly 1 s; one attempt per operation and no
/// timeout, so an operation fails only if a restart drops it or refuses it.
fn scripted(replicas: u32, restart_s: f64, duration_s: f64) -> String {
    format!(
        r#"
name = "restart"
seed = 1
runs = 1
horizon = "60s"
[workload]
kind = "open"
rate = 4.0
arrivals = "fixed"
duration = "5s"
[server]
concurrency = 1
service_time = {{ dist = "constant", value = "1s" }}
replicas = {replicas}
[[server.faults]]
kind = "restart"
start = "{restart_s}s"
duration = "{duration_s}s"
replica = {last}
[client]
max_attempts = 1
[[strategies]]
name = "once"
backoff = {{ kind = "none" }}
"#,
        last = replicas - 1
    )
}

/// Replica `r`'s requests per bucket.
fn requests(m: &RunMetrics, r: usize) -> Vec<f64> {
    (0..m.series.len()).map(|b| m.series.replica_row(b).unwrap()[1 + 3 * r].unwrap()).collect()
}

/// The fewest replicas up in each bucket.
fn replicas_up(m: &RunMetrics) -> Vec<f64> {
    (0..m.series.len()).map(|b| m.series.replica_row(b).unwrap()[0].unwrap()).collect()
}

/// Two replicas in turn: replica 1 gets the arrivals at 0.5, 1.0, 1.5, ... s and finishes
/// them at 1.5, 2.5, 3.5, ... s. At 3.3 s it holds 4 (6 received, 2 finished: one in service,
/// three queued); at 4.1 s it holds 5 (8 received, 3 finished). A restart drops exactly those,
/// and while it lasts the balancer sends it nothing (every later arrival goes to replica 0
/// and succeeds there).
#[test]
fn a_restart_drops_exactly_what_the_replica_holds() {
    for (at, held) in [(3.3, 4), (4.1, 5)] {
        let m = run_one(&scripted(2, at, 10.0), &[]);
        assert_eq!((m.ops, m.failed, m.succeeded), (19, held, 19 - held), "restart at {at} s");
        // Nothing reaches replica 1 from the restart's bucket on (it is down until 13.3 s, and
        // the arrivals end at 4.75 s).
        let to_1 = requests(&m, 1);
        assert!(to_1[at as usize + 1..].iter().all(|&n| n == 0.0), "{to_1:?}");
        assert_eq!(to_1.iter().sum::<f64>() + requests(&m, 0).iter().sum::<f64>(), 19.0);
    }
}

/// One server (no balancer): at 2.1 s it holds 7 (8 received, the one started at 0.25 s
/// finished at 1.25 s), and the 4 arrivals of [2.1 s, 3.1 s) find its port closed: 11 fail,
/// as connection errors (not retried with one attempt).
#[test]
fn a_restart_of_the_only_server_drops_its_work_and_refuses_while_down() {
    let m = run_one(&scripted(1, 2.1, 1.0), &[]);
    assert_eq!((m.ops, m.failed, m.succeeded), (19, 11, 8));
}

/// A connection reset is retried as a connection error: with two attempts and the restarted
/// replica out of the balancer, every dropped operation succeeds on replica 0.
#[test]
fn a_reset_is_retried() {
    let m = run_one(&scripted(2, 3.3, 10.0), &["client.max_attempts=2"]);
    assert_eq!((m.ops, m.succeeded, m.calls), (19, 19, 23));
}

/// 40 replicas under load, one deploy at 10 s with a 3 s start-up and readiness.
fn deploy(max_unavailable: &str, max_surge: &str) -> String {
    format!(
        r#"
name = "deploy"
seed = 5
runs = 1
horizon = "80s"
[workload]
kind = "open"
rate = 2000.0
duration = "70s"
[server]
concurrency = 4
service_time = {{ dist = "exponential", mean = "40ms" }}
replicas = 40
balancer = "least-request"
[[server.deploys]]
start = "10s"
max_unavailable = {max_unavailable}
max_surge = {max_surge}
startup = "2s"
readiness = "1s"
[client]
max_attempts = 3
timeout = "1s"
[[strategies]]
name = "retry"
backoff = {{ kind = "full-jitter", base = "25ms", cap = "250ms" }}
"#
    )
}

/// Kubernetes' rule over the run: with max_unavailable 10 % (4 of 40) and no surge, never
/// fewer than 36 replicas up at any instant (the bucket minimum), 36 while the deploy runs
/// (10 waves of 3 s: 10 s to 40 s), 40 before and after. With 25 % / 25 % (10 down, 10 extra)
/// never fewer than 30, and a surge replica comes up: 50 slots, back to 40 up at the end.
#[test]
fn a_rolling_deploy_never_has_more_than_max_unavailable_down() {
    let m = run_one(&deploy("\"10%\"", "0"), &[]);
    let up = replicas_up(&m);
    assert!(up.iter().all(|&u| u >= 36.0), "{up:?}");
    assert!(up[..10].iter().all(|&u| u == 40.0) && up[10..40].iter().all(|&u| u == 36.0), "{up:?}");
    assert!(up[40..].iter().all(|&u| u == 40.0), "healthy from 40 s: {up:?}");
    let m = run_one(&deploy("\"25%\"", "\"25%\""), &[]);
    let up = replicas_up(&m);
    assert!(up.iter().all(|&u| u >= 30.0), "{up:?}");
    assert_eq!(up.iter().copied().fold(f64::INFINITY, f64::min), 30.0, "{up:?}");
    assert_eq!(*up.last().unwrap(), 40.0);
    assert_eq!(m.series.replica_row(0).unwrap().len(), 1 + 3 * 50);
    // A surge slot (40 and up) is empty before the deploy, and serves from 13 s (its pod,
    // created at 10 s, ready 3 s later) until the arrivals end at 70 s.
    let surge = requests(&m, 45);
    assert!(surge[..13].iter().all(|&n| n == 0.0) && surge[13..70].iter().all(|&n| n > 0.0), "{surge:?}");
}

/// Envoy's slow start on round robin (weighted by EDF): replica 0 restarts at 10 s for 1 s and
/// rejoins at 11 s with a 20 s window; its weight is max(0.1, t / 20) and its share of the 4
/// replicas' requests w / (w + 3). Per bucket, the requests it gets follow the weight at the
/// bucket's middle within 10 %, and all four are equal again after the window.
#[test]
fn slow_start_ramps_a_rejoining_replica_as_envoys_formula() {
    let text = r#"
name = "slow-start"
seed = 2
runs = 1
horizon = "45s"
[workload]
kind = "open"
rate = 2000.0
arrivals = "fixed"
duration = "40s"
[server]
concurrency = 100
service_time = { dist = "constant", value = "1ms" }
replicas = 4
slow_start = { window = "20s" }
[[server.faults]]
kind = "restart"
start = "10s"
duration = "1s"
replica = 0
[client]
max_attempts = 1
[[strategies]]
name = "once"
backoff = { kind = "none" }
"#;
    let m = run_one(text, &[]);
    let to_0 = requests(&m, 0);
    let total: Vec<f64> = (0..m.series.len()).map(|b| (0..4).map(|r| requests(&m, r)[b]).sum()).collect();
    for b in 12..30 {
        let t = b as f64 + 0.5 - 11.0;
        let w = (t / 20.0).max(0.1);
        let expected = w / (w + 3.0);
        let share = to_0[b] / total[b];
        assert!((share / expected - 1.0).abs() < 0.1, "bucket {b}: {share:.4} vs {expected:.4}");
    }
    for b in 32..39 {
        assert!((to_0[b] / total[b] - 0.25).abs() < 0.01, "bucket {b}: {}", to_0[b] / total[b]);
    }
}

/// DESIGN §2 with restarts, deploys and slow start: the same bytes on one thread and two.
#[test]
fn byte_identical_on_one_and_two_threads() {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/rolling-deploy.toml");
    let tmp = tempfile::tempdir().unwrap();
    let run = |threads: &str, dir: &str| {
        let out = tmp.path().join(dir);
        Command::new(env!("CARGO_BIN_EXE_retrysim"))
            .arg("run")
            .arg(&file)
            .args(["--runs", "2", "--set", "workload.rate=2000", "--quiet", "--threads", threads, "--out"])
            .arg(&out)
            .assert()
            .success();
        ["runs.csv", "summary.csv", "timeseries.csv"].map(|f| std::fs::read(out.join(f)).unwrap())
    };
    assert!(run("1", "t1") == run("2", "t2"), "outputs differ between 1 and 2 threads");
}
