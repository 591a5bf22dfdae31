//! The one place where `retrysim run` writes its files. Rows stream into temporary files in the
//! output folder as results arrive; [`ResultWriter::commit`] renames each into place and writes
//! `manifest.json` last, so a folder with a manifest holds a complete result. An interrupted
//! run leaves the previous files (or none), never half of one: the temporary files are deleted
//! when the writer is dropped without a commit. [`ResultWriter::commit_partial`] keeps the
//! cells finished before a stop instead, cut at the last finished cell, and
//! [`ResultWriter::resume`] goes on from such a partial result.

use super::manifest::Manifest;
use super::{Exporter, WriteError, exporters, persist, temporary_next_to, write_atomically};
use crate::experiment::Experiment;
use crate::metrics::RunMetrics;
use crate::sweep::{Cell, Results, Shard, Sink};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// The temporary file under the CSV writer, counting the bytes it is handed. Its `flush` only
/// empties the CSV writer's buffer into it (no system call): the file is flushed once, at the
/// end, so that counting a cell's boundary costs nothing.
struct Counted {
    file: BufWriter<tempfile::NamedTempFile>,
    written: u64,
}

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct Output {
    exporter: Box<dyn Exporter>,
    path: PathBuf,
    csv: ::csv::Writer<Counted>,
    /// Bytes written when the last finished cell's rows were in: a partial result ends there.
    boundary: u64,
}

impl Output {
    fn open(dir: &Path, exporter: Box<dyn Exporter>, copy_from: Option<&Path>) -> Result<Output, WriteError> {
        let path = dir.join(exporter.file_name());
        let tmp = temporary_next_to(&path)?;
        let mut counted = Counted { file: BufWriter::with_capacity(1 << 16, tmp), written: 0 };
        if let Some(from) = copy_from {
            let mut from = std::fs::File::open(from).map_err(WriteError::at(from))?;
            counted.written = std::io::copy(&mut from, &mut counted.file).map_err(WriteError::at(&path))?;
        }
        let csv = ::csv::WriterBuilder::new().terminator(::csv::Terminator::Any(b'\n')).from_writer(counted);
        Ok(Output { exporter, path, csv, boundary: 0 })
    }

    /// Bytes written so far (the CSV writer's buffer emptied first).
    fn written(&mut self) -> Result<u64, WriteError> {
        self.csv.flush().map_err(WriteError::at(&self.path))?;
        Ok(self.csv.get_ref().written)
    }

    fn mark_boundary(&mut self) -> Result<(), WriteError> {
        self.boundary = self.written()?;
        Ok(())
    }

    /// The temporary file, flushed, holding everything written, or only up to the last
    /// boundary.
    fn finish(self, at_boundary: bool) -> Result<(tempfile::NamedTempFile, PathBuf), WriteError> {
        let counted = self.csv.into_inner().map_err(|e| WriteError::at(&self.path)(e.into_error()))?;
        let written = counted.written;
        let tmp = counted.file.into_inner().map_err(|e| WriteError::at(&self.path)(e.into_error()))?;
        if at_boundary && self.boundary < written {
            tmp.as_file().set_len(self.boundary).map_err(WriteError::at(&self.path))?;
        }
        Ok((tmp, self.path))
    }
}

/// Streams one experiment's results (or one shard's) into a folder.
pub struct ResultWriter<'e> {
    exp: &'e Experiment,
    dir: PathBuf,
    shard: Option<Shard>,
    outputs: Vec<Output>,
    /// The cells whose every row is written, in order.
    done: Vec<Cell>,
}

impl<'e> ResultWriter<'e> {
    /// Creates `dir` if needed and opens a temporary file for each output, headers written.
    pub fn create(dir: &Path, exp: &'e Experiment, shard: Option<Shard>) -> Result<Self, WriteError> {
        std::fs::create_dir_all(dir).map_err(WriteError::at(dir))?;
        let mut outputs = Vec::new();
        for exporter in exporters(exp) {
            let mut out = Output::open(dir, exporter, None)?;
            let header = out.exporter.header(exp);
            out.csv.write_record(&header).map_err(|e| csv_error(&out.path, e))?;
            out.mark_boundary()?;
            outputs.push(out);
        }
        Ok(ResultWriter { exp, dir: dir.to_path_buf(), shard, outputs, done: Vec::new() })
    }

    /// Like [`ResultWriter::create`], starting from the partial result in `dir` whose
    /// manifest lists `done` (the first cells in output order): each file's bytes are copied
    /// into the new temporary file, and the run goes on with the cells after them. Since a
    /// cell's rows depend on nothing but the cell, the files end as an uninterrupted run's.
    pub fn resume(
        dir: &Path,
        exp: &'e Experiment,
        shard: Option<Shard>,
        done: Vec<Cell>,
    ) -> Result<Self, WriteError> {
        let mut outputs = Vec::new();
        for exporter in exporters(exp) {
            let from = dir.join(exporter.file_name());
            let mut out = Output::open(dir, exporter, Some(&from))?;
            out.mark_boundary()?;
            outputs.push(out);
        }
        Ok(ResultWriter { exp, dir: dir.to_path_buf(), shard, outputs, done })
    }

    /// The cells finished so far, in output order.
    pub fn done(&self) -> &[Cell] {
        &self.done
    }

    /// Moves every file into place, then writes `manifest.json`. Returns the paths written.
    pub fn commit(self) -> Result<Vec<PathBuf>, WriteError> {
        let manifest = Manifest::of(self.exp, self.shard);
        self.persist_all(false, manifest)
    }

    /// After a stop: when at least one cell is finished, moves every file into place holding
    /// exactly the finished cells' rows and writes a manifest that says the result is partial
    /// (`total` cells in all); `None`, leaving the folder's earlier files untouched, when no
    /// cell is finished.
    pub fn commit_partial(self, total: usize) -> Result<Option<Vec<PathBuf>>, WriteError> {
        if self.done.is_empty() {
            return Ok(None);
        }
        let manifest = Manifest::partial(self.exp, self.shard, &self.done, total);
        self.persist_all(true, manifest).map(Some)
    }

    fn persist_all(self, at_boundary: bool, manifest: Manifest) -> Result<Vec<PathBuf>, WriteError> {
        let mut finished = Vec::new();
        for out in self.outputs {
            finished.push(out.finish(at_boundary)?);
        }
        let mut written = Vec::new();
        for (tmp, path) in finished {
            persist(tmp, &path)?;
            written.push(path);
        }
        let path = self.dir.join(Manifest::FILE);
        write_atomically(&path, &manifest.to_json())?;
        written.push(path);
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
        self.write(|e| e.cell_rows(exp, cell))?;
        for out in &mut self.outputs {
            out.mark_boundary()?;
        }
        self.done.push(cell);
        Ok(())
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
