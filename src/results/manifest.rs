//! `manifest.json`: what a result folder holds and where it came from: the experiment (its
//! text and description), the sweep's points with the facts charts need (capacity, fault
//! windows), the shard, and a fingerprint that `merge` and `--resume` compare. Written last,
//! so a folder with a manifest holds a complete result.
//!
//! Every field is optional when read (`#[serde(default)]`), so that a folder written before a
//! field existed still plots: the report then falls back on what the CSV files say.

use crate::experiment::capacity::mean_s;
use crate::experiment::{Experiment, ServerSpec};
use crate::sweep::{Cell, Shard};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Manifest {
    pub retrysim_version: String,
    pub name: String,
    /// The experiment file's leading comment block.
    pub description: String,
    pub seed: Option<u64>,
    pub runs: Option<u64>,
    /// Width of `timeseries.csv`'s buckets, in seconds.
    pub bucket_s: Option<f64>,
    /// Whether `timeseries.csv` was written.
    pub timeseries: bool,
    pub sweep_keys: Vec<String>,
    pub strategies: Vec<String>,
    pub points: Vec<PointInfo>,
    /// Identifies the experiment as run: its text, the command-line changes and the version.
    /// Shards of one run share it.
    pub fingerprint: String,
    /// The experiment file as it was read (before command-line changes).
    pub experiment_toml: String,
    /// The command-line changes (`--set`, `--runs`, `--seed`), in order.
    pub overrides: Vec<String>,
    /// The experiment as run, every `--set` applied, as TOML; empty without `--set`.
    pub effective_toml: String,
    /// The command line of the run, its arguments in order; empty when not recorded.
    pub command_line: Vec<String>,
    /// `[output] reference`: the verdict's reference point, swept key -> value as in its CSV
    /// column, which `plot` uses unless given `--reference`. Absent when the file sets none.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub reference: std::collections::BTreeMap<String, String>,
    /// `null` for a whole run.
    pub shard: Option<ShardInfo>,
    /// A run stopped by a signal keeps the cells it finished: then `true`, and
    /// `cells_done` lists them (a prefix of the cells in output order) out of `cells_total`.
    /// Absent from a complete result's manifest. `run --resume` completes it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cells_done: Vec<DoneCell>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cells_total: Option<u64>,
}

/// A finished (point, strategy) cell of a partial result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DoneCell {
    /// Index into `points`.
    pub point: usize,
    pub strategy: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PointInfo {
    /// The swept keys' values at this point, as in the CSV columns.
    pub values: Vec<String>,
    /// Requests per second the server completes at full load (workers / mean service time);
    /// `null` when it has no such number (the OCC resource).
    pub capacity_rps: Option<f64>,
    /// The server's workers (`concurrency`), so that the capacity line rounds a capacity
    /// fault's workers down as the model does; `null` for the OCC resource (and in manifests
    /// written before it existed).
    pub concurrency: Option<u32>,
    pub faults: Vec<FaultInfo>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FaultInfo {
    pub kind: String,
    pub start_s: f64,
    pub end_s: f64,
    /// The fault's `factor`: the fraction of workers left by a `capacity` fault, the
    /// service-time multiplier of a `slowdown`; `null` for the other kinds (and in manifests
    /// written before it existed), so the charts' capacity line can follow the faults.
    pub factor: Option<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardInfo {
    pub index: u32,
    pub count: u32,
}

impl Manifest {
    pub const FILE: &'static str = "manifest.json";

    pub fn of(exp: &Experiment, shard: Option<Shard>) -> Manifest {
        let first = &exp.points[0];
        Manifest {
            retrysim_version: env!("CARGO_PKG_VERSION").to_owned(),
            name: exp.name.clone(),
            description: exp.description.clone(),
            seed: Some(exp.seed),
            runs: Some(exp.runs as u64),
            bucket_s: Some(first.spec.output.bucket.span().as_secs_f64()),
            timeseries: exp.timeseries,
            sweep_keys: exp.sweep_keys.clone(),
            strategies: first.strategies.iter().map(|s| s.name.clone()).collect(),
            points: exp.points.iter().map(|p| point_info(&p.values, &p.spec.server)).collect(),
            fingerprint: exp.fingerprint.clone(),
            experiment_toml: exp.source.clone(),
            overrides: exp.overrides.clone(),
            effective_toml: exp.effective_toml.clone(),
            command_line: exp.command_line.clone(),
            reference: exp.reference.iter().cloned().collect(),
            shard: shard.map(|s| ShardInfo { index: s.index, count: s.count }),
            partial: false,
            cells_done: Vec::new(),
            cells_total: None,
        }
    }

    /// The manifest of a partial result of `exp`: `done` of the `total` cells (of the
    /// shard) are finished, the first ones in output order.
    pub fn partial(exp: &Experiment, shard: Option<Shard>, done: &[Cell], total: usize) -> Manifest {
        let cells_done = done
            .iter()
            .map(|c| DoneCell {
                point: c.point,
                strategy: exp.points[c.point].strategies[c.strategy].name.clone(),
            })
            .collect();
        Manifest { partial: true, cells_done, cells_total: Some(total as u64), ..Manifest::of(exp, shard) }
    }

    /// The complete result this partial one is part of (its partial fields cleared).
    pub fn completed(&self) -> Manifest {
        Manifest { partial: false, cells_done: Vec::new(), cells_total: None, ..self.clone() }
    }

    /// Whether `other` describes the same result: every field but the command line (a
    /// resumed or merged run is the same result under another command).
    pub fn same_result(&self, other: &Manifest) -> bool {
        Manifest { command_line: Vec::new(), ..self.clone() }
            == Manifest { command_line: Vec::new(), ..other.clone() }
    }

    pub fn to_json(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("a manifest always serialises");
        bytes.push(b'\n');
        bytes
    }

    /// Parses `manifest.json`; unknown fields are ignored, absent ones take their default.
    pub fn parse(bytes: &[u8]) -> Result<Manifest, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("not a valid manifest: {e}"))
    }
}

fn point_info(values: &[String], server: &ServerSpec) -> PointInfo {
    let (capacity_rps, concurrency, faults) = match server {
        ServerSpec::Queue(q) => {
            let mean_s = mean_s(&q.service_time);
            let capacity = (mean_s > 0.0).then(|| q.concurrency as f64 / mean_s);
            let faults = q
                .faults
                .iter()
                .map(|f| {
                    let (start, duration) = f.window();
                    let (kind, factor) = f.kind_and_factor();
                    let start_s = start.span().as_secs_f64();
                    FaultInfo {
                        kind: kind.to_owned(),
                        start_s,
                        end_s: start_s + duration.span().as_secs_f64(),
                        factor,
                    }
                })
                .collect();
            (capacity, Some(q.concurrency), faults)
        }
        ServerSpec::Occ {} => (None, None, Vec::new()),
    };
    PointInfo { values: values.to_vec(), capacity_rps, concurrency, faults }
}
