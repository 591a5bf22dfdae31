//! `manifest.json`: what a result folder was made from (experiment name, description, TOML,
//! sweep keys, strategies, and per point the server's capacity and fault windows).
//!
//! Every field is optional when read, so that a folder written before the manifest existed
//! still plots: the report then falls back on what the CSV files say.

use serde::Deserialize;

/// The parsed `manifest.json`. Unknown fields are ignored.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct Manifest {
    /// Version of retrysim that wrote the folder.
    pub retrysim_version: String,
    /// The experiment's `name`.
    pub name: String,
    /// The leading comment block of the experiment file.
    pub description: String,
    /// The experiment's master seed.
    pub seed: Option<u64>,
    /// Replications per (point, strategy).
    pub runs: Option<u64>,
    /// Width of a timeseries.csv bucket, in seconds.
    pub bucket_s: Option<f64>,
    /// Swept keys, in column order.
    pub sweep_keys: Vec<String>,
    /// Strategy names, in the experiment's order.
    pub strategies: Vec<String>,
    /// Sweep points, in summary.csv order.
    pub points: Vec<ManifestPoint>,
    /// The experiment file's text.
    pub experiment_toml: String,
    /// Shard of a sharded run (`null` otherwise); kept as raw JSON.
    pub shard: Option<serde_json::Value>,
}

/// One sweep point of the manifest.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct ManifestPoint {
    /// The CSV cells of the swept keys.
    pub values: Vec<String>,
    /// The server's nominal capacity in requests per second, when known.
    pub capacity_rps: Option<f64>,
    /// Fault windows.
    pub faults: Vec<Fault>,
}

/// A fault window, in simulated seconds.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct Fault {
    /// `outage`, `capacity`, `slowdown` or `errors`.
    pub kind: String,
    /// Start of the window.
    pub start_s: f64,
    /// End of the window (exclusive).
    pub end_s: f64,
}

impl Manifest {
    /// Parses the manifest's JSON text.
    pub fn parse(bytes: &[u8]) -> Result<Manifest, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("not a valid manifest: {e}"))
    }
}
