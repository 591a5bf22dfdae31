//! `retrysim merge --out DIR SHARD_DIR...`: joins the result folders of `--shard 1/N` ..
//! `--shard N/N` into exactly the files a whole run writes. Shards hold contiguous runs of
//! cells in output order (see `sweep::Shard`), so each file is the shards' rows concatenated
//! in shard order under one header.

use super::manifest::Manifest;
use super::{WriteError, write_atomically};
use std::path::{Path, PathBuf};

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
    /// The merged files could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
}

impl MergeError {
    /// Bad input (2) unless the file system failed (1).
    pub fn exit_code(&self) -> i32 {
        match self {
            MergeError::Read { .. } | MergeError::Write(_) => 1,
            _ => 2,
        }
    }
}

/// Merges `shards` into `out`; returns the paths written (manifest last).
pub fn merge(out: &Path, shards: &[PathBuf]) -> Result<Vec<PathBuf>, MergeError> {
    let ordered = check(shards)?;
    let first = &ordered[0].1;
    let mut files = vec!["runs.csv", "summary.csv"];
    if first.timeseries {
        files.push("timeseries.csv");
    }
    std::fs::create_dir_all(out).map_err(WriteError::at(out))?;
    let mut written = Vec::new();
    for name in files {
        let mut merged: Vec<u8> = Vec::new();
        let mut header: Option<Vec<u8>> = None;
        for (dir, _) in &ordered {
            let path = dir.join(name);
            let bytes =
                std::fs::read(&path).map_err(|source| MergeError::Read { path: path.clone(), source })?;
            let split = bytes.iter().position(|&b| b == b'\n').map_or(bytes.len(), |i| i + 1);
            let (head, rows) = bytes.split_at(split);
            match &header {
                None => {
                    header = Some(head.to_vec());
                    merged.extend_from_slice(head);
                }
                Some(h) if h.as_slice() != head => return Err(MergeError::HeaderMismatch { path }),
                Some(_) => {}
            }
            merged.extend_from_slice(rows);
        }
        let path = out.join(name);
        write_atomically(&path, &merged)?;
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
