//! # retrysim
//!
//! A deterministic discrete-event simulator of retry storms: many clients call a
//! capacity-limited server through a network, each following a retry policy, and retrysim
//! measures what the policy costs (calls, amplification, duplicates, wasted work) and buys
//! (success rate, latency, recovery after an outage).
//!
//! ## A tour in five steps
//!
//! **1. Describe an experiment** in TOML (docs/experiment-files.md has every key). Here 200
//! clients hit a server with 20 workers and no waiting room, comparing immediate retries with
//! full jitter:
//!
//! ```
//! let text = r#"
//! name = "tour"
//! seed = 7
//! runs = 3
//! [workload]
//! kind = "closed"
//! clients = 200
//! [server]
//! concurrency = 20
//! queue = 0
//! service_time = { dist = "exponential", mean = "10ms" }
//! [client]
//! max_attempts = 5
//! [[strategies]]
//! name = "immediate"
//! backoff = { kind = "none" }
//! [[strategies]]
//! name = "full-jitter"
//! backoff = { kind = "full-jitter", base = "10ms", cap = "1s" }
//! "#;
//!
//! // 2. Load and validate it: a bad key or value is an error naming the key, before any run.
//! let exp = retrysim::experiment::load_str(text, "tour.toml", &Default::default())?;
//!
//! // 3. Run every (point, strategy, run) cell, in parallel; results come back in cell order.
//! let results = retrysim::sweep::run(&exp, &|_done| {});
//!
//! // 4. Read the metrics of one run...
//! let first = &results.runs[0].metrics;
//! assert_eq!(first.succeeded + first.failed, first.ops);
//!
//! // ...or aggregate a strategy's runs, as summary.csv does.
//! let jitter: Vec<_> = results.cell(0, 1).iter().map(|r| &r.metrics).collect();
//! let success = jitter.iter().map(|m| m.success_rate()).sum::<f64>() / jitter.len() as f64;
//! assert!(success > 0.0);
//!
//! // 5. Or stream every result into a folder: runs.csv, summary.csv, timeseries.csv and
//! //    manifest.json, each renamed into place once complete.
//! let dir = std::env::temp_dir().join("retrysim-tour");
//! let mut writer = retrysim::results::writer::ResultWriter::create(&dir, &exp, None)?;
//! let cells = retrysim::sweep::cells(&exp, None);
//! let stop = std::sync::atomic::AtomicBool::new(false);
//! retrysim::sweep::execute(&exp, &cells, 2, &mut writer, &mut |_, _| {}, &stop)
//!     .map_err(|e| format!("{e:?}"))?;
//! writer.commit()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## How the crate is organised
//!
//! - [`engine`]: simulated time in nanoseconds, the event queues (all pop in the same
//!   `(time, sequence)` order), seeded random streams. It knows nothing about retries.
//! - [`policy`]: backoff formulas, retry classification and the decision after a failed
//!   attempt: pure functions and small state, unit-tested without the engine.
//! - [`model`]: workloads, network, faults and the `queue` and `occ` servers, wired to events.
//! - [`experiment`]: TOML -> validated [`experiment::Experiment`] (`--set`, sweeps, checks).
//! - [`metrics`]: the per-run recorder and the metric columns; [`sweep`] runs the cells;
//!   [`results`] streams them into files (CSVs, manifest, merged shards); [`report`] reads
//!   a finished folder and draws its charts, report.html and the comparison; [`slurm`]
//!   writes the job scripts that run a sweep's shards on a cluster; [`interrupt`] turns
//!   SIGINT, SIGTERM and SIGHUP into the stop flag every long verb polls.
//! - [`tune`]: `retrysim tune`, the search for the values of one strategy's keys that
//!   optimise a metric under constraints (the file's `[tune]`).
//! - [`validation`]: the validation suite (`retrysim validate`): every model against theory
//!   and the published studies, written to VALIDATION.md.
//!
//! Determinism: the same experiment and seed give the same results on any number of threads,
//! because every random stream is derived from the experiment seed and the run index alone
//! (DESIGN §2 states the derivation; [`engine::rng`] implements it) and results are collected
//! in cell order.

pub mod assembly;
pub mod cli;
pub mod commands;
pub mod engine;
mod error;
pub mod experiment;
pub mod fit;
pub mod interop;
pub mod interrupt;
pub mod metrics;
pub mod model;
pub mod policy;
pub mod progress;
pub mod report;
pub mod results;
pub mod serve;
pub mod slurm;
pub mod stats;
pub mod suggest;
pub mod sweep;
pub mod tune;
pub mod validation;

pub use error::Error;
