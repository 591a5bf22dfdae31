//! The entry points of the plotted report: [`render_report`] writes every chart and
//! `report.html` for a result folder; [`comparison_from_dir`] gives the end-of-run text.

use super::compare::{CompareOptions, compare, comparison};
use super::table::ResultSet;
use super::verdict::{VerdictOptions, verdict};
use super::{ReportError, ReportOptions, chart, html, paths};
use crate::results::{WriteError, write_atomically};
use std::path::{Path, PathBuf};

/// Reads the result folder `dir` and writes, atomically, every chart as SVG and PNG into
/// `dir/charts/` and the page `dir/report.html` (names in [`paths`]). Returns the paths
/// written, charts first. The same files give byte-identical outputs.
pub fn render_report(dir: &Path, opts: &ReportOptions) -> Result<Vec<PathBuf>, ReportError> {
    let set = ResultSet::read_dir(dir)?;
    render_set(&set, dir, opts)
}

/// Writes the charts and report of `set` into `out` (see [`render_report`]).
pub fn render_set(set: &ResultSet, out: &Path, opts: &ReportOptions) -> Result<Vec<PathBuf>, ReportError> {
    // A bad reference point is refused before anything is written.
    let verdict = verdict(set, &opts.verdict)?;
    let charts = chart::plan(set, opts);
    let charts_dir = out.join(paths::CHARTS_DIR);
    std::fs::create_dir_all(&charts_dir).map_err(|source| WriteError { path: charts_dir.clone(), source })?;
    let mut written = Vec::new();
    let mut inline = Vec::with_capacity(charts.len());
    for c in &charts {
        let svg = c.svg()?;
        let svg_path = paths::chart_file(out, &c.stem, "svg");
        write_atomically(&svg_path, svg.as_bytes())?;
        written.push(svg_path);
        let png_path = paths::chart_file(out, &c.stem, "png");
        write_atomically(&png_path, &c.png()?)?;
        written.push(png_path);
        inline.push((c, svg));
    }
    let table = compare(set, &opts.compare);
    let page = html::page(set, &inline, &table, &verdict);
    let report = paths::report_file(out);
    write_atomically(&report, page.as_bytes())?;
    remove_stale_charts(&charts_dir, &written)?;
    written.push(report);
    Ok(written)
}

/// Removes the chart files (`.svg`, `.png`) of `charts_dir` that are not in `written`: the
/// charts of an earlier run into the same folder that this one did not draw, which the page
/// no longer shows. Runs after every new file is in place, so an interruption leaves a
/// complete new report, at worst with an old chart beside it; each removal is atomic.
fn remove_stale_charts(charts_dir: &Path, written: &[PathBuf]) -> Result<(), ReportError> {
    let read_err = |source| WriteError { path: charts_dir.to_path_buf(), source };
    let mut stale = Vec::new();
    for entry in std::fs::read_dir(charts_dir).map_err(read_err)? {
        let path = entry.map_err(read_err)?.path();
        let chart = path.extension().is_some_and(|e| e == "svg" || e == "png");
        if chart && path.is_file() && !written.contains(&path) {
            stale.push(path);
        }
    }
    // Sorted, so that a failure names the same file every time.
    stale.sort();
    for path in stale {
        std::fs::remove_file(&path).map_err(|source| WriteError { path: path.clone(), source })?;
    }
    Ok(())
}

/// The end-of-run text of the result folder `dir`: the verdict's sentences, then the
/// comparison (see [`verdict`] and [`comparison`]).
pub fn comparison_from_dir(
    dir: &Path,
    opts: &CompareOptions,
    verdict_opts: &VerdictOptions,
) -> Result<String, ReportError> {
    let set = ResultSet::read_dir(dir)?;
    Ok(format!("{}\n{}", verdict(&set, verdict_opts)?.text(), comparison(&set, opts)))
}
