//! The AWS SDK `adaptive` retry mode's client-side rate limiter (botocore, reference §1b;
//! smithy-rs, §1c): the `aws-adaptive` throttle, a token bucket whose rate follows CUBIC and
//! which delays sends once a throttling answer has been seen.

use crate::engine::{Instant, Span};

/// `RateClocker` smoothing: `measured = 0.8*rate + (1 - 0.8)*measured` (reference §1b;
/// smithy-rs `SMOOTH`, §1c).
pub const AWS_SMOOTHING: f64 = 0.8;
/// `RateClocker` time buckets of 0.5 s (reference §1b, `_TIME_BUCKET_RANGE`).
pub const AWS_RATE_BUCKET: Span = Span::from_millis(500);
/// CUBIC scale constant `C = 0.4` (reference §1b `_SCALE_CONSTANT`; §1c `SCALE_CONSTANT`).
pub const AWS_CUBIC_C: f64 = 0.4;
/// CUBIC multiplicative decrease `BETA = 0.7` (reference §1b `_BETA`; §1c `BETA`).
pub const AWS_CUBIC_BETA: f64 = 0.7;
/// Minimum token fill rate, 0.5 tokens/s (reference §1b `TokenBucket._MIN_RATE`; §1c
/// `MIN_FILL_RATE`).
pub const AWS_MIN_FILL_RATE: f64 = 0.5;
/// Minimum bucket capacity, 1 token (reference §1b `max_capacity = max(.., 1)`; §1c
/// `MIN_CAPACITY`).
pub const AWS_MIN_CAPACITY: f64 = 1.0;
/// The new rate is capped at 2x the measured rate (reference §1b
/// `fill_rate = max(min(new, 2*measured), 0.5)`; botocore `_MAX_RATE_ADJUST_SCALE`).
pub const AWS_MAX_RATE_ADJUST_SCALE: f64 = 2.0;
/// The token bucket's initial `max_rate = 1` (reference §1b "Initial max_rate = 1").
pub const AWS_INITIAL_MAX_RATE: f64 = 1.0;

/// botocore's `CubicCalculator` (reference §1b, `throttling.py`).
#[derive(Clone, Copy, Debug)]
struct Cubic {
    w_max: f64,
    /// `K = (w_max * (1 - BETA) / C)^(1/3)`, in seconds.
    k: f64,
    last_fail: Instant,
}

impl Cubic {
    /// `starting_max_rate = 0`, `start_time` = the limiter's creation (botocore
    /// `register_retry_handler`).
    fn new(start: Instant) -> Cubic {
        let mut c = Cubic { w_max: 0.0, k: 0.0, last_fail: start };
        c.k = c.zero_point();
        c
    }

    /// `((w_max * (1 - BETA)) / C) ** (1/3)`: spelled as botocore and smithy-rs spell it
    /// (`powf(1/3)`, not `cbrt`), so the numbers agree with theirs to the last bit.
    fn zero_point(&self) -> f64 {
        ((self.w_max * (1.0 - AWS_CUBIC_BETA)) / AWS_CUBIC_C).powf(1.0 / 3.0)
    }

    /// `success_received`: `C * (t - last_fail - K)^3 + w_max`.
    fn success(&self, now: Instant) -> f64 {
        let dt = now.since(self.last_fail).as_secs_f64();
        AWS_CUBIC_C * (dt - self.k).powi(3) + self.w_max
    }

    /// `error_received`: `w_max = rate`, new `K`, `last_fail = now`; returns `rate * BETA`.
    fn error(&mut self, rate: f64, now: Instant) -> f64 {
        self.w_max = rate;
        self.k = self.zero_point();
        self.last_fail = now;
        rate * AWS_CUBIC_BETA
    }
}

/// The AWS SDK `adaptive` retry mode's client-side rate limiter (botocore
/// `ClientRateLimiter` with its `RateClocker`, `CubicCalculator` and `TokenBucket`, reference
/// §1b; smithy-rs `ClientRateLimiter`, §1c). One per client.
///
/// On every response ([`AwsAdaptive::on_response`]), in botocore's order:
/// 1. *measure*: count the response; when `t` enters a later 0.5 s bucket
///    (`bucket = floor(2t)/2 > last_bucket`), `rate = count / (bucket - last_bucket)`,
///    `measured = 0.8*rate + (1 - 0.8)*measured`, `count = 0` ([`AWS_SMOOTHING`],
///    [`AWS_RATE_BUCKET`]); the first `last_bucket` is the creation time rounded *down to the
///    second* (`math.floor(current_time())`), as in botocore and smithy-rs;
/// 2. *CUBIC*: a success gives `new = C*(t - last_fail - K)^3 + w_max`; a throttle sets
///    `w_max = rate_used`, `K = (w_max*(1-BETA)/C)^(1/3)`, `last_fail = t` and gives
///    `new = BETA * rate_used`, where `rate_used = measured` for the first throttle and
///    `min(measured, fill_rate)` afterwards; a throttle enables the token bucket
///    ([`AWS_CUBIC_C`], [`AWS_CUBIC_BETA`]);
/// 3. *bucket*: `v = min(new, 2*measured)`; refill the bucket at the *old* rate up to `t`,
///    then `fill_rate = max(v, 0.5)`, `max_capacity = max(v, 1)`,
///    `capacity = min(capacity, max_capacity)` ([`AWS_MAX_RATE_ADJUST_SCALE`],
///    [`AWS_MIN_FILL_RATE`], [`AWS_MIN_CAPACITY`]).
///
/// The CUBIC curve starts at the creation time with `w_max = 0`, and the bucket with
/// `fill_rate = max_rate = 1`, `max_capacity = 1`, `capacity = 0`
/// ([`AWS_INITIAL_MAX_RATE`]). The bucket is disabled (sends never wait) until the first
/// throttling response, but it is refilled and re-rated on every response all along, as in
/// botocore.
///
/// Sending ([`AwsAdaptive::acquire`]): once enabled, a send needs one token. botocore blocks
/// the sending thread, sleeping `(1 - capacity) / fill_rate` and re-checking; a simulator
/// cannot block, so this returns that wait and takes the token at once, letting the capacity
/// go negative: the debt is repaid by later refills, so a second send asked for at the same
/// instant waits one more `1 / fill_rate`. This is smithy-rs's formulation
/// (`acquire_permission_to_send_a_request` subtracts the cost and returns the sleep as
/// `Err(delay)`). The one difference from botocore: a rate change that happens during the
/// wait (a response to another in-flight request of the same client) does not shorten or
/// lengthen a wait already returned. For a client with one request in flight the two agree.
///
/// Memory: 80 bytes, no heap.
#[derive(Clone, Debug)]
pub struct AwsAdaptive {
    // RateClocker
    measured: f64,
    last_bucket: Instant,
    count: u32,
    enabled: bool,
    cubic: Cubic,
    // TokenBucket
    fill_rate: f64,
    max_capacity: f64,
    capacity: f64,
    last_refill: Instant,
}

impl AwsAdaptive {
    /// A limiter created at `now` (botocore creates it with the client; the CUBIC clock and
    /// the first rate bucket start there).
    pub fn new(now: Instant) -> Self {
        let mut a = AwsAdaptive {
            measured: 0.0,
            last_bucket: Instant::from_ns(now.as_ns() / 1_000_000_000 * 1_000_000_000),
            count: 0,
            enabled: false,
            cubic: Cubic::new(now),
            fill_rate: 0.0,
            max_capacity: 0.0,
            capacity: 0.0,
            last_refill: now,
        };
        // `TokenBucket(max_rate=1)`: the setter's first refill only records the time.
        a.set_max_rate(now, AWS_INITIAL_MAX_RATE);
        a
    }

    /// A send of one token at `now` (botocore's `on_sending_request`, every attempt costs one
    /// token): how long the caller must wait before sending. Zero while the bucket is
    /// disabled (nothing is taken then); once enabled the token is taken now and the caller
    /// sends after the returned delay.
    #[inline]
    pub fn acquire(&mut self, now: Instant) -> Span {
        self.acquire_tokens(now, 1.0)
    }

    /// Like [`AwsAdaptive::acquire`] for a send costing `amount` tokens: smithy-rs charges 1
    /// for an initial request, 5 for a retry and 10 for a retry after a timeout (reference
    /// §1c). The wait is `(amount - capacity) / fill_rate` when `amount > capacity`.
    #[inline]
    pub fn acquire_tokens(&mut self, now: Instant, amount: f64) -> Span {
        if !self.enabled {
            return Span::ZERO;
        }
        self.refill(now);
        let wait = if amount > self.capacity { (amount - self.capacity) / self.fill_rate } else { 0.0 };
        self.capacity -= amount;
        Span::from_secs_f64(wait)
    }

    /// A response arrived at `now` (botocore's `on_receiving_response`, on every attempt's
    /// answer); `throttled` if it is a throttling error (the 14 throttling codes of §1b, e.g.
    /// HTTP 429 `Throttling`, `SlowDown`).
    pub fn on_response(&mut self, now: Instant, throttled: bool) {
        let measured = self.measure(now);
        let new_rate = if throttled {
            let rate_used = if self.enabled { measured.min(self.fill_rate) } else { measured };
            self.enabled = true;
            self.cubic.error(rate_used, now)
        } else {
            self.cubic.success(now)
        };
        self.set_max_rate(now, new_rate.min(AWS_MAX_RATE_ADJUST_SCALE * measured));
    }

    /// Whether a throttling response has been seen (the bucket is enabled).
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The smoothed response rate, per second.
    pub fn measured_rate(&self) -> f64 {
        self.measured
    }

    /// The token bucket's fill rate (botocore's `max_rate`), tokens per second.
    pub fn fill_rate(&self) -> f64 {
        self.fill_rate
    }

    /// The token bucket's maximum capacity.
    pub fn max_capacity(&self) -> f64 {
        self.max_capacity
    }

    /// Tokens in the bucket as of the last refill (negative: sends already promised a wait).
    pub fn capacity(&self) -> f64 {
        self.capacity
    }

    /// CUBIC's `w_max`: the rate in use at the last throttle.
    pub fn w_max(&self) -> f64 {
        self.cubic.w_max
    }

    /// CUBIC's `K`, in seconds: how long after the last throttle the curve is back at `w_max`.
    pub fn cubic_k(&self) -> f64 {
        self.cubic.k
    }

    /// `RateClocker.record`.
    fn measure(&mut self, now: Instant) -> f64 {
        let width = AWS_RATE_BUCKET.as_ns();
        let bucket = Instant::from_ns(now.as_ns() / width * width);
        self.count += 1;
        if bucket > self.last_bucket {
            let rate = self.count as f64 / bucket.since(self.last_bucket).as_secs_f64();
            self.measured = rate * AWS_SMOOTHING + self.measured * (1.0 - AWS_SMOOTHING);
            self.count = 0;
            self.last_bucket = bucket;
        }
        self.measured
    }

    /// `TokenBucket._refill`.
    fn refill(&mut self, now: Instant) {
        let fill = now.since(self.last_refill).as_secs_f64() * self.fill_rate;
        self.capacity = self.max_capacity.min(self.capacity + fill);
        self.last_refill = now;
    }

    /// The `TokenBucket.max_rate` setter: refill at the old rate, then change it.
    fn set_max_rate(&mut self, now: Instant, value: f64) {
        self.refill(now);
        self.fill_rate = value.max(AWS_MIN_FILL_RATE);
        self.max_capacity = if value >= AWS_MIN_CAPACITY { value } else { AWS_MIN_CAPACITY };
        self.capacity = self.capacity.min(self.max_capacity);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::test_time::{MS, S, at};

    fn assert_close(actual: f64, expected: f64, what: &str) {
        assert!(
            (actual - expected).abs() <= 1e-12 * expected.abs().max(1.0),
            "{what}: {actual} vs expected {expected}"
        );
    }

    #[test]
    fn cubic_matches_the_sdk_table() {
        // A throttle at 5 s while sending at 10/s: new rate 7 (smithy-rs
        // `should_match_beta_decrease`), w_max = 10, K = (10 * 0.3 / 0.4)^(1/3).
        let mut c = Cubic::new(at(0));
        assert_eq!((c.w_max, c.k, c.last_fail), (0.0, 0.0, at(0)));
        assert_close(c.error(10.0, at(5 * S)), 7.0, "beta decrease");
        assert_eq!((c.w_max, c.last_fail), (10.0, at(5 * S)));
        // Then successes follow C (t - 5 - K)^3 + 10: aws-sdk-go-v2 adaptive_ratelimit_test.go,
        // ported to smithy-rs client_rate_limiter.rs (`test_calculated_rate_with_successes`).
        for (t, expected) in [
            (5, 7.0),
            (6, 9.64893600966),
            (7, 10.000030849917364),
            (8, 10.453284520772092),
            (9, 13.408697022224185),
            (10, 21.26626835427364),
            (11, 36.425998516920465),
        ] {
            assert_close(c.success(at(t * S)), expected, &format!("t={t}"));
        }
    }

    #[test]
    fn measured_and_fill_rates_match_the_sdk_table() {
        // smithy-rs `test_client_sending_rates` (from aws-sdk-go-v2 and botocore's functional
        // tests): one response every 0.2 s from creation at 0, throttles at 2.0 s and 3.2 s.
        // It checks the whole update order: measure, CUBIC, then min(new, 2*measured) clamped.
        let mut a = AwsAdaptive::new(at(0));
        let table = [
            (false, 0.0, 0.5),
            (false, 0.0, 0.5),
            (false, 4.800000000000001, 0.5),
            (false, 4.800000000000001, 0.5),
            (false, 4.16, 0.5),
            (false, 4.16, 0.6912),
            (false, 4.16, 1.0975999999999997),
            (false, 5.632000000000001, 1.6384000000000005),
            (false, 5.632000000000001, 2.3328),
            (true, 4.3264, 3.0284799999999996),
            (false, 4.3264, 3.48663917347026),
            (false, 4.3264, 3.821874416040255),
            (false, 5.66528, 4.053385727709987),
            (false, 5.66528, 4.200373108479454),
            (false, 4.333056, 4.282036558348658),
            (true, 4.333056, 2.99742559084406),
            (false, 4.333056, 3.4522263943863463),
        ];
        for (i, &(throttled, measured, fill)) in table.iter().enumerate() {
            let now = at((i as u64 + 1) * 200 * MS);
            a.on_response(now, throttled);
            assert_close(a.measured_rate(), measured, &format!("measured at {now:?}"));
            assert_close(a.fill_rate(), fill, &format!("fill rate at {now:?}"));
            assert_eq!(a.is_enabled(), i >= 9);
        }
    }

    #[test]
    fn the_first_rate_bucket_starts_at_the_whole_second() {
        // Created at 0.7 s: `last_bucket = floor(0.7) = 0`, so a response at 0.8 s (bucket
        // 0.5 s) closes a bucket already: rate = 1 / 0.5 s, measured = 0.8 * 2.
        let mut a = AwsAdaptive::new(at(700 * MS));
        a.on_response(at(800 * MS), false);
        assert_close(a.measured_rate(), 1.6, "measured");
        // The next bucket opens at 1.0 s: the count restarts.
        a.on_response(at(900 * MS), false);
        assert_close(a.measured_rate(), 1.6, "same bucket");
        a.on_response(at(1000 * MS), false);
        assert_close(a.measured_rate(), 0.8 * 4.0 + (1.0 - 0.8) * 1.6, "2 responses in 0.5 s");
        // The CUBIC clock starts at creation: 0.3 s later, C * 0.3^3 (capped by 2 * measured).
        assert_close(a.cubic.success(at(1000 * MS)), 0.4 * 0.3f64.powi(3), "cubic from creation");
    }

    #[test]
    fn no_delay_before_the_first_throttle() {
        let mut a = AwsAdaptive::new(at(0));
        let mut twin = AwsAdaptive::new(at(0));
        for i in 0..5_000u64 {
            let now = at(i * MS);
            assert_eq!(a.acquire(now), Span::ZERO);
            assert_eq!(a.acquire(now), Span::ZERO, "many sends at one instant");
            a.on_response(now, false);
            twin.on_response(now, false);
        }
        assert!(!a.is_enabled());
        // Nothing was taken: the bucket is where a limiter that never sent has it.
        assert_eq!(a.capacity(), twin.capacity());
        assert!(a.capacity() > 1.0);
    }

    /// Feeds `per_bucket` successful responses per 0.5 s bucket from `from` to `to`, spread
    /// evenly, and returns the time of the last one.
    fn steady(a: &mut AwsAdaptive, from: Instant, to: Instant, per_bucket: u64) -> Instant {
        let step = AWS_RATE_BUCKET.as_ns() / per_bucket;
        let mut t = from;
        while t < to {
            a.on_response(t, false);
            t += Span::from_ns(step);
        }
        t
    }

    #[test]
    fn a_throttle_sets_the_rate_to_beta_times_the_measured_rate() {
        let mut a = AwsAdaptive::new(at(0));
        // 50 responses per half second: the measured rate approaches 100/s.
        let t = steady(&mut a, at(0), at(10 * S), 50);
        a.on_response(t, true);
        let m = a.measured_rate();
        assert!((m - 100.0).abs() < 1.0, "measured {m}");
        assert!(a.is_enabled());
        assert_eq!(a.w_max(), m, "the first throttle uses the measured rate");
        assert_eq!(a.fill_rate(), AWS_CUBIC_BETA * m);
        assert_eq!(a.max_capacity(), AWS_CUBIC_BETA * m);
        assert_close(a.cubic_k(), (m * (1.0 - AWS_CUBIC_BETA) / AWS_CUBIC_C).cbrt(), "K");
        // Later throttles use min(measured, fill rate): the fill rate here, 0.7 m.
        let f = a.fill_rate();
        a.on_response(t + Span::from_millis(1), true);
        assert_eq!(a.w_max(), f.min(a.measured_rate()));
        assert_eq!(a.fill_rate(), AWS_CUBIC_BETA * a.w_max());
    }

    #[test]
    fn sends_wait_for_tokens_once_enabled() {
        let mut a = AwsAdaptive::new(at(0));
        let t = steady(&mut a, at(0), at(5 * S), 5);
        a.on_response(t, true);
        let (f, c) = (a.fill_rate(), a.capacity());
        assert!(f > 1.0 && c <= a.max_capacity());
        // n sends asked for at the same instant wait (n - c)/f each: one token every 1/f.
        // (Within a nanosecond: the capacity is decremented one token at a time.)
        let near = |got: Span, want: f64| got.as_ns().abs_diff(Span::from_secs_f64(want).as_ns()) <= 1;
        for n in 1..=20u32 {
            let expected = ((n as f64 - c) / f).max(0.0);
            assert!(near(a.acquire(t), expected), "send {n}");
        }
        assert_close(a.capacity(), c - 20.0, "debt");
        // Costlier sends (smithy-rs retry cost 5) wait proportionally longer.
        let w = a.acquire_tokens(t, 5.0);
        assert!(near(w, (25.0 - c) / f));
        // Time repays the debt at the fill rate: at the last promised send, the bucket is
        // empty and a fresh send waits one more token's worth.
        let later = t + w;
        assert!(near(a.acquire(later), 1.0 / f));
    }

    #[test]
    fn the_bucket_refills_at_the_old_rate_before_a_rate_change() {
        let mut a = AwsAdaptive::new(at(0));
        let t = steady(&mut a, at(0), at(5 * S), 5);
        a.on_response(t, true);
        // Drain the bucket to a known debt, then let 300 ms pass before a response.
        while a.capacity() > -2.0 {
            a.acquire(t);
        }
        let (f_old, c_old) = (a.fill_rate(), a.capacity());
        let t2 = t + Span::from_millis(300);
        a.on_response(t2, false);
        assert_ne!(a.fill_rate(), f_old, "the response changed the rate");
        let expected = (c_old + 0.3 * f_old).min(a.max_capacity());
        assert_close(a.capacity(), expected, "refilled at the old rate");
        // After a long idle spell the bucket is full, and a lower new maximum clamps it.
        let t3 = t2 + Span::from_secs(100);
        a.on_response(t3, true);
        assert_eq!(a.capacity(), a.max_capacity());
    }

    #[test]
    fn steady_throttling_drives_the_send_rate_down() {
        // A greedy client (always something to send, 10 ms round trips): 10 s unthrottled,
        // then every response is a throttle. Each throttle sets
        // fill = max(0.7 * min(measured, fill), 0.5) <= max(0.7 * fill, 0.5): the fill rate
        // falls by at least 30 % per response until the 0.5 tokens/s floor, where sends are
        // then paced: 0.5/s, give or take the one-token bucket.
        let mut a = AwsAdaptive::new(at(0));
        let rtt = Span::from_millis(10);
        let mut t = at(0);
        let mut fills = Vec::new();
        let mut late_sends = 0;
        while t < at(200 * S) {
            t += a.acquire(t);
            if t >= at(140 * S) {
                late_sends += 1;
            }
            t += rtt;
            let throttled = t >= at(10 * S);
            let before = a.fill_rate();
            a.on_response(t, throttled);
            if throttled {
                assert!(a.fill_rate() <= (AWS_CUBIC_BETA * before).max(AWS_MIN_FILL_RATE) + 1e-12);
                fills.push(a.fill_rate());
            }
        }
        // From about 0.7 * 100/s, the floor is reached after ln(70/0.5)/ln(1/0.7) = 14
        // throttles, and it stays there.
        assert!(fills[0] > 60.0, "the first throttle starts high: {}", fills[0]);
        let floor = fills.iter().position(|&f| f == AWS_MIN_FILL_RATE).unwrap();
        assert!((12..=15).contains(&floor), "floor reached after {floor} throttles");
        assert!(fills[floor..].iter().all(|&f| f == AWS_MIN_FILL_RATE));
        // 60 s at 0.5/s: 30 sends, +-1 for the bucket and the window edges.
        assert!((29..=31).contains(&late_sends), "{late_sends} sends in the last 60 s");
    }

    #[test]
    fn after_throttling_stops_the_rate_follows_the_cubic_curve() {
        let mut a = AwsAdaptive::new(at(0));
        // 100 responses per half second (measured about 200/s, so 2 * measured = 400/s does
        // not cap the curve until it passes 400).
        let t_fail = steady(&mut a, at(0), at(10 * S), 100);
        a.on_response(t_fail, true);
        let w_max = a.w_max();
        let k = a.cubic_k();
        assert!((w_max - 200.0).abs() < 2.0 && (k - 5.31).abs() < 0.05, "w_max {w_max}, K {k}");
        assert_eq!(a.fill_rate(), AWS_CUBIC_BETA * w_max);
        // Successes from then on, at the same pace; check the rate at chosen times.
        let mut t = t_fail;
        let checks = [0.5, 0.5 * k, k, 1.5 * k, 2.0 * k];
        for &dt in &checks {
            let target = t_fail + Span::from_secs_f64(dt);
            t = steady(&mut a, t, target, 100);
            a.on_response(target, false);
            let x = target.since(t_fail).as_secs_f64() - k;
            let curve = AWS_CUBIC_C * x * x * x + w_max;
            assert!(curve < 2.0 * a.measured_rate());
            assert_close(a.fill_rate(), curve, &format!("rate {dt} s after the throttle"));
        }
        // At t = K the curve is back at w_max; at 2K it is 1.3 w_max (C K^3 = 0.3 w_max).
        assert!((checks[2] - k).abs() < 1e-12);
        // Past 2*measured the cap takes over: at 3K the curve would be 3.4 w_max.
        let target = t_fail + Span::from_secs_f64(3.0 * k);
        steady(&mut a, t, target, 100);
        a.on_response(target, false);
        assert_eq!(a.fill_rate(), 2.0 * a.measured_rate());
    }

    #[test]
    fn size() {
        assert!(std::mem::size_of::<AwsAdaptive>() <= 80, "{}", std::mem::size_of::<AwsAdaptive>());
    }
}
