//! Netflix concurrency-limits' `Gradient2Limit` (docs/overload-and-topology.md §1.3): the limit
//! follows the ratio of a long-term RTT average to the latest RTT.
//!
//! Read at Netflix/concurrency-limits 78a74b9, `limit/Gradient2Limit.java` and
//! `limit/measurement/ExpAvgMeasurement.java`. Per sample (drops are not used):
//!
//! 1. `long = ExpAvg(longWindow, 10).add(rtt)`: the mean of the first 10 samples, then
//!    `long = long (1 - f) + rtt f` with `f = 2 / (longWindow + 1)`;
//! 2. when `long / rtt > 2`, `long *= 0.95` (recovering after a long overload);
//! 3. fewer in flight than half the limit (app-limited): the limit is kept;
//! 4. `gradient = clamp(tolerance x long / rtt, 0.5, 1)`,
//!    `new = L x gradient + queueSize`, `new = L (1 - smoothing) + new x smoothing`, clamped
//!    to `[minLimit, maxLimit]`.
//!
//! Step 3 compares against the limit before this sample; the limit in force is `(int) L`.

use super::Sample;

/// A [`Gradient2`] limit's parameters (the builder's fields).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gradient2Params {
    pub initial_limit: u32,
    pub min_limit: u32,
    /// `maxConcurrency`.
    pub max_limit: u32,
    pub smoothing: f64,
    /// The constant queue size the builder's default `queueSize` function returns.
    pub queue_size: u32,
    /// The long RTT's exponential window, in samples.
    pub long_window: u32,
    /// At least 1: how much slower than the long RTT a sample may be before the limit falls.
    pub rtt_tolerance: f64,
}

impl Gradient2Params {
    /// `Gradient2Limit.Builder`'s defaults: initial 20, min 20, max 200, smoothing 0.2,
    /// queue size 4, longWindow 600, rttTolerance 1.5.
    pub const NETFLIX: Gradient2Params = Gradient2Params {
        initial_limit: 20,
        min_limit: 20,
        max_limit: 200,
        smoothing: 0.2,
        queue_size: 4,
        long_window: 600,
        rtt_tolerance: 1.5,
    };
    /// `ExpAvgMeasurement(longWindow, 10)`: the first 10 samples are averaged.
    pub const WARMUP_SAMPLES: u32 = 10;
}

/// `ExpAvgMeasurement`: a plain mean over a warm-up, then an exponential average.
#[derive(Clone, Copy, Debug, PartialEq)]
struct ExpAvg {
    value: f64,
    sum: f64,
    count: u32,
    window: u32,
    warmup: u32,
}

impl ExpAvg {
    fn add(&mut self, sample: f64) -> f64 {
        if self.count < self.warmup {
            self.count += 1;
            self.sum += sample;
            self.value = self.sum / self.count as f64;
        } else {
            let factor = 2.0 / (self.window as f64 + 1.0);
            self.value = self.value * (1.0 - factor) + sample * factor;
        }
        self.value
    }
}

/// The Gradient2 limit's state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gradient2 {
    params: Gradient2Params,
    estimated: f64,
    long_rtt: ExpAvg,
}

impl Gradient2 {
    pub fn new(params: Gradient2Params) -> Gradient2 {
        Gradient2 {
            params,
            estimated: params.initial_limit as f64,
            long_rtt: ExpAvg {
                value: 0.0,
                sum: 0.0,
                count: 0,
                window: params.long_window,
                warmup: Gradient2Params::WARMUP_SAMPLES,
            },
        }
    }

    pub fn limit(&self) -> u32 {
        self.estimated as u32
    }

    /// The long-term RTT average, in nanoseconds.
    pub fn long_rtt_ns(&self) -> f64 {
        self.long_rtt.value
    }

    /// `_update(startTime, rtt, inflight, didDrop)`; a zero RTT is ignored (its gradient
    /// would divide by zero).
    pub fn on_sample(&mut self, s: Sample) {
        if s.rtt.is_zero() {
            return;
        }
        let p = &self.params;
        let l = self.estimated;
        let short = s.rtt.as_ns() as f64;
        let long = self.long_rtt.add(short);
        if long / short > 2.0 {
            self.long_rtt.value *= 0.95;
        }
        if (s.inflight as f64) < l / 2.0 {
            return;
        }
        let gradient = (p.rtt_tolerance * long / short).clamp(0.5, 1.0);
        let new = l * gradient + p.queue_size as f64;
        let new = l * (1.0 - p.smoothing) + new * p.smoothing;
        self.estimated = new.min(p.max_limit as f64).max(p.min_limit as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Instant, Span};

    fn sample(rtt_ms: u64, inflight: u32) -> Sample {
        Sample { now: Instant::ZERO, rtt: Span::from_millis(rtt_ms), inflight, dropped: false }
    }

    #[test]
    fn the_long_rtt_averages_ten_samples_then_decays_by_2_over_601() {
        let mut g = Gradient2::new(Gradient2Params::NETFLIX);
        for ms in 1..=10 {
            g.on_sample(sample(ms, 0));
        }
        assert_eq!(g.long_rtt_ns(), 5.5e6, "mean of 1..10 ms");
        g.on_sample(sample(5, 0));
        let f = 2.0 / 601.0;
        assert!((g.long_rtt_ns() - (5.5e6 * (1.0 - f) + 5e6 * f)).abs() < 1e-6);
    }

    #[test]
    fn hand_computed_steps() {
        let mut g = Gradient2::new(Gradient2Params { min_limit: 1, ..Gradient2Params::NETFLIX });
        // First sample: long = 10 ms = short; gradient = min(1, 1.5) = 1; new = 20 + 4 = 24;
        // smoothed 20 x 0.8 + 24 x 0.2 = 20.8.
        g.on_sample(sample(10, 20));
        assert!((g.estimated - 20.8).abs() < 1e-12);
        assert_eq!(g.limit(), 20);
        // long = (10 + 40) / 2 = 25 ms, short 40: gradient = 1.5 x 25 / 40 = 0.9375;
        // new = 20.8 x 0.9375 + 4 = 23.5; smoothed 20.8 x 0.8 + 23.5 x 0.2 = 21.34.
        g.on_sample(sample(40, 20));
        assert!((g.estimated - 21.34).abs() < 1e-12, "{}", g.estimated);
        // long = (50 + 100) / 3 = 50, short 100: gradient 0.75 (not clamped); new =
        // 21.34 x 0.75 + 4 = 20.005; smoothed 21.34 x 0.8 + 20.005 x 0.2 = 21.073.
        g.on_sample(sample(100, 21));
        assert!((g.estimated - 21.073).abs() < 1e-9, "{}", g.estimated);
        // App-limited: 10 in flight < 21.073 / 2: kept (the long RTT still moves).
        g.on_sample(sample(10, 10));
        assert!((g.estimated - 21.073).abs() < 1e-9);
    }

    #[test]
    fn a_long_rtt_twice_the_sample_shrinks_by_5_percent() {
        let mut g = Gradient2::new(Gradient2Params::NETFLIX);
        g.on_sample(sample(100, 0));
        // long = (100 + 10) / 2 = 55 > 2 x 10: x 0.95 = 52.25.
        g.on_sample(sample(10, 0));
        assert!((g.long_rtt_ns() - 52.25e6).abs() < 1e-3);
    }

    #[test]
    fn clamped_to_min_and_max() {
        let mut g = Gradient2::new(Gradient2Params { initial_limit: 100, ..Gradient2Params::NETFLIX });
        for _ in 0..10 {
            g.on_sample(sample(10, 0));
        }
        // Samples 100x slower than the long RTT: gradient 0.5; the limit falls from 100
        // toward 4 / (1 - 0.9) = 8, and stops at min 20.
        for _ in 0..50 {
            g.on_sample(sample(1000, 200));
        }
        assert_eq!(g.limit(), 20);
        let mut g = Gradient2::new(Gradient2Params { initial_limit: 199, ..Gradient2Params::NETFLIX });
        for _ in 0..50 {
            g.on_sample(sample(10, 200));
        }
        assert_eq!(g.limit(), 200);
    }
}
