//! `retrysim fit`: infer a client's retry strategy from a recorded attempt log (the
//! `requests.csv` of `retrysim serve`, or any CSV of time, operation id and status, as an
//! access log exported to CSV gives).
//!
//! The steps, each in its own file: [`log`] reads the rows into operations; the delays before
//! each retry are measured (from the previous answer when the log has durations); [`kinds`]
//! gives each backoff kind's distribution of those delays; [`estimate`] fits every kind by
//! maximum likelihood and ranks them by BIC, with a Kolmogorov-Smirnov test of the best; the
//! attempt limit and the treatment of Retry-After are read off the operations; [`strategy`]
//! writes the result as a `[[strategies]]` block. Data that cannot decide (too few retries, no
//! kind that fits, two kinds as good as each other) is reported as such and no block is
//! printed.

pub mod estimate;
pub mod kinds;
pub mod log;
pub mod strategy;

pub use estimate::{FitReport, KindFit, Limit, RetryAfterFit, RetryAfterMode, Verdict, fit};
pub use log::{AttemptLog, Columns};

use std::path::PathBuf;

/// Bad input to `fit` (exit code 2), each naming what is wrong and how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum FitError {
    /// The log could not be read (missing file, broken CSV).
    #[error("{}: {reason}", path.display())]
    Read { path: PathBuf, reason: String },
    /// A column the chosen format needs is not in the header.
    #[error(
        "{}: no column {column:?} (the header has: {}); name the log's columns with --columns time=...,op=...,status=...",
        path.display(), present.join(", ")
    )]
    MissingColumn { path: PathBuf, column: String, present: Vec<String> },
    /// A value that does not parse.
    #[error("{} line {line}: {column} = {value:?} is not {expected}", path.display())]
    BadValue { path: PathBuf, line: usize, column: String, value: String, expected: String },
    /// A `--columns` entry that is not `field=header`.
    #[error("--columns {pair}: {reason}")]
    ColumnsFlag { pair: String, reason: String },
    /// No operation in the log has a second attempt: nothing to fit.
    #[error(
        "{}: no operation has a second attempt ({operations} operations, {rows} rows{}); fit needs a log in which the client retried: record it during a fault (see docs/real-client.md)",
        path.display(),
        if *without_op > 0 { format!(", {without_op} without an operation id") } else { String::new() }
    )]
    NoRetries { path: PathBuf, operations: usize, rows: usize, without_op: usize },
}
