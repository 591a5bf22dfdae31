//! `retrysim validate` (the validation suite -> VALIDATION.md): the verb's files and exit
//! codes on a cheap part of the suite, a failing check, and the suite's AWS file against the
//! shipped experiment. The whole suite is CI's job (`.ci/run` regenerates VALIDATION.md and
//! compares it with the committed file): running it here too would double CI's time.

use assert_cmd::Command;
use retrysim::experiment::{Overrides, load};
use std::path::{Path, PathBuf};

fn retrysim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_retrysim"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn suite() -> PathBuf {
    root().join(retrysim::validation::SUITE_DIR)
}

/// Two cheap checks that hold on every branch: storm arithmetic and independent failures.
fn validate(out: &Path, suite: &Path) -> assert_cmd::assert::Assert {
    retrysim()
        .current_dir(root())
        .args(["validate", "--check", "storm", "--check", "independent-failures", "--quiet", "--out"])
        .arg(out)
        .arg("--suite")
        .arg(suite)
        .assert()
}

#[test]
fn validate_writes_the_same_file_every_time_and_exits_0_when_checks_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b/nested"));
    validate(&a, &suite()).success();
    validate(&b, &suite()).success();
    let first = std::fs::read_to_string(a.join("VALIDATION.md")).unwrap();
    let second = std::fs::read_to_string(b.join("VALIDATION.md")).unwrap();
    assert_eq!(first, second, "same bytes every time");
    assert!(first.starts_with("# Validation\n"));
    assert!(first.contains("2 checks, 2 pass, 0 fail"), "{first}");
    // The list's order, whatever the order of --check.
    let storm = first.find("## 1. Independent failures").expect("independent failures first");
    assert!(first[storm..].contains("## 2. Retry storm arithmetic (`storm`): pass"), "{first}");
    assert!(first.contains("Reproduce: `cargo run --release -- run experiments/validation/storm.toml`"));
    // The file's leading comment states the check.
    assert!(first.contains("> Check: retry storm arithmetic."));
    assert!(!first.contains(" s  ") && !first.contains("M events"), "no wall times or progress in the file");
}

#[test]
fn a_failing_check_still_writes_the_file_and_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    let bad_suite = tmp.path().join("suite");
    std::fs::create_dir(&bad_suite).unwrap();
    for f in ["storm.toml", "independent-failures.toml"] {
        std::fs::copy(suite().join(f), bad_suite.join(f)).unwrap();
    }
    // Clients that do not retry 503s: the outage offers R calls/s, not n x R.
    let storm = std::fs::read_to_string(bad_suite.join("storm.toml")).unwrap();
    std::fs::write(bad_suite.join("storm.toml"), format!("{storm}retry_on = [500]\n")).unwrap();
    let out = tmp.path().join("out");
    let assert = validate(&out, &bad_suite).code(1);
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("1 of 2 validation check(s) failed: storm"), "{stderr}");
    let md = std::fs::read_to_string(out.join("VALIDATION.md")).unwrap();
    assert!(md.contains("2 checks, 1 pass, 1 fail"), "{md}");
    assert!(md.contains("## 2. Retry storm arithmetic (`storm`): **FAIL**"), "{md}");
}

#[test]
fn an_unknown_check_is_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let assert = retrysim()
        .current_dir(root())
        .args(["validate", "--check", "erlang-z", "--out"])
        .arg(tmp.path())
        .assert()
        .code(2);
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("no check named `erlang-z`") && stderr.contains("erlang-b"), "{stderr}");
    assert!(!tmp.path().join("VALIDATION.md").exists());
}

/// Every check has its file, and every file of the suite is a check (plus the AWS reference
/// data and its note).
#[test]
fn the_suite_folder_and_the_check_list_agree() {
    let mut files: Vec<String> = std::fs::read_dir(suite())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| f.ends_with(".toml"))
        .map(|f| f.trim_end_matches(".toml").to_string())
        .collect();
    files.sort();
    let mut ids: Vec<String> =
        retrysim::validation::checks::CHECKS.iter().map(|c| c.id.to_string()).collect();
    ids.sort();
    assert_eq!(files, ids);
    for id in &ids {
        let exp = load(&suite().join(format!("{id}.toml")), &Overrides::default()).unwrap();
        assert!(exp.description.starts_with("Check:"), "{id}.toml starts with a comment stating the check");
        assert!(exp.description.contains("Source"), "{id}.toml names its source");
        assert_eq!(exp.name, format!("validation-{id}"), "results/validation-{id}/ when reproduced");
    }
}

/// The suite's AWS file is the shipped experiment with more runs: the comparison validates
/// what `experiments/aws-2015-jitter.toml` runs.
#[test]
fn the_aws_check_runs_the_shipped_experiment() {
    let shipped = load(&root().join("experiments/aws-2015-jitter.toml"), &Overrides::default()).unwrap();
    let check = load(&suite().join("aws-2015-jitter.toml"), &Overrides::default()).unwrap();
    assert_eq!((shipped.runs, check.runs), (100, 300));
    assert_eq!(shipped.seed, check.seed);
    assert_eq!(shipped.sweep_keys, check.sweep_keys);
    assert_eq!(shipped.points.len(), check.points.len());
    for (a, b) in shipped.points.iter().zip(&check.points) {
        assert_eq!(a.values, b.values);
        assert_eq!(a.strategies, b.strategies);
        let model = |p: &retrysim::experiment::Point| {
            let s = &p.spec;
            format!("{:?} {:?} {:?} {:?} {:?}", s.horizon, s.workload, s.network, s.server, s.output)
        };
        assert_eq!(model(a), model(b));
    }
}

/// Runs check `id` alone on a copy of its file with `from` replaced by `to` (and its upstream
/// reference beside it): it must fail. Returns VALIDATION.md's failing rows.
fn failing_rows_when_changed(id: &str, reference: &str, from: &str, to: &str) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let bad_suite = tmp.path().join("suite");
    std::fs::create_dir(&bad_suite).unwrap();
    std::fs::copy(suite().join(reference), bad_suite.join(reference)).unwrap();
    let file = std::fs::read_to_string(suite().join(format!("{id}.toml"))).unwrap();
    assert!(file.contains(from), "{id}.toml has `{from}`");
    std::fs::write(bad_suite.join(format!("{id}.toml")), file.replace(from, to)).unwrap();
    let out = tmp.path().join("out");
    retrysim()
        .current_dir(root())
        .args(["validate", "--check", id, "--quiet", "--out"])
        .arg(&out)
        .arg("--suite")
        .arg(&bad_suite)
        .assert()
        .code(1);
    let md = std::fs::read_to_string(out.join("VALIDATION.md")).unwrap();
    assert!(md.contains(&format!("(`{id}`): **FAIL**")), "{md}");
    let failed: Vec<String> = md.lines().filter(|l| l.ends_with("| **FAIL** |")).map(String::from).collect();
    assert!(!failed.is_empty(), "{md}");
    failed
}

/// The Brooker check can fail: the same file with the adaptive bucket's deposit doubled
/// (0.2 tokens per call instead of upstream's 0.1) leaves upstream's noise at the high
/// failure rates, where the bucket's refill decides how many retries go out.
#[test]
fn the_brooker_check_fails_when_the_bucket_is_not_upstreams() {
    let reference = retrysim::validation::checks::brooker::REFERENCE;
    let failed =
        failing_rows_when_changed("brooker-retry-sim", reference, "per_call = 0.1", "per_call = 0.2");
    assert!(failed.iter().all(|l| l.contains("adaptive_10pct")), "only the bucket's rows fail: {failed:?}");
}

/// The collapse check can fail: with the server's slowdown per request in service doubled
/// (alpha 0.02 instead of upstream's 0.01) the collapse comes earlier and the windows of both
/// scenarios leave upstream's noise; with the first backoff drawn from U(0, 10 s) instead of
/// U(0, 20 s), only the backoff scenario's windows do.
#[test]
fn the_collapse_check_fails_when_the_model_is_not_upstreams() {
    let reference = retrysim::validation::checks::brooker_collapse::REFERENCE;
    let id = "brooker-collapse-ramp";
    let failed = failing_rows_when_changed(id, reference, "alpha = 0.01,", "alpha = 0.02,");
    for scenario in ["ramp_no_backoff,", "ramp_backoff_and_jitter,"] {
        assert!(failed.iter().any(|l| l.contains(scenario)), "{scenario} windows fail: {failed:?}");
    }
    let failed = failing_rows_when_changed(id, reference, "base = \"20s\"", "base = \"10s\"");
    assert!(
        failed.iter().all(|l| l.contains("ramp_backoff_and_jitter")),
        "only the backoff's rows: {failed:?}"
    );
}

/// The OSDI check can fail, on both sides of the band of the primary's throughput in which
/// the four outcomes hold (90 to 93 us per insert, as the check's file states): at 89 us the
/// 0.40-core, 10 s trigger recovers, at 94 us the 0.45-core one stays down.
#[test]
fn the_osdi_check_fails_outside_its_band() {
    let file = std::fs::read_to_string(suite().join("osdi-retry.toml")).unwrap();
    let service = "service_time = { dist = \"constant\", value = \"91us\" }";
    assert!(file.contains(service));
    for (us, failing) in [
        (89, "0.40 cores for 10 s, one insert every 75000 ns"),
        (94, "0.45 cores for 10 s, one insert every 75000 ns"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let bad_suite = tmp.path().join("suite");
        std::fs::create_dir(&bad_suite).unwrap();
        std::fs::write(
            bad_suite.join("osdi-retry.toml"),
            file.replace(service, &service.replace("91us", &format!("{us}us"))),
        )
        .unwrap();
        let out = tmp.path().join("out");
        retrysim()
            .current_dir(root())
            .args(["validate", "--check", "osdi-retry", "--quiet", "--out"])
            .arg(&out)
            .arg("--suite")
            .arg(&bad_suite)
            .assert()
            .code(1);
        let md = std::fs::read_to_string(out.join("VALIDATION.md")).unwrap();
        let failed: Vec<&str> = md.lines().filter(|l| l.ends_with("| **FAIL** |")).collect();
        assert_eq!(failed.len(), 1, "{us} us: {failed:?}");
        assert!(failed[0].contains(failing) && failed[0].contains("go-driver"), "{us} us: {failed:?}");
    }
}
