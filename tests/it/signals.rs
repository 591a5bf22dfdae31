//! SIGTERM (Slurm's time limit, Kubernetes' eviction) and SIGINT (Ctrl-C) stop `retrysim run`
//! the same way: the temporary files are deleted, the exit status is the shell's 128 + the
//! signal's number, and the message says what is left. A stop before any cell finished leaves
//! the files of an earlier run in the same folder untouched; a later one keeps the finished
//! cells as a partial result, which `run --resume` completes into the uninterrupted run's
//! files.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A small experiment whose runs take a millisecond or so: with many of them the run lasts
/// long enough to be stopped, and it stops quickly (a worker finishes the run it is in).
const TINY: &str = r#"
name = "tiny"
seed = 1
runs = 3
horizon = "2s"
[workload]
kind = "closed"
clients = 5
[server]
concurrency = 2
queue = 0
service_time = { dist = "exponential", mean = "10ms" }
[client]
max_attempts = 3
[[strategies]]
name = "immediate"
backoff = { kind = "none" }
"#;

fn retrysim(file: &Path, out: &Path, runs: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_retrysim"));
    cmd.arg("run").arg(file).arg("--out").arg(out).args(["--quiet", "--threads", "1", "--runs", runs]);
    cmd
}

/// Every file of `dir` (not its subfolders) with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect()
}

fn temporary_files(dir: &Path) -> Vec<String> {
    files(dir).into_keys().filter(|n| n.starts_with(".retrysim-") && n.ends_with(".tmp")).collect()
}

fn stopped_by(signal: i32, name: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("tiny.toml");
    std::fs::write(&file, TINY).unwrap();
    let out = tmp.path().join("out");
    let earlier = retrysim(&file, &out, "3").status().unwrap();
    assert!(earlier.success());
    let before = files(&out);
    assert!(before.contains_key("runs.csv") && before.contains_key("manifest.json"));

    let mut child = retrysim(&file, &out, "100000000").stderr(Stdio::piped()).spawn().unwrap();
    // Started writing: the writer's temporary files are there, then a few runs more.
    let started = Instant::now();
    while temporary_files(&out).is_empty() {
        assert!(started.elapsed() < Duration::from_secs(60), "the run never started writing");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before it was signalled");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: sending a signal to a child process we started and have not waited for.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(128 + signal), "{name}: {stderr}");
    assert!(stderr.contains(&format!("interrupted by {name}")), "{name}: {stderr}");
    assert!(stderr.contains("untouched"), "{name}: {stderr}");
    assert_eq!(temporary_files(&out), Vec::<String>::new(), "{name} left temporary files");
    assert!(files(&out) == before, "{name}: the earlier result changed");
}

#[test]
fn sigterm_deletes_the_temporary_files_and_exits_143() {
    stopped_by(libc::SIGTERM, "SIGTERM");
}

#[test]
fn sigint_deletes_the_temporary_files_and_exits_130() {
    stopped_by(libc::SIGINT, "SIGINT");
}

/// Four cells of many short runs: long enough to be stopped after a cell or two.
const CELLS: &str = r#"
name = "cells"
seed = 3
runs = 3
horizon = "2s"
[workload]
kind = "closed"
clients = 5
[server]
concurrency = 2
queue = 0
service_time = { dist = "exponential", mean = "10ms" }
[client]
max_attempts = 3
[[strategies]]
name = "immediate"
backoff = { kind = "none" }
[[strategies]]
name = "jitter"
backoff = { kind = "full-jitter", base = "10ms" }
[sweep]
"server.concurrency" = [1, 2]
"#;

/// The largest temporary file of `dir`, in bytes (0 before the folder exists); files renamed
/// while it looks are skipped.
fn largest_temporary(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".retrysim-"))
        .map(|e| e.metadata().map_or(0, |m| m.len()))
        .max()
        .unwrap_or(0)
}

#[test]
fn a_stop_keeps_the_finished_cells_and_resume_completes_them() {
    const RUNS: &str = "6000";
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("cells.toml");
    std::fs::write(&file, CELLS).unwrap();
    let whole = tmp.path().join("whole");
    assert!(retrysim(&file, &whole, RUNS).status().unwrap().success());
    let reference = files(&whole);
    let cell_bytes = reference["runs.csv"].len() as u64 / 4;

    let out = tmp.path().join("out");
    let mut child = retrysim(&file, &out, RUNS).stderr(Stdio::piped()).spawn().unwrap();
    let started = Instant::now();
    // Stopped once runs.csv holds more than one cell and a half: within the second or third.
    while largest_temporary(&out) < cell_bytes * 3 / 2 {
        assert!(started.elapsed() < Duration::from_secs(120), "the run never got past its first cell");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before it was signalled");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: sending a signal to a child process we started and have not waited for.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("partial result") && stderr.contains("--resume"), "{stderr}");
    assert_eq!(temporary_files(&out), Vec::<String>::new(), "left temporary files");

    // Exactly the finished cells: each file the uninterrupted one's first rows.
    let partial = files(&out);
    let manifest: serde_json::Value = serde_json::from_slice(&partial["manifest.json"]).unwrap();
    assert_eq!(manifest["partial"], serde_json::json!(true));
    assert_eq!(manifest["cells_total"], serde_json::json!(4));
    let done = manifest["cells_done"].as_array().unwrap().len();
    assert!((1..4).contains(&done), "{done} cells done");
    assert_eq!(manifest["cells_done"][0], serde_json::json!({"point": 0, "strategy": "immediate"}));
    let summary = String::from_utf8(partial["summary.csv"].clone()).unwrap();
    assert_eq!(summary.lines().count(), 1 + done, "{summary}");
    for name in ["runs.csv", "summary.csv", "timeseries.csv"] {
        assert!(reference[name].starts_with(&partial[name]), "{name} is not the whole run's first rows");
        assert!(partial[name].ends_with(b"\n"));
    }
    let runs_rows = partial["runs.csv"].iter().filter(|b| **b == b'\n').count();
    assert_eq!(runs_rows, 1 + done * 6000, "runs.csv holds whole cells only");
    let report = String::from_utf8_lossy(&partial["report.html"]).into_owned();
    let body = report.split("<body>").nth(1).unwrap().trim_start();
    assert!(
        body.starts_with(&format!("<p id=\"partial\"><b>Partial result: {done} of 4 cells")),
        "{body:.200}"
    );

    let resumed = retrysim(&file, &out, RUNS).arg("--resume").output().unwrap();
    assert!(resumed.status.success(), "{}", String::from_utf8_lossy(&resumed.stderr));
    let after = files(&out);
    for name in ["runs.csv", "summary.csv", "timeseries.csv"] {
        assert!(after[name] == reference[name], "{name} differs from the uninterrupted run's");
    }
    let mut m: serde_json::Value = serde_json::from_slice(&after["manifest.json"]).unwrap();
    let mut r: serde_json::Value = serde_json::from_slice(&reference["manifest.json"]).unwrap();
    assert!(m.get("partial").is_none() && m.get("cells_done").is_none());
    // The command lines differ (the folder, --resume); everything else is the same.
    m["command_line"] = serde_json::Value::Null;
    r["command_line"] = serde_json::Value::Null;
    assert_eq!(m, r);
}
