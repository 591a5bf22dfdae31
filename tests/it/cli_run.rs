//! The command line (DESIGN §6, §8): help, `check`, `run` and its flags, output files and
//! exit codes.

use crate::support::Table;
use assert_cmd::Command;
use retrysim::engine::rng::run_seed;
use std::path::{Path, PathBuf};

fn retrysim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_retrysim"))
}

fn experiment(name: &str) -> PathBuf {
    crate::support::experiment_file(name)
}

fn stdout(cmd: &mut Command) -> String {
    let out = cmd.assert().success().get_output().clone();
    String::from_utf8(out.stdout).unwrap()
}

/// retry-storm with a shorter workload, so that each run takes milliseconds.
const SHORT: [&str; 4] = ["--set", "workload.duration=20s", "--set", "horizon=40s"];

/// `retrysim run retry-storm.toml SHORT ARGS --out DIR`, returning (runs.csv, summary.csv)
/// and stdout.
fn run_storm(args: &[&str], out: &Path) -> (Table, Table, String) {
    let stdout = stdout(
        retrysim()
            .arg("run")
            .arg(experiment("retry-storm.toml"))
            .args(SHORT)
            .args(args)
            .arg("--out")
            .arg(out),
    );
    (Table::read(&out.join("runs.csv")), Table::read(&out.join("summary.csv")), stdout)
}

#[test]
fn help_documents_every_verb_and_flag() {
    let top = stdout(retrysim().arg("--help"));
    for verb in ["run", "check", "tune"] {
        assert!(
            top.lines().any(|l| l.trim_start().starts_with(verb)),
            "`retrysim --help` lists `{verb}`:\n{top}"
        );
    }
    let run = stdout(retrysim().args(["run", "--help"]));
    for flag in ["--out", "--set", "--runs", "--seed", "--threads", "--stats"] {
        assert!(run.contains(flag), "`retrysim run --help` documents {flag}:\n{run}");
    }
    assert!(run.contains("FILE") || run.contains("<FILE>"), "the experiment file argument:\n{run}");
    let tune = stdout(retrysim().args(["tune", "--help"]));
    for flag in ["--out", "--set", "--runs", "--seed", "--threads", "--quiet"] {
        assert!(tune.contains(flag), "`retrysim tune --help` documents {flag}:\n{tune}");
    }
    let check = stdout(retrysim().args(["check", "--help"]));
    for flag in ["--set", "--runs", "--seed"] {
        assert!(check.contains(flag), "`retrysim check --help` documents {flag}:\n{check}");
    }
}

#[test]
fn check_accepts_the_shipped_experiments_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["retry-storm.toml", "aws-2015-jitter.toml"] {
        let out = stdout(retrysim().current_dir(tmp.path()).arg("check").arg(experiment(name)));
        assert!(out.contains("ok"), "{name}: {out}");
    }
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "check ran or wrote something");
    // retry-storm: 1 point x 11 strategies x 20 runs; --runs and --set are applied before checking.
    let out = stdout(retrysim().args(["check", "--runs", "3"]).arg(experiment("retry-storm.toml")));
    let numbers: Vec<&str> = out.split(|c: char| !c.is_ascii_digit()).filter(|t| !t.is_empty()).collect();
    assert!(numbers.contains(&"33"), "11 strategies x 3 runs: {out}");
}

#[test]
fn run_writes_one_row_per_cell_with_the_runs_and_seed_asked_for() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("nested/out");
    let sweep =
        ["--set", "sweep.workload.rate=[500.0, 900.0]", "--set", "sweep.server.concurrency=[100, 140]"];
    let mut args = vec!["--runs", "3", "--seed", "9", "--threads", "2"];
    args.extend(sweep);
    let (runs, summary, stdout) = run_storm(&args, &out);
    assert!(stdout.contains("runs.csv") && stdout.contains("summary.csv"), "{stdout}");
    assert!(!stdout.contains("events"), "statistics only with --stats: {stdout}");

    // 2 x 2 points x 11 strategies x 3 runs; the sweep columns come first, in --set order, the
    // last key varying fastest.
    let (points, strategies, n) = (4, 11, 3);
    assert_eq!(&runs.header[..5], ["workload.rate", "server.concurrency", "strategy", "run", "seed"]);
    assert_eq!(runs.rows.len(), points * strategies * n);
    assert_eq!(&summary.header[..4], ["workload.rate", "server.concurrency", "strategy", "runs"]);
    assert_eq!(summary.rows.len(), points * strategies);
    let expected_points = [("500.0", "100"), ("500.0", "140"), ("900.0", "100"), ("900.0", "140")];
    let names = [
        "immediate",
        "constant",
        "exponential",
        "full-jitter",
        "equal-jitter",
        "decorrelated-jitter",
        "jitter+token-bucket",
        "jitter+ratio",
        "jitter+ratio-shared",
        "jitter+breaker",
        "jitter+breaker-fast",
    ];
    for (i, row) in runs.rows.iter().enumerate() {
        let p = i / (strategies * n);
        let s = i / n % strategies;
        let r = i % n;
        assert_eq!((row[0].as_str(), row[1].as_str()), expected_points[p], "row {i}");
        assert_eq!(row[2], names[s], "row {i}");
        assert_eq!(row[3], r.to_string(), "row {i}: --runs 3 numbers the runs 0, 1, 2");
        assert_eq!(row[4], run_seed(9, r as u64).to_string(), "row {i}: --seed 9");
    }
    for (i, row) in summary.rows.iter().enumerate() {
        assert_eq!((row[0].as_str(), row[1].as_str()), expected_points[i / strategies]);
        assert_eq!(row[2], names[i % strategies]);
        assert_eq!(row[3], "3");
    }

    // summary.csv holds each metric's mean and sample sd over the cell's runs in runs.csv;
    // recovery_time_s only over the runs that recovered.
    let metrics: Vec<&str> = runs.header[5..].iter().map(String::as_str).collect();
    for (c, cell) in runs.rows.chunks(n).enumerate() {
        for m in &metrics {
            let xs: Vec<f64> = cell.iter().filter_map(|r| r[runs.col(m)].parse().ok()).collect();
            let mean_cell = &summary.rows[c][summary.col(m)];
            let sd_cell = &summary.rows[c][summary.col(&format!("{m}_sd"))];
            if xs.is_empty() {
                assert!(
                    mean_cell.is_empty() && sd_cell.is_empty(),
                    "cell {c} {m}: no values, yet {mean_cell}"
                );
                continue;
            }
            let mean = xs.iter().sum::<f64>() / xs.len() as f64;
            let sd = if xs.len() < 2 {
                0.0
            } else {
                (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (xs.len() - 1) as f64).sqrt()
            };
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
            let (got_mean, got_sd): (f64, f64) = (mean_cell.parse().unwrap(), sd_cell.parse().unwrap());
            assert!(close(got_mean, mean), "cell {c} {m}: mean {got_mean} vs {mean} from runs.csv");
            assert!(close(got_sd, sd), "cell {c} {m}: sd {got_sd} vs {sd} from runs.csv");
        }
    }
}

#[test]
fn set_changes_the_results() {
    let tmp = tempfile::tempdir().unwrap();
    let base = run_storm(&["--runs", "2"], &tmp.path().join("base"));
    let halved = run_storm(&["--runs", "2", "--set", "server.concurrency=60"], &tmp.path().join("halved"));
    assert!(base.0.rows != halved.0.rows, "--set server.concurrency=60 changed nothing");
    // Same seeds, same arrivals: only the server changed...
    assert_eq!(base.0.column("seed"), halved.0.column("seed"));
    assert_eq!(base.0.column("ops"), halved.0.column("ops"));
    // ...and with half the workers (600/s for 1000/s offered) every strategy does worse.
    let rate =
        |t: &Table| -> Vec<f64> { t.column("success_rate").iter().map(|x| x.parse().unwrap()).collect() };
    for (i, (b, h)) in rate(&base.1).iter().zip(rate(&halved.1)).enumerate() {
        assert!(
            h < b - 0.1,
            "strategy {}: success rate {h} with 60 workers vs {b} with 120",
            base.1.rows[i][0]
        );
    }
}

#[test]
fn run_defaults_to_results_slash_name_and_stats_prints_statistics() {
    let tmp = tempfile::tempdir().unwrap();
    let out = retrysim()
        .current_dir(tmp.path())
        .arg("run")
        .arg(experiment("retry-storm.toml"))
        .args(SHORT)
        .args(["--runs", "1", "--stats"])
        .assert()
        .success()
        .get_output()
        .clone();
    let dir = tmp.path().join("results/retry-storm");
    assert!(
        dir.join("runs.csv").is_file() && dir.join("summary.csv").is_file(),
        "results/<name>/ by default"
    );
    assert_eq!(Table::read(&dir.join("runs.csv")).rows.len(), 11);
    let stdout = String::from_utf8(out.stdout).unwrap();
    // The wording is free; the statistics name the events and their rate.
    assert!(stdout.contains("events") && stdout.contains("/s"), "--stats prints statistics: {stdout}");
    // DESIGN §8: a progress bar on a terminal; on a pipe a line every few seconds, and this
    // run is shorter than that.
    assert!(out.stderr.is_empty(), "stderr on a pipe: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn zero_threads_is_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    retrysim()
        .arg("run")
        .arg(experiment("retry-storm.toml"))
        .args(["--threads", "0", "--out"])
        .arg(&out)
        .assert()
        .code(2);
    assert!(!out.exists(), "nothing is written after bad input");
}

/// The ranking lines of `--rank METRIC` output: the labels of the listed rows, in order.
fn ranked_labels(text: &str, metric: &str) -> Vec<String> {
    let start = text.find(&format!("rank by {metric}")).unwrap_or_else(|| panic!("no ranking:\n{text}"));
    text[start..]
        .lines()
        .skip(1)
        .map_while(|l| {
            let (number, rest) = l.trim_start().split_once(". ")?;
            number.parse::<usize>().ok()?;
            Some(rest.split(&format!("  {metric} ")).next()?.trim().to_owned())
        })
        .collect()
}

#[test]
fn rank_and_where_order_a_sweep_and_plot_repeats_them() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("ranked");
    let (rank, bound) = (["--rank", "latency_p99_s"], ["--where", "amplification <= 1.5"]);
    let mut args = vec!["--runs", "2", "--set", "sweep.\"strategies.*.max_attempts\"=[1, 3]"];
    args.extend(rank);
    args.extend(bound);
    let (_, summary, stdout) = run_storm(&args, &out);

    // Expected: the summary rows with amplification <= 1.5, by mean p99 latency, smallest first.
    let key = "strategies.*.max_attempts";
    let num = |r: &Vec<String>, c: &str| r[summary.col(c)].parse::<f64>().unwrap();
    let mut feasible: Vec<&Vec<String>> =
        summary.rows.iter().filter(|r| num(r, "amplification") <= 1.5).collect();
    assert!(!feasible.is_empty() && feasible.len() < summary.rows.len(), "the bound splits the rows");
    feasible.sort_by(|a, b| num(a, "latency_p99_s").total_cmp(&num(b, "latency_p99_s")));
    let expected: Vec<String> = feasible
        .iter()
        .map(|r| format!("{} [{key}={}]", r[summary.col("strategy")], r[summary.col(key)]))
        .collect();
    assert!(
        stdout.contains(&format!("{} of {} rows feasible", feasible.len(), summary.rows.len())),
        "{stdout}"
    );
    assert_eq!(ranked_labels(&stdout, "latency_p99_s"), expected, "{stdout}");

    // `plot DIR` with the same flags ranks the same rows from the files.
    let mut plot = retrysim();
    plot.arg("plot").arg(&out).args(rank).args(bound);
    let replotted = self::stdout(&mut plot);
    assert_eq!(ranked_labels(&replotted, "latency_p99_s"), expected);

    // Nothing feasible: the binding constraint is named.
    let mut none = retrysim();
    none.arg("plot").arg(&out).args(rank).args(["--where", "success_rate >= 1.01"]);
    let text = self::stdout(&mut none);
    assert!(text.contains("no row satisfies every constraint") && text.contains("binds"), "{text}");

    // A bad constraint or metric is bad input, refused before anything runs.
    for bad in [["--where", "amplification => 1.5"], ["--where", "amplificaton <= 1.5"], ["--rank", "p99"]] {
        let dir = tmp.path().join("never");
        retrysim()
            .arg("run")
            .arg(experiment("retry-storm.toml"))
            .args(SHORT)
            .args(bad)
            .arg("--out")
            .arg(&dir)
            .assert()
            .code(2);
        assert!(!dir.exists(), "{bad:?}: nothing is written");
    }
}
