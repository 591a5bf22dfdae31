//! `[server] autoscale`: the Kubernetes HPA ([`crate::policy::autoscale`]) or Knative's KPA
//! ([`crate::policy::kpa`]) driving the replica set (DESIGN §3.3). This file keeps what the
//! controller measures and which replica slot each of its decisions moves; the model carries
//! the moves out.
//!
//! - **What it measures.** At a sync, the *ready* replicas are those up (serving) throughout
//!   the sync period just ended; their utilisation is their busy workers (requests in service)
//!   integrated over the period, over their workers times the period: the average busy share
//!   of their workers, as the HPA's CPU metric is a pod's usage over its request averaged over
//!   the ready pods. A replica up for part of the period only (it just started, or a `restart`
//!   fault had it down) is not ready yet: Kubernetes ignores a pod's CPU sample in its first
//!   minutes until a whole metric window has passed since it became ready, and counts it as
//!   0 % on a scale-up. A replica starting, draining or vacant is not ready either.
//! - **What the KPA measures.** Its metric is concurrency: the requests in the replicas up
//!   (in service and queued: Knative's queue-proxy counts the requests in its pod, those it
//!   queues included), integrated over each whole second (the queue-proxy reports a
//!   time-weighted average per second) and averaged over the last `stable_window` and
//!   `panic_window` seconds (fewer at the start of the run, as Knative's buckets average over
//!   the time they hold). Its ready pods are the replicas up at the tick.
//! - **Slots.** The set has `max` slots, allocated once; the first `replicas` are up at the
//!   start. A scale-up starts a replica in the lowest free slot that holds no work (else the
//!   lowest free slot: what a draining replica there still holds is dropped, as a pod killed
//!   before it has drained); it joins the balancer `startup` later (with slow start, if set).
//! - **Scale-down** removes starting replicas first, then ready ones, the highest slot first
//!   (the ReplicaSet controller deletes not-ready pods before ready ones, and newer before
//!   older). A removed ready replica leaves the balancer at once and drains: it serves what it
//!   has queued and in service to the end and takes nothing new (a pod sent SIGTERM after it
//!   left the endpoints, whose grace period outlasts its queue).

use crate::engine::{Instant, NS_PER_S, Span};
use crate::policy::autoscale::{Hpa, HpaParams, Observation};
use crate::policy::kpa::{KPA_TICK, Kpa, KpaObservation, KpaParams};
use std::collections::VecDeque;

/// Which autoscaler, with its spec.
#[derive(Clone, Debug, PartialEq)]
pub enum AutoscaleRule {
    Hpa(HpaParams),
    Kpa(KpaParams),
}

/// The autoscaler's parameters in model units.
#[derive(Clone, Debug)]
pub struct AutoscaleParams {
    pub rule: AutoscaleRule,
    /// From a replica's creation until the balancer may pick it.
    pub startup: Span,
    /// Workers per replica (`concurrency`).
    pub workers: u32,
}

/// What a slot holds, as the autoscaler sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// No replica, or one draining.
    Off,
    /// A replica starting, ready at its `Ready` event of this generation.
    Starting,
    /// A replica the balancer may pick (unless a `restart` fault has it down).
    Ready,
}

/// One move a sync decided, for the model to carry out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleStep {
    /// Start a replica in `slot` (dropping what a draining replica there still holds); it is
    /// ready at `ready_at` if its generation is still `generation` then.
    Start { slot: u32, generation: u32, ready_at: Instant },
    /// Stop the replica starting in `slot` (it never served).
    Stop { slot: u32 },
    /// The ready replica in `slot` leaves the balancer and drains.
    Drain { slot: u32 },
}

/// Per bucket of timeseries.csv: the desired replicas and the ready ones at the bucket's end,
/// and the integrals of the utilisation's numerator and denominator over the bucket.
#[derive(Clone, Debug)]
struct Columns {
    width: Span,
    desired: Vec<Option<u32>>,
    ready: Vec<Option<u32>>,
    busy: Vec<f64>,
    capacity: Vec<f64>,
}

/// The controller and its memory.
#[derive(Clone, Debug)]
enum Controller {
    Hpa(Hpa),
    Kpa(Kpa, Concurrency),
}

/// The KPA's metric: the concurrency of the replicas up, integrated per whole second.
#[derive(Clone, Debug)]
struct Concurrency {
    /// Per slot: requests in service and queued; their sum over the slots up.
    per_slot: Vec<u32>,
    up_sum: u64,
    /// The integrals (requests x ns) of the last whole seconds, newest last, at most
    /// `keep` of them, and of the second under way.
    seconds: VecDeque<f64>,
    keep: usize,
    current: f64,
    /// The second under way starts here; the integral is brought up to date to `since`.
    second_start: Instant,
    since: Instant,
}

impl Concurrency {
    fn new(slots: usize, stable_window: Span) -> Concurrency {
        Concurrency {
            per_slot: vec![0; slots],
            up_sum: 0,
            seconds: VecDeque::new(),
            keep: stable_window.as_ns().div_ceil(1_000_000_000).max(1) as usize,
            current: 0.0,
            second_start: Instant::ZERO,
            since: Instant::ZERO,
        }
    }

    /// Integrates up to `now`, closing the seconds it passes.
    fn advance(&mut self, now: Instant) {
        let second = Span::from_secs(1);
        while self.second_start + second <= now {
            let end = self.second_start + second;
            self.current += self.up_sum as f64 * end.since(self.since).as_ns_f64();
            self.seconds.push_back(self.current);
            if self.seconds.len() > self.keep {
                self.seconds.pop_front();
            }
            self.current = 0.0;
            self.second_start = end;
            self.since = end;
        }
        if now > self.since {
            self.current += self.up_sum as f64 * now.since(self.since).as_ns_f64();
            self.since = now;
        }
    }

    /// The average concurrency over the last `window` of whole seconds (those there are).
    fn average(&self, window: Span) -> f64 {
        let n = (window.as_ns().div_ceil(1_000_000_000).max(1) as usize).min(self.seconds.len());
        if n == 0 {
            return 0.0;
        }
        let sum: f64 = self.seconds.iter().rev().take(n).sum();
        sum / (n as f64 * NS_PER_S)
    }
}

/// The controller and what it measures.
#[derive(Clone, Debug)]
pub struct Autoscaler {
    controller: Controller,
    startup: Span,
    workers: u32,
    phase: Vec<Phase>,
    generation: Vec<u32>,
    /// Per slot: up (serving) and its requests in service; their sums over the slots up.
    up: Vec<bool>,
    busy: Vec<u32>,
    busy_up: u32,
    up_count: u32,
    /// Per slot: since when it is up, its busy workers x ns since the last sync, and when
    /// that was brought up to date.
    up_since: Vec<Option<Instant>>,
    busy_ns: Vec<f64>,
    counted: Vec<Instant>,
    last_sync: Instant,
    /// The columns' integrals are brought up to date to here.
    since: Instant,
    columns: Option<Columns>,
}

impl Autoscaler {
    /// `slots` slots, the first `replicas` up.
    pub fn new(params: AutoscaleParams, slots: u32, replicas: u32) -> Autoscaler {
        let n = slots as usize;
        let controller = match params.rule {
            AutoscaleRule::Hpa(p) => {
                let mut hpa = Hpa::new(p);
                hpa.created(Instant::ZERO, replicas);
                Controller::Hpa(hpa)
            }
            AutoscaleRule::Kpa(p) => {
                let concurrency = Concurrency::new(n, p.stable_window);
                Controller::Kpa(Kpa::new(p, Instant::ZERO, replicas), concurrency)
            }
        };
        Autoscaler {
            controller,
            startup: params.startup,
            workers: params.workers,
            phase: (0..slots).map(|r| if r < replicas { Phase::Ready } else { Phase::Off }).collect(),
            generation: vec![0; n],
            up: (0..slots).map(|r| r < replicas).collect(),
            busy: vec![0; n],
            busy_up: 0,
            up_count: replicas,
            up_since: (0..slots).map(|r| (r < replicas).then_some(Instant::ZERO)).collect(),
            busy_ns: vec![0.0; n],
            counted: vec![Instant::ZERO; n],
            last_sync: Instant::ZERO,
            since: Instant::ZERO,
            columns: None,
        }
    }

    /// The time between syncs: the HPA's `sync_period`, the KPA's tick.
    pub fn sync_period(&self) -> Span {
        match &self.controller {
            Controller::Hpa(hpa) => hpa.params().sync_period,
            Controller::Kpa(..) => KPA_TICK,
        }
    }

    /// Keeps the per-bucket columns of timeseries.csv: `buckets` buckets of `width`.
    pub fn track(&mut self, width: Span, buckets: usize) {
        let mut desired = vec![None; buckets];
        let mut ready = vec![None; buckets];
        if buckets > 0 {
            desired[0] = Some(self.current());
            ready[0] = Some(self.up_count);
        }
        self.columns =
            Some(Columns { width, desired, ready, busy: vec![0.0; buckets], capacity: vec![0.0; buckets] });
    }

    /// The replicas asked for: starting or ready (the scale's `spec.replicas`).
    fn current(&self) -> u32 {
        self.phase.iter().filter(|p| **p != Phase::Off).count() as u32
    }

    /// Slot `r`'s busy time up to `now`.
    fn count(&mut self, r: usize, now: Instant) {
        self.busy_ns[r] += f64::from(self.busy[r]) * now.since(self.counted[r]).as_ns_f64();
        self.counted[r] = now;
    }

    /// Integrates the columns' utilisation up to `now`.
    fn advance(&mut self, now: Instant) {
        if now <= self.since {
            return;
        }
        let busy = f64::from(self.busy_up);
        let capacity = f64::from(self.workers) * f64::from(self.up_count);
        if let Some(c) = &mut self.columns
            && (busy > 0.0 || capacity > 0.0)
        {
            // Split over the buckets the interval covers.
            let mut from = self.since;
            let mut b = from.bucket(c.width);
            while from < now && b < c.busy.len() {
                let end = (Instant::ZERO + c.width * (b as u64 + 1)).min(now);
                let dt = end.since(from).as_ns_f64();
                c.busy[b] += busy * dt;
                c.capacity[b] += capacity * dt;
                from = end;
                b += 1;
            }
        }
        self.since = now;
    }

    /// Slot `r` has `busy` requests in service and `queued` waiting from `now`.
    pub fn levels(&mut self, r: u32, busy: u32, queued: usize, now: Instant) {
        let i = r as usize;
        if let Controller::Kpa(_, c) = &mut self.controller {
            let inflight = busy.saturating_add(u32::try_from(queued).unwrap_or(u32::MAX));
            if c.per_slot[i] != inflight {
                c.advance(now);
                if self.up[i] {
                    c.up_sum = c.up_sum - u64::from(c.per_slot[i]) + u64::from(inflight);
                }
                c.per_slot[i] = inflight;
            }
        }
        if self.busy[i] == busy {
            return;
        }
        self.advance(now);
        self.count(i, now);
        if self.up[i] {
            self.busy_up = self.busy_up - self.busy[i] + busy;
        }
        self.busy[i] = busy;
    }

    /// Slot `r` is up (serving) or not from `now`.
    pub fn set_up(&mut self, r: u32, up: bool, now: Instant) {
        let i = r as usize;
        if self.up[i] == up {
            return;
        }
        self.advance(now);
        if let Controller::Kpa(_, c) = &mut self.controller {
            c.advance(now);
            let inflight = u64::from(c.per_slot[i]);
            if up {
                c.up_sum += inflight;
            } else {
                c.up_sum -= inflight;
            }
        }
        self.up[i] = up;
        self.up_since[i] = up.then_some(now);
        if up {
            self.up_count += 1;
            self.busy_up += self.busy[i];
        } else {
            self.up_count -= 1;
            self.busy_up -= self.busy[i];
        }
        if let Some(c) = &mut self.columns
            && let Some(cell) = c.ready.get_mut(now.bucket(c.width))
        {
            *cell = Some(self.up_count);
        }
    }

    /// The sync at `now`: what the controller decides, as moves of slots. `holds(r)`:
    /// whether slot `r`'s server still holds requests (a replica draining).
    pub fn sync(&mut self, now: Instant, holds: impl Fn(u32) -> bool) -> Vec<ScaleStep> {
        self.advance(now);
        let (mut ready, mut busy_ns) = (0, 0.0);
        for r in 0..self.phase.len() {
            self.count(r, now);
            if self.up_since[r].is_some_and(|t| t <= self.last_sync) {
                ready += 1;
                busy_ns += self.busy_ns[r];
            }
            self.busy_ns[r] = 0.0;
        }
        let capacity_ns = f64::from(ready) * f64::from(self.workers) * now.since(self.last_sync).as_ns_f64();
        let utilization = if capacity_ns > 0.0 { busy_ns / capacity_ns } else { 0.0 };
        self.last_sync = now;
        let current = self.current();
        let up_count = self.up_count;
        let desired = match &mut self.controller {
            Controller::Hpa(hpa) => hpa.sync(now, Observation { current, ready, utilization }),
            Controller::Kpa(kpa, c) => {
                c.advance(now);
                let (stable, panic) =
                    (c.average(kpa.params().stable_window), c.average(kpa.params().panic_window));
                kpa.decide(now, KpaObservation { ready: up_count, stable, panic })
            }
        };
        let mut steps = Vec::new();
        if desired > current {
            for _ in current..desired {
                let free = |p: &Phase| *p == Phase::Off;
                let slots = 0..self.phase.len() as u32;
                let slot = slots
                    .clone()
                    .find(|&r| free(&self.phase[r as usize]) && !holds(r))
                    .or_else(|| slots.clone().find(|&r| free(&self.phase[r as usize])))
                    .expect("desired <= max = slots");
                self.phase[slot as usize] = Phase::Starting;
                self.generation[slot as usize] += 1;
                let generation = self.generation[slot as usize];
                steps.push(ScaleStep::Start { slot, generation, ready_at: now + self.startup });
            }
        } else {
            for _ in desired..current {
                let last = |phase: Phase| (0..self.phase.len()).rev().find(|&r| self.phase[r] == phase);
                let step = if let Some(r) = last(Phase::Starting) {
                    self.generation[r] += 1;
                    ScaleStep::Stop { slot: r as u32 }
                } else {
                    let r = last(Phase::Ready).expect("current > desired >= min >= 1 replicas");
                    ScaleStep::Drain { slot: r as u32 }
                };
                let (ScaleStep::Stop { slot } | ScaleStep::Drain { slot } | ScaleStep::Start { slot, .. }) =
                    step;
                self.phase[slot as usize] = Phase::Off;
                steps.push(step);
            }
        }
        if let Some(c) = &mut self.columns
            && let Some(cell) = c.desired.get_mut(now.bucket(c.width))
        {
            *cell = Some(desired);
        }
        steps
    }

    /// The `Ready` event of `slot`'s `generation`: whether the replica is still wanted (it then
    /// joins the balancer).
    pub fn ready(&mut self, slot: u32, generation: u32) -> bool {
        let i = slot as usize;
        let wanted = self.phase[i] == Phase::Starting && self.generation[i] == generation;
        if wanted {
            self.phase[i] = Phase::Ready;
        }
        wanted
    }

    /// Per bucket, after the run (integrated to `horizon`): the desired replicas, the ready
    /// replicas (each at the bucket's end, carried over buckets without a change), and the
    /// ready replicas' utilisation over the bucket (`None` without a replica up).
    pub fn rows(&mut self, horizon: Instant) -> Vec<[Option<f64>; 3]> {
        self.advance(horizon);
        let Some(c) = &self.columns else { return Vec::new() };
        let (mut desired, mut ready) = (None, None);
        (0..c.busy.len())
            .map(|b| {
                desired = c.desired[b].or(desired);
                ready = c.ready[b].or(ready);
                let utilization = (c.capacity[b] > 0.0).then(|| c.busy[b] / c.capacity[b]);
                [desired.map(f64::from), ready.map(f64::from), utilization]
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::autoscale::HpaParams;

    fn params(startup: Span) -> AutoscaleParams {
        AutoscaleParams {
            rule: AutoscaleRule::Hpa(HpaParams {
                target_percent: 50,
                min: 1,
                max: 4,
                sync_period: Span::from_secs(15),
                tolerance: 0.1,
                scale_up: HpaParams::default_scale_up(),
                scale_down: HpaParams::default_scale_down(),
            }),
            startup,
            workers: 2,
        }
    }

    fn at(s: u64) -> Instant {
        Instant::from_secs(s)
    }

    /// Two replicas of two workers, one worker busy on each for the first 5 s and all four for
    /// the last 10 s of the period: (2 x 5 + 4 x 10) / (4 x 15) = 83.3 %, against 50 %:
    /// ceil(1.66 x 2) = 4; the new replicas go to slots 2 and 3, ready `startup` later.
    #[test]
    fn the_utilisation_is_the_busy_share_of_the_ready_workers_over_the_period() {
        let mut a = Autoscaler::new(params(Span::from_secs(30)), 4, 2);
        a.track(Span::from_secs(10), 4);
        a.levels(0, 1, 0, at(0));
        a.levels(1, 1, 0, at(0));
        a.levels(0, 2, 0, at(5));
        a.levels(1, 2, 0, at(5));
        let steps = a.sync(at(15), |_| false);
        assert_eq!(
            steps,
            [
                ScaleStep::Start { slot: 2, generation: 1, ready_at: at(45) },
                ScaleStep::Start { slot: 3, generation: 1, ready_at: at(45) }
            ]
        );
        assert!(a.ready(2, 1));
        a.set_up(2, true, at(45));
        let rows = a.rows(at(40));
        assert_eq!(rows[0], [Some(2.0), Some(2.0), Some((2.0 * 5.0 + 4.0 * 5.0) / (4.0 * 10.0))]);
        assert_eq!(rows[1], [Some(4.0), Some(2.0), Some(1.0)]);
    }

    /// A scale-down stops starting replicas first, then drains the highest ready slot; a
    /// stopped replica's `Ready` event is stale.
    #[test]
    fn scale_down_stops_starting_replicas_before_draining_ready_ones() {
        let mut p = params(Span::from_secs(60));
        let AutoscaleRule::Hpa(hpa) = &mut p.rule else { unreachable!() };
        hpa.scale_down.stabilization = Span::ZERO;
        let mut a = Autoscaler::new(p, 4, 2);
        a.levels(0, 2, 0, at(0));
        a.levels(1, 2, 0, at(0));
        assert_eq!(a.sync(at(15), |_| false).len(), 2);
        a.levels(0, 0, 0, at(15));
        a.levels(1, 0, 0, at(15));
        let steps = a.sync(at(30), |_| false);
        assert_eq!(
            steps,
            [ScaleStep::Stop { slot: 3 }, ScaleStep::Stop { slot: 2 }, ScaleStep::Drain { slot: 1 }]
        );
        assert!(!a.ready(2, 1), "stopped before it was ready");
        // The drained slot 1 (out of the balancer) still holds work: a scale-up prefers the
        // empty slot 2.
        a.set_up(1, false, at(30));
        a.levels(0, 2, 0, at(30));
        let steps = a.sync(at(45), |r| r == 1);
        assert_eq!(steps[0], ScaleStep::Start { slot: 2, generation: 3, ready_at: at(105) });
    }
}
