//! The client side shared by every server model: operations, their retry loop, the gate
//! around every attempt, and the closed workload's per-client sequencing.
//!
//! The model owns the run's recorder and lends it to each call that measures something, so
//! that what is counted, and where, is visible at the call.
//!
//! The per-attempt methods take `PLAIN`: the model passes `true` when the run is plain
//! ([`Clients::is_plain`] and the rest of [`super::queue_model`]'s conditions), and the
//! method is then compiled without the tests of what plain clients never have (controls,
//! per-operation ids, timers, Retry-After). `false` runs every test.

use super::ops::{Op, OpTable};
use super::priorities::{Class, Priorities, PriorityParams};
use super::workload::Workload;
use super::workspace::Leftovers;
use crate::engine::rng::{Stream, derive};
use crate::engine::{Instant, Span};
use crate::metrics::recovery::FaultSpan;
use crate::metrics::series::Gauge;
use crate::metrics::{RunMetrics, RunRecorder};
use crate::policy::gate::{Admit, Answered, CostClass, Gate};
use crate::policy::{
    AppRetry, DeadLetter, Decision, FailReason, FailedAttempt, Outcome, RedriveSchedule, RetryAfter,
    RetryPolicy,
};
use rand::SeedableRng;
use rand_xoshiro::SplitMix64;

/// What the model must do after an operation's attempt failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterFailure {
    /// Send the next attempt after this delay.
    Retry(Span),
    /// The operation ended (failed, or dead-lettered without a re-drive); maybe a
    /// closed-workload client starts its next one.
    Ended(Option<NextOp>),
    /// The operation was dead-lettered and is re-driven at `at` ([`Clients::redrive`]); the
    /// slot stays taken until then.
    Redrive { at: Instant, next: Option<NextOp> },
}

/// A closed-workload client's next operation, to be started at `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextOp {
    pub client: u32,
    pub at: Instant,
}

/// An attempt just sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// 1-based attempt number within the operation.
    pub number: u32,
    /// When the client stops waiting for it ([`Instant::NEVER`] = never).
    pub gives_up_at: Instant,
}

/// What became of an attempt the client wanted to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// It left the client.
    Attempt(Attempt),
    /// The gate holds it back: try again after this wait.
    Wait(Span),
    /// The gate refused it: the operation failed locally.
    Ended(Option<NextOp>),
}

/// How operations are delivered, besides the retry policy: a dead-letter queue, the
/// application's retry loop above the library's, and for a queue workload the consumers'
/// visibility timeout.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Delivery {
    pub dead_letter: Option<DeadLetter>,
    /// The application runs the library's whole retry loop again when it fails
    /// ([`AppRetry`]; each pass starts with its first send).
    pub app_retry: Option<AppRetry>,
    /// A queue workload's visibility timeout: an attempt (a receive) is waited for this long
    /// from when a consumer takes it, not from when it is sent, and an error answer does not
    /// end the wait (a consumer that fails does not delete the message).
    pub visibility: Option<Span>,
}

pub struct Clients {
    pub ops: OpTable,
    policy: RetryPolicy,
    gate: Gate,
    /// Whether the gate has any control (`!gate.is_empty()`, asked once): without, the
    /// clients skip every call into it and what only it needs.
    controls: bool,
    /// Root of the jitter streams; `None` when the backoff draws nothing.
    jitter_root: Option<u64>,
    /// Operations started so far (an open workload's per-operation jitter stream label).
    started: u64,
    /// Closed workload: operations each client has yet to start.
    remaining: Vec<u32>,
    think: Span,
    /// The dead-letter queue (`dead_letter`): operations whose tries are used up go there
    /// instead of failing.
    dead_letter: Option<DeadLetter>,
    /// When dead-lettered operations are re-driven (`redrive`).
    redrives: Option<RedriveSchedule>,
    /// [`Delivery::app_retry`].
    app_retry: Option<AppRetry>,
    /// [`Delivery::visibility`].
    visibility: Option<Span>,
    /// Priority classes (`[workload] priorities`): each operation's class and the per-class
    /// measures.
    priorities: Option<Priorities>,
}

impl Clients {
    /// `with_extra`: keep per-operation ids (idempotency keys); backoff resets (gRPC
    /// pushback) and a dead-letter queue need them too and are added here. `ops` is a table to
    /// reuse (emptied here; a new `OpTable::default()` will do).
    pub fn new(
        workload: &Workload,
        policy: RetryPolicy,
        gate: Gate,
        run_seed: u64,
        with_extra: bool,
        delivery: Delivery,
        mut ops: OpTable,
    ) -> Clients {
        let Delivery { dead_letter, app_retry, visibility } = delivery;
        let with_extra = with_extra
            || gate.has_limit()
            || dead_letter.is_some()
            || app_retry.is_some()
            || visibility.is_some()
            || matches!(policy.retry_after.mode, crate::policy::RetryAfterMode::GrpcPushback);
        // Streams nobody reads are not made. Envoy's reading of Retry-After draws from the
        // jitter stream too (`U(v, 1.5 v)`), whatever the backoff.
        let envoy_jitter = policy.retry_after.honor
            && matches!(policy.retry_after.mode, crate::policy::RetryAfterMode::Envoy { .. });
        let app_jitter = app_retry.is_some_and(|a| a.backoff.is_random());
        let jitter_root = (policy.backoff.is_random() || envoy_jitter || app_jitter)
            .then(|| derive(run_seed, Stream::Jitter as u64));
        let (remaining, think, capacity) = match *workload {
            Workload::Closed { clients, ops_per_client, think, .. } => {
                (vec![ops_per_client; clients as usize], think, clients as usize)
            }
            // The model decides when a serial client's next call starts (and stops them).
            Workload::Serial { clients, .. } => {
                (vec![u32::MAX; clients as usize], Span::ZERO, clients as usize)
            }
            Workload::Open { .. } => (Vec::new(), Span::ZERO, 1024),
        };
        ops.reset(capacity, with_extra);
        let redrives = dead_letter.and_then(|d| d.redrive).map(RedriveSchedule::new);
        Clients {
            ops,
            policy,
            controls: !gate.is_empty(),
            gate,
            jitter_root,
            started: 0,
            remaining,
            think,
            dead_letter,
            redrives,
            app_retry,
            visibility,
            priorities: None,
        }
    }

    /// A queue workload's visibility timeout ([`Delivery::visibility`]).
    #[inline]
    pub fn visibility(&self) -> Option<Span> {
        self.visibility
    }

    /// A consumer took attempt `attempt` of `slot`: whether its visibility timer starts now
    /// (once per attempt, at the first taking).
    pub fn starts_visibility(&mut self, slot: u32, attempt: u32) -> bool {
        let e = self.ops.extra(slot);
        let first = e.visible_attempt != attempt;
        e.visible_attempt = attempt;
        first
    }

    /// Whether the clients are plain: no controls, no per-operation ids (which a dead-letter
    /// queue and a visibility timeout need too), and a plain retry policy ([`RetryPolicy::is_plain`]).
    /// Operations draw priority classes (`[workload] priorities`; `run_seed` seeds the draws).
    /// Called before the first operation starts.
    pub fn with_priorities(mut self, params: Option<PriorityParams>, run_seed: u64) -> Clients {
        if let Some(p) = params {
            // The class lives in the operation's side data.
            self.ops.keep_extra();
            self.priorities = Some(Priorities::new(p, run_seed));
        }
        self
    }

    /// Whether operations have priority classes.
    pub fn has_priorities(&self) -> bool {
        self.priorities.is_some()
    }

    /// The priority class of `slot`'s operation, when classes are used.
    #[inline]
    pub fn class_of(&mut self, slot: u32) -> Option<Class> {
        self.priorities.as_ref()?;
        Some(self.ops.extra(slot).priority)
    }

    /// Counts a request of `class` reaching the server (classes are used).
    #[inline]
    pub fn class_server_call(&mut self, class: Class) {
        if let Some(p) = &mut self.priorities {
            p.server_call(class);
        }
    }

    pub fn is_plain(&self) -> bool {
        !self.controls && !self.ops.has_extra() && self.policy.is_plain()
    }

    /// Attempts of `slot` before the current pass of its retry loop (0 but in a re-drive;
    /// always 0, compiled for plain clients).
    #[inline(always)]
    fn attempt_base<const PLAIN: bool>(&mut self, slot: u32) -> u32 {
        if !PLAIN && self.ops.has_extra() { self.ops.extra(slot).attempt_base } else { 0 }
    }

    /// Whether `slot`'s operation was dead-lettered (and is now in its re-drive, if it is
    /// sending; never, compiled for plain clients).
    #[inline(always)]
    pub fn dead_lettered<const PLAIN: bool>(&mut self, slot: u32) -> bool {
        !PLAIN && self.dead_letter.is_some() && self.ops.extra(slot).dead_lettered
    }

    /// How many times `slot`'s operation was given a new idempotency key, by a re-drive or a
    /// new pass of the application's loop (part of its key).
    #[inline]
    pub fn new_keys(&mut self, slot: u32) -> u8 {
        if self.ops.has_extra() { self.ops.extra(slot).new_keys } else { 0 }
    }

    /// When `slot`'s operation started, as the user sees it: its first pass's start. The
    /// operation's `started` is its current pass's, from which the library's deadline counts
    /// (they differ only with the application's loop; compiled so for plain clients).
    #[inline(always)]
    fn first_started<const PLAIN: bool>(&mut self, slot: u32) -> Instant {
        if !PLAIN && self.app_retry.is_some() {
            self.ops.extra(slot).first_started
        } else {
            self.ops.get(slot).started
        }
    }

    /// Whether the gate has controls to consult (never, compiled for plain clients).
    #[inline(always)]
    fn has_controls<const PLAIN: bool>(&self) -> bool {
        debug_assert!(!PLAIN || !self.controls);
        !PLAIN && self.controls
    }

    /// Starts an operation of `client` at `now`; returns its slot. The caller sends the first
    /// attempt with [`Clients::send`].
    // Always inlined: once the dead-letter queue grew this file, the plain copy called it (100 k
    // calls on the 10k herd; benches/README.md).
    #[inline(always)]
    pub fn start<const PLAIN: bool>(&mut self, client: u32, now: Instant, rec: &mut RunRecorder) -> u32 {
        // Each operation draws its jitter from its own stream, labelled by its client and an
        // index unique within that client: in a closed workload the number of operations the
        // client has left after this one, in an open one the arrival number. The same
        // operation gets the same draws under every strategy, whatever the interleaving, and
        // the state lives in the operation (one cache line per event).
        let index = match self.remaining.get_mut(client as usize) {
            Some(left) => {
                *left -= 1;
                *left as u64
            }
            None => self.started,
        };
        self.started += 1;
        let jitter = SplitMix64::seed_from_u64(
            self.jitter_root.map_or(0, |root| derive(derive(root, client as u64), index)),
        );
        rec.op_started::<PLAIN>(now);
        if self.has_controls::<PLAIN>() {
            self.gate.op_started(client, now);
        }
        let slot = self.ops.insert(Op::new(now, client, self.policy.backoff.initial_state(), jitter));
        if !PLAIN && let Some(p) = &mut self.priorities {
            self.ops.extra(slot).priority = p.draw();
        }
        if !PLAIN && let Some(a) = &self.app_retry {
            let initial = a.backoff.initial_state();
            let e = self.ops.extra(slot);
            (e.passes, e.first_started, e.app_backoff) = (1, now, initial);
        }
        slot
    }

    /// The operation wants to send its next attempt at `now`: the gate admits it (then it is
    /// recorded as a call), holds it back, or refuses it (then the operation ends).
    #[inline]
    pub fn send<const PLAIN: bool>(&mut self, slot: u32, now: Instant, rec: &mut RunRecorder) -> Sent {
        if !PLAIN && self.app_retry.is_some() && self.ops.extra(slot).pass_pending {
            self.begin_pass(slot, now);
        }
        let controls = self.has_controls::<PLAIN>();
        if controls {
            let base = self.attempt_base::<PLAIN>(slot);
            let op = self.ops.get(slot);
            let paid = std::mem::take(&mut op.wait_paid);
            match self.gate.admit(op.client, now, op.attempts - base + 1, paid) {
                Admit::Send if self.gate.has_limit() => {
                    self.ops.extra(slot).limit_inflight = self.gate.limit_inflight();
                }
                Admit::Send => {}
                Admit::Wait(wait) => {
                    self.ops.get(slot).wait_paid = true;
                    return Sent::Wait(wait);
                }
                Admit::Refuse(reason) => {
                    if !PLAIN
                        && self.app_retry.is_some()
                        && let Some(delay) = self.app_retries(slot, reason)
                    {
                        return Sent::Wait(delay);
                    }
                    return Sent::Ended(self.end_failed::<PLAIN>(slot, reason, now, rec));
                }
            }
        }
        let op = self.ops.get(slot);
        op.attempts += 1;
        op.waiting = true;
        if controls {
            // Only the controls read when the attempt was sent (slow calls, latencies).
            op.note_sent(now);
        }
        let gives_up_at = if PLAIN { Instant::NEVER } else { self.policy.gives_up_at(op.started, now) };
        let a = Attempt { number: op.attempts, gives_up_at };
        rec.call_sent(now);
        Sent::Attempt(a)
    }

    /// Whether the client is still waiting for this attempt's answer.
    #[inline]
    pub fn is_waiting(&mut self, slot: u32, attempt: u32) -> bool {
        let op = self.ops.get(slot);
        !op.ended && op.waiting && op.attempts == attempt
    }

    /// The attempt the client was waiting for succeeded at `now`: the operation succeeded.
    #[inline]
    pub fn succeed<const PLAIN: bool>(
        &mut self,
        slot: u32,
        now: Instant,
        rec: &mut RunRecorder,
    ) -> Option<NextOp> {
        if self.has_controls::<PLAIN>() {
            self.tell_gate(slot, Outcome::Success, now, rec);
        }
        if self.dead_lettered::<PLAIN>(slot) {
            rec.redrive_succeeded();
            return self.end_redrive::<PLAIN>(slot, true);
        }
        let started = self.first_started::<PLAIN>(slot);
        let op = self.ops.get(slot);
        let (client, attempts) = (op.client, op.attempts);
        rec.op_succeeded::<PLAIN>(started, attempts, now);
        if !PLAIN && let Some(p) = &mut self.priorities {
            p.succeeded(self.ops.extra(slot).priority, now.since(started));
        }
        if self.has_controls::<PLAIN>() {
            let last_cost = self.ops.get(slot).last_cost;
            self.gate.op_ended(client, true, last_cost);
        }
        self.ops.end(slot);
        self.next_op(client, now)
    }

    /// The attempt the client was waiting for failed with `outcome` (and the server's
    /// Retry-After, if any) at `now`: retry, or end.
    #[inline]
    pub fn fail<const PLAIN: bool>(
        &mut self,
        slot: u32,
        outcome: Outcome,
        retry_after: Option<RetryAfter>,
        now: Instant,
        rec: &mut RunRecorder,
    ) -> AfterFailure {
        if self.has_controls::<PLAIN>() {
            self.tell_gate(slot, outcome, now, rec);
        }
        let (backoff_from, base) = if !PLAIN && self.ops.has_extra() {
            let e = self.ops.extra(slot);
            (e.backoff_from, e.attempt_base)
        } else {
            (0, 0)
        };
        let op = self.ops.get(slot);
        op.waiting = false;
        let failed = FailedAttempt {
            outcome,
            attempt: op.attempts - base,
            k: op.attempts - backoff_from,
            started: op.started,
            now,
            retry_after,
        };
        let decision = if PLAIN {
            // Plain: no controls, and the decision is compiled without the timer and
            // Retry-After steps.
            self.policy.after_failure_plain(&failed, &mut op.backoff, &mut (), &mut op.jitter)
        } else if self.controls {
            let mut controls = self.gate.client(op.client, &mut op.last_cost);
            self.policy.after_failure(&failed, &mut op.backoff, &mut controls, &mut op.jitter)
        } else {
            // No controls: `()` permits every retry, and the decision is compiled without them.
            self.policy.after_failure(&failed, &mut op.backoff, &mut (), &mut op.jitter)
        };
        match decision {
            Decision::Retry { delay, reset_backoff } => {
                if reset_backoff {
                    op.backoff = self.policy.backoff.initial_state();
                    let attempts = op.attempts;
                    self.ops.extra(slot).backoff_from = attempts;
                }
                AfterFailure::Retry(delay)
            }
            Decision::Stop(FailReason::Exhausted) if !PLAIN && self.dead_letter.is_some() => {
                self.dead_letter(slot, now, rec)
            }
            Decision::Stop(reason) if !PLAIN && self.app_retry.is_some() => {
                match self.app_retries(slot, reason) {
                    Some(delay) => AfterFailure::Retry(delay),
                    None => AfterFailure::Ended(self.end_failed::<PLAIN>(slot, reason, now, rec)),
                }
            }
            Decision::Stop(reason) => AfterFailure::Ended(self.end_failed::<PLAIN>(slot, reason, now, rec)),
        }
    }

    /// The library's retry loop for `slot` gave up with `reason`: whether the application runs
    /// it again ([`AppRetry::after_pass`]), and after what delay. If so, the pass is over for
    /// the library's controls (an operation that failed), and the next send begins the new
    /// pass ([`Clients::begin_pass`]).
    #[cold]
    #[inline(never)]
    fn app_retries(&mut self, slot: u32, reason: FailReason) -> Option<Span> {
        let app = self.app_retry?;
        let e = self.ops.extra(slot);
        let (passes, mut state) = (e.passes, e.app_backoff);
        let op = self.ops.get(slot);
        let delay = app.after_pass(passes as u32, reason, &mut state, &mut op.jitter)?;
        let client = op.client;
        let e = self.ops.extra(slot);
        e.app_backoff = state;
        e.passes += 1;
        e.pass_pending = true;
        if self.controls {
            self.gate.op_ended(client, false, CostClass::NONE);
        }
        Some(delay)
    }

    /// The application's next pass of `slot` starts at `now`, with its first send: the
    /// library's loop starts over (attempt numbers, backoff and deadline), as for a new call
    /// (a new idempotency key with `key = "new"`; a new operation to the controls). The
    /// operation's latency still counts from its first pass.
    #[cold]
    #[inline(never)]
    fn begin_pass(&mut self, slot: u32, now: Instant) {
        self.ops.extra(slot).pass_pending = false;
        let new_key = self.app_retry.is_some_and(|a| a.new_key);
        self.start_pass(slot, now, new_key);
    }

    /// A new pass of `slot`'s retry loop (a re-drive's, or the application's) starts at `now`:
    /// attempt numbers, backoff and deadline start over, attempt numbers keep increasing (late
    /// answers of the last pass are ignored), maybe with a new idempotency key, and the
    /// controls see a new operation.
    fn start_pass(&mut self, slot: u32, now: Instant, new_key: bool) {
        let initial = self.policy.backoff.initial_state();
        let op = self.ops.get(slot);
        op.started = now;
        op.backoff = initial;
        let (attempts, client) = (op.attempts, op.client);
        let e = self.ops.extra(slot);
        e.attempt_base = attempts;
        e.backoff_from = attempts;
        if new_key {
            e.new_keys = e.new_keys.wrapping_add(1);
        }
        if self.controls {
            self.gate.op_started(client, now);
        }
    }

    /// The operation's tries are used up and it has a dead-letter queue: it is dead-lettered
    /// (an ending of its own, neither success nor failure), and maybe scheduled for its
    /// re-drive. A re-drive whose tries are used up again just ends: the operation was
    /// counted already, and is re-driven once.
    #[cold]
    #[inline(never)]
    fn dead_letter(&mut self, slot: u32, now: Instant, rec: &mut RunRecorder) -> AfterFailure {
        if self.ops.extra(slot).dead_lettered {
            return AfterFailure::Ended(self.end_redrive::<false>(slot, false));
        }
        self.ops.extra(slot).dead_lettered = true;
        let op = self.ops.get(slot);
        let (started, client, attempts) = (op.started, op.client, op.attempts);
        rec.op_dead_lettered(started, attempts, now);
        if op.executions > 0 {
            rec.dead_lettered_but_applied();
        }
        if self.controls {
            self.gate.op_ended(client, false, CostClass::NONE);
        }
        let redrive_at = self.redrives.as_mut().and_then(|r| r.schedule(now));
        // Until its re-drive, the slot is held for it (the model's event names it).
        if redrive_at.is_some() {
            self.ops.get(slot).refs += 1;
        }
        self.ops.end(slot);
        let next = self.next_op(client, now);
        match redrive_at {
            Some(at) => AfterFailure::Redrive { at, next },
            None => AfterFailure::Ended(next),
        }
    }

    /// The re-drive of the dead-lettered operation in `slot` starts at `now`: the operation
    /// runs its retry loop again from its first try (a new pass: attempt numbers, backoff and
    /// deadline start over), with its own idempotency key or a new one. The caller sends the
    /// first attempt with [`Clients::send`], then lets go of the slot the re-drive held.
    pub fn redrive(&mut self, slot: u32, now: Instant, rec: &mut RunRecorder) {
        let new_key = self.redrives.as_ref().is_some_and(|r| r.new_key());
        let op = self.ops.get(slot);
        debug_assert!(op.ended && op.refs > 0, "a re-drive revives a dead-lettered operation it holds");
        op.ended = false;
        self.start_pass(slot, now, new_key);
        rec.redriven();
    }

    /// A re-drive ended (`success`, or not): nothing more is counted for the operation, and
    /// no next operation follows (its client moved on when it was dead-lettered).
    fn end_redrive<const PLAIN: bool>(&mut self, slot: u32, success: bool) -> Option<NextOp> {
        if self.has_controls::<PLAIN>() {
            let (client, last_cost) = (self.ops.get(slot).client, self.ops.get(slot).last_cost);
            self.gate.op_ended(client, success, if success { last_cost } else { CostClass::NONE });
        }
        self.ops.end(slot);
        None
    }

    /// Tells the gate how the attempt the client waited for ended (callers check that there
    /// is a gate first, so that a run without controls does not pay for the call); the time
    /// series follows the concurrency limit, if any.
    #[inline(never)]
    fn tell_gate(&mut self, slot: u32, outcome: Outcome, now: Instant, rec: &mut RunRecorder) {
        // The attempt's number in its pass (a re-drive's or the application's): the controls
        // count retries as they were admitted ([`Clients::send`]).
        let base = self.attempt_base::<false>(slot);
        let op = self.ops.get(slot);
        let retryable = self.policy.retry_on.retries(outcome);
        let (attempt, latency, client) = (op.attempts - base, now.since(op.sent_at()), op.client);
        let inflight = if self.gate.has_limit() { self.ops.extra(slot).limit_inflight } else { 0 };
        let a = Answered { now, attempt, outcome, latency, retryable, inflight };
        self.gate.answered(client, &a);
        if let Some(limit) = self.gate.limit_total() {
            rec.gauge(Gauge::ClientLimit, now, limit as f64);
        }
    }

    /// The clients' concurrency limit in force (summed over the client processes), if they
    /// have one.
    pub fn limit_total(&self) -> Option<u64> {
        self.gate.limit_total()
    }

    /// A hedge of the operation in `slot` (a copy besides its first, DESIGN §4.10) wants to go
    /// out at `now`: the controls have their say as on a retry (gRPC A6: hedges draw on the
    /// retry throttle's tokens; a budget's or a breaker's refusal, or a client-side rate
    /// limiter's wait, drops the hedge: it is not queued). `None`: not sent, the operation
    /// goes on with the copies it has.
    pub fn send_hedge(&mut self, slot: u32, now: Instant, rec: &mut RunRecorder) -> Option<Attempt> {
        if self.controls {
            let op = self.ops.get(slot);
            // A hedge is sent because the answer is late: the controls see it as a retry
            // after a timeout.
            let failed = FailedAttempt {
                outcome: Outcome::Timeout,
                attempt: op.attempts,
                k: op.attempts,
                retry_after: None,
                started: op.started,
                now,
            };
            let mut controls = self.gate.client(op.client, &mut op.last_cost);
            if crate::policy::RetryPermission::permit_retry(&mut controls, &failed).is_err() {
                return None;
            }
            let (client, attempts) = (op.client, op.attempts);
            if !matches!(self.gate.admit(client, now, attempts + 1, false), Admit::Send) {
                return None;
            }
        }
        let op = self.ops.get(slot);
        op.attempts += 1;
        op.waiting = true;
        if self.controls {
            op.note_sent(now);
        }
        let gives_up_at = self.policy.gives_up_at(op.started, now);
        rec.call_sent(now);
        Some(Attempt { number: op.attempts, gives_up_at })
    }

    /// A copy of a hedged operation was answered with `outcome` at `now` (or abandoned at its
    /// timeout): the controls learn it, as of any attempt.
    pub fn hedge_answered(&mut self, slot: u32, outcome: Outcome, now: Instant, rec: &mut RunRecorder) {
        if self.controls {
            self.tell_gate(slot, outcome, now, rec);
        }
    }

    /// Whether the operation in `slot` is past its deadline at `now`.
    pub fn past_deadline(&mut self, slot: u32, now: Instant) -> bool {
        let started = self.ops.get(slot).started;
        self.policy.past_deadline(started, now)
    }

    /// The operation in `slot` fails at `now` before its next attempt, for a reason found
    /// outside the clients (its bulkhead).
    pub fn fail_locally<const PLAIN: bool>(
        &mut self,
        slot: u32,
        reason: FailReason,
        now: Instant,
        rec: &mut RunRecorder,
    ) -> Option<NextOp> {
        self.end_failed::<PLAIN>(slot, reason, now, rec)
    }

    fn end_failed<const PLAIN: bool>(
        &mut self,
        slot: u32,
        reason: FailReason,
        now: Instant,
        rec: &mut RunRecorder,
    ) -> Option<NextOp> {
        if self.dead_lettered::<PLAIN>(slot) {
            return self.end_redrive::<PLAIN>(slot, false);
        }
        let started = self.first_started::<PLAIN>(slot);
        let op = self.ops.get(slot);
        let (client, attempts) = (op.client, op.attempts);
        rec.op_failed(reason, started, attempts, now);
        // Its effect happened already (the server executed an attempt the client gave up
        // on): failed but applied. An execution still to come is counted when it happens.
        if op.executions > 0 {
            rec.failed_but_applied();
        }
        if self.has_controls::<PLAIN>() {
            self.gate.op_ended(client, false, CostClass::NONE);
        }
        self.ops.end(slot);
        self.next_op(client, now)
    }

    /// Closes the run at the horizon: operations still pending fail as `unfinished`. Hands
    /// back the op table and the latency histogram for the thread's next run.
    pub fn finish(
        self,
        mut rec: RunRecorder,
        events: u64,
        faults: Option<FaultSpan>,
        horizon: Instant,
    ) -> (RunMetrics, Leftovers) {
        let app_retry = self.app_retry.is_some();
        for (op, extra) in self.ops.pending() {
            let started = match extra {
                Some(e) if app_retry => e.first_started,
                _ => op.started,
            };
            rec.unfinished(started, op.attempts, horizon);
            if op.executions > 0 {
                rec.failed_but_applied();
            }
        }
        let (mut metrics, latency) = rec.finish(events, faults, horizon);
        if let Some(p) = &self.priorities {
            // The classes' columns follow the windows' (`METRIC@CLASS`).
            metrics.windows.extend(p.finish());
        }
        (metrics, Leftovers { ops: self.ops, latency })
    }

    #[inline]
    fn next_op(&self, client: u32, now: Instant) -> Option<NextOp> {
        match self.remaining.get(client as usize) {
            Some(&r) if r > 0 => Some(NextOp { client, at: now + self.think }),
            _ => None,
        }
    }
}
