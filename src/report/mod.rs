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
pub mod table;
pub mod text;
pub mod verdict;

pub use self::compare::{CompareOptions, comparison, rank};
pub use self::error::ReportError;
pub use self::options::ReportOptions;
pub use self::render::{comparison_from_dir, render_report};
pub use self::table::ResultSet;
pub use self::verdict::{Verdict, VerdictOptions, verdict};
