//! The metric catalogue: every metric column declared once, in CSV order, with how to read it
//! from a run and what a person needs to read it back: a label, its unit, which direction is
//! better and a one-line meaning. runs.csv and summary.csv take their columns from it; the
//! charts, the comparison, `tune`, `--rank` and docs/outputs.md take their words from it.
//! Names and meanings are DESIGN §5's contract.

use super::{FailReason, RunMetrics};

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

/// Which way a metric improves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// Smaller is better (calls, latency, duplicates...).
    Lower,
    /// Larger is better (success rate).
    Higher,
}

/// A metric column: its name, how to read it from a run, and how to present it.
pub struct Metric {
    /// Column name in runs.csv and summary.csv (summary.csv adds `<name>_sd`).
    pub name: &'static str,
    /// The value of one run.
    pub read: fn(&RunMetrics) -> Value,
    /// Words for an axis or a sentence, without the unit.
    pub label: &'static str,
    /// Unit for axis titles (`s`, `calls/s`...), `count` or a fraction's description.
    pub unit: &'static str,
    /// Which way is better, if either.
    pub better: Option<Better>,
    /// What the column counts or measures, for docs/outputs.md (Markdown).
    pub meaning: &'static str,
}

impl Metric {
    /// `label (unit)` for an axis title.
    pub fn axis_title(&self) -> String {
        if self.unit.is_empty() { self.label.to_string() } else { format!("{} ({})", self.label, self.unit) }
    }
}

/// DESIGN §5, in CSV order.
pub const METRICS: &[Metric] = &[
    Metric {
        name: "ops",
        read: |m| Value::Count(m.ops),
        label: "operations",
        unit: "count",
        better: None,
        meaning: "logical operations started",
    },
    Metric {
        name: "succeeded",
        read: |m| Value::Count(m.succeeded),
        label: "operations succeeded",
        unit: "count",
        better: Some(Better::Higher),
        meaning: "operations that ended in success",
    },
    Metric {
        name: "failed",
        read: |m| Value::Count(m.failed),
        label: "operations failed",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "operations that ended in failure, for any of the reasons below (`succeeded + failed = ops`)",
    },
    Metric {
        name: "success_rate",
        read: |m| Value::Real(m.success_rate()),
        label: "success rate",
        unit: "fraction of operations",
        better: Some(Better::Higher),
        meaning: "`succeeded / ops`",
    },
    Metric {
        name: "failed_exhausted",
        read: |m| Value::Count(m.failed_by[FailReason::Exhausted as usize]),
        label: "operations failed, attempts used up",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "failed with `max_attempts` used up",
    },
    Metric {
        name: "failed_non_retryable",
        read: |m| Value::Count(m.failed_by[FailReason::NonRetryable as usize]),
        label: "operations failed on a non-retryable answer",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "failed because the last outcome is not in `retry_on`",
    },
    Metric {
        name: "failed_deadline",
        read: |m| Value::Count(m.failed_by[FailReason::Deadline as usize]),
        label: "operations failed at their deadline",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "failed because the deadline passed, or would pass before the next attempt",
    },
    Metric {
        name: "failed_budget",
        read: |m| Value::Count(m.failed_by[FailReason::Budget as usize]),
        label: "operations failed by the retry budget",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "failed because the retry budget refused a retry",
    },
    Metric {
        name: "failed_breaker",
        read: |m| Value::Count(m.failed_by[FailReason::Breaker as usize]),
        label: "operations failed by the open breaker",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "failed because an open circuit breaker failed the call locally, or a retry-ratio breaker refused its retry",
    },
    Metric {
        name: "failed_throttled",
        read: |m| Value::Count(m.failed_by[FailReason::Throttled as usize]),
        label: "operations failed by client throttling",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "failed because client-side throttling rejected the call locally",
    },
    Metric {
        name: "failed_unfinished",
        read: |m| Value::Count(m.failed_by[FailReason::Unfinished as usize]),
        label: "operations unfinished at the horizon",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "still pending at the horizon",
    },
    Metric {
        name: "calls",
        read: |m| Value::Count(m.calls),
        label: "calls",
        unit: "attempts sent",
        better: Some(Better::Lower),
        meaning: "attempts sent by clients, first ones included; for `occ`, writes",
    },
    Metric {
        name: "amplification",
        read: |m| Value::Real(m.amplification()),
        label: "amplification",
        unit: "calls per operation",
        better: Some(Better::Lower),
        meaning: "`calls / ops`",
    },
    Metric {
        name: "server_calls",
        read: |m| Value::Count(m.server_calls),
        label: "server calls",
        unit: "requests",
        better: Some(Better::Lower),
        meaning: "requests that reached the server (lost requests do not); with gateway layers, what the last layer sends",
    },
    Metric {
        name: "completion_time_s",
        read: |m| Value::Real(m.completion_time_s),
        label: "completion time",
        unit: "s",
        better: Some(Better::Lower),
        meaning: "time at which the last operation ended (the horizon if any was unfinished)",
    },
    Metric {
        name: "latency_p50_s",
        read: |m| Value::Real(m.latency_p50_s),
        label: "p50 latency",
        unit: "s",
        better: Some(Better::Lower),
        meaning: "median operation latency, first attempt to end, over the operations that ended (success or failure), from an HDR histogram with 3 significant digits (within 0.1 %, never above the maximum)",
    },
    Metric {
        name: "latency_p99_s",
        read: |m| Value::Real(m.latency_p99_s),
        label: "p99 latency",
        unit: "s",
        better: Some(Better::Lower),
        meaning: "99th percentile of the same latencies, from the same histogram",
    },
    Metric {
        name: "latency_max_s",
        read: |m| Value::Real(m.latency_max_s),
        label: "max latency",
        unit: "s",
        better: Some(Better::Lower),
        meaning: "the exact maximum of the same latencies",
    },
    Metric {
        name: "latency_min_s",
        read: |m| Value::Real(m.latency_min_s),
        label: "min latency",
        unit: "s",
        better: Some(Better::Lower),
        meaning: "the exact minimum of the same latencies (0 when none ended)",
    },
    Metric {
        name: "latency_mean_s",
        read: |m| Value::Real(m.latency_mean_s),
        label: "mean latency",
        unit: "s",
        better: Some(Better::Lower),
        meaning: "the exact mean of the same latencies (not from the histogram)",
    },
    Metric {
        name: "duplicates",
        read: |m| Value::Count(m.duplicates),
        label: "duplicate side effects",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "side-effect executions beyond the first per operation (a served request executes the side effect, even if its answer is lost or comes too late); an answer from the dedup store executes nothing",
    },
    Metric {
        name: "applied",
        read: |m| Value::Count(m.applied),
        label: "operations applied",
        unit: "count",
        better: None,
        meaning: "operations whose side effect happened at least once by the horizon: side-effect executions are `applied + duplicates`",
    },
    Metric {
        name: "failed_but_applied",
        read: |m| Value::Count(m.failed_but_applied),
        label: "operations failed but applied",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "of those, the operations the client counts as failed (any reason, unfinished included): ambiguous outcomes to reconcile; `applied = succeeded + failed_but_applied`",
    },
    Metric {
        name: "idempotency_keys_peak",
        read: |m| Value::Count(m.idempotency_keys_peak),
        label: "peak idempotency keys held",
        unit: "keys",
        better: None,
        meaning: "the most keys the server's dedup store held at once (in progress, or done and not yet expired); 0 without `[server.idempotency]` or without keys",
    },
    Metric {
        name: "wasted_work_s",
        read: |m| Value::Real(m.wasted_work_s),
        label: "wasted server work",
        unit: "worker-seconds",
        better: Some(Better::Lower),
        meaning: "server busy time spent, after the client stopped waiting, on requests it abandoned",
    },
    Metric {
        name: "wait_mean_s",
        read: |m| Value::Real(m.wait_mean_s),
        label: "mean wait in queue",
        unit: "s",
        better: Some(Better::Lower),
        meaning: "mean time a request spent in the server's queue before a worker started it, over the requests started (0 for those started on arrival); 0 for `occ`",
    },
    Metric {
        name: "queued_fraction",
        read: |m| Value::Real(m.queued_fraction),
        label: "requests queued",
        unit: "fraction of accepted requests",
        better: Some(Better::Lower),
        meaning: "of the requests the server accepted, the fraction that found every usable worker busy and waited: M/M/c's probability of waiting (Erlang C); 0 for `occ`",
    },
    Metric {
        name: "in_server_mean",
        read: |m| Value::Real(m.in_server_mean),
        label: "mean requests at the server",
        unit: "requests",
        better: None,
        meaning: "time-average number of requests at the server, in service or queued, over `[0, completion_time_s]` (Little's L); 0 for `occ`",
    },
    Metric {
        name: "peak_offered_rps",
        read: |m| Value::Count(m.peak_offered_rps),
        label: "peak offered load",
        unit: "calls/s",
        better: Some(Better::Lower),
        meaning: "the most calls sent in any 1 s window (windows start on whole milliseconds)",
    },
    Metric {
        name: "recovery_time_s",
        read: |m| m.recovery_time_s.map_or(Value::Missing, Value::Real),
        label: "recovery time",
        unit: "s",
        better: Some(Better::Lower),
        meaning: "a 1 s bucket of operation starts is *healthy* when the operations started in it have a success rate >= min(0.95, baseline - 0.02), at most 1.1 x baseline + 0.05 calls per operation and a mean latency <= 2 x baseline + 10 ms, each baseline taken over the operations started in the whole buckets before the first fault (the first bucket excluded); recovery is the time from the end of the last fault that starts before the horizon to the start of the first run of 5 consecutive healthy buckets (buckets where nothing started are skipped). 0 without faults. Empty in runs.csv when the run never recovers, or when it cannot be measured: fewer than 5 whole seconds of load before the first fault or after the last one (`check` warns). In summary.csv, the mean over the runs that recovered",
    },
    Metric {
        name: "metastable",
        read: |m| m.metastable.map_or(Value::Missing, |b| Value::Count(b as u64)),
        label: "metastable runs",
        unit: "fraction of runs",
        better: Some(Better::Lower),
        meaning: "1 if no such run of 5 healthy buckets starts and ends while load is still arriving (a degraded state that lasts until the load ends is metastable; the drain afterwards is not recovery), else 0; empty when unmeasurable. In summary.csv, the fraction of the measurable runs",
    },
    Metric {
        name: "events",
        read: |m| Value::Count(m.events),
        label: "engine events",
        unit: "count",
        better: None,
        meaning: "events the engine processed",
    },
];

/// The catalogue entry of a column name.
pub fn find(name: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.name == name)
}

/// Index of a metric in [`METRICS`] (its column among the metrics).
pub fn index(name: &str) -> Option<usize> {
    METRICS.iter().position(|m| m.name == name)
}

/// Which way a column improves. A folder written by another version may hold columns this
/// catalogue lacks: a failure count among them is still better lower.
pub fn better(name: &str) -> Option<Better> {
    match find(name) {
        Some(m) => m.better,
        None => name.starts_with("failed_").then_some(Better::Lower),
    }
}

/// The words for a column in a sentence; its name when the catalogue lacks it.
pub fn label(name: &str) -> String {
    find(name).map_or_else(|| name.to_string(), |m| m.label.to_string())
}

/// `label (unit)` for an axis title; the column name when the catalogue lacks it.
pub fn axis_title(name: &str) -> String {
    find(name).map_or_else(|| name.to_string(), Metric::axis_title)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn every_metric_can_be_presented() {
        for m in METRICS {
            assert!(!m.label.is_empty() && !m.unit.is_empty() && !m.meaning.is_empty(), "{}", m.name);
            assert!(!m.meaning.ends_with('.'), "{}: meanings are phrases, without a full stop", m.name);
        }
    }

    #[test]
    fn titles_and_labels() {
        assert_eq!(axis_title("latency_p99_s"), "p99 latency (s)");
        assert_eq!(label("no_such_column"), "no_such_column");
        assert_eq!(better("failed_something_new"), Some(Better::Lower));
        assert_eq!(better("success_rate"), Some(Better::Higher));
        assert_eq!(index("ops"), Some(0));
    }
}
