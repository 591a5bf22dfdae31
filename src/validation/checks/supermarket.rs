//! The supermarket model (DESIGN §3.3): single-worker replicas behind Envoy's least request
//! with two choices against Mitzenmacher's fixed point, and behind a random balancer against
//! N independent M/M/1 queues.

use super::parameters::{no_network_delay, open_workload, per_run, queue_server, require, single_attempt};
use crate::experiment::{BalancerSpec, DistSpec, Experiment};
use crate::metrics::series::SERIES;
use crate::stats::Estimate;
use crate::sweep::Results;
use crate::validation::{Evaluation, Row, Unit};
use std::path::Path;

/// Arrivals before this are the warm-up (the queues start empty) and not measured.
const WARM_UP_NS: u64 = 2_000_000_000;

/// The finite-N allowance of least request, in service times, times the number of replicas:
/// the supermarket model's T_d is the limit as N grows, and a finite system waits longer, by
/// about c / N. Measured with this check's method (8 runs of 10 s, seed 26) at lambda = 0.9:
/// simulated - T_2 = 0.093, 0.060, 0.037, 0.016 at N = 50, 100, 200, 400 (N times it 4.7,
/// 6.0, 7.4, 6.2); at lambda = 0.5:
/// 0.011, 0.010, 0.004, 0.004. The largest, 7.4, rounded up.
const FINITE_N_ALLOWANCE: f64 = 8.0;

pub const METHOD: &str = "Simulated: per run, the number of requests in the system (queued and \
    in service over every replica) at the end of every whole bucket from 2 s (the warm-up: \
    the queues start empty) to the end of arrivals, averaged and divided by the arrival rate \
    (Little's law): the mean time in the system of the steady state, in service times. \
    Expected: random, 1 / (1 - lambda) (each replica an M/M/1 queue, whatever N); least \
    request with d choices, Mitzenmacher's T_d(lambda) = (1 / lambda) sum over i >= 1 of \
    lambda^((d^i - 1) / (d - 1)), the limit as N grows. Tolerance: 4 standard errors across \
    runs, plus for least request a finite-N allowance of 8 / N service times: a finite system \
    waits longer than the limit, by 0.093, 0.060, 0.037 and 0.016 service times at lambda = \
    0.9 with N = 50, 100, 200 and 400 (at most 7.4 / N), measured with this method.";

/// Mitzenmacher's supermarket model: the mean time in the system, in service times, of
/// arrivals at `lambda` per server that join the shortest of `d` queues drawn at random, as
/// the number of servers grows: `(1 / lambda) sum_{i >= 1} lambda^((d^i - 1) / (d - 1))`
/// (Theorem 3.6 of "The Power of Two Choices in Randomized Load Balancing"). `d = 1` is
/// M/M/1's `1 / (1 - lambda)`.
pub fn supermarket_time_in_system(lambda: f64, d: u32) -> f64 {
    assert!((0.0..1.0).contains(&lambda) && d >= 1, "lambda in [0, 1), d >= 1");
    if d == 1 {
        return 1.0 / (1.0 - lambda);
    }
    let d = d as f64;
    let mut sum = 0.0;
    // The exponent (d^i - 1) / (d - 1) = 1 + d + ... + d^(i - 1) grows geometrically, so the
    // terms vanish after a few dozen; stop when one no longer changes the sum.
    let mut exponent = 1.0;
    loop {
        let term = lambda.powf(exponent);
        sum += term;
        if term < 1e-17 * sum {
            break;
        }
        exponent = exponent * d + 1.0;
    }
    sum / lambda
}

pub(super) fn evaluate(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let in_service = SERIES.iter().position(|s| *s == "in_service").expect("in_service is a series");
    let queued = SERIES.iter().position(|s| *s == "queued").expect("queued is a series");
    let mut rows = Vec::new();
    for (p, point) in exp.points.iter().enumerate() {
        let spec = &point.spec;
        let q = queue_server(spec)?;
        let DistSpec::Exponential { mean } = q.service_time else {
            return Err("this check needs exponential service times".into());
        };
        require(q.concurrency == 1 && q.queue.is_none(), || {
            "this check needs concurrency = 1 and no queue bound on each replica".into()
        })?;
        require(q.faults.is_empty() && q.errors.is_empty() && q.rate_limit.is_none(), || {
            "this check needs no faults, errors or rate limit".into()
        })?;
        no_network_delay(spec)?;
        let (rate, arrivals_s) = open_workload(spec)?;
        let service_s = mean.as_secs_f64();
        let n = q.replicas;
        let lambda = rate * service_s / n as f64;
        require(lambda > 0.0 && lambda < 1.0, || {
            format!("this check needs a load below 1 (lambda = {lambda})")
        })?;
        let d = match q.balancer {
            BalancerSpec::Random => 1,
            BalancerSpec::LeastRequest => q.choice_count,
            _ => return Err("this check needs balancer = \"random\" or \"least-request\"".into()),
        };
        let width = spec.output.bucket.as_ns();
        let end_ns = (arrivals_s * 1e9) as u64;
        // Whole buckets [i w, (i + 1) w) after the warm-up and before arrivals end: the
        // number in the system at each one's end.
        let buckets: Vec<usize> = (WARM_UP_NS.div_ceil(width)..end_ns / width).map(|i| i as usize).collect();
        require(buckets.len() >= 100, || {
            "this check needs at least 100 whole buckets after the 2 s warm-up".into()
        })?;
        let expected = supermarket_time_in_system(lambda, d);
        let (balancer, allowance) = if d == 1 {
            ("random".to_string(), 0.0)
        } else {
            (format!("least request, {d} choices"), FINITE_N_ALLOWANCE / n as f64)
        };
        for (s, strategy) in point.strategies.iter().enumerate() {
            single_attempt(strategy)?;
            let times = per_run(results, p, s, |m| {
                let series = &m.series;
                let total: f64 = buckets
                    .iter()
                    .filter(|&&b| b < series.len())
                    .map(|&b| {
                        let row = series.row(b);
                        row[in_service].unwrap_or(0.0) + row[queued].unwrap_or(0.0)
                    })
                    .sum();
                // Little: time in the system = number in it / arrival rate, in service times.
                total / buckets.len() as f64 / rate / service_s
            });
            rows.push(Row::value(
                format!("{balancer}, {n} replicas, lambda = {lambda}: mean time in the system"),
                Unit::NUMBER,
                expected,
                0.0,
                Estimate::of(&times),
                allowance,
            ));
        }
    }
    Ok(Evaluation { rows, ..Evaluation::default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mitzenmacher's Table 1 (and the figures): T_2(0.9) = 2.614 service times
    /// against 10 for one choice; T_2(0.5) = 1.2657.
    #[test]
    fn the_fixed_point_gives_mitzenmacher_s_values() {
        let t2 = supermarket_time_in_system(0.9, 2);
        assert!((t2 - 2.614).abs() < 5e-4, "T_2(0.9) = {t2}");
        // By hand: (0.9 + 0.9^3 + 0.9^7 + ... + 0.9^511) / 0.9 (0.9^1023 is below 1e-46).
        let by_hand: f64 =
            [1, 3, 7, 15, 31, 63, 127, 255, 511].iter().map(|&k| 0.9f64.powi(k)).sum::<f64>() / 0.9;
        assert!((t2 - by_hand).abs() < 1e-12);
        assert!((supermarket_time_in_system(0.9, 1) - 10.0).abs() < 1e-12);
        assert!((supermarket_time_in_system(0.5, 2) - 1.2657).abs() < 5e-4);
        // More choices help less and less: T_3 < T_2 < T_1.
        assert!(supermarket_time_in_system(0.9, 3) < t2);
    }
}
