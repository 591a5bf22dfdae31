//! What the report knows about a metric beyond its column name: a label with its unit, which
//! direction is better, and what the column means (docs/outputs.md is generated from it, and
//! a test fails while a metric of summary.rs has no entry here).

/// Which way a metric improves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// Smaller is better (calls, latency, duplicates...).
    Lower,
    /// Larger is better (success rate).
    Higher,
}

/// Label, unit and direction of a known metric.
#[derive(Clone, Copy, Debug)]
pub struct MetricInfo {
    /// Column name.
    pub name: &'static str,
    /// Words for an axis or a sentence, without the unit.
    pub label: &'static str,
    /// Unit for axis titles (`s`, `calls/s`...), empty for a pure number.
    pub unit: &'static str,
    /// Which way is better, if any.
    pub better: Option<Better>,
    /// What the column counts or measures, for docs/outputs.md (Markdown).
    pub meaning: &'static str,
}

/// The key summary metrics charted against each swept parameter, in chart order.
pub const KEY_METRICS: &[&str] = &[
    "success_rate",
    "amplification",
    "calls",
    "completion_time_s",
    "latency_p99_s",
    "duplicates",
    "recovery_time_s",
    "peak_offered_rps",
    "wasted_work_s",
];

const INFO: &[MetricInfo] = &[
    MetricInfo {
        name: "ops",
        label: "operations",
        unit: "count",
        better: None,
        meaning: "logical operations started",
    },
    MetricInfo {
        name: "succeeded",
        label: "operations succeeded",
        unit: "count",
        better: Some(Better::Higher),
        meaning: "operations that ended in success",
    },
    MetricInfo {
        name: "failed",
        label: "operations failed",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "operations that ended in failure, for any of the reasons below (`succeeded + failed = ops`)",
    },
    MetricInfo {
        name: "success_rate",
        label: "success rate",
        unit: "fraction of operations",
        better: Some(Better::Higher),
        meaning: "`succeeded / ops`",
    },
    MetricInfo {
        name: "failed_exhausted",
        label: "operations failed, attempts used up",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "failed with `max_attempts` used up",
    },
    MetricInfo {
        name: "failed_non_retryable",
        label: "operations failed on a non-retryable answer",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "failed because the last outcome is not in `retry_on`",
    },
    MetricInfo {
        name: "failed_deadline",
        label: "operations failed at their deadline",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "failed because the deadline passed, or would pass before the next attempt",
    },
    MetricInfo {
        name: "failed_budget",
        label: "operations failed by the retry budget",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "failed because the retry budget refused a retry",
    },
    MetricInfo {
        name: "failed_breaker",
        label: "operations failed by the open breaker",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "failed because an open circuit breaker failed the call locally",
    },
    MetricInfo {
        name: "failed_throttled",
        label: "operations failed by client throttling",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "failed because client-side throttling rejected the call locally",
    },
    MetricInfo {
        name: "failed_unfinished",
        label: "operations unfinished at the horizon",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "still pending at the horizon",
    },
    MetricInfo {
        name: "calls",
        label: "calls",
        unit: "attempts sent",
        better: Some(Better::Lower),
        meaning: "attempts sent by clients, first ones included; for `occ`, writes",
    },
    MetricInfo {
        name: "amplification",
        label: "amplification",
        unit: "calls per operation",
        better: Some(Better::Lower),
        meaning: "`calls / ops`",
    },
    MetricInfo {
        name: "server_calls",
        label: "server calls",
        unit: "requests",
        better: Some(Better::Lower),
        meaning: "requests that reached the server (lost requests do not); with gateway layers, what the last layer sends",
    },
    MetricInfo {
        name: "completion_time_s",
        label: "completion time",
        unit: "s",
        better: Some(Better::Lower),
        meaning: "time at which the last operation ended (the horizon if any was unfinished)",
    },
    MetricInfo {
        name: "latency_p50_s",
        label: "p50 latency",
        unit: "s",
        better: Some(Better::Lower),
        meaning: "median operation latency, first attempt to end, over the operations that ended (success or failure), from an HDR histogram with 3 significant digits (within 0.1 %, never above the maximum)",
    },
    MetricInfo {
        name: "latency_p99_s",
        label: "p99 latency",
        unit: "s",
        better: Some(Better::Lower),
        meaning: "99th percentile of the same latencies, from the same histogram",
    },
    MetricInfo {
        name: "latency_max_s",
        label: "max latency",
        unit: "s",
        better: Some(Better::Lower),
        meaning: "the exact maximum of the same latencies",
    },
    MetricInfo {
        name: "latency_min_s",
        label: "min latency",
        unit: "s",
        better: Some(Better::Lower),
        meaning: "the exact minimum of the same latencies (0 when none ended)",
    },
    MetricInfo {
        name: "latency_mean_s",
        label: "mean latency",
        unit: "s",
        better: Some(Better::Lower),
        meaning: "the exact mean of the same latencies (not from the histogram)",
    },
    MetricInfo {
        name: "duplicates",
        label: "duplicate side effects",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "side-effect executions beyond the first per operation (a served request executes the side effect, even if its answer is lost or comes too late); an answer from the dedup store executes nothing",
    },
    MetricInfo {
        name: "applied",
        label: "operations applied",
        unit: "count",
        better: None,
        meaning: "operations whose side effect happened at least once by the horizon: side-effect executions are `applied + duplicates`",
    },
    MetricInfo {
        name: "failed_but_applied",
        label: "operations failed but applied",
        unit: "count",
        better: Some(Better::Lower),
        meaning: "of those, the operations the client counts as failed (any reason, unfinished included): ambiguous outcomes to reconcile; `applied = succeeded + failed_but_applied`",
    },
    MetricInfo {
        name: "idempotency_keys_peak",
        label: "peak idempotency keys held",
        unit: "keys",
        better: None,
        meaning: "the most keys the server's dedup store held at once (in progress, or done and not yet expired); 0 without `[server.idempotency]` or without keys",
    },
    MetricInfo {
        name: "wasted_work_s",
        label: "wasted server work",
        unit: "worker-seconds",
        better: Some(Better::Lower),
        meaning: "server busy time spent, after the client stopped waiting, on requests it abandoned",
    },
    MetricInfo {
        name: "wait_mean_s",
        label: "mean wait in queue",
        unit: "s",
        better: Some(Better::Lower),
        meaning: "mean time a request spent in the server's queue before a worker started it, over the requests started (0 for those started on arrival); 0 for `occ`",
    },
    MetricInfo {
        name: "queued_fraction",
        label: "requests queued",
        unit: "fraction of accepted requests",
        better: Some(Better::Lower),
        meaning: "of the requests the server accepted, the fraction that found every usable worker busy and waited: M/M/c's probability of waiting (Erlang C); 0 for `occ`",
    },
    MetricInfo {
        name: "in_server_mean",
        label: "mean requests at the server",
        unit: "requests",
        better: None,
        meaning: "time-average number of requests at the server, in service or queued, over `[0, completion_time_s]` (Little's L); 0 for `occ`",
    },
    MetricInfo {
        name: "peak_offered_rps",
        label: "peak offered load",
        unit: "calls/s",
        better: Some(Better::Lower),
        meaning: "the most calls sent in any 1 s window (windows start on whole milliseconds)",
    },
    MetricInfo {
        name: "recovery_time_s",
        label: "recovery time",
        unit: "s",
        better: Some(Better::Lower),
        meaning: "a 1 s bucket of operation starts is *healthy* when the operations started in it have a success rate >= min(0.95, baseline - 0.02), at most 1.1 x baseline + 0.05 calls per operation and a mean latency <= 2 x baseline + 10 ms, each baseline taken over the operations started in the whole buckets before the first fault (the first bucket excluded); recovery is the time from the end of the last fault that starts before the horizon to the start of the first run of 5 consecutive healthy buckets (buckets where nothing started are skipped). 0 without faults. Empty in runs.csv when the run never recovers, or when it cannot be measured: fewer than 5 whole seconds of load before the first fault or after the last one (`check` warns). In summary.csv, the mean over the runs that recovered",
    },
    MetricInfo {
        name: "metastable",
        label: "metastable runs",
        unit: "fraction of runs",
        better: Some(Better::Lower),
        meaning: "1 if no such run of 5 healthy buckets starts and ends while load is still arriving (a degraded state that lasts until the load ends is metastable; the drain afterwards is not recovery), else 0; empty when unmeasurable. In summary.csv, the fraction of the measurable runs",
    },
    MetricInfo {
        name: "events",
        label: "engine events",
        unit: "count",
        better: None,
        meaning: "events the engine processed",
    },
];

/// What is known about a metric; an unknown one gets its name as label.
pub fn info(name: &str) -> MetricInfo {
    if let Some(i) = INFO.iter().find(|i| i.name == name) {
        return *i;
    }
    let better = if name.starts_with("failed_") { Some(Better::Lower) } else { None };
    MetricInfo { name: "", label: "", unit: "", better, meaning: "" }
}

/// `label (unit)` for an axis title; the column name for an unknown metric.
pub fn axis_title(name: &str) -> String {
    let i = info(name);
    if i.label.is_empty() {
        name.to_string()
    } else if i.unit.is_empty() {
        i.label.to_string()
    } else {
        format!("{} ({})", i.label, i.unit)
    }
}

/// The words for a metric in a sentence.
pub fn label(name: &str) -> String {
    let i = info(name);
    if i.label.is_empty() { name.to_string() } else { i.label.to_string() }
}
