//! DESIGN §2 (contract): the same experiment file and seed give byte-identical CSV files,
//! whatever the number of threads and from one invocation to the next. DESIGN §6: the CSV
//! columns, and atomic writes that leave no temporary file behind.

use assert_cmd::Command;
use retrysim::engine::rng::run_seed;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// DESIGN §5's metric columns, in order.
const METRICS: [&str; 49] = [
    "ops",
    "succeeded",
    "failed",
    "success_rate",
    "failed_exhausted",
    "failed_non_retryable",
    "failed_deadline",
    "failed_budget",
    "failed_breaker",
    "failed_throttled",
    "failed_bulkhead",
    "failed_limited",
    "failed_unfinished",
    "dead_lettered",
    "calls",
    "amplification",
    "server_calls",
    "server_amplification",
    "pool_timeouts",
    "hedges",
    "hedge_wins",
    "cancelled",
    "completion_time_s",
    "latency_p50_s",
    "latency_p99_s",
    "latency_p999_s",
    "latency_max_s",
    "latency_min_s",
    "latency_mean_s",
    "latency_ok_p50_s",
    "latency_ok_p99_s",
    "duplicates",
    "applied",
    "failed_but_applied",
    "dead_lettered_but_applied",
    "redriven",
    "redrive_succeeded",
    "redeliveries",
    "idempotency_keys_peak",
    "lock_expired",
    "fenced",
    "wasted_work_s",
    "wait_mean_s",
    "queued_fraction",
    "in_server_mean",
    "peak_offered_rps",
    "recovery_time_s",
    "metastable",
    "events",
];

/// A small queue-server experiment that exercises every source of randomness: an open
/// workload with a spike spread over many client processes, network latency and losses,
/// background errors (one with an after effect), every fault kind, timeouts, a deadline,
/// drop_expired, and every jittered backoff, over two sweep points.
const QUEUE_EXPERIMENT: &str = r#"
name = "determinism-queue"
seed = 7
runs = 3
horizon = "20s"

[workload]
kind = "open"
rate = 250.0
duration = "12s"
clients = 40
schedule = [{ at = "3s", rate = 500.0 }, { at = "4s", rate = 250.0 }]

[network]
latency = { dist = "lognormal", median = "2ms", sigma = 0.5 }
request_loss = 0.01
response_loss = 0.02

[server]
kind = "queue"
concurrency = 12
service_time = { dist = "exponential", mean = "30ms" }
queue = 60
reject_status = 429
drop_expired = true
errors = [{ status = 503, probability = 0.02 }, { status = 500, probability = 0.01, after_effect = true }]

[[server.faults]]
kind = "outage"
start = "1s"
duration = "700ms"
status = 503

[[server.faults]]
kind = "capacity"
start = "2s"
duration = "1s"
factor = 0.5

[[server.faults]]
kind = "slowdown"
start = "4s"
duration = "1s"
factor = 3.0

[[server.faults]]
kind = "errors"
start = "5s"
duration = "500ms"
probability = 0.4
status = 502
after_effect = true

[[server.faults]]
kind = "outage"
start = "6s"
duration = "300ms"
status = "timeout"

[client]
timeout = "250ms"
max_attempts = 5
deadline = "1s"

[[strategies]]
name = "full-jitter"
backoff = { kind = "full-jitter", base = "20ms", cap = "1s" }

[[strategies]]
name = "equal-jitter"
backoff = { kind = "equal-jitter", base = "20ms", cap = "1s" }

[[strategies]]
name = "decorrelated-jitter"
backoff = { kind = "decorrelated-jitter", base = "20ms", cap = "1s" }

[[strategies]]
name = "decorrelated-jitter-v2"
backoff = { kind = "decorrelated-jitter-v2", base = "20ms", cap = "1s" }

[[strategies]]
name = "additive-jitter"
backoff = { kind = "additive-jitter", base = "20ms", cap = "1s", jitter = "15ms" }

[[strategies]]
name = "proportional-jitter"
backoff = { kind = "proportional-jitter", base = "20ms", cap = "1s", p = 0.2 }
max_attempts = 3

[[strategies]]
name = "exponential"
backoff = { kind = "exponential", base = "20ms", cap = "1s" }

[sweep]
"server.concurrency" = [10, 16]
"#;

fn retrysim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_retrysim"))
}

fn aws_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/aws-2015-jitter.toml")
}

/// The reduced AWS study: three sweep points, five runs.
const AWS_ARGS: [&str; 4] = ["--runs", "5", "--set", "sweep.workload.clients=[10, 60, 120]"];

/// Runs `retrysim run FILE ARGS --threads N --out DIR` and returns (runs.csv, summary.csv).
fn run(file: &Path, args: &[&str], threads: u32, out: &Path) -> (Vec<u8>, Vec<u8>) {
    retrysim()
        .arg("run")
        .arg(file)
        .args(args)
        .args(["--threads", &threads.to_string(), "--out"])
        .arg(out)
        .assert()
        .success();
    assert_no_temporary_files(out);
    let read = |name: &str| std::fs::read(out.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    (read("runs.csv"), read("summary.csv"))
}

fn assert_no_temporary_files(dir: &Path) {
    let leftovers: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".retrysim-") || n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left in {}: {leftovers:?}", dir.display());
}

/// Runs the experiment twice on one thread and once on two; all outputs must be identical,
/// byte for byte. Returns runs.csv and summary.csv.
fn assert_reproducible(file: &Path, args: &[&str]) -> (Vec<u8>, Vec<u8>) {
    let tmp = tempfile::tempdir().unwrap();
    let first = run(file, args, 1, &tmp.path().join("t1a"));
    let again = run(file, args, 1, &tmp.path().join("t1b"));
    let two = run(file, args, 2, &tmp.path().join("t2"));
    assert!(first.0 == again.0, "runs.csv differs between two invocations on one thread");
    assert!(first.1 == again.1, "summary.csv differs between two invocations on one thread");
    assert!(first.0 == two.0, "runs.csv differs between 1 and 2 threads");
    assert!(first.1 == two.1, "summary.csv differs between 1 and 2 threads");
    // Writing over existing files (the rename path) gives the same bytes again.
    let over = run(file, args, 2, &tmp.path().join("t1a"));
    assert!(first == over, "re-running into the same folder changed the outputs");
    first
}

fn table(bytes: &[u8]) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_reader(bytes);
    let header = r.headers().unwrap().iter().map(String::from).collect();
    let rows = r.records().map(|rec| rec.unwrap().iter().map(String::from).collect()).collect();
    (header, rows)
}

fn expected_runs_header(sweep_keys: &[&str]) -> Vec<String> {
    let mut h: Vec<String> = sweep_keys.iter().map(|k| k.to_string()).collect();
    h.extend(["strategy", "run", "seed"].map(String::from));
    h.extend(METRICS.map(String::from));
    h
}

fn expected_summary_header(sweep_keys: &[&str]) -> Vec<String> {
    let mut h: Vec<String> = sweep_keys.iter().map(|k| k.to_string()).collect();
    h.extend(["strategy", "runs"].map(String::from));
    for m in METRICS {
        h.push(m.to_string());
        h.push(format!("{m}_sd"));
    }
    h
}

/// Checks the headers, the row counts and that the `seed` column is the run's master seed,
/// a function of (experiment seed, run) only: the same at every point (common random numbers).
fn check_layout(
    runs: &[u8],
    summary: &[u8],
    sweep_key: &str,
    points: usize,
    strategies: usize,
    n_runs: u64,
    seed: u64,
) {
    let (header, rows) = table(runs);
    assert_eq!(header, expected_runs_header(&[sweep_key]));
    assert_eq!(rows.len(), points * strategies * n_runs as usize);
    for (i, row) in rows.iter().enumerate() {
        let run: u64 = row[2].parse().unwrap();
        assert_eq!(run, i as u64 % n_runs, "row {i}: runs are numbered 0.. within each cell");
        assert_eq!(row[3], run_seed(seed, run).to_string(), "row {i}: the seed column");
    }
    let (header, rows) = table(summary);
    assert_eq!(header, expected_summary_header(&[sweep_key]));
    assert_eq!(rows.len(), points * strategies);
    assert!(rows.iter().all(|r| r[2] == n_runs.to_string()), "the runs column");
}

#[test]
fn queue_experiment_is_byte_identical_across_threads_and_invocations() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("queue.toml");
    std::fs::write(&file, QUEUE_EXPERIMENT).unwrap();
    let (runs, summary) = assert_reproducible(&file, &[]);
    check_layout(&runs, &summary, "server.concurrency", 2, 7, 3, 7);

    // Common random numbers: neither the strategy nor the sweep point is part of the seed, so
    // in each run every strategy at every point sees the same arrivals (the horizon is past
    // the workload's end, and the swept server size does not change the arrival stream).
    let (header, rows) = table(&runs);
    let ops = header.iter().position(|h| h == "ops").unwrap();
    let mut by_run: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for r in &rows {
        by_run.entry(r[2].clone()).or_default().push(&r[ops]);
    }
    assert_eq!(by_run.len(), 3);
    for (run, ops) in by_run {
        assert_eq!(ops.len(), 14, "two points x seven strategies");
        assert!(
            ops.iter().all(|o| *o == ops[0]),
            "run {run}: ops differ between strategies or points: {ops:?}"
        );
    }
    // ... and different runs draw differently.
    let firsts: Vec<&str> =
        rows.iter().filter(|r| r[0] == "10" && r[1] == "full-jitter").map(|r| r[ops].as_str()).collect();
    assert!(firsts.windows(2).any(|w| w[0] != w[1]), "every run drew the same arrivals: {firsts:?}");
    // The experiment is not degenerate: retries, failures and duplicates all happen.
    let sum = |name: &str| -> f64 {
        let i = header.iter().position(|h| h == name).unwrap();
        rows.iter().map(|r| r[i].parse::<f64>().unwrap()).sum()
    };
    assert!(sum("calls") > sum("ops") * 1.05, "few retries: the experiment does not exercise the policies");
    assert!(sum("failed") > 0.0 && sum("duplicates") > 0.0 && sum("failed_deadline") > 0.0);

    // Another seed: other dice, other results.
    let other = run(&file, &["--seed", "8"], 2, &tmp.path().join("seed8"));
    assert!(other.0 != runs, "--seed 8 gave the same runs.csv as seed 7");
    check_layout(&other.0, &other.1, "server.concurrency", 2, 7, 3, 8);
}

#[test]
fn aws_study_is_byte_identical_across_threads_and_invocations() {
    let (runs, summary) = assert_reproducible(&aws_file(), &AWS_ARGS);
    check_layout(&runs, &summary, "workload.clients", 3, 5, 5, 2015);

    let tmp = tempfile::tempdir().unwrap();
    let mut args = AWS_ARGS.to_vec();
    args.extend(["--seed", "2016"]);
    let other = run(&aws_file(), &args, 2, tmp.path());
    assert!(other.0 != runs, "--seed 2016 gave the same runs.csv as 2015");
}

/// Every admission stage at once: faults, the rate limiter, the dedup store (with requests
/// parked on keys in progress), overload, "don't retry" rejections, `drop_expired`, losses and
/// after-commit errors, under key modes none (behind a retrying gateway layer), per-op and
/// per-attempt.
const STAGES_EXPERIMENT: &str = r#"
name = "determinism-stages"
seed = 13
runs = 3
horizon = "15s"

[workload]
kind = "open"
rate = 300.0
duration = "10s"
clients = 20

[network]
latency = { dist = "exponential", mean = "3ms" }
request_loss = 0.02
response_loss = 0.05

[server]
kind = "queue"
concurrency = 16
service_time = { dist = "exponential", mean = "40ms" }
queue = 40
reject_dont_retry = true
drop_expired = true
errors = [{ status = 504, probability = 0.05, after_effect = true }]
rate_limit = { rate = 320.0, burst = 40.0, retry_after = "exact" }
idempotency = { ttl = "2s", on_in_progress = "wait" }
overload = { alpha = 0.05, knee = 12 }

[[server.faults]]
kind = "capacity"
start = "3s"
duration = "2s"
factor = 0.5

[client]
timeout = "150ms"
max_attempts = 4
honor_retry_after = true
retry_after_cap = "1s"

[[strategies]]
name = "none"
backoff = { kind = "full-jitter", base = "20ms", cap = "1s" }
layers = [{ name = "edge", max_attempts = 2, timeout = "200ms" }]

[[strategies]]
name = "per-op"
idempotency = "per-op"
honor_dont_retry = true
backoff = { kind = "full-jitter", base = "20ms", cap = "1s" }
app_retry = { max_attempts = 3, backoff = { kind = "full-jitter", base = "200ms", cap = "1s" }, key = "same" }

[[strategies]]
name = "per-attempt"
idempotency = "per-attempt"
backoff = { kind = "none" }
dead_letter = { after = 3 }
redrive = { after = "1s", rate = 100.0, key = "new" }

[sweep]
"server.idempotency.on_in_progress" = ["conflict", "wait"]
"#;

#[test]
fn every_stage_on_gives_identical_files_and_series_that_add_up_to_the_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("stages.toml");
    std::fs::write(&file, STAGES_EXPERIMENT).unwrap();
    let read = |dir: &Path, name: &str| std::fs::read(dir.join(name)).unwrap();
    let one = tmp.path().join("t1");
    let two = tmp.path().join("t2");
    run(&file, &[], 1, &one);
    run(&file, &[], 2, &two);
    for name in ["runs.csv", "summary.csv", "timeseries.csv"] {
        assert!(read(&one, name) == read(&two, name), "{name} differs between 1 and 2 threads");
    }

    // Totals over the buckets of the mean series = the summary's means.
    let (sh, srows) = table(&read(&one, "summary.csv"));
    let (th, trows) = table(&read(&one, "timeseries.csv"));
    let col = |h: &[String], name: &str| h.iter().position(|c| c == name).unwrap();
    let num = |s: &str| s.parse::<f64>().unwrap();
    assert_eq!(srows.len(), 6);
    for srow in &srows {
        let (point, strategy) = (&srow[0], &srow[1]);
        let total = |series: &str| -> f64 {
            trows
                .iter()
                .filter(|r| &r[0] == point && &r[1] == strategy)
                .map(|r| num(&r[col(&th, series)]))
                .sum()
        };
        let summary = |metric: &str| num(&srow[col(&sh, metric)]);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(1.0);
        let shown = format!("{point} {strategy}");
        assert!(close(total("offered"), summary("calls")), "{shown}: offered vs calls");
        assert!(close(total("successes"), summary("succeeded")), "{shown}: successes");
        assert!(close(total("failures"), summary("failed")), "{shown}: failures");
        assert!(close(total("duplicates"), summary("duplicates")), "{shown}: duplicates");
        assert!(
            close(total("accepted") + total("rejected"), summary("server_calls")),
            "{shown}: accepted + rejected vs server_calls"
        );
        assert!(close(total("server_calls"), summary("server_calls")), "{shown}: server_calls");
        if strategy == "none" {
            // Its gateway layer retries: more calls reach the server than clients send.
            assert!(total("server_calls") > total("offered"), "{shown}: the layer's retries");
        }
        // The scenario exercises what it claims.
        assert!(total("rejected") > 0.0 && summary("failed") + summary("dead_lettered") > 0.0, "{shown}");
        if strategy == "per-op" {
            assert_eq!(summary("duplicates"), 0.0, "{shown}");
            assert!(summary("idempotency_keys_peak") > 0.0);
        } else {
            assert!(summary("duplicates") > 0.0, "{shown}");
        }
        assert!(
            close(summary("ops"), summary("succeeded") + summary("failed") + summary("dead_lettered")),
            "{shown}"
        );
        assert!(
            close(
                summary("applied"),
                summary("succeeded") + summary("failed_but_applied") + summary("dead_lettered_but_applied")
            ),
            "{shown}"
        );
        if strategy == "per-attempt" {
            // Its tries run out into the dead-letter queue, which is re-driven.
            assert!(summary("dead_lettered") > 0.0 && summary("redriven") > 0.0, "{shown}");
        }
    }
}

#[test]
fn call_graph_experiments_are_byte_identical_across_threads_and_invocations() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments");
    for file in ["retries-everywhere.toml", "fanout-tail.toml"] {
        let args = ["--runs", "2", "--set", "workload.duration=8s", "--set", "horizon=12s"];
        let (runs, summary) = assert_reproducible(&root.join(file), &args);
        let (header, rows) = table(&summary);
        assert!(header.iter().any(|h| h.starts_with("service_amplification@")), "{file}: {header:?}");
        assert!(!rows.is_empty() && !runs.is_empty(), "{file}");
    }
}
