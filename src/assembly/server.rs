//! `[server]` of kind `queue`: its workers and the stages of its admission pipeline.

use super::dist::dist;
use super::faults::{background_error, fault};
use crate::experiment::DisciplineSpec;
use crate::experiment::{InProgress, LockRelease, QueueServerSpec, RetryAfterFormat};
use crate::model::server::ServerParams;
use crate::model::server::codel::CodelParams;
use crate::model::server::discipline::DisciplineParams;
use crate::model::server::idempotency::{Release, StoreParams, WhileInProgress};
use crate::model::server::overload::OverloadParams;
use crate::model::server::rate_limit::RateLimitParams;

pub fn server(spec: &QueueServerSpec) -> ServerParams {
    ServerParams {
        concurrency: spec.concurrency,
        service_time: dist(&spec.service_time),
        queue: spec.queue,
        reject_status: spec.reject_status,
        reject_dont_retry: spec.reject_dont_retry,
        drop_expired: spec.drop_expired,
        faults: spec.faults.iter().map(fault).collect(),
        errors: spec.errors.iter().map(background_error).collect(),
        rate_limit: spec.rate_limit.as_ref().map(|r| RateLimitParams {
            rate_per_s: r.rate,
            burst: r.burst,
            retry_after_whole_seconds: r.retry_after == RetryAfterFormat::Seconds,
        }),
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
