//! `[workload]` in engine units.

use super::dist::dist;
use crate::engine::Instant;
use crate::experiment::{ArrivalsSpec, Duration, RateChangesSpec, Strategy, WorkloadSpec};
use crate::model::RunParams;
use crate::model::workload::{OpenArrivals, Spacing, Streams, Workload};
use crate::policy::{DeadLetter, Outcome, RetryOn};

/// A queue workload's consumers: each receive waits `visibility` from when a consumer takes
/// it, a message is delivered until `max_receive_count` receives (then dead-lettered, and
/// re-driven as the strategy says), and an acknowledgement is lost with `ack_loss` on top of
/// the network's response loss.
pub fn consumers(
    params: &mut RunParams,
    strategy: &Strategy,
    visibility: Duration,
    max_receive_count: Option<u32>,
    ack_loss: f64,
) {
    params.visibility = Some(visibility.span());
    params.retry.max_attempts = max_receive_count.unwrap_or(u32::MAX);
    params.retry.retry_on = RetryOn::of([Outcome::Timeout]);
    params.dead_letter = max_receive_count.map(|_| DeadLetter { redrive: super::client::redrive(strategy) });
    let kept = 1.0 - params.network.response_loss;
    params.network.response_loss = 1.0 - kept * (1.0 - ack_loss);
}

pub fn workload(spec: &WorkloadSpec) -> Workload {
    match spec {
        WorkloadSpec::Closed { clients, ops_per_client, think_time, ramp, .. } => Workload::Closed {
            clients: *clients,
            ops_per_client: *ops_per_client,
            think: think_time.span(),
            ramp: ramp.span(),
        },
        WorkloadSpec::Serial { clients, gap, duration, first_call, .. } => Workload::Serial {
            clients: *clients,
            gap: dist(gap),
            end: Instant::ZERO + duration.span(),
            first_call: first_call.as_ref().map(dist),
        },
        // The messages arrive as an open workload of one client (the queue); the consumers
        // are the server's workers (`super::run_params` adds the visibility timeout).
        WorkloadSpec::Queue { rate, duration, arrivals, .. } => {
            let spacing = if *arrivals == ArrivalsSpec::Fixed { Spacing::Fixed } else { Spacing::Poisson };
            Workload::Open {
                arrivals: OpenArrivals::spaced(spacing, *rate, duration.span(), &[]),
                clients: 1,
                streams: Streams::Fleet,
            }
        }
        WorkloadSpec::Open {
            rate, duration, schedule, clients, arrivals, first_call, rate_changes, ..
        } => {
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
