//! `[server] replicas`, `balancer`, `outlier` and the strategy's `retry_other_replica` as the
//! model's replica set (DESIGN §3.3, §4).

use super::server::server;
use crate::engine::Span;
use crate::experiment::deploys::rolling_updates;
use crate::experiment::{
    AutoscaleSpec, BalancerSpec, OutlierSpec, PolicySpec, QueueServerSpec, ScalingPolicyKind,
    ScalingPolicySpec, SelectPolicySpec,
};
use crate::metrics::recovery::FaultSpan;
use crate::model::autoscaler::{AutoscaleParams, AutoscaleRule};
use crate::model::replicas::ReplicaParams;
use crate::policy::autoscale::{HpaParams, ScalingPolicy, ScalingRules, SelectPolicy};
use crate::policy::balancer::BalancerParams;
use crate::policy::balancer::slow_start::SlowStartParams;
use crate::policy::deploy::plan;
use crate::policy::kpa::KpaParams;
use crate::policy::outlier::OutlierParams;

/// The replicas after the first, or `None` for a single server (the model without replicas).
/// A deploy with `max_surge` adds that many slots after the replicas, vacant until it fills
/// them.
pub fn replicas(spec: &QueueServerSpec, policy: &PolicySpec) -> Option<ReplicaParams> {
    (spec.replicas > 1).then(|| {
        let deploys =
            plan(spec.replicas, &rolling_updates(spec)).expect("validation refuses overlapping deploys");
        ReplicaParams {
            others: (1..slots(spec, deploys.slots.len() as u32)).map(|r| server(spec, r)).collect(),
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
            autoscale: spec.autoscale.as_ref().map(|a| autoscale(a, spec.concurrency)),
        }
    })
}

/// Replica slots: the replicas, a deploy's surge slots after them, or the autoscaler's `max`.
pub fn slots(spec: &QueueServerSpec, deploy_slots: u32) -> u32 {
    deploy_slots.max(spec.replicas).max(spec.autoscale_max().unwrap_or(0))
}

fn autoscale(a: &AutoscaleSpec, workers: u32) -> AutoscaleParams {
    let h = match a {
        AutoscaleSpec::Hpa(h) => h,
        AutoscaleSpec::Kpa(k) => {
            let stable_window = k.stable_window.span();
            // Knative's panic window is the share of the stable window, in whole seconds as
            // its metric buckets are (at least one).
            let panic_s = (stable_window.as_secs_f64() * k.panic_window_percentage / 100.0).floor().max(1.0);
            return AutoscaleParams {
                rule: AutoscaleRule::Kpa(KpaParams {
                    target: k.target * k.target_utilization,
                    min: k.min,
                    max: k.max,
                    stable_window,
                    panic_window: Span::from_secs(panic_s as u64),
                    panic_threshold: k.panic_threshold_percentage / 100.0,
                    max_scale_up_rate: k.max_scale_up_rate,
                    max_scale_down_rate: k.max_scale_down_rate,
                    scale_down_delay: k.scale_down_delay.span(),
                }),
                startup: k.startup.span(),
                workers,
            };
        }
    };
    let rules =
        |stabilization: Span, policies: &[ScalingPolicySpec], select: SelectPolicySpec| ScalingRules {
            stabilization,
            policies: policies
                .iter()
                .map(|p| match p.kind {
                    ScalingPolicyKind::Pods => {
                        ScalingPolicy::Pods { value: p.value, period: p.period.span() }
                    }
                    ScalingPolicyKind::Percent => {
                        ScalingPolicy::Percent { value: p.value, period: p.period.span() }
                    }
                })
                .collect(),
            select: match select {
                SelectPolicySpec::Max => SelectPolicy::Max,
                SelectPolicySpec::Min => SelectPolicy::Min,
                SelectPolicySpec::Disabled => SelectPolicy::Disabled,
            },
        };
    AutoscaleParams {
        rule: AutoscaleRule::Hpa(HpaParams {
            // The nearest whole percent, as `averageUtilization` is an integer.
            target_percent: (h.target_utilization * 100.0).round().max(1.0) as u32,
            min: h.min,
            max: h.max,
            sync_period: h.sync_period.span(),
            tolerance: h.tolerance,
            scale_up: rules(h.stabilization_up.span(), &h.scale_up, h.select_up),
            scale_down: rules(h.stabilization_down.span(), &h.scale_down, h.select_down),
        }),
        startup: h.startup.span(),
        workers,
    }
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
