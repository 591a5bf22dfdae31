//! The call graph (DESIGN §3.7): attempts multiply down a chain of services, and a fan-out
//! is as slow as its slowest call.

use super::parameters::{estimate, require};
use crate::experiment::{DistSpec, Experiment};
use crate::sweep::Results;
use crate::validation::{Evaluation, Row, Unit};
use std::path::Path;

pub const CHAIN_METHOD: &str = "Simulated: per run, `service_calls@NAME / ops` for every \
    service of a chain whose bottom answers every request 503 at once, against the product of \
    the attempts of the client and of the edges above it. Every operation fails the same way: \
    the comparison is exact (tolerance 0).";

/// Each service's calls per operation against the product of the attempts above it.
pub(super) fn chain(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let mut rows = Vec::new();
    for (p, point) in exp.points.iter().enumerate() {
        let spec = &point.spec;
        require(spec.services.len() >= 2, || "this check needs a chain of [[services]]".into())?;
        let bottom = spec.services.last().expect("checked");
        require(bottom.server.errors.iter().any(|e| e.probability == 1.0 && !e.after_effect), || {
            "this check needs a bottom service that answers every request with an error".into()
        })?;
        for (i, s) in spec.services.iter().enumerate() {
            let next = spec.services.get(i + 1).map(|n| n.name.as_str());
            let calls_next = s.calls.iter().map(|c| c.service.as_str()).eq(next);
            require(calls_next && s.calls.iter().all(|c| c.count == 1), || {
                "this check needs a chain: each service calls the next once, the last none".into()
            })?;
        }
        for (k, strategy) in point.strategies.iter().enumerate() {
            let client = strategy.policy.max_attempts.ok_or("this check needs max_attempts")?;
            let mut factors = vec![client];
            for (i, s) in spec.services.iter().enumerate() {
                let product: u64 = factors.iter().map(|&a| a as u64).product();
                let shown: Vec<String> = factors.iter().map(u32::to_string).collect();
                rows.push(Row::value(
                    format!(
                        "{} {}: calls into {} per operation, {}",
                        point.values.join(" "),
                        strategy.name,
                        s.name,
                        shown.join(" x ")
                    ),
                    Unit::NUMBER,
                    product as f64,
                    0.0,
                    estimate(results, p, k, |m| m.graph.services[i].calls as f64 / m.ops as f64),
                    0.0,
                ));
                if let Some(c) = s.calls.first() {
                    let policy = strategy.policy.hop_policy.as_ref().unwrap_or(&c.policy);
                    factors.push(policy.max_attempts);
                }
            }
        }
    }
    Ok(Evaluation { rows, ..Evaluation::default() })
}

pub const FANOUT_METHOD: &str = "Simulated: per run, the share of operations that succeed \
    when a front calls `count` backends in parallel, each slow with probability `q` (a \
    `discrete` service time whose slow value exceeds the client's timeout and whose fast one \
    is far below it), with no retries and a worker for every call: `(1 - q)^count`. Tolerance: \
    4 standard errors across runs; no resolution term.";

/// The share of fast operations against `(1 - q)^count`.
pub(super) fn fanout(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let mut rows = Vec::new();
    for (p, point) in exp.points.iter().enumerate() {
        let spec = &point.spec;
        let [front, backend] = spec.services.as_slice() else {
            return Err("this check needs two services, a front and its backend".into());
        };
        let [edge] = front.calls.as_slice() else {
            return Err("this check needs the front to call the backend once".into());
        };
        let DistSpec::Discrete { points } = &backend.server.service_time else {
            return Err("this check needs a discrete backend service time (fast or slow)".into());
        };
        let [strategy] = point.strategies.as_slice() else {
            return Err("this check needs one strategy".into());
        };
        let timeout = strategy.policy.timeout.ok_or("this check needs a client timeout")?;
        require(strategy.policy.max_attempts == Some(1) && edge.policy.max_attempts == 1, || {
            "this check needs no retries".into()
        })?;
        let slow: f64 = points.iter().filter(|x| x.value > timeout).map(|x| x.weight).sum();
        require(points.iter().all(|x| x.value > timeout || x.value.as_ns() * 10 < timeout.as_ns()), || {
            "this check needs each backend time far below the client's timeout or above it".into()
        })?;
        rows.push(Row::value(
            format!("{}: fast share, (1 - {slow})^{}", point.values.join(" "), edge.count),
            Unit::NUMBER,
            (1.0 - slow).powi(edge.count as i32),
            0.0,
            estimate(results, p, 0, |m| m.succeeded as f64 / m.ops as f64),
            0.0,
        ));
    }
    Ok(Evaluation { rows, ..Evaluation::default() })
}
