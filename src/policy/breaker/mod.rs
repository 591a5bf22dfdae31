//! Circuit breakers, one file per mechanism (`breaker = { kind = ... }`, DESIGN §4.3):
//!
//! | breaker | `breaker.kind` | source | refuses | state |
//! |---|---|---|---|---|
//! | [`Breaker`] ([`resilience4j`]) | `"resilience4j"` (the default) | resilience4j `CircuitBreaker`, Hystrix as parameters (docs/retry-policies.md §6) | every attempt while open, first attempts included | closed / open / half-open over a sliding window |
//! | [`RetryRatioBreaker`] ([`retry_ratio`]) | `"retry-ratio"` | Brooker's retry simulator, `CircuitBreakerRetryStrategy` (§11) | retries only, when failed attempts / calls started exceed `threshold` | two counts, cumulative or over a sliding time window; no open state |
//!
//! The gate (`policy::gate`) asks the resilience4j breaker before every attempt and tells it
//! every result; the retry-ratio breaker is told of each operation start and each failed
//! attempt, and asked only before a retry.

pub mod resilience4j;
pub mod retry_ratio;

pub use resilience4j::{Breaker, BreakerParams, BreakerState, BreakerWindow};
pub use retry_ratio::{RetryRatioBreaker, RetryRatioParams};
