//! `[server.rate_limit]`: a token bucket in front of the server (DESIGN §3.3), the second stage
//! of the admission pipeline.
//!
//! The bucket holds at most `burst` tokens and starts full; it refills continuously at `rate`
//! tokens per second. An arriving request takes one token and goes on; a request that finds
//! less than one token is answered **429 at once**, without any work, with a Retry-After equal
//! to the time until the bucket next holds a whole token:
//!
//! - `retry_after = "seconds"` (the default): rounded **up** to whole seconds, as HTTP's
//!   `Retry-After: <delay-seconds>` (RFC 9110 §10.2.3) can only say; a client that obeys it
//!   comes back at the earliest when the token is there, often later;
//! - `retry_after = "exact"`: the exact wait, at the millisecond resolution of
//!   [`RetryAfterCode`] (rounded up to the millisecond, so a client that obeys it never comes
//!   back before the token).
//!
//! A rejected request takes no token (it does not make the wait longer for the others).
//! Tokens are an `f64` updated at each arrival: `min(burst, tokens + rate x elapsed)`.

use super::{Admission, Reply, RetryAfterCode};
use crate::engine::{Instant, NS_PER_S, Span};
use crate::policy::Outcome;

/// The status a rate-limited request is answered with.
pub const RATE_LIMITED: u16 = 429;

/// Rounding slack when counting tokens: a request that arrives at the nanosecond the
/// Retry-After pointed to finds its token, even if floating point left the bucket a hair short.
const TOKEN_EPSILON: f64 = 1e-9;

pub struct RateLimit {
    /// Tokens per nanosecond.
    per_ns: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
    whole_seconds: bool,
}

/// The rate limiter's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimitParams {
    pub rate_per_s: f64,
    /// The bucket's size, full at the start.
    pub burst: f64,
    /// Retry-After in whole seconds, rounded up (as HTTP's header is), not in milliseconds.
    pub retry_after_whole_seconds: bool,
}

impl RateLimit {
    pub fn new(params: &RateLimitParams) -> RateLimit {
        RateLimit {
            per_ns: params.rate_per_s / NS_PER_S,
            burst: params.burst,
            tokens: params.burst,
            last: Instant::ZERO,
            whole_seconds: params.retry_after_whole_seconds,
        }
    }

    /// The stage: a token lets the request through; without one it is answered 429 with the
    /// Retry-After of [the module docs](self).
    #[inline]
    pub fn admit(&mut self, now: Instant) -> Admission {
        let elapsed = now.since(self.last).as_ns_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.per_ns).min(self.burst);
        if self.tokens >= 1.0 - TOKEN_EPSILON {
            self.tokens -= 1.0;
            return Admission::Continue;
        }
        let wait = self.until_token();
        let retry_after = if self.whole_seconds {
            RetryAfterCode::after(Span::from_secs(wait.as_ns().div_ceil(1_000_000_000)))
        } else {
            RetryAfterCode::after(wait)
        };
        Admission::Answer(Reply { outcome: Outcome::Status(RATE_LIMITED), retry_after })
    }

    /// The time until the bucket holds one whole token, to the nearest nanosecond (at least
    /// 1 ns: a token that is already there is taken).
    fn until_token(&self) -> Span {
        let ns = ((1.0 - self.tokens) / self.per_ns).round();
        Span::from_ns((ns as u64).max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::RetryAfter;

    const S: u64 = 1_000_000_000;
    const MS: u64 = 1_000_000;

    /// Retry-After rounded up to whole seconds, or exact to the millisecond.
    const SECONDS: bool = true;
    const EXACT: bool = false;

    fn limiter(rate_per_s: f64, burst: f64, retry_after_whole_seconds: bool) -> RateLimit {
        RateLimit::new(&RateLimitParams { rate_per_s, burst, retry_after_whole_seconds })
    }

    fn t(ns: u64) -> Instant {
        Instant::from_ns(ns)
    }

    fn retry_after(a: Admission) -> Span {
        match a {
            Admission::Answer(r) => {
                assert_eq!(r.outcome, Outcome::Status(429));
                match r.retry_after.decode() {
                    Some(RetryAfter::After(s)) => s,
                    other => panic!("{other:?}"),
                }
            }
            other => panic!("expected a 429, got {other:?}"),
        }
    }

    #[test]
    fn bursts_up_to_burst_then_429() {
        let mut r = limiter(10.0, 5.0, EXACT);
        for _ in 0..5 {
            assert_eq!(r.admit(t(0)), Admission::Continue);
        }
        // Empty: the next token is 100 ms away.
        assert_eq!(retry_after(r.admit(t(0))), Span::from_millis(100));
        // 30 ms later, 70 ms to go; the refused request took nothing.
        assert_eq!(retry_after(r.admit(t(30 * MS))), Span::from_millis(70));
        assert_eq!(r.admit(t(100 * MS)), Admission::Continue);
        // A long pause refills to burst, not beyond.
        for _ in 0..5 {
            assert_eq!(r.admit(t(100 * S)), Admission::Continue);
        }
        assert!(matches!(r.admit(t(100 * S)), Admission::Answer(_)));
    }

    #[test]
    fn seconds_round_up_exact_rounds_to_the_millisecond() {
        let mut s = limiter(10.0, 1.0, SECONDS);
        let mut e = limiter(10.0, 1.0, EXACT);
        assert_eq!(s.admit(t(0)), Admission::Continue);
        assert_eq!(e.admit(t(0)), Admission::Continue);
        // 100 ms to the next token: 1 s in whole seconds, 100 ms exact.
        assert_eq!(retry_after(s.admit(t(0))), Span::from_secs(1));
        assert_eq!(retry_after(e.admit(t(0))), Span::from_millis(100));
        // 99.5 ms to go: the exact form rounds up to 100 ms (never early).
        assert_eq!(retry_after(e.admit(t(MS / 2))), Span::from_millis(100));
        // A slow bucket: 0.4 tokens/s, 2.5 s per token: 3 s vs 2.5 s.
        let mut s = limiter(0.4, 1.0, SECONDS);
        let mut e = limiter(0.4, 1.0, EXACT);
        s.admit(t(0));
        e.admit(t(0));
        assert_eq!(retry_after(s.admit(t(0))), Span::from_secs(3));
        assert_eq!(retry_after(e.admit(t(0))), Span::from_millis(2500));
        // Exactly 2 s to go stays 2 s.
        assert_eq!(retry_after(s.admit(t(S / 2))), Span::from_secs(2));
    }

    #[test]
    fn steady_state_lets_rate_through() {
        // 1000 arrivals per second evenly spaced for 10 s against 100 tokens/s and a burst of
        // 20: the burst, then one per 10 ms.
        let mut r = limiter(100.0, 20.0, EXACT);
        let through = (0..10_000u64).filter(|i| r.admit(t(i * MS)) == Admission::Continue).count();
        assert!((through as i64 - (20 + 1000)).abs() <= 1, "{through}");
    }
}
