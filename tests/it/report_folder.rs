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

/// The verdict's intro line (the first line after `Verdict:` in stdout or report.html).
fn verdict_intro(text: &str) -> String {
    let start = text.find("Verdict: ").unwrap_or_else(|| panic!("no verdict in:\n{text}"));
    text[start..].lines().next().unwrap().to_owned()
}

fn stdout(cmd: &mut Command) -> String {
    String::from_utf8(cmd.assert().success().get_output().stdout.clone()).unwrap()
}

/// `[output] reference` chooses the verdict's reference point: `run` uses it and records it in
/// manifest.json, `plot` and `merge` read it from there, and `--reference` overrides it.
#[test]
fn the_files_reference_point_is_used_recorded_and_overridden_by_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("owned.toml");
    // Written as another duration than the sweep's: the same point.
    let text = format!(
        "{EXPERIMENT}\n[output]\nreference = {{ \"client.timeout\" = \"2000ms\" }}\n\n[sweep]\n\"client.timeout\" = [\"1s\", \"2s\"]\n"
    );
    std::fs::write(&file, text).unwrap();
    let out = tmp.path().join("out");
    let from_file = "at the reference point (client.timeout = 2s: chosen with [output] reference";
    let printed = stdout(retrysim().arg("run").arg(&file).arg("--out").arg(&out));
    assert!(verdict_intro(&printed).contains(from_file), "{}", verdict_intro(&printed));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(verdict_intro(&html).contains(from_file), "{}", verdict_intro(&html));
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["reference"], serde_json::json!({ "client.timeout": "2s" }));

    // plot reads it from the manifest; --reference overrides it.
    let replotted = stdout(retrysim().arg("plot").arg(&out));
    assert!(verdict_intro(&replotted).contains(from_file), "{}", verdict_intro(&replotted));
    let flag = "at the reference point (client.timeout = 1s: chosen with --reference)";
    let overridden = stdout(retrysim().arg("plot").arg(&out).args(["--reference", "client.timeout=1s"]));
    assert!(verdict_intro(&overridden).contains(flag), "{}", verdict_intro(&overridden));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(verdict_intro(&html).contains(flag), "{}", verdict_intro(&html));

    // run --reference overrides it too; the manifest still records the file's.
    let again = stdout(
        retrysim().arg("run").arg(&file).arg("--out").arg(&out).args(["--reference", "client.timeout=1s"]),
    );
    assert!(verdict_intro(&again).contains(flag), "{}", verdict_intro(&again));
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["reference"], serde_json::json!({ "client.timeout": "2s" }));

    // merge keeps it.
    let shards: Vec<_> = (1..=2).map(|i| tmp.path().join(format!("shard-{i}"))).collect();
    for (i, s) in shards.iter().enumerate() {
        run(&file, s, &["-q", "--shard", &format!("{}/2", i + 1)]);
    }
    // The first shard holds only client.timeout = 1s: its report says the reference is elsewhere.
    let html = std::fs::read_to_string(shards[0].join("report.html")).unwrap();
    assert!(verdict_intro(&html).contains("(client.timeout = 1s: the first point here: the reference point is not among the points of this shard"), "{}", verdict_intro(&html));
    let merged = tmp.path().join("merged");
    retrysim().arg("merge").arg("--out").arg(&merged).args(&shards).assert().success();
    let html = std::fs::read_to_string(merged.join("report.html")).unwrap();
    assert!(verdict_intro(&html).contains(from_file), "{}", verdict_intro(&html));

    // Without the key, the first point.
    let plain = tmp.path().join("plain.toml");
    std::fs::write(&plain, format!("{EXPERIMENT}\n[sweep]\n\"client.timeout\" = [\"1s\", \"2s\"]\n"))
        .unwrap();
    let printed = stdout(retrysim().arg("run").arg(&plain).arg("--out").arg(tmp.path().join("plain")));
    assert!(
        verdict_intro(&printed)
            .contains("(client.timeout = 1s: the first point; another with --reference KEY=VALUE)"),
        "{}",
        verdict_intro(&printed)
    );
    let manifest = std::fs::read_to_string(tmp.path().join("plain/manifest.json")).unwrap();
    assert!(!manifest.contains("\"reference\""), "an unused key leaves the manifest as it was");
}
