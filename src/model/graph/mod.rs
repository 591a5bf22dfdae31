//! The call graph (DESIGN §3.7, `[[services]]`): services that call services.
//!
//! Each service is a whole server model ([`Server`]: admission stages, workers, queue, service
//! time, faults) or several replicas of one behind a balancer ([`Replicas`]). The user's
//! clients call the entry service (service 0) over the experiment's network; hops between
//! services are instant and lossless. A request a service takes is served by a worker (its
//! own service time); then, still holding the worker (a thread blocked on its calls), the
//! service makes its downstream calls, edge by edge in `calls` order: an edge's `count` calls
//! go out together when `parallel`, else one after another. Each call along an edge is a
//! [`Ticket`] that retries with the edge's client policy (its timeout,
//! attempts, `retry_on`, backoff, and its budget and breaker as one client; the tries are
//! [`hop::Tries`], as a proxy node's). The request
//! succeeds when every call of its required edges does; a call of an `optional` edge that
//! fails is left out of the answer (a partial result). The first failed required call fails
//! the request at once with that call's last answer, and the other calls still out are
//! abandoned.
//!
//! **Wasted work.** A request is *abandoned* when its result can no longer reach the user: a
//! caller on the way up stopped waiting for it (a timeout), failed, or was abandoned itself.
//! The service time spent on it after that (its worker held, downstream waits included) is
//! wasted ([`crate::metrics::graph`]).
//!
//! **Deadline propagation** (gRPC, switch `propagate_deadline`): the user's attempt's deadline
//! travels down; a call along an edge waits `min(its own timeout, what remains)`, and that is
//! its callee's deadline. A request that arrives past its deadline, or whose deadline passes
//! before a worker takes it, fails with a timeout without its work; one whose deadline passes
//! during its own work makes no downstream calls; no attempt is sent once the deadline has
//! passed.
//!
//! **Cancellation propagation** (switch `propagate_cancellation`): an abandoned request is
//! cancelled: removed from its queue, or, waiting for downstream calls, stopped with its
//! calls cancelled in turn (down the tree); one a worker is serving is stopped only with
//! `cancel_in_service` (else its own work runs to the end, wasted, and it then makes no
//! downstream calls).
//!
//! **An edge's router** ([`crate::policy::route`]): with a `route_timeout`, a call along the
//! edge fails 504 when it fires (its try in flight abandoned, no further try); a call its
//! breaker refuses fails 503 marked overloaded (`x-envoy-overloaded`), and an edge with
//! `honor_overloaded` does not retry an answer so marked (the failed request's answer carries
//! its failed call's mark up, as it carries a "don't retry").
//!
//! **Hedging on an edge** (`hedge`, gRPC A6's hedgingPolicy, [`crate::policy::hedge`]): a call
//! sends its first copy at once and one more every `delay` without a success, up to
//! `max_attempts` copies; the first success wins and the other copies are cancelled (removed
//! from their queue, stopped in service only with the hedge's `cancel_in_service`, their work
//! after that wasted); a non-fatal failure sends the next copy at once, any other fails the
//! call and cancels the rest. A percentile delay and the hedge budget are the edge's own (one
//! caller). Each copy is a request along the edge (counted in its `calls`).
//!
//! Answers to the user's client are handed back through [`Graph::answers`]; the queue model
//! sends them over the response hop.
//!
//! **Proxy nodes** ([`proxy`]): services with no server, forwarding at once along their single
//! edge. A strategy's gateway `layers` are a chain of them in front of the run's own
//! `[server]`; they are not part of a `[[services]]` graph (DESIGN §3.7).

pub mod hop;
pub mod proxy;
pub mod replicas;
pub mod tables;

use super::queue_model::Ev;
use super::replicas::{ReplicaParams, Replicas, Restarts};
use super::server::{
    Arrival, Cancelled, Reply, Request, RetryAfterCode, Server, ServerParams, workers::Next,
};
use crate::engine::rng::{Stream, derive, stream};
use crate::engine::{EventQueue, Instant, Scheduler, Span};
use crate::metrics::RunRecorder;
use crate::metrics::graph::{EdgeCounts, GraphCounts, ServiceCounts};
use crate::policy::gate::{Admit, CostClass, Gate, GateParams};
use crate::policy::hedge::{AfterAnswer, HedgeParams, HedgeScope};
use crate::policy::route::{ROUTE_TIMEOUT_STATUS, Route};
use crate::policy::{Outcome, RetryPolicy};
use hop::{AfterFailure, Tries};
use rand_xoshiro::Xoshiro256PlusPlus;
use tables::{Call, Caller, HedgeCopy, NO_EDGE, Phase, Slots, Ticket};

/// One edge: the callee and the caller's client policy for it.
#[derive(Clone, Debug)]
pub struct EdgeParams {
    /// The callee's index.
    pub to: u32,
    /// Calls per request.
    pub count: u32,
    /// Whether the `count` calls go out together (else one after another).
    pub parallel: bool,
    /// A failed call does not fail the request (a partial result).
    pub optional: bool,
    pub retry: RetryPolicy,
    /// The edge's budget and breaker, as one client.
    pub gate: GateParams,
    /// Its route timeout and whether it honours `x-envoy-overloaded`.
    pub route: Route,
    /// Hedged calls (replacing retries: its `retry.max_attempts` is 1).
    pub hedge: Option<HedgeParams>,
    /// `retry_other_replica`: a retry avoids the callee's replicas its call already tried,
    /// with this many host re-selections (Envoy's `previous_hosts`); `None`: a fresh pick.
    pub reselects: Option<u32>,
}

/// A call's failure when its edge's breaker refuses it: a local 503 marked overloaded.
const LOCAL_REFUSAL: Reply = Reply { outcome: Outcome::Status(503), retry_after: RetryAfterCode::OVERLOADED };

/// A call's failure when its edge's route timeout fires.
const ROUTE_TIMEOUT: Reply =
    Reply { outcome: Outcome::Status(ROUTE_TIMEOUT_STATUS), retry_after: RetryAfterCode::NONE };

/// One service: its server (replica 0), its other replicas, and the edges it calls.
#[derive(Clone, Debug)]
pub struct ServiceParams {
    pub server: ServerParams,
    pub replicas: Option<ReplicaParams>,
    pub calls: Vec<EdgeParams>,
}

/// The whole graph; service 0 is the entry service the user's clients call.
#[derive(Clone, Debug)]
pub struct GraphParams {
    pub services: Vec<ServiceParams>,
    pub propagate_deadline: bool,
    pub propagate_cancellation: bool,
    pub cancel_in_service: bool,
}

struct Service {
    first: Server,
    /// Its other replicas, balancer, outlier detector, deploys and autoscaler.
    others: Option<Box<Replicas>>,
    /// Its edges' indices in [`Graph::edges`].
    edges: std::ops::Range<u32>,
    /// A single replica's `restart` faults under way.
    restarting: Restarts,
    /// Its replica counts' index in the run's time series (a service that autoscales or
    /// deploys, with the series kept).
    series: Option<usize>,
}

struct Edge {
    p: EdgeParams,
    gate: Gate,
    /// A hedged edge's latency window and hedge budget.
    hedging: Option<HedgeScope>,
}

/// The graph's state in one run.
pub struct Graph {
    services: Vec<Service>,
    edges: Vec<Edge>,
    calls: Slots<Call>,
    tickets: Slots<Ticket>,
    /// Per user operation slot: (attempt, entry call, its generation) of its latest attempt.
    entry_of: Vec<(u32, u32, u32)>,
    /// Unique ids of the calls, for the balancers' hashing.
    serial: u64,
    /// The edges' backoff jitter and control draws.
    rng: Xoshiro256PlusPlus,
    deadline: bool,
    cancel: bool,
    cancel_in_service: bool,
    /// Answers for the user's client, (operation, attempt, reply or `None`: none will come).
    answers: std::collections::VecDeque<(u32, u32, Option<Reply>)>,
    /// Replicas that may start waiting requests (a worker came free).
    freed: Vec<(u32, u32)>,
    counts: GraphCounts,
}

impl Graph {
    /// The graph of `params`; service `s` (replica `r`) draws from the streams of the seed
    /// derived from the run's graph-services stream and `s`, the edges from the run's graph
    /// stream.
    pub fn new(params: GraphParams, run_seed: u64) -> Graph {
        let services_root = derive(run_seed, Stream::GraphServices as u64);
        let mut edges = Vec::new();
        let mut services = Vec::new();
        let mut counts = GraphCounts::default();
        for (i, s) in params.services.into_iter().enumerate() {
            let seed = derive(services_root, i as u64);
            let start = edges.len() as u32;
            for e in s.calls {
                let gate = if e.gate == GateParams::default() {
                    Gate::none()
                } else {
                    Gate::new(&e.gate, 1, stream(derive(run_seed, edges.len() as u64), Stream::Graph))
                };
                let hedging = e.hedge.as_ref().map(HedgeScope::new);
                edges.push(Edge { p: e, gate, hedging });
                counts.edges.push(EdgeCounts::default());
            }
            services.push(Service {
                first: Server::new(s.server, seed),
                others: s.replicas.map(|p| Box::new(Replicas::new(p, seed))),
                edges: start..edges.len() as u32,
                restarting: Restarts::default(),
                series: None,
            });
            counts.services.push(ServiceCounts::default());
        }
        Graph {
            services,
            edges,
            calls: Slots::default(),
            tickets: Slots::default(),
            entry_of: Vec::new(),
            serial: 0,
            rng: stream(run_seed, Stream::Graph),
            deadline: params.propagate_deadline,
            cancel: params.propagate_cancellation,
            cancel_in_service: params.cancel_in_service,
            answers: Default::default(),
            freed: Vec::new(),
            counts,
        }
    }

    /// The instants at which some service's capacity goes back up (its faults end), with the
    /// service.
    pub fn capacity_restorations(&self) -> Vec<(Instant, u32)> {
        let mut all = Vec::new();
        for (i, s) in self.services.iter().enumerate() {
            let others = s.others.iter().flat_map(|o| o.others.iter());
            for server in std::iter::once(&s.first).chain(others) {
                all.extend(server.capacity_restorations().map(|at| (at, i as u32)));
            }
        }
        all
    }

    /// The answers for the user's client since the last call (taken).
    pub fn answers(&mut self) -> Option<(u32, u32, Option<Reply>)> {
        self.answers.pop_front()
    }

    /// What the run counted, per service and edge.
    pub fn counts(&mut self) -> GraphCounts {
        std::mem::take(&mut self.counts)
    }

    fn replica(&mut self, svc: u32, r: u32) -> &mut Server {
        let s = &mut self.services[svc as usize];
        if r == 0 {
            &mut s.first
        } else {
            &mut s.others.as_mut().expect("replica > 0").others[r as usize - 1]
        }
    }

    fn replica_count(&self, svc: u32) -> u32 {
        self.services[svc as usize].others.as_ref().map_or(1, |o| o.count())
    }

    fn open_call(
        &mut self,
        service: u32,
        edge: u32,
        caller: Caller,
        deadline: Instant,
        waits_until: Instant,
        abandoned_at: Instant,
    ) -> u32 {
        self.calls.take(|old| {
            let (generation, tickets) = match old {
                Some(c) => (c.generation.wrapping_add(1), std::mem::take(&mut c.tickets)),
                None => (0, Vec::new()),
            };
            Call {
                generation,
                phase: Phase::Queued,
                service,
                replica: 0,
                edge,
                caller,
                deadline,
                waits_until,
                abandoned_at,
                worker: 0,
                started: Instant::ZERO,
                stage: 0,
                pending: 0,
                left: 0,
                tickets,
            }
        })
    }

    fn free_call(&mut self, c: u32) {
        let call = self.calls.get_mut(c);
        debug_assert!(call.tickets.is_empty());
        call.phase = Phase::Free;
        call.generation = call.generation.wrapping_add(1);
        self.calls.put_back(c);
    }

    /// Attempt `attempt` of the user's operation `op` reaches the entry service; its client
    /// stops waiting at `gives_up_at`.
    pub fn client_call<Q: EventQueue<Ev>>(
        &mut self,
        op: u32,
        attempt: u32,
        gives_up_at: Instant,
        s: &mut Scheduler<Ev, Q>,
        rec: &mut RunRecorder,
    ) {
        let deadline = if self.deadline { gives_up_at } else { Instant::NEVER };
        let c =
            self.open_call(0, NO_EDGE, Caller::Client { op, attempt }, deadline, gives_up_at, Instant::NEVER);
        if self.entry_of.len() <= op as usize {
            self.entry_of.resize(op as usize + 1, (0, 0, 0));
        }
        self.entry_of[op as usize] = (attempt, c, self.calls.get(c).generation);
        self.arrive(c, s, rec);
        self.settle(s, rec);
    }

    /// The user's client stopped waiting for attempt `attempt` of `op` (its timeout).
    pub fn client_gave_up<Q: EventQueue<Ev>>(
        &mut self,
        op: u32,
        attempt: u32,
        s: &mut Scheduler<Ev, Q>,
        rec: &mut RunRecorder,
    ) {
        let Some(&(a, c, generation)) = self.entry_of.get(op as usize) else { return };
        if a == attempt && self.alive(c, generation) {
            self.abandon(c, s.now(), rec);
            self.settle(s, rec);
        }
    }

    fn alive(&self, c: u32, generation: u32) -> bool {
        let call = self.calls.get(c);
        call.generation == generation && call.phase != Phase::Free
    }

    /// Request `c` arrives at its service: the balancer picks a replica, whose admission
    /// pipeline takes it.
    fn arrive<Q: EventQueue<Ev>>(&mut self, c: u32, s: &mut Scheduler<Ev, Q>, rec: &mut RunRecorder) {
        let now = s.now();
        let call = self.calls.get(c);
        let (svc, edge, generation) = (call.service, call.edge, call.generation);
        self.counts.services[svc as usize].calls += 1;
        if edge != NO_EDGE {
            self.counts.edges[edge as usize].calls += 1;
        }
        if self.deadline && call.deadline <= now {
            // gRPC: a call that arrives past its deadline fails at once, without its work.
            return self.finish(c, Some(Reply::of(Outcome::Timeout)), s, rec);
        }
        let req = Request::new(c, generation, call.waits_until.min(call.deadline));
        self.serial += 1;
        let r = self.pick_replica(c, self.serial, now);
        self.calls.get_mut(c).replica = r;
        let arrival = self.replica(svc, r).arrive::<false>(req, now);
        if let Some(set) = &mut self.services[svc as usize].others {
            set.arrived(r, c, generation, &arrival, now);
        }
        if svc == 0 {
            match arrival {
                Arrival::Answered(_) | Arrival::Silenced => rec.rejected(now),
                _ => rec.accepted(now, matches!(arrival, Arrival::Queued | Arrival::Displaced { .. })),
            }
        }
        self.admitted(c, arrival, s, rec)
    }

    /// What request `c`'s replica did with it on arrival (or release). An answer at once
    /// needs no word to the balancer (it learnt it from the arrival), as in the queue model.
    fn admitted<Q: EventQueue<Ev>>(
        &mut self,
        c: u32,
        arrival: Arrival,
        s: &mut Scheduler<Ev, Q>,
        rec: &mut RunRecorder,
    ) {
        let now = s.now();
        let call = self.calls.get(c);
        let (svc, r, generation) = (call.service, call.replica, call.generation);
        match arrival {
            Arrival::Answered(reply) | Arrival::Replayed(reply) => self.finish(c, Some(reply), s, rec),
            Arrival::Silenced => self.finish(c, None, s, rec),
            Arrival::Started { worker, service } => self.started(c, worker, service, s, rec),
            Arrival::Queued | Arrival::Parked => self.levels(svc, r, now, rec),
            Arrival::Delayed(wait) => {
                self.calls.get_mut(c).phase = Phase::Delayed;
                s.schedule_in(wait, Ev::graph_released(c, generation));
            }
            Arrival::Displaced { evicted, reply } => {
                self.levels(svc, r, now, rec);
                self.finish(evicted.op, Some(reply), s, rec)
            }
        }
    }

    /// The rate limiter lets request `c` (generation `generation`) go on.
    pub fn released<Q: EventQueue<Ev>>(
        &mut self,
        c: u32,
        generation: u32,
        s: &mut Scheduler<Ev, Q>,
        rec: &mut RunRecorder,
    ) {
        if !self.alive(c, generation) || self.calls.get(c).phase != Phase::Delayed {
            return;
        }
        let now = s.now();
        let call = self.calls.get_mut(c);
        call.phase = Phase::Queued;
        let (svc, r) = (call.service, call.replica);
        let req = Request::new(c, generation, call.waits_until.min(call.deadline));
        let arrival = self.replica(svc, r).resume(req, now);
        self.admitted(c, arrival, s, rec);
        self.settle(s, rec);
    }

    /// Request `c` left its replica without being served (answered at once, dropped, shed):
    /// the balancer learns it, and its caller gets `reply`.
    fn left_unserved<Q: EventQueue<Ev>>(
        &mut self,
        c: u32,
        reply: Option<Reply>,
        s: &mut Scheduler<Ev, Q>,
        rec: &mut RunRecorder,
    ) {
        let call = self.calls.get(c);
        let (svc, r, generation) = (call.service, call.replica, call.generation);
        if let Some(set) = &mut self.services[svc as usize].others {
            set.left(r, c, generation, reply, s.now());
        }
        self.finish(c, reply, s, rec)
    }

    /// A worker took request `c`: its own work takes `service`. Past its propagated deadline,
    /// it is stopped at once instead (a hop does not start work it cannot finish).
    fn started<Q: EventQueue<Ev>>(
        &mut self,
        c: u32,
        worker: u32,
        service: Span,
        s: &mut Scheduler<Ev, Q>,
        rec: &mut RunRecorder,
    ) {
        let now = s.now();
        let call = self.calls.get_mut(c);
        call.phase = Phase::Serving;
        call.worker = worker;
        call.started = now;
        let (svc, r, generation) = (call.service, call.replica, call.generation);
        if svc == 0 {
            rec.service_started(Span::ZERO);
        }
        s.schedule_in(service, Ev::graph_done(worker, svc, r));
        if self.deadline && call.deadline <= now {
            // Its `Done` event reaps the stopped worker's slot.
            let _ = self.replica(svc, r).cancel(c, generation, true, now);
            self.freed.push((svc, r));
            return self.left_unserved(c, Some(Reply::of(Outcome::Timeout)), s, rec);
        }
        self.levels(svc, r, now, rec);
    }

    /// Worker `worker` of replica `r` of service `svc` finished a request's own work.
    pub fn done<Q: EventQueue<Ev>>(
        &mut self,
        worker: u32,
        svc: u32,
        r: u32,
        s: &mut Scheduler<Ev, Q>,
        rec: &mut RunRecorder,
    ) {
        if self.replica(svc, r).reap_stopped(worker) {
            return;
        }
        let now = s.now();
        let req = *self.replica(svc, r).serving(worker);
        let c = req.op;
        let has_calls = !self.services[svc as usize].edges.is_empty();
        let call = self.calls.get(c);
        let expired = self.deadline && call.deadline <= now;
        let abandoned_cancelled = self.cancel && call.abandoned_at <= now;
        if req.answer.outcome != Outcome::Success || !has_calls || expired || abandoned_cancelled {
            let reply = if req.answer.outcome == Outcome::Success && has_calls && expired {
                Reply::of(Outcome::Timeout)
            } else {
                req.answer
            };
            self.release_worker(c, Some(reply), now, rec);
            self.finish(c, Some(reply), s, rec);
        } else {
            let call = self.calls.get_mut(c);
            call.phase = Phase::Calling;
            call.stage = 0;
            self.begin_stage(c, s, rec);
        }
        self.settle(s, rec);
    }

    /// Request `c` starts the calls of its stage, or answers success when no stage is left.
    fn begin_stage<Q: EventQueue<Ev>>(&mut self, c: u32, s: &mut Scheduler<Ev, Q>, rec: &mut RunRecorder) {
        let call = self.calls.get(c);
        let edges = self.services[call.service as usize].edges.clone();
        let e = edges.start + call.stage;
        if e >= edges.end {
            let now = s.now();
            self.release_worker(c, Some(Reply::SUCCESS), now, rec);
            return self.finish(c, Some(Reply::SUCCESS), s, rec);
        }
        let edge = &self.edges[e as usize].p;
        let now_out = if edge.parallel { edge.count } else { 1 };
        let call = self.calls.get_mut(c);
        call.pending = now_out;
        call.left = edge.count - now_out;
        for _ in 0..now_out {
            self.open_ticket(c, e, s);
        }
    }

    /// Request `c` makes a call along edge `e`: its first attempt goes out as an event at this
    /// instant.
    fn open_ticket<Q: EventQueue<Ev>>(&mut self, c: u32, e: u32, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        let tries = Tries::new(&self.edges[e as usize].p, now);
        let t = self.tickets.take(|old| {
            let (generation, copies) = match old {
                Some(o) => (o.generation.wrapping_add(1), std::mem::take(&mut o.copies)),
                None => (0, Vec::new()),
            };
            Ticket {
                generation,
                live: true,
                parent: c,
                edge: e,
                tries,
                current: None,
                copies,
                timer: 0,
                last_failure: None,
            }
        });
        if let Some(h) = &mut self.edges[e as usize].hedging {
            h.call_started();
        }
        self.calls.get_mut(c).tickets.push(t);
        let gate = &mut self.edges[e as usize].gate;
        if !gate.is_empty() {
            gate.op_started(0, now);
        }
        s.schedule_in(Span::ZERO, Ev::graph_send(t, self.tickets.get(t).generation));
    }

    /// Ticket `t` (generation `generation`) sends its next attempt, if its controls and its
    /// deadline let it; on a hedged edge, its next copy, on hedge timer `timer` (a timer it
    /// has since replaced is stale).
    pub fn send<Q: EventQueue<Ev>>(
        &mut self,
        t: u32,
        generation: u32,
        timer: u32,
        s: &mut Scheduler<Ev, Q>,
        rec: &mut RunRecorder,
    ) {
        let tk = self.tickets.get(t);
        if !tk.live || tk.generation != generation {
            return;
        }
        let now = s.now();
        let (e, parent) = (tk.edge, tk.parent);
        let hedge = self.edges[e as usize].p.hedge;
        if let Some(h) = hedge {
            if timer != tk.timer || tk.tries.attempts >= h.max_attempts {
                return;
            }
            // A hedge (not the first copy) takes a token from the edge's hedge budget.
            if tk.tries.attempts > 0
                && !self.edges[e as usize].hedging.as_mut().is_some_and(HedgeScope::take_token)
            {
                self.tickets.get_mut(t).tries.attempts += 1;
                self.next_copy_on_timer(t, now, s);
                return self.settle_hedge(t, s, rec);
            }
        }
        if tk.tries.route_expired(now) {
            // The route timed out during the backoff: no further try.
            self.end_ticket(t, false, ROUTE_TIMEOUT, s, rec);
            return self.settle(s, rec);
        }
        let edge = &mut self.edges[e as usize];
        if !edge.gate.is_empty() {
            match edge.gate.admit(0, now, tk.tries.attempts + 1, false) {
                Admit::Send => {}
                Admit::Wait(wait) => return s.schedule_in(wait, Ev::graph_send(t, generation)),
                Admit::Refuse(_) if hedge.is_some() => {
                    let tk = self.tickets.get_mut(t);
                    tk.tries.attempts += 1;
                    tk.last_failure = Some(LOCAL_REFUSAL);
                    self.next_copy_on_timer(t, now, s);
                    return self.settle_hedge(t, s, rec);
                }
                Admit::Refuse(_) => {
                    self.end_ticket(t, false, LOCAL_REFUSAL, s, rec);
                    return self.settle(s, rec);
                }
            }
        }
        let p = self.calls.get(parent);
        let (parent_deadline, abandoned_at) = (p.deadline, p.abandoned_at);
        if self.deadline && parent_deadline <= now {
            // No attempt starts once the deadline has passed.
            self.end_ticket(t, false, Reply::of(Outcome::Timeout), s, rec);
            return self.settle(s, rec);
        }
        let policy = self.edges[e as usize].p.retry;
        let (attempt, own) = self.tickets.get_mut(t).tries.send(&policy, now);
        let gives_up_at = if self.deadline { own.min(parent_deadline) } else { own };
        if !gives_up_at.is_never() {
            s.schedule_at(gives_up_at, Ev::graph_timeout(t, generation, attempt));
        }
        let deadline = if self.deadline { gives_up_at } else { Instant::NEVER };
        let to = self.edges[e as usize].p.to;
        let caller = Caller::Edge { ticket: t, generation, attempt };
        let d = self.open_call(to, e, caller, deadline, gives_up_at, abandoned_at);
        let call = (d, self.calls.get(d).generation);
        if hedge.is_some() {
            let copy = HedgeCopy { call: call.0, generation: call.1, attempt, sent: now };
            self.tickets.get_mut(t).copies.push(copy);
            self.next_copy_on_timer(t, now, s);
        } else {
            self.tickets.get_mut(t).current = Some(call);
        }
        self.arrive(d, s, rec);
        self.settle(s, rec);
    }

    /// Hedged ticket `t` sent (or was refused) a copy at `now`: its next copy goes out after
    /// the hedging delay, unless its copies are used up or the delay is not known yet (a
    /// percentile without enough samples).
    fn next_copy_on_timer<Q: EventQueue<Ev>>(&mut self, t: u32, now: Instant, s: &mut Scheduler<Ev, Q>) {
        let tk = self.tickets.get_mut(t);
        let edge = &mut self.edges[tk.edge as usize];
        let (Some(h), Some(scope)) = (&edge.p.hedge, &mut edge.hedging) else { return };
        if tk.tries.attempts >= h.max_attempts {
            return;
        }
        if let Some(delay) = scope.delay(h, now) {
            tk.timer = tk.timer.wrapping_add(1);
            s.schedule_in(delay, Ev::graph_hedge(t, tk.generation, tk.timer));
        }
    }

    /// Hedged ticket `t`'s copy was not sent (its budget or its breaker refused it): with no
    /// copy out, the call fails with its last failure.
    fn settle_hedge<Q: EventQueue<Ev>>(&mut self, t: u32, s: &mut Scheduler<Ev, Q>, rec: &mut RunRecorder) {
        let tk = self.tickets.get(t);
        if tk.copies.is_empty() {
            let reply = tk.last_failure.unwrap_or(LOCAL_REFUSAL);
            self.end_ticket(t, false, reply, s, rec);
        }
        self.settle(s, rec);
    }

    /// Copy `attempt` of hedged ticket `t` ended (answered, or its timeout): it is no longer
    /// out; its send time, if it was.
    fn take_copy(&mut self, t: u32, attempt: u32) -> Option<HedgeCopy> {
        let copies = &mut self.tickets.get_mut(t).copies;
        let i = copies.iter().position(|c| c.attempt == attempt)?;
        Some(copies.swap_remove(i))
    }

    /// Copy `copy` of hedged ticket `t` failed with `reply` at `now` (gRPC A6): a fatal
    /// failure fails the call (the other copies are cancelled); a non-fatal one sends the
    /// next copy at once, or, with none left to send and none out, fails the call.
    fn copy_failed<Q: EventQueue<Ev>>(
        &mut self,
        t: u32,
        copy: HedgeCopy,
        reply: Reply,
        s: &mut Scheduler<Ev, Q>,
        rec: &mut RunRecorder,
    ) {
        let now = s.now();
        self.tell_gate_of(t, copy.attempt, reply.outcome, copy.sent, now);
        let tk = self.tickets.get_mut(t);
        let h = self.edges[tk.edge as usize].p.hedge.expect("a hedged edge");
        match h.after_answer(reply.outcome, None) {
            AfterAnswer::NonFatal { .. } => {
                tk.last_failure = Some(reply);
                if tk.tries.attempts < h.max_attempts {
                    tk.timer = tk.timer.wrapping_add(1);
                    s.schedule_in(Span::ZERO, Ev::graph_hedge(t, tk.generation, tk.timer));
                } else if tk.copies.is_empty() {
                    self.end_ticket(t, false, reply, s, rec);
                }
            }
            AfterAnswer::Fatal | AfterAnswer::Won => self.end_ticket(t, false, reply, s, rec),
        }
    }

    /// Ticket `t` stops waiting for its attempt `attempt` (its timeout).
    pub fn timed_out<Q: EventQueue<Ev>>(
        &mut self,
        t: u32,
        generation: u32,
        attempt: u32,
        s: &mut Scheduler<Ev, Q>,
        rec: &mut RunRecorder,
    ) {
        let tk = self.tickets.get(t);
        if !tk.live || tk.generation != generation {
            return;
        }
        if self.edges[tk.edge as usize].p.hedge.is_some() {
            let route_ends = tk.tries.route_ends;
            let Some(copy) = self.take_copy(t, attempt) else { return };
            if self.alive(copy.call, copy.generation) {
                self.abandon(copy.call, s.now(), rec);
            }
            if s.now() >= route_ends {
                self.tell_gate_of(t, attempt, Outcome::Timeout, copy.sent, s.now());
                self.end_ticket(t, false, ROUTE_TIMEOUT, s, rec);
            } else {
                self.copy_failed(t, copy, Reply::of(Outcome::Timeout), s, rec);
            }
            return self.settle(s, rec);
        }
        if !tk.tries.awaits(attempt) {
            return;
        }
        let route_ends = tk.tries.route_ends;
        if let Some((d, dgen)) = tk.current
            && self.alive(d, dgen)
        {
            self.abandon(d, s.now(), rec);
        }
        if s.now() >= route_ends {
            self.tell_gate(t, Outcome::Timeout, s.now());
            self.end_ticket(t, false, ROUTE_TIMEOUT, s, rec);
        } else {
            self.failed(t, Reply::of(Outcome::Timeout), s, rec);
        }
        self.settle(s, rec);
    }

    /// The answer to attempt `attempt` of ticket `t` arrived.
    fn answered<Q: EventQueue<Ev>>(
        &mut self,
        t: u32,
        generation: u32,
        attempt: u32,
        reply: Reply,
        s: &mut Scheduler<Ev, Q>,
        rec: &mut RunRecorder,
    ) {
        let tk = self.tickets.get(t);
        if !tk.live || tk.generation != generation {
            return;
        }
        let e = tk.edge as usize;
        if self.edges[e].p.hedge.is_some() {
            let Some(copy) = self.take_copy(t, attempt) else { return };
            let now = s.now();
            if let Some(scope) = &mut self.edges[e].hedging {
                scope.answered(now, now.since(copy.sent));
            }
            if reply.outcome == Outcome::Success {
                self.tell_gate_of(t, attempt, reply.outcome, copy.sent, now);
                return self.end_ticket(t, true, reply, s, rec);
            }
            return self.copy_failed(t, copy, reply, s, rec);
        }
        if !tk.tries.awaits(attempt) {
            return;
        }
        if reply.outcome == Outcome::Success {
            self.tell_gate(t, reply.outcome, s.now());
            self.tickets.get_mut(t).tries.waiting = false;
            return self.end_ticket(t, true, reply, s, rec);
        }
        self.failed(t, reply, s, rec)
    }

    /// The edge's controls learn the outcome of ticket `t`'s current attempt.
    fn tell_gate(&mut self, t: u32, outcome: Outcome, now: Instant) {
        let tk = self.tickets.get(t);
        self.tell_gate_of(t, tk.tries.attempts, outcome, tk.tries.sent_at, now);
    }

    /// The edge's controls learn the outcome of ticket `t`'s attempt (or copy) `attempt`,
    /// sent at `sent`.
    fn tell_gate_of(&mut self, t: u32, attempt: u32, outcome: Outcome, sent: Instant, now: Instant) {
        let edge = &mut self.edges[self.tickets.get(t).edge as usize];
        edge.gate.hop_answered(&edge.p.retry, attempt, outcome, sent, now);
    }

    /// Ticket `t`'s attempt failed with `reply`: retry after the backoff, or end failed.
    fn failed<Q: EventQueue<Ev>>(
        &mut self,
        t: u32,
        reply: Reply,
        s: &mut Scheduler<Ev, Q>,
        rec: &mut RunRecorder,
    ) {
        let now = s.now();
        self.tell_gate(t, reply.outcome, now);
        let tk = self.tickets.get_mut(t);
        tk.current = None;
        let edge = &mut self.edges[tk.edge as usize];
        match tk.tries.failed(&edge.p, &mut edge.gate, reply, now, &mut self.rng) {
            // A backoff past the route's end ends there: the send then fails the call 504.
            AfterFailure::RetryAt(at) => s.schedule_at(at, Ev::graph_send(t, tk.generation)),
            AfterFailure::Fail(reply) => self.end_ticket(t, false, reply, s, rec),
        }
    }

    /// Ticket `t` ended (its call succeeded, or failed with `reply` after its retries): its
    /// request goes on, fails, or answers.
    fn end_ticket<Q: EventQueue<Ev>>(
        &mut self,
        t: u32,
        ok: bool,
        reply: Reply,
        s: &mut Scheduler<Ev, Q>,
        rec: &mut RunRecorder,
    ) {
        let (e, parent, last_cost) = {
            let tk = self.tickets.get(t);
            (tk.edge, tk.parent, tk.tries.last_cost)
        };
        if !self.tickets.get(t).copies.is_empty() {
            // The call is decided: its other copies are cancelled (gRPC A6).
            let in_service = self.edges[e as usize].p.hedge.is_some_and(|h| h.cancel_in_service);
            let now = s.now();
            for copy in std::mem::take(&mut self.tickets.get_mut(t).copies) {
                if self.alive(copy.call, copy.generation) {
                    self.abandon(copy.call, now, rec);
                }
                if self.alive(copy.call, copy.generation) {
                    self.cancel_call_in(copy.call, now, in_service, rec);
                }
            }
        }
        let counts = &mut self.counts.edges[e as usize];
        counts.ended += 1;
        counts.succeeded += ok as u64;
        self.free_ticket(t, ok, last_cost);
        let optional = self.edges[e as usize].p.optional;
        if !ok && !optional {
            return self.fail_call(parent, reply, s, rec);
        }
        let call = self.calls.get_mut(parent);
        call.pending -= 1;
        if call.left > 0 {
            call.left -= 1;
            call.pending += 1;
            return self.open_ticket(parent, e, s);
        }
        if call.pending == 0 {
            call.stage += 1;
            self.begin_stage(parent, s, rec);
        }
    }

    /// Frees ticket `t` (its call ended, `ok` or not, or was stopped) and takes it off its
    /// request's list.
    fn free_ticket(&mut self, t: u32, ok: bool, last_cost: CostClass) {
        let tk = self.tickets.get_mut(t);
        tk.live = false;
        tk.generation = tk.generation.wrapping_add(1);
        let (e, parent) = (tk.edge, tk.parent);
        let gate = &mut self.edges[e as usize].gate;
        if !gate.is_empty() {
            gate.op_ended(0, ok, if ok { last_cost } else { CostClass::NONE });
        }
        let tickets = &mut self.calls.get_mut(parent).tickets;
        if let Some(i) = tickets.iter().position(|&x| x == t) {
            tickets.swap_remove(i);
        }
        self.tickets.put_back(t);
    }

    /// A required call of request `c` failed with `reply`: the request fails with it, and its
    /// other calls are abandoned.
    fn fail_call<Q: EventQueue<Ev>>(
        &mut self,
        c: u32,
        reply: Reply,
        s: &mut Scheduler<Ev, Q>,
        rec: &mut RunRecorder,
    ) {
        let now = s.now();
        self.stop_tickets(c, now, rec);
        self.release_worker(c, Some(reply), now, rec);
        self.finish(c, Some(reply), s, rec)
    }

    /// Request `c`'s tickets stop: their current requests are abandoned.
    fn stop_tickets(&mut self, c: u32, now: Instant, rec: &mut RunRecorder) {
        while let Some(&t) = self.calls.get(c).tickets.last() {
            let current = self.tickets.get(t).current;
            let copies = std::mem::take(&mut self.tickets.get_mut(t).copies);
            self.free_ticket(t, false, CostClass::NONE);
            if let Some((d, dgen)) = current
                && self.alive(d, dgen)
            {
                self.abandon(d, now, rec);
            }
            for copy in copies {
                if self.alive(copy.call, copy.generation) {
                    self.abandon(copy.call, now, rec);
                }
            }
        }
    }

    /// Request `c`'s worker is free: the balancer learns the answer, and the time it held the
    /// worker after the request was abandoned is wasted.
    fn release_worker(&mut self, c: u32, reply: Option<Reply>, now: Instant, rec: &mut RunRecorder) {
        let call = self.calls.get(c);
        let (svc, r, worker, generation, edge) =
            (call.service, call.replica, call.worker, call.generation, call.edge);
        let wasted = (call.abandoned_at < now).then(|| now.since(call.started.max(call.abandoned_at)));
        let _ = self.replica(svc, r).done::<false>(worker, now);
        if let Some(set) = &mut self.services[svc as usize].others {
            set.left(r, c, generation, reply, now);
        }
        if let Some(w) = wasted {
            self.waste(svc, edge, w, rec);
        }
        self.freed.push((svc, r));
    }

    /// `w` of service `svc`'s time (on a request that came along `edge`) was wasted.
    fn waste(&mut self, svc: u32, edge: u32, w: Span, rec: &mut RunRecorder) {
        let ns = w.as_ns() as u128;
        self.counts.services[svc as usize].wasted_ns += ns;
        if edge != NO_EDGE {
            self.counts.edges[edge as usize].wasted_ns += ns;
        }
        if svc == 0 {
            rec.wasted(w);
        }
    }

    /// Request `c` ends: `reply` goes to its caller (`None`: it will never be answered), and
    /// its slot is freed.
    fn finish<Q: EventQueue<Ev>>(
        &mut self,
        c: u32,
        reply: Option<Reply>,
        s: &mut Scheduler<Ev, Q>,
        rec: &mut RunRecorder,
    ) {
        let call = self.calls.get(c);
        let (svc, caller) = (call.service, call.caller);
        if reply.is_some_and(|r| r.outcome == Outcome::Success) {
            self.counts.services[svc as usize].succeeded += 1;
        }
        self.free_call(c);
        match caller {
            Caller::Client { op, attempt } => self.answers.push_back((op, attempt, reply)),
            Caller::Edge { ticket, generation, attempt } => {
                if let Some(reply) = reply {
                    self.answered(ticket, generation, attempt, reply, s, rec)
                }
            }
        }
    }

    /// Request `c`'s result can no longer reach the user (from `now`): so for the requests
    /// its calls have out, and with cancellation propagation it is cancelled.
    fn abandon(&mut self, c: u32, now: Instant, rec: &mut RunRecorder) {
        let call = self.calls.get_mut(c);
        if call.abandoned_at <= now {
            return;
        }
        call.abandoned_at = now;
        let tickets = call.tickets.clone();
        for t in tickets {
            if let Some((d, dgen)) = self.tickets.get(t).current
                && self.alive(d, dgen)
            {
                self.abandon(d, now, rec);
            }
            let copies: Vec<(u32, u32)> =
                self.tickets.get(t).copies.iter().map(|c| (c.call, c.generation)).collect();
            for (d, dgen) in copies {
                if self.alive(d, dgen) {
                    self.abandon(d, now, rec);
                }
            }
        }
        if self.cancel {
            self.cancel_call(c, now, rec);
        }
    }

    /// Cancels request `c`: removed from its queue; stopped while it waits for its calls
    /// (cancelled in turn); stopped in service only with `cancel_in_service`. Its caller
    /// gave up on it: no answer goes up.
    fn cancel_call(&mut self, c: u32, now: Instant, rec: &mut RunRecorder) {
        self.cancel_call_in(c, now, self.cancel_in_service, rec)
    }

    /// [`Graph::cancel_call`], stopping it in service when `in_service`.
    fn cancel_call_in(&mut self, c: u32, now: Instant, in_service: bool, rec: &mut RunRecorder) {
        let call = self.calls.get(c);
        let (svc, r, generation, phase) = (call.service, call.replica, call.generation, call.phase);
        match phase {
            Phase::Free => return,
            // Let go of by its replica (a restart): nothing left there.
            Phase::Dropped => {}
            Phase::Queued => match self.replica(svc, r).cancel(c, generation, false, now) {
                Cancelled::Removed(_) => {}
                // Parked by an admission stage: it is answered later, to no one.
                _ => return,
            },
            Phase::Delayed => {}
            Phase::Serving => {
                if !in_service {
                    return;
                }
                let (abandoned_at, edge) = (call.abandoned_at, call.edge);
                if let Cancelled::Stopped(_, started) = self.replica(svc, r).cancel(c, generation, true, now)
                    && abandoned_at < now
                {
                    let w = now.since(started.max(abandoned_at));
                    self.waste(svc, edge, w, rec);
                }
                self.freed.push((svc, r));
            }
            Phase::Calling => {
                self.stop_tickets(c, now, rec);
                self.release_worker(c, None, now, rec);
            }
        }
        if !matches!(phase, Phase::Calling | Phase::Dropped)
            && let Some(set) = &mut self.services[svc as usize].others
        {
            set.left(r, c, generation, None, now);
        }
        let caller = self.calls.get(c).caller;
        self.free_call(c);
        if let Caller::Client { op, attempt } = caller {
            self.answers.push_back((op, attempt, None));
        }
    }

    /// A service's capacity went back up: its replicas may start waiting requests.
    pub fn capacity_restored<Q: EventQueue<Ev>>(
        &mut self,
        svc: u32,
        s: &mut Scheduler<Ev, Q>,
        rec: &mut RunRecorder,
    ) {
        for r in 0..self.replica_count(svc) {
            self.freed.push((svc, r));
        }
        self.settle(s, rec);
    }

    /// Starts the waiting requests of every replica a worker came free at.
    fn settle<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, rec: &mut RunRecorder) {
        while let Some((svc, r)) = self.freed.pop() {
            self.start_waiting(svc, r, s, rec);
        }
    }

    fn start_waiting<Q: EventQueue<Ev>>(
        &mut self,
        svc: u32,
        r: u32,
        s: &mut Scheduler<Ev, Q>,
        rec: &mut RunRecorder,
    ) {
        let now = s.now();
        while let Some(next) = self.replica(svc, r).next_waiting::<false>(now) {
            match next {
                Next::Started { worker, service, .. } => {
                    let c = self.replica(svc, r).serving(worker).op;
                    self.started(c, worker, service, s, rec);
                }
                Next::Dropped(req) => self.left_unserved(req.op, None, s, rec),
                Next::Shed(req) => {
                    let reply = Reply::of(Outcome::Status(super::server::workers::SHED_STATUS));
                    self.left_unserved(req.op, Some(reply), s, rec)
                }
            }
        }
        self.levels(svc, r, now, rec);
    }

    /// The entry service's levels go into the run's time series; a service's autoscaler
    /// learns its replica's busy workers (a worker waiting for its downstream calls is busy).
    fn levels(&mut self, svc: u32, r: u32, now: Instant, rec: &mut RunRecorder) {
        // Most services neither feed the run's series nor autoscale: nothing to read.
        let scaled = self.services[svc as usize].others.as_ref().is_some_and(|o| o.autoscales());
        if svc != 0 && !scaled {
            return;
        }
        let levels = self.replica(svc, r).levels();
        if scaled && let Some(a) = self.services[svc as usize].others.as_mut().and_then(|o| o.autoscaler()) {
            a.levels(r, levels.0, levels.1, now);
        }
        if svc != 0 {
            return;
        }
        let (busy, queued) = match &mut self.services[0].others {
            Some(set) => set.levels(r, levels),
            None => levels,
        };
        rec.levels(now, busy, queued);
    }
}
