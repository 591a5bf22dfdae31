//! Hedged requests (DESIGN §4.10): with a fixed delay `d`, room for every copy and exponential
//! service of mean `m`, a call's latency is `min(X1, d + X2)`: `P(L > t) = e^(-t/m)` before
//! `d` and `e^(-(2t - d)/m)` after, so `E[L] = m (1 - e^(-d/m) / 2)`, and a hedge goes out for
//! the calls slower than `d`: `e^(-d/m)` hedges per call.

use super::parameters::{estimate, no_network_delay, open_workload, queue_server, require};
use crate::experiment::{DistSpec, Experiment};
use crate::sweep::Results;
use crate::validation::{Evaluation, Row, Unit};
use std::path::Path;

pub const METHOD: &str = "Simulated: per run, `hedges / ops` and `latency_mean_s` of the one \
    strategy (2 copies after a fixed `delay`), against `e^(-d/m)` and `m (1 - e^(-d/m) / 2)` for \
    exponential service of mean `m` with a worker for every copy (no queueing), the latency of \
    the minimum of the first copy and the delayed second. Tolerance: 4 standard errors across \
    runs; no resolution term.";

pub(super) fn evaluate(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let mut rows = Vec::new();
    for (p, point) in exp.points.iter().enumerate() {
        let spec = &point.spec;
        no_network_delay(spec)?;
        let q = queue_server(spec)?;
        let DistSpec::Exponential { mean } = q.service_time else {
            return Err("this check needs an exponential service time".into());
        };
        let (rate, _) = open_workload(spec)?;
        let m = mean.as_secs_f64();
        require(f64::from(q.concurrency) > 20.0 * rate * m, || {
            "this check needs a worker for every copy: concurrency far above rate x mean".into()
        })?;
        let [strategy] = point.strategies.as_slice() else {
            return Err("this check needs one strategy".into());
        };
        let h = strategy.policy.hedge.as_ref().ok_or("this check needs a hedge")?;
        require(h.max_attempts == Some(2) && h.budget.is_none(), || {
            "this check needs hedge.max_attempts = 2 and no budget".into()
        })?;
        let Ok(Some(crate::experiment::HedgeDelaySpec::After(d))) = h.parsed_delay() else {
            return Err("this check needs a fixed hedge.delay".into());
        };
        let tail = (-d.as_secs_f64() / m).exp();
        let label = point.values.join(" ");
        rows.push(Row::value(
            format!("{label}: hedges per call, e^(-d/m)"),
            Unit::NUMBER,
            tail,
            0.0,
            estimate(results, p, 0, |r| r.hedges as f64 / r.ops as f64),
            0.0,
        ));
        rows.push(Row::value(
            format!("{label}: mean latency, m (1 - e^(-d/m) / 2)"),
            Unit::MS,
            m * (1.0 - tail / 2.0),
            0.0,
            estimate(results, p, 0, |r| r.latency_mean_s),
            0.0,
        ));
    }
    Ok(Evaluation { rows, ..Evaluation::default() })
}
