//! The errors `retrysim` reports, and their exit codes.

use crate::experiment::ConfigError;
use crate::interrupt::Signal;
use crate::report::ReportError;
use crate::results::WriteError;
use crate::results::merge::MergeError;
use crate::slurm::SlurmError;
use crate::validation::ValidationError;

/// Anything that stops a command.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input (exit code 2): the experiment file, an override or a flag.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A production config file that cannot be read, or a strategy its format cannot express
    /// without `--lossy` (exit code 2; `retrysim import`, `retrysim export`).
    #[error(transparent)]
    Interop(#[from] crate::interop::InteropError),
    /// A bad flag value (exit code 2), e.g. `--shard 4/3`.
    #[error("{flag}: {reason}")]
    Flag { flag: String, reason: String },
    /// An output could not be written (exit code 1).
    #[error(transparent)]
    Write(#[from] WriteError),
    /// Shards that cannot be merged (exit code 2, or 1 when a file could not be read).
    #[error(transparent)]
    Merge(#[from] MergeError),
    /// The report could not be read or drawn (exit code 2 for a folder or flag that is not
    /// right, 1 when a file could not be written).
    #[error(transparent)]
    Report(#[from] ReportError),
    /// The Slurm scripts could not be written or submitted (exit code 2 for a bad flag, 1
    /// otherwise).
    #[error(transparent)]
    Slurm(#[from] SlurmError),
    /// `retrysim tune` found no candidate that satisfies every constraint (exit code 1); its
    /// files are written.
    #[error(
        "no candidate satisfies every constraint (the summary says which constraint binds; every candidate is in {})",
        csv.display()
    )]
    NothingFeasible { csv: std::path::PathBuf },
    /// The validation suite could not run (exit code 2 for an invalid experiment file or an
    /// unknown `--check`, 1 for a suite file that lacks what its check reads).
    #[error(transparent)]
    Validation(#[from] ValidationError),

    /// Bad input to `fit`: an unreadable log, a missing column, a log without retries.
    #[error(transparent)]
    Fit(#[from] crate::fit::FitError),

    /// `fit` read the log but it does not decide a strategy (said above, with why).
    #[error("the log does not decide a strategy (see above); no [[strategies]] block printed")]
    Undecided,
    /// The validation suite ran and some checks failed (exit code 1); VALIDATION.md says which.
    #[error("{failed} of {total} validation check(s) failed: {}; see {}", names.join(", "), path.display())]
    ChecksFailed { failed: usize, total: usize, names: Vec<String>, path: std::path::PathBuf },
    /// A signal (Ctrl-C's SIGINT, SIGTERM, SIGHUP) stopped the verb (exit code 128 + its
    /// number: 130, 143, 129). `done` names the folder when its output was already complete.
    #[error("{}", interrupted(*signal, done.as_deref()))]
    Interrupted { signal: Signal, done: Option<std::path::PathBuf> },
    /// A signal stopped `run` after some cells were finished: `dir` holds those cells as a
    /// partial result, which `run --resume` completes (exit code 128 + the signal's number).
    #[error(
        "interrupted by {signal}: {dir} holds a partial result, {done} of {total} cell(s) finished (temporary files removed); `retrysim run` with the same arguments and --resume runs the other {}",
        total - done
    )]
    InterruptedPartial { signal: Signal, dir: std::path::PathBuf, done: usize, total: usize },
    /// `retrysim serve` could not run (exit code 2 when it cannot listen on the address given,
    /// 1 otherwise).
    #[error(transparent)]
    Serve(#[from] crate::serve::ServeError),
}

fn interrupted(signal: Signal, done: Option<&std::path::Path>) -> String {
    match done {
        None => format!(
            "interrupted by {signal}: no output was written, temporary files removed (files from an earlier run, if any, are untouched)"
        ),
        Some(dir) => format!(
            "interrupted by {signal} after the output in {} was complete (temporary files removed)",
            dir.display()
        ),
    }
}

impl Error {
    /// 2 for bad input, 128 + the signal's number when a signal stopped the verb, 1 for
    /// everything else (DESIGN §8).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Config(_) | Error::Flag { .. } | Error::Fit(_) | Error::Interop(_) => 2,
            Error::Undecided => 1,
            Error::Merge(e) => e.exit_code(),
            Error::Slurm(e) => e.exit_code(),
            Error::Report(ReportError::Write(_) | ReportError::Chart { .. }) => 1,
            Error::Report(_) => 2,
            Error::Validation(ValidationError::Config(_) | ValidationError::UnknownCheck(..)) => 2,
            Error::Validation(_) | Error::ChecksFailed { .. } => 1,
            Error::Interrupted { signal, .. } | Error::InterruptedPartial { signal, .. } => {
                signal.exit_code()
            }
            Error::Serve(crate::serve::ServeError::Listen { .. }) => 2,
            Error::Write(_) | Error::NothingFeasible { .. } | Error::Serve(_) => 1,
        }
    }
}
