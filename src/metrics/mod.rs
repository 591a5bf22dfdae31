//! Measurements: per-run counters and histograms ([`RunRecorder`] -> [`RunMetrics`]) and their
//! aggregation across runs ([`summary`]). Names and meanings are DESIGN §5's contract.

mod recorder;
pub mod recovery;
pub mod summary;

pub use crate::policy::FailReason;
pub use recorder::{RunMetrics, RunRecorder};
