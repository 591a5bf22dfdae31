//! `[server]` of kind `queue`: its workers and the stages of its admission pipeline.

use super::dist::dist;
use super::faults::{background_error, fault};
use crate::experiment::{
    AdaptiveConcurrencySpec, DisciplineSpec, InProgress, LockRelease, QueueServerSpec, RateLimitSpec,
    RetryAfterFormat,
};
use crate::model::server::ServerParams;
use crate::model::server::codel::CodelParams;
use crate::model::server::discipline::DisciplineParams;
use crate::model::server::idempotency::{Release, StoreParams, WhileInProgress};
use crate::model::server::overload::OverloadParams;
use crate::model::server::rate_limit::{
    self as rl, LimiterParams, RateLimitParams, fixed_window, gcra, leaky_bucket, sliding_log,
    sliding_window, token_bucket,
};
use crate::policy::limit::envoy_gradient::GradientParams;

/// Replica `replica`'s parameters: the server's, with the faults that strike it.
pub fn server(spec: &QueueServerSpec, replica: u32) -> ServerParams {
    ServerParams {
        concurrency: spec.concurrency,
        service_time: dist(&spec.service_time),
        queue: spec.queue,
        reject_status: spec.reject_status,
        reject_dont_retry: spec.reject_dont_retry,
        drop_expired: spec.drop_expired,
        faults: spec.faults.iter().filter(|f| f.strikes(replica, spec.replicas)).map(fault).collect(),
        errors: spec.errors.iter().map(background_error).collect(),
        rate_limit: spec.rate_limit.as_ref().map(rate_limit),
        idempotency: spec.idempotency.as_ref().map(|i| StoreParams {
            ttl: i.ttl.span(),
            on_in_progress: match i.on_in_progress {
                InProgress::Conflict => WhileInProgress::Conflict,
                InProgress::Wait => WhileInProgress::Wait,
            },
            lock_ttl: i.lock_ttl.map(|t| t.span()),
            release: match i.release {
                LockRelease::Delete => Release::Delete,
                LockRelease::CompareAndDelete => Release::CompareAndDelete,
            },
            fencing: i.fencing,
        }),
        overload: spec.overload.as_ref().map(|o| OverloadParams { alpha: o.alpha, knee: o.knee }),
        discipline: discipline(spec),
        adaptive_concurrency: spec
            .adaptive_concurrency
            .as_ref()
            .filter(|a| a.enabled)
            .map(adaptive_concurrency),
    }
}

/// `[server.adaptive_concurrency]`: Envoy's percentages become fractions.
fn adaptive_concurrency(a: &AdaptiveConcurrencySpec) -> GradientParams {
    GradientParams {
        update_interval: a.concurrency_update_interval.span(),
        percentile: a.sample_aggregate_percentile,
        max_limit: a.max_concurrency_limit,
        min_rtt_interval: a.min_rtt_interval.span(),
        min_rtt_requests: a.min_rtt_request_count,
        jitter: a.jitter / 100.0,
        min_concurrency: a.min_concurrency,
        buffer: a.buffer / 100.0,
        min_limit: a.min_concurrency_limit,
    }
}

fn discipline(spec: &QueueServerSpec) -> DisciplineParams {
    let codel = CodelParams { target: spec.codel.target.span(), interval: spec.codel.interval.span() };
    match spec.discipline {
        DisciplineSpec::Fifo => DisciplineParams::Fifo,
        DisciplineSpec::Lifo => DisciplineParams::Lifo,
        DisciplineSpec::Codel => DisciplineParams::Codel(codel),
        DisciplineSpec::CodelRpc => DisciplineParams::CodelRpc(codel),
        DisciplineSpec::AdaptiveLifo => DisciplineParams::AdaptiveLifo(codel),
    }
}

/// `[server.rate_limit]` of any kind.
fn rate_limit(spec: &RateLimitSpec) -> RateLimitParams {
    let (limiter, status, retry_after) = match *spec {
        RateLimitSpec::TokenBucket { rate, burst, fill_interval, tokens_per_fill, status, retry_after } => {
            let refill = match (rate, fill_interval) {
                (Some(rate_per_s), _) => token_bucket::Refill::Continuous { rate_per_s },
                (None, Some(fill)) => token_bucket::Refill::Discrete {
                    fill_interval: fill.span(),
                    tokens_per_fill: tokens_per_fill.unwrap_or(1),
                },
                (None, None) => unreachable!("validation requires rate or fill_interval"),
            };
            let p = token_bucket::TokenBucketParams { refill, burst };
            (LimiterParams::TokenBucket(p), status, retry_after)
        }
        RateLimitSpec::LeakyBucket { rate, burst, nodelay, status, retry_after } => {
            let p = leaky_bucket::LeakyBucketParams { rate_per_s: rate, burst, nodelay };
            (LimiterParams::LeakyBucket(p), status, retry_after)
        }
        RateLimitSpec::FixedWindow { limit, window, max_wait, status, retry_after } => {
            let p =
                fixed_window::FixedWindowParams { limit, window: window.span(), max_wait: max_wait.span() };
            (LimiterParams::FixedWindow(p), status, retry_after)
        }
        RateLimitSpec::SlidingWindow { limit, window, segments, status, retry_after } => {
            let p = sliding_window::SlidingWindowParams { limit, window: window.span(), segments };
            (LimiterParams::SlidingWindow(p), status, retry_after)
        }
        RateLimitSpec::SlidingLog { limit, window, status, retry_after } => {
            let p = sliding_log::SlidingLogParams { limit, window: window.span() };
            (LimiterParams::SlidingLog(p), status, retry_after)
        }
        RateLimitSpec::Gcra { max_burst, count, period, status, retry_after } => {
            let p = gcra::GcraParams { max_burst, count, period: period.span() };
            (LimiterParams::Gcra(p), status, retry_after)
        }
    };
    let retry_after = match retry_after {
        RetryAfterFormat::Seconds => rl::RetryAfterFormat::Seconds,
        RetryAfterFormat::Exact => rl::RetryAfterFormat::Exact,
        RetryAfterFormat::None => rl::RetryAfterFormat::None,
    };
    RateLimitParams { limiter, status, retry_after }
}
