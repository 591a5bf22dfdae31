//! Google SRE client-side adaptive throttling (SRE book ch. 21, reference §4): the `sre`
//! throttle, which rejects a request locally with a probability that grows as the backend
//! accepts fewer of the client's requests than `1 / K`.

use crate::engine::{Instant, Span};

/// The number of slices the [`SreThrottle`] window is cut into.
pub const SRE_SLICES: usize = 12;

/// Settings of [`SreThrottle`] (reference §4).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SreThrottleParams {
    /// The multiplier `K`: the client keeps sending until `requests` is `K` times `accepts`.
    /// The SRE book prefers 2 (reference §4); 1.1 is "more aggressive".
    pub k: f64,
    /// How far back `requests` and `accepts` are counted: "the last two minutes" (reference §4).
    pub window: Span,
}

impl Default for SreThrottleParams {
    /// [`SreThrottleParams::SRE_BOOK`].
    fn default() -> Self {
        SreThrottleParams::SRE_BOOK
    }
}

impl SreThrottleParams {
    /// The SRE book's settings (reference §4): `K = 2` over the last 2 minutes.
    pub const SRE_BOOK: SreThrottleParams = SreThrottleParams {
        k: 2.0,                       // reference §4: "we prefer K = 2"
        window: Span::from_secs(120), // reference §4: "the last two minutes"
    };

    /// `k` finite and positive; a window of at least [`SRE_SLICES`] nanoseconds.
    pub fn validate(&self) -> Result<(), &'static str> {
        if !(self.k.is_finite() && self.k > 0.0) {
            return Err("k must be a positive number");
        }
        if self.window.as_ns() < SRE_SLICES as u64 {
            return Err("the window must be at least 12 ns long");
        }
        Ok(())
    }
}

/// Google SRE client-side adaptive throttling (SRE book ch. 21, reference §4).
///
/// The client counts, over a sliding window, `requests` (every request the application asked
/// to send, including the ones this throttle rejected locally) and `accepts` (requests the
/// backend accepted). Before each request it computes
/// `p = max(0, (requests - K*accepts) / (requests + 1))`, counts the request, and rejects it
/// locally when the caller's uniform draw `u < p`.
///
/// Choices where the reference leaves room, following Apache Beam's `AdaptiveThrottler`
/// (`sdks/python/apache_beam/io/components/adaptive_throttler.py`, the implementation the
/// reference names):
/// - `p` is computed *before* the request is counted (`throttle_request` computes the
///   probability, then `_all_requests.add(now, 1)`, then compares a fresh uniform draw);
/// - a request is rejected when `u < p`, so `u` uniform in `[0, 1)` rejects with probability
///   exactly `p`;
/// - an accept is counted when the answer arrives ([`SreThrottle::on_accept`] at that time),
///   in the slice of its arrival.
///
/// The window is sliced: it is a ring of [`SRE_SLICES`] = 12 slices of `window / 12` (10 s for
/// the default 2 minutes), slice `i` covering `[i*w/12, (i+1)*w/12)` of simulated time. The
/// counts at time `t` are those of `t`'s slice and the 11 before it, so they reach back between
/// 11/12 and 12/12 of `window`, as Beam's `MovingSum` (window / bucket buckets). Beam keeps
/// its buckets by dead reckoning from the last flush; here they are aligned to multiples of
/// the slice length, which differs only at slice boundaries.
///
/// Memory: 120 bytes, no heap.
#[derive(Clone, Debug)]
pub struct SreThrottle {
    k: f64,
    slice_ns: u64,
    /// The most recent slice counted into (slice index since time 0).
    latest: u64,
    requests: [u32; SRE_SLICES],
    accepts: [u32; SRE_SLICES],
}

impl SreThrottle {
    /// An empty throttle: it rejects nothing until a request goes unaccepted.
    ///
    /// # Panics
    /// If the parameters fail [`SreThrottleParams::validate`].
    pub fn new(params: SreThrottleParams) -> Self {
        if let Err(e) = params.validate() {
            panic!("invalid throttle parameters: {e}");
        }
        SreThrottle {
            k: params.k,
            slice_ns: params.window.as_ns() / SRE_SLICES as u64,
            latest: 0,
            requests: [0; SRE_SLICES],
            accepts: [0; SRE_SLICES],
        }
    }

    /// The application wants to send a request at `now`; `u` is a uniform draw in `[0, 1)`.
    /// Counts the request and returns `true` to send it, `false` to reject it locally (it
    /// still counts as a request).
    #[inline]
    pub fn admit(&mut self, now: Instant, u: f64) -> bool {
        self.advance(now);
        let p = self.probability_of(self.window_sum(&self.requests, 0), self.window_sum(&self.accepts, 0));
        self.requests[self.latest as usize % SRE_SLICES] += 1;
        u >= p
    }

    /// The backend accepted a request; its answer arrived at `now`.
    #[inline]
    pub fn on_accept(&mut self, now: Instant) {
        self.advance(now);
        self.accepts[self.latest as usize % SRE_SLICES] += 1;
    }

    /// The probability with which a request at `now` would be rejected (before counting it).
    pub fn reject_probability(&self, now: Instant) -> f64 {
        let (r, a) = self.counts(now);
        self.probability_of(r, a)
    }

    /// `(requests, accepts)` in the window as seen at `now`.
    pub fn counts(&self, now: Instant) -> (u64, u64) {
        let gone = (now.as_ns() / self.slice_ns).saturating_sub(self.latest);
        (self.window_sum(&self.requests, gone), self.window_sum(&self.accepts, gone))
    }

    #[inline]
    fn probability_of(&self, requests: u64, accepts: u64) -> f64 {
        let r = requests as f64;
        ((r - self.k * accepts as f64) / (r + 1.0)).max(0.0)
    }

    /// The sum over the slices still in the window once time has moved `gone` slices past
    /// `latest`: slices `latest - j` for `j < SRE_SLICES - gone`.
    #[inline]
    fn window_sum(&self, counts: &[u32; SRE_SLICES], gone: u64) -> u64 {
        let keep = (SRE_SLICES as u64).saturating_sub(gone) as usize;
        let head = self.latest as usize % SRE_SLICES;
        (0..keep).map(|j| counts[(head + SRE_SLICES - j) % SRE_SLICES] as u64).sum()
    }

    /// Moves `latest` to `now`'s slice, clearing the slices it passes (at most all 12).
    #[inline]
    fn advance(&mut self, now: Instant) {
        let slice = now.as_ns() / self.slice_ns;
        if slice > self.latest {
            let first = (self.latest + 1).max(slice.saturating_sub(SRE_SLICES as u64 - 1));
            for s in first..=slice {
                self.requests[s as usize % SRE_SLICES] = 0;
                self.accepts[s as usize % SRE_SLICES] = 0;
            }
            self.latest = slice;
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

    fn rng() -> Xoshiro256PlusPlus {
        Xoshiro256PlusPlus::seed_from_u64(0x7407)
    }

    #[test]
    fn sre_defaults() {
        let d = SreThrottleParams::default();
        assert_eq!((d.k, d.window), (2.0, Span::from_secs(120)));
        assert!(SreThrottleParams { k: 0.0, ..d }.validate().is_err());
        assert!(SreThrottleParams { window: Span::from_ns(11), ..d }.validate().is_err());
    }

    #[test]
    fn sre_never_rejects_while_everything_is_accepted() {
        let mut t = SreThrottle::new(SreThrottleParams::default());
        for i in 0..20_000u64 {
            let now = at(i * 37 * MS);
            assert_eq!(t.reject_probability(now), 0.0, "i={i}");
            // u = 0 is the smallest draw: rejected iff p > 0.
            assert!(t.admit(now, 0.0), "i={i}");
            t.on_accept(now);
        }
    }

    #[test]
    fn sre_formula_before_counting_and_local_rejections_count() {
        let mut t = SreThrottle::new(SreThrottleParams::default());
        let now = at(S);
        for _ in 0..10 {
            t.admit(now, 0.999);
        }
        t.on_accept(now);
        t.on_accept(now);
        // 10 requests, 2 accepts: p = (10 - 2*2) / (10 + 1) for the 11th request.
        let p = 6.0 / 11.0;
        assert_eq!(t.reject_probability(now), p);
        // The decision compares u with that p, computed before this request counts.
        let below = p - 1e-12;
        assert!(!t.admit(now, below), "u < p rejects");
        // The rejected request counted: now 11 requests, p = 7/12.
        assert_eq!(t.counts(now), (11, 2));
        assert_eq!(t.reject_probability(now), 7.0 / 12.0);
        assert!(t.admit(now, 7.0 / 12.0), "u = p admits");
        assert_eq!(t.reject_probability(now), 8.0 / 13.0);
        // Enough accepts make p zero, not negative.
        for _ in 0..10 {
            t.on_accept(now);
        }
        assert_eq!(t.reject_probability(now), 0.0);
    }

    #[test]
    fn sre_window_is_twelve_slices() {
        // Slices of 10 s. Requests at 5 s (slice 0) are counted until slice 12 starts at 120 s.
        let mut t = SreThrottle::new(SreThrottleParams::default());
        for _ in 0..100 {
            t.admit(at(5 * S), 0.5);
        }
        assert_eq!(t.counts(at(120 * S - 1)), (100, 0));
        assert_eq!(t.reject_probability(at(120 * S - 1)), 100.0 / 101.0);
        assert_eq!(t.counts(at(120 * S)), (0, 0));
        assert_eq!(t.reject_probability(at(120 * S)), 0.0);
        // Counting at 115 s (slice 11) keeps slice 0; at 125 s it is gone.
        t.on_accept(at(115 * S));
        assert_eq!(t.counts(at(115 * S)), (100, 1));
        t.admit(at(125 * S), 0.5);
        assert_eq!(t.counts(at(125 * S)), (1, 1));
        // A long silence clears everything.
        t.admit(at(10_000 * S), 0.5);
        assert_eq!(t.counts(at(10_000 * S)), (1, 0));
    }

    /// Binomial check: `admitted` successes out of trials with probabilities `q_i` (given as
    /// their sum and the sum of `q(1-q)`), within 5 standard errors.
    fn assert_binomial(admitted: f64, mean: f64, var: f64, what: &str) {
        let se = var.sqrt();
        assert!(
            (admitted - mean).abs() <= 5.0 * se,
            "{what}: admitted {admitted} vs expected {mean} (se {se})"
        );
    }

    #[test]
    fn sre_rejects_almost_everything_when_nothing_is_accepted() {
        // 10 requests/s, none accepted. p = R/(R+1) with R the requests in the window, rejected
        // ones included; at steady state R is between 1100 (11 slices) and 1200, so
        // p >= 1100/1101 and about one request in R+1 gets through.
        let mut t = SreThrottle::new(SreThrottleParams::default());
        let mut r = rng();
        let (mut admitted, mut mean, mut var) = (0.0, 0.0, 0.0);
        for i in 0..200_000u64 {
            let now = at(i * 100 * MS);
            let (req, acc) = t.counts(now);
            assert_eq!(acc, 0);
            let p = t.reject_probability(now);
            assert_eq!(p, req as f64 / (req as f64 + 1.0));
            if now >= at(120 * S) {
                // Slices 10 s wide: 100 requests per full slice, and the current one so far.
                assert_eq!(req, 1100 + (i % 100), "i={i}");
                assert!(p >= 1100.0 / 1101.0);
                mean += 1.0 - p;
                var += p * (1.0 - p);
                admitted += t.admit(now, u01(&mut r)) as u32 as f64;
            } else {
                t.admit(now, u01(&mut r));
            }
        }
        assert_binomial(admitted, mean, var, "all rejected");
        // About 1/1150 of 188 000 requests: 163 or so.
        assert!((100.0..250.0).contains(&admitted), "{admitted}");
    }

    /// An application sending 100 requests/s through the throttle to a backend that can accept
    /// a fraction `a` of the application's requests (a token bucket gaining `a` per request,
    /// burst 10). Returns (requests, sent) after a 300 s warm-up.
    fn run_capacity_limited(k: f64, a: f64, seconds: u64) -> (f64, f64) {
        let mut t = SreThrottle::new(SreThrottleParams { k, ..SreThrottleParams::default() });
        let mut r = rng();
        let mut credit = 0.0;
        let (mut requests, mut sent) = (0.0, 0.0);
        for i in 0..seconds * 100 {
            let now = at(i * 10 * MS);
            credit = (credit + a).min(10.0);
            let send = t.admit(now, u01(&mut r));
            if send && credit >= 1.0 {
                credit -= 1.0;
                t.on_accept(now);
            }
            if now >= at(300 * S) {
                requests += 1.0;
                sent += send as u32 as f64;
            }
        }
        (requests, sent)
    }

    #[test]
    fn sre_sends_k_times_what_is_accepted() {
        // With the backend accepting a = accepts/requests of the application's requests (and
        // saturated, since k > 1 makes the client send more than it accepts), the window holds
        // R requests and A = a*R accepts, so p = (R - k*a*R)/(R + 1) and the fraction sent is
        // 1 - p = (1 + k*a*R)/(R + 1) -> k*a for k*a < 1 (R is about 11 500 here, so the
        // correction is below 1e-4). Each request is sent independently with probability
        // 1 - p, p nearly constant: the binomial standard error applies.
        for (k, a) in [(2.0, 0.1), (2.0, 0.25), (2.0, 0.4), (1.1, 0.5)] {
            let (n, sent) = run_capacity_limited(k, a, 2_300);
            let s = k * a;
            let se = (s * (1.0 - s) * n).sqrt();
            assert!((sent - s * n).abs() <= 5.0 * se, "k={k} a={a}: sent {} of {n}, expected {s}", sent / n);
        }
    }

    #[test]
    fn size() {
        assert!(std::mem::size_of::<SreThrottle>() <= 120, "{}", std::mem::size_of::<SreThrottle>());
    }
}
