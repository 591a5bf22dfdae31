//! Production config files (docs/config-files.md): `retrysim import` prints a block that
//! loads as it is pasted into an experiment; `retrysim export` writes the strategy as it runs
//! (`[client]` and preset folded in), atomically, and `--lossy` says what it dropped; a
//! strategy that imports its file simulates exactly as the pasted block does, and is read
//! again at every load; `[tune] export` writes the recommendation beside recommendation.toml
//! in every format asked for.

use crate::support::{experiment_file, first_runs};
use assert_cmd::Command;
use retrysim::experiment::{self, Overrides};
use retrysim::interop;
use std::path::Path;

fn retrysim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_retrysim"))
}

/// A small closed-loop experiment whose server fails a third of requests with 503, so that
/// retries matter (a network delay, so that Linkerd's immediate, unbounded retries advance
/// simulated time); strategies follow.
const BASE: &str = r#"name = "interop"
seed = 3
runs = 2
horizon = "5s"
[workload]
kind = "closed"
clients = 50
[network]
latency = { dist = "constant", value = "1ms" }
[server]
concurrency = 8
service_time = { dist = "exponential", mean = "5ms" }
queue = 0
errors = [{ status = 503, probability = 0.3 }]
"#;

const ENVOY_ROUTE: &str = "route:
  cluster: backend
  timeout: 2s
  retry_policy:
    retry_on: gateway-error
    num_retries: 2
    per_try_timeout: 0.5s
circuit_breakers:
  thresholds:
  - max_retries: 5
";

/// The bring-your-config example files, by format.
fn example(kind: &str) -> std::path::PathBuf {
    let file = match kind {
        "envoy" => "envoy-route.yaml",
        "istio" => "istio-virtualservice.yaml",
        _ => "linkerd-serviceprofile.yaml",
    };
    experiment_file("bring-your-config").join(file)
}

fn stdout_of(args: &[&str], dir: &Path) -> String {
    let out = retrysim().current_dir(dir).args(args).output().expect("the binary runs");
    assert!(out.status.success(), "retrysim {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn an_imported_block_loads_when_pasted_into_an_experiment() {
    let tmp = tempfile::tempdir().unwrap();
    for kind in ["envoy", "istio", "linkerd"] {
        let file = example(kind);
        let printed = stdout_of(&["import", kind, file.to_str().unwrap(), "--name", "pasted"], tmp.path());
        assert!(printed.lines().next().unwrap().starts_with("# retrysim import"), "{printed}");
        assert!(
            printed.contains("(docs/retry-policies.md §"),
            "{kind}: the notes cite their source:\n{printed}"
        );
        let exp = experiment::load_str(&format!("{BASE}{printed}"), "pasted.toml", &Overrides::default())
            .unwrap_or_else(|e| panic!("{kind}: {e}\n{printed}"));
        assert_eq!(exp.points[0].strategies[0].name, "pasted");
    }
}

/// `import = { ... }` is the pasted block: the same policy, the same runs.
#[test]
fn a_strategy_that_imports_its_file_runs_as_the_pasted_block() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("route.yaml"), ENVOY_ROUTE).unwrap();
    let imported = format!(
        "{BASE}[[strategies]]\nname = \"e\"\nimport = {{ kind = \"envoy\", file = \"route.yaml\" }}\n"
    );
    let path = tmp.path().join("e.toml");
    std::fs::write(&path, &imported).unwrap();
    let exp = experiment::load(&path, &Overrides::default()).unwrap();
    let block = interop::format("envoy").unwrap().import(ENVOY_ROUTE, "e").unwrap();
    let pasted = format!("{BASE}{}", interop::block::block("[[strategies]]", &block.strategy));
    let by_import = &exp.points[0].strategies[0];
    let by_paste = experiment::load_str(&pasted, "p.toml", &Overrides::default()).unwrap();
    assert_eq!(format!("{:?}", by_import.policy), format!("{:?}", by_paste.points[0].strategies[0].policy));
    assert_eq!(by_import.policy.max_attempts, Some(3));
    let a = first_runs(
        &std::fs::read_to_string(&path)
            .unwrap()
            .replace("route.yaml", tmp.path().join("route.yaml").to_str().unwrap()),
        &[],
    );
    let b = first_runs(&pasted, &[]);
    assert_eq!(format!("{:?}", a[0].1), format!("{:?}", b[0].1), "the same run, metric by metric");
}

#[test]
fn own_keys_override_the_import_and_the_file_is_read_again_at_every_load() {
    let tmp = tempfile::tempdir().unwrap();
    let route = tmp.path().join("route.yaml");
    std::fs::write(&route, ENVOY_ROUTE).unwrap();
    let path = tmp.path().join("e.toml");
    std::fs::write(
        &path,
        format!("{BASE}[[strategies]]\nname = \"e\"\nmax_attempts = 7\nimport = {{ kind = \"envoy\", file = \"route.yaml\" }}\n"),
    )
    .unwrap();
    let first = experiment::load(&path, &Overrides::default()).unwrap();
    let policy = &first.points[0].strategies[0].policy;
    assert_eq!(policy.max_attempts, Some(7), "the strategy's own key wins");
    assert_eq!(policy.deadline.map(|d| d.0), Some(2_000_000_000), "the route's timeout is the deadline");
    std::fs::write(&route, ENVOY_ROUTE.replace("timeout: 2s", "timeout: 4s")).unwrap();
    let second = experiment::load(&path, &Overrides::default()).unwrap();
    assert_eq!(second.points[0].strategies[0].policy.deadline.map(|d| d.0), Some(4_000_000_000));
    assert_ne!(first.fingerprint, second.fingerprint, "the imported file is part of the experiment");
}

#[test]
fn export_writes_the_strategy_as_it_runs_and_lossy_says_what_it_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        "{BASE}[client]\ntimeout = \"300ms\"\n[[strategies]]\nname = \"p\"\npreset = \"envoy\"\nmax_attempts = 3\n[[strategies]]\nname = \"x\"\nmax_attempts = 3\nbackoff = {{ kind = \"exponential\", base = \"10ms\" }}\n"
    );
    std::fs::write(tmp.path().join("e.toml"), &text).unwrap();
    let out = retrysim()
        .current_dir(tmp.path())
        .args(["export", "envoy", "--strategy", "p", "e.toml", "--out", "p.envoy.yaml"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let written = std::fs::read_to_string(tmp.path().join("p.envoy.yaml")).unwrap();
    let back = interop::format("envoy").unwrap().import(&written, "p").unwrap().strategy;
    assert_eq!(back["timeout"].as_str(), Some("300ms"), "[client]'s timeout is folded in:\n{written}");
    assert_eq!(back["max_attempts"].as_integer(), Some(3), "the strategy's own key");
    assert_eq!(back["backoff"]["cap"].as_str(), Some("250ms"), "the preset's cap");
    assert_eq!(back["budget"]["percent"].as_float(), Some(20.0), "the preset's budget");
    let leftovers: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(leftovers.len(), 2, "no temporary file is left: {leftovers:?}");

    let refused = retrysim()
        .current_dir(tmp.path())
        .args(["export", "envoy", "--strategy", "x", "e.toml"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot express `backoff`") && stderr.contains("--lossy"), "{stderr}");
    let lossy = retrysim()
        .current_dir(tmp.path())
        .args(["export", "envoy", "--strategy", "x", "e.toml", "--lossy"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&lossy.stderr);
    assert!(lossy.status.success(), "{stderr}");
    assert!(stderr.contains("--lossy dropped backoff:"), "{stderr}");
    let stdout = String::from_utf8_lossy(&lossy.stdout);
    assert!(stdout.contains("#   backoff:") && stdout.contains("num_retries: 2"), "{stdout}");
}

/// A small, fast tune of the imported Envoy route: the recommendation is written in every
/// format of `[tune] export`, each of which imports back to the recommended values (Envoy
/// without loss; Istio and Linkerd listing what they dropped).
#[test]
fn tune_exports_the_recommendation_in_each_format() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("route.yaml"), ENVOY_ROUTE).unwrap();
    let text = format!(
        "{BASE}[[strategies]]\nname = \"e\"\nimport = {{ kind = \"envoy\", file = \"route.yaml\" }}\n[tune]\nobjective = \"latency_p99_s\"\nconstraints = [\"success_rate >= 0.9\"]\nruns = 1\nrounds = 1\nconfirm = 1\nconfirm_runs = 2\nexport = [\"envoy\", \"istio\", \"linkerd\"]\n[tune.space]\nmax_attempts = [2, 4]\n"
    );
    std::fs::write(tmp.path().join("e.toml"), &text).unwrap();
    let out = retrysim().current_dir(tmp.path()).args(["tune", "e.toml", "--out", "t"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let dir = tmp.path().join("t");
    let recommendation = std::fs::read_to_string(dir.join("recommendation.toml")).unwrap();
    let line = recommendation.lines().find(|l| l.starts_with("max_attempts = ")).unwrap();
    let attempts: i64 = line["max_attempts = ".len()..].parse().unwrap();
    let envoy = std::fs::read_to_string(dir.join("recommendation.envoy.yaml")).unwrap();
    let back = interop::format("envoy").unwrap().import(&envoy, "e").unwrap().strategy;
    assert_eq!(back["max_attempts"].as_integer(), Some(attempts), "{envoy}");
    assert_eq!(back["deadline"].as_str(), Some("2s"));
    assert!(!envoy.contains("dropped"), "{envoy}");
    assert!(stdout.contains("recommendation.envoy.yaml: every value exported"), "{stdout}");
    let istio = std::fs::read_to_string(dir.join("recommendation.istio.yaml")).unwrap();
    assert!(istio.contains("#   budget:"), "Istio cannot carry the cluster's max_retries:\n{istio}");
    assert!(stdout.contains("recommendation.istio.yaml: istio cannot express, dropped:"), "{stdout}");
    let linkerd = std::fs::read_to_string(dir.join("recommendation.linkerd.yaml")).unwrap();
    assert!(linkerd.contains("#   max_attempts:") && linkerd.contains("kind: ServiceProfile"), "{linkerd}");
    // Searched again with nothing feasible: no stale recommendation is left, in any format.
    let out = retrysim()
        .current_dir(tmp.path())
        .args([
            "tune",
            "e.toml",
            "--out",
            "t",
            "--quiet",
            "--set",
            "tune.constraints=[\"success_rate >= 1.5\"]",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    for file in [
        "recommendation.toml",
        "recommendation.envoy.yaml",
        "recommendation.istio.yaml",
        "recommendation.linkerd.yaml",
    ] {
        assert!(!dir.join(file).exists(), "{file} is stale");
    }
}

#[test]
fn an_unknown_tune_export_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        "{BASE}[[strategies]]\nname = \"e\"\nmax_attempts = 2\nbackoff = {{ kind = \"none\" }}\n[tune]\nobjective = \"latency_p99_s\"\nexport = [\"envoy\", \"nginx\"]\n[tune.space]\nmax_attempts = [2, 4]\n"
    );
    std::fs::write(tmp.path().join("e.toml"), &text).unwrap();
    for args in [&["check", "e.toml"][..], &["tune", "e.toml", "--out", "t"]] {
        let verb = args[0];
        let out = retrysim().current_dir(tmp.path()).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{verb}: {stderr}");
        assert!(
            stderr.contains("`tune.export[1]`") && stderr.contains("unknown format \"nginx\""),
            "{stderr}"
        );
        assert!(!tmp.path().join("t").exists());
    }
}
