//! Clients calling a `queue` server (DESIGN §3.3): `concurrency` workers, a bounded FIFO wait
//! queue, rejections, error answers, faults, attempt timeouts and lost messages.
//!
//! The life of an attempt: `Send` (client) -> request hop -> `Arrive` (server: answered at once,
//! queued, or started) -> `Done` (worker) -> response hop -> `Answer` (client); a `Timeout`
//! races the answer. A hop of zero latency is delivered at once, without an event.

use super::clients::{AfterFailure, Attempt, Clients, NextOp};
use super::dist::Dist;
use super::faults::{Faults, OutageAnswer};
use super::network::Network;
use super::workload::{OpenArrivals, StartTimes, Workload};
use crate::engine::rng::{Stream, stream};
use crate::engine::{self, EventQueue, Instant, Model, Scheduler, Span};
use crate::experiment::QueueServerSpec;
use crate::metrics::RunMetrics;
use crate::policy::Outcome;
use crate::policy::uniform::u01;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::VecDeque;

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
    /// A backoff ended: the operation sends its next attempt.
    Send { op: u32 },
    /// A request reaches the server; its client stops waiting at `gives_up_at`.
    Arrive { op: u32, attempt: u32, gives_up_at: Instant },
    /// A worker finishes serving.
    Done { worker: u32 },
    /// An answer reaches the client.
    Answer { op: u32, attempt: u32, outcome: Outcome },
    /// The client stops waiting for an attempt.
    Timeout { op: u32, attempt: u32 },
    /// Capacity went back up: waiting requests may start.
    CapacityRestored,
}

// Events are copied in and out of the queue millions of times a second: keep them small.
const _: () = assert!(std::mem::size_of::<Ev>() == 24);

/// A request held by the server.
#[derive(Clone, Copy, Debug)]
struct Request {
    op: u32,
    attempt: u32,
    /// When its client stops waiting: work after that is wasted; `drop_expired` drops it.
    gives_up_at: Instant,
    /// The answer once the work is done: success, or an `after_effect` error drawn at arrival.
    answer: Outcome,
}

#[derive(Clone, Copy, Debug)]
struct InService {
    req: Request,
    started: Instant,
}

struct Server {
    concurrency: u32,
    service: Dist,
    queue_cap: usize,
    reject: Outcome,
    drop_expired: bool,
    busy: u32,
    waiting: VecDeque<Request>,
    workers: Vec<InService>,
    idle: Vec<u32>,
    faults: Faults,
    service_rng: Xoshiro256PlusPlus,
}

struct QueueModel {
    clients: Clients,
    server: Server,
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
) -> RunMetrics {
    let faults = Faults::new(&spec.faults, &spec.errors, stream(run_seed, Stream::Faults));
    let fault_span = faults.span(horizon);
    let mut sched: Scheduler<Ev, Q> = Scheduler::new(Q::default());
    for at in faults.capacity_restorations() {
        sched.schedule_at(at, Ev::CapacityRestored);
    }
    let n = spec.concurrency as usize;
    let mut model = QueueModel {
        clients,
        server: Server {
            concurrency: spec.concurrency,
            service: Dist::from_spec(&spec.service_time),
            queue_cap: spec.queue.map_or(usize::MAX, |q| q as usize),
            reject: Outcome::Status(spec.reject_status),
            drop_expired: spec.drop_expired,
            busy: 0,
            waiting: VecDeque::new(),
            workers: vec![
                InService {
                    req: Request { op: 0, attempt: 0, gives_up_at: Instant::ZERO, answer: Outcome::Success },
                    started: Instant::ZERO
                };
                n
            ],
            // Popped from the back: worker 0 first.
            idle: (0..spec.concurrency).rev().collect(),
            faults,
            service_rng: stream(run_seed, Stream::Service),
        },
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
    model.clients.finish(sched.processed(), fault_span, horizon)
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
            Ev::Done { worker } => self.clients.ops.prefetch(self.server.workers[worker as usize].req.op),
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
                let op = self.clients.start(client, now);
                self.send(op, s);
            }
            Ev::FirstStart { client } | Ev::ClientStart { client } => {
                if matches!(ev, Ev::FirstStart { .. })
                    && let Some((next, at)) = self.first_starts.next(&mut self.arrivals_rng)
                {
                    s.schedule_at(at, Ev::FirstStart { client: next });
                }
                let op = self.clients.start(client, now);
                self.send(op, s);
            }
            Ev::Send { op } => self.send(op, s),
            Ev::Arrive { op, attempt, gives_up_at } => self.arrive(op, attempt, gives_up_at, s),
            Ev::Done { worker } => self.done(worker, s),
            Ev::Answer { op, attempt, outcome } => {
                self.answer(op, attempt, outcome, s);
                self.clients.ops.release(op);
            }
            Ev::Timeout { op, attempt } => {
                if self.clients.is_waiting(op, attempt) {
                    self.failed(op, Outcome::Timeout, s);
                }
                self.clients.ops.release(op);
            }
            Ev::CapacityRestored => self.start_waiting(s),
        }
    }
}

impl Server {
    /// Workers usable now (capacity faults lower it).
    #[inline]
    fn capacity(&self, now: Instant) -> u32 {
        if self.faults.is_empty() { self.concurrency } else { self.faults.capacity(now, self.concurrency) }
    }
}

impl QueueModel {
    /// Sends the operation's next attempt now: timeout timer, then the request hop.
    fn send<Q: EventQueue<Ev>>(&mut self, op: u32, s: &mut Scheduler<Ev, Q>) {
        let Attempt { number: attempt, gives_up_at } = self.clients.send(op, s.now());
        if !gives_up_at.is_never() {
            self.clients.ops.get(op).refs += 1;
            s.schedule_at(gives_up_at, Ev::Timeout { op, attempt });
        }
        let Some(delay) = self.net.request() else { return };
        // The request holds a reference on its operation until its answer is handled.
        self.clients.ops.get(op).refs += 1;
        if self.instant_net {
            self.arrive(op, attempt, gives_up_at, s);
        } else {
            s.schedule_in(delay, Ev::Arrive { op, attempt, gives_up_at });
        }
    }

    /// A request reaches the server: an outage or error answers it at once; otherwise it
    /// starts on an idle worker, waits in the queue, or is rejected because the queue is full.
    fn arrive<Q: EventQueue<Ev>>(
        &mut self,
        op: u32,
        attempt: u32,
        gives_up_at: Instant,
        s: &mut Scheduler<Ev, Q>,
    ) {
        let now = s.now();
        self.clients.rec.server_call();
        let mut req = Request { op, attempt, gives_up_at, answer: Outcome::Success };
        let srv = &mut self.server;
        if !srv.faults.is_empty() {
            match srv.faults.outage(now) {
                Some(OutageAnswer::Silence) => return self.clients.ops.release(op),
                Some(OutageAnswer::Answer(o)) => return self.respond(req, o, s),
                None => {}
            }
            if let Some(e) = srv.faults.error(now) {
                if !e.after_effect {
                    return self.respond(req, Outcome::Status(e.status), s);
                }
                req.answer = Outcome::Status(e.status);
            }
        }
        let srv = &mut self.server;
        if srv.busy < srv.capacity(now) {
            self.start(req, s);
        } else if srv.waiting.len() < srv.queue_cap {
            srv.waiting.push_back(req);
        } else {
            let reject = srv.reject;
            self.respond(req, reject, s);
        }
    }

    /// Starts serving `req` on an idle worker.
    #[inline]
    fn start<Q: EventQueue<Ev>>(&mut self, req: Request, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        let srv = &mut self.server;
        let worker = srv.idle.pop().expect("busy < capacity <= concurrency, so a worker is idle");
        srv.busy += 1;
        srv.workers[worker as usize] = InService { req, started: now };
        let mut service = srv.service.sample(&mut srv.service_rng);
        if !srv.faults.is_empty() {
            let f = srv.faults.slowdown(now);
            if f != 1.0 {
                service = service.mul_f64(f);
            }
        }
        s.schedule_in(service, Ev::Done { worker });
    }

    /// A worker finished: the side effect happens, the answer goes back, and the next waiting
    /// request starts.
    fn done<Q: EventQueue<Ev>>(&mut self, worker: u32, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        let InService { req, started } = self.server.workers[worker as usize];
        self.server.busy -= 1;
        self.server.idle.push(worker);
        let op = self.clients.ops.get(req.op);
        op.executions += 1;
        let executions = op.executions;
        self.clients.rec.side_effect(executions);
        if req.gives_up_at < now {
            self.clients.rec.wasted(now.since(started.max(req.gives_up_at)));
        }
        self.respond(req, req.answer, s);
        self.start_waiting(s);
    }

    /// Starts waiting requests while workers are free; with `drop_expired`, requests whose
    /// client has given up are dropped unserved.
    fn start_waiting<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        while self.server.busy < self.server.capacity(now) {
            let Some(req) = self.server.waiting.pop_front() else { return };
            if self.server.drop_expired && req.gives_up_at <= now {
                self.clients.ops.release(req.op);
                continue;
            }
            self.start(req, s);
        }
    }

    /// Sends an answer back over the response hop (it may be lost).
    #[inline]
    fn respond<Q: EventQueue<Ev>>(&mut self, req: Request, outcome: Outcome, s: &mut Scheduler<Ev, Q>) {
        let Some(delay) = self.net.response() else {
            return self.clients.ops.release(req.op);
        };
        if self.instant_net {
            self.answer(req.op, req.attempt, outcome, s);
            self.clients.ops.release(req.op);
        } else {
            s.schedule_in(delay, Ev::Answer { op: req.op, attempt: req.attempt, outcome });
        }
    }

    /// An answer reaches the client; a late answer (the client gave up on that attempt) is
    /// ignored.
    fn answer<Q: EventQueue<Ev>>(
        &mut self,
        op: u32,
        attempt: u32,
        outcome: Outcome,
        s: &mut Scheduler<Ev, Q>,
    ) {
        if !self.clients.is_waiting(op, attempt) {
            return;
        }
        if outcome == Outcome::Success {
            let next = self.clients.succeed(op, s.now());
            self.next_op(next, s);
        } else {
            self.failed(op, outcome, s);
        }
    }

    /// The attempt the client was waiting for failed: retry after the backoff, or end.
    fn failed<Q: EventQueue<Ev>>(&mut self, op: u32, outcome: Outcome, s: &mut Scheduler<Ev, Q>) {
        match self.clients.fail(op, outcome, s.now()) {
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
