//! Measurements: per-run counters and histograms ([`RunRecorder`] -> [`RunMetrics`]) and their
//! aggregation across runs ([`summary`]). Names and meanings are DESIGN §5's contract.

pub mod aggregate;
pub mod constraint;
mod recorder;
pub mod recovery;
pub mod series;
pub mod summary;

pub use crate::policy::FailReason;
pub use recorder::{RunMetrics, RunRecorder, latency_histogram};
