//! Envoy's adaptive concurrency filter (`[server.adaptive_concurrency]`,
//! docs/overload-and-topology.md §1.3): while every latency sample equals minRTT, each update
//! of the gradient controller takes the limit `L` to `(uint32) (L g + sqrt(L g))` with
//! `g = min(2, (1 + buffer))`; the limit's successive values in a run follow that sequence.

use super::parameters::{no_network_delay, only_strategy, per_run, queue_server, require, single_point};
use crate::experiment::{DistSpec, Experiment};
use crate::metrics::series::Gauge;
use crate::stats::Estimate;
use crate::sweep::Results;
use crate::validation::{Evaluation, Row, Unit};
use std::path::Path;

pub const METHOD: &str = "Simulated: per run, the k-th distinct value the `server_limit` column of \
    the time series takes (10 ms buckets, an update every 100 ms) after the first minRTT \
    measurement, against Envoy's calculateNewLimit applied k times to min_concurrency with \
    sampleRTT = minRTT (a constant service time below capacity: no request waits). Tolerance: 4 \
    standard errors across runs; no resolution term (the sequence is exact).";

/// Updates compared.
const UPDATES: usize = 8;

pub(super) fn evaluate(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let (spec, strategies) = single_point(exp)?;
    only_strategy(strategies)?;
    no_network_delay(spec)?;
    let q = queue_server(spec)?;
    require(matches!(q.service_time, DistSpec::Constant { .. }), || {
        "this check needs a constant service time (every sample is then minRTT)".into()
    })?;
    let a = q
        .adaptive_concurrency
        .as_ref()
        .filter(|a| a.enabled)
        .ok_or("this check needs server.adaptive_concurrency")?;
    // calculateNewLimit with sampleRTT = minRTT.
    let gradient = (1.0 + a.buffer / 100.0).clamp(0.5, 2.0);
    let floor = a.min_concurrency_limit.unwrap_or(a.min_concurrency);
    let mut expected = vec![a.min_concurrency as f64];
    for _ in 0..UPDATES {
        let l = expected.last().copied().unwrap_or_default() * gradient;
        expected.push(((l + l.sqrt()) as u32).clamp(floor, a.max_concurrency_limit) as f64);
    }
    let values = |m: &crate::metrics::RunMetrics| {
        let mut seen: Vec<f64> = Vec::new();
        for i in 0..m.series.len() {
            let v = m.series.gauge_row(i)[Gauge::ServerLimit as usize].unwrap_or(f64::NAN);
            if seen.last() != Some(&v) {
                seen.push(v);
            }
        }
        seen
    };
    let mut rows = Vec::new();
    for (k, want) in expected.iter().enumerate().skip(1) {
        let observed = per_run(results, 0, 0, |m| values(m).get(k).copied().unwrap_or(f64::NAN));
        rows.push(Row::value(
            format!(
                "limit after update {k}, from min_concurrency {} (gradient {gradient})",
                a.min_concurrency
            ),
            Unit::NUMBER,
            *want,
            0.0,
            Estimate::of(&observed),
            0.0,
        ));
    }
    Ok(Evaluation { rows, ..Evaluation::default() })
}
