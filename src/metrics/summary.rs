//! The metric columns, in CSV order, and their aggregation across runs: each metric's mean
//! and sample standard deviation (`_sd`).
//!
//! This is the one place that lists the metrics: runs.csv and summary.csv both read it.

use super::{FailReason, RunMetrics};
pub use crate::stats::Stat;

/// One metric's value in one run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Count(u64),
    Real(f64),
    /// No value in this run (e.g. `recovery_time_s` of a run that never recovered).
    Missing,
}

impl Value {
    pub fn as_f64(self) -> Option<f64> {
        match self {
            Value::Count(c) => Some(c as f64),
            Value::Real(x) => Some(x),
            Value::Missing => None,
        }
    }
}

/// A metric column: its name and how to read it from a run.
pub struct Metric {
    pub name: &'static str,
    pub read: fn(&RunMetrics) -> Value,
}

macro_rules! count {
    ($name:literal, $field:ident) => {
        Metric { name: $name, read: |m| Value::Count(m.$field) }
    };
}
macro_rules! real {
    ($name:literal, $field:ident) => {
        Metric { name: $name, read: |m| Value::Real(m.$field) }
    };
}
macro_rules! failed {
    ($name:literal, $reason:expr) => {
        Metric { name: $name, read: |m| Value::Count(m.failed_by[$reason as usize]) }
    };
}

/// DESIGN §5, in CSV order.
pub const METRICS: &[Metric] = &[
    count!("ops", ops),
    count!("succeeded", succeeded),
    count!("failed", failed),
    Metric { name: "success_rate", read: |m| Value::Real(m.success_rate()) },
    failed!("failed_exhausted", FailReason::Exhausted),
    failed!("failed_non_retryable", FailReason::NonRetryable),
    failed!("failed_deadline", FailReason::Deadline),
    failed!("failed_budget", FailReason::Budget),
    failed!("failed_breaker", FailReason::Breaker),
    failed!("failed_throttled", FailReason::Throttled),
    failed!("failed_unfinished", FailReason::Unfinished),
    count!("calls", calls),
    Metric { name: "amplification", read: |m| Value::Real(m.amplification()) },
    count!("server_calls", server_calls),
    real!("completion_time_s", completion_time_s),
    real!("latency_p50_s", latency_p50_s),
    real!("latency_p99_s", latency_p99_s),
    real!("latency_max_s", latency_max_s),
    real!("latency_min_s", latency_min_s),
    real!("latency_mean_s", latency_mean_s),
    count!("duplicates", duplicates),
    count!("applied", applied),
    count!("failed_but_applied", failed_but_applied),
    count!("idempotency_keys_peak", idempotency_keys_peak),
    real!("wasted_work_s", wasted_work_s),
    real!("wait_mean_s", wait_mean_s),
    real!("queued_fraction", queued_fraction),
    real!("in_server_mean", in_server_mean),
    count!("peak_offered_rps", peak_offered_rps),
    Metric { name: "recovery_time_s", read: |m| m.recovery_time_s.map_or(Value::Missing, Value::Real) },
    Metric { name: "metastable", read: |m| m.metastable.map_or(Value::Missing, |b| Value::Count(b as u64)) },
    count!("events", events),
];

/// Mean and sd over the runs that have a value: for `recovery_time_s` that is the runs that
/// recovered (DESIGN §5); `metastable`'s mean is the fraction of the measurable runs that
/// never did.
pub fn stat(values: impl Iterator<Item = Value>) -> Stat {
    let xs: Vec<f64> = values.filter_map(Value::as_f64).collect();
    if xs.is_empty() {
        return Stat { mean: None, sd: None };
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let sd = if xs.len() < 2 {
        0.0
    } else {
        (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    };
    Stat { mean: Some(mean), sd: Some(sd) }
}

/// One `Stat` per metric, over `runs`.
pub fn summarize(runs: &[&RunMetrics]) -> Vec<Stat> {
    METRICS.iter().map(|m| stat(runs.iter().map(|r| (m.read)(r)))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_sample_sd() {
        let s = stat([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0].into_iter().map(Value::Real));
        assert_eq!(s.mean, Some(5.0));
        // Sample variance: 32 / 7.
        assert!((s.sd.unwrap() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(stat([Value::Count(3)].into_iter()), Stat { mean: Some(3.0), sd: Some(0.0) });
    }

    #[test]
    fn missing_values_are_left_out() {
        let s = stat([Value::Real(1.0), Value::Missing, Value::Real(3.0)].into_iter());
        assert_eq!(s.mean, Some(2.0));
        assert_eq!(stat([Value::Missing].into_iter()), Stat { mean: None, sd: None });
    }

    #[test]
    fn metric_names_are_unique_and_cover_every_reason() {
        let mut names: Vec<_> = METRICS.iter().map(|m| m.name).collect();
        for r in FailReason::ALL {
            assert!(names.contains(&format!("failed_{}", r.name()).as_str()), "{r:?}");
        }
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n);
    }
}
