//! Presenting results: reads the files of a finished result folder ([`table::ResultSet`],
//! streaming runs.csv into bounded per-cell summaries) and draws from them, so `retrysim run`
//! and `retrysim plot DIR` draw the same charts from the same bytes: [`render_report`] writes
//! the charts and `report.html`, [`comparison`] and [`rank`] give the text printed at the end of
//! a run. Writing the result files is [`crate::results`]'s.

pub mod chart;
pub mod compare;
mod error;
pub mod format;
pub mod html;
mod options;
pub mod outputs_doc;
pub mod paths;
mod render;
pub mod run_distribution;
mod subset;
pub mod table;
pub mod text;
pub mod verdict;

pub use self::compare::{CompareOptions, comparison, rank};
pub use self::error::ReportError;
pub use self::options::ReportOptions;
pub use self::render::{comparison_from_dir, render_report, render_set};
pub use self::table::ResultSet;
pub use self::verdict::{Verdict, VerdictOptions, verdict};

/// "Partial result: ..." for a folder that a signal stopped (its manifest says `partial`), with
/// how many cells it holds and how to complete it; `None` for a complete one.
pub fn partial_line(m: &crate::results::manifest::Manifest) -> Option<String> {
    m.partial.then(|| {
        let total = m.cells_total.map_or_else(|| "?".to_owned(), |t| t.to_string());
        format!(
            "Partial result: {} of {total} cells finished before the run was stopped; `retrysim run` with the same arguments and --resume runs the rest.",
            m.cells_done.len()
        )
    })
}
