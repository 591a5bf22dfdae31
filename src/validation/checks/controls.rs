//! Retries and their controls: amplification under independent failures, the backoff laws,
//! the budgets and the breaker in a total outage, layered retries and the retry storm.

use super::parameters::{
    closed_workload, estimate, no_network_delay, only_strategy, open_workload, per_run, queue_server,
    require, single_point, total_outage,
};
use crate::experiment::{
    BackoffSpec, BreakerSpec, BreakerWindowSpec, BudgetSpec, Experiment, FaultSpec, Scope,
};
use crate::metrics::series::SERIES;
use crate::stats::{self, Estimate};
use crate::sweep::Results;
use crate::validation::{Evaluation, Row, Unit, theory};
use std::path::Path;

pub(super) fn independent_failures(
    exp: &Experiment,
    results: &Results,
    _: &Path,
) -> Result<Evaluation, String> {
    let mut rows = Vec::new();
    for (p, point) in exp.points.iter().enumerate() {
        let q = queue_server(&point.spec)?;
        require(q.errors.len() == 1 && !q.errors[0].after_effect && q.faults.is_empty(), || {
            "this check needs one server.errors entry without after_effect, and no faults".into()
        })?;
        let s = only_strategy(&point.strategies)?;
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

pub(super) fn backoff(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
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

pub(super) fn token_bucket(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let (spec, strategies) = single_point(exp)?;
    total_outage(spec)?;
    let (clients, ops, _) = closed_workload(spec)?;
    let mut rows = Vec::new();
    for (s, strategy) in strategies.iter().enumerate() {
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

pub(super) fn ratio_budget(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let (spec, strategies) = single_point(exp)?;
    total_outage(spec)?;
    let (_, duration) = open_workload(spec)?;
    let mut rows = Vec::new();
    for (s, strategy) in strategies.iter().enumerate() {
        let Some(BudgetSpec::Ratio { ratio, min_per_second, ttl, .. }) = &strategy.policy.budget else {
            return Err(format!("strategy `{}` needs a ratio budget", strategy.name));
        };
        require(*min_per_second == 0.0, || "this check needs min_per_second = 0 (no free retries)".into())?;
        let observed = estimate(results, 0, s, |m| (m.calls - m.ops) as f64 / m.ops as f64);
        let ops = stats::mean(&per_run(results, 0, s, |m| m.ops as f64));
        let resolution = (duration / ttl.as_secs_f64() + 1.0) / ops;
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

pub(super) fn grpc_throttle(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let (spec, strategies) = single_point(exp)?;
    total_outage(spec)?;
    let (clients, _, _) = closed_workload(spec)?;
    let mut rows = Vec::new();
    for (s, strategy) in strategies.iter().enumerate() {
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

pub(super) fn breaker(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let (spec, strategies) = single_point(exp)?;
    total_outage(spec)?;
    no_network_delay(spec)?;
    let (clients, ops, tick) = closed_workload(spec)?;
    require(clients == 1 && tick > 0, || "this check needs one client with a think time".into())?;
    let horizon = spec.horizon.as_secs_f64();
    let mut rows = Vec::new();
    for (s, strategy) in strategies.iter().enumerate() {
        let Some(BreakerSpec::Resilience4j(b)) = strategy.policy.breaker.as_ref() else {
            return Err(format!("strategy `{}` needs a resilience4j breaker", strategy.name));
        };
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
fn breaker_calls(
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

pub(super) fn layers(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let (spec, strategies) = single_point(exp)?;
    total_outage(spec)?;
    let mut rows = Vec::new();
    for (s, strategy) in strategies.iter().enumerate() {
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

pub(super) fn storm(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let (spec, strategies) = single_point(exp)?;
    no_network_delay(spec)?;
    let q = queue_server(spec)?;
    let [FaultSpec::Outage { start, duration: outage, .. }] = q.faults.as_slice() else {
        return Err("this check needs exactly one outage fault".into());
    };
    require(q.errors.is_empty(), || "this check needs no background errors".into())?;
    let (rate, arrivals_s) = open_workload(spec)?;
    let strategy = only_strategy(strategies)?;
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
}
