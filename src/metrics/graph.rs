//! What a run of a call graph (`[[services]]`, DESIGN §3.7) counts per service and per edge,
//! and the columns they become: `METRIC@SERVICE` and `METRIC@FROM:TO` in runs.csv and
//! summary.csv, only in an experiment with `[[services]]` (so that other experiments keep
//! their columns).

use super::Value;
use crate::engine::NS_PER_S;

/// One service's counts in one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServiceCounts {
    /// Requests that arrived at the service (every attempt of every caller).
    pub calls: u64,
    /// Of them, those answered with success.
    pub succeeded: u64,
    /// Service time (a worker held, its downstream calls included) spent on requests whose
    /// result could no longer reach the user: a caller on the way up had given up on it.
    pub wasted_ns: u128,
    /// Requests its replicas dropped by going down (a `restart` fault, a deploy, the
    /// autoscaler), each answered with a connection reset (not a column: the tests count it).
    pub dropped: u64,
}

/// One edge's counts in one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EdgeCounts {
    /// Attempts sent along the edge (requests into the callee from this caller).
    pub calls: u64,
    /// Calls along the edge that ended (after their retries): succeeded or failed.
    pub ended: u64,
    pub succeeded: u64,
    /// Wasted service time at the callee of requests sent along this edge.
    pub wasted_ns: u128,
}

/// The counts of every service and edge, in the experiment's order (services in file order;
/// edges by caller in file order, then in `calls` order).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GraphCounts {
    pub services: Vec<ServiceCounts>,
    pub edges: Vec<EdgeCounts>,
}

/// A per-service or per-edge metric: its column is `<name>@<service>` or `<name>@<from>:<to>`.
pub struct GraphMetric {
    pub name: &'static str,
    pub unit: &'static str,
    /// What it measures, for docs/outputs.md (Markdown).
    pub meaning: &'static str,
}

/// The per-service metrics, in column order.
pub const SERVICE_METRICS: &[GraphMetric] = &[
    GraphMetric {
        name: "service_calls",
        unit: "count",
        meaning: "requests that arrived at the service (every attempt of every caller)",
    },
    GraphMetric {
        name: "service_amplification",
        unit: "calls per operation",
        meaning: "`service_calls` per operation started (user request): 64 at the bottom of a 3-deep chain where every hop makes 4 attempts against a dead bottom",
    },
    GraphMetric {
        name: "service_success_rate",
        unit: "fraction",
        meaning: "of the requests that arrived at the service, the fraction answered with success; empty when none arrived",
    },
    GraphMetric {
        name: "service_wasted_work_s",
        unit: "s",
        meaning: "service time (a worker held, waiting for downstream calls included) spent on requests whose result could no longer reach the user (a caller on the way up had given up on it), in seconds",
    },
];

/// The per-edge metrics, in column order.
pub const EDGE_METRICS: &[GraphMetric] = &[
    GraphMetric { name: "edge_calls", unit: "count", meaning: "attempts sent along the edge" },
    GraphMetric {
        name: "edge_amplification",
        unit: "calls per operation",
        meaning: "`edge_calls` per operation started (user request)",
    },
    GraphMetric {
        name: "edge_success_rate",
        unit: "fraction",
        meaning: "of the calls along the edge that ended (after their retries), the fraction that succeeded; calls stopped because their caller gave up or failed are not counted; empty when none ended",
    },
    GraphMetric {
        name: "edge_wasted_work_s",
        unit: "s",
        meaning: "`service_wasted_work_s` of the callee, of the requests sent along this edge",
    },
];

/// The columns of a graph with these service names and edges (caller, callee indices).
pub fn columns(services: &[String], edges: &[(usize, usize)]) -> Vec<String> {
    let mut names = Vec::new();
    for s in services {
        names.extend(SERVICE_METRICS.iter().map(|m| format!("{}@{s}", m.name)));
    }
    for &(from, to) in edges {
        names.extend(EDGE_METRICS.iter().map(|m| format!("{}@{}:{}", m.name, services[from], services[to])));
    }
    names
}

fn ratio(n: u64, d: u64) -> Value {
    if d == 0 { Value::Missing } else { Value::Real(n as f64 / d as f64) }
}

fn seconds(ns: u128) -> Value {
    Value::Real(ns as f64 / NS_PER_S)
}

/// A run's values of [`columns`], in order; `ops`: the operations the run started.
pub fn values(g: &GraphCounts, ops: u64) -> impl Iterator<Item = Value> + '_ {
    let services = g.services.iter().flat_map(move |s| {
        [Value::Count(s.calls), ratio(s.calls, ops), ratio(s.succeeded, s.calls), seconds(s.wasted_ns)]
    });
    let edges = g.edges.iter().flat_map(move |e| {
        [Value::Count(e.calls), ratio(e.calls, ops), ratio(e.succeeded, e.ended), seconds(e.wasted_ns)]
    });
    services.chain(edges)
}

/// Whether `base` (a column's name before `@`) is a graph metric.
pub fn is_graph_metric(base: &str) -> bool {
    SERVICE_METRICS.iter().chain(EDGE_METRICS).any(|m| m.name == base)
}
