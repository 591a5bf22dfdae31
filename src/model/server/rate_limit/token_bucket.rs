//! `kind = "token-bucket"` (the default kind): a bucket of at most `burst` tokens, full at the
//! start. An arriving request takes one token and goes on; a request that finds less than one
//! token is refused, with the time until the bucket next holds a whole token. A refused
//! request takes nothing. Two ways to refill:
//!
//! - continuous (the default): `rate` tokens per second, kept as an `f64` updated at each
//!   arrival: `min(burst, tokens + rate x elapsed)`;
//! - discrete, as Envoy's local rate limit (docs/overload-and-topology.md §1.4,
//!   envoy/type/v3/token_bucket.proto): a timer started with the limiter adds
//!   `tokens_per_fill` tokens every `fill_interval` (at `fill_interval`, `2 fill_interval`,
//!   ...), up to `burst` (Envoy's `max_tokens`). A refused request waits for the next fill, so
//!   every request refused in one interval is told to come back at the same instant.

use super::Verdict;
use crate::engine::{Instant, NS_PER_S, Span};

/// Rounding slack when counting tokens: a request that arrives at the nanosecond the
/// Retry-After pointed to finds its token, even if floating point left the bucket a hair short.
const TOKEN_EPSILON: f64 = 1e-9;

/// How the bucket refills.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Refill {
    /// `rate_per_s` tokens per second, continuously.
    Continuous { rate_per_s: f64 },
    /// `tokens_per_fill` tokens at every multiple of `fill_interval` (Envoy).
    Discrete { fill_interval: Span, tokens_per_fill: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokenBucketParams {
    pub refill: Refill,
    /// The bucket's size, full at the start.
    pub burst: f64,
}

pub struct TokenBucket {
    /// Tokens per nanosecond (continuous refill).
    per_ns: f64,
    /// The fill interval (0 with continuous refill) and the tokens each fill adds.
    fill_interval_ns: u64,
    tokens_per_fill: f64,
    burst: f64,
    tokens: f64,
    /// The last arrival (continuous), or the last fill counted (discrete).
    last: Instant,
}

impl TokenBucket {
    pub fn new(params: &TokenBucketParams) -> TokenBucket {
        let (per_ns, fill_interval_ns, tokens_per_fill) = match params.refill {
            Refill::Continuous { rate_per_s } => (rate_per_s / NS_PER_S, 0, 0.0),
            Refill::Discrete { fill_interval, tokens_per_fill } => {
                (0.0, fill_interval.as_ns(), f64::from(tokens_per_fill))
            }
        };
        TokenBucket {
            per_ns,
            fill_interval_ns,
            tokens_per_fill,
            burst: params.burst,
            tokens: params.burst,
            last: Instant::ZERO,
        }
    }

    /// A token lets the request through; without one it is refused until the next token.
    #[inline]
    pub fn decide(&mut self, now: Instant) -> Verdict {
        if self.fill_interval_ns > 0 {
            return self.decide_discrete(now);
        }
        let elapsed = now.since(self.last).as_ns_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.per_ns).min(self.burst);
        if self.tokens >= 1.0 - TOKEN_EPSILON {
            self.tokens -= 1.0;
            return Verdict::Admit;
        }
        Verdict::Reject(self.until_token())
    }

    /// The time until the bucket holds one whole token, to the nearest nanosecond (at least
    /// 1 ns: a token that is already there is taken).
    fn until_token(&self) -> Span {
        let ns = ((1.0 - self.tokens) / self.per_ns).round();
        Span::from_ns((ns as u64).max(1))
    }

    /// Envoy's timer: the fills since the last one counted, then a token or the next fill.
    fn decide_discrete(&mut self, now: Instant) -> Verdict {
        let interval = self.fill_interval_ns;
        let fills_then = self.last.as_ns() / interval;
        let fills_now = now.as_ns() / interval;
        if fills_now > fills_then {
            let added = (fills_now - fills_then) as f64 * self.tokens_per_fill;
            self.tokens = (self.tokens + added).min(self.burst);
            self.last = Instant::from_ns(fills_now * interval);
        }
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Verdict::Admit;
        }
        // `tokens_per_fill` >= 1 and `burst` >= 1: the next fill brings a whole token.
        Verdict::Reject(Instant::from_ns((fills_now + 1) * interval).since(now))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_time::*;
    use super::*;

    fn bucket(rate_per_s: f64, burst: f64) -> TokenBucket {
        TokenBucket::new(&TokenBucketParams { refill: Refill::Continuous { rate_per_s }, burst })
    }

    fn envoy(fill_interval: Span, tokens_per_fill: u32, burst: f64) -> TokenBucket {
        TokenBucket::new(&TokenBucketParams {
            refill: Refill::Discrete { fill_interval, tokens_per_fill },
            burst,
        })
    }

    #[test]
    fn bursts_up_to_burst_then_refuses() {
        let mut r = bucket(10.0, 5.0);
        for _ in 0..5 {
            assert_eq!(r.decide(t(0)), Verdict::Admit);
        }
        // Empty: the next token is 100 ms away.
        assert_eq!(r.decide(t(0)), Verdict::Reject(ms(100)));
        // 30 ms later, 70 ms to go; the refused request took nothing.
        assert_eq!(r.decide(t(30 * MS)), Verdict::Reject(ms(70)));
        assert_eq!(r.decide(t(100 * MS)), Verdict::Admit);
        // A long pause refills to burst, not beyond.
        for _ in 0..5 {
            assert_eq!(r.decide(t(100 * S)), Verdict::Admit);
        }
        assert!(matches!(r.decide(t(100 * S)), Verdict::Reject(_)));
    }

    #[test]
    fn the_wait_is_exact_to_the_nanosecond() {
        // A slow bucket: 0.4 tokens/s, 2.5 s per token; 0.5 ms later, 2.4995 s to go.
        let mut r = bucket(0.4, 1.0);
        assert_eq!(r.decide(t(0)), Verdict::Admit);
        assert_eq!(r.decide(t(0)), Verdict::Reject(ms(2500)));
        assert_eq!(r.decide(t(MS / 2)), Verdict::Reject(Span::from_ns(2_499_500_000)));
    }

    #[test]
    fn steady_state_lets_rate_through() {
        // 1000 arrivals per second evenly spaced for 10 s against 100 tokens/s and a burst of
        // 20: the burst, then one per 10 ms.
        let mut r = bucket(100.0, 20.0);
        let through = (0..10_000u64).filter(|i| r.decide(t(i * MS)) == Verdict::Admit).count();
        assert!((through as i64 - (20 + 1000)).abs() <= 1, "{through}");
    }

    #[test]
    fn envoys_bucket_refills_at_each_fill_interval() {
        // max_tokens 3, 2 tokens every 100 ms: three at once, then wait for the fill at 100 ms.
        let mut r = envoy(ms(100), 2, 3.0);
        for _ in 0..3 {
            assert_eq!(r.decide(t(0)), Verdict::Admit);
        }
        assert_eq!(r.decide(t(0)), Verdict::Reject(ms(100)));
        assert_eq!(r.decide(t(99 * MS)), Verdict::Reject(ms(1)));
        // The fill at 100 ms brings two tokens, not continuous ones.
        assert_eq!(r.decide(t(100 * MS)), Verdict::Admit);
        assert_eq!(r.decide(t(150 * MS)), Verdict::Admit);
        assert_eq!(r.decide(t(199 * MS)), Verdict::Reject(ms(1)));
        // Five fills while idle refill to max_tokens (3), not 10.
        for _ in 0..3 {
            assert_eq!(r.decide(t(700 * MS)), Verdict::Admit);
        }
        assert_eq!(r.decide(t(700 * MS)), Verdict::Reject(ms(100)));
    }

    #[test]
    fn envoys_refused_requests_all_point_at_the_next_fill() {
        // One token per second: every request refused during a second is sent to the same
        // instant, the next whole second.
        let mut r = envoy(Span::from_secs(1), 1, 1.0);
        assert_eq!(r.decide(t(0)), Verdict::Admit);
        for at in [10 * MS, 400 * MS, 999 * MS] {
            assert_eq!(r.decide(t(at)), Verdict::Reject(t(S).since(t(at))));
        }
        assert_eq!(r.decide(t(S)), Verdict::Admit);
    }
}
