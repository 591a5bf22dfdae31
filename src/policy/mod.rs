//! Client retry policy: pure functions and small state machines, unit-tested without the
//! engine. The model (`crate::model`) asks them what to do; they never see events, and they
//! import no file-format types (conversion lives in `crate::assembly`).

pub mod app_retry;
pub mod autoscale;
pub mod backoff;
pub mod balancer;
pub mod breaker;
pub mod budget;
pub mod bulkhead;
pub mod dead_letter;
pub mod decision;
pub mod deploy;
pub mod gate;
pub mod hedge;
pub mod kpa;
pub mod limit;
pub mod outlier;
pub mod pool;
pub mod retry_after;
pub mod retry_on;
pub mod route;
#[cfg(test)]
mod test_time;
pub mod throttle;

pub use app_retry::{AppRetry, FailReasons};
pub use backoff::{Backoff, BackoffState};
pub use breaker::{Breaker, BreakerParams, BreakerState, BreakerWindow};
pub use budget::{
    ConcurrencyBudget, ConcurrencyBudgetParams, GrpcThrottle, GrpcThrottleParams, RatioBudget,
    RatioBudgetParams, RetryCause, TokenBucket, TokenBucketParams,
};
pub use dead_letter::{DeadLetter, Redrive, RedriveSchedule, RedriveWhen};
pub use decision::{Decision, FailReason, FailedAttempt, RetryPermission, RetryPolicy};
pub use retry_after::{RetryAfter, RetryAfterMode, RetryAfterPolicy, RetryDelay};
pub use retry_on::{Outcome, RetryOn};
pub use throttle::{AwsAdaptive, SreThrottle, SreThrottleParams};
