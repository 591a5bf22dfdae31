//! `[workload]` in engine units.

use super::dist::dist;
use crate::engine::Instant;
use crate::experiment::{ArrivalsSpec, RateChangesSpec, WorkloadSpec};
use crate::model::workload::{OpenArrivals, Spacing, Streams, Workload};

pub fn workload(spec: &WorkloadSpec) -> Workload {
    match spec {
        WorkloadSpec::Closed { clients, ops_per_client, think_time, ramp } => Workload::Closed {
            clients: *clients,
            ops_per_client: *ops_per_client,
            think: think_time.span(),
            ramp: ramp.span(),
        },
        WorkloadSpec::Serial { clients, gap, duration, first_call } => Workload::Serial {
            clients: *clients,
            gap: dist(gap),
            end: Instant::ZERO + duration.span(),
            first_call: first_call.as_ref().map(dist),
        },
        WorkloadSpec::Open { rate, duration, schedule, clients, arrivals, first_call, rate_changes } => {
            let spacing = match (arrivals, rate_changes) {
                (ArrivalsSpec::Fixed, _) => Spacing::Fixed,
                (_, RateChangesSpec::Exact) => Spacing::Poisson,
                (_, RateChangesSpec::AtNextArrival) => Spacing::PoissonAtNextArrival,
            };
            let streams = match arrivals {
                ArrivalsSpec::PerClient => Streams::PerClient { first_call: first_call.as_ref().map(dist) },
                ArrivalsSpec::Poisson | ArrivalsSpec::Fixed => Streams::Fleet,
            };
            Workload::Open {
                arrivals: OpenArrivals::spaced(
                    spacing,
                    *rate,
                    duration.span(),
                    &schedule.iter().map(|s| (s.at.span(), s.rate)).collect::<Vec<_>>(),
                ),
                clients: *clients,
                streams,
            }
        }
    }
}
