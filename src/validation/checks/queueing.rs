//! Queueing theory: the server model against closed forms (Erlang B and C, M/M/1 sojourn
//! quantiles, Pollaczek-Khinchine), Little's law and the Poisson arrival process.

use super::parameters::{
    describe, estimate, no_network_delay, only_strategy, open_workload, queue_server, require,
    single_attempt, single_point, workload_duration_ns,
};
use crate::experiment::{DistSpec, Experiment};
use crate::metrics::series::SERIES;
use crate::stats::sig_padded;
use crate::stats::{self, Estimate};
use crate::sweep::Results;
use crate::validation::{Evaluation, Row, Unit, theory};
use std::path::Path;

pub(super) fn erlang_b(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let mut rows = Vec::new();
    for (p, point) in exp.points.iter().enumerate() {
        let spec = &point.spec;
        let q = queue_server(spec)?;
        require(q.queue == Some(0), || "Erlang B needs server.queue = 0".into())?;
        single_attempt(only_strategy(&point.strategies)?)?;
        let (rate, _) = open_workload(spec)?;
        let a = rate * theory::dist_mean(&q.service_time);
        let b = theory::erlang_b(q.concurrency, a);
        let observed = estimate(results, p, 0, |m| m.failed as f64 / m.ops as f64);
        rows.push(Row::value(
            format!(
                "blocked share, c = {}, A = {} erlangs, service {}",
                q.concurrency,
                sig_padded(a, 4),
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
    let (spec, strategies) = single_point(exp)?;
    let q = queue_server(spec)?;
    require(q.queue.is_none() && q.errors.is_empty() && q.faults.is_empty(), || {
        "this check needs an unbounded queue, no errors and no faults".into()
    })?;
    single_attempt(only_strategy(strategies)?)?;
    no_network_delay(spec)?;
    let (rate, _) = open_workload(spec)?;
    Ok((rate, q.concurrency, &q.service_time))
}

pub(super) fn erlang_c(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let (rate, c, service) = queue_point(exp)?;
    require(matches!(service, DistSpec::Exponential { .. }), || "Erlang C needs exponential service".into())?;
    let mean_s = theory::dist_mean(service);
    let a = rate * mean_s;
    let wq = theory::erlang_c_wait(c, rate, mean_s);
    let rows = vec![
        Row::value(
            format!("probability of waiting C({c}, {})", sig_padded(a, 4)),
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

pub(super) fn mm1(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
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

pub(super) fn md1(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
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

pub(super) fn little(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let (spec, strategies) = single_point(exp)?;
    single_attempt(only_strategy(strategies)?)?;
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
        sig_padded(w * 1e3, 4)
    )];
    Ok(Evaluation { rows, sections, ..Evaluation::default() })
}

pub(super) fn poisson(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let (spec, strategies) = single_point(exp)?;
    single_attempt(only_strategy(strategies)?)?;
    let (rate, duration) = open_workload(spec)?;
    let width = spec.output.bucket.as_secs_f64();
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
            format!("mean count per {} bucket, lambda w", sig_padded(width * 1e3, 4) + " ms"),
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
        sig_padded(lo, 4),
        sig_padded(hi, 4),
        sig_padded(0.95 * runs as f64, 3),
    )];
    Ok(Evaluation { rows, sections, ..Evaluation::default() })
}
