//! Shards for a cluster (DESIGN §8): `--shard I/N` runs a deterministic part of the cells and
//! `merge` joins the parts into exactly the files of the whole run; `--resume` skips a shard
//! that is complete. And the progress line a long run prints on a pipe.

use assert_cmd::cargo::cargo_bin_cmd;
use std::path::Path;

/// A small sweep: 3 points x 2 strategies, with time series.
const SWEEP: &str = r#"
name = "shards"
seed = 4
runs = 3
horizon = "8s"
[workload]
kind = "open"
rate = 300.0
duration = "6s"
[server]
concurrency = 8
service_time = { dist = "exponential", mean = "20ms" }
queue = 20
[[server.faults]]
kind = "outage"
start = "2s"
duration = "1s"
[client]
max_attempts = 3
timeout = "300ms"
[[strategies]]
name = "immediate"
backoff = { kind = "none" }
[[strategies]]
name = "fj"
backoff = { kind = "full-jitter", base = "20ms", cap = "500ms" }
[sweep]
"server.concurrency" = [6, 8, 10]
"#;

fn run(file: &Path, out: &Path, extra: &[&str]) -> String {
    let o =
        cargo_bin_cmd!("retrysim").arg("run").arg(file).arg("--out").arg(out).args(extra).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn merged_shards_equal_the_whole_run_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shards.toml");
    std::fs::write(&file, SWEEP).unwrap();
    let whole = dir.path().join("whole");
    run(&file, &whole, &["-q"]);
    let shards: Vec<_> = (1..=3).map(|i| dir.path().join(format!("shard-{i}"))).collect();
    for (i, s) in shards.iter().enumerate() {
        run(&file, s, &["-q", "--shard", &format!("{}/3", i + 1)]);
    }
    // Shards in any order.
    let merged = dir.path().join("merged");
    let o = cargo_bin_cmd!("retrysim")
        .arg("merge")
        .arg("--out")
        .arg(&merged)
        .args([&shards[2], &shards[0], &shards[1]])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in ["runs.csv", "summary.csv", "timeseries.csv"] {
        let a = std::fs::read(whole.join(f)).unwrap();
        let b = std::fs::read(merged.join(f)).unwrap();
        assert!(a == b, "{f}: merged shards differ from the whole run");
    }
    // The manifest too, but for the command line, which records how each was made: the
    // merged folder keeps the first shard's.
    let manifest = |d: &std::path::Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(d.join("manifest.json")).unwrap()).unwrap()
    };
    let (mut a, mut b) = (manifest(&whole), manifest(&merged));
    let shard_line = b["command_line"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(shard_line.starts_with("retrysim run ") && shard_line.ends_with("--shard 1/3"), "{shard_line}");
    a.as_object_mut().unwrap().remove("command_line");
    b.as_object_mut().unwrap().remove("command_line");
    assert_eq!(a, b, "manifest.json: merged shards differ from the whole run");
    assert!(merged.join("report.html").exists(), "merge draws the report");

    // A missing shard is named.
    let o = cargo_bin_cmd!("retrysim")
        .arg("merge")
        .arg("--out")
        .arg(dir.path().join("partial"))
        .args([&shards[0], &shards[2]])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("2/3") && stderr.contains("missing"), "{stderr}");
    // A shard twice, and a shard of another seed.
    let o = cargo_bin_cmd!("retrysim")
        .arg("merge")
        .arg("--out")
        .arg(dir.path().join("twice"))
        .args([&shards[0], &shards[0]])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("given twice"));
    let other = dir.path().join("other-seed");
    run(&file, &other, &["-q", "--shard", "2/3", "--seed", "5"]);
    let o = cargo_bin_cmd!("retrysim")
        .arg("merge")
        .arg("--out")
        .arg(dir.path().join("foreign"))
        .args([&shards[0], &other, &shards[2]])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("a shard of another run") && stderr.contains("other-seed"), "{stderr}");
    // A whole run is not a shard.
    let o = cargo_bin_cmd!("retrysim")
        .arg("merge")
        .arg("--out")
        .arg(dir.path().join("w"))
        .arg(&whole)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn resume_skips_a_complete_result_and_redoes_a_partial_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shards.toml");
    std::fs::write(&file, SWEEP).unwrap();
    let out = dir.path().join("s1");
    run(&file, &out, &["-q", "--shard", "1/2"]);
    let before = std::fs::read(out.join("runs.csv")).unwrap();
    let stdout = run(&file, &out, &["--shard", "1/2", "--resume"]);
    assert!(stdout.contains("already complete"), "{stdout}");
    // Without the manifest (a killed task leaves none), the shard runs again, the same.
    std::fs::remove_file(out.join("manifest.json")).unwrap();
    std::fs::remove_file(out.join("runs.csv")).unwrap();
    let stdout = run(&file, &out, &["--shard", "1/2", "--resume"]);
    assert!(!stdout.contains("already complete"), "{stdout}");
    assert_eq!(std::fs::read(out.join("runs.csv")).unwrap(), before);
    // Another seed is another experiment: not complete.
    let stdout = run(&file, &out, &["--shard", "1/2", "--resume", "--seed", "9"]);
    assert!(!stdout.contains("already complete"), "{stdout}");
}

#[test]
fn a_long_run_prints_plain_progress_lines_on_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shards.toml");
    std::fs::write(&file, SWEEP).unwrap();
    let o = cargo_bin_cmd!("retrysim")
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(dir.path().join("p"))
        .args(["--progress-interval", "0", "--threads", "1"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.lines().any(|l| l.starts_with("shards: ") && l.contains(" runs, ") && l.contains("left")),
        "{stderr}"
    );
    for out in [&o.stdout, &o.stderr] {
        let text = String::from_utf8_lossy(out);
        assert!(text.chars().all(|c| c == '\n' || !c.is_control()), "control characters on a pipe: {text:?}");
    }
    // --quiet silences it.
    let o = cargo_bin_cmd!("retrysim")
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(dir.path().join("q"))
        .args(["--progress-interval", "0", "--quiet"])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(o.stderr.is_empty() && o.stdout.is_empty(), "--quiet: {:?}", String::from_utf8_lossy(&o.stderr));
}
