//! Hedged calls wired to the queue model's events (DESIGN §4.10). A hedged operation's first
//! copy is sent like any first attempt; a `Hedge` event sends the next copy when the delay
//! runs out without an answer. Answers go through A6's rules
//! ([`crate::policy::hedge::HedgeParams::after_answer`]): the first success wins, a non-fatal
//! failure sends the next copy at once (or after the pushback), a fatal one fails the call.
//! The copies still out when the call is decided are cancelled: the server removes a queued
//! one, and stops one in service only with `cancel_in_service`; a copy cancelled on its way
//! to the server is dropped when it arrives (the cancellation follows it on the same
//! connection).
//!
//! Out of line throughout: a run without hedging never calls into this file, and a plain run
//! has the calls compiled away (`has_hedging`).

use super::{Ev, Kind, QueueModel};
use crate::engine::{EventQueue, Scheduler, Span};
use crate::model::clients::{Attempt, Sent};
use crate::model::hedges::Hedges;
use crate::model::server::{Cancelled, Reply};
use crate::policy::hedge::AfterAnswer;
use crate::policy::{FailReason, Outcome, RetryAfter};

impl Ev {
    /// `op`'s hedge timer number `timer` ran out: its next copy goes out.
    #[inline(always)]
    pub fn hedge(op: u32, timer: u32) -> Ev {
        Ev::of(Kind::Hedge, op, timer, 0)
    }
}

impl<const PLAIN: bool> QueueModel<PLAIN> {
    /// Whether the strategy hedges (never, compiled for a plain run).
    #[inline(always)]
    pub(super) fn has_hedging(&self) -> bool {
        !PLAIN && self.hedges.is_some()
    }

    fn hedges(&mut self) -> &mut Hedges {
        self.hedges.as_mut().expect("only called when hedging")
    }

    /// A hedged operation sends its first copy (if the gate lets it), then arms its hedge
    /// timer, or sends every copy now with a delay of 0.
    #[inline(never)]
    pub(super) fn send_first_copy<Q: EventQueue<Ev>>(&mut self, op: u32, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        let attempt = match self.clients.send::<PLAIN>(op, now, &mut self.rec) {
            Sent::Attempt(a) => a,
            Sent::Wait(wait) => return s.schedule_in(wait, Ev::send(op)),
            Sent::Ended(next) => return self.op_ended(op, next, s),
        };
        let client = self.clients.ops.get(op).client;
        self.hedges().started(op, client, attempt.number, now);
        self.launch(op, attempt, s);
        self.arm(op, s);
    }

    /// Copy `attempt` of `op` leaves: its timeout timer, then the request hop.
    fn launch<Q: EventQueue<Ev>>(&mut self, op: u32, attempt: Attempt, s: &mut Scheduler<Ev, Q>) {
        if !attempt.gives_up_at.is_never() {
            self.clients.ops.get(op).refs += 1;
            s.schedule_at(attempt.gives_up_at, Ev::timeout(op, attempt.number));
        }
        self.dispatch(op, attempt.number, attempt.gives_up_at, s)
    }

    /// Arms `op`'s timer for its next copy on the delay grid; a delay of 0 sends the copies
    /// at once instead.
    fn arm<Q: EventQueue<Ev>>(&mut self, op: u32, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        let client = self.clients.ops.get(op).client;
        while let Some(delay) = self.hedges().next_delay(op, client, now) {
            if delay > Span::ZERO {
                let timer = self.hedges().call(op).timer;
                // The event holds a reference on the operation.
                self.clients.ops.get(op).refs += 1;
                return s.schedule_in(delay, Ev::hedge(op, timer));
            }
            self.hedges().drop_timer(op);
            self.send_hedge(op, s);
        }
    }

    /// The next copy of `op` goes out now, unless the hedge budget or a control blocks it.
    fn send_hedge<Q: EventQueue<Ev>>(&mut self, op: u32, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        let client = self.clients.ops.get(op).client;
        if !self.hedges().take_token(client) {
            return self.hedges().blocked(op);
        }
        match self.clients.send_hedge(op, now, &mut self.rec) {
            None => self.hedges().blocked(op),
            Some(attempt) => {
                self.hedges().sent(op, attempt.number, now);
                self.rec.hedge_sent();
                self.launch(op, attempt, s);
            }
        }
    }

    /// `op`'s hedge timer number `timer` ran out: the next copy goes out and the timer is
    /// armed again (a stale timer, or one of an ended operation, does nothing).
    #[inline(never)]
    pub(super) fn hedge_timer<Q: EventQueue<Ev>>(&mut self, op: u32, timer: u32, s: &mut Scheduler<Ev, Q>) {
        let ended = self.clients.ops.get(op).ended;
        let c = self.hedges().call(op);
        if !ended && c.timer_pending && c.timer == timer {
            c.timer_pending = false;
            self.send_hedge(op, s);
            self.arm(op, s);
            self.settle(op, FailReason::Budget, s);
        }
        self.clients.ops.release(op);
    }

    /// Whether the request of copy `attempt` of `op` was cancelled before it reached the
    /// server: then it is dropped there (its reference let go).
    #[inline(never)]
    pub(super) fn cancelled_on_the_way(&mut self, op: u32, attempt: u32) -> bool {
        if !self.hedges().call(op).is_cancelled(attempt) {
            return false;
        }
        self.clients.ops.release(op);
        true
    }

    /// The answer to copy `attempt` of `op` reached the client.
    #[inline(never)]
    pub(super) fn copy_answered<Q: EventQueue<Ev>>(
        &mut self,
        op: u32,
        attempt: u32,
        reply: Reply,
        s: &mut Scheduler<Ev, Q>,
    ) {
        let ended = self.clients.ops.get(op).ended;
        if ended || !self.hedges().call(op).is_out(attempt) {
            // A late answer: its copy was cancelled or abandoned, or the call is decided.
            return;
        }
        let (now, client) = (s.now(), self.clients.ops.get(op).client);
        let late = self.hedges().call(op).is_late(attempt);
        self.hedges().answered(op, client, attempt, now, true);
        self.decide(op, attempt, reply.outcome, reply.retry_after.decode(), late, s)
    }

    /// Copy `attempt` of `op` timed out: at the deadline the call fails; at a per-try
    /// timeout the copy is abandoned (cancelled) and counts as a timeout answer, or with
    /// Envoy's hedge on per-try timeout it stays out and the next copy goes out.
    #[inline(never)]
    pub(super) fn copy_timed_out<Q: EventQueue<Ev>>(
        &mut self,
        op: u32,
        attempt: u32,
        s: &mut Scheduler<Ev, Q>,
    ) {
        let ended = self.clients.ops.get(op).ended;
        if ended || !self.hedges().call(op).is_out(attempt) {
            return;
        }
        let now = s.now();
        self.rec.timed_out(now);
        if self.clients.past_deadline(op, now) {
            self.clients.hedge_answered(op, Outcome::Timeout, now, &mut self.rec);
            self.cancel_copies(op, s);
            return self.end_call(op, FailReason::Deadline, s);
        }
        if self.hedges().params().on_per_try_timeout {
            self.hedges().mark_late(op, attempt);
            if self.hedges().may_send(op) {
                self.hedges().drop_timer(op);
                self.send_hedge(op, s);
                self.arm(op, s);
            }
            return;
        }
        if self.cancel_copy(op, attempt, s) {
            self.start_waiting(0, s); // hedging runs with one replica (validate)
        }
        self.decide(op, attempt, Outcome::Timeout, None, false, s)
    }

    /// A6's rules for an answer `outcome` to copy `attempt` (no longer out); `late`: its
    /// per-try timeout had fired (Envoy drops its error).
    fn decide<Q: EventQueue<Ev>>(
        &mut self,
        op: u32,
        attempt: u32,
        outcome: Outcome,
        retry_after: Option<RetryAfter>,
        late: bool,
        s: &mut Scheduler<Ev, Q>,
    ) {
        let now = s.now();
        self.clients.hedge_answered(op, outcome, now, &mut self.rec);
        match self.hedges().params().after_answer(outcome, retry_after) {
            AfterAnswer::Won => {
                if !self.hedges().call(op).is_first(attempt) {
                    self.rec.hedge_won();
                }
                self.hedges().drop_timer(op);
                self.cancel_copies(op, s);
                let next = self.clients.succeed::<PLAIN>(op, now, &mut self.rec);
                self.op_ended(op, next, s)
            }
            // Envoy: an error after the per-try timeout is dropped.
            _ if late => self.settle(op, FailReason::Exhausted, s),
            AfterAnswer::Fatal => {
                self.hedges().drop_timer(op);
                self.cancel_copies(op, s);
                self.end_call(op, FailReason::NonRetryable, s)
            }
            AfterAnswer::NonFatal { next_in } => {
                match next_in {
                    None => self.hedges().stop(op),
                    Some(_) if !self.hedges().may_send(op) => {}
                    Some(Span::ZERO) => {
                        self.hedges().drop_timer(op);
                        self.send_hedge(op, s);
                        self.arm(op, s);
                    }
                    Some(pushback) => {
                        let timer = self.hedges().timer_in(op);
                        self.clients.ops.get(op).refs += 1;
                        s.schedule_in(pushback, Ev::hedge(op, timer));
                    }
                }
                self.settle(op, FailReason::Exhausted, s)
            }
        }
    }

    /// `op` fails for `reason` if nothing of it is left: no copy out, no timer pending.
    fn settle<Q: EventQueue<Ev>>(&mut self, op: u32, reason: FailReason, s: &mut Scheduler<Ev, Q>) {
        let ended = self.clients.ops.get(op).ended;
        let c = self.hedges().call(op);
        if !ended && !c.any_out() && !c.timer_pending {
            self.end_call(op, reason, s)
        }
    }

    /// The hedged call `op` fails for `reason`.
    fn end_call<Q: EventQueue<Ev>>(&mut self, op: u32, reason: FailReason, s: &mut Scheduler<Ev, Q>) {
        self.hedges().drop_timer(op);
        let next = self.clients.fail_locally::<PLAIN>(op, reason, s.now(), &mut self.rec);
        self.op_ended(op, next, s)
    }

    /// Cancels every copy of `op` still out.
    fn cancel_copies<Q: EventQueue<Ev>>(&mut self, op: u32, s: &mut Scheduler<Ev, Q>) {
        let out: Vec<u32> = self.hedges().call(op).out_attempts().collect();
        let mut freed = false;
        for attempt in out {
            freed |= self.cancel_copy(op, attempt, s);
        }
        if freed {
            self.start_waiting(0, s); // hedging runs with one replica (validate)
        }
    }

    /// Cancels copy `attempt` of `op`: the server removes it from its queue, or stops serving
    /// it with `cancel_in_service`; a request that held a worker frees it for the next one.
    /// Returns whether the server let go of the request (the caller then starts waiting
    /// requests, once every copy is cancelled: a freed worker must not take a copy about to be
    /// cancelled).
    fn cancel_copy<Q: EventQueue<Ev>>(&mut self, op: u32, attempt: u32, s: &mut Scheduler<Ev, Q>) -> bool {
        self.hedges().cancel(op, attempt);
        self.rec.copy_cancelled();
        let in_service = self.hedges().params().cancel_in_service;
        match self.server.cancel(op, attempt, in_service, s.now()) {
            Cancelled::Removed(_) | Cancelled::Stopped(..) => {
                // The request will never be answered: its reference on the operation goes.
                self.clients.ops.release(op);
                true
            }
            Cancelled::NotHeld => false,
        }
    }

    /// A worker's `Done` event for a request that was stopped: nothing more happens.
    #[inline(never)]
    pub(super) fn reaped(&mut self, worker: u32) -> bool {
        self.server.reap_stopped(worker)
    }
}
