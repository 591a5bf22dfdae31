//! # retrysim
//!
//! A deterministic discrete-event simulator of retry storms.
pub mod cli;
pub mod engine;
mod error;
pub mod experiment;
pub mod metrics;
pub mod model;
pub mod policy;
pub mod report;
pub mod stats;
pub mod sweep;

pub use error::Error;
