//! The queue disciplines on a scripted queue (`[server] discipline`,
//! docs/overload-and-topology.md §1.5): RFC 8289 CoDel's drop schedule, folly's CoDel rule and
//! LIFO's newest-first order, from one worker with constant service times under twice its
//! capacity of fixed-interval arrivals, where every number is exact.

use super::parameters::{no_network_delay, open_workload, per_run, queue_server, require};
use crate::experiment::{DisciplineSpec, Experiment, ExperimentSpec};
use crate::metrics::series::SERIES;
use crate::sweep::Results;
use crate::validation::{Evaluation, Row, Unit};
use std::path::Path;

pub const METHOD: &str = "Simulated: for `codel`, the drops are the failures (one attempt each: a \
    failed operation is a dropped request) in each run's time series of 0.1 ms buckets; drop k's \
    time after the first. Expected: the control law's schedule, t_k = t_(k-1) + interval / \
    sqrt(k), as RFC 8289 prints it to 0.1 ms. Resolution: 0.1 ms (a drop happens at the first \
    dequeue at or after its time; dequeues come every 0.1 ms) plus the 0.05 ms of the reference's \
    rounding. For `codel-rpc` and `lifo`, the p99 latency of the successful operations started in \
    the window `late` (300-550 ms), over every run, against the range the rule allows (queueing \
    delay at most 2 x target, resp. at most one arrival gap, plus the service time), give or take \
    the latency histogram's 0.1 %; and the window's success rate against capacity / arrivals, \
    with a resolution of the operations in flight across the window's edges.";

/// RFC 8289's control law after entering the dropping state, in ms, as issue 26 and
/// docs/overload-and-topology.md §2.4 print it (rounded to 0.1 ms).
const CONTROL_LAW_MS: [f64; 8] = [0.0, 100.0, 170.7, 228.4, 278.4, 323.2, 364.0, 401.8];

/// The discipline of a point, on one worker with CoDel's default constants (the reference
/// schedule is theirs).
fn discipline(spec: &ExperimentSpec) -> Result<DisciplineSpec, String> {
    let q = queue_server(spec)?;
    require(q.concurrency == 1, || "this check needs one worker".into())?;
    require(q.codel.target.as_ns() == 5_000_000 && q.codel.interval.as_ns() == 100_000_000, || {
        "this check needs CoDel's defaults, codel = { target = \"5ms\", interval = \"100ms\" }".into()
    })?;
    Ok(q.discipline)
}

pub(super) fn evaluate(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let mut rows = Vec::new();
    let failures = SERIES.iter().position(|s| *s == "failures").expect("a series");
    let late = exp.windows.iter().position(|w| w == "late").ok_or("this check needs the window `late`")?;
    for (p, point) in exp.points.iter().enumerate() {
        let spec = &point.spec;
        no_network_delay(spec)?;
        let (arrivals_per_s, _) = open_workload(spec)?;
        let q = queue_server(spec)?;
        let service_s = crate::experiment::capacity::mean_s(&q.service_time);
        let bucket_s = spec.output.bucket.as_secs_f64();
        let name = point.values.join(" ");
        let target_s = q.codel.target.as_secs_f64();
        match discipline(spec)? {
            DisciplineSpec::Codel => {
                for (k, reference_ms) in CONTROL_LAW_MS.iter().enumerate().skip(1) {
                    let after_first = per_run(results, p, 0, |m| {
                        let drops: Vec<f64> = (0..m.series.len())
                            .flat_map(|i| {
                                let n = m.series.row(i)[failures].unwrap_or(0.0) as usize;
                                std::iter::repeat_n(i as f64 * bucket_s, n)
                            })
                            .collect();
                        drops.get(k).map_or(f64::NAN, |t| t - drops[0])
                    });
                    rows.push(Row::value(
                        format!("{name}: drop {k} after entering the dropping state, t_k = t_(k-1) + 100 ms / sqrt(k)"),
                        Unit::MS,
                        reference_ms / 1e3,
                        0.0,
                        crate::stats::Estimate::of(&after_first),
                        bucket_s + 0.05e-3,
                    ));
                }
            }
            rule @ (DisciplineSpec::CodelRpc | DisciplineSpec::Lifo) => {
                let (high, why) = if rule == DisciplineSpec::Lifo {
                    (service_s + 1.0 / arrivals_per_s, "at most one arrival gap")
                } else {
                    (service_s + 2.0 * target_s, "at most 2 x target")
                };
                let p99 = per_run(results, p, 0, |m| m.windows[late].latency_ok_p99_s.unwrap_or(f64::NAN));
                let (min, max) =
                    p99.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
                rows.push(Row::within(
                    format!("{name}: p99 latency of the served requests in `late`: queueing delay {why}, plus the service"),
                    Unit::MS,
                    service_s,
                    high,
                    min,
                    max,
                    high * 1e-3,
                ));
                let capacity = 1.0 / service_s;
                let ok = per_run(results, p, 0, |m| m.windows[late].success_rate().unwrap_or(f64::NAN));
                let [start, end] = spec.output.windows["late"];
                let in_flight =
                    high * capacity / ((end.as_secs_f64() - start.as_secs_f64()) * arrivals_per_s);
                rows.push(Row::value(
                    format!("{name}: success rate of the operations started in `late`, capacity / arrivals"),
                    Unit::NUMBER,
                    capacity / arrivals_per_s,
                    0.0,
                    crate::stats::Estimate::of(&ok),
                    in_flight,
                ));
            }
            other => return Err(format!("this check has no rule for server.discipline = {other:?}")),
        }
    }
    Ok(Evaluation { rows, ..Evaluation::default() })
}
