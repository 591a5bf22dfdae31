//! A service of the call graph as a whole replicated service (DESIGN §3.7, §3.3): its
//! replicas' `restart` faults, its outlier detector, its rolling deploys and its autoscaler,
//! with exactly the semantics `[server]` has ([`Replicas`](super::super::replicas::Replicas)
//! carries them; this file schedules and carries out their moves for each service, as the
//! queue model does for the one server), and the replica an edge's call goes to
//! (`retry_other_replica` per call along the edge).
//!
//! **A replica that goes down** (a `restart` fault starts, a deploy takes it down, the
//! autoscaler starts a replica in a slot a draining one still holds) drops every request it
//! holds, queued and in service, each answered with a connection reset to its caller (a
//! retryable failure for the edge's `retry_on`, as for the user's client of `[server]`). A
//! request whose worker was waiting for its downstream calls has those calls stopped: their
//! requests are abandoned (cancelled with `propagate_cancellation`), and the time they hold
//! workers after that is wasted; the dropped request's own time after its caller had given
//! up on it (if it had) is wasted as well.
//!
//! **`retry_other_replica` on an edge**: the tried replicas are per call along the edge (its
//! [`Ticket`](super::tables::Ticket): its attempts, or its hedged copies), Envoy's
//! `previous_hosts` with `host_selection_retry_max_attempts` re-selections as `[server]` has
//! it; the calls of other requests, and other calls of the same request, are not avoided.
//!
//! **Time series**: a service that autoscales or deploys has its replica counts in
//! timeseries.csv, named `replicas_up@NAME` (and `replicas_desired@NAME`, `replicas_ready@NAME`,
//! `utilization@NAME` with `autoscale`), with the meanings of `[server]`'s columns.

use super::super::autoscaler::ScaleStep;
use super::super::queue_model::Ev;
use super::super::replicas::{Change, Moved};
use super::super::server::{Reply, RetryAfterCode};
use super::Graph;
use super::tables::{Caller, NO_EDGE, Phase};
use crate::engine::{EventQueue, Instant, Scheduler};
use crate::metrics::RunRecorder;
use crate::metrics::recovery::FaultSpan;
use crate::metrics::series::TimeSeries;
use crate::policy::Outcome;

/// The answer a request dropped by its replica's restart gets.
const RESET: Reply = Reply { outcome: Outcome::ConnectionError, retry_after: RetryAfterCode::NONE };

impl Graph {
    /// Schedules every service's replica events (outlier ticks, `restart` faults, deploy
    /// moves, autoscaler syncs) and keeps the replica counts of each service that autoscales
    /// or deploys in `series` (if it is kept).
    pub fn schedule_replica_events<Q: EventQueue<Ev>>(
        &mut self,
        sched: &mut Scheduler<Ev, Q>,
        series: &mut TimeSeries,
    ) {
        for (i, service) in self.services.iter_mut().enumerate() {
            let svc = i as u32;
            if let Some(interval) = service.others.as_ref().and_then(|set| set.outlier_interval()) {
                sched.schedule_at(Instant::ZERO + interval, Ev::graph_outlier_tick(svc));
            }
            let others = service.others.as_ref().map_or(&[][..], |set| &set.others[..]);
            for (r, replica) in std::iter::once(&service.first).chain(others).enumerate() {
                for (start, end) in replica.restarts() {
                    sched.schedule_at(start, Ev::graph_replica_change(svc, r as u32, Change::RestartBegins));
                    sched.schedule_at(end, Ev::graph_replica_change(svc, r as u32, Change::RestartEnds));
                }
            }
            let Some(set) = service.others.as_deref_mut() else { continue };
            let mut deploys = false;
            for (r, moves) in set.deploy_moves().iter().enumerate() {
                for &(at, state) in moves {
                    sched.schedule_at(at, Ev::graph_replica_change(svc, r as u32, Change::Deployed(state)));
                    deploys = true;
                }
            }
            let up = set.up_count();
            let autoscaled = if let Some(a) = set.autoscaler() {
                sched.schedule_at(Instant::ZERO + a.sync_period(), Ev::graph_autoscale_sync(svc));
                if !series.is_empty() {
                    a.track(series.width(), series.len());
                }
                true
            } else {
                false
            };
            if (deploys || autoscaled) && !series.is_empty() {
                service.series = Some(series.track_service(up));
            }
        }
    }

    /// The span of every service's faults and deploys, from the first start to the last end,
    /// with `first` (the entry service's first replica's), for the recovery analysis: a
    /// slowdown at the bottom of the graph is what the user's requests recover from as much
    /// as one at the entry.
    pub fn fault_span(&self, first: Option<FaultSpan>, horizon: Instant) -> Option<FaultSpan> {
        self.services.iter().enumerate().fold(None, |span, (i, service)| {
            let own = if i == 0 { first } else { service.first.fault_span(horizon) };
            let own = match &service.others {
                Some(set) => set.fault_span(own, horizon),
                None => own,
            };
            FaultSpan::union(span, own)
        })
    }

    /// The autoscalers' columns of the services that keep them, after the run.
    pub fn finish_series(&mut self, horizon: Instant, rec: &mut RunRecorder) {
        for service in &mut self.services {
            if let (Some(i), Some(set)) = (service.series, service.others.as_deref_mut())
                && let Some(a) = set.autoscaler()
            {
                let rows = a.rows(horizon);
                rec.series().service(i).autoscaled(rows);
            }
        }
    }

    /// The replica request `c` (just opened, with unique number `serial`) goes to: with its
    /// edge's `retry_other_replica`, one its call along the edge has not tried yet, if the
    /// balancer finds one in its re-selections.
    pub(super) fn pick_replica(&mut self, c: u32, serial: u64, now: Instant) -> u32 {
        let call = self.calls.get(c);
        let avoid = match call.caller {
            Caller::Edge { ticket, generation, .. } if call.edge != NO_EDGE => {
                self.edges[call.edge as usize].p.reselects.map(|n| (n, ticket, generation))
            }
            _ => None,
        };
        let Some(set) = &mut self.services[call.service as usize].others else { return 0 };
        match avoid {
            // The call's tried replicas are kept by its ticket's slot, and start over when the
            // slot holds another call (another generation).
            Some((n, ticket, generation)) => {
                let call_id = (u64::from(ticket) << 32) | u64::from(generation);
                set.pick_with(ticket, call_id, Some(n), now)
            }
            None => set.pick(c, serial, now),
        }
    }

    /// Replica `r` of service `svc` changes state (DESIGN §3.3): down from up, it drops what
    /// it holds (as `replica_down` says) and refuses new requests; up again, it takes them.
    pub fn replica_changed<Q: EventQueue<Ev>>(
        &mut self,
        svc: u32,
        r: u32,
        change: Change,
        s: &mut Scheduler<Ev, Q>,
        rec: &mut RunRecorder,
    ) {
        let now = s.now();
        let service = &mut self.services[svc as usize];
        let moved = match service.others.as_deref_mut() {
            Some(set) => set.change(r, change, now),
            None => service.restarting.change(change),
        };
        match moved {
            Moved::Down => self.replica_down(svc, r, s, rec),
            Moved::Up => self.replica(svc, r).restarted(),
            Moved::Same => {}
        }
        let service = &self.services[svc as usize];
        if let (Some(i), Some(set)) = (service.series, service.others.as_deref()) {
            rec.series().service(i).up(now, set.up_count());
        }
    }

    /// Replica `r` of service `svc` goes down at once: every request it holds is answered
    /// with a connection reset. First all of them are let go of (the balancer learns it, the
    /// downstream calls of those waiting for them are stopped, their wasted time counted),
    /// then each is answered: an answer may fail or end a caller's request, whose own calls
    /// may be among the dropped ones.
    pub(super) fn replica_down<Q: EventQueue<Ev>>(
        &mut self,
        svc: u32,
        r: u32,
        s: &mut Scheduler<Ev, Q>,
        rec: &mut RunRecorder,
    ) {
        let now = s.now();
        let (waiting, serving) = self.replica(svc, r).go_down(now);
        let mut dropped = Vec::with_capacity(waiting.len() + serving.len());
        for req in waiting.iter().chain(serving.iter().map(|(req, _)| req)) {
            let (c, generation) = (req.op, req.attempt);
            if !self.alive(c, generation) {
                continue;
            }
            let call = self.calls.get(c);
            let (phase, worker, edge) = (call.phase, call.worker, call.edge);
            let held = matches!(phase, Phase::Serving | Phase::Calling);
            let wasted =
                (held && call.abandoned_at < now).then(|| now.since(call.started.max(call.abandoned_at)));
            if let Some(set) = &mut self.services[svc as usize].others {
                set.left(r, c, generation, Some(RESET), now);
            }
            if let Some(w) = wasted {
                self.waste(svc, edge, w, rec);
            }
            if phase == Phase::Calling {
                self.stop_tickets(c, now, rec);
                // Its own work ended before the restart: no `Done` event will reap its worker.
                let _ = self.replica(svc, r).reap_stopped(worker);
            }
            self.calls.get_mut(c).phase = Phase::Dropped;
            dropped.push((c, generation));
        }
        self.counts.services[svc as usize].dropped += dropped.len() as u64;
        self.levels(svc, r, now, rec);
        for (c, generation) in dropped {
            if self.alive(c, generation) {
                self.finish(c, Some(RESET), s, rec);
            }
        }
        self.settle(s, rec);
    }

    /// Service `svc`'s outlier detector's interval timer: it un-ejects and checks success
    /// rates, and fires again an interval later.
    pub fn outlier_tick<Q: EventQueue<Ev>>(&mut self, svc: u32, s: &mut Scheduler<Ev, Q>) {
        let set = self.services[svc as usize].others.as_deref_mut().expect("only replicas have a detector");
        set.outlier_tick(s.now());
        if let Some(interval) = set.outlier_interval() {
            s.schedule_in(interval, Ev::graph_outlier_tick(svc));
        }
    }

    /// Service `svc`'s autoscaler syncs: it starts replicas (each dropping what a draining
    /// replica in its slot still holds, and ready `startup` later), stops starting ones and
    /// drains ready ones; it syncs again a period later.
    pub fn autoscale_sync<Q: EventQueue<Ev>>(
        &mut self,
        svc: u32,
        s: &mut Scheduler<Ev, Q>,
        rec: &mut RunRecorder,
    ) {
        let now = s.now();
        let holding: Vec<bool> =
            (0..self.replica_count(svc)).map(|r| self.replica(svc, r).levels() != (0, 0)).collect();
        let set = self.services[svc as usize].others.as_deref_mut().expect("only replicas autoscale");
        let a = set.autoscaler().expect("only an autoscaler syncs");
        let steps = a.sync(now, |r| holding[r as usize]);
        s.schedule_in(a.sync_period(), Ev::graph_autoscale_sync(svc));
        for step in steps {
            match step {
                ScaleStep::Start { slot, generation, ready_at } => {
                    self.replica_down(svc, slot, s, rec);
                    s.schedule_at(ready_at, Ev::graph_replica_ready(svc, slot, generation));
                }
                ScaleStep::Stop { .. } => {}
                ScaleStep::Drain { slot } => self.replica_changed(svc, slot, Change::Drain, s, rec),
            }
        }
    }

    /// The replica service `svc`'s autoscaler started in `slot` (its `generation`) is ready:
    /// it joins the balancer if it is still wanted.
    pub fn replica_ready<Q: EventQueue<Ev>>(
        &mut self,
        svc: u32,
        slot: u32,
        generation: u32,
        s: &mut Scheduler<Ev, Q>,
        rec: &mut RunRecorder,
    ) {
        let set =
            self.services[svc as usize].others.as_deref_mut().expect("only the autoscaler starts replicas");
        if set.autoscaler().expect("checked").ready(slot, generation) {
            self.replica_changed(svc, slot, Change::Deployed(crate::policy::deploy::SlotState::Up), s, rec);
        }
    }
}
