//! Hedged requests (DESIGN §4.10): the pure parts. When the next copy of a call goes out (a
//! fixed delay, or a percentile of the client's own recent latency), what an answer to one
//! copy means for the others, and the budget that bounds the extra copies. The model
//! (`crate::model::hedges`) keeps which copies are out and wires this to events.
//!
//! The semantics are gRPC's A6 `hedgingPolicy` (grpc/proposal `A6-client-retries.md`,
//! "Hedging Policy" and "Summary of Retry and Hedging Logic"; docs/overload-and-topology.md
//! §1.15): the first copy is sent at once, one more every `delay` without a success, up to
//! `max_attempts` copies (2..=5; A6 caps the client side at 5); a delay of 0 sends them all at
//! once. The first success wins and the others are cancelled. A non-fatal failure sends the
//! next copy at once and later ones resume on the delay grid; any other failure cancels the
//! rest and fails the call. A pushback of n ms puts the next copy n ms later (the grid resumes
//! from it), a "don't retry" pushback stops the hedging.
//!
//! The adaptive delay is tower's `hedge` (tower/src/hedge/mod.rs): the delay is a percentile
//! of the latencies recorded over the last complete rotation period of a rotating histogram,
//! and no copy is hedged until that period holds `min_samples` latencies. The budget is
//! Brooker's token bucket ("Erasure Coding versus Tail Latency", 2023: bound the extra sends to
//! about 5 %), here [`BrookerBucket`]: every call deposits `ratio` tokens, every hedge takes
//! one.

use super::budget::{BrookerBucket, BrookerBucketParams};
use super::gate::Scope;
use super::{RetryAfter, RetryOn};
use crate::engine::{Instant, Span};

/// When the next copy is sent without an answer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HedgeDelay {
    /// A fixed delay; 0 sends every copy at once (A6's `hedgingDelay`).
    Fixed(Span),
    /// This percentile (0 < p < 100) of the client's recent latency (tower).
    Percentile(f64),
    /// Never on a timer: only a non-fatal answer, or Envoy's per-try timeout, sends the next.
    Never,
}

/// A strategy's hedging policy, as plain parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HedgeParams {
    /// Copies of a call, the first included (A6 `maxAttempts`, 2..=5).
    pub max_attempts: u32,
    pub delay: HedgeDelay,
    /// Failures after which the next copy is sent at once (A6 `nonFatalStatusCodes`); any
    /// other failure fails the call.
    pub non_fatal: RetryOn,
    /// Envoy's `hedge_on_per_try_timeout`: when an attempt's timeout fires, the next copy is
    /// sent and the late one is still waited for (its success can win, its error is dropped).
    pub on_per_try_timeout: bool,
    /// The rotation period of the latency histogram (a percentile delay).
    pub window: Span,
    /// Latencies the last period must hold before a percentile delay hedges anything.
    pub min_samples: u32,
    /// The hedge budget, if any.
    pub budget: Option<BrookerBucketParams>,
    /// Whether a cancelled copy a worker is serving is stopped (else it finishes).
    pub cancel_in_service: bool,
    /// One latency histogram and budget per client process, or one for the fleet.
    pub scope: Scope,
    /// Whether the server's pushback (Retry-After) moves the next copy.
    pub honor_pushback: bool,
}

impl HedgeParams {
    /// A6's client-side cap on `maxAttempts` (larger values are clamped to 5 there; refused
    /// here).
    pub const GRPC_MAX_ATTEMPTS_CAP: u32 = 5;
    /// Polly v8 latency mode (`HedgingConstants.cs`): `MaxHedgedAttempts` 1 extra attempt.
    pub const POLLY_MAX_ATTEMPTS: u32 = 2;
    /// Polly v8 latency mode: `Delay` 2 s.
    pub const POLLY_DELAY: Span = Span::from_secs(2);
    /// Envoy's retry policy: `num_retries` 1, so 2 attempts (route_components.proto).
    pub const ENVOY_MAX_ATTEMPTS: u32 = 2;
    /// Brooker's hedge budget: about 5 % extra sends.
    pub const BROOKER_RATIO: f64 = 0.05;
}

/// What an answer to one copy means for the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterAnswer {
    /// A success: the call succeeds, the other copies are cancelled.
    Won,
    /// A fatal failure: the other copies are cancelled and the call fails.
    Fatal,
    /// A non-fatal failure: the next copy goes out after `next_in` (0: at once; a pushback),
    /// or no more copies go out (`None`: a "don't retry" pushback).
    NonFatal { next_in: Option<Span> },
}

impl HedgeParams {
    /// A6's response handling for an answer `outcome` with the server's `retry_after`.
    pub fn after_answer(
        &self,
        outcome: crate::policy::Outcome,
        retry_after: Option<RetryAfter>,
    ) -> AfterAnswer {
        if outcome == crate::policy::Outcome::Success {
            return AfterAnswer::Won;
        }
        if !self.non_fatal.retries(outcome) {
            return AfterAnswer::Fatal;
        }
        let next_in = match (self.honor_pushback, retry_after) {
            (true, Some(RetryAfter::After(d))) => Some(d),
            (true, Some(RetryAfter::DontRetry)) => None,
            _ => Some(Span::ZERO),
        };
        AfterAnswer::NonFatal { next_in }
    }
}

/// The client's recent latency, tower's rotating histogram: latencies are recorded into the
/// current period; the percentile is read from the last complete one (computed once, when the
/// period closes). Periods are aligned to multiples of `window` from the start of the run; a
/// period with no record in it leaves nothing to read.
#[derive(Clone, Debug)]
pub struct LatencyWindow {
    window: Span,
    percentile: f64,
    min_samples: u32,
    /// The index of the current period (`now / window`).
    period: u64,
    /// Latencies of the current period, in nanoseconds.
    current: Vec<u64>,
    /// The percentile of the last complete period, if it held `min_samples`.
    read: Option<Span>,
}

impl LatencyWindow {
    pub fn new(window: Span, percentile: f64, min_samples: u32) -> LatencyWindow {
        debug_assert!(window > Span::ZERO && percentile > 0.0 && percentile < 100.0);
        LatencyWindow { window, percentile, min_samples, period: 0, current: Vec::new(), read: None }
    }

    fn rotate(&mut self, now: Instant) {
        let period = now.as_ns() / self.window.as_ns();
        if period == self.period {
            return;
        }
        self.read = if period == self.period + 1 && self.current.len() >= self.min_samples.max(1) as usize {
            Some(nearest_rank(&mut self.current, self.percentile))
        } else {
            None
        };
        self.current.clear();
        self.period = period;
    }

    /// A copy answered after `latency`, at `now`.
    pub fn record(&mut self, now: Instant, latency: Span) {
        self.rotate(now);
        self.current.push(latency.as_ns());
    }

    /// The delay to hedge after, at `now`: the percentile of the last complete period, or
    /// `None` while it held fewer than `min_samples` latencies.
    pub fn delay(&mut self, now: Instant) -> Option<Span> {
        self.rotate(now);
        self.read
    }
}

/// The nearest-rank `p`-th percentile of `samples` (sorted here): the smallest sample with
/// at least `p` % of the samples at or below it.
fn nearest_rank(samples: &mut [u64], p: f64) -> Span {
    samples.sort_unstable();
    let rank = ((p / 100.0) * samples.len() as f64).ceil().max(1.0) as usize;
    Span::from_ns(samples[rank.min(samples.len()) - 1])
}

/// The hedging state shared by the calls of one scope (a client process, or the fleet): the
/// latency window of a percentile delay and the hedge budget.
#[derive(Clone, Debug)]
pub struct HedgeScope {
    latency: Option<LatencyWindow>,
    budget: Option<BrookerBucket>,
}

impl HedgeScope {
    pub fn new(params: &HedgeParams) -> HedgeScope {
        let latency = match params.delay {
            HedgeDelay::Percentile(p) => Some(LatencyWindow::new(params.window, p, params.min_samples)),
            _ => None,
        };
        HedgeScope { latency, budget: params.budget.map(BrookerBucket::new) }
    }

    /// A call starts: its deposit into the budget.
    pub fn call_started(&mut self) {
        if let Some(b) = &mut self.budget {
            b.on_call_started();
        }
    }

    /// The delay before the next copy at `now`; `None`: no copy on a timer.
    pub fn delay(&mut self, params: &HedgeParams, now: Instant) -> Option<Span> {
        match params.delay {
            HedgeDelay::Fixed(d) => Some(d),
            HedgeDelay::Never => None,
            HedgeDelay::Percentile(_) => self.latency.as_mut().and_then(|l| l.delay(now)),
        }
    }

    /// A copy was answered after `latency` (a percentile delay records it).
    pub fn answered(&mut self, now: Instant, latency: Span) {
        if let Some(l) = &mut self.latency {
            l.record(now, latency);
        }
    }

    /// A hedge (not the first copy) wants to go out: the budget's token, if there is a budget.
    pub fn take_token(&mut self) -> bool {
        self.budget.as_mut().is_none_or(|b| b.try_retry())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Outcome;

    fn params() -> HedgeParams {
        HedgeParams {
            max_attempts: 4,
            delay: HedgeDelay::Fixed(Span::from_millis(500)),
            non_fatal: RetryOn::of([Outcome::Status(503)]),
            on_per_try_timeout: false,
            window: Span::from_secs(1),
            min_samples: 10,
            budget: None,
            cancel_in_service: false,
            scope: Scope::Client,
            honor_pushback: true,
        }
    }

    #[test]
    fn a6_response_handling() {
        let p = params();
        assert_eq!(p.after_answer(Outcome::Success, None), AfterAnswer::Won);
        assert_eq!(p.after_answer(Outcome::Status(500), None), AfterAnswer::Fatal);
        assert_eq!(p.after_answer(Outcome::Timeout, None), AfterAnswer::Fatal);
        assert_eq!(
            p.after_answer(Outcome::Status(503), None),
            AfterAnswer::NonFatal { next_in: Some(Span::ZERO) }
        );
        let pushback = Some(RetryAfter::After(Span::from_millis(300)));
        assert_eq!(
            p.after_answer(Outcome::Status(503), pushback),
            AfterAnswer::NonFatal { next_in: Some(Span::from_millis(300)) }
        );
        assert_eq!(
            p.after_answer(Outcome::Status(503), Some(RetryAfter::DontRetry)),
            AfterAnswer::NonFatal { next_in: None }
        );
        let ignoring = HedgeParams { honor_pushback: false, ..p };
        assert_eq!(
            ignoring.after_answer(Outcome::Status(503), pushback),
            AfterAnswer::NonFatal { next_in: Some(Span::ZERO) }
        );
    }

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<u64> = (1..=100).rev().collect();
        assert_eq!(nearest_rank(&mut v, 95.0), Span::from_ns(95));
        assert_eq!(nearest_rank(&mut v, 99.9), Span::from_ns(100));
        assert_eq!(nearest_rank(&mut v, 0.1), Span::from_ns(1));
        assert_eq!(nearest_rank(&mut [7], 50.0), Span::from_ns(7));
    }

    #[test]
    fn the_window_reads_the_last_complete_period_with_enough_samples() {
        let s = Span::from_secs(1);
        let mut w = LatencyWindow::new(s, 50.0, 3);
        let at = |ms: u64| Instant::from_ns(ms * 1_000_000);
        w.record(at(100), Span::from_millis(10));
        w.record(at(200), Span::from_millis(30));
        assert_eq!(w.delay(at(900)), None, "the first period is not complete");
        assert_eq!(w.delay(at(1_100)), None, "two samples < min_samples 3");
        for (t, ms) in [(1_200, 40), (1_300, 20), (1_400, 60), (1_500, 80)] {
            w.record(at(t), Span::from_millis(ms));
        }
        assert_eq!(w.delay(at(1_900)), None, "the current period is not read");
        // Period 1 held 20, 40, 60, 80: the median by nearest rank is 40.
        assert_eq!(w.delay(at(2_000)), Some(Span::from_millis(40)));
        assert_eq!(w.delay(at(2_999)), Some(Span::from_millis(40)));
        assert_eq!(w.delay(at(3_000)), None, "period 2 recorded nothing");
        for t in [3_100, 3_200, 3_300] {
            w.record(at(t), Span::from_millis(5));
        }
        assert_eq!(w.delay(at(5_500)), None, "period 4 follows period 3, not the one with samples");
    }

    #[test]
    fn the_budget_bounds_hedges_to_its_ratio() {
        let p = HedgeParams {
            budget: Some(BrookerBucketParams { capacity: 5.0, per_call: 0.05, retry_cost: 1.0 }),
            ..params()
        };
        let mut scope = HedgeScope::new(&p);
        let mut hedges = 0;
        for _ in 0..10_000 {
            scope.call_started();
            if scope.take_token() {
                hedges += 1;
            }
        }
        // The full bucket's 4 spare tokens, then one hedge per 20 calls.
        assert!((499..=504).contains(&hedges), "{hedges}");
        assert!(HedgeScope::new(&params()).take_token(), "no budget: every hedge");
    }
}
