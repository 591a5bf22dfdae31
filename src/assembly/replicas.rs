//! `[server] replicas`, `balancer`, `outlier` and the strategy's `retry_other_replica` as the
//! model's replica set (DESIGN §3.3, §4).

use super::server::server;
use crate::experiment::{BalancerSpec, OutlierSpec, PolicySpec, QueueServerSpec};
use crate::model::replicas::ReplicaParams;
use crate::policy::balancer::BalancerParams;
use crate::policy::outlier::OutlierParams;

/// The replicas after the first, or `None` for a single server (the model without replicas).
pub fn replicas(spec: &QueueServerSpec, policy: &PolicySpec) -> Option<ReplicaParams> {
    (spec.replicas > 1).then(|| ReplicaParams {
        others: (1..spec.replicas).map(|r| server(spec, r)).collect(),
        balancer: balancer(spec),
        outlier: spec.outlier.as_ref().map(outlier),
        panic_threshold_percent: spec.panic_threshold,
        reselects: policy.retry_other_replica.then_some(policy.host_selection_retry_max_attempts),
    })
}

fn balancer(spec: &QueueServerSpec) -> BalancerParams {
    match spec.balancer {
        BalancerSpec::RoundRobin => BalancerParams::RoundRobin,
        BalancerSpec::Random => BalancerParams::Random,
        BalancerSpec::LeastRequest => BalancerParams::LeastRequest { choice_count: spec.choice_count },
        BalancerSpec::PeakEwma => BalancerParams::PeakEwma {
            decay: spec.ewma.decay.span(),
            default_rtt: spec.ewma.default_rtt.span(),
        },
        BalancerSpec::RingHash => BalancerParams::RingHash { minimum_ring_size: spec.minimum_ring_size },
    }
}

fn outlier(o: &OutlierSpec) -> OutlierParams {
    OutlierParams {
        consecutive_5xx: o.consecutive_5xx,
        enforcing_consecutive_5xx: o.enforcing_consecutive_5xx,
        interval: o.interval.span(),
        base_ejection_time: o.base_ejection_time.span(),
        max_ejection_time: o.max_ejection_time.span(),
        max_ejection_percent: o.max_ejection_percent,
        always_eject_one_host: o.always_eject_one_host,
        success_rate_minimum_hosts: o.success_rate_minimum_hosts,
        success_rate_request_volume: o.success_rate_request_volume,
        success_rate_stdev_factor: o.success_rate_stdev_factor,
        enforcing_success_rate: o.enforcing_success_rate,
    }
}
