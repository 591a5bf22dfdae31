//! Rules that one key's type and range cannot express: orderings and combinations (DESIGN
//! §7: "impossible values ... are rejected before anything runs, with the key and the
//! reason"). Types and ranges of single keys are in `super::schema`. Each error names the full
//! key as `--set` would address it and says how to fix it.

mod hedge;
mod services;

use super::ConfigError;
use super::IdempotencyMode;
use super::deploys::rolling_updates;
use super::duration::Duration;
use super::load::strategy_key;
use super::spec::{
    AdaptiveConcurrencySpec, ArrivalsSpec, AutoscaleSpec, BackoffSpec, BalancerSpec, BreakerSpec, BudgetSpec,
    DiscretePoint, DistSpec, ExperimentSpec, FaultSpec, FaultStatus, InProgress, LimitSpec, NamedFailure,
    PRIORITY_CLASSES, PolicySpec, QueueServerSpec, RateChangesSpec, RateLimitSpec, RetryGroup, RetryOnItem,
    ServerSpec, Strategy, ThrottleSpec, WorkloadSpec,
};
use crate::policy::budget::WINDOW_SLICES;
use crate::policy::deploy::plan;

/// A refused key and why; the origin is added once, at the end.
struct Invalid {
    key: String,
    reason: String,
}

type Check = Result<(), Invalid>;

fn fail(key: impl Into<String>, reason: impl Into<String>) -> Check {
    Err(Invalid { key: key.into(), reason: reason.into() })
}

/// Checks every cross-field rule of one (overridden, swept) spec.
pub(crate) fn validate(spec: &ExperimentSpec, origin: &str) -> Result<(), ConfigError> {
    check(spec).map_err(|e| ConfigError::InvalidValue {
        origin: origin.to_owned(),
        key: e.key,
        reason: e.reason,
    })
}

fn check(spec: &ExperimentSpec) -> Check {
    name(&spec.name)?;
    // `--runs` and `--seed` apply after the file is checked.
    if spec.runs == 0 {
        fail("runs", "must be at least 1: the number of replications per point and strategy")?;
    }
    if spec.horizon.as_ns() / spec.output.bucket.as_ns().max(1) > 10_000_000 {
        fail(
            "output.bucket",
            "more than 10,000,000 buckets up to the horizon: make the bucket wider (each bucket costs memory in every run)",
        )?;
    }
    for (name, [_, end]) in &spec.output.windows {
        if end.as_ns() > spec.horizon.as_ns() {
            fail(
                format!("output.windows.{name}"),
                format!(
                    "ends at {end}, after the horizon ({}): end the window at the horizon or before",
                    spec.horizon
                ),
            )?;
        }
    }
    workload(&spec.workload)?;
    priorities(spec)?;
    queue_workload(spec)?;
    dist("network.latency", &spec.network.latency)?;
    match &spec.server {
        // With `[[services]]`, the server is the first service's, checked as `services[0]`.
        ServerSpec::Queue(_) if !spec.services.is_empty() => {}
        ServerSpec::Queue(q) => queue_server(q, spec.workload.priorities().is_some())?,
        ServerSpec::Occ {} => occ_unsupported(spec)?,
    }
    strategies(spec)?;
    services::services(spec)
}

/// `[workload] priorities`: shares that sum to 1, a queue server, and no window named after a
/// class (both make `METRIC@NAME` columns).
fn priorities(spec: &ExperimentSpec) -> Check {
    let Some(p) = spec.workload.priorities() else { return Ok(()) };
    let total: f64 = p.shares().iter().sum();
    if (total - 1.0).abs() > 1e-9 {
        fail(
            "workload.priorities",
            format!(
                "the shares sum to {total}, not 1: give each class its share of the operations, e.g. {{ critical = 0.2, sheddable = 0.8 }}"
            ),
        )?;
    }
    if matches!(spec.server, ServerSpec::Occ {}) {
        fail(
            "workload.priorities",
            "is not supported for server.kind = \"occ\" (it answers at once and sheds nothing); remove it or use the queue server",
        )?;
    }
    if let Some(name) = spec.output.windows.keys().find(|w| PRIORITY_CLASSES.contains(&w.as_str())) {
        fail(
            format!("output.windows.{name}"),
            "is the name of a priority class, whose columns are `METRIC@CLASS` too: rename the window",
        )?;
    }
    Ok(())
}

/// The name becomes the folder `results/<name>/`: keep it a plain, portable file name.
fn name(name: &str) -> Check {
    let portable = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if name.is_empty() || name.chars().all(|c| c == '.') {
        return fail("name", "must be a folder name such as \"retry-storm\" (it names results/<name>/)");
    }
    match name.chars().find(|c| !portable(*c)) {
        Some(c) => fail(
            "name",
            format!(
                "{c:?} is not allowed: use only letters, digits, '.', '_' and '-' (it names results/<name>/)"
            ),
        ),
        None => Ok(()),
    }
}

fn workload(w: &WorkloadSpec) -> Check {
    match w {
        WorkloadSpec::Closed { clients, ops_per_client, .. } => {
            at_most("workload.clients", *clients, MAX_CLIENTS, "clients")?;
            if u64::from(*clients) * u64::from(*ops_per_client) > u64::from(u32::MAX) {
                fail(
                    "workload.ops_per_client",
                    "clients x ops_per_client is above 4294967295 operations; lower one of them",
                )?;
            }
            Ok(())
        }
        WorkloadSpec::Serial { clients, gap, first_call, .. } => {
            dist("workload.gap", gap)?;
            if let Some(d) = first_call {
                dist("workload.first_call", d)?;
            }
            at_most("workload.clients", *clients, MAX_CLIENTS, "clients")
        }
        WorkloadSpec::Queue { .. } => Ok(()),
        WorkloadSpec::Open { rate, schedule, clients, arrivals, first_call, rate_changes, .. } => {
            if *rate_changes != RateChangesSpec::Exact && *arrivals == ArrivalsSpec::Fixed {
                fail(
                    "workload.rate_changes",
                    "fixed-interval arrivals draw no gaps (each rate step restarts the spacing): \
                     remove rate_changes, or set arrivals = \"poisson\" or \"per-client\"",
                )?;
            }
            if first_call.is_some() && *arrivals != ArrivalsSpec::PerClient {
                fail(
                    "workload.first_call",
                    "a first call at each client's wake-up needs each client's own stream: set \
                     arrivals = \"per-client\", or remove first_call",
                )?;
            }
            if let Some(d) = first_call {
                dist("workload.first_call", d)?;
            }
            let mut previous: Option<Duration> = None;
            for (i, step) in schedule.iter().enumerate() {
                if previous.is_some_and(|p| step.at <= p) {
                    fail(
                        format!("workload.schedule[{i}].at"),
                        "the schedule's `at` times must be strictly increasing",
                    )?;
                }
                previous = Some(step.at);
            }
            if *rate == 0.0 && schedule.iter().all(|s| s.rate == 0.0) {
                fail("workload.rate", "every rate is 0, so no operation would ever arrive; set a rate > 0")?;
            }
            at_most("workload.clients", *clients, MAX_CLIENTS, "client processes")
        }
    }
}

/// Clients and workers each cost memory up front (about 60 bytes per client, 40 per worker):
/// beyond these a run would exhaust memory instead of running, so it is refused up front.
const MAX_CLIENTS: u32 = 100_000_000;
const MAX_CONCURRENCY: u32 = 100_000_000;

fn at_most(key: &str, n: u32, max: u32, what: &str) -> Check {
    if n > max {
        fail(key, format!("{n} {what} is more than this simulator holds in memory (at most {max})"))?;
    }
    Ok(())
}

fn dist(key: &str, d: &DistSpec) -> Check {
    match *d {
        DistSpec::Uniform { low, high } if high < low => fail(
            format!("{key}.high"),
            format!("high ({high}) is below low ({low}): a uniform distribution needs low <= high"),
        ),
        DistSpec::Discrete { ref points } => discrete(key, points),
        _ => Ok(()),
    }
}

/// The most points a `discrete` distribution takes (a sample scans them).
pub const MAX_DISCRETE_POINTS: usize = 16;

/// `{ dist = "discrete" }`: 1 to 16 points whose weights sum to 1 (to 1e-9).
fn discrete(key: &str, points: &[DiscretePoint]) -> Check {
    if points.is_empty() || points.len() > MAX_DISCRETE_POINTS {
        fail(
            format!("{key}.points"),
            format!(
                "has {} points: give 1 to {MAX_DISCRETE_POINTS}, e.g. [{{ value = \"0.1ms\", weight = 0.999 }}, {{ value = \"10ms\", weight = 0.001 }}]",
                points.len()
            ),
        )?;
    }
    let total: f64 = points.iter().map(|p| p.weight).sum();
    if (total - 1.0).abs() > 1e-9 {
        fail(
            format!("{key}.points"),
            format!(
                "weights sum to {total}, not 1: each weight is its value's probability; make them add up to 1"
            ),
        )?;
    }
    Ok(())
}

fn queue_server(q: &QueueServerSpec, priorities: bool) -> Check {
    at_most("server.concurrency", q.concurrency, MAX_CONCURRENCY, "workers")?;
    dist("server.service_time", &q.service_time)?;
    if let DistSpec::Exponential { mean: Duration::ZERO } = q.service_time {
        fail("server.service_time.mean", "must be > 0 for an exponential service time, e.g. \"10ms\"")?;
    }
    if !matches!(q.reject_status, 429 | 503) {
        fail(
            "server.reject_status",
            format!("{} is not allowed: a full queue answers 429 or 503", q.reject_status),
        )?;
    }
    if let Some(r) = &q.rate_limit {
        rate_limit(r)?;
    }
    if let Some(a) = &q.adaptive_concurrency {
        adaptive_concurrency(a)?;
    }
    let total: f64 = q.errors.iter().map(|e| e.probability).sum();
    if total > 1.0 + 1e-12 {
        fail("server.errors", format!("the probabilities add up to {total}, above 1; lower them"))?;
    }
    if let Some(i) = &q.idempotency
        && i.lock_ttl.is_some()
        && i.on_in_progress == InProgress::Wait
    {
        fail(
            "server.idempotency.lock_ttl",
            "with on_in_progress = \"wait\" is not modelled (what would a request parked on an expired lock do?): \
             set server.idempotency.on_in_progress = \"conflict\" (a repeat is answered 409 while the lock lasts), or remove lock_ttl",
        )?;
    }
    replicas(q, priorities)?;
    if let Some(o) = &q.overload
        && o.knee > q.concurrency
    {
        fail(
            "server.overload.knee",
            format!(
                "{} is above concurrency ({}): no more than concurrency requests are ever in service, so the knee would never be reached",
                o.knee, q.concurrency
            ),
        )?;
    }
    Ok(())
}

/// `[server] replicas` and what names them: faults, and the stages not modelled per replica.
fn replicas(q: &QueueServerSpec, spec_priorities: bool) -> Check {
    at_most("server.replicas", q.replicas, 10_000, "replicas")?;
    if q.replicas > 1 {
        if q.rate_limit.is_some() {
            fail(
                "server.rate_limit",
                format!(
                    "with replicas = {} is not modelled yet (one limiter per replica, or one shared?): remove it or set replicas = 1",
                    q.replicas
                ),
            )?;
        }
        if q.idempotency.is_some() {
            fail(
                "server.idempotency",
                format!(
                    "with replicas = {} is not modelled yet (a dedup store shared by the replicas): remove it or set replicas = 1",
                    q.replicas
                ),
            )?;
        }
        if spec_priorities {
            fail(
                "workload.priorities",
                format!(
                    "with server.replicas = {} is not modelled yet (shedding by class at each replica); remove it or set replicas = 1",
                    q.replicas
                ),
            )?;
        }
        if q.adaptive_concurrency.is_some() {
            fail(
                "server.adaptive_concurrency",
                format!(
                    "with replicas = {} is not modelled yet (Envoy runs one controller per host): remove it or set replicas = 1",
                    q.replicas
                ),
            )?;
        }
    }
    if let Some(o) = &q.outlier
        && o.max_ejection_time.as_ns() < o.base_ejection_time.as_ns()
    {
        fail(
            "server.outlier.max_ejection_time",
            format!(
                "{} is below base_ejection_time ({}): Envoy refuses it; raise it",
                o.max_ejection_time, o.base_ejection_time
            ),
        )?;
    }
    deploys(q)?;
    autoscale(q)?;
    for (i, f) in q.faults.iter().enumerate() {
        if matches!(f, FaultSpec::Restart { .. }) && q.replicas == 1 {
            restart_alone(q, spec_priorities, i)?;
        }
        match f.target() {
            (Some(_), Some(_)) => fail(
                format!("server.faults[{i}].replica_share"),
                "and replica are both set: name one replica, or a share of them",
            )?,
            (Some(r), None) if r >= q.replicas => fail(
                format!("server.faults[{i}].replica"),
                format!(
                    "replica {r} does not exist: replicas are numbered from 0 to {} (server.replicas = {}); name one of them or raise server.replicas",
                    q.replicas - 1,
                    q.replicas
                ),
            )?,
            _ => {}
        }
    }
    Ok(())
}

/// `[server] autoscale`: it scales a replica set, from `replicas` within [min, max], and not
/// while deploys roll (both would move the same slots).
fn autoscale(q: &QueueServerSpec) -> Check {
    let Some(a) = &q.autoscale else { return Ok(()) };
    let (min, max) = (a.min(), a.max());
    if q.replicas == 1 {
        fail(
            "server.autoscale",
            "needs replicas: set server.replicas > 1 (the replicas at the start), or remove it",
        )?;
    }
    if !q.deploys.is_empty() {
        fail(
            "server.autoscale",
            "with [[server.deploys]] is not modelled (a rolling deploy and the autoscaler would move the same replicas): remove one of them",
        )?;
    }
    if min > max {
        fail("server.autoscale.min", format!("{min} is above max ({max}): set min <= max"))?;
    }
    at_most("server.autoscale.max", max, 10_000, "replicas")?;
    if let AutoscaleSpec::Kpa(k) = a {
        let window = k.stable_window.as_ns();
        if window % 1_000_000_000 != 0 || !(6_000_000_000..=3_600_000_000_000).contains(&window) {
            fail(
                "server.autoscale.stable_window",
                "must be whole seconds from 6s to 1h (Knative's bounds; its metric buckets are seconds), e.g. \"60s\"",
            )?;
        }
        if k.scale_down_delay.as_ns() > 3_600_000_000_000 {
            fail("server.autoscale.scale_down_delay", "must be at most 1h (Knative's bound), e.g. \"0s\"")?;
        }
    }
    if q.replicas > max {
        fail(
            "server.autoscale.max",
            format!(
                "{} is below server.replicas ({}): the replicas at the start must fit; raise max or lower replicas",
                max, q.replicas
            ),
        )?;
    }
    if q.replicas < min {
        fail(
            "server.autoscale.min",
            format!(
                "{} is above server.replicas ({}): the replicas at the start must be at least min; lower min or raise replicas",
                min, q.replicas
            ),
        )?;
    }
    Ok(())
}

/// `[[server.deploys]]` and `[server.slow_start]`: they need replicas, and slow start a
/// balancer Envoy applies it to; deploys follow each other.
fn deploys(q: &QueueServerSpec) -> Check {
    if let Some(s) = &q.slow_start {
        if q.replicas == 1 {
            fail("server.slow_start", "needs replicas: set server.replicas > 1, or remove it")?;
        }
        if !matches!(q.balancer, BalancerSpec::RoundRobin | BalancerSpec::LeastRequest) {
            fail(
                "server.slow_start",
                "is applied by Envoy to the round-robin and least-request balancers only (they weigh hosts): set server.balancer = \"round-robin\" or \"least-request\", or remove it",
            )?;
        }
        if s.window.as_ns() == 0 {
            fail(
                "server.slow_start.window",
                "must be > 0: how long a replica stays in slow start, e.g. \"30s\"",
            )?;
        }
    }
    if q.deploys.is_empty() {
        return Ok(());
    }
    if q.replicas == 1 {
        fail(
            "server.deploys",
            "needs replicas to roll: set server.replicas > 1 (a restart of the one server is a [[server.faults]] kind = \"restart\")",
        )?;
    }
    for (i, d) in q.deploys.iter().enumerate() {
        if d.max_unavailable.is_zero() && d.max_surge.is_zero() {
            fail(
                format!("server.deploys[{i}].max_unavailable"),
                "and max_surge are both 0: the deploy could never replace a replica (Kubernetes refuses it); set max_unavailable >= 1 or max_surge >= 1",
            )?;
        }
    }
    if let Err(i) = plan(q.replicas, &rolling_updates(q)) {
        fail(
            format!("server.deploys[{i}].start"),
            format!(
                "{} is before the deploy before it has ended: start it later (deploys run one after the other)",
                q.deploys[i].start
            ),
        )?;
    }
    Ok(())
}

/// A `restart` fault on a server without replicas: the stages that keep per-request state
/// across a restart are not modelled.
fn restart_alone(q: &QueueServerSpec, spec_priorities: bool, i: usize) -> Check {
    if q.adaptive_concurrency.is_some() || spec_priorities {
        fail(
            format!("server.faults[{i}]"),
            "a restart with server.adaptive_concurrency or workload.priorities is not modelled (what the dropped requests leave in them): remove one of them",
        )?;
    }
    Ok(())
}

/// `[server.rate_limit]`: the keys that depend on each other.
fn rate_limit(r: &RateLimitSpec) -> Check {
    match *r {
        RateLimitSpec::TokenBucket { rate, fill_interval, tokens_per_fill, .. } => {
            match (rate, fill_interval) {
                (Some(_), Some(_)) => fail(
                    "server.rate_limit.fill_interval",
                    "is given with rate: refill either continuously (rate, tokens per second) or as Envoy does \
                 (fill_interval and tokens_per_fill); remove one of them",
                ),
                (None, None) => fail(
                    "server.rate_limit.rate",
                    "is missing: set rate (tokens per second, refilled continuously), or fill_interval \
                 (Envoy's discrete refill, with tokens_per_fill)",
                ),
                (None, Some(fill)) if fill.as_ns() < 50_000_000 => fail(
                    "server.rate_limit.fill_interval",
                    format!("{fill} is below 50ms, which Envoy refuses for a token bucket: use 50ms or more"),
                ),
                (Some(_), None) if tokens_per_fill.is_some() => fail(
                    "server.rate_limit.tokens_per_fill",
                    "only applies with fill_interval (Envoy's discrete refill): remove it, or replace rate by fill_interval",
                ),
                _ => Ok(()),
            }
        }
        RateLimitSpec::SlidingWindow { window, segments, .. }
            if window.as_ns() % u64::from(segments) != 0 =>
        {
            fail(
                "server.rate_limit.segments",
                format!(
                    "{segments} segments do not split the window ({window}) into whole nanoseconds: \
                 use a number of segments that divides it, e.g. 10 for \"1s\""
                ),
            )
        }
        _ => Ok(()),
    }
}

/// The OCC resource models neither lost messages nor client-side timeouts nor controls
/// (DESIGN §3.3).
fn occ_unsupported(spec: &ExperimentSpec) -> Check {
    let reason = |what: &str| {
        format!("{what} is not supported for server.kind = \"occ\"; remove it or use the queue server")
    };
    if !matches!(spec.workload, WorkloadSpec::Closed { .. }) {
        fail(
            "workload.kind",
            "server.kind = \"occ\" runs closed workloads only (the AWS study's clients each update \
             the row ops_per_client times); use kind = \"closed\"",
        )?;
    }
    if spec.network.request_loss > 0.0 {
        fail("network.request_loss", reason("message loss"))?;
    }
    if spec.network.response_loss > 0.0 {
        fail("network.response_loss", reason("message loss"))?;
    }
    for (i, s) in spec.strategies.iter().enumerate() {
        let key = label(spec, i);
        let p = &s.policy;
        let unsupported = [
            ("timeout", p.timeout.is_some(), "an attempt timeout"),
            ("deadline", p.deadline.is_some(), "an operation deadline"),
            ("budget", p.budget.is_some(), "a retry budget"),
            ("breaker", p.breaker.is_some(), "a circuit breaker"),
            ("throttle", p.throttle.is_some(), "client-side throttling"),
            ("layers", !p.layers.is_empty(), "a gateway layer"),
            ("pool", p.pool.is_some(), "a connection pool"),
            ("dead_letter", p.dead_letter.is_some(), "a dead-letter queue"),
            ("redrive", p.redrive.is_some(), "a re-drive"),
            ("bulkhead", p.bulkhead.is_some(), "a bulkhead"),
            ("limit", p.limit.is_some(), "a concurrency limit"),
            ("hedge", p.hedge.is_some(), "hedged requests"),
            ("app_retry", p.app_retry.is_some(), "an application retry loop"),
        ];
        for (k, present, what) in unsupported {
            if present {
                fail(format!("{key}.{k}"), reason(what))?;
            }
        }
    }
    Ok(())
}

/// A queue workload: the consumers are a queue server's workers, with the queue (SQS) in front
/// of them unbounded, and the queue, not the strategy, decides when a message is delivered
/// again and when it is dead-lettered.
fn queue_workload(spec: &ExperimentSpec) -> Check {
    let WorkloadSpec::Queue { max_receive_count, .. } = spec.workload else { return Ok(()) };
    match &spec.server {
        ServerSpec::Occ {} => fail(
            "server.kind",
            "a queue workload's consumers are the queue server's workers: use server.kind = \"queue\"",
        )?,
        ServerSpec::Queue(q) if q.queue.is_some() => fail(
            "server.queue",
            "with a queue workload the messages wait in the queue, which has no bound: remove server.queue",
        )?,
        ServerSpec::Queue(_) => {}
    }
    let reason = |what: &str| {
        format!(
            "is set by the queue workload ({what}); remove it from the strategy and [client] (a strategy sets backoff, idempotency and redrive)"
        )
    };
    for (i, s) in spec.strategies.iter().enumerate() {
        let key = label(spec, i);
        let p = &s.policy;
        let set_by_queue = [
            ("max_attempts", p.max_attempts.is_some(), "workload.max_receive_count"),
            ("dead_letter", p.dead_letter.is_some(), "workload.max_receive_count"),
            ("timeout", p.timeout.is_some(), "workload.visibility_timeout"),
            ("deadline", p.deadline.is_some(), "a message waits until it is acknowledged or dead-lettered"),
            ("retry_on", p.retry_on.is_some(), "every message not acknowledged is delivered again"),
            ("honor_retry_after", p.honor_retry_after, "consumers do not read Retry-After"),
            ("budget", p.budget.is_some(), "the queue delivers again without a budget"),
            ("breaker", p.breaker.is_some(), "the queue delivers again without a breaker"),
            ("throttle", p.throttle.is_some(), "the queue delivers again without throttling"),
            ("layers", !p.layers.is_empty(), "consumers call the service directly"),
            ("app_retry", p.app_retry.is_some(), "the queue, not an application, delivers a message again"),
        ];
        for (k, present, what) in set_by_queue {
            if present {
                fail(format!("{key}.{k}"), reason(what))?;
            }
        }
        if p.redrive.is_some() && max_receive_count.is_none() {
            fail(
                format!("{key}.redrive"),
                "without a dead-letter queue there is nothing to re-drive: set workload.max_receive_count, or remove redrive",
            )?;
        }
    }
    Ok(())
}

fn strategies(spec: &ExperimentSpec) -> Check {
    if spec.strategies.is_empty() {
        fail("strategies", "no strategies: add at least one [[strategies]] with a name and a backoff")?;
    }
    for (i, s) in spec.strategies.iter().enumerate() {
        let key = label(spec, i);
        strategy_name(spec, i, &key)?;
        if !matches!(spec.workload, WorkloadSpec::Queue { .. }) {
            // A queue workload's checks are `queue_workload`'s: its visibility timeout is the
            // wait, and the queue's tries are its own.
            policy(&key, &s.policy)?;
            zeno(spec, s, &key)?;
            waits_forever(spec, s, &key)?;
        } else {
            backoff(&format!("{key}.backoff"), &s.policy.backoff)?;
        }
        pool(spec, s, &key)?;
        bulkhead(spec, s, &key)?;
        hedge::hedge(spec, s, &key)?;
        limit(s, &key)?;
    }
    Ok(())
}

/// A limit's bounds in order (`min_limit <= max_limit`, as Netflix's limits assume).
fn limit(s: &Strategy, key: &str) -> Check {
    let (min, max) = match s.policy.limit {
        Some(
            LimitSpec::Aimd { min_limit, max_limit, .. } | LimitSpec::Gradient2 { min_limit, max_limit, .. },
        ) => (min_limit, max_limit),
        _ => return Ok(()),
    };
    if min > max {
        fail(
            format!("{key}.limit.min_limit"),
            format!("{min} is above max_limit ({max}): set min_limit <= max_limit"),
        )?;
    }
    Ok(())
}

/// `[server.adaptive_concurrency]`: its floors below its ceiling.
fn adaptive_concurrency(a: &AdaptiveConcurrencySpec) -> Check {
    let max = a.max_concurrency_limit;
    for (key, v) in
        [("min_concurrency", Some(a.min_concurrency)), ("min_concurrency_limit", a.min_concurrency_limit)]
    {
        if let Some(v) = v
            && v > max
        {
            fail(
                format!("server.adaptive_concurrency.{key}"),
                format!(
                    "{v} is above max_concurrency_limit ({max}): lower it or raise max_concurrency_limit"
                ),
            )?;
        }
    }
    Ok(())
}

/// A retry list that names Envoy's `retriable-status-codes` must give the codes (Envoy's
/// `retriable_status_codes`): the list's own statuses.
fn retry_list(key: &str, items: Option<&[RetryOnItem]>) -> Check {
    let Some(items) = items else { return Ok(()) };
    let named = items.contains(&RetryOnItem::Group(RetryGroup::RetriableStatusCodes));
    if named && !items.iter().any(|i| matches!(i, RetryOnItem::Status(_))) {
        fail(
            key,
            "names \"retriable-status-codes\" but no status: list the codes it retries too, e.g. [\"retriable-status-codes\", 429] (Envoy's retriable_status_codes)",
        )?;
    }
    Ok(())
}

fn policy(key: &str, p: &PolicySpec) -> Check {
    if p.retry_on.as_ref().is_some_and(Vec::is_empty) {
        fail(
            format!("{key}.retry_on"),
            "is empty; to never retry set max_attempts = 1, or leave retry_on out for the defaults",
        )?;
    }
    retry_list(&format!("{key}.retry_on"), p.retry_on.as_deref())?;
    backoff(&format!("{key}.backoff"), &p.backoff)?;
    if let Some(BudgetSpec::Ratio { ttl, .. }) = &p.budget
        && !(1..=60).contains(&(ttl.as_ns() / 1_000_000_000))
    {
        fail(
            format!("{key}.budget.ttl"),
            format!(
                "{ttl} is outside [1s, 60s], the range Finagle, Linkerd and tower accept for a retry budget's window"
            ),
        )?;
    }
    if let Some(BudgetSpec::Brooker { capacity, retry_cost, .. }) = &p.budget
        && capacity < retry_cost
    {
        fail(
            format!("{key}.budget.capacity"),
            format!(
                "{capacity} is below retry_cost = {retry_cost}: the bucket could never pay for a retry; raise capacity (the post uses 5 tokens at 1 per retry) or lower retry_cost"
            ),
        )?;
    }
    if let Some(BreakerSpec::RetryRatio { window: Some(w), .. }) = &p.breaker
        && w.as_ns() < WINDOW_SLICES as u64
    {
        fail(
            format!("{key}.breaker.window"),
            format!(
                "{w} is too short: give a positive span of simulated time such as \"10s\" (it is kept in {WINDOW_SLICES} slices, so at least {WINDOW_SLICES}ns); leave it out to count since the start"
            ),
        )?;
    }
    if let Some(ThrottleSpec::EnvoyAdmissionControl { sampling_window: w, .. }) = &p.throttle
        && !w.as_ns().is_multiple_of(1_000_000_000)
    {
        fail(
            format!("{key}.throttle.sampling_window"),
            format!(
                "{w} is not a whole number of seconds: Envoy keeps its window in seconds; write e.g. \"30s\""
            ),
        )?;
    }
    for (i, layer) in p.layers.iter().enumerate() {
        let lk = format!("{key}.layers[{i}]");
        if layer.retry_on.as_ref().is_some_and(Vec::is_empty) {
            fail(format!("{lk}.retry_on"), "is empty; to never retry set max_attempts = 1")?;
        }
        retry_list(&format!("{lk}.retry_on"), layer.retry_on.as_deref())?;
        backoff(&format!("{lk}.backoff"), &layer.backoff)?;
    }
    dead_letter(key, p)?;
    app_retry(key, p)?;
    if !p.layers.is_empty() && p.idempotency == IdempotencyMode::PerAttempt {
        fail(
            format!("{key}.layers"),
            "with idempotency = \"per-attempt\" is not modelled (which layer would make the new keys?); \
             use \"per-op\" or \"none\" with layers",
        )?;
    }
    Ok(())
}

/// `dead_letter` and `redrive`: the tries must run out, and a re-drive needs a queue and one
/// moment.
fn dead_letter(key: &str, p: &PolicySpec) -> Check {
    if let Some(d) = &p.dead_letter {
        match (d.after, p.max_attempts) {
            (Some(after), Some(max)) if after > max => fail(
                format!("{key}.dead_letter.after"),
                format!(
                    "{after} is above max_attempts = {max}: an operation is out of tries after {max}, so it would fail before it is dead-lettered; lower dead_letter.after to at most {max}, or raise max_attempts"
                ),
            )?,
            (None, None) => fail(
                format!("{key}.dead_letter.after"),
                "is absent and the attempts are unlimited: no operation would ever be dead-lettered; set dead_letter.after (e.g. 5) or max_attempts",
            )?,
            _ => {}
        }
    }
    if let Some(r) = &p.redrive {
        if p.dead_letter.is_none() {
            fail(
                format!("{key}.redrive"),
                "without a dead-letter queue there is nothing to re-drive: add dead_letter = { after = N }, or remove redrive",
            )?;
        }
        if r.at.is_some() == r.after.is_some() {
            fail(
                format!("{key}.redrive"),
                "needs exactly one of at (the moment the queue is re-driven, e.g. \"2h\") and after (how long after each item was dead-lettered, e.g. \"10m\")",
            )?;
        }
    }
    Ok(())
}

/// `app_retry`: a list to retry on, a valid backoff, and no mechanism whose own loop would have
/// to be told what a new pass is (they are not modelled together).
fn app_retry(key: &str, p: &PolicySpec) -> Check {
    let Some(a) = &p.app_retry else { return Ok(()) };
    if a.retry_on.as_ref().is_some_and(Vec::is_empty) {
        fail(
            format!("{key}.app_retry.retry_on"),
            "is empty; to never retry at the application, leave app_retry out (or set its max_attempts = 1)",
        )?;
    }
    backoff(&format!("{key}.app_retry.backoff"), &a.backoff)?;
    let not_with = [
        (
            "hedge",
            p.hedge.is_some(),
            "a hedged call's copies are one pass with no end of their own for the application to retry",
        ),
        (
            "dead_letter",
            p.dead_letter.is_some(),
            "which loop would an operation whose tries are used up leave, the library's or the application's?",
        ),
        (
            "bulkhead",
            p.bulkhead.is_some(),
            "would the application hold its bulkhead permit while it waits for its next pass?",
        ),
    ];
    for (k, present, why) in not_with {
        if present {
            fail(
                format!("{key}.app_retry"),
                format!("with {k} is not modelled ({why}); remove one of app_retry and {k}"),
            )?;
        }
    }
    Ok(())
}

fn label(spec: &ExperimentSpec, index: usize) -> String {
    let names: Vec<Option<&str>> = spec.strategies.iter().map(|s| Some(s.name.as_str())).collect();
    strategy_key(&names, index)
}

fn strategy_name(spec: &ExperimentSpec, index: usize, key: &str) -> Check {
    let name = &spec.strategies[index].name;
    if name.trim().is_empty() {
        fail(format!("{key}.name"), "is empty: name the strategy; the name labels its rows and charts")?;
    }
    if spec.strategies[..index].iter().any(|s| s.name == *name) {
        fail(
            format!("strategies.{name}"),
            "two strategies with one name: give each [[strategies]] a different name",
        )?;
    }
    Ok(())
}

fn backoff(key: &str, b: &BackoffSpec) -> Check {
    let (base, cap) = backoff_parts(b);
    if let (Some(base), Some(cap)) = (base, cap)
        && cap < base
    {
        fail(format!("{key}.cap"), format!("cap ({cap}) is below base ({base}): cap must be >= base"))?;
    }
    Ok(())
}

/// `(base, cap)` of kinds that have them.
fn backoff_parts(b: &BackoffSpec) -> (Option<Duration>, Option<Duration>) {
    match *b {
        BackoffSpec::None {} => (None, None),
        BackoffSpec::Constant { base } => (Some(base), None),
        BackoffSpec::Linear { base, cap }
        | BackoffSpec::DecorrelatedJitter { base, cap }
        | BackoffSpec::DecorrelatedJitterV2 { base, cap }
        | BackoffSpec::Exponential { base, cap, .. }
        | BackoffSpec::FullJitter { base, cap, .. }
        | BackoffSpec::EqualJitter { base, cap, .. }
        | BackoffSpec::AdditiveJitter { base, cap, .. }
        | BackoffSpec::ProportionalJitter { base, cap, .. } => (Some(base), cap),
    }
}

/// Refuses a strategy that could retry forever at one instant: unlimited attempts, a delay
/// that is always 0 and network hops that take no time. The engine would then process
/// events without simulated time advancing, and never reach the horizon.
fn zeno(spec: &ExperimentSpec, s: &Strategy, key: &str) -> Check {
    // Brooker's bucket pays for every retry and is refilled only by operations starting, so it
    // bounds the retries of any one instant (upstream runs it without an attempt limit).
    let bucket_bounds =
        matches!(s.policy.budget, Some(BudgetSpec::Brooker { retry_cost, .. }) if retry_cost > 0.0);
    if s.policy.max_attempts.is_none()
        && !bucket_bounds
        && backoff_always_zero(&s.policy.backoff)
        && always_zero(&spec.network.latency)
    {
        fail(
            format!("{key}.max_attempts"),
            "unlimited attempts with a zero backoff and zero network latency could retry forever \
             without simulated time advancing; set max_attempts (here or in [client]) or a nonzero delay",
        )?;
    }
    Ok(())
}

/// Refuses a strategy whose client would wait forever for an answer that never comes: requests
/// or answers can be lost (network loss, or an outage that answers nothing), and it has
/// neither a timeout nor a deadline to notice. DESIGN §3.2: after a loss the client "sees a
/// timeout", so it needs one.
fn waits_forever(spec: &ExperimentSpec, s: &Strategy, key: &str) -> Check {
    let silent_outage = match &spec.server {
        ServerSpec::Queue(q) => q.faults.iter().any(|f| {
            matches!(f, FaultSpec::Outage { status: FaultStatus::Named(NamedFailure::Timeout), .. })
        }),
        ServerSpec::Occ {} => false,
    };
    let lossy = spec.network.request_loss > 0.0 || spec.network.response_loss > 0.0;
    if (lossy || silent_outage) && s.policy.timeout.is_none() && s.policy.deadline.is_none() {
        let cause = if lossy { "network losses" } else { "an outage with status = \"timeout\"" };
        fail(
            format!("{key}.timeout"),
            format!(
                "with {cause} some requests are never answered, and without a timeout or deadline the \
                 client would wait for them forever; set timeout (here or in [client])"
            ),
        )?;
    }
    Ok(())
}

/// A connection pool holds a connection from the request until its answer (DESIGN §4.7): an
/// answer that takes another path (a gateway layer's) or a message lost on the way would leave
/// the connection without an owner, which the model does not have.
fn pool(spec: &ExperimentSpec, s: &Strategy, key: &str) -> Check {
    if s.policy.pool.is_none() {
        return Ok(());
    }
    if !s.policy.layers.is_empty() {
        fail(
            format!("{key}.pool"),
            "with gateway layers is not modelled (a layer's answers do not come back on the client's \
             connection); remove pool or layers",
        )?;
    }
    if spec.network.request_loss > 0.0 || spec.network.response_loss > 0.0 {
        fail(
            format!("{key}.pool"),
            "with network.request_loss or network.response_loss is not modelled (a connection \
             delivers what it carries); set both losses to 0 or remove pool",
        )?;
    }
    Ok(())
}

/// A bulkhead's permit is held from an operation's first attempt to its end (DESIGN §4.8). A
/// dead-lettered operation leaves its caller and is re-driven later, and a queue workload's
/// message is delivered again by the queue, not by the caller: who holds the permit then is
/// not modelled.
fn bulkhead(spec: &ExperimentSpec, s: &Strategy, key: &str) -> Check {
    if s.policy.bulkhead.is_none() {
        return Ok(());
    }
    if s.policy.dead_letter.is_some() {
        fail(
            format!("{key}.bulkhead"),
            "with a dead-letter queue is not modelled (a dead-lettered operation is re-driven \
             outside its caller's bulkhead); remove bulkhead or dead_letter",
        )?;
    }
    if matches!(spec.workload, WorkloadSpec::Queue { .. }) {
        fail(
            format!("{key}.bulkhead"),
            "with a queue workload is not modelled (the queue, not a caller, delivers a message \
             again); remove bulkhead or use an open or closed workload",
        )?;
    }
    Ok(())
}

/// True when every delay this backoff produces is 0.
fn backoff_always_zero(b: &BackoffSpec) -> bool {
    match *b {
        BackoffSpec::None {} => true,
        BackoffSpec::AdditiveJitter { base, jitter, .. } => {
            base == Duration::ZERO && jitter == Duration::ZERO
        }
        _ => backoff_parts(b).0 == Some(Duration::ZERO),
    }
}

/// True when every draw of this distribution is 0.
fn always_zero(d: &DistSpec) -> bool {
    let zero = Duration::ZERO;
    match *d {
        DistSpec::Constant { value } => value == zero,
        DistSpec::Uniform { high, .. } => high == zero,
        DistSpec::Normal { mean, sd } => mean == zero && sd == zero,
        DistSpec::Exponential { mean } => mean == zero,
        DistSpec::Lognormal { median, .. } => median == zero,
        DistSpec::Discrete { ref points } => points.iter().all(|p| p.value == zero),
    }
}

#[cfg(test)]
mod tests;
