//! The retry loop's decision after a failed attempt (DESIGN §4), in this order:
//!
//! 1. an attempt cut short by the operation's deadline ends it (`deadline`);
//! 2. an outcome not in `retry_on` ends it (`non_retryable`);
//! 3. `max_attempts` used up ends it (`exhausted`);
//! 4. the delay is drawn from the backoff;
//! 5. a retry that could not start before the deadline ends it (`deadline`);
//! 6. the client's controls (budgets, breakers: [`RetryPermission`]) may refuse the retry
//!    (`budget`, `breaker`, ...);
//! 7. otherwise: retry after the delay.
//!
//! The delay is drawn before the controls are asked so that a control never takes a token for
//! a retry that the deadline then forbids. The decision reads one small struct,
//! [`FailedAttempt`], so that new inputs do not grow its parameter list.

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

/// What the decision needs to know about the attempt that just failed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FailedAttempt {
    pub outcome: Outcome,
    /// 1-based number of the attempt that failed; also `k`, the number of the next retry.
    pub attempt: u32,
    /// When the operation's first attempt was sent.
    pub started: Instant,
    pub now: Instant,
}

/// The client-side controls' say on a retry (step 6). `()` permits every retry: no controls.
pub trait RetryPermission {
    /// May the operation retry after `failed`? An error is the reason it may not.
    fn permit_retry(&mut self, failed: &FailedAttempt) -> Result<(), FailReason>;
}

impl RetryPermission for () {
    #[inline]
    fn permit_retry(&mut self, _: &FailedAttempt) -> Result<(), FailReason> {
        Ok(())
    }
}

impl RetryPolicy {
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

    /// Decides what follows `failed` (see the module docs for the order). `state` is the
    /// operation's backoff memory, `rng` its jitter stream.
    #[inline]
    pub fn after_failure<P: RetryPermission + ?Sized, R: Rng + ?Sized>(
        &self,
        failed: &FailedAttempt,
        state: &mut BackoffState,
        controls: &mut P,
        rng: &mut R,
    ) -> Decision {
        let FailedAttempt { outcome, attempt, started, now } = *failed;
        if outcome == Outcome::Timeout && self.past_deadline(started, now) {
            return Decision::Stop(FailReason::Deadline);
        }
        if !self.retry_on.retries(outcome) {
            return Decision::Stop(FailReason::NonRetryable);
        }
        if attempt >= self.max_attempts {
            return Decision::Stop(FailReason::Exhausted);
        }
        let delay = self.backoff.delay(attempt, state, rng);
        if let Some(d) = self.deadline
            && now + delay >= started + d
        {
            return Decision::Stop(FailReason::Deadline);
        }
        if let Err(reason) = controls.permit_retry(failed) {
            return Decision::Stop(reason);
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

    fn failed(outcome: Outcome, attempt: u32, now: u64) -> FailedAttempt {
        FailedAttempt { outcome, attempt, started: at(0), now: at(now) }
    }

    fn decide_with(p: &RetryPolicy, f: FailedAttempt, controls: &mut impl RetryPermission) -> Decision {
        let mut st = p.backoff.initial_state();
        p.after_failure(&f, &mut st, controls, &mut Xoshiro256PlusPlus::seed_from_u64(1))
    }

    fn decide(p: &RetryPolicy, outcome: Outcome, attempt: u32, now: u64) -> Decision {
        decide_with(p, failed(outcome, attempt, now), &mut ())
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

    /// Counts the questions and refuses with a given reason.
    struct Refuse(FailReason, u32);
    impl RetryPermission for Refuse {
        fn permit_retry(&mut self, _: &FailedAttempt) -> Result<(), FailReason> {
            self.1 += 1;
            Err(self.0)
        }
    }

    #[test]
    fn controls_are_asked_last() {
        let p = policy(3, Some(1000));
        let mut budget = Refuse(FailReason::Budget, 0);
        let retryable = failed(Outcome::Status(503), 1, 0);
        assert_eq!(decide_with(&p, retryable, &mut budget), Decision::Stop(FailReason::Budget));
        assert_eq!(budget.1, 1);
        // Not asked when the operation ends anyway: no token is taken for a retry that the
        // attempt limit, the classification or the deadline forbids.
        for f in [
            failed(Outcome::Status(400), 1, 0),
            failed(Outcome::Status(503), 3, 0),
            failed(Outcome::Status(503), 1, 950),
        ] {
            assert_ne!(decide_with(&p, f, &mut budget), Decision::Stop(FailReason::Budget));
        }
        assert_eq!(budget.1, 1);
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
