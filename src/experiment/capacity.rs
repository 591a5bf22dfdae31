//! Capacity arithmetic before a run (`retrysim check`, DESIGN §8): the load offered, what the
//! server can complete, the utilisation in normal operation and in each fault window, how many
//! seconds of work a full queue holds against the client timeout, the most server calls a
//! policy allows per operation, and a fluid estimate of the backlog (which also sizes the
//! queue in the memory estimate, `cost.rs`). Pure functions of a validated sweep point.
//!
//! Formulas (first attempts only; retries are what the amplification bounds):
//! - offered load: an open workload's `rate` in force; a closed one's interactive-system
//!   demand `clients / (think_time + service + 2 x network latency)` (the response-time law,
//!   Lazowska et al., *Quantitative System Performance*, 1984, §3.3). A closed workload's
//!   throughput is bounded by `min(that, capacity)` (its asymptotic bounds, §5.2): its
//!   utilisation never exceeds 1, the clients wait instead.
//! - capacity: `usable workers / (mean service time x slowdown)`, with `usable =
//!   floor(concurrency x the product of the capacity factors in force)` as the model rounds
//!   it (`model/server/faults.rs`), 0 during an outage (nothing is served). With
//!   `[server.overload]` the capacity at full load is lower: every usable worker busy makes
//!   the service time `x (1 + alpha x max(0, usable - knee))` (DESIGN §3.3). With `replicas`,
//!   the sum over the replicas, each with the faults that strike it.
//! - utilisation: `offered / capacity` (Little's law, `rho = lambda x S / c`).
//! - a full queue's work: `queue / capacity` seconds, the longest a request at its back waits.
//! - amplification: `max_attempts x` each gateway layer's `max_attempts`, per strategy (and
//!   `x app_retry.max_attempts`: each of the application's passes runs them all again).
//! - backlog: a fluid model, `dB/dt = arrivals - capacity` over simulated time, where the
//!   arrivals are multiplied by the strategy's amplification once the queue's wait exceeds the
//!   client timeout (every attempt then times out and is retried: the retry storm), capped by
//!   the rate limiter and the queue bound, and by `arrivals x timeout` with `drop_expired`.

use super::spec::{DistSpec, FaultSpec, PolicySpec, QueueServerSpec, Scope, ServerSpec, WorkloadSpec};
use super::{Duration, Point};

/// The arithmetic of one sweep point.
#[derive(Clone, Debug, PartialEq)]
pub struct Capacity {
    /// First attempts per second in normal operation: the rate before any fault (the largest
    /// scheduled rate before the first fault), or a closed workload's demand.
    pub offered_rps: f64,
    /// Whether the workload is closed (its utilisation is bounded by 1).
    pub closed: bool,
    /// Requests per second completed with every worker busy, without faults or overload.
    pub capacity_rps: f64,
    /// The same at full load with `[server.overload]`, when it is lower.
    pub full_load_rps: Option<f64>,
    /// `offered_rps / capacity_rps`.
    pub utilisation: f64,
    /// What reaches the workers is at most this rate (`[server.rate_limit]`).
    pub rate_limit_rps: Option<f64>,
    /// One per fault, in file order.
    pub windows: Vec<Window>,
    /// `server.queue` (`None`: unbounded).
    pub queue: Option<u32>,
    /// Seconds of work a full queue holds at the normal capacity (`None`: unbounded).
    pub queue_s: Option<f64>,
    /// `server.drop_expired`: queued requests whose client gave up are dropped unserved.
    pub drop_expired: bool,
    pub strategies: Vec<StrategyLoad>,
}

/// One fault window.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    /// 1-based, in file order.
    pub number: usize,
    pub kind: &'static str,
    pub factor: Option<f64>,
    pub start_s: f64,
    pub end_s: f64,
    /// The largest scheduled rate in the window (a closed workload's demand).
    pub offered_rps: f64,
    /// With every fault in force at its start applied (0 in an outage).
    pub capacity_rps: f64,
    /// `offered / capacity` (infinite in an outage).
    pub utilisation: f64,
}

/// One strategy's share of the arithmetic.
#[derive(Clone, Debug, PartialEq)]
pub struct StrategyLoad {
    pub name: String,
    pub timeout_s: Option<f64>,
    /// Client attempts (`None`: no `max_attempts`, unbounded).
    pub attempts: Option<u32>,
    /// Each gateway layer's name and attempts, from the client.
    pub layers: Vec<(String, u32)>,
    /// Passes of the client's retry loop the application makes (`app_retry`; 1 without).
    pub passes: u32,
    /// Server calls one operation can make at most: passes x attempts x every layer's.
    pub amplification: Option<u64>,
    /// The fluid model's largest backlog (requests queued), capped by the queue bound.
    pub backlog_peak: f64,
}

/// The arithmetic of `point`; `None` for the OCC resource (it has no workers or queue).
pub fn of(point: &Point) -> Option<Capacity> {
    let ServerSpec::Queue(q) = &point.spec.server else { return None };
    let spec = &point.spec;
    let service_s = mean_s(&q.service_time);
    let rtt_s = 2.0 * mean_s(&spec.network.latency);
    let nominal = capacity_at(q, 0.0, false, service_s).0;
    let first_fault = q.faults.iter().map(|f| secs(f.window().0)).fold(f64::INFINITY, f64::min);
    let (offered_rps, closed) = match &spec.workload {
        WorkloadSpec::Open { .. } | WorkloadSpec::Queue { .. } => {
            (peak_rate(spec, 0.0, first_fault.min(secs(spec.horizon))), false)
        }
        // Each serial client starts a call every max(gap, call) on average (at least).
        WorkloadSpec::Serial { clients, gap, .. } => {
            (*clients as f64 / mean_s(gap).max(service_s + rtt_s).max(f64::MIN_POSITIVE), true)
        }
        WorkloadSpec::Closed { clients, think_time, .. } => {
            (*clients as f64 / (secs(*think_time) + service_s + rtt_s).max(f64::MIN_POSITIVE), true)
        }
    };
    let full = capacity_at(q, 0.0, true, service_s).0;
    let windows = q
        .faults
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let (start, duration) = f.window();
            let (start_s, end_s) = (secs(start), secs(start) + secs(duration));
            let (kind, factor) = f.kind_and_factor();
            let offered = if closed { offered_rps } else { peak_rate(spec, start_s, end_s) };
            let capacity = capacity_at(q, start_s, false, service_s).0;
            Window {
                number: i + 1,
                kind,
                factor,
                start_s,
                end_s,
                offered_rps: offered,
                capacity_rps: capacity,
                utilisation: ratio(offered, capacity),
            }
        })
        .collect();
    let strategies = point
        .strategies
        .iter()
        .map(|s| {
            let p = &s.policy;
            let layers: Vec<(String, u32)> =
                p.layers.iter().map(|l| (l.name.clone(), l.max_attempts)).collect();
            let passes = p.app_passes();
            let amplification = p
                .max_attempts
                .map(|a| layers.iter().fold(a as u64 * passes as u64, |n, l| n.saturating_mul(l.1 as u64)));
            StrategyLoad {
                name: s.name.clone(),
                timeout_s: p.timeout.map(secs),
                attempts: p.max_attempts,
                layers,
                passes,
                amplification,
                backlog_peak: backlog_peak(point, q, p),
            }
        })
        .collect();
    Some(Capacity {
        offered_rps,
        closed,
        capacity_rps: nominal,
        full_load_rps: (full < nominal).then_some(full),
        utilisation: ratio(offered_rps, nominal),
        rate_limit_rps: q.rate_limit.as_ref().map(|r| r.rate_per_s()),
        windows,
        queue: q.queue,
        queue_s: q.queue.map(|n| ratio(n as f64, nominal)),
        drop_expired: q.drop_expired,
        strategies,
    })
}

fn secs(d: Duration) -> f64 {
    d.span().as_secs_f64()
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else if a > 0.0 {
        f64::INFINITY
    } else {
        0.0
    }
}

/// The capacity at `t_s` (requests per second), with `full_load` the overload factor of every
/// usable worker busy; and whether an outage is in force.
fn capacity_at(q: &QueueServerSpec, t_s: f64, full_load: bool, service_s: f64) -> (f64, bool) {
    let mut total = 0.0;
    let mut all_out = true;
    for r in 0..q.replicas {
        let (capacity, outage) = replica_capacity_at(q, r, t_s, full_load, service_s);
        total += capacity;
        all_out &= outage;
    }
    (total, all_out)
}

/// [`capacity_at`] of replica `r` alone, with the faults that strike it.
fn replica_capacity_at(
    q: &QueueServerSpec,
    r: u32,
    t_s: f64,
    full_load: bool,
    service_s: f64,
) -> (f64, bool) {
    let active = || {
        q.faults.iter().filter(move |f| {
            let (start, duration) = f.window();
            secs(start) <= t_s && t_s < secs(start) + secs(duration) && f.strikes(r, q.replicas)
        })
    };
    // A restarting replica serves nothing, as one in an outage.
    let outage = active().any(|f| matches!(f, FaultSpec::Outage { .. } | FaultSpec::Restart { .. }));
    let share: f64 = active()
        .filter_map(|f| match *f {
            FaultSpec::Capacity { factor, .. } => Some(factor),
            _ => None,
        })
        .product();
    let slowdown: f64 = active()
        .filter_map(|f| match *f {
            FaultSpec::Slowdown { factor, .. } => Some(factor),
            _ => None,
        })
        .product();
    let usable = (q.concurrency as f64 * share).floor();
    let overload = match &q.overload {
        Some(o) if full_load => 1.0 + o.alpha * (usable - o.knee as f64).max(0.0),
        _ => 1.0,
    };
    if outage {
        return (0.0, true);
    }
    (ratio(usable, service_s * slowdown * overload), false)
}

/// The open workload's largest scheduled rate on `[from, to)`, 0 past its `duration`.
fn peak_rate(spec: &super::ExperimentSpec, from: f64, to: f64) -> f64 {
    let Some((rate, duration, schedule)) = spec.workload.rates() else { return 0.0 };
    let end = secs(duration);
    let mut steps: Vec<(f64, f64)> = vec![(0.0, rate)];
    for s in schedule {
        let at = secs(s.at);
        if at == 0.0 {
            steps[0].1 = s.rate;
        } else {
            steps.push((at, s.rate));
        }
    }
    steps
        .iter()
        .enumerate()
        .filter(|&(i, &(at, _))| {
            let next = steps.get(i + 1).map_or(end, |n| n.0.min(end));
            at < to && from < next && at < end
        })
        .map(|(_, s)| s.1)
        .fold(0.0, f64::max)
}

/// The rate in force at `t_s` (0 past the duration).
fn rate_at(spec: &super::ExperimentSpec, t_s: f64) -> f64 {
    let Some((rate, duration, schedule)) = spec.workload.rates() else { return 0.0 };
    if t_s >= secs(duration) {
        return 0.0;
    }
    schedule.iter().filter(|s| secs(s.at) <= t_s).fold(rate, |_, s| s.rate)
}

/// Steps of the fluid backlog model over the horizon.
const FLUID_STEPS: f64 = 20_000.0;

/// The fluid model's largest backlog for one strategy (module docs). A closed workload's
/// queue holds at most its clients' attempts; a connection pool that keeps a connection until
/// its answer (`close_on_timeout = false`, DESIGN §4.7) holds at most its connections' worth.
pub fn backlog_peak(point: &Point, q: &QueueServerSpec, p: &PolicySpec) -> f64 {
    let spec = &point.spec;
    let mut bound = q.queue.map_or(f64::INFINITY, |n| n as f64);
    if let Some(pool) = p.pool.as_ref().filter(|pool| !pool.close_on_timeout) {
        let pools = match pool.scope {
            Scope::Shared => 1,
            Scope::Client => match spec.workload {
                WorkloadSpec::Closed { clients, .. }
                | WorkloadSpec::Open { clients, .. }
                | WorkloadSpec::Serial { clients, .. } => clients.max(1),
                // A queue's receives are one client's.
                WorkloadSpec::Queue { .. } => 1,
            },
        };
        bound = bound.min(pool.size as f64 * pools as f64);
    }
    if let WorkloadSpec::Closed { clients, .. } = spec.workload {
        return bound.min(clients as f64);
    }
    let horizon = secs(spec.horizon);
    let service_s = mean_s(&q.service_time);
    let timeout = p.timeout.map(secs);
    let passes = p.app_passes() as f64;
    let attempts = p.max_attempts.map_or_else(
        || timeout.map_or(1.0, |t| (horizon / t.max(1e-3)).clamp(1.0, 1000.0)),
        |a| passes * p.layers.iter().fold(a as f64, |n, l| n * l.max_attempts as f64),
    );
    let dt = (horizon / FLUID_STEPS).max(1e-4);
    let (mut backlog, mut peak) = (0.0_f64, 0.0_f64);
    let mut t = 0.0;
    while t < horizon {
        let (nominal, outage) = capacity_at(q, t, false, service_s);
        let c = if backlog > 0.0 { capacity_at(q, t, true, service_s).0 } else { nominal };
        let storm = timeout.is_some_and(|to| c <= 0.0 || backlog / c > to);
        let mut arrivals = rate_at(spec, t) * if storm { attempts } else { 1.0 };
        if let Some(r) = &q.rate_limit {
            arrivals = arrivals.min(r.rate_per_s());
        }
        if outage {
            // Answered at once: nothing joins the queue, the workers keep draining it.
            arrivals = 0.0;
        }
        backlog = (backlog + (arrivals - c) * dt).max(0.0).min(bound);
        if q.drop_expired
            && let Some(to) = timeout
        {
            // The expired are dropped as they reach the head: only the last `timeout`'s stay.
            backlog = backlog.min(arrivals.max(c) * to);
        }
        peak = peak.max(backlog);
        t += dt;
    }
    peak
}

/// The mean of a duration distribution, in seconds (the folded normal's exactly).
pub fn mean_s(d: &DistSpec) -> f64 {
    let s = secs;
    match *d {
        DistSpec::Constant { value } => s(value),
        DistSpec::Uniform { low, high } => (s(low) + s(high)) / 2.0,
        DistSpec::Exponential { mean } => s(mean),
        DistSpec::Lognormal { median, sigma } => s(median) * (sigma * sigma / 2.0).exp(),
        DistSpec::Discrete { ref points } => super::spec::discrete_moment(points, 1),
        DistSpec::Normal { mean, sd } => {
            let (m, sd) = (s(mean), s(sd));
            if sd == 0.0 {
                return m;
            }
            // E|X| for X ~ N(m, sd^2): sd sqrt(2/pi) exp(-m^2 / 2sd^2) + m (1 - 2 Phi(-m/sd)).
            let z = m / sd;
            sd * (2.0 / std::f64::consts::PI).sqrt() * (-z * z / 2.0).exp() + m * (1.0 - 2.0 * phi(-z))
        }
    }
}

/// The standard normal CDF (Abramowitz-Stegun 7.1.26 through erf; 1e-7 is plenty here).
fn phi(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.3275911 * x.abs() / std::f64::consts::SQRT_2);
    let poly =
        t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    let erf = 1.0 - poly * (-(x * x) / 2.0).exp();
    if x >= 0.0 { 0.5 * (1.0 + erf) } else { 0.5 * (1.0 - erf) }
}

/// What `check` prints for a whole experiment: the arithmetic of each point (points with the
/// same lines printed once, named by the first of them), and every warning once, with the
/// point it first applies to.
pub fn report(exp: &super::Experiment) -> (Vec<String>, Vec<String>) {
    let label = |p: &Point| {
        let kv: Vec<String> =
            exp.sweep_keys.iter().zip(&p.values).map(|(k, v)| format!("{k} = {v}")).collect();
        kv.join(", ")
    };
    let mut groups: Vec<(Vec<String>, String, usize)> = Vec::new();
    let mut warnings: Vec<String> = Vec::new();
    for p in &exp.points {
        let Some(c) = of(p) else { continue };
        let lines = c.lines();
        match groups.iter_mut().find(|g| g.0 == lines) {
            Some(g) => g.2 += 1,
            None => groups.push((lines, label(p), 1)),
        }
        for w in c.warnings() {
            let at = if exp.sweep_keys.is_empty() { String::new() } else { format!(" (at {})", label(p)) };
            if !warnings.iter().any(|x| x.starts_with(&w)) {
                warnings.push(format!("{w}{at}"));
            }
        }
    }
    let mut out = Vec::new();
    for (lines, at, n) in groups {
        out.push(match (exp.sweep_keys.is_empty(), n) {
            (true, _) => "capacity arithmetic (first attempts; DESIGN §8):".to_owned(),
            (false, 1) => format!("capacity arithmetic at {at}:"),
            (false, n) => format!("capacity arithmetic at {at} (and {} more point(s) alike):", n - 1),
        });
        out.extend(lines.into_iter().map(|l| format!("  {l}")));
    }
    (out, warnings)
}

/// Three significant figures.
fn g(x: f64) -> String {
    if x.is_infinite() { "inf".into() } else { crate::stats::sig(x, 3) }
}

impl Capacity {
    /// The lines `check` prints.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        let how = if self.closed { "closed: clients / (think + service + round trip)" } else { "open rate" };
        out.push(format!(
            "offered load {} calls/s ({how}); capacity {} requests/s; utilisation {}{}",
            g(self.offered_rps),
            g(self.capacity_rps),
            g(self.utilisation),
            if self.closed && self.utilisation > 1.0 {
                " (closed: bounded by 1, the clients wait)"
            } else {
                ""
            }
        ));
        if let Some(full) = self.full_load_rps {
            out.push(format!(
                "  with every worker busy (server.overload): capacity {} requests/s, utilisation {}",
                g(full),
                g(ratio(self.offered_rps, full))
            ));
        }
        if let Some(r) = self.rate_limit_rps {
            out.push(format!("  server.rate_limit lets at most {} requests/s reach the workers", g(r)));
        }
        for w in &self.windows {
            let factor = w.factor.map_or(String::new(), |k| format!(" x{}", g(k)));
            let state = match w.kind {
                "outage" if w.capacity_rps == 0.0 => "capacity 0 (answered without the work)".to_owned(),
                "errors" => format!("capacity {} requests/s (unchanged)", g(w.capacity_rps)),
                _ => format!("capacity {} requests/s", g(w.capacity_rps)),
            };
            out.push(format!(
                "  fault {} {}{factor} [{} s, {} s): offered {} calls/s, {state}, utilisation {}",
                w.number,
                w.kind,
                g(w.start_s),
                g(w.end_s),
                g(w.offered_rps),
                g(w.utilisation)
            ));
        }
        out.push(match (self.queue, self.queue_s) {
            (Some(n), Some(s)) => format!("queue {n} = {} s of work at full capacity", g(s)),
            _ => "queue unbounded".to_owned(),
        });
        for s in &self.strategies {
            let layers: String = s.layers.iter().map(|(n, a)| format!(" x {a} ({n})")).collect();
            let passes = if s.passes > 1 { format!("{} (app_retry) x ", s.passes) } else { String::new() };
            let amp = match (s.attempts, s.amplification) {
                (Some(a), Some(n)) if !s.layers.is_empty() || s.passes > 1 => {
                    format!("{passes}{a}{layers} = {n}")
                }
                (Some(a), _) => a.to_string(),
                _ => "unbounded (no max_attempts)".to_owned(),
            };
            let timeout = s.timeout_s.map_or("none".to_owned(), |t| format!("{} s", g(t)));
            out.push(format!(
                "  strategy \"{}\": at most {amp} server calls per operation; timeout {timeout}; backlog up to {} requests",
                s.name,
                g(s.backlog_peak.round())
            ));
        }
        out
    }

    /// Setups that are probably not what the user meant, each naming the keys to look at.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.closed && self.utilisation > 1.0 {
            out.push(format!(
                "utilisation {} before any fault: {} calls/s offered against a capacity of {} requests/s, so the queue grows \
                 from the start; check workload.rate, server.concurrency and server.service_time",
                g(self.utilisation),
                g(self.offered_rps),
                g(self.capacity_rps)
            ));
        }
        let shortest = self
            .strategies
            .iter()
            .filter_map(|s| s.timeout_s.map(|t| (t, &s.name)))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        if let (Some((t, name)), Some(n), Some(s)) = (shortest, self.queue, self.queue_s)
            && s > t
        {
            out.push(format!(
                "a full queue (server.queue = {n}) holds {} s of work, more than strategy \"{name}\"'s timeout of {} s: requests \
                 at its back time out before they start; lower server.queue to {} or less, or raise the timeout",
                g(s),
                g(t),
                (t * self.capacity_rps).floor()
            ));
        }
        if self.queue.is_none() && !self.drop_expired {
            let worst = self
                .strategies
                .iter()
                .filter_map(|s| s.timeout_s.map(|t| (s, t)))
                .filter(|(s, t)| ratio(s.backlog_peak, self.capacity_rps) > *t)
                .max_by(|a, b| a.0.backlog_peak.total_cmp(&b.0.backlog_peak));
            if let Some((s, t)) = worst {
                out.push(format!(
                    "server.queue is unbounded and builds to about {} requests ({} s of work) with strategy \"{}\", more \
                     than its timeout of {} s: the server serves requests nobody waits for; bound server.queue (at most {}) \
                     or set server.drop_expired",
                    g(s.backlog_peak.round()),
                    g(ratio(s.backlog_peak, self.capacity_rps)),
                    s.name,
                    g(t),
                    (t * self.capacity_rps).floor()
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Overrides, load_str};

    fn points(text: &str) -> Vec<Point> {
        load_str(text, "t", &Overrides::default()).unwrap().points
    }

    fn shipped(name: &str) -> Vec<Point> {
        let path = format!("{}/experiments/{name}.toml", env!("CARGO_MANIFEST_DIR"));
        points(&std::fs::read_to_string(path).unwrap())
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn capacity_from_the_mean_service_time() {
        let ms = |v: u64| Duration(v * 1_000_000);
        assert!((mean_s(&DistSpec::Exponential { mean: ms(100) }) - 0.1).abs() < 1e-12);
        assert!((mean_s(&DistSpec::Uniform { low: ms(10), high: ms(30) }) - 0.02).abs() < 1e-12);
        // |N(10, 2)| is N(10, 2) to many digits; |N(0, 1)| has mean sqrt(2/pi).
        assert!((mean_s(&DistSpec::Normal { mean: ms(10), sd: ms(2) }) - 0.01).abs() < 1e-9);
        let folded = mean_s(&DistSpec::Normal { mean: ms(0), sd: ms(1000) });
        assert!((folded - (2.0 / std::f64::consts::PI).sqrt()).abs() < 1e-6);
        assert!((phi(0.0) - 0.5).abs() < 1e-9 && (phi(1.96) - 0.975).abs() < 1e-4);
    }

    #[test]
    fn retry_storm_by_hand() {
        let c = of(&shipped("retry-storm")[0]).unwrap();
        // Open: 1000 operations/s. 120 workers / 100 ms mean service = 1200 requests/s.
        assert!(close(c.offered_rps, 1000.0) && close(c.capacity_rps, 1200.0));
        assert!(close(c.utilisation, 1000.0 / 1200.0) && !c.closed && c.full_load_rps.is_none());
        // The outage [10 s, 15 s) serves nothing.
        assert_eq!(c.windows.len(), 1);
        let w = &c.windows[0];
        assert_eq!((w.kind, w.start_s, w.end_s, w.capacity_rps), ("outage", 10.0, 15.0, 0.0));
        assert!(close(w.offered_rps, 1000.0) && w.utilisation.is_infinite());
        // 1200 queued / 1200 per s = 1 s of work, not more than the 1 s timeout: no warning.
        assert!(close(c.queue_s.unwrap(), 1.0));
        assert!(c.warnings().is_empty(), "{:?}", c.warnings());
        // Four attempts, no layers; below capacity nothing backs up (the outage queues nothing).
        assert!(c.strategies.iter().all(|s| s.amplification == Some(4) && s.timeout_s == Some(1.0)));
        assert!(c.strategies.iter().all(|s| s.backlog_peak == 0.0));
    }

    #[test]
    fn layered_retries_by_hand() {
        let c = of(&shipped("layered-retries")[0]).unwrap();
        // 1000/s against 120 / 100 ms = 1200/s; the slowdown x2 halves it to 600/s in [10, 15).
        assert!(close(c.utilisation, 1000.0 / 1200.0));
        let w = &c.windows[0];
        assert_eq!((w.kind, w.factor), ("slowdown", Some(2.0)));
        assert!(close(w.capacity_rps, 600.0) && close(w.utilisation, 1000.0 / 600.0));
        // A full queue is 1200 / 1200 = 1 s of work, under the 2 s timeout.
        assert!(close(c.queue_s.unwrap(), 1.0) && c.warnings().is_empty());
        // Attempts multiply: 3; 3 x 3; 3 x 3 x 3; 3 x 1 x 1; 3 x 3 x 3.
        let amp: Vec<Option<u64>> = c.strategies.iter().map(|s| s.amplification).collect();
        assert_eq!(amp, [Some(3), Some(9), Some(27), Some(3), Some(27)]);
        // The slowdown backs up 1000 - 600 = 400 requests/s: the queue is full (1200) 3 s in,
        // so every strategy's backlog peaks at the bound.
        assert!(c.strategies.iter().all(|s| close(s.backlog_peak, 1200.0)), "{:?}", c.strategies);
    }

    #[test]
    fn a_pool_that_keeps_its_connections_bounds_the_backlog() {
        // The OSDI check: 13,333/s against 2 workers at 91 us slowed x5 for 10 s backs up
        // without bound when timed-out connections close; kept until the answer, one pool of
        // 100 connections holds at most 100 requests at the server.
        let c = of(&shipped("validation/osdi-retry")[0]).unwrap();
        let peak = |name: &str| c.strategies.iter().find(|s| s.name == name).unwrap().backlog_peak;
        assert!(peak("go-driver") > 100_000.0, "{}", peak("go-driver"));
        assert!(close(peak("keep-connection"), 100.0), "{}", peak("keep-connection"));
    }

    #[test]
    fn metastable_by_hand() {
        let pts = shipped("metastable");
        let at = |duration: &str, drop: &str| {
            let p = pts.iter().find(|p| p.values == [duration, drop]).unwrap();
            of(p).unwrap()
        };
        let c = at("2s", "false");
        // 100 workers / 80 ms = 1250/s; 1000/s offered: 0.8.
        assert!(close(c.capacity_rps, 1250.0) && close(c.utilisation, 0.8));
        // Overload at full load: 1 + 0.015 x (100 - 90) = 1.15, so 100 / (0.08 x 1.15).
        assert!(close(c.full_load_rps.unwrap(), 100.0 / (0.08 * 1.15)));
        // The capacity fault leaves floor(0.6 x 100) = 60 workers: 60 / 80 ms = 750/s, 1000/750.
        let w = &c.windows[0];
        assert!(close(w.capacity_rps, 750.0) && close(w.utilisation, 1000.0 / 750.0));
        assert_eq!((w.start_s, w.end_s), (20.0, 22.0));
        assert_eq!(c.queue, None);
        // 2 s at 1000 - 750 = 250/s backs up 500 requests (0.67 s of work at 750/s, under the
        // 1 s timeout: no storm); within one fluid step of it.
        let immediate = &c.strategies[0];
        assert_eq!((immediate.name.as_str(), immediate.amplification), ("immediate", Some(5)));
        assert!((immediate.backlog_peak - 500.0).abs() < 2.0, "{}", immediate.backlog_peak);
        assert!(c.warnings().is_empty(), "{:?}", c.warnings());
        // 10 s: past 750 queued (1 s of work at 750/s, 3 s in) every attempt times out and is
        // retried 5 times: 5000/s arrive against 750/s, then 1087/s after the fault, until the
        // load ends at 90 s: 750 + 4250 x 7 + (5000 - 1087) x 60 = about 265,000 requests.
        let long = at("10s", "false");
        let peak = long.strategies[0].backlog_peak;
        let by_hand = 750.0 + 4250.0 * 7.0 + (5000.0 - 100.0 / (0.08 * 1.15)) * 60.0;
        assert!((peak / by_hand - 1.0).abs() < 0.01, "{peak} vs {by_hand}");
        let warnings = long.warnings();
        assert!(warnings.len() == 1 && warnings[0].contains("server.queue is unbounded"), "{warnings:?}");
        // drop_expired drops the expired: no warning.
        assert!(at("10s", "true").warnings().is_empty());
    }

    #[test]
    fn a_closed_herd_is_bounded_by_one() {
        let c = of(&shipped("herd-10k")[0]).unwrap();
        // 10,000 clients / (0 think + 10 ms service + 0 network) = 1e6/s against 100 / 10 ms.
        assert!(close(c.offered_rps, 1e6) && close(c.capacity_rps, 1e4) && close(c.utilisation, 100.0));
        assert!(c.closed && c.warnings().is_empty(), "a closed workload cannot overload the server");
        assert_eq!((c.queue, c.queue_s), (Some(0), Some(0.0)));
    }

    const OVERLOADED: &str = "name = \"o\"\n[workload]\nkind = \"open\"\nrate = 500.0\nduration = \"10s\"\n[server]\nconcurrency = 4\nqueue = 1000\nservice_time = { dist = \"constant\", value = \"10ms\" }\n[client]\ntimeout = \"1s\"\nmax_attempts = 2\n[[strategies]]\nname = \"x\"\nbackoff = { kind = \"none\" }\n";

    #[test]
    fn warns_on_overload_and_a_queue_longer_than_the_timeout() {
        let c = of(&points(OVERLOADED)[0]).unwrap();
        // 500/s against 4 / 10 ms = 400/s: 1.25; 1000 queued / 400 = 2.5 s > 1 s.
        assert!(close(c.utilisation, 1.25) && close(c.queue_s.unwrap(), 2.5));
        let w = c.warnings();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("utilisation 1.25 before any fault"), "{}", w[0]);
        assert!(w[1].contains("holds 2.5 s of work") && w[1].contains("to 400 or less"), "{}", w[1]);
        assert!(c.lines().iter().any(|l| l.contains("at most 2 server calls")), "{:?}", c.lines());
    }
}
