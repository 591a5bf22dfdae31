//! retrysim's integration tests, in one binary (nexosim's layout): each module is one subject,
//! and the crate is linked once instead of once per file.
//!
//! `system` holds the three tests that drive real components installed on the machine (headless
//! Chromium, a local Slurm cluster, the retry libraries of the conformance suite). Each
//! provisions its component when it is missing (`apt-get` as root; PyPI and npm into the
//! target directory) and fails naming what to install when it cannot; a contributor without
//! them leaves exactly those out with `cargo test --release -- --skip system::`.

mod admission_control;
mod app_retry;
mod architecture;
mod autoscale;
mod aws_study;
mod bad_input;
mod brooker;
mod bulkhead;
mod capacity;
mod case_studies;
mod cli_run;
mod conservation;
mod controls;
mod dead_letter;
mod deploys;
mod determinism;
mod disciplines;
mod docs;
mod eta;
mod fit;
mod graph;
mod graph_replicas;
mod hedging;
mod interop;
mod interop_formats;
mod layers;
mod limits;
mod memory;
mod no_alloc;
mod pool;
mod priorities;
mod queue_consumers;
mod queue_equivalence;
mod queueing_theory;
mod rate_limiters;
mod readme;
mod recovery;
mod replicas;
mod report;
mod report_folder;
mod serve;
mod server_stages;
mod shards;
mod signals;
mod slo;
mod support;
mod system;
mod tune;
mod validation;
mod workflow;
mod workloads;
mod workspace;
