//! `retrysim fit` (issue 27 item 3): recovering a client's strategy from its attempt log.
//!
//! The synthetic logs are drawn with `policy::backoff::Backoff::delay`, the function `run`
//! draws every retry's delay with, so a log here is what a simulated client of that kind
//! would send; each attempt is answered after 1-5 ms (the log's duration column).

use assert_cmd::Command;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use retrysim::engine::rng::u01;
use retrysim::fit::kinds::Kind;
use retrysim::fit::log::{Columns, Units, read_from};
use retrysim::fit::{Limit, RetryAfterMode, Verdict, fit};
use retrysim::policy::backoff::Backoff;
use std::fmt::Write;
use std::path::Path;

/// `f` over `items` on two threads (the fits are independent; the machine has two cores).
fn par_map<T: Sync, U: Send>(items: &[T], f: impl Fn(&T) -> U + Sync) -> Vec<U> {
    let half = items.len().div_ceil(2);
    std::thread::scope(|s| {
        let chunks: Vec<_> =
            items.chunks(half.max(1)).map(|c| s.spawn(|| c.iter().map(&f).collect::<Vec<U>>())).collect();
        chunks.into_iter().flat_map(|h| h.join().expect("a fit panicked")).collect()
    })
}

fn retrysim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_retrysim"))
}

const BASE_S: f64 = 0.1;
const CAP_S: f64 = 0.5;

/// The backoff of `kind` with base 100 ms and cap 500 ms (multiplier 2), in retrysim's terms.
fn backoff(kind: Kind) -> Backoff {
    let (base_ns, cap_ns, multiplier) = (BASE_S * 1e9, CAP_S * 1e9, 2.0);
    match kind {
        Kind::None => Backoff::None,
        Kind::Constant => Backoff::Constant { base_ns },
        Kind::Linear => Backoff::Linear { base_ns, cap_ns },
        Kind::Exponential => Backoff::Exponential { base_ns, cap_ns, multiplier, immediate_first: false },
        Kind::FullJitter => Backoff::FullJitter { base_ns, cap_ns, multiplier },
        Kind::EqualJitter => Backoff::EqualJitter { base_ns, cap_ns, multiplier },
        Kind::DecorrelatedJitter => Backoff::DecorrelatedJitter { base_ns, cap_ns },
        Kind::AdditiveJitter => {
            Backoff::AdditiveJitter { base_ns, cap_ns, multiplier, jitter_ns: 0.05e9, immediate_first: false }
        }
        Kind::ProportionalJitter => Backoff::ProportionalJitter { base_ns, cap_ns, multiplier, p: 0.2 },
        Kind::ExponentialImmediateFirst => {
            Backoff::Exponential { base_ns, cap_ns, multiplier, immediate_first: true }
        }
        Kind::AdditiveJitterImmediateFirst => {
            Backoff::AdditiveJitter { base_ns, cap_ns, multiplier, jitter_ns: 0.05e9, immediate_first: true }
        }
    }
}

/// A log of `ops` operations that all fail with 503 after `attempts` attempts (so the limit
/// shows), with `kind`'s delays. `retry_after`: every answer carries Retry-After 1 s and the
/// client waits exactly that (`replace`).
fn log(kind: Kind, ops: usize, attempts: u32, seed: u64, retry_after: bool) -> String {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let b = backoff(kind);
    let mut out = String::from("time,op,status,took,retry_after\n");
    for op in 0..ops {
        let mut t = op as f64 * 30.0;
        let mut state = b.initial_state();
        for k in 1..=attempts {
            let took = 0.001 + 0.004 * u01(&mut rng);
            let ra = if retry_after { "1" } else { "" };
            let _ = writeln!(out, "{t:.9},op-{op},503,{took:.9},{ra}");
            if k < attempts {
                let backoff_s = b.delay(k, &mut state, &mut rng).as_secs_f64();
                t += took + if retry_after { 1.0 } else { backoff_s };
            }
        }
    }
    out
}

fn fitted(csv: &str) -> retrysim::fit::FitReport {
    let cols = Columns::plain().with("duration=took,retry_after=retry_after").unwrap();
    let l = read_from(csv.as_bytes(), Path::new("synthetic.csv"), &cols, Units::SECONDS).unwrap();
    fit(&l, Path::new("synthetic.csv")).unwrap()
}

#[test]
fn base_and_cap_are_recovered_within_ten_percent_from_300_operations() {
    // Five attempts: retries 1-4, so every kind's cap (500 ms) is reached: exponential at
    // retry 4 (800 ms), linear at retry 5... linear is 100 ms x k: reached only with 6 attempts.
    // The kinds with a cap to recover (all but `none` and `constant`).
    let capped: Vec<Kind> = Kind::ALL.into_iter().filter(|k| k.has_cap()).collect();
    let results: Vec<String> = par_map(&capped, |&kind| {
        let attempts = if kind == Kind::Linear { 7 } else { 5 };
        let r = fitted(&log(kind, 300, attempts, 7, false));
        let best = r.best();
        let p = &best.params;
        let mut errors = String::new();
        if best.kind != kind {
            errors += &format!("{kind:?}: picked {:?}\n", best.kind);
        }
        if (p.base_s / BASE_S - 1.0).abs() > 0.10 {
            errors += &format!("{kind:?}: base {} s\n", p.base_s);
        }
        if !best.cap_reached || (p.cap_s / CAP_S - 1.0).abs() > 0.10 {
            errors += &format!("{kind:?}: cap {} s (reached {})\n", p.cap_s, best.cap_reached);
        }
        if r.verdict != Verdict::Decided || r.limit != Limit::Exact(attempts) {
            errors += &format!("{kind:?}: {:?}, {:?}\n", r.verdict, r.limit);
        }
        errors
    });
    let errors: String = results.concat();
    assert!(errors.is_empty(), "{errors}");
}

#[test]
fn the_right_kind_is_picked_in_at_least_95_percent_of_seeded_cases() {
    let cases: Vec<(Kind, u64)> = Kind::ALL.iter().flat_map(|&k| (0..8).map(move |s| (k, 100 + s))).collect();
    let wrong: Vec<String> = par_map(&cases, |&(kind, seed)| {
        let r = fitted(&log(kind, 100, 4, seed, false));
        (r.best().kind != kind).then(|| format!("{kind:?} seed {seed}: picked {:?}", r.best().kind))
    })
    .into_iter()
    .flatten()
    .collect();
    // 88 cases (8 per kind), 100 operations of 3 retries each: at most 5 % wrong (4).
    assert!(wrong.len() * 20 <= cases.len(), "{} of {} wrong: {wrong:?}", wrong.len(), cases.len());
}

#[test]
fn retry_after_replacing_the_backoff_is_recognised() {
    // Half the operations see Retry-After 1 s and wait exactly that; the rest back off.
    let mut csv = log(Kind::FullJitter, 200, 4, 3, false);
    let with: String =
        log(Kind::FullJitter, 100, 4, 4, true).lines().skip(1).map(|l| format!("x{l}\n")).collect();
    // The Retry-After operations start later, with their own ids.
    let shifted: String = with
        .lines()
        .map(|l| {
            let (t, rest) = l[1..].split_once(',').unwrap();
            format!("{:.9},r{rest}\n", t.parse::<f64>().unwrap() + 10_000.0)
        })
        .collect();
    csv.push_str(&shifted);
    let r = fitted(&csv);
    assert_eq!(r.best().kind, Kind::FullJitter);
    let ra = r.retry_after.as_ref().expect("answers carried Retry-After");
    assert_eq!(ra.delays, 300);
    assert_eq!(ra.modes[0].0, RetryAfterMode::Replace, "{:?}", ra.modes);
}

#[test]
fn a_client_that_ignores_retry_after_is_recognised() {
    // Every answer carries Retry-After 1 s, but the client backs off with full jitter.
    let csv: String = log(Kind::FullJitter, 300, 4, 5, false)
        .lines()
        .enumerate()
        .map(|(i, l)| if i == 0 { format!("{l}\n") } else { format!("{}1\n", l) })
        .collect();
    let r = fitted(&csv);
    let ra = r.retry_after.as_ref().expect("answers carried Retry-After");
    assert_eq!(ra.modes[0].0, RetryAfterMode::Ignore, "{:?}", ra.modes);
}

#[test]
fn the_command_prints_a_strategy_block_that_run_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("requests.csv");
    std::fs::write(&path, log(Kind::EqualJitter, 300, 5, 11, false)).unwrap();
    let out = retrysim()
        .args([
            "fit",
            path.to_str().unwrap(),
            "--columns",
            "duration=took,retry_after=retry_after",
            "--name",
            "mine",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("attempt limit: 5"), "{out}");
    let block = &out[out.find("[[strategies]]").expect("a decided fit prints a block")..];
    assert!(block.contains("kind = \"equal-jitter\"") && block.contains("name = \"mine\""), "{block}");
    // The block runs: paste it into an experiment and check it.
    let exp = format!(
        "name = \"fitted\"\nseed = 1\nruns = 1\nhorizon = \"10s\"\n[workload]\nkind = \"open\"\nrate = 10.0\nduration = \"5s\"\nclients = 10\n[server]\nkind = \"queue\"\nconcurrency = 4\nservice_time = {{ dist = \"constant\", value = \"10ms\" }}\n{block}"
    );
    let file = dir.path().join("fitted.toml");
    std::fs::write(&file, exp).unwrap();
    retrysim().args(["check", file.to_str().unwrap()]).assert().success();
}

#[test]
fn too_few_retries_or_mixed_clients_are_said_not_guessed() {
    let dir = tempfile::tempdir().unwrap();
    let cols = ["--columns", "duration=took,retry_after=retry_after"];
    // Three operations: 9 delays.
    let few = dir.path().join("few.csv");
    std::fs::write(&few, log(Kind::FullJitter, 3, 4, 1, false)).unwrap();
    let out = retrysim().arg("fit").arg(&few).args(cols).assert().code(1).get_output().stdout.clone();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains("undecided: 9 backoff delays are too few") && !out.contains("[[strategies]]"),
        "{out}"
    );
    // Two clients in one log: full jitter and a constant 2 s.
    let mut mixed = log(Kind::FullJitter, 150, 4, 2, false);
    for op in 0..150 {
        let t0 = 10_000.0 + op as f64 * 30.0;
        for k in 0..4 {
            let _ = writeln!(mixed, "{:.9},c-{op},503,0.002,", t0 + k as f64 * 2.002);
        }
    }
    let path = dir.path().join("mixed.csv");
    std::fs::write(&path, mixed).unwrap();
    let out = retrysim().arg("fit").arg(&path).args(cols).assert().code(1).get_output().stdout.clone();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("undecided: even the best kind fits badly"), "{out}");
}

#[test]
fn bad_logs_are_refused_with_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &str, &[&str]); 4] = [
        ("no-retries.csv", "time,op,status\n0.0,a,200\n1.0,b,200\n", &["no operation has a second attempt"]),
        ("no-op.csv", "time,status\n0.0,200\n", &["no column \"op\"", "--columns"]),
        ("bad-time.csv", "time,op,status\nsoon,a,503\n", &["line 2", "time = \"soon\""]),
        ("bad-status.csv", "time,op,status\n0,a,999\n", &["line 2", "status = \"999\""]),
    ];
    for (name, text, wanted) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let err = retrysim().arg("fit").arg(&path).assert().code(2).get_output().stderr.clone();
        let err = String::from_utf8(err).unwrap();
        for w in wanted {
            assert!(err.contains(w), "{name}: {err}");
        }
    }
    let err = retrysim()
        .args(["fit", "x.csv", "--columns", "when=ts"])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    assert!(String::from_utf8(err).unwrap().contains("unknown field \"when\""));
}

#[test]
fn retries_sent_before_the_answer_are_left_out() {
    // A client that timed out at 50 ms on answers that took 100 ms: its retries arrive before
    // the previous answer left.
    let mut csv = String::from("time,op,status,took\n");
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    for op in 0..50 {
        let mut t = op as f64 * 10.0;
        for _ in 0..3 {
            let _ = writeln!(csv, "{t:.6},o{op},503,0.1");
            t += 0.05 + 0.01 * u01(&mut rng);
        }
    }
    let cols = Columns::plain().with("duration=took").unwrap();
    let l = read_from(csv.as_bytes(), Path::new("t.csv"), &cols, Units::SECONDS).unwrap();
    let err = fit(&l, Path::new("t.csv"));
    // Every retry overlapped: nothing to fit, but the log has retries, so it is not refused.
    let r = err.unwrap();
    assert_eq!((r.delays, r.overlapping), (0, 100));
    assert_eq!(r.verdict, Verdict::TooFewDelays { delays: 0 });
}

/// A log whose every retry comes `backoff_s` plus a client's own skewed time to send again
/// after the answer: 0.3 ms, plus an exponential of mean 1.5 ms, plus 5 % of sends that take
/// another 2-10 ms (a reconnect), as the real libraries' logs show.
fn log_with_overhead(backoff_s: f64, ops: usize, seed: u64) -> String {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut out = String::from("time,op,status,took\n");
    for op in 0..ops {
        let mut t = op as f64 * 30.0;
        for k in 1..=4 {
            let took = 0.001 + 0.004 * u01(&mut rng);
            let _ = writeln!(out, "{t:.9},op-{op},503,{took:.9}");
            if k < 4 {
                let mut overhead = 0.0003 - 0.0015 * (1.0 - u01(&mut rng)).ln();
                if u01(&mut rng) < 0.05 {
                    overhead += 0.002 + 0.008 * u01(&mut rng);
                }
                t += took + backoff_s + overhead;
            }
        }
    }
    out
}

#[test]
fn a_client_overhead_reads_as_an_immediate_retry_and_leaves_a_constant_its_own() {
    let csv = |s: &str| {
        let cols = Columns::plain().with("duration=took").unwrap();
        let l = read_from(s.as_bytes(), Path::new("overhead.csv"), &cols, Units::SECONDS).unwrap();
        fit(&l, Path::new("overhead.csv")).unwrap()
    };
    // Immediate retries: 900 delays of pure overhead (median about 1.4 ms) are `none`, decided.
    let r = csv(&log_with_overhead(0.0, 300, 7));
    assert_eq!((r.best().kind, &r.verdict), (Kind::None, &Verdict::Decided), "{:?}", r.fits[..3].to_vec());
    // A constant 200 ms backoff with the same overhead stays `constant`, its base within 10 %
    // (the overhead's offset and the base share their sum: the base is the delay less the
    // overhead's constant part).
    let r = csv(&log_with_overhead(0.2, 300, 8));
    assert_eq!(
        (r.best().kind, &r.verdict),
        (Kind::Constant, &Verdict::Decided),
        "{:?}",
        r.fits[..3].to_vec()
    );
    assert!((r.best().params.base_s - 0.2).abs() <= 0.02, "{:?}", r.best().params);
}
