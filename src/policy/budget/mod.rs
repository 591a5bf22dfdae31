//! Retry budgets: client-side state machines that refuse a retry when retries have been too
//! frequent lately (DESIGN §4.2). Each models one production implementation exactly, with the
//! numbers of `docs/retry-policies.md` (cited as "reference §x"), in its own file.
//!
//! | budget | `budget.kind` | source system | a retry is allowed when | refilled by |
//! |---|---|---|---|---|
//! | [`TokenBucket`] ([`token_bucket`]) | `"token-bucket"` | AWS SDK retry quota (§1b botocore standard v2.0/v2.1, §1c smithy-rs) | `tokens >= cost(cause)`, then `tokens -= cost` | a success: `+success_refund` without retries, else `+last cost`; clamped at `capacity` |
//! | [`GrpcThrottle`] ([`grpc_throttle`]) | `"grpc-throttle"` | gRFC A6 `retryThrottling` (§2) | after the failure's `-1`: `tokens > max_tokens / 2` | `+token_ratio` per success, ceiling `max_tokens` |
//! | [`RatioBudget`] ([`ratio`]) | `"ratio"` | Finagle `RetryBudget` (§3a), Linkerd (§3b), tower `TpsBudget` (§3c) | `windowed_sum + reserve >= withdraw`, then `-withdraw` | `+deposit` per request; entries expire after `ttl` |
//! | [`ConcurrencyBudget`] ([`concurrency`]) | `"concurrency"` | Envoy `retry_budget` (§3e) | `active_retries < max(floor(percent/100 * active_requests), min_concurrency)` | retries ending |
//! | [`BrookerBucket`] ([`brooker`]) | `"brooker"` | Brooker's retry simulator, adaptive bucket (§11) | `tokens > retry_cost`, then `tokens -= retry_cost` | `+per_call` per operation started; clamped at `capacity` |
//!
//! The gate around every attempt (`policy::gate`) classifies a retryable failure as a
//! [`RetryCause`] (only the token bucket prices them differently) and calls these before each
//! retry:
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
//! - [`BrookerBucket`]: `on_call_started()` when an operation starts; `try_retry()` before
//!   each retry.
//!
//! None of them
//! allocates after construction, draws random numbers or reads a clock: time comes in as an
//! [`Instant`](crate::engine::Instant) where it matters ([`RatioBudget`]).

pub mod brooker;
pub mod concurrency;
pub mod grpc_throttle;
pub mod ratio;
pub mod token_bucket;

pub use brooker::{BrookerBucket, BrookerBucketParams};
pub use concurrency::{ConcurrencyBudget, ConcurrencyBudgetParams};
pub use grpc_throttle::{GrpcThrottle, GrpcThrottleParams};
pub use ratio::{RATIO_SCALE, RatioBudget, RatioBudgetParams, WINDOW_SLICES, WindowedAdder};
pub use token_bucket::{TokenBucket, TokenBucketParams};

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
