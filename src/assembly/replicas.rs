//! `[server] replicas`, `balancer`, `outlier` and the strategy's `retry_other_replica` as the
//! model's replica set (DESIGN §3.3, §4).

use super::server::server;
use crate::experiment::deploys::rolling_updates;
use crate::experiment::{BalancerSpec, OutlierSpec, PolicySpec, QueueServerSpec};
use crate::metrics::recovery::FaultSpan;
use crate::model::replicas::ReplicaParams;
use crate::policy::balancer::BalancerParams;
use crate::policy::balancer::slow_start::SlowStartParams;
use crate::policy::deploy::plan;
use crate::policy::outlier::OutlierParams;

/// The replicas after the first, or `None` for a single server (the model without replicas).
/// A deploy with `max_surge` adds that many slots after the replicas, vacant until it fills
/// them.
pub fn replicas(spec: &QueueServerSpec, policy: &PolicySpec) -> Option<ReplicaParams> {
    (spec.replicas > 1).then(|| {
        let deploys =
            plan(spec.replicas, &rolling_updates(spec)).expect("validation refuses overlapping deploys");
        ReplicaParams {
            others: (1..deploys.slots.len().max(spec.replicas as usize) as u32)
                .map(|r| server(spec, r))
                .collect(),
            balancer: balancer(spec),
            outlier: spec.outlier.as_ref().map(outlier),
            panic_threshold_percent: spec.panic_threshold,
            reselects: policy.retry_other_replica.then_some(policy.host_selection_retry_max_attempts),
            slow_start: spec.slow_start.as_ref().map(|s| SlowStartParams {
                window: s.window.span(),
                aggression: s.aggression,
                min_weight: s.min_weight_percent / 100.0,
            }),
            deploy_spans: deploys
                .spans
                .iter()
                .map(|&(first_start, last_end)| FaultSpan { first_start, last_end })
                .collect(),
            deploys: deploys.slots,
            replicas: spec.replicas,
        }
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
