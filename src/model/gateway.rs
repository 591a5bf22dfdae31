//! Gateway layers (DESIGN §4.4 `layers`): proxies between the client and the server, each
//! retrying with its own policy, so attempts multiply.
//!
//! A strategy's `layers` are numbered from the client: layer 0 receives the client's
//! attempts (over the network), layer `n - 1` calls the server. Every request a layer receives
//! opens a *ticket*: the layer sends it down (to the next layer or the server) up to its
//! `max_attempts` times, with its own timeout, `retry_on`, backoff and `honor_dont_retry`, and
//! answers upwards with the first success or its last failure. A layer does not know how long
//! the caller above waits: after the caller gave up, the layer still retries (the work is
//! wasted, and counted at the server as any other call). With three layers of three attempts
//! and a server that always fails, one client attempt is 27 server calls.
//!
//! Hops between layers and from the last layer to the server are instant and lossless (the
//! gateways sit next to the server); the experiment's `network` is the client's hop to layer 0
//! and back.
//!
//! **A layer's own controls.** A layer may have a retry budget and a circuit breaker of its
//! own (a proxy's, shared by every request through it: one gate per layer, whatever the
//! budget's `scope`), asked at the same moments as a client's ([`crate::policy::gate`]): a
//! ticket is an operation to it (opened: `op_started`; answered its caller: `op_ended`),
//! every attempt it sends down is admitted first (an open breaker refuses it, and the ticket
//! answers its caller at once with a local 503, as a proxy's overflow answer, never sent
//! down), every answer or timeout is told to it, and every retry asks it for permission (a
//! budget's or a breaker's refusal ends the ticket with the failure it had).
//!
//! **Its router** ([`crate::policy::route`]): a layer with a route timeout answers its caller
//! 504 when it fires (the try in flight is given up, no further try starts; a try's own
//! timeout is cut to what the route has left), and its breaker's local 503 is marked
//! overloaded (`x-envoy-overloaded`), which a layer with `honor_overloaded` above it answers
//! up unretried.
//!
//! This file is the ticket table and each layer's decision, without events; `queue_model`
//! wires them to the engine.
//!
//! **References.** A ticket is freed when nothing can reach it any more: `refs` counts the
//! pending events and the request sent down that name it. A ticket holds its operation's slot
//! (requests still in the server name it, and their side effects belong to it) until freed. A ticket that still owes its caller
//! an answer when its last reference goes (its request was dropped and it has no timeout, so
//! nothing will ever wake it) gives up silently, as a hung proxy does, and releases its hold
//! on the caller.

use crate::engine::rng::{Stream, stream};
use crate::engine::{Instant, Span};
use crate::policy::gate::{Admit, CostClass, Gate, GateParams};
use crate::policy::route::{self, ROUTE_TIMEOUT_STATUS, Route};
use crate::policy::{BackoffState, Decision, FailedAttempt, Outcome, RetryPolicy};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::server::{Reply, RetryAfterCode};

/// One gateway layer: its retry policy and its own controls (empty: none).
#[derive(Clone, Debug, PartialEq)]
pub struct LayerParams {
    pub retry: RetryPolicy,
    pub gate: GateParams,
    /// Its route timeout and whether it honours `x-envoy-overloaded`.
    pub route: Route,
}

/// What a layer answers its caller when its own breaker refuses an attempt: a local 503 (the
/// proxy's overflow answer), marked `x-envoy-overloaded`: a caller that honours the mark does
/// not retry it, any other retries it as any 503.
pub const LOCAL_REFUSAL: Reply =
    Reply { outcome: Outcome::Status(503), retry_after: RetryAfterCode::OVERLOADED };

/// What a layer answers its caller when its route timeout fires.
pub const ROUTE_TIMEOUT: Reply =
    Reply { outcome: Outcome::Status(ROUTE_TIMEOUT_STATUS), retry_after: RetryAfterCode::NONE };

/// Attempt numbers travel with a ticket id in one `u32` (`ticket << ATTEMPT_BITS | attempt`),
/// so a layer makes at most this many attempts (the schema's bound on `layers[].max_attempts`).
pub const MAX_LAYER_ATTEMPTS: u32 = (1 << ATTEMPT_BITS) - 1;
const ATTEMPT_BITS: u32 = 8;
/// Tickets live at once: ids fit the remaining 24 bits.
const MAX_TICKETS: usize = 1 << (32 - ATTEMPT_BITS);

/// Packs a ticket id and one of its attempt numbers.
#[inline]
pub fn pack(ticket: u32, attempt: u32) -> u32 {
    debug_assert!(attempt <= MAX_LAYER_ATTEMPTS);
    (ticket << ATTEMPT_BITS) | attempt
}

/// Unpacks [`pack`]: (ticket, attempt).
#[inline]
pub fn unpack(v: u32) -> (u32, u32) {
    (v >> ATTEMPT_BITS, v & MAX_LAYER_ATTEMPTS)
}

/// Who sent the request a ticket serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// The client's attempt number `attempt` (layer 0's tickets).
    Client { attempt: u32 },
    /// Attempt `attempt` of the ticket `ticket` of the layer above.
    Layer { ticket: u32, attempt: u32 },
}

/// One request a layer is working on.
#[derive(Clone, Copy, Debug)]
pub struct Ticket {
    /// The operation's slot (side effects and idempotency keys belong to it).
    pub op: u32,
    pub layer: u8,
    /// Whether it still owes its caller an answer (and holds a reference on it).
    pub owes_answer: bool,
    /// Waiting for the answer to attempt `attempts` (false while backing off).
    waiting: bool,
    pub caller: Caller,
    /// Attempts sent so far.
    pub attempts: u32,
    /// Retries since the backoff last started over.
    k: u32,
    refs: u32,
    /// When this layer stops waiting for its current attempt.
    pub gives_up_at: Instant,
    received: Instant,
    /// When its route timeout fires ([`Instant::NEVER`]: none).
    route_ends: Instant,
    /// When the current attempt was sent (its latency, for the layer's controls).
    sent: Instant,
    backoff: BackoffState,
    /// The token kind its last retry took from the layer's token bucket, if any.
    last_cost: CostClass,
}

/// What a ticket does after an answer or a timeout of its current attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Send the next attempt after `delay`.
    Retry(Span),
    /// Answer the caller with this reply.
    Answer(Reply),
}

/// Every layer's policy and the tickets in flight.
pub struct Gateways {
    /// Each layer's retry policy (`assembly::gateways::layer_policy`), the first nearest the
    /// client.
    layers: Vec<RetryPolicy>,
    /// Each layer's router.
    routes: Vec<Route>,
    /// Each layer's own controls ([`Gate::is_empty`] when it has none).
    gates: Vec<Gate>,
    tickets: Vec<Ticket>,
    free: Vec<u32>,
    rng: Xoshiro256PlusPlus,
}

impl Gateways {
    /// Layers with these policies; their jitter comes from the run's gateway stream. A layer's
    /// budget and breaker draw nothing (the schema allows no throttle or limit on a layer), so
    /// their gate's generator is never used.
    pub fn new(layers: Vec<LayerParams>, run_seed: u64) -> Gateways {
        let gates = layers
            .iter()
            .map(|l| {
                debug_assert!(l.gate.throttle.is_none() && l.gate.limit.is_none(), "not on a layer");
                Gate::new(&l.gate, 1, stream(run_seed, Stream::Gateways))
            })
            .collect();
        Gateways {
            routes: layers.iter().map(|l| l.route).collect(),
            layers: layers.into_iter().map(|l| l.retry).collect(),
            gates,
            tickets: Vec::new(),
            free: Vec::new(),
            rng: stream(run_seed, Stream::Gateways),
        }
    }

    /// Whether `ticket`'s layer is the one that calls the server.
    #[inline]
    pub fn calls_server(&self, ticket: u32) -> bool {
        self.get(ticket).layer as usize + 1 == self.layers.len()
    }

    #[inline]
    pub fn get(&self, ticket: u32) -> &Ticket {
        &self.tickets[ticket as usize]
    }

    /// Layer `layer` receives a request of operation `op` from `caller` at `now`: a new ticket,
    /// holding one reference until it is sent down (see [`Gateways::send`]).
    pub fn open(&mut self, op: u32, layer: usize, caller: Caller, now: Instant) -> u32 {
        let t = Ticket {
            op,
            layer: layer as u8,
            owes_answer: true,
            waiting: false,
            caller,
            attempts: 0,
            k: 0,
            refs: 1,
            gives_up_at: Instant::NEVER,
            received: now,
            route_ends: self.routes[layer].ends(now),
            sent: now,
            backoff: self.layers[layer].backoff.initial_state(),
            last_cost: CostClass::NONE,
        };
        let gate = &mut self.gates[layer];
        if !gate.is_empty() {
            gate.op_started(0, now);
        }
        if let Some(id) = self.free.pop() {
            self.tickets[id as usize] = t;
            id
        } else {
            assert!(self.tickets.len() < MAX_TICKETS, "more than {MAX_TICKETS} gateway requests in flight");
            self.tickets.push(t);
            (self.tickets.len() - 1) as u32
        }
    }

    /// `ticket` sends its next attempt at `now`: its number, and when the layer stops waiting
    /// for it ([`Instant::NEVER`]: no timeout). The caller takes a reference for the request
    /// sent down and one for the timeout event, if any ([`Gateways::retain`]).
    pub fn send(&mut self, ticket: u32, now: Instant) -> (u32, Instant) {
        let policy = self.layers[self.get(ticket).layer as usize];
        let t = &mut self.tickets[ticket as usize];
        t.attempts += 1;
        t.waiting = true;
        t.sent = now;
        t.gives_up_at = policy.gives_up_at(t.received, now).min(t.route_ends);
        (t.attempts, t.gives_up_at)
    }

    /// Whether `ticket`'s route timeout has fired by `now` (then it answers [`ROUTE_TIMEOUT`]
    /// instead of sending its next attempt).
    #[inline]
    pub fn route_expired(&self, ticket: u32, now: Instant) -> bool {
        now >= self.get(ticket).route_ends
    }

    /// Whether `ticket`'s layer lets its next attempt go down at `now` (its breaker may refuse
    /// it; then the ticket must answer [`LOCAL_REFUSAL`]). Always, for a layer without
    /// controls.
    pub fn admit(&mut self, ticket: u32, now: Instant) -> bool {
        let t = self.get(ticket);
        let (layer, next) = (t.layer as usize, t.attempts + 1);
        let gate = &mut self.gates[layer];
        gate.is_empty() || matches!(gate.admit(0, now, next, true), Admit::Send)
    }

    /// `ticket` answers its caller now with `reply`, as its last word: the layer's controls
    /// see its request end.
    pub fn finish(&mut self, ticket: u32, reply: Reply) {
        let t = &self.tickets[ticket as usize];
        let gate = &mut self.gates[t.layer as usize];
        if !gate.is_empty() {
            gate.op_ended(0, reply.outcome == Outcome::Success, t.last_cost);
        }
        self.answer_sent(ticket);
    }

    /// The layer's controls learn that its current attempt ended with `outcome` at `now`.
    fn tell_gate(&mut self, ticket: u32, outcome: Outcome, now: Instant) {
        let t = &self.tickets[ticket as usize];
        let layer = t.layer as usize;
        self.gates[layer].hop_answered(&self.layers[layer], t.attempts, outcome, t.sent, now);
    }

    /// Whether `ticket` still waits for the outcome of its attempt `attempt` (not after it
    /// timed out, nor once the ticket answered).
    fn awaits(&self, ticket: u32, attempt: u32) -> bool {
        let t = self.get(ticket);
        t.waiting && t.attempts == attempt && t.owes_answer
    }

    /// The answer to attempt `attempt` of `ticket` arrived at `now`: `None` when the layer no
    /// longer waits for it.
    pub fn answered(&mut self, ticket: u32, attempt: u32, reply: Reply, now: Instant) -> Option<Step> {
        if !self.awaits(ticket, attempt) {
            return None;
        }
        self.tell_gate(ticket, reply.outcome, now);
        if reply.outcome == Outcome::Success {
            self.tickets[ticket as usize].waiting = false;
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
            self.tickets[ticket as usize].waiting = false;
            return Some(Step::Answer(ROUTE_TIMEOUT));
        }
        Some(self.failed(ticket, Reply::of(Outcome::Timeout), now))
    }

    /// The layer's decision after a failed attempt.
    fn failed(&mut self, ticket: u32, reply: Reply, now: Instant) -> Step {
        let layer = self.get(ticket).layer as usize;
        let policy = self.layers[layer];
        let t = &mut self.tickets[ticket as usize];
        t.waiting = false;
        if self.routes[layer].stops_on(reply.retry_after.is_overloaded()) {
            return Step::Answer(reply);
        }
        let failed = FailedAttempt {
            outcome: reply.outcome,
            attempt: t.attempts,
            k: t.k + 1,
            retry_after: reply.retry_after.decode(),
            started: t.received,
            now,
        };
        match self.gates[layer].hop_decision(
            &policy,
            &failed,
            &mut t.backoff,
            &mut t.last_cost,
            &mut self.rng,
        ) {
            Decision::Retry { delay, .. } => {
                t.k += 1;
                // A backoff past the route's end ends there: the next send answers 504.
                Step::Retry(route::retry_at(now, delay, t.route_ends).since(now))
            }
            Decision::Stop(_) => Step::Answer(reply),
        }
    }

    /// `ticket` answers its caller now: it no longer owes it anything. The caller's reference
    /// is the caller's to release, after it handled the answer.
    fn answer_sent(&mut self, ticket: u32) {
        self.tickets[ticket as usize].owes_answer = false;
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
    use crate::policy::{Backoff, RetryAfterMode, RetryAfterPolicy, RetryOn};

    /// A layer's policy as the assembly layer builds it: a 5 ms constant backoff, the default
    /// `retry_on`, no deadline, Retry-After not read.
    fn layer(max_attempts: u32, timeout_ms: Option<u64>, honor_dont_retry: bool) -> RetryPolicy {
        RetryPolicy {
            backoff: Backoff::Constant { base_ns: 5e6 },
            retry_on: RetryOn::default(),
            max_attempts,
            timeout: timeout_ms.map(Span::from_millis),
            deadline: None,
            retry_after: RetryAfterPolicy { honor: false, cap: None, mode: RetryAfterMode::Replace },
            honor_dont_retry,
        }
    }

    /// A layer without controls of its own.
    fn plain(retry: RetryPolicy) -> LayerParams {
        LayerParams { retry, gate: GateParams::default(), route: Route::default() }
    }

    const FAIL: Reply = Reply { outcome: Outcome::Status(503), retry_after: RetryAfterCode::NONE };

    #[test]
    fn a_layer_retries_up_to_its_attempts_then_answers_its_last_failure() {
        let mut g = Gateways::new(vec![plain(layer(3, None, false))], 1);
        let t = g.open(7, 0, Caller::Client { attempt: 1 }, Instant::ZERO);
        for n in 1..=3 {
            let (attempt, gives_up) = g.send(t, Instant::ZERO);
            assert_eq!((attempt, gives_up), (n, Instant::NEVER));
            let step = g.answered(t, attempt, FAIL, Instant::ZERO);
            let expected = if n < 3 { Step::Retry(Span::from_millis(5)) } else { Step::Answer(FAIL) };
            assert_eq!(step, Some(expected), "attempt {n}");
        }
    }

    #[test]
    fn a_success_is_answered_and_late_answers_are_ignored() {
        let mut g = Gateways::new(vec![plain(layer(3, Some(100), false))], 1);
        let t = g.open(0, 0, Caller::Client { attempt: 2 }, Instant::ZERO);
        let (a1, gives_up) = g.send(t, Instant::ZERO);
        assert_eq!(gives_up, Instant::ZERO + Span::from_millis(100));
        assert_eq!(g.timed_out(t, a1, gives_up), Some(Step::Retry(Span::from_millis(5))));
        assert_eq!(g.answered(t, a1, Reply::SUCCESS, gives_up), None, "attempt 1 is no longer awaited");
        let (a2, _) = g.send(t, gives_up + Span::from_millis(5));
        assert_eq!(g.timed_out(t, a1, gives_up + Span::from_millis(6)), None, "a stale timer");
        assert_eq!(g.answered(t, a2, Reply::SUCCESS, gives_up), Some(Step::Answer(Reply::SUCCESS)));
        g.answer_sent(t);
        assert_eq!(g.answered(t, a2, FAIL, gives_up), None, "answered already");
    }

    #[test]
    fn dont_retry_stops_a_layer_that_honours_it() {
        let dont = Reply { outcome: Outcome::Status(503), retry_after: RetryAfterCode::DONT_RETRY };
        for (honor, expected) in [(true, Step::Answer(dont)), (false, Step::Retry(Span::from_millis(5)))] {
            let mut g = Gateways::new(vec![plain(layer(3, None, honor))], 1);
            let t = g.open(0, 0, Caller::Client { attempt: 1 }, Instant::ZERO);
            let (a, _) = g.send(t, Instant::ZERO);
            assert_eq!(g.answered(t, a, dont, Instant::ZERO), Some(expected), "honor_dont_retry = {honor}");
        }
    }

    #[test]
    fn a_ticket_lives_while_referenced_and_hangs_up_on_its_caller_if_it_never_answered() {
        let mut g = Gateways::new(vec![plain(layer(2, None, false)), plain(layer(2, None, false))], 1);
        let caller = Caller::Layer { ticket: 3, attempt: 1 };
        let t = g.open(9, 1, caller, Instant::ZERO);
        assert!(g.calls_server(t));
        g.retain(t); // the request sent down
        assert_eq!(g.release(t), None, "the opening reference goes, the request's stays");
        assert_eq!(g.live(), 1);
        assert_eq!(g.release(t), Some((9, Some(caller))), "dropped without an answer: it hangs up");
        assert_eq!(g.live(), 0);
        let u = g.open(1, 0, Caller::Client { attempt: 1 }, Instant::ZERO);
        assert_eq!(u, t, "the slot is reused");
        assert!(!g.calls_server(u));
        g.answer_sent(u);
        assert_eq!(g.release(u), Some((1, None)), "answered: freed, nothing owed");
    }

    #[test]
    fn packing_round_trips() {
        for (t, a) in [(0, 1), (1, 255), ((1 << 24) - 1, 7)] {
            assert_eq!(unpack(pack(t, a)), (t, a));
        }
    }
}
