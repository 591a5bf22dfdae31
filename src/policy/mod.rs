//! Client retry policy: pure functions and small state machines, unit-tested without the
//! engine. The model (`crate::model`) asks them what to do; they never see events.

pub mod backoff;
pub mod budget;
pub mod decision;
pub mod presets;
pub mod retry_after;
pub mod retry_on;
pub mod uniform;

pub use backoff::{Backoff, BackoffState};
pub use budget::{
    ConcurrencyBudget, ConcurrencyBudgetParams, GrpcThrottle, GrpcThrottleParams, RatioBudget,
    RatioBudgetParams, RetryCause, TokenBucket, TokenBucketParams,
};
pub use decision::{Decision, FailReason, RetryPolicy};
pub use presets::Preset;
pub use retry_after::{RetryAfter, RetryAfterMode, RetryAfterPolicy, RetryDelay};
pub use retry_on::{Outcome, RetryOn};
