//! What a run will cost, estimated before it runs (`retrysim check`, and `run`'s guard):
//! operations, events and peak memory per run, and the key that drives the memory. An
//! estimate above the machine's memory is refused (exit 2) instead of failing on an
//! allocation mid-run.
//!
//! The model is deliberately simple and errs high: every live operation holds a 64-byte slot
//! and about two pending events of 24 bytes; a closed workload keeps one slot per client, an
//! open one the operations that can be in flight at once (the arrival rate times the longest an
//! operation can last); the server holds its workers and queue; the time series and recovery
//! buckets are per bucket of the horizon; client-side controls are per client when so scoped.

use super::spec::{PolicySpec, Scope, ServerSpec, WorkloadSpec};
use super::{Experiment, Point};

/// Bytes per live operation: its slot, and two pending events (a timer and a hop).
const PER_OP: f64 = 64.0 + 2.0 * 24.0;
/// Bytes per closed-workload client beyond its operation slot (operations left to start).
const PER_CLIENT: f64 = 4.0;
/// Bytes per worker and per queued request.
const PER_WORKER: f64 = 48.0;
const PER_QUEUED: f64 = 40.0;
/// Bytes per time-series bucket in a run, and per second of recovery buckets.
const PER_BUCKET: f64 = 9.0 * 8.0 + 16.0;
const PER_RECOVERY_SECOND: f64 = 40.0;
/// Per-client control state (a breaker is 88 bytes, a ratio budget about 120).
const PER_CLIENT_CONTROLS: f64 = 128.0;
/// What a run holds whatever its size (the event queue's ring, histograms, buffers).
const FIXED_PER_RUN: f64 = 1.0e6;
/// The process itself (code, allocator, output buffers).
const FIXED: f64 = 8.0e6;
/// Events per attempt: a send, an arrival, a completion, an answer, a timer.
const EVENTS_PER_ATTEMPT: f64 = 4.0;

/// The estimate for one experiment.
#[derive(Clone, Debug, PartialEq)]
pub struct Cost {
    /// The largest point's numbers.
    pub ops_per_run: f64,
    /// Events per run with every attempt made (first attempts only, and all `max_attempts`).
    pub events_per_run: (f64, f64),
    pub bytes_per_run: f64,
    /// With `threads` runs at once.
    pub peak_bytes: f64,
    /// The key whose value drives the memory most.
    pub driver: &'static str,
}

/// Estimates `exp` run on `threads` threads.
pub fn estimate(exp: &Experiment, threads: usize) -> Cost {
    let mut worst: Option<Cost> = None;
    for p in &exp.points {
        let c = point(p, threads);
        if worst.as_ref().is_none_or(|w| c.bytes_per_run > w.bytes_per_run) {
            worst = Some(c);
        }
    }
    worst.unwrap_or(Cost {
        ops_per_run: 0.0,
        events_per_run: (0.0, 0.0),
        bytes_per_run: 0.0,
        peak_bytes: FIXED,
        driver: "",
    })
}

fn point(p: &Point, threads: usize) -> Cost {
    let spec = &p.spec;
    let horizon_s = spec.horizon.span().as_secs_f64();
    let (ops, live, clients, driver) = match &spec.workload {
        WorkloadSpec::Closed { clients, ops_per_client, .. } => {
            let n = *clients as f64;
            (n * *ops_per_client as f64, n, n, "workload.clients")
        }
        WorkloadSpec::Open { rate, duration, schedule, clients } => {
            let end = duration.span().as_secs_f64().min(horizon_s);
            let ops = arrivals(*rate, schedule.iter().map(|s| (s.at.span().as_secs_f64(), s.rate)), end);
            let peak_rate = schedule.iter().map(|s| s.rate).fold(*rate, f64::max);
            let lifetime =
                spec.strategies.iter().map(|s| lifetime_s(&s.policy, horizon_s)).fold(0.0, f64::max);
            ((ops), (peak_rate * lifetime).min(ops), *clients as f64, "workload.rate")
        }
    };
    let (server, server_key) = match &spec.server {
        ServerSpec::Queue(q) => {
            let queued = q.queue.map_or(live, |n| (n as f64).min(live.max(n as f64)));
            (q.concurrency as f64 * PER_WORKER + queued * PER_QUEUED, "server.concurrency")
        }
        ServerSpec::Occ {} => (0.0, ""),
    };
    let buckets = horizon_s / spec.output.bucket.span().as_secs_f64();
    let controls = if spec.strategies.iter().any(|s| per_client_controls(&s.policy)) {
        clients * PER_CLIENT_CONTROLS
    } else {
        0.0
    };
    let clients_bytes = match spec.workload {
        WorkloadSpec::Closed { .. } => clients * PER_CLIENT,
        WorkloadSpec::Open { .. } => 0.0,
    };
    let parts = [
        (live * PER_OP + clients_bytes, driver),
        (server, server_key),
        (buckets * PER_BUCKET + horizon_s * PER_RECOVERY_SECOND, "output.bucket"),
        (controls, "workload.clients"),
    ];
    let bytes = FIXED_PER_RUN + parts.iter().map(|p| p.0).sum::<f64>();
    let driver = parts.iter().max_by(|a, b| a.0.total_cmp(&b.0)).map_or(driver, |p| p.1);
    let max_attempts =
        spec.strategies.iter().map(|s| s.policy.max_attempts.unwrap_or(10) as f64).fold(1.0, f64::max);
    Cost {
        ops_per_run: ops,
        events_per_run: (ops * EVENTS_PER_ATTEMPT, ops * EVENTS_PER_ATTEMPT * max_attempts),
        bytes_per_run: bytes,
        peak_bytes: FIXED + bytes * threads.max(1) as f64,
        driver,
    }
}

/// Expected arrivals up to `end` seconds with a piecewise-constant rate.
fn arrivals(rate: f64, schedule: impl Iterator<Item = (f64, f64)>, end: f64) -> f64 {
    let mut steps: Vec<(f64, f64)> = vec![(0.0, rate)];
    for (at, r) in schedule {
        if at == 0.0 {
            steps[0].1 = r;
        } else {
            steps.push((at, r));
        }
    }
    steps
        .iter()
        .enumerate()
        .map(|(i, &(from, r))| {
            let to = steps.get(i + 1).map_or(end, |s| s.0.min(end));
            r * (to - from).max(0.0)
        })
        .sum()
}

/// The longest an operation can last, in seconds: its deadline, else its attempts' timeouts
/// and the longest backoffs between them, else the horizon.
fn lifetime_s(p: &PolicySpec, horizon_s: f64) -> f64 {
    if let Some(d) = p.deadline {
        return d.span().as_secs_f64().min(horizon_s);
    }
    let (Some(t), Some(n)) = (p.timeout, p.max_attempts) else { return horizon_s };
    let n = n as f64;
    let wait = n * t.span().as_secs_f64() + (n - 1.0) * longest_backoff_s(&p.backoff, n).min(horizon_s);
    wait.min(horizon_s)
}

/// The longest delay the backoff gives over `n` attempts, in seconds.
fn longest_backoff_s(b: &super::spec::BackoffSpec, n: f64) -> f64 {
    use super::spec::BackoffSpec as B;
    let s = |d: super::Duration| d.span().as_secs_f64();
    let grown = |base: super::Duration, cap: Option<super::Duration>, m: f64| {
        let v = s(base) * m.powf((n - 2.0).max(0.0));
        cap.map_or(v, |c| v.min(s(c)))
    };
    match *b {
        B::None {} => 0.0,
        B::Constant { base } => s(base),
        B::Linear { base, cap } => grown(base, cap, 1.0) * (n - 1.0).max(1.0),
        B::Exponential { base, cap, multiplier }
        | B::FullJitter { base, cap, multiplier }
        | B::EqualJitter { base, cap, multiplier } => grown(base, cap, multiplier),
        B::AdditiveJitter { base, cap, multiplier, jitter } => grown(base, cap, multiplier) + s(jitter),
        B::ProportionalJitter { base, cap, multiplier, p } => grown(base, cap, multiplier) * (1.0 + p),
        B::DecorrelatedJitter { base, cap } | B::DecorrelatedJitterV2 { base, cap } => grown(base, cap, 3.0),
    }
}

fn per_client_controls(p: &PolicySpec) -> bool {
    let budget = p.budget.as_ref().is_some_and(|b| match b {
        super::spec::BudgetSpec::TokenBucket { scope, .. }
        | super::spec::BudgetSpec::GrpcThrottle { scope, .. }
        | super::spec::BudgetSpec::Ratio { scope, .. }
        | super::spec::BudgetSpec::Concurrency { scope, .. }
        | super::spec::BudgetSpec::Brooker { scope, .. } => *scope == Scope::Client,
    });
    let breaker = p.breaker.as_ref().is_some_and(|b| b.scope() == Scope::Client);
    let throttle = p.throttle.as_ref().is_some_and(|t| match t {
        super::spec::ThrottleSpec::Sre { scope, .. } | super::spec::ThrottleSpec::AwsAdaptive { scope } => {
            *scope == Scope::Client
        }
    });
    budget || breaker || throttle
}

/// The machine's memory in bytes (Linux `MemTotal`), if the system tells.
pub fn machine_memory() -> Option<f64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024.0)
}

/// Formats bytes as "12.3 MB".
pub fn mb(bytes: f64) -> String {
    format!("{:.1} MB", bytes / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Overrides, load_str};

    fn cost(text: &str, threads: usize) -> Cost {
        estimate(&load_str(text, "t", &Overrides::default()).unwrap(), threads)
    }

    const HERD: &str = "name = \"h\"\n[workload]\nkind = \"closed\"\nclients = 1000000\n[server]\nconcurrency = 10000\nqueue = 0\nservice_time = { dist = \"exponential\", mean = \"10ms\" }\n[client]\nmax_attempts = 6\n[[strategies]]\nname = \"fj\"\nbackoff = { kind = \"full-jitter\", base = \"10ms\", cap = \"1s\" }\n";

    #[test]
    fn a_million_client_herd_is_about_what_it_measures() {
        // Measured: 86 to 143 B per client, about 100 to 150 MB for one run (benches/README.md).
        let c = cost(HERD, 1);
        assert_eq!(c.ops_per_run, 1e6);
        assert_eq!(c.driver, "workload.clients");
        assert!((100e6..300e6).contains(&c.peak_bytes), "{}", c.peak_bytes);
        assert!((cost(HERD, 2).peak_bytes - c.peak_bytes - c.bytes_per_run).abs() < 1.0);
    }

    #[test]
    fn open_workloads_count_arrivals_and_what_is_in_flight() {
        let text = "name = \"o\"\nhorizon = \"100s\"\n[workload]\nkind = \"open\"\nrate = 1000.0\nduration = \"60s\"\nschedule = [{ at = \"10s\", rate = 3000.0 }, { at = \"20s\", rate = 1000.0 }]\n[server]\nconcurrency = 10\nservice_time = { dist = \"constant\", value = \"1ms\" }\n[client]\ntimeout = \"1s\"\nmax_attempts = 2\n[[strategies]]\nname = \"x\"\nbackoff = { kind = \"none\" }\n";
        let c = cost(text, 1);
        assert!((c.ops_per_run - 80_000.0).abs() < 1e-6, "{}", c.ops_per_run);
        assert!(c.bytes_per_run < 100e6);
    }
}
