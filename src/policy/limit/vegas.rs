//! Netflix concurrency-limits' `VegasLimit` (docs/overload-and-topology.md §1.3), the
//! library's default limit: TCP Vegas's queue estimate from the no-load RTT.
//!
//! Read at Netflix/concurrency-limits 78a74b9, `limit/VegasLimit.java` and
//! `limit/functions/Log10RootIntFunction.java`. Per sample:
//!
//! 1. `probeCount++`; when `probeJitter x probeMultiplier x estimatedLimit <= probeCount`
//!    (`probeJitter` uniform in [0.5, 1), drawn anew after each probe) the sample's RTT
//!    becomes the no-load RTT, the count restarts and the limit is kept;
//! 2. a first sample, or one faster than the no-load RTT, becomes the no-load RTT; the limit
//!    is kept;
//! 3. otherwise `queue = ceil(L x (1 - rtt_noload / rtt))` and, with `log10(L)` the integer
//!    `max(1, (int) log10(L))`:
//!    a drop decreases (`L - log10(L)`); fewer than half the limit in flight keeps `L`
//!    (app-limited); `queue <= log10(L)` adds `beta = 6 log10(L)`; `queue < alpha = 3
//!    log10(L)` increases (`L + log10(L)`); `queue > beta` decreases; else `L` is kept. The
//!    new limit is clamped to `[1, maxConcurrency]` and smoothed:
//!    `L = (1 - smoothing) L + smoothing x new`.
//!
//! The limit in force is `(int) L`.

use super::Sample;
use crate::engine::Span;
use crate::engine::rng::u01;
use rand_xoshiro::Xoshiro256PlusPlus;

/// A [`Vegas`] limit's parameters (the builder's fields; alpha, beta, threshold, increase and
/// decrease are the builder's default functions of `log10(L)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VegasParams {
    pub initial_limit: u32,
    /// `maxConcurrency`.
    pub max_limit: u32,
    /// In (0, 1]: 1 applies each new limit whole.
    pub smoothing: f64,
    /// The no-load RTT is re-probed every `jitter x probe_multiplier x L` samples.
    pub probe_multiplier: u32,
}

impl VegasParams {
    /// `VegasLimit.Builder`'s defaults: initial 20, maxConcurrency 1000, smoothing 1.0,
    /// probeMultiplier 30.
    pub const NETFLIX: VegasParams =
        VegasParams { initial_limit: 20, max_limit: 1000, smoothing: 1.0, probe_multiplier: 30 };
}

/// `Log10RootIntFunction.create(0)`: `max(1, (int) log10(t))`.
pub fn log10_root(t: u32) -> u32 {
    if t == 0 { 1 } else { t.ilog10().max(1) }
}

/// The Vegas limit's state.
#[derive(Clone, Debug)]
pub struct Vegas {
    params: VegasParams,
    /// `estimatedLimit` (a double in the library).
    estimated: f64,
    /// `rtt_noload`; zero until the first sample.
    rtt_noload: Span,
    probe_count: u64,
    probe_jitter: f64,
}

impl Vegas {
    /// The limit, with its first probe jitter drawn from `rng`.
    pub fn new(params: VegasParams, rng: &mut Xoshiro256PlusPlus) -> Vegas {
        Vegas {
            params,
            estimated: params.initial_limit as f64,
            rtt_noload: Span::ZERO,
            probe_count: 0,
            probe_jitter: jitter(rng),
        }
    }

    pub fn limit(&self) -> u32 {
        self.estimated as u32
    }

    /// The no-load RTT in force (zero before the first sample).
    pub fn rtt_noload(&self) -> Span {
        self.rtt_noload
    }

    /// `_update(startTime, rtt, inflight, didDrop)`. A zero RTT (which the library refuses
    /// with an exception) is ignored.
    pub fn on_sample(&mut self, s: Sample, rng: &mut Xoshiro256PlusPlus) {
        if s.rtt.is_zero() {
            return;
        }
        self.probe_count += 1;
        if self.probe_jitter * self.params.probe_multiplier as f64 * self.estimated <= self.probe_count as f64
        {
            self.probe_jitter = jitter(rng);
            self.probe_count = 0;
            self.rtt_noload = s.rtt;
            return;
        }
        if self.rtt_noload.is_zero() || s.rtt < self.rtt_noload {
            self.rtt_noload = s.rtt;
            return;
        }
        self.update(s);
    }

    /// `updateEstimatedLimit`.
    fn update(&mut self, s: Sample) {
        let l = self.estimated;
        let queue = (l * (1.0 - self.rtt_noload.as_ns() as f64 / s.rtt.as_ns() as f64)).ceil() as i64;
        let log = |x: f64| log10_root(x as u32) as f64;
        let new = if s.dropped {
            l - log(l)
        } else if (s.inflight as f64) * 2.0 < l {
            return;
        } else {
            let log_l = log10_root(l as u32) as i64;
            let (alpha, beta, threshold) = (3 * log_l, 6 * log_l, log_l);
            if queue <= threshold {
                l + beta as f64
            } else if queue < alpha {
                l + log(l)
            } else if queue > beta {
                l - log(l)
            } else {
                return;
            }
        };
        let new = new.min(self.params.max_limit as f64).max(1.0);
        self.estimated = (1.0 - self.params.smoothing) * l + self.params.smoothing * new;
    }
}

/// `ThreadLocalRandom.nextDouble(0.5, 1)`.
fn jitter(rng: &mut Xoshiro256PlusPlus) -> f64 {
    0.5 + 0.5 * u01(rng)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Instant;
    use rand::SeedableRng;

    fn sample(rtt_ms: u64, inflight: u32, dropped: bool) -> Sample {
        Sample { now: Instant::ZERO, rtt: Span::from_millis(rtt_ms), inflight, dropped }
    }

    fn vegas(initial: u32) -> (Vegas, Xoshiro256PlusPlus) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        (Vegas::new(VegasParams { initial_limit: initial, ..VegasParams::NETFLIX }, &mut rng), rng)
    }

    #[test]
    fn log10_root_is_at_least_one() {
        assert_eq!([0, 1, 9, 10, 99, 100, 999, 1000, 12345].map(log10_root), [1, 1, 1, 1, 1, 2, 2, 3, 4]);
    }

    #[test]
    fn the_first_sample_and_faster_ones_set_the_no_load_rtt() {
        let (mut v, mut rng) = vegas(20);
        v.on_sample(sample(10, 20, false), &mut rng);
        assert_eq!((v.limit(), v.rtt_noload()), (20, Span::from_millis(10)));
        v.on_sample(sample(8, 20, false), &mut rng);
        assert_eq!((v.limit(), v.rtt_noload()), (20, Span::from_millis(8)), "kept: a new minimum");
    }

    #[test]
    fn hand_computed_steps() {
        let (mut v, mut rng) = vegas(20);
        v.on_sample(sample(10, 20, false), &mut rng);
        // No queue (rtt = no-load): queue = 0 <= threshold 1: +beta = 6 -> 26.
        v.on_sample(sample(10, 20, false), &mut rng);
        assert_eq!(v.limit(), 26);
        // App-limited: 12 x 2 < 26: kept.
        v.on_sample(sample(10, 12, false), &mut rng);
        assert_eq!(v.limit(), 26);
        // rtt 11 ms: queue = ceil(26 x (1 - 10/11)) = ceil(2.36) = 3 >= alpha 3, <= beta 6: kept.
        v.on_sample(sample(11, 26, false), &mut rng);
        assert_eq!(v.limit(), 26);
        // rtt 21 ms: queue = ceil(26 x 11/21) = ceil(13.6) = 14 > beta 6: -log10(26) -> 25.
        v.on_sample(sample(21, 26, false), &mut rng);
        assert_eq!(v.limit(), 25);
        // A drop decreases by log10(25) = 1, even when app-limited.
        v.on_sample(sample(10, 0, true), &mut rng);
        assert_eq!(v.limit(), 24);
        // queue = ceil(24 x (1 - 10/12)) = ceil(4.0) = 4, in [alpha 3, beta 6]: kept.
        v.on_sample(sample(12, 24, false), &mut rng);
        assert_eq!(v.limit(), 24);
        // Between threshold and alpha: rtt 10.6 ms, queue = ceil(24 x 0.0566) = ceil(1.36) = 2:
        // +log10(24) = 1 -> 25.
        v.on_sample(Sample { rtt: Span::from_ns(10_600_000), ..sample(0, 24, false) }, &mut rng);
        assert_eq!(v.limit(), 25);
    }

    #[test]
    fn capped_at_max_and_probed_after_jitter_x_30_x_limit_samples() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut v =
            Vegas::new(VegasParams { initial_limit: 20, max_limit: 30, ..VegasParams::NETFLIX }, &mut rng);
        let jitter = v.probe_jitter;
        assert!((0.5..1.0).contains(&jitter));
        v.on_sample(sample(10, 20, false), &mut rng);
        let mut n = 1u64;
        // No queue: +6 per sample to the cap of 30.
        while v.probe_count > 0 {
            v.on_sample(sample(10, 30, false), &mut rng);
            n += 1;
            assert!(v.limit() <= 30);
        }
        // The probe came at the first sample where jitter x 30 x L <= count, L = 30 by then.
        let expected = (jitter * 30.0 * 30.0).ceil() as u64;
        assert_eq!(n, expected, "probe after {expected} samples");
        assert_ne!(v.probe_jitter, jitter, "a new jitter after the probe");
    }

    #[test]
    fn smoothing_moves_part_of_the_way() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut v = Vegas::new(VegasParams { smoothing: 0.5, ..VegasParams::NETFLIX }, &mut rng);
        v.on_sample(sample(10, 20, false), &mut rng);
        v.on_sample(sample(10, 20, false), &mut rng);
        assert_eq!(v.estimated, 23.0, "20 + 0.5 x 6");
    }
}
