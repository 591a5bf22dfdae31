//! Measurements: per-run counters and histograms ([`RunRecorder`] -> [`RunMetrics`]), the
//! [`catalogue`] of metric columns read from them, and their aggregation across runs
//! ([`aggregate`]). Names and meanings are DESIGN §5's contract.

pub mod aggregate;
pub mod catalogue;
pub mod constraint;
pub mod graph;
mod recorder;
pub mod recovery;
pub mod replica_series;
pub mod series;

pub use crate::policy::FailReason;
pub use catalogue::{Better, METRICS, Metric, Value};
pub(crate) use recorder::quantile_s;
pub use recorder::{Latencies, RunMetrics, RunRecorder, Window, WindowMetrics, latency_histogram};
