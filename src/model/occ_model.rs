//! The optimistic-concurrency server of the AWS "Exponential Backoff And Jitter" study
//! (DESIGN §3.3), as its simulator (`aws-samples/aws-arch-backoff-simulator`) does it.
//!
//! One row with a version number. An attempt is: read request hop -> the server reads the
//! version when the read arrives -> reply hop -> write request hop carrying that version ->
//! the write succeeds iff the version is unchanged, and bumps it -> reply hop. Every hop draws
//! the network latency. One call is one write. After a failed write the backoff delays the
//! next read: it reaches the server after `backoff + one hop`, exactly as in the study's
//! simulator (`tm + net.delay() + backoff`).

use super::clients::{AfterFailure, Clients, NextOp, Sent};
use super::network::Network;
use super::workload::{StartTimes, Workload};
use super::workspace::Leftovers;
use crate::engine::rng::{Stream, stream};
use crate::engine::{self, EventQueue, Instant, Model, Scheduler, Span};
use crate::metrics::series::TimeSeries;
use crate::metrics::{Latencies, RunMetrics, RunRecorder, Window};
use crate::policy::Outcome;
use rand_xoshiro::Xoshiro256PlusPlus;

/// The events of the OCC model.
#[derive(Clone, Copy, Debug)]
pub enum Ev {
    /// A client's first operation starts; the next client's first start is scheduled then.
    FirstStart {
        client: u32,
    },
    ClientStart {
        client: u32,
    },
    ReadArrive {
        op: u32,
    },
    ReadReply {
        op: u32,
        version: u32,
    },
    WriteArrive {
        op: u32,
        version: u32,
    },
    WriteReply {
        op: u32,
        ok: bool,
    },
}

const _: () = assert!(std::mem::size_of::<Ev>() == 12);

/// What a failed write looks like to the client: 409 Conflict (retryable by default).
pub const CONFLICT: Outcome = Outcome::Status(409);

struct OccModel {
    clients: Clients,
    rec: RunRecorder,
    net: Network,
    version: u32,
    arrivals: Xoshiro256PlusPlus,
    starts: StartTimes,
}

/// What one run of the OCC model is given. `queue` (empty) and `latency` (empty histograms)
/// may come from an earlier run, as for [`super::queue_model::RunInputs`].
pub struct RunInputs<'a, Q> {
    pub workload: &'a Workload,
    pub net: Network,
    pub clients: Clients,
    pub run_seed: u64,
    pub horizon: Instant,
    pub series: TimeSeries,
    pub queue: Q,
    pub latency: Latencies,
    /// `[output] windows`.
    pub windows: &'a [Window],
}

/// Runs one replication of an OCC experiment (closed workloads only; validated).
pub fn run<Q: EventQueue<Ev>>(inputs: RunInputs<'_, Q>) -> (RunMetrics, Q, Leftovers) {
    let RunInputs { workload, net, clients, run_seed, horizon, series, queue, latency, windows } = inputs;
    let mut sched: Scheduler<Ev, Q> = Scheduler::new(queue);
    let mut arrivals = stream(run_seed, Stream::Arrivals);
    let mut starts = match *workload {
        Workload::Closed { clients: n, ramp, .. } => StartTimes::new(n, ramp),
        Workload::Open { .. } | Workload::Serial { .. } => StartTimes::new(0, Span::ZERO),
    };
    if let Some((client, at)) = starts.next(&mut arrivals) {
        sched.schedule_at(at, Ev::FirstStart { client });
    }
    let mut model = OccModel {
        clients,
        rec: RunRecorder::new(false, series, latency, windows),
        net,
        version: 0,
        arrivals,
        starts,
    };
    engine::run(&mut model, &mut sched, horizon);
    let (metrics, left) = model.clients.finish(model.rec, sched.processed(), None, horizon);
    (metrics, sched.into_queue(), left)
}

impl Model for OccModel {
    type Event = Ev;

    /// Starts loading the operation the next event will touch.
    #[inline]
    fn prefetch(&self, next: &Ev) {
        match *next {
            Ev::ReadArrive { op }
            | Ev::ReadReply { op, .. }
            | Ev::WriteArrive { op, .. }
            | Ev::WriteReply { op, .. } => self.clients.ops.prefetch(op),
            Ev::FirstStart { .. } | Ev::ClientStart { .. } => {}
        }
    }

    fn handle<Q: EventQueue<Ev>>(&mut self, ev: Ev, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        match ev {
            Ev::FirstStart { client } | Ev::ClientStart { client } => {
                if matches!(ev, Ev::FirstStart { .. })
                    && let Some((next, at)) = self.starts.next(&mut self.arrivals)
                {
                    s.schedule_at(at, Ev::FirstStart { client: next });
                }
                let op = self.clients.start::<false>(client, now, &mut self.rec);
                let d = self.hop();
                s.schedule_in(d, Ev::ReadArrive { op });
            }
            Ev::ReadArrive { op } => {
                let d = self.hop();
                s.schedule_in(d, Ev::ReadReply { op, version: self.version });
            }
            Ev::ReadReply { op, version } => {
                // One call is one write. The OCC resource takes no client-side controls
                // (validated), so the gate always lets the write through.
                let sent = self.clients.send::<false>(op, now, &mut self.rec);
                debug_assert!(matches!(sent, Sent::Attempt(_)), "no controls with occ: {sent:?}");
                let d = self.hop();
                s.schedule_in(d, Ev::WriteArrive { op, version });
            }
            Ev::WriteArrive { op, version } => {
                self.rec.server_call::<false>(now);
                self.rec.accepted(now, false);
                let ok = version == self.version;
                if ok {
                    self.version += 1;
                }
                let d = self.hop();
                s.schedule_in(d, Ev::WriteReply { op, ok });
            }
            Ev::WriteReply { op, ok } => {
                let next = if ok {
                    self.clients.succeed::<false>(op, now, &mut self.rec)
                } else {
                    match self.clients.fail::<false>(op, CONFLICT, None, now, &mut self.rec) {
                        AfterFailure::Retry(backoff) => {
                            let d = self.hop();
                            s.schedule_in(backoff + d, Ev::ReadArrive { op });
                            None
                        }
                        AfterFailure::Ended(next) => next,
                        AfterFailure::Redrive { .. } => {
                            unreachable!("validation refuses dead_letter with the occ server")
                        }
                    }
                };
                if let Some(NextOp { client, at }) = next {
                    s.schedule_at(at, Ev::ClientStart { client });
                }
            }
        }
    }
}

impl OccModel {
    /// One hop's latency (validation refuses losses for `occ`).
    #[inline]
    fn hop(&mut self) -> Span {
        self.net.request().unwrap_or(Span::ZERO)
    }
}
