//! `[[server.deploys]]` as the policy layer's rolling updates (`policy::deploy`): one
//! conversion, which validation plans to refuse deploys that overlap and the assembly plans
//! to build the replicas' schedule.

use super::spec::{CountOrPercentSpec, QueueServerSpec};
use crate::engine::Instant;
use crate::policy::deploy::{CountOrPercent, RollingUpdate, resolve};

/// Each deploy's start and its update, counts resolved as Kubernetes resolves them.
pub fn rolling_updates(q: &QueueServerSpec) -> Vec<(Instant, RollingUpdate)> {
    q.deploys
        .iter()
        .map(|d| {
            let (max_surge, max_unavailable) =
                resolve(q.replicas, count(d.max_surge), count(d.max_unavailable));
            let update = RollingUpdate {
                replicas: q.replicas,
                max_surge,
                max_unavailable,
                ready_after: d.startup.span() + d.readiness.span(),
            };
            (Instant::ZERO + d.start.span(), update)
        })
        .collect()
}

fn count(v: CountOrPercentSpec) -> CountOrPercent {
    match v {
        CountOrPercentSpec::Count(n) => CountOrPercent::Count(n),
        CountOrPercentSpec::Percent(p) => CountOrPercent::Percent(p),
    }
}
