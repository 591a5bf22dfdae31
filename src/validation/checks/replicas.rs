//! Replicas behind a random balancer, one of two failing (DESIGN §3.3): the share of
//! operations that succeed after k retries, with and without Envoy's `previous_hosts`.

use super::parameters::{estimate, queue_server, require};
use crate::experiment::{BalancerSpec, Experiment, FaultSpec};
use crate::sweep::Results;
use crate::validation::{Evaluation, Row, Unit};
use std::path::Path;

pub const METHOD: &str = "Simulated: per run, `success_rate` over about 20,000 operations \
    retried at once, replica 1 of 2 answering 503 throughout. Expected: without host exclusion \
    each attempt lands on the failing replica with probability 1/2, independently, so n \
    attempts succeed with 1 - 0.5^n (envoy#27317); with `retry_other_replica` and one host \
    re-selection a retry lands on the tried replica when both its picks do (1/4), so one retry \
    gives 1 - 0.5 x 0.25. Tolerance: 4 standard errors across runs.";

pub(super) fn evaluate(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let mut rows = Vec::new();
    for (p, point) in exp.points.iter().enumerate() {
        let q = queue_server(&point.spec)?;
        require(q.replicas == 2 && q.balancer == BalancerSpec::Random, || {
            "this check needs replicas = 2 and balancer = \"random\"".into()
        })?;
        require(
            q.faults.len() == 1
                && matches!(q.faults[0], FaultSpec::Outage { replica: Some(1), .. })
                && q.errors.is_empty(),
            || "this check needs replica 1 in an outage for the whole run, and no other failure".into(),
        )?;
        for (s, strategy) in point.strategies.iter().enumerate() {
            let n = strategy.policy.max_attempts.ok_or("this check needs max_attempts")?;
            let expected = if strategy.policy.retry_other_replica {
                // Only one retry has the closed form here: 1 - 1/2 x (1/2)^(1 + reselects).
                if n != 2 || strategy.policy.host_selection_retry_max_attempts != 1 {
                    continue;
                }
                1.0 - 0.5 * 0.25
            } else {
                1.0 - 0.5f64.powi(n as i32)
            };
            let observed = estimate(results, p, s, |m| m.succeeded as f64 / m.ops as f64);
            rows.push(Row::value(
                format!("{}: success after {} retries", strategy.name, n - 1),
                Unit::NUMBER,
                expected,
                0.0,
                observed,
                0.0,
            ));
        }
    }
    Ok(Evaluation { rows, ..Evaluation::default() })
}
