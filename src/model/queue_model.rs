//! Clients calling a `queue` server (DESIGN §3.3), wired to events.
//!
//! The life of an attempt: `Send` (client; the gate may hold it back or refuse it) -> request
//! hop -> `Arrive` (the server's admission pipeline answers it at once, queues it, or starts
//! it) -> `Done` (worker) -> response hop -> `Answer` (client); a `Timeout` races the answer.
//! A hop of zero latency is delivered at once, without an event.

use super::clients::{AfterFailure, Clients, NextOp, Sent};
use super::network::Network;
use super::server::workers::Next;
use super::server::{Arrival, Reply, Request, Server};
use super::workload::{OpenArrivals, StartTimes, Workload};
use crate::engine::rng::{Stream, stream};
use crate::engine::{self, EventQueue, Instant, Model, Scheduler, Span};
use crate::experiment::QueueServerSpec;
use crate::metrics::series::TimeSeries;
use crate::metrics::{RunMetrics, RunRecorder};
use crate::policy::Outcome;
use crate::policy::uniform::u01;
use rand_xoshiro::Xoshiro256PlusPlus;

/// The events of the queue model: small and `Copy` (24 bytes).
#[derive(Clone, Copy, Debug)]
pub enum Ev {
    /// The next open-workload operation arrives.
    OpenArrival,
    /// A closed-workload client starts its first operation; the next client's first start is
    /// scheduled then (start times are generated one at a time).
    FirstStart { client: u32 },
    /// A closed-workload client starts its next operation.
    ClientStart { client: u32 },
    /// A backoff (or a wait the gate imposed) ended: the operation sends its next attempt.
    Send { op: u32 },
    /// A request reaches the server; its client stops waiting at `gives_up_at`.
    Arrive { op: u32, attempt: u32, gives_up_at: Instant },
    /// A worker finishes serving.
    Done { worker: u32 },
    /// An answer reaches the client.
    Answer { op: u32, attempt: u32, reply: Reply },
    /// The client stops waiting for an attempt.
    Timeout { op: u32, attempt: u32 },
    /// Capacity went back up: waiting requests may start.
    CapacityRestored,
}

// Events are copied in and out of the queue millions of times a second: keep them small.
const _: () = assert!(std::mem::size_of::<Ev>() == 24);

struct QueueModel {
    clients: Clients,
    server: Server,
    rec: RunRecorder,
    net: Network,
    instant_net: bool,
    arrivals_rng: Xoshiro256PlusPlus,
    open: Option<(OpenArrivals, u32)>,
    /// Closed workloads: the clients' first start times (none for open workloads).
    first_starts: StartTimes,
}

/// Runs one replication of a queue-server experiment.
pub fn run<Q: EventQueue<Ev>>(
    spec: &QueueServerSpec,
    workload: &Workload,
    net: Network,
    clients: Clients,
    run_seed: u64,
    horizon: Instant,
    series: TimeSeries,
) -> RunMetrics {
    let server = Server::new(spec, run_seed);
    let fault_span = server.fault_span(horizon);
    let mut sched: Scheduler<Ev, Q> = Scheduler::new(Q::default());
    for at in server.capacity_restorations() {
        sched.schedule_at(at, Ev::CapacityRestored);
    }
    let mut model = QueueModel {
        clients,
        server,
        rec: RunRecorder::new(fault_span.is_some(), series),
        instant_net: net.is_instant(),
        net,
        arrivals_rng: stream(run_seed, Stream::Arrivals),
        open: None,
        first_starts: StartTimes::new(0, Span::ZERO),
    };
    match workload {
        Workload::Closed { clients, ramp, .. } => {
            let mut starts = StartTimes::new(*clients, *ramp);
            if let Some((client, at)) = starts.next(&mut model.arrivals_rng) {
                sched.schedule_at(at, Ev::FirstStart { client });
            }
            model.first_starts = starts;
        }
        Workload::Open { arrivals, clients } => {
            if let Some(t) = arrivals.next_after(Instant::ZERO, &mut model.arrivals_rng) {
                sched.schedule_at(t, Ev::OpenArrival);
            }
            model.open = Some((arrivals.clone(), *clients));
        }
    }
    engine::run(&mut model, &mut sched, horizon);
    model.clients.finish(model.rec, sched.processed(), fault_span, horizon)
}

impl Model for QueueModel {
    type Event = Ev;

    /// Starts loading the operation the next event will touch.
    #[inline]
    fn prefetch(&self, next: &Ev) {
        match *next {
            Ev::Send { op } | Ev::Arrive { op, .. } | Ev::Answer { op, .. } | Ev::Timeout { op, .. } => {
                self.clients.ops.prefetch(op)
            }
            Ev::Done { worker } => self.clients.ops.prefetch(self.server.serving(worker).op),
            _ => {}
        }
    }

    fn handle<Q: EventQueue<Ev>>(&mut self, ev: Ev, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        match ev {
            Ev::OpenArrival => {
                let (arrivals, n) = self.open.as_ref().expect("open arrivals exist in an open workload");
                let client = if *n > 1 { (u01(&mut self.arrivals_rng) * *n as f64) as u32 } else { 0 };
                if let Some(t) = arrivals.next_after(now, &mut self.arrivals_rng) {
                    s.schedule_at(t, Ev::OpenArrival);
                }
                let op = self.clients.start(client, now, &mut self.rec);
                self.send(op, s);
            }
            Ev::FirstStart { client } | Ev::ClientStart { client } => {
                if matches!(ev, Ev::FirstStart { .. })
                    && let Some((next, at)) = self.first_starts.next(&mut self.arrivals_rng)
                {
                    s.schedule_at(at, Ev::FirstStart { client: next });
                }
                let op = self.clients.start(client, now, &mut self.rec);
                self.send(op, s);
            }
            Ev::Send { op } => self.send(op, s),
            Ev::Arrive { op, attempt, gives_up_at } => self.arrive(Request::new(op, attempt, gives_up_at), s),
            Ev::Done { worker } => self.done(worker, s),
            Ev::Answer { op, attempt, reply } => {
                self.answer(op, attempt, reply, s);
                self.clients.ops.release(op);
            }
            Ev::Timeout { op, attempt } => {
                if self.clients.is_waiting(op, attempt) {
                    self.rec.timed_out(now);
                    self.failed(op, Reply::of(Outcome::Timeout), s);
                }
                self.clients.ops.release(op);
            }
            Ev::CapacityRestored => self.start_waiting(s),
        }
    }
}

impl QueueModel {
    /// The operation sends its next attempt now (if the gate lets it): timeout timer, then
    /// the request hop.
    fn send<Q: EventQueue<Ev>>(&mut self, op: u32, s: &mut Scheduler<Ev, Q>) {
        let attempt = match self.clients.send(op, s.now(), &mut self.rec) {
            Sent::Attempt(a) => a,
            Sent::Wait(wait) => return s.schedule_in(wait, Ev::Send { op }),
            Sent::Ended(next) => return self.next_op(next, s),
        };
        if !attempt.gives_up_at.is_never() {
            self.clients.ops.get(op).refs += 1;
            s.schedule_at(attempt.gives_up_at, Ev::Timeout { op, attempt: attempt.number });
        }
        let Some(delay) = self.net.request() else { return };
        // The request holds a reference on its operation until its answer is handled.
        self.clients.ops.get(op).refs += 1;
        let req = Request::new(op, attempt.number, attempt.gives_up_at);
        if self.instant_net {
            self.arrive(req, s);
        } else {
            s.schedule_in(
                delay,
                Ev::Arrive { op, attempt: attempt.number, gives_up_at: attempt.gives_up_at },
            );
        }
    }

    /// A request reaches the server and passes its admission pipeline.
    fn arrive<Q: EventQueue<Ev>>(&mut self, req: Request, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        self.rec.server_call();
        match self.server.arrive(req, now) {
            Arrival::Answered(o) => {
                self.rec.rejected(now);
                self.respond(req, o, s)
            }
            Arrival::Silenced => {
                self.rec.rejected(now);
                self.clients.ops.release(req.op)
            }
            Arrival::Started { worker, service } => {
                self.accepted(now, false);
                self.rec.service_started(Span::ZERO);
                s.schedule_in(service, Ev::Done { worker })
            }
            Arrival::Queued => self.accepted(now, true),
        }
    }

    #[inline]
    fn accepted(&mut self, now: Instant, queued: bool) {
        self.rec.accepted(now, queued);
        let (busy, queued) = self.server.levels();
        self.rec.levels(now, busy, queued);
    }

    /// A worker finished: the side effect happens, the answer goes back, and the next waiting
    /// request starts.
    fn done<Q: EventQueue<Ev>>(&mut self, worker: u32, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        let (req, started) = self.server.done(worker);
        let op = self.clients.ops.get(req.op);
        op.executions += 1;
        self.rec.side_effect(op.executions, now);
        if req.gives_up_at < now {
            self.rec.wasted(now.since(started.max(req.gives_up_at)));
        }
        self.respond(req, req.answer, s);
        self.start_waiting(s);
    }

    /// Starts waiting requests while workers are free.
    fn start_waiting<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        while let Some(next) = self.server.next_waiting(now) {
            match next {
                Next::Started { worker, service, waited } => {
                    self.rec.service_started(waited);
                    s.schedule_in(service, Ev::Done { worker })
                }
                Next::Dropped(req) => self.clients.ops.release(req.op),
            }
        }
        let (busy, queued) = self.server.levels();
        self.rec.levels(now, busy, queued);
    }

    /// Sends an answer back over the response hop (it may be lost).
    #[inline]
    fn respond<Q: EventQueue<Ev>>(&mut self, req: Request, reply: Reply, s: &mut Scheduler<Ev, Q>) {
        let Some(delay) = self.net.response() else {
            return self.clients.ops.release(req.op);
        };
        if self.instant_net {
            self.answer(req.op, req.attempt, reply, s);
            self.clients.ops.release(req.op);
        } else {
            s.schedule_in(delay, Ev::Answer { op: req.op, attempt: req.attempt, reply });
        }
    }

    /// An answer reaches the client; a late answer (the client gave up on that attempt) is
    /// ignored.
    fn answer<Q: EventQueue<Ev>>(&mut self, op: u32, attempt: u32, reply: Reply, s: &mut Scheduler<Ev, Q>) {
        if !self.clients.is_waiting(op, attempt) {
            return;
        }
        if reply.outcome == Outcome::Success {
            let next = self.clients.succeed(op, s.now(), &mut self.rec);
            self.next_op(next, s);
        } else {
            self.failed(op, reply, s);
        }
    }

    /// The attempt the client was waiting for failed: retry after the backoff, or end.
    fn failed<Q: EventQueue<Ev>>(&mut self, op: u32, reply: Reply, s: &mut Scheduler<Ev, Q>) {
        let retry_after = reply.retry_after.decode();
        match self.clients.fail(op, reply.outcome, retry_after, s.now(), &mut self.rec) {
            AfterFailure::Retry(delay) => s.schedule_in(delay, Ev::Send { op }),
            AfterFailure::Ended(next) => self.next_op(next, s),
        }
    }

    #[inline]
    fn next_op<Q: EventQueue<Ev>>(&mut self, next: Option<NextOp>, s: &mut Scheduler<Ev, Q>) {
        if let Some(NextOp { client, at }) = next {
            s.schedule_at(at, Ev::ClientStart { client });
        }
    }
}
