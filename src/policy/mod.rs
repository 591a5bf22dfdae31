//! Client retry policy: pure functions and small state machines, unit-tested without the
//! engine. The model (`crate::model`) asks them what to do; they never see events.

pub mod backoff;
pub mod breaker;
pub mod decision;
pub mod gate;
pub mod retry_on;
pub mod throttle;
pub mod uniform;

pub use backoff::{Backoff, BackoffState};
pub use breaker::{Breaker, BreakerParams, BreakerState, BreakerWindow};
pub use decision::{Decision, FailReason, FailedAttempt, RetryPermission, RetryPolicy};
pub use retry_on::{Outcome, RetryOn};
pub use throttle::{AwsAdaptive, SreThrottle, SreThrottleParams};
