//! The call graph ([`crate::model::graph`]) wired to the queue model's events: with
//! `[[services]]`, the client's attempts reach the graph's entry service instead of the
//! server, the graph's events are handed to it, and its answers go back over the response
//! hop. A client that gives up tells the graph (cancellation and wasted work start there).
//!
//! Out of line throughout: a run without a graph never calls into this file, and a plain run
//! has the calls compiled away (`has_graph`).

use super::{Ev, Kind, QueueModel};
use crate::engine::{EventQueue, Instant, Scheduler};
use crate::model::graph::Graph;
use crate::model::server::Request;

impl<const PLAIN: bool> QueueModel<PLAIN> {
    /// Whether the run has a call graph (never, compiled for a plain run).
    #[inline(always)]
    pub(super) fn has_graph(&self) -> bool {
        !PLAIN && self.graph.is_some()
    }

    fn graph(&mut self) -> &mut Graph {
        self.graph.as_mut().expect("only called with a call graph")
    }

    /// Attempt `attempt` of `op` reaches the entry service.
    #[inline(never)]
    pub(super) fn graph_arrive<Q: EventQueue<Ev>>(
        &mut self,
        op: u32,
        attempt: u32,
        gives_up_at: Instant,
        s: &mut Scheduler<Ev, Q>,
    ) {
        let g = self.graph.as_mut().expect("only called with a call graph");
        g.client_call(op, attempt, gives_up_at, s, &mut self.rec);
        self.graph_answers(s);
    }

    /// The client stopped waiting for attempt `attempt` of `op`.
    #[inline(never)]
    pub(super) fn graph_gave_up<Q: EventQueue<Ev>>(
        &mut self,
        op: u32,
        attempt: u32,
        s: &mut Scheduler<Ev, Q>,
    ) {
        let g = self.graph.as_mut().expect("only called with a call graph");
        g.client_gave_up(op, attempt, s, &mut self.rec);
        self.graph_answers(s);
    }

    /// One of the graph's own events.
    #[inline(never)]
    pub(super) fn graph_event<Q: EventQueue<Ev>>(
        &mut self,
        kind: Kind,
        a: u32,
        b: u32,
        c: u64,
        s: &mut Scheduler<Ev, Q>,
    ) {
        let g = self.graph.as_mut().expect("only a call graph schedules its events");
        let rec = &mut self.rec;
        match kind {
            Kind::GraphDone => g.done(a, b, c as u32, s, rec),
            Kind::GraphSend => g.send(a, b, c as u32, s, rec),
            Kind::GraphTimeout => g.timed_out(a, b, c as u32, s, rec),
            Kind::GraphReleased => g.released(a, b, s, rec),
            Kind::GraphCapacity => g.capacity_restored(a, s, rec),
            Kind::GraphReplicaChange => g.replica_changed(c as u32, a, super::change_of(b), s, rec),
            Kind::GraphOutlierTick => g.outlier_tick(a, s),
            Kind::GraphAutoscaleSync => g.autoscale_sync(a, s, rec),
            Kind::GraphReplicaReady => g.replica_ready(c as u32, a, b, s, rec),
            _ => unreachable!("not a graph event"),
        }
        self.graph_answers(s);
    }

    /// The entry service's answers go back to the client (over the response hop); a request
    /// it will never answer lets go of its operation.
    fn graph_answers<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>) {
        while let Some((op, attempt, reply)) = self.graph().answers() {
            match reply {
                Some(reply) => self.respond_to_client(Request::new(op, attempt, Instant::NEVER), reply, s),
                None => self.clients.ops.release(op),
            }
        }
    }
}
