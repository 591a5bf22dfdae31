//! What can go wrong while reading a result folder or drawing its report.

use crate::metrics::constraint::ConstraintError;
use crate::results::WriteError;
use std::path::PathBuf;

/// An error of the report layer. Every message names the file it concerns and says what to
/// do about it.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The folder has no `summary.csv`: it is not the output of `retrysim run`.
    #[error(
        "{} is not a retrysim result folder: {missing} is missing (give the folder that \
         `retrysim run FILE --out DIR` wrote, the one holding summary.csv and runs.csv)",
        dir.display()
    )]
    NotAResultFolder {
        /// The folder that was given.
        dir: PathBuf,
        /// The file that should be there.
        missing: &'static str,
    },
    /// A file exists but cannot be read.
    #[error("cannot read {}: {source} (check that it exists and is readable)", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A CSV file is malformed (ragged rows, bad quoting, not UTF-8).
    #[error("{}: line {line}: {message} (the file is damaged: re-run `retrysim run` to write it again)", path.display())]
    Csv {
        /// The file.
        path: PathBuf,
        /// 1-based line number (0 when unknown).
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// A column the report needs is not in a CSV file's header.
    #[error(
        "{}: no column `{column}` in the header (the file was not written by this version of \
         retrysim, or was edited: re-run `retrysim run`)",
        path.display()
    )]
    MissingColumn {
        /// The file.
        path: PathBuf,
        /// The column that is missing.
        column: String,
    },
    /// A cell that should hold a number does not.
    #[error("{}: line {line}, column `{column}`: `{value}` is not a number (expected a number or an empty cell)", path.display())]
    BadNumber {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// The column's name.
        column: String,
        /// The cell as written.
        value: String,
    },
    /// `manifest.json` is not valid JSON or lacks a field.
    #[error("{}: {message} (the manifest is damaged: re-run `retrysim run` to write it again)", path.display())]
    Manifest {
        /// The manifest's path.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The files of the folder disagree with each other (e.g. runs.csv names a strategy that
    /// summary.csv does not have).
    #[error("{}: {message} (the folder mixes files of different runs: re-run `retrysim run` into an empty folder)", path.display())]
    Inconsistent {
        /// The file where the disagreement was found.
        path: PathBuf,
        /// What disagrees.
        message: String,
    },
    /// summary.csv has a header but no rows.
    #[error("{}: no rows (the run wrote no results: re-run `retrysim run`)", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// A metric named in `--rank` or `--where` is not a column of the results.
    #[error("unknown metric `{name}`{suggestion}; the metrics of these results are: {known}")]
    UnknownMetric {
        /// The name as given.
        name: String,
        /// `" (did you mean `x`?)"` or empty.
        suggestion: String,
        /// The metric columns, comma-separated.
        known: String,
    },
    /// A `--where` constraint cannot be parsed.
    #[error(transparent)]
    BadConstraint(#[from] ConstraintError),
    /// A `--reference` point is not one of the sweep's.
    #[error(
        "bad reference point `{text}`: {reason} (--reference KEY=VALUE names a swept key and one of its values)"
    )]
    BadReference {
        /// The reference as given.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A chart could not be drawn (a bug: the data was checked before drawing).
    #[error("cannot draw chart {name}: {message}")]
    Chart {
        /// The chart's file stem.
        name: String,
        /// What the drawing library said.
        message: String,
    },
    /// An output file could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
}
