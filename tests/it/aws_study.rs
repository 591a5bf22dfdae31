//! The headline of the AWS Architecture Blog study "Exponential Backoff And Jitter" (Brooker,
//! 2015), reproduced by experiments/aws-2015-jitter.toml: with contending clients, jitter
//! cuts the work (full jitter needs less than half the calls of plain exponential backoff at
//! 100 clients) and plain exponential backoff is by far the slowest to finish.
//!
//! Comparisons are made with margins of several standard errors. The strategies share their
//! random numbers within a run, so their means are correlated; the standard error of a
//! difference is bounded above by the sum of the two standard errors (whatever the
//! correlation), and that bound is what the margins use.

use retrysim::experiment::{Experiment, Overrides, load};
use retrysim::sweep::{self, Results};
use std::path::Path;

/// Margin, in (upper bounds of) standard errors. 5 makes a false alarm practically
/// impossible; the observed margins are tens of standard errors.
const Z: f64 = 5.0;

const STRATEGIES: [&str; 5] =
    ["exponential", "decorrelated-jitter", "equal-jitter", "full-jitter", "no-backoff"];

fn experiment(set: &[(&str, &str)]) -> Experiment {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/aws-2015-jitter.toml");
    let set = set.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    load(&file, &Overrides { set, ..Overrides::default() }).unwrap()
}

/// Mean and standard error of the mean.
#[derive(Clone, Copy, Debug)]
struct Mean {
    mean: f64,
    se: f64,
}

fn mean(xs: &[f64]) -> Mean {
    let n = xs.len() as f64;
    assert!(n >= 2.0);
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Mean { mean, se: (var / n).sqrt() }
}

/// `metric` over the runs of strategy `name` at point `p`.
fn metric(
    exp: &Experiment,
    results: &Results,
    p: usize,
    name: &str,
    f: fn(&retrysim::metrics::RunMetrics) -> f64,
) -> Mean {
    let s = exp.points[p]
        .strategies
        .iter()
        .position(|s| s.name == name)
        .unwrap_or_else(|| panic!("no strategy {name}"));
    let xs: Vec<f64> =
        results.runs.iter().filter(|r| r.point == p && r.strategy == s).map(|r| f(&r.metrics)).collect();
    assert_eq!(xs.len(), exp.runs as usize);
    mean(&xs)
}

fn calls(m: &retrysim::metrics::RunMetrics) -> f64 {
    m.calls as f64
}

fn completion(m: &retrysim::metrics::RunMetrics) -> f64 {
    m.completion_time_s
}

/// Every client eventually succeeds (no attempt limit, a long horizon): one operation each.
fn assert_everyone_succeeds(exp: &Experiment, results: &Results) {
    assert_eq!(results.runs.len(), exp.points.len() * STRATEGIES.len() * exp.runs as usize);
    for r in &results.runs {
        let point = &exp.points[r.point];
        let clients: u64 = point.values[0].parse().unwrap();
        let m = &r.metrics;
        let who = format!("{} clients, {}, run {}", clients, point.strategies[r.strategy].name, r.run);
        assert_eq!((m.ops, m.succeeded, m.failed), (clients, clients, 0), "{who}");
        // One write per attempt, each reaches the server; at least one per client.
        assert_eq!(m.server_calls, m.calls, "{who}");
        assert!(m.calls >= clients, "{who}");
    }
}

/// `a` is below `factor * b` by more than Z standard errors.
fn assert_below(what: &str, a: Mean, factor: f64, b: Mean) {
    let margin = Z * (a.se + factor * b.se);
    assert!(
        a.mean + margin < factor * b.mean,
        "{what}: {:.1} (se {:.2}) is not below {factor} x {:.1} (se {:.2}) by {margin:.2}",
        a.mean,
        a.se,
        b.mean,
        b.se
    );
}

#[test]
fn full_jitter_halves_the_calls_and_exponential_is_slowest_at_100_clients() {
    let exp = experiment(&[("workload.clients", "100")]);
    assert_eq!(exp.points.len(), 1, "--set of a swept key fixes it");
    assert_eq!(exp.runs, 100);
    let names: Vec<&str> = exp.points[0].strategies.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, STRATEGIES);
    let results = sweep::run(&exp, &|_| {});
    // The single point has no sweep column; every run has 100 clients.
    for r in &results.runs {
        let m = &r.metrics;
        assert_eq!((m.ops, m.succeeded, m.failed), (100, 100, 0), "{} run {}", names[r.strategy], r.run);
        assert_eq!(m.server_calls, m.calls);
    }

    let exponential = metric(&exp, &results, 0, "exponential", calls);
    let full = metric(&exp, &results, 0, "full-jitter", calls);
    assert_below("full-jitter calls vs half of exponential's", full, 0.5, exponential);

    let slowest = metric(&exp, &results, 0, "exponential", completion);
    for other in &STRATEGIES[1..] {
        let m = metric(&exp, &results, 0, other, completion);
        assert_below(&format!("{other} completion time vs exponential's"), m, 1.0, slowest);
    }
}

#[test]
fn the_ordering_holds_across_the_sweep() {
    let exp = experiment(&[("sweep.workload.clients", "[10, 100, 190]")]);
    assert_eq!(exp.sweep_keys, ["workload.clients"]);
    let values: Vec<&str> = exp.points.iter().map(|p| p.values[0].as_str()).collect();
    assert_eq!(values, ["10", "100", "190"]);
    let results = sweep::run(&exp, &|_| {});
    assert_everyone_succeeds(&exp, &results);

    for (p, clients) in [10, 100, 190].into_iter().enumerate() {
        let exponential = metric(&exp, &results, p, "exponential", calls);
        let full = metric(&exp, &results, p, "full-jitter", calls);
        // Jitter always saves calls; from 100 clients on it saves more than half of them.
        assert_below(
            &format!("{clients} clients: full-jitter calls vs exponential's"),
            full,
            1.0,
            exponential,
        );
        if clients >= 100 {
            assert_below(
                &format!("{clients} clients: full-jitter calls vs half of exponential's"),
                full,
                0.5,
                exponential,
            );
        }
        // Retrying at once makes the most calls of all.
        let none = metric(&exp, &results, p, "no-backoff", calls);
        for other in &STRATEGIES[1..4] {
            let m = metric(&exp, &results, p, other, calls);
            assert_below(&format!("{clients} clients: {other} calls vs no-backoff's"), m, 1.0, none);
        }
        let slowest = metric(&exp, &results, p, "exponential", completion);
        for other in &STRATEGIES[1..] {
            let m = metric(&exp, &results, p, other, completion);
            assert_below(
                &format!("{clients} clients: {other} completion time vs exponential's"),
                m,
                1.0,
                slowest,
            );
        }
    }
}
