//! The client bulkhead (`bulkhead = { max_in_flight, max_wait }`, DESIGN §4.8): exactly
//! `max_in_flight` operations in flight, the rest failing at once or waiting, on a scripted
//! schedule whose counts are exact.

use super::parameters::{no_network_delay, per_run, queue_server, require};
use crate::experiment::Experiment;
use crate::metrics::FailReason;
use crate::metrics::series::SERIES;
use crate::stats::Estimate;
use crate::sweep::Results;
use crate::validation::{Evaluation, Row, Unit};
use std::path::Path;

pub const METHOD: &str = "Simulated: per run, `succeeded`, `failed_bulkhead`, and the largest \
    `in_service` (requests at the server at a bucket's end) over the time series, one attempt per \
    operation at a server with more workers than permits, so that the requests in service are \
    the operations in flight. Expected: from the script (an operation every 10 ms, each 95 ms, 5 \
    permits): with no wait, 5 of every 10 operations find a permit; with a long wait every \
    operation runs, and never more than 5 at once. Exact: no tolerance.";

pub(super) fn evaluate(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    require(exp.points.len() == 1, || "this check has no sweep".into())?;
    let point = &exp.points[0];
    no_network_delay(&point.spec)?;
    require(queue_server(&point.spec)?.concurrency >= 100, || {
        "this check needs a server with room for all".into()
    })?;
    let in_service = SERIES.iter().position(|s| *s == "in_service").expect("a series");
    let mut rows = Vec::new();
    for (s, strategy) in point.strategies.iter().enumerate() {
        let b = strategy.policy.bulkhead.as_ref().ok_or("this check needs a bulkhead")?;
        require(b.max_in_flight == 5, || "this check's script needs max_in_flight = 5".into())?;
        let waits = b.max_wait.as_ns() > 0;
        let peak = per_run(results, 0, s, |m| {
            (0..m.series.len()).map(|i| m.series.row(i)[in_service].unwrap_or(0.0)).fold(0.0, f64::max)
        });
        let (min, max) =
            peak.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
        rows.push(Row::within(
            format!("{}: most operations in flight at once, max_in_flight", strategy.name),
            Unit::NUMBER,
            5.0,
            5.0,
            min,
            max,
            0.0,
        ));
        let (ok, refused) = if waits { (99.0, 0.0) } else { (50.0, 49.0) };
        let succeeded = per_run(results, 0, s, |m| m.succeeded as f64);
        rows.push(Row::value(
            format!("{}: operations that succeeded (of 99)", strategy.name),
            Unit::NUMBER,
            ok,
            0.0,
            Estimate::of(&succeeded),
            0.0,
        ));
        let failed = per_run(results, 0, s, |m| m.failed_by[FailReason::Bulkhead as usize] as f64);
        rows.push(Row::value(
            format!("{}: failed_bulkhead", strategy.name),
            Unit::NUMBER,
            refused,
            0.0,
            Estimate::of(&failed),
            0.0,
        ));
    }
    Ok(Evaluation { rows, ..Evaluation::default() })
}
