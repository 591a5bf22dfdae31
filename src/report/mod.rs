//! Outputs: exporters that turn results into bytes, and the one place that writes files
//! (atomically: a temporary file in the same folder, then a rename).
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
pub mod interval;
pub mod manifest;
pub mod metric_info;
pub mod paths;
mod render;
pub mod table;

pub use self::compare::{CompareOptions, Constraint, Op, comparison, rank};
pub use self::csv::{RunsCsv, SummaryCsv};
pub use self::error::ReportError;
pub use self::render::{ReportOptions, comparison_from_dir, render_report};
pub use self::table::ResultSet;

use crate::experiment::Experiment;
use crate::sweep::Results;
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

/// Turns results into the contents of one output file.
pub trait Exporter {
    /// The file's name inside the output folder.
    fn file_name(&self) -> &'static str;
    fn render(&self, exp: &Experiment, results: &Results) -> Vec<u8>;
}

/// The exporters of `retrysim run`, in writing order.
pub fn exporters() -> Vec<Box<dyn Exporter>> {
    vec![Box::new(RunsCsv), Box::new(SummaryCsv)]
}

/// Renders every exporter, then writes each file atomically into `dir` (created if needed).
/// Returns the paths written.
pub fn write_all(dir: &Path, exp: &Experiment, results: &Results) -> Result<Vec<PathBuf>, WriteError> {
    std::fs::create_dir_all(dir).map_err(|source| WriteError { path: dir.to_path_buf(), source })?;
    exporters()
        .iter()
        .map(|e| {
            let path = dir.join(e.file_name());
            write_atomically(&path, &e.render(exp, results))?;
            Ok(path)
        })
        .collect()
}

/// Writes `bytes` to a temporary file next to `path`, flushes it to disk, then renames it over
/// `path`: a reader sees the old file or the new one, never half of one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let err = |source| WriteError { path: path.to_path_buf(), source };
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut builder = tempfile::Builder::new();
    builder.prefix(".retrysim-").suffix(".tmp");
    // Temporary files are private (0600) by default; an output is an ordinary file, readable
    // as the umask allows.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut tmp = builder.tempfile_in(dir).map_err(err)?;
    tmp.write_all(bytes).map_err(err)?;
    tmp.as_file().sync_all().map_err(err)?;
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}
