//! What the report draws: read by the charts and by [`super::render_report`], so neither
//! imports the other.

use super::compare::CompareOptions;
use super::verdict::VerdictOptions;

/// What to draw.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// Latency distributions are drawn per sweep point for at most this many points (the
    /// first, the last and evenly spaced ones between).
    pub max_points: usize,
    /// Time series are drawn for every sweep point up to this many points; beyond it, for
    /// this many (the first, the last and evenly spaced ones between), the rest being in
    /// timeseries.csv. Each is a tall chart (one panel per strategy), so a sweep of
    /// hundreds of points does not make a page of hundreds of them.
    pub max_timeseries: usize,
    /// Metrics that get a heatmap per strategy when two keys are swept.
    pub heatmap_metrics: Vec<String>,
    /// The comparison shown in the report (its `color` is ignored there).
    pub compare: CompareOptions,
    /// The verdict at the top of the page: its reference point and constraints.
    pub verdict: VerdictOptions,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            max_points: 6,
            max_timeseries: 60,
            heatmap_metrics: ["success_rate", "metastable", "amplification", "latency_p99_s"]
                .map(String::from)
                .to_vec(),
            compare: CompareOptions::default(),
            verdict: VerdictOptions::default(),
        }
    }
}
