//! `retrysim check`'s capacity arithmetic (src/experiment/capacity.rs, DESIGN §8) equals the
//! same arithmetic done by hand from three shipped files' numbers: the flagship (an outage),
//! layered-retries (a slowdown, attempts multiplied through gateway layers) and metastable
//! (a capacity fault with workers rounded down, and the overload model at full load). The
//! numbers are printed to 3 significant figures, as `check` prints them.

use assert_cmd::Command;
use retrysim::stats::sig;

/// `retrysim check FILE ARGS`'s stdout, lines trimmed.
fn check(file: &str, args: &[&str]) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .arg("check")
        .arg(format!("{}/experiments/{file}", env!("CARGO_MANIFEST_DIR")))
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap().lines().map(|l| l.trim().to_owned()).collect()
}

fn has(lines: &[String], expected: &str) {
    assert!(lines.iter().any(|l| l == expected), "no line {expected:?} in:\n{}", lines.join("\n"));
}

#[test]
fn retry_storm_by_hand() {
    let lines = check("retry-storm.toml", &[]);
    // 1000 payments/s; 120 workers at a mean 100 ms serve 120 / 0.1 = 1200/s: 1000 / 1200.
    let (rate, capacity) = (1000.0, 120.0 / 0.100);
    has(
        &lines,
        &format!(
            "offered load {} calls/s (open rate); capacity {} requests/s; utilisation {}",
            sig(rate, 3),
            sig(capacity, 3),
            sig(rate / capacity, 3)
        ),
    );
    // The outage from 10 s for 5 s serves nothing.
    has(
        &lines,
        "fault 1 outage [10 s, 15 s): offered 1000 calls/s, capacity 0 (answered without the work), utilisation inf",
    );
    // A full queue of 1200 at 1200/s is 1 s of work.
    has(&lines, &format!("queue 1200 = {} s of work at full capacity", sig(1200.0 / capacity, 3)));
    // Every strategy: 4 attempts, no layer, the 1 s timeout.
    let strategies: Vec<&String> = lines.iter().filter(|l| l.starts_with("strategy \"")).collect();
    assert_eq!(strategies.len(), 11);
    assert!(
        strategies.iter().all(|l| l.contains(": at most 4 server calls per operation; timeout 1 s;")),
        "{strategies:?}"
    );
}

#[test]
fn layered_retries_by_hand() {
    let lines = check("layered-retries.toml", &[]);
    let capacity = 120.0 / 0.100;
    has(
        &lines,
        &format!(
            "offered load 1000 calls/s (open rate); capacity {} requests/s; utilisation {}",
            sig(capacity, 3),
            sig(1000.0 / capacity, 3)
        ),
    );
    // A slowdown x2 doubles every service time: half the capacity, 600/s, against 1000/s.
    has(
        &lines,
        &format!(
            "fault 1 slowdown x2 [10 s, 15 s): offered 1000 calls/s, capacity {} requests/s, utilisation {}",
            sig(capacity / 2.0, 3),
            sig(1000.0 / (capacity / 2.0), 3)
        ),
    );
    // The client's 3 attempts times each layer's: 3, 3 x 3, 3 x 3 x 3, 3 x 1 x 1, 3 x 3 x 3.
    for (name, calls) in [
        ("client-only", "3".to_owned()),
        ("client+edge", format!("3 x 3 (edge) = {}", 3 * 3)),
        ("three-tiers", format!("3 x 3 (edge) x 3 (mesh) = {}", 3 * 3 * 3)),
        ("three-tiers, retry at client only", format!("3 x 1 (edge) x 1 (mesh) = {}", 3)),
        ("three-tiers, honour don't-retry", format!("3 x 3 (edge) x 3 (mesh) = {}", 3 * 3 * 3)),
    ] {
        let start = format!("strategy \"{name}\": at most {calls} server calls per operation; timeout 2 s;");
        assert!(lines.iter().any(|l| l.starts_with(&start)), "no {start:?} in:\n{}", lines.join("\n"));
    }
}

#[test]
fn metastable_by_hand() {
    // One point: the 10 s capacity fault, expired requests served.
    let lines = check(
        "metastable.toml",
        &[
            "--set",
            "sweep={}",
            "--set",
            "server.faults[0].duration=\"10s\"",
            "--set",
            "server.drop_expired=false",
        ],
    );
    // 100 workers at a mean 80 ms: 1250/s against 1000/s.
    let capacity = 100.0 / 0.080;
    has(
        &lines,
        &format!(
            "offered load 1000 calls/s (open rate); capacity {} requests/s; utilisation {}",
            sig(capacity, 3),
            sig(1000.0 / capacity, 3)
        ),
    );
    // Overload: each of the 100 - 90 requests past the knee slows service by 1.5 %, so at
    // full load every service takes 1 + 0.015 x 10 = 1.15 times as long.
    let full = 100.0 / (0.080 * (1.0 + 0.015 * (100.0 - 90.0)));
    has(
        &lines,
        &format!(
            "with every worker busy (server.overload): capacity {} requests/s, utilisation {}",
            sig(full, 3),
            sig(1000.0 / full, 3)
        ),
    );
    // The capacity fault leaves floor(0.6 x 100) = 60 workers: 60 / 0.08 = 750/s.
    let left = (0.6f64 * 100.0).floor() / 0.080;
    has(
        &lines,
        &format!(
            "fault 1 capacity x0.6 [20 s, 30 s): offered 1000 calls/s, capacity {} requests/s, utilisation {}",
            sig(left, 3),
            sig(1000.0 / left, 3)
        ),
    );
    has(&lines, "queue unbounded");
    // immediate resends up to 5 times; no-retries makes one attempt; 1 s timeout.
    let immediate = "strategy \"immediate\": at most 5 server calls per operation; timeout 1 s;";
    assert!(lines.iter().any(|l| l.starts_with(immediate)), "{}", lines.join("\n"));
    let once = "strategy \"no-retries\": at most 1 server calls per operation; timeout 1 s;";
    assert!(lines.iter().any(|l| l.starts_with(once)), "{}", lines.join("\n"));
}
