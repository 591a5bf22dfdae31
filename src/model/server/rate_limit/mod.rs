//! `[server.rate_limit]`: the rate limiter in front of the server (DESIGN §3.3), the second
//! stage of the admission pipeline, one of six production algorithms (`kind`; the sources
//! and defaults are in docs/overload-and-topology.md §1.4):
//!
//! | kind | file | follows |
//! |---|---|---|
//! | `token-bucket` | [`token_bucket`] | continuous refill; or Envoy's local rate limit (`fill_interval`, `tokens_per_fill`) |
//! | `leaky-bucket` | [`leaky_bucket`] | nginx `limit_req`: `burst` delayed, beyond it rejected; `nodelay` |
//! | `fixed-window` | [`fixed_window`] | resilience4j `AtomicRateLimiter`: cycles from the start, reservations up to `max_wait` |
//! | `sliding-window` | [`sliding_window`] | .NET `SlidingWindowRateLimiter`: a window of `segments` segments |
//! | `sliding-log` | [`sliding_log`] | the sorted-set log: at most `limit` admissions in any `window` |
//! | `gcra` | [`gcra`] | redis-cell `CL.THROTTLE` |
//!
//! Each kind is a pure state machine that answers an arrival at `now` with a [`Verdict`]:
//! admit it, hold it for a while and then admit it (`leaky-bucket` within its burst,
//! `fixed-window` with a reservation), or refuse it, with the time until a request arriving
//! then would be admitted. This stage turns a refusal into an answer at once, without any
//! work: `status` (429, or the kind's documented status) with that time as its Retry-After:
//!
//! - `retry_after = "seconds"` (the default): rounded **up** to whole seconds, as HTTP's
//!   `Retry-After: <delay-seconds>` (RFC 9110 §10.2.3) can only say; a client that obeys it
//!   comes back at the earliest when the limiter would admit it, often later;
//! - `retry_after = "exact"`: the exact wait, at the millisecond resolution of
//!   [`RetryAfterCode`] (rounded up to the millisecond, so a client that obeys it never comes
//!   back before it would be admitted);
//! - `retry_after = "none"`: no Retry-After (nginx sends none).
//!
//! A refused request changes no state (it does not make the wait longer for the others),
//! except in a sliding log's or window's clock, which only moves forward.

pub mod fixed_window;
pub mod gcra;
pub mod leaky_bucket;
pub mod sliding_log;
pub mod sliding_window;
pub mod token_bucket;

use super::{Admission, Reply, RetryAfterCode};
use crate::engine::{Instant, Span};
use crate::policy::Outcome;
use fixed_window::FixedWindow;
use gcra::Gcra;
use leaky_bucket::LeakyBucket;
use sliding_log::SlidingLog;
use sliding_window::SlidingWindow;
use token_bucket::TokenBucket;

/// The status a rate-limited request is answered with, unless its kind documents another
/// (nginx: 503) or the file sets `status`.
pub const RATE_LIMITED: u16 = 429;

/// What a limiter does with one arriving request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// On to the next stage now.
    Admit,
    /// Admitted, but held at the server for this long before it goes on (no work meanwhile).
    Delay(Span),
    /// Refused; a request arriving this much later would be admitted (if nothing else arrives
    /// meanwhile). `Span::MAX`: never.
    Reject(Span),
}

/// How the refusal's Retry-After is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryAfterFormat {
    /// Whole seconds, rounded up, as HTTP's `Retry-After: <delay-seconds>`.
    Seconds,
    /// The exact wait, rounded up to the millisecond.
    Exact,
    /// No Retry-After.
    None,
}

/// One kind's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LimiterParams {
    TokenBucket(token_bucket::TokenBucketParams),
    LeakyBucket(leaky_bucket::LeakyBucketParams),
    FixedWindow(fixed_window::FixedWindowParams),
    SlidingWindow(sliding_window::SlidingWindowParams),
    SlidingLog(sliding_log::SlidingLogParams),
    Gcra(gcra::GcraParams),
}

/// The rate limiter's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimitParams {
    pub limiter: LimiterParams,
    /// The status of a refusal.
    pub status: u16,
    pub retry_after: RetryAfterFormat,
}

/// The state of one kind.
enum Limiter {
    TokenBucket(TokenBucket),
    LeakyBucket(LeakyBucket),
    FixedWindow(FixedWindow),
    SlidingWindow(SlidingWindow),
    SlidingLog(SlidingLog),
    Gcra(Gcra),
}

/// The stage.
pub struct RateLimit {
    limiter: Limiter,
    status: u16,
    retry_after: RetryAfterFormat,
}

impl RateLimit {
    pub fn new(params: &RateLimitParams) -> RateLimit {
        let limiter = match &params.limiter {
            LimiterParams::TokenBucket(p) => Limiter::TokenBucket(TokenBucket::new(p)),
            LimiterParams::LeakyBucket(p) => Limiter::LeakyBucket(LeakyBucket::new(p)),
            LimiterParams::FixedWindow(p) => Limiter::FixedWindow(FixedWindow::new(p)),
            LimiterParams::SlidingWindow(p) => Limiter::SlidingWindow(SlidingWindow::new(p)),
            LimiterParams::SlidingLog(p) => Limiter::SlidingLog(SlidingLog::new(p)),
            LimiterParams::Gcra(p) => Limiter::Gcra(Gcra::new(p)),
        };
        RateLimit { limiter, status: params.status, retry_after: params.retry_after }
    }

    /// The stage: the kind's verdict on a request arriving at `now`, as an admission.
    #[inline]
    pub fn admit(&mut self, now: Instant) -> Admission {
        let verdict = match &mut self.limiter {
            Limiter::TokenBucket(l) => l.decide(now),
            Limiter::LeakyBucket(l) => l.decide(now),
            Limiter::FixedWindow(l) => l.decide(now),
            Limiter::SlidingWindow(l) => l.decide(now),
            Limiter::SlidingLog(l) => l.decide(now),
            Limiter::Gcra(l) => l.decide(now, 1).verdict(),
        };
        match verdict {
            Verdict::Admit => Admission::Continue,
            Verdict::Delay(wait) => Admission::Delay(wait),
            Verdict::Reject(wait) => Admission::Answer(Reply {
                outcome: Outcome::Status(self.status),
                retry_after: self.retry_after(wait),
            }),
        }
    }

    /// The Retry-After of a refusal whose request would be admitted `wait` later.
    fn retry_after(&self, wait: Span) -> RetryAfterCode {
        match self.retry_after {
            RetryAfterFormat::None => RetryAfterCode::NONE,
            _ if wait == Span::MAX => RetryAfterCode::NONE,
            RetryAfterFormat::Seconds => {
                RetryAfterCode::after(Span::from_secs(wait.as_ns().div_ceil(1_000_000_000)))
            }
            RetryAfterFormat::Exact => RetryAfterCode::after(wait),
        }
    }
}

/// Shared by the kinds' tests: instants and spans in readable units.
#[cfg(test)]
pub(crate) mod test_time {
    use crate::engine::{Instant, Span};

    pub const S: u64 = 1_000_000_000;
    pub const MS: u64 = 1_000_000;

    pub fn t(ns: u64) -> Instant {
        Instant::from_ns(ns)
    }

    pub fn ms(n: u64) -> Span {
        Span::from_millis(n)
    }
}

#[cfg(test)]
mod tests {
    use super::test_time::*;
    use super::*;
    use crate::policy::RetryAfter;

    fn stage(limiter: LimiterParams, status: u16, retry_after: RetryAfterFormat) -> RateLimit {
        RateLimit::new(&RateLimitParams { limiter, status, retry_after })
    }

    fn window(limit: u32) -> LimiterParams {
        LimiterParams::FixedWindow(fixed_window::FixedWindowParams {
            limit,
            window: Span::from_secs(1),
            max_wait: Span::ZERO,
        })
    }

    fn answer(a: Admission) -> (Outcome, Option<RetryAfter>) {
        match a {
            Admission::Answer(r) => (r.outcome, r.retry_after.decode()),
            other => panic!("expected an answer, got {other:?}"),
        }
    }

    #[test]
    fn a_refusal_carries_the_status_and_the_wait_in_the_chosen_format() {
        // One request per 1 s window: the second, 250.5 ms in, waits 749.5 ms.
        for (format, expected) in [
            (RetryAfterFormat::Seconds, Some(RetryAfter::After(Span::from_secs(1)))),
            (RetryAfterFormat::Exact, Some(RetryAfter::After(ms(750)))),
            (RetryAfterFormat::None, None),
        ] {
            let mut r = stage(window(1), 503, format);
            assert_eq!(r.admit(t(0)), Admission::Continue);
            assert_eq!(answer(r.admit(t(250 * MS + MS / 2))), (Outcome::Status(503), expected));
        }
    }

    #[test]
    fn a_delay_is_passed_on() {
        let leaky = LimiterParams::LeakyBucket(leaky_bucket::LeakyBucketParams {
            rate_per_s: 1.0,
            burst: 5,
            nodelay: false,
        });
        let mut r = stage(leaky, 503, RetryAfterFormat::Seconds);
        assert_eq!(r.admit(t(0)), Admission::Continue);
        assert_eq!(r.admit(t(0)), Admission::Delay(Span::from_secs(1)));
    }
}
