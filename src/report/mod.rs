//! Outputs. Exporters turn streamed results into rows ([`Exporter`]: runs.csv, summary.csv,
//! timeseries.csv); [`writer::ResultWriter`] is the one place that writes them, to temporary
//! files renamed into place at the end, with `manifest.json` last; [`merge`] joins shards.
//!
//! The plotted report reads only the files of a finished run ([`table::ResultSet`]), so
//! `retrysim run` and `retrysim plot DIR` draw the same charts from the same bytes:
//! [`render_report`] writes the charts and `report.html`, [`comparison`] and [`rank`] give
//! the text printed at the end of a run.

pub mod chart;
pub mod compare;
mod csv;
mod error;
pub mod format;
pub mod html;
pub mod manifest;
pub mod merge;
pub mod metric_info;
pub mod paths;
mod render;
pub mod table;
pub mod writer;

pub use self::compare::{CompareOptions, Constraint, Op, comparison, rank};
pub use self::csv::{RunsCsv, SummaryCsv, TimeseriesCsv};
pub use self::error::ReportError;
pub use self::render::{ReportOptions, comparison_from_dir, render_report};
pub use self::table::ResultSet;

use crate::experiment::Experiment;
use crate::metrics::RunMetrics;
use crate::sweep::Cell;
use std::io::Write;
use std::path::{Path, PathBuf};

/// An IO failure, with the path it concerns.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {source}")]
pub struct WriteError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl WriteError {
    pub fn at(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + '_ {
        move |source| WriteError { path: path.to_path_buf(), source }
    }
}

/// Turns the results of a run, as they stream in, into the rows of one CSV file.
pub trait Exporter {
    /// The file's name inside the output folder.
    fn file_name(&self) -> &'static str;
    /// The header row.
    fn header(&self, exp: &Experiment) -> Vec<String>;
    /// Rows for run `run` of `cell` (most exporters only remember it here).
    fn run_rows(
        &mut self,
        exp: &Experiment,
        cell: Cell,
        run: u32,
        seed: u64,
        m: &RunMetrics,
    ) -> Vec<Vec<String>>;
    /// Rows once every run of `cell` is in.
    fn cell_rows(&mut self, _exp: &Experiment, _cell: Cell) -> Vec<Vec<String>> {
        Vec::new()
    }
}

/// The exporters of `retrysim run`, in writing order.
pub fn exporters(exp: &Experiment) -> Vec<Box<dyn Exporter>> {
    let mut all: Vec<Box<dyn Exporter>> = vec![Box::new(RunsCsv), Box::<SummaryCsv>::default()];
    if exp.timeseries {
        all.push(Box::<TimeseriesCsv>::default());
    }
    all
}

/// Writes `bytes` to a temporary file next to `path`, flushes it to disk, then renames it over
/// `path`: a reader sees the old file or the new one, never half of one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let mut tmp = temporary_next_to(path)?;
    tmp.write_all(bytes).map_err(WriteError::at(path))?;
    persist(tmp, path)
}

/// A temporary file in `path`'s folder (so that the final rename stays on one file system),
/// named `.retrysim-*.tmp`, deleted if dropped before [`persist`].
pub fn temporary_next_to(path: &Path) -> Result<tempfile::NamedTempFile, WriteError> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut builder = tempfile::Builder::new();
    builder.prefix(".retrysim-").suffix(".tmp");
    // Temporary files are private (0600) by default; an output is an ordinary file, readable
    // as the umask allows.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    builder.tempfile_in(dir).map_err(WriteError::at(path))
}

/// Flushes `tmp` to disk and renames it to `path`.
pub fn persist(tmp: tempfile::NamedTempFile, path: &Path) -> Result<(), WriteError> {
    tmp.as_file().sync_all().map_err(WriteError::at(path))?;
    tmp.persist(path).map_err(|e| WriteError { path: path.to_path_buf(), source: e.error })?;
    Ok(())
}
