//! `[workload]` in engine units.

use super::dist::dist;
use crate::engine::Instant;
use crate::experiment::{ArrivalsSpec, WorkloadSpec};
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
        WorkloadSpec::Open { rate, duration, schedule, clients, arrivals, first_call } => {
            let spacing = if *arrivals == ArrivalsSpec::Fixed { Spacing::Fixed } else { Spacing::Poisson };
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
