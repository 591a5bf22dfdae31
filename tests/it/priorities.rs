//! Priority classes (`[workload] priorities`, DESIGN §3.3) on whole runs: a server at twice its
//! capacity with a bounded queue turns away the least critical requests first, so the
//! critical operations keep a success rate near 1 while the sheddable ones absorb the
//! shedding; the server serves exactly as many requests as without classes (classes change
//! who is served, not how many); per-class columns follow the windows'.

use crate::support::run_one as run;
use retrysim::experiment::{self, Overrides};
use retrysim::metrics::{RunMetrics, WindowMetrics};

/// One worker at 10 ms a request (100/s), a queue of 20, an arrival every 5 ms (200/s) for
/// 20 s, one attempt each: 3999 operations, 30 % critical and 70 % sheddable.
const OVERLOAD: &str = r#"
name = "priorities"
seed = 5
runs = 1
horizon = "30s"
[workload]
kind = "open"
arrivals = "fixed"
rate = 200.0
duration = "20s"
priorities = { critical = 0.3, sheddable = 0.7 }
[server]
concurrency = 1
queue = 20
service_time = { dist = "constant", value = "10ms" }
[client]
max_attempts = 1
[[strategies]]
name = "once"
backoff = { kind = "none" }
"#;

/// The four classes' measures, most critical first.
fn classes(m: &RunMetrics) -> &[WindowMetrics] {
    assert_eq!(m.windows.len(), 4, "one entry per class, after the (no) windows");
    &m.windows
}

#[test]
fn the_critical_keep_their_success_and_the_sheddable_absorb_the_shedding() {
    let m = run(OVERLOAD, &[]);
    let c = classes(&m);
    assert_eq!(m.ops, 3999);
    assert_eq!((c[0].ops, c[2].ops), (0, 0), "classes without a share get none");
    assert_eq!(c[1].ops + c[3].ops, m.ops);
    assert_eq!(c[1].succeeded + c[3].succeeded, m.succeeded);
    // The server works all the time either way: from the first arrival (5 ms) to the last
    // service, every 10 ms one request; the queue's 20 are served after the arrivals stop.
    // Classes change who is served, not how many.
    let plain = run(OVERLOAD, &["workload.priorities={ critical = 0.0, sheddable = 1.0 }"]);
    assert_eq!(m.succeeded, plain.succeeded);
    assert_eq!(
        m.succeeded, 2020,
        "1999 services in 19.995 s of arrivals after the first, the queue's 20, and the first"
    );
    // The critical ones arrive at 60/s, under the 100/s the worker serves: one is turned away
    // only when 20 critical ones wait at once. Here none is.
    assert_eq!(c[1].succeeded, c[1].ops, "every critical operation succeeds");
    // The sheddable ones get what is left: (2020 - critical) of theirs.
    assert_eq!(c[3].succeeded, 2020 - c[1].ops);
    let sheddable = c[3].success_rate().unwrap();
    assert!(sheddable < 0.3, "{sheddable}");
    // Without classes (everyone sheddable), every operation has the same chance: 2020 / 3999.
    let everyone = classes(&plain)[3].success_rate().unwrap();
    assert!((everyone - 2020.0 / 3999.0).abs() < 1e-12, "{everyone}");
    // The classes' shares: 30 % critical, within 5 binomial standard errors.
    let se = (3999.0f64 * 0.3 * 0.7).sqrt();
    assert!((c[1].ops as f64 - 0.3 * 3999.0).abs() <= 5.0 * se, "{}", c[1].ops);
    // Every request reached the server once.
    assert_eq!((c[1].server_amplification(), c[3].server_amplification()), (Some(1.0), Some(1.0)));
}

/// Four classes, each 25 % (50/s each): the turned-away requests fall on the least critical
/// first, so the success rates fall strictly from class to class. critical_plus alone is half
/// the worker's capacity and loses nothing; critical_plus and critical together arrive at
/// exactly its capacity, so critical loses some to full queues of the two; sheddable gets
/// almost nothing.
#[test]
fn four_classes_are_shed_from_the_least_critical_up() {
    let shares = "workload.priorities={ critical_plus = 0.25, critical = 0.25, sheddable_plus = 0.25, sheddable = 0.25 }";
    let m = run(OVERLOAD, &[shares]);
    let rates: Vec<f64> = classes(&m).iter().map(|c| c.success_rate().unwrap()).collect();
    assert!(rates.windows(2).all(|w| w[0] > w[1]), "{rates:?}");
    assert_eq!(rates[0], 1.0, "{rates:?}");
    assert!(rates[1] > 0.8 && rates[3] < 0.05, "{rates:?}");
}

/// A column per class and measure, after the windows', only when classes are used.
#[test]
fn class_columns_follow_the_windows_only_with_classes() {
    let load = |text: &str| experiment::load_str(text, "p.toml", &Overrides::default()).unwrap();
    let with = load(&format!("{OVERLOAD}[output]\nwindows = {{ late = [\"10s\", \"20s\"] }}\n"));
    assert_eq!(with.windows, ["late", "critical_plus", "critical", "sheddable_plus", "sheddable"]);
    let without = load(&OVERLOAD.replace("priorities = { critical = 0.3, sheddable = 0.7 }\n", ""));
    assert!(without.windows.is_empty());
    let columns = retrysim::metrics::catalogue::columns(&with.windows, &with.graph_columns);
    assert!(columns.contains(&"success_rate@critical".to_string()));
    assert!(columns.contains(&"ops@sheddable".to_string()));
}
