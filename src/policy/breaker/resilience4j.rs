//! Circuit breaker with resilience4j's semantics (`CircuitBreakerStateMachine`,
//! `CircuitBreakerMetrics`, `SlidingTimeWindowMetrics`; docs/retry-policies.md §6, cited below as "reference §x"), and
//! Hystrix as a parameterisation of it ([`BreakerParams::HYSTRIX`]).
//!
//! | state | [`Breaker::try_acquire`] | [`Breaker::on_result`] |
//! |---|---|---|
//! | Closed | admits | records into the sliding window; once `calls >= minimum_calls`, opens if `failed/calls >= failure_rate` or `slow/calls >= slow_call_rate` |
//! | Open `{ until }` | refuses while `now <= until`; at the first call with `now > until` becomes HalfOpen and answers as HalfOpen | ignored (see below) |
//! | HalfOpen | admits while fewer than `half_open_calls` have been admitted in this half-open period | counts into a fresh half-open window; once `min(minimum_calls, half_open_calls)` results are in: Open if a rate reaches its threshold, else Closed with a fresh window |
//!
//! Details taken from the resilience4j source (commit in reference §6), each a choice where
//! the reference text alone was ambiguous:
//!
//! - A call is *slow* when its duration is strictly greater than `slow_call_duration`
//!   (`CircuitBreakerMetrics.onSuccess/onError`: `toNanos(duration) > threshold`). A slow
//!   failure counts both as a failure and as a slow call.
//! - Rates are compared with `>=` (`checkIfThresholdsExceeded`); below the minimum number of
//!   calls the rates are "-1" and the breaker cannot trip. For count windows the minimum is
//!   clamped to the window size; for time windows it is not.
//! - Open → HalfOpen is lazy (`automaticTransitionFromOpenToHalfOpenEnabled = false`, the
//!   default) and needs `now > until`, strictly (`clock.instant().isAfter(...)`; Hystrix's
//!   `isAfterSleepWindow` is also strict). [`Breaker::state`] keeps reporting Open until a
//!   call asks, as `getState()` does.
//! - Half-open probes are counted when admitted, not when their results arrive
//!   (`permittedNumberOfCalls.getAndUpdate(..)` in `tryAcquirePermission`), so many callers
//!   sharing one breaker cannot get more than `half_open_calls` probes through
//!   (the race of resilience4j#1090, reference §10, cannot happen in a simulator).
//! - The half-open window is a count window of `half_open_calls` whose minimum is
//!   `min(minimum_calls, half_open_calls)` (`CircuitBreakerMetrics.forHalfOpen` clamps it like
//!   any count window), so the verdict comes after that many results.
//! - Results are recorded into whatever state the breaker is in when they arrive, without
//!   asking which state admitted the call (`stateReference.get().onError(..)`). So a result
//!   of a call admitted while Closed that arrives in HalfOpen counts as a probe result; with
//!   `half_open_calls = 1` the first result of any call decides, as in Hystrix's
//!   `HalfOpenState.markSuccess/markNonSuccess`.
//! - Results arriving while Open (calls admitted before it opened) are *ignored*.
//!   resilience4j records them into the metrics of the state that opened (`OpenState.onError`
//!   "should still be recorded"), but never evaluates those metrics again: HalfOpen starts
//!   with fresh metrics. Ignoring them is observationally the same.
//! - The caller must report the result of every admitted call (a timeout as a failure whose
//!   duration is the timeout): with `maxWaitDurationInHalfOpenState = 0`, the default, a
//!   half-open breaker whose probes never report stays half-open.
//!
//! Windows: a count window of N keeps the last N outcomes as two N-bit rings (failed, slow) and
//! three counters, subtracting the outcome it overwrites (`FixedSizeSlidingWindowMetrics`). A
//! time window of N seconds keeps N one-second buckets of simulated time; bucket `s` holds the
//! calls recorded during second `s`, and recording at second `s` first evicts (subtracts and
//! clears) the buckets of seconds `<= s - N`, as `SlidingTimeWindowMetrics` does with epoch
//! seconds. The window is moved only when a result is recorded, which is also the only time
//! it is evaluated.
//!
//! Memory: parameters are borrowed through `P: Borrow<BreakerParams>`, so a million per-client
//! breakers share one [`BreakerParams`] (`Breaker<&BreakerParams>` or `Breaker<Rc<..>>`). Such
//! a breaker is 88 bytes, and a count window of up to 128 calls (the default 100 included)
//! lives inside them: no heap at all. A larger count window of N puts `2 * ceil(N/64)` words on
//! the heap, a time window 12 bytes per second. Owning the parameters adds their 56 bytes.
//! Nothing is allocated after [`Breaker::new`].

use crate::engine::{Instant, Span};
use std::borrow::Borrow;

/// Nanoseconds per bucket of a time window: one second, the `epochSecond` granularity of
/// resilience4j's `SlidingTimeWindowMetrics` (reference §6) and the bucket size of Hystrix's
/// default 10 s / 10 buckets rolling window.
const NS_PER_BUCKET: u64 = 1_000_000_000;

/// What the closed-state sliding window holds (reference §6 "Sliding windows").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakerWindow {
    /// The last N call outcomes (resilience4j `COUNT_BASED`, `slidingWindowSize = N`).
    Count(u32),
    /// The outcomes of the last N whole seconds of simulated time, N = the span in seconds
    /// (resilience4j `TIME_BASED`): one bucket per second, `Time(10 s)` is 10 buckets, evicted
    /// with subtract-on-evict. The span must be a whole number of seconds.
    Time(Span),
}

/// A circuit breaker's settings, in engine units. Rates are fractions in `(0, 1]`, where
/// resilience4j takes percentages.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BreakerParams {
    /// The closed-state sliding window (`slidingWindowType` + `slidingWindowSize`).
    pub window: BreakerWindow,
    /// Open when at least this fraction of the buffered calls failed (`failureRateThreshold`).
    pub failure_rate: f64,
    /// Open when at least this fraction of the buffered calls were slow
    /// (`slowCallRateThreshold`).
    pub slow_call_rate: f64,
    /// A call is slow when its duration is strictly longer (`slowCallDurationThreshold`).
    pub slow_call_duration: Span,
    /// No verdict before this many calls are buffered (`minimumNumberOfCalls`); clamped to the
    /// window size for count windows.
    pub minimum_calls: u32,
    /// How long the breaker stays open (`waitDurationInOpenState`, constant).
    pub open_for: Span,
    /// Probes admitted per half-open period, and the size of the half-open window
    /// (`permittedNumberOfCallsInHalfOpenState`).
    pub half_open_calls: u32,
}

impl Default for BreakerParams {
    /// [`BreakerParams::RESILIENCE4J`].
    fn default() -> Self {
        BreakerParams::RESILIENCE4J
    }
}

impl BreakerParams {
    /// resilience4j's `CircuitBreakerConfig` defaults (reference §6): failure rate 50 %, slow
    /// call rate 100 %, slow call duration 60 s, count window of 100, minimum 100 calls, open
    /// for 60 s, 10 half-open calls.
    pub const RESILIENCE4J: BreakerParams = BreakerParams {
        window: BreakerWindow::Count(100),
        failure_rate: 0.5,
        slow_call_rate: 1.0,
        slow_call_duration: Span::from_secs(60),
        minimum_calls: 100,
        open_for: Span::from_secs(60),
        half_open_calls: 10,
    };

    /// Hystrix's defaults (reference §6, `HystrixCommandProperties`) in resilience4j terms: a
    /// 10 s rolling window (10 one-second buckets), `requestVolumeThreshold` 20 calls,
    /// `errorThresholdPercentage` 50 %, `sleepWindowInMilliseconds` 5 s, and a single
    /// half-open trial request whose result closes or re-opens the breaker. Hystrix has no
    /// slow-call rule (its timeouts are failures, reported as such by the caller), so no call
    /// is slow here.
    ///
    /// Not modelled: Hystrix evaluates its health counts on a 500 ms snapshot timer rather than
    /// after every call, so a real Hystrix breaker trips up to 500 ms later than this one.
    pub const HYSTRIX: BreakerParams = BreakerParams {
        window: BreakerWindow::Time(Span::from_secs(10)),
        failure_rate: 0.5,
        slow_call_rate: 1.0,
        slow_call_duration: Span::MAX,
        minimum_calls: 20,
        open_for: Span::from_secs(5),
        half_open_calls: 1,
    };

    /// Checks the constraints resilience4j's `CircuitBreakerConfig.Builder` enforces: a
    /// window of at least one call or one whole second, rates in `(0, 1]`, at least one
    /// minimum call and one half-open call.
    pub fn validate(&self) -> Result<(), &'static str> {
        match self.window {
            BreakerWindow::Count(0) => return Err("a count window must hold at least one call"),
            BreakerWindow::Time(s) if s.is_zero() || s.as_ns() % NS_PER_BUCKET != 0 => {
                return Err("a time window must be a positive whole number of seconds");
            }
            _ => {}
        }
        if !(self.failure_rate > 0.0 && self.failure_rate <= 1.0) {
            return Err("failure_rate must be in (0, 1]");
        }
        if !(self.slow_call_rate > 0.0 && self.slow_call_rate <= 1.0) {
            return Err("slow_call_rate must be in (0, 1]");
        }
        if self.minimum_calls == 0 {
            return Err("minimum_calls must be at least 1");
        }
        if self.half_open_calls == 0 {
            return Err("half_open_calls must be at least 1");
        }
        Ok(())
    }

    /// The closed-state minimum: clamped to the window size for count windows only
    /// (`CircuitBreakerMetrics` constructor).
    fn closed_minimum(&self) -> u32 {
        match self.window {
            BreakerWindow::Count(n) => self.minimum_calls.min(n),
            BreakerWindow::Time(_) => self.minimum_calls,
        }
    }

    /// The half-open minimum: the half-open window is a count window of `half_open_calls`.
    fn half_open_minimum(&self) -> u32 {
        self.minimum_calls.min(self.half_open_calls)
    }

    /// Whether a rate reaches its threshold (`checkIfThresholdsExceeded`, `>=` on both).
    /// `calls > 0`. Rates are computed by division so that a ratio equal to the threshold's
    /// decimal value compares equal (both round to the same `f64`).
    fn exceeded(&self, calls: u32, failed: u32, slow: u32) -> bool {
        let n = calls as f64;
        failed as f64 / n >= self.failure_rate || slow as f64 / n >= self.slow_call_rate
    }
}

/// What a caller sees of a breaker (resilience4j's `CircuitBreaker.State` without the forced
/// and disabled states).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakerState {
    /// Calls pass; outcomes fill the sliding window.
    Closed,
    /// Calls are refused until the first call asking after `until`.
    Open {
        /// The last instant at which calls are still refused (`now > until` half-opens).
        until: Instant,
    },
    /// A limited number of probe calls decide between Open and Closed.
    HalfOpen,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Closed,
    Open,
    HalfOpen,
}

/// One second of a time window.
#[derive(Clone, Copy, Debug, Default)]
struct Bucket {
    calls: u32,
    failed: u32,
    slow: u32,
}

/// Words of a count window stored in place: 128 calls.
const INLINE_WORDS: usize = 4;

/// The storage of the closed-state window.
#[derive(Clone, Debug)]
enum Ring {
    /// Count window of at most 128 calls, in place. Layout as `Bits`.
    Inline([u64; INLINE_WORDS]),
    /// Count window: for slots `64i..64i+64`, word `2i` holds the failed bits and word `2i+1`
    /// the slow bits.
    Bits(Box<[u64]>),
    /// Time window: bucket `s % N` holds second `s`.
    Seconds(Box<[Bucket]>),
}

/// A circuit breaker (see the module docs for the exact semantics).
///
/// `P` is how the breaker holds its parameters: owned (the default), or shared by reference or
/// `Rc`/`Arc` when there is one breaker per client.
#[derive(Clone, Debug)]
pub struct Breaker<P: Borrow<BreakerParams> = BreakerParams> {
    params: P,
    ring: Ring,
    /// Count window: the slot the next outcome goes to. Time window: the latest second
    /// recorded.
    cursor: u64,
    /// Closed: the window's totals. HalfOpen: the half-open window's totals. Open: the totals
    /// that opened the breaker.
    calls: u32,
    failed: u32,
    slow: u32,
    /// Probes admitted in the current half-open period.
    permits: u32,
    /// Meaningful while Open.
    open_until: Instant,
    times_opened: u32,
    mode: Mode,
}

impl<P: Borrow<BreakerParams>> Breaker<P> {
    /// A closed breaker with an empty window.
    ///
    /// # Panics
    /// If the parameters fail [`BreakerParams::validate`].
    pub fn new(params: P) -> Self {
        let p = params.borrow();
        if let Err(e) = p.validate() {
            panic!("invalid breaker parameters: {e}");
        }
        let ring = match p.window {
            BreakerWindow::Count(n) => {
                let words = 2 * n.div_ceil(64) as usize;
                if words <= INLINE_WORDS {
                    Ring::Inline([0; INLINE_WORDS])
                } else {
                    Ring::Bits(vec![0u64; words].into_boxed_slice())
                }
            }
            BreakerWindow::Time(span) => Ring::Seconds(
                vec![Bucket::default(); (span.as_ns() / NS_PER_BUCKET) as usize].into_boxed_slice(),
            ),
        };
        Breaker {
            params,
            ring,
            cursor: 0,
            calls: 0,
            failed: 0,
            slow: 0,
            permits: 0,
            open_until: Instant::ZERO,
            times_opened: 0,
            mode: Mode::Closed,
        }
    }

    /// The parameters.
    pub fn params(&self) -> &BreakerParams {
        self.params.borrow()
    }

    /// The current state. Open stays Open after `until` until a call asks
    /// ([`Breaker::try_acquire`]), like resilience4j without automatic transition.
    pub fn state(&self) -> BreakerState {
        match self.mode {
            Mode::Closed => BreakerState::Closed,
            Mode::Open => BreakerState::Open { until: self.open_until },
            Mode::HalfOpen => BreakerState::HalfOpen,
        }
    }

    /// Asks to send a call at `now`: `true` admits it (and, half-open, uses up one of the
    /// `half_open_calls` probes), `false` fails it locally (`CallNotPermittedException`).
    #[inline]
    pub fn try_acquire(&mut self, now: Instant) -> bool {
        match self.mode {
            Mode::Closed => true,
            Mode::Open => {
                if now > self.open_until {
                    self.enter_half_open();
                    self.half_open_acquire()
                } else {
                    false
                }
            }
            Mode::HalfOpen => self.half_open_acquire(),
        }
    }

    /// Reports the outcome of an admitted call that ended at `now` after `duration`:
    /// `failed` as the caller classifies it (resilience4j records every exception by default;
    /// Hystrix counts timeouts and rejections), slow if `duration > slow_call_duration`.
    #[inline]
    pub fn on_result(&mut self, now: Instant, failed: bool, duration: Span) {
        let p = self.params.borrow();
        let slow = duration > p.slow_call_duration;
        match self.mode {
            Mode::Closed => {
                match p.window {
                    BreakerWindow::Count(n) => self.record_count(n, failed, slow),
                    BreakerWindow::Time(_) => self.record_time(now, failed, slow),
                }
                let p = self.params.borrow();
                if self.calls >= p.closed_minimum() && p.exceeded(self.calls, self.failed, self.slow) {
                    self.open(now);
                }
            }
            // Recorded by resilience4j into metrics that are never evaluated again.
            Mode::Open => {}
            Mode::HalfOpen => {
                self.calls += 1;
                self.failed += failed as u32;
                self.slow += slow as u32;
                if self.calls >= p.half_open_minimum() {
                    if p.exceeded(self.calls, self.failed, self.slow) {
                        self.open(now);
                    } else {
                        self.close();
                    }
                }
            }
        }
    }

    /// How many times the breaker has opened (Closed → Open and HalfOpen → Open).
    pub fn times_opened(&self) -> u32 {
        self.times_opened
    }

    /// Calls in the current window as of the last recorded result: the sliding window when
    /// Closed, the half-open window when HalfOpen, the window that opened it when Open.
    pub fn buffered_calls(&self) -> u32 {
        self.calls
    }

    /// Failed calls among [`Breaker::buffered_calls`].
    pub fn failed_calls(&self) -> u32 {
        self.failed
    }

    /// Slow calls among [`Breaker::buffered_calls`].
    pub fn slow_calls(&self) -> u32 {
        self.slow
    }

    /// Bytes this breaker owns on the heap (its window), for memory accounting.
    pub fn heap_bytes(&self) -> usize {
        match &self.ring {
            Ring::Inline(_) => 0,
            Ring::Bits(b) => std::mem::size_of_val::<[u64]>(b),
            Ring::Seconds(b) => std::mem::size_of_val::<[Bucket]>(b),
        }
    }

    fn half_open_acquire(&mut self) -> bool {
        if self.permits < self.params.borrow().half_open_calls {
            self.permits += 1;
            true
        } else {
            false
        }
    }

    fn open(&mut self, now: Instant) {
        self.mode = Mode::Open;
        self.open_until = now + self.params.borrow().open_for;
        self.times_opened += 1;
    }

    /// A fresh half-open window and a fresh set of probes.
    fn enter_half_open(&mut self) {
        self.mode = Mode::HalfOpen;
        self.permits = 0;
        self.calls = 0;
        self.failed = 0;
        self.slow = 0;
    }

    /// Closed with a fresh sliding window (`new ClosedState()`). A count ring needs no
    /// clearing: with `calls < N` nothing is evicted, and every slot is overwritten before
    /// `calls` reaches N again.
    fn close(&mut self) {
        self.mode = Mode::Closed;
        self.calls = 0;
        self.failed = 0;
        self.slow = 0;
        if let Ring::Seconds(buckets) = &mut self.ring {
            buckets.fill(Bucket::default());
        }
    }

    /// Count window: overwrite the oldest slot once the window is full.
    #[inline]
    fn record_count(&mut self, n: u32, failed: bool, slow: bool) {
        let bits: &mut [u64] = match &mut self.ring {
            Ring::Inline(words) => words,
            Ring::Bits(words) => words,
            Ring::Seconds(_) => unreachable!("count window without a bit ring"),
        };
        let slot = self.cursor as usize;
        let (w, mask) = (slot / 64 * 2, 1u64 << (slot % 64));
        if self.calls == n {
            self.failed -= (bits[w] & mask != 0) as u32;
            self.slow -= (bits[w + 1] & mask != 0) as u32;
        } else {
            self.calls += 1;
        }
        bits[w] = if failed { bits[w] | mask } else { bits[w] & !mask };
        bits[w + 1] = if slow { bits[w + 1] | mask } else { bits[w + 1] & !mask };
        self.failed += failed as u32;
        self.slow += slow as u32;
        self.cursor = if slot + 1 == n as usize { 0 } else { slot as u64 + 1 };
    }

    /// Time window: move to the current second, evicting the seconds that left the window
    /// (at most N of them), then count into the current second.
    #[inline]
    fn record_time(&mut self, now: Instant, failed: bool, slow: bool) {
        let Ring::Seconds(buckets) = &mut self.ring else { unreachable!("time window without buckets") };
        let n = buckets.len() as u64;
        let second = now.as_ns() / NS_PER_BUCKET;
        if second > self.cursor {
            // Seconds cursor+1 ..= second start empty; their slots held seconds <= second - N.
            for s in (self.cursor + 1).max(second.saturating_sub(n - 1))..=second {
                let b = &mut buckets[(s % n) as usize];
                self.calls -= b.calls;
                self.failed -= b.failed;
                self.slow -= b.slow;
                *b = Bucket::default();
            }
            self.cursor = second;
        }
        let b = &mut buckets[(self.cursor % n) as usize];
        b.calls += 1;
        b.failed += failed as u32;
        b.slow += slow as u32;
        self.calls += 1;
        self.failed += failed as u32;
        self.slow += slow as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::test_time::{MS, S, at};
    use std::mem::size_of;
    use std::rc::Rc;

    fn fast() -> Span {
        Span::from_millis(10)
    }

    /// A small count-window breaker: window 10, minimum 10, 50 %, open 1 s, 3 probes.
    fn small() -> BreakerParams {
        BreakerParams {
            window: BreakerWindow::Count(10),
            minimum_calls: 10,
            open_for: Span::from_secs(1),
            half_open_calls: 3,
            ..BreakerParams::default()
        }
    }

    /// Records `failures` failures then `successes` successes at `now`.
    fn feed<P: Borrow<BreakerParams>>(b: &mut Breaker<P>, now: Instant, failures: u32, successes: u32) {
        for _ in 0..failures {
            b.on_result(now, true, fast());
        }
        for _ in 0..successes {
            b.on_result(now, false, fast());
        }
    }

    #[test]
    fn defaults_are_resilience4j_and_hystrix_is_its_preset() {
        let d = BreakerParams::default();
        assert_eq!(d.window, BreakerWindow::Count(100));
        assert_eq!((d.failure_rate, d.slow_call_rate), (0.5, 1.0));
        assert_eq!(d.slow_call_duration, Span::from_secs(60));
        assert_eq!((d.minimum_calls, d.half_open_calls), (100, 10));
        assert_eq!(d.open_for, Span::from_secs(60));
        let h = BreakerParams::HYSTRIX;
        assert_eq!(h.window, BreakerWindow::Time(Span::from_secs(10)));
        assert_eq!((h.minimum_calls, h.failure_rate, h.half_open_calls), (20, 0.5, 1));
        assert_eq!(h.open_for, Span::from_secs(5));
        assert!(d.validate().is_ok() && h.validate().is_ok());
    }

    #[test]
    fn invalid_parameters_are_rejected() {
        let bad = [
            BreakerParams { window: BreakerWindow::Count(0), ..BreakerParams::default() },
            BreakerParams { window: BreakerWindow::Time(Span::ZERO), ..BreakerParams::default() },
            BreakerParams {
                window: BreakerWindow::Time(Span::from_millis(1500)),
                ..BreakerParams::default()
            },
            BreakerParams { failure_rate: 0.0, ..BreakerParams::default() },
            BreakerParams { failure_rate: 1.01, ..BreakerParams::default() },
            BreakerParams { slow_call_rate: f64::NAN, ..BreakerParams::default() },
            BreakerParams { minimum_calls: 0, ..BreakerParams::default() },
            BreakerParams { half_open_calls: 0, ..BreakerParams::default() },
        ];
        for p in bad {
            assert!(p.validate().is_err(), "{p:?}");
        }
        assert!(std::panic::catch_unwind(|| Breaker::new(bad[0])).is_err());
    }

    #[test]
    fn closed_open_half_open_closed() {
        let mut b = Breaker::new(small());
        let t0 = at(5 * S);
        assert!(b.try_acquire(t0));
        // 4 failures + 5 successes: below the minimum of 10, no verdict even at 44 %.
        feed(&mut b, t0, 4, 5);
        assert_eq!(b.state(), BreakerState::Closed);
        assert_eq!((b.buffered_calls(), b.failed_calls()), (9, 4));
        // The 10th call is a failure: 5/10 = 50 % >= 50 % opens, until t0 + 1 s.
        b.on_result(t0, true, fast());
        let until = t0 + Span::from_secs(1);
        assert_eq!(b.state(), BreakerState::Open { until });
        assert_eq!(b.times_opened(), 1);
        // Refused up to and including `until` (strictly after is needed).
        assert!(!b.try_acquire(t0));
        assert!(!b.try_acquire(until));
        assert_eq!(b.state(), BreakerState::Open { until }, "no transition without time passing");
        // Lazy: still reported Open after `until` until someone asks.
        assert_eq!(b.state(), BreakerState::Open { until });
        let t1 = until + Span::from_ns(1);
        assert!(b.try_acquire(t1));
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert!(b.try_acquire(t1));
        assert!(b.try_acquire(t1));
        assert!(!b.try_acquire(t1), "only 3 probes");
        // Two successes: no verdict yet (the half-open window holds 3).
        feed(&mut b, t1, 0, 2);
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert!(!b.try_acquire(t1), "probes are not given back by results");
        // The third: 0/3 failed, closes with a fresh window.
        feed(&mut b, t1, 0, 1);
        assert_eq!(b.state(), BreakerState::Closed);
        assert_eq!((b.buffered_calls(), b.failed_calls()), (0, 0));
        assert!(b.try_acquire(t1));
        // A fresh window: 9 failures do not trip it (minimum 10), the 10th does.
        feed(&mut b, t1, 9, 0);
        assert_eq!(b.state(), BreakerState::Closed);
        feed(&mut b, t1, 1, 0);
        assert_eq!(b.state(), BreakerState::Open { until: t1 + Span::from_secs(1) });
        assert_eq!(b.times_opened(), 2);
    }

    #[test]
    fn half_open_reopens_on_failures() {
        let mut b = Breaker::new(small());
        feed(&mut b, at(0), 10, 0);
        let t1 = at(2 * S);
        assert!(b.try_acquire(t1));
        assert!(b.try_acquire(t1));
        assert!(b.try_acquire(t1));
        // 2 failures of 3 (67 % >= 50 %) re-open, for open_for from the last result.
        feed(&mut b, t1, 1, 1);
        assert_eq!(b.state(), BreakerState::HalfOpen);
        let t2 = at(2 * S + 300 * MS);
        b.on_result(t2, true, fast());
        assert_eq!(b.state(), BreakerState::Open { until: t2 + Span::from_secs(1) });
        assert_eq!(b.times_opened(), 2);
        assert!(!b.try_acquire(t2 + Span::from_secs(1)));
        // The next half-open period has a fresh set of probes and a fresh window.
        let t3 = t2 + Span::from_secs(1) + Span::from_ns(1);
        assert!(b.try_acquire(t3));
        assert_eq!((b.state(), b.buffered_calls()), (BreakerState::HalfOpen, 0));
        // 1 failure of 3 (33 % < 50 %) closes.
        feed(&mut b, t3, 1, 2);
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn at_most_half_open_calls_probes_per_period() {
        for probes in [1u32, 3, 10] {
            let mut b = Breaker::new(BreakerParams { half_open_calls: probes, ..small() });
            feed(&mut b, at(0), 10, 0);
            for period in 0..3u64 {
                // Many clients sharing the breaker ask before any probe reports.
                let t = at((2 + 10 * period) * S);
                let admitted = (0..1000).filter(|_| b.try_acquire(t)).count() as u32;
                assert_eq!(admitted, probes, "period {period}");
                // Later asks in the same period are refused too, at any time.
                assert!(!b.try_acquire(t + Span::from_secs(100)));
                // All probes fail: back to Open, and the next period starts afresh.
                feed(&mut b, t, probes, 0);
                assert_eq!(b.state(), BreakerState::Open { until: t + Span::from_secs(1) });
            }
        }
    }

    #[test]
    fn half_open_verdict_after_min_of_minimum_calls_and_probes() {
        // resilience4j clamps the half-open window's minimum like any count window's:
        // min(minimum_calls = 2, half_open_calls = 5) = 2 results decide.
        let p = BreakerParams {
            window: BreakerWindow::Count(4),
            minimum_calls: 2,
            half_open_calls: 5,
            ..small()
        };
        let mut b = Breaker::new(p);
        feed(&mut b, at(0), 2, 0);
        assert!(matches!(b.state(), BreakerState::Open { .. }));
        let t = at(2 * S);
        assert_eq!((0..10).filter(|_| b.try_acquire(t)).count(), 5);
        feed(&mut b, t, 0, 1);
        assert_eq!(b.state(), BreakerState::HalfOpen);
        feed(&mut b, t, 0, 1);
        assert_eq!(b.state(), BreakerState::Closed, "closed after 2 of the 5 probes reported");
    }

    #[test]
    fn minimum_calls_gate_and_its_clamp_for_count_windows() {
        // Default: 99 failures (100 % failure rate) cannot trip it; the 100th does.
        let mut b = Breaker::new(BreakerParams::default());
        feed(&mut b, at(0), 99, 0);
        assert_eq!(b.state(), BreakerState::Closed);
        feed(&mut b, at(0), 1, 0);
        assert!(matches!(b.state(), BreakerState::Open { .. }));

        // Count window 20 with minimum 100: clamped to 20.
        let mut b =
            Breaker::new(BreakerParams { window: BreakerWindow::Count(20), ..BreakerParams::default() });
        feed(&mut b, at(0), 19, 0);
        assert_eq!(b.state(), BreakerState::Closed);
        feed(&mut b, at(0), 1, 0);
        assert!(matches!(b.state(), BreakerState::Open { .. }), "minimum clamped to the window of 20");

        // Time windows are not clamped: a 1 s window with minimum 30 needs 30 calls in it.
        let p =
            BreakerParams { window: BreakerWindow::Time(Span::from_secs(1)), minimum_calls: 30, ..small() };
        let mut b = Breaker::new(p);
        feed(&mut b, at(0), 29, 0);
        assert_eq!(b.state(), BreakerState::Closed);
        // The next second evicts those 29: 29 more are still below 30.
        feed(&mut b, at(S), 29, 0);
        assert_eq!((b.state(), b.buffered_calls()), (BreakerState::Closed, 29));
        feed(&mut b, at(S), 1, 0);
        assert!(matches!(b.state(), BreakerState::Open { .. }));
    }

    #[test]
    fn count_window_slides_over_the_last_n() {
        let mut b = Breaker::new(small());
        // F then 9 S: 10 % failed, closed.
        feed(&mut b, at(0), 1, 9);
        assert_eq!((b.buffered_calls(), b.failed_calls()), (10, 1));
        // One more success evicts the failure.
        feed(&mut b, at(0), 0, 1);
        assert_eq!((b.buffered_calls(), b.failed_calls()), (10, 0));
        // Five failures in a row bring the last 10 to >= 50 %: it opens on the 5th.
        feed(&mut b, at(0), 4, 0);
        assert_eq!(b.state(), BreakerState::Closed);
        feed(&mut b, at(0), 1, 0);
        assert!(matches!(b.state(), BreakerState::Open { .. }));
    }

    #[test]
    fn count_window_counts_are_those_of_the_last_n_outcomes() {
        // In place (<= 128 calls) and on the heap, across word boundaries, many times around.
        for n in [1u32, 10, 63, 64, 65, 100, 128, 129, 200] {
            // Thresholds at 100 %: it trips only if all of the last n are failed or slow.
            let p = BreakerParams {
                window: BreakerWindow::Count(n),
                minimum_calls: n,
                failure_rate: 1.0,
                slow_call_rate: 1.0,
                ..small()
            };
            let mut b = Breaker::new(p);
            let mut history = Vec::new();
            let mut x = 12345u64;
            for i in 0..3 * n as usize + 50 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let (failed, slow) = ((x >> 33).is_multiple_of(3), (x >> 40).is_multiple_of(4));
                let failed = failed && i % 7 != 0; // never all failed...
                let slow = slow && i % 5 != 0; // ...nor all slow, for n > 1
                let d = if slow { Span::from_secs(61) } else { fast() };
                b.on_result(at(0), failed, d);
                history.push((failed, slow));
                let last = &history[history.len().saturating_sub(n as usize)..];
                let f = last.iter().filter(|x| x.0).count() as u32;
                let sl = last.iter().filter(|x| x.1).count() as u32;
                assert_eq!(
                    (b.buffered_calls(), b.failed_calls(), b.slow_calls()),
                    (last.len() as u32, f, sl)
                );
                if n > 1 {
                    assert_eq!(b.state(), BreakerState::Closed, "n={n} i={i}");
                } else if b.state() != BreakerState::Closed {
                    break;
                }
            }
        }
    }

    #[test]
    fn count_window_larger_than_a_word() {
        // 130 slots span three words per bitset; fill, wrap, and check eviction at the edges.
        let p = BreakerParams { window: BreakerWindow::Count(130), minimum_calls: 130, ..small() };
        let mut b = Breaker::new(p);
        feed(&mut b, at(0), 64, 66);
        assert_eq!((b.buffered_calls(), b.failed_calls()), (130, 64));
        // 64 successes evict exactly the 64 failures recorded first.
        feed(&mut b, at(0), 0, 64);
        assert_eq!((b.buffered_calls(), b.failed_calls()), (130, 0));
        assert_eq!(b.state(), BreakerState::Closed);
        assert_eq!(b.heap_bytes(), 2 * 3 * 8);
    }

    #[test]
    fn time_window_evicts_whole_seconds() {
        let p =
            BreakerParams { window: BreakerWindow::Time(Span::from_secs(10)), minimum_calls: 20, ..small() };
        // 6 failures in second 0, then 14 more at 9.999 s: all 20 in the window, opens.
        let mut b = Breaker::new(p);
        feed(&mut b, at(200 * MS), 6, 0);
        feed(&mut b, at(10 * S - 1), 14, 0);
        assert!(matches!(b.state(), BreakerState::Open { .. }));
        // Same, but the 14 come at 10.0 s: second 0 left the window, 14 < 20 calls.
        let mut b = Breaker::new(p);
        feed(&mut b, at(200 * MS), 6, 0);
        feed(&mut b, at(10 * S), 14, 0);
        assert_eq!((b.state(), b.buffered_calls()), (BreakerState::Closed, 14));
        feed(&mut b, at(10 * S + 500 * MS), 6, 0);
        assert!(matches!(b.state(), BreakerState::Open { .. }));

        // Successes and failures are evicted per bucket, and a long gap empties the window.
        let mut b = Breaker::new(BreakerParams { minimum_calls: 1000, ..p });
        for s in 0..30u64 {
            feed(&mut b, at(s * S + 1), (s % 3) as u32, 2);
            // Seconds s-9 ..= s are in the window.
            let lo = s.saturating_sub(9);
            let failed: u64 = (lo..=s).map(|x| x % 3).sum();
            assert_eq!(b.failed_calls() as u64, failed, "s={s}");
            assert_eq!(b.buffered_calls() as u64, failed + 2 * (s - lo + 1), "s={s}");
        }
        feed(&mut b, at(1000 * S), 1, 0);
        assert_eq!((b.buffered_calls(), b.failed_calls()), (1, 1));
        assert_eq!(b.heap_bytes(), 10 * 12);
    }

    #[test]
    fn slow_calls_trip_it() {
        // Failures never reach their threshold (100 %); slow calls do (50 % of > 1 s).
        let p = BreakerParams {
            failure_rate: 1.0,
            slow_call_rate: 0.5,
            slow_call_duration: Span::from_secs(1),
            ..small()
        };
        // Exactly 1 s is not slow: ten of them never trip it.
        let mut b = Breaker::new(p);
        for _ in 0..10 {
            b.on_result(at(0), false, Span::from_secs(1));
        }
        assert_eq!((b.state(), b.slow_calls()), (BreakerState::Closed, 0));
        // 4 slow successes of 10: 40 %, closed; a 5th slow call (a failure here) makes 50 %.
        let slow = Span::from_secs(1) + Span::from_ns(1);
        for _ in 0..4 {
            b.on_result(at(0), false, slow);
        }
        assert_eq!((b.state(), b.slow_calls()), (BreakerState::Closed, 4));
        b.on_result(at(0), true, slow);
        assert!(matches!(b.state(), BreakerState::Open { .. }));
        assert_eq!((b.slow_calls(), b.failed_calls()), (5, 1));

        // The default slow rule (100 % of calls over 60 s) needs every buffered call slow.
        let mut b = Breaker::new(BreakerParams::default());
        for _ in 0..99 {
            b.on_result(at(0), false, Span::from_secs(61));
        }
        b.on_result(at(0), false, Span::from_secs(60));
        assert_eq!(b.state(), BreakerState::Closed, "99 % slow");
        b.on_result(at(0), false, Span::from_secs(61));
        assert_eq!(b.state(), BreakerState::Closed, "the 60 s call is still in the window");
        let mut b = Breaker::new(BreakerParams::default());
        for _ in 0..100 {
            b.on_result(at(0), false, Span::from_secs(61));
        }
        assert!(matches!(b.state(), BreakerState::Open { .. }));
    }

    #[test]
    fn results_while_open_are_ignored_and_stale_results_count_when_half_open() {
        let mut b = Breaker::new(small());
        feed(&mut b, at(0), 10, 0);
        assert!(matches!(b.state(), BreakerState::Open { .. }));
        // Calls admitted before it opened report now: nothing changes, even after `until`.
        feed(&mut b, at(500 * MS), 0, 50);
        feed(&mut b, at(3 * S), 0, 50);
        assert!(matches!(b.state(), BreakerState::Open { .. }));
        assert_eq!(b.times_opened(), 1);
        assert!(b.try_acquire(at(3 * S)));
        assert_eq!(b.buffered_calls(), 0, "half-open starts with a fresh window");
        // A result arriving now counts, whichever state admitted the call (resilience4j).
        feed(&mut b, at(3 * S), 0, 3);
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn hystrix_parameterisation_probes_once() {
        let mut b = Breaker::new(BreakerParams::HYSTRIX);
        // Below the request volume threshold of 20, even 100 % errors do not trip it.
        feed(&mut b, at(0), 19, 0);
        assert_eq!(b.state(), BreakerState::Closed);
        // 20 calls at 50 % errors trip it (errorPercentage >= 50).
        let mut b = Breaker::new(BreakerParams::HYSTRIX);
        feed(&mut b, at(0), 0, 10);
        feed(&mut b, at(S), 10, 0);
        let until = at(S) + Span::from_secs(5);
        assert_eq!(b.state(), BreakerState::Open { until });
        // The sleep window: refused through 6 s, then exactly one trial request.
        assert!(!b.try_acquire(until));
        let t = until + Span::from_ns(1);
        assert!(b.try_acquire(t));
        assert!((0..100).all(|_| !b.try_acquire(t)), "a single trial request");
        // The trial fails: open for another sleep window, from the failure.
        let t_fail = t + Span::from_millis(800);
        b.on_result(t_fail, true, Span::from_millis(800));
        assert_eq!(b.state(), BreakerState::Open { until: t_fail + Span::from_secs(5) });
        // Next trial succeeds: closed, with the statistics reset.
        let t2 = t_fail + Span::from_secs(5) + Span::from_ns(1);
        assert!(b.try_acquire(t2));
        b.on_result(t2, false, fast());
        assert_eq!((b.state(), b.buffered_calls()), (BreakerState::Closed, 0));
        feed(&mut b, t2, 19, 0);
        assert_eq!(b.state(), BreakerState::Closed);
        assert_eq!(b.times_opened(), 2);
        // No call is slow under Hystrix parameters.
        b.on_result(t2, false, Span::MAX);
        assert_eq!(b.slow_calls(), 0);
    }

    #[test]
    fn a_million_per_client_breakers_fit() {
        // One shared parameter set; each client holds a reference (or an Rc) and its window,
        // which for the default 100 calls (two 100-bit rings) is stored in place.
        let params = BreakerParams::default();
        let b = Breaker::new(&params);
        assert_eq!(b.heap_bytes(), 0);
        assert_eq!(size_of::<Breaker<&BreakerParams>>(), 88);
        assert_eq!(size_of::<Breaker<Rc<BreakerParams>>>(), 88);
        // Owning its parameters costs their size on top.
        assert_eq!(size_of::<BreakerParams>(), 56);
        assert_eq!(size_of::<Breaker>(), 88 - 8 + 56);
        // 128 calls still fit in place; 129 go to the heap.
        let p = |n| BreakerParams { window: BreakerWindow::Count(n), ..params };
        assert_eq!(Breaker::new(p(128)).heap_bytes(), 0);
        assert_eq!(Breaker::new(p(129)).heap_bytes(), 2 * 3 * 8);
    }
}
