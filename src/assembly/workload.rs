//! `[workload]` in engine units.

use crate::experiment::WorkloadSpec;
use crate::model::workload::{OpenArrivals, Workload};

pub fn workload(spec: &WorkloadSpec) -> Workload {
    match spec {
        WorkloadSpec::Closed { clients, ops_per_client, think_time, ramp } => Workload::Closed {
            clients: *clients,
            ops_per_client: *ops_per_client,
            think: think_time.span(),
            ramp: ramp.span(),
        },
        WorkloadSpec::Open { rate, duration, schedule, clients } => Workload::Open {
            arrivals: OpenArrivals::new(
                *rate,
                duration.span(),
                &schedule.iter().map(|s| (s.at.span(), s.rate)).collect::<Vec<_>>(),
            ),
            clients: *clients,
        },
    }
}
