//! The `retry-ratio` breaker: the retry circuit breaker of Marc Brooker's retry simulator
//! (`CircuitBreakerRetryStrategy` / `CircuitBreakerRetryCall` in `retry_sim/retry_strategy.py`,
//! mbrooker/simulator_example commit bbfe3946f0459a69f6012737c68fc63b973471be; the "circuit
//! breaker" of "Fixing retries with token buckets and circuit breakers", 2022;
//! docs/retry-policies.md §11).
//!
//! Upstream, per client, with `calls = failures = 0.0` at creation:
//!
//! ```text
//! start():        calls += 1.0                          # once per call, its first attempt
//! should_retry(): failures += 1.0                       # after every failed attempt
//!                 if failures / calls > max_rate: return False
//!                 else: return n_retries.should_retry()  # at most 3 retries per call
//! ```
//!
//! So it refuses *retries* only: a first attempt is always sent, and there is no open state
//! and no recovery timer; the refusal lasts exactly as long as the ratio of failed attempts
//! (retries' failures included) to calls started exceeds the threshold, strictly. Upstream
//! counts since the client was created (`window = None` here). With a `window`, both counts
//! are sums over a sliding time window instead, kept as Finagle's [`WindowedAdder`] (10
//! slices, the mechanism of the `ratio` budget): an entry counts for about the last `window`
//! of simulated time (9 to 10 slice widths, see [`WindowedAdder`]), so an old outage is
//! forgotten. Both adders are moved at every event, so their slices begin at the same instants
//! and the two sums always cover the same span. The attempt limit (upstream's `NRetriesStrategy(3)`) is the strategy's
//! `max_attempts`, not the breaker's.
//!
//! The ratio is computed as upstream does, `failures as f64 / calls as f64 > threshold`; with
//! a window, a failure whose call started before the window leaves `calls = 0`, and the ratio
//! is then infinite: refused.

use crate::engine::{Instant, Span};
use crate::policy::budget::WindowedAdder;

/// Parameters of a [`RetryRatioBreaker`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryRatioParams {
    /// No retry when failed attempts / calls started exceed this, in `(0, 1]` (upstream
    /// `max_rate`).
    pub threshold: f64,
    /// Count over this sliding span of simulated time; `None`: since the start, as upstream.
    pub window: Option<Span>,
}

impl RetryRatioParams {
    /// `CircuitBreakerRetryFactory(NRetriesFactory(3), 0.1)` of `run_sims` ("breaker_10pct",
    /// §11): 10 %, cumulative.
    pub const BROOKER_2022: RetryRatioParams = RetryRatioParams {
        threshold: 0.1, // §11: CircuitBreakerRetryFactory(..., 0.1): max_rate = 0.1
        window: None,   // §11: calls and failures are counted since the client was created
    };
}

/// The two counts, since the start or over a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Counts {
    Cumulative { calls: u64, failures: u64 },
    Windowed { calls: WindowedAdder, failures: WindowedAdder },
}

/// Brooker's retry circuit breaker (module docs): refuses a retry when failed attempts / calls
/// started exceed the threshold; never refuses a first attempt.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryRatioBreaker {
    threshold: f64,
    counts: Counts,
}

impl RetryRatioBreaker {
    /// A breaker with nothing counted; a window's first slice begins at `now`.
    ///
    /// # Panics
    /// If `threshold` is not in `(0, 1]` or the window is shorter than 10 ns (validation
    /// refuses these first).
    pub fn new(params: RetryRatioParams, now: Instant) -> RetryRatioBreaker {
        let RetryRatioParams { threshold, window } = params;
        assert!(
            threshold > 0.0 && threshold <= 1.0,
            "a retry-ratio threshold must be in (0, 1], not {threshold}"
        );
        let counts = match window {
            None => Counts::Cumulative { calls: 0, failures: 0 },
            Some(w) => {
                Counts::Windowed { calls: WindowedAdder::new(w, now), failures: WindowedAdder::new(w, now) }
            }
        };
        RetryRatioBreaker { threshold, counts }
    }

    /// An operation starts (upstream `start()`).
    #[inline]
    pub fn on_call_started(&mut self, now: Instant) {
        match &mut self.counts {
            Counts::Cumulative { calls, .. } => *calls += 1,
            Counts::Windowed { calls, failures } => {
                calls.add(now, 1);
                failures.add(now, 0);
            }
        }
    }

    /// An attempt failed (upstream: the `failures += 1.0` at the top of `should_retry()`, which
    /// runs after every failed attempt, the last one of an operation included).
    #[inline]
    pub fn on_failure(&mut self, now: Instant) {
        match &mut self.counts {
            Counts::Cumulative { failures, .. } => *failures += 1,
            Counts::Windowed { calls, failures } => {
                calls.add(now, 0);
                failures.add(now, 1);
            }
        }
    }

    /// Calls started and failed attempts counted at `now`.
    #[inline]
    pub fn counts(&mut self, now: Instant) -> (u64, u64) {
        match &mut self.counts {
            Counts::Cumulative { calls, failures } => (*calls, *failures),
            Counts::Windowed { calls, failures } => {
                (calls.sum(now).max(0) as u64, failures.sum(now).max(0) as u64)
            }
        }
    }

    /// After a failed attempt has been counted: may the operation retry? `false` when
    /// `failures / calls > threshold`.
    #[inline]
    pub fn retry_allowed(&mut self, now: Instant) -> bool {
        let (calls, failures) = self.counts(now);
        // 0 / 0 (nothing counted in the window) is no evidence: allowed.
        let ratio = failures as f64 / calls as f64;
        ratio.partial_cmp(&self.threshold) != Some(std::cmp::Ordering::Greater)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::test_time::{MS, S, at};

    const P: RetryRatioParams = RetryRatioParams::BROOKER_2022;

    /// Upstream's `CircuitBreakerRetryCall` with `NRetriesStrategy(3)`, transcribed: `outcomes`
    /// is each call's attempt results in order (`true` = failed), consumed as far as the
    /// strategy goes. Returns, per call, the number of retries it was granted.
    fn upstream(calls_outcomes: &[&[bool]], max_rate: f64) -> Vec<u32> {
        let (mut calls, mut failures) = (0.0f64, 0.0f64);
        calls_outcomes
            .iter()
            .map(|attempts| {
                calls += 1.0;
                let mut n_tries = 0;
                let mut retries = 0;
                for &failed in attempts.iter() {
                    if !failed {
                        break;
                    }
                    failures += 1.0;
                    if failures / calls > max_rate {
                        break;
                    }
                    n_tries += 1;
                    if n_tries > 3 {
                        break;
                    }
                    retries += 1;
                }
                retries
            })
            .collect()
    }

    /// The same through the state machine, with the attempt limit (4 attempts) applied by the
    /// caller as the decision does: a failed last attempt is counted, then nothing is asked.
    fn machine(calls_outcomes: &[&[bool]], params: RetryRatioParams) -> Vec<u32> {
        let mut b = RetryRatioBreaker::new(params, at(0));
        calls_outcomes
            .iter()
            .map(|attempts| {
                b.on_call_started(at(0));
                let mut retries = 0;
                for (i, &failed) in attempts.iter().enumerate() {
                    if !failed {
                        break;
                    }
                    b.on_failure(at(0));
                    if i + 1 >= 4 || !b.retry_allowed(at(0)) {
                        break;
                    }
                    retries += 1;
                }
                retries
            })
            .collect()
    }

    #[test]
    fn retry_ratio_refuses_once_failures_exceed_a_tenth_of_calls() {
        let mut b = RetryRatioBreaker::new(P, at(0));
        // Nine clean calls, then a failing one: 1 / 10 = 0.1 is not above 0.1, so it retries.
        for _ in 0..10 {
            b.on_call_started(at(0));
        }
        b.on_failure(at(0));
        assert_eq!(b.counts(at(0)), (10, 1));
        assert!(b.retry_allowed(at(0)), "1/10 is not above 0.1");
        // Its retry fails too: 2 / 10 > 0.1, refused.
        b.on_failure(at(0));
        assert!(!b.retry_allowed(at(0)));
        // Ten more calls bring it back under: 2 / 20.
        for _ in 0..10 {
            b.on_call_started(at(0));
        }
        assert!(b.retry_allowed(at(0)));
        // The very first call of a client that fails: 1 / 1, refused (its first attempt was
        // sent; only its retry is refused).
        let mut fresh = RetryRatioBreaker::new(P, at(0));
        fresh.on_call_started(at(0));
        fresh.on_failure(at(0));
        assert!(!fresh.retry_allowed(at(0)));
    }

    #[test]
    fn retry_ratio_sequence_is_upstreams() {
        let ok: &[bool] = &[false];
        let fail_once: &[bool] = &[true, false];
        let fail_all: &[bool] = &[true, true, true, true];
        // 30 clean calls, a call failing 4 times (3 retries: 1/31, 2/31, 3/31 pass; the 4th
        // failure is past the attempt limit), then failing calls until refused, then recovery.
        let mut script: Vec<&[bool]> = vec![ok; 30];
        script.push(fail_all);
        script.extend([fail_once; 3]);
        script.extend([fail_all; 3]);
        script.extend([ok; 40]);
        script.extend([fail_once, fail_all]);
        let got = machine(&script, P);
        assert_eq!(got, upstream(&script, 0.1));
        assert_eq!(got[30], 3, "1/31, 2/31, 3/31 are at most 0.1");
        assert_eq!(got[31], 0, "5/32 > 0.1: refused at its first failure");
        // The threshold at 1: a retry is refused only when failures outnumber calls.
        let wide = RetryRatioParams { threshold: 1.0, window: None };
        assert_eq!(machine(&script, wide), upstream(&script, 1.0));
    }

    #[test]
    fn retry_ratio_window_forgets_old_failures() {
        let p = RetryRatioParams { threshold: 0.1, window: Some(Span::from_secs(10)) };
        let mut b = RetryRatioBreaker::new(p, at(0));
        // An outage at t = 0: 5 calls, 10 failures.
        for _ in 0..5 {
            b.on_call_started(at(0));
            b.on_failure(at(0));
            b.on_failure(at(0));
        }
        assert!(!b.retry_allowed(at(0)));
        // One call per second for 20 s, all clean: within 9 slices (9 s) the outage still
        // counts, after 10 s it is gone (slices are 1 s here).
        for s in 1..=20u64 {
            b.on_call_started(at(s * S));
            let (calls, failures) = b.counts(at(s * S));
            if s < 9 {
                assert_eq!(failures, 10, "t = {s} s");
            }
            if s >= 10 {
                assert_eq!(failures, 0, "t = {s} s");
                assert!(calls <= 10, "t = {s} s: {calls} calls");
            }
        }
        // A failure now: 1 / 10 is allowed, a second is not.
        b.on_failure(at(20 * S + MS));
        assert!(b.retry_allowed(at(20 * S + MS)));
        b.on_failure(at(20 * S + 2 * MS));
        assert!(!b.retry_allowed(at(20 * S + 2 * MS)));
        // A failure of a call started before the window, with no call since: refused.
        let mut lone = RetryRatioBreaker::new(p, at(0));
        lone.on_call_started(at(0));
        lone.on_failure(at(30 * S));
        assert_eq!(lone.counts(at(30 * S)), (0, 1));
        assert!(!lone.retry_allowed(at(30 * S)));
    }
}
