//! The retry loop's decision after a failed attempt (DESIGN §4), in this order:
//!
//! 1. an attempt cut short by the operation's deadline ends it (`deadline`);
//! 2. an outcome not in `retry_on` ends it (`non_retryable`), and so does an answer that says
//!    "overloaded; don't retry" when the client honours it (`honor_dont_retry`);
//! 3. `max_attempts` used up ends it (`exhausted`);
//! 4. the delay: the backoff's, or the server's Retry-After when honoured
//!    ([`RetryAfterPolicy`]; a gRPC "don't retry" pushback ends it as `non_retryable`);
//! 5. a retry that could not start before the deadline ends it (`deadline`);
//! 6. the client's controls (budgets, breakers: [`RetryPermission`]) may refuse the retry
//!    (`budget`, `breaker`, ...);
//! 7. otherwise: retry after the delay.
//!
//! The delay is drawn before the controls are asked so that a control never takes a token for
//! a retry that the deadline then forbids. The decision reads one small struct,
//! [`FailedAttempt`], so that new inputs do not grow its parameter list.
//!
//! A *plain* policy ([`RetryPolicy::is_plain`]: no timeout, no deadline, Retry-After and
//! "don't retry" ignored) only ever takes steps 2, 3, 4 (its backoff) and 6. For it,
//! [`RetryPolicy::after_failure_plain`] is the same decision compiled without the other steps'
//! tests: a run of plain clients pays nothing for features it does not use.

use super::retry_after::{RetryAfter, RetryAfterPolicy, RetryDelay};
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
    /// An open circuit breaker failed the call locally, or a retry-ratio breaker refused its
    /// retry.
    Breaker,
    /// Client-side throttling rejected the call locally.
    Throttled,
    /// The client's bulkhead was full and its wait for a permit ran out (or it may not wait).
    Bulkhead,
    /// The client's adaptive concurrency limit was reached: the attempt was rejected locally.
    Limited,
    /// Still pending at the horizon.
    Unfinished,
}

impl FailReason {
    pub const ALL: [FailReason; 9] = [
        FailReason::Exhausted,
        FailReason::NonRetryable,
        FailReason::Deadline,
        FailReason::Budget,
        FailReason::Breaker,
        FailReason::Throttled,
        FailReason::Bulkhead,
        FailReason::Limited,
        FailReason::Unfinished,
    ];

    /// The CSV column suffix.
    pub const fn name(self) -> &'static str {
        match self {
            FailReason::Exhausted => "exhausted",
            FailReason::NonRetryable => "non_retryable",
            FailReason::Deadline => "deadline",
            FailReason::Budget => "budget",
            FailReason::Breaker => "breaker",
            FailReason::Throttled => "throttled",
            FailReason::Bulkhead => "bulkhead",
            FailReason::Limited => "limited",
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
    /// Whether and how the server's Retry-After replaces the backoff.
    pub retry_after: RetryAfterPolicy,
    /// Do not retry an answer that says "overloaded; don't retry".
    pub honor_dont_retry: bool,
}

/// What to do after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Send the next attempt after this delay; `reset_backoff`: the backoff starts over (a gRPC
    /// pushback), so the next failure is retry 1 for its formula.
    Retry { delay: Span, reset_backoff: bool },
    /// The operation fails.
    Stop(FailReason),
}

/// What the decision needs to know about the attempt that just failed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FailedAttempt {
    pub outcome: Outcome,
    /// 1-based number of the attempt that failed.
    pub attempt: u32,
    /// The number of the next retry for the backoff's formula: `attempt`, or fewer after the
    /// backoff was reset (a gRPC pushback).
    pub k: u32,
    /// The answer's Retry-After, if it had one.
    pub retry_after: Option<RetryAfter>,
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

    /// Whether the policy is *plain*: no timeout, no deadline, and neither the server's
    /// Retry-After nor its "don't retry" is honoured. Its decisions then depend only on the
    /// outcome, `retry_on`, `max_attempts`, the backoff and the controls, and a client never
    /// stops waiting for an answer ([`RetryPolicy::gives_up_at`] is never).
    pub fn is_plain(&self) -> bool {
        self.timeout.is_none() && self.deadline.is_none() && !self.retry_after.honor && !self.honor_dont_retry
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
        self.decide::<false, P, R>(failed, state, controls, rng)
    }

    /// [`RetryPolicy::after_failure`] for a plain policy ([`RetryPolicy::is_plain`]), compiled
    /// without the steps a plain policy never takes. Same decisions, same draws.
    #[inline]
    pub fn after_failure_plain<P: RetryPermission + ?Sized, R: Rng + ?Sized>(
        &self,
        failed: &FailedAttempt,
        state: &mut BackoffState,
        controls: &mut P,
        rng: &mut R,
    ) -> Decision {
        debug_assert!(self.is_plain(), "only a plain policy may skip the deadline and Retry-After steps");
        self.decide::<true, P, R>(failed, state, controls, rng)
    }

    /// The decision; with `PLAIN` the deadline and Retry-After steps are compiled out (they
    /// would not fire: see [`RetryPolicy::is_plain`]).
    #[inline(always)]
    fn decide<const PLAIN: bool, P: RetryPermission + ?Sized, R: Rng + ?Sized>(
        &self,
        failed: &FailedAttempt,
        state: &mut BackoffState,
        controls: &mut P,
        rng: &mut R,
    ) -> Decision {
        let FailedAttempt { outcome, attempt, k, started, now, retry_after } = *failed;
        if !PLAIN && matches!(outcome, Outcome::Timeout) && self.past_deadline(started, now) {
            return Decision::Stop(FailReason::Deadline);
        }
        if !self.retry_on.retries(outcome)
            || (!PLAIN && self.honor_dont_retry && retry_after == Some(RetryAfter::DontRetry))
        {
            return Decision::Stop(FailReason::NonRetryable);
        }
        if attempt >= self.max_attempts {
            return Decision::Stop(FailReason::Exhausted);
        }
        let backoff = self.backoff.delay(k.max(1), state, rng);
        let (delay, reset_backoff) = if PLAIN {
            (backoff, false)
        } else {
            match self.retry_after.delay(backoff, retry_after, rng) {
                RetryDelay::Wait { delay, reset_backoff } => (delay, reset_backoff),
                RetryDelay::DontRetry => return Decision::Stop(FailReason::NonRetryable),
            }
        };
        if !PLAIN
            && let Some(d) = self.deadline
            && now + delay >= started + d
        {
            return Decision::Stop(FailReason::Deadline);
        }
        if let Err(reason) = controls.permit_retry(failed) {
            return Decision::Stop(reason);
        }
        Decision::Retry { delay, reset_backoff }
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
            retry_after: RetryAfterPolicy::IGNORE,
            honor_dont_retry: false,
        }
    }

    fn failed(outcome: Outcome, attempt: u32, now: u64) -> FailedAttempt {
        FailedAttempt { outcome, attempt, k: attempt, started: at(0), now: at(now), retry_after: None }
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
        assert_eq!(
            decide(&p, Outcome::Status(503), 1, 0),
            Decision::Retry { delay: ns(100), reset_backoff: false }
        );
        assert_eq!(decide(&p, Outcome::Status(400), 1, 0), Decision::Stop(FailReason::NonRetryable));
        assert_eq!(decide(&p, Outcome::Status(503), 3, 0), Decision::Stop(FailReason::Exhausted));
        // The next attempt would start at 950 + 100 >= 1000: the deadline would pass.
        assert_eq!(decide(&p, Outcome::Status(503), 1, 950), Decision::Stop(FailReason::Deadline));
        // An attempt cut by the deadline is a deadline failure, not a timeout to retry.
        assert_eq!(decide(&p, Outcome::Timeout, 1, 1000), Decision::Stop(FailReason::Deadline));
        assert_eq!(
            decide(&p, Outcome::Timeout, 1, 10),
            Decision::Retry { delay: ns(100), reset_backoff: false }
        );
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
    fn retry_after_and_dont_retry() {
        let mut p = policy(5, None);
        let with = |ra| FailedAttempt { retry_after: Some(ra), ..failed(Outcome::Status(429), 1, 0) };
        // Ignored unless honoured.
        assert_eq!(
            decide_with(&p, with(RetryAfter::After(ns(7))), &mut ()),
            Decision::Retry { delay: ns(100), reset_backoff: false }
        );
        p.retry_after = RetryAfterPolicy {
            honor: true,
            cap: Some(ns(1000)),
            mode: super::super::RetryAfterMode::Replace,
        };
        assert_eq!(
            decide_with(&p, with(RetryAfter::After(ns(7))), &mut ()),
            Decision::Retry { delay: ns(7), reset_backoff: false }
        );
        assert_eq!(
            decide_with(&p, with(RetryAfter::After(ns(86_400))), &mut ()),
            Decision::Retry { delay: ns(1000), reset_backoff: false },
            "clamped"
        );
        // "Overloaded; don't retry" stops the clients that honour it.
        assert_eq!(
            decide_with(&p, with(RetryAfter::DontRetry), &mut ()),
            Decision::Retry { delay: ns(100), reset_backoff: false }
        );
        p.honor_dont_retry = true;
        assert_eq!(
            decide_with(&p, with(RetryAfter::DontRetry), &mut ()),
            Decision::Stop(FailReason::NonRetryable)
        );
        // A gRPC pushback: exactly the value, and the backoff starts over.
        p.retry_after.mode = super::super::RetryAfterMode::GrpcPushback;
        p.honor_dont_retry = false;
        assert_eq!(
            decide_with(&p, with(RetryAfter::After(ns(30))), &mut ()),
            Decision::Retry { delay: ns(30), reset_backoff: true }
        );
        assert_eq!(
            decide_with(&p, with(RetryAfter::DontRetry), &mut ()),
            Decision::Stop(FailReason::NonRetryable)
        );
    }

    #[test]
    fn unlimited_attempts_and_give_up_time() {
        let p = policy(u32::MAX, None);
        assert_eq!(
            decide(&p, Outcome::Status(429), 1_000_000, 0),
            Decision::Retry { delay: ns(100), reset_backoff: false }
        );
        assert_eq!(p.gives_up_at(at(0), at(10)), at(60));
        let d = policy(3, Some(30));
        assert_eq!(d.gives_up_at(at(0), at(10)), at(30), "the deadline cuts the attempt short");
        let forever = RetryPolicy { timeout: None, ..policy(3, None) };
        assert_eq!(forever.gives_up_at(at(0), at(10)), Instant::NEVER);
    }

    #[test]
    fn a_plain_policy_decides_the_same_both_ways() {
        let base = RetryPolicy { timeout: None, ..policy(4, None) };
        assert!(base.is_plain());
        assert!(!policy(4, None).is_plain(), "a timeout is not plain");
        assert!(!RetryPolicy { deadline: Some(ns(10)), ..base }.is_plain());
        assert!(!RetryPolicy { honor_dont_retry: true, ..base }.is_plain());
        let honoring = RetryAfterPolicy { honor: true, ..RetryAfterPolicy::IGNORE };
        assert!(!RetryPolicy { retry_after: honoring, ..base }.is_plain());
        let backoffs = [
            Backoff::FullJitter { base_ns: 10.0, cap_ns: 1e3, multiplier: 2.0 },
            Backoff::DecorrelatedJitter { base_ns: 10.0, cap_ns: 1e3 },
            Backoff::Exponential { base_ns: 10.0, cap_ns: 1e3, multiplier: 3.0, immediate_first: false },
        ];
        let outcomes =
            [Outcome::Status(503), Outcome::Status(400), Outcome::Timeout, Outcome::ConnectionError];
        let answers = [None, Some(RetryAfter::DontRetry), Some(RetryAfter::After(ns(7)))];
        for backoff in backoffs {
            let p = RetryPolicy { backoff, ..base };
            let (mut s1, mut s2) = (p.backoff.initial_state(), p.backoff.initial_state());
            let mut r1 = Xoshiro256PlusPlus::seed_from_u64(5);
            let mut r2 = r1.clone();
            let mut retries = 0;
            for (i, (o, ra)) in outcomes.iter().flat_map(|o| answers.iter().map(move |a| (o, a))).enumerate()
            {
                let attempt = 1 + i as u32 % 5;
                let f = FailedAttempt {
                    outcome: *o,
                    attempt,
                    k: attempt,
                    started: at(0),
                    now: at(5),
                    retry_after: *ra,
                };
                let d = p.after_failure(&f, &mut s1, &mut (), &mut r1);
                assert_eq!(d, p.after_failure_plain(&f, &mut s2, &mut (), &mut r2), "{backoff:?} {f:?}");
                assert_eq!(s1, s2);
                retries += matches!(d, Decision::Retry { .. }) as u32;
            }
            assert!(retries > 3, "the comparison covers retries");
        }
    }
}
