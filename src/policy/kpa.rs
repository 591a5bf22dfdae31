//! Knative's Pod Autoscaler (KPA) decision (`autoscale = { kind = "kpa" }`,
//! docs/overload-and-topology.md §1.10), step for step after knative/serving
//! `pkg/autoscaler/scaling/autoscaler.go` (`Scale`) with the defaults of its `config-autoscaler`
//! ConfigMap (knative.dev/docs/serving/autoscaling):
//!
//! - every tick (2 s, the decider's `tickInterval`), the *stable* and the *panic* concurrency
//!   are the revision's concurrency (requests in its pods, queued at the queue-proxy
//!   included) averaged over the last `stable_window` (60 s) and the last `panic_window`
//!   (10 % of it, 6 s); the pods they ask for are `ceil(concurrency / target)`, `target`
//!   being the per-pod concurrency target (100) times the target utilisation (70 %);
//! - both are held in `[floor(ready / max_scale_down_rate), ceil(max_scale_up_rate x
//!   ready)]` (rates 2 and 1000), with `ready` at least 1;
//! - **panic:** when the panic count is at least `panic_threshold` (200 %) times the ready
//!   pods, the autoscaler panics (again: the panic is extended); it stops panicking at the
//!   first tick without that more than one stable window after the last. While panicking it
//!   takes the larger of the two counts and never goes down (the most it asked for during the
//!   panic). It starts panicking when it is created with more than one pod (a new autoscaler
//!   has no history: it keeps the scale until it has a stable window of data);
//! - **scale-down delay** (`scale_down_delay`, 0 s): the count is the largest asked for in
//!   the last `scale_down_delay`;
//! - the result is clamped to [`min`, `max`] (`min-scale`, `max-scale`; retrysim does not
//!   scale to zero: `min` is at least 1).

use crate::engine::{Instant, Span};
use std::collections::VecDeque;

/// The decider's tick (`tickInterval` in `pkg/autoscaler/scaling/multiscaler.go`: 2 s; not
/// configurable in Knative).
pub const KPA_TICK: Span = Span::from_secs(2);
/// `container-concurrency-target-default` (100 requests per pod).
pub const KPA_TARGET: f64 = 100.0;
/// `container-concurrency-target-percentage` (70 %).
pub const KPA_TARGET_UTILIZATION: f64 = 0.7;
/// `stable-window` (60 s).
pub const KPA_STABLE_WINDOW: Span = Span::from_secs(60);
/// `panic-window-percentage` (10 % of the stable window).
pub const KPA_PANIC_WINDOW_PERCENT: f64 = 10.0;
/// `panic-threshold-percentage` (200 %).
pub const KPA_PANIC_THRESHOLD_PERCENT: f64 = 200.0;
/// `max-scale-up-rate` (1000).
pub const KPA_MAX_SCALE_UP_RATE: f64 = 1000.0;
/// `max-scale-down-rate` (2).
pub const KPA_MAX_SCALE_DOWN_RATE: f64 = 2.0;

/// A KPA's spec, in model units.
#[derive(Clone, Debug, PartialEq)]
pub struct KpaParams {
    /// Concurrency per pod the autoscaler aims at: the per-pod target times the target
    /// utilisation (Knative's `TargetValue`).
    pub target: f64,
    pub min: u32,
    pub max: u32,
    pub stable_window: Span,
    pub panic_window: Span,
    /// The panic count over the ready pods that starts a panic (2.0 for 200 %).
    pub panic_threshold: f64,
    pub max_scale_up_rate: f64,
    pub max_scale_down_rate: f64,
    pub scale_down_delay: Span,
}

/// What the decider sees at a tick.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KpaObservation {
    /// Pods ready (in the endpoints).
    pub ready: u32,
    /// The revision's concurrency averaged over the stable and the panic window.
    pub stable: f64,
    pub panic: f64,
}

/// The decider's memory across ticks.
#[derive(Clone, Debug)]
pub struct Kpa {
    params: KpaParams,
    /// When it last saw the panic threshold crossed (`panicTime`), while it panics.
    panicking_since: Option<Instant>,
    /// The most pods asked for during this panic (`maxPanicPods`).
    max_panic_pods: u32,
    /// The counts of the last `scale_down_delay` (Knative's `max.TimeWindow`).
    recent: VecDeque<(Instant, u32)>,
}

impl Kpa {
    /// A decider created at `now` over `ready` pods: it panics from the start with more than
    /// one (`newAutoscaler`).
    pub fn new(params: KpaParams, now: Instant, ready: u32) -> Kpa {
        Kpa {
            params,
            panicking_since: (ready > 1).then_some(now),
            max_panic_pods: ready,
            recent: VecDeque::new(),
        }
    }

    pub fn params(&self) -> &KpaParams {
        &self.params
    }

    /// Whether it is panicking.
    pub fn panicking(&self) -> bool {
        self.panicking_since.is_some()
    }

    /// One tick at `now`: the pods to run from now on (`Scale`, then the bounds).
    pub fn decide(&mut self, now: Instant, seen: KpaObservation) -> u32 {
        let p = &self.params;
        let ready = f64::from(seen.ready.max(1));
        let max_up = (p.max_scale_up_rate * ready).ceil();
        let max_down = (ready / p.max_scale_down_rate).floor();
        let stable_pods = (seen.stable / p.target).ceil();
        let panic_pods = (seen.panic / p.target).ceil();
        let bounded = |pods: f64| pods.max(max_down).min(max_up) as u32;
        let (desired_stable, desired_panic) = (bounded(stable_pods), bounded(panic_pods));

        let over = panic_pods / ready >= p.panic_threshold;
        if over {
            self.panicking_since = Some(now);
        } else if self.panicking_since.is_some_and(|t| t + p.stable_window < now) {
            self.panicking_since = None;
            self.max_panic_pods = 0;
        }

        let mut desired = desired_stable;
        if self.panicking_since.is_some() {
            desired = desired.max(desired_panic);
            // No scale-down while panicking: only increases apply.
            self.max_panic_pods = self.max_panic_pods.max(desired);
            desired = self.max_panic_pods;
        }

        if p.scale_down_delay > Span::ZERO {
            let window = p.scale_down_delay;
            while self.recent.front().is_some_and(|&(at, _)| at + window <= now) {
                self.recent.pop_front();
            }
            self.recent.push_back((now, desired));
            desired = self.recent.iter().map(|&(_, n)| n).max().unwrap_or(desired);
        }
        desired.clamp(p.min, p.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults(max: u32) -> KpaParams {
        KpaParams {
            target: KPA_TARGET * KPA_TARGET_UTILIZATION,
            min: 1,
            max,
            stable_window: KPA_STABLE_WINDOW,
            panic_window: Span::from_secs(6),
            panic_threshold: KPA_PANIC_THRESHOLD_PERCENT / 100.0,
            max_scale_up_rate: KPA_MAX_SCALE_UP_RATE,
            max_scale_down_rate: KPA_MAX_SCALE_DOWN_RATE,
            scale_down_delay: Span::ZERO,
        }
    }

    fn at(s: u64) -> Instant {
        Instant::from_secs(s)
    }

    /// The reference's vector: container concurrency 10 at 70 %, 100 concurrent requests:
    /// ceil(100 / 7) = 15 pods.
    #[test]
    fn a_hundred_requests_at_a_target_of_seven_ask_for_fifteen_pods() {
        let mut p = defaults(100);
        p.target = 10.0 * 0.7;
        let mut kpa = Kpa::new(p, at(0), 1);
        let seen = KpaObservation { ready: 10, stable: 100.0, panic: 100.0 };
        assert_eq!(kpa.decide(at(2), seen), 15);
        assert!(!kpa.panicking(), "15 / 10 pods is below the 200 % threshold");
    }

    /// A burst the 6 s window sees at twice the ready pods panics; while panicking the count
    /// never falls, and the panic ends at the first tick more than a stable window after the
    /// threshold was last crossed.
    #[test]
    fn a_panic_holds_the_scale_for_a_stable_window() {
        let mut kpa = Kpa::new(defaults(100), at(0), 1);
        let calm = KpaObservation { ready: 2, stable: 100.0, panic: 100.0 };
        assert_eq!(kpa.decide(at(2), calm), 2);
        // 700 concurrent in the panic window: 10 pods, 5x the 2 ready.
        let burst = KpaObservation { ready: 2, stable: 150.0, panic: 700.0 };
        assert_eq!(kpa.decide(at(4), burst), 10);
        assert!(kpa.panicking());
        // The burst is gone from the panic window: no scale-down while panicking.
        let after = KpaObservation { ready: 10, stable: 150.0, panic: 70.0 };
        assert_eq!(kpa.decide(at(6), after), 10);
        assert_eq!(kpa.decide(at(64), after), 10, "64 s is not more than 60 s after 4 s");
        // 66 s is: the stable count (ceil(150 / 70) = 3) applies, at most halving per tick.
        assert_eq!(kpa.decide(at(66), after), 5);
        assert!(!kpa.panicking());
    }

    /// Created over several pods it panics at once and keeps them until it has data.
    #[test]
    fn a_new_autoscaler_over_several_pods_keeps_them_for_a_stable_window() {
        let mut kpa = Kpa::new(defaults(100), at(0), 8);
        let idle = KpaObservation { ready: 8, stable: 0.0, panic: 0.0 };
        assert_eq!(kpa.decide(at(2), idle), 8);
        assert_eq!(kpa.decide(at(60), idle), 8);
        // Out of panic: zero concurrency asks for floor(8 / 2) = 4 at most per tick, then min.
        assert_eq!(kpa.decide(at(62), idle), 4);
        let idle4 = KpaObservation { ready: 4, ..idle };
        assert_eq!(kpa.decide(at(64), idle4), 2);
        let idle2 = KpaObservation { ready: 2, ..idle };
        assert_eq!(kpa.decide(at(66), idle2), 1);
    }

    /// Scale-up is bounded by `max_scale_up_rate x ready` and by `max`.
    #[test]
    fn the_rates_and_the_bounds_hold() {
        let mut p = defaults(50);
        p.max_scale_up_rate = 2.0;
        let mut kpa = Kpa::new(p, at(0), 1);
        let seen = KpaObservation { ready: 3, stable: 7000.0, panic: 7000.0 };
        assert_eq!(kpa.decide(at(2), seen), 6, "ceil(2 x 3)");
        let seen = KpaObservation { ready: 40, ..seen };
        assert_eq!(kpa.decide(at(4), seen), 50, "max");
    }

    /// A scale-down delay keeps the largest count of its window.
    #[test]
    fn a_scale_down_delay_keeps_the_largest_recent_count() {
        let mut p = defaults(100);
        p.scale_down_delay = Span::from_secs(10);
        let mut kpa = Kpa::new(p, at(0), 1);
        let busy = KpaObservation { ready: 4, stable: 280.0, panic: 280.0 };
        assert_eq!(kpa.decide(at(2), busy), 4);
        let quiet = KpaObservation { ready: 4, stable: 70.0, panic: 70.0 };
        assert_eq!(kpa.decide(at(4), quiet), 4, "4 was asked for 2 s ago");
        assert_eq!(kpa.decide(at(10), quiet), 4);
        assert_eq!(kpa.decide(at(12), quiet), 2, "the 4 of t = 2 s left the 10 s window");
    }
}
