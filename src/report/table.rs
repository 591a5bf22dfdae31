//! The files of a finished run, parsed into typed tables whose size does not grow with the
//! number of runs: summary.csv and timeseries.csv (one row per cell, or per cell and time
//! bucket) are held as they are; runs.csv is streamed into one [`RunCell`] per cell (counts,
//! and the [`RunDistribution`] of each metric of [`DISTRIBUTED_METRICS`]).
//!
//! The report reads nothing else: `retrysim run` and `retrysim plot DIR` both draw from a
//! [`ResultSet`] read from the folder, so they give byte-identical charts. Columns are found
//! by name, never by position: metrics added later show up without a change here.

use super::ReportError;
use super::format::with_interval;
use super::run_distribution::RunDistribution;
use crate::results::manifest::{FaultInfo as Fault, Manifest};
use crate::stats::Estimate;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// File names inside a result folder (DESIGN §6).
pub const SUMMARY_CSV: &str = "summary.csv";
/// One row per (point, strategy, run).
pub const RUNS_CSV: &str = "runs.csv";
/// One row per (point, strategy, time bucket); optional.
pub const TIMESERIES_CSV: &str = "timeseries.csv";
/// What the folder was made from; optional (older folders lack it).
pub const MANIFEST_JSON: &str = "manifest.json";

/// The metric whose empty cells mean "never recovered" (docs/outputs.md).
const RECOVERY: &str = "recovery_time_s";
/// The metric that tells which runs were measurable at all.
const METASTABLE: &str = "metastable";

/// The per-run metrics whose distribution over runs the report draws (the latency chart).
pub const DISTRIBUTED_METRICS: [&str; 2] = ["latency_p99_s", "latency_p50_s"];

/// The small contents of a result folder's files; runs.csv is streamed, never held.
#[derive(Clone, Debug, Default)]
struct ResultFiles {
    summary: Vec<u8>,
    timeseries: Option<Vec<u8>>,
    manifest: Option<Vec<u8>>,
}

/// A sweep point: the values of the swept keys, plus what the manifest says about it.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// CSV cells of the swept keys, in key order (empty without a sweep).
    pub values: Vec<String>,
    /// The server's nominal capacity in requests per second, when known.
    pub capacity_rps: Option<f64>,
    /// The server's workers, when known (a capacity fault leaves `floor(factor x workers)`).
    pub concurrency: Option<u32>,
    /// Fault windows of this point.
    pub faults: Vec<Fault>,
}

/// One row of summary.csv.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryRow {
    /// Index into [`ResultSet::points`].
    pub point: usize,
    /// Index into [`ResultSet::strategies`].
    pub strategy: usize,
    /// Replications.
    pub runs: u64,
    /// Mean per metric, indexed like [`ResultSet::metrics`].
    pub mean: Vec<Option<f64>>,
    /// Sample sd per metric.
    pub sd: Vec<Option<f64>>,
}

/// What runs.csv says about one (point, strategy), in memory bounded whatever its runs.
#[derive(Clone, Debug, Default)]
pub struct RunCell {
    /// Rows of runs.csv.
    pub rows: u64,
    /// Rows with a value, per metric (indexed like [`ResultSet::metrics`]).
    pub with_value: Vec<u64>,
    /// The distribution over runs of each of [`DISTRIBUTED_METRICS`] (in that order).
    pub distributions: Vec<RunDistribution>,
}

/// timeseries.csv: per (point, strategy), one row per time bucket.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeSeries {
    /// Bucket width in seconds.
    pub bucket_s: f64,
    /// Series names (`offered`, `successes`, ...), in column order.
    pub series: Vec<String>,
    /// Rows in file order.
    pub rows: Vec<TimeRow>,
}

/// One bucket of one (point, strategy).
#[derive(Clone, Debug, PartialEq)]
pub struct TimeRow {
    /// Index into [`ResultSet::points`].
    pub point: usize,
    /// Index into [`ResultSet::strategies`].
    pub strategy: usize,
    /// Bucket start in seconds.
    pub t_s: f64,
    /// Mean over runs per series, indexed like [`TimeSeries::series`].
    pub mean: Vec<Option<f64>>,
}

impl TimeSeries {
    /// Index of a series by name.
    pub fn series_index(&self, name: &str) -> Option<usize> {
        self.series.iter().position(|s| s == name)
    }

    /// The rows of one (point, strategy), in time order.
    pub fn cell(&self, point: usize, strategy: usize) -> Vec<&TimeRow> {
        let mut rows: Vec<&TimeRow> =
            self.rows.iter().filter(|r| r.point == point && r.strategy == strategy).collect();
        rows.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
        rows
    }
}

/// Everything a report needs from a result folder.
#[derive(Clone, Debug)]
pub struct ResultSet {
    /// The folder the files came from (used in messages and the report).
    pub dir: PathBuf,
    /// The manifest; a default one when the folder has none.
    pub manifest: Manifest,
    /// Swept keys, in column order.
    pub sweep_keys: Vec<String>,
    /// Strategy names; a strategy's index fixes its colour in every chart.
    pub strategies: Vec<String>,
    /// Sweep points in summary order.
    pub points: Vec<Point>,
    /// Metric names, in summary.csv column order.
    pub metrics: Vec<String>,
    /// summary.csv rows.
    pub summary: Vec<SummaryRow>,
    /// runs.csv, summarised per (point, strategy).
    pub runs: BTreeMap<(usize, usize), RunCell>,
    /// timeseries.csv, when the folder has one.
    pub timeseries: Option<TimeSeries>,
}

/// A parsed CSV file: header and rows of cells, with the path for messages.
struct Csv {
    path: PathBuf,
    header: Vec<String>,
    /// (1-based line, cells).
    rows: Vec<(u64, Vec<String>)>,
}

impl Csv {
    fn parse(path: &Path, bytes: &[u8]) -> Result<Csv, ReportError> {
        let csv_err = |e: csv::Error| ReportError::Csv {
            path: path.to_path_buf(),
            line: e.position().map_or(0, |p| p.line()),
            message: e.to_string(),
        };
        let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(bytes);
        let header: Vec<String> = reader.headers().map_err(csv_err)?.iter().map(str::to_string).collect();
        if header.iter().all(|h| h.is_empty()) {
            return Err(ReportError::Csv {
                path: path.to_path_buf(),
                line: 1,
                message: "the file is empty: no header".into(),
            });
        }
        let mut rows = Vec::new();
        for record in reader.records() {
            let record = record.map_err(csv_err)?;
            let line = record.position().map_or(0, |p| p.line());
            rows.push((line, record.iter().map(str::to_string).collect()));
        }
        Ok(Csv { path: path.to_path_buf(), header, rows })
    }

    fn column(&self, name: &str) -> Result<usize, ReportError> {
        self.header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| ReportError::MissingColumn { path: self.path.clone(), column: name.to_string() })
    }

    fn number(&self, line: u64, col: usize, cell: &str) -> Result<Option<f64>, ReportError> {
        let t = cell.trim();
        if t.is_empty() {
            return Ok(None);
        }
        t.parse::<f64>().map(Some).map_err(|_| ReportError::BadNumber {
            path: self.path.clone(),
            line,
            column: self.header[col].clone(),
            value: cell.to_string(),
        })
    }

    fn integer(&self, line: u64, col: usize, cell: &str) -> Result<u64, ReportError> {
        cell.trim().parse::<u64>().map_err(|_| ReportError::BadNumber {
            path: self.path.clone(),
            line,
            column: self.header[col].clone(),
            value: cell.to_string(),
        })
    }

    /// Value columns after `first`: each name with its `_sd` partner when there is one.
    /// Returns (names, mean column, sd column).
    fn value_columns(&self, first: usize) -> Vec<(String, usize, Option<usize>)> {
        let names = &self.header[first..];
        let mut out = Vec::new();
        for (i, name) in names.iter().enumerate() {
            if let Some(base) = name.strip_suffix("_sd")
                && names.iter().any(|n| n == base)
            {
                continue;
            }
            let sd = names.iter().position(|n| *n == format!("{name}_sd")).map(|j| first + j);
            out.push((name.clone(), first + i, sd));
        }
        out
    }
}

impl ResultSet {
    /// Reads a result folder: summary.csv and runs.csv (required), timeseries.csv and
    /// manifest.json (optional).
    pub fn read_dir(dir: &Path) -> Result<ResultSet, ReportError> {
        if !dir.join(SUMMARY_CSV).is_file() {
            return Err(ReportError::NotAResultFolder { dir: dir.to_path_buf(), missing: SUMMARY_CSV });
        }
        if !dir.join(RUNS_CSV).is_file() {
            return Err(ReportError::NotAResultFolder { dir: dir.to_path_buf(), missing: RUNS_CSV });
        }
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path).map_err(|source| ReportError::Read { path, source })
        };
        let optional = |name: &str| -> Result<Option<Vec<u8>>, ReportError> {
            if dir.join(name).is_file() { read(name).map(Some) } else { Ok(None) }
        };
        let files = ResultFiles {
            summary: read(SUMMARY_CSV)?,
            timeseries: optional(TIMESERIES_CSV)?,
            manifest: optional(MANIFEST_JSON)?,
        };
        let runs_path = dir.join(RUNS_CSV);
        let runs = std::fs::File::open(&runs_path)
            .map_err(|source| ReportError::Read { path: runs_path.clone(), source })?;
        ResultSet::from_files(dir, &files, std::io::BufReader::with_capacity(1 << 16, runs))
    }

    /// Parses the files' contents, streaming `runs` (runs.csv); `dir` only names them in
    /// messages.
    fn from_files(
        dir: &Path,
        files: &ResultFiles,
        runs: impl std::io::Read,
    ) -> Result<ResultSet, ReportError> {
        let manifest = match &files.manifest {
            Some(bytes) => Manifest::parse(bytes)
                .map_err(|message| ReportError::Manifest { path: dir.join(MANIFEST_JSON), message })?,
            None => Manifest::default(),
        };
        let summary = Csv::parse(&dir.join(SUMMARY_CSV), &files.summary)?;
        let strategy_col = summary.column("strategy")?;
        let runs_col = summary.column("runs")?;
        let sweep_keys: Vec<String> = summary.header[..strategy_col].to_vec();
        if files.manifest.is_some() && manifest.sweep_keys != sweep_keys {
            return Err(ReportError::Inconsistent {
                path: summary.path.clone(),
                message: format!(
                    "the swept columns {:?} differ from manifest.json's sweep_keys {:?}",
                    sweep_keys, manifest.sweep_keys
                ),
            });
        }
        if summary.rows.is_empty() {
            return Err(ReportError::Empty { path: summary.path.clone() });
        }

        let mut set = ResultSet {
            dir: dir.to_path_buf(),
            sweep_keys,
            strategies: manifest.strategies.clone(),
            points: Vec::new(),
            metrics: Vec::new(),
            summary: Vec::new(),
            runs: BTreeMap::new(),
            timeseries: None,
            manifest,
        };
        let columns = summary.value_columns(runs_col + 1);
        set.metrics = columns.iter().map(|(n, _, _)| n.clone()).collect();
        let mut point_index: BTreeMap<Vec<String>, usize> = BTreeMap::new();
        for (line, cells) in &summary.rows {
            let values = cells[..strategy_col].to_vec();
            let point = match point_index.get(&values) {
                Some(&p) => p,
                None => {
                    let known = set.manifest.points.iter().find(|p| p.values == values);
                    set.points.push(Point {
                        values: values.clone(),
                        capacity_rps: known.and_then(|p| p.capacity_rps),
                        concurrency: known.and_then(|p| p.concurrency),
                        faults: known.map(|p| p.faults.clone()).unwrap_or_default(),
                    });
                    point_index.insert(values, set.points.len() - 1);
                    set.points.len() - 1
                }
            };
            let name = &cells[strategy_col];
            let strategy = match set.strategies.iter().position(|s| s == name) {
                Some(s) => s,
                None if files.manifest.is_none() => {
                    set.strategies.push(name.clone());
                    set.strategies.len() - 1
                }
                None => {
                    return Err(ReportError::Inconsistent {
                        path: summary.path.clone(),
                        message: format!("line {line}: strategy `{name}` is not in manifest.json"),
                    });
                }
            };
            let runs = summary.integer(*line, runs_col, &cells[runs_col])?;
            let mut mean = Vec::with_capacity(columns.len());
            let mut sd = Vec::with_capacity(columns.len());
            for (_, m, s) in &columns {
                mean.push(summary.number(*line, *m, &cells[*m])?);
                sd.push(match s {
                    Some(s) => summary.number(*line, *s, &cells[*s])?,
                    None => None,
                });
            }
            set.summary.push(SummaryRow { point, strategy, runs, mean, sd });
        }

        set.runs = set.summarise_runs(&dir.join(RUNS_CSV), runs, &point_index)?;

        if let Some(bytes) = &files.timeseries {
            let ts = Csv::parse(&dir.join(TIMESERIES_CSV), bytes)?;
            let t_col = ts.column("t_s")?;
            let series_cols = ts.value_columns(t_col + 1);
            let rows =
                set.parse_cells(&ts, "t_s", &point_index, |_, line, point, strategy, cells, csv| {
                    let t_s =
                        csv.number(line, t_col, &cells[t_col])?.ok_or_else(|| ReportError::BadNumber {
                            path: csv.path.clone(),
                            line,
                            column: "t_s".into(),
                            value: String::new(),
                        })?;
                    let mut mean = Vec::with_capacity(series_cols.len());
                    for (_, m, _) in &series_cols {
                        mean.push(csv.number(line, *m, &cells[*m])?);
                    }
                    Ok(TimeRow { point, strategy, t_s, mean })
                })?;
            let bucket_s = set.manifest.bucket_s.unwrap_or_else(|| {
                let mut ts: Vec<f64> = rows.iter().map(|r| r.t_s).collect();
                ts.sort_by(f64::total_cmp);
                ts.dedup();
                ts.windows(2).map(|w| w[1] - w[0]).find(|d| *d > 0.0).unwrap_or(1.0)
            });
            set.timeseries =
                Some(TimeSeries { bucket_s, series: series_cols.into_iter().map(|c| c.0).collect(), rows });
        }
        Ok(set)
    }

    /// Streams runs.csv into one [`RunCell`] per (point, strategy): each row is checked and
    /// counted, and dropped.
    fn summarise_runs(
        &self,
        path: &Path,
        runs: impl std::io::Read,
        points: &BTreeMap<Vec<String>, usize>,
    ) -> Result<BTreeMap<(usize, usize), RunCell>, ReportError> {
        let csv_err = |e: csv::Error| ReportError::Csv {
            path: path.to_path_buf(),
            line: e.position().map_or(0, |p| p.line()),
            message: e.to_string(),
        };
        let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(runs);
        let header: Vec<String> = reader.headers().map_err(csv_err)?.iter().map(str::to_string).collect();
        if header.iter().all(|h| h.is_empty()) {
            return Err(ReportError::Csv {
                path: path.to_path_buf(),
                line: 1,
                message: "the file is empty: no header".into(),
            });
        }
        // The checks and number parsing of the in-memory files, on a table with no rows.
        let csv = Csv { path: path.to_path_buf(), header, rows: Vec::new() };
        let strategy_col = self.check_cell_columns(&csv, "run")?;
        let run_col = csv.column("run")?;
        let metric_cols: Vec<Option<usize>> =
            self.metrics.iter().map(|m| csv.header.iter().position(|h| h == m)).collect();
        let distributed: Vec<Option<usize>> =
            DISTRIBUTED_METRICS.iter().map(|name| self.metric_index(name)).collect();
        let mut cells: BTreeMap<(usize, usize), RunCell> = BTreeMap::new();
        let mut record = csv::StringRecord::new();
        let mut key: Vec<String> = Vec::new();
        while reader.read_record(&mut record).map_err(csv_err)? {
            let line = record.position().map_or(0, |p| p.line());
            let row: Vec<&str> = record.iter().collect();
            key.clear();
            key.extend(row[..strategy_col].iter().map(|c| c.to_string()));
            let (point, strategy) = self.cell_of(&csv, line, points, &key, row[strategy_col])?;
            csv.integer(line, run_col, row[run_col])?;
            let cell = cells.entry((point, strategy)).or_insert_with(|| RunCell {
                rows: 0,
                with_value: vec![0; self.metrics.len()],
                distributions: vec![RunDistribution::default(); DISTRIBUTED_METRICS.len()],
            });
            cell.rows += 1;
            let mut values = Vec::with_capacity(metric_cols.len());
            for (m, col) in metric_cols.iter().enumerate() {
                let value = match col {
                    Some(c) => csv.number(line, *c, row[*c])?,
                    None => None,
                };
                cell.with_value[m] += value.is_some() as u64;
                values.push(value);
            }
            for (d, metric) in distributed.iter().enumerate() {
                if let Some(v) = metric.and_then(|m| values[m]) {
                    cell.distributions[d].push(v);
                }
            }
        }
        Ok(cells)
    }

    /// Checks that a per-cell file's swept columns are summary.csv's and that it has the
    /// column `after`; returns the strategy column.
    fn check_cell_columns(&self, csv: &Csv, after: &str) -> Result<usize, ReportError> {
        let strategy_col = csv.column("strategy")?;
        csv.column(after)?;
        if csv.header[..strategy_col] != self.sweep_keys[..] {
            return Err(ReportError::Inconsistent {
                path: csv.path.clone(),
                message: format!(
                    "the swept columns {:?} differ from summary.csv's {:?}",
                    &csv.header[..strategy_col],
                    self.sweep_keys
                ),
            });
        }
        Ok(strategy_col)
    }

    /// The (point, strategy) of a row of a per-cell file, which must be one of summary.csv's.
    fn cell_of(
        &self,
        csv: &Csv,
        line: u64,
        points: &BTreeMap<Vec<String>, usize>,
        values: &[String],
        name: &str,
    ) -> Result<(usize, usize), ReportError> {
        let point = *points.get(values).ok_or_else(|| ReportError::Inconsistent {
            path: csv.path.clone(),
            message: format!("line {line}: sweep point {values:?} is not in summary.csv"),
        })?;
        let strategy = self.strategy_index(name).ok_or_else(|| ReportError::Inconsistent {
            path: csv.path.clone(),
            message: format!("line {line}: strategy `{name}` is not in summary.csv"),
        })?;
        Ok((point, strategy))
    }

    /// Parses the rows of timeseries.csv: checks the swept columns and the strategy against
    /// summary.csv's, then lets `row` read the rest.
    fn parse_cells<T>(
        &self,
        csv: &Csv,
        after: &str,
        points: &BTreeMap<Vec<String>, usize>,
        row: impl Fn(&ResultSet, u64, usize, usize, &[String], &Csv) -> Result<T, ReportError>,
    ) -> Result<Vec<T>, ReportError> {
        let strategy_col = self.check_cell_columns(csv, after)?;
        let mut out = Vec::with_capacity(csv.rows.len());
        for (line, cells) in &csv.rows {
            let (point, strategy) =
                self.cell_of(csv, *line, points, &cells[..strategy_col], &cells[strategy_col])?;
            out.push(row(self, *line, point, strategy, cells, csv)?);
        }
        Ok(out)
    }

    /// The experiment's name: the manifest's, else the folder's name.
    pub fn name(&self) -> String {
        if !self.manifest.name.is_empty() {
            return self.manifest.name.clone();
        }
        self.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "results".into())
    }

    /// Index of a strategy by name.
    pub fn strategy_index(&self, name: &str) -> Option<usize> {
        self.strategies.iter().position(|s| s == name)
    }

    /// Index of a metric by name.
    pub fn metric_index(&self, name: &str) -> Option<usize> {
        self.metrics.iter().position(|m| m == name)
    }

    /// The summary row of one (point, strategy).
    pub fn summary_row(&self, point: usize, strategy: usize) -> Option<&SummaryRow> {
        self.summary.iter().find(|r| r.point == point && r.strategy == strategy)
    }

    /// The distribution over the runs of one (point, strategy) of one metric of
    /// [`DISTRIBUTED_METRICS`]; `None` for other metrics or a cell without runs.
    pub fn run_distribution(&self, point: usize, strategy: usize, metric: &str) -> Option<&RunDistribution> {
        let d = DISTRIBUTED_METRICS.iter().position(|m| *m == metric)?;
        self.runs.get(&(point, strategy)).map(|c| &c.distributions[d])
    }

    /// The mean of one metric for one (point, strategy) with its 95 % interval: the mean and
    /// sd of summary.csv, the count of runs with a value from runs.csv (the `runs` column
    /// when runs.csv has no row for this cell). `None` when the mean is empty.
    pub fn estimate(&self, point: usize, strategy: usize, metric: usize) -> Option<Estimate> {
        let row = self.summary_row(point, strategy)?;
        let mean = row.mean[metric]?;
        let n = match self.runs.get(&(point, strategy)) {
            Some(cell) if cell.rows > 0 => cell.with_value[metric],
            _ => row.runs,
        };
        Some(Estimate::from_summary(mean, row.sd[metric], n))
    }

    /// Of the measurable runs of one (point, strategy), how many never recovered, and how
    /// many were measurable: `(never, measurable)`. A run's `recovery_time_s` is empty both
    /// when it never recovered and when recovery cannot be measured; `metastable` is empty
    /// only in the second case, so the measurable runs are those with a `metastable` value.
    /// `None` without a `recovery_time_s` column.
    pub fn never_recovered(&self, point: usize, strategy: usize) -> Option<(u64, u64)> {
        let recovery = self.metric_index(RECOVERY)?;
        let row = self.summary_row(point, strategy)?;
        match self.runs.get(&(point, strategy)) {
            Some(cell) if cell.rows > 0 => {
                let measurable = self.metric_index(METASTABLE).map_or(cell.rows, |m| cell.with_value[m]);
                Some((measurable.saturating_sub(cell.with_value[recovery]), measurable))
            }
            // No per-run rows: an empty mean says that no run recovered.
            _ if row.mean[recovery].is_none() && self.metastable_runs(point, strategy).is_some() => {
                Some((row.runs, row.runs))
            }
            _ => Some((0, row.runs)),
        }
    }

    /// Of the measurable runs of one (point, strategy), how many were metastable, and how
    /// many were measurable: `(metastable, measurable)`; `None` when no run was measurable.
    pub fn metastable_runs(&self, point: usize, strategy: usize) -> Option<(u64, u64)> {
        let m = self.metric_index(METASTABLE)?;
        let fraction = self.summary_row(point, strategy)?.mean[m]?;
        let n = match self.runs.get(&(point, strategy)) {
            Some(cell) if cell.rows > 0 => cell.with_value[m],
            _ => self.summary_row(point, strategy)?.runs,
        };
        Some(((fraction * n as f64).round() as u64, n))
    }

    /// One metric of one (point, strategy) as a table shows it: `mean ± half-width`; for
    /// `recovery_time_s`, the runs that never recovered as `never (k of n runs)` (after the
    /// mean of the others when some did); `-` when there is no value. Never a 0 for a
    /// missing value.
    pub fn cell_text(&self, point: usize, strategy: usize, metric: usize) -> String {
        let value = self.estimate(point, strategy, metric).map(|e| with_interval(e.mean, e.half_width));
        let never = match self.metrics[metric] == RECOVERY {
            true => self.never_recovered(point, strategy).filter(|&(k, _)| k > 0),
            false => None,
        };
        match (value, never) {
            (Some(v), None) => v,
            (Some(v), Some((k, n))) => format!("{v}; never in {k} of {n} runs"),
            (None, Some((k, n))) => format!("never ({k} of {n} runs)"),
            (None, None) => "-".into(),
        }
    }

    /// Whether a metric has at least one value in summary.csv.
    pub fn has_values(&self, metric: usize) -> bool {
        self.summary.iter().any(|r| r.mean[metric].is_some())
    }

    /// A short label of a point: `workload.rate=1000.0, ...`, or `all runs` without a sweep.
    pub fn point_label(&self, point: usize) -> String {
        if self.sweep_keys.is_empty() {
            return "all runs".into();
        }
        self.sweep_keys
            .iter()
            .zip(&self.points[point].values)
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
