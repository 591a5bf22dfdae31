//! Proxy nodes of the call graph (DESIGN §3.7, §4.4): services with no server of their own
//! (no workers, no queue, no service time). A request a proxy takes is forwarded at once
//! along its single edge, retried there with the edge's client policy ([`super::hop`]), and
//! its answer goes up at once. A strategy's gateway `layers` are a chain of proxy nodes in
//! front of the run's own `[server]` (`assembly::gateways`): node 0 receives the client's
//! attempts (over the network), node `i` calls node `i + 1`, and the last calls the server
//! ([`SERVER`]), with all of its features (replicas, deploys, faults). With three proxies of
//! three attempts and a server that always fails, one client attempt is 27 server calls.
//!
//! Every request a proxy receives opens a *ticket*: the proxy sends it down up to its edge's
//! `max_attempts` times, with the edge's timeout, `retry_on`, backoff and `honor_dont_retry`,
//! and answers upwards with the first success or its last failure. A proxy does not know how
//! long the caller above waits (no deadline reaches it): after the caller gave up, the proxy
//! still retries (the work is wasted, and counted at the server as any other call). Hops
//! below a proxy are instant and lossless (the proxies sit next to the server); the
//! experiment's `network` is the client's hop to node 0 and back.
//!
//! **A proxy's own controls.** Its edge's retry budget and circuit breaker are the proxy's,
//! shared by every request through it (one gate per node, whatever the budget's `scope`),
//! asked at the same moments as a client's ([`crate::policy::gate`]): a ticket is an
//! operation to it (opened: `op_started`; answered its caller: `op_ended`), every attempt it
//! sends down is admitted first (an open breaker refuses it, and the ticket answers its
//! caller at once with a local 503 marked overloaded, never sent down), every answer or
//! timeout is told to it, and every retry asks it for permission (a refusal ends the ticket
//! with the failure it had). A proxy's budget and breaker draw nothing (the schema allows no
//! throttle or limit on a hop); the backoff's jitter comes from the run's gateway stream
//! (stream 7), in the order the proxies decide.
//!
//! **Its router** ([`crate::policy::route`]): with a route timeout, the proxy answers 504
//! when it fires (the try in flight is given up, no further try starts; a try's own timeout
//! is cut to what the route has left); an edge with `honor_overloaded` answers an answer
//! marked overloaded up unretried.
//!
//! **Why not a service's tickets.** A proxy's tickets are a service's calls without the
//! request around them: no worker is held, nothing is abandoned or cancelled (a proxy keeps
//! retrying for a caller that left, as Envoy does), and the first attempt goes down at once
//! rather than as an event. They share the tries ([`Tries`]) and the edge's parameters
//! ([`EdgeParams`]) with a service's calls. A proxy node exists only in front of the run's
//! `[server]` (`layers`); `[[services]]` has no proxy node (it would need the abandonment,
//! cancellation and deadline of a service's calls).
//!
//! This file is the ticket table and each proxy's decision, without events;
//! `queue_model/proxies.rs` wires them to the engine.
//!
//! **References.** A ticket is freed when nothing can reach it any more: `refs` counts the
//! pending events and the request sent down that name it. A ticket holds its operation's slot
//! (requests still in the server name it, and their side effects belong to it) until freed.
//! A ticket that still owes its caller an answer when its last reference goes (its request
//! was dropped and it has no timeout, so nothing will ever wake it) gives up silently, as a
//! hung proxy does, and releases its hold on the caller.

use super::hop::{AfterFailure, Tries};
use super::{EdgeParams, LOCAL_REFUSAL, ROUTE_TIMEOUT};
use crate::engine::Instant;
use crate::engine::rng::{Stream, stream};
use crate::policy::Outcome;
use crate::policy::gate::{Admit, Gate, GateParams};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::super::server::Reply;

/// An edge's callee that is the run's own `[server]` (the bottom of a chain of proxies).
pub const SERVER: u32 = u32::MAX;

/// One proxy node: its single edge (`to`: the next proxy, or [`SERVER`]; one call, not
/// hedged).
#[derive(Clone, Debug)]
pub struct ProxyParams {
    pub edge: EdgeParams,
}

/// Attempt numbers travel with a ticket id in one `u32` (`ticket << ATTEMPT_BITS | attempt`),
/// so a proxy makes at most this many attempts (the schema's bound on `layers[].max_attempts`).
pub const MAX_PROXY_ATTEMPTS: u32 = (1 << ATTEMPT_BITS) - 1;
const ATTEMPT_BITS: u32 = 8;
/// Tickets live at once: ids fit the remaining 24 bits.
const MAX_TICKETS: usize = 1 << (32 - ATTEMPT_BITS);

/// Packs a ticket id and one of its attempt numbers.
#[inline]
pub fn pack(ticket: u32, attempt: u32) -> u32 {
    debug_assert!(attempt <= MAX_PROXY_ATTEMPTS);
    (ticket << ATTEMPT_BITS) | attempt
}

/// Unpacks [`pack`]: (ticket, attempt).
#[inline]
pub fn unpack(v: u32) -> (u32, u32) {
    (v >> ATTEMPT_BITS, v & MAX_PROXY_ATTEMPTS)
}

/// Who sent the request a ticket serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// The client's attempt number `attempt` (node 0's tickets).
    Client { attempt: u32 },
    /// Attempt `attempt` of the ticket `ticket` of the proxy above.
    Proxy { ticket: u32, attempt: u32 },
}

/// One request a proxy is working on.
#[derive(Clone, Copy, Debug)]
pub struct Ticket {
    /// The operation's slot (side effects and idempotency keys belong to it).
    pub op: u32,
    pub node: u32,
    /// Whether it still owes its caller an answer (and holds a reference on it).
    pub owes_answer: bool,
    pub caller: Caller,
    refs: u32,
    tries: Tries,
}

/// What a ticket does after an answer or a timeout of its current attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Send the next attempt at this instant.
    RetryAt(Instant),
    /// Answer the caller with this reply.
    Answer(Reply),
}

struct Node {
    edge: EdgeParams,
    /// The proxy's own controls ([`Gate::is_empty`] when it has none).
    gate: Gate,
}

/// A chain of proxy nodes and the tickets in flight.
pub struct Proxies {
    nodes: Vec<Node>,
    tickets: Vec<Ticket>,
    free: Vec<u32>,
    rng: Xoshiro256PlusPlus,
}

impl Proxies {
    /// The proxy nodes `chain`, node 0 first; their jitter comes from the run's gateway
    /// stream. Their budgets and breakers draw nothing, so their gates' generators (seeded
    /// from the same stream) are never used.
    pub fn new(chain: Vec<ProxyParams>, run_seed: u64) -> Proxies {
        let nodes = chain
            .into_iter()
            .map(|p| {
                let e = &p.edge;
                debug_assert!(e.count == 1 && e.hedge.is_none(), "a proxy forwards one call, unhedged");
                debug_assert!(e.gate.throttle.is_none() && e.gate.limit.is_none(), "not on a hop");
                let gate = if e.gate == GateParams::default() {
                    Gate::none()
                } else {
                    Gate::new(&e.gate, 1, stream(run_seed, Stream::Gateways))
                };
                Node { edge: p.edge, gate }
            })
            .collect();
        Proxies { nodes, tickets: Vec::new(), free: Vec::new(), rng: stream(run_seed, Stream::Gateways) }
    }

    /// Where `ticket`'s proxy sends its attempts: the next node, or [`SERVER`].
    #[inline]
    pub fn callee(&self, ticket: u32) -> u32 {
        self.nodes[self.get(ticket).node as usize].edge.to
    }

    #[inline]
    pub fn get(&self, ticket: u32) -> &Ticket {
        &self.tickets[ticket as usize]
    }

    /// Node `node` receives a request of operation `op` from `caller` at `now`: a new ticket,
    /// holding one reference until it is sent down (see [`Proxies::send`]).
    pub fn open(&mut self, op: u32, node: u32, caller: Caller, now: Instant) -> u32 {
        let n = &mut self.nodes[node as usize];
        let t = Ticket { op, node, owes_answer: true, caller, refs: 1, tries: Tries::new(&n.edge, now) };
        if !n.gate.is_empty() {
            n.gate.op_started(0, now);
        }
        if let Some(id) = self.free.pop() {
            self.tickets[id as usize] = t;
            id
        } else {
            assert!(self.tickets.len() < MAX_TICKETS, "more than {MAX_TICKETS} proxied requests in flight");
            self.tickets.push(t);
            (self.tickets.len() - 1) as u32
        }
    }

    /// `ticket` sends its next attempt at `now`: its number, and when the proxy stops waiting
    /// for it ([`Instant::NEVER`]: no timeout). The caller takes a reference for the request
    /// sent down and one for the timeout event, if any ([`Proxies::retain`]).
    #[inline]
    pub fn send(&mut self, ticket: u32, now: Instant) -> (u32, Instant) {
        let t = &mut self.tickets[ticket as usize];
        t.tries.send(&self.nodes[t.node as usize].edge.retry, now)
    }

    /// Whether `ticket`'s route timeout has fired by `now` (then it answers
    /// `ROUTE_TIMEOUT` instead of sending its next attempt).
    #[inline]
    fn route_expired(&self, ticket: u32, now: Instant) -> bool {
        self.get(ticket).tries.route_expired(now)
    }

    /// What `ticket` answers when it may not send its next attempt at `now`: `ROUTE_TIMEOUT`
    /// when its route timed out during the backoff, `LOCAL_REFUSAL` when its proxy's
    /// breaker refuses the attempt; `None`: it may send it.
    pub fn refusal(&mut self, ticket: u32, now: Instant) -> Option<Reply> {
        if self.route_expired(ticket, now) {
            return Some(ROUTE_TIMEOUT);
        }
        let t = self.get(ticket);
        let (node, next) = (t.node as usize, t.tries.attempts + 1);
        let gate = &mut self.nodes[node].gate;
        let admitted = gate.is_empty() || matches!(gate.admit(0, now, next, true), Admit::Send);
        (!admitted).then_some(LOCAL_REFUSAL)
    }

    /// `ticket` answers its caller now with `reply`, as its last word: the proxy's controls
    /// see its request end.
    pub fn finish(&mut self, ticket: u32, reply: Reply) {
        let t = &mut self.tickets[ticket as usize];
        let gate = &mut self.nodes[t.node as usize].gate;
        if !gate.is_empty() {
            gate.op_ended(0, reply.outcome == Outcome::Success, t.tries.last_cost);
        }
        t.owes_answer = false;
    }

    /// The proxy's controls learn that its current attempt ended with `outcome` at `now`.
    fn tell_gate(&mut self, ticket: u32, outcome: Outcome, now: Instant) {
        let t = &self.tickets[ticket as usize];
        let node = &mut self.nodes[t.node as usize];
        node.gate.hop_answered(&node.edge.retry, t.tries.attempts, outcome, t.tries.sent_at, now);
    }

    /// Whether `ticket` still waits for the outcome of its attempt `attempt` (not after it
    /// timed out, nor once the ticket answered).
    fn awaits(&self, ticket: u32, attempt: u32) -> bool {
        let t = self.get(ticket);
        t.tries.awaits(attempt) && t.owes_answer
    }

    /// The answer to attempt `attempt` of `ticket` arrived at `now`: `None` when the proxy no
    /// longer waits for it.
    pub fn answered(&mut self, ticket: u32, attempt: u32, reply: Reply, now: Instant) -> Option<Step> {
        if !self.awaits(ticket, attempt) {
            return None;
        }
        self.tell_gate(ticket, reply.outcome, now);
        if reply.outcome == Outcome::Success {
            self.tickets[ticket as usize].tries.waiting = false;
            return Some(Step::Answer(reply));
        }
        Some(self.failed(ticket, reply, now))
    }

    /// Attempt `attempt` of `ticket` timed out at `now` (`None`: it was answered already).
    pub fn timed_out(&mut self, ticket: u32, attempt: u32, now: Instant) -> Option<Step> {
        if !self.awaits(ticket, attempt) {
            return None;
        }
        self.tell_gate(ticket, Outcome::Timeout, now);
        if self.route_expired(ticket, now) {
            self.tickets[ticket as usize].tries.waiting = false;
            return Some(Step::Answer(ROUTE_TIMEOUT));
        }
        Some(self.failed(ticket, Reply::of(Outcome::Timeout), now))
    }

    /// The proxy's decision after a failed attempt.
    fn failed(&mut self, ticket: u32, reply: Reply, now: Instant) -> Step {
        let t = &mut self.tickets[ticket as usize];
        let node = &mut self.nodes[t.node as usize];
        match t.tries.failed(&node.edge, &mut node.gate, reply, now, &mut self.rng) {
            AfterFailure::RetryAt(at) => Step::RetryAt(at),
            AfterFailure::Fail(reply) => Step::Answer(reply),
        }
    }

    /// One more pending event or request names `ticket`.
    #[inline]
    pub fn retain(&mut self, ticket: u32) {
        self.tickets[ticket as usize].refs += 1;
    }

    /// A pending event or request naming `ticket` is gone. When it was the last, the ticket is
    /// freed: its operation is returned (the ticket's hold on it must be released), with its
    /// caller if it still owed it an answer (the caller's reference must be released too: the
    /// ticket hung up).
    #[inline]
    pub fn release(&mut self, ticket: u32) -> Option<(u32, Option<Caller>)> {
        let t = &mut self.tickets[ticket as usize];
        t.refs -= 1;
        if t.refs > 0 {
            return None;
        }
        let freed = (t.op, t.owes_answer.then_some(t.caller));
        self.free.push(ticket);
        Some(freed)
    }

    /// Tickets in flight.
    #[cfg(test)]
    fn live(&self) -> usize {
        self.tickets.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Span;
    use crate::model::server::RetryAfterCode;
    use crate::policy::route::Route;
    use crate::policy::{Backoff, RetryAfterMode, RetryAfterPolicy, RetryOn, RetryPolicy};

    /// A proxy's edge as the assembly builds a layer's: a 5 ms constant backoff, the default
    /// `retry_on`, no deadline, Retry-After not read, no controls.
    fn node(to: u32, max_attempts: u32, timeout_ms: Option<u64>, honor_dont_retry: bool) -> ProxyParams {
        let retry = RetryPolicy {
            backoff: Backoff::Constant { base_ns: 5e6 },
            retry_on: RetryOn::default(),
            max_attempts,
            timeout: timeout_ms.map(Span::from_millis),
            deadline: None,
            retry_after: RetryAfterPolicy { honor: false, cap: None, mode: RetryAfterMode::Replace },
            honor_dont_retry,
        };
        let edge = EdgeParams {
            to,
            count: 1,
            parallel: false,
            optional: false,
            retry,
            gate: GateParams::default(),
            route: Route::default(),
            hedge: None,
            reselects: None,
        };
        ProxyParams { edge }
    }

    const FAIL: Reply = Reply { outcome: Outcome::Status(503), retry_after: RetryAfterCode::NONE };

    fn after(ms: u64) -> Instant {
        Instant::ZERO + Span::from_millis(ms)
    }

    #[test]
    fn a_proxy_retries_up_to_its_attempts_then_answers_its_last_failure() {
        let mut g = Proxies::new(vec![node(SERVER, 3, None, false)], 1);
        let t = g.open(7, 0, Caller::Client { attempt: 1 }, Instant::ZERO);
        for n in 1..=3 {
            let (attempt, gives_up) = g.send(t, Instant::ZERO);
            assert_eq!((attempt, gives_up), (n, Instant::NEVER));
            let step = g.answered(t, attempt, FAIL, Instant::ZERO);
            let expected = if n < 3 { Step::RetryAt(after(5)) } else { Step::Answer(FAIL) };
            assert_eq!(step, Some(expected), "attempt {n}");
        }
    }

    #[test]
    fn a_success_is_answered_and_late_answers_are_ignored() {
        let mut g = Proxies::new(vec![node(SERVER, 3, Some(100), false)], 1);
        let t = g.open(0, 0, Caller::Client { attempt: 2 }, Instant::ZERO);
        let (a1, gives_up) = g.send(t, Instant::ZERO);
        assert_eq!(gives_up, after(100));
        assert_eq!(g.timed_out(t, a1, gives_up), Some(Step::RetryAt(after(105))));
        assert_eq!(g.answered(t, a1, Reply::SUCCESS, gives_up), None, "attempt 1 is no longer awaited");
        let (a2, _) = g.send(t, after(105));
        assert_eq!(g.timed_out(t, a1, after(106)), None, "a stale timer");
        assert_eq!(g.answered(t, a2, Reply::SUCCESS, gives_up), Some(Step::Answer(Reply::SUCCESS)));
        g.finish(t, Reply::SUCCESS);
        assert_eq!(g.answered(t, a2, FAIL, gives_up), None, "answered already");
    }

    #[test]
    fn dont_retry_stops_a_proxy_that_honours_it() {
        let dont = Reply { outcome: Outcome::Status(503), retry_after: RetryAfterCode::DONT_RETRY };
        for (honor, expected) in [(true, Step::Answer(dont)), (false, Step::RetryAt(after(5)))] {
            let mut g = Proxies::new(vec![node(SERVER, 3, None, honor)], 1);
            let t = g.open(0, 0, Caller::Client { attempt: 1 }, Instant::ZERO);
            let (a, _) = g.send(t, Instant::ZERO);
            assert_eq!(g.answered(t, a, dont, Instant::ZERO), Some(expected), "honor_dont_retry = {honor}");
        }
    }

    #[test]
    fn a_ticket_lives_while_referenced_and_hangs_up_on_its_caller_if_it_never_answered() {
        let mut g = Proxies::new(vec![node(1, 2, None, false), node(SERVER, 2, None, false)], 1);
        let caller = Caller::Proxy { ticket: 3, attempt: 1 };
        let t = g.open(9, 1, caller, Instant::ZERO);
        assert_eq!(g.callee(t), SERVER);
        g.retain(t); // the request sent down
        assert_eq!(g.release(t), None, "the opening reference goes, the request's stays");
        assert_eq!(g.live(), 1);
        assert_eq!(g.release(t), Some((9, Some(caller))), "dropped without an answer: it hangs up");
        assert_eq!(g.live(), 0);
        let u = g.open(1, 0, Caller::Client { attempt: 1 }, Instant::ZERO);
        assert_eq!(u, t, "the slot is reused");
        assert_eq!(g.callee(u), 1, "node 0 calls node 1");
        g.finish(u, Reply::SUCCESS);
        assert_eq!(g.release(u), Some((1, None)), "answered: freed, nothing owed");
    }

    #[test]
    fn packing_round_trips() {
        for (t, a) in [(0, 1), (1, 255), ((1 << 24) - 1, 7)] {
            assert_eq!(unpack(pack(t, a)), (t, a));
        }
    }
}
