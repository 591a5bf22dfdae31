//! `retrysim slurm` (docs/cluster.md): the job scripts it writes, its errors, and
//! a real single-node Slurm cluster (scripts/slurm-local.sh) running a 12-point sweep as a
//! 4-task job array plus its merge job. The merged files must be byte-identical to one
//! `retrysim run`, also after a shard is deleted, made partial or fails and its task is
//! submitted again.
//!
//! The cluster test needs root (the script installs Debian's slurm-wlm and munge when missing
//! and starts the daemons); it fails, saying why, when the cluster cannot start.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_retrysim");
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/slurm-local.sh");
const SHARDS: u32 = 4;
/// The files of a whole run that a merge must reproduce byte for byte.
const FILES: [&str; 4] = ["runs.csv", "summary.csv", "timeseries.csv", "manifest.json"];

fn sweep() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/slurm/sweep.toml")
}

fn retrysim(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args);
    c
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn run_ok(c: &mut Command) -> Output {
    let out = c.output().unwrap_or_else(|e| panic!("{c:?} did not start: {e}"));
    assert!(
        out.status.success(),
        "{c:?} failed ({}):\n{}\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    out
}

/// The sweep run in one process, into `dir`, with `extra` arguments.
fn single_run(dir: &Path, extra: &[&str]) {
    run_ok(
        retrysim(&["run", sweep().to_str().unwrap(), "--quiet", "--threads", "2", "--out"])
            .arg(dir)
            .args(extra),
    );
}

/// `retrysim slurm` of the sweep into `dir`, with `extra` arguments.
fn slurm(dir: &Path, extra: &[&str]) -> Command {
    let mut c = retrysim(&["slurm", sweep().to_str().unwrap(), "--shards", &SHARDS.to_string(), "--out"]);
    c.arg(dir).args(extra);
    c
}

/// Asserts that `merged` holds the same files as `single`, byte for byte (the manifest but
/// for its command line).
fn assert_same_result(merged: &Path, single: &Path, context: &str) {
    for f in FILES {
        let (a, b) = (merged.join(f), single.join(f));
        let a_bytes = std::fs::read(&a).unwrap_or_else(|e| panic!("{context}: {}: {e}", a.display()));
        let b_bytes = std::fs::read(&b).unwrap_or_else(|e| panic!("{context}: {}: {e}", b.display()));
        if f == "manifest.json" {
            // The manifest records how each folder was made: the merge keeps the first shard's
            // command line, the single run its own. Everything else must agree.
            let without_command_line = |bytes: &[u8]| {
                let mut v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
                v.as_object_mut().unwrap().remove("command_line");
                v
            };
            assert_eq!(
                without_command_line(&a_bytes),
                without_command_line(&b_bytes),
                "{context}: {} differs from the single-process run's {} (the command line aside)",
                a.display(),
                b.display()
            );
            continue;
        }
        if a_bytes != b_bytes {
            let (a_text, b_text) = (text(&a_bytes), text(&b_bytes));
            let line = a_text.lines().zip(b_text.lines()).position(|(x, y)| x != y);
            panic!(
                "{context}: {} differs from the single-process run's {} ({} vs {} bytes; first differing line: {line:?})",
                a.display(),
                b.display(),
                a_bytes.len(),
                b_bytes.len()
            );
        }
    }
    assert!(merged.join("report.html").is_file(), "{context}: the merge drew no report.html");
}

/// Deletes the merged files, so that a later comparison proves the merge ran again.
fn delete_merged(dir: &Path) {
    for f in FILES.iter().chain(&["report.html"]) {
        let _ = std::fs::remove_file(dir.join(f));
    }
}

/// `bash SCRIPT` with the given environment, for the scripts run without Slurm.
fn bash(script: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = Command::new("bash");
    c.arg(script).envs(env.iter().copied());
    c.output().unwrap_or_else(|e| panic!("bash {} did not start: {e}", script.display()))
}

#[test]
fn scripts_run_the_shards_and_merge_them_without_slurm() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, single) = (tmp.path().join("cluster"), tmp.path().join("single"));
    // The changes reach every task as given: the merged manifest names them, as a run's does.
    let changes = ["--set", "strategies.full-jitter.backoff.base=50ms", "--seed", "5"];
    let mut args = vec!["--cpus-per-task", "2", "--time", "10:00"];
    args.extend(changes);
    let out = run_ok(&mut slurm(&dir, &args));
    let stdout = text(&out.stdout);
    let array = dir.join("array.sbatch");
    let merge = dir.join("merge.sbatch");
    let command = format!(
        "jid=$(sbatch --parsable {}) && sbatch --dependency=afterok:$jid {}",
        array.display(),
        merge.display()
    );
    assert!(stdout.contains(&command), "the submit command is not printed:\n{stdout}");
    for script in [&array, &merge] {
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(script).unwrap().permissions());
        assert_eq!(mode & 0o111, 0o111, "{} is not executable", script.display());
    }
    assert!(dir.join("logs").is_dir(), "no logs/ folder for Slurm's output files");
    let a = std::fs::read_to_string(&array).unwrap();
    for line in ["#SBATCH --array=0-3\n", "#SBATCH --cpus-per-task=2\n", "#SBATCH --time=10:00\n"] {
        assert!(a.contains(line), "array.sbatch lacks {line:?}:\n{a}");
    }
    assert!(a.contains(&format!("exec {BIN} run {}", sweep().display())), "absolute paths:\n{a}");

    // What Slurm does, by hand: every task, then the merge.
    for task in 0..SHARDS {
        let id = task.to_string();
        let out = bash(&array, &[("SLURM_ARRAY_TASK_ID", &id), ("SLURM_CPUS_PER_TASK", "1")]);
        assert!(out.status.success(), "task {task}: {}", text(&out.stderr));
    }
    single_run(&single, &changes);
    let out = bash(&merge, &[]);
    assert!(out.status.success(), "merge.sbatch: {}", text(&out.stderr));
    assert_same_result(&dir, &single, "scripts run by hand");

    // A missing shard: the merge script names its task and the command that reruns it.
    std::fs::remove_dir_all(dir.join("shard-2")).unwrap();
    let out = bash(&merge, &[]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "merge.sbatch succeeded without shard-2");
    let rerun = format!("sbatch --array=2 {}", array.display());
    assert!(stderr.contains(&rerun) && stderr.contains("--shard 3/4"), "{stderr}");
    // A script run outside Slurm by mistake says so.
    let out = bash(&array, &[]);
    assert!(!out.status.success() && text(&out.stderr).contains("submit this script with sbatch"));
}

#[test]
fn submission_errors_are_clear_and_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    // No sbatch on the PATH.
    let empty = tmp.path().join("empty-path");
    std::fs::create_dir(&empty).unwrap();
    let out = slurm(&dir, &["--submit"]).env("PATH", &empty).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("`sbatch` is not on the PATH") && stderr.contains("jid=$(sbatch --parsable"),
        "{stderr}"
    );
    assert!(dir.join("array.sbatch").is_file(), "the scripts are written before submitting");
    // sbatch refuses the job.
    let fake = tmp.path().join("fake-path");
    std::fs::create_dir(&fake).unwrap();
    std::fs::write(
        fake.join("sbatch"),
        "#!/bin/sh\necho 'sbatch: error: Batch job submission failed: Invalid partition name specified' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(fake.join("sbatch"), std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .unwrap();
    let path = format!("{}:/usr/bin:/bin", fake.display());
    let out = slurm(&dir, &["--submit", "--partition", "nope"]).env("PATH", &path).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("Invalid partition name specified") && stderr.contains("array.sbatch"),
        "{stderr}"
    );
}

#[test]
fn bad_flags_are_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    for (args, fragment) in [
        (&["--time", "1h"][..], "--time 1h"),
        (&["--partition", "a b"][..], "--partition a b"),
        (&["--set", "server.concurency=5"][..], "server.concurrency"),
    ] {
        let out = slurm(&dir, args).output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(fragment), "{args:?}: {stderr}");
    }
    let out = retrysim(&["slurm", sweep().to_str().unwrap(), "--shards", "25", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("24 cell(s)"), "{}", text(&out.stderr));
    let out =
        retrysim(&["slurm", sweep().to_str().unwrap(), "--shards", "0", "--out"]).arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let space = tmp.path().join("with space");
    let out = retrysim(&["slurm", sweep().to_str().unwrap(), "--shards", "2", "--out"])
        .arg(&space)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(!dir.exists() && !space.exists(), "bad input wrote a folder");
}

// ---- the real cluster ----

/// The local cluster of scripts/slurm-local.sh; stopped at the end if this test started it.
struct Cluster {
    started_here: bool,
}

impl Cluster {
    fn start() -> Cluster {
        let up = Command::new("bash").args([SCRIPT, "status"]).output().is_ok_and(|o| o.status.success());
        if !up {
            let started = Instant::now();
            // Bounded: installing the packages takes about 15 s, the node is idle seconds later.
            let out = super::with_apt_lock(|| {
                Command::new("timeout")
                    .args(["300", "bash", SCRIPT, "start"])
                    .env("SLURM_LOCAL_WAIT", "60")
                    .output()
                    .unwrap_or_else(|e| panic!("cannot run {SCRIPT}: {e}"))
            });
            assert!(
                out.status.success(),
                "the local Slurm cluster did not start ({SCRIPT} start: {}, after {:.0?}); this test needs \
                 root, and apt-get to install slurm-wlm and munge when they are missing (or leave it out \
                 with `cargo test --release -- --skip system::`):\n{}\n{}",
                out.status,
                started.elapsed(),
                text(&out.stdout),
                text(&out.stderr)
            );
        }
        Cluster { started_here: !up }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.started_here {
            let _ = Command::new("timeout").args(["60", "bash", SCRIPT, "stop"]).output();
        }
    }
}

/// States after which a job does nothing more.
const FINAL: [&str; 9] = [
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "PREEMPTED",
    "OUT_OF_MEMORY",
    "BOOT_FAIL",
    "DEADLINE",
];

/// `squeue`'s lines `JOBID STATE REASON` for `job` (an array's tasks each have one),
/// finished jobs included.
fn squeue(job: &str) -> String {
    Command::new("squeue")
        .args(["-h", "-t", "all", "-j", job, "-o", "%i %T %r"])
        .output()
        .map(|o| text(&o.stdout) + &text(&o.stderr))
        .unwrap_or_else(|e| format!("squeue did not run: {e}"))
}

/// Every log file in `dir/logs`, for a failure message.
fn logs(dir: &Path) -> String {
    let mut all = String::new();
    let mut files: Vec<_> =
        std::fs::read_dir(dir.join("logs")).map_or(Vec::new(), |r| r.flatten().map(|e| e.path()).collect());
    files.sort();
    for f in files {
        let t = std::fs::read_to_string(&f).unwrap_or_default();
        let tail: Vec<&str> = t.lines().rev().take(8).collect();
        all.push_str(&format!("--- {}\n", f.display()));
        for l in tail.iter().rev() {
            all.push_str(l);
            all.push('\n');
        }
    }
    all
}

/// Waits (at most a minute) until job `id` is finished; returns its state.
fn wait_for(id: &str, dir: &Path) -> String {
    let started = Instant::now();
    loop {
        let lines = squeue(id);
        let state = lines.split_whitespace().nth(1).unwrap_or("").to_owned();
        if FINAL.contains(&state.as_str()) {
            return state;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let queue = Command::new("squeue").args(["-t", "all"]).output().map(|o| text(&o.stdout));
            panic!(
                "job {id} did not finish within 60 s (squeue: {lines:?}); the queue:\n{}\nlogs:\n{}",
                queue.unwrap_or_default(),
                logs(dir)
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Submits `sbatch --parsable ARGS`; returns the job id.
fn sbatch(args: &[&str]) -> String {
    let out = run_ok(Command::new("sbatch").arg("--parsable").args(args));
    text(&out.stdout).trim().split(';').next().unwrap().to_owned()
}

/// The job id on the line of `retrysim slurm --submit`'s output that starts with `prefix`.
fn job_id(stdout: &str, prefix: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("no `{prefix}N:` line in:\n{stdout}"))
        .to_owned()
}

fn log_of(dir: &Path, array: &str, task: u32) -> String {
    std::fs::read_to_string(dir.join(format!("logs/array-{array}-{task}.out"))).unwrap_or_default()
}

#[test]
fn a_sweep_runs_as_a_job_array_on_a_local_slurm_cluster() {
    let started = Instant::now();
    let _cluster = Cluster::start();
    let tmp = tempfile::tempdir().unwrap();
    let (dir, single) = (tmp.path().join("cluster"), tmp.path().join("single"));
    let merged_ok = |merge: &str, context: &str| {
        let state = wait_for(merge, &dir);
        assert_eq!(state, "COMPLETED", "{context}: merge job {merge} ended {state}; logs:\n{}", logs(&dir));
        assert_same_result(&dir, &single, context);
    };

    // 1. Submit the array and its merge; the single-process run meanwhile.
    let out = run_ok(&mut slurm(&dir, &["--submit"]));
    let stdout = text(&out.stdout);
    let (array, merge) = (job_id(&stdout, "array job "), job_id(&stdout, "merge job "));
    single_run(&single, &[]);
    merged_ok(&merge, "first submission");
    for task in 0..SHARDS {
        assert_eq!(squeue(&format!("{array}_{task}")).split_whitespace().nth(1), Some("COMPLETED"));
    }

    // 2. One shard's output deleted: rerun that task alone, then the merge.
    std::fs::remove_dir_all(dir.join("shard-2")).unwrap();
    delete_merged(&dir);
    let array_sbatch = dir.join("array.sbatch").to_string_lossy().into_owned();
    let merge_sbatch = dir.join("merge.sbatch").to_string_lossy().into_owned();
    let rerun = sbatch(&["--array=2", &array_sbatch]);
    let merge = sbatch(&[&format!("--dependency=afterok:{rerun}"), &merge_sbatch]);
    merged_ok(&merge, "shard-2 deleted, task 2 rerun");
    assert!(log_of(&dir, &rerun, 2).contains("wrote"), "task 2 did not recompute its shard");

    // 3. Resubmit everything with shard-1 partial (a task killed before its manifest) and
    //    shard-3 unwritable (its task fails): complete shards are skipped, the partial one is
    //    recomputed, the failed task cancels the merge instead of leaving it pending.
    std::fs::remove_file(dir.join("shard-1/manifest.json")).unwrap();
    std::fs::write(dir.join("shard-1/runs.csv"), "half a file").unwrap();
    std::fs::remove_dir_all(dir.join("shard-3")).unwrap();
    std::fs::write(dir.join("shard-3"), "not a folder").unwrap();
    delete_merged(&dir);
    let out = run_ok(&mut slurm(&dir, &["--submit"]));
    let stdout = text(&out.stdout);
    let (array, merge) = (job_id(&stdout, "array job "), job_id(&stdout, "merge job "));
    let state = wait_for(&merge, &dir);
    assert_eq!(state, "CANCELLED", "the merge after a failed task: {}", squeue(&merge));
    assert_eq!(squeue(&format!("{array}_3")).split_whitespace().nth(1), Some("FAILED"), "{}", logs(&dir));
    for task in [0, 2] {
        let log = log_of(&dir, &array, task);
        assert!(log.contains("skipped (--resume)"), "task {task} recomputed a complete shard:\n{log}");
    }
    assert!(log_of(&dir, &array, 1).contains("wrote"), "the partial shard-1 was not recomputed");
    assert!(!dir.join("manifest.json").exists(), "a merge ran despite the failed task");

    // The failed task alone, once its cause is gone, then the merge.
    std::fs::remove_file(dir.join("shard-3")).unwrap();
    let rerun = sbatch(&["--array=3", &array_sbatch]);
    let merge = sbatch(&[&format!("--dependency=afterok:{rerun}"), &merge_sbatch]);
    merged_ok(&merge, "task 3 failed, then rerun alone");
    eprintln!("slurm integration test: {:.1?}", started.elapsed());
}
