//! Rules that one key's type cannot express: ranges, orderings, combinations (DESIGN §7:
//! "impossible values ... are rejected before anything runs, with the key and the reason").
//! Each error names the full key as `--set` would address it and says how to fix it.

use super::duration::Duration;
use super::load::strategy_key;
use super::spec::{
    BackoffSpec, ClientSpec, DistSpec, ErrorSpec, ExperimentSpec, FaultSpec, FaultStatus, NamedFailure,
    NetworkSpec, QueueServerSpec, RetryOnItem, ServerSpec, StrategySpec, WorkloadSpec,
};
use super::{ConfigError, Strategy};

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
    if spec.runs == 0 {
        fail("runs", "must be at least 1: the number of replications per point and strategy")?;
    }
    if spec.horizon == Duration::ZERO {
        fail("horizon", "must be > 0: the simulated time at which a run stops, e.g. \"120s\"")?;
    }
    if spec.output.bucket == Duration::ZERO {
        fail("output.bucket", "must be > 0: the width of timeseries.csv's buckets, e.g. \"1s\"")?;
    }
    if spec.horizon.as_ns() / spec.output.bucket.as_ns() > 10_000_000 {
        fail(
            "output.bucket",
            "more than 10,000,000 buckets up to the horizon: make the bucket wider (each bucket costs memory in every run)",
        )?;
    }
    workload(&spec.workload)?;
    network(&spec.network)?;
    match &spec.server {
        ServerSpec::Queue(q) => queue_server(q)?,
        ServerSpec::Occ {} => occ_unsupported(spec)?,
    }
    client("client", &spec.client)?;
    strategies(spec)
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
            at_least_one("workload.clients", *clients)?;
            at_least_one("workload.ops_per_client", *ops_per_client)?;
            at_most("workload.clients", *clients, MAX_CLIENTS, "clients")?;
            if u64::from(*clients) * u64::from(*ops_per_client) > u64::from(u32::MAX) {
                fail(
                    "workload.ops_per_client",
                    "clients x ops_per_client is above 4294967295 operations; lower one of them",
                )?;
            }
            Ok(())
        }
        WorkloadSpec::Open { rate, duration, schedule, clients } => {
            rate_value("workload.rate", *rate)?;
            if *duration == Duration::ZERO {
                fail("workload.duration", "must be > 0: how long operations arrive, e.g. \"60s\"")?;
            }
            let mut previous: Option<Duration> = None;
            for (i, step) in schedule.iter().enumerate() {
                if previous.is_some_and(|p| step.at <= p) {
                    fail(
                        format!("workload.schedule[{i}].at"),
                        "the schedule's `at` times must be strictly increasing",
                    )?;
                }
                rate_value(&format!("workload.schedule[{i}].rate"), step.rate)?;
                previous = Some(step.at);
            }
            if *rate == 0.0 && schedule.iter().all(|s| s.rate == 0.0) {
                fail("workload.rate", "every rate is 0, so no operation would ever arrive; set a rate > 0")?;
            }
            at_least_one("workload.clients", *clients)?;
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

fn rate_value(key: &str, rate: f64) -> Check {
    if rate.is_finite() && rate >= 0.0 {
        return Ok(());
    }
    fail(key, format!("{rate} is not a rate: write operations per second as a number >= 0, e.g. 1000.0"))
}

fn at_least_one(key: &str, n: u32) -> Check {
    if n == 0 { fail(key, "must be at least 1") } else { Ok(()) }
}

fn network(n: &NetworkSpec) -> Check {
    dist("network.latency", &n.latency)?;
    probability("network.request_loss", n.request_loss)?;
    probability("network.response_loss", n.response_loss)
}

fn dist(key: &str, d: &DistSpec) -> Check {
    match *d {
        DistSpec::Uniform { low, high } if high < low => fail(
            format!("{key}.high"),
            format!("high ({high}) is below low ({low}): a uniform distribution needs low <= high"),
        ),
        DistSpec::Lognormal { sigma, .. } if !(sigma.is_finite() && sigma >= 0.0) => fail(
            format!("{key}.sigma"),
            format!("{sigma} is not a spread: sigma must be a finite number >= 0"),
        ),
        DistSpec::Lognormal { median, .. } if median == Duration::ZERO => fail(
            format!("{key}.median"),
            "must be > 0: a lognormal is positive (for no delay use { dist = \"constant\", value = \"0\" })",
        ),
        _ => Ok(()),
    }
}

fn probability(key: &str, p: f64) -> Check {
    if p.is_finite() && (0.0..=1.0).contains(&p) {
        return Ok(());
    }
    fail(key, format!("{p} is outside [0, 1]: write a probability such as 0.05 for 5 %"))
}

fn queue_server(q: &QueueServerSpec) -> Check {
    if q.concurrency == 0 {
        fail(
            "server.concurrency",
            "zero concurrency: the server needs at least 1 worker; set concurrency >= 1",
        )?;
    }
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
    errors(&q.errors)?;
    for (i, fault) in q.faults.iter().enumerate() {
        self::fault(&format!("server.faults[{i}]"), fault)?;
    }
    Ok(())
}

fn errors(errors: &[ErrorSpec]) -> Check {
    for (i, e) in errors.iter().enumerate() {
        error_status(&format!("server.errors[{i}].status"), e.status)?;
        probability(&format!("server.errors[{i}].probability"), e.probability)?;
    }
    let total: f64 = errors.iter().map(|e| e.probability).sum();
    if total > 1.0 + 1e-12 {
        fail("server.errors", format!("the probabilities add up to {total}, above 1; lower them"))?;
    }
    Ok(())
}

fn error_status(key: &str, status: u16) -> Check {
    if (400..=599).contains(&status) {
        return Ok(());
    }
    fail(key, format!("{status} is not an error status: use a code from 400 to 599, e.g. 503"))
}

fn fault(key: &str, f: &FaultSpec) -> Check {
    if f.window().1 == Duration::ZERO {
        fail(format!("{key}.duration"), "must be > 0: how long the fault lasts, e.g. \"5s\"")?;
    }
    match *f {
        FaultSpec::Outage { status: FaultStatus::Status(s), .. } => error_status(&format!("{key}.status"), s),
        FaultSpec::Outage { .. } => Ok(()),
        FaultSpec::Capacity { factor, .. } if !(factor.is_finite() && (0.0..=1.0).contains(&factor)) => fail(
            format!("{key}.factor"),
            format!("{factor} is outside [0, 1]: the fraction of the workers still available, e.g. 0.5"),
        ),
        FaultSpec::Slowdown { factor, .. } if !(factor.is_finite() && factor > 0.0) => fail(
            format!("{key}.factor"),
            format!(
                "{factor} is not a multiplier: service times are multiplied by it; use a number > 0, e.g. 3.0"
            ),
        ),
        FaultSpec::Errors { probability: p, status, .. } => {
            probability(&format!("{key}.probability"), p)?;
            error_status(&format!("{key}.status"), status)
        }
        _ => Ok(()),
    }
}

/// The OCC resource models neither lost messages nor client-side timeouts (DESIGN §3.3).
fn occ_unsupported(spec: &ExperimentSpec) -> Check {
    let reason = |what: &str| {
        format!("{what} is not supported for server.kind = \"occ\"; remove it or use the queue server")
    };
    if matches!(spec.workload, WorkloadSpec::Open { .. }) {
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
    let clients = std::iter::once(("client".to_owned(), spec.client.timeout, spec.client.deadline));
    let strategies = spec.strategies.iter().enumerate().map(|(i, s)| (label(spec, i), s.timeout, s.deadline));
    for (key, timeout, deadline) in clients.chain(strategies) {
        if timeout.is_some() {
            fail(format!("{key}.timeout"), reason("an attempt timeout"))?;
        }
        if deadline.is_some() {
            fail(format!("{key}.deadline"), reason("an operation deadline"))?;
        }
    }
    Ok(())
}

/// `[client]` and the same keys of a strategy, under `key`.
fn client(key: &str, c: &ClientSpec) -> Check {
    limits(key, c.max_attempts, c.timeout, c.deadline)?;
    retry_on(key, c.retry_on.as_deref())
}

fn limits(
    key: &str,
    max_attempts: Option<u32>,
    timeout: Option<Duration>,
    deadline: Option<Duration>,
) -> Check {
    if max_attempts == Some(0) {
        fail(
            format!("{key}.max_attempts"),
            "must be at least 1 (it counts the first attempt; 1 = no retries)",
        )?;
    }
    if timeout == Some(Duration::ZERO) {
        fail(format!("{key}.timeout"), "must be > 0; leave it out to wait for every answer")?;
    }
    if deadline == Some(Duration::ZERO) {
        fail(format!("{key}.deadline"), "must be > 0; leave it out for no deadline")?;
    }
    Ok(())
}

fn retry_on(key: &str, items: Option<&[RetryOnItem]>) -> Check {
    let Some(items) = items else { return Ok(()) };
    if items.is_empty() {
        fail(
            format!("{key}.retry_on"),
            "is empty; to never retry set max_attempts = 1, or leave retry_on out for the defaults",
        )?;
    }
    for (i, item) in items.iter().enumerate() {
        if let RetryOnItem::Status(s) = item {
            error_status(&format!("{key}.retry_on[{i}]"), *s)?;
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
        limits(&key, s.max_attempts, s.timeout, s.deadline)?;
        retry_on(&key, s.retry_on.as_deref())?;
        backoff(&format!("{key}.backoff"), &s.backoff)?;
        zeno(spec, s, &key)?;
        waits_forever(spec, s, &key)?;
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
    let (base, cap, multiplier) = backoff_parts(b);
    if let (Some(base), Some(cap)) = (base, cap)
        && cap < base
    {
        fail(format!("{key}.cap"), format!("cap ({cap}) is below base ({base}): cap must be >= base"))?;
    }
    if let Some(m) = multiplier
        && !(m.is_finite() && m >= 1.0)
    {
        fail(
            format!("{key}.multiplier"),
            format!("{m} would shrink the delays: multiplier must be a finite number >= 1"),
        )?;
    }
    if let BackoffSpec::ProportionalJitter { p, .. } = *b
        && !(p.is_finite() && (0.0..=1.0).contains(&p))
    {
        fail(format!("{key}.p"), format!("{p} is outside [0, 1]: the relative jitter, e.g. 0.2 for +-20 %"))?;
    }
    Ok(())
}

/// `(base, cap, multiplier)` of kinds that have them.
fn backoff_parts(b: &BackoffSpec) -> (Option<Duration>, Option<Duration>, Option<f64>) {
    match *b {
        BackoffSpec::None {} => (None, None, None),
        BackoffSpec::Constant { base } => (Some(base), None, None),
        BackoffSpec::Linear { base, cap }
        | BackoffSpec::DecorrelatedJitter { base, cap }
        | BackoffSpec::DecorrelatedJitterV2 { base, cap } => (Some(base), cap, None),
        BackoffSpec::Exponential { base, cap, multiplier }
        | BackoffSpec::FullJitter { base, cap, multiplier }
        | BackoffSpec::EqualJitter { base, cap, multiplier }
        | BackoffSpec::AdditiveJitter { base, cap, multiplier, .. }
        | BackoffSpec::ProportionalJitter { base, cap, multiplier, .. } => {
            (Some(base), cap, Some(multiplier))
        }
    }
}

/// Refuses a strategy that could retry forever at one instant: unlimited attempts, a delay
/// that is always 0 and network hops that take no time. The engine would then process
/// events without simulated time advancing, and never reach the horizon.
fn zeno(spec: &ExperimentSpec, s: &StrategySpec, key: &str) -> Check {
    let resolved: Strategy = Strategy::resolve(&spec.client, s);
    if resolved.client.max_attempts.is_none()
        && backoff_always_zero(&s.backoff)
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
fn waits_forever(spec: &ExperimentSpec, s: &StrategySpec, key: &str) -> Check {
    let silent_outage = match &spec.server {
        ServerSpec::Queue(q) => q.faults.iter().any(|f| {
            matches!(f, FaultSpec::Outage { status: FaultStatus::Named(NamedFailure::Timeout), .. })
        }),
        ServerSpec::Occ {} => false,
    };
    let lossy = spec.network.request_loss > 0.0 || spec.network.response_loss > 0.0;
    let resolved = Strategy::resolve(&spec.client, s);
    if (lossy || silent_outage) && resolved.client.timeout.is_none() && resolved.client.deadline.is_none() {
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
    }
}

#[cfg(test)]
mod tests;
