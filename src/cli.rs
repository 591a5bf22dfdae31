//! Command-line definitions (clap). Nothing here runs anything.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// A deterministic discrete-event simulator of retry storms.
///
/// Same experiment file and seed give byte-identical CSV files, on any number of threads.
/// Exit codes: 0 ok, 2 bad input (the message names the key), 1 anything else.
#[derive(Debug, Parser)]
#[command(name = "retrysim", version, about, long_about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run an experiment and write runs.csv and summary.csv.
    Run(RunArgs),
    /// Validate an experiment file (and overrides) without running it.
    Check(CheckArgs),
}

/// Overrides shared by `run` and `check`.
#[derive(Debug, Args)]
pub struct OverrideArgs {
    /// Override a key of the file: a dotted path such as `server.concurrency=200`,
    /// `client.timeout=2s` or `strategies.NAME.backoff.base=50ms` (one strategy). Repeatable;
    /// a later one wins. VALUE is read as TOML, or as a string when it is not TOML.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Replications per (point, strategy), overriding the file's `runs`.
    #[arg(long, value_name = "N")]
    pub runs: Option<u32>,
    /// Master seed, overriding the file's `seed`.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The experiment file (TOML).
    pub file: PathBuf,
    /// Output folder [default: results/NAME/, where NAME is the experiment's name].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub overrides: OverrideArgs,
    /// Worker threads [default: one per core]. Results do not depend on it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Print events, events per second, wall time and peak memory when done.
    #[arg(long)]
    pub stats: bool,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The experiment file (TOML).
    pub file: PathBuf,
    #[command(flatten)]
    pub overrides: OverrideArgs,
}
