//! `retrysim tune` (docs/tuning.md): on problems whose optimum is known the recommendation
//! lands on it within the search resolution; tune.csv is consistent with the constraints and
//! the recommendation; the same seed gives the same files on any thread count; bad `[tune]`
//! sections are refused with the key (exit 2); nothing feasible is exit 1 with the binding
//! constraint named.

use crate::support::Table;
use assert_cmd::Command;
use retrysim::experiment::{self, Overrides};

fn retrysim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_retrysim"))
}

/// Background 503s with probability 1/2 (and 0.3 in a second scenario): an operation
/// succeeds within k attempts with probability 1 - 0.5^k, and amplification grows with k.
/// Minimising amplification subject to success_rate >= 0.95 in both scenarios has its optimum
/// at the smallest k with 1 - 0.5^k >= 0.95: k = 5 (0.969; k = 4 gives 0.9375).
const ATTEMPTS: &str = r#"
name = "attempts"
seed = 11
runs = 6
horizon = "60s"
[workload]
kind = "closed"
clients = 4000
[server]
concurrency = 100
service_time = { dist = "constant", value = "1ms" }
errors = [{ status = 503, probability = 0.5 }]
[client]
timeout = "1s"
[[strategies]]
name = "fj"
max_attempts = 3
backoff = { kind = "full-jitter", base = "1ms", cap = "10ms" }
[tune]
objective = "amplification"
constraints = ["success_rate >= 0.95"]
runs = 2
[tune.space]
max_attempts = [1, 14]
[[tune.scenarios]]
name = "half"
[[tune.scenarios]]
name = "milder"
"server.errors" = [{ status = 503, probability = 0.3 }]
"#;

/// Every request fails during the first 2 s; three attempts at 0, b and 2b succeed iff
/// 2b >= 2 s. Minimising p99 latency (2b, or b above 2 s: increasing in b) subject to
/// success_rate >= 0.99 has its optimum at b = 1 s, between two levels of the lattice.
const BASE: &str = r#"
name = "base"
seed = 5
runs = 2
horizon = "60s"
[workload]
kind = "closed"
clients = 200
[server]
concurrency = 400
service_time = { dist = "constant", value = "1ms" }
[[server.faults]]
kind = "outage"
start = "0"
duration = "2s"
status = 503
[[strategies]]
name = "constant"
max_attempts = 3
backoff = { kind = "constant", base = "10ms" }
[tune]
objective = "latency_p99_s"
constraints = ["success_rate >= 0.99"]
levels = 9
runs = 1
[tune.space]
"backoff.base" = ["10ms", "10s"]
"#;

/// Runs `retrysim tune` on `text` in a temporary folder with `args`; returns the folder,
/// the output folder, stdout and the exit code.
fn tune(text: &str, args: &[&str]) -> (tempfile::TempDir, std::path::PathBuf, String, i32) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("e.toml"), text).unwrap();
    let out = tmp.path().join("out");
    let output = retrysim()
        .current_dir(tmp.path())
        .args(["tune", "e.toml", "--out", "out"])
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let code = output.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 1,
        "retrysim tune failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    (tmp, out, stdout, code)
}

/// The recommended row(s) of tune.csv.
fn recommended(t: &Table) -> Vec<&Vec<String>> {
    t.rows.iter().filter(|r| t.get(r, "stage") == "recommended").collect()
}

#[test]
fn a_monotone_objective_lands_on_its_binding_constraint() {
    let (_tmp, out, stdout, code) = tune(ATTEMPTS, &[]);
    assert_eq!(code, 0, "{stdout}");
    let t = Table::read(&out.join("tune.csv"));
    let rec = recommended(&t);
    assert_eq!(rec.len(), 2, "one row per scenario");
    assert_eq!(t.get(rec[0], "max_attempts"), "5", "the smallest k with 1 - 0.5^k >= 0.95:\n{stdout}");
    // k = 4 was tried and is infeasible: the answer is on the boundary.
    let four: Vec<_> = t.rows.iter().filter(|r| t.get(r, "max_attempts") == "4").collect();
    assert!(!four.is_empty() && four.iter().all(|r| t.get(r, "feasible") == "false"), "k = 4 is infeasible");
    // The binding scenario is the harsher one; the objective is the worst of the two.
    let worst = rec.iter().map(|r| t.num(r, "amplification")).fold(f64::MIN, f64::max);
    assert_eq!(t.num(rec[0], "objective"), worst);
    let toml = std::fs::read_to_string(out.join("recommendation.toml")).unwrap();
    assert!(toml.contains("max_attempts = 5"), "{toml}");
    assert!(stdout.contains("max_attempts = 5") && stdout.contains("margin"), "{stdout}");
}

#[test]
fn a_continuous_optimum_is_found_within_one_level() {
    let (_tmp, out, stdout, code) = tune(BASE, &[]);
    assert_eq!(code, 0, "{stdout}");
    let exp = experiment::load_str(BASE, "base.toml", &Overrides::default()).unwrap();
    let spec = retrysim::tune::spec::parse(&exp).unwrap().expect("the file has a [tune]");
    let levels = spec.params[0].levels(spec.levels);
    // The first level at or above the true optimum (1 s), and the one below it.
    let at = levels.iter().position(|l| l.position >= 1.0).unwrap();
    let t = Table::read(&out.join("tune.csv"));
    let rec = recommended(&t);
    assert_eq!(t.get(rec[0], "backoff.base"), levels[at].label, "levels {levels:?}\n{stdout}");
    let below = &levels[at - 1].label;
    let rows: Vec<_> = t.rows.iter().filter(|r| t.get(r, "backoff.base") == below).collect();
    assert!(!rows.is_empty(), "the level below the optimum ({below}) was tried:\n{stdout}");
    assert!(rows.iter().all(|r| t.get(r, "feasible") == "false"), "{below} is infeasible");
}

/// Checks tune.csv against the file's constraints and the recommendation against the other
/// finalists.
fn check_consistency(t: &Table, constraints: &[(&str, &str, f64)], objective: &str) {
    let mut feasible = 0;
    for r in &t.rows {
        if t.get(r, "feasible") != "true" {
            continue;
        }
        feasible += 1;
        for &(metric, op, bound) in constraints {
            let x = t.num(r, metric);
            let ok = match op {
                "<=" => x <= bound,
                ">=" => x >= bound,
                _ => unreachable!(),
            };
            assert!(
                ok,
                "candidate {} marked feasible has {metric} = {x}, not {op} {bound}",
                t.get(r, "candidate")
            );
        }
        // The objective column is the worst scenario's mean (minimised: the largest).
        let cand = t.get(r, "candidate");
        let worst = t
            .rows
            .iter()
            .filter(|o| t.get(o, "candidate") == cand)
            .map(|o| t.num(o, objective))
            .fold(f64::MIN, f64::max);
        assert_eq!(t.num(r, "objective"), worst, "candidate {cand}");
    }
    assert!(feasible > 0);
    // The recommendation is the best feasible finalist, on the same runs.
    let rec = recommended(t);
    assert!(!rec.is_empty());
    let (best, runs) = (t.num(rec[0], "objective"), t.get(rec[0], "runs"));
    for r in t.rows.iter().filter(|r| t.get(r, "stage") == "confirm" && t.get(r, "feasible") == "true") {
        assert_eq!(t.get(r, "runs"), runs, "finalists share their runs");
        assert!(
            best <= t.num(r, "objective"),
            "candidate {} beats the recommendation",
            t.get(r, "candidate")
        );
    }
}

/// Two parameters, noisy metrics (jitter, exponential service), an outage scenario and a
/// quiet one: enough for every stage of the search.
const NOISY: &str = r#"
name = "noisy"
seed = 3
runs = 4
horizon = "20s"
[workload]
kind = "open"
rate = 400.0
duration = "10s"
clients = 50
[server]
concurrency = 40
service_time = { dist = "exponential", mean = "80ms" }
queue = 200
[[server.faults]]
kind = "outage"
start = "3s"
duration = "1s"
status = 503
[client]
timeout = "500ms"
[[strategies]]
name = "fj"
max_attempts = 3
backoff = { kind = "full-jitter", base = "50ms", cap = "2s" }
[tune]
objective = "latency_p99_s"
constraints = ["success_rate >= 0.97", "amplification <= 1.5"]
candidates = 10
runs = 2
rounds = 3
confirm = 2
confirm_runs = 6
[tune.space]
"backoff.base" = ["5ms", "2s"]
max_attempts = [1, 8]
[[tune.scenarios]]
name = "quiet"
"server.faults" = []
[[tune.scenarios]]
name = "outage"
"#;

#[test]
fn feasible_rows_satisfy_the_constraints_and_the_recommendation_is_the_best_finalist() {
    let (_tmp, out, stdout, code) = tune(NOISY, &[]);
    assert_eq!(code, 0, "{stdout}");
    let t = Table::read(&out.join("tune.csv"));
    check_consistency(&t, &[("success_rate", ">=", 0.97), ("amplification", "<=", 1.5)], "latency_p99_s");
    // Every stage of the search shows up.
    for stage in ["coarse", "refine-1", "race-1", "confirm", "recommended"] {
        assert!(t.rows.iter().any(|r| t.get(r, "stage") == stage), "no candidate reached {stage}");
    }
    let (_tmp, out, _, _) = tune(ATTEMPTS, &[]);
    check_consistency(&Table::read(&out.join("tune.csv")), &[("success_rate", ">=", 0.95)], "amplification");
    let chart = out.join("charts/tune-amplification.svg");
    assert!(chart.is_file(), "the chart is written");
    assert!(std::fs::read_to_string(chart).unwrap().contains("<svg"));
}

#[test]
fn the_same_seed_gives_the_same_files_on_one_or_two_threads() {
    let (_a, one, stdout_one, _) = tune(NOISY, &["--threads", "1"]);
    let (_b, two, stdout_two, _) = tune(NOISY, &["--threads", "2"]);
    for f in [
        "tune.csv",
        "recommendation.toml",
        "charts/tune-latency_p99_s.svg",
        "charts/tune-latency_p99_s-plane.png",
    ] {
        let (x, y) = (std::fs::read(one.join(f)).unwrap(), std::fs::read(two.join(f)).unwrap());
        assert!(x == y, "{f} differs between 1 and 2 threads");
    }
    let strip = |s: &str| {
        s.lines()
            .filter(|l| !l.starts_with("wall time") && !l.starts_with("wrote"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(strip(&stdout_one), strip(&stdout_two));
    // Another seed searches (and runs) differently.
    let (_c, other, _, _) = tune(NOISY, &["--seed", "4"]);
    assert_ne!(std::fs::read(one.join("tune.csv")).unwrap(), std::fs::read(other.join("tune.csv")).unwrap());
}

#[test]
fn the_recommendation_is_a_ready_strategies_block() {
    let (_tmp, out, _, _) = tune(NOISY, &[]);
    let block = std::fs::read_to_string(out.join("recommendation.toml")).unwrap();
    assert!(block.contains("[[strategies]]\nname = \"fj\""), "{block}");
    assert!(
        block.contains("# objective (minimise): latency_p99_s = ") && block.contains("margin"),
        "{block}"
    );
    // Put in place of the file's strategy, it loads and holds the tuned values.
    let start = NOISY.find("[[strategies]]").unwrap();
    let end = NOISY.find("[tune]").unwrap();
    let text = format!("{}{}\n{}", &NOISY[..start], block, &NOISY[end..]);
    let exp = experiment::load_str(&text, "rec.toml", &Overrides::default())
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let t = Table::read(&out.join("tune.csv"));
    let rec = recommended(&t);
    let policy = &exp.points[0].strategies[0].policy;
    assert_eq!(policy.max_attempts.map(|m| m.to_string()).as_deref(), Some(t.get(rec[0], "max_attempts")));
    assert!(block.contains(&format!("base = \"{}\"", t.get(rec[0], "backoff.base"))), "{block}");
}

#[test]
fn nothing_feasible_names_the_binding_constraint_and_exits_1() {
    let text = NOISY.replace("success_rate >= 0.97", "success_rate >= 1.5");
    let (_tmp, out, stdout, code) = tune(&text, &[]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("no candidate satisfies every constraint"), "{stdout}");
    assert!(stdout.contains("`success_rate >= 1.5` binds"), "{stdout}");
    assert!(stdout.contains("closest candidate"), "{stdout}");
    assert!(out.join("tune.csv").is_file(), "tune.csv is written");
    assert!(!out.join("recommendation.toml").exists(), "no recommendation");
}

/// A `[tune]` section that must be refused, and what stderr must say.
struct Bad {
    what: &'static str,
    from: &'static str,
    to: &'static str,
    stderr: &'static [&'static str],
}

#[test]
fn bad_tune_sections_are_refused_with_the_key() {
    let cases = [
        Bad {
            what: "unknown metric in a constraint",
            from: "\"amplification <= 1.5\"",
            to: "\"amplificaton <= 1.5\"",
            stderr: &[
                "`tune.constraints[1]`",
                "unknown metric `amplificaton`",
                "did you mean `amplification`",
            ],
        },
        Bad {
            what: "unknown objective",
            from: "objective = \"latency_p99_s\"",
            to: "objective = \"p99\"",
            stderr: &["`tune.objective`", "unknown metric `p99`"],
        },
        Bad {
            what: "a range with low > high",
            from: "\"backoff.base\" = [\"5ms\", \"2s\"]",
            to: "\"backoff.base\" = [\"2s\", \"5ms\"]",
            stderr: &["`tune.space.\"backoff.base\"`", "low > high"],
        },
        Bad {
            what: "a key of another backoff kind",
            from: "\"backoff.base\" = [\"5ms\", \"2s\"]",
            to: "\"backoff.jitter\" = [\"5ms\", \"2s\"]",
            stderr: &["`tune.space.\"backoff.jitter\"`", "additive-jitter", "full-jitter"],
        },
        Bad {
            what: "a budget key without a budget",
            from: "max_attempts = [1, 8]",
            to: "\"budget.ratio\" = [0.1, 0.5]",
            stderr: &["`tune.space.\"budget.ratio\"`", "no `budget`"],
        },
        Bad {
            what: "a key that is not the strategy's",
            from: "max_attempts = [1, 8]",
            to: "\"server.concurrency\" = [1, 8]",
            stderr: &["`tune.space.\"server.concurrency\"`", "no key `server`"],
        },
        Bad {
            what: "an unparsable constraint",
            from: "\"amplification <= 1.5\"",
            to: "\"amplification about 1.5\"",
            stderr: &["`tune.constraints[1]`", "no operator"],
        },
        Bad {
            what: "an unknown strategy",
            from: "objective = \"latency_p99_s\"",
            to: "strategy = \"jf\"\nobjective = \"latency_p99_s\"",
            stderr: &["`tune.strategy`", "no strategy named \"jf\"", "did you mean \"fj\""],
        },
        Bad {
            what: "a misspelt key of [tune]",
            from: "confirm = 2",
            to: "confirms = 2",
            stderr: &["`tune.confirms`", "did you mean `tune.confirm`"],
        },
        Bad {
            what: "a scenario with an impossible value",
            from: "\"server.faults\" = []",
            to: "\"server.concurrency\" = 0",
            stderr: &["`tune.scenarios[0].\"server.concurrency\"`", "zero concurrency"],
        },
    ];
    for case in cases {
        assert!(NOISY.contains(case.from), "test bug: {}", case.what);
        let text = NOISY.replacen(case.from, case.to, 1);
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("e.toml"), &text).unwrap();
        for verb in [&["check", "e.toml"][..], &["tune", "e.toml", "--out", "out"]] {
            let output = retrysim().current_dir(tmp.path()).args(verb).output().unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            let shown = format!("{} ({}): {stderr}", case.what, verb[0]);
            assert_eq!(output.status.code(), Some(2), "{shown}");
            for fragment in case.stderr {
                assert!(stderr.contains(fragment), "stderr lacks {fragment:?}: {shown}");
            }
            assert!(!tmp.path().join("out").exists(), "nothing written: {shown}");
        }
    }
}

#[test]
fn tune_needs_a_tune_section_and_no_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let without = &NOISY[..NOISY.find("[tune]").unwrap()];
    std::fs::write(tmp.path().join("e.toml"), without).unwrap();
    let output = retrysim().current_dir(tmp.path()).args(["tune", "e.toml"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("missing key `tune`"));
    // `run` accepts a file with [tune] and ignores it.
    std::fs::write(tmp.path().join("t.toml"), NOISY).unwrap();
    retrysim()
        .current_dir(tmp.path())
        .args(["run", "t.toml", "--runs", "1", "--out", "run", "-q"])
        .assert()
        .success();
    let output = retrysim()
        .current_dir(tmp.path())
        .args(["tune", "t.toml", "--set", "sweep.\"strategies.fj.max_attempts\"=[1, 2]"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("`sweep`"));
    assert!(!tmp.path().join("results").exists());
}

/// One progress bar over the whole search: its count of runs never starts again at a new
/// stage (coarse design, rounds, confirmation), never passes its length, and ends at the
/// runs the search made. On a pipe the bar is a line per update (`--progress-interval 0`:
/// every update), `NAME tune: STAGE: DONE/TOTAL runs, ...`.
#[test]
fn tune_shows_one_progress_bar_over_the_whole_search() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("e.toml"), ATTEMPTS).unwrap();
    let output = retrysim()
        .current_dir(tmp.path())
        .args(["tune", "e.toml", "--out", "out", "--threads", "2", "--progress-interval", "0"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stderr = String::from_utf8(output.stderr).unwrap();
    let mut updates: Vec<(String, u64, u64)> = Vec::new();
    for line in stderr.lines() {
        let Some(rest) = line.strip_prefix("attempts tune: ") else { continue };
        let (stage, count) = rest.split_once(": ").unwrap();
        let (done, total) = count.split(" runs").next().unwrap().split_once('/').unwrap();
        updates.push((stage.to_owned(), done.parse().unwrap(), total.parse().unwrap()));
    }
    let mut stages: Vec<&str> = updates.iter().map(|u| u.0.as_str()).collect();
    stages.dedup();
    assert!(stages.len() >= 3, "one bar through the stages: {stages:?}");
    assert_eq!(stages.first(), Some(&"coarse design"));
    assert_eq!(stages.last(), Some(&"confirmation"));
    for w in updates.windows(2) {
        assert!(w[1].1 > w[0].1, "the count started again: {:?} then {:?}", w[0], w[1]);
    }
    assert!(updates.iter().all(|u| u.1 <= u.2), "a count past its bar's length");
    // The summary's run count is where the bar ends.
    let stdout = String::from_utf8(output.stdout).unwrap();
    let spent: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("search: ")?.split(" runs").next()?.parse().ok())
        .expect("the summary says how many runs the search made");
    let last = updates.last().unwrap();
    assert_eq!(last.2, spent, "the bar's final length");
    assert!(last.1 + 2 >= spent, "the last update {last:?} is near the end of {spent} runs");
}
