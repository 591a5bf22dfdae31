//! A strategy's client side: its retry policy, its controls and its idempotency keys, from
//! the file's types to the plain parameters of [`crate::policy`] (which knows nothing of files).

use crate::engine::{Instant, Span};
use crate::experiment::{
    BackoffSpec, Duration, IdempotencyMode, NamedFailure, RedriveKey, RetryAfterModeSpec, RetryOnItem,
    Strategy,
};
use crate::experiment::{
    BreakerSpec, BreakerWindowSpec, BudgetSpec, LimitSpec, Scope as SpecScope, ThrottleSpec,
};
use crate::model::server::idempotency::KeyMode;
use crate::policy::backoff::MAX_DELAY_NS;
use crate::policy::breaker::RetryRatioParams;
use crate::policy::budget::BrookerBucketParams;
use crate::policy::bulkhead::BulkheadParams;
use crate::policy::gate::{BreakerKind, BudgetParams, GateParams, Scope, ThrottleParams};
use crate::policy::limit::aimd::AimdParams;
use crate::policy::limit::gradient2::Gradient2Params;
use crate::policy::limit::vegas::VegasParams;
use crate::policy::limit::{LimitKind, LimitParams};
use crate::policy::pool::PoolParams;
use crate::policy::retry_after::ENVOY_MAX_INTERVAL;
use crate::policy::throttle::EnvoyAdmissionParams;
use crate::policy::{AppRetry, DeadLetter, FailReasons, Redrive, RedriveWhen};
use crate::policy::{Backoff, Outcome, RetryAfterMode, RetryAfterPolicy, RetryOn, RetryPolicy};
use crate::policy::{
    BreakerParams, BreakerWindow, ConcurrencyBudgetParams, GrpcThrottleParams, RatioBudgetParams,
    SreThrottleParams, TokenBucketParams,
};

/// A strategy's retry policy. With a dead-letter queue, its `after` is the attempts the
/// policy allows (validation keeps it at most `max_attempts`): using them up dead-letters.
pub fn retry_policy(s: &Strategy) -> RetryPolicy {
    let max_attempts = s.policy.max_attempts.unwrap_or(u32::MAX);
    RetryPolicy {
        backoff: backoff(&s.policy.backoff),
        retry_on: retry_on(s.policy.retry_on.as_deref()),
        max_attempts: s
            .policy
            .dead_letter
            .as_ref()
            .and_then(|d| d.after)
            .map_or(max_attempts, |a| a.min(max_attempts)),
        timeout: s.policy.timeout.map(Duration::span),
        deadline: s.policy.deadline.map(Duration::span),
        retry_after: RetryAfterPolicy {
            honor: s.policy.honor_retry_after,
            cap: s.policy.retry_after_cap.map(Duration::span),
            mode: match s.policy.retry_after_mode {
                RetryAfterModeSpec::Replace => RetryAfterMode::Replace,
                RetryAfterModeSpec::Envoy => RetryAfterMode::Envoy { max_interval: ENVOY_MAX_INTERVAL },
                RetryAfterModeSpec::Aws2026 => RetryAfterMode::Aws2026,
                RetryAfterModeSpec::GrpcPushback => RetryAfterMode::GrpcPushback,
                RetryAfterModeSpec::AtLeastBackoff => RetryAfterMode::AtLeastBackoff,
            },
        },
        honor_dont_retry: s.policy.honor_dont_retry,
    }
}

/// The controls of a strategy as the policy's parameters.
pub fn gate_params(s: &Strategy) -> GateParams {
    let budget = s.policy.budget.as_ref().map(budget);
    let breaker = s.policy.breaker.as_ref().map(breaker);
    let throttle = s.policy.throttle.as_ref().map(|t| match *t {
        ThrottleSpec::Sre { k, window, scope: sc } => {
            (ThrottleParams::Sre(SreThrottleParams { k, window: window.span() }), scope(sc))
        }
        ThrottleSpec::AwsAdaptive { scope: sc } => (ThrottleParams::AwsAdaptive, scope(sc)),
        ThrottleSpec::EnvoyAdmissionControl {
            sampling_window,
            sr_threshold,
            aggression,
            rps_threshold,
            max_rejection_probability,
            scope: sc,
        } => {
            let p = EnvoyAdmissionParams {
                sampling_window: sampling_window.span(),
                sr_threshold,
                aggression,
                rps_threshold,
                max_rejection_probability,
            };
            (ThrottleParams::EnvoyAdmission(p), scope(sc))
        }
    });
    GateParams { budget, breaker, throttle, limit: limit(s) }
}

/// A retry budget as the policy's parameters, with its scope (a strategy's, or an edge's of
/// the call graph).
pub fn budget(b: &BudgetSpec) -> (BudgetParams, Scope) {
    match *b {
        BudgetSpec::TokenBucket {
            capacity,
            retry_cost,
            timeout_cost,
            throttling_cost,
            success_refund,
            scope: sc,
        } => (
            BudgetParams::TokenBucket(TokenBucketParams {
                capacity,
                retry_cost,
                timeout_cost,
                throttling_cost,
                success_refund,
            }),
            scope(sc),
        ),
        BudgetSpec::GrpcThrottle { max_tokens, token_ratio, scope: sc } => {
            (BudgetParams::Grpc(GrpcThrottleParams { max_tokens, token_ratio }), scope(sc))
        }
        BudgetSpec::Ratio { ratio, min_per_second, ttl, scope: sc } => {
            (BudgetParams::Ratio(RatioBudgetParams { ratio, min_per_second, ttl: ttl.span() }), scope(sc))
        }
        BudgetSpec::Concurrency { percent, min_concurrency, scope: sc } => {
            (BudgetParams::Concurrency(ConcurrencyBudgetParams { percent, min_concurrency }), scope(sc))
        }
        BudgetSpec::Brooker { capacity, per_call, retry_cost, scope: sc } => {
            (BudgetParams::Brooker(BrookerBucketParams { capacity, per_call, retry_cost }), scope(sc))
        }
    }
}

/// A circuit breaker as the policy's parameters, with its scope.
pub fn breaker(b: &BreakerSpec) -> (BreakerKind, Scope) {
    match b {
        BreakerSpec::Resilience4j(b) => {
            let window = match b.window {
                BreakerWindowSpec::Calls(n) => BreakerWindow::Count(n),
                BreakerWindowSpec::Time(d) => BreakerWindow::Time(d.span()),
            };
            let p = BreakerParams {
                window,
                failure_rate: b.failure_rate,
                slow_call_rate: b.slow_call_rate,
                slow_call_duration: b.slow_call_duration.span(),
                minimum_calls: b.minimum_calls,
                open_for: b.open_for.span(),
                half_open_calls: b.half_open_calls,
            };
            (BreakerKind::Resilience4j(p), scope(b.scope))
        }
        BreakerSpec::RetryRatio { threshold, window, scope: sc } => {
            let p = RetryRatioParams { threshold: *threshold, window: window.map(Duration::span) };
            (BreakerKind::RetryRatio(p), scope(*sc))
        }
    }
}

/// A strategy's adaptive concurrency limit (`limit`, DESIGN §4.9).
fn limit(s: &Strategy) -> Option<(LimitParams, Scope)> {
    let (kind, windowed, sc) = match *s.policy.limit.as_ref()? {
        LimitSpec::Aimd { initial_limit, min_limit, max_limit, backoff_ratio, timeout, windowed, scope } => {
            let p =
                AimdParams { initial_limit, min_limit, max_limit, backoff_ratio, timeout: timeout.span() };
            (LimitKind::Aimd(p), windowed, scope)
        }
        LimitSpec::Vegas { initial_limit, max_limit, smoothing, probe_multiplier, windowed, scope } => {
            let p = VegasParams { initial_limit, max_limit, smoothing, probe_multiplier };
            (LimitKind::Vegas(p), windowed, scope)
        }
        LimitSpec::Gradient2 {
            initial_limit,
            min_limit,
            max_limit,
            smoothing,
            queue_size,
            long_window,
            rtt_tolerance,
            windowed,
            scope,
        } => {
            let p = Gradient2Params {
                initial_limit,
                min_limit,
                max_limit,
                smoothing,
                queue_size,
                long_window,
                rtt_tolerance,
            };
            (LimitKind::Gradient2(p), windowed, scope)
        }
    };
    Some((LimitParams { kind, windowed }, scope(sc)))
}

/// A strategy's connection pool (`pool`, DESIGN §4.7).
pub fn pool(s: &Strategy) -> Option<PoolParams> {
    s.policy.pool.as_ref().map(|p| PoolParams {
        size: p.size,
        max_wait: p.max_wait.map(Duration::span),
        close_on_timeout: p.close_on_timeout,
        connect_time: p.connect_time.span(),
        scope: scope(p.scope),
    })
}

/// A strategy's bulkhead (`bulkhead`, DESIGN §4.8).
pub fn bulkhead(s: &Strategy) -> Option<BulkheadParams> {
    s.policy.bulkhead.as_ref().map(|b| BulkheadParams {
        max_in_flight: b.max_in_flight,
        max_wait: b.max_wait.span(),
        scope: scope(b.scope),
    })
}

/// One control or pool per client process, or one for the fleet.
pub(super) fn scope(s: SpecScope) -> Scope {
    match s {
        SpecScope::Client => Scope::Client,
        SpecScope::Shared => Scope::Shared,
    }
}

/// A strategy's dead-letter queue and its re-drive.
pub fn dead_letter(s: &Strategy) -> Option<DeadLetter> {
    s.policy.dead_letter.as_ref()?;
    Some(DeadLetter { redrive: redrive(s) })
}

/// A strategy's re-drive of its dead-letter queue.
pub fn redrive(s: &Strategy) -> Option<Redrive> {
    s.policy.redrive.as_ref().map(|r| Redrive {
        when: match (r.at, r.after) {
            (Some(at), _) => RedriveWhen::At(Instant::ZERO + at.span()),
            (None, after) => RedriveWhen::After(after.map_or(Span::ZERO, Duration::span)),
        },
        spacing: r.rate.map_or(Span::ZERO, |rate| Span::from_secs_f64(1.0 / rate)),
        new_key: r.key == RedriveKey::New,
    })
}

/// The application's retry loop above the library's (`app_retry`); one pass is none at all,
/// so that `max_attempts = 1` runs exactly as without the key.
pub fn app_retry(s: &Strategy) -> Option<AppRetry> {
    let a = s.policy.app_retry.as_ref().filter(|_| s.policy.app_passes() > 1)?;
    let retry_on = match &a.retry_on {
        None => FailReasons::transient(),
        Some(names) => FailReasons::named(names.iter().map(String::as_str)),
    };
    Some(AppRetry {
        max_passes: s.policy.app_passes(),
        backoff: backoff(&a.backoff),
        retry_on,
        new_key: a.key == RedriveKey::New,
    })
}

/// The idempotency keys a strategy's attempts carry (`idempotency`, DESIGN §3.6).
pub fn idempotency_keys(s: &Strategy) -> KeyMode {
    match s.policy.idempotency {
        IdempotencyMode::None => KeyMode::None,
        IdempotencyMode::PerOp => KeyMode::PerOp,
        IdempotencyMode::PerAttempt => KeyMode::PerAttempt,
    }
}

/// `retry_on`, or DESIGN §3.5's defaults when absent; a group retries its
/// [`crate::experiment::RetryGroup::outcomes`].
pub fn retry_on(items: Option<&[RetryOnItem]>) -> RetryOn {
    let Some(items) = items else { return RetryOn::default() };
    RetryOn::of(items.iter().flat_map(|item| -> Vec<Outcome> {
        match *item {
            RetryOnItem::Status(s) => vec![Outcome::Status(s)],
            RetryOnItem::Named(NamedFailure::Timeout) => vec![Outcome::Timeout],
            RetryOnItem::Named(NamedFailure::ConnectionError) => vec![Outcome::ConnectionError],
            RetryOnItem::Group(g) => g.outcomes(),
        }
    }))
}

/// A backoff with its durations in nanoseconds; no cap is [`MAX_DELAY_NS`].
pub fn backoff(spec: &BackoffSpec) -> Backoff {
    let ns = |d: Duration| d.as_ns() as f64;
    let cap = |c: &Option<Duration>| c.map_or(MAX_DELAY_NS, |c| ns(c).min(MAX_DELAY_NS));
    match spec {
        BackoffSpec::None {} => Backoff::None,
        BackoffSpec::Constant { base } => Backoff::Constant { base_ns: ns(*base) },
        BackoffSpec::Linear { base, cap: c } => Backoff::Linear { base_ns: ns(*base), cap_ns: cap(c) },
        BackoffSpec::Exponential { base, cap: c, multiplier, immediate_first } => Backoff::Exponential {
            base_ns: ns(*base),
            cap_ns: cap(c),
            multiplier: *multiplier,
            immediate_first: *immediate_first,
        },
        BackoffSpec::FullJitter { base, cap: c, multiplier } => {
            Backoff::FullJitter { base_ns: ns(*base), cap_ns: cap(c), multiplier: *multiplier }
        }
        BackoffSpec::EqualJitter { base, cap: c, multiplier } => {
            Backoff::EqualJitter { base_ns: ns(*base), cap_ns: cap(c), multiplier: *multiplier }
        }
        BackoffSpec::DecorrelatedJitter { base, cap: c } => {
            Backoff::DecorrelatedJitter { base_ns: ns(*base), cap_ns: cap(c) }
        }
        BackoffSpec::DecorrelatedJitterV2 { base, cap: c } => {
            Backoff::DecorrelatedJitterV2 { base_ns: ns(*base), cap_ns: cap(c) }
        }
        BackoffSpec::AdditiveJitter { base, cap: c, multiplier, jitter, immediate_first } => {
            Backoff::AdditiveJitter {
                base_ns: ns(*base),
                cap_ns: cap(c),
                multiplier: *multiplier,
                jitter_ns: ns(*jitter),
                immediate_first: *immediate_first,
            }
        }
        BackoffSpec::ProportionalJitter { base, cap: c, multiplier, p } => {
            Backoff::ProportionalJitter { base_ns: ns(*base), cap_ns: cap(c), multiplier: *multiplier, p: *p }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::RetryGroup;

    #[test]
    fn file_values_become_nanoseconds() {
        let ms = |v: u64| Duration(v * 1_000_000);
        let b = backoff(&BackoffSpec::FullJitter { base: ms(10), cap: Some(ms(2000)), multiplier: 2.0 });
        assert_eq!(b, Backoff::FullJitter { base_ns: 1e7, cap_ns: 2e9, multiplier: 2.0 });
        let uncapped = backoff(&BackoffSpec::Exponential {
            base: ms(10),
            cap: None,
            multiplier: 3.0,
            immediate_first: false,
        });
        assert_eq!(
            uncapped,
            Backoff::Exponential {
                base_ns: 1e7,
                cap_ns: MAX_DELAY_NS,
                multiplier: 3.0,
                immediate_first: false
            }
        );
        let r = retry_on(Some(&[RetryOnItem::Status(500), RetryOnItem::Named(NamedFailure::Timeout)]));
        assert_eq!(r, RetryOn::of([Outcome::Status(500), Outcome::Timeout]));
        assert_eq!(retry_on(None), RetryOn::default());
        // Envoy's groups (RetryPolicyImpl::wouldRetryFromHeaders / wouldRetryFromReset).
        let group = |g| retry_on(Some(&[RetryOnItem::Group(g)]));
        let resets = [Outcome::Timeout, Outcome::ConnectionError];
        assert_eq!(group(RetryGroup::Reset), RetryOn::of(resets));
        assert!(!group(RetryGroup::Reset).retries(Outcome::Status(503)), "reset does not retry a 503");
        assert_eq!(group(RetryGroup::ConnectFailure), RetryOn::of([Outcome::ConnectionError]));
        assert_eq!(group(RetryGroup::Retriable4xx), RetryOn::of([Outcome::Status(409)]));
        assert_eq!(
            group(RetryGroup::GatewayError),
            RetryOn::of([502, 503, 504].map(Outcome::Status).into_iter().chain(resets))
        );
        let five = group(RetryGroup::FiveXx);
        assert!((500..=599).all(|s| five.retries(Outcome::Status(s))) && five.retries(Outcome::Timeout));
        assert!(!five.retries(Outcome::Status(429)) && !five.retries(Outcome::Status(409)));
        let codes =
            retry_on(Some(&[RetryOnItem::Group(RetryGroup::RetriableStatusCodes), RetryOnItem::Status(429)]));
        assert_eq!(codes, RetryOn::of([Outcome::Status(429)]));
    }
}
