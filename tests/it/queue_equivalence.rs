//! The optimised event queues give exactly the results of the reference binary heap: same
//! events in the same order, so identical metrics and identical CSV bytes. And the queue
//! model's copy compiled for plain runs gives exactly the results of the copy that tests every
//! feature.

use crate::support::shipped;
use retrysim::assembly::is_plain_run;
use retrysim::experiment::{self, Experiment, Overrides};
use retrysim::model::{Calendar, CalendarChecked, Heap, QueueChoice, Radix};
use retrysim::sweep::{Results, run_with};

/// Timeouts, losses, every fault kind, background errors with and without after-effects,
/// `drop_expired`, a ramp: every code path of the queue model that schedules events.
const STRESS: &str = r#"
name = "stress"
seed = 11
runs = 3
horizon = "40s"
[workload]
kind = "open"
rate = 400.0
duration = "30s"
clients = 50
schedule = [{ at = "5s", rate = 900.0 }, { at = "12s", rate = 300.0 }]
[network]
latency = { dist = "uniform", low = "1ms", high = "6ms" }
request_loss = 0.01
response_loss = 0.02
[server]
concurrency = 20
service_time = { dist = "lognormal", median = "30ms", sigma = 0.8 }
queue = 200
reject_status = 429
drop_expired = true
errors = [{ status = 503, probability = 0.02 }, { status = 500, probability = 0.01, after_effect = true }]
[[server.faults]]
kind = "outage"
start = "8s"
duration = "2s"
status = "timeout"
[[server.faults]]
kind = "capacity"
start = "14s"
duration = "4s"
factor = 0.3
[[server.faults]]
kind = "slowdown"
start = "20s"
duration = "3s"
factor = 2.5
[[server.faults]]
kind = "errors"
start = "24s"
duration = "2s"
probability = 0.5
status = 502
[client]
timeout = "300ms"
deadline = "3s"
max_attempts = 5
[[strategies]]
name = "none"
backoff = { kind = "none" }
[[strategies]]
name = "fj"
backoff = { kind = "full-jitter", base = "20ms", cap = "1s" }
[[strategies]]
name = "dj2"
backoff = { kind = "decorrelated-jitter-v2", base = "20ms", cap = "1s" }
[sweep]
"server.drop_expired" = [true, false]
"#;

/// Every output file's bytes.
fn csv(exp: &Experiment, r: &Results) -> Vec<(String, Vec<u8>)> {
    let dir = tempfile::tempdir().unwrap();
    let written = retrysim::results::writer::write_results(dir.path(), exp, r).unwrap();
    written
        .iter()
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(p).unwrap()))
        .collect()
}

fn assert_same<R: QueueChoice, C: QueueChoice>(exp: &Experiment) {
    let reference = run_with::<R>(exp, &|_| {});
    let candidate = run_with::<C>(exp, &|_| {});
    assert_eq!(reference.runs, candidate.runs, "{}: metrics differ", exp.name);
    assert_eq!(csv(exp, &reference), csv(exp, &candidate), "{}: CSV bytes differ", exp.name);
    assert!(reference.events() > 0);
}

fn assert_same_as_heap<C: QueueChoice>(exp: &Experiment) {
    assert_same::<Heap, C>(exp)
}

fn experiments() -> Vec<Experiment> {
    vec![
        experiment::load_str(STRESS, "stress", &Overrides::default()).expect("valid"),
        shipped("retry-storm.toml", &[("workload.duration", "20s"), ("horizon", "30s")]),
        {
            let mut e = shipped("aws-2015-jitter.toml", &[("sweep.workload.clients", "[10, 50, 150]")]);
            e.runs = 3;
            e
        },
        {
            let mut e = shipped("herd-10k.toml", &[("server.queue", "50"), ("workload.ramp", "200ms")]);
            e.runs = 2;
            e
        },
    ]
}

#[test]
fn calendar_queue_matches_the_binary_heap() {
    for exp in experiments() {
        assert_same_as_heap::<Calendar>(&exp);
    }
}

#[test]
fn radix_heap_matches_the_binary_heap() {
    for exp in experiments() {
        assert_same_as_heap::<Radix>(&exp);
    }
}

/// Plain runs (the herds: no timers, controls, faults or network) take a copy of the queue
/// model compiled without those features' tests; it must give exactly what the copy with every
/// test gives.
#[test]
fn the_plain_copy_of_the_model_matches_the_checked_copy() {
    let herds = [
        shipped("herd-10k.toml", &[("workload.clients", "3000")]),
        shipped("herd-10k.toml", &[("server.queue", "50"), ("workload.ramp", "200ms")]),
        shipped(
            "herd-10k.toml",
            &[
                ("workload.ops_per_client", "3"),
                ("workload.think_time", "20ms"),
                ("workload.clients", "2000"),
            ],
        ),
    ];
    for mut exp in herds {
        let point = &exp.points[0];
        assert!(is_plain_run(&point.spec, &point.strategies[0]), "{}: the herd is a plain run", exp.name);
        exp.runs = 2;
        assert_same::<CalendarChecked, Calendar>(&exp);
    }
}

#[test]
fn runs_with_any_feature_on_are_not_plain() {
    let with = |key: &str, value: &str| {
        let exp = shipped("herd-10k.toml", &[(key, value)]);
        is_plain_run(&exp.points[0].spec, &exp.points[0].strategies[0])
    };
    assert!(with("workload.clients", "100"), "the herd itself is plain");
    for (key, value) in [
        ("client.timeout", "1s"),
        ("client.deadline", "5s"),
        ("client.honor_retry_after", "true"),
        ("network.latency", "{ dist = \"constant\", value = \"1ms\" }"),
        ("server.errors", "[{ status = 503, probability = 0.1 }]"),
        ("server.faults", "[{ kind = \"outage\", start = \"1s\", duration = \"1s\", status = 503 }]"),
        ("server.rate_limit", "{ rate = 100.0, burst = 20.0 }"),
    ] {
        assert!(!with(key, value), "{key} = {value} is a feature: the run is not plain");
    }
    // The OCC model has no plain copy.
    let aws = shipped("aws-2015-jitter.toml", &[]);
    assert!(!is_plain_run(&aws.points[0].spec, &aws.points[0].strategies[0]));
}
