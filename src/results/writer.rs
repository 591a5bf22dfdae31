//! The one place where `retrysim run` writes its files. Rows stream into temporary files in the
//! output folder as results arrive; [`ResultWriter::commit`] renames each into place and writes
//! `manifest.json` last, so a folder with a manifest holds a complete result. An interrupted
//! run leaves the previous files (or none), never half of one: the temporary files are deleted
//! when the writer is dropped without a commit.

use super::manifest::Manifest;
use super::{Exporter, WriteError, exporters, persist, temporary_next_to, write_atomically};
use crate::experiment::Experiment;
use crate::metrics::RunMetrics;
use crate::sweep::{Cell, Results, Shard, Sink};
use std::io::BufWriter;
use std::path::{Path, PathBuf};

struct Output {
    exporter: Box<dyn Exporter>,
    path: PathBuf,
    csv: ::csv::Writer<BufWriter<tempfile::NamedTempFile>>,
}

/// Streams one experiment's results (or one shard's) into a folder.
pub struct ResultWriter<'e> {
    exp: &'e Experiment,
    dir: PathBuf,
    shard: Option<Shard>,
    outputs: Vec<Output>,
}

impl<'e> ResultWriter<'e> {
    /// Creates `dir` if needed and opens a temporary file for each output, headers written.
    pub fn create(dir: &Path, exp: &'e Experiment, shard: Option<Shard>) -> Result<Self, WriteError> {
        std::fs::create_dir_all(dir).map_err(WriteError::at(dir))?;
        let mut outputs = Vec::new();
        for exporter in exporters(exp) {
            let path = dir.join(exporter.file_name());
            let tmp = temporary_next_to(&path)?;
            let mut csv = ::csv::WriterBuilder::new()
                .terminator(::csv::Terminator::Any(b'\n'))
                .from_writer(BufWriter::with_capacity(1 << 16, tmp));
            csv.write_record(exporter.header(exp)).map_err(|e| csv_error(&path, e))?;
            outputs.push(Output { exporter, path, csv });
        }
        Ok(ResultWriter { exp, dir: dir.to_path_buf(), shard, outputs })
    }

    /// Moves every file into place, then writes `manifest.json`. Returns the paths written.
    pub fn commit(self) -> Result<Vec<PathBuf>, WriteError> {
        let mut written = Vec::new();
        for out in self.outputs {
            let buffered = out.csv.into_inner().map_err(|e| WriteError::at(&out.path)(e.into_error()))?;
            let tmp = buffered.into_inner().map_err(|e| WriteError::at(&out.path)(e.into_error()))?;
            persist(tmp, &out.path)?;
            written.push(out.path);
        }
        let manifest = self.dir.join(Manifest::FILE);
        write_atomically(&manifest, &Manifest::of(self.exp, self.shard).to_json())?;
        written.push(manifest);
        Ok(written)
    }

    fn write(&mut self, rows: impl Fn(&mut dyn Exporter) -> Vec<Vec<String>>) -> Result<(), WriteError> {
        for out in &mut self.outputs {
            for row in rows(out.exporter.as_mut()) {
                out.csv.write_record(&row).map_err(|e| csv_error(&out.path, e))?;
            }
        }
        Ok(())
    }
}

impl Sink for ResultWriter<'_> {
    type Error = WriteError;

    fn run(&mut self, cell: Cell, run: u32, seed: u64, m: &RunMetrics) -> Result<(), WriteError> {
        let exp = self.exp;
        self.write(|e| e.run_rows(exp, cell, run, seed, m))
    }

    fn cell_done(&mut self, cell: Cell) -> Result<(), WriteError> {
        let exp = self.exp;
        self.write(|e| e.cell_rows(exp, cell))
    }
}

/// Writes results held in memory (from [`crate::sweep::run`]) into `dir`, exactly as
/// `retrysim run` would have streamed them.
pub fn write_results(dir: &Path, exp: &Experiment, results: &Results) -> Result<Vec<PathBuf>, WriteError> {
    let mut w = ResultWriter::create(dir, exp, None)?;
    let mut runs = results.runs.iter().peekable();
    while let Some(r) = runs.next() {
        let cell = Cell { point: r.point, strategy: r.strategy };
        w.run(cell, r.run, r.seed, &r.metrics)?;
        if runs.peek().is_none_or(|next| (next.point, next.strategy) != (r.point, r.strategy)) {
            w.cell_done(cell)?;
        }
    }
    w.commit()
}

fn csv_error(path: &Path, e: ::csv::Error) -> WriteError {
    let source = match e.into_kind() {
        ::csv::ErrorKind::Io(io) => io,
        other => std::io::Error::other(format!("{other:?}")),
    };
    WriteError { path: path.to_path_buf(), source }
}
