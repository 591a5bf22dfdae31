//! Envoy's admission control (`throttle = { kind = "envoy-admission-control" }`, DESIGN §4.4):
//! against a server that fails a known share of requests, the share of operations it rejects
//! locally is its formula's at the window's steady state.

use super::parameters::{no_network_delay, open_workload, per_run, queue_server, require};
use crate::experiment::{Experiment, ThrottleSpec};
use crate::stats::Estimate;
use crate::sweep::Results;
use crate::validation::{Evaluation, Row, Unit};
use std::path::Path;

pub const METHOD: &str = "Simulated: per run, `failed_throttled / ops` (one attempt each: an \
    operation fails throttled exactly when its one request is rejected locally). Expected: with a \
    share `a` of the requests let through succeeding (1 minus the server's error probability), the \
    window holds n = window x rate x (1 - p) of them and s = a n successes, and \
    p = min(max_rejection_probability, max(0, (n - s / sr_threshold) / (n + 1))^(1 / aggression)) \
    (Envoy's `shouldRejectRequest`). Tolerance: 4 standard errors across runs (they include the \
    window's own fluctuation of its success rate), plus a resolution of 0.001 for the first \
    window's filling and for the curvature of the exponent (the mean of p^(1/2) is not the power \
    of the mean).";

/// The steady-state rejection probability: `p` solved with `n = window x rate x (1 - p)`
/// (a few fixed-point steps; `p` changes by far less than the resolution after them).
fn steady_p(window_s: f64, rate: f64, success: f64, threshold: f64, aggression: f64, cap: f64) -> f64 {
    let mut p = 0.0;
    for _ in 0..50 {
        let n = window_s * rate * (1.0 - p);
        let linear = ((n - success * n / threshold) / (n + 1.0)).max(0.0);
        p = linear.powf(1.0 / aggression).min(cap);
    }
    p
}

pub(super) fn evaluate(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let mut rows = Vec::new();
    for (p, point) in exp.points.iter().enumerate() {
        let spec = &point.spec;
        no_network_delay(spec)?;
        let (rate, _) = open_workload(spec)?;
        let q = queue_server(spec)?;
        require(q.errors.len() <= 1, || "this check needs one background error rate".into())?;
        // Rounded to the file's digits (1 - 0.9 is 0.09999999999999998 in binary).
        let success = ((1.0 - q.errors.first().map_or(0.0, |e| e.probability)) * 1e9).round() / 1e9;
        for (s, strategy) in point.strategies.iter().enumerate() {
            require(strategy.policy.max_attempts == Some(1), || {
                format!("strategy `{}` needs max_attempts = 1", strategy.name)
            })?;
            let Some(ThrottleSpec::EnvoyAdmissionControl {
                sampling_window,
                sr_threshold,
                aggression,
                rps_threshold: 0,
                max_rejection_probability,
                ..
            }) = strategy.policy.throttle
            else {
                return Err(format!(
                    "strategy `{}` needs throttle = {{ kind = \"envoy-admission-control\" }} with rps_threshold = 0",
                    strategy.name
                ));
            };
            let expected = steady_p(
                sampling_window.as_secs_f64(),
                rate,
                success,
                sr_threshold,
                aggression,
                max_rejection_probability,
            );
            let share = per_run(results, p, s, |m| {
                m.failed_by[crate::metrics::FailReason::Throttled as usize] as f64 / m.ops as f64
            });
            rows.push(Row::value(
                format!(
                    "{} {}: rejected share at success rate {success} (threshold {sr_threshold}, aggression {aggression}, cap {max_rejection_probability})",
                    point.values.join(" "),
                    strategy.name
                ),
                Unit::NUMBER,
                expected,
                0.0,
                Estimate::of(&share),
                0.001,
            ));
        }
    }
    Ok(Evaluation { rows, ..Evaluation::default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_state_by_hand() {
        // Everything succeeds: 0. Half succeed: (1 - 0.5 / 0.95) n / (n + 1), n = 3000 (1 - p).
        assert_eq!(steady_p(30.0, 100.0, 1.0, 0.95, 1.0, 0.8), 0.0);
        let p = steady_p(30.0, 100.0, 0.5, 0.95, 1.0, 0.8);
        let n = 3000.0 * (1.0 - p);
        assert!((p - (1.0 - 0.5 / 0.95) * n / (n + 1.0)).abs() < 1e-12, "{p}");
        assert!((p - 0.47338).abs() < 1e-4, "{p}");
        // Over the cap: the cap.
        assert_eq!(steady_p(30.0, 100.0, 0.1, 0.95, 1.0, 0.8), 0.8);
    }
}
