//! A service of several replicas behind a load balancer (DESIGN §3.3): `[server] replicas`,
//! `balancer`, `outlier` and, from the strategy, `retry_other_replica`.
//!
//! Each replica is a whole [`Server`] (its admission stages, workers and queue), with its own
//! faults and its own service-time and fault streams; replica 0 is the model's own `server`
//! (so that one replica is exactly the model without this file), the others live here. The
//! balancer sits in front of the replicas, one for every client (an Envoy in front of the
//! service): it sees, per replica, the requests sent to it and not yet answered, and each
//! answer, which feeds the outlier detector and peak EWMA's latency estimate.
//!
//! A service is this set and its balancer: the call graph (issue 25, item 4) builds one per
//! service from the same parts.

use super::server::{Arrival, Reply, Server, ServerParams};
use crate::engine::rng::{Stream, derive, mix64, stream};
use crate::engine::{Instant, Span};
use crate::metrics::recovery::FaultSpan;
use crate::policy::Outcome;
use crate::policy::balancer::{Balancer, BalancerParams, Hosts};
use crate::policy::outlier::{Detector, OutlierParams};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::HashMap;

/// The replicas after the first, and how requests are spread over them.
#[derive(Clone, Debug)]
pub struct ReplicaParams {
    /// Replicas 1.. (replica 0 is `RunParams::server`), each with the faults that name it.
    pub others: Vec<ServerParams>,
    pub balancer: BalancerParams,
    pub outlier: Option<OutlierParams>,
    /// Envoy's `healthy_panic_threshold`, in percent: with fewer healthy replicas than that,
    /// the balancer ignores health.
    pub panic_threshold_percent: f64,
    /// `retry_other_replica`: Envoy's `previous_hosts` predicate with this many host
    /// re-selections (`host_selection_retry_max_attempts`); `None`: a fresh pick per attempt.
    pub reselects: Option<u32>,
}

impl ReplicaParams {
    /// Replicas in all, the first included.
    pub fn count(&self) -> u32 {
        self.others.len() as u32 + 1
    }
}

/// The replicas an operation has tried, by its slot.
#[derive(Clone, Debug, Default)]
struct Tried {
    op_id: u64,
    replicas: Vec<u32>,
}

/// The replicas after the first, the balancer and what it knows.
pub struct Replicas {
    pub others: Vec<Server>,
    balancer: Balancer,
    detector: Option<Detector>,
    /// Per replica: requests it holds (sent, not answered).
    active: Vec<u32>,
    /// Per replica: whether the balancer may pick it, and those it may pick.
    usable: Vec<bool>,
    candidates: Vec<u32>,
    panic_threshold_percent: f64,
    reselects: Option<u32>,
    tried: Vec<Tried>,
    /// When each request the balancer sent arrived, by (operation slot, attempt), for peak EWMA.
    sent_at: HashMap<(u32, u32), Instant>,
    /// Per replica: (in service, waiting); and their sums.
    levels: Vec<(u32, usize)>,
    total: (u32, usize),
    rng: Xoshiro256PlusPlus,
}

impl Replicas {
    /// Replica `r >= 1` draws from the streams of the seed `derive(run_seed, r)` (replica 0
    /// from the run's own, as a single server does); the balancer and the detector draw from
    /// the run's balancer stream.
    pub fn new(params: ReplicaParams, run_seed: u64) -> Replicas {
        let n = params.count();
        let others = params
            .others
            .into_iter()
            .enumerate()
            .map(|(i, p)| Server::new(p, derive(run_seed, mix64(i as u64 + 1))))
            .collect();
        Replicas {
            others,
            balancer: Balancer::new(params.balancer, n),
            detector: params.outlier.map(|o| Detector::new(o, n)),
            active: vec![0; n as usize],
            usable: vec![true; n as usize],
            candidates: (0..n).collect(),
            panic_threshold_percent: params.panic_threshold_percent,
            reselects: params.reselects,
            tried: Vec::new(),
            sent_at: HashMap::new(),
            levels: vec![(0, 0); n as usize],
            total: (0, 0),
            rng: stream(run_seed, Stream::Balancer),
        }
    }

    /// Replicas in all.
    pub fn count(&self) -> u32 {
        self.active.len() as u32
    }

    /// The outlier detector's interval, if there is one.
    pub fn outlier_interval(&self) -> Option<Span> {
        self.detector.as_ref().map(|d| d.interval())
    }

    /// The replica that attempt `attempt` of the operation in slot `op` (unique id `op_id`)
    /// goes to.
    pub fn pick(&mut self, op: u32, op_id: u64, now: Instant) -> u32 {
        let hosts = Hosts { candidates: &self.candidates, usable: &self.usable, active: &self.active };
        let key = mix64(op_id);
        let Some(reselects) = self.reselects else {
            return self.balancer.choose(&hosts, key, &[], 0, now, &mut self.rng);
        };
        let slot = op as usize;
        if self.tried.len() <= slot {
            self.tried.resize_with(slot + 1, Tried::default);
        }
        let tried = &mut self.tried[slot];
        if tried.op_id != op_id {
            tried.op_id = op_id;
            tried.replicas.clear();
        }
        let r = self.balancer.choose(&hosts, key, &tried.replicas, reselects, now, &mut self.rng);
        if !tried.replicas.contains(&r) {
            tried.replicas.push(r);
        }
        r
    }

    /// Replica `r` took in or turned away a request of (`op`, `attempt`) at `now`.
    pub fn arrived(&mut self, r: u32, op: u32, attempt: u32, arrival: &Arrival, now: Instant) {
        match *arrival {
            Arrival::Answered(reply) | Arrival::Replayed(reply) => self.answered(r, reply, now),
            // Envoy learns of a request never answered at its per-try timeout, as a 504.
            Arrival::Silenced => self.answered(r, Reply::of(Outcome::Timeout), now),
            // Displaced: the arrival is queued (priority classes are refused with replicas, so
            // the evicted request never belongs to a replica here).
            Arrival::Started { .. }
            | Arrival::Queued
            | Arrival::Parked
            | Arrival::Delayed(_)
            | Arrival::Displaced { .. } => {
                self.active[r as usize] += 1;
                if self.balancer.wants_rtt() {
                    self.sent_at.insert((op, attempt), now);
                }
            }
        }
    }

    /// Replica `r` let go of a request it held: answered with `reply`, or dropped unanswered
    /// (`None`: its client had given up; counted as a timeout).
    pub fn left(&mut self, r: u32, op: u32, attempt: u32, reply: Option<Reply>, now: Instant) {
        self.active[r as usize] -= 1;
        if self.balancer.wants_rtt()
            && let Some(at) = self.sent_at.remove(&(op, attempt))
            && reply.is_some()
        {
            self.balancer.observe(r, now.since(at), now);
        }
        self.answered(r, reply.unwrap_or(Reply::of(Outcome::Timeout)), now);
    }

    /// The detector hears an answer of replica `r`.
    fn answered(&mut self, r: u32, reply: Reply, now: Instant) {
        let Some(d) = &mut self.detector else { return };
        let error = match reply.outcome {
            Outcome::Success => false,
            Outcome::Status(s) => (500..600).contains(&s),
            Outcome::Timeout | Outcome::ConnectionError => true,
        };
        if d.answer(r, error, now, &mut self.rng) {
            self.health_changed();
        }
    }

    /// The detector's interval timer fires.
    pub fn outlier_tick(&mut self, now: Instant) {
        if let Some(d) = &mut self.detector
            && d.tick(now, &mut self.rng)
        {
            self.health_changed();
        }
    }

    /// Recomputes the replicas the balancer may pick: the healthy ones, or every replica
    /// when fewer than the panic threshold are healthy (Envoy's panic mode).
    fn health_changed(&mut self) {
        let d = self.detector.as_ref().expect("only the detector changes health");
        let n = self.active.len();
        let healthy = n - d.ejected_count() as usize;
        let panic = 100.0 * (healthy as f64) / (n as f64) < self.panic_threshold_percent;
        self.candidates.clear();
        for r in 0..n as u32 {
            let usable = panic || !d.is_ejected(r);
            self.usable[r as usize] = usable;
            if usable {
                self.candidates.push(r);
            }
        }
    }

    /// Replica `r`'s levels changed to `levels`; returns the levels of all replicas together.
    pub fn levels(&mut self, r: u32, levels: (u32, usize)) -> (u32, usize) {
        let old = std::mem::replace(&mut self.levels[r as usize], levels);
        self.total = (self.total.0 - old.0 + levels.0, self.total.1 - old.1 + levels.1);
        self.total
    }

    /// The span of all replicas' faults, with replica 0's (`first`).
    pub fn fault_span(&self, first: Option<FaultSpan>, horizon: Instant) -> Option<FaultSpan> {
        self.others.iter().map(|s| s.fault_span(horizon)).fold(first, |a, b| match (a, b) {
            (Some(a), Some(b)) => Some(FaultSpan {
                first_start: a.first_start.min(b.first_start),
                last_end: a.last_end.max(b.last_end),
            }),
            (a, b) => a.or(b),
        })
    }
}
