//! Clients calling a `queue` server (DESIGN §3.3), wired to events.
//!
//! The life of an attempt: `Send` (client; the gate may hold it back or refuse it) -> request
//! hop -> `Arrive` (the server's admission pipeline answers it at once, queues it, or starts
//! it) -> `Done` (worker) -> response hop -> `Answer` (client); a `Timeout` races the answer.
//! A hop of zero latency is delivered at once, without an event. A request parked on its
//! idempotency key is answered when the request executing the key is `Done`. A request the
//! rate limiter holds (nginx's delay, a reserved permit) goes on at its `Released` event.
//!
//! With a connection pool ([`super::connections`], DESIGN §4.7), the request hop waits for a
//! connection: a `Send` asks the pool, and the request leaves when a connection is granted, at
//! once, after a `Connected` event (a new connection opening), or when one comes free (an
//! answer arrives, or a connection is closed and replaced); a `PoolWait` ends a wait longer
//! than the pool's `max_wait`.
//!
//! With a bulkhead ([`super::bulkheads`]), a started operation first asks for a permit: it
//! sends its first attempt at once, waits (a `BulkheadWait` ends a wait longer than
//! `max_wait`; a permit given back sends the oldest waiter's first attempt as a `Send` at that
//! instant), or fails as `failed_bulkhead`; it gives the permit back when it ends.
//!
//! With gateway `layers` (a chain of the call graph's proxy nodes, [`super::graph::proxy`];
//! wired in `proxies.rs`), the request hop ends at the first node instead: each node sends
//! the request down (`ProxySend`, racing its own `ProxyTimeout`)
//! until the last one calls the server, and answers flow back up the same way. A request to
//! the server then names the lowest layer's ticket and attempt in its `attempt` field.
//!
//! # Plain runs
//!
//! A run is *plain* when it uses none of the optional features: the clients have no
//! controls, no idempotency keys, no timeout or deadline and ignore Retry-After
//! ([`Clients::is_plain`]); the network is instantaneous and lossless; the server has no
//! faults, rate limit, dedup store or overload ([`Server::is_plain`]); there are no gateway
//! layers, no connection pool, no bulkhead, no measured windows (`[output] windows`) and the workload is not serial
//! ([`is_plain`]). The thundering herds are plain. [`run`] decides once, and runs the model
//! compiled with `PLAIN = true`: the same code with every test of a feature that is off
//! folded away (on the 10,000-client herd, a fifth of the instructions: benches/README.md).
//! Any other run takes the copy compiled with `PLAIN = false`, which tests each feature. The
//! two give the same results for a plain run; `tests/it/queue_equivalence.rs` checks it.

mod graph;
mod hedging;
mod proxies;

use super::autoscaler::ScaleStep;
use super::bulkheads::{Bulkheads, Entry};
use super::clients::{AfterFailure, Clients, NextOp, Sent};
use super::connections::{self, Connections, Grant};
use super::graph::proxy::{self, Caller, Proxies};
use super::graph::{Graph, GraphParams};
use super::hedges::Hedges;
use super::network::Network;
use super::replicas::{Change, Moved, ReplicaParams, Replicas, Restarts};
use super::server::idempotency::{Completion, KeyMode, KeyTag};
use super::server::workers::{self, Next};
use super::server::{Arrival, Reply, Request, Server, ServerParams};
use super::workload::{OpenArrivals, SerialStarts, StartTimes, Streams, Workload};
use super::workspace::Leftovers;
use crate::engine::rng::u01;
use crate::engine::rng::{Stream, stream};
use crate::engine::{self, EventQueue, Instant, Model, Scheduler, Span};
use crate::metrics::series::{Gauge, TimeSeries};
use crate::metrics::{Latencies, RunMetrics, RunRecorder, Window};
use crate::policy::deploy::SlotState;
use crate::policy::limit::envoy_gradient::Timer;
use crate::policy::{FailReason, Outcome};
use rand_xoshiro::Xoshiro256PlusPlus;

/// What an event is; the meaning of [`Ev`]'s fields depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Kind {
    /// The next open-workload operation arrives.
    OpenArrival,
    /// A closed-workload client (`a`) starts its first operation; the next client's first
    /// start is scheduled then (start times are generated one at a time).
    FirstStart,
    /// A closed-workload client (`a`) starts its next operation.
    ClientStart,
    /// A backoff (or a wait the gate imposed) ended: operation `a` sends its next attempt.
    Send,
    /// Attempt `b` of operation `a` reaches the server (or the first proxy node); its
    /// client stops waiting at `c` (nanoseconds).
    Arrive,
    /// Worker `a` of replica `b` finishes serving.
    Done,
    /// The answer `c` ([`Reply::to_bits`]) to attempt `b` of operation `a` reaches the client.
    Answer,
    /// The client of operation `a` stops waiting for attempt `b`.
    Timeout,
    /// Capacity went back up: waiting requests may start.
    CapacityRestored,
    /// A proxy node's backoff ended: ticket `a` sends its next attempt down.
    ProxySend,
    /// A proxy node stops waiting for attempt `b` of ticket `a`.
    ProxyTimeout,
    /// The connection opening for attempt `b` of operation `a` is ready.
    Connected,
    /// Attempt `b` of operation `a` has waited the pool's `max_wait` for a connection.
    PoolWait,
    /// The rate limiter lets attempt `b` of operation `a` (fields as `Arrive`) go on.
    Released,
    /// The dead-lettered operation `a` is re-driven: it sends its first attempt again.
    Redrive,
    /// Operation `a` has waited its bulkhead's `max_wait` for a permit.
    BulkheadWait,
    /// The server's adaptive concurrency controller's timer `a` ([`Timer`] as a number)
    /// fires.
    LimitTimer,
    /// Hedge timer number `b` of operation `a` ran out: its next copy goes out.
    Hedge,
    /// The outlier detector's interval timer (`[server] outlier`).
    OutlierTick,
    /// Replica `a` changes state (`b`: its `Change`, coded by `change_code`): a `restart` fault starts or ends, or
    /// a rolling deploy moves it.
    ReplicaChange,
    /// Worker `a` of replica `c` of service `b` of the call graph finishes a request's own
    /// work ([`crate::model::graph`]).
    GraphDone,
    /// Ticket `a` (generation `b`) of the call graph sends its next attempt.
    GraphSend,
    /// Ticket `a` (generation `b`) stops waiting for its attempt `c`.
    GraphTimeout,
    /// The rate limiter lets request `a` (generation `b`) of the call graph go on.
    GraphReleased,
    /// Service `a`'s capacity went back up.
    GraphCapacity,
    /// The autoscaler syncs (`[server] autoscale`).
    AutoscaleSync,
    /// The replica the autoscaler started in slot `a` (its generation `b`) is ready.
    ReplicaReady,
    /// Replica `a` of service `c` of the call graph changes state (`b`: its `Change`, as
    /// `ReplicaChange`).
    GraphReplicaChange,
    /// Service `a`'s outlier detector's interval timer.
    GraphOutlierTick,
    /// Service `a`'s autoscaler syncs.
    GraphAutoscaleSync,
    /// The replica service `c`'s autoscaler started in slot `a` (its generation `b`) is ready.
    GraphReplicaReady,
}

/// The events of the queue model: small and `Copy` (24 bytes). A kind and three plain fields
/// rather than an enum with fields: an enum value is put together in memory piece by piece
/// and then copied into the event queue with wider loads, which stalls the copy
/// (store-to-load forwarding); a struct of scalars goes from registers straight into its
/// bucket. No byte of it is padding (`_zero` fills the last four), so that it is copied as
/// it was written. The constructors below name the fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Ev {
    c: u64,
    a: u32,
    b: u32,
    kind: Kind,
    _zero: u32,
}

impl Ev {
    #[inline(always)]
    const fn of(kind: Kind, a: u32, b: u32, c: u64) -> Ev {
        Ev { c, a, b, kind, _zero: 0 }
    }
    pub const OPEN_ARRIVAL: Ev = Ev::of(Kind::OpenArrival, 0, 0, 0);
    pub const CAPACITY_RESTORED: Ev = Ev::of(Kind::CapacityRestored, 0, 0, 0);
    pub const OUTLIER_TICK: Ev = Ev::of(Kind::OutlierTick, 0, 0, 0);
    pub const AUTOSCALE_SYNC: Ev = Ev::of(Kind::AutoscaleSync, 0, 0, 0);
    pub fn replica_ready(slot: u32, generation: u32) -> Ev {
        Ev::of(Kind::ReplicaReady, slot, generation, 0)
    }
    #[inline(always)]
    pub fn first_start(client: u32) -> Ev {
        Ev::of(Kind::FirstStart, client, 0, 0)
    }
    #[inline(always)]
    pub fn client_start(client: u32) -> Ev {
        Ev::of(Kind::ClientStart, client, 0, 0)
    }
    #[inline(always)]
    pub fn send(op: u32) -> Ev {
        Ev::of(Kind::Send, op, 0, 0)
    }
    #[inline(always)]
    pub fn arrive(op: u32, attempt: u32, gives_up_at: Instant) -> Ev {
        Ev::of(Kind::Arrive, op, attempt, gives_up_at.as_ns())
    }
    #[inline(always)]
    pub fn released(op: u32, attempt: u32, gives_up_at: Instant) -> Ev {
        Ev::of(Kind::Released, op, attempt, gives_up_at.as_ns())
    }
    /// Worker `worker` of replica `replica` (0 without replicas) finishes.
    #[inline(always)]
    pub fn done(worker: u32, replica: u32) -> Ev {
        Ev::of(Kind::Done, worker, replica, 0)
    }
    #[inline(always)]
    pub fn answer(op: u32, attempt: u32, reply: Reply) -> Ev {
        Ev::of(Kind::Answer, op, attempt, reply.to_bits())
    }
    #[inline(always)]
    pub fn timeout(op: u32, attempt: u32) -> Ev {
        Ev::of(Kind::Timeout, op, attempt, 0)
    }
    #[inline(always)]
    pub fn connected(op: u32, attempt: u32) -> Ev {
        Ev::of(Kind::Connected, op, attempt, 0)
    }
    #[inline(always)]
    pub fn pool_wait(op: u32, attempt: u32) -> Ev {
        Ev::of(Kind::PoolWait, op, attempt, 0)
    }
    #[inline(always)]
    pub fn bulkhead_wait(op: u32) -> Ev {
        Ev::of(Kind::BulkheadWait, op, 0, 0)
    }
    #[inline(always)]
    pub fn proxy_send(ticket: u32) -> Ev {
        Ev::of(Kind::ProxySend, ticket, 0, 0)
    }
    #[inline(always)]
    pub fn proxy_timeout(ticket: u32, attempt: u32) -> Ev {
        Ev::of(Kind::ProxyTimeout, ticket, attempt, 0)
    }
    #[inline(always)]
    pub fn redrive(op: u32) -> Ev {
        Ev::of(Kind::Redrive, op, 0, 0)
    }
    #[inline(always)]
    pub fn limit_timer(which: Timer) -> Ev {
        Ev::of(Kind::LimitTimer, which as u32, 0, 0)
    }
    pub fn replica_change(replica: u32, change: Change) -> Ev {
        Ev::of(Kind::ReplicaChange, replica, change_code(change), 0)
    }
    pub fn graph_done(worker: u32, service: u32, replica: u32) -> Ev {
        Ev::of(Kind::GraphDone, worker, service, replica as u64)
    }
    pub fn graph_send(ticket: u32, generation: u32) -> Ev {
        Ev::of(Kind::GraphSend, ticket, generation, 0)
    }
    /// A hedged edge's timer `timer` for its ticket's next copy.
    pub fn graph_hedge(ticket: u32, generation: u32, timer: u32) -> Ev {
        Ev::of(Kind::GraphSend, ticket, generation, timer as u64)
    }
    pub fn graph_timeout(ticket: u32, generation: u32, attempt: u32) -> Ev {
        Ev::of(Kind::GraphTimeout, ticket, generation, attempt as u64)
    }
    pub fn graph_released(call: u32, generation: u32) -> Ev {
        Ev::of(Kind::GraphReleased, call, generation, 0)
    }
    pub fn graph_capacity(service: u32) -> Ev {
        Ev::of(Kind::GraphCapacity, service, 0, 0)
    }
    pub fn graph_replica_change(service: u32, replica: u32, change: Change) -> Ev {
        Ev::of(Kind::GraphReplicaChange, replica, change_code(change), service as u64)
    }
    pub fn graph_outlier_tick(service: u32) -> Ev {
        Ev::of(Kind::GraphOutlierTick, service, 0, 0)
    }
    pub fn graph_autoscale_sync(service: u32) -> Ev {
        Ev::of(Kind::GraphAutoscaleSync, service, 0, 0)
    }
    pub fn graph_replica_ready(service: u32, slot: u32, generation: u32) -> Ev {
        Ev::of(Kind::GraphReplicaReady, slot, generation, service as u64)
    }
}

/// A replica's [`Change`] as an event field, and back.
fn change_code(change: Change) -> u32 {
    match change {
        Change::RestartBegins => 0,
        Change::RestartEnds => 1,
        Change::Deployed(SlotState::Up) => 2,
        Change::Deployed(SlotState::Starting) => 3,
        Change::Deployed(SlotState::Vacant) => 4,
        Change::Drain => 5,
    }
}

fn change_of(code: u32) -> Change {
    match code {
        0 => Change::RestartBegins,
        1 => Change::RestartEnds,
        2 => Change::Deployed(SlotState::Up),
        3 => Change::Deployed(SlotState::Starting),
        4 => Change::Deployed(SlotState::Vacant),
        _ => Change::Drain,
    }
}

// Events are copied in and out of the queue millions of times a second: keep them small.
const _: () = assert!(std::mem::size_of::<Ev>() == 24);

/// The model of one run; `PLAIN`: see the module docs.
struct QueueModel<const PLAIN: bool> {
    clients: Clients,
    server: Server,
    rec: RunRecorder,
    net: Network,
    instant_net: bool,
    /// The idempotency keys the clients' attempts carry (made only when the server keeps a
    /// dedup store).
    keys: KeyMode,
    arrivals_rng: Xoshiro256PlusPlus,
    /// Open workloads: the arrivals (one client's share with per-client streams), the number
    /// of clients, and whether each client has its own stream (an arrival's `a` is then its
    /// client).
    open: Option<(OpenArrivals, u32, bool)>,
    /// Closed workloads: the clients' first start times (none for open workloads).
    first_starts: StartTimes,
    /// Serial workloads: when each client starts its next call (never plain).
    serial: Option<SerialStarts>,
    /// The strategy's gateway layers (a chain of proxy nodes), if it has any.
    proxies: Option<Proxies>,
    /// The clients' connection pools, if the strategy has one.
    connections: Option<Connections>,
    /// The clients' bulkheads, if the strategy has one.
    bulkheads: Option<Bulkheads>,
    /// The clients' hedged calls, if the strategy hedges.
    hedges: Option<Hedges>,
    /// The replicas after the first (`server`) and their balancer, with `[server] replicas`.
    replicas: Option<Box<Replicas>>,
    /// Whether a replica ever restarts (`restart` faults, deploys): a worker's `Done` event
    /// may then be for a request dropped by a restart.
    restarts: bool,
    /// Without replicas: the server's `restart` faults under way.
    restarting: Restarts,
    /// The call graph behind the entry service, with `[[services]]` (it takes the server's
    /// place).
    graph: Option<Box<Graph>>,
}

/// What one run of the queue model is given besides the server's parameters. `queue` (empty) and
/// `latency` (an empty histogram) may come from an earlier run; they are handed back with the
/// op table for the next.
pub struct RunInputs<'a, Q> {
    pub workload: &'a Workload,
    pub net: Network,
    pub clients: Clients,
    /// The idempotency keys the clients' attempts carry.
    pub keys: KeyMode,
    pub proxies: Option<Proxies>,
    pub connections: Option<Connections>,
    pub bulkheads: Option<Bulkheads>,
    pub hedges: Option<Hedges>,
    pub run_seed: u64,
    pub horizon: Instant,
    pub series: TimeSeries,
    pub queue: Q,
    pub latency: Latencies,
    /// `[output] windows`.
    pub windows: &'a [Window],
    /// The replicas after the first and their balancer (`[server] replicas` > 1).
    pub replicas: Option<ReplicaParams>,
    /// The call graph (`[[services]]`), if any.
    pub graph: Option<GraphParams>,
}

/// Runs one replication of a queue-server experiment. A plain run takes the plain copy of the
/// model if `plain_copy` (see the module docs; `false` only to check that the copies agree).
pub fn run<Q: EventQueue<Ev>>(
    plain_copy: bool,
    server: ServerParams,
    inputs: RunInputs<'_, Q>,
) -> (RunMetrics, Q, Leftovers) {
    let mut server = Server::new(server, inputs.run_seed);
    if inputs.clients.has_priorities() {
        server.shed_by_priority();
    }
    let layers = inputs.proxies.is_some();
    let waits = inputs.connections.is_some() || inputs.bulkheads.is_some() || inputs.hedges.is_some();
    if plain_copy
        && inputs.replicas.is_none()
        && inputs.graph.is_none()
        && is_plain(inputs.workload, &inputs.clients, &inputs.net, &server, layers, waits, inputs.windows)
    {
        run_as::<true, Q>(server, inputs)
    } else {
        run_as::<false, Q>(server, inputs)
    }
}

/// Whether a run with these parts is plain (see the module docs).
pub fn is_plain(
    workload: &Workload,
    clients: &Clients,
    net: &Network,
    server: &Server,
    layers: bool,
    waits_in_client: bool,
    windows: &[Window],
) -> bool {
    !matches!(workload, Workload::Serial { .. })
        && windows.is_empty()
        && clients.is_plain()
        && net.is_perfect()
        && server.is_plain()
        && !layers
        && !waits_in_client
}

/// Schedules every replica's changes of state: its `restart` faults' starts and ends, and the
/// deploys' moves. Returns whether there is any.
fn schedule_changes<Q: EventQueue<Ev>>(
    server: &Server,
    replicas: Option<&Replicas>,
    sched: &mut Scheduler<Ev, Q>,
) -> bool {
    let mut any = false;
    let others = replicas.map_or(&[][..], |set| &set.others[..]);
    for (r, replica) in std::iter::once(server).chain(others).enumerate() {
        for (start, end) in replica.restarts() {
            sched.schedule_at(start, Ev::replica_change(r as u32, Change::RestartBegins));
            sched.schedule_at(end, Ev::replica_change(r as u32, Change::RestartEnds));
            any = true;
        }
    }
    if let Some(set) = replicas {
        for (r, moves) in set.deploy_moves().iter().enumerate() {
            for &(at, state) in moves {
                sched.schedule_at(at, Ev::replica_change(r as u32, Change::Deployed(state)));
                any = true;
            }
        }
    }
    any
}

/// [`run`] with the copy of the model it chose.
fn run_as<const PLAIN: bool, Q: EventQueue<Ev>>(
    server: Server,
    inputs: RunInputs<'_, Q>,
) -> (RunMetrics, Q, Leftovers) {
    let RunInputs {
        workload,
        net,
        clients,
        keys,
        proxies,
        connections,
        bulkheads,
        hedges,
        run_seed,
        horizon,
        series,
        queue,
        latency,
        windows,
        replicas,
        graph,
    } = inputs;
    // With a call graph, the entry service's replicas are the graph's (its service 0).
    let replicas = replicas.filter(|_| graph.is_none()).map(|p| Box::new(Replicas::new(p, run_seed)));
    let mut graph = graph.map(|p| Box::new(Graph::new(p, run_seed)));
    let server_keeps_keys = server.keeps_keys();
    let mut fault_span = server.fault_span(horizon);
    let mut sched: Scheduler<Ev, Q> = Scheduler::new(queue);
    let mut series = series;
    if let Some(g) = &mut graph {
        for (at, service) in g.capacity_restorations() {
            sched.schedule_at(at, Ev::graph_capacity(service));
        }
        fault_span = g.fault_span(fault_span, horizon);
        g.schedule_replica_events(&mut sched, &mut series);
    } else {
        for at in server.capacity_restorations() {
            sched.schedule_at(at, Ev::CAPACITY_RESTORED);
        }
    }
    if let Some(set) = &replicas {
        fault_span = set.fault_span(fault_span, horizon);
        for at in set.others.iter().flat_map(|s| s.capacity_restorations()) {
            sched.schedule_at(at, Ev::CAPACITY_RESTORED);
        }
        if let Some(interval) = set.outlier_interval() {
            sched.schedule_at(Instant::ZERO + interval, Ev::OUTLIER_TICK);
        }
    }
    let mut restarts = graph.is_none() && schedule_changes(&server, replicas.as_deref(), &mut sched);
    if let Some(set) = &replicas
        && !series.is_empty()
    {
        series.track_replicas(set.count(), set.up_count());
    }
    let mut replicas = replicas;
    if let Some(a) = replicas.as_mut().and_then(|set| set.autoscaler()) {
        sched.schedule_at(Instant::ZERO + a.sync_period(), Ev::AUTOSCALE_SYNC);
        if !series.is_empty() {
            a.track(series.width(), series.len());
        }
        // A scale-up may drop what a draining replica still holds.
        restarts = true;
    }
    let mut model = QueueModel::<PLAIN> {
        clients,
        server,
        rec: RunRecorder::new(fault_span.is_some(), series, latency, windows),
        instant_net: net.is_instant(),
        net,
        keys: if server_keeps_keys { keys } else { KeyMode::None },
        arrivals_rng: stream(run_seed, Stream::Arrivals),
        open: None,
        first_starts: StartTimes::new(0, Span::ZERO),
        serial: None,
        proxies,
        connections,
        bulkheads,
        hedges,
        replicas,
        restarts,
        restarting: Restarts::default(),
        graph,
    };
    if !PLAIN {
        model.limits_start(&mut sched);
    }
    match workload {
        Workload::Closed { clients, ramp, .. } => {
            let mut starts = StartTimes::new(*clients, *ramp);
            if let Some((client, at)) = starts.next(&mut model.arrivals_rng) {
                sched.schedule_at(at, Ev::first_start(client));
            }
            model.first_starts = starts;
        }
        Workload::Serial { clients, gap, end, first_call } => {
            let mut starts = SerialStarts::new(*clients, gap.clone(), *end);
            for client in 0..*clients {
                let wake = first_call
                    .as_ref()
                    .map_or(Instant::ZERO, |d| Instant::ZERO + d.sample(&mut model.arrivals_rng));
                if let Some(at) = starts.next(client, wake, &mut model.arrivals_rng) {
                    sched.schedule_at(at, Ev::client_start(client));
                }
            }
            model.serial = Some(starts);
        }
        Workload::Open { arrivals, clients, streams: Streams::Fleet } => {
            if let Some(t) = arrivals.next_after(Instant::ZERO, &mut model.arrivals_rng) {
                sched.schedule_at(t, Ev::OPEN_ARRIVAL);
            }
            model.open = Some((arrivals.clone(), *clients, false));
        }
        Workload::Open { arrivals, clients, streams: Streams::PerClient { first_call } } => {
            // Each client's first event: its wake-up (a call), or its stream's first arrival.
            let own = arrivals.scaled(1.0 / f64::from(*clients));
            for client in 0..*clients {
                let first = match first_call {
                    Some(wake) => Some(Instant::ZERO + wake.sample(&mut model.arrivals_rng)),
                    None => own.next_after(Instant::ZERO, &mut model.arrivals_rng),
                };
                if let Some(t) = first {
                    sched.schedule_at(t, Ev::of(Kind::OpenArrival, client, 0, 0));
                }
            }
            model.open = Some((own, *clients, true));
        }
    }
    engine::run(&mut model, &mut sched, horizon);
    if let Some(a) = model.replicas.as_mut().and_then(|set| set.autoscaler()) {
        let rows = a.rows(horizon);
        if let Some(series) = model.rec.replica_series() {
            series.autoscaled(rows);
        }
    }
    if let Some(g) = model.graph.as_mut() {
        g.finish_series(horizon, &mut model.rec);
    }
    model.rec.keys_peak(model.server.keys_peak());
    let (locks_expired, fenced) = model.server.lock_counts();
    model.rec.locks(locks_expired, fenced);
    let graph = model.graph.as_mut().map(|g| g.counts());
    let (mut metrics, left) = model.clients.finish(model.rec, sched.processed(), fault_span, horizon);
    if let Some(g) = graph {
        metrics.graph = g;
    }
    (metrics, sched.into_queue(), left)
}

impl<const PLAIN: bool> Model for QueueModel<PLAIN> {
    type Event = Ev;

    /// Starts loading the operation the next event will touch.
    #[inline]
    fn prefetch(&self, next: &Ev) {
        match next.kind {
            Kind::Send
            | Kind::Arrive
            | Kind::Answer
            | Kind::Timeout
            | Kind::Connected
            | Kind::PoolWait
            | Kind::Released
            | Kind::Redrive
            | Kind::BulkheadWait
            | Kind::Hedge => self.clients.ops.prefetch(next.a),
            Kind::Done => self.clients.ops.prefetch(self.replica(next.b).serving(next.a).op),
            _ => {}
        }
    }

    // Always inlined into the event loop (`engine::run`): left to the compiler's heuristics it
    // can become a call of its own, which cost the thundering herd 3 % more instructions
    // (benches/README.md).
    #[inline(always)]
    fn handle<Q: EventQueue<Ev>>(&mut self, ev: Ev, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        let Ev { kind, a, b, c, .. } = ev;
        match kind {
            Kind::OpenArrival => {
                let (arrivals, n, per_client) =
                    self.open.as_ref().expect("open arrivals exist in an open workload");
                let client = if *per_client {
                    a
                } else if *n > 1 {
                    (u01(&mut self.arrivals_rng) * *n as f64) as u32
                } else {
                    0
                };
                if let Some(t) = arrivals.next_after(now, &mut self.arrivals_rng) {
                    let own = if *per_client { client } else { 0 };
                    s.schedule_at(t, Ev::of(Kind::OpenArrival, own, 0, 0));
                }
                let op = self.clients.start::<PLAIN>(client, now, &mut self.rec);
                self.begin(op, s);
            }
            Kind::FirstStart | Kind::ClientStart => {
                let client = a;
                if kind == Kind::FirstStart
                    && let Some((next, at)) = self.first_starts.next(&mut self.arrivals_rng)
                {
                    s.schedule_at(at, Ev::first_start(next));
                }
                let op = self.clients.start::<PLAIN>(client, now, &mut self.rec);
                self.begin(op, s);
            }
            Kind::Send => self.send(a, s),
            Kind::Arrive => self.deliver(a, b, Instant::from_ns(c), s),
            Kind::Released => self.released(a, b, Instant::from_ns(c), s),
            Kind::Done => self.done(a, b, s),
            Kind::Answer => {
                let op = a;
                self.answer_arrives(op, b, Reply::from_bits(c), s);
                self.clients.ops.release(op);
            }
            Kind::Timeout => {
                let (op, attempt) = (a, b);
                if self.has_hedging() {
                    self.copy_timed_out(op, attempt, s);
                } else if self.clients.is_waiting(op, attempt) {
                    if self.has_graph() {
                        self.graph_gave_up(op, attempt, s);
                    }
                    let waited = self.has_pool() && self.pool_gave_up(op, attempt, s);
                    self.timed_out(op, waited, s);
                }
                self.clients.ops.release(op);
            }
            Kind::Connected => {
                self.connected(a, b, s);
                self.clients.ops.release(a);
            }
            Kind::PoolWait => {
                let (op, attempt) = (a, b);
                if self.clients.is_waiting(op, attempt)
                    && self.pool().wait_expired(connections::Attempt { op, number: attempt })
                {
                    self.timed_out(op, true, s);
                }
                self.clients.ops.release(op);
            }
            Kind::BulkheadWait => {
                let op = a;
                if self.bulkheads.as_mut().expect("only a bulkhead's wait").wait_expired(op) {
                    let next =
                        self.clients.fail_locally::<PLAIN>(op, FailReason::Bulkhead, now, &mut self.rec);
                    self.next_op(next, s);
                }
                self.clients.ops.release(op);
            }
            Kind::LimitTimer => {
                let which = if a == Timer::Update as u32 { Timer::Update } else { Timer::MinRtt };
                self.server.limit_timer(which, now);
                self.server_limit_moved(s);
            }
            Kind::CapacityRestored => {
                for r in 0..self.replica_count() {
                    self.start_waiting(r, s);
                }
            }
            Kind::OutlierTick => self.outlier_tick(s),
            Kind::ReplicaChange => self.replica_changed(a, change_of(b), s),
            Kind::AutoscaleSync => self.autoscale_sync(s),
            Kind::ReplicaReady => {
                let set = self.replicas.as_mut().expect("only the autoscaler starts replicas");
                if set.autoscaler().expect("checked").ready(a, b) {
                    self.replica_changed(a, Change::Deployed(SlotState::Up), s);
                }
            }
            Kind::Redrive => self.redrive(a, s),
            Kind::Hedge => self.hedge_timer(a, b, s),
            Kind::ProxySend => {
                self.proxy_send(a, s);
                self.proxy_release(a);
            }
            Kind::GraphDone
            | Kind::GraphSend
            | Kind::GraphTimeout
            | Kind::GraphReleased
            | Kind::GraphCapacity
            | Kind::GraphReplicaChange
            | Kind::GraphOutlierTick
            | Kind::GraphAutoscaleSync
            | Kind::GraphReplicaReady => self.graph_event(kind, a, b, c, s),
            Kind::ProxyTimeout => self.proxy_timed_out(a, b, s),
        }
    }
}

impl<const PLAIN: bool> QueueModel<PLAIN> {
    /// Whether hops take no time (always, compiled for a plain run).
    #[inline(always)]
    fn instant_net(&self) -> bool {
        PLAIN || self.instant_net
    }

    /// Whether the server has several replicas (never, compiled for a plain run).
    #[inline(always)]
    fn has_replicas(&self) -> bool {
        !PLAIN && self.replicas.is_some()
    }

    /// Replicas in all (1 without `replicas`).
    fn replica_count(&self) -> u32 {
        self.replicas.as_ref().map_or(1, |set| set.count())
    }

    /// Replica `r` (the server itself for 0).
    #[inline(always)]
    fn replica(&self, r: u32) -> &Server {
        if PLAIN || r == 0 {
            &self.server
        } else {
            &self.replicas.as_ref().expect("replica > 0").others[r as usize - 1]
        }
    }

    #[inline(always)]
    fn replica_mut(&mut self, r: u32) -> &mut Server {
        if PLAIN || r == 0 {
            &mut self.server
        } else {
            &mut self.replicas.as_mut().expect("replica > 0").others[r as usize - 1]
        }
    }

    /// Requests in service and waiting at the whole service, after replica `r`'s changed at
    /// `now` (its queue goes into its own time series).
    #[inline(always)]
    fn levels(&mut self, r: u32, now: Instant) -> (u32, usize) {
        let levels = self.replica(r).levels();
        if self.has_replicas() {
            if let Some(series) = self.rec.replica_series() {
                series.queued(r, now, levels.1);
            }
            let set = self.replicas.as_mut().expect("checked");
            if let Some(a) = set.autoscaler() {
                a.levels(r, levels.0, levels.1, now);
            }
            return set.levels(r, levels);
        }
        levels
    }

    /// The outlier detector's interval timer fires: it un-ejects and checks success rates,
    /// and fires again an interval later.
    /// Replica `r` let go of `req` (answered with `reply`, or dropped): the balancer learns it.
    /// Nothing without replicas.
    #[inline(always)]
    fn replica_left(&mut self, r: u32, req: &Request, reply: Option<Reply>, now: Instant) {
        if self.has_replicas() {
            self.replicas.as_mut().expect("checked").left(r, req.op, req.attempt, reply, now);
            if let Some(reply) = reply
                && let Some(series) = self.rec.replica_series()
            {
                series.answered(r, now, reply.outcome == Outcome::Success);
            }
        }
    }

    /// Replica `r` changes state: down from up, it drops every request it holds (queued and in
    /// service), each answered with a connection reset, and refuses new ones; up again, it
    /// takes requests (and its slow start begins).
    #[cold]
    #[inline(never)]
    fn replica_changed<Q: EventQueue<Ev>>(&mut self, r: u32, change: Change, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        let moved = match self.replicas.as_mut() {
            Some(set) => set.change(r, change, now),
            None => self.restarting.change(change),
        };
        match moved {
            Moved::Down => self.restart(r, s),
            Moved::Up => self.replica_mut(r).restarted(),
            Moved::Same => {}
        }
        if let Some(set) = &self.replicas {
            let up = set.up_count();
            if let Some(series) = self.rec.replica_series() {
                series.up(now, up);
            }
        }
    }

    /// Replica `r` goes down at once: what it held is answered with a connection reset.
    fn restart<Q: EventQueue<Ev>>(&mut self, r: u32, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        let (waiting, serving) = self.replica_mut(r).go_down(now);
        let reset = Reply::of(Outcome::ConnectionError);
        for req in waiting.into_iter().chain(serving.into_iter().map(|(req, _)| req)) {
            self.replica_left(r, &req, Some(reset), now);
            self.respond(req, reset, s);
        }
        let (busy, queued) = self.levels(r, now);
        self.rec.levels(now, busy, queued);
    }

    /// The autoscaler syncs: it starts replicas (each dropping what a draining replica in its
    /// slot still holds, and ready `startup` later), stops starting ones and drains ready ones;
    /// it syncs again a period later.
    #[cold]
    #[inline(never)]
    fn autoscale_sync<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        let holding: Vec<bool> =
            (0..self.replica_count()).map(|r| self.replica(r).levels() != (0, 0)).collect();
        let set = self.replicas.as_mut().expect("only replicas autoscale");
        let a = set.autoscaler().expect("only an autoscaler syncs");
        let steps = a.sync(now, |r| holding[r as usize]);
        s.schedule_in(a.sync_period(), Ev::AUTOSCALE_SYNC);
        for step in steps {
            match step {
                ScaleStep::Start { slot, generation, ready_at } => {
                    self.restart(slot, s);
                    s.schedule_at(ready_at, Ev::replica_ready(slot, generation));
                }
                ScaleStep::Stop { .. } => {}
                ScaleStep::Drain { slot } => self.replica_changed(slot, Change::Drain, s),
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn outlier_tick<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>) {
        let set = self.replicas.as_mut().expect("only replicas have a detector");
        set.outlier_tick(s.now());
        if let Some(interval) = set.outlier_interval() {
            s.schedule_in(interval, Ev::OUTLIER_TICK);
        }
    }

    /// The delay of the request hop, `None` if the request is lost (a plain run's network is
    /// instantaneous and lossless).
    #[inline(always)]
    fn request_hop(&mut self) -> Option<Span> {
        if PLAIN { Some(Span::ZERO) } else { self.net.request() }
    }

    /// The delay of the response hop, `None` if the response is lost.
    #[inline(always)]
    fn response_hop(&mut self) -> Option<Span> {
        if PLAIN { Some(Span::ZERO) } else { self.net.response() }
    }

    /// The operation sends its next attempt now (if the gate lets it): timeout timer, then
    /// (once the pool, if any, grants it a connection) the request hop.
    fn send<Q: EventQueue<Ev>>(&mut self, op: u32, s: &mut Scheduler<Ev, Q>) {
        if self.has_hedging() {
            return self.send_first_copy(op, s);
        }
        let attempt = match self.clients.send::<PLAIN>(op, s.now(), &mut self.rec) {
            Sent::Attempt(a) => a,
            Sent::Wait(wait) => return s.schedule_in(wait, Ev::send(op)),
            Sent::Ended(next) => return self.op_ended(op, next, s),
        };
        if !attempt.gives_up_at.is_never() {
            self.clients.ops.get(op).refs += 1;
            s.schedule_at(attempt.gives_up_at, Ev::timeout(op, attempt.number));
        }
        if self.has_pool() {
            return self.check_out(op, attempt.number, attempt.gives_up_at, s);
        }
        self.dispatch(op, attempt.number, attempt.gives_up_at, s)
    }

    /// The request of attempt `attempt` of `op` leaves the client: the request hop.
    #[inline(always)]
    fn dispatch<Q: EventQueue<Ev>>(
        &mut self,
        op: u32,
        attempt: u32,
        gives_up_at: Instant,
        s: &mut Scheduler<Ev, Q>,
    ) {
        let Some(delay) = self.request_hop() else {
            if !PLAIN && self.clients.visibility().is_some() {
                // A receive whose message never reached a consumer: it is visible again
                // after the timeout all the same.
                self.received(op, attempt, s);
            }
            return;
        };
        // The request holds a reference on its operation until its answer is handled.
        self.clients.ops.get(op).refs += 1;
        if self.instant_net() {
            self.deliver(op, attempt, gives_up_at, s);
        } else {
            s.schedule_in(delay, Ev::arrive(op, attempt, gives_up_at));
        }
    }

    /// Whether the strategy has a connection pool (never, compiled for a plain run).
    #[inline(always)]
    fn has_pool(&self) -> bool {
        !PLAIN && self.connections.is_some()
    }

    #[inline]
    fn pool(&mut self) -> &mut Connections {
        self.connections.as_mut().expect("only called with a connection pool")
    }

    /// Attempt `attempt` of `op` asks its pool for a connection; a wait is cut at the pool's
    /// `max_wait` when that comes before the client gives up.
    #[inline(never)]
    fn check_out<Q: EventQueue<Ev>>(
        &mut self,
        op: u32,
        attempt: u32,
        gives_up_at: Instant,
        s: &mut Scheduler<Ev, Q>,
    ) {
        let c = self.connections.as_mut().expect("only called with a connection pool");
        let grant =
            c.check_out(connections::Attempt { op, number: attempt }, gives_up_at, &mut self.clients.ops);
        if !matches!(grant, Grant::Send { .. })
            && let Some(wait) = c.max_wait()
            && s.now() + wait < gives_up_at
        {
            self.clients.ops.get(op).refs += 1;
            s.schedule_in(wait, Ev::pool_wait(op, attempt));
        }
        self.grant(Some(grant), s);
    }

    /// Carries out what the pool decided for an attempt: send it, open its connection, or
    /// nothing (it waits in the queue).
    fn grant<Q: EventQueue<Ev>>(&mut self, grant: Option<Grant>, s: &mut Scheduler<Ev, Q>) {
        match grant {
            Some(Grant::Send { attempt, gives_up_at }) => {
                self.dispatch(attempt.op, attempt.number, gives_up_at, s)
            }
            Some(Grant::Open { attempt, after }) => {
                // The event holds a reference on the operation.
                self.clients.ops.get(attempt.op).refs += 1;
                s.schedule_in(after, Ev::connected(attempt.op, attempt.number));
            }
            Some(Grant::Queued) | None => {}
        }
    }

    /// The connection opening for attempt `attempt` of `op` is ready.
    #[inline(never)]
    fn connected<Q: EventQueue<Ev>>(&mut self, op: u32, attempt: u32, s: &mut Scheduler<Ev, Q>) {
        let c = self.connections.as_mut().expect("only a pool opens connections");
        let grant = c.connected(connections::Attempt { op, number: attempt }, &mut self.clients.ops);
        self.grant(grant, s);
    }

    /// The client gives up on attempt `attempt` of `op`: its pool learns it (a connection may
    /// be closed, and another granted). Returns whether the attempt was still waiting for a
    /// connection.
    #[inline(never)]
    fn pool_gave_up<Q: EventQueue<Ev>>(&mut self, op: u32, attempt: u32, s: &mut Scheduler<Ev, Q>) -> bool {
        let c = self.connections.as_mut().expect("only called with a connection pool");
        let (waited, grant) = c.gave_up(connections::Attempt { op, number: attempt }, &mut self.clients.ops);
        self.grant(grant, s);
        waited
    }

    /// The client stopped waiting for `op`'s attempt (its timeout, its deadline, or the pool's
    /// `max_wait` when `waited_for_connection`): the attempt failed.
    fn timed_out<Q: EventQueue<Ev>>(
        &mut self,
        op: u32,
        waited_for_connection: bool,
        s: &mut Scheduler<Ev, Q>,
    ) {
        let now = s.now();
        self.rec.timed_out(now);
        if waited_for_connection {
            self.rec.pool_timeout();
        }
        self.failed(op, Reply::of(Outcome::Timeout), s);
    }

    /// An answer reaches the client: its connection goes back to the pool first (the Go
    /// driver checks it in before the operation returns), then the client reads it.
    #[inline(always)]
    fn answer_arrives<Q: EventQueue<Ev>>(
        &mut self,
        op: u32,
        attempt: u32,
        reply: Reply,
        s: &mut Scheduler<Ev, Q>,
    ) {
        if self.has_pool() {
            let c = self.connections.as_mut().expect("checked");
            let grant = c.answered(connections::Attempt { op, number: attempt }, &mut self.clients.ops);
            self.grant(grant, s);
        }
        self.answer(op, attempt, reply, s)
    }

    /// Attempt `attempt` of `op` (or of a proxy node's ticket: see the module docs) reaches the
    /// server and passes its admission pipeline. The request is put together here, not by the
    /// caller: one built in the caller's frame and passed by reference is read back with
    /// wider loads than it was written with, which stalls (store-to-load forwarding; see
    /// benches/README.md).
    fn arrive<Q: EventQueue<Ev>>(
        &mut self,
        op: u32,
        attempt: u32,
        gives_up_at: Instant,
        s: &mut Scheduler<Ev, Q>,
    ) {
        let mut req = Request::new(op, attempt, gives_up_at);
        let now = s.now();
        self.rec.server_call::<PLAIN>(now);
        if self.has_graph() {
            return self.graph_arrive(op, attempt, gives_up_at, s);
        }
        if !PLAIN && self.keys != KeyMode::None {
            req.key_tag = self.key_tag(req.op);
        }
        if !PLAIN && let Some(class) = self.clients.class_of(op) {
            self.classified(op, class);
        }
        if self.has_replicas() {
            return self.arrive_at_replica(req, now, s);
        }
        let arrival = self.server.arrive::<PLAIN>(req, now);
        self.admitted(req, arrival, 0, s)
    }

    /// `req` reaches the service of several replicas: the balancer picks its replica, whose
    /// admission pipeline takes it.
    #[inline(never)]
    fn arrive_at_replica<Q: EventQueue<Ev>>(&mut self, req: Request, now: Instant, s: &mut Scheduler<Ev, Q>) {
        let op_id = self.clients.ops.id(req.op);
        let set = self.replicas.as_mut().expect("only called with replicas");
        let r = set.pick(req.op, op_id, now);
        let arrival = self.replica_mut(r).arrive::<false>(req, now);
        let set = self.replicas.as_mut().expect("checked");
        set.arrived(r, req.op, req.attempt, &arrival, now);
        if let Some(series) = self.rec.replica_series() {
            series.sent(r, now);
            if let Arrival::Answered(reply) | Arrival::Replayed(reply) = arrival {
                series.answered(r, now, reply.outcome == Outcome::Success);
            }
        }
        self.admitted(req, arrival, r, s)
    }

    /// What replica `r`'s admission pipeline did with `req`, recorded and followed up.
    #[inline(always)]
    fn admitted<Q: EventQueue<Ev>>(
        &mut self,
        req: Request,
        arrival: Arrival,
        r: u32,
        s: &mut Scheduler<Ev, Q>,
    ) {
        let now = s.now();
        if !PLAIN
            && !matches!(arrival, Arrival::Queued | Arrival::Delayed(_))
            && self.clients.visibility().is_some()
        {
            // A consumer took the message now (a queued one when a worker takes it).
            self.received(req.op, req.attempt, s);
        }
        match arrival {
            Arrival::Answered(o) => {
                self.rec.rejected(now);
                self.respond(req, o, s)
            }
            Arrival::Silenced => {
                self.rec.rejected(now);
                self.unanswered(req, s)
            }
            Arrival::Started { worker, service } => {
                self.accepted(now, false, r);
                self.rec.service_started(Span::ZERO);
                s.schedule_in(service, Ev::done(worker, r))
            }
            Arrival::Queued => self.accepted(now, true, r),
            Arrival::Parked => self.accepted(now, false, r),
            Arrival::Replayed(o) => self.replayed(req, o, s),
            Arrival::Delayed(wait) => s.schedule_in(wait, Ev::released(req.op, req.attempt, req.gives_up_at)),
            Arrival::Displaced { evicted, reply } => {
                // The arrival is queued; the less critical request it displaced leaves with the
                // full queue's answer (as a discipline's shed request, not counted again).
                self.accepted(now, true, r);
                self.respond(evicted, reply, s)
            }
        }
    }

    /// A request of `op`, of priority class `class`, reaches the server: the server learns
    /// its class, and the class counts a server call (out of line: only runs with classes).
    #[inline(never)]
    fn classified(&mut self, op: u32, class: crate::model::priorities::Class) {
        self.server.classify(op, class);
        self.clients.class_server_call(class);
    }

    /// The rate limiter held attempt `attempt` of `op` and now lets it go on: the stages
    /// after it take it (it was counted as a server call when it arrived; it is counted as
    /// accepted or rejected now). Out of line: only runs with a delaying rate limiter.
    #[inline(never)]
    fn released<Q: EventQueue<Ev>>(
        &mut self,
        op: u32,
        attempt: u32,
        gives_up_at: Instant,
        s: &mut Scheduler<Ev, Q>,
    ) {
        let mut req = Request::new(op, attempt, gives_up_at);
        if self.keys != KeyMode::None {
            req.key_tag = self.key_tag(req.op);
        }
        let arrival = self.server.resume(req, s.now());
        self.admitted(req, arrival, 0, s)
    }

    /// A consumer took attempt `attempt` of `op` (a queue workload): its visibility timer
    /// starts, once per attempt. When it runs out before the message is acknowledged, the
    /// message is visible again (a `Timeout`).
    #[cold]
    #[inline(never)]
    fn received<Q: EventQueue<Ev>>(&mut self, op: u32, attempt: u32, s: &mut Scheduler<Ev, Q>) {
        let Some(visibility) = self.clients.visibility() else { return };
        if self.clients.starts_visibility(op, attempt) {
            self.clients.ops.get(op).refs += 1;
            s.schedule_in(visibility, Ev::timeout(op, attempt));
        }
    }

    /// The dedup store answered `req` at once with `reply` (out of line, so that the event
    /// loop does not inline the client's answer handling a second time).
    #[inline(never)]
    fn replayed<Q: EventQueue<Ev>>(&mut self, req: Request, reply: Reply, s: &mut Scheduler<Ev, Q>) {
        self.accepted(s.now(), false, 0);
        self.respond(req, reply, s)
    }

    /// The idempotency key a request of operation `op` carries (only called when keys are
    /// made): its own, or a new one per re-drive or application pass that asked for one.
    #[cold]
    #[inline(never)]
    fn key_tag(&mut self, op: u32) -> KeyTag {
        let new_keys = self.clients.new_keys(op);
        KeyTag::new(self.keys, self.clients.ops.id(op), new_keys)
    }

    #[inline]
    fn accepted(&mut self, now: Instant, queued: bool, r: u32) {
        self.rec.accepted(now, queued);
        let (busy, queued) = self.levels(r, now);
        self.rec.levels(now, busy, queued);
    }

    /// A worker finished: the side effect happens (unless fencing refused it), the answer
    /// goes back (and to the requests parked on its idempotency key), and the next waiting
    /// request starts.
    fn done<Q: EventQueue<Ev>>(&mut self, worker: u32, r: u32, s: &mut Scheduler<Ev, Q>) {
        if self.has_hedging() && self.reaped(worker) {
            return;
        }
        if !PLAIN && self.restarts && self.replica_mut(r).reap_stopped(worker) {
            return;
        }
        let now = s.now();
        let (req, started, completion) = self.replica_mut(r).done::<PLAIN>(worker, now);
        self.replica_left(r, &req, Some(req.answer), now);
        if completion == Completion::Applied {
            let op = self.clients.ops.get(req.op);
            op.executions += 1;
            let (executions, ended) = (op.executions, op.ended);
            self.rec.side_effect(executions, now);
            if executions == 1 {
                if self.clients.dead_lettered::<PLAIN>(req.op) {
                    // Dead-lettered before its first effect, which came late or from its
                    // re-drive.
                    self.rec.dead_lettered_but_applied();
                } else if ended {
                    // An operation that ended in success had its effect already (a success
                    // answer comes from its execution, or from the store that recorded one),
                    // so this one ended in failure: the client gave up before its effect
                    // happened.
                    self.rec.failed_but_applied();
                }
            }
        }
        if req.gives_up_at < now {
            self.rec.wasted(now.since(started.max(req.gives_up_at)));
        }
        self.respond(req, req.answer, s);
        if !PLAIN && self.server.keeps_keys() {
            self.answer_parked(s);
        }
        if !PLAIN && self.server.adaptive().is_some() {
            self.server_limit_moved(s);
        }
        self.start_waiting(r, s);
    }

    /// At the start of a run: the adaptive limits' first values in the time series, and the
    /// server controller's first timers.
    #[cold]
    #[inline(never)]
    fn limits_start<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>) {
        if let Some(limit) = self.clients.limit_total() {
            self.rec.gauge(Gauge::ClientLimit, s.now(), limit as f64);
        }
        if self.server.adaptive().is_some() {
            self.server_limit_moved(s);
        }
    }

    /// The server's adaptive concurrency controller may have armed timers (scheduled here) and
    /// changed its limit (into the time series).
    #[inline(never)]
    fn server_limit_moved<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>) {
        let Some(a) = self.server.adaptive() else { return };
        for (which, at) in a.take_armed() {
            s.schedule_at(at, Ev::limit_timer(which));
        }
        if let Some(limit) = a.limit_changed() {
            self.rec.gauge(Gauge::ServerLimit, s.now(), limit as f64);
        }
    }

    /// Sends back the answers of the requests that were parked on the key whose work just
    /// completed (out of line: only runs with a dedup store).
    #[inline(never)]
    fn answer_parked<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>) {
        while let Some(parked) = self.server.pop_answered() {
            self.respond(parked, parked.answer, s);
        }
    }

    /// Starts replica `r`'s waiting requests while its workers are free.
    fn start_waiting<Q: EventQueue<Ev>>(&mut self, r: u32, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        while let Some(next) = self.replica_mut(r).next_waiting::<PLAIN>(now) {
            match next {
                Next::Started { worker, service, waited } => {
                    self.rec.service_started(waited);
                    s.schedule_in(service, Ev::done(worker, r));
                    if !PLAIN && self.clients.visibility().is_some() {
                        let req = *self.replica(r).serving(worker);
                        self.received(req.op, req.attempt, s);
                    }
                }
                Next::Dropped(req) => {
                    self.replica_left(r, &req, None, now);
                    self.unanswered(req, s)
                }
                Next::Shed(req) => {
                    let reply = Reply::of(Outcome::Status(workers::SHED_STATUS));
                    self.replica_left(r, &req, Some(reply), now);
                    self.respond(req, reply, s)
                }
            }
        }
        let (busy, queued) = self.levels(r, now);
        self.rec.levels(now, busy, queued);
    }

    /// The server answers `req`: to the last proxy node, or to the client.
    // Always inlined: with the pool's and the bulkhead's code in the answer path, the plain copy
    // kept it as a call (548 k calls on the 10k herd, +2.9 % instructions; benches/README.md).
    #[inline(always)]
    fn respond<Q: EventQueue<Ev>>(&mut self, req: Request, reply: Reply, s: &mut Scheduler<Ev, Q>) {
        if self.has_proxies() {
            return self.proxy_answered(req.attempt, reply, s);
        }
        self.respond_to_client(req, reply, s)
    }

    /// The server will never answer `req` (dropped or silenced): what held on to it lets go.
    #[inline]
    fn unanswered<Q: EventQueue<Ev>>(&mut self, req: Request, s: &mut Scheduler<Ev, Q>) {
        if self.has_proxies() {
            return self.proxy_release(proxy::unpack(req.attempt).0);
        }
        if self.has_pool() {
            let c = self.connections.as_mut().expect("checked");
            let grant =
                c.unanswered(connections::Attempt { op: req.op, number: req.attempt }, &mut self.clients.ops);
            self.grant(grant, s);
        }
        self.clients.ops.release(req.op)
    }

    /// Sends an answer back to the client over the response hop (it may be lost).
    // Always inlined, like `answer`: fewer instructions per event on the arrival path; `failed`
    // stays a call, as inlining it gained nothing (measurements: benches/README.md).
    #[inline(always)]
    fn respond_to_client<Q: EventQueue<Ev>>(&mut self, req: Request, reply: Reply, s: &mut Scheduler<Ev, Q>) {
        let Some(delay) = self.response_hop() else {
            return self.clients.ops.release(req.op);
        };
        if self.instant_net() {
            self.answer_arrives(req.op, req.attempt, reply, s);
            self.clients.ops.release(req.op);
        } else {
            s.schedule_in(delay, Ev::answer(req.op, req.attempt, reply));
        }
    }

    /// An answer reaches the client; a late answer (the client gave up on that attempt) is
    /// ignored.
    #[inline(always)]
    fn answer<Q: EventQueue<Ev>>(&mut self, op: u32, attempt: u32, reply: Reply, s: &mut Scheduler<Ev, Q>) {
        if self.has_hedging() {
            return self.copy_answered(op, attempt, reply, s);
        }
        if !self.clients.is_waiting(op, attempt) {
            return;
        }
        if matches!(reply.outcome, Outcome::Success) {
            let next = self.clients.succeed::<PLAIN>(op, s.now(), &mut self.rec);
            self.op_ended(op, next, s);
        } else if PLAIN || self.clients.visibility().is_none() {
            self.failed(op, reply, s);
        }
        // A queue workload's consumer that fails does not delete the message: it is visible
        // again when its visibility timeout runs out.
    }

    /// The attempt the client was waiting for failed: retry after the backoff, or end.
    fn failed<Q: EventQueue<Ev>>(&mut self, op: u32, reply: Reply, s: &mut Scheduler<Ev, Q>) {
        let retry_after = reply.retry_after.decode();
        match self.clients.fail::<PLAIN>(op, reply.outcome, retry_after, s.now(), &mut self.rec) {
            AfterFailure::Retry(delay) => {
                if !PLAIN && self.clients.visibility().is_some() {
                    self.rec.redelivered();
                }
                s.schedule_in(delay, Ev::send(op))
            }
            AfterFailure::Ended(next) => self.op_ended(op, next, s),
            AfterFailure::Redrive { at, next } => {
                // No bulkhead here: validation refuses one with a dead-letter queue.
                s.schedule_at(at, Ev::redrive(op));
                self.next_op(next, s)
            }
        }
    }

    /// The dead-lettered operation `op` is re-driven: it sends its first attempt again, and
    /// the slot its re-drive held is let go.
    #[cold]
    #[inline(never)]
    fn redrive<Q: EventQueue<Ev>>(&mut self, op: u32, s: &mut Scheduler<Ev, Q>) {
        self.clients.redrive(op, s.now(), &mut self.rec);
        self.send(op, s);
        self.clients.ops.release(op);
    }

    /// A request from the client went over the network: to the first proxy node, or to
    /// the server.
    #[inline]
    fn deliver<Q: EventQueue<Ev>>(
        &mut self,
        op: u32,
        attempt: u32,
        gives_up_at: Instant,
        s: &mut Scheduler<Ev, Q>,
    ) {
        if self.has_proxies() {
            return self.proxy_receive(op, Caller::Client { attempt }, 0, s);
        }
        if self.has_hedging() && self.cancelled_on_the_way(op, attempt) {
            return;
        }
        self.arrive(op, attempt, gives_up_at, s)
    }

    /// A started operation goes through its bulkhead, if any, before its first attempt.
    #[inline(always)]
    fn begin<Q: EventQueue<Ev>>(&mut self, op: u32, s: &mut Scheduler<Ev, Q>) {
        if self.has_bulkhead() {
            return self.enter_bulkhead(op, s);
        }
        self.send(op, s)
    }

    /// Whether the strategy has a bulkhead (never, compiled for a plain run).
    #[inline(always)]
    fn has_bulkhead(&self) -> bool {
        !PLAIN && self.bulkheads.is_some()
    }

    /// `op` asks its bulkhead for a permit: it sends its first attempt, waits up to
    /// `max_wait`, or fails at once. Its deadline needs no timer of its own while it waits:
    /// every operation it waits for started no later than it did and ends by its own
    /// deadline, so a permit comes by this one's (at the latest at that instant, when they
    /// started together; its attempt then times out at once).
    #[inline(never)]
    fn enter_bulkhead<Q: EventQueue<Ev>>(&mut self, op: u32, s: &mut Scheduler<Ev, Q>) {
        let b = self.bulkheads.as_mut().expect("only called with a bulkhead");
        match b.enter(op, &mut self.clients.ops) {
            Entry::Admitted => self.send(op, s),
            Entry::Queued => {
                let wait = b.max_wait();
                // The event holds a reference on the operation.
                self.clients.ops.get(op).refs += 1;
                s.schedule_in(wait, Ev::bulkhead_wait(op));
            }
            Entry::Full => {
                let next =
                    self.clients.fail_locally::<PLAIN>(op, FailReason::Bulkhead, s.now(), &mut self.rec);
                self.next_op(next, s)
            }
        }
    }

    /// `op` ended (it held its bulkhead's permit, if there is one): the permit goes to the
    /// oldest operation waiting, whose first attempt is sent as the next event at this
    /// instant; then its client may start its next operation.
    #[inline(always)]
    fn op_ended<Q: EventQueue<Ev>>(&mut self, op: u32, next: Option<NextOp>, s: &mut Scheduler<Ev, Q>) {
        if self.has_bulkhead() {
            let b = self.bulkheads.as_mut().expect("checked");
            if let Some(waiter) = b.leave(op, &mut self.clients.ops) {
                s.schedule_in(Span::ZERO, Ev::send(waiter));
            }
        }
        self.next_op(next, s)
    }

    #[inline]
    fn next_op<Q: EventQueue<Ev>>(&mut self, next: Option<NextOp>, s: &mut Scheduler<Ev, Q>) {
        if let Some(NextOp { client, mut at }) = next {
            if !PLAIN && let Some(serial) = &mut self.serial {
                match serial.next(client, at, &mut self.arrivals_rng) {
                    Some(start) => at = start,
                    None => return,
                }
            }
            s.schedule_at(at, Ev::client_start(client));
        }
    }
}
