//! The errors `retrysim` reports, and their exit codes.

use crate::experiment::ConfigError;
use crate::report::WriteError;

/// Anything that stops a command.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input (exit code 2): the experiment file, an override or a flag.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// An output could not be written (exit code 1).
    #[error(transparent)]
    Write(#[from] WriteError),
    /// The worker threads could not be started (exit code 1).
    #[error("cannot start {threads} worker threads: {message}")]
    Threads { threads: usize, message: String },
}

impl Error {
    /// 2 for bad input, 1 for everything else (DESIGN §8).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Config(_) => 2,
            Error::Write(_) | Error::Threads { .. } => 1,
        }
    }
}
