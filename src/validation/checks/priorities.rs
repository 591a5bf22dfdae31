//! Priority classes (`[workload] priorities`, DESIGN §3.3) under sustained overload: the
//! server finishes as many requests as without classes, and they go to the most critical
//! classes first, each class whose load fits succeeding entirely.

use super::parameters::{no_network_delay, open_workload, per_run, queue_server, require};
use crate::experiment::{DistSpec, Experiment, PRIORITY_CLASSES};
use crate::stats::Estimate;
use crate::sweep::Results;
use crate::validation::{Evaluation, Row, Unit};
use std::path::Path;

pub const METHOD: &str = "Simulated: per run, `succeeded` and each class's `success_rate@CLASS` \
    (one attempt each). Expected: the queue stays full, so the c workers at rate mu each finish a \
    Poisson count of mean c mu D while the arrivals last (D) and then the queue's K and the c in \
    service: c mu D + K + c requests in all, the same as without classes. Every class but the \
    least critical is served entirely: the check requires that its requests waiting, about \
    (their rate) x K / (c mu) as the workers take requests in arrival order, stay under a third \
    of the queue, so that the queue is never full of them alone. The least critical class gets \
    what is left (per run: the requests left over that run's operations of the class, a paired \
    comparison). Tolerance: 4 standard errors across runs, plus a \
    resolution of c requests (the first arrivals find idle workers whatever their class).";

pub(super) fn evaluate(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let mut rows = Vec::new();
    for (p, point) in exp.points.iter().enumerate() {
        let spec = &point.spec;
        no_network_delay(spec)?;
        let (rate, duration) = open_workload(spec)?;
        let q = queue_server(spec)?;
        let DistSpec::Exponential { mean } = q.service_time else {
            return Err("this check needs an exponential service time".into());
        };
        let queue = q.queue.ok_or("this check needs a bounded queue")? as f64;
        let workers = q.concurrency as f64;
        let capacity = workers / mean.as_secs_f64();
        require(rate > 1.2 * capacity, || {
            "this check needs arrivals at least 1.2 times the capacity".into()
        })?;
        let shares = spec.workload.priorities().ok_or("this check needs [workload] priorities")?.shares();
        let windows = spec.output.windows.len();
        let least = shares.iter().rposition(|&x| x > 0.0).ok_or("this check needs a class with a share")?;
        let above_rate: f64 = shares[..least].iter().sum::<f64>() * rate;
        require(above_rate * queue / capacity <= queue / 3.0, || {
            "the classes above the least critical must keep (their rate) x K / (c mu) under K / 3".into()
        })?;
        for (s, strategy) in point.strategies.iter().enumerate() {
            require(strategy.policy.max_attempts == Some(1), || {
                format!("strategy `{}` needs max_attempts = 1", strategy.name)
            })?;
            let total = capacity * duration + queue + workers;
            let label = format!("{} /s", rate);
            rows.push(Row::value(
                format!("{label}: requests served (c mu D + K + c)"),
                Unit::NUMBER,
                total,
                0.0,
                Estimate::of(&per_run(results, p, s, |m| m.succeeded as f64)),
                workers,
            ));
            // Going down the classes: what is left for class k in a run is the total less the
            // operations of the classes above it (all served).
            let mut above = vec![0.0; results.cell(p, s).len()];
            for (k, class) in PRIORITY_CLASSES.iter().enumerate() {
                if shares[k] == 0.0 {
                    continue;
                }
                let ops = per_run(results, p, s, |m| m.windows[windows + k].ops as f64);
                let rate_ok =
                    per_run(results, p, s, |m| m.windows[windows + k].success_rate().unwrap_or(0.0));
                let expected: Vec<f64> =
                    above.iter().zip(&ops).map(|(a, n)| ((total - a) / n).clamp(0.0, 1.0)).collect();
                let deviation: Vec<f64> = rate_ok.iter().zip(&expected).map(|(o, e)| o - e).collect();
                let mean_ops = Estimate::of(&ops).mean;
                rows.push(Row::paired(
                    format!("{label}: success_rate@{class} ({:.0} /s of this class)", rate * shares[k]),
                    Unit::NUMBER,
                    Estimate::of(&expected).mean,
                    Estimate::of(&rate_ok),
                    Estimate::of(&deviation),
                    workers / mean_ops,
                ));
                for (a, n) in above.iter_mut().zip(&ops) {
                    *a += n;
                }
            }
        }
    }
    Ok(Evaluation { rows, ..Evaluation::default() })
}
