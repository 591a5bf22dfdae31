//! The application's own retry loop above the client library's (`app_retry`).
//!
//! When the library's retry loop gives up, the error reaches the application, which may run
//! the whole call again: the person on the next screen pressing "try again", or a job that
//! re-runs a failed step. Each run of the library's loop is a *pass*: its attempt numbers,
//! its backoff and its deadline start over, and the library's controls (budget, breaker)
//! see one operation per pass, because the library cannot tell a pass from a new call. The
//! operation, as the user sees it, is still one: its latency counts from its first pass and
//! it ends with its last pass's failure reason.
//!
//! [`AppRetry::after_pass`] is the application's decision after a failed pass: retry after
//! its own backoff (formula `k` = the number of passes failed so far), or let the failure
//! stand. What the application retries is told by the library's failure reason, as an
//! application sees only the error the library raised: by default every reason but
//! `non_retryable` (the library's own verdict that the answer will not change).

use super::{Backoff, BackoffState, FailReason};
use crate::engine::Span;
use rand::Rng;

/// A set of [`FailReason`]s, one bit each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FailReasons(u16);

impl FailReasons {
    /// Every reason an application can see: all but [`FailReason::Unfinished`] (the
    /// horizon's, not an error raised to anyone), which is the last of [`FailReason::ALL`].
    pub const RAISED: [FailReason; 8] = {
        assert!(matches!(FailReason::ALL[FailReason::ALL.len() - 1], FailReason::Unfinished));
        let mut raised = [FailReason::Exhausted; 8];
        let mut i = 0;
        while i < raised.len() {
            raised[i] = FailReason::ALL[i];
            i += 1;
        }
        raised
    };

    /// The names of [`FailReasons::RAISED`] (the `failed_<reason>` suffixes), in its order.
    pub const RAISED_NAMES: [&'static str; 8] = {
        let mut names = [""; 8];
        let mut i = 0;
        while i < names.len() {
            names[i] = FailReasons::RAISED[i].name();
            i += 1;
        }
        names
    };

    /// The reasons named in `names` (unknown names are ignored: the file's schema refuses
    /// them).
    pub fn named<'a>(names: impl IntoIterator<Item = &'a str>) -> FailReasons {
        let names: Vec<&str> = names.into_iter().collect();
        FailReasons::of(FailReasons::RAISED.into_iter().filter(|r| names.contains(&r.name())))
    }

    pub fn of(reasons: impl IntoIterator<Item = FailReason>) -> FailReasons {
        FailReasons(reasons.into_iter().fold(0, |bits, r| bits | 1 << r as u16))
    }

    /// The default: every raised reason but `non_retryable`.
    pub fn transient() -> FailReasons {
        FailReasons::of(FailReasons::RAISED.into_iter().filter(|&r| r != FailReason::NonRetryable))
    }

    pub fn contains(self, reason: FailReason) -> bool {
        self.0 & (1 << reason as u16) != 0
    }
}

/// The application's retry loop around the library's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AppRetry {
    /// Passes of the library's loop per operation, the first included (at least 2: one pass
    /// is no application retry at all, and is assembled as none).
    pub max_passes: u32,
    /// The application's delay before each new pass.
    pub backoff: Backoff,
    /// The library's failure reasons the application retries.
    pub retry_on: FailReasons,
    /// Each pass is a new call to the library, which makes a new idempotency key (else the
    /// application hands the first pass's key to every pass).
    pub new_key: bool,
}

impl AppRetry {
    /// Pass number `passes` (1-based) of an operation failed with `reason`: the delay before
    /// the next pass, or `None` when the failure stands. `state` is the application's own
    /// backoff memory (for the stateful kinds), `rng` the operation's jitter stream.
    pub fn after_pass<R: Rng + ?Sized>(
        &self,
        passes: u32,
        reason: FailReason,
        state: &mut BackoffState,
        rng: &mut R,
    ) -> Option<Span> {
        if passes >= self.max_passes || !self.retry_on.contains(reason) {
            return None;
        }
        Some(self.backoff.delay(passes, state, rng))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::SplitMix64;

    fn app(max_passes: u32, backoff: Backoff) -> AppRetry {
        AppRetry { max_passes, backoff, retry_on: FailReasons::transient(), new_key: true }
    }

    #[test]
    fn passes_stop_at_max_passes() {
        let a = app(3, Backoff::Constant { base_ns: 5e9 });
        let (mut s, mut rng) = (a.backoff.initial_state(), SplitMix64::seed_from_u64(1));
        assert_eq!(a.after_pass(1, FailReason::Exhausted, &mut s, &mut rng), Some(Span::from_secs(5)));
        assert_eq!(a.after_pass(2, FailReason::Exhausted, &mut s, &mut rng), Some(Span::from_secs(5)));
        assert_eq!(a.after_pass(3, FailReason::Exhausted, &mut s, &mut rng), None);
    }

    #[test]
    fn the_backoff_counts_failed_passes() {
        let a = app(
            5,
            Backoff::Exponential { base_ns: 1e9, cap_ns: 3e9, multiplier: 2.0, immediate_first: false },
        );
        let (mut s, mut rng) = (a.backoff.initial_state(), SplitMix64::seed_from_u64(1));
        let delays: Vec<_> = (1..5)
            .map(|p| a.after_pass(p, FailReason::Deadline, &mut s, &mut rng).unwrap().as_secs_f64())
            .collect();
        assert_eq!(delays, [1.0, 2.0, 3.0, 3.0]);
    }

    #[test]
    fn only_the_listed_reasons_are_retried() {
        let a = app(3, Backoff::None);
        let (mut s, mut rng) = (BackoffState::default(), SplitMix64::seed_from_u64(1));
        for r in FailReasons::RAISED {
            let retried = a.after_pass(1, r, &mut s, &mut rng).is_some();
            assert_eq!(retried, r != FailReason::NonRetryable, "{r:?}");
        }
        assert_eq!(a.after_pass(1, FailReason::Unfinished, &mut s, &mut rng), None);
        assert_eq!(FailReasons::named(["breaker", "no-such-reason"]), FailReasons::of([FailReason::Breaker]));
        let only_breaker = AppRetry { retry_on: FailReasons::named(["breaker"]), ..a };
        assert!(only_breaker.after_pass(1, FailReason::Breaker, &mut s, &mut rng).is_some());
        assert!(only_breaker.after_pass(1, FailReason::Exhausted, &mut s, &mut rng).is_none());
    }
}
