//! SLO-shaped metrics (DESIGN §5): the latency of successful operations only, the server's
//! amplification behind gateway layers, windowed metrics over `[output] windows` (checked
//! against timeseries.csv over the same buckets), and `tune` holding candidates to them.

use crate::support::Table;
use assert_cmd::Command;
use retrysim::experiment::{self, Experiment, Overrides};
use retrysim::metrics::RunMetrics;

fn retrysim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_retrysim"))
}

fn load(text: &str, sets: &[&str]) -> Experiment {
    let set = sets.iter().map(|s| experiment::parse_set_arg(s).unwrap()).collect();
    experiment::load_str(text, "slo.toml", &Overrides { set, ..Default::default() })
        .unwrap_or_else(|e| panic!("{e}"))
}

fn metrics(exp: &Experiment) -> Vec<RunMetrics> {
    retrysim::sweep::run(exp, &|_| {}).runs.into_iter().map(|r| r.metrics).collect()
}

/// 30 % of the answers are lost: those operations fail after the full 1 s timeout, while the
/// others succeed in exactly their service time (no queueing: more workers than clients, no
/// network delay, one attempt).
const SLOW_FAILURES: &str = r#"
name = "slow-failures"
seed = 3
runs = 2
horizon = "120s"
[workload]
kind = "closed"
clients = 50
ops_per_client = 1000
[network]
response_loss = 0.3
[server]
concurrency = 100
service_time = { dist = "uniform", low = "10ms", high = "20ms" }
[client]
timeout = "1s"
max_attempts = 1
[[strategies]]
name = "once"
backoff = { kind = "none" }
"#;

#[test]
fn latency_ok_p99_is_the_service_time_quantile_when_failures_are_slow() {
    for m in metrics(&load(SLOW_FAILURES, &[])) {
        assert!(m.failed as f64 > 0.25 * m.ops as f64, "{} of {} failed", m.failed, m.ops);
        // Every failure took the 1 s timeout, and they are more than 1 % of the operations.
        assert_eq!(m.latency_p99_s, 1.0);
        // The successes' latencies are uniform on [10, 20] ms: p99 is 19.9 ms. The histogram
        // is within 0.1 %; the sample quantile's standard error is
        // sqrt(p (1 - p) / n) / density = sqrt(0.0099 / n) x 10 ms.
        let ok = m.latency_ok_p99_s.expect("some succeeded");
        let se = (0.0099 / m.succeeded as f64).sqrt() * 0.010;
        let tol = 0.001 * 0.0199 + 5.0 * se;
        assert!((ok - 0.0199).abs() <= tol, "latency_ok_p99_s {ok} vs 0.0199 +- {tol}");
        let p50 = m.latency_ok_p50_s.unwrap();
        let tol50 = 0.001 * 0.015 + 5.0 * (0.25 / m.succeeded as f64).sqrt() * 0.010;
        assert!((p50 - 0.015).abs() <= tol50, "latency_ok_p50_s {p50}");
        // The slow failures (30 %) push every quantile of all operations up: the median of all
        // is the successes' 71st percentile.
        assert!(m.latency_p50_s > p50 * 1.05, "{} vs {p50}", m.latency_p50_s);
    }
    // Nothing succeeds: empty, never 0.
    for m in metrics(&load(SLOW_FAILURES, &["network.response_loss=1.0", "workload.ops_per_client=3"])) {
        assert_eq!((m.succeeded, m.latency_ok_p50_s, m.latency_ok_p99_s), (0, None, None));
    }
}

/// 200 operations/s for 60 s, one attempt per operation at the client, with a 10 s outage
/// (503, answered at once) from 20 s; the `edge` strategy's gateway retries 3 times, so the
/// server takes 3 calls per operation in the outage while the clients send 1.
const WINDOWED: &str = r#"
name = "windowed"
seed = 9
runs = 1
horizon = "80s"
[workload]
kind = "open"
rate = 200.0
duration = "60s"
clients = 100
[server]
concurrency = 10
service_time = { dist = "exponential", mean = "20ms" }
[[server.faults]]
kind = "outage"
start = "20s"
duration = "10s"
status = 503
[client]
max_attempts = 1
backoff = { kind = "none" }
[output]
bucket = "10s"
windows = { deploy = ["20s", "40s"], all = ["0s", "80s"], after = ["70s", "80s"] }
[[strategies]]
name = "client-only"
[[strategies]]
name = "edge"
layers = [{ name = "edge", max_attempts = 3, backoff = { kind = "constant", base = "1ms" } }]
"#;

fn run_folder(text: &str, args: &[&str]) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("e.toml"), text).unwrap();
    let out = tmp.path().join("out");
    retrysim()
        .current_dir(tmp.path())
        .args(["run", "e.toml", "--out", "out", "--quiet"])
        .args(args)
        .assert()
        .success();
    (tmp, out)
}

#[test]
fn windowed_metrics_equal_the_time_series_over_the_window() {
    let (_tmp, out) = run_folder(WINDOWED, &[]);
    let runs = Table::read(&out.join("runs.csv"));
    let summary = Table::read(&out.join("summary.csv"));
    let ts = Table::read(&out.join("timeseries.csv"));
    // Windows come in name order, after every whole-run metric.
    let first = runs.col("ops@after");
    assert_eq!(runs.header[first - 1], "events");
    assert_eq!(
        runs.header[first..],
        ["after", "all", "deploy"]
            .map(|w| ["ops", "success_rate", "latency_ok_p99_s", "server_amplification"]
                .map(|m| format!("{m}@{w}")))
            .concat()
    );
    assert_eq!(summary.col("success_rate@deploy_sd"), summary.col("success_rate@deploy") + 1);
    for row in &runs.rows {
        let strategy = runs.get(row, "strategy");
        let buckets: Vec<&Vec<String>> = ts
            .rows
            .iter()
            .filter(|r| ts.get(r, "strategy") == strategy && (20.0..40.0).contains(&ts.num(r, "t_s")))
            .collect();
        assert_eq!(buckets.len(), 2, "[20 s, 40 s) is two 10 s buckets");
        // One attempt per operation, sent as it starts: the clients' offered calls per bucket
        // are the operations started in it.
        let started: f64 = buckets.iter().map(|r| ts.num(r, "offered")).sum();
        let ops = runs.num(row, "ops@deploy");
        assert_eq!(ops, started, "{strategy}: ops@deploy");
        // Every request that arrives at the server is accepted or rejected there, in its bucket.
        let arrived: f64 = buckets.iter().map(|r| ts.num(r, "accepted") + ts.num(r, "rejected")).sum();
        let amp = runs.num(row, "server_amplification@deploy");
        assert!((amp * ops - arrived).abs() < 1e-6, "{strategy}: {amp} x {ops} vs {arrived} arrivals");
        // The series' success rate is by start bucket: weighted by the starts, it is the window's.
        let ok: f64 = buckets.iter().map(|r| ts.num(r, "success_rate") * ts.num(r, "offered")).sum();
        let rate = runs.num(row, "success_rate@deploy");
        assert!((rate * ops - ok).abs() < 1e-6, "{strategy}: success_rate@deploy {rate} vs {}", ok / ops);
        // The whole horizon as a window is the whole run.
        for (windowed, whole) in [
            ("ops@all", "ops"),
            ("success_rate@all", "success_rate"),
            ("latency_ok_p99_s@all", "latency_ok_p99_s"),
            ("server_amplification@all", "server_amplification"),
        ] {
            assert_eq!(runs.get(row, windowed), runs.get(row, whole), "{strategy}: {windowed}");
        }
        // Nothing starts after 60 s: the window's rates are empty, not 0.
        assert_eq!(runs.get(row, "ops@after"), "0");
        for m in ["success_rate@after", "latency_ok_p99_s@after", "server_amplification@after"] {
            assert_eq!(runs.get(row, m), "", "{strategy}: {m}");
        }
        // summary.csv's mean of one run is the run.
        let s = summary.rows.iter().find(|r| summary.get(r, "strategy") == strategy).unwrap();
        assert_eq!(summary.get(s, "success_rate@deploy"), runs.get(row, "success_rate@deploy"));
    }
    // The gateway's retries are visible at the server, not at the clients.
    let edge = runs.rows.iter().find(|r| runs.get(r, "strategy") == "edge").unwrap();
    assert_eq!(runs.num(edge, "amplification"), 1.0);
    assert!(
        runs.num(edge, "server_amplification@deploy") > 1.4,
        "3 server calls per operation during the outage"
    );
    assert!(runs.num(edge, "server_amplification") > runs.num(edge, "amplification"));
}

#[test]
fn windowed_metric_names_work_in_rank_and_where_and_typos_are_caught() {
    let (_tmp, out) = run_folder(WINDOWED, &["--rank", "success_rate@deploy"]);
    let plot = |args: &[&str]| retrysim().arg("plot").arg(&out).args(args).output().unwrap();
    let ok = plot(&["--rank", "server_amplification@deploy", "--where", "success_rate@deploy >= 0"]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert!(stdout.contains("edge") && stdout.contains("client-only"), "{stdout}");
    let typo = plot(&["--rank", "success_rate@deploi"]);
    assert_eq!(typo.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&typo.stderr).contains("did you mean `success_rate@deploy`"));
    // `run` refuses an unknown window before anything runs.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("e.toml"), WINDOWED).unwrap();
    let refused = retrysim()
        .current_dir(tmp.path())
        .args(["run", "e.toml", "--out", "out", "--quiet", "--where", "success_rate@deplo >= 0.9"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("did you mean `success_rate@deploy`"));
    assert!(!tmp.path().join("out").exists(), "nothing ran");
}

#[test]
fn bad_windows_are_refused_with_the_key() {
    for (windows, key, reason) in [
        (r#"{ deploy = ["100s", "60s"] }"#, "output.windows.deploy", "before the end"),
        (r#"{ deploy = ["60s", "60s"] }"#, "output.windows.deploy", "before the end"),
        (r#"{ deploy = ["60s", "90s"] }"#, "output.windows.deploy", "after the horizon"),
        (r#"{ deploy = ["60s"] }"#, "output.windows.deploy", "expected [start, end]"),
        (r#"{ deploy = "60s" }"#, "output.windows.deploy", "expected [start, end]"),
        (r#"{ deploy = ["60", "70s"] }"#, "output.windows.deploy", "60"),
        (r#"{ "de ploy" = ["60s", "70s"] }"#, "output.windows", "not a window name"),
        (r#"{ "a@b" = ["60s", "70s"] }"#, "output.windows", "not a window name"),
        (r#"[["0s", "1s"]]"#, "output.windows", "expected a table"),
    ] {
        let text = WINDOWED.replace(
            r#"windows = { deploy = ["20s", "40s"], all = ["0s", "80s"], after = ["70s", "80s"] }"#,
            &format!("windows = {windows}"),
        );
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("e.toml"), text).unwrap();
        let o = retrysim().current_dir(tmp.path()).args(["check", "e.toml"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{windows}: {stderr}");
        assert!(stderr.contains(key) && stderr.contains(reason), "{windows}: {stderr}");
    }
}

/// Half of the server's answers are 503s, and a gateway layer in front of it tries twice: a
/// client attempt succeeds with probability 0.75 and costs the server 1.5 calls. With k
/// client attempts (`max_attempts`, searched) an operation succeeds with probability
/// 1 - 0.25^k (0.75, 0.94, 0.98, 0.996 for k = 1..4); the clients send
/// (1 - 0.25^k) / 0.75 calls per operation (at most 1.33: `amplification <= 2` holds
/// everywhere), while the server takes 1.5 times that, 2 (1 - 0.25^k): 1.5, 1.875, 1.97, 1.99.
const TUNE_SERVER: &str = r#"
name = "gateway-tune"
seed = 4
runs = 2
horizon = "40s"
[workload]
kind = "open"
rate = 1000.0
duration = "30s"
clients = 100
[server]
concurrency = 20
service_time = { dist = "constant", value = "1ms" }
errors = [{ status = 503, probability = 0.5 }]
[[strategies]]
name = "gw"
max_attempts = 2
backoff = { kind = "constant", base = "1ms" }
layers = [{ name = "edge", max_attempts = 2, backoff = { kind = "constant", base = "1ms" } }]
[tune]
objective = "success_rate"
maximize = true
constraints = ["amplification <= 2"]
runs = 1
confirm_runs = 2
rounds = 2
[tune.space]
max_attempts = [1, 4]
"#;

fn tune(text: &str) -> (tempfile::TempDir, std::path::PathBuf, String, i32) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("e.toml"), text).unwrap();
    let out = tmp.path().join("out");
    let o = retrysim().current_dir(tmp.path()).args(["tune", "e.toml", "--out", "out"]).output().unwrap();
    let stdout = String::from_utf8(o.stdout).unwrap();
    let code = o.status.code().unwrap_or(-1);
    assert!(code == 0 || code == 1, "{}\n{stdout}", String::from_utf8_lossy(&o.stderr));
    (tmp, out, stdout, code)
}

fn recommended_attempts(out: &std::path::Path) -> (Table, f64) {
    let t = Table::read(&out.join("tune.csv"));
    let rec = t.rows.iter().find(|r| t.get(r, "stage") == "recommended").expect("a recommendation");
    let k = t.num(rec, "max_attempts");
    (t, k)
}

#[test]
fn tune_honours_a_server_amplification_constraint_that_amplification_alone_would_not() {
    // Amplification alone: the most attempts win (more successes), and every
    // candidate keeps the clients' amplification within 2.
    let (_a, out, stdout, code) = tune(TUNE_SERVER);
    assert_eq!(code, 0, "{stdout}");
    let (t, k) = recommended_attempts(&out);
    assert_eq!(k, 4.0, "{stdout}");
    assert!(t.rows.iter().all(|r| t.num(r, "amplification") <= 2.0 && t.get(r, "feasible") == "true"));
    // The server's share rules out k >= 3 (1.97 calls per operation and more).
    let with = TUNE_SERVER.replace(
        r#"constraints = ["amplification <= 2"]"#,
        r#"constraints = ["amplification <= 2", "server_amplification <= 1.92"]"#,
    );
    let (_b, out, stdout, code) = tune(&with);
    assert_eq!(code, 0, "{stdout}");
    let (t, k) = recommended_attempts(&out);
    assert_eq!(k, 2.0, "the most attempts within the server's budget:\n{stdout}");
    for r in &t.rows {
        let feasible = t.get(r, "feasible") == "true";
        assert_eq!(feasible, t.num(r, "server_amplification") <= 1.92, "one scenario: {r:?}");
        let expected = |k: f64| 2.0 * (1.0 - 0.25f64.powf(k));
        let k = t.num(r, "max_attempts");
        assert!((t.num(r, "server_amplification") - expected(k)).abs() < 0.03, "{r:?}");
    }
}

/// Capacity 222 requests/s against 200/s; a 3x slowdown from 6 s to 11 s builds a backlog of
/// about 630 requests that drains at 22/s, past the end of the load at 30 s: no run recovers
/// while load arrives.
#[test]
fn never_recovered_counts_as_infinite_recovery_in_tune_and_metastable_can_be_constrained() {
    let text = TUNE_SERVER
        .replace(
            r#"constraints = ["amplification <= 2"]"#,
            r#"constraints = ["recovery_time_s <= 30", "metastable <= 0"]"#,
        )
        .replace(r#"rate = 1000.0"#, r#"rate = 200.0"#)
        .replace(
            r#"concurrency = 20
service_time = { dist = "constant", value = "1ms" }
errors = [{ status = 503, probability = 0.5 }]"#,
            r#"concurrency = 2
service_time = { dist = "constant", value = "9ms" }
[[server.faults]]
kind = "slowdown"
start = "6s"
duration = "5s"
factor = 3.0"#,
        );
    let (_tmp, out, stdout, code) = tune(&text);
    assert_eq!(code, 1, "nothing is feasible: {stdout}");
    let t = Table::read(&out.join("tune.csv"));
    assert!(!t.rows.is_empty());
    for r in &t.rows {
        assert_eq!(t.get(r, "recovery_time_s"), "inf", "never recovered is infinite: {r:?}");
        assert_eq!(t.num(r, "metastable"), 1.0);
        assert_eq!(t.get(r, "feasible"), "false");
    }
    assert!(stdout.contains("recovery_time_s <= 30"), "{stdout}");
}
