//! What a run will cost, estimated before it runs (`retrysim check`, and `run`'s guard):
//! operations, events and peak memory per run, and the key that drives the memory. An
//! estimate above the machine's memory is refused (exit 2) instead of failing on an
//! allocation mid-run.
//!
//! The model is deliberately simple and errs high, and is checked against the measured peak
//! (within 2x on every shipped experiment and an unbounded queue: `tests/it/memory.rs`,
//! benches/README.md): every live operation holds a 64-byte slot and about two pending events
//! of 24 bytes; a closed workload keeps one slot per client, an open one the operations that
//! can be in flight at once (the arrival rate times the longest an operation can last); the
//! server holds its workers and its queue, the queue as long as the fluid backlog of
//! `capacity.rs` says it grows (at most `server.queue`); the time series (each run's, the
//! runs waiting in the sweep's window, the cell's mean) and recovery buckets are per bucket of
//! the horizon; client-side controls are per client when so scoped. After the runs the report
//! reads `timeseries.csv` back (about 1.3 KB a row, the rows up to when the load can have
//! ended) and draws the tallest chart, one panel per strategy, as a bitmap.

use super::spec::{FaultSpec, PolicySpec, Scope, ServerSpec, WorkloadSpec};
use super::{Experiment, Point};

/// Bytes per live operation: its slot, and two pending events (a timer and a hop).
const PER_OP: f64 = 64.0 + 2.0 * 24.0;
/// Bytes per closed-workload client beyond its operation slot (operations left to start).
const PER_CLIENT: f64 = 4.0;
/// Bytes per worker and per queued request.
const PER_WORKER: f64 = 48.0;
const PER_QUEUED: f64 = 40.0;
/// Bytes per time-series bucket in a run (its counts and two counters), times the runs a
/// thread holds (its own and the four of the sweep's window), plus the cell's running mean
/// and variance of every series; and per second of recovery buckets.
const PER_BUCKET: f64 = (10.0 * 8.0 + 16.0) * 5.0 + 11.0 * 32.0;
const PER_RECOVERY_SECOND: f64 = 40.0;
/// Per-client control state (a breaker is 88 bytes, a ratio budget about 120).
const PER_CLIENT_CONTROLS: f64 = 128.0;
/// What a run holds whatever its size (the event queue's ring, histograms, buffers).
const FIXED_PER_RUN: f64 = 1.0e6;
/// The process itself (code, allocator, output buffers).
const FIXED: f64 = 6.0e6;
/// The report: the page and its charts, whatever the sweep (measured: 5 to 14 MB for
/// `plot` of the shipped results without `timeseries.csv`), and each cell's share.
const REPORT_FIXED: f64 = 8.0e6;
const REPORT_PER_CELL: f64 = 40.0e3;
/// A row of `timeseries.csv` read back by the report (its cells as strings and the parsed
/// row; measured 1.28 KB on loyalty-batch).
const REPORT_PER_SERIES_ROW: f64 = 1300.0;
/// The tallest chart's bitmap: 800 px wide, 3 bytes a pixel, 110 px and 330 per panel.
const CHART_WIDTH_BYTES: f64 = 800.0 * 3.0;
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
    /// Drawing the report after the runs.
    pub report_bytes: f64,
    /// The process, with `threads` runs at once, and the report.
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
    let report = report_bytes(exp);
    let mut cost = worst.unwrap_or(Cost {
        ops_per_run: 0.0,
        events_per_run: (0.0, 0.0),
        bytes_per_run: 0.0,
        report_bytes: 0.0,
        peak_bytes: FIXED,
        driver: "",
    });
    cost.report_bytes = report;
    cost.peak_bytes += report;
    cost
}

/// What drawing the report takes: the page, each cell's share, and with a time series its
/// rows read back and the tallest chart (one panel per strategy).
fn report_bytes(exp: &Experiment) -> f64 {
    let strategies = exp.points.first().map_or(0, |p| p.strategies.len()) as f64;
    let cells = exp.points.len() as f64 * strategies;
    let series = if exp.timeseries {
        let rows: f64 = exp
            .points
            .iter()
            .map(|p| (busy_s(p) / p.spec.output.bucket.span().as_secs_f64()).ceil() + 1.0)
            .sum::<f64>()
            * strategies;
        rows * REPORT_PER_SERIES_ROW + CHART_WIDTH_BYTES * (110.0 + 330.0 * strategies)
    } else {
        0.0
    };
    REPORT_FIXED + cells * REPORT_PER_CELL + series
}

/// Up to when a point's runs can be busy, in seconds, at most the horizon: `timeseries.csv`
/// leaves out the buckets after the last one where anything happened. An open workload's load
/// ends with its duration, and its last operations within their longest life; a closed
/// client's operations each take at most every attempt (service, round trip, timeout) and the
/// longest delay before each retry (its backoff, or a fault's Retry-After when honoured).
fn busy_s(p: &Point) -> f64 {
    let spec = &p.spec;
    let horizon_s = spec.horizon.span().as_secs_f64();
    let s = |d: super::Duration| d.span().as_secs_f64();
    let longest_life = p.strategies.iter().map(|st| lifetime_s(&st.policy, horizon_s)).fold(0.0, f64::max);
    match &spec.workload {
        WorkloadSpec::Open { duration, .. }
        | WorkloadSpec::Serial { duration, .. }
        | WorkloadSpec::Queue { duration, .. } => (s(*duration) + longest_life).min(horizon_s),
        WorkloadSpec::Closed { ops_per_client, think_time, ramp, .. } => {
            let service = match &spec.server {
                ServerSpec::Queue(q) => super::capacity::mean_s(&q.service_time),
                ServerSpec::Occ {} => 0.0,
            };
            let rtt = 2.0 * super::capacity::mean_s(&spec.network.latency);
            let retry_after = match &spec.server {
                ServerSpec::Queue(q) => q
                    .faults
                    .iter()
                    .filter_map(|f| match f {
                        FaultSpec::Outage { retry_after, .. } | FaultSpec::Errors { retry_after, .. } => {
                            retry_after.map(s)
                        }
                        _ => None,
                    })
                    .fold(0.0, f64::max),
                ServerSpec::Occ {} => 0.0,
            };
            let op = p
                .strategies
                .iter()
                .map(|st| {
                    let pol = &st.policy;
                    let Some(n) = pol.max_attempts else { return horizon_s };
                    let n = n as f64;
                    let attempt = service + rtt + pol.timeout.map_or(0.0, s);
                    let ra = if pol.honor_retry_after {
                        pol.retry_after_cap.map_or(retry_after, |c| retry_after.min(s(c)))
                    } else {
                        0.0
                    };
                    n * attempt + (n - 1.0) * longest_backoff_s(&pol.backoff, n).max(ra)
                })
                .fold(0.0, f64::max);
            (s(*ramp) + *ops_per_client as f64 * (s(*think_time) + op)).min(horizon_s)
        }
    }
}

fn point(p: &Point, threads: usize) -> Cost {
    let spec = &p.spec;
    let horizon_s = spec.horizon.span().as_secs_f64();
    let (ops, live, clients, driver) = match &spec.workload {
        WorkloadSpec::Closed { clients, ops_per_client, .. } => {
            let n = *clients as f64;
            (n * *ops_per_client as f64, n, n, "workload.clients")
        }
        // One operation in flight per client at most.
        WorkloadSpec::Serial { clients, .. } => {
            let n = *clients as f64;
            (n, n, n, "workload.clients")
        }
        WorkloadSpec::Open { .. } | WorkloadSpec::Queue { .. } => {
            let (rate, duration, schedule) =
                spec.workload.rates().expect("an open or queue workload has rates");
            let clients = if let WorkloadSpec::Open { clients, .. } = spec.workload { clients } else { 1 };
            let end = duration.span().as_secs_f64().min(horizon_s);
            let ops = arrivals(rate, schedule.iter().map(|s| (s.at.span().as_secs_f64(), s.rate)), end);
            let peak_rate = schedule.iter().map(|s| s.rate).fold(rate, f64::max);
            let lifetime = in_flight_s(p, horizon_s);
            (ops, (peak_rate * lifetime).min(ops), clients as f64, "workload.rate")
        }
    };
    let (server, server_key) = match &spec.server {
        ServerSpec::Queue(q) => {
            // A queued request whose client gave up still holds its operation: a backlog of
            // abandoned attempts keeps a slot per operation, shared by its attempts.
            let (queued, attempts) = p
                .strategies
                .iter()
                .map(|s| {
                    let n = s.policy.max_attempts.unwrap_or(1).max(1) as f64;
                    (super::capacity::backlog_peak(p, q, &s.policy), n)
                })
                .fold((0.0, 1.0), |a, b| if b.0 > a.0 { b } else { a });
            let key = if q.queue.is_none() { "server.queue" } else { "server.concurrency" };
            (
                q.concurrency as f64 * q.replicas as f64 * PER_WORKER
                    + queued * (PER_QUEUED + PER_OP / attempts),
                key,
            )
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
        WorkloadSpec::Closed { .. } | WorkloadSpec::Serial { .. } => clients * PER_CLIENT,
        WorkloadSpec::Open { .. } | WorkloadSpec::Queue { .. } => 0.0,
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
        report_bytes: 0.0,
        peak_bytes: FIXED + bytes * threads.max(1) as f64,
        driver,
    }
}

/// How long an open workload's operations stay in flight, in seconds: an attempt's service,
/// round trip and longest queue wait (the fluid backlog over the capacity), plus the time the
/// outages and error faults last (operations caught in them retry through them); the longest
/// an operation can last (`lifetime_s`) when the backlog's wait exceeds a strategy's timeout
/// (a retry storm, every attempt made).
fn in_flight_s(p: &Point, horizon_s: f64) -> f64 {
    let longest = p.strategies.iter().map(|s| lifetime_s(&s.policy, horizon_s)).fold(0.0, f64::max);
    let ServerSpec::Queue(q) = &p.spec.server else { return longest };
    let s = |d: super::Duration| d.span().as_secs_f64();
    let service = super::capacity::mean_s(&q.service_time);
    let capacity = q.concurrency as f64 * q.replicas as f64 / service.max(1e-9);
    let mut wait: f64 = 0.0;
    for st in &p.strategies {
        let w = super::capacity::backlog_peak(p, q, &st.policy) / capacity;
        if st.policy.timeout.is_some_and(|t| w > s(t)) {
            return longest;
        }
        wait = wait.max(w);
    }
    let failing: f64 = q
        .faults
        .iter()
        .filter(|f| matches!(f, FaultSpec::Outage { .. } | FaultSpec::Errors { .. }))
        .map(|f| s(f.window().1))
        .sum();
    let typical = service + 2.0 * super::capacity::mean_s(&p.spec.network.latency) + wait + failing;
    typical.min(longest)
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

/// The longest an operation can last, in seconds: each pass of its retry loop
/// ([`pass_lifetime_s`]) and the application's longest backoffs between them (`app_retry`),
/// at most the horizon.
fn lifetime_s(p: &PolicySpec, horizon_s: f64) -> f64 {
    let pass = pass_lifetime_s(p, horizon_s);
    let Some(a) = p.app_retry.as_ref().filter(|_| p.app_passes() > 1) else { return pass };
    let n = p.app_passes() as f64;
    (n * pass + (n - 1.0) * longest_backoff_s(&a.backoff, n)).min(horizon_s)
}

/// The longest one pass of an operation's retry loop can last, in seconds: its deadline, else
/// its attempts' timeouts and the longest backoffs between them, else the horizon.
fn pass_lifetime_s(p: &PolicySpec, horizon_s: f64) -> f64 {
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
        // `immediate_first` only shortens the first delay: the longest is the same.
        B::Exponential { base, cap, multiplier, .. }
        | B::FullJitter { base, cap, multiplier }
        | B::EqualJitter { base, cap, multiplier } => grown(base, cap, multiplier),
        B::AdditiveJitter { base, cap, multiplier, jitter, .. } => grown(base, cap, multiplier) + s(jitter),
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
        super::spec::ThrottleSpec::Sre { scope, .. }
        | super::spec::ThrottleSpec::AwsAdaptive { scope }
        | super::spec::ThrottleSpec::EnvoyAdmissionControl { scope, .. } => *scope == Scope::Client,
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

/// Events one run of strategy `strategy` at point `p` is expected to process: what the
/// progress bar weighs each run's share of the work by (only ratios matter; replayed on the
/// shipped sweeps by `tests/it/eta.rs`). Its operations times 4 events per attempt times
/// the attempts an operation typically makes: the geometric mean of 1 and the strategy's
/// `max_attempts` (10 without one), at most `max_attempts`. An OCC store written by a closed
/// fleet at once is the exception: every client contends for the one row until it wins, so
/// the attempts grow with the clients, not with a limit (aws-2015-jitter measures 5 calls
/// per operation at 10 clients and 19 to 27 at 100 to 190, with exponential backoff: about
/// 1 + sqrt(clients)); weighing its points alike made the time left 2.9 times too short
/// after 10 % of that sweep.
pub fn cell_events(p: &Point, strategy: usize) -> f64 {
    let ops = point(p, 1).ops_per_run;
    let most = p.strategies.get(strategy).and_then(|s| s.policy.max_attempts).map(f64::from);
    let attempts = match (&p.spec.server, &p.spec.workload) {
        (ServerSpec::Occ {}, WorkloadSpec::Closed { clients, .. }) => 1.0 + (*clients as f64).sqrt(),
        _ => most.unwrap_or(10.0).sqrt(),
    };
    ops * EVENTS_PER_ATTEMPT * attempts.min(most.unwrap_or(f64::INFINITY)).max(1.0)
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
