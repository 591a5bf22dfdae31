//! Where every report file goes, and what it is called: the one place that names them.
//!
//! Inside a result folder DIR:
//!
//! | file | what |
//! |---|---|
//! | `report.html` | the self-contained report: every chart inline, the tables, the comparison |
//! | `charts/<metric>-vs-<key>.{svg,png}` | a key metric against a swept key, one line per strategy |
//! | `charts/aws-calls-vs-clients.{svg,png}`, `charts/aws-completion-time-vs-clients.{svg,png}` | the same for `calls` and `completion_time_s` against `workload.clients`: the AWS study pair |
//! | `charts/<metric>-by-strategy.{svg,png}` | without a sweep: a key metric per strategy |
//! | `charts/heatmap-<metric>-<strategy>.{svg,png}` | two swept keys: a metric over both, per strategy |
//! | `charts/timeseries.{svg,png}` or `charts/timeseries-point<N>.{svg,png}` | offered load, successes and queue over time (N: 1-based sweep point, summary order) |
//! | `charts/latency-runs-cdf.{svg,png}` or `charts/latency-runs-cdf-point<N>.{svg,png}` | distribution over runs of each run's p99 and p50 latency |
//!
//! Metric, key and strategy names are kept as they are, except that characters other than
//! `A-Z a-z 0-9 . _ -` become `_` and `*` becomes `all` (`strategies.*.backoff.base` ->
//! `strategies.all.backoff.base`).

use std::path::{Path, PathBuf};

/// The report page.
pub const REPORT_HTML: &str = "report.html";
/// The folder of chart files.
pub const CHARTS_DIR: &str = "charts";

/// A name made safe for a file name and an XML id.
pub fn sanitize(name: &str) -> String {
    name.replace('*', "all")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' })
        .collect()
}

/// A key metric against a swept key.
pub fn sweep_chart(metric: &str, key: &str) -> String {
    match (metric, key) {
        ("calls", "workload.clients") => "aws-calls-vs-clients".into(),
        ("completion_time_s", "workload.clients") => "aws-completion-time-vs-clients".into(),
        _ => format!("{}-vs-{}", sanitize(metric), sanitize(key)),
    }
}

/// A key metric per strategy (no sweep).
pub fn metric_chart(metric: &str) -> String {
    format!("{}-by-strategy", sanitize(metric))
}

/// A heatmap of one metric for one strategy.
pub fn heatmap_chart(metric: &str, strategy: &str) -> String {
    format!("heatmap-{}-{}", sanitize(metric), sanitize(strategy))
}

fn per_point(base: &str, point: usize, points: usize) -> String {
    if points <= 1 { base.to_string() } else { format!("{base}-point{}", point + 1) }
}

/// The time series of one sweep point.
pub fn timeseries_chart(point: usize, points: usize) -> String {
    per_point("timeseries", point, points)
}

/// The latency distribution over runs of one sweep point.
pub fn latency_chart(point: usize, points: usize) -> String {
    per_point("latency-runs-cdf", point, points)
}

/// `DIR/charts/STEM.EXT`.
pub fn chart_file(dir: &Path, stem: &str, ext: &str) -> PathBuf {
    dir.join(CHARTS_DIR).join(format!("{stem}.{ext}"))
}

/// `DIR/report.html`.
pub fn report_file(dir: &Path) -> PathBuf {
    dir.join(REPORT_HTML)
}

/// The prefix of the ids inside a chart's SVG: unique per chart in the report page.
pub fn svg_id_prefix(stem: &str) -> String {
    format!("c-{}-", sanitize(stem))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_stable_and_safe() {
        assert_eq!(sweep_chart("success_rate", "workload.rate"), "success_rate-vs-workload.rate");
        assert_eq!(
            sweep_chart("latency_p99_s", "strategies.*.backoff.base"),
            "latency_p99_s-vs-strategies.all.backoff.base"
        );
        assert_eq!(sweep_chart("calls", "workload.clients"), "aws-calls-vs-clients");
        assert_eq!(heatmap_chart("success_rate", "full jitter/2"), "heatmap-success_rate-full_jitter_2");
        assert_eq!(timeseries_chart(0, 1), "timeseries");
        assert_eq!(timeseries_chart(2, 3), "timeseries-point3");
    }
}
