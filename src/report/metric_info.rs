//! What the report knows about a metric beyond its column name: a label with its unit, and
//! which direction is better. Metrics not listed here (added later) still plot and compare,
//! under their column name and without a "best" mark.

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
    MetricInfo { name: "ops", label: "operations", unit: "count", better: None },
    MetricInfo {
        name: "succeeded",
        label: "operations succeeded",
        unit: "count",
        better: Some(Better::Higher),
    },
    MetricInfo { name: "failed", label: "operations failed", unit: "count", better: Some(Better::Lower) },
    MetricInfo {
        name: "success_rate",
        label: "success rate",
        unit: "fraction of operations",
        better: Some(Better::Higher),
    },
    MetricInfo { name: "calls", label: "calls", unit: "attempts sent", better: Some(Better::Lower) },
    MetricInfo {
        name: "amplification",
        label: "amplification",
        unit: "calls per operation",
        better: Some(Better::Lower),
    },
    MetricInfo { name: "server_calls", label: "server calls", unit: "requests", better: Some(Better::Lower) },
    MetricInfo {
        name: "completion_time_s",
        label: "completion time",
        unit: "s",
        better: Some(Better::Lower),
    },
    MetricInfo { name: "latency_p50_s", label: "p50 latency", unit: "s", better: Some(Better::Lower) },
    MetricInfo { name: "latency_p99_s", label: "p99 latency", unit: "s", better: Some(Better::Lower) },
    MetricInfo { name: "latency_max_s", label: "max latency", unit: "s", better: Some(Better::Lower) },
    MetricInfo { name: "latency_min_s", label: "min latency", unit: "s", better: Some(Better::Lower) },
    MetricInfo { name: "latency_mean_s", label: "mean latency", unit: "s", better: Some(Better::Lower) },
    MetricInfo {
        name: "duplicates",
        label: "duplicate side effects",
        unit: "count",
        better: Some(Better::Lower),
    },
    MetricInfo {
        name: "wasted_work_s",
        label: "wasted server work",
        unit: "worker-seconds",
        better: Some(Better::Lower),
    },
    MetricInfo { name: "wait_mean_s", label: "mean wait in queue", unit: "s", better: Some(Better::Lower) },
    MetricInfo {
        name: "queued_fraction",
        label: "requests queued",
        unit: "fraction of accepted requests",
        better: Some(Better::Lower),
    },
    MetricInfo {
        name: "in_server_mean",
        label: "mean requests at the server",
        unit: "requests",
        better: None,
    },
    MetricInfo {
        name: "peak_offered_rps",
        label: "peak offered load",
        unit: "calls/s",
        better: Some(Better::Lower),
    },
    MetricInfo { name: "recovery_time_s", label: "recovery time", unit: "s", better: Some(Better::Lower) },
    MetricInfo {
        name: "metastable",
        label: "metastable runs",
        unit: "fraction of runs",
        better: Some(Better::Lower),
    },
    MetricInfo { name: "events", label: "engine events", unit: "count", better: None },
];

/// What is known about a metric; an unknown one gets its name as label.
pub fn info(name: &str) -> MetricInfo {
    if let Some(i) = INFO.iter().find(|i| i.name == name) {
        return *i;
    }
    let better = if name.starts_with("failed_") { Some(Better::Lower) } else { None };
    MetricInfo { name: "", label: "", unit: "", better }
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
