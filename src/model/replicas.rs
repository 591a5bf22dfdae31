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

use super::autoscaler::{AutoscaleParams, Autoscaler};
use super::server::{Arrival, Reply, Server, ServerParams};
use crate::engine::rng::{Stream, derive, mix64, stream};
use crate::engine::{Instant, Span};
use crate::metrics::recovery::FaultSpan;
use crate::policy::Outcome;
use crate::policy::balancer::slow_start::SlowStartParams;
use crate::policy::balancer::{Balancer, BalancerParams, Hosts};
use crate::policy::deploy::SlotState;
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
    /// Envoy's slow start for a replica that (re)joins (round robin and least request).
    pub slow_start: Option<SlowStartParams>,
    /// Rolling deploys: per replica (the surge slots included), its changes of state in time
    /// order, and the span of each deploy (for the recovery analysis).
    pub deploys: Vec<Vec<(Instant, SlotState)>>,
    pub deploy_spans: Vec<FaultSpan>,
    /// Replicas `replicas ..` are surge slots (or the autoscaler's), vacant until a deploy
    /// (or the autoscaler) fills them.
    pub replicas: u32,
    /// `[server] autoscale`: the autoscaler moving replicas in and out of the slots.
    pub autoscale: Option<AutoscaleParams>,
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
    /// Per replica: its state as the deploys set it, the `restart` faults under way, and the
    /// state that results ([`Replicas::state`]).
    deployed: Vec<SlotState>,
    restarting: Vec<u32>,
    state: Vec<SlotState>,
    /// Slow start: when each replica last came up (`None`: before the run, out of its window),
    /// and the weights handed to the balancer.
    slow_start: Option<SlowStartParams>,
    joined: Vec<Option<Instant>>,
    weights: Vec<f64>,
    deploy_spans: Vec<FaultSpan>,
    deploys: Vec<Vec<(Instant, SlotState)>>,
    autoscaler: Option<Box<Autoscaler>>,
}

/// A change of a replica's state, scheduled by the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// A `restart` fault starts or ends.
    RestartBegins,
    RestartEnds,
    /// A deploy (or the autoscaler) puts the replica in this state.
    Deployed(SlotState),
    /// The autoscaler removes the replica: it leaves the balancer (vacant) but keeps serving
    /// what it holds.
    Drain,
}

/// What a change did to a replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moved {
    /// It went down from up: it drops what it holds.
    Down,
    /// It came up.
    Up,
    /// Nothing the model must act on.
    Same,
}

/// A single server's `restart` faults under way (without replicas there is no set to keep
/// them): overlapping restarts keep it down until the last ends.
#[derive(Clone, Copy, Debug, Default)]
pub struct Restarts(u32);

impl Restarts {
    /// A `restart` fault begins or ends: what that does to the server.
    pub fn change(&mut self, change: Change) -> Moved {
        let was = self.0;
        self.0 = if change == Change::RestartBegins { was + 1 } else { was - 1 };
        match (was, self.0) {
            (0, _) => Moved::Down,
            (_, 0) => Moved::Up,
            _ => Moved::Same,
        }
    }
}

impl Replicas {
    /// Replica `r >= 1` draws from the streams of the seed `derive(run_seed, r)` (replica 0
    /// from the run's own, as a single server does); the balancer and the detector draw from
    /// the run's balancer stream.
    pub fn new(params: ReplicaParams, run_seed: u64) -> Replicas {
        let n = params.count();
        let deployed: Vec<SlotState> =
            (0..n).map(|r| if r < params.replicas { SlotState::Up } else { SlotState::Vacant }).collect();
        let others = params
            .others
            .into_iter()
            .enumerate()
            .map(|(i, p)| Server::new(p, derive(run_seed, mix64(i as u64 + 1))))
            .collect();
        let mut set = Replicas {
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
            state: deployed.clone(),
            deployed,
            restarting: vec![0; n as usize],
            slow_start: params.slow_start,
            joined: vec![None; n as usize],
            weights: vec![1.0; n as usize],
            deploy_spans: params.deploy_spans,
            deploys: params.deploys,
            autoscaler: params.autoscale.map(|a| Box::new(Autoscaler::new(a, n, params.replicas))),
        };
        // Surge slots hold no replica until a deploy starts one there.
        for r in params.replicas..n {
            set.others[r as usize - 1].go_down(Instant::ZERO);
        }
        set.health_changed();
        set
    }

    /// Replicas in all.
    pub fn count(&self) -> u32 {
        self.active.len() as u32
    }

    /// Per replica, the deploys' changes of its state in time order.
    pub fn deploy_moves(&self) -> &[Vec<(Instant, SlotState)>] {
        &self.deploys
    }

    /// The outlier detector's interval, if there is one.
    pub fn outlier_interval(&self) -> Option<Span> {
        self.detector.as_ref().map(|d| d.interval())
    }

    /// The replica that attempt `attempt` of the operation in slot `op` (unique id `op_id`)
    /// goes to.
    pub fn pick(&mut self, op: u32, op_id: u64, now: Instant) -> u32 {
        self.pick_with(op, op_id, self.reselects, now)
    }

    /// [`Replicas::pick`] with the host re-selections given (`None`: a fresh pick), for a
    /// caller whose own policy says them (an edge of the call graph, per call along it).
    pub fn pick_with(&mut self, op: u32, op_id: u64, reselects: Option<u32>, now: Instant) -> u32 {
        let weighted = self.slow_start.is_some() && self.slow_start_weights(now);
        let hosts = Hosts {
            candidates: &self.candidates,
            usable: &self.usable,
            active: &self.active,
            weights: weighted.then_some(&self.weights[..]),
        };
        let key = mix64(op_id);
        let Some(reselects) = reselects else {
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

    /// Recomputes the replicas the balancer may pick: the healthy ones (up and not ejected),
    /// or, when fewer than the panic threshold of the hosts (the replicas that are not vacant)
    /// are healthy, every host (Envoy's panic mode: a restarting replica then refuses the
    /// connection).
    fn health_changed(&mut self) {
        let n = self.active.len();
        let ejected = |r: u32| self.detector.as_ref().is_some_and(|d| d.is_ejected(r));
        let host = |r: u32| self.state[r as usize] != SlotState::Vacant;
        let healthy = |r: u32| self.state[r as usize] == SlotState::Up && !ejected(r);
        let hosts = (0..n as u32).filter(|&r| host(r)).count();
        let healthy_count = (0..n as u32).filter(|&r| healthy(r)).count();
        let panic = 100.0 * (healthy_count as f64) < self.panic_threshold_percent * hosts as f64;
        self.candidates.clear();
        for r in 0..n as u32 {
            let usable = host(r) && (panic || healthy(r));
            self.usable[r as usize] = usable;
            if usable {
                self.candidates.push(r);
            }
        }
        if self.candidates.is_empty() {
            // No host at all (a threshold of 0 with every replica down): each refuses.
            self.candidates.extend((0..n as u32).filter(|&r| host(r)));
            for &r in &self.candidates {
                self.usable[r as usize] = true;
            }
        }
    }

    /// Replica `r` changes at `now`: its new state is the deploy's, made `Starting` (down)
    /// while a `restart` fault lasts. Returns whether it went down (the model drops what it
    /// holds) or came up (its slow start begins).
    pub fn change(&mut self, r: u32, change: Change, now: Instant) -> Moved {
        let i = r as usize;
        match change {
            Change::RestartBegins => self.restarting[i] += 1,
            Change::RestartEnds => self.restarting[i] -= 1,
            Change::Deployed(s) => self.deployed[i] = s,
            Change::Drain => self.deployed[i] = SlotState::Vacant,
        }
        let new = match self.deployed[i] {
            SlotState::Up if self.restarting[i] > 0 => SlotState::Starting,
            s => s,
        };
        let old = std::mem::replace(&mut self.state[i], new);
        if old == new {
            return Moved::Same;
        }
        self.health_changed();
        if let Some(a) = &mut self.autoscaler {
            a.set_up(r, new == SlotState::Up, now);
        }
        match (old, new) {
            // Draining: it holds on to its work.
            _ if change == Change::Drain => Moved::Same,
            (SlotState::Up, _) => Moved::Down,
            (_, SlotState::Up) => {
                self.joined[i] = Some(now);
                Moved::Up
            }
            _ => Moved::Same,
        }
    }

    /// The autoscaler, with `[server] autoscale`.
    pub fn autoscaler(&mut self) -> Option<&mut Autoscaler> {
        self.autoscaler.as_deref_mut()
    }

    /// Whether an autoscaler moves these replicas.
    #[inline]
    pub fn autoscales(&self) -> bool {
        self.autoscaler.is_some()
    }

    /// Replicas up (serving, ejected or not).
    pub fn up_count(&self) -> u32 {
        self.state.iter().filter(|s| **s == SlotState::Up).count() as u32
    }

    /// Fills the slow-start weights at `now`; whether any candidate is in its window (the
    /// balancer then picks by weight).
    fn slow_start_weights(&mut self, now: Instant) -> bool {
        let params = self.slow_start.expect("checked");
        let mut weighted = false;
        for &r in &self.candidates {
            let w = self.joined[r as usize].map_or(1.0, |at| params.weight(now.since(at)));
            if w < 1.0 {
                weighted = true;
            } else {
                // Out of the window for good: no need to compute it again.
                self.joined[r as usize] = None;
            }
            self.weights[r as usize] = w;
        }
        weighted
    }

    /// Replica `r`'s levels changed to `levels`; returns the levels of all replicas together.
    pub fn levels(&mut self, r: u32, levels: (u32, usize)) -> (u32, usize) {
        let old = std::mem::replace(&mut self.levels[r as usize], levels);
        self.total = (self.total.0 - old.0 + levels.0, self.total.1 - old.1 + levels.1);
        self.total
    }

    /// The span of all replicas' faults and deploys, with replica 0's faults (`first`).
    pub fn fault_span(&self, first: Option<FaultSpan>, horizon: Instant) -> Option<FaultSpan> {
        let deploys = self.deploy_spans.iter().filter(|d| d.first_start < horizon).map(|d| Some(*d));
        let faults = self.others.iter().map(|s| s.fault_span(horizon));
        faults.chain(deploys).fold(first, FaultSpan::union)
    }
}
