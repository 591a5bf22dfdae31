//! The check list: for each experiment file of the suite, what is compared with what.
//!
//! Each check reads its parameters from its own experiment file (arrival rate, workers,
//! service distribution, budget settings...), so the expected values follow the file; it
//! refuses a file that lacks what it needs (a strategy, a sweep point, zero network delay).
//! The simulated values are means over independent runs (one value per run); the tolerance is
//! [`stats::tolerance`]: 4 standard errors of the difference plus the resolution stated in the
//! check's `method`.

use super::{Evaluation, Row, Unit, aws, theory};
use crate::experiment::{
    BackoffSpec, BreakerWindowSpec, BudgetSpec, DistSpec, Experiment, ExperimentSpec, FaultSpec,
    QueueServerSpec, Scope, ServerSpec, Strategy, WorkloadSpec,
};
use crate::metrics::RunMetrics;
use crate::metrics::series::SERIES;
use crate::stats::{self, Estimate};
use crate::sweep::Results;
use std::path::Path;

/// A check's evaluation: the experiment as loaded, its results, and the suite's folder (for
/// reference data).
pub type Evaluate = fn(&Experiment, &Results, &Path) -> Result<Evaluation, String>;

/// One check of the suite.
pub struct CheckDef {
    /// The experiment file's stem in the suite folder.
    pub id: &'static str,
    pub title: &'static str,
    /// How the simulated values are computed and the tolerance derived (Markdown).
    pub method: &'static str,
    /// Whether the evaluation reads the runs' time series (otherwise they are not kept).
    pub series: bool,
    pub evaluate: Evaluate,
}

/// The suite, in VALIDATION.md's order.
pub const CHECKS: &[CheckDef] = &[
    CheckDef {
        id: "erlang-b",
        title: "Erlang B: blocking in M/G/c/c",
        method: "Simulated: per run, the share of operations that failed (one attempt each: only a \
                 full server fails one). Tolerance: 4 standard errors across runs; no resolution term.",
        series: false,
        evaluate: erlang_b,
    },
    CheckDef {
        id: "erlang-c",
        title: "Erlang C: waiting in M/M/c",
        method: "Simulated: per run, `queued_fraction` (requests that found every worker busy), \
                 `wait_mean_s` (time queued before service) and `latency_mean_s` (time in the \
                 system: there is no network delay). Each run starts empty; over 200 s the \
                 start-up transient (a relaxation time of a few hundred milliseconds) is below \
                 the standard error. Tolerance: 4 standard errors across runs.",
        series: false,
        evaluate: erlang_c,
    },
    CheckDef {
        id: "mm1-sojourn",
        title: "M/M/1: sojourn-time quantiles",
        method: "Simulated: per run, `latency_p50_s`, `latency_p99_s` (HDR histogram, 3 \
                 significant digits) and the exact `latency_mean_s`. Tolerance: 4 standard errors \
                 across runs, plus 0.1 % of the value for the percentiles (the histogram reports the \
                 top of a bucket at most 0.1 % wide).",
        series: false,
        evaluate: mm1,
    },
    CheckDef {
        id: "md1-wait",
        title: "M/D/1: Pollaczek-Khinchine mean wait",
        method: "Simulated: per run, `wait_mean_s` and `latency_mean_s`. Tolerance: 4 standard \
                 errors across runs.",
        series: false,
        evaluate: md1,
    },
    CheckDef {
        id: "little",
        title: "Little's law",
        method: "Simulated: per run, L = `in_server_mean` (the exact time integral of the requests \
                 at the server over [0, `completion_time_s`]) against lambda W, where W = \
                 `latency_mean_s` and lambda = `workload.rate` x `duration` / \
                 `completion_time_s`, the arrival rate over the window L is averaged on (the last \
                 operation ends a few milliseconds after the arrivals stop). Both sides come from \
                 the same runs: the tolerance is 4 standard errors of the per-run difference \
                 L - lambda W (it differs from 0 only by the Poisson count of arrivals).",
        series: false,
        evaluate: little,
    },
    CheckDef {
        id: "poisson-arrivals",
        title: "Poisson arrivals: counts per bucket",
        method: "Simulated: per run, the `offered` counts of the buckets that lie wholly inside \
                 the arrival window (every operation makes one call), their mean and their \
                 dispersion index D = variance / mean; across runs, the mean of both and the \
                 standard deviation of D. Tolerance: 4 standard errors across runs; for the \
                 standard deviation of D, its standard error sd / sqrt(2 (runs - 1)) (D is close \
                 to normal with 999 degrees of freedom).",
        series: true,
        evaluate: poisson,
    },
    CheckDef {
        id: "independent-failures",
        title: "Independent failures: amplification and success",
        method: "Simulated: per run, `amplification` (calls per operation) and `success_rate`. \
                 Tolerance: 4 standard errors across runs.",
        series: false,
        evaluate: independent_failures,
    },
    CheckDef {
        id: "backoff",
        title: "Backoff delays: means and bounds",
        method: "Simulated: the mean delay of retry k is, per run, `latency_mean_s` at k + 1 \
                 attempts minus `latency_mean_s` at k attempts (the same operations and jitter \
                 draws at every point: common random numbers); the bounds are checked on the sum \
                 of the first k delays, `latency_min_s` and `latency_max_s` over every run at \
                 k + 1 attempts, against the sums of the per-retry bounds. Tolerance: 4 standard \
                 errors of the per-run difference, plus 0.5 ns per delay (delays are rounded to \
                 whole nanoseconds). Decorrelated jitter's mean with a cap that binds has no \
                 closed form: it is computed from the recursion's law on a 200,000-cell grid \
                 (`theory::decorrelated_means`, checked against a Monte Carlo in its tests).",
        series: false,
        evaluate: backoff,
    },
    CheckDef {
        id: "token-bucket",
        title: "Token-bucket retry budget in a total outage",
        method: "Simulated: extra calls, `calls - ops`. The run has no randomness that matters \
                 (every answer is a 503, at once): the comparison is exact (tolerance 0).",
        series: false,
        evaluate: token_bucket,
    },
    CheckDef {
        id: "ratio-budget",
        title: "Ratio retry budget in a total outage",
        method: "Simulated: per run, retries per operation, `(calls - ops) / ops`. Tolerance: 4 \
                 standard errors across runs, plus a resolution of (duration / ttl + 1) retries \
                 per run: the budget is spent in whole retries (1 / ratio deposits each), and \
                 each ttl window can end with less than one retry's worth of deposits unspent \
                 when it expires.",
        series: false,
        evaluate: ratio_budget,
    },
    CheckDef {
        id: "grpc-throttle",
        title: "gRPC retry throttling in a total outage",
        method: "Simulated: extra calls, `calls - ops`. Deterministic (every answer is a 503, at \
                 once): the comparison is exact (tolerance 0).",
        series: false,
        evaluate: grpc_throttle,
    },
    CheckDef {
        id: "breaker",
        title: "Circuit breaker: opening and half-open probes",
        method: "Simulated: `calls` (attempts that left the client; those an open breaker \
                 refuses are not calls). The expected count follows the breaker's timeline on the \
                 client's 10 ms grid of operations, computed from the file's keys. Deterministic: \
                 the comparison is exact (tolerance 0).",
        series: false,
        evaluate: breaker,
    },
    CheckDef {
        id: "layers",
        title: "Layered retries multiply",
        method: "Simulated: per run, `server_calls / ops` and `calls / ops`. Every operation \
                 fails the same way: the comparison is exact (tolerance 0).",
        series: false,
        evaluate: layers,
    },
    CheckDef {
        id: "storm",
        title: "Retry storm arithmetic",
        method: "Simulated: per run, the mean `offered` count per second over the whole buckets \
                 inside the outage, and over those outside it while arrivals last. Tolerance: 4 \
                 standard errors across runs (the Poisson count of arrivals).",
        series: true,
        evaluate: storm,
    },
    CheckDef {
        id: "aws-2015-jitter",
        title: "The AWS 2015 study \"Exponential Backoff And Jitter\"",
        method: aws::METHOD,
        series: false,
        evaluate: aws::evaluate,
    },
];

// ---------------------------------------------------------------------------------------------
// Helpers: reading the file's parameters and the runs' metrics.
// ---------------------------------------------------------------------------------------------

/// Fails with `reason` unless `ok`.
fn require(ok: bool, reason: impl FnOnce() -> String) -> Result<(), String> {
    if ok { Ok(()) } else { Err(reason()) }
}

fn queue_server(spec: &ExperimentSpec) -> Result<&QueueServerSpec, String> {
    match &spec.server {
        ServerSpec::Queue(q) => Ok(q),
        ServerSpec::Occ {} => Err("this check needs server.kind = \"queue\"".into()),
    }
}

/// An open workload's constant rate and duration (s).
fn open_workload(spec: &ExperimentSpec) -> Result<(f64, f64), String> {
    match &spec.workload {
        WorkloadSpec::Open { rate, duration, schedule, .. } if schedule.is_empty() => {
            Ok((*rate, duration.as_ns() as f64 / 1e9))
        }
        _ => Err("this check needs an open workload with a constant rate (no schedule)".into()),
    }
}

/// A closed workload's clients, operations per client and think time (ns).
fn closed_workload(spec: &ExperimentSpec) -> Result<(u32, u32, u64), String> {
    match &spec.workload {
        WorkloadSpec::Closed { clients, ops_per_client, think_time, ramp } if ramp.as_ns() == 0 => {
            Ok((*clients, *ops_per_client, think_time.as_ns()))
        }
        _ => Err("this check needs a closed workload without a ramp".into()),
    }
}

/// Time in the system is an operation's latency only without network delay.
fn no_network_delay(spec: &ExperimentSpec) -> Result<(), String> {
    require(spec.network.latency == DistSpec::default(), || {
        "this check needs network.latency = 0 (an operation's latency is then its time at the server)".into()
    })?;
    require(spec.network.request_loss == 0.0 && spec.network.response_loss == 0.0, || {
        "this check needs no message loss".into()
    })
}

/// Every request answered at once with one status: `errors = [{ status, probability = 1 }]`.
fn total_outage(spec: &ExperimentSpec) -> Result<(), String> {
    let q = queue_server(spec)?;
    require(
        q.errors.len() == 1
            && q.errors[0].probability == 1.0
            && !q.errors[0].after_effect
            && q.faults.is_empty(),
        || {
            "this check needs a total outage: server.errors = [{ status = 503, probability = 1.0 }] and no faults".into()
        },
    )
}

/// `f` of every run of (point, strategy), in run order.
fn per_run(results: &Results, p: usize, s: usize, f: impl Fn(&RunMetrics) -> f64) -> Vec<f64> {
    results.cell(p, s).iter().map(|r| f(&r.metrics)).collect()
}

/// The estimate of `f` over the runs of (point, strategy).
fn estimate(results: &Results, p: usize, s: usize, f: impl Fn(&RunMetrics) -> f64) -> Estimate {
    Estimate::of(&per_run(results, p, s, f))
}

fn secs(d: crate::experiment::Duration) -> f64 {
    d.as_ns() as f64 / 1e9
}

/// A duration for a label: "100 ms", "60.6531 ms".
fn ms(d: crate::experiment::Duration) -> String {
    format!("{} ms", super::markdown::sig(secs(d) * 1e3, 6))
}

/// A distribution as a reader would write it: "exponential (mean 100 ms)".
fn describe(d: &DistSpec) -> String {
    match d {
        DistSpec::Constant { value } => format!("constant {}", ms(*value)),
        DistSpec::Uniform { low, high } => format!("uniform on [{}, {}]", ms(*low), ms(*high)),
        DistSpec::Normal { mean, sd } => format!("|normal| (mean {}, sd {})", ms(*mean), ms(*sd)),
        DistSpec::Exponential { mean } => format!("exponential (mean {})", ms(*mean)),
        DistSpec::Lognormal { median, sigma } => format!("lognormal (median {}, sigma {sigma})", ms(*median)),
    }
}

/// The single strategy of a one-strategy file, at point `p`.
fn only_strategy(exp: &Experiment, p: usize) -> Result<&Strategy, String> {
    let s = &exp.points[p].strategies;
    require(s.len() == 1, || "this check needs exactly one strategy".into())?;
    Ok(&s[0])
}

fn single_attempt(s: &Strategy) -> Result<(), String> {
    require(s.policy.max_attempts == Some(1), || {
        format!(
            "strategy `{}` needs max_attempts = 1 (time in the system is then the operation's latency)",
            s.name
        )
    })
}

// ---------------------------------------------------------------------------------------------
// Queueing theory.
// ---------------------------------------------------------------------------------------------

fn erlang_b(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let mut rows = Vec::new();
    for (p, point) in exp.points.iter().enumerate() {
        let spec = &point.spec;
        let q = queue_server(spec)?;
        require(q.queue == Some(0), || "Erlang B needs server.queue = 0".into())?;
        single_attempt(only_strategy(exp, p)?)?;
        let (rate, _) = open_workload(spec)?;
        let a = rate * theory::dist_mean(&q.service_time);
        let b = theory::erlang_b(q.concurrency, a);
        let observed = estimate(results, p, 0, |m| m.failed as f64 / m.ops as f64);
        rows.push(Row::value(
            format!(
                "blocked share, c = {}, A = {} erlangs, service {}",
                q.concurrency,
                super::markdown::sig(a, 4),
                describe(&q.service_time)
            ),
            Unit::NUMBER,
            b,
            0.0,
            observed,
            0.0,
        ));
    }
    Ok(Evaluation { rows, ..Evaluation::default() })
}

/// The one point of a single-point, single-strategy M/x/c file: (rate, workers, service).
fn queue_point(exp: &Experiment) -> Result<(f64, u32, &DistSpec), String> {
    require(exp.points.len() == 1, || "this check has no sweep".into())?;
    let spec = &exp.points[0].spec;
    let q = queue_server(spec)?;
    require(q.queue.is_none() && q.errors.is_empty() && q.faults.is_empty(), || {
        "this check needs an unbounded queue, no errors and no faults".into()
    })?;
    single_attempt(only_strategy(exp, 0)?)?;
    no_network_delay(spec)?;
    let (rate, _) = open_workload(spec)?;
    Ok((rate, q.concurrency, &q.service_time))
}

fn erlang_c(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let (rate, c, service) = queue_point(exp)?;
    require(matches!(service, DistSpec::Exponential { .. }), || "Erlang C needs exponential service".into())?;
    let mean_s = theory::dist_mean(service);
    let a = rate * mean_s;
    let wq = theory::erlang_c_wait(c, rate, mean_s);
    let rows = vec![
        Row::value(
            format!("probability of waiting C({c}, {})", super::markdown::sig(a, 4)),
            Unit::NUMBER,
            theory::erlang_c(c, a),
            0.0,
            estimate(results, 0, 0, |m| m.queued_fraction),
            0.0,
        ),
        Row::value(
            "mean wait in the queue W_q",
            Unit::MS,
            wq,
            0.0,
            estimate(results, 0, 0, |m| m.wait_mean_s),
            0.0,
        ),
        Row::value(
            "mean time in the system W_q + 1/mu",
            Unit::MS,
            wq + mean_s,
            0.0,
            estimate(results, 0, 0, |m| m.latency_mean_s),
            0.0,
        ),
    ];
    Ok(Evaluation { rows, ..Evaluation::default() })
}

/// The HDR histogram's precision: 3 significant digits.
const HISTOGRAM_PRECISION: f64 = 0.001;

fn mm1(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let (rate, c, service) = queue_point(exp)?;
    require(c == 1 && matches!(service, DistSpec::Exponential { .. }), || {
        "M/M/1 needs one worker and exponential service".into()
    })?;
    let r = 1.0 / theory::dist_mean(service) - rate;
    let p50 = 2f64.ln() / r;
    let p99 = 100f64.ln() / r;
    let rows = vec![
        Row::value(
            "median sojourn ln 2 / (mu - lambda)",
            Unit::MS,
            p50,
            0.0,
            estimate(results, 0, 0, |m| m.latency_p50_s),
            HISTOGRAM_PRECISION * p50,
        ),
        Row::value(
            "99th percentile ln 100 / (mu - lambda)",
            Unit::MS,
            p99,
            0.0,
            estimate(results, 0, 0, |m| m.latency_p99_s),
            HISTOGRAM_PRECISION * p99,
        ),
        Row::value(
            "mean sojourn 1 / (mu - lambda)",
            Unit::MS,
            1.0 / r,
            0.0,
            estimate(results, 0, 0, |m| m.latency_mean_s),
            0.0,
        ),
    ];
    Ok(Evaluation { rows, ..Evaluation::default() })
}

fn md1(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let (rate, c, service) = queue_point(exp)?;
    require(c == 1, || "M/G/1 needs one worker".into())?;
    let mean_s = theory::dist_mean(service);
    let wq = theory::pollaczek_khinchine_wait(rate, mean_s, theory::dist_second_moment(service));
    let rows = vec![
        Row::value(
            format!("mean wait W_q, service {}", describe(service)),
            Unit::MS,
            wq,
            0.0,
            estimate(results, 0, 0, |m| m.wait_mean_s),
            0.0,
        ),
        Row::value(
            "mean time in the system W_q + E[S]",
            Unit::MS,
            wq + mean_s,
            0.0,
            estimate(results, 0, 0, |m| m.latency_mean_s),
            0.0,
        ),
    ];
    Ok(Evaluation { rows, ..Evaluation::default() })
}

fn little(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    require(exp.points.len() == 1, || "this check has no sweep".into())?;
    let spec = &exp.points[0].spec;
    single_attempt(only_strategy(exp, 0)?)?;
    no_network_delay(spec)?;
    let (rate, duration) = open_workload(spec)?;
    let runs = results.cell(0, 0);
    require(
        runs.iter().all(|r| r.metrics.failed_by[crate::metrics::FailReason::Unfinished as usize] == 0),
        || "operations were still pending at the horizon: make it longer".into(),
    )?;
    let lambda_w: Vec<f64> = runs
        .iter()
        .map(|r| rate * duration / r.metrics.completion_time_s * r.metrics.latency_mean_s)
        .collect();
    let l: Vec<f64> = runs.iter().map(|r| r.metrics.in_server_mean).collect();
    let diff: Vec<f64> = l.iter().zip(&lambda_w).map(|(a, b)| a - b).collect();
    let rows = vec![Row::paired(
        "time-average requests at the server L, against lambda W",
        Unit::NUMBER,
        stats::mean(&lambda_w),
        Estimate::of(&l),
        Estimate::of(&diff),
        0.0,
    )];
    let w = stats::mean(&runs.iter().map(|r| r.metrics.latency_mean_s).collect::<Vec<_>>());
    let sections = vec![format!(
        "Mean time in the system W = {} ms over the runs; lambda = {rate} /s during the {duration} s \
         of arrivals.",
        super::markdown::sig(w * 1e3, 4)
    )];
    Ok(Evaluation { rows, sections, ..Evaluation::default() })
}

fn poisson(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    require(exp.points.len() == 1, || "this check has no sweep".into())?;
    let spec = &exp.points[0].spec;
    single_attempt(only_strategy(exp, 0)?)?;
    let (rate, duration) = open_workload(spec)?;
    let width = secs(spec.output.bucket);
    let whole = (workload_duration_ns(spec) / spec.output.bucket.as_ns()) as usize;
    require(whole >= 30, || "fewer than 30 whole buckets in the arrival window".into())?;
    let offered = SERIES.iter().position(|s| *s == "offered").expect("offered is a series");
    let mut means = Vec::new();
    let mut dispersions = Vec::new();
    for r in results.cell(0, 0) {
        require(r.metrics.series.len() >= whole, || {
            "the time series is shorter than the arrival window".into()
        })?;
        let counts: Vec<f64> = (0..whole)
            .map(|i| r.metrics.series.row(i)[offered].expect("counts always have a value"))
            .collect();
        let m = stats::mean(&counts);
        let var = stats::sample_sd(&counts).powi(2);
        means.push(m);
        dispersions.push(var / m);
    }
    let k = whole as f64;
    let runs = dispersions.len();
    let sd_d = stats::sample_sd(&dispersions);
    let sd_estimate = Estimate::from_se(sd_d, sd_d / (2.0 * (runs as f64 - 1.0)).sqrt(), runs as u64);
    let rows = vec![
        Row::value(
            format!("mean count per {} bucket, lambda w", super::markdown::sig(width * 1e3, 4) + " ms"),
            Unit::NUMBER,
            rate * width,
            0.0,
            Estimate::of(&means),
            0.0,
        ),
        Row::value(
            "dispersion index D = variance / mean",
            Unit::NUMBER,
            1.0,
            0.0,
            Estimate::of(&dispersions),
            0.0,
        ),
        Row::value(
            format!("sd of D across runs, sqrt(2 / (k - 1)) with k = {whole}"),
            Unit::NUMBER,
            (2.0 / (k - 1.0)).sqrt(),
            0.0,
            sd_estimate,
            0.0,
        ),
    ];
    let (lo, hi) = (
        stats::chi_square_quantile(0.025, k - 1.0) / (k - 1.0),
        stats::chi_square_quantile(0.975, k - 1.0) / (k - 1.0),
    );
    let inside = dispersions.iter().filter(|d| (lo..=hi).contains(*d)).count();
    let sections = vec![format!(
        "Sampling distribution: under the Poisson hypothesis (k - 1) D follows chi-square with \
         k - 1 = {} degrees of freedom, so 95 % of runs should have D in [{}, {}] \
         (Wilson-Hilferty quantiles); {inside} of the {runs} runs do ({} expected). The {duration} s \
         of arrivals make {whole} whole buckets per run.",
        whole - 1,
        super::markdown::sig(lo, 4),
        super::markdown::sig(hi, 4),
        super::markdown::sig(0.95 * runs as f64, 3),
    )];
    Ok(Evaluation { rows, sections, ..Evaluation::default() })
}

// ---------------------------------------------------------------------------------------------
// Retries, backoff and controls.
// ---------------------------------------------------------------------------------------------

fn independent_failures(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let mut rows = Vec::new();
    for (p, point) in exp.points.iter().enumerate() {
        let q = queue_server(&point.spec)?;
        require(q.errors.len() == 1 && !q.errors[0].after_effect && q.faults.is_empty(), || {
            "this check needs one server.errors entry without after_effect, and no faults".into()
        })?;
        let s = only_strategy(exp, p)?;
        let n = s.policy.max_attempts.ok_or("this check needs max_attempts")?;
        let prob = q.errors[0].probability;
        let amplification = (1.0 - prob.powi(n as i32)) / (1.0 - prob);
        let success = 1.0 - prob.powi(n as i32);
        rows.push(Row::value(
            format!("p = {prob}, n = {n}: calls per operation (1 - p^n) / (1 - p)"),
            Unit::NUMBER,
            amplification,
            0.0,
            estimate(results, p, 0, |m| m.amplification()),
            0.0,
        ));
        rows.push(Row::value(
            format!("p = {prob}, n = {n}: success rate 1 - p^n"),
            Unit::NUMBER,
            success,
            0.0,
            estimate(results, p, 0, |m| m.success_rate()),
            0.0,
        ));
    }
    Ok(Evaluation { rows, ..Evaluation::default() })
}

/// Delays are rounded to the nearest nanosecond.
const DELAY_ROUNDING_S: f64 = 0.5e-9;

fn backoff(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let spec0 = &exp.points[0].spec;
    no_network_delay(spec0)?;
    total_outage(spec0)?;
    // Points by attempts: max_attempts = 1..=K+1, in order.
    let attempts: Vec<u32> = exp
        .points
        .iter()
        .map(|p| p.strategies[0].policy.max_attempts.ok_or("this check sweeps client.max_attempts"))
        .collect::<Result<_, _>>()?;
    require(attempts.iter().enumerate().all(|(i, n)| *n == i as u32 + 1) && attempts.len() >= 2, || {
        "this check needs [sweep] \"client.max_attempts\" = [1, 2, ..., K + 1]".into()
    })?;
    let retries = attempts.len() as u32 - 1;
    let mut rows = Vec::new();
    let mut bound_rows = Vec::new();
    for (s, strategy) in exp.points[0].strategies.iter().enumerate() {
        let laws = theory::delay_laws(&strategy.policy.backoff, retries)
            .ok_or_else(|| format!("strategy `{}`: no delay law for this backoff kind", strategy.name))?;
        let kind = backoff_formula(&strategy.policy.backoff);
        let (mut low, mut high) = (0.0, 0.0);
        for k in 1..=retries {
            let law = laws[k as usize - 1];
            let before = per_run(results, k as usize - 1, s, |m| m.latency_mean_s);
            let after = per_run(results, k as usize, s, |m| m.latency_mean_s);
            let delay: Vec<f64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
            rows.push(Row::value(
                format!("{}: retry {k}, mean delay ({kind})", strategy.name),
                Unit::MS,
                law.mean,
                0.0,
                Estimate::of(&delay),
                DELAY_ROUNDING_S,
            ));
            low += law.low;
            high += law.high;
            let cell = results.cell(k as usize, s);
            let min = cell.iter().map(|r| r.metrics.latency_min_s).fold(f64::INFINITY, f64::min);
            let max = cell.iter().map(|r| r.metrics.latency_max_s).fold(0.0, f64::max);
            bound_rows.push(Row::within(
                format!("{}: sum of the first {k} delay(s), every operation", strategy.name),
                Unit::MS,
                low,
                high,
                min,
                max,
                k as f64 * DELAY_ROUNDING_S,
            ));
        }
    }
    rows.extend(bound_rows);
    Ok(Evaluation { rows, ..Evaluation::default() })
}

/// The formula of a backoff's mean, for the row labels.
fn backoff_formula(b: &BackoffSpec) -> &'static str {
    match b {
        BackoffSpec::Exponential { .. } => "v",
        BackoffSpec::FullJitter { .. } => "v/2",
        BackoffSpec::EqualJitter { .. } => "3v/4",
        BackoffSpec::DecorrelatedJitter { .. } => "recursion",
        _ => "",
    }
}

/// The number of client processes a control with `scope` is kept for: each client's own, or
/// one for the fleet.
fn instances(scope: Scope, clients: u32) -> u32 {
    match scope {
        Scope::Client => clients,
        Scope::Shared => 1,
    }
}

fn token_bucket(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let spec = &exp.points[0].spec;
    total_outage(spec)?;
    let (clients, ops, _) = closed_workload(spec)?;
    let mut rows = Vec::new();
    for (s, strategy) in exp.points[0].strategies.iter().enumerate() {
        let Some(BudgetSpec::TokenBucket { capacity, retry_cost, scope, .. }) = &strategy.policy.budget
        else {
            return Err(format!("strategy `{}` needs a token-bucket budget", strategy.name));
        };
        let n = strategy.policy.max_attempts.ok_or("this check needs max_attempts")?;
        let buckets = instances(*scope, clients);
        let wanted_per_bucket = (clients / buckets) as f64 * ops as f64 * (n - 1) as f64;
        let paid = (capacity / retry_cost).floor().min(wanted_per_bucket);
        rows.push(Row::value(
            format!("{}: extra calls, {buckets} bucket(s) x floor({capacity} / {retry_cost})", strategy.name),
            Unit::NUMBER,
            buckets as f64 * paid,
            0.0,
            estimate(results, 0, s, |m| (m.calls - m.ops) as f64),
            0.0,
        ));
    }
    Ok(Evaluation { rows, ..Evaluation::default() })
}

fn ratio_budget(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let spec = &exp.points[0].spec;
    total_outage(spec)?;
    let (_, duration) = open_workload(spec)?;
    let mut rows = Vec::new();
    for (s, strategy) in exp.points[0].strategies.iter().enumerate() {
        let Some(BudgetSpec::Ratio { ratio, min_per_second, ttl, .. }) = &strategy.policy.budget else {
            return Err(format!("strategy `{}` needs a ratio budget", strategy.name));
        };
        require(*min_per_second == 0.0, || "this check needs min_per_second = 0 (no free retries)".into())?;
        let observed = estimate(results, 0, s, |m| (m.calls - m.ops) as f64 / m.ops as f64);
        let ops = stats::mean(&per_run(results, 0, s, |m| m.ops as f64));
        let resolution = (duration / secs(*ttl) + 1.0) / ops;
        rows.push(Row::value(
            format!("{}: retries per operation, ratio", strategy.name),
            Unit::NUMBER,
            *ratio,
            0.0,
            observed,
            resolution,
        ));
    }
    Ok(Evaluation { rows, ..Evaluation::default() })
}

fn grpc_throttle(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let spec = &exp.points[0].spec;
    total_outage(spec)?;
    let (clients, _, _) = closed_workload(spec)?;
    let mut rows = Vec::new();
    for (s, strategy) in exp.points[0].strategies.iter().enumerate() {
        let Some(BudgetSpec::GrpcThrottle { max_tokens, scope, .. }) = &strategy.policy.budget else {
            return Err(format!("strategy `{}` needs a grpc-throttle budget", strategy.name));
        };
        // The failures j = 1, 2, ... that leave max_tokens - j > max_tokens / 2 are retried.
        let mut retries = 0u32;
        while max_tokens - (retries + 1) as f64 > max_tokens / 2.0 {
            retries += 1;
        }
        let n = strategy.policy.max_attempts.ok_or("this check needs max_attempts")?;
        require(n > retries, || format!("strategy `{}`: max_attempts must exceed {retries}", strategy.name))?;
        let throttles = instances(*scope, clients);
        rows.push(Row::value(
            format!("{}: extra calls, {throttles} throttle(s) x {retries} retries", strategy.name),
            Unit::NUMBER,
            (throttles * retries) as f64,
            0.0,
            estimate(results, 0, s, |m| (m.calls - m.ops) as f64),
            0.0,
        ));
    }
    Ok(Evaluation { rows, ..Evaluation::default() })
}

fn breaker(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let spec = &exp.points[0].spec;
    total_outage(spec)?;
    no_network_delay(spec)?;
    let (clients, ops, tick) = closed_workload(spec)?;
    require(clients == 1 && tick > 0, || "this check needs one client with a think time".into())?;
    let horizon = secs(spec.horizon);
    let mut rows = Vec::new();
    for (s, strategy) in exp.points[0].strategies.iter().enumerate() {
        let b = strategy
            .policy
            .breaker
            .as_ref()
            .ok_or_else(|| format!("strategy `{}` needs a breaker", strategy.name))?;
        require(strategy.policy.max_attempts == Some(1), || "this check needs max_attempts = 1".into())?;
        let BreakerWindowSpec::Calls(window) = b.window else {
            return Err("this check needs a count window".into());
        };
        require(b.failure_rate <= 1.0 && b.minimum_calls <= window, || {
            "this check needs minimum_calls <= window".into()
        })?;
        let expected = breaker_calls(
            b.minimum_calls,
            b.half_open_calls,
            b.open_for.as_ns(),
            tick,
            spec.horizon.as_ns(),
            ops,
        );
        let probes = b.minimum_calls.min(b.half_open_calls) as u64;
        let periods = expected.saturating_sub(b.minimum_calls as u64) / probes;
        rows.push(Row::value(
            format!(
                "{}: calls in {horizon} s = minimum_calls {} + {periods} half-open period(s) x {probes} probes (open_for = {})",
                strategy.name, b.minimum_calls, b.open_for
            ),
            Unit::NUMBER,
            expected as f64,
            0.0,
            estimate(results, 0, s, |m| m.calls as f64),
            0.0,
        ));
    }
    Ok(Evaluation { rows, ..Evaluation::default() })
}

/// The calls a breaker lets through when every call fails at once and one client calls every
/// `tick` ns from t = 0 (at most `ops` times, until `horizon`): it opens on the
/// `minimum_calls`-th call; each open period ends at the first call strictly after
/// `open_for`, which starts a half-open period of `min(minimum_calls, half_open_calls)` probes
/// whose last result opens it again (resilience4j, `policy::breaker`).
pub fn breaker_calls(
    minimum_calls: u32,
    half_open_calls: u32,
    open_for_ns: u64,
    tick: u64,
    horizon: u64,
    ops: u32,
) -> u64 {
    let ops = ops as u64;
    let mut calls = 0u64;
    let mut index = 0u64; // the next operation's index: it starts at index * tick
    let in_run = |i: u64| i < ops && i * tick <= horizon;
    // Closed: the first minimum_calls calls.
    while calls < minimum_calls as u64 && in_run(index) {
        calls += 1;
        index += 1;
    }
    let probes = minimum_calls.min(half_open_calls) as u64;
    let mut opened_at = (index - 1) * tick;
    loop {
        // The first call strictly after the open period.
        let until = opened_at + open_for_ns;
        index = until / tick + 1;
        let mut sent = 0;
        while sent < probes && in_run(index) {
            calls += 1;
            sent += 1;
            index += 1;
        }
        if sent < probes {
            return calls;
        }
        opened_at = (index - 1) * tick;
    }
}

fn layers(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let spec = &exp.points[0].spec;
    total_outage(spec)?;
    let mut rows = Vec::new();
    for (s, strategy) in exp.points[0].strategies.iter().enumerate() {
        let n = strategy.policy.max_attempts.ok_or("this check needs max_attempts")?;
        let product: u64 =
            strategy.policy.layers.iter().map(|l| l.max_attempts as u64).product::<u64>() * n as u64;
        let factors: Vec<String> = std::iter::once(n)
            .chain(strategy.policy.layers.iter().map(|l| l.max_attempts))
            .map(|a| a.to_string())
            .collect();
        rows.push(Row::value(
            format!("{}: server calls per operation, {}", strategy.name, factors.join(" x ")),
            Unit::NUMBER,
            product as f64,
            0.0,
            estimate(results, 0, s, |m| m.server_calls as f64 / m.ops as f64),
            0.0,
        ));
        rows.push(Row::value(
            format!("{}: client calls per operation", strategy.name),
            Unit::NUMBER,
            n as f64,
            0.0,
            estimate(results, 0, s, |m| m.amplification()),
            0.0,
        ));
    }
    Ok(Evaluation { rows, ..Evaluation::default() })
}

fn storm(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    require(exp.points.len() == 1, || "this check has no sweep".into())?;
    let spec = &exp.points[0].spec;
    no_network_delay(spec)?;
    let q = queue_server(spec)?;
    let [FaultSpec::Outage { start, duration: outage, .. }] = q.faults.as_slice() else {
        return Err("this check needs exactly one outage fault".into());
    };
    require(q.errors.is_empty(), || "this check needs no background errors".into())?;
    let (rate, arrivals_s) = open_workload(spec)?;
    let strategy = only_strategy(exp, 0)?;
    let n = strategy.policy.max_attempts.ok_or("this check needs max_attempts")?;
    require(matches!(strategy.policy.backoff, BackoffSpec::None {}), || {
        "this check needs immediate retries".into()
    })?;
    let width = spec.output.bucket.as_ns();
    let (from, to) = (start.as_ns(), start.as_ns() + outage.as_ns());
    let end = (arrivals_s * 1e9) as u64;
    // Whole buckets [i w, (i + 1) w) inside a span.
    let whole = |a: u64, b: u64| (a.div_ceil(width)..b / width).collect::<Vec<u64>>();
    let inside = whole(from, to.min(end));
    let outside: Vec<u64> = whole(0, from).into_iter().chain(whole(to, end)).collect();
    require(!inside.is_empty() && !outside.is_empty(), || {
        "no whole bucket inside or outside the outage".into()
    })?;
    let offered = SERIES.iter().position(|s| *s == "offered").expect("offered is a series");
    let per_s = |buckets: &[u64]| {
        per_run(results, 0, 0, |m| {
            let total: f64 = buckets.iter().map(|&i| m.series.row(i as usize)[offered].unwrap_or(0.0)).sum();
            total / (buckets.len() as f64 * width as f64 / 1e9)
        })
    };
    let rows = vec![
        Row::value(
            format!("offered calls/s during the outage, n x R = {n} x {rate}"),
            Unit::PER_S,
            n as f64 * rate,
            0.0,
            Estimate::of(&per_s(&inside)),
            0.0,
        ),
        Row::value(
            format!("offered calls/s outside it, R = {rate}"),
            Unit::PER_S,
            rate,
            0.0,
            Estimate::of(&per_s(&outside)),
            0.0,
        ),
    ];
    Ok(Evaluation { rows, ..Evaluation::default() })
}

/// An open workload's duration in ns (0 for a closed one).
fn workload_duration_ns(spec: &ExperimentSpec) -> u64 {
    match &spec.workload {
        WorkloadSpec::Open { duration, .. } => duration.as_ns(),
        WorkloadSpec::Closed { .. } => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// The timeline of experiments/validation/breaker.toml, by hand: opens at the 20th call
    /// (190 ms); probes at 1190-1230 ms, 2230-2270 ms, 3270-3310 ms; the fourth period would
    /// start at 4310 ms, after the 4 s horizon.
    #[test]
    fn breaker_timeline() {
        assert_eq!(breaker_calls(20, 5, 3_600_000 * MS, 10 * MS, 4000 * MS, 1000), 20);
        assert_eq!(breaker_calls(20, 5, 995 * MS, 10 * MS, 4000 * MS, 1000), 35);
        // The open period ends strictly after open_for: with open_for = 1 s the probe comes at
        // 1200 ms, not 1190 ms.
        assert_eq!(breaker_calls(20, 5, 1000 * MS, 10 * MS, 1205 * MS, 1000), 21);
        // min(minimum_calls, half_open_calls) probes.
        assert_eq!(breaker_calls(3, 5, 995 * MS, 10 * MS, 1500 * MS, 1000), 6);
        // Fewer operations than minimum_calls: they all go through.
        assert_eq!(breaker_calls(20, 5, 995 * MS, 10 * MS, 4000 * MS, 7), 7);
    }

    #[test]
    fn every_check_has_a_unique_id() {
        let mut ids: Vec<_> = CHECKS.iter().map(|c| c.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), CHECKS.len());
    }
}
