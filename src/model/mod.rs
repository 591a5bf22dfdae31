//! The simulated system: workloads, network, servers and faults, wired to the engine's events.
//! [`simulate_with`] runs one replication from its [`RunParams`], the model's own parameter
//! types in engine units; `crate::assembly` fills them from an experiment file, so the model
//! knows no file format.

pub mod autoscaler;
pub mod bulkheads;
pub mod clients;
pub mod connections;
pub mod dist;
pub mod graph;
pub mod hedges;
pub mod network;
pub mod occ_model;
pub mod ops;
pub mod priorities;
pub mod queue_model;
pub mod replicas;
pub mod server;
pub mod workload;
pub mod workspace;

use crate::engine::Span;
use crate::engine::rng::{Stream, stream};
use crate::engine::{CalendarQueue, EventQueue, HeapQueue, RadixQueue};
use crate::metrics::series::TimeSeries;
use crate::metrics::{RunMetrics, Window};
use crate::policy::bulkhead::BulkheadParams;
use crate::policy::gate::{Gate, GateParams};
use crate::policy::hedge::HedgeParams;
use crate::policy::pool::PoolParams;
use crate::policy::{AppRetry, DeadLetter, RetryPolicy};
use clients::{Clients, Delivery};
use network::{Network, NetworkParams};
use server::ServerParams;
use server::idempotency::KeyMode;
use workload::Workload;
use workspace::Workspace;

/// How a run is executed: which event queue implementation it uses, and whether a plain run
/// takes the queue model's copy compiled for plain runs ([`queue_model`]'s docs). Results are
/// identical for every choice (`tests/it/queue_equivalence.rs`).
pub trait QueueChoice: 'static {
    type Occ: EventQueue<occ_model::Ev> + 'static;
    type Queue: EventQueue<queue_model::Ev> + 'static;
    /// `false` makes every run take the copy that tests each feature.
    const PLAIN_COPY: bool = true;
}

/// The reference binary heap.
pub struct Heap;
impl QueueChoice for Heap {
    type Occ = HeapQueue<occ_model::Ev>;
    type Queue = HeapQueue<queue_model::Ev>;
}

/// The radix heap (a monotone priority queue): a measured alternative.
pub struct Radix;
impl QueueChoice for Radix {
    type Occ = RadixQueue<occ_model::Ev>;
    type Queue = RadixQueue<queue_model::Ev>;
}

/// The calendar queue: the fastest by measurement (benches/README.md).
pub struct Calendar;
impl QueueChoice for Calendar {
    type Occ = CalendarQueue<occ_model::Ev>;
    type Queue = CalendarQueue<queue_model::Ev>;
}

/// The calendar queue, with plain runs on the queue model's checked copy: only to check that
/// the two copies agree.
pub struct CalendarChecked;
impl QueueChoice for CalendarChecked {
    type Occ = CalendarQueue<occ_model::Ev>;
    type Queue = CalendarQueue<queue_model::Ev>;
    const PLAIN_COPY: bool = false;
}

/// The queue used by default.
pub type DefaultQueue = Calendar;

/// The server a run simulates.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant, reason = "one per run, moved once into the run")]
pub enum ServerKind {
    Queue(ServerParams),
    /// The optimistic-concurrency store of [`occ_model`].
    Occ,
}

/// Everything one run of one strategy at one sweep point is built from.
#[derive(Clone, Debug)]
pub struct RunParams {
    pub workload: Workload,
    pub network: NetworkParams,
    pub server: ServerKind,
    /// The run stops at this simulated time.
    pub horizon: Span,
    /// The width of a time-series bucket.
    pub bucket: Span,
    pub retry: RetryPolicy,
    pub gate: GateParams,
    /// The idempotency keys the attempts carry.
    pub keys: KeyMode,
    /// The clients' dead-letter queue, if they have one.
    pub dead_letter: Option<DeadLetter>,
    /// The application's retry loop above the clients' (`app_retry`), if any.
    pub app_retry: Option<AppRetry>,
    /// A queue workload's visibility timeout ([`Delivery::visibility`]).
    pub visibility: Option<Span>,
    /// The strategy's gateway layers: a chain of the call graph's proxy nodes between the
    /// clients and the server, node 0 nearest the clients (empty: none).
    pub proxies: Vec<graph::proxy::ProxyParams>,
    /// The clients' connection pool, if any.
    pub pool: Option<PoolParams>,
    /// The clients' bulkhead, if any.
    pub bulkhead: Option<BulkheadParams>,
    /// The clients' hedging policy, if any (DESIGN §4.10).
    pub hedge: Option<HedgeParams>,
    /// The windows measured on their own (`[output] windows`), in file order.
    pub windows: Vec<Window>,
    /// The server's replicas after the first and their balancer (`[server] replicas` > 1).
    pub replicas: Option<replicas::ReplicaParams>,
    /// The operations' priority classes (`[workload] priorities`), if used.
    pub priorities: Option<priorities::PriorityParams>,
    /// The call graph behind the entry service (`[[services]]`), if any: it takes the
    /// server's place.
    pub graph: Option<graph::GraphParams>,
}

/// Whether a run with `params` is plain, and takes the queue model's copy compiled for plain
/// runs ([`queue_model`]'s docs).
pub fn is_plain_run(params: RunParams) -> bool {
    let clients = clients(&params, 0, Default::default());
    let ServerKind::Queue(q) = params.server else { return false };
    if params.replicas.is_some() || params.graph.is_some() {
        return false;
    }
    let net = Network::new(&params.network, stream(0, Stream::Network));
    let server = server::Server::new(q, 0);
    let layers = !params.proxies.is_empty();
    let waits = params.pool.is_some() || params.bulkhead.is_some() || params.hedge.is_some();
    queue_model::is_plain(&params.workload, &clients, &net, &server, layers, waits, &params.windows)
}

/// The clients of a run, with `ops` (a table to reuse, or a new one); the controls' draws come
/// from the run's controls stream.
fn clients(params: &RunParams, run_seed: u64, ops: ops::OpTable) -> Clients {
    let gate = if params.gate == GateParams::default() {
        Gate::none()
    } else {
        Gate::new(&params.gate, params.workload.clients(), stream(run_seed, Stream::Controls))
    };
    // Several replicas need each operation's unique id (ring hash, `retry_other_replica`).
    let keys = params.keys != KeyMode::None || params.replicas.is_some();
    let delivery = Delivery {
        dead_letter: params.dead_letter,
        visibility: params.visibility,
        app_retry: params.app_retry,
    };
    Clients::new(&params.workload, params.retry, gate, run_seed, keys, delivery, ops)
        .with_priorities(params.priorities, run_seed)
}

/// One replication with the run's master seed and a chosen event queue. The run reuses the
/// buffers the thread's previous run left ([`workspace`]).
pub fn simulate_with<C: QueueChoice>(params: RunParams, run_seed: u64) -> RunMetrics {
    let mut ws = Workspace::<C>::take();
    let clients = clients(&params, run_seed, ws.ops());
    let RunParams {
        workload,
        network,
        server,
        horizon,
        bucket,
        keys,
        proxies,
        pool,
        bulkhead,
        hedge,
        windows,
        replicas,
        graph,
        ..
    } = params;
    let net = Network::new(&network, stream(run_seed, Stream::Network));
    let horizon = crate::engine::Instant::ZERO + horizon;
    let series = TimeSeries::new(bucket, horizon);
    let latency = ws.latency();
    let (metrics, left) = match server {
        ServerKind::Queue(q) => {
            let proxies = (!proxies.is_empty()).then(|| graph::proxy::Proxies::new(proxies, run_seed));
            let inputs = queue_model::RunInputs {
                workload: &workload,
                net,
                clients,
                keys,
                proxies,
                connections: pool.map(|p| connections::Connections::new(p, workload.clients())),
                bulkheads: bulkhead.map(|b| bulkheads::Bulkheads::new(b, workload.clients())),
                hedges: hedge.map(|h| hedges::Hedges::new(h, workload.clients())),
                run_seed,
                horizon,
                series,
                queue: ws.queue(),
                latency,
                windows: &windows,
                replicas,
                graph,
            };
            let (metrics, queue, left) = queue_model::run(C::PLAIN_COPY, q, inputs);
            ws.keep_queue(queue);
            (metrics, left)
        }
        ServerKind::Occ => {
            let inputs = occ_model::RunInputs {
                workload: &workload,
                net,
                clients,
                run_seed,
                horizon,
                series,
                queue: ws.occ_queue(),
                latency,
                windows: &windows,
            };
            let (metrics, queue, left) = occ_model::run(inputs);
            ws.keep_occ_queue(queue);
            (metrics, left)
        }
    };
    ws.keep(left);
    ws.give_back();
    metrics
}
