//! A run owns its output folder: `run`, `plot` and `merge` leave in `charts/` exactly the
//! charts the report shows, removing those an earlier run drew and this one did not; and
//! every sweep point gets a time series named by its values.

use assert_cmd::Command;
use std::collections::BTreeSet;
use std::path::Path;

fn retrysim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_retrysim"))
}

/// Two strategies through a capacity cut followed at once by a slowdown; a few
/// milliseconds a run. No sweep in the file: each test sets its own.
const EXPERIMENT: &str = r#"
name = "owned-folder"
seed = 3
runs = 2
horizon = "40s"

[workload]
kind = "open"
rate = 200.0
duration = "30s"
clients = 10

[server]
kind = "queue"
concurrency = 30
service_time = { dist = "exponential", mean = "100ms" }
queue = 300

[[server.faults]]
kind = "capacity"
start = "10s"
duration = "3s"
factor = 0.5

[[server.faults]]
kind = "slowdown"
start = "13s"
duration = "3s"
factor = 2.0

[client]
timeout = "1s"
max_attempts = 3

[[strategies]]
name = "immediate"
backoff = { kind = "none" }

[[strategies]]
name = "full-jitter"
backoff = { kind = "full-jitter", base = "100ms", cap = "1s" }
"#;

/// The file names in `dir/charts`.
fn charts(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir.join("charts"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// The chart files a command says it wrote (its `wrote DIR/charts/NAME` lines).
fn wrote(cmd: &mut Command) -> BTreeSet<String> {
    let out = cmd.assert().success().get_output().stdout.clone();
    String::from_utf8(out)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("wrote "))
        .filter_map(|p| {
            Path::new(p).strip_prefix(Path::new(p).parent()?.parent()?).ok().map(|r| r.to_owned())
        })
        .filter_map(|r| r.strip_prefix("charts").ok().map(|c| c.to_string_lossy().into_owned()))
        .collect()
}

/// `retrysim run FILE ARGS --out OUT`: the chart files it wrote.
fn run(file: &Path, out: &Path, args: &[&str]) -> BTreeSet<String> {
    wrote(retrysim().arg("run").arg(file).args(["--threads", "2"]).args(args).arg("--out").arg(out))
}

#[test]
fn a_rerun_with_another_sweep_leaves_no_stale_chart() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("owned.toml");
    std::fs::write(&file, EXPERIMENT).unwrap();
    let out = tmp.path().join("out");

    let drawn = run(&file, &out, &["--set", "sweep.client.timeout=[\"1s\", \"2s\"]"]);
    let first = charts(&out);
    for name in ["recovery_time_s-vs-client.timeout.svg", "timeseries-client.timeout=2s.png"] {
        assert!(first.contains(name), "no {name} in {first:?}");
    }
    assert_eq!(first, drawn, "charts/ holds exactly the charts this run drew");

    // Another sweep into the same folder, with a file of the user's in charts/.
    std::fs::write(out.join("charts/notes.txt"), "mine").unwrap();
    let rates = "sweep.workload.rate=[100.0, 120.0, 140.0, 160.0, 180.0, 200.0, 220.0]";
    let drawn = run(&file, &out, &["--set", rates]);
    let second = charts(&out);
    let stale: Vec<&String> = second.iter().filter(|c| c.contains("client.timeout")).collect();
    assert!(stale.is_empty(), "stale charts survived the re-run: {stale:?}");
    let mut expected = drawn.clone();
    expected.insert("notes.txt".into());
    assert_eq!(second, expected, "charts/ holds this run's charts and the user's file, nothing else");
    // One time series per point (7 here), each named by its point.
    let series: Vec<&String> =
        second.iter().filter(|c| c.starts_with("timeseries-") && c.ends_with(".png")).collect();
    assert_eq!(series.len(), 7, "{series:?}");
    assert!(second.contains("timeseries-workload.rate=140.0.svg"), "{second:?}");

    // `plot` removes what it did not draw, too.
    std::fs::write(out.join("charts/old-chart.png"), b"not a chart of this run").unwrap();
    std::fs::write(out.join("charts/old-chart.svg"), b"<svg/>").unwrap();
    let replotted = wrote(retrysim().arg("plot").arg(&out));
    assert_eq!(replotted, drawn);
    assert_eq!(charts(&out), second, "plot left a chart it did not draw");
}

#[test]
fn merge_leaves_no_stale_chart() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("owned.toml");
    std::fs::write(&file, EXPERIMENT).unwrap();
    let sweep = ["--set", "sweep.client.timeout=[\"1s\", \"2s\"]"];
    let shards: Vec<_> = (1..=2).map(|i| tmp.path().join(format!("shard-{i}"))).collect();
    for (i, s) in shards.iter().enumerate() {
        let shard = format!("{}/2", i + 1);
        run(&file, s, &["-q", sweep[0], sweep[1], "--shard", &shard]);
    }
    // The merged folder held an earlier run's charts.
    let out = tmp.path().join("merged");
    std::fs::create_dir_all(out.join("charts")).unwrap();
    std::fs::write(out.join("charts/timeseries-point6.png"), b"old").unwrap();
    let drawn = wrote(retrysim().arg("merge").arg("--out").arg(&out).args(&shards));
    let merged = charts(&out);
    assert!(!merged.contains("timeseries-point6.png"), "{merged:?}");
    assert!(merged.contains("timeseries-client.timeout=1s.png"), "{merged:?}");
    assert_eq!(merged, drawn);
}
