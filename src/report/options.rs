//! What the report draws: read by the charts and by [`super::render_report`], so neither
//! imports the other.

use super::compare::CompareOptions;
use super::verdict::VerdictOptions;

/// What to draw.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// Time series and latency distributions are drawn per sweep point for at most this
    /// many points (the first, the last and evenly spaced ones between).
    pub max_points: usize,
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
            heatmap_metrics: ["success_rate", "amplification", "latency_p99_s"].map(String::from).to_vec(),
            compare: CompareOptions::default(),
            verdict: VerdictOptions::default(),
        }
    }
}
