//! `--strategies` and `explain`: a subset of strategies runs into the same rows as the whole
//! run's for them (seeds are per run index), an unknown name is bad input with a suggestion,
//! and `explain` names each value's origin.

use std::path::Path;
use std::process::Command;

const FILE: &str = r#"
name = "subset"
seed = 5
runs = 4
horizon = "2s"
[workload]
kind = "closed"
clients = 5
[server]
concurrency = 2
queue = 0
service_time = { dist = "exponential", mean = "10ms" }
[client]
max_attempts = 6
[[strategies]]
name = "immediate"
backoff = { kind = "none" }
[[strategies]]
name = "aws"
preset = "aws-standard"
[[strategies]]
name = "jitter"
backoff = { kind = "full-jitter", base = "10ms" }
[sweep]
"server.concurrency" = [1, 3]
"#;

fn retrysim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_retrysim")).args(args).output().unwrap()
}

/// The lines of `csv` whose `strategy` column (found by the header) is one of `names`.
fn rows_of(csv: &str, names: &[&str]) -> Vec<String> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "strategy").unwrap();
    lines.filter(|l| names.contains(&l.split(',').nth(col).unwrap())).map(str::to_owned).collect()
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap()
}

#[test]
fn a_subset_of_strategies_gives_the_whole_runs_rows_for_them() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("subset.toml");
    std::fs::write(&file, FILE).unwrap();
    let f = file.to_str().unwrap();
    let (all, some) = (tmp.path().join("all"), tmp.path().join("some"));
    assert!(retrysim(&["run", f, "--out", all.to_str().unwrap(), "--quiet"]).status.success());
    let out = retrysim(&["run", f, "--out", some.to_str().unwrap(), "--quiet", "--strategies", "jitter,aws"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for name in ["runs.csv", "summary.csv", "timeseries.csv"] {
        let (whole, part) = (read(&all, name), read(&some, name));
        assert_eq!(whole.lines().next(), part.lines().next(), "{name}: header");
        let kept = rows_of(&whole, &["aws", "jitter"]);
        assert!(!kept.is_empty());
        assert_eq!(rows_of(&part, &["aws", "jitter", "immediate"]), kept, "{name}");
    }
    let manifest: serde_json::Value = serde_json::from_str(&read(&some, "manifest.json")).unwrap();
    assert_eq!(manifest["strategies"], serde_json::json!(["aws", "jitter"]));
    assert!(
        manifest["overrides"].as_array().unwrap().contains(&serde_json::json!("--strategies aws,jitter"))
    );

    // plot --strategies draws the whole run's folder for a subset.
    let plotted = retrysim(&["plot", all.to_str().unwrap(), "--quiet", "--strategies", "immediate"]);
    assert!(plotted.status.success(), "{}", String::from_utf8_lossy(&plotted.stderr));
    let page = read(&all, "report.html");
    assert!(page.contains("immediate") && !page.contains("<b>jitter</b>"));
}

#[test]
fn an_unknown_strategy_is_refused_with_a_suggestion() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("subset.toml");
    std::fs::write(&file, FILE).unwrap();
    let f = file.to_str().unwrap();
    for verb in
        [&["check", f][..], &["run", f, "--out", tmp.path().join("x").to_str().unwrap()], &["explain", f]]
    {
        let out = retrysim(&[verb, &["--strategies", "jiter"]].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{verb:?}: {err}");
        assert!(err.contains("no strategy named `jiter` (did you mean `jitter`?)"), "{err}");
    }
    assert!(!tmp.path().join("x").exists(), "nothing ran");
}

#[test]
fn explain_names_the_preset_that_shadows_client() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("subset.toml");
    std::fs::write(&file, FILE).unwrap();
    let out = retrysim(&["explain", file.to_str().unwrap(), "--strategy", "aws"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let row = |key: &str| text.lines().find(|l| l.split_whitespace().next() == Some(key)).unwrap().to_owned();
    let attempts = row("max_attempts");
    assert!(
        attempts.contains(" 3 ") && attempts.contains("preset aws-standard ([client] sets it too"),
        "{attempts}"
    );
    assert!(row("backoff.kind").ends_with("preset aws-standard"));
    assert!(row("deadline").ends_with("default"));
    assert!(!text.contains("strategy \"jitter\""));
}
