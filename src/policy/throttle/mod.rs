//! Client-side throttles: state machines that a client consults before sending an attempt.
//! Sources: `docs/retry-policies.md`, cited as "reference §x"; one file per throttle.
//!
//! | throttle | `throttle.kind` | source system | decides |
//! |---|---|---|---|
//! | [`SreThrottle`] ([`sre_adaptive`]) | `"sre"` | Google SRE book ch. 21 adaptive throttling (reference §4), as Apache Beam's `AdaptiveThrottler` implements it | reject locally with `p = max(0, (requests - K*accepts) / (requests + 1))` |
//! | [`EnvoyAdmission`] ([`envoy_admission`]) | `"envoy-admission-control"` | Envoy's `admission_control` HTTP filter (`source/extensions/filters/http/admission_control/`) | reject locally with `p = min(max_rejection_probability, max(0, (n - s/sr_threshold) / (n + 1))^(1/aggression))` over the last `sampling_window` |
//! | [`AwsAdaptive`] ([`aws_adaptive`]) | `"aws-adaptive"` | AWS SDK `adaptive` retry mode: botocore `adaptive.py`/`bucket.py`/`throttling.py` (reference §1b), smithy-rs `ClientRateLimiter` (§1c) | delay each send until a token of a CUBIC-paced bucket is available |
//!
//! Each is per client (one instance per client process, or one shared by the fleet), take
//! simulated [`Instant`](crate::engine::Instant)s that never go backwards, allocate nothing
//! after construction (Envoy's window grows to its bound once) and draw no random numbers
//! themselves: [`SreThrottle::admit`] and [`EnvoyAdmission::admit`] take the uniform draw from
//! the caller's stream.

pub mod aws_adaptive;
pub mod envoy_admission;
pub mod sre_adaptive;

pub use aws_adaptive::{
    AWS_CUBIC_BETA, AWS_CUBIC_C, AWS_INITIAL_MAX_RATE, AWS_MAX_RATE_ADJUST_SCALE, AWS_MIN_CAPACITY,
    AWS_MIN_FILL_RATE, AWS_RATE_BUCKET, AWS_SMOOTHING, AwsAdaptive,
};
pub use envoy_admission::{ENVOY_ADMISSION_GRANULARITY, EnvoyAdmission, EnvoyAdmissionParams};
pub use sre_adaptive::{SRE_SLICES, SreThrottle, SreThrottleParams};
