//! Adaptive concurrency limits on whole runs (DESIGN §4.9 client `limit`, §3.3
//! `[server.adaptive_concurrency]`), with constant service times and fixed-interval arrivals so
//! that every count and every limit is exact: AIMD's multiplicative decrease on each drop,
//! calls over the limit rejected without reaching the server, a windowed Vegas limit settling
//! at the server's capacity x minRTT plus its queue allowance, Envoy's gradient controller
//! reproducing its worked example inside a run and answering 503 over its limit, and the
//! limit columns reproducible on 1 and 2 threads.

use crate::support::{failed, run_strategy as run};
use assert_cmd::Command;
use retrysim::metrics::series::{Count, Gauge};
use retrysim::metrics::{FailReason, RunMetrics};

/// The value of gauge `g` at the end of each bucket.
fn gauge(m: &RunMetrics, g: Gauge) -> Vec<f64> {
    (0..m.series.len()).map(|i| m.series.gauge_row(i)[g as usize].expect("the gauge is set")).collect()
}

/// One worker without a queue, 100 ms per request, an operation every 10 ms (the first at
/// 10 ms) with one attempt: a shared AIMD limit starting at 10.
const AIMD: &str = r#"
name = "aimd"
seed = 1
runs = 1
horizon = "1s"
[workload]
kind = "open"
arrivals = "fixed"
rate = 100.0
duration = "1s"
[server]
concurrency = 1
queue = 0
service_time = { dist = "constant", value = "100ms" }
[client]
max_attempts = 1
limit = { kind = "aimd", initial_limit = 10, min_limit = 1, scope = "shared" }
[output]
bucket = "10ms"
[[strategies]]
name = "aimd"
backoff = { kind = "none" }
"#;

/// Operation 1 (10 ms) holds the worker until 110 ms; 2 to 10 (20 ms to 100 ms) are answered
/// 503 at once, each a drop: 10 x 0.9 = 9, then 8.1 -> 8, 7.2 -> 7, ... 1.8 -> 1. At 110 ms
/// operation 1 succeeds with 1 in flight (1 x 2 >= 1): +1 = 2, and 11 goes in; 12 is a drop
/// (2 x 0.9 -> 1), and 13 to 20 find 1 in flight at a limit of 1: rejected by the client,
/// without a call. Every 100 ms the same: 1 success, 1 drop, 8 rejections.
#[test]
fn aimd_decreases_multiplicatively_on_each_drop_and_rejects_over_the_limit() {
    let m = run(AIMD, &[], 0);
    let limit = gauge(&m, Gauge::ClientLimit);
    assert_eq!(limit[..13], [10.0, 10.0, 9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0, 2.0, 1.0]);
    assert_eq!(limit[20..23], [1.0, 2.0, 1.0], "the same cycle every 100 ms");
    // 99 operations (10 ms to 990 ms): 1 + 8 succeed (the last admitted one, at 910 ms, is
    // unfinished at 1 s), 9 + 9 drops, 8 x 8 + 7 rejections.
    assert_eq!((m.ops, m.succeeded), (99, 9));
    assert_eq!(failed(&m, FailReason::Exhausted), 18);
    assert_eq!(failed(&m, FailReason::Limited), 71);
    assert_eq!(failed(&m, FailReason::Unfinished), 1);
    // A rejected operation never reaches the server and ends where it started.
    assert_eq!((m.calls, m.server_calls), (28, 28));
    assert_eq!(m.calls, m.ops - failed(&m, FailReason::Limited));
    assert_eq!(m.latency_min_s, 0.0);
    // The library's default floor (min_limit 20) keeps 20 through every drop: nothing is
    // rejected by the client then.
    let floor = run(AIMD, &["client.limit.min_limit=20", "client.limit.initial_limit=20"], 0);
    assert!(gauge(&floor, Gauge::ClientLimit).iter().all(|l| *l == 20.0));
    assert_eq!(failed(&floor, FailReason::Limited), 0);
}

/// 20 workers at a constant 10 ms (2,000 requests a second, so capacity x minRTT = 20 in
/// flight) under 3,000 operations a second: Vegas behind the library's WindowedLimit.
const VEGAS: &str = r#"
name = "vegas"
seed = 3
runs = 1
horizon = "20s"
[workload]
kind = "open"
arrivals = "fixed"
rate = 3000.0
duration = "20s"
[server]
concurrency = 20
service_time = { dist = "constant", value = "10ms" }
[client]
max_attempts = 1
limit = { kind = "vegas", scope = "shared", windowed = true }
[[strategies]]
name = "vegas"
backoff = { kind = "none" }
"#;

/// Vegas holds when its queue estimate `ceil(L (1 - minRTT / rtt))` lies in [alpha, beta] =
/// [3 log10 L, 6 log10 L]; with `L` in flight at `C` workers, `rtt = minRTT x L / C` and the
/// estimate is `L - C`, so the limit settles in [C + 3, C + 6] = [23, 26] for C = 20 (log10
/// is 1 below 100), above capacity x minRTT by the queue Vegas allows. It gets there from 20
/// by +6 a window (no queue seen) and stays: the tolerance is that band, exactly.
#[test]
fn a_windowed_vegas_limit_settles_at_capacity_times_min_rtt_plus_its_queue() {
    for workers in [20u32, 40] {
        let rate = format!("workload.rate={}", workers * 150);
        let m = run(VEGAS, &[&format!("server.concurrency={workers}"), &rate], 0);
        let limit = gauge(&m, Gauge::ClientLimit);
        let c = workers as f64;
        let settled = &limit[8..];
        assert!(settled.iter().all(|l| (c + 3.0..=c + 6.0).contains(l)), "C = {workers}: {limit:?}");
        // Throughput is the server's capacity, and the rest is rejected by the client.
        // Once settled, the server serves its capacity (C / 10 ms a second).
        let served: f64 =
            (10..20).map(|i| m.series.row(i)[Count::Successes as usize].unwrap()).sum::<f64>() / 10.0;
        assert_eq!(served, c * 100.0, "C = {workers}");
        assert!(failed(&m, FailReason::Limited) > 0);
    }
}

/// 10 workers at 10 ms, an operation every 10 ms (the first at 10 ms); Envoy's controller
/// with min_concurrency 100, so that the limit before and after the first minRTT measurement
/// is 100 (the 50th sample ends it at 510 ms with minRTT 10 ms; the first update comes at
/// 1.51 s), and min_concurrency_limit 3, so that the limit may fall below 100.
const ENVOY: &str = r#"
name = "envoy"
seed = 1
runs = 1
horizon = "2s"
[workload]
kind = "open"
arrivals = "fixed"
rate = 100.0
duration = "2s"
[server]
concurrency = 10
service_time = { dist = "constant", value = "10ms" }
adaptive_concurrency = { concurrency_update_interval = "1s", min_rtt_interval = "60s", min_concurrency = 100, min_concurrency_limit = 3 }
[client]
max_attempts = 1
[output]
bucket = "10ms"
[[strategies]]
name = "once"
backoff = { kind = "none" }
"#;

/// Envoy's worked example (docs/overload-and-topology.md §1.3): limit 100, minRTT 10 ms,
/// buffer 25 %: a 10 ms sample gives gradient 1.25 and 125 + sqrt(125) -> 136; when every
/// request from 0.6 s on takes 2.5 x as long (a slowdown fault), the p50 sample is 25 ms,
/// the gradient 0.5, and 50 + sqrt(50) -> 57.
#[test]
fn envoys_gradient_controller_reproduces_its_worked_example_in_a_run() {
    let m = run(ENVOY, &[], 0);
    let limit = gauge(&m, Gauge::ServerLimit);
    assert!(limit[..151].iter().all(|l| *l == 100.0), "100 until the update at 1.51 s");
    assert_eq!(limit[151], 136.0);
    let slow = ENVOY.replace(
        "[client]",
        "[[server.faults]]\nkind = \"slowdown\"\nstart = \"600ms\"\nduration = \"10s\"\nfactor = 2.5\n[client]",
    );
    let m = run(&slow, &[], 0);
    let limit = gauge(&m, Gauge::ServerLimit);
    assert_eq!((limit[150], limit[151]), (100.0, 57.0));
    assert_eq!(m.succeeded, m.ops - failed(&m, FailReason::Unfinished), "never over the limit");
}

/// From the default min_concurrency of 3, with minRTT measured at 10 ms and every sample
/// 10 ms, each update multiplies by 1.25 and adds the square root: 3 -> 5 -> 8 -> 13 -> 20 ->
/// 30 -> 43 -> 61 -> 84 -> 115 (hand-computed: 3.75 + 1.94, 6.25 + 2.5, 10 + 3.16, ...).
#[test]
fn the_server_limit_grows_by_the_gradient_each_update() {
    let m = run(
        ENVOY,
        &[
            "server.adaptive_concurrency.min_concurrency=3",
            "server.adaptive_concurrency.concurrency_update_interval=100ms",
            "horizon=1.5s",
            "workload.duration=1.5s",
        ],
        0,
    );
    let limit = gauge(&m, Gauge::ServerLimit);
    // Updates at 610 ms, 710 ms, ...: the value at the end of the buckets just after each.
    let after: Vec<f64> = (0..9).map(|k| limit[61 + 10 * k]).collect();
    assert_eq!(after, [5.0, 8.0, 13.0, 20.0, 30.0, 43.0, 61.0, 84.0, 115.0]);
    assert_eq!(limit[60], 3.0);
}

/// Five requests at once during the first minRTT measurement, when the limit is
/// min_concurrency (3): the first three go on, the other two are answered 503 at once.
#[test]
fn requests_over_the_server_limit_are_answered_503() {
    let text = r#"
name = "envoy-burst"
seed = 1
runs = 1
horizon = "1s"
[workload]
kind = "closed"
clients = 5
ops_per_client = 1
[server]
concurrency = 10
service_time = { dist = "constant", value = "10ms" }
adaptive_concurrency = { concurrency_update_interval = "100ms", min_rtt_interval = "60s" }
[client]
max_attempts = 1
[[strategies]]
name = "once"
backoff = { kind = "none" }
"#;
    let m = run(text, &[], 0);
    assert_eq!((m.ops, m.succeeded, m.server_calls), (5, 3, 5));
    assert_eq!(failed(&m, FailReason::Exhausted), 2, "two 503s, one attempt each");
    assert_eq!(m.latency_min_s, 0.0, "answered at once");
    // Retried at once, the 503s find the same three outstanding: no better.
    let m = run(text, &["client.max_attempts=3"], 0);
    assert_eq!((m.succeeded, m.server_calls), (3, 3 + 2 * 3));
}

/// The limits' columns are reproducible on any number of threads.
#[test]
fn limit_columns_are_the_same_on_1_and_2_threads() {
    let dir = std::env::temp_dir().join(format!("retrysim-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("limits.toml");
    let text = VEGAS.replace("runs = 1", "runs = 3").replace("horizon = \"20s\"", "horizon = \"3s\"")
        + "[[strategies]]\nname = \"aimd\"\nbackoff = { kind = \"none\" }\nlimit = { kind = \"aimd\" }\n"
        + "[[strategies]]\nname = \"gradient2\"\nbackoff = { kind = \"none\" }\nlimit = { kind = \"gradient2\", scope = \"shared\" }\n";
    let text = text.replace(
        "service_time = { dist = \"constant\", value = \"10ms\" }",
        "service_time = { dist = \"exponential\", mean = \"10ms\" }\nadaptive_concurrency = { concurrency_update_interval = \"100ms\", min_rtt_interval = \"1s\" }",
    );
    std::fs::write(&file, text).unwrap();
    let out = |threads: &str| {
        let o = dir.join(format!("out{threads}"));
        Command::cargo_bin("retrysim")
            .unwrap()
            .args([
                "run",
                file.to_str().unwrap(),
                "--quiet",
                "--threads",
                threads,
                "--out",
                o.to_str().unwrap(),
            ])
            .assert()
            .success();
        ["runs.csv", "summary.csv", "timeseries.csv"].map(|f| std::fs::read(o.join(f)).unwrap())
    };
    let (one, two) = (out("1"), out("2"));
    assert_eq!(one, two);
    let header = String::from_utf8(one[2].clone()).unwrap();
    let header = header.lines().next().unwrap();
    assert!(header.ends_with(",client_limit,client_limit_sd,server_limit,server_limit_sd"), "{header}");
    std::fs::remove_dir_all(&dir).unwrap();
}
