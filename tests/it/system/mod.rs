//! Tests against real components the machine must have: a headless browser, a Slurm cluster,
//! Python's grpcio, and the production retry libraries of the conformance suite (Python and
//! Node packages from their registries). Each provisions its component when it is missing
//! (Debian's packages through `apt-get`, as root; grpcio and the libraries into the target
//! directory, a venv and `npm ci`), so README's `cargo test --release` passes on a fresh
//! machine; where it cannot (no root, no apt-get, no registry) the test fails naming what to
//! install. They are
//! never skipped silently: a contributor without root leaves exactly these out with
//! `cargo test --release -- --skip system::` (README, "Two commands").

use std::process::Command;
use std::sync::Mutex;

mod browser;
mod conformance;
mod conformance_exports;
mod grpc_service_config;
mod slurm;

/// Held while a test installs packages: the two tests run in parallel threads, and apt-get
/// refuses to run twice at once.
static APT: Mutex<()> = Mutex::new(());

/// The path of the first of `names` on PATH.
fn which(names: &[&str]) -> Option<String> {
    names.iter().find_map(|name| {
        let out = Command::new("sh").arg("-c").arg(format!("command -v {name}")).output().ok()?;
        let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && !path.is_empty()).then_some(path)
    })
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// The path of one of `names`, installing Debian's `package` first when none is on PATH.
/// Panics, naming the install command and the skip flag, when it cannot be installed here.
pub fn provision(names: &[&str], package: &str) -> String {
    let _apt = APT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(path) = which(names) {
        return path;
    }
    let fix = format!(
        "install it with `apt-get update && apt-get install -y {package}` (as root), or leave the \
         tests of real components out with `cargo test --release -- --skip system::`"
    );
    assert!(
        is_root(),
        "{package} is not installed and this test is not root, so it cannot install it: {fix}"
    );
    assert!(which(&["apt-get"]).is_some(), "{package} is not installed and there is no apt-get: {fix}");
    for args in [vec!["update", "-qq"], vec!["install", "-y", "-qq", package]] {
        let out = Command::new("apt-get")
            .args(&args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
            .unwrap_or_else(|e| panic!("cannot run apt-get: {e}; {fix}"));
        assert!(
            out.status.success(),
            "`apt-get {}` failed ({}): {fix}\n{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    which(names)
        .unwrap_or_else(|| panic!("apt-get installed {package} but none of {names:?} is on PATH: {fix}"))
}

/// Runs `f` holding the package lock (for a script that installs packages itself).
pub fn with_apt_lock<T>(f: impl FnOnce() -> T) -> T {
    let _apt = APT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    f()
}
