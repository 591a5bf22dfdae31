//! The server's rate limiters (`[server.rate_limit]`, docs/overload-and-topology.md §1.4):
//! under Poisson overload each admits its rate plus its initial allowance; a fixed window's
//! exact Retry-After brings every refused request back in the boundary's first bucket.

use super::parameters::{no_network_delay, open_workload, per_run, queue_server, require};
use crate::experiment::{Experiment, RateLimitSpec};
use crate::metrics::series::SERIES;
use crate::stats::Estimate;
use crate::sweep::Results;
use crate::validation::{Evaluation, Row, Unit};
use std::path::Path;

pub const METHOD: &str = "Simulated: per run, the operations that succeeded (strategy `once`: one \
    attempt each, so an admitted request is a success) divided by the arrival window, against the \
    limiter's rate plus its initial allowance over that window; and, for the fixed window with one \
    exact retry, the calls in the first 10 ms bucket of every window after the first, against the \
    retries (`calls - ops`: each refusal is retried once) plus the Poisson first attempts expected \
    in those buckets. Tolerance: 4 standard errors across runs, plus a resolution of 2 requests \
    per run for the rates (a continuous bucket loses the refill before the first arrival, which \
    finds it full, and the fraction of a token left after the last).";

/// The requests a limiter admits over the first `window_s` seconds when requests arrive
/// faster than it lets them through: its initial allowance (a token bucket's burst, GCRA's
/// `max_burst + 1`, nginx's `burst + 1` with `nodelay`) plus its rate over the window; the
/// windows' first window is part of their rate; Envoy's bucket gets its fills strictly inside
/// the window.
fn expected_admitted(r: &RateLimitSpec, window_s: f64) -> f64 {
    let steady = r.rate_per_s() * window_s;
    match *r {
        RateLimitSpec::TokenBucket { burst, fill_interval: Some(fill), tokens_per_fill, .. } => {
            let fills_inside = (window_s / fill.span().as_secs_f64()).ceil() - 1.0;
            burst + f64::from(tokens_per_fill.unwrap_or(1)) * fills_inside
        }
        RateLimitSpec::TokenBucket { burst, .. } => burst + steady,
        RateLimitSpec::LeakyBucket { burst, nodelay: true, .. } => f64::from(burst) + 1.0 + steady,
        RateLimitSpec::Gcra { max_burst, .. } => f64::from(max_burst) + 1.0 + steady,
        RateLimitSpec::LeakyBucket { .. }
        | RateLimitSpec::FixedWindow { .. }
        | RateLimitSpec::SlidingWindow { .. }
        | RateLimitSpec::SlidingLog { .. } => steady,
    }
}

pub(super) fn evaluate(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let mut rows = Vec::new();
    let server_calls = SERIES.iter().position(|s| *s == "server_calls").expect("a series");
    for (p, point) in exp.points.iter().enumerate() {
        let spec = &point.spec;
        no_network_delay(spec)?;
        let q = queue_server(spec)?;
        let limiter = q.rate_limit.as_ref().ok_or("this check needs server.rate_limit")?;
        let (arrivals_per_s, window_s) = open_workload(spec)?;
        require(arrivals_per_s > 2.0 * limiter.rate_per_s(), || {
            "this check needs arrivals at twice the limit or more".into()
        })?;
        require(point.strategies.len() == 2, || {
            "this check needs the strategies `once` and `one exact retry`".into()
        })?;
        let admitted = per_run(results, p, 0, |m| m.succeeded as f64 / window_s);
        rows.push(Row::value(
            format!(
                "{}: admitted per second of arrivals, (allowance + rate x window) / window",
                point.values.join(" ")
            ),
            Unit::PER_S,
            expected_admitted(limiter, window_s) / window_s,
            0.0,
            Estimate::of(&admitted),
            2.0 / window_s,
        ));
        if let RateLimitSpec::FixedWindow { window, .. } = limiter {
            let window_ns = window.as_ns();
            let bucket_ns = spec.output.bucket.as_ns();
            let end_ns = (window_s * 1e9) as u64;
            // The first bucket of every window after the first, up to the one the refusals of
            // the last window of arrivals return to; first attempts fall in those before the
            // arrivals end.
            let starts: Vec<u64> = (1..).map(|k| k * window_ns).take_while(|&b| b <= end_ns).collect();
            let boundaries: Vec<usize> = starts.iter().map(|&b| (b / bucket_ns) as usize).collect();
            let with_arrivals = starts.iter().filter(|&&b| b < end_ns).count();
            let first_attempts = arrivals_per_s * bucket_ns as f64 / 1e9 * with_arrivals as f64;
            let herd = per_run(results, p, 1, |m| {
                let at_boundaries: f64 =
                    boundaries.iter().map(|&i| m.series.row(i)[server_calls].unwrap_or(0.0)).sum();
                at_boundaries - first_attempts - (m.calls - m.ops) as f64
            });
            rows.push(Row::value(
                format!(
                    "{}: calls in the boundaries' first {} ms beyond the first attempts expected there, minus the retries",
                    point.values.join(" "),
                    bucket_ns / 1_000_000
                ),
                Unit::NUMBER,
                0.0,
                0.0,
                Estimate::of(&herd),
                0.0,
            ));
        }
    }
    Ok(Evaluation { rows, ..Evaluation::default() })
}
