//! `check`'s memory estimate (`experiment::cost`) against the peak resident memory of the
//! run it estimates, on every shipped experiment and an unbounded queue in a retry storm: the
//! estimate must be within 2x of the measurement either way (issue 22: it said 4 GB for an
//! unbounded queue that took 198 MB). The peak is the run's own maximum resident set size
//! as `/usr/bin/time -v` reports it, so tests running beside it do not count. The slow experiments run with fewer runs
//! (`--runs`), which the estimate does not depend on (it is per run, plus the report, whose
//! rows and charts do not depend on the run count either), and long-open on 6 minutes instead
//! of 61, which it does (benches/README.md has the full-size table).

use crate::support::{experiment_file, shipped};
use retrysim::experiment::cost;
use std::process::Command;

/// Runs `retrysim run FILE --out TMP --quiet --threads 1 ARGS` under `/usr/bin/time -v` and
/// returns its peak resident memory in bytes. Not `wait4` on a child of this process: std
/// spawns with the parent's address space shared until `exec`, and Linux carries that
/// space's high-water mark into the child's `ru_maxrss`, so the child would report the test
/// binary's own peak. `time` forks from its own small process.
fn peak_rss(file: &str, set: &[(&str, &str)], runs: Option<u32>) -> f64 {
    let time = std::path::Path::new("/usr/bin/time");
    assert!(time.exists(), "/usr/bin/time is missing: install it with `apt-get install -y time` (as root)");
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(time);
    cmd.arg("-v").arg(env!("CARGO_BIN_EXE_retrysim"));
    cmd.arg("run").arg(experiment_file(file)).arg("--out").arg(tmp.path()).args([
        "--quiet",
        "--threads",
        "1",
    ]);
    for (k, v) in set {
        cmd.args(["--set", &format!("{k}={v}")]);
    }
    if let Some(r) = runs {
        cmd.args(["--runs", &r.to_string()]);
    }
    let out = cmd.output().expect("/usr/bin/time runs");
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{file}: the run failed: {report}");
    let kb: f64 = report
        .lines()
        .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes):"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no maximum resident set size in {report}"));
    kb * 1024.0
}

fn within_2x(file: &str, set: &[(&str, &str)], runs: Option<u32>) -> String {
    let estimate = cost::estimate(&shipped(file, set), 1).peak_bytes;
    let measured = peak_rss(file, set, runs);
    let ratio = estimate / measured;
    let line = format!(
        "{file} {set:?}: estimate {}, measured {}, ratio {ratio:.2}",
        cost::mb(estimate),
        cost::mb(measured)
    );
    assert!((0.5..=2.0).contains(&ratio), "{line}");
    line
}

#[test]
fn the_estimate_is_within_2x_of_the_measured_peak_on_quick_shipped_experiments() {
    for file in [
        "herd-10k.toml",
        "herd-1m.toml",
        "rate-limited-api.toml",
        "loyalty-batch.toml",
        "aws-2015-jitter.toml",
    ] {
        println!("{}", within_2x(file, &[], None));
    }
}

#[test]
fn the_estimate_is_within_2x_of_the_measured_peak_on_slow_shipped_experiments_with_one_run() {
    for file in [
        "retry-storm.toml",
        "metastable.toml",
        "payment-outage.toml",
        "layered-retries.toml",
        "budgets-vs-breakers.toml",
        "tune-payment-api.toml",
    ] {
        println!("{}", within_2x(file, &[], Some(1)));
    }
    let short = [("horizon", "6m"), ("workload.duration", "5m"), ("server.faults[0].start", "2m")];
    println!("{}", within_2x("long-open.toml", &short, None));
}

#[test]
fn the_estimate_is_within_2x_of_the_measured_peak_for_an_unbounded_queue_in_a_storm() {
    // metastable.toml's queue is unbounded, and a queue of 1e8 is too in practice: the storm's
    // backlog at its 10 s point (about 265,000 requests by the fluid model, 262,000 measured)
    // is what the estimate must count, not 1e8.
    println!("{}", within_2x("metastable.toml", &[("server.queue", "100000000")], Some(1)));
    // And the retry storm's file with the same queue: 4 GB was the old estimate.
    println!("{}", within_2x("retry-storm.toml", &[("server.queue", "100000000")], Some(1)));
}
