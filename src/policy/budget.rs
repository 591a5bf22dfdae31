//! Retry budgets: client-side state machines that refuse a retry when retries have been too
//! frequent lately (DESIGN §4.2). Each models one production implementation exactly, with the
//! numbers of `docs/retry-policies.md` (cited below as "reference §x").
//!
//! | type | models | a retry is allowed when | refilled by |
//! |---|---|---|---|
//! | [`TokenBucket`] | AWS SDK retry quota (§1b botocore standard v2.0/v2.1, §1c smithy-rs) | `tokens >= cost(cause)`, then `tokens -= cost` | a success: `+success_refund` without retries, else `+last cost`; clamped at `capacity` |
//! | [`GrpcThrottle`] | gRFC A6 `retryThrottling` (§2) | after the failure's `-1`: `tokens > max_tokens / 2` | `+token_ratio` per success, ceiling `max_tokens` |
//! | [`RatioBudget`] | Finagle `RetryBudget` (§3a), Linkerd (§3b), tower `TpsBudget` (§3c) | `windowed_sum + reserve >= withdraw`, then `-withdraw` | `+deposit` per request; entries expire after `ttl` |
//! | [`ConcurrencyBudget`] | Envoy `retry_budget` (§3e) | `active_retries < max(floor(percent/100 * active_requests), min_concurrency)` | retries ending |
//!
//! The gate around every attempt classifies a retryable failure as a [`RetryCause`] (only the
//! token bucket prices them differently) and calls these before each retry:
//!
//! - [`TokenBucket`]: after a retryable failure, `try_acquire(cause)` (`None`: fail the
//!   operation with reason `budget`; `Some(cost)`: keep `cost` as the operation's last
//!   acquisition); when the operation ends in success, `on_success(last)`.
//! - [`GrpcThrottle`]: after every attempt that failed with a retryable status,
//!   `record_failure_and_check()` (`false`: fail with `budget`); after a successful call,
//!   `record_success()`.
//! - [`RatioBudget`]: `deposit(now)` when an operation starts; `try_withdraw(now)` before each
//!   retry.
//! - [`ConcurrencyBudget`]: `attempt_started(is_retry)` / `attempt_ended(is_retry)` around
//!   every attempt; `retry_allowed()` after a failed attempt has ended, before its retry starts.
//!
//! None of them
//! allocates after construction, draws random numbers or reads a clock: time comes in as an
//! [`Instant`] where it matters ([`RatioBudget`]).

use crate::engine::{Instant, Span};
use std::borrow::Borrow;

/// Why an attempt failed, as far as budgets care: the gate maps a timeout (or a lost answer)
/// to [`RetryCause::Timeout`], a 429 to [`RetryCause::Throttling`], and every other retryable
/// failure (5xx, 409 in progress, connection error) to [`RetryCause::Other`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RetryCause {
    /// No answer within the attempt timeout (botocore's `ConnectTimeoutError`/`ReadTimeoutError`,
    /// smithy-rs's `TransientError`).
    Timeout,
    /// The server said "slow down" (HTTP 429; AWS's throttling error codes).
    Throttling,
    /// Any other retryable failure.
    Other,
}

// ---------------------------------------------------------------------------------------------
// AWS token bucket
// ---------------------------------------------------------------------------------------------

/// Parameters of a [`TokenBucket`], in tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokenBucketParams {
    /// Tokens at start, and the most the bucket holds.
    pub capacity: f64,
    /// Cost of a retry after a failure that is neither a timeout nor throttling.
    pub retry_cost: f64,
    /// Cost of a retry after a timeout.
    pub timeout_cost: f64,
    /// Cost of a retry after throttling (429).
    pub throttling_cost: f64,
    /// Refund when an operation succeeds without having acquired anything.
    pub success_refund: f64,
}

impl TokenBucketParams {
    /// botocore standard mode v2.0 (reference §1b `RetryQuota`; the same numbers in JS v3 and
    /// smithy-rs "legacy" era, §1c/§1d): `INITIAL_CAPACITY = 500` (also the maximum), 10 tokens
    /// after a timeout, 5 otherwise (throttling included), `NO_RETRY_INCREMENT = 1`.
    pub const AWS_STANDARD: TokenBucketParams = TokenBucketParams {
        capacity: 500.0,      // reference §1b: INITIAL_CAPACITY = 500
        retry_cost: 5.0,      // reference §1b: 5 for any other retryable error
        timeout_cost: 10.0,   // reference §1b: 10 for ConnectTimeoutError/ReadTimeoutError
        throttling_cost: 5.0, // reference §1b: throttling is not a separate class in v2.0
        success_refund: 1.0,  // reference §1b: NO_RETRY_INCREMENT = 1
    };

    /// Standard mode v2.1 (`AWS_NEW_RETRIES_2026`, reference §1a/§1b/§1c): 500 tokens, a
    /// throttling retry costs 5, any other retryable error 14; timeouts are no longer a separate
    /// class (so they cost 14 too).
    pub const AWS_STANDARD_2026: TokenBucketParams = TokenBucketParams {
        capacity: 500.0,      // reference §1a/§1b v2.1: retry quota 500 tokens
        retry_cost: 14.0,     // reference §1b v2.1: _RETRY_COST_V2, any other retryable error 14
        timeout_cost: 14.0,   // reference §1a/§1c: timeouts no longer a separate cost class (2.1: timeout 14)
        throttling_cost: 5.0, // reference §1b v2.1: throttling error 5
        success_refund: 1.0,  // reference §1b: NO_RETRY_INCREMENT = 1 (the reference lists no v2.1 change)
    };

    /// The cost of a retry after a failure of this cause.
    #[inline]
    pub fn cost(&self, cause: RetryCause) -> f64 {
        match cause {
            RetryCause::Timeout => self.timeout_cost,
            RetryCause::Throttling => self.throttling_cost,
            RetryCause::Other => self.retry_cost,
        }
    }
}

/// The AWS SDK retry quota (reference §1b botocore `RetryQuota` for standard v2.0 and v2.1,
/// §1c smithy-rs `TokenBucket`): a bucket that starts full, pays for each retry with tokens
/// priced by the failure's cause, and is refilled only by successes.
///
/// - Before a retry, [`TokenBucket::try_acquire`] takes the cost of that retry, or refuses the
///   retry (taking nothing) when fewer tokens remain than it costs: botocore then returns the
///   error at once (`RetryQuotaReached`).
/// - When an operation's final answer is a success (HTTP 2xx),
///   [`TokenBucket::on_success`] refunds `success_refund` (botocore's `NO_RETRY_INCREMENT = 1`,
///   smithy-rs's `regenerate_a_token`) if the operation never acquired tokens, else the amount
///   of its *last* acquisition (smithy-rs: the held permit is released); the bucket never holds
///   more than `capacity`.
/// - A failed ending refunds nothing (reference §1b "Non-2xx endings refund nothing"; the
///   go-v2#3186 issue), and a retry that fails loses its tokens (smithy-rs: the permit is
///   "forgotten").
///
/// In a total outage a full bucket of 500 tokens at cost 5 allows exactly 100 retries, then
/// none until successes come back; with `scope = "shared"` the whole fleet shares those.
///
/// The bucket owns its parameters or shares them (`&TokenBucketParams`, `Rc`): a million
/// per-client buckets then hold one pointer and their tokens each.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokenBucket<P: Borrow<TokenBucketParams> = TokenBucketParams> {
    params: P,
    tokens: f64,
}

impl<P: Borrow<TokenBucketParams>> TokenBucket<P> {
    /// A full bucket.
    pub fn new(params: P) -> TokenBucket<P> {
        let tokens = params.borrow().capacity;
        TokenBucket { params, tokens }
    }

    /// The parameters it was made with.
    pub fn params(&self) -> &TokenBucketParams {
        self.params.borrow()
    }

    /// Tokens left.
    #[inline]
    pub fn tokens(&self) -> f64 {
        self.tokens
    }

    /// Before a retry after a failure of this `cause`: takes its cost and returns it (the gate
    /// keeps it as the operation's last acquisition, for [`TokenBucket::on_success`]), or
    /// returns `None` and takes nothing when fewer tokens remain than the retry costs (the retry
    /// is refused).
    #[inline]
    pub fn try_acquire(&mut self, cause: RetryCause) -> Option<f64> {
        let cost = self.params().cost(cause);
        if self.tokens < cost {
            return None;
        }
        self.tokens -= cost;
        Some(cost)
    }

    /// The operation's final answer was a success: refunds its last acquisition, or
    /// `success_refund` when it acquired nothing (`last_cost = None`), up to `capacity`.
    /// Call it once per successful operation, never after a failure.
    #[inline]
    pub fn on_success(&mut self, last_cost: Option<f64>) {
        let p = self.params.borrow();
        let refund = last_cost.unwrap_or(p.success_refund);
        self.tokens = (self.tokens + refund).min(p.capacity);
    }
}

// ---------------------------------------------------------------------------------------------
// gRPC retry throttling
// ---------------------------------------------------------------------------------------------

/// Parameters of a [`GrpcThrottle`] (a service config's `retryThrottling`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GrpcThrottleParams {
    /// `maxTokens`, in (0, 1000] (reference §2): the start and the ceiling.
    pub max_tokens: f64,
    /// `tokenRatio`, > 0 with at most 3 decimals (reference §2): tokens added per success.
    pub token_ratio: f64,
}

impl GrpcThrottleParams {
    /// The example of gRFC A6 (reference §2: "Spec example: 10 / 0.1"). gRPC has no default:
    /// without `retryThrottling` in the service config there is no throttling.
    pub const A6_EXAMPLE: GrpcThrottleParams = GrpcThrottleParams {
        max_tokens: 10.0, // reference §2: spec example maxTokens 10
        token_ratio: 0.1, // reference §2: spec example tokenRatio 0.1
    };
}

/// gRPC client retry throttling (gRFC A6 `retryThrottling`, reference §2), one per server name.
///
/// `token_count` starts at `max_tokens` and stays in `[0, max_tokens]`; every failed RPC
/// (retryable status, or a "don't retry" pushback) takes 1 ([`GrpcThrottle::record_failure`]),
/// every successful RPC adds `token_ratio` ([`GrpcThrottle::record_success`]); retries (and
/// hedges after the first) are allowed only while `token_count > max_tokens / 2`
/// ([`GrpcThrottle::retry_allowed`]). A refused retry does not wait: the failure is returned.
///
/// **Order (grpc-go, reference §2):** on each retryable failure grpc-go *first* decrements
/// (floor 0) and *then* checks the threshold, so the failure that crosses the threshold is
/// itself not retried. The gate calls [`GrpcThrottle::record_failure`] then
/// [`GrpcThrottle::retry_allowed`], or [`GrpcThrottle::record_failure_and_check`] which does
/// both.
///
/// **What counts (grpc-go `csAttempt.shouldRetry`):** every failed *attempt* whose status is
/// retryable, checked before `maxAttempts`, so the last attempt's failure counts too; a
/// negative pushback counts as a failure whatever the status; a success is counted once per
/// successful call. The reference says "every failed RPC"; grpc-go counts attempts.
///
/// In steady state, with a fraction `f` of RPCs failing, tokens drift by
/// `(1 - f) * token_ratio - f` per RPC: retries stop once `f > token_ratio / (1 + token_ratio)`
/// (about 9 % for the spec example's 0.1).
///
/// Tokens are kept as integer thousandths (gRPC C-core's `milli_tokens`), which is exact for the
/// 3 decimals gRFC A6 allows; grpc-go keeps an `f64`, whose rounding (ten additions of 0.1 are
/// not exactly 1) can move a threshold crossing by one RPC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrpcThrottle {
    max_milli: i64,
    ratio_milli: i64,
    milli: i64,
}

impl GrpcThrottle {
    /// A throttle at `max_tokens`.
    pub fn new(params: GrpcThrottleParams) -> GrpcThrottle {
        let max_milli = to_milli(params.max_tokens);
        GrpcThrottle { max_milli, ratio_milli: to_milli(params.token_ratio), milli: max_milli }
    }

    /// Tokens left.
    #[inline]
    pub fn tokens(&self) -> f64 {
        self.milli as f64 / 1000.0
    }

    /// A failed RPC (retryable status or "don't retry" pushback): one token less, not below 0.
    #[inline]
    pub fn record_failure(&mut self) {
        self.milli = (self.milli - 1000).max(0);
    }

    /// A successful RPC: `token_ratio` more, not above `max_tokens`.
    #[inline]
    pub fn record_success(&mut self) {
        self.milli = (self.milli + self.ratio_milli).min(self.max_milli);
    }

    /// Whether a retry (or a hedge after the first) may be sent: `tokens > max_tokens / 2`.
    #[inline]
    pub fn retry_allowed(&self) -> bool {
        2 * self.milli > self.max_milli
    }

    /// grpc-go's order on a retryable failure: records the failure, then says whether it may
    /// be retried (so the failure that crosses the threshold is not).
    #[inline]
    pub fn record_failure_and_check(&mut self) -> bool {
        self.record_failure();
        self.retry_allowed()
    }
}

/// Tokens to integer thousandths, rounded (gRFC A6 allows 3 decimals).
fn to_milli(tokens: f64) -> i64 {
    (tokens * 1000.0).round() as i64
}

// ---------------------------------------------------------------------------------------------
// Finagle / Linkerd / tower ratio budget
// ---------------------------------------------------------------------------------------------

/// Parameters of a [`RatioBudget`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RatioBudgetParams {
    /// Retries allowed per deposited request (`percentCanRetry`, `retryRatio`,
    /// `retry_percent`), in [0, 1000]; 0.2 = 20 %.
    pub ratio: f64,
    /// Retries per second allowed on top (`minRetriesPerSec`, `minRetriesPerSecond`), >= 0.
    pub min_per_second: f64,
    /// How long deposits and withdrawals count (Finagle accepts [1 s, 60 s]).
    pub ttl: Span,
}

impl RatioBudgetParams {
    /// `RetryBudget()` in Finagle (reference §3a: ttl 10 s, minRetriesPerSec 10,
    /// percentCanRetry 0.2); also Linkerd's default `retryBudget` (§3b) and tower's
    /// `TpsBudget::default()` (§3c).
    pub const FINAGLE_DEFAULT: RatioBudgetParams = RatioBudgetParams {
        ratio: 0.2,               // reference §3a: percentCanRetry = 0.2
        min_per_second: 10.0,     // reference §3a: minRetriesPerSec = 10
        ttl: Span::from_secs(10), // reference §3a: ttl = 10 s
    };
}

/// Finagle's integer scale (reference §3a: `deposit = 1000`; `ScaleFactor` in `RetryBudget.scala`).
pub const RATIO_SCALE: i64 = 1000;

/// Slices of the windowed adder over `ttl` (reference §3a: "a `WindowedAdder` over `ttl` with
/// 10 slices"; tower §3c: 10 slots).
pub const WINDOW_SLICES: usize = 10;

/// A time-windowed sum: Finagle's `WindowedAdder` (twitter/util `WindowedAdder.scala`, used by
/// `TokenBucket.newLeakyBucket` behind `RetryBudget`, reference §3a), with 10 slices over a
/// range.
///
/// It keeps a `writer` for the current slice and a ring of the 9 previous slices. When a call
/// comes at least one slice width (`range / 10`) after the current slice began, the writer is
/// moved into the ring (overwriting the oldest slice), `floor(elapsed / width) - 1` further
/// slices (at most 9) are zeroed for the time that passed with no call, and the new slice
/// begins *at that call* (Finagle's `old = now()`: slices are not aligned to a grid). An entry
/// leaves with the 10th slice after its own: with calls at least once per width it counts for
/// 9 to 10 widths plus the waits for the calls that rolled (about `range`); after a silence of
/// a whole `range` everything is forgotten, and not a nanosecond before.
///
/// Fixed arrays: no allocation. Times are nanoseconds where Finagle uses milliseconds; the
/// slice width is `range / 10` rounded down, as Finagle's `range / slices`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowedAdder {
    /// Width of one slice.
    width: Span,
    /// Sum of the current slice.
    writer: i64,
    /// The previous `WINDOW_SLICES - 1` slices; `ring[i]` is the next one to overwrite.
    ring: [i64; WINDOW_SLICES - 1],
    i: usize,
    /// When the current slice began.
    old: Instant,
}

impl WindowedAdder {
    /// An empty adder over `range`, its first slice beginning at `now`.
    ///
    /// # Panics
    /// If `range` is shorter than 10 ns (a slice would have no width).
    pub fn new(range: Span, now: Instant) -> WindowedAdder {
        let width = Span::from_ns(range.as_ns() / WINDOW_SLICES as u64);
        assert!(!width.is_zero(), "a windowed adder needs a range of at least {WINDOW_SLICES} ns");
        WindowedAdder { width, writer: 0, ring: [0; WINDOW_SLICES - 1], i: 0, old: now }
    }

    /// Moves to the slice holding `now` (Finagle's `expired()`, run by `add` and `sum` whenever
    /// a slice width has passed since the current slice began). A `now` earlier than the
    /// current slice's start changes nothing.
    #[inline]
    fn roll(&mut self, now: Instant) {
        let elapsed = now.since(self.old);
        if elapsed < self.width {
            return;
        }
        const N: usize = WINDOW_SLICES - 1;
        self.ring[self.i] = self.writer;
        self.writer = 0;
        self.i = (self.i + 1) % N;
        // Slices that passed with no call at all hold nothing.
        let skipped = (elapsed.as_ns() / self.width.as_ns() - 1).min(N as u64) as usize;
        for j in 0..skipped {
            self.ring[(self.i + j) % N] = 0;
        }
        self.i = (self.i + skipped) % N;
        self.old = now;
    }

    /// Adds `x` (negative for a withdrawal) to the slice holding `now`.
    #[inline]
    pub fn add(&mut self, now: Instant, x: i64) {
        self.roll(now);
        self.writer += x;
    }

    /// The sum over the live window at `now`.
    #[inline]
    pub fn sum(&mut self, now: Instant) -> i64 {
        self.roll(now);
        self.writer + self.ring.iter().sum::<i64>()
    }
}

/// A retry budget as a ratio of recent requests: Finagle's `RetryBudget` with its exact integer
/// arithmetic (reference §3a), also Linkerd's `retryBudget` (§3b) and tower's `TpsBudget`
/// (§3c), which are ports of it.
///
/// With `ratio > 0`: `deposit = 1000`, `withdraw = floor(1000 / ratio)` (5000 for 0.2). With
/// `ratio = 0`: requests earn nothing (`deposit = 0`) and a retry costs 1, so only the reserve
/// pays. `reserve = floor(min_per_second * ttl_seconds * withdraw)` with `ttl_seconds` whole
/// seconds (Finagle's `ttl.inSeconds`, tower's `ttl.as_secs()`; Finagle takes integer
/// `minRetriesPerSec`, here a real, rounded down once in the product). Deposits and withdrawals
/// go into one [`WindowedAdder`] over `ttl` (10 slices), so both expire after about `ttl`.
///
/// - [`RatioBudget::deposit`]: once per *original request* (Finagle's `RetryFilter` and
///   `RequeueFilter` deposit in `apply()`; DESIGN §4.2: each operation's first attempt).
/// - [`RatioBudget::try_withdraw`]: before a retry; succeeds iff
///   `windowed_sum + reserve >= withdraw`, and then records `-withdraw`.
///
/// Over any sliding `ttl` this allows about `ratio x requests + min_per_second x ttl` retries
/// (with the defaults 20 % of requests plus 100 retries per 10 s). Just before each roll the
/// live window is exactly the last 10 slices, so a client whose every request wants a retry
/// gets `ratio x rate + min_per_second x ttl / P` retries per second in steady state, where
/// `P` is the time 10 slices actually take: `ttl` under steady traffic, a little more when
/// requests are sparse (a slice ends only at the first call after its width has passed). The
/// tests check this to within a derived tolerance.
///
/// **tower's truncation (reference §3c, tower-rs/tower#857), not modelled:** tower scales
/// `0 < ratio <= 1` as `deposit = 1`, `withdraw = floor(1 / ratio)`, so a fractional `1 / ratio`
/// is truncated and the effective ratio becomes `1 / floor(1 / ratio)`: 0.6 behaves as 100 %,
/// 0.3 as 33 %, while 0.2, 0.25 and 0.5 are exact. Finagle's scale of 1000 keeps the error
/// below 0.1 %. To see tower's behaviour, give this budget `ratio = 1 / floor(1 / ratio)`.
///
/// Other variants, not modelled here: reqwest deposits only on success (§3d); Finagle's
/// MethodBuilder deposits twice (twitter/finagle#956, §3a), i.e. twice the ratio; Finagle's
/// per-request cap `ceil(maxRetriesPerReq x balance)` is the gate's `max_attempts`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RatioBudget {
    deposit: i64,
    withdraw: i64,
    reserve: i64,
    window: WindowedAdder,
}

impl RatioBudget {
    /// A budget with an empty window whose first slice begins at `now` (the reserve is
    /// available at once).
    ///
    /// # Panics
    /// If `ratio` is outside [0, 1000] or not a number, `min_per_second` is negative or not a
    /// number, or `ttl` is shorter than 10 ns (validation refuses these first).
    pub fn new(params: RatioBudgetParams, now: Instant) -> RatioBudget {
        let RatioBudgetParams { ratio, min_per_second, ttl } = params;
        assert!(
            (0.0..=RATIO_SCALE as f64).contains(&ratio),
            "a ratio budget's ratio must be in [0, 1000], not {ratio}"
        );
        assert!(min_per_second >= 0.0, "a ratio budget's min_per_second must be >= 0, not {min_per_second}");
        // Finagle: (0, 1) when percentCanRetry == 0, else (1000, (1000 / percentCanRetry).toInt).
        let (deposit, withdraw) =
            if ratio == 0.0 { (0, 1) } else { (RATIO_SCALE, (RATIO_SCALE as f64 / ratio) as i64) };
        let ttl_seconds = ttl.as_ns() / 1_000_000_000;
        let reserve = (min_per_second * ttl_seconds as f64 * withdraw as f64).floor() as i64;
        RatioBudget { deposit, withdraw, reserve, window: WindowedAdder::new(ttl, now) }
    }

    /// Tokens one request deposits (1000, or 0 when `ratio = 0`).
    pub fn deposit_amount(&self) -> i64 {
        self.deposit
    }

    /// Tokens one retry withdraws (`floor(1000 / ratio)`, or 1 when `ratio = 0`).
    pub fn withdraw_amount(&self) -> i64 {
        self.withdraw
    }

    /// The standing reserve in tokens (`floor(min_per_second * ttl_seconds * withdraw)`).
    pub fn reserve(&self) -> i64 {
        self.reserve
    }

    /// Records one original request at `now`.
    #[inline]
    pub fn deposit(&mut self, now: Instant) {
        self.window.add(now, self.deposit);
    }

    /// Before a retry at `now`: withdraws and returns `true` iff the windowed sum plus the
    /// reserve is at least one withdrawal; otherwise changes nothing and returns `false`.
    #[inline]
    pub fn try_withdraw(&mut self, now: Instant) -> bool {
        let ok = self.window.sum(now) + self.reserve >= self.withdraw;
        if ok {
            self.window.add(now, -self.withdraw);
        }
        ok
    }

    /// Retries that could be made at `now` (Finagle's `balance`: `count / withdraw`, rounded
    /// toward zero).
    #[inline]
    pub fn balance(&mut self, now: Instant) -> i64 {
        (self.window.sum(now) + self.reserve) / self.withdraw
    }
}

// ---------------------------------------------------------------------------------------------
// Envoy concurrency budget
// ---------------------------------------------------------------------------------------------

/// Parameters of a [`ConcurrencyBudget`] (Envoy's `RetryBudget` in `circuit_breaker.proto`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConcurrencyBudgetParams {
    /// `budget_percent`: 20.0 means active retries may be 20 % of active requests.
    pub percent: f64,
    /// `min_retry_concurrency`: retries allowed at once whatever the traffic.
    pub min_concurrency: u32,
}

impl ConcurrencyBudgetParams {
    /// Envoy's defaults once a retry budget is configured (reference §3e): 20 %, at least 3.
    pub const ENVOY_DEFAULT: ConcurrencyBudgetParams = ConcurrencyBudgetParams {
        percent: 20.0,      // reference §3e: budget_percent 20 %
        min_concurrency: 3, // reference §3e: min_retry_concurrency 3
    };

    /// Envoy without a retry budget: the `max_retries` circuit breaker (reference §3e: default
    /// 3 concurrent retries), which is this budget with 0 % and a minimum of 3.
    pub const ENVOY_MAX_RETRIES: ConcurrencyBudgetParams = ConcurrencyBudgetParams {
        percent: 0.0,
        min_concurrency: 3, // reference §3e: max_retries circuit breaker, default 3
    };
}

/// Envoy's retry budget (reference §3e; `ResourceManagerImpl::RetryBudgetImpl` in
/// `source/common/upstream/resource_manager_impl.h` at the reference's commit 01c2c1fa): a
/// bound on *concurrent* retries, not on a rate.
///
/// `max_active_retries = max(floor(percent / 100 * active_requests), min_concurrency)`, and a
/// retry may start only if `active_retries < max_active_retries`; otherwise it overflows and
/// the original failure is returned (`upstream_rq_retry_overflow`).
///
/// - `active_requests` counts every attempt in flight, first attempts and retries (Envoy's
///   `requests + pending_requests`: streams open or waiting for a connection).
/// - `active_retries` counts retries in flight.
/// - **The retry about to start does not count itself**: Envoy checks `canCreate()`
///   (`count() < max()`) and only then `inc()`s the retry counter, and its failed attempt has
///   ended. So the gate asks [`ConcurrencyBudget::retry_allowed`] after
///   [`ConcurrencyBudget::attempt_ended`] for the failed attempt and before
///   [`ConcurrencyBudget::attempt_started`]`(true)` for the retry.
/// - The `floor` is Envoy's conversion of the real product to `uint64_t`
///   (`std::max<uint64_t>(budget_percent / 100.0 * current_active, min_retry_concurrency)`);
///   the reference states the formula without it. With 20 % and 19 requests in flight the
///   bound is 3, not 3.8.
///
/// **Difference from Envoy:** Envoy's router takes the retry slot when it *decides* to retry
/// and holds it through the backoff until that retry's answer is judged
/// (`RetryStateImpl::shouldRetry` / `resetRetry`); here a retry counts from
/// [`ConcurrencyBudget::attempt_started`] to [`ConcurrencyBudget::attempt_ended`], i.e. only
/// while in flight, as the gate's interface has it. With backoffs short next to response times
/// (Envoy's 25–250 ms) the two are close; with long backoffs Envoy is stricter.
///
/// DESIGN §4.2 states the rule as it is checked here, before the retry's own request is
/// counted: "active retries < max(floor(percent / 100 x active requests), min_concurrency)"
/// (once the retry has started, the same bound reads `<=`: for integers `a + 1 <= m` is
/// `a < m`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConcurrencyBudget {
    params: ConcurrencyBudgetParams,
    active_requests: u64,
    active_retries: u64,
}

impl ConcurrencyBudget {
    /// A budget with nothing in flight.
    pub fn new(params: ConcurrencyBudgetParams) -> ConcurrencyBudget {
        ConcurrencyBudget { params, active_requests: 0, active_retries: 0 }
    }

    /// An attempt (a retry if `is_retry`) was sent.
    #[inline]
    pub fn attempt_started(&mut self, is_retry: bool) {
        self.active_requests += 1;
        self.active_retries += is_retry as u64;
    }

    /// An attempt (a retry if `is_retry`) got its answer, timed out or was abandoned.
    #[inline]
    pub fn attempt_ended(&mut self, is_retry: bool) {
        debug_assert!(self.active_requests > 0, "attempt_ended without attempt_started");
        debug_assert!(!is_retry || self.active_retries > 0, "a retry ended that never started");
        self.active_requests = self.active_requests.saturating_sub(1);
        self.active_retries = self.active_retries.saturating_sub(is_retry as u64);
    }

    /// Attempts in flight.
    #[inline]
    pub fn active_requests(&self) -> u64 {
        self.active_requests
    }

    /// Retries in flight.
    #[inline]
    pub fn active_retries(&self) -> u64 {
        self.active_retries
    }

    /// `max(floor(percent / 100 * active_requests), min_concurrency)`.
    #[inline]
    pub fn max_active_retries(&self) -> u64 {
        let share = (self.params.percent / 100.0 * self.active_requests as f64) as u64;
        share.max(self.params.min_concurrency as u64)
    }

    /// Whether one more retry may start now: `active_retries < max_active_retries`.
    #[inline]
    pub fn retry_allowed(&self) -> bool {
        self.active_retries < self.max_active_retries()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::u01;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn secs(s: f64) -> Instant {
        Instant::ZERO + Span::from_secs_f64(s)
    }

    // ----- TokenBucket -----

    /// Retries granted in a total outage (every retry fails, nothing refunds) until refused.
    fn outage_retries(params: TokenBucketParams, cause: RetryCause) -> u32 {
        let mut b = TokenBucket::new(params);
        let mut n = 0;
        while b.try_acquire(cause).is_some() {
            n += 1;
            assert!(n <= 10_000, "never refused");
        }
        n
    }

    #[test]
    fn token_bucket_runs_dry_after_capacity_over_cost_retries() {
        let std = TokenBucketParams::AWS_STANDARD;
        assert_eq!(outage_retries(std, RetryCause::Other), 100, "500 / 5");
        assert_eq!(outage_retries(std, RetryCause::Throttling), 100, "500 / 5");
        assert_eq!(outage_retries(std, RetryCause::Timeout), 50, "500 / 10");
        let v21 = TokenBucketParams::AWS_STANDARD_2026;
        assert_eq!(outage_retries(v21, RetryCause::Other), 35, "floor(500 / 14)");
        assert_eq!(outage_retries(v21, RetryCause::Timeout), 35, "timeouts cost 14 in 2.1");
        assert_eq!(outage_retries(v21, RetryCause::Throttling), 100, "500 / 5");

        // After 35 transient retries 10 tokens remain: too few for a 14, enough for two 5s.
        let mut b = TokenBucket::new(v21);
        for _ in 0..35 {
            assert_eq!(b.try_acquire(RetryCause::Other), Some(14.0));
        }
        assert_eq!(b.tokens(), 10.0);
        assert_eq!(b.try_acquire(RetryCause::Other), None);
        assert_eq!(b.tokens(), 10.0, "a refused retry takes nothing");
        assert_eq!(b.try_acquire(RetryCause::Throttling), Some(5.0));
        assert_eq!(b.try_acquire(RetryCause::Throttling), Some(5.0));
        assert_eq!(b.try_acquire(RetryCause::Throttling), None);
        assert_eq!(b.tokens(), 0.0);
    }

    #[test]
    fn token_bucket_refunds_the_last_acquisition_or_one_token_on_success_only() {
        let mut b = TokenBucket::new(TokenBucketParams::AWS_STANDARD);
        // A success without retries at a full bucket: clamped at the capacity.
        b.on_success(None);
        assert_eq!(b.tokens(), 500.0);
        // An operation retries after a 503 (5), then after a timeout (10), then succeeds: only
        // its last acquisition comes back.
        let first = b.try_acquire(RetryCause::Other);
        let last = b.try_acquire(RetryCause::Timeout);
        assert_eq!((first, last), (Some(5.0), Some(10.0)));
        assert_eq!(b.tokens(), 485.0);
        b.on_success(last);
        assert_eq!(b.tokens(), 495.0);
        // A failed operation refunds nothing: the gate simply does not call on_success.
        b.try_acquire(RetryCause::Other);
        assert_eq!(b.tokens(), 490.0);
        // Clean successes refill one token each, never above the capacity.
        for _ in 0..7 {
            b.on_success(None);
        }
        assert_eq!(b.tokens(), 497.0);
        b.on_success(Some(10.0));
        assert_eq!(b.tokens(), 500.0, "clamped");
        // Refill from empty: 5 clean successes pay for one more retry.
        let mut b = TokenBucket::new(TokenBucketParams::AWS_STANDARD);
        while b.try_acquire(RetryCause::Other).is_some() {}
        for i in 1..=5 {
            b.on_success(None);
            assert_eq!(b.try_acquire(RetryCause::Other).is_some(), i == 5, "after {i} successes");
        }
    }

    #[test]
    fn token_bucket_free_cause_is_always_granted() {
        // Java v2 legacy charges 0 for throttling (reference §1d): never refused, even empty.
        let p = TokenBucketParams { throttling_cost: 0.0, ..TokenBucketParams::AWS_STANDARD };
        let mut b = TokenBucket::new(p);
        while b.try_acquire(RetryCause::Other).is_some() {}
        assert_eq!(b.try_acquire(RetryCause::Throttling), Some(0.0));
        assert_eq!(b.tokens(), 0.0);
    }

    // ----- GrpcThrottle -----

    #[test]
    fn grpc_throttle_decrements_before_checking() {
        let mut t = GrpcThrottle::new(GrpcThrottleParams::A6_EXAMPLE);
        assert_eq!(t.tokens(), 10.0);
        assert!(t.retry_allowed());
        // 10 -> 9, 8, 7, 6: each still > 5, retried; the 5th failure brings it to 5, which is
        // not > 5: the failure that crosses the threshold is itself not retried (checking
        // before decrementing would have seen 6 and retried it).
        let verdicts: Vec<bool> = (0..7).map(|_| t.record_failure_and_check()).collect();
        assert_eq!(verdicts, [true, true, true, true, false, false, false]);
        assert_eq!(t.tokens(), 3.0);
        // Floor at 0.
        for _ in 0..10 {
            t.record_failure();
        }
        assert_eq!(t.tokens(), 0.0);
        // From 0, 50 successes give exactly 5.0 (not > 5); the 51st gives 5.1. Integer
        // thousandths make this exact (fifty f64 additions of 0.1 are not exactly 5).
        for _ in 0..50 {
            t.record_success();
        }
        assert_eq!(t.tokens(), 5.0);
        assert!(!t.retry_allowed());
        t.record_success();
        assert!(t.retry_allowed());
        // Ceiling at max_tokens.
        for _ in 0..1000 {
            t.record_success();
        }
        assert_eq!(t.tokens(), 10.0);
    }

    /// Runs `rpcs` RPCs where `fails(i)` says whether RPC `i` fails; returns how many failures
    /// were retried among the failures of the second half (after any warm-up).
    fn retried_share(p: GrpcThrottleParams, rpcs: usize, mut fails: impl FnMut(usize) -> bool) -> f64 {
        let mut t = GrpcThrottle::new(p);
        let (mut failures, mut retried) = (0u64, 0u64);
        for i in 0..rpcs {
            if fails(i) {
                let ok = t.record_failure_and_check();
                if i >= rpcs / 2 {
                    failures += 1;
                    retried += ok as u64;
                }
            } else {
                t.record_success();
            }
        }
        retried as f64 / failures as f64
    }

    #[test]
    fn grpc_throttle_stops_retries_above_ratio_over_one_plus_ratio() {
        // One failure every m RPCs: per cycle tokens move by (m - 1) * ratio - 1, so retries
        // go on forever iff 1/m < ratio / (1 + ratio). Exact, deterministic.
        for (ratio, max) in [(0.1, 10.0), (0.25, 100.0), (0.5, 4.0), (1.0, 1000.0)] {
            let p = GrpcThrottleParams { max_tokens: max, token_ratio: ratio };
            let threshold = ratio / (1.0 + ratio);
            for m in 2..40usize {
                let f = 1.0 / m as f64;
                if ((m - 1) as f64 * ratio - 1.0).abs() < 1e-9 {
                    continue; // exactly at the threshold: tokens stand still
                }
                let share = retried_share(p, 400_000, |i| i % m == m - 1);
                if f < threshold {
                    assert_eq!(share, 1.0, "ratio {ratio}, 1 failure in {m}: below threshold");
                } else {
                    assert_eq!(share, 0.0, "ratio {ratio}, 1 failure in {m}: above threshold");
                }
            }
        }
    }

    #[test]
    fn grpc_throttle_random_failures_cross_over_at_the_threshold() {
        // Independent failures with probability f (A6 example, threshold 1/11 = 0.0909).
        // Tokens are a random walk reflected at 0 and at max; by Kingman's bound the stationary
        // chance of being d tokens from the reflecting end is at most exp(-theta d), with theta
        // the root of E[exp(theta step)] = 1 for the walk's steps measured away from that end.
        // - f = threshold / 2 = 0.0455: the deficit below 10 steps +1 (f) or -0.1; theta = 1.25;
        //   a failure is refused only if the deficit was already >= 4: at most exp(-5) = 0.7 %.
        // - f = 2 threshold = 0.182: tokens step +0.1 or -1 (f); theta = 1.63; a failure is
        //   retried only if tokens were > 6: at most exp(-9.8) = 6e-5 (plus ~50 RPCs of
        //   warm-up from the full start, dropped with the first half).
        // Failures see the stationary law (they are independent of the past), so the shares
        // below have margins of about 7x and 150x over those bounds.
        let p = GrpcThrottleParams::A6_EXAMPLE;
        let threshold = 0.1 / 1.1;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x9C9C);
        let below = retried_share(p, 2_000_000, |_| u01(&mut rng) < threshold / 2.0);
        assert!(below > 0.95, "retried share {below} below the threshold");
        let above = retried_share(p, 2_000_000, |_| u01(&mut rng) < threshold * 2.0);
        assert!(above < 0.01, "retried share {above} above the threshold");
    }

    // ----- WindowedAdder -----

    /// Finagle's `expired()` transcribed literally (two `Arrays.fill` calls and all), to check
    /// the ring loop against.
    struct LiteralAdder {
        window: u64,
        writer: i64,
        buf: [i64; 9],
        i: usize,
        old: u64,
    }

    impl LiteralAdder {
        fn expired(&mut self, now: u64) {
            let n = 9;
            self.buf[self.i] = self.writer;
            self.writer = 0;
            self.i = (self.i + 1) % n;
            let nskip = (((now - self.old) / self.window) as i64 - 1).min(n as i64);
            if nskip > 0 {
                let nskip = nskip as usize;
                let r = nskip.min(n - self.i);
                self.buf[self.i..self.i + r].fill(0);
                self.buf[0..nskip - r].fill(0);
                self.i = (self.i + nskip) % n;
            }
            self.old = now;
        }
        fn add(&mut self, now: u64, x: i64) {
            if now - self.old >= self.window {
                self.expired(now);
            }
            self.writer += x;
        }
        fn sum(&mut self, now: u64) -> i64 {
            if now - self.old >= self.window {
                self.expired(now);
            }
            self.writer + self.buf.iter().sum::<i64>()
        }
    }

    #[test]
    fn windowed_adder_matches_finagles_expiry_on_random_schedules() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(0xADD);
        for trial in 0..200 {
            let range = 1_000 + (u01(&mut rng) * 1e6) as u64;
            let mut ours = WindowedAdder::new(Span::from_ns(range), Instant::ZERO);
            let mut lit = LiteralAdder { window: range / 10, writer: 0, buf: [0; 9], i: 0, old: 0 };
            let mut now = 0u64;
            // Gaps from nothing to 1.5 ranges, so every skip count 0..=9 and beyond occurs.
            let scale = if trial % 2 == 0 { 0.3 } else { 1.5 };
            for _ in 0..2_000 {
                now += (u01(&mut rng) * u01(&mut rng) * scale * range as f64) as u64;
                let t = Instant::from_ns(now);
                if u01(&mut rng) < 0.5 {
                    let x = (u01(&mut rng) * 2000.0) as i64 - 1000;
                    ours.add(t, x);
                    lit.add(now, x);
                } else {
                    assert_eq!(ours.sum(t), lit.sum(now), "trial {trial} at {now}");
                }
            }
        }
    }

    #[test]
    fn windowed_adder_slides_and_forgets() {
        let s = |x: f64| secs(x);
        // Finagle's "maintains a sliding window" scenario, with 10 one-second slices: a call
        // every second keeps the slices aligned; an entry leaves with the 10th roll after it.
        let mut w = WindowedAdder::new(Span::from_secs(10), s(0.0));
        w.add(s(0.0), 1);
        w.add(s(0.5), 2);
        for t in 1..10 {
            assert_eq!(w.sum(s(t as f64)), 3, "t={t}");
        }
        w.add(s(9.0), 4);
        assert_eq!(w.sum(s(9.999)), 7);
        assert_eq!(w.sum(s(10.0)), 4, "slice [0, 1) expired after exactly 10 s (1 and 2 lived 10 and 9.5 s)");
        // With no call from 10 s to 18.999 s, the roll at 18.999 zeroes the 7 slices that
        // passed empty and starts a slice *there* (Finagle's `old = now()`): the 4 stays until
        // a whole slice width after 18.999, not until 19 s.
        assert_eq!(w.sum(s(18.999)), 4);
        assert_eq!(w.sum(s(19.0)), 4);
        assert_eq!(w.sum(s(19.998)), 4);
        assert_eq!(w.sum(s(19.999)), 0);

        // Left alone, it forgets everything once a whole range passes with no call, and not
        // a nanosecond before.
        let mut w = WindowedAdder::new(Span::from_secs(10), s(0.0));
        w.add(s(0.0), 5);
        let mut copy = w;
        assert_eq!(w.sum(s(10.0).saturating_sub(Span::from_ns(1))), 5);
        assert_eq!(copy.sum(s(10.0)), 0);

        // A gap of 2.5 widths: the roll at 2.5 files [0, 2.5) as one slice and zeroes one more
        // for the width that passed empty; the next slice begins at 2.5, off the 1 s grid.
        let mut w = WindowedAdder::new(Span::from_secs(10), s(0.0));
        w.add(s(0.0), 1);
        w.add(s(2.5), 10);
        assert_eq!(w.sum(s(2.5)), 11);
        // At 10.4 (7.9 widths later) the 10 is filed and 6 more slices zeroed: 9 slices since
        // the 1 was written, so it still counts, and keeps counting until the next roll, a
        // whole width later: the 10th slice after it. It lived 11.4 s ("approximately ttl").
        assert_eq!(w.sum(s(10.4)), 11);
        assert_eq!(w.sum(s(11.39)), 11);
        assert_eq!(w.sum(s(11.4)), 10);
    }

    // ----- RatioBudget -----

    fn ratio(ratio: f64, min_per_second: f64, ttl_s: f64) -> RatioBudget {
        RatioBudget::new(
            RatioBudgetParams { ratio, min_per_second, ttl: Span::from_secs_f64(ttl_s) },
            Instant::ZERO,
        )
    }

    #[test]
    fn ratio_budget_uses_finagles_integers() {
        let b = RatioBudget::new(RatioBudgetParams::FINAGLE_DEFAULT, Instant::ZERO);
        assert_eq!((b.deposit_amount(), b.withdraw_amount(), b.reserve()), (1000, 5000, 500_000));
        let b = ratio(0.3, 2.0, 5.0);
        assert_eq!((b.deposit_amount(), b.withdraw_amount(), b.reserve()), (1000, 3333, 33_330));
        let b = ratio(0.0, 10.0, 10.0);
        assert_eq!((b.deposit_amount(), b.withdraw_amount(), b.reserve()), (0, 1, 100));
        let b = ratio(1000.0, 0.0, 10.0);
        assert_eq!((b.deposit_amount(), b.withdraw_amount(), b.reserve()), (1000, 1, 0));
        // Whole seconds of ttl, as Finagle's ttl.inSeconds: 1.9 s counts as 1.
        assert_eq!(ratio(0.2, 10.0, 1.9).reserve(), 10 * 5000);
        // A fractional min_per_second is rounded down once, in the product.
        assert_eq!(ratio(0.2, 0.25, 10.0).reserve(), 12_500);
    }

    #[test]
    fn ratio_budget_exact_small_scenarios() {
        // The reserve alone: 10/s over 10 s = exactly 100 retries, then refused.
        let mut b = RatioBudget::new(RatioBudgetParams::FINAGLE_DEFAULT, Instant::ZERO);
        let t = secs(0.0);
        assert_eq!(b.balance(t), 100);
        for i in 0..100 {
            assert!(b.try_withdraw(t), "retry {i}");
        }
        assert!(!b.try_withdraw(t));
        assert_eq!(b.balance(t), 0);
        // Each 5 requests (5 x 1000) pay for one retry (5000) at 20 %.
        for i in 1..=10 {
            b.deposit(t);
            assert_eq!(b.try_withdraw(t), i == 5 || i == 10, "after {i} deposits");
        }
        // Withdrawals expire too: after ttl with no traffic the whole reserve is back.
        assert_eq!(b.balance(secs(10.0)), 100);

        // ratio 0: requests earn nothing, the reserve is all.
        let mut b = ratio(0.0, 1.0, 10.0);
        for _ in 0..1000 {
            b.deposit(t);
        }
        let granted = (0..100).filter(|_| b.try_withdraw(t)).count();
        assert_eq!(granted, 10);
        // Nothing at all when both are 0 (Finagle's RetryBudget.Empty).
        let mut b = ratio(0.0, 0.0, 10.0);
        b.deposit(t);
        assert!(!b.try_withdraw(t));
        // A refused withdrawal leaves the window untouched.
        let mut b = ratio(0.2, 0.0, 10.0);
        for _ in 0..4 {
            b.deposit(t);
        }
        assert!(!b.try_withdraw(t));
        b.deposit(t);
        assert!(b.try_withdraw(t));
    }

    #[test]
    fn ratio_budget_forgets_deposits_after_ttl() {
        // 100 requests at t = 0 earn 20 retries; 10 s later (a whole ttl with no call) they
        // are forgotten and only the reserve (here 1 retry per second, 10 per window) is left.
        let mut b = ratio(0.2, 1.0, 10.0);
        for _ in 0..100 {
            b.deposit(secs(0.0));
        }
        let mut late = b;
        assert_eq!(b.balance(secs(9.9)), 30);
        assert_eq!(late.balance(secs(10.0)), 10);
        // With steady calls, a deposit made mid-slice is gone 9.5 slices later.
        let mut b = ratio(0.2, 0.0, 10.0);
        b.deposit(secs(0.0)); // the first slice begins at 0
        for _ in 0..5 {
            b.deposit(secs(0.5));
        }
        for s in 1..10 {
            assert_eq!(b.balance(secs(s as f64)), 1, "at {s} s");
        }
        assert_eq!(b.balance(secs(10.0)), 0);
    }

    /// What a stream of requests that all want a retry gets from a ratio budget, measured over
    /// `[warmup, warmup + run)`.
    struct Steady {
        /// Retries granted per second.
        retries: f64,
        /// Requests (deposits) per second.
        requests: f64,
        /// Extremes of `count / withdraw` just before a roll of the adder.
        count_lo: f64,
        count_hi: f64,
    }

    /// Requests at the times `next_gap` spaces them by (in seconds); each deposits, then asks
    /// for a retry at once.
    fn steady(p: RatioBudgetParams, warmup: f64, run: f64, mut next_gap: impl FnMut() -> f64) -> Steady {
        let mut b = RatioBudget::new(p, Instant::ZERO);
        let w = b.withdraw_amount() as f64;
        let (mut t, mut granted, mut requests) = (0.0, 0u64, 0u64);
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        let mut last_count = f64::NAN;
        while t < warmup + run {
            let now = secs(t);
            let slice_began = b.window.old;
            b.deposit(now);
            if b.window.old != slice_began && t >= warmup {
                // This request rolled the adder: the count the previous request left was the
                // count just before the roll.
                lo = lo.min(last_count);
                hi = hi.max(last_count);
            }
            let ok = b.try_withdraw(now);
            if t >= warmup {
                requests += 1;
                granted += ok as u64;
            }
            // Same instant: no roll, just the count.
            last_count = (b.window.sum(now) + b.reserve) as f64 / w;
            t += next_gap();
        }
        Steady { retries: granted as f64 / run, requests: requests as f64 / run, count_lo: lo, count_hi: hi }
    }

    #[test]
    fn ratio_budget_steady_state_is_ratio_times_rate_plus_minimum() {
        // Derivation. Let the adder roll at t_1 < t_2 < ...; slice j = [t_j, t_j+1) nets
        // n_j = 1000 deposits_j - withdraw x retries_j. Just before roll j + 10 the live window
        // is exactly slices j..j+9, so count_(j+10) = reserve + n_j + ... + n_(j+9). Summing
        // over K disjoint periods of 10 slices (P seconds each):
        //   withdraw x retries = 1000 x deposits + K x reserve - sum_k count_k,
        // so retries per second = ratio x requests/s + min_per_second x ttl / P - c / P, where
        // c is the mean of count_k / withdraw, bounded by the pre-roll counts the test records;
        // plus at most (retries in one period + 2) / run for the partial periods at both ends
        // of the measurement. P is 10 slice widths (= ttl) plus, for each roll, the wait for
        // the first request after the width has passed: none for evenly spaced requests at a
        // rate dividing the width, a mean of 1 / rate for Poisson ones.
        // Evenly spaced requests that all want a retry keep the pre-roll count in [0, 1)
        // withdrawal (the last request before the roll withdrew if it could, and a
        // request's own deposit is less than a withdrawal); Poisson ones leave a few
        // withdrawals unspent after a sparse slice.
        let ttl10 = Span::from_secs(10);
        let cases = [
            (100.0, RatioBudgetParams::FINAGLE_DEFAULT, false),
            (1000.0, RatioBudgetParams::FINAGLE_DEFAULT, false),
            (20.0, RatioBudgetParams::FINAGLE_DEFAULT, false),
            (500.0, RatioBudgetParams { ratio: 0.1, min_per_second: 0.0, ttl: ttl10 }, false),
            (50.0, RatioBudgetParams { ratio: 0.0, min_per_second: 5.0, ttl: ttl10 }, false),
            (300.0, RatioBudgetParams { ratio: 0.5, min_per_second: 3.0, ttl: Span::from_secs(2) }, false),
            (100.0, RatioBudgetParams::FINAGLE_DEFAULT, true),
            (40.0, RatioBudgetParams { ratio: 0.25, min_per_second: 20.0, ttl: Span::from_secs(5) }, true),
        ];
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x7A7E);
        for (rate, p, poisson) in cases {
            let run = 2000.0;
            let m = if poisson {
                steady(p, 100.0, run, || -(1.0 - u01(&mut rng)).ln() / rate)
            } else {
                steady(p, 100.0, run, || 1.0 / rate)
            };
            let what = format!("{p:?} at {rate}/s (poisson: {poisson})");
            let c = m.count_lo.abs().max(m.count_hi.abs());
            if poisson {
                assert!(c < 10.0, "{what}: pre-roll count up to {c} withdrawals");
            } else {
                assert!(m.count_lo >= 0.0 && m.count_hi < 1.0, "{what}: {} .. {}", m.count_lo, m.count_hi);
            }
            let ttl = p.ttl.as_secs_f64();
            let period = if poisson { ttl + 10.0 / rate } else { ttl };
            let expected = p.ratio * m.requests + p.min_per_second * ttl / period;
            let tol = c.max(1.0) / period + (expected * period + 2.0) / run;
            assert!(
                (m.retries - expected).abs() <= tol,
                "{what}: {} retries/s, expected {expected} +- {tol}",
                m.retries
            );
            // Hence ratio x rate + min_per_second, up to the same tolerance, the stretch of the
            // periods, and (Poisson) 4 standard errors of the measured request rate.
            let ideal = p.ratio * rate + p.min_per_second;
            let stretch = p.min_per_second * (1.0 - ttl / period);
            let sampling = if poisson { 4.0 * p.ratio * (rate / run).sqrt() } else { 0.0 };
            assert!(
                (m.retries - ideal).abs() <= tol + stretch + sampling,
                "{what}: {} retries/s vs {ideal}",
                m.retries
            );
            if !poisson {
                assert!((m.retries - ideal).abs() <= 0.01 * ideal, "{what}: within 1 %");
            }
        }
    }

    // ----- ConcurrencyBudget -----

    #[test]
    fn concurrency_budget_floor_is_the_minimum() {
        let mut b = ConcurrencyBudget::new(ConcurrencyBudgetParams::ENVOY_DEFAULT);
        // Nothing in flight: 3 retries may run at once (min_retry_concurrency).
        for _ in 0..3 {
            assert!(b.retry_allowed());
            b.attempt_started(true);
        }
        assert!(!b.retry_allowed(), "3 retries in flight, max(floor(0.6), 3) = 3");
        // One ends: the next may start. The retry about to start does not count itself.
        b.attempt_ended(true);
        assert!(b.retry_allowed());
        assert_eq!((b.active_requests(), b.active_retries()), (2, 2));
    }

    #[test]
    fn concurrency_budget_share_of_requests_in_flight() {
        let mut b = ConcurrencyBudget::new(ConcurrencyBudgetParams::ENVOY_DEFAULT);
        for _ in 0..100 {
            b.attempt_started(false);
        }
        assert_eq!(b.max_active_retries(), 20);
        // Retries are requests too: k retries may run while k < floor(0.2 (100 + k)), i.e.
        // up to k = 24 (24 < floor(24.8) is false).
        let mut k = 0;
        while b.retry_allowed() {
            b.attempt_started(true);
            k += 1;
        }
        assert_eq!(k, 24);
        // First attempts ending shrink the bound; in-flight retries are never cancelled.
        for _ in 0..50 {
            b.attempt_ended(false);
        }
        assert_eq!(b.max_active_retries(), 14, "floor(0.2 * 74)");
        assert!(!b.retry_allowed());
    }

    #[test]
    fn concurrency_budget_rounds_the_share_down_like_envoy() {
        let mut b = ConcurrencyBudget::new(ConcurrencyBudgetParams { percent: 20.0, min_concurrency: 0 });
        let mut maxima = Vec::new();
        for _ in 0..26 {
            maxima.push(b.max_active_retries());
            b.attempt_started(false);
        }
        // floor(0.2 n) for n = 0..25.
        let expected: Vec<u64> = (0..26u64).map(|n| n / 5).collect();
        assert_eq!(maxima, expected);
        // 19 in flight: 3.8 -> 3, so 3 retries fill it (a real-valued bound would allow a 4th).
        let mut b = ConcurrencyBudget::new(ConcurrencyBudgetParams { percent: 20.0, min_concurrency: 0 });
        for _ in 0..16 {
            b.attempt_started(false);
        }
        for _ in 0..3 {
            assert!(b.retry_allowed());
            b.attempt_started(true);
        }
        // 19 attempts in flight, 3 of them retries: 3 < floor(3.8) = 3 is false.
        assert!(!b.retry_allowed());
        // Envoy's default max_retries breaker: 3 concurrent retries whatever the traffic.
        let mut b = ConcurrencyBudget::new(ConcurrencyBudgetParams::ENVOY_MAX_RETRIES);
        for _ in 0..1000 {
            b.attempt_started(false);
        }
        assert_eq!(b.max_active_retries(), 3);
    }
}
