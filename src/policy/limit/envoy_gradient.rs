//! Envoy's adaptive concurrency filter with its gradient controller
//! (docs/overload-and-topology.md §1.3), as a state machine the server drives: it is asked
//! before a request is forwarded, told each request's latency, and told when its two timers
//! fire.
//!
//! Read at envoyproxy/envoy,
//! `source/extensions/filters/http/adaptive_concurrency/controller/gradient_controller.cc`
//! and `api/envoy/extensions/filters/http/adaptive_concurrency/v3/adaptive_concurrency.proto`:
//!
//! - A request is forwarded while fewer than the limit are outstanding, else answered 503.
//! - Every `concurrency_update_interval` the latencies sampled since the last update are
//!   summarised by `sample_aggregate_percentile` (p50) into `sampleRTT`, and
//!   `gradient = clamp(minRTT (1 + buffer) / sampleRTT, 0.5, 2)`,
//!   `limit = L x gradient`, `new = (uint32) (limit + sqrt(limit))`, clamped to
//!   `[min_concurrency, max_concurrency_limit]` (or, with `min_concurrency_limit`, to
//!   `[min_concurrency_limit, max]`: a floor decoupled from the probe's pinned value).
//!   Without a sample in the interval nothing changes.
//! - minRTT is measured at the start and then every `interval` (+ a jitter of up to
//!   `jitter` x interval, in whole milliseconds): the limit is pinned to `min_concurrency`,
//!   samples from requests sent before the window are discarded, and once `request_count`
//!   samples are in, their percentile is the new minRTT and the limit goes back to its value
//!   before the window. The update timer is idle during the window and restarts after it.
//! - When the limit is set to `min_concurrency` for the fifth update in a row outside a
//!   window, minRTT is measured again at once.
//!
//! Latencies are whole microseconds, as Envoy's. **Difference:** Envoy summarises with
//! circllhist's approximate quantile (about two significant digits); here the percentile is
//! the nearest-rank value of the exact samples.

use crate::engine::{Instant, Span};
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// The gradient controller's parameters (`GradientControllerConfig`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradientParams {
    /// `concurrency_update_interval` (required).
    pub update_interval: Span,
    /// `sample_aggregate_percentile`, in (0, 100].
    pub percentile: f64,
    /// `max_concurrency_limit`.
    pub max_limit: u32,
    /// `min_rtt_calc_params.interval`.
    pub min_rtt_interval: Span,
    /// `min_rtt_calc_params.request_count`.
    pub min_rtt_requests: u32,
    /// `min_rtt_calc_params.jitter`, a fraction of the interval in [0, 1].
    pub jitter: f64,
    /// `min_rtt_calc_params.min_concurrency`: the limit while minRTT is measured, and its
    /// floor unless `min_limit` is set.
    pub min_concurrency: u32,
    /// `min_rtt_calc_params.buffer`, a fraction.
    pub buffer: f64,
    /// `concurrency_limit_params.min_concurrency_limit`: the limit's floor outside the probe.
    pub min_limit: Option<u32>,
}

impl GradientParams {
    /// Envoy's defaults (`GradientControllerConfig`'s constructor): p50, max 1000, 50
    /// requests, 15 % jitter, min_concurrency 3, buffer 25 %.
    pub const ENVOY_PERCENTILE: f64 = 50.0;
    pub const ENVOY_MAX_LIMIT: u32 = 1000;
    pub const ENVOY_MIN_RTT_REQUESTS: u32 = 50;
    pub const ENVOY_JITTER_PERCENT: f64 = 15.0;
    pub const ENVOY_MIN_CONCURRENCY: u32 = 3;
    pub const ENVOY_BUFFER_PERCENT: f64 = 25.0;
    /// Updates in a row at `min_concurrency` that trigger a new minRTT measurement.
    pub const MIN_CONCURRENCY_RUN: u32 = 5;
}

/// The controller's two timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer {
    /// `sample_reset_timer_`: the next limit update.
    Update = 0,
    /// `min_rtt_calc_timer_`: the next minRTT measurement.
    MinRtt = 1,
}

/// The gradient controller's state.
#[derive(Clone, Debug)]
pub struct GradientController {
    p: GradientParams,
    limit: u32,
    /// The limit to restore after the minRTT window; 0 outside it (`deferred_limit_value_`).
    deferred: u32,
    min_rtt: Span,
    sample_rtt: Span,
    /// Latencies since the last summary, in microseconds.
    samples: Vec<u64>,
    /// Requests sent before this are not sampled (`min_rtt_epoch_`).
    epoch: Instant,
    at_minimum: u32,
    /// When each timer fires, if armed.
    armed: [Option<Instant>; 2],
    /// Timers armed since [`GradientController::take_armed`] last looked.
    newly: [bool; 2],
    rng: Xoshiro256PlusPlus,
}

impl GradientController {
    /// The controller created at `now`: it measures minRTT first (the limit pinned to
    /// `min_concurrency`), and its update timer is armed. `rng` draws the minRTT jitter.
    pub fn new(p: GradientParams, now: Instant, rng: Xoshiro256PlusPlus) -> GradientController {
        let mut c = GradientController {
            p,
            limit: p.min_concurrency,
            deferred: 0,
            min_rtt: Span::ZERO,
            sample_rtt: Span::ZERO,
            samples: Vec::new(),
            epoch: now,
            at_minimum: 0,
            armed: [None; 2],
            newly: [false; 2],
            rng,
        };
        c.enter_min_rtt_window(now);
        c.arm(Timer::Update, now + p.update_interval);
        c
    }

    pub fn limit(&self) -> u32 {
        self.limit
    }

    pub fn min_rtt(&self) -> Span {
        self.min_rtt
    }

    /// The last summary of the samples (`sampleRTT`).
    pub fn sample_rtt(&self) -> Span {
        self.sample_rtt
    }

    /// Whether minRTT is being measured.
    pub fn in_min_rtt_window(&self) -> bool {
        self.deferred > 0
    }

    /// `forwardingDecision`: whether a request may go on with `outstanding` already forwarded
    /// and not answered.
    pub fn admit(&self, outstanding: u32) -> bool {
        outstanding < self.limit
    }

    /// `recordLatencySample`: a request forwarded at `sent` was answered at `now`.
    pub fn record(&mut self, sent: Instant, now: Instant) {
        if sent < self.epoch {
            return;
        }
        self.samples.push(now.since(sent).as_ns() / 1_000);
        if self.in_min_rtt_window() && self.samples.len() as u64 >= self.p.min_rtt_requests as u64 {
            self.update_min_rtt(now);
        }
    }

    /// Timer `which` fires at `now` (a stale firing, for a timer re-armed since, is ignored).
    pub fn fire(&mut self, which: Timer, now: Instant) {
        if self.armed[which as usize] != Some(now) {
            return;
        }
        self.armed[which as usize] = None;
        match which {
            Timer::MinRtt => self.enter_min_rtt_window(now),
            Timer::Update => {
                // During a minRTT window the timer lapses; the window's end re-arms it.
                if self.in_min_rtt_window() {
                    return;
                }
                if !self.samples.is_empty() {
                    self.sample_rtt = self.summarise();
                    let new = self.new_limit();
                    self.set_limit(new, now);
                }
                self.arm(Timer::Update, now + self.p.update_interval);
            }
        }
    }

    /// Timers armed since the last call, with when they fire: the model schedules them.
    pub fn take_armed(&mut self) -> impl Iterator<Item = (Timer, Instant)> + '_ {
        let newly = std::mem::take(&mut self.newly);
        [Timer::Update, Timer::MinRtt]
            .into_iter()
            .filter(move |t| newly[*t as usize])
            .filter_map(|t| self.armed[t as usize].map(|at| (t, at)))
    }

    fn arm(&mut self, which: Timer, at: Instant) {
        self.armed[which as usize] = Some(at);
        self.newly[which as usize] = true;
    }

    /// `enterMinRTTSamplingWindow`.
    fn enter_min_rtt_window(&mut self, now: Instant) {
        if self.in_min_rtt_window() {
            return;
        }
        self.deferred = self.limit;
        self.set_limit(self.p.min_concurrency, now);
        self.samples.clear();
        self.epoch = now;
    }

    /// `updateMinRTT`.
    fn update_min_rtt(&mut self, now: Instant) {
        if !self.samples.is_empty() {
            self.min_rtt = self.summarise();
        }
        self.set_limit(self.deferred, now);
        self.deferred = 0;
        let next = now + self.jittered(self.p.min_rtt_interval);
        self.arm(Timer::MinRtt, next);
        self.arm(Timer::Update, now + self.p.update_interval);
    }

    /// `applyJitter`: `interval + random % ceil(interval x jitter)`, in whole milliseconds.
    fn jittered(&mut self, interval: Span) -> Span {
        let ms = interval.as_ns() / 1_000_000;
        let range = (ms as f64 * self.p.jitter).ceil() as u64;
        if self.p.jitter == 0.0 || range == 0 {
            return interval;
        }
        Span::from_millis(ms + self.rng.next_u64() % range)
    }

    /// `processLatencySamplesAndClear`: the samples' percentile, nearest rank.
    fn summarise(&mut self) -> Span {
        self.samples.sort_unstable();
        let n = self.samples.len();
        let rank = ((self.p.percentile / 100.0 * n as f64).ceil() as usize).clamp(1, n);
        let us = self.samples[rank - 1];
        self.samples.clear();
        Span::from_ns(us * 1_000)
    }

    /// `calculateNewLimit`.
    fn new_limit(&self) -> u32 {
        let min_rtt_us = (self.min_rtt.as_ns() / 1_000) as f64;
        let buffered = min_rtt_us + min_rtt_us * self.p.buffer;
        let sample_us = (self.sample_rtt.as_ns() / 1_000).max(1) as f64;
        let gradient = (buffered / sample_us).clamp(0.5, 2.0);
        let limit = self.limit as f64 * gradient;
        let new = (limit + limit.sqrt()) as u32;
        let floor = self.p.min_limit.unwrap_or(self.p.min_concurrency);
        new.min(self.p.max_limit).max(floor)
    }

    /// `updateConcurrencyLimit`.
    fn set_limit(&mut self, new: u32, now: Instant) {
        let old = self.limit;
        self.limit = new;
        let m = self.p.min_concurrency;
        if !self.in_min_rtt_window() && old == m && new == m {
            self.at_minimum += 1;
        } else {
            self.at_minimum = 0;
        }
        if self.at_minimum >= GradientParams::MIN_CONCURRENCY_RUN {
            self.arm(Timer::MinRtt, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    const MS: u64 = 1_000_000;

    fn params() -> GradientParams {
        GradientParams {
            update_interval: Span::from_millis(100),
            percentile: GradientParams::ENVOY_PERCENTILE,
            max_limit: GradientParams::ENVOY_MAX_LIMIT,
            min_rtt_interval: Span::from_secs(60),
            min_rtt_requests: GradientParams::ENVOY_MIN_RTT_REQUESTS,
            jitter: GradientParams::ENVOY_JITTER_PERCENT / 100.0,
            min_concurrency: GradientParams::ENVOY_MIN_CONCURRENCY,
            buffer: GradientParams::ENVOY_BUFFER_PERCENT / 100.0,
            min_limit: None,
        }
    }

    fn controller(p: GradientParams) -> GradientController {
        GradientController::new(p, Instant::ZERO, Xoshiro256PlusPlus::seed_from_u64(1))
    }

    fn t(ns: u64) -> Instant {
        Instant::from_ns(ns)
    }

    /// A controller past its first minRTT window (minRTT = `min_rtt_ms`) with limit `limit`.
    fn measured(p: GradientParams, min_rtt_ms: u64, limit: u32) -> GradientController {
        let mut c = controller(p);
        for _ in 0..p.min_rtt_requests {
            c.record(t(0), t(min_rtt_ms * MS));
        }
        assert!(!c.in_min_rtt_window());
        assert_eq!(c.min_rtt(), Span::from_millis(min_rtt_ms));
        c.limit = limit;
        c
    }

    #[test]
    fn envoy_worked_example() {
        // Limit 100, minRTT 10 ms, buffer 25 %: a 25 ms sample gives gradient 12.5 / 25 = 0.5,
        // 50 + sqrt(50) = 57.07 -> 57; a 10 ms sample gives 1.25: 125 + 11.18 -> 136.
        for (sample_ms, expected) in [(25, 57), (10, 136)] {
            let mut c = measured(params(), 10, 100);
            let now = t(10 * MS);
            c.record(now, now + Span::from_millis(sample_ms));
            let update = c.armed[Timer::Update as usize].expect("re-armed after the window");
            c.fire(Timer::Update, update);
            assert_eq!(c.sample_rtt(), Span::from_millis(sample_ms));
            assert_eq!(c.limit(), expected, "sample {sample_ms} ms");
        }
    }

    #[test]
    fn the_gradient_is_clamped_and_the_limit_bounded() {
        // A sample 100x minRTT: gradient 0.5 at most, 50 + 7.07 = 57 again.
        let mut c = measured(params(), 10, 100);
        c.record(t(10 * MS), t(1_010 * MS));
        c.fire(Timer::Update, c.armed[0].unwrap());
        assert_eq!(c.limit(), 57);
        // A very fast sample: gradient 2 at most: 1000 + 31.6, capped at 1000.
        let mut c = measured(params(), 10, 500);
        c.record(t(10 * MS), t(11 * MS));
        c.fire(Timer::Update, c.armed[0].unwrap());
        assert_eq!(c.limit(), 1000);
    }

    #[test]
    fn starts_pinned_at_min_concurrency_until_enough_samples() {
        let mut c = controller(params());
        assert_eq!((c.limit(), c.in_min_rtt_window()), (3, true));
        assert!(c.admit(2) && !c.admit(3));
        // The update timer lapses during the window.
        c.fire(Timer::Update, t(100 * MS));
        assert_eq!(c.armed[Timer::Update as usize], None);
        for i in 0..49 {
            c.record(t(0), t((5 + i) * MS));
        }
        assert!(c.in_min_rtt_window(), "49 of 50 samples");
        c.record(t(0), t(200 * MS));
        assert!(!c.in_min_rtt_window());
        // The median of 5..=53 ms and 200 ms (nearest rank 25 of 50): 29 ms.
        assert_eq!(c.min_rtt(), Span::from_millis(29));
        assert_eq!(c.limit(), 3, "back to the limit before the window");
        let armed: Vec<_> = c.take_armed().collect();
        assert_eq!(armed[0], (Timer::Update, t(300 * MS)));
        let (which, at) = armed[1];
        assert_eq!(which, Timer::MinRtt);
        // 60 s + U{0..9000} ms: 15 % of 60 s.
        assert!(at >= t(60_200 * MS) && at < t(69_200 * MS), "{at:?}");
    }

    #[test]
    fn the_next_window_discards_older_requests_and_restores_the_limit() {
        let mut c = measured(params(), 10, 80);
        let at = c.armed[Timer::MinRtt as usize].unwrap();
        c.fire(Timer::MinRtt, at);
        assert_eq!((c.limit(), c.in_min_rtt_window()), (3, true));
        // A request sent before the window is not a sample.
        c.record(at.saturating_sub(Span::from_millis(1)), at + Span::from_millis(5));
        assert!(c.samples.is_empty());
        for _ in 0..50 {
            c.record(at, at + Span::from_millis(12));
        }
        assert_eq!((c.limit(), c.min_rtt()), (80, Span::from_millis(12)));
    }

    #[test]
    fn five_updates_at_the_minimum_measure_min_rtt_again() {
        let mut c = measured(params(), 10, 3);
        let mut last = Instant::ZERO;
        for i in 1..=5 {
            // 100 ms samples: gradient 0.5; 1.5 + 1.22 = 2 -> floor 3.
            let at = c.armed[Timer::Update as usize].unwrap();
            c.record(at.saturating_sub(Span::from_millis(100)), at);
            c.fire(Timer::Update, at);
            assert_eq!(c.limit(), 3);
            assert_eq!(c.armed[Timer::MinRtt as usize] == Some(at), i == 5, "update {i}");
            last = at;
        }
        c.fire(Timer::MinRtt, last);
        assert!(c.in_min_rtt_window());
    }

    #[test]
    fn min_concurrency_limit_is_a_floor_apart_from_the_probe() {
        let p = GradientParams { min_limit: Some(20), ..params() };
        let mut c = measured(p, 10, 30);
        c.record(t(10 * MS), t(1_010 * MS));
        c.fire(Timer::Update, c.armed[0].unwrap());
        assert_eq!(c.limit(), 20, "15 + 3.9 = 18, floored at 20");
        let at = c.armed[Timer::MinRtt as usize].unwrap();
        c.fire(Timer::MinRtt, at);
        assert_eq!(c.limit(), 3, "the probe still pins min_concurrency");
    }
}
