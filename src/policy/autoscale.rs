//! The Kubernetes Horizontal Pod Autoscaler's replica rule (`autoscale = { kind = "hpa" }`,
//! docs/overload-and-topology.md §1.10), step for step after
//! `pkg/controller/podautoscaler/replica_calculator.go` (`GetResourceReplicas`) and
//! `horizontal.go` (`reconcileAutoscaler`, `normalizeDesiredReplicasWithBehaviors`) with the
//! defaults of the `autoscaling/v2` API (`SetDefaults_HorizontalPodAutoscalerBehavior`):
//!
//! - at each sync (15 s), the utilisation is the ready replicas' busy time over their
//!   capacity, **truncated to a whole percent** (as `GetResourceUtilizationRatio` does in
//!   integer milli-units), and `ratio = utilisation / target`;
//! - within the tolerance (`|1 - ratio| <= 0.1`) nothing changes; otherwise
//!   `desired = ceil(ratio x ready)`. On a scale-up with replicas still starting (not ready),
//!   those count as 0 % and the ratio is recomputed over all of them; if that brings it within
//!   the tolerance or flips the direction, nothing changes;
//! - **stabilisation:** the count when the controller starts is its first recommendation
//!   (`recordInitialRecommendation`); the recommendation is held between the lowest recommendation of the
//!   last `stabilization_up` (0 s) and the highest of the last `stabilization_down` (300 s);
//! - **rate policies:** per direction, each policy bounds the change over its period counted
//!   from the replicas at the period's start (the scale events of the period undone): `Pods n`
//!   adds or removes at most n, `Percent p` multiplies by (1 + p / 100) rounded up (scale-up)
//!   or (1 - p / 100) truncated (scale-down); `select = "max"` (the default) takes the policy
//!   allowing the most change, `"min"` the least. Defaults: scale-up max(100 %, 4 pods) per
//!   15 s, scale-down 100 % per 15 s;
//! - the result is clamped to [`min`, `max`]; outside them at a sync, the replicas are set to
//!   the nearer bound at once.
//!
//! Missing metrics (a replica without a sample) do not arise here: every ready replica reports.

use crate::engine::{Instant, Span};

/// `--horizontal-pod-autoscaler-sync-period` (15 s).
pub const HPA_SYNC_PERIOD: Span = Span::from_secs(15);
/// `--horizontal-pod-autoscaler-tolerance` (0.1).
pub const HPA_TOLERANCE: f64 = 0.1;
/// `behavior.scaleDown.stabilizationWindowSeconds` (300 s).
pub const HPA_SCALE_DOWN_STABILIZATION: Span = Span::from_secs(300);
/// `minReplicas` (1).
pub const HPA_MIN_REPLICAS: u32 = 1;

/// One rate policy of a direction (`HPAScalingPolicy`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalingPolicy {
    /// At most this many replicas added or removed per period.
    Pods { value: u32, period: Span },
    /// At most this percentage of the replicas at the period's start added or removed.
    Percent { value: u32, period: Span },
}

impl ScalingPolicy {
    fn period(self) -> Span {
        match self {
            ScalingPolicy::Pods { period, .. } | ScalingPolicy::Percent { period, .. } => period,
        }
    }
}

/// Which policy of a direction wins (`selectPolicy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectPolicy {
    /// The policy that allows the most change (the default).
    Max,
    /// The policy that allows the least change.
    Min,
    /// No change in this direction at all.
    Disabled,
}

/// One direction's behaviour (`HPAScalingRules`).
#[derive(Clone, Debug, PartialEq)]
pub struct ScalingRules {
    pub stabilization: Span,
    pub policies: Vec<ScalingPolicy>,
    pub select: SelectPolicy,
}

/// An HPA's spec.
#[derive(Clone, Debug, PartialEq)]
pub struct HpaParams {
    /// Target utilisation, in whole percent of a replica's capacity (`averageUtilization`).
    pub target_percent: u32,
    pub min: u32,
    pub max: u32,
    /// How often the controller syncs (`--horizontal-pod-autoscaler-sync-period`, 15 s).
    pub sync_period: Span,
    /// `--horizontal-pod-autoscaler-tolerance` (0.1).
    pub tolerance: f64,
    pub scale_up: ScalingRules,
    pub scale_down: ScalingRules,
}

impl HpaParams {
    /// The API's default scale-up rules: no stabilisation, max(100 %, 4 pods) per 15 s.
    pub fn default_scale_up() -> ScalingRules {
        ScalingRules {
            stabilization: Span::ZERO,
            policies: vec![
                ScalingPolicy::Percent { value: 100, period: Span::from_secs(15) },
                ScalingPolicy::Pods { value: 4, period: Span::from_secs(15) },
            ],
            select: SelectPolicy::Max,
        }
    }

    /// The API's default scale-down rules: 300 s stabilisation, 100 % per 15 s.
    pub fn default_scale_down() -> ScalingRules {
        ScalingRules {
            stabilization: HPA_SCALE_DOWN_STABILIZATION,
            policies: vec![ScalingPolicy::Percent { value: 100, period: Span::from_secs(15) }],
            select: SelectPolicy::Max,
        }
    }
}

/// What the controller sees at a sync.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Observation {
    /// The replicas asked for (ready or starting): the scale's `spec.replicas`.
    pub current: u32,
    /// Replicas ready and reporting.
    pub ready: u32,
    /// The ready replicas' utilisation over the last period, as a fraction of their capacity.
    pub utilization: f64,
}

/// The controller's memory across syncs: recent recommendations and scale events.
#[derive(Clone, Debug)]
pub struct Hpa {
    params: HpaParams,
    /// (when, unstabilised recommendation).
    recommendations: Vec<(Instant, u32)>,
    /// (when, replicas added) and (when, replicas removed).
    up_events: Vec<(Instant, u32)>,
    down_events: Vec<(Instant, u32)>,
}

impl Hpa {
    pub fn new(params: HpaParams) -> Hpa {
        Hpa { params, recommendations: Vec::new(), up_events: Vec::new(), down_events: Vec::new() }
    }

    pub fn params(&self) -> &HpaParams {
        &self.params
    }

    /// The controller first sees the scale at `now` with `current` replicas: that count is
    /// its first recommendation (`recordInitialRecommendation`), so that a scale-down waits
    /// the stabilisation window from the controller's start.
    pub fn created(&mut self, now: Instant, current: u32) {
        if self.recommendations.is_empty() {
            self.recommendations.push((now, current));
        }
    }

    /// One sync at `now`: the replicas to run from now on (`reconcileAutoscaler`).
    pub fn sync(&mut self, now: Instant, seen: Observation) -> u32 {
        let p = &self.params;
        let desired = if seen.current > p.max {
            p.max
        } else if seen.current < p.min {
            p.min
        } else {
            let metric = metric_replicas(seen, p.target_percent, p.tolerance);
            let stabilized = self.stabilize(now, seen.current, metric);
            self.limit_rate(now, seen.current, stabilized)
        };
        if desired > seen.current {
            self.up_events.push((now, desired - seen.current));
        } else if desired < seen.current {
            self.down_events.push((now, seen.current - desired));
        }
        desired
    }

    /// `stabilizeRecommendationWithBehaviors`: hold `current` between the lowest
    /// recommendation of the scale-up window and the highest of the scale-down window (this
    /// one included), then remember this one.
    fn stabilize(&mut self, now: Instant, current: u32, desired: u32) -> u32 {
        let (up, down) = (self.params.scale_up.stabilization, self.params.scale_down.stabilization);
        let (mut low, mut high) = (desired, desired);
        for &(at, rec) in &self.recommendations {
            if after(at, now, up) {
                low = low.min(rec);
            }
            if after(at, now, down) {
                high = high.max(rec);
            }
        }
        self.recommendations.retain(|&(at, _)| after(at, now, up) || after(at, now, down));
        self.recommendations.push((now, desired));
        current.max(low).min(high)
    }

    /// `convertDesiredReplicasWithBehaviorRate`: the rate policies, then [min, max].
    fn limit_rate(&mut self, now: Instant, current: u32, desired: u32) -> u32 {
        let p = &self.params;
        if desired > current {
            let limit = self.scale_up_limit(now, current).max(current);
            desired.min(limit.min(p.max))
        } else if desired < current {
            let limit = self.scale_down_limit(now, current).min(current);
            desired.max(limit.max(p.min))
        } else {
            desired
        }
    }

    /// `calculateScaleUpLimitWithScalingRules`.
    fn scale_up_limit(&self, now: Instant, current: u32) -> u32 {
        let rules = &self.params.scale_up;
        let proposals = rules.policies.iter().map(|&policy| {
            let start = self.period_start(now, current, policy.period());
            match policy {
                ScalingPolicy::Pods { value, .. } => start + i64::from(value),
                ScalingPolicy::Percent { value, .. } => {
                    (start as f64 * (1.0 + f64::from(value) / 100.0)).ceil() as i64
                }
            }
        });
        let chosen = match rules.select {
            SelectPolicy::Disabled => return current,
            SelectPolicy::Max => proposals.max(),
            SelectPolicy::Min => proposals.min(),
        };
        chosen.map_or(current, |r| r.clamp(0, i64::from(u32::MAX)) as u32)
    }

    /// `calculateScaleDownLimitWithBehaviors`.
    fn scale_down_limit(&self, now: Instant, current: u32) -> u32 {
        let rules = &self.params.scale_down;
        let proposals = rules.policies.iter().map(|&policy| {
            let start = self.period_start(now, current, policy.period());
            match policy {
                ScalingPolicy::Pods { value, .. } => start - i64::from(value),
                ScalingPolicy::Percent { value, .. } => {
                    (start as f64 * (1.0 - f64::from(value) / 100.0)) as i64
                }
            }
        });
        // Scaling down, the most change is the lowest count.
        let chosen = match rules.select {
            SelectPolicy::Disabled => return current,
            SelectPolicy::Max => proposals.min(),
            SelectPolicy::Min => proposals.max(),
        };
        chosen.map_or(current, |r| r.clamp(0, i64::from(u32::MAX)) as u32)
    }

    /// The replicas at the start of a policy's period: the current ones with the period's
    /// scale events undone (`getReplicasChangePerPeriod`).
    fn period_start(&self, now: Instant, current: u32, period: Span) -> i64 {
        let sum = |events: &[(Instant, u32)]| -> i64 {
            events.iter().filter(|&&(at, _)| after(at, now, period)).map(|&(_, n)| i64::from(n)).sum()
        };
        i64::from(current) - sum(&self.up_events) + sum(&self.down_events)
    }
}

/// Whether `at` is strictly after `now - window` (Go's `timestamp.After(cutoff)`).
fn after(at: Instant, now: Instant, window: Span) -> bool {
    // at > now - window, written so that it holds before time `window` too.
    at.as_ns().saturating_add(window.as_ns()) > now.as_ns()
}

/// `GetResourceReplicas` with every ready replica reporting: the replicas the metric asks for.
pub fn metric_replicas(seen: Observation, target_percent: u32, tolerance: f64) -> u32 {
    let Observation { current, ready, utilization } = seen;
    if ready == 0 {
        // No metrics for any ready pod: the controller does not scale.
        return current;
    }
    // Integer percent, truncated, as the metrics client computes it (the epsilon keeps a
    // value such as 0.83 x 100 = 82.99999999999999 at 83).
    let percent = (utilization * 100.0 + 1e-9).floor().max(0.0);
    let ratio = percent / f64::from(target_percent);
    let unready = current.saturating_sub(ready);
    if !(unready > 0 && ratio > 1.0) {
        if (1.0 - ratio).abs() <= tolerance {
            return current;
        }
        return (ratio * f64::from(ready)).ceil() as u32;
    }
    // Scaling up with replicas still starting: they count as 0 %.
    let all = ready + unready;
    let new_percent = (utilization * 100.0 * f64::from(ready) / f64::from(all) + 1e-9).floor().max(0.0);
    let new_ratio = new_percent / f64::from(target_percent);
    if (1.0 - new_ratio).abs() <= tolerance || new_ratio < 1.0 {
        return current;
    }
    let new = (new_ratio * f64::from(all)).ceil() as u32;
    if new < current { current } else { new }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults(min: u32, max: u32) -> HpaParams {
        HpaParams {
            target_percent: 75,
            min,
            max,
            sync_period: Span::from_secs(15),
            tolerance: 0.1,
            scale_up: HpaParams::default_scale_up(),
            scale_down: HpaParams::default_scale_down(),
        }
    }

    fn at(s: u64) -> Instant {
        Instant::from_secs(s)
    }

    fn seen(current: u32, utilization: f64) -> Observation {
        Observation { current, ready: current, utilization }
    }

    /// The Kubernetes documentation's example: 50 replicas at 90 % against 75 % -> 60.
    #[test]
    fn fifty_replicas_at_ninety_percent_against_seventy_five_become_sixty() {
        let mut hpa = Hpa::new(defaults(1, 100));
        assert_eq!(hpa.sync(at(15), seen(50, 0.90)), 60);
    }

    #[test]
    fn within_the_tolerance_nothing_changes() {
        // 78.75 % is ratio 1.05; 82 % is 1.093; 83 % is 1.107 (outside).
        let mut hpa = Hpa::new(defaults(1, 100));
        assert_eq!(hpa.sync(at(15), seen(50, 0.7875)), 50);
        assert_eq!(hpa.sync(at(30), seen(50, 0.82)), 50);
        assert_eq!(hpa.sync(at(45), seen(50, 0.83)), 56, "ceil(83 / 75 x 50) = ceil(55.33)");
    }

    #[test]
    fn utilization_is_truncated_to_a_whole_percent() {
        // 82.99 % reads 82 %: within the tolerance.
        let mut hpa = Hpa::new(defaults(1, 100));
        assert_eq!(hpa.sync(at(15), seen(50, 0.8299)), 50);
    }

    #[test]
    fn scale_down_waits_for_the_stabilization_window() {
        let mut hpa = Hpa::new(defaults(1, 100));
        // Busy at first: the recommendation of 50 stays in the window for 300 s.
        assert_eq!(hpa.sync(at(0), seen(50, 0.75)), 50);
        let mut t = 15;
        while t < 300 {
            assert_eq!(hpa.sync(at(t), seen(50, 0.30)), 50, "held at {t} s");
            t += 15;
        }
        // At 300 s the recommendation of 0 s has left the window (strictly after the cutoff):
        // the highest left is ceil(30 / 75 x 50) = 20.
        assert_eq!(hpa.sync(at(300), seen(50, 0.30)), 20);
    }

    /// `recordInitialRecommendation`: the count when the controller started holds a
    /// scale-down for the window, counted from then.
    #[test]
    fn the_initial_count_is_the_first_recommendation() {
        let mut hpa = Hpa::new(defaults(1, 100));
        hpa.created(at(0), 50);
        assert_eq!(hpa.sync(at(15), seen(50, 0.30)), 50);
        assert_eq!(hpa.sync(at(285), seen(50, 0.30)), 50);
        assert_eq!(hpa.sync(at(300), seen(50, 0.30)), 20);
    }

    #[test]
    fn scale_up_is_limited_to_double_or_four_pods_per_period() {
        // 2 replicas at 100 % against 10 % want 20: max(2 x 2, 2 + 4) = 6.
        let mut p = defaults(1, 1000);
        p.target_percent = 10;
        let mut hpa = Hpa::new(p);
        assert_eq!(hpa.sync(at(15), seen(2, 1.0)), 6);
        // 14 s later the period still counts the 4 added: from 2 again, at most 6.
        assert_eq!(hpa.sync(at(29), seen(6, 1.0)), 6);
        // At 30 s the event of 15 s is out of the period (strictly after 15 s): from 6, 12.
        assert_eq!(hpa.sync(at(30), seen(6, 1.0)), 12);
    }

    #[test]
    fn starting_replicas_count_as_idle_on_a_scale_up() {
        // 10 asked, 5 ready at 90 % against 75 %: over all 10 that is 45 %, a scale-down,
        // so the direction flips and nothing changes.
        assert_eq!(metric_replicas(Observation { current: 10, ready: 5, utilization: 0.90 }, 75, 0.1), 10);
        // 10 asked, 8 ready at 100 %: over all 10, 80 % (ratio 1.067, within the tolerance).
        assert_eq!(metric_replicas(Observation { current: 10, ready: 8, utilization: 1.0 }, 75, 0.1), 10);
        // 10 asked, 9 ready at 100 %: 90 % over 10 -> ceil(1.2 x 10) = 12.
        assert_eq!(metric_replicas(Observation { current: 10, ready: 9, utilization: 1.0 }, 75, 0.1), 12);
    }

    #[test]
    fn min_and_max_bound_the_result_and_reset_a_count_outside_them() {
        let mut hpa = Hpa::new(defaults(2, 10));
        assert_eq!(hpa.sync(at(15), seen(8, 1.0)), 10, "ceil(100 / 75 x 8) = 11, max 10");
        assert_eq!(hpa.sync(at(30), seen(12, 0.5)), 10, "above max: set to max at once");
        let mut hpa = Hpa::new(defaults(2, 10));
        assert_eq!(hpa.sync(at(15), seen(1, 0.5)), 2, "below min: set to min at once");
    }

    #[test]
    fn a_disabled_direction_never_moves() {
        let mut p = defaults(1, 100);
        p.scale_down.select = SelectPolicy::Disabled;
        p.scale_down.stabilization = Span::ZERO;
        let mut hpa = Hpa::new(p);
        assert_eq!(hpa.sync(at(15), seen(50, 0.10)), 50);
        assert_eq!(hpa.sync(at(30), seen(50, 1.0)), 67, "ceil(100 / 75 x 50) = 67: up still works");
    }
}
