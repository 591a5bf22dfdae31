//! A strategy's gateway layers (`[[client.layers]]`): each layer's retry policy.

use super::client::{backoff, breaker, budget, retry_on};
use crate::experiment::{Duration, LayerSpec};
use crate::model::gateway::LayerParams;
use crate::policy::gate::{GateParams, Scope};
use crate::policy::{RetryAfterMode, RetryAfterPolicy, RetryPolicy};

/// A gateway layer: its retry policy and its own budget and breaker (one proxy: shared, whatever
/// the file's `scope` says).
pub fn layer(l: &LayerSpec) -> LayerParams {
    let gate = GateParams {
        budget: l.budget.as_ref().map(|b| (budget(b).0, Scope::Shared)),
        breaker: l.breaker.as_ref().map(|b| (breaker(b).0, Scope::Shared)),
        throttle: None,
        limit: None,
    };
    LayerParams { retry: layer_policy(l), gate }
}

/// A gateway layer's retry policy: its own attempts, timeout, `retry_on`, backoff and
/// `honor_dont_retry`; no deadline (a layer does not know its caller's), and Retry-After only
/// passed up, not read.
fn layer_policy(l: &LayerSpec) -> RetryPolicy {
    RetryPolicy {
        backoff: backoff(&l.backoff),
        retry_on: retry_on(l.retry_on.as_deref()),
        max_attempts: l.max_attempts,
        timeout: l.timeout.map(Duration::span),
        deadline: None,
        retry_after: RetryAfterPolicy { honor: false, cap: None, mode: RetryAfterMode::Replace },
        honor_dont_retry: l.honor_dont_retry,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::BackoffSpec;
    use crate::policy::Backoff;

    #[test]
    fn a_layer_keeps_its_attempts_timeout_and_backoff_and_reads_no_retry_after() {
        let p = layer_policy(&LayerSpec {
            name: "gw".into(),
            max_attempts: 3,
            timeout: Some(Duration(2_000_000)),
            retry_on: None,
            backoff: BackoffSpec::Constant { base: Duration(5_000_000) },
            honor_dont_retry: true,
            budget: None,
            breaker: None,
        });
        assert_eq!(p.max_attempts, 3);
        assert_eq!(p.timeout, Some(crate::engine::Span::from_millis(2)));
        assert_eq!(p.deadline, None);
        assert_eq!(p.backoff, Backoff::Constant { base_ns: 5e6 });
        assert!(!p.retry_after.honor && p.honor_dont_retry);
    }
}
