//! A gRPC service config written by `retrysim export grpc` is accepted by a real gRPC client:
//! Python's grpcio (pinned, installed from PyPI into a virtual environment under the target
//! dir) makes a channel with it as `grpc.service_config` and calls a method. grpcio validates
//! the service config when the call starts and fails it with INVALID_ARGUMENT ("errors
//! validating service config") when it is wrong; a valid one fails with UNAVAILABLE instead
//! (nothing listens on port 1). Broken configs are checked to be refused, so the test can fail.
//!
//! Needs `python3` with `venv` and PyPI: the test installs grpcio when the environment lacks
//! it, and otherwise fails saying what to install.

use retrysim::experiment::merged_strategy;
use retrysim::interop::format;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use toml::{Table, Value};

/// The grpcio the test was checked with.
const GRPCIO: &str = "1.85.1";

/// Reads a service config on stdin, calls a method through a channel made with it, and prints
/// the call's status code and details.
const CALL: &str = r#"
import sys, grpc
config = sys.stdin.read()
channel = grpc.insecure_channel("127.0.0.1:1", options=[("grpc.service_config", config)])
try:
    channel.unary_unary("/retrysim.Echo/Echo")(b"", timeout=3)
    print("OK")
except grpc.RpcError as e:
    print(e.code().name, e.details())
"#;

/// The python of a virtual environment with grpcio, made (and grpcio installed) if missing.
fn python() -> PathBuf {
    let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("grpcio-{GRPCIO}"));
    let python = venv.join("bin/python");
    let fix = format!(
        "install Python's venv and pip (`apt-get install -y python3-venv python3-pip`) and let pip reach PyPI \
         (`python3 -m venv {0} && {0}/bin/pip install grpcio=={GRPCIO}`), or leave the tests of real components \
         out with `cargo test --release -- --skip system::`",
        venv.display()
    );
    let has_grpc =
        || Command::new(&python).args(["-c", "import grpc"]).output().is_ok_and(|o| o.status.success());
    if has_grpc() {
        return python;
    }
    let python3 = super::provision(&["python3"], "python3");
    let made = Command::new(&python3).args(["-m", "venv"]).arg(&venv).output().expect("python3 runs");
    assert!(
        made.status.success(),
        "`python3 -m venv` failed: {fix}\n{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let pip = Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", "--disable-pip-version-check", &format!("grpcio=={GRPCIO}")])
        .output()
        .expect("pip runs");
    assert!(
        pip.status.success(),
        "pip could not install grpcio {GRPCIO}: {fix}\n{}",
        String::from_utf8_lossy(&pip.stderr)
    );
    assert!(has_grpc(), "grpcio {GRPCIO} was installed but does not import: {fix}");
    python
}

/// The status grpcio gives a call on a channel with `config`.
fn call_with(python: &PathBuf, config: &str) -> String {
    let mut child = Command::new(python)
        .args(["-c", CALL])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python runs");
    child.stdin.take().unwrap().write_all(config.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the grpcio script failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn exported(body: &str) -> String {
    let mut t: Table = body.parse().unwrap();
    t.insert("name".into(), Value::from("s"));
    format("grpc").unwrap().export(&t, false).unwrap_or_else(|e| panic!("{body}: {e}")).text
}

#[test]
fn grpcio_accepts_exported_service_configs_and_refuses_broken_ones() {
    let python = python();
    let tree: Table = "[[strategies]]\nname = \"g\"\npreset = \"grpc\"\n".parse().unwrap();
    let mut preset = merged_strategy(&tree, 0).unwrap();
    preset.insert("name".into(), Value::from("g"));
    let retry = format("grpc").unwrap().export(&preset, false).unwrap().text;
    let configs = [
        retry.clone(),
        exported(
            r#"max_attempts = 5
               deadline = "2s"
               retry_on = [409, 429, 500, 503, 504, "connection-error"]
               honor_retry_after = true
               retry_after_mode = "grpc-pushback"
               backoff = { kind = "proportional-jitter", base = "25ms", cap = "2.5s", multiplier = 1.6, p = 0.2 }"#,
        ),
        exported(
            r#"max_attempts = 1
               honor_retry_after = true
               retry_after_mode = "grpc-pushback"
               backoff = { kind = "none" }
               hedge = { max_attempts = 3, delay = "50ms", non_fatal = [503, "connection-error"] }
               budget = { kind = "grpc-throttle", max_tokens = 5.0, token_ratio = 0.5 }"#,
        ),
    ];
    for config in &configs {
        let status = call_with(&python, config);
        assert!(
            !status.starts_with("INVALID_ARGUMENT") && !status.contains("service config"),
            "grpcio refused an exported service config: {status}\n{config}"
        );
        assert!(status.starts_with("UNAVAILABLE") || status.starts_with("DEADLINE_EXCEEDED"), "{status}");
    }
    // The same check refuses what is broken: the test can fail.
    for (from, to) in [
        ("\"maxAttempts\": 4", "\"maxAttempts\": 1"),
        ("\"initialBackoff\": \"0.1s\"", "\"initialBackoff\": \"100ms\""),
        ("\"retryableStatusCodes\": [\n", "\"retryableStatusCodes\": [\"NO_SUCH_CODE\",\n"),
    ] {
        assert!(retry.contains(from), "{from} not in\n{retry}");
        let broken = retry.replace(from, to);
        let status = call_with(&python, &broken);
        assert!(
            status.starts_with("INVALID_ARGUMENT") && status.contains("service config"),
            "grpcio accepted a broken service config ({from} -> {to}): {status}"
        );
    }
}
