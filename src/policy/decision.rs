//! The retry loop's decision after a failed attempt (DESIGN §4): classify -> stop if not
//! retryable -> stop if attempts are used up -> delay from the backoff -> stop if the deadline
//! would pass -> retry after the delay.

use super::{Backoff, BackoffState, Outcome, RetryOn};
use crate::engine::{Instant, Span};
use rand::Rng;

/// Why an operation failed (the `failed_<reason>` columns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailReason {
    /// `max_attempts` used up.
    Exhausted,
    /// The last outcome is not in `retry_on`.
    NonRetryable,
    /// The operation's `deadline` passed or would pass before the next attempt.
    Deadline,
    /// A retry budget refused the retry.
    Budget,
    /// An open circuit breaker failed the call locally.
    Breaker,
    /// Client-side throttling rejected the call locally.
    Throttled,
    /// Still pending at the horizon.
    Unfinished,
}

impl FailReason {
    pub const ALL: [FailReason; 7] = [
        FailReason::Exhausted,
        FailReason::NonRetryable,
        FailReason::Deadline,
        FailReason::Budget,
        FailReason::Breaker,
        FailReason::Throttled,
        FailReason::Unfinished,
    ];

    /// The CSV column suffix.
    pub fn name(self) -> &'static str {
        match self {
            FailReason::Exhausted => "exhausted",
            FailReason::NonRetryable => "non_retryable",
            FailReason::Deadline => "deadline",
            FailReason::Budget => "budget",
            FailReason::Breaker => "breaker",
            FailReason::Throttled => "throttled",
            FailReason::Unfinished => "unfinished",
        }
    }
}

/// One strategy's client-side settings, in engine units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    pub backoff: Backoff,
    pub retry_on: RetryOn,
    /// Attempts per operation, the first included; `u32::MAX` = unlimited.
    pub max_attempts: u32,
    /// Per-attempt timeout; `None` = wait forever.
    pub timeout: Option<Span>,
    /// Operation deadline from its first attempt; `None` = none.
    pub deadline: Option<Span>,
}

/// What to do after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Send the next attempt after this delay.
    Retry { delay: Span },
    /// The operation fails.
    Stop(FailReason),
}

impl RetryPolicy {
    pub fn from_strategy(s: &crate::experiment::Strategy) -> RetryPolicy {
        RetryPolicy {
            backoff: Backoff::from_spec(&s.backoff),
            retry_on: RetryOn::from_items(s.client.retry_on.as_deref()),
            max_attempts: s.client.max_attempts.unwrap_or(u32::MAX),
            timeout: s.client.timeout.map(|d| d.span()),
            deadline: s.client.deadline.map(|d| d.span()),
        }
    }

    /// The time at which the client stops waiting for an attempt sent at `now`: the attempt
    /// timeout or the operation deadline, whichever comes first ([`Instant::NEVER`] = never).
    #[inline]
    pub fn gives_up_at(&self, started: Instant, now: Instant) -> Instant {
        let t = self.timeout.map_or(Instant::NEVER, |t| now + t);
        let d = self.deadline.map_or(Instant::NEVER, |d| started + d);
        t.min(d)
    }

    /// Whether the operation's deadline has passed at `now`.
    #[inline]
    pub fn past_deadline(&self, started: Instant, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now >= started + d)
    }

    /// Decides after attempt number `attempts` (1-based, so it is also the retry number `k` of
    /// the next retry) failed with `outcome` at `now`.
    #[inline]
    pub fn after_failure<R: Rng + ?Sized>(
        &self,
        outcome: Outcome,
        attempts: u32,
        started: Instant,
        now: Instant,
        state: &mut BackoffState,
        rng: &mut R,
    ) -> Decision {
        if outcome == Outcome::Timeout && self.past_deadline(started, now) {
            return Decision::Stop(FailReason::Deadline);
        }
        if !self.retry_on.retries(outcome) {
            return Decision::Stop(FailReason::NonRetryable);
        }
        if attempts >= self.max_attempts {
            return Decision::Stop(FailReason::Exhausted);
        }
        let delay = self.backoff.delay(attempts, state, rng);
        if let Some(d) = self.deadline
            && now + delay >= started + d
        {
            return Decision::Stop(FailReason::Deadline);
        }
        Decision::Retry { delay }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn ns(n: u64) -> Span {
        Span::from_ns(n)
    }

    fn at(n: u64) -> Instant {
        Instant::from_ns(n)
    }

    fn policy(max_attempts: u32, deadline: Option<u64>) -> RetryPolicy {
        RetryPolicy {
            backoff: Backoff::Constant { base_ns: 100.0 },
            retry_on: RetryOn::default(),
            max_attempts,
            timeout: Some(ns(50)),
            deadline: deadline.map(ns),
        }
    }

    fn decide(p: &RetryPolicy, outcome: Outcome, attempts: u32, now: u64) -> Decision {
        let mut st = p.backoff.initial_state();
        p.after_failure(outcome, attempts, at(0), at(now), &mut st, &mut Xoshiro256PlusPlus::seed_from_u64(1))
    }

    #[test]
    fn follows_design_order() {
        let p = policy(3, Some(1000));
        assert_eq!(decide(&p, Outcome::Status(503), 1, 0), Decision::Retry { delay: ns(100) });
        assert_eq!(decide(&p, Outcome::Status(400), 1, 0), Decision::Stop(FailReason::NonRetryable));
        assert_eq!(decide(&p, Outcome::Status(503), 3, 0), Decision::Stop(FailReason::Exhausted));
        // The next attempt would start at 950 + 100 >= 1000: the deadline would pass.
        assert_eq!(decide(&p, Outcome::Status(503), 1, 950), Decision::Stop(FailReason::Deadline));
        // An attempt cut by the deadline is a deadline failure, not a timeout to retry.
        assert_eq!(decide(&p, Outcome::Timeout, 1, 1000), Decision::Stop(FailReason::Deadline));
        assert_eq!(decide(&p, Outcome::Timeout, 1, 10), Decision::Retry { delay: ns(100) });
    }

    #[test]
    fn unlimited_attempts_and_give_up_time() {
        let p = policy(u32::MAX, None);
        assert_eq!(decide(&p, Outcome::Status(429), 1_000_000, 0), Decision::Retry { delay: ns(100) });
        assert_eq!(p.gives_up_at(at(0), at(10)), at(60));
        let d = policy(3, Some(30));
        assert_eq!(d.gives_up_at(at(0), at(10)), at(30), "the deadline cuts the attempt short");
        let forever = RetryPolicy { timeout: None, ..policy(3, None) };
        assert_eq!(forever.gives_up_at(at(0), at(10)), Instant::NEVER);
    }
}
