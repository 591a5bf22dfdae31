//! A proxy hop's client policy, as a gateway layer (`layers`) and a call-graph edge
//! (`[[services]] calls`) both have it: its own attempts, timeout, `retry_on`, backoff and
//! `honor_dont_retry`, a deadline where the hop knows one, and a budget and breaker of its own.

use super::client::{backoff, breaker, budget, retry_on};
use crate::experiment::{
    BackoffSpec, BreakerSpec, BudgetSpec, Duration, HopPolicySpec, LayerSpec, RetryOnItem,
};
use crate::policy::gate::{GateParams, Scope};
use crate::policy::route::Route;
use crate::policy::{RetryAfterMode, RetryAfterPolicy, RetryPolicy};

/// The keys of one hop, whichever table they came from.
pub(super) struct Hop<'a> {
    pub max_attempts: u32,
    pub timeout: Option<Duration>,
    pub route_timeout: Option<Duration>,
    pub deadline: Option<Duration>,
    pub retry_on: Option<&'a [RetryOnItem]>,
    pub backoff: &'a BackoffSpec,
    pub honor_dont_retry: bool,
    pub honor_overloaded: bool,
    pub budget: Option<&'a BudgetSpec>,
    pub breaker: Option<&'a BreakerSpec>,
}

impl<'a> Hop<'a> {
    /// A gateway layer: no deadline (a layer does not know its caller's).
    pub fn layer(l: &'a LayerSpec) -> Hop<'a> {
        Hop {
            max_attempts: l.max_attempts,
            timeout: l.timeout,
            route_timeout: l.route_timeout,
            deadline: None,
            retry_on: l.retry_on.as_deref(),
            backoff: &l.backoff,
            honor_dont_retry: l.honor_dont_retry,
            honor_overloaded: l.honor_overloaded,
            budget: l.budget.as_ref(),
            breaker: l.breaker.as_ref(),
        }
    }

    /// A call-graph edge.
    pub fn edge(p: &'a HopPolicySpec) -> Hop<'a> {
        Hop {
            max_attempts: p.max_attempts,
            timeout: p.timeout,
            route_timeout: p.route_timeout,
            deadline: p.deadline,
            retry_on: p.retry_on.as_deref(),
            backoff: &p.backoff,
            honor_dont_retry: p.honor_dont_retry,
            honor_overloaded: p.honor_overloaded,
            budget: p.budget.as_ref(),
            breaker: p.breaker.as_ref(),
        }
    }

    /// The hop's retry policy: Retry-After is passed up, not read.
    pub fn retry(&self) -> RetryPolicy {
        RetryPolicy {
            backoff: backoff(self.backoff),
            retry_on: retry_on(self.retry_on),
            max_attempts: self.max_attempts,
            timeout: self.timeout.map(Duration::span),
            deadline: self.deadline.map(Duration::span),
            retry_after: RetryAfterPolicy { honor: false, cap: None, mode: RetryAfterMode::Replace },
            honor_dont_retry: self.honor_dont_retry,
        }
    }

    /// The hop's router: its route timeout and whether it honours `x-envoy-overloaded`.
    pub fn route(&self) -> Route {
        Route { timeout: self.route_timeout.map(Duration::span), honor_overloaded: self.honor_overloaded }
    }

    /// The hop's own controls: one proxy holds them for every request through it, whatever
    /// the file's `scope` says.
    pub fn gate(&self) -> GateParams {
        GateParams {
            budget: self.budget.map(|b| (budget(b).0, Scope::Shared)),
            breaker: self.breaker.map(|b| (breaker(b).0, Scope::Shared)),
            throttle: None,
            limit: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Backoff;

    #[test]
    fn a_layer_keeps_its_attempts_timeout_and_backoff_and_reads_no_retry_after() {
        let l = LayerSpec {
            name: "gw".into(),
            max_attempts: 3,
            timeout: Some(Duration(2_000_000)),
            route_timeout: None,
            retry_on: None,
            backoff: BackoffSpec::Constant { base: Duration(5_000_000) },
            honor_dont_retry: true,
            honor_overloaded: false,
            budget: None,
            breaker: None,
        };
        let p = Hop::layer(&l).retry();
        assert_eq!(p.max_attempts, 3);
        assert_eq!(p.timeout, Some(crate::engine::Span::from_millis(2)));
        assert_eq!(p.deadline, None);
        assert_eq!(p.backoff, Backoff::Constant { base_ns: 5e6 });
        assert!(!p.retry_after.honor && p.honor_dont_retry);
        assert_eq!(Hop::layer(&l).gate(), GateParams::default());
        assert_eq!(Hop::layer(&l).route(), Route::default());
        let envoy = LayerSpec { route_timeout: Some(Duration(15_000_000_000)), honor_overloaded: true, ..l };
        let r = Hop::layer(&envoy).route();
        assert_eq!((r.timeout, r.honor_overloaded), (Some(crate::engine::Span::from_secs(15)), true));
    }
}
