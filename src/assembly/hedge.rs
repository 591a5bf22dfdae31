//! A strategy's `hedge` (DESIGN §4.10) as the model's [`HedgeParams`]: the preset's values
//! fill the keys the file leaves out, then gRPC A6's.

use super::client::retry_on;
use crate::experiment::{HedgeDelaySpec, HedgePreset, HedgeSpec, Strategy};
use crate::policy::budget::BrookerBucketParams;
use crate::policy::hedge::{HedgeDelay, HedgeParams};
use crate::policy::{Outcome, RetryOn};

/// The strategy's hedging policy, if it hedges.
pub fn hedge(s: &Strategy) -> Option<HedgeParams> {
    s.policy.hedge.as_ref().map(|h| params(h, s.policy.honor_retry_after))
}

/// A call-graph edge's `hedge`: as a strategy's, without pushback (an edge reads no
/// Retry-After) and with one latency window and budget for the edge.
pub fn edge_hedge(h: &HedgeSpec) -> HedgeParams {
    HedgeParams { scope: crate::policy::gate::Scope::Shared, ..params(h, false) }
}

fn params(h: &HedgeSpec, honor_pushback: bool) -> HedgeParams {
    let delay = match h.parsed_delay().expect("validation read the delay") {
        Some(HedgeDelaySpec::After(d)) => HedgeDelay::Fixed(d.span()),
        Some(HedgeDelaySpec::Percentile(p)) => HedgeDelay::Percentile(p),
        None => match h.preset {
            // Polly v8 `HedgingConstants.DefaultHedgingDelay`: 2 s.
            Some(HedgePreset::Polly) => HedgeDelay::Fixed(HedgeParams::POLLY_DELAY),
            // Envoy hedges only on the per-try timeout.
            Some(HedgePreset::Envoy) => HedgeDelay::Never,
            // A6: `hedgingDelay` unset = 0 s, every copy at once.
            None => HedgeDelay::Fixed(crate::engine::Span::ZERO),
        },
    };
    let max_attempts = h.max_attempts.unwrap_or_else(|| match h.preset {
        // Polly `MaxHedgedAttempts` 1: the original and one hedge.
        Some(HedgePreset::Polly) => HedgeParams::POLLY_MAX_ATTEMPTS,
        // Envoy `num_retries` 1.
        Some(HedgePreset::Envoy) => HedgeParams::ENVOY_MAX_ATTEMPTS,
        None => unreachable!("validation requires max_attempts without a preset"),
    });
    let non_fatal = match (&h.non_fatal, h.preset) {
        (Some(items), _) => retry_on(Some(items)),
        // Polly's default `ShouldHandle` handles every exception (but cancellation): every
        // failure sends the next copy.
        (None, Some(HedgePreset::Polly)) => RetryOn::all_failures(),
        // Envoy: errors before the per-try timeout are retried under the route's `retry_on`;
        // "5xx" (every 5xx answer and connection failures) is the preset's choice.
        (None, Some(HedgePreset::Envoy)) => {
            RetryOn::of((500..=599).map(Outcome::Status).chain([Outcome::ConnectionError]))
        }
        // A6: `nonFatalStatusCodes` unset: every failure is fatal.
        (None, None) => RetryOn::none(),
    };
    HedgeParams {
        max_attempts,
        delay,
        non_fatal,
        on_per_try_timeout: h.hedge_on_per_try_timeout.unwrap_or(h.preset == Some(HedgePreset::Envoy)),
        window: h.window.span(),
        min_samples: h.min_samples,
        budget: h.budget.as_ref().map(|b| BrookerBucketParams {
            capacity: b.capacity,
            per_call: b.ratio,
            retry_cost: 1.0,
        }),
        cancel_in_service: h.cancel_in_service,
        scope: super::client::scope(h.scope),
        honor_pushback,
    }
}
