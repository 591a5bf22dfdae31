//! SIGTERM (Slurm's time limit, Kubernetes' eviction) and SIGINT (Ctrl-C) stop `retrysim run`
//! the same way: the temporary files are deleted, the files of an earlier run in the same
//! folder are untouched, the message says so, and the exit status is the shell's 128 + the
//! signal's number.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A small experiment whose runs take a millisecond or so: with many of them the run lasts
/// long enough to be stopped, and it stops quickly (a worker finishes the run it is in).
const TINY: &str = r#"
name = "tiny"
seed = 1
runs = 3
horizon = "2s"
[workload]
kind = "closed"
clients = 5
[server]
concurrency = 2
queue = 0
service_time = { dist = "exponential", mean = "10ms" }
[client]
max_attempts = 3
[[strategies]]
name = "immediate"
backoff = { kind = "none" }
"#;

fn retrysim(file: &Path, out: &Path, runs: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_retrysim"));
    cmd.arg("run").arg(file).arg("--out").arg(out).args(["--quiet", "--threads", "1", "--runs", runs]);
    cmd
}

/// Every file of `dir` (not its subfolders) with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect()
}

fn temporary_files(dir: &Path) -> Vec<String> {
    files(dir).into_keys().filter(|n| n.starts_with(".retrysim-") && n.ends_with(".tmp")).collect()
}

fn stopped_by(signal: i32, name: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("tiny.toml");
    std::fs::write(&file, TINY).unwrap();
    let out = tmp.path().join("out");
    let earlier = retrysim(&file, &out, "3").status().unwrap();
    assert!(earlier.success());
    let before = files(&out);
    assert!(before.contains_key("runs.csv") && before.contains_key("manifest.json"));

    let mut child = retrysim(&file, &out, "100000000").stderr(Stdio::piped()).spawn().unwrap();
    // Started writing: the writer's temporary files are there, then a few runs more.
    let started = Instant::now();
    while temporary_files(&out).is_empty() {
        assert!(started.elapsed() < Duration::from_secs(60), "the run never started writing");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before it was signalled");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: sending a signal to a child process we started and have not waited for.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(128 + signal), "{name}: {stderr}");
    assert!(stderr.contains(&format!("interrupted by {name}")), "{name}: {stderr}");
    assert!(stderr.contains("untouched"), "{name}: {stderr}");
    assert_eq!(temporary_files(&out), Vec::<String>::new(), "{name} left temporary files");
    assert!(files(&out) == before, "{name}: the earlier result changed");
}

#[test]
fn sigterm_deletes_the_temporary_files_and_exits_143() {
    stopped_by(libc::SIGTERM, "SIGTERM");
}

#[test]
fn sigint_deletes_the_temporary_files_and_exits_130() {
    stopped_by(libc::SIGINT, "SIGINT");
}
