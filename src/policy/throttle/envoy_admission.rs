//! Envoy's `admission_control` HTTP filter, as a client-side throttle: the
//! `envoy-admission-control` throttle. It rejects a request locally with a probability that
//! grows as the success rate of the requests it let through over a sliding window falls below a
//! threshold (docs/overload-and-topology.md §1.5).
//!
//! Read at the source, envoyproxy/envoy `source/extensions/filters/http/admission_control/`:
//!
//! - `admission_control.cc` `shouldRejectRequest`: with `n` requests and `s` successes in the
//!   window, `p = (n - s / sr_threshold) / (n + 1)`, then `p = p^(1 / aggression)` when
//!   `aggression != 1`, then `p = min(p, max_rejection_probability)`; the request is rejected
//!   when `10^4 x max(p, 0) > r mod 10^4` for a uniform integer `r` ("an accuracy of 4
//!   significant figures"). A negative `p` raised to a fractional power is NaN there, which
//!   rejects nothing: the same as `max(0, p)^(1 / aggression)`.
//! - `decodeHeaders`: when the window's average rate (`averageRps`) is below `rps_threshold`
//!   nothing is rejected; a rejected request is *not* recorded ("this taints the measurements
//!   ... the rejection probabilities would not converge back to 0").
//! - `thread_local_controller.{h,cc}`: the window is a deque of samples, each counting the
//!   requests and successes recorded in the second after it was opened (a new sample opens at
//!   the first record or query at least 1 s after the newest one opened; the granularity is
//!   hard-coded); samples whose age reaches `sampling_window` are purged when the filter records
//!   or reads the counts. `averageRps = requests / max(sampling_window, age of the oldest
//!   sample)` in whole seconds, 0 without samples; it does not purge first.
//! - `evaluators/default_evaluator.cc` (the default success criteria): an HTTP answer is a
//!   success when its status is below 500. Envoy's router answers a timeout 504 and a connection
//!   failure 503, so here timeouts and connection errors are failures ([`is_success`]).
//! - `admission_control.cc` (config): defaults `sampling_window` 30 s, `sr_threshold` 95 %,
//!   `aggression` 1.0 (values below 1 are taken as 1), `rps_threshold` 0,
//!   `max_rejection_probability` 80 %; the threshold may not be below 1 %.
//!
//! Percentages are fractions here (`sr_threshold = 0.95`), as every rate in the file format.

use crate::engine::{Instant, Span};
use crate::policy::Outcome;
use std::collections::VecDeque;

/// The width of one sample of the window: Envoy's `defaultHistoryGranularity`, 1 s.
pub const ENVOY_ADMISSION_GRANULARITY: Span = Span::from_secs(1);

/// Settings of [`EnvoyAdmission`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EnvoyAdmissionParams {
    /// How far back requests and successes are counted (whole seconds, as Envoy keeps it).
    pub sampling_window: Span,
    /// The success rate below which requests start to be rejected, in (0, 1].
    pub sr_threshold: f64,
    /// The curve's exponent is `1 / aggression`; at least 1.
    pub aggression: f64,
    /// Below this many requests per second over the window nothing is rejected.
    pub rps_threshold: u32,
    /// The rejection probability never exceeds this, in [0, 1].
    pub max_rejection_probability: f64,
}

impl Default for EnvoyAdmissionParams {
    /// [`EnvoyAdmissionParams::ENVOY`].
    fn default() -> Self {
        EnvoyAdmissionParams::ENVOY
    }
}

impl EnvoyAdmissionParams {
    /// Envoy's defaults (`admission_control.cc`, `admission_control.proto`).
    pub const ENVOY: EnvoyAdmissionParams = EnvoyAdmissionParams {
        sampling_window: Span::from_secs(30), // defaultSamplingWindow 30 s
        sr_threshold: 0.95,                   // defaultSuccessRateThreshold 95.0 %
        aggression: 1.0,                      // defaultAggression 1.0
        rps_threshold: 0,                     // defaultRpsThreshold 0
        max_rejection_probability: 0.8,       // defaultMaxRejectionProbability 80.0 %
    };

    /// Whole seconds of at least 1 s; a threshold in [0.01, 1]; aggression >= 1; a maximum in
    /// [0, 1].
    pub fn validate(&self) -> Result<(), &'static str> {
        let window = self.sampling_window.as_ns();
        if window < ENVOY_ADMISSION_GRANULARITY.as_ns()
            || !window.is_multiple_of(ENVOY_ADMISSION_GRANULARITY.as_ns())
        {
            return Err("the sampling window must be a whole number of seconds, at least 1 s");
        }
        if !(0.01..=1.0).contains(&self.sr_threshold) {
            return Err("sr_threshold must be from 0.01 to 1");
        }
        if !(self.aggression.is_finite() && self.aggression >= 1.0) {
            return Err("aggression must be a finite number >= 1");
        }
        if !(0.0..=1.0).contains(&self.max_rejection_probability) {
            return Err("max_rejection_probability must be from 0 to 1");
        }
        Ok(())
    }

    /// The rejection probability with `requests` recorded requests of which `successes`
    /// succeeded: `min(max_rejection_probability, max(0, (n - s / threshold) / (n + 1))^(1 /
    /// aggression))`.
    pub fn probability(&self, requests: u64, successes: u64) -> f64 {
        let n = requests as f64;
        let p = (n - successes as f64 / self.sr_threshold) / (n + 1.0);
        if p <= 0.0 {
            return 0.0;
        }
        let p = if self.aggression != 1.0 { p.powf(1.0 / self.aggression) } else { p };
        p.min(self.max_rejection_probability)
    }
}

/// What Envoy's default success criteria count as a success: an HTTP status below 500 (a
/// timeout is the router's 504, a connection failure its 503).
pub fn is_success(o: Outcome) -> bool {
    match o {
        Outcome::Success => true,
        Outcome::Status(s) => s < 500,
        Outcome::Timeout | Outcome::ConnectionError => false,
    }
}

/// One sample of the window: when it was opened, and what was recorded in it.
#[derive(Clone, Copy, Debug)]
struct Sample {
    opened: Instant,
    requests: u32,
    successes: u32,
}

/// Envoy's admission controller for one client (or one shared by the fleet).
#[derive(Clone, Debug)]
pub struct EnvoyAdmission {
    params: EnvoyAdmissionParams,
    /// Oldest first; at most `sampling_window / 1 s + 1` samples.
    history: VecDeque<Sample>,
    requests: u32,
    successes: u32,
}

impl EnvoyAdmission {
    /// An empty controller: it rejects nothing until a failure is recorded.
    ///
    /// # Panics
    /// If the parameters fail [`EnvoyAdmissionParams::validate`].
    pub fn new(params: EnvoyAdmissionParams) -> Self {
        if let Err(e) = params.validate() {
            panic!("invalid admission control parameters: {e}");
        }
        let samples = params.sampling_window.as_ns() / ENVOY_ADMISSION_GRANULARITY.as_ns() + 1;
        EnvoyAdmission {
            params,
            history: VecDeque::with_capacity(samples as usize),
            requests: 0,
            successes: 0,
        }
    }

    /// A request is about to be sent at `now`; `u` is a uniform draw in `[0, 1)`. Returns
    /// `true` to send it, `false` to reject it locally (a rejected request is not recorded).
    pub fn admit(&mut self, now: Instant, u: f64) -> bool {
        if self.average_rps(now) < self.params.rps_threshold {
            return true;
        }
        let (n, s) = self.counts(now);
        let p = self.params.probability(n, s);
        // `accuracy * max(p, 0) > r % accuracy`, accuracy 10^4, with r % 10^4 = floor(u x 10^4).
        const ACCURACY: f64 = 1e4;
        let r = (u * ACCURACY).floor();
        ACCURACY * p <= r
    }

    /// The answer to a request this controller let through arrived at `now`.
    pub fn record(&mut self, now: Instant, success: bool) {
        self.update(now);
        let newest = self.history.back_mut().expect("update leaves a sample");
        newest.requests += 1;
        self.requests += 1;
        if success {
            newest.successes += 1;
            self.successes += 1;
        }
    }

    /// `(requests, successes)` in the window at `now` (Envoy's `requestCounts`, which purges
    /// stale samples and may open a new one).
    pub fn counts(&mut self, now: Instant) -> (u64, u64) {
        self.update(now);
        (u64::from(self.requests), u64::from(self.successes))
    }

    /// The probability with which a request at `now` would be rejected (rps threshold aside).
    pub fn reject_probability(&mut self, now: Instant) -> f64 {
        let (n, s) = self.counts(now);
        self.params.probability(n, s)
    }

    /// Envoy's `averageRps`: the recorded requests over `max(sampling_window, age of the oldest
    /// sample)`, both in whole seconds; stale samples are not purged first.
    pub fn average_rps(&self, now: Instant) -> u32 {
        let Some(oldest) = self.history.front() else { return 0 };
        if self.requests == 0 {
            return 0;
        }
        let whole_secs = |s: Span| s.as_ns() / ENVOY_ADMISSION_GRANULARITY.as_ns();
        let secs = whole_secs(self.params.sampling_window).max(whole_secs(now.since(oldest.opened)));
        (u64::from(self.requests) / secs) as u32
    }

    /// Envoy's `maybeUpdateHistoricalData`: purge the samples whose age reached the window, then
    /// open a new sample if there is none or the newest is at least 1 s old.
    fn update(&mut self, now: Instant) {
        while let Some(oldest) = self.history.front()
            && now.since(oldest.opened) >= self.params.sampling_window
        {
            self.requests -= oldest.requests;
            self.successes -= oldest.successes;
            self.history.pop_front();
        }
        if self.history.back().is_none_or(|newest| now.since(newest.opened) >= ENVOY_ADMISSION_GRANULARITY) {
            self.history.push_back(Sample { opened: now, requests: 0, successes: 0 });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::u01;
    use crate::policy::test_time::{MS, S, at};
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    const ENVOY: EnvoyAdmissionParams = EnvoyAdmissionParams::ENVOY;

    #[test]
    fn defaults_and_refusals() {
        assert_eq!(EnvoyAdmissionParams::default(), ENVOY);
        assert!(ENVOY.validate().is_ok());
        let bad = [
            EnvoyAdmissionParams { sampling_window: Span::from_millis(1500), ..ENVOY },
            EnvoyAdmissionParams { sampling_window: Span::from_millis(500), ..ENVOY },
            EnvoyAdmissionParams { sr_threshold: 0.009, ..ENVOY },
            EnvoyAdmissionParams { aggression: 0.5, ..ENVOY },
            EnvoyAdmissionParams { max_rejection_probability: 1.5, ..ENVOY },
        ];
        for p in bad {
            assert!(p.validate().is_err(), "{p:?}");
        }
    }

    /// The formula on hand-computed windows.
    #[test]
    fn probability_on_hand_computed_windows() {
        // n = 100, s = 95 at threshold 0.95: s / t = 100, p = 0 (exactly at the threshold).
        assert_eq!(ENVOY.probability(100, 95), 0.0);
        // n = 100, s = 76: s / 0.95 = 80, p = 20 / 101.
        assert!((ENVOY.probability(100, 76) - 20.0 / 101.0).abs() < 1e-15);
        // n = 100, s = 0: p = 100 / 101 = 0.990, capped at 0.8.
        assert_eq!(ENVOY.probability(100, 0), 0.8);
        // Uncapped: the same window gives 100 / 101.
        let uncapped = EnvoyAdmissionParams { max_rejection_probability: 1.0, ..ENVOY };
        assert_eq!(uncapped.probability(100, 0), 100.0 / 101.0);
        // aggression 2: p = sqrt(20 / 101) = 0.44499...
        let a2 = EnvoyAdmissionParams { aggression: 2.0, ..ENVOY };
        assert!((a2.probability(100, 76) - (20.0f64 / 101.0).sqrt()).abs() < 1e-15);
        // threshold 0.5: n = 10, s = 4 -> s / t = 8, p = 2 / 11.
        let half = EnvoyAdmissionParams { sr_threshold: 0.5, ..ENVOY };
        assert!((half.probability(10, 4) - 2.0 / 11.0).abs() < 1e-15);
        // More successes than the threshold asks: never negative.
        assert_eq!(half.probability(10, 9), 0.0);
        assert_eq!(ENVOY.probability(0, 0), 0.0);
    }

    /// Envoy's comparison `10^4 p > r mod 10^4`: the draw is quantised to 10^-4.
    #[test]
    fn rejection_compares_the_quantised_draw() {
        let mut a = EnvoyAdmission::new(ENVOY);
        let now = at(S);
        for _ in 0..100 {
            a.record(now, false);
        }
        assert_eq!(a.counts(now), (100, 0));
        // p = 0.8 (capped): r < 8000 rejects, r >= 8000 admits.
        assert!(!a.admit(now, 0.0));
        assert!(!a.admit(now, 0.79995), "r = 7999");
        assert!(a.admit(now, 0.8), "r = 8000");
        assert!(a.admit(now, 0.9999));
        // Rejections are not recorded.
        assert_eq!(a.counts(now), (100, 0));
    }

    /// Samples open at least 1 s apart and are purged when their age reaches the window.
    #[test]
    fn the_window_keeps_second_samples_for_thirty_seconds() {
        let mut a = EnvoyAdmission::new(ENVOY);
        // Sample opened at 0.5 s: records at 0.5, 1.2 and 1.49 s fall in it; 1.5 s opens the next.
        for t in [500 * MS, 1200 * MS, 1490 * MS] {
            a.record(at(t), false);
        }
        a.record(at(1500 * MS), true);
        assert_eq!(a.history.len(), 2);
        assert_eq!(a.counts(at(1500 * MS)), (4, 1));
        // At 30.499 s the first sample (opened 0.5 s) is 29.999 s old: kept; at 30.5 s purged.
        assert_eq!(a.counts(at(30_499 * MS)), (4, 1));
        assert_eq!(a.counts(at(30_500 * MS)), (1, 1));
        assert_eq!(a.counts(at(31_500 * MS)), (0, 0));
        assert_eq!(a.reject_probability(at(31_500 * MS)), 0.0);
    }

    #[test]
    fn average_rps_and_its_threshold() {
        let p = EnvoyAdmissionParams { rps_threshold: 5, ..ENVOY };
        let mut a = EnvoyAdmission::new(p);
        assert_eq!(a.average_rps(at(0)), 0);
        // 149 failures in the first second: 149 / 30 = 4 rps (integer division): nothing rejected.
        for _ in 0..149 {
            a.record(at(0), false);
        }
        assert_eq!(a.average_rps(at(0)), 4);
        assert!(a.admit(at(0), 0.0), "below the rps threshold");
        a.record(at(0), false);
        assert_eq!(a.average_rps(at(0)), 5);
        assert!(!a.admit(at(0), 0.0), "at the threshold: p = 0.8 applies");
        // The oldest sample's age counts once it exceeds the window (before the purge).
        let b = {
            let mut b = EnvoyAdmission::new(ENVOY);
            for _ in 0..120 {
                b.record(at(0), true);
            }
            b
        };
        assert_eq!(b.average_rps(at(10 * S)), 4, "120 / 30");
        assert_eq!(b.average_rps(at(40 * S)), 3, "120 / 40: averageRps does not purge");
    }

    #[test]
    fn success_is_an_answer_below_500() {
        assert!(is_success(Outcome::Success));
        assert!(is_success(Outcome::Status(429)));
        assert!(is_success(Outcome::Status(404)));
        assert!(!is_success(Outcome::Status(503)));
        assert!(!is_success(Outcome::Status(500)));
        assert!(!is_success(Outcome::Timeout));
        assert!(!is_success(Outcome::ConnectionError));
    }

    /// A backend whose success rate drops from 1 to 1/2: no rejection before; after, each
    /// request is rejected with the formula's p of the moment (checked exactly: the rejected
    /// count is a sum of Bernoulli(p_i) draws, within 5 standard errors of the sum of p_i), and
    /// p itself averages near 1 - 0.5 / 0.95 = 0.4737. The window holds about 1550 recorded
    /// requests, so its success rate has a standard deviation of 0.5 / sqrt(1550) = 0.013 and p
    /// one of 0.013 / 0.95 = 0.013, correlated over a window: over 540 s (18 windows) the mean
    /// of p has one of about 0.013 / sqrt(18) = 0.003; the test allows 0.015.
    #[test]
    fn a_success_rate_drop_raises_rejections() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(26);
        let mut a = EnvoyAdmission::new(ENVOY);
        let mut backend = Xoshiro256PlusPlus::seed_from_u64(27);
        // 100 requests/s for 60 s all succeeding, then 600 s at 50 % success.
        let (mut rejected_before, mut rejected_after, mut tried_after) = (0u32, 0u32, 0u32);
        let (mut sum_p, mut var_p) = (0.0, 0.0);
        for i in 0..66_000u64 {
            let now = at(i * 10 * MS);
            let healthy = now < at(60 * S);
            let p = a.reject_probability(now);
            let sent = a.admit(now, u01(&mut rng));
            if healthy {
                rejected_before += u32::from(!sent);
            } else if now >= at(120 * S) {
                tried_after += 1;
                rejected_after += u32::from(!sent);
                sum_p += p;
                var_p += p * (1.0 - p);
            }
            if sent {
                let ok = healthy || u01(&mut backend) < 0.5;
                a.record(now, ok);
            }
        }
        assert_eq!(rejected_before, 0, "a healthy backend: nothing rejected");
        let rejected = f64::from(rejected_after);
        assert!((rejected - sum_p).abs() <= 5.0 * var_p.sqrt(), "{rejected_after} vs {sum_p}");
        let mean_p = sum_p / f64::from(tried_after);
        assert!((mean_p - (1.0 - 0.5 / 0.95)).abs() < 0.015, "{mean_p}");
    }
}
