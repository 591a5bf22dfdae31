//! `retrysim slurm`: a big sweep as a Slurm job array. [`ArrayJob`] writes two batch scripts
//! into the output folder:
//!
//! - `array.sbatch`: a job array of N tasks (`--array=0-(N-1)`); task `i` runs
//!   `retrysim run FILE --shard (i+1)/N --out DIR/shard-i --resume`, so a task whose shard is
//!   already complete does nothing, and one whose shard is missing or partial computes it again.
//! - `merge.sbatch`: `retrysim merge` of the N shard folders into DIR (the files of a whole
//!   run, and its report), submitted with `--dependency=afterok:<array job>`.
//!
//! Both name the retrysim binary and the experiment file by absolute path, and change nothing
//! but the shard from one task to the next: rerunning one task (`sbatch --array=i
//! DIR/array.sbatch`) and then the merge gives the same bytes as the first time.

use crate::experiment::Experiment;
use crate::results::{self, WriteError};
use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The script that runs the shards.
pub const ARRAY_SCRIPT: &str = "array.sbatch";
/// The script that merges them.
pub const MERGE_SCRIPT: &str = "merge.sbatch";
/// The folder of the jobs' logs, inside the output folder.
pub const LOGS: &str = "logs";

/// Why the scripts could not be written or submitted.
#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    /// A flag value that cannot go into a batch script (exit code 2).
    #[error("{flag}: {reason}")]
    Flag { flag: String, reason: String },
    /// The path of the running retrysim binary is unknown (exit code 1).
    #[error("cannot find the path of the retrysim binary for the job scripts: {0}")]
    CurrentExe(std::io::Error),
    /// A path that cannot be read (exit code 1).
    #[error("{path}: {source}")]
    Path {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A script or folder could not be written (exit code 1).
    #[error(transparent)]
    Write(#[from] WriteError),
    /// `--submit` without Slurm's `sbatch` on the PATH (exit code 1).
    #[error(
        "--submit: `sbatch` is not on the PATH ({source}); the scripts are written: submit them on a machine with Slurm:\n  {command}"
    )]
    SbatchMissing {
        command: String,
        #[source]
        source: std::io::Error,
    },
    /// `sbatch` refused a script or gave no job id (exit code 1).
    #[error("sbatch {script} failed ({status}): {message}{hint}")]
    Sbatch { script: PathBuf, status: String, message: String, hint: String },
}

impl SlurmError {
    /// 2 for a bad flag value, 1 for everything else.
    pub fn exit_code(&self) -> i32 {
        match self {
            SlurmError::Flag { .. } => 2,
            _ => 1,
        }
    }
}

/// What `retrysim slurm` was asked for.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The experiment file.
    pub file: PathBuf,
    /// The output folder: scripts, `shard-*` folders, `logs/` and the merged result.
    pub out: PathBuf,
    /// Array tasks (shards), at least 1.
    pub shards: u32,
    /// `sbatch --partition`.
    pub partition: Option<String>,
    /// `sbatch --time`, for each task and for the merge.
    pub time: Option<String>,
    /// `sbatch --cpus-per-task`; each task runs that many threads.
    pub cpus_per_task: Option<u16>,
    /// The changes to the experiment, as `retrysim run` arguments (`--set`, `K=V`, `--runs`,
    /// `N`, ...), passed on unchanged to every task.
    pub run_args: Vec<String>,
}

/// The job array of one experiment, ready to write or submit.
#[derive(Clone, Debug)]
pub struct ArrayJob {
    /// The retrysim binary the jobs run (absolute).
    pub exe: PathBuf,
    /// The experiment file (absolute).
    pub file: PathBuf,
    /// The output folder (absolute).
    pub dir: PathBuf,
    /// The Slurm job name: `retrysim-NAME`.
    pub job_name: String,
    pub shards: u32,
    pub partition: Option<String>,
    pub time: Option<String>,
    pub cpus_per_task: Option<u16>,
    pub run_args: Vec<String>,
}

/// The job ids `sbatch` gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submitted {
    pub array: String,
    pub merge: String,
}

impl ArrayJob {
    /// Checks the options against the (validated) experiment and resolves the paths: the
    /// binary is the running one.
    pub fn new(exp: &Experiment, o: &Options) -> Result<ArrayJob, SlurmError> {
        let exe = std::env::current_exe().map_err(SlurmError::CurrentExe)?;
        ArrayJob::with_exe(exp, o, exe)
    }

    /// [`ArrayJob::new`] with a given retrysim binary.
    pub fn with_exe(exp: &Experiment, o: &Options, exe: PathBuf) -> Result<ArrayJob, SlurmError> {
        let cells = crate::sweep::cells(exp, None).len();
        if o.shards == 0 || o.shards as usize > cells {
            return Err(SlurmError::Flag {
                flag: format!("--shards {}", o.shards),
                reason: format!(
                    "must be between 1 and the experiment's {cells} cell(s) (points x strategies): a shard runs whole cells"
                ),
            });
        }
        let file =
            o.file.canonicalize().map_err(|source| SlurmError::Path { path: o.file.clone(), source })?;
        let dir =
            std::path::absolute(&o.out).map_err(|source| SlurmError::Path { path: o.out.clone(), source })?;
        let utf8 = |p: &Path, flag: &str| -> Result<(), SlurmError> {
            match p.to_str() {
                Some(_) => Ok(()),
                None => Err(SlurmError::Flag {
                    flag: flag.to_owned(),
                    reason: format!("`{}` is not UTF-8, which a batch script cannot name", p.display()),
                }),
            }
        };
        utf8(&exe, "the retrysim binary")?;
        utf8(&file, "FILE")?;
        utf8(&dir, "--out")?;
        // The folder goes into #SBATCH lines (--output, --chdir), which split at spaces, strip
        // quotes and expand %-patterns.
        let text = dir.to_string_lossy();
        if text.chars().any(|c| c.is_whitespace() || c.is_control() || "\"'\\%".contains(c)) {
            return Err(SlurmError::Flag {
                flag: format!("--out {text}"),
                reason: "a space, quote, backslash or % cannot go into an #SBATCH line (the logs' path); choose a folder without them".into(),
            });
        }
        if let Some(p) = &o.partition
            && (p.is_empty() || !p.chars().all(|c| c.is_ascii_alphanumeric() || "_-.,".contains(c)))
        {
            return Err(SlurmError::Flag {
                flag: format!("--partition {p}"),
                reason: "a partition name (or a comma-separated list of them): letters, digits, _ - .".into(),
            });
        }
        if let Some(t) = &o.time
            && !valid_time(t)
        {
            return Err(SlurmError::Flag {
                flag: format!("--time {t}"),
                reason: "a Slurm time limit: MINUTES, MM:SS, HH:MM:SS, DAYS-HH, DAYS-HH:MM, DAYS-HH:MM:SS or UNLIMITED".into(),
            });
        }
        // Experiment names are letters, digits, `.`, `_` and `-`: safe in an #SBATCH line.
        let job_name = format!("retrysim-{}", exp.name);
        Ok(ArrayJob {
            exe,
            file,
            dir,
            job_name,
            shards: o.shards,
            partition: o.partition.clone(),
            time: o.time.clone(),
            cpus_per_task: o.cpus_per_task,
            run_args: o.run_args.clone(),
        })
    }

    /// Digits of the largest task id: shard folders are zero-padded to it, so that they list
    /// in order (`shard-09` before `shard-10`).
    fn width(&self) -> usize {
        (self.shards - 1).to_string().len()
    }

    /// The output folder of array task `task` (0-based; it runs shard `task + 1` of N).
    pub fn shard_dir(&self, task: u32) -> PathBuf {
        self.dir.join(format!("shard-{task:0width$}", width = self.width()))
    }

    pub fn array_script_path(&self) -> PathBuf {
        self.dir.join(ARRAY_SCRIPT)
    }

    pub fn merge_script_path(&self) -> PathBuf {
        self.dir.join(MERGE_SCRIPT)
    }

    /// The shell command that submits the array and then the merge, to run after it.
    pub fn submit_command(&self) -> String {
        format!(
            "jid=$(sbatch --parsable {}) && sbatch --dependency=afterok:$jid {}",
            quote(&self.array_script_path().to_string_lossy()),
            quote(&self.merge_script_path().to_string_lossy())
        )
    }

    /// The command that reruns array task `task` alone.
    pub fn rerun_command(&self, task: u32) -> String {
        format!("sbatch --array={task} {}", quote(&self.array_script_path().to_string_lossy()))
    }

    /// `#SBATCH` lines shared by both scripts.
    fn common_directives(&self, out: &mut String) {
        out.push_str(&format!("#SBATCH --chdir={}\n", self.dir.display()));
        if let Some(p) = &self.partition {
            out.push_str(&format!("#SBATCH --partition={p}\n"));
        }
        if let Some(t) = &self.time {
            out.push_str(&format!("#SBATCH --time={t}\n"));
        }
    }

    /// The text of `array.sbatch`.
    pub fn array_script(&self) -> String {
        let n = self.shards;
        let dir = self.dir.to_string_lossy();
        let logs = self.dir.join(LOGS);
        let mut s = String::from("#!/bin/bash\n");
        s.push_str(&format!(
            "# Written by `retrysim slurm` ({} {}): {n} array task(s); task I runs shard I+1 of {n}\n\
             # into {dir}/shard-I, and does nothing when that folder already holds the complete shard\n\
             # (--resume). Submit it with the merge:\n\
             #   {}\n\
             # Rerun one task (after a failure; its shard is computed again unless complete), then\n\
             # submit merge.sbatch again:\n\
             #   {}\n",
            env!("CARGO_PKG_NAME"),
            env!("CARGO_PKG_VERSION"),
            self.submit_command(),
            self.rerun_command(0).replacen("--array=0", "--array=I", 1),
        ));
        s.push_str(&format!("#SBATCH --job-name={}\n", self.job_name));
        s.push_str(&format!("#SBATCH --array=0-{}\n", n - 1));
        s.push_str(&format!("#SBATCH --output={}/array-%A-%a.out\n", logs.display()));
        self.common_directives(&mut s);
        if let Some(c) = self.cpus_per_task {
            s.push_str(&format!("#SBATCH --cpus-per-task={c}\n"));
        }
        s.push_str("set -euo pipefail\n");
        s.push_str(": \"${SLURM_ARRAY_TASK_ID:?is not set: submit this script with sbatch}\"\n");
        s.push_str(&format!("printf -v shard 'shard-%0{}d' \"$SLURM_ARRAY_TASK_ID\"\n", self.width()));
        s.push_str(&format!(
            "exec {} run {} \\\n  --shard \"$((SLURM_ARRAY_TASK_ID + 1))/{n}\" \\\n  --out {}/\"$shard\" \\\n  --resume --threads \"${{SLURM_CPUS_PER_TASK:-1}}\"",
            quote(&self.exe.to_string_lossy()),
            quote(&self.file.to_string_lossy()),
            quote(&dir),
        ));
        self.push_run_args(&mut s);
        s.push('\n');
        s
    }

    fn push_run_args(&self, s: &mut String) {
        let mut args = self.run_args.iter().peekable();
        while let Some(a) = args.next() {
            // Flag and value on one line: `--set 'k=v'`.
            s.push_str(" \\\n  ");
            s.push_str(&quote(a));
            if a.starts_with("--")
                && let Some(v) = args.next_if(|v| !v.starts_with("--"))
            {
                s.push(' ');
                s.push_str(&quote(v));
            }
        }
    }

    /// The text of `merge.sbatch`.
    pub fn merge_script(&self) -> String {
        let n = self.shards;
        let dir = self.dir.to_string_lossy();
        let logs = self.dir.join(LOGS);
        let mut s = String::from("#!/bin/bash\n");
        s.push_str(&format!(
            "# Written by `retrysim slurm` ({} {}): joins the {n} shard folder(s) of array.sbatch into\n\
             # {dir} (runs.csv, summary.csv, timeseries.csv, manifest.json, the report). Submit it\n\
             # after the array: sbatch --dependency=afterok:<array job id> {}\n",
            env!("CARGO_PKG_NAME"),
            env!("CARGO_PKG_VERSION"),
            quote(&self.merge_script_path().to_string_lossy()),
        ));
        s.push_str(&format!("#SBATCH --job-name={}-merge\n", self.job_name));
        s.push_str(&format!("#SBATCH --output={}/merge-%j.out\n", logs.display()));
        // A failed task makes the dependency impossible: end this job rather than leave it
        // pending forever.
        s.push_str("#SBATCH --kill-on-invalid-dep=yes\n");
        self.common_directives(&mut s);
        s.push_str("set -euo pipefail\n");
        s.push_str(&format!("out={}\n", quote(&dir)));
        s.push_str("shards=()\nmissing=0\n");
        s.push_str(&format!("for ((i = 0; i < {n}; i++)); do\n"));
        s.push_str(&format!("  printf -v shard '%s/shard-%0{}d' \"$out\" \"$i\"\n", self.width()));
        s.push_str("  if [[ ! -f $shard/manifest.json ]]; then\n");
        s.push_str(&format!(
            "    echo \"error: $shard is missing or incomplete (array task $i, --shard $((i + 1))/{n}): rerun it with 'sbatch --array=$i $out/{ARRAY_SCRIPT}', then submit this merge again\" >&2\n"
        ));
        s.push_str("    missing=1\n  fi\n  shards+=(\"$shard\")\ndone\n");
        s.push_str("((missing == 0)) || exit 1\n");
        s.push_str(&format!(
            "exec {} merge --out \"$out\" \"${{shards[@]}}\"\n",
            quote(&self.exe.to_string_lossy())
        ));
        s
    }

    /// Creates the output folder and its `logs/`, and writes both scripts (executable, each
    /// renamed into place once complete). Returns their paths.
    pub fn write(&self) -> Result<Vec<PathBuf>, SlurmError> {
        let logs = self.dir.join(LOGS);
        std::fs::create_dir_all(&logs).map_err(WriteError::at(&logs))?;
        let scripts = [
            (self.array_script_path(), self.array_script()),
            (self.merge_script_path(), self.merge_script()),
        ];
        let mut written = Vec::new();
        for (path, text) in scripts {
            write_executable(&path, text.as_bytes())?;
            written.push(path);
        }
        Ok(written)
    }

    /// Submits the array, then the merge to run once every task has succeeded.
    pub fn submit(&self) -> Result<Submitted, SlurmError> {
        let array_path = self.array_script_path();
        let array = sbatch(&[array_path.as_os_str()], &array_path, self)?;
        let merge_path = self.merge_script_path();
        let dependency = format!("--dependency=afterok:{array}");
        let merge = sbatch(&[OsStr::new(&dependency), merge_path.as_os_str()], &merge_path, self).map_err(|e| {
            match e {
                SlurmError::Sbatch { script, status, message, .. } => SlurmError::Sbatch {
                    script,
                    status,
                    message,
                    hint: format!(
                        "\nthe array job {array} was submitted; submit the merge alone with: sbatch {dependency} {}",
                        quote(&merge_path.to_string_lossy())
                    ),
                },
                other => other,
            }
        })?;
        Ok(Submitted { array, merge })
    }
}

/// `sbatch --parsable ARGS`: the job id it prints.
fn sbatch(args: &[&OsStr], script: &Path, job: &ArrayJob) -> Result<String, SlurmError> {
    let output =
        std::process::Command::new("sbatch").arg("--parsable").args(args).output().map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                SlurmError::SbatchMissing { command: job.submit_command(), source }
            } else {
                SlurmError::Sbatch {
                    script: script.to_path_buf(),
                    status: "not started".into(),
                    message: source.to_string(),
                    hint: String::new(),
                }
            }
        })?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    // `--parsable` prints `JOBID` or `JOBID;CLUSTER`.
    let id = stdout.lines().next().unwrap_or("").split(';').next().unwrap_or("").trim().to_owned();
    if !output.status.success() || id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        let message =
            if stderr.is_empty() { format!("no job id in its output `{}`", stdout.trim()) } else { stderr };
        return Err(SlurmError::Sbatch {
            script: script.to_path_buf(),
            status: output.status.to_string(),
            message,
            hint: String::new(),
        });
    }
    Ok(id)
}

/// Writes `bytes` to `path` like [`results::write_atomically`], with the executable bits set
/// before the rename.
fn write_executable(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let mut tmp = results::temporary_next_to(path)?;
    tmp.write_all(bytes).map_err(WriteError::at(path))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o755))
            .map_err(WriteError::at(path))?;
    }
    results::persist(tmp, path)
}

/// Whether `t` is a Slurm time limit (`sbatch --time`).
fn valid_time(t: &str) -> bool {
    if ["unlimited", "infinite"].contains(&t.to_ascii_lowercase().as_str()) {
        return true;
    }
    let number = |s: &str| !s.is_empty() && s.len() <= 6 && s.chars().all(|c| c.is_ascii_digit());
    let (days, clock) = match t.split_once('-') {
        Some((d, rest)) => (Some(d), rest),
        None => (None, t),
    };
    if days.is_some_and(|d| !number(d)) {
        return false;
    }
    let parts: Vec<&str> = clock.split(':').collect();
    parts.iter().all(|p| number(p)) && (1..=3).contains(&parts.len())
}

/// `s` as one shell word: unchanged when it has only safe characters, else single-quoted.
pub fn quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "_-./:=,+@%".contains(c)) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn experiment(points: usize) -> Experiment {
        let values = (1..=points).map(|i| (10 * i).to_string()).collect::<Vec<_>>().join(", ");
        let text = format!(
            "name = \"tiny-sweep\"\nruns = 1\nhorizon = \"1s\"\n\
             [workload]\nkind = \"closed\"\nclients = 5\n\
             [server]\nconcurrency = 2\nservice_time = {{ dist = \"constant\", value = \"1ms\" }}\n\
             [[strategies]]\nname = \"a\"\nbackoff = {{ kind = \"none\" }}\nmax_attempts = 2\n\
             [sweep]\n\"workload.clients\" = [{values}]\n"
        );
        crate::experiment::load_str(&text, "tiny.toml", &Default::default()).unwrap()
    }

    fn job(shards: u32, points: usize) -> Result<ArrayJob, SlurmError> {
        let file = tempfile::NamedTempFile::new().unwrap();
        let o = Options {
            file: file.path().to_path_buf(),
            out: std::env::temp_dir().join("retrysim-slurm-unit-out"),
            shards,
            partition: Some("batch".into()),
            time: Some("0:30:00".into()),
            cpus_per_task: Some(2),
            run_args: vec!["--set".into(), "client.timeout=2 s".into(), "--runs".into(), "3".into()],
        };
        ArrayJob::with_exe(&experiment(points), &o, PathBuf::from("/opt/retry sim/retrysim"))
    }

    #[test]
    fn shard_folders_are_zero_padded_to_the_last_task() {
        let j = job(12, 12).unwrap();
        assert!(j.shard_dir(0).ends_with("shard-00"));
        assert!(j.shard_dir(11).ends_with("shard-11"));
        assert!(job(4, 12).unwrap().shard_dir(3).ends_with("shard-3"));
        assert!(job(1, 12).unwrap().shard_dir(0).ends_with("shard-0"));
    }

    #[test]
    fn scripts_carry_the_array_the_flags_and_the_changes() {
        let j = job(12, 12).unwrap();
        let a = j.array_script();
        assert!(a.contains("#SBATCH --array=0-11\n"), "{a}");
        assert!(a.contains("#SBATCH --job-name=retrysim-tiny-sweep\n"), "{a}");
        assert!(
            a.contains("#SBATCH --partition=batch\n#SBATCH --time=0:30:00\n#SBATCH --cpus-per-task=2\n"),
            "{a}"
        );
        assert!(a.contains("exec '/opt/retry sim/retrysim' run "), "{a}");
        assert!(a.contains("--shard \"$((SLURM_ARRAY_TASK_ID + 1))/12\""), "{a}");
        assert!(a.contains("printf -v shard 'shard-%02d'"), "{a}");
        assert!(a.contains("--resume --threads \"${SLURM_CPUS_PER_TASK:-1}\" \\\n  --set 'client.timeout=2 s' \\\n  --runs 3\n"), "{a}");
        let m = j.merge_script();
        assert!(m.contains("#SBATCH --kill-on-invalid-dep=yes\n"), "{m}");
        assert!(m.contains("for ((i = 0; i < 12; i++)); do\n"), "{m}");
        assert!(m.contains("exec '/opt/retry sim/retrysim' merge --out \"$out\" \"${shards[@]}\"\n"), "{m}");
        assert!(!m.contains("--cpus-per-task"), "{m}");
    }

    #[test]
    fn bad_flags_are_refused_naming_the_flag() {
        let e = job(13, 12).unwrap_err();
        assert!(
            e.to_string().starts_with("--shards 13: must be between 1 and the experiment's 12 cell(s)"),
            "{e}"
        );
        assert_eq!(e.exit_code(), 2);
        assert_eq!(job(0, 12).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn time_limits() {
        for t in ["30", "30:00", "1:00:00", "2-0", "2-12:00", "2-12:00:00", "UNLIMITED", "infinite"] {
            assert!(valid_time(t), "{t}");
        }
        for t in ["", "1h", "1:2:3:4", "-1", "1-", "1 0", "1:00\n#SBATCH --x"] {
            assert!(!valid_time(t), "{t:?}");
        }
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("/a/b-c_d.toml"), "/a/b-c_d.toml");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("$HOME"), "'$HOME'");
    }
}
