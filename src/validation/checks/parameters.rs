//! What every check reads from its experiment file and its results: the file's one point, its
//! server, workload and strategies, each refused with the reason when the check cannot use
//! it, and the runs' metrics.

use crate::experiment::{
    DistSpec, Duration, Experiment, ExperimentSpec, QueueServerSpec, ServerSpec, Strategy, WorkloadSpec,
};
use crate::metrics::RunMetrics;
use crate::stats::Estimate;
use crate::stats::sig_padded;
use crate::sweep::Results;

/// Fails with `reason` unless `ok`.
pub(super) fn require(ok: bool, reason: impl FnOnce() -> String) -> Result<(), String> {
    if ok { Ok(()) } else { Err(reason()) }
}

pub(super) fn queue_server(spec: &ExperimentSpec) -> Result<&QueueServerSpec, String> {
    match &spec.server {
        ServerSpec::Queue(q) => Ok(q),
        ServerSpec::Occ {} => Err("this check needs server.kind = \"queue\"".into()),
    }
}

/// An open workload's constant rate and duration (s).
pub(super) fn open_workload(spec: &ExperimentSpec) -> Result<(f64, f64), String> {
    match &spec.workload {
        WorkloadSpec::Open { rate, duration, schedule, .. } if schedule.is_empty() => {
            Ok((*rate, duration.as_secs_f64()))
        }
        _ => Err("this check needs an open workload with a constant rate (no schedule)".into()),
    }
}

/// A closed workload's clients, operations per client and think time (ns).
pub(super) fn closed_workload(spec: &ExperimentSpec) -> Result<(u32, u32, u64), String> {
    match &spec.workload {
        WorkloadSpec::Closed { clients, ops_per_client, think_time, ramp, .. } if ramp.as_ns() == 0 => {
            Ok((*clients, *ops_per_client, think_time.as_ns()))
        }
        _ => Err("this check needs a closed workload without a ramp".into()),
    }
}

/// Time in the system is an operation's latency only without network delay.
pub(super) fn no_network_delay(spec: &ExperimentSpec) -> Result<(), String> {
    require(spec.network.latency == DistSpec::default(), || {
        "this check needs network.latency = 0 (an operation's latency is then its time at the server)".into()
    })?;
    require(spec.network.request_loss == 0.0 && spec.network.response_loss == 0.0, || {
        "this check needs no message loss".into()
    })
}

/// Every request answered at once with one status: `errors = [{ status, probability = 1 }]`.
pub(super) fn total_outage(spec: &ExperimentSpec) -> Result<(), String> {
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
pub(super) fn per_run(results: &Results, p: usize, s: usize, f: impl Fn(&RunMetrics) -> f64) -> Vec<f64> {
    results.cell(p, s).iter().map(|r| f(&r.metrics)).collect()
}

/// The estimate of `f` over the runs of (point, strategy).
pub(super) fn estimate(results: &Results, p: usize, s: usize, f: impl Fn(&RunMetrics) -> f64) -> Estimate {
    Estimate::of(&per_run(results, p, s, f))
}

/// A duration for a label: "100 ms", "60.6531 ms".
fn ms(d: Duration) -> String {
    format!("{} ms", sig_padded(d.as_secs_f64() * 1e3, 6))
}

/// A distribution as a reader would write it: "exponential (mean 100 ms)".
pub(super) fn describe(d: &DistSpec) -> String {
    match d {
        DistSpec::Constant { value } => format!("constant {}", ms(*value)),
        DistSpec::Uniform { low, high } => format!("uniform on [{}, {}]", ms(*low), ms(*high)),
        DistSpec::Normal { mean, sd } => format!("|normal| (mean {}, sd {})", ms(*mean), ms(*sd)),
        DistSpec::Exponential { mean } => format!("exponential (mean {})", ms(*mean)),
        DistSpec::Lognormal { median, sigma } => format!("lognormal (median {}, sigma {sigma})", ms(*median)),
        DistSpec::Discrete { points } => {
            let each: Vec<String> =
                points.iter().map(|p| format!("{} w.p. {}", ms(p.value), p.weight)).collect();
            format!("discrete ({})", each.join(", "))
        }
    }
}

/// The file's one point (a check that compares one setting refuses a sweep): its spec and its
/// strategies.
pub(super) fn single_point(exp: &Experiment) -> Result<(&ExperimentSpec, &[Strategy]), String> {
    require(exp.points.len() == 1, || "this check has no sweep".into())?;
    Ok((&exp.points[0].spec, &exp.points[0].strategies))
}

/// The single strategy of a one-strategy point.
pub(super) fn only_strategy(strategies: &[Strategy]) -> Result<&Strategy, String> {
    require(strategies.len() == 1, || "this check needs exactly one strategy".into())?;
    Ok(&strategies[0])
}

pub(super) fn single_attempt(s: &Strategy) -> Result<(), String> {
    require(s.policy.max_attempts == Some(1), || {
        format!(
            "strategy `{}` needs max_attempts = 1 (time in the system is then the operation's latency)",
            s.name
        )
    })
}

/// An open or serial workload's duration in ns (0 for a closed one).
pub(super) fn workload_duration_ns(spec: &ExperimentSpec) -> u64 {
    match &spec.workload {
        WorkloadSpec::Open { duration, .. }
        | WorkloadSpec::Serial { duration, .. }
        | WorkloadSpec::Queue { duration, .. } => duration.as_ns(),
        WorkloadSpec::Closed { .. } => 0,
    }
}
