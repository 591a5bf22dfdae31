//! `[[services]]` and a strategy's graph keys as the model's call graph (DESIGN §3.7): each
//! service's server and replicas, each edge's callee and client policy.

use super::hop::Hop;
use super::replicas::replicas;
use super::server::server;
use crate::experiment::{ExperimentSpec, Strategy};
use crate::model::graph::{EdgeParams, GraphParams, ServiceParams};
use crate::model::replicas::ReplicaParams;

/// The call graph of `spec` as `strategy` runs it, or `None` without `[[services]]`.
pub fn graph(spec: &ExperimentSpec, strategy: &Strategy) -> Option<GraphParams> {
    if spec.services.is_empty() {
        return None;
    }
    let index = |name: &str| {
        spec.services.iter().position(|s| s.name == name).expect("validation: a call names a service") as u32
    };
    let services = spec
        .services
        .iter()
        .map(|s| ServiceParams {
            server: server(&s.server, 0),
            // Which replicas a retry avoids is the edge's (`retry_other_replica` per edge).
            replicas: replicas(&s.server, &strategy.policy).map(|r| ReplicaParams { reselects: None, ..r }),
            calls: s
                .calls
                .iter()
                .map(|c| {
                    let policy = strategy.policy.hop_policy.as_ref().unwrap_or(&c.policy);
                    EdgeParams {
                        to: index(&c.service),
                        count: c.count,
                        parallel: c.parallel,
                        optional: c.optional,
                        retry: Hop::edge(policy).retry(),
                        gate: Hop::edge(policy).gate(),
                        route: Hop::edge(policy).route(),
                        hedge: policy.hedge.as_ref().map(super::hedge::edge_hedge),
                        reselects: policy
                            .retry_other_replica
                            .then_some(policy.host_selection_retry_max_attempts),
                    }
                })
                .collect(),
        })
        .collect();
    Some(GraphParams {
        services,
        propagate_deadline: strategy.policy.propagate_deadline,
        propagate_cancellation: strategy.policy.propagate_cancellation,
        cancel_in_service: strategy.policy.cancel_in_service,
    })
}
