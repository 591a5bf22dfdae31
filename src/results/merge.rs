//! `retrysim merge --out DIR SHARD_DIR...`: joins the result folders of `--shard 1/N` ..
//! `--shard N/N` into exactly the files a whole run writes. Shards hold contiguous runs of
//! cells in output order (see `sweep::Shard`), so each file is the shards' rows concatenated
//! in shard order under one header.

use super::manifest::Manifest;
use super::{WriteError, persist, temporary_next_to, write_atomically};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Bytes read and written at a time.
const BLOCK: usize = 1 << 16;

/// Why shards cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// No folder was given.
    #[error("merge: no shard folders given; pass the folders written by `retrysim run --shard I/N`")]
    NoShards,
    /// A folder without a readable manifest: not a finished result.
    #[error("{dir}: not a finished retrysim result ({reason}); rerun that shard")]
    NotAResult { dir: PathBuf, reason: String },
    /// A finished whole run, not a shard.
    #[error("{dir}: a whole run, not a shard (it was not run with --shard I/N)")]
    NotAShard { dir: PathBuf },
    /// A shard of another experiment, seed, set of changes or retrysim version.
    #[error(
        "{dir}: a shard of another run (experiment `{name}`, fingerprint {found}; expected `{expected_name}`, {expected}): merge only the shards of one `retrysim run` command"
    )]
    Foreign { dir: PathBuf, name: String, found: String, expected_name: String, expected: String },
    /// Shards split into different numbers of parts.
    #[error("{dir}: shard {index}/{count}, but the first shard is one of {expected}")]
    CountMismatch { dir: PathBuf, index: u32, count: u32, expected: u32 },
    /// The same shard twice.
    #[error("shard {index}/{count} is given twice: {first} and {second}")]
    Duplicate { index: u32, count: u32, first: PathBuf, second: PathBuf },
    /// Shards not given.
    #[error(
        "shard(s) {missing} of {count} missing: run `retrysim run FILE --shard I/{count}` for each and pass every folder"
    )]
    Missing { missing: String, count: u32 },
    /// A file of a shard whose header differs from the first shard's.
    #[error(
        "{path}: its header differs from the first shard's; the shards come from different retrysim versions"
    )]
    HeaderMismatch { path: PathBuf },
    /// A shard's file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A signal stopped the merge before any file was renamed into place.
    #[error("merge interrupted")]
    Interrupted,
    /// The merged files could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
}

impl MergeError {
    /// Bad input (2) unless the file system failed (1).
    pub fn exit_code(&self) -> i32 {
        match self {
            MergeError::Read { .. } | MergeError::Write(_) | MergeError::Interrupted => 1,
            _ => 2,
        }
    }
}

/// Merges `shards` into `out`; returns the paths written (manifest last). Each file streams
/// through a temporary file in `out`, in bounded memory whatever the shards' size; every one
/// is renamed into place only once all are complete, so an error or `stop` (polled between
/// blocks) leaves `out`'s earlier files untouched.
pub fn merge(out: &Path, shards: &[PathBuf], stop: &AtomicBool) -> Result<Vec<PathBuf>, MergeError> {
    let ordered = check(shards)?;
    let first = &ordered[0].1;
    let mut files = vec!["runs.csv", "summary.csv"];
    if first.timeseries {
        files.push("timeseries.csv");
    }
    std::fs::create_dir_all(out).map_err(WriteError::at(out))?;
    let mut merged = Vec::new();
    for name in files {
        let path = out.join(name);
        let mut to = BufWriter::with_capacity(BLOCK, temporary_next_to(&path)?);
        let mut header: Option<Vec<u8>> = None;
        for (dir, _) in &ordered {
            let from_path = dir.join(name);
            let read_err = |source| MergeError::Read { path: from_path.clone(), source };
            let mut from = BufReader::with_capacity(BLOCK, File::open(&from_path).map_err(read_err)?);
            let mut head = Vec::new();
            from.read_until(b'\n', &mut head).map_err(read_err)?;
            match &header {
                None => {
                    to.write_all(&head).map_err(WriteError::at(&path))?;
                    header = Some(head);
                }
                Some(h) if *h != head => return Err(MergeError::HeaderMismatch { path: from_path }),
                Some(_) => {}
            }
            loop {
                if stop.load(Ordering::Relaxed) {
                    return Err(MergeError::Interrupted);
                }
                let block = from.fill_buf().map_err(read_err)?;
                if block.is_empty() {
                    break;
                }
                to.write_all(block).map_err(WriteError::at(&path))?;
                let n = block.len();
                from.consume(n);
            }
        }
        let tmp = to.into_inner().map_err(|e| WriteError::at(&path)(e.into_error()))?;
        merged.push((tmp, path));
    }
    let mut written = Vec::new();
    for (tmp, path) in merged {
        persist(tmp, &path)?;
        written.push(path);
    }
    let whole = Manifest { shard: None, ..first.clone() };
    let path = out.join(Manifest::FILE);
    write_atomically(&path, &whole.to_json())?;
    written.push(path);
    Ok(written)
}

/// Reads every shard's manifest and checks they are the N parts of one run, each once; returns
/// them in shard order.
fn check(shards: &[PathBuf]) -> Result<Vec<(PathBuf, Manifest)>, MergeError> {
    if shards.is_empty() {
        return Err(MergeError::NoShards);
    }
    let mut read = Vec::new();
    for dir in shards {
        let path = dir.join(Manifest::FILE);
        let bytes = std::fs::read(&path).map_err(|e| MergeError::NotAResult {
            dir: dir.clone(),
            reason: format!("{}: {e}", path.display()),
        })?;
        let m = Manifest::parse(&bytes).map_err(|e| MergeError::NotAResult {
            dir: dir.clone(),
            reason: format!("{}: {e}", path.display()),
        })?;
        if m.shard.is_none() {
            return Err(MergeError::NotAShard { dir: dir.clone() });
        }
        if m.partial {
            let reason = format!(
                "a partial result, {} of {} cell(s) finished before a signal stopped it: complete it with the same `retrysim run ... --shard I/N` and --resume",
                m.cells_done.len(),
                m.cells_total.unwrap_or_default()
            );
            return Err(MergeError::NotAResult { dir: dir.clone(), reason });
        }
        read.push((dir.clone(), m));
    }
    let (first_dir, first) = &read[0];
    let count = first.shard.map_or(0, |s| s.count);
    let _ = first_dir;
    let mut slots: Vec<Option<(PathBuf, Manifest)>> = vec![None; count as usize];
    for (dir, m) in &read {
        if m.fingerprint != first.fingerprint {
            return Err(MergeError::Foreign {
                dir: dir.clone(),
                name: m.name.clone(),
                found: m.fingerprint.clone(),
                expected_name: first.name.clone(),
                expected: first.fingerprint.clone(),
            });
        }
        let s = m.shard.expect("checked above");
        if s.count != count {
            return Err(MergeError::CountMismatch {
                dir: dir.clone(),
                index: s.index,
                count: s.count,
                expected: count,
            });
        }
        let slot = &mut slots[s.index as usize - 1];
        if let Some((other, _)) = slot {
            return Err(MergeError::Duplicate {
                index: s.index,
                count,
                first: other.clone(),
                second: dir.clone(),
            });
        }
        *slot = Some((dir.clone(), m.clone()));
    }
    let missing: Vec<String> = slots
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_none())
        .map(|(i, _)| format!("{}/{count}", i + 1))
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing { missing: missing.join(", "), count });
    }
    Ok(slots.into_iter().flatten().collect())
}
