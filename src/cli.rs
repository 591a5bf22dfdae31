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
    /// Run an experiment and write runs.csv, summary.csv, timeseries.csv and manifest.json.
    Run(RunArgs),
    /// Validate an experiment file (and overrides) without running it; print warnings and
    /// what a run will cost.
    Check(CheckArgs),
    /// Join the folders of `run --shard 1/N` .. `N/N` into the files of the whole run, and
    /// draw its report.
    Merge(MergeArgs),
    /// Write a Slurm job array that runs the experiment in N shards, and the job that merges
    /// them; print the command that submits both (or submit them with --submit).
    Slurm(SlurmArgs),
    /// Redraw the charts, report.html and the comparison of a finished run from its files.
    Plot(PlotArgs),
    /// Search the values of one strategy's keys (base, cap, attempts, budget...) that
    /// optimise the file's `[tune]` objective under its constraints; write tune.csv,
    /// recommendation.toml and a chart. Exit code 1 when nothing is feasible.
    Tune(TuneArgs),
    /// Print the JSON Schema of experiment files (for editors: taplo, VS Code).
    Schema(SchemaArgs),
    /// List the production presets, or print one with the source of each value.
    Presets(PresetsArgs),
    /// Print each strategy's resolved client policy: every key with its value and where the
    /// value came from (the strategy, its preset, `[client]` or the default).
    Explain(ExplainArgs),
    /// Run the validation suite (experiments/validation/) and write VALIDATION.md: every
    /// model against theory and the published studies. Exits with 1 if a check fails.
    Validate(ValidateArgs),
    /// Infer a client's retry strategy from a recorded attempt log (the requests.csv of
    /// `serve`, or a CSV of time, operation id and status): its attempt limit, backoff kind,
    /// base, cap and multiplier by maximum likelihood, and its treatment of Retry-After;
    /// print the `[[strategies]]` block. Exit code 1 when the log cannot decide.
    Fit(FitArgs),
    /// Read a production config file (an Envoy route, an Istio VirtualService, a Linkerd
    /// ServiceProfile, ...) and print its `[[strategies]]` block, every library default it
    /// applies and every field it ignores as `#` comments above it (docs/config-files.md).
    Import(ImportArgs),
    /// Write an experiment's strategy (its `[client]` keys and preset folded in) in a
    /// production config format; exit code 2 when the format cannot express it, unless
    /// --lossy, which says on stderr what it dropped (docs/config-files.md).
    Export(ExportArgs),
    /// Play the file's `[server]` as a real HTTP/1.1 server on the loopback, in wall-clock
    /// time, for testing a real client; write requests.csv, summary.csv and timeseries.csv
    /// when it stops (--for, SIGINT or SIGTERM).
    Serve(ServeArgs),
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The file's format: envoy, istio, linkerd, ... (docs/config-files.md lists them).
    pub kind: String,
    /// The production config file (YAML, JSON or INI, as the format is).
    pub file: PathBuf,
    /// The printed strategy's name [default: the file's name without its extension].
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The format to write: envoy, istio, linkerd, ...
    pub kind: String,
    /// The experiment file (TOML) that defines the strategy.
    pub file: PathBuf,
    /// The strategy to export, by name.
    #[arg(long, value_name = "NAME")]
    pub strategy: String,
    /// Write what the format can express and list on stderr what it dropped, instead of
    /// refusing the strategy.
    #[arg(long)]
    pub lossy: bool,
    /// Write the file here (atomically) instead of printing it.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct FitArgs {
    /// The attempt log (CSV with a header row).
    pub log: PathBuf,
    /// `serve`: the requests.csv of `retrysim serve` (arrival_s, op_id, status, answered_s,
    /// retry_after); `csv`: columns time, op, status.
    #[arg(long, value_name = "FORMAT", default_value = "csv", value_parser = ["serve", "csv"])]
    pub format: String,
    /// The log's column names, as field=header pairs: time, op, status, duration (`a+b` sums
    /// columns) or answered (when the answer left), retry_after. Example: --columns
    /// time=ts,op=request_id,status=code
    #[arg(long, value_name = "FIELD=HEADER,...")]
    pub columns: Option<String>,
    /// The unit of numeric times (RFC 3339 times are read as such).
    #[arg(long, value_name = "UNIT", default_value = "s", value_parser = ["s", "ms", "us"])]
    pub time_unit: String,
    /// The unit of the duration column(s) [default: the time unit].
    #[arg(long, value_name = "UNIT", value_parser = ["s", "ms", "us"])]
    pub duration_unit: Option<String>,
    /// The name of the printed strategy.
    #[arg(long, value_name = "NAME", default_value = "fitted")]
    pub name: String,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The experiment file (TOML); its `[server]` (kind "queue") is served.
    pub file: PathBuf,
    /// The loopback address to listen on; port 0 picks a free port (the address is printed).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Output folder [default: results/NAME-serve/, where NAME is the experiment's name].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Stop after this long ("30s", "2m"); without it, serve until SIGINT or SIGTERM.
    #[arg(long = "for", value_name = "DURATION")]
    pub run_for: Option<String>,
    /// Send Retry-After as an HTTP-date instead of seconds.
    #[arg(long)]
    pub retry_after_date: bool,
    /// Override a key of the file, as for `run`; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Master seed, overriding the file's `seed`: serve draws service times and errors as
    /// run 1 of `retrysim run` does.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Print nothing but the address and errors.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Write DIR/VALIDATION.md [default: the current folder, the repository root].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run only this check (the file stem in experiments/validation/); repeatable. The file
    /// written then holds only those checks.
    #[arg(long = "check", value_name = "ID")]
    pub checks: Vec<String>,
    /// The suite's folder [default: experiments/validation].
    #[arg(long, value_name = "DIR", hide = true)]
    pub suite: Option<PathBuf>,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Print the key reference of docs/experiment-files.md (Markdown) instead of the JSON
    /// Schema.
    #[arg(long, conflicts_with = "outputs")]
    pub markdown: bool,
    /// Print the column reference of docs/outputs.md (Markdown): every column of runs.csv,
    /// summary.csv and timeseries.csv, and every field of manifest.json.
    #[arg(long)]
    pub outputs: bool,
}

#[derive(Debug, Args)]
pub struct PresetsArgs {
    /// The preset to print; without it, list them all.
    pub name: Option<String>,
}

/// Overrides shared by `run` and `check`.
#[derive(Debug, Args)]
pub struct OverrideArgs {
    /// Override a key of the file: a dotted path such as `server.concurrency=200`,
    /// `client.timeout=2s`, `strategies.NAME.backoff.base=50ms` (one strategy) or
    /// `strategies.*.max_attempts=3` (every strategy). Repeatable; a later one wins. VALUE is
    /// read as TOML, or as a string when it is not TOML.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Replications per (point, strategy), overriding the file's `runs`.
    #[arg(long, value_name = "N")]
    pub runs: Option<u32>,
    /// Master seed, overriding the file's `seed`.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

/// `--strategies`, shared by `run`, `check`, `plot` and `explain`.
#[derive(Debug, Args, Default)]
pub struct StrategiesArgs {
    /// Only these strategies (comma-separated names): run, checked, plotted or explained.
    /// Each strategy's rows are the same bytes as in a run of all of them.
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub strategies: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The experiment file (TOML).
    pub file: PathBuf,
    /// Only this strategy.
    #[arg(long, value_name = "NAME")]
    pub strategy: Option<String>,
    #[command(flatten)]
    pub overrides: OverrideArgs,
    #[command(flatten)]
    pub only: StrategiesArgs,
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
    #[command(flatten)]
    pub only: StrategiesArgs,
    /// Worker threads [default: one per core]. Results do not depend on it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Run only part I of N of the cells (for a cluster); join the parts with `merge`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Skip the run when DIR already holds the complete result of this experiment (same file,
    /// changes, shard and version); run only the missing cells when it holds a partial one
    /// (a run stopped by a signal); otherwise run it all.
    #[arg(long)]
    pub resume: bool,
    /// Print events, events per second, wall time and peak memory when done.
    #[arg(long)]
    pub stats: bool,
    /// Print nothing but errors (no progress, no file list).
    #[arg(long, short)]
    pub quiet: bool,
    /// Seconds between progress lines when stderr is not a terminal.
    #[arg(long, value_name = "S", default_value_t = 5.0, hide = true)]
    pub progress_interval: f64,
    #[command(flatten)]
    pub rank: RankArgs,
}

/// Ranking the points of a sweep and the verdict's reference point, shared by `run` and
/// `plot`.
#[derive(Debug, Args, Default)]
pub struct RankArgs {
    /// The verdict's reference point (report.html and the end-of-run text): a swept key and
    /// one of its values, e.g. `client.timeout=1s`; repeatable, one per key [default: the
    /// file's `[output] reference`, else the first point].
    #[arg(long = "reference", value_name = "KEY=VALUE")]
    pub reference: Vec<String>,
    /// List the (point, strategy) rows best first by this metric (lower is better; success
    /// rates higher), with their 95 % intervals.
    #[arg(long, value_name = "METRIC")]
    pub rank: Option<String>,
    /// Keep only the rows that satisfy "METRIC OP VALUE" (OP one of <=, <, >=, >); repeatable.
    /// The verdict then says where each strategy fails them.
    #[arg(long = "where", value_name = "CONSTRAINT")]
    pub constraints: Vec<String>,
}

#[derive(Debug, Args)]
pub struct PlotArgs {
    /// A result folder written by `retrysim run` (or `merge`).
    pub dir: PathBuf,
    #[command(flatten)]
    pub rank: RankArgs,
    #[command(flatten)]
    pub only: StrategiesArgs,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct TuneArgs {
    /// The experiment file (TOML), with a `[tune]` section.
    pub file: PathBuf,
    /// Output folder [default: results/NAME-tune/, where NAME is the experiment's name].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Overrides, as for `run`; `--runs` sets the confirmation's runs (at least 10) unless
    /// `tune.confirm_runs` does, `--seed` the workloads' and the design's seed.
    #[command(flatten)]
    pub overrides: OverrideArgs,
    /// Worker threads [default: one per core]. Results do not depend on it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Print nothing but errors (no progress, no summary).
    #[arg(long, short)]
    pub quiet: bool,
    /// Seconds between progress lines when stderr is not a terminal.
    #[arg(long, value_name = "S", default_value_t = 5.0, hide = true)]
    pub progress_interval: f64,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The experiment file (TOML).
    pub file: PathBuf,
    #[command(flatten)]
    pub overrides: OverrideArgs,
    #[command(flatten)]
    pub only: StrategiesArgs,
    /// Worker threads the run would use (for the memory estimate) [default: one per core].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Say what part I of N of the cells holds (as `run --shard I/N` would run).
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Where to write the merged files.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The shard folders, in any order.
    #[arg(value_name = "SHARD_DIR", required = true)]
    pub shards: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct SlurmArgs {
    /// The experiment file (TOML).
    pub file: PathBuf,
    /// Array tasks: each runs 1/N of the (point, strategy) cells, as `run --shard I/N`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub shards: u32,
    /// Folder for array.sbatch and merge.sbatch, the shard folders (shard-I), the jobs' logs
    /// (logs/) and the merged result. Every node must see it at this path.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Slurm partition (sbatch --partition) [default: the cluster's default].
    #[arg(long, value_name = "P")]
    pub partition: Option<String>,
    /// Time limit of each task and of the merge (sbatch --time: MINUTES, HH:MM:SS,
    /// DAYS-HH:MM:SS) [default: the partition's].
    #[arg(long, value_name = "T")]
    pub time: Option<String>,
    /// CPUs per task (sbatch --cpus-per-task); each task runs that many threads [default: 1].
    #[arg(long, value_name = "C", value_parser = clap::value_parser!(u16).range(1..))]
    pub cpus_per_task: Option<u16>,
    #[command(flatten)]
    pub overrides: OverrideArgs,
    /// Submit both with sbatch (the merge after every task succeeds) and print the job ids.
    #[arg(long)]
    pub submit: bool,
}
