//! The check list: for each experiment file of the suite, what is compared with what.
//!
//! Each check reads its parameters from its own experiment file (arrival rate, workers,
//! service distribution, budget settings...), so the expected values follow the file; it
//! refuses a file that lacks what it needs (a strategy, a sweep point, zero network delay).
//! The simulated values are means over independent runs (one value per run); the tolerance is
//! [`stats::tolerance`](crate::stats::tolerance): 4 standard errors of the difference plus the
//! resolution stated in the check's `method`.
//!
//! | file | checks |
//! |---|---|
//! | `mod.rs` | the registry, [`CHECKS`], in VALIDATION.md's order |
//! | `parameters.rs` | what every check reads: the file's one point, its server, workload and strategies, and the runs' metrics |
//! | `queueing.rs` | queueing theory: Erlang B and C, M/M/1, M/D/1, Little's law, Poisson arrivals |
//! | `controls.rs` | retries and their controls: independent failures, backoff laws, budgets, the breaker, layers, the storm |
//! | [`aws`] (`aws.rs`) | the AWS 2015 study, against its simulator's numbers and its claims |
//! | [`brooker`] (`brooker.rs`) | Brooker's retry_sim `run_sims`, against its outputs over independent seeds |
//! | [`brooker_collapse`] (`brooker_collapse.rs`) | Brooker's simple_collapse_sim ramp scenarios, window by window, against its outputs over independent seeds |
//! | [`osdi`] (`osdi.rs`) | the OSDI '22 retry experiment's four outcomes, through the connection pool |
//! | [`rate_limits`] (`rate_limits.rs`) | the server's rate limiters: admitted rate under overload, the fixed window's boundary herd |
//! | [`adaptive_limits`] (`adaptive_limits.rs`) | Envoy's adaptive concurrency filter: the limit's growth by calculateNewLimit |
//! | [`hedging`] (`hedging.rs`) | hedged requests with a fixed delay: hedges per call and mean latency against `min(X1, d + X2)` |
//! | [`disciplines`] (`disciplines.rs`) | the queue disciplines on a scripted queue: RFC 8289 CoDel's drop schedule, folly's CoDel rule, LIFO's newest first |
//! | [`bulkhead`] (`bulkhead.rs`) | the client bulkhead: exactly `max_in_flight` in flight, the rest failing or waiting |
//! | [`admission`] (`admission.rs`) | Envoy's admission control: the rejected share its formula gives |
//! | [`priorities`] (`priorities.rs`) | priority classes under overload: the served requests go to the most critical classes first |
//! | [`replicas`] (`replicas.rs`) | one of two replicas failing behind a random balancer: success after k retries, with and without `previous_hosts` |
//! | [`supermarket`] (`supermarket.rs`) | least request with two choices against Mitzenmacher's supermarket model, random against M/M/1 |
//! | [`graph`] (`graph.rs`) | the call graph: calls per operation down a chain, the fan-out tail `(1 - q)^n` |

pub mod adaptive_limits;
pub mod admission;
pub mod aws;
pub mod brooker;
pub mod brooker_collapse;
pub mod bulkhead;
mod controls;
pub mod disciplines;
pub mod graph;
pub mod hedging;
pub mod osdi;
mod parameters;
pub mod priorities;
mod queueing;
pub mod rate_limits;
pub mod replicas;
pub mod supermarket;

use crate::experiment::Experiment;
use crate::sweep::Results;
use crate::validation::Evaluation;
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
        evaluate: queueing::erlang_b,
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
        evaluate: queueing::erlang_c,
    },
    CheckDef {
        id: "mm1-sojourn",
        title: "M/M/1: sojourn-time quantiles",
        method: "Simulated: per run, `latency_p50_s`, `latency_p99_s` (HDR histogram, 3 \
                 significant digits) and the exact `latency_mean_s`. Tolerance: 4 standard errors \
                 across runs, plus 0.1 % of the value for the percentiles (the histogram reports the \
                 top of a bucket at most 0.1 % wide).",
        series: false,
        evaluate: queueing::mm1,
    },
    CheckDef {
        id: "md1-wait",
        title: "M/D/1: Pollaczek-Khinchine mean wait",
        method: "Simulated: per run, `wait_mean_s` and `latency_mean_s`. Tolerance: 4 standard \
                 errors across runs.",
        series: false,
        evaluate: queueing::md1,
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
        evaluate: queueing::little,
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
        evaluate: queueing::poisson,
    },
    CheckDef {
        id: "independent-failures",
        title: "Independent failures: amplification and success",
        method: "Simulated: per run, `amplification` (calls per operation) and `success_rate`. \
                 Tolerance: 4 standard errors across runs.",
        series: false,
        evaluate: controls::independent_failures,
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
        evaluate: controls::backoff,
    },
    CheckDef {
        id: "token-bucket",
        title: "Token-bucket retry budget in a total outage",
        method: "Simulated: extra calls, `calls - ops`. The run has no randomness that matters \
                 (every answer is a 503, at once): the comparison is exact (tolerance 0).",
        series: false,
        evaluate: controls::token_bucket,
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
        evaluate: controls::ratio_budget,
    },
    CheckDef {
        id: "grpc-throttle",
        title: "gRPC retry throttling in a total outage",
        method: "Simulated: extra calls, `calls - ops`. Deterministic (every answer is a 503, at \
                 once): the comparison is exact (tolerance 0).",
        series: false,
        evaluate: controls::grpc_throttle,
    },
    CheckDef {
        id: "breaker",
        title: "Circuit breaker: opening and half-open probes",
        method: "Simulated: `calls` (attempts that left the client; those an open breaker \
                 refuses are not calls). The expected count follows the breaker's timeline on the \
                 client's 10 ms grid of operations, computed from the file's keys. Deterministic: \
                 the comparison is exact (tolerance 0).",
        series: false,
        evaluate: controls::breaker,
    },
    CheckDef {
        id: "layers",
        title: "Layered retries multiply",
        method: "Simulated: per run, `server_calls / ops` and `calls / ops`. Every operation \
                 fails the same way: the comparison is exact (tolerance 0).",
        series: false,
        evaluate: controls::layers,
    },
    CheckDef {
        id: "storm",
        title: "Retry storm arithmetic",
        method: "Simulated: per run, the mean `offered` count per second over the whole buckets \
                 inside the outage, and over those outside it while arrivals last. Tolerance: 4 \
                 standard errors across runs (the Poisson count of arrivals).",
        series: true,
        evaluate: controls::storm,
    },
    CheckDef {
        id: "aws-2015-jitter",
        title: "The AWS 2015 study \"Exponential Backoff And Jitter\"",
        method: aws::METHOD,
        series: false,
        evaluate: aws::evaluate,
    },
    CheckDef {
        id: "brooker-retry-sim",
        title: "Brooker's retry_sim run_sims, run unchanged",
        method: brooker::METHOD,
        series: false,
        evaluate: brooker::evaluate,
    },
    CheckDef {
        id: "brooker-collapse-ramp",
        title: "Brooker's simple_collapse_sim ramps, run unchanged",
        method: brooker_collapse::METHOD,
        series: true,
        evaluate: brooker_collapse::evaluate,
    },
    CheckDef {
        id: "osdi-retry",
        title: "The OSDI '22 retry experiment (\"Metastable Failures in the Wild\"), in its shape",
        method: osdi::METHOD,
        series: false,
        evaluate: osdi::evaluate,
    },
    CheckDef {
        id: "rate-limiters",
        title: "Server rate limiters: admitted rate and the fixed window's herd",
        method: rate_limits::METHOD,
        series: true,
        evaluate: rate_limits::evaluate,
    },
    CheckDef {
        id: "adaptive-limits",
        title: "Envoy's gradient controller: the limit's growth by calculateNewLimit",
        method: adaptive_limits::METHOD,
        series: true,
        evaluate: adaptive_limits::evaluate,
    },
    CheckDef {
        id: "hedging",
        title: "Hedged requests: the minimum of the delayed copies",
        method: hedging::METHOD,
        series: false,
        evaluate: hedging::evaluate,
    },
    CheckDef {
        id: "queue-disciplines",
        title: "Queue disciplines: CoDel's drop schedule, folly's CoDel, LIFO",
        method: disciplines::METHOD,
        series: true,
        evaluate: disciplines::evaluate,
    },
    CheckDef {
        id: "bulkhead",
        title: "Client bulkhead: max_in_flight in flight, the rest fail or wait",
        method: bulkhead::METHOD,
        series: true,
        evaluate: bulkhead::evaluate,
    },
    CheckDef {
        id: "admission-control",
        title: "Envoy admission control: the rejected share",
        method: admission::METHOD,
        series: false,
        evaluate: admission::evaluate,
    },
    CheckDef {
        id: "priorities",
        title: "Priority classes: the most critical served first under overload",
        method: priorities::METHOD,
        series: false,
        evaluate: priorities::evaluate,
    },
    CheckDef {
        id: "replica-theory",
        title: "Replicas: one of two failing behind a random balancer",
        method: replicas::METHOD,
        series: false,
        evaluate: replicas::evaluate,
    },
    CheckDef {
        id: "graph-chain",
        title: "Call graph: retries multiply down a chain of services",
        method: graph::CHAIN_METHOD,
        series: false,
        evaluate: graph::chain,
    },
    CheckDef {
        id: "graph-fanout",
        title: "Call graph: a fan-out is as slow as its slowest call",
        method: graph::FANOUT_METHOD,
        series: false,
        evaluate: graph::fanout,
    },
    CheckDef {
        id: "supermarket",
        title: "Replicas: the power of two choices (the supermarket model)",
        method: supermarket::METHOD,
        series: true,
        evaluate: supermarket::evaluate,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_has_a_unique_id() {
        let mut ids: Vec<_> = CHECKS.iter().map(|c| c.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), CHECKS.len());
    }
}
