//! The metric catalogue: every metric column declared once, in CSV order, with how to read it
//! from a run and what a person needs to read it back: a label, its unit, which direction is
//! better and a one-line meaning. runs.csv and summary.csv take their columns from it; the
//! charts, the comparison, `tune`, `--rank` and docs/outputs.md take their words from it.
//! Names and meanings are DESIGN §5's contract.
//!
//! `[output] windows` add columns named `METRIC@WINDOW` after these ([`WINDOW_METRICS`],
//! [`columns`]): the same metric over one window of simulated time. Everything that looks a
//! column up by name ([`find`], [`label`], [`better`]) knows them.

use super::{FailReason, RunMetrics, WindowMetrics};

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
        meaning: "operations that ended in failure, for any of the reasons below (`succeeded + failed + dead_lettered = ops`; `dead_lettered` is 0 without a dead-letter queue)",
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
        name: "failed_bulkhead",
        read: |m| Value::Count(m.failed_by[FailReason::Bulkhead as usize]),
        label: "operations failed by the full bulkhead",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "failed without an attempt because the client's bulkhead (`bulkhead`) held `max_in_flight` operations and no permit came free within `max_wait`; 0 without a bulkhead",
    },
    Metric {
        name: "failed_limited",
        read: |m| Value::Count(m.failed_by[FailReason::Limited as usize]),
        label: "operations failed by the concurrency limit",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "failed because an attempt found the client's adaptive concurrency limit (`limit`) reached and was rejected locally, without reaching the server; 0 without a limit",
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
        name: "dead_lettered",
        read: |m| Value::Count(m.dead_lettered),
        label: "operations dead-lettered",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "operations whose tries were used up (`max_attempts`, or `dead_letter.after`) with a dead-letter queue (`dead_letter`): a third ending besides success and failure, whatever their re-drive does; 0 without `dead_letter`",
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
        name: "server_amplification",
        read: |m| Value::Real(m.server_amplification()),
        label: "server amplification",
        unit: "server calls per operation",
        better: Some(Better::Lower),
        meaning: "`server_calls / ops`: the load the server takes per operation, after every gateway layer's retries (`amplification` counts the clients' attempts only); 0 without operations",
    },
    Metric {
        name: "pool_timeouts",
        read: |m| Value::Count(m.pool_timeouts),
        label: "attempts timed out waiting for a connection",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "attempts that failed while waiting for a connection of the client's pool (`pool`), at the attempt's timeout, its deadline or the pool's `max_wait`: calls that never reached the server; 0 without a pool",
    },
    Metric {
        name: "hedges",
        read: |m| Value::Count(m.hedges),
        label: "hedges sent",
        unit: "count",
        better: None,
        meaning: "copies of a call sent besides its first by a hedging policy (`hedge`), each counted in `calls` too; 0 without hedging",
    },
    Metric {
        name: "hedge_wins",
        read: |m| Value::Count(m.hedge_wins),
        label: "calls won by a hedge",
        unit: "count",
        better: None,
        meaning: "succeeded calls whose winning answer came from a hedge rather than from the first copy; 0 without hedging",
    },
    Metric {
        name: "cancelled",
        read: |m| Value::Count(m.cancelled),
        label: "copies cancelled",
        unit: "count",
        better: None,
        meaning: "copies of a hedged call still outstanding when another copy decided the call (a win, or a fatal failure), and copies abandoned at their timeout: the server removes a cancelled copy it still queues, and stops one in service only with `cancel_in_service`; 0 without hedging",
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
        name: "latency_p999_s",
        read: |m| Value::Real(m.latency_p999_s),
        label: "p99.9 latency",
        unit: "s",
        better: Some(Better::Lower),
        meaning: "99.9th percentile of the same latencies, from the same histogram (the tail hedging is for)",
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
        name: "latency_ok_p50_s",
        read: |m| m.latency_ok_p50_s.map_or(Value::Missing, Value::Real),
        label: "p50 latency of successes",
        unit: "s",
        better: Some(Better::Lower),
        meaning: "median latency of the operations that succeeded only, first attempt to success, from an HDR histogram of their own (3 significant digits, never above their maximum); failing fast cannot improve it. Empty when no operation succeeded",
    },
    Metric {
        name: "latency_ok_p99_s",
        read: |m| m.latency_ok_p99_s.map_or(Value::Missing, Value::Real),
        label: "p99 latency of successes",
        unit: "s",
        better: Some(Better::Lower),
        meaning: "99th percentile of the same latencies of successful operations, from the same histogram; empty when no operation succeeded",
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
        meaning: "of those, the operations the client counts as failed (any reason, unfinished included): ambiguous outcomes to reconcile; `applied = succeeded + failed_but_applied + dead_lettered_but_applied`",
    },
    Metric {
        name: "dead_lettered_but_applied",
        read: |m| Value::Count(m.dead_lettered_but_applied),
        label: "operations dead-lettered but applied",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "of the `applied` operations, the dead-lettered ones: their effect happened before they were dead-lettered, or by their re-drive, or both (then `duplicates` counts the second payment); 0 without `dead_letter`",
    },
    Metric {
        name: "redriven",
        read: |m| Value::Count(m.redriven),
        label: "operations re-driven",
        unit: "count",
        better: None,
        meaning: "dead-lettered operations sent again by the `redrive` by the horizon (each at most once); 0 without `redrive`",
    },
    Metric {
        name: "redrive_succeeded",
        read: |m| Value::Count(m.redrive_succeeded),
        label: "re-drives succeeded",
        unit: "count",
        better: Some(Better::Higher),
        meaning: "of those, the ones whose re-drive succeeded (they stay counted in `dead_lettered`)",
    },
    Metric {
        name: "redeliveries",
        read: |m| Value::Count(m.redeliveries),
        label: "messages redelivered",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "a queue workload's deliveries beyond a message's first (re-drives excluded): its visibility timeout ran out before it was acknowledged (processing longer than the timeout, a failed or lost acknowledgement); 0 for other workloads",
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
        name: "lock_expired",
        read: |m| Value::Count(m.lock_expired),
        label: "locks expired during the work",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "lock grants of the dedup store whose `lock_ttl` ran out while their request was still at the server (waiting or in service), so that another request with the key could take the lock; counted when one does, or when the holder finishes or is dropped; 0 without `lock_ttl`",
    },
    Metric {
        name: "fenced",
        read: |m| Value::Count(m.fenced),
        label: "late effects fenced",
        unit: "count",
        better: None,
        meaning: "completed requests whose effect the resource refused because the key's lock had been granted again since their grant (`fencing = true`): work done without effect, nothing stored, answered 409; not in `duplicates` or `applied`",
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

/// A metric measured over each `[output] windows` window: column `<base>@<window>`, with the
/// unit, direction and label of the whole-run metric `base`.
pub struct WindowMetric {
    /// The whole-run metric it restricts to the window (in [`METRICS`]).
    pub base: &'static str,
    /// The value of one run in one window.
    pub read: fn(&WindowMetrics) -> Value,
    /// What it measures in the window, for docs/outputs.md (Markdown).
    pub meaning: &'static str,
}

/// The metrics of each window, in column order (DESIGN §5, windowed metrics).
pub const WINDOW_METRICS: &[WindowMetric] = &[
    WindowMetric {
        base: "ops",
        read: |w| Value::Count(w.ops),
        meaning: "operations started in the window `[start, end)`",
    },
    WindowMetric {
        base: "success_rate",
        read: |w| w.success_rate().map_or(Value::Missing, Value::Real),
        meaning: "of the operations started in the window, the fraction that succeeded (whenever they ended; those unfinished at the horizon count as failed); empty when none started",
    },
    WindowMetric {
        base: "latency_ok_p99_s",
        read: |w| w.latency_ok_p99_s.map_or(Value::Missing, Value::Real),
        meaning: "99th percentile latency of the operations started in the window that succeeded, from a histogram of their own (as `latency_ok_p99_s`); empty when none succeeded",
    },
    WindowMetric {
        base: "server_amplification",
        read: |w| w.server_amplification().map_or(Value::Missing, Value::Real),
        meaning: "requests that arrived at the server in the window (after gateway layers) per operation started in the window; empty when none started",
    },
];

/// The column of metric `base` over window `window`: `base@window`.
pub fn windowed(base: &str, window: &str) -> String {
    format!("{base}@{window}")
}

/// `(base, Some(window))` for `base@window`, `(name, None)` for a whole-run column.
pub fn split(name: &str) -> (&str, Option<&str>) {
    match name.split_once('@') {
        Some((base, window)) => (base, Some(window)),
        None => (name, None),
    }
}

/// The metric columns of runs.csv and summary.csv of an experiment with these windows (its
/// [`crate::experiment::Experiment::windows`]): [`METRICS`], then for each window in order
/// each of [`WINDOW_METRICS`], then `graph` (the columns of a call graph,
/// [`super::graph::columns`]; empty without `[[services]]`).
pub fn columns(windows: &[String], graph: &[String]) -> Vec<String> {
    let mut names: Vec<String> = METRICS.iter().map(|m| m.name.to_string()).collect();
    for w in windows {
        names.extend(WINDOW_METRICS.iter().map(|m| windowed(m.base, w)));
    }
    names.extend(graph.iter().cloned());
    names
}

/// A run's value of every column of [`columns`] (its windows are the experiment's), in order.
pub fn values(m: &RunMetrics) -> impl Iterator<Item = Value> + '_ {
    METRICS
        .iter()
        .map(move |metric| (metric.read)(m))
        .chain(m.windows.iter().flat_map(|w| WINDOW_METRICS.iter().map(move |metric| (metric.read)(w))))
        .chain(super::graph::values(&m.graph, m.ops))
}

/// The catalogue entry of a column name; for a windowed column `base@window`, the entry of
/// `base` (its unit and direction).
pub fn find(name: &str) -> Option<&'static Metric> {
    match split(name) {
        (base, None) => METRICS.iter().find(|m| m.name == base),
        (base, Some(_)) => WINDOW_METRICS
            .iter()
            .find(|w| w.base == base)
            .and_then(|w| METRICS.iter().find(|m| m.name == w.base)),
    }
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
    match (find(name), split(name)) {
        (Some(m), (_, Some(window))) => format!("{} in {window}", m.label),
        (Some(m), _) => m.label.to_string(),
        (None, _) => name.to_string(),
    }
}

/// `label (unit)` for an axis title; the column name when the catalogue lacks it.
pub fn axis_title(name: &str) -> String {
    match find(name) {
        Some(m) if m.unit.is_empty() => label(name),
        Some(m) => format!("{} ({})", label(name), m.unit),
        None => name.to_string(),
    }
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
        assert_eq!(axis_title("success_rate@deploy"), "success rate in deploy (fraction of operations)");
        assert_eq!(better("latency_ok_p99_s@deploy"), Some(Better::Lower));
        assert_eq!(find("latency_p50_s@deploy").map(|m| m.name), None, "not measured per window");
        assert_eq!(label("latency_p50_s@deploy"), "latency_p50_s@deploy");
    }

    #[test]
    fn windowed_columns_follow_the_catalogue_in_window_order() {
        let names = columns(&["a".into(), "b".into()], &[]);
        assert_eq!(names.len(), METRICS.len() + 2 * WINDOW_METRICS.len());
        assert_eq!(names[METRICS.len()], "ops@a");
        assert_eq!(names.last().map(String::as_str), Some("server_amplification@b"));
        for w in WINDOW_METRICS {
            assert!(find(w.base).is_some(), "{}: a window metric restricts a whole-run one", w.base);
            assert!(!w.meaning.ends_with('.'), "{}", w.base);
        }
        assert_eq!(split("success_rate@deploy"), ("success_rate", Some("deploy")));
        assert_eq!(split("success_rate"), ("success_rate", None));
    }
}
