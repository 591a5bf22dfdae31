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
//! | `charts/heatmap-<metric>-<strategy>.{svg,png}` | two swept keys: a metric over both, per strategy (strategies equal in every cell share the first one's) |
//! | `charts/timeseries.{svg,png}` or `charts/timeseries-<KEY>=<VALUE>[,<KEY>=<VALUE>...].{svg,png}` | offered load, successes and queue over time, per sweep point |
//! | `charts/call-graph.{svg,png}` or `charts/call-graph-<KEY>=<VALUE>[,...].{svg,png}` | with `[[services]]`: the services and edges with their calls per request and success, per sweep point |
//! | `charts/latency-runs-cdf.{svg,png}` or `charts/latency-runs-cdf-<KEY>=<VALUE>[,...].{svg,png}` | distribution over runs of each run's p99 and p50 latency, per sweep point |
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

/// The stems of a chart drawn per sweep point, one per point of `points` (each the swept
/// `keys`' values): `BASE` without a sweep, else `BASE-KEY=VALUE`, one `KEY=VALUE` per
/// swept key joined by `,`, so that the name says the point. Should two points give the
/// same name once sanitized, the later one gets `-point<N>` (1-based, summary order).
pub fn point_charts(base: &str, keys: &[String], points: &[Vec<String>]) -> Vec<String> {
    let mut stems: Vec<String> = Vec::with_capacity(points.len());
    for (p, values) in points.iter().enumerate() {
        let stem = if keys.is_empty() {
            base.to_string()
        } else {
            let pairs: Vec<String> =
                keys.iter().zip(values).map(|(k, v)| format!("{}={}", sanitize(k), sanitize(v))).collect();
            format!("{base}-{}", pairs.join(","))
        };
        let stem = if stems.contains(&stem) { format!("{stem}-point{}", p + 1) } else { stem };
        stems.push(stem);
    }
    stems
}

/// The time series of each sweep point (see [`point_charts`]).
pub fn timeseries_charts(keys: &[String], points: &[Vec<String>]) -> Vec<String> {
    point_charts("timeseries", keys, points)
}

/// The latency distribution over runs of each sweep point (see [`point_charts`]).
pub fn latency_charts(keys: &[String], points: &[Vec<String>]) -> Vec<String> {
    point_charts("latency-runs-cdf", keys, points)
}

/// The call graph of each sweep point (see [`point_charts`]).
pub fn call_graph_charts(keys: &[String], points: &[Vec<String>]) -> Vec<String> {
    point_charts("call-graph", keys, points)
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
        let v = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(timeseries_charts(&[], &[vec![]]), ["timeseries"]);
        assert_eq!(
            timeseries_charts(&v(&["client.timeout"]), &[v(&["2s"]), v(&["500ms"])]),
            ["timeseries-client.timeout=2s", "timeseries-client.timeout=500ms"]
        );
        assert_eq!(
            latency_charts(&v(&["server.faults[0].duration", "server.drop_expired"]), &[v(&["4s", "true"])]),
            ["latency-runs-cdf-server.faults_0_.duration=4s,server.drop_expired=true"]
        );
        // Values that sanitize alike still get distinct names.
        assert_eq!(
            timeseries_charts(&v(&["k"]), &[v(&["a b"]), v(&["a/b"])]),
            ["timeseries-k=a_b", "timeseries-k=a_b-point2"]
        );
        // '=' and ',' are fine in file names but not in XML ids.
        assert_eq!(svg_id_prefix("timeseries-k=1,j=2"), "c-timeseries-k_1_j_2-");
    }
}
