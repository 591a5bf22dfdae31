//! The assembly layer: the one place where an experiment file's types become the model's
//! parameters (nexosim's split: `model` writes the models, this module assembles them from the
//! file, `sweep` runs them). One file per thing it assembles: the [`client`] side (retry
//! policy, controls, idempotency keys), the [`gateways`] (a chain of the call graph's proxy
//! nodes), the [`graph`], the [`workload`], the [`network`],
//! the [`server`], its [`faults`] and its [`replicas`], and the [`dist`]ributions they draw from. A key of the
//! file can be renamed here without touching the model.

pub mod client;
pub mod dist;
pub mod faults;
pub mod gateways;
pub mod graph;
pub mod hedge;
mod hop;
pub mod network;
pub mod replicas;
pub mod server;
pub mod workload;

use crate::engine::Instant;
use crate::experiment::{ExperimentSpec, ServerSpec, Strategy, WorkloadSpec};
use crate::metrics::{RunMetrics, Window};
use crate::model::priorities::PriorityParams;
use crate::model::{DefaultQueue, QueueChoice, RunParams, ServerKind};

/// The parameters of a run of `strategy` at the point `spec`.
pub fn run_params(spec: &ExperimentSpec, strategy: &Strategy) -> RunParams {
    let mut params = RunParams {
        workload: workload::workload(&spec.workload),
        network: network::network(&spec.network),
        server: match &spec.server {
            ServerSpec::Queue(q) => ServerKind::Queue(server::server(q, 0)),
            ServerSpec::Occ {} => ServerKind::Occ,
        },
        horizon: spec.horizon.span(),
        bucket: spec.output.bucket.span(),
        retry: client::retry_policy(strategy),
        gate: client::gate_params(strategy),
        keys: client::idempotency_keys(strategy),
        dead_letter: client::dead_letter(strategy),
        app_retry: client::app_retry(strategy),
        visibility: None,
        proxies: gateways::chain(&strategy.policy.layers),
        pool: client::pool(strategy),
        bulkhead: client::bulkhead(strategy),
        hedge: hedge::hedge(strategy),
        priorities: spec.workload.priorities().map(|p| PriorityParams { shares: p.shares() }),
        windows: spec
            .output
            .windows
            .values()
            .map(|[start, end]| Window {
                start: Instant::ZERO + start.span(),
                end: Instant::ZERO + end.span(),
            })
            .collect(),
        replicas: match &spec.server {
            ServerSpec::Queue(q) => replicas::replicas(q, &strategy.policy),
            ServerSpec::Occ {} => None,
        },
        graph: graph::graph(spec, strategy),
    };
    if let Some(h) = &params.hedge {
        // The controls count a copy's failure as a retryable one when it is non-fatal (A6's
        // throttling counts only those).
        params.retry.retry_on = h.non_fatal;
    }
    if let WorkloadSpec::Queue { visibility_timeout, max_receive_count, ack_loss, .. } = spec.workload {
        workload::consumers(&mut params, strategy, visibility_timeout, max_receive_count, ack_loss);
    }
    params
}

/// One replication: `strategy` at the point `spec`, with the run's master seed.
pub fn simulate(spec: &ExperimentSpec, strategy: &Strategy, run_seed: u64) -> RunMetrics {
    simulate_with::<DefaultQueue>(spec, strategy, run_seed)
}

/// [`simulate`] with a chosen event queue (for the equivalence test and benchmarks).
pub fn simulate_with<C: QueueChoice>(
    spec: &ExperimentSpec,
    strategy: &Strategy,
    run_seed: u64,
) -> RunMetrics {
    crate::model::simulate_with::<C>(run_params(spec, strategy), run_seed)
}

/// Whether a run of `strategy` at `spec` is plain, and takes the queue model's copy compiled
/// for plain runs (`model::queue_model`'s docs).
pub fn is_plain_run(spec: &ExperimentSpec, strategy: &Strategy) -> bool {
    crate::model::is_plain_run(run_params(spec, strategy))
}
