//! The conformance suite: the production retry libraries themselves (urllib3, botocore's
//! standard and adaptive modes, tenacity, axios-retry), driven by the scripts in `conformance/`
//! against `retrysim serve`, each attempt they send compared with what `retrysim run` decides
//! for the matching preset (docs/real-client.md, "The conformance suite").
//!
//! For each case (a library, one of its configurations, a scenario of `conformance/scenarios/`)
//! the test appends the case's strategy (the preset, plus the keys of the tuned configuration)
//! to the scenario, serves it on a free loopback port, runs the driver, and reads requests.csv:
//!
//! - **Attempts, exactly.** Every answer is replayed, in the order the answers were sent,
//!   through the decision `run` makes ([`RetryPolicy::after_failure`] with the strategy's
//!   [`Gate`]: `retry_on`, `max_attempts`, the retry quota): after each failed attempt the
//!   policy must retry exactly when the library did. A library is deterministic here (its
//!   decisions depend on the answers only), so one differing decision fails the case.
//! - **Delays, by a Kolmogorov-Smirnov test.** Each delay (the next attempt's arrival minus the
//!   previous answer) is placed in the distribution the same decision draws its delay from
//!   (1,000 draws given the retry number and the answer's Retry-After: the backoff, with
//!   Retry-After honoured, capped or ignored as the preset says) by its probability integral
//!   transform; a delay within [`LATE`] after a point of that distribution (a constant delay,
//!   a Retry-After) counts as the point, and ties on a point get a uniform value within its
//!   mass (the randomised transform). The server's clock includes the client's own time to
//!   send again (a few ms for botocore, which signs every attempt): the test takes it as the
//!   constant in [0, 10 ms] that fits best ([`delay_p_value`]). The transforms are uniform
//!   when the library follows the formula; the case fails when the KS p-value is below
//!   [`ALPHA`] = 0.0001 (37 cases compare delays: a false alarm in at most 0.4 % of runs), or
//!   when a delay comes more than [`EARLY`] before anything the formula allows. Python's
//!   `random` is seeded (the drivers' `--seed`); Node's `Math.random` cannot be.
//! - **Quotas, by `retrysim run`.** In a long outage, one library client's total retries must
//!   equal the retries of one simulated client of the preset in the same outage.
//!
//! Where a library departs from its preset in a way the preset documents (its `not modelled`
//! notes), the case says so and adds the keys that express the difference: the verdict then
//! reads "matches, documented difference". `RETRYSIM_WRITE_CONFORMANCE=1` writes the results
//! into docs/conformance.md; otherwise the committed table's stable columns (library, version,
//! configuration, scenario, preset, verdict) must equal this run's. Counts and p-values vary
//! with timing and are not compared.
//!
//! The libraries are installed from the registries into `target/tmp/conformance-env/` (a
//! Python venv from `conformance/requirements.txt`, `npm ci` from `conformance/package.json`
//! and its lock) when missing or when those files changed; the test fails naming the fix when
//! python3, its venv module, node or npm are missing.

use crate::support::run_one;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use retrysim::assembly::client::{gate_params, retry_policy};
use retrysim::engine::{Instant, Span};
use retrysim::experiment::{self, Overrides, Strategy};
use retrysim::policy::gate::{CostClass, Gate};
use retrysim::policy::{Decision, FailedAttempt, Outcome, RetryAfter, RetryPolicy};
use retrysim::stats::{ks_p_value, ks_statistic};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant as WallClock};

/// The KS test's significance: a case whose delays give p below it fails.
pub(super) const ALPHA: f64 = 0.0001;
/// How far after a point of the formula (a constant delay, a Retry-After) a delay still counts
/// as that point: the client's own time to send again (Node's event loop with four clients on
/// a machine running other builds took up to 61 ms, median 17 ms, for axios-retry's
/// "immediate" retries; Python's threads a few ms, but botocore's Retry-After waits of 1 s came
/// back late enough with a CI run beside the suite to fail at 50 ms: KS p 3e-6 on 16 delays).
/// Still far below any backoff step a Retry-After point is told apart from.
const LATE: f64 = 0.150;
/// How far before anything the formula allows a delay may come (clock ticks: serve logs an
/// answer when it is handed to the connection, the client sees it a little later).
const EARLY: f64 = 0.002;
/// Draws of the formula per delay.
const DRAWS: usize = 1000;
/// The largest constant client overhead the delay test allows for (see [`delay_p_value`]).
const OVERHEAD_MAX: f64 = 0.010;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Which program runs a driver.
#[derive(Clone, Copy, Debug)]
pub(super) enum Runtime {
    Python,
    Node,
}

/// One library configuration: its driver, the preset it is compared with, and the keys a tuned
/// configuration adds to that preset (in the experiment file's terms).
#[derive(Clone, Copy, Debug)]
pub(super) struct Config {
    pub(super) library: &'static str,
    pub(super) runtime: Runtime,
    pub(super) driver: &'static str,
    /// The driver's configuration argument.
    pub(super) name: &'static str,
    pub(super) preset: &'static str,
    pub(super) keys: &'static str,
    pub(super) workers: u32,
}

/// A difference between the library and its preset that the preset documents, as the keys
/// that express it for one scenario.
#[derive(Clone, Copy, Debug)]
pub(super) struct Difference {
    keys: &'static str,
    why: &'static str,
    /// Whether the delays are compared (the attempts always are).
    delays: bool,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Case {
    pub(super) config: Config,
    pub(super) scenario: &'static str,
    pub(super) difference: Option<Difference>,
}

const URLLIB3_DEFAULTS: Config = Config {
    library: "urllib3",
    runtime: Runtime::Python,
    driver: "urllib3_driver.py",
    name: "defaults",
    preset: "urllib3",
    keys: "",
    workers: 8,
};
const URLLIB3_TUNED: Config = Config {
    name: "tuned",
    keys: r#"max_attempts = 4
retry_on = [429, 500, 502, 503, 504, "timeout", "connection-error"]
backoff = { kind = "additive-jitter", base = "20ms", cap = "1s", multiplier = 2.0, jitter = "50ms", immediate_first = true }"#,
    workers: 16,
    ..URLLIB3_DEFAULTS
};
const BOTOCORE_STANDARD: Config = Config {
    library: "botocore standard",
    runtime: Runtime::Python,
    driver: "botocore_driver.py",
    name: "standard-defaults",
    preset: "aws-standard-2026",
    keys: "",
    workers: 8,
};
const BOTOCORE_STANDARD_TUNED: Config =
    Config { name: "standard-tuned", keys: "max_attempts = 5", ..BOTOCORE_STANDARD };
const BOTOCORE_ADAPTIVE: Config = Config {
    library: "botocore adaptive",
    name: "adaptive-defaults",
    preset: "aws-adaptive-2026",
    ..BOTOCORE_STANDARD
};
const BOTOCORE_ADAPTIVE_TUNED: Config =
    Config { name: "adaptive-tuned", keys: "max_attempts = 5", ..BOTOCORE_ADAPTIVE };
const TENACITY_DEFAULTS: Config = Config {
    library: "tenacity",
    runtime: Runtime::Python,
    driver: "tenacity_driver.py",
    name: "defaults",
    preset: "tenacity",
    // stop_never: the loader refuses unlimited retries without a delay (they could loop without
    // simulated time advancing), so a bound no operation here reaches stands for it.
    keys: "max_attempts = 1000000",
    workers: 2,
};
const TENACITY_TUNED: Config = Config {
    name: "tuned",
    keys: r#"max_attempts = 4
backoff = { kind = "full-jitter", base = "50ms", cap = "1s", multiplier = 2.0 }"#,
    workers: 16,
    ..TENACITY_DEFAULTS
};
const AXIOS_DEFAULTS: Config = Config {
    library: "axios-retry",
    runtime: Runtime::Node,
    driver: "axios_retry_driver.js",
    name: "defaults",
    preset: "axios-retry",
    keys: "",
    workers: 4,
};
const AXIOS_TUNED: Config = Config {
    name: "tuned",
    keys: r#"backoff = { kind = "proportional-jitter", base = "220ms", multiplier = 2.0, p = 0.0909090909090909 }"#,
    workers: 16,
    ..AXIOS_DEFAULTS
};

/// The scenarios every configuration meets (conformance/scenarios/).
const SCENARIOS: [&str; 4] = ["outage-503", "outage-503-retry-after", "throttle-429", "commit-504"];

/// urllib3 retries 413/429/503 without `status_forcelist` only when the answer carries
/// Retry-After (the preset's note): a 503 without it is not retried.
const URLLIB3_NO_RETRY_AFTER: Difference = Difference {
    keys: r#"retry_on = [413, 429, "timeout", "connection-error"]"#,
    why: "503 without Retry-After is not retried (urllib3 retries 413/429/503 only with Retry-After)",
    delays: true,
};
/// botocore backs off from 1 s after a throttling error, from 50 ms after others (the
/// preset's note: one base per strategy).
const BOTOCORE_THROTTLING_BASE: Difference = Difference {
    keys: r#"backoff = { kind = "full-jitter", base = "1s", cap = "20s", multiplier = 2.0 }"#,
    why: "throttling errors back off from 1 s, not 50 ms",
    delays: true,
};
/// Adaptive mode's rate limiter is switched on by the first throttling answer and then holds
/// every send until its CUBIC token bucket allows it: the replay does not play it, so the
/// delays of a throttled adaptive client are not compared.
const BOTOCORE_ADAPTIVE_THROTTLED: Difference = Difference {
    why: "throttling errors back off from 1 s, not 50 ms; delays not compared: the rate limiter, on after the first throttle, holds sends",
    delays: false,
    ..BOTOCORE_THROTTLING_BASE
};
/// axios-retry's exponentialDelay jitters the Retry-After too: max(2^n f, ra) * U(1, 1.2)
/// (the preset's note); `at-least-backoff` takes the Retry-After as it is.
const AXIOS_JITTERED_RETRY_AFTER: Difference = Difference {
    keys: "",
    why: "delays not compared: the Retry-After is jittered too, max(2^n * 100 ms, ra) * U(1, 1.2), which no retry_after_mode expresses",
    delays: false,
};

fn cases() -> Vec<Case> {
    let configs = [
        URLLIB3_DEFAULTS,
        URLLIB3_TUNED,
        BOTOCORE_STANDARD,
        BOTOCORE_STANDARD_TUNED,
        BOTOCORE_ADAPTIVE,
        BOTOCORE_ADAPTIVE_TUNED,
        TENACITY_DEFAULTS,
        TENACITY_TUNED,
        AXIOS_DEFAULTS,
        AXIOS_TUNED,
    ];
    let mut cases = Vec::new();
    for config in configs {
        for scenario in SCENARIOS {
            let difference = match (config.library, config.name, scenario) {
                ("urllib3", "defaults", "outage-503") => Some(URLLIB3_NO_RETRY_AFTER),
                ("botocore standard", _, "throttle-429") => Some(BOTOCORE_THROTTLING_BASE),
                ("botocore adaptive", _, "throttle-429") => Some(BOTOCORE_ADAPTIVE_THROTTLED),
                ("axios-retry", "tuned", "outage-503-retry-after" | "throttle-429") => {
                    Some(AXIOS_JITTERED_RETRY_AFTER)
                }
                _ => None,
            };
            cases.push(Case { config, scenario, difference });
        }
    }
    cases
}

// ----- the libraries' environment -----

/// Where the libraries are installed.
struct Toolchain {
    python: PathBuf,
    node_modules: PathBuf,
}

fn found(program: &str, args: &[&str]) -> bool {
    Command::new(program).args(args).output().is_ok_and(|o| o.status.success())
}

fn run_checked(cmd: &mut Command, what: &str, fix: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {what}: {e}; {fix}"));
    assert!(
        out.status.success(),
        "{what} failed ({}): {fix}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The venv and node_modules of `conformance/`, installed when missing or when the pinned
/// versions changed (a stamp file holds the files they were installed from).
fn toolchain() -> &'static Toolchain {
    static TOOLCHAIN: OnceLock<Toolchain> = OnceLock::new();
    TOOLCHAIN.get_or_init(|| {
        let fix = "install python3 with its venv module and pip, node 18 or newer and npm \
                   (`apt-get install -y python3-venv python3-pip nodejs npm`, as root) and let the \
                   test reach PyPI and the npm registry, or leave the tests of real components out \
                   with `cargo test --release -- --skip system::`";
        let conformance = repo().join("conformance");
        let env = Path::new(env!("CARGO_TARGET_TMPDIR")).join("conformance-env");
        let read = |f: &str| std::fs::read_to_string(conformance.join(f)).unwrap();
        let pins =
            format!("{}\n{}\n{}", read("requirements.txt"), read("package.json"), read("package-lock.json"));
        let stamp = env.join("installed-from");
        let python = env.join("venv/bin/python");
        let node_dir = env.join("node");
        if std::fs::read_to_string(&stamp).ok().as_deref() != Some(pins.as_str()) {
            assert!(found("python3", &["--version"]), "python3 is not installed: {fix}");
            assert!(
                found("node", &["--version"]) && found("npm", &["--version"]),
                "node or npm is missing: {fix}"
            );
            let _ = std::fs::remove_dir_all(&env);
            std::fs::create_dir_all(&node_dir).unwrap();
            run_checked(
                Command::new("python3").args(["-m", "venv"]).arg(env.join("venv")),
                "python3 -m venv",
                fix,
            );
            run_checked(
                Command::new(&python)
                    .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
                    .arg(conformance.join("requirements.txt")),
                "pip install -r conformance/requirements.txt",
                fix,
            );
            for f in ["package.json", "package-lock.json"] {
                std::fs::copy(conformance.join(f), node_dir.join(f)).unwrap();
            }
            run_checked(
                Command::new("npm")
                    .args(["ci", "--no-audit", "--no-fund", "--silent"])
                    .current_dir(&node_dir),
                "npm ci (conformance/package.json)",
                fix,
            );
            std::fs::write(&stamp, &pins).unwrap();
        }
        Toolchain { python, node_modules: node_dir.join("node_modules") }
    })
}

// ----- one case -----

/// The experiment file of a case: the scenario with the case's strategy appended.
fn case_file(case: &Case, with_difference: bool) -> String {
    let scenario =
        std::fs::read_to_string(repo().join("conformance/scenarios").join(format!("{}.toml", case.scenario)))
            .unwrap();
    let difference = case.difference.filter(|_| with_difference).map_or("", |d| d.keys);
    format!(
        "{scenario}\n[[strategies]]\nname = \"{}\"\npreset = \"{}\"\n{}\n{difference}\n",
        case.config.library.replace(' ', "-"),
        case.config.preset,
        case.config.keys
    )
}

pub(super) fn strategy_of(text: &str) -> Strategy {
    let exp = experiment::load_str(text, "case.toml", &Overrides::default())
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    exp.points[0].strategies[0].clone()
}

/// A started driver: it has printed its version and waits for the URL.
struct Driver {
    child: Child,
    stdout: BufReader<ChildStdout>,
    version: String,
}

fn start_driver(config: &Config, extra: &[String]) -> Driver {
    let tools = toolchain();
    let dir = repo().join("conformance");
    let mut cmd = match config.runtime {
        Runtime::Python => Command::new(&tools.python),
        Runtime::Node => {
            let mut c = Command::new("node");
            c.env("NODE_PATH", &tools.node_modules);
            c
        }
    };
    cmd.arg(dir.join(config.driver))
        .arg(config.name)
        .args(["--workers", &config.workers.to_string(), "--seed", "1"])
        .args(extra)
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {}: {e}", config.driver));
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let version =
        line.trim().strip_prefix("version ").unwrap_or_else(|| panic!("{}: {line:?}", config.driver));
    Driver { version: version.to_owned(), child, stdout }
}

/// Serves `file` while the driver runs; returns the driver's version and serve's log.
pub(super) fn play(config: &Config, file: &str, dir: &Path, extra: &[String]) -> (String, Log) {
    std::fs::create_dir_all(dir).unwrap();
    let toml = dir.join("case.toml");
    std::fs::write(&toml, file).unwrap();
    let mut driver = start_driver(config, extra);
    let mut serve = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .arg("serve")
        .arg(&toml)
        .args(["--listen", "127.0.0.1:0", "--out"])
        .arg(dir.join("served"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = BufReader::new(serve.stdout.take().unwrap());
    let mut line = String::new();
    said.read_line(&mut line).unwrap();
    let url =
        line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("serve said {line:?}")).to_owned();
    writeln!(driver.child.stdin.as_mut().unwrap(), "{url}").unwrap();
    let started = WallClock::now();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut driver.stdout, &mut rest).unwrap();
    let status = driver.child.wait().unwrap();
    assert!(
        status.success() && rest.contains("done"),
        "{} {} failed: {status}\n{rest}",
        config.driver,
        config.name
    );
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "{} ran for {:?}",
        config.driver,
        started.elapsed()
    );
    // SAFETY: kill only sends a signal to the child we started.
    unsafe { libc::kill(serve.id() as i32, libc::SIGTERM) };
    let mut summary = String::new();
    std::io::Read::read_to_string(&mut said, &mut summary).unwrap();
    assert!(serve.wait().unwrap().success(), "serve did not stop cleanly: {summary}");
    (driver.version, Log::read(&dir.join("served/requests.csv")))
}

/// One attempt of serve's log.
#[derive(Clone, Debug)]
struct Attempt {
    arrival_s: f64,
    answered_s: f64,
    status: u16,
    retry_after_s: Option<f64>,
}

/// One operation of the log: which library client sent it, and its attempts in arrival order.
struct Op {
    client: u32,
    attempts: Vec<Attempt>,
}

/// serve's requests.csv, grouped into operations (`c<client>-w<worker>-<n>`).
pub(super) struct Log {
    ops: Vec<Op>,
}

impl Log {
    fn read(path: &Path) -> Log {
        let t = crate::support::Table::read(path);
        let mut ops: HashMap<String, Vec<Attempt>> = HashMap::new();
        for r in &t.rows {
            assert_eq!(t.get(r, "delivered"), "true", "an answer that did not reach the client: {r:?}");
            let ra = t.get(r, "retry_after");
            ops.entry(t.get(r, "op_id").to_owned()).or_default().push(Attempt {
                arrival_s: t.num(r, "arrival_s"),
                answered_s: t.num(r, "answered_s"),
                status: t.get(r, "status").parse().unwrap(),
                retry_after_s: (!ra.is_empty()).then(|| ra.parse().unwrap()),
            });
        }
        let mut ops: Vec<Op> = ops
            .into_iter()
            .map(|(id, mut attempts)| {
                attempts.sort_by(|a, b| a.arrival_s.total_cmp(&b.arrival_s));
                let parts: Vec<u32> = id
                    .split('-')
                    .map(|p| {
                        p.trim_start_matches(['c', 'w']).parse().unwrap_or_else(|_| panic!("op id {id:?}"))
                    })
                    .collect();
                let [client, _worker, _n] = parts[..] else { panic!("op id {id:?}") };
                Op { client, attempts }
            })
            .collect();
        ops.sort_by(|a, b| a.attempts[0].arrival_s.total_cmp(&b.attempts[0].arrival_s));
        Log { ops }
    }

    fn attempts(&self) -> usize {
        self.ops.iter().map(|o| o.attempts.len()).sum()
    }
}

fn outcome(status: u16) -> Outcome {
    if (200..300).contains(&status) { Outcome::Success } else { Outcome::Status(status) }
}

fn instant(s: f64) -> Instant {
    Instant::from_ns((s * 1e9).round() as u64)
}

/// What the replay found.
#[derive(Debug, Default)]
pub(super) struct Replay {
    /// Failed attempts after which the library and the policy decided the same.
    agreed: usize,
    /// Failed attempts after which they did not: (op index, attempt, what the library did).
    pub(super) differed: Vec<String>,
    /// Each delay, with the sorted draws of the formula it is compared with.
    delays: Vec<(Vec<f64>, f64)>,
    /// Delays earlier than anything the formula allows.
    pub(super) early: Vec<String>,
    retries: usize,
}

/// Replays every answer of `log`, in the order they were sent, through `run`'s retry decision
/// for `strategy`, one gate per library client.
pub(super) fn replay(strategy: &Strategy, log: &Log) -> Replay {
    let policy = retry_policy(strategy);
    let clients = log.ops.iter().map(|o| o.client + 1).max().unwrap_or(1);

    let mut gate = Gate::new(&gate_params(strategy), clients, Xoshiro256PlusPlus::seed_from_u64(1));
    let mut draws = Xoshiro256PlusPlus::seed_from_u64(2);
    let mut events: Vec<(f64, usize, usize)> = Vec::new();
    for (i, op) in log.ops.iter().enumerate() {
        events.extend(op.attempts.iter().enumerate().map(|(j, a)| (a.answered_s, i, j)));
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = Replay::default();
    let mut last_cost = vec![CostClass::NONE; log.ops.len()];
    let mut state: Vec<_> = log.ops.iter().map(|_| policy.backoff.initial_state()).collect();
    for (_, i, j) in events {
        let (client, attempts) = (&log.ops[i].client, &log.ops[i].attempts);
        let a = &attempts[j];
        let retried = j + 1 < attempts.len();
        let o = outcome(a.status);
        if o == Outcome::Success {
            if retried {
                out.differed.push(format!("op {i}: retried after a success"));
            }
            gate.op_ended(*client, true, last_cost[i]);
            continue;
        }
        let failed = FailedAttempt {
            outcome: o,
            attempt: j as u32 + 1,
            k: j as u32 + 1,
            retry_after: a.retry_after_s.map(|s| RetryAfter::After(Span::from_secs_f64(s))),
            started: instant(attempts[0].arrival_s),
            now: instant(a.answered_s),
        };
        let before = state[i];
        let decision = policy.after_failure(
            &failed,
            &mut state[i],
            &mut gate.client(*client, &mut last_cost[i]),
            &mut draws,
        );
        let decided = matches!(decision, Decision::Retry { .. });
        if decided != retried {
            out.differed.push(format!(
                "op {i} attempt {} ({}): the library {} , the preset {decision:?}",
                j + 1,
                a.status,
                if retried { "retried" } else { "stopped" }
            ));
            if !retried {
                gate.op_ended(*client, false, last_cost[i]);
            }
            continue;
        }
        out.agreed += 1;
        if !retried {
            gate.op_ended(*client, false, last_cost[i]);
            continue;
        }
        out.retries += 1;
        let delay = attempts[j + 1].arrival_s - a.answered_s;
        let model = model_delays(&policy, &failed, before, &mut draws);
        if delay < model[0] - EARLY {
            out.early.push(format!(
                "op {i} retry {}: {delay:.4} s before the formula's {:.4} s",
                j + 1,
                model[0]
            ));
        } else {
            out.delays.push((model, delay));
        }
    }
    out
}

/// `DRAWS` delays the policy would wait after `failed`, sorted, in seconds.
fn model_delays(
    policy: &RetryPolicy,
    failed: &FailedAttempt,
    state: retrysim::policy::BackoffState,
    rng: &mut Xoshiro256PlusPlus,
) -> Vec<f64> {
    let mut xs: Vec<f64> = (0..DRAWS)
        .map(|_| {
            let mut state = state;
            match policy.after_failure(failed, &mut state, &mut (), rng) {
                Decision::Retry { delay, .. } => delay.as_secs_f64(),
                other => panic!("the policy retried with a budget but not without one: {other:?}"),
            }
        })
        .collect();
    xs.sort_by(f64::total_cmp);
    xs
}

/// The randomised probability integral transform of `delay`, less the client's `overhead`,
/// under the sorted draws `model`; ties get a uniform value within their mass. A delay within
/// [LATE] after a point of the model (a value drawn at least 1 % of the time: a constant
/// delay, a Retry-After) is that point.
fn pit(model: &[f64], delay: f64, overhead: f64, rng: &mut Xoshiro256PlusPlus) -> f64 {
    let n = model.len() as f64;
    // The draws equal to `x`: the run of them in the sorted model.
    let run = |x: f64| (model.partition_point(|&m| m < x), model.partition_point(|&m| m <= x));
    let mut point = None;
    let mut i = 0;
    while i < model.len() {
        let (_, end) = run(model[i]);
        let m = model[i];
        if (end - i) as f64 >= 0.01 * n && delay >= m - EARLY && delay <= m + LATE {
            point = Some(m);
        }
        i = end;
    }
    let x = point.unwrap_or((delay - overhead).max(model[0]));
    let (below, end) = run(x);
    (below as f64 + retrysim::engine::rng::u01(rng) * (end - below) as f64) / n
}

/// The KS p-value of the delays against their formula, the client's own overhead (the time it
/// takes to send again, which the server's clock includes) taken as the constant in
/// `[0, OVERHEAD_MAX]` (steps of 0.5 ms) that fits best: the test asks whether the delays are
/// the formula plus a small constant, which makes the p-value conservative (a high value
/// does not prove the formula; a low one rejects it for every such overhead).
fn delay_p_value(delays: &[(Vec<f64>, f64)]) -> f64 {
    let steps = (OVERHEAD_MAX / 0.0005).round() as usize;
    let best = (0..=steps)
        .map(|i| {
            let mut ties = Xoshiro256PlusPlus::seed_from_u64(3);
            let mut u: Vec<f64> =
                delays.iter().map(|(m, d)| pit(m, *d, i as f64 * 0.0005, &mut ties)).collect();
            ks_statistic(&mut u)
        })
        .fold(f64::INFINITY, f64::min);
    ks_p_value(best, delays.len())
}

/// One row of the results table.
#[derive(Clone, Debug)]
pub(super) struct Row {
    library: String,
    version: String,
    config: String,
    scenario: String,
    preset: String,
    ops: usize,
    attempts: usize,
    decisions: String,
    delays: usize,
    pub(super) p_value: Option<f64>,
    verdict: String,
    pub(super) passed: bool,
    /// What `retrysim fit` makes of the log (`outage-503` only).
    fit: String,
}

pub(super) fn judge(case: &Case, version: String, log: &Log, r: &Replay) -> Row {
    let delays = case.difference.is_none_or(|d| d.delays);
    let p = (delays && !r.delays.is_empty()).then(|| delay_p_value(&r.delays));
    let passed = r.differed.is_empty() && (!delays || r.early.is_empty()) && p.is_none_or(|p| p >= ALPHA);
    let verdict = match (passed, case.difference) {
        (true, None) => "matches".to_owned(),
        (true, Some(d)) => format!("matches, documented difference: {}", d.why),
        (false, _) => "DIFFERS".to_owned(),
    };
    Row {
        library: case.config.library.to_owned(),
        version,
        config: case.config.name.to_owned(),
        scenario: case.scenario.to_owned(),
        preset: case.config.preset.to_owned(),
        ops: log.ops.len(),
        attempts: log.attempts(),
        decisions: format!("{}/{}", r.agreed, r.agreed + r.differed.len()),
        delays: r.delays.len() + r.early.len(),
        p_value: p,
        verdict,
        passed,
        fit: String::new(),
    }
}

/// The configurations whose `outage-503` log `retrysim fit` cannot name, and why (measured;
/// every other configuration's log must be fitted to its preset's kind).
const FIT_CANNOT: [(&str, &str, &str); 1] =
    [("urllib3", "defaults", "a 503 without Retry-After is not retried: no delay to fit")];

/// What `retrysim fit` makes of a log: the backoff kind it picks, or why it picks none, and
/// the `[[strategies]]` block it prints when it decides.
fn fit_log(log: &Path) -> (String, Option<String>) {
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .arg("fit")
        .arg(log)
        .args(["--format", "serve"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if let Some(best) = text.lines().find_map(|l| l.strip_prefix("best: ")) {
        // The label before the dBIC: "full-jitter" or "additive-jitter, immediate_first".
        let block = text.find("[[strategies]]").map(|i| text[i..].to_owned());
        // ("best: none (every other kind reads as none)" when it has no rival.)
        return (best.split(" (").next().unwrap_or("").to_owned(), block);
    }
    if text.contains("no operation has a second attempt") || text.contains("no retries") {
        return ("no retries in the log".to_owned(), None);
    }
    ("undecided".to_owned(), None)
}

/// The scale of the delay before each retry `1..=retries`: `min(cap, base * multiplier^(k-1))`
/// (from retry 2 with `immediate_first`, whose first retry goes at once), and additive jitter's
/// width. These, not base, multiplier and cap one by one, are what a log shows: with two
/// retries and the cap reached at the second, any multiplier above `cap / base` draws the same
/// delays. (Proportional jitter's `p` is not compared: a Node client's timer noise of several
/// ms blurs it into the overhead; docs/conformance.md prints the fit.)
fn fitted_parameters(b: &retrysim::experiment::BackoffSpec, retries: u32) -> Vec<(String, f64)> {
    use retrysim::experiment::BackoffSpec as B;
    let s = |d: &retrysim::experiment::Duration| d.as_ns() as f64 * 1e-9;
    let cap_s = |c: &Option<retrysim::experiment::Duration>| c.as_ref().map_or(f64::INFINITY, s);
    let scales = |base: f64, multiplier: f64, cap: f64, immediate: bool| -> Vec<(String, f64)> {
        let first = if immediate { 2 } else { 1 };
        (first..=retries)
            .map(|k| (format!("retry {k}"), (base * multiplier.powi((k - first) as i32)).min(cap)))
            .collect()
    };
    match b {
        B::None {} => vec![],
        B::Constant { base } => vec![("base".to_owned(), s(base))],
        B::Linear { base, cap } => {
            (1..=retries).map(|k| (format!("retry {k}"), (s(base) * k as f64).min(cap_s(cap)))).collect()
        }
        B::DecorrelatedJitter { base, .. } | B::DecorrelatedJitterV2 { base, .. } => {
            vec![("base".to_owned(), s(base))]
        }
        B::Exponential { base, cap, multiplier, immediate_first } => {
            scales(s(base), *multiplier, cap_s(cap), *immediate_first)
        }
        B::FullJitter { base, cap, multiplier }
        | B::EqualJitter { base, cap, multiplier }
        | B::ProportionalJitter { base, cap, multiplier, .. } => {
            scales(s(base), *multiplier, cap_s(cap), false)
        }
        B::AdditiveJitter { base, cap, multiplier, jitter, immediate_first } => {
            let mut v = scales(s(base), *multiplier, cap_s(cap), *immediate_first);
            v.push(("jitter".to_owned(), s(jitter)));
            v
        }
    }
}

/// How far a fitted parameter may always be from the preset's: `fit`'s own test recovers base
/// and cap within 10 % from 300 synthetic operations.
const FIT_TOLERANCE: f64 = 0.10;

/// Standard errors a fitted parameter may be from the preset's: a retry late in the
/// operations has few delays (30 of a log's 180 at the fourth), and the fit's scale for it
/// is then known only to tens of percent. The standard error is the method of moments' (the
/// relative error of the mean of the `n` delays it governs, `cv / sqrt(n)`), which the
/// maximum-likelihood fit is at least as tight as; 4 of them: a false alarm in 6 in 100,000
/// comparisons.
const FIT_STANDARD_ERRORS: f64 = 4.0;

/// The client's own time per attempt that a retry's delay may carry beyond what `fit`
/// separates out (its overhead term stops at 10 ms, and the suite runs two tests at a time on
/// two cores, so a Python client's turn-around can exceed it): a retry whose delays average
/// `m` has its scale known to no better than `LOAD_NOISE_S / m` (40 % for botocore's first
/// retry from 50 ms, which averages 25 ms; under 1 % for delays of seconds).
const LOAD_NOISE_S: f64 = 0.010;

/// The relative standard error of a scale estimated from `delays`: their coefficient of
/// variation (at least full jitter's `1/sqrt(3)` for a width, which the spread, not the mean,
/// measures) over `sqrt(n)`.
fn scale_standard_error(delays: &[f64], width: bool) -> f64 {
    let n = delays.len() as f64;
    if n < 2.0 {
        return f64::INFINITY;
    }
    let mean = delays.iter().sum::<f64>() / n;
    let var = delays.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let cv = if mean > 0.0 { var.sqrt() / mean } else { f64::INFINITY };
    let cv = if width { cv.max(1.0 / 3f64.sqrt()) } else { cv };
    cv / n.sqrt()
}

/// The delays before retry `k` (1-based) of every operation of `log` that made it.
fn delays_before_retry(log: &Log, k: usize) -> Vec<f64> {
    log.ops.iter().filter_map(|o| Some(o.attempts.get(k)?.arrival_s - o.attempts[k - 1].answered_s)).collect()
}

/// Whether the fitted strategy's backoff parameters are the preset's, each within
/// [`FIT_TOLERANCE`], [`FIT_STANDARD_ERRORS`] of its standard error in `log`, or (a retry's
/// scale) [`LOAD_NOISE_S`] over its mean delay, whichever is widest; the differences (and the tolerance where the standard error sets it) in words.
fn parameters_agree(preset: &Strategy, fitted: &Strategy, log: &Log) -> (bool, String) {
    // The retries the preset makes, at most 4 (the scenario's operations are short).
    let retries = preset.policy.max_attempts.unwrap_or(5).saturating_sub(1).min(4);
    let want = fitted_parameters(&preset.policy.backoff, retries);
    let got = fitted_parameters(&fitted.policy.backoff, retries);
    let all: Vec<f64> = (1..=retries as usize).flat_map(|k| delays_before_retry(log, k)).collect();
    let mut ok = true;
    let mut said = Vec::new();
    for ((key, w), (_, g)) in want.iter().zip(&got) {
        let off = (g - w) / w;
        let (se, noise) = match key.strip_prefix("retry ") {
            Some(k) => {
                let delays = delays_before_retry(log, k.parse().unwrap());
                let mean = delays.iter().sum::<f64>() / delays.len().max(1) as f64;
                (scale_standard_error(&delays, false), if mean > 0.0 { LOAD_NOISE_S / mean } else { 0.0 })
            }
            None => (scale_standard_error(&all, key == "jitter"), 0.0),
        };
        let tolerance = FIT_TOLERANCE.max(FIT_STANDARD_ERRORS * se).max(noise);
        ok &= off.abs() <= tolerance;
        if tolerance > FIT_TOLERANCE {
            said.push(format!("{key} {:+.1} % (of ±{:.0} %)", 100.0 * off, 100.0 * tolerance));
        } else {
            said.push(format!("{key} {:+.1} %", 100.0 * off));
        }
    }
    (ok, said.join(", "))
}

/// The kind `fit` should find for a strategy: its backoff's, with `immediate_first`.
fn expected_kind(strategy: &Strategy) -> String {
    use retrysim::experiment::BackoffSpec as B;
    let b = &strategy.policy.backoff;
    let kind = match b {
        B::None {} => "none",
        B::Constant { .. } => "constant",
        B::Linear { .. } => "linear",
        B::Exponential { .. } => "exponential",
        B::FullJitter { .. } => "full-jitter",
        B::EqualJitter { .. } => "equal-jitter",
        B::DecorrelatedJitter { .. } => "decorrelated-jitter",
        B::DecorrelatedJitterV2 { .. } => "decorrelated-jitter-v2",
        B::AdditiveJitter { .. } => "additive-jitter",
        B::ProportionalJitter { .. } => "proportional-jitter",
    };
    let immediate = matches!(
        b,
        B::Exponential { immediate_first: true, .. } | B::AdditiveJitter { immediate_first: true, .. }
    );
    if immediate { format!("{kind}, immediate_first") } else { kind.to_owned() }
}

fn run_case(case: &Case, dir: &Path) -> (Row, Replay) {
    let file = case_file(case, true);
    let (version, log) = play(&case.config, &file, dir, &[]);
    let strategy = strategy_of(&file);
    let replayed = replay(&strategy, &log);
    let mut row = judge(case, version, &log, &replayed);
    if case.scenario == "outage-503" {
        let (got, block) = fit_log(&dir.join("served/requests.csv"));
        let want = expected_kind(&strategy);
        let cannot = FIT_CANNOT.iter().find(|(l, c, _)| (*l, *c) == (case.config.library, case.config.name));
        row.fit = match (got == want, cannot) {
            (true, _) => {
                let scenario =
                    std::fs::read_to_string(repo().join("conformance/scenarios/outage-503.toml")).unwrap();
                let block = block.expect("a decided fit prints its block");
                let fitted = strategy_of(&format!("{scenario}\n{block}"));
                match parameters_agree(&strategy, &fitted, &log) {
                    (true, d) if d.is_empty() => format!("{got} (as the preset)"),
                    (true, d) => format!("{got} (as the preset; {d})"),
                    (false, d) => {
                        row.passed = false;
                        format!("{got} ({d} from the preset) FIT DIFFERS")
                    }
                }
            }
            (false, Some((_, _, why))) => format!("{got} (preset: {want}; {why})"),
            (false, None) => {
                row.passed = false;
                format!("{got} (preset: {want}) FIT DIFFERS")
            }
        };
    }
    (row, replayed)
}

// ----- the table -----

const TABLE_START: &str = "<!-- conformance table: generated by tests/it/system/conformance.rs -->";

fn markdown(rows: &[Row], quotas: &[String]) -> String {
    let mut s = String::from(
        "# Conformance of real retry libraries\n\n\
         Written by `RETRYSIM_WRITE_CONFORMANCE=1 cargo test --release --test it -- system::conformance`\n\
         (tests/it/system/conformance.rs; how it works: [real-client.md](real-client.md#the-conformance-suite)).\n\
         Each library configuration is driven by its script in `conformance/` through each scenario of\n\
         `conformance/scenarios/` against `retrysim serve`, and every attempt it sent is replayed through the\n\
         retry decision `retrysim run` makes for the preset. *decisions*: failed attempts after which the\n\
         preset decided as the library did (retry or stop), of all; *p*: Kolmogorov-Smirnov p-value of the\n\
         delays between attempts against the preset's delay distribution (a case fails below 0.0001);\n\
         *ops*, *attempts*, *delays* and *p* change from run to run with timing, the other columns must not\n\
         (the test compares them with this file).\n\n",
    );
    s.push_str(TABLE_START);
    s.push_str("\n\n| library | version | configuration | scenario | preset | ops | attempts | decisions | delays | p | verdict | `retrysim fit` |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.library,
            r.version,
            r.config,
            r.scenario,
            r.preset,
            r.ops,
            r.attempts,
            r.decisions,
            r.delays,
            r.p_value.map_or("-".to_owned(), |p| format!("{p:.3}")),
            r.verdict,
            r.fit
        ));
    }
    s.push_str("\n## Retry quotas\n\n");
    for q in quotas {
        s.push_str(&format!("- {q}\n"));
    }
    s
}

/// The stable columns of a table's rows: library, version, configuration, scenario, preset,
/// verdict.
fn stable(text: &str) -> Vec<String> {
    text.split(TABLE_START)
        .nth(1)
        .unwrap_or("")
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| library"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            [1, 2, 3, 4, 5, 11].map(|i| cells.get(i).copied().unwrap_or("")).join(" | ")
        })
        .collect()
}

// ----- the tests -----

/// Serialises the cases of the two tests: they measure wall-clock delays.
pub(super) static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

pub(super) fn work_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("conformance-runs").join(name);
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// One library client's total retries in a long outage (`--shared`: every worker uses it),
/// and one simulated client's of the preset in the same outage.
fn quota(config: &Config, scenario: &'static str, dir: &Path) -> (String, usize, u64) {
    let case = Case { config: *config, scenario, difference: None };
    let file = case_file(&case, false);
    let extra = ["--shared", "--workers", "20", "--seconds", "8", "--ops", "6"].map(String::from);
    let (version, log) = play(config, &file, dir, &extra);
    let library = log.attempts() - log.ops.len();
    // The same 120 operations, one after another, from one simulated client.
    let m = run_one(&file, &["horizon=1m", "workload.ops_per_client=120"]);
    (version, library, m.calls - m.ops)
}

#[test]
fn real_libraries_match_their_presets() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    toolchain();
    let root = work_dir("cases");
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for (n, case) in cases().iter().enumerate() {
        let (row, r) = run_case(case, &root.join(format!("{n:02}")));
        if !row.passed {
            failures.push(format!(
                "{} {} {}: {:?}, differing decisions {:?}, early delays {:?}",
                row.library,
                row.config,
                row.scenario,
                row.p_value,
                &r.differed[..r.differed.len().min(5)],
                &r.early[..r.early.len().min(5)]
            ));
        }
        eprintln!("{row:?}");
        rows.push(row);
    }
    // botocore's quota: 500 tokens, 5 a throttling retry (429), 14 any other (1.44).
    let mut quotas = Vec::new();
    for (scenario, cost) in [("quota-503", 14), ("quota-429", 5)] {
        let (version, library, simulated) = quota(&BOTOCORE_STANDARD, scenario, &root.join(scenario));
        let want = 500 / cost;
        quotas.push(format!(
            "botocore {version} standard, one client shared by 20 threads, 120 operations, {scenario}: {library} \
             retries; `retrysim run` of `aws-standard-2026` (one client, 120 operations): {simulated}; 500 tokens at \
             {cost} a retry: {want}"
        ));
        if library != want || simulated != want as u64 {
            failures.push(quotas.last().unwrap().clone());
        }
    }
    let table = markdown(&rows, &quotas);
    let path = repo().join("docs/conformance.md");
    if std::env::var_os("RETRYSIM_WRITE_CONFORMANCE").is_some() {
        std::fs::write(&path, &table).unwrap();
    } else {
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(
            stable(&committed),
            stable(&table),
            "docs/conformance.md's library, version, configuration, scenario, preset or verdict differ from \
             this run: regenerate it with RETRYSIM_WRITE_CONFORMANCE=1 cargo test --release --test it -- \
             system::conformance\n{table}"
        );
    }
    assert!(failures.is_empty(), "{}\n\n{table}", failures.join("\n"));
}
