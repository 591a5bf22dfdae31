//! The retry experiment of Huang et al., "Metastable Failures in the Wild" (OSDI '22;
//! lexiangh/Metastability commit d66be9fd0c2396241f3fbc33376781e57bae763f,
//! `Retry_Metastability`): four runs of one Go client against a MongoDB primary whose CPU quota
//! drops for a while, and whether the service comes back. The check reads each point's trigger
//! and rate from the file, finds the outcome upstream reports for it (or implies, for a milder
//! or harsher version of one of its cases), and compares it with the run's `metastable`.

use super::parameters::{open_workload, queue_server, require};
use crate::experiment::{Experiment, FaultSpec, Strategy};
use crate::metrics::RunMetrics;
use crate::stats::{Estimate, sig_padded};
use crate::sweep::Results;
use crate::validation::{Evaluation, Row, Unit};
use std::fmt::Write;
use std::path::Path;

pub const METHOD: &str = "Simulated: per point and strategy, `metastable` of the one run (1: no 5 \
healthy seconds after the trigger while load arrives; DESIGN §5). The runs draw no random number \
(fixed-interval arrivals, constant service, no jitter), so one run is the outcome. Expected: for \
`go-driver`, upstream's outcome at upstream's four points, and at the others the outcome of the \
upstream case they are a milder version of (more cores, a shorter trigger, a lower rate: \
recovers); for `no-retries`, recovery everywhere (the server is faster than the load, so the \
trigger's backlog drains). Exact comparison (tolerance 0). `keep-connection` is checked for the \
bound it exists for: its time-average requests at the server within [0, pool size]; its \
outcomes are reported below, not predicted.";

/// The reproduction, and the two controls, by name.
const CLIENT: &str = "go-driver";
const NO_RETRIES: &str = "no-retries";
const KEEP: &str = "keep-connection";

/// The primary's vCPUs (upstream `trigger.sh ... 2`: the quota between triggers).
const CORES: f64 = 2.0;

/// One of upstream's runs: the CPU quota during the trigger, the trigger's length, the
/// client's interval between inserts, and whether the service stayed down
/// (`experiments.sh`: baseline, metastable, not metastable 9 sec, not metastable reduced rate).
struct UpstreamCase {
    cores: f64,
    seconds: f64,
    interval_ns: u64,
    stays_down: bool,
}

const UPSTREAM: [UpstreamCase; 4] = [
    UpstreamCase { cores: 0.45, seconds: 10.0, interval_ns: 75_000, stays_down: false },
    UpstreamCase { cores: 0.40, seconds: 10.0, interval_ns: 75_000, stays_down: true },
    UpstreamCase { cores: 0.40, seconds: 9.0, interval_ns: 75_000, stays_down: false },
    UpstreamCase { cores: 0.40, seconds: 10.0, interval_ns: 100_000, stays_down: false },
];

/// A point's trigger and load, read from its file.
struct Trigger {
    cores: f64,
    seconds: f64,
    interval_ns: u64,
}

impl Trigger {
    fn label(&self) -> String {
        format!("{:.2} cores for {} s, one insert every {} ns", self.cores, self.seconds, self.interval_ns)
    }

    /// What upstream says or implies for this trigger: (stays down, why).
    fn expected(&self) -> Result<(bool, &'static str), String> {
        let same = |a: f64, b: f64| (a - b).abs() < 1e-6;
        if let Some(u) = UPSTREAM.iter().find(|u| {
            same(u.cores, self.cores) && same(u.seconds, self.seconds) && u.interval_ns == self.interval_ns
        }) {
            return Ok((u.stays_down, "upstream"));
        }
        // A trigger no harsher than one upstream saw recover (at least as many cores, no
        // longer, and a load no higher) recovers too.
        let milder = |u: &UpstreamCase| {
            self.cores >= u.cores - 1e-6
                && self.seconds <= u.seconds + 1e-6
                && self.interval_ns >= u.interval_ns
        };
        if UPSTREAM.iter().any(|u| !u.stays_down && milder(u)) {
            return Ok((false, "milder than a case upstream saw recover"));
        }
        Err(format!("upstream implies no outcome for {}", self.label()))
    }
}

/// The point's trigger: one slowdown fault of factor 2 / cores, and an open workload's rate.
fn trigger(exp: &Experiment, p: usize) -> Result<Trigger, String> {
    let spec = &exp.points[p].spec;
    let q = queue_server(spec)?;
    require(q.concurrency as f64 == CORES, || {
        format!("this check needs server.concurrency = {CORES} (the primary's vCPUs)")
    })?;
    let [FaultSpec::Slowdown { duration, factor, .. }] = q.faults.as_slice() else {
        return Err("this check needs one slowdown fault (the CPU quota's drop) at each point".into());
    };
    let (rate, _) = open_workload(spec)?;
    Ok(Trigger {
        cores: CORES / factor,
        seconds: duration.as_secs_f64(),
        interval_ns: (1e9 / rate).round() as u64,
    })
}

fn strategy(strategies: &[Strategy], name: &str) -> Result<usize, String> {
    strategies
        .iter()
        .position(|s| s.name == name)
        .ok_or_else(|| format!("this check needs a strategy `{name}`"))
}

fn one_run(results: &Results, p: usize, s: usize) -> Result<&RunMetrics, String> {
    match results.cell(p, s) {
        [run] => Ok(&run.metrics),
        runs => Err(format!("this check needs runs = 1 (the runs are deterministic), not {}", runs.len())),
    }
}

/// 1 when the run stayed down, 0 when it recovered.
fn stayed_down(m: &RunMetrics) -> Result<f64, String> {
    m.metastable.map(f64::from).ok_or_else(|| "a run whose recovery cannot be measured".into())
}

pub fn evaluate(exp: &Experiment, results: &Results, _: &Path) -> Result<Evaluation, String> {
    let strategies = &exp.points[0].strategies;
    let (client, no_retries, keep) =
        (strategy(strategies, CLIENT)?, strategy(strategies, NO_RETRIES)?, strategy(strategies, KEEP)?);
    let pool_size = strategies[keep]
        .policy
        .pool
        .as_ref()
        .filter(|p| !p.close_on_timeout)
        .map(|p| p.size)
        .ok_or_else(|| format!("strategy `{KEEP}` needs a pool with close_on_timeout = false"))?;
    let mut rows = Vec::new();
    let mut table = String::from(
        "| trigger | strategy | outcome | success rate | calls per operation | server calls per operation | pool timeouts per operation | wasted work (s) | mean requests at the server |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    let (mut reproduced, mut upstream_points) = (0, 0);
    let mut keep_outcomes = Vec::new();
    for p in 0..exp.points.len() {
        let t = trigger(exp, p)?;
        let (down, why) = t.expected()?;
        let outcome = |stays_down: bool| if stays_down { "stays down" } else { "recovers" };
        for (s, expected, source) in
            [(client, down, why), (no_retries, false, "no resends: the backlog drains")]
        {
            let m = one_run(results, p, s)?;
            let observed = stayed_down(m)?;
            if s == client && why == "upstream" {
                upstream_points += 1;
                reproduced += usize::from(observed == f64::from(down));
            }
            rows.push(Row::value(
                format!(
                    "{}, {}: 1 if it stays down, 0 if it recovers ({source}: {})",
                    t.label(),
                    strategies[s].name,
                    outcome(expected)
                ),
                Unit::NUMBER,
                f64::from(expected),
                0.0,
                Estimate::exact(observed, 1),
                0.0,
            ));
        }
        let k = one_run(results, p, keep)?;
        rows.push(Row::within(
            format!("{}, {KEEP}: mean requests at the server, at most the pool's {pool_size}", t.label()),
            Unit::NUMBER,
            0.0,
            pool_size as f64,
            k.in_server_mean,
            k.in_server_mean,
            0.0,
        ));
        keep_outcomes.push((t.label(), stayed_down(k)? == 1.0, k.pool_timeouts as f64 / k.ops as f64));
        for s in [client, no_retries, keep] {
            let m = one_run(results, p, s)?;
            let outcome = match m.recovery_time_s {
                Some(r) => format!("recovers in {} s", sig_padded(r, 3)),
                None => "stays down".into(),
            };
            let per_op = |x: u64| sig_padded(x as f64 / m.ops as f64, 3);
            writeln!(
                table,
                "| {} | {} | {outcome} | {} | {} | {} | {} | {} | {} |",
                t.label(),
                strategies[s].name,
                sig_padded(m.success_rate(), 3),
                sig_padded(m.amplification(), 3),
                per_op(m.server_calls),
                per_op(m.pool_timeouts),
                sig_padded(m.wasted_work_s, 3),
                sig_padded(m.in_server_mean, 3),
            )
            .expect("writing to a String");
        }
    }
    let down: Vec<&str> = keep_outcomes.iter().filter(|o| o.1).map(|o| o.0.as_str()).collect();
    let up: Vec<&str> = keep_outcomes.iter().filter(|o| !o.1).map(|o| o.0.as_str()).collect();
    let most_waits = keep_outcomes.iter().map(|o| o.2).fold(0.0, f64::max);
    let keep_text = format!(
        "`{KEEP}` (close_on_timeout = false) never has more than {pool_size} requests at the server, \
         but it stays down at {} of the {} points ({}) and recovers at {} ({}); up to {} of its \
         attempts per operation time out waiting for a connection. The pool's queue is FIFO and a \
         wait counts against the attempt's 3 s: a connection that comes free goes to the oldest \
         waiter, which has the least time left.",
        down.len(),
        keep_outcomes.len(),
        if down.is_empty() { "none".to_string() } else { down.join("; ") },
        up.len(),
        if up.is_empty() { "none".to_string() } else { up.join("; ") },
        sig_padded(most_waits, 3),
    );
    let summary = (
        format!(
            "upstream's {upstream_points} outcomes (0.45 cores for 10 s recovers, 0.40 for 10 s stays down, 0.40 for 9 s recovers, 0.40 for 10 s at 10,000/s recovers)"
        ),
        format!("{reproduced} of {upstream_points} reproduced"),
    );
    Ok(Evaluation { rows, sections: vec![table, keep_text], summary: Some(summary), ..Evaluation::default() })
}
