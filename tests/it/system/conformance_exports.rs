//! Exported files against the real libraries (issue 28): a tuned strategy is written by
//! `retrysim export urllib3` or `retrysim export axios-retry`, the conformance suite's driver
//! loads exactly that file into the real library (`Retry(**json.load(f))`; axios-retry's options
//! with the built-ins' names turned into its functions), sends operations against
//! `retrysim serve`, and every attempt is replayed through `run`'s decision for the strategy
//! that was exported, as the suite does (tests/it/system/conformance.rs): attempts exactly,
//! delays by its Kolmogorov-Smirnov test at its significance. The strategies are not the
//! libraries' defaults (those are the suite's `defaults` cases): a capped exponential and an
//! additive jitter with `immediate_first` for urllib3, exponentialDelay and linearDelay for
//! axios-retry, so the export's factors, caps and jitters are what the library runs.

use super::conformance::{
    ALPHA, Case, Config, ONE_AT_A_TIME, Runtime, judge, play, replay, strategy_of, work_dir,
};
use std::path::Path;
use std::process::Command;

/// One exported strategy and the scenarios it meets.
struct ExportCase {
    kind: &'static str,
    /// What the strategy is, for the failure message.
    what: &'static str,
    /// The `[[strategies]]` keys (not a preset: a tuned strategy written out).
    keys: &'static str,
    /// What `retrysim export --lossy` must say it dropped (`key:` prefixes); empty: no --lossy.
    dropped: &'static [&'static str],
    scenarios: &'static [&'static str],
    workers: u32,
}

const CASES: [ExportCase; 4] = [
    ExportCase {
        kind: "urllib3",
        what: "exponential 50 ms, capped at 150 ms, immediate first retry (0, 100, 150, 150 ms)",
        keys: r#"max_attempts = 5
retry_on = [500, 502, 503, 504, "timeout", "connection-error"]
backoff = { kind = "exponential", base = "50ms", cap = "150ms", multiplier = 2.0, immediate_first = true }"#,
        dropped: &[],
        scenarios: &["outage-503", "commit-504"],
        workers: 16,
    },
    ExportCase {
        kind: "urllib3",
        what: "additive jitter 50 ms + U(0, 30 ms), cap 2 s, immediate first retry, Retry-After obeyed",
        keys: r#"max_attempts = 4
retry_on = [413, 429, 500, 502, 503, 504, "timeout", "connection-error"]
honor_retry_after = true
retry_after_mode = "replace"
retry_after_cap = "6h"
backoff = { kind = "additive-jitter", base = "50ms", cap = "2s", multiplier = 2.0, jitter = "30ms", immediate_first = true }"#,
        dropped: &[],
        scenarios: &["outage-503", "throttle-429"],
        workers: 16,
    },
    ExportCase {
        kind: "axios-retry",
        what: "exponentialDelay, delayFactor 75 ms (150-180, 300-360, 600-720 ms)",
        keys: r#"max_attempts = 4
retry_on = [429, 500, 502, 503, 504, "connection-error"]
honor_retry_after = true
retry_after_mode = "at-least-backoff"
backoff = { kind = "proportional-jitter", base = "165ms", multiplier = 2.0, p = 0.09090909090909091 }"#,
        dropped: &["retry_after_mode"],
        scenarios: &["outage-503", "commit-504"],
        // Node's timers fire late when 16 loops share its event loop on a loaded machine (a
        // median 17 ms over 100-120 ms delays, beyond the suite's 10 ms overhead allowance).
        workers: 8,
    },
    ExportCase {
        kind: "axios-retry",
        what: "linearDelay 50 ms (50, 100, 150, 200 ms)",
        keys: r#"max_attempts = 5
retry_on = [429, 500, 502, 503, 504, "connection-error"]
honor_retry_after = true
retry_after_mode = "at-least-backoff"
backoff = { kind = "linear", base = "50ms" }"#,
        dropped: &[],
        scenarios: &["outage-503", "commit-504"],
        workers: 16,
    },
];

/// `retrysim export KIND --strategy exported` of `experiment` into `out`; its standard error
/// (the `--lossy` lines) is checked against `case.dropped`.
fn export(case: &ExportCase, experiment: &Path, out: &Path) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_retrysim"));
    cmd.args(["export", case.kind, "--strategy", "exported", "--out"]).arg(out).arg(experiment);
    if !case.dropped.is_empty() {
        cmd.arg("--lossy");
    }
    let o = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "export {} failed: {stderr}", case.kind);
    let dropped: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.split("--lossy dropped ").nth(1))
        .filter_map(|d| d.split(':').next())
        .collect();
    assert_eq!(dropped, case.dropped, "{}: {stderr}", case.what);
}

#[test]
fn exported_urllib3_and_axios_retry_files_behave_as_the_strategy() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let root = work_dir("exports");
    let mut failures = Vec::new();
    for (n, case) in CASES.iter().enumerate() {
        for scenario in case.scenarios {
            let dir = root.join(format!("{n}-{scenario}"));
            std::fs::create_dir_all(&dir).unwrap();
            let text = std::fs::read_to_string(
                Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("conformance/scenarios/{scenario}.toml")),
            )
            .unwrap();
            let file = format!("{text}\n[[strategies]]\nname = \"exported\"\n{}\n", case.keys);
            let experiment = dir.join("strategy.toml");
            std::fs::write(&experiment, &file).unwrap();
            let exported = dir.join(format!("exported.{}.json", case.kind));
            export(case, &experiment, &exported);
            let (runtime, driver) = match case.kind {
                "urllib3" => (Runtime::Python, "urllib3_driver.py"),
                _ => (Runtime::Node, "axios_retry_driver.js"),
            };
            // The driver's configuration is the exported file (the config outlives the test).
            let name: &'static str = Box::leak(exported.display().to_string().into_boxed_str());
            let config = Config {
                library: case.kind,
                runtime,
                driver,
                name,
                preset: "",
                keys: case.keys,
                workers: case.workers,
            };
            let (version, log) = play(&config, &file, &dir.join("play"), &[]);
            let replayed = replay(&strategy_of(&file), &log);
            let row = judge(&Case { config, scenario, difference: None }, version, &log, &replayed);
            eprintln!("{} {scenario}: {row:?}", case.what);
            if !row.passed {
                failures.push(format!(
                    "{} {} {scenario}: p {:?} (fails below {ALPHA}), differing decisions {:?}, early delays {:?}\n{}",
                    case.kind,
                    case.what,
                    row.p_value,
                    &replayed.differed[..replayed.differed.len().min(5)],
                    &replayed.early[..replayed.early.len().min(5)],
                    std::fs::read_to_string(&exported).unwrap()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
