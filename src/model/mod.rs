//! The simulated system: workloads, network, servers and faults, wired to the engine's events.
//! [`simulate`] runs one replication of one strategy at one sweep point.

pub mod build;
pub mod clients;
pub mod dist;
pub mod gateway;
pub mod network;
pub mod occ_model;
pub mod ops;
pub mod queue_model;
pub mod server;
pub mod workload;
pub mod workspace;

use crate::engine::rng::{Stream, stream};
use crate::engine::{CalendarQueue, EventQueue, HeapQueue, RadixQueue};
use crate::experiment::{ExperimentSpec, ServerSpec, Strategy};
use crate::metrics::RunMetrics;
use crate::metrics::series::TimeSeries;
use clients::Clients;
use network::Network;
use workload::Workload;
use workspace::Workspace;

/// How a run is executed: which event queue implementation it uses, and whether a plain run
/// takes the queue model's copy compiled for plain runs ([`queue_model`]'s docs). Results are
/// identical for every choice (`tests/queue_equivalence.rs`).
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

/// One replication: `strategy` at the point `spec`, with the run's master seed.
pub fn simulate(spec: &ExperimentSpec, strategy: &Strategy, run_seed: u64) -> RunMetrics {
    simulate_with::<DefaultQueue>(spec, strategy, run_seed)
}

/// Whether a run of `strategy` at `spec` is plain, and takes the queue model's copy compiled
/// for plain runs ([`queue_model`]'s docs).
pub fn is_plain_run(spec: &ExperimentSpec, strategy: &Strategy) -> bool {
    let ServerSpec::Queue(q) = &spec.server else { return false };
    let workload = Workload::from_spec(&spec.workload);
    let clients = clients(&workload, strategy, 0, Default::default());
    let net = Network::new(&spec.network, stream(0, Stream::Network));
    let server = server::Server::new(q, 0);
    queue_model::is_plain(&clients, &net, &server, !strategy.policy.layers.is_empty())
}

/// The clients of a run of `strategy`, with `ops` (a table to reuse, or a new one).
fn clients(workload: &Workload, strategy: &Strategy, run_seed: u64, ops: ops::OpTable) -> Clients {
    Clients::new(
        workload,
        build::retry_policy(strategy),
        build::gate(strategy, workload.clients(), run_seed),
        run_seed,
        strategy.policy.idempotency != crate::experiment::IdempotencyMode::None,
        ops,
    )
}

/// [`simulate`] with a chosen event queue (for the equivalence test and benchmarks). The run
/// reuses the buffers the thread's previous run left ([`workspace`]).
pub fn simulate_with<C: QueueChoice>(
    spec: &ExperimentSpec,
    strategy: &Strategy,
    run_seed: u64,
) -> RunMetrics {
    let mut ws = Workspace::<C>::take();
    let workload = Workload::from_spec(&spec.workload);
    let net = Network::new(&spec.network, stream(run_seed, Stream::Network));
    let clients = clients(&workload, strategy, run_seed, ws.ops());
    let horizon = crate::engine::Instant::ZERO + spec.horizon.span();
    let series = TimeSeries::new(spec.output.bucket.span(), horizon);
    let latency = ws.latency();
    let (metrics, left) = match &spec.server {
        ServerSpec::Queue(q) => {
            let keys = build::idempotency_keys(strategy);
            let layers = &strategy.policy.layers;
            let gateways = (!layers.is_empty())
                .then(|| gateway::Gateways::new(layers.iter().map(build::layer_policy).collect(), run_seed));
            let inputs = queue_model::RunInputs {
                workload: &workload,
                net,
                clients,
                keys,
                gateways,
                run_seed,
                horizon,
                series,
                queue: ws.queue(),
                latency,
            };
            let (metrics, queue, left) = queue_model::run(C::PLAIN_COPY, q, inputs);
            ws.keep_queue(queue);
            (metrics, left)
        }
        ServerSpec::Occ {} => {
            let (metrics, queue, left) =
                occ_model::run(&workload, net, clients, run_seed, horizon, series, ws.occ_queue(), latency);
            ws.keep_occ_queue(queue);
            (metrics, left)
        }
    };
    ws.keep(left);
    ws.give_back();
    metrics
}
