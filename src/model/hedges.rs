//! The clients' hedged calls (DESIGN §4.10): which copies of each operation are out, when the
//! next one is due, and the latency windows and budgets of [`crate::policy::hedge`], one per
//! client process or one for the fleet. The queue model wires it to events
//! (`queue_model`'s `hedging` part).
//!
//! A copy is an attempt of the operation: attempt numbers count the copies, the first one
//! included, so an answer names its copy. Copies out are a bit set over the attempt numbers
//! since the operation started (at most 5 copies, A6's cap).

use crate::engine::{Instant, Span};
use crate::policy::gate::Scope;
use crate::policy::hedge::{HedgeParams, HedgeScope};

/// One hedged operation's copies.
#[derive(Clone, Copy, Debug, Default)]
pub struct Call {
    /// The attempt number of the first copy, minus one.
    base: u32,
    /// Copies sent so far, or blocked (a budget or a control refused them): each uses one of
    /// `max_attempts`.
    pub tried: u32,
    /// Copies out (bit `i`: attempt `base + 1 + i`), not yet answered nor abandoned.
    out: u8,
    /// Copies whose per-try timeout fired while they stay out (Envoy's hedge on per-try
    /// timeout): an error from them is dropped.
    late: u8,
    /// Cancelled copies (their requests are dropped if they reach the server later).
    cancelled: u8,
    /// The valid hedge timer: a pending timer with another number is stale.
    pub timer: u32,
    /// A hedge timer is pending.
    pub timer_pending: bool,
    /// No more copies go out on a timer or after an answer (a "don't retry" pushback).
    pub stopped: bool,
    /// When each copy was sent.
    sent_at: [Instant; 5],
}

impl Call {
    fn bit(&self, attempt: u32) -> u8 {
        let i = attempt.wrapping_sub(self.base + 1);
        if i < 8 { 1 << i } else { 0 }
    }

    /// Whether copy `attempt` is out.
    pub fn is_out(&self, attempt: u32) -> bool {
        self.out & self.bit(attempt) != 0
    }

    /// Whether any copy is out.
    pub fn any_out(&self) -> bool {
        self.out != 0
    }

    /// Whether every copy out is late (its per-try timeout fired).
    pub fn all_out_late(&self) -> bool {
        self.out & !self.late == 0
    }

    /// Whether copy `attempt` is late.
    pub fn is_late(&self, attempt: u32) -> bool {
        self.late & self.bit(attempt) != 0
    }

    /// Whether copy `attempt` was cancelled.
    pub fn is_cancelled(&self, attempt: u32) -> bool {
        self.cancelled & self.bit(attempt) != 0
    }

    /// Whether copy `attempt` is the first.
    pub fn is_first(&self, attempt: u32) -> bool {
        attempt == self.base + 1
    }

    /// The attempts out, in order.
    pub fn out_attempts(&self) -> impl Iterator<Item = u32> + use<> {
        let (out, base) = (self.out, self.base);
        (0..8u32).filter(move |i| out & (1 << i) != 0).map(move |i| base + 1 + i)
    }
}

/// Every hedged operation of a run, and the scopes' latency windows and budgets.
pub struct Hedges {
    params: HedgeParams,
    scopes: Vec<HedgeScope>,
    /// Indexed by operation slot.
    calls: Vec<Call>,
}

impl Hedges {
    pub fn new(params: HedgeParams, clients: u32) -> Hedges {
        let n = match params.scope {
            Scope::Shared => 1,
            Scope::Client => clients.max(1) as usize,
        };
        Hedges { scopes: vec![HedgeScope::new(&params); n], params, calls: Vec::new() }
    }

    pub fn params(&self) -> &HedgeParams {
        &self.params
    }

    pub fn call(&mut self, op: u32) -> &mut Call {
        let i = op as usize;
        if i >= self.calls.len() {
            self.calls.resize(i + 1, Call::default());
        }
        &mut self.calls[i]
    }

    fn scope(&mut self, client: u32) -> &mut HedgeScope {
        let i = match self.params.scope {
            Scope::Shared => 0,
            Scope::Client => client as usize,
        };
        &mut self.scopes[i]
    }

    /// Operation `op` of `client` sent its first copy, attempt `attempt`, at `now`.
    pub fn started(&mut self, op: u32, client: u32, attempt: u32, now: Instant) {
        self.scope(client).call_started();
        let c = self.call(op);
        *c = Call { base: attempt - 1, timer: c.timer.wrapping_add(1), ..Call::default() };
        self.sent(op, attempt, now);
    }

    /// Copy `attempt` of `op` went out at `now`.
    pub fn sent(&mut self, op: u32, attempt: u32, now: Instant) {
        let c = self.call(op);
        c.out |= c.bit(attempt);
        c.sent_at[(attempt - c.base - 1) as usize] = now;
        c.tried += 1;
    }

    /// `op`'s next copy was blocked (the budget, or a control): it is not sent.
    pub fn blocked(&mut self, op: u32) {
        self.call(op).tried += 1;
    }

    /// No more copies of `op` go out (a "don't retry" pushback).
    pub fn stop(&mut self, op: u32) {
        self.drop_timer(op);
        self.call(op).stopped = true;
    }

    /// Whether `op` may send another copy.
    pub fn may_send(&mut self, op: u32) -> bool {
        let max = self.params.max_attempts;
        let c = self.call(op);
        !c.stopped && c.tried < max
    }

    /// The delay before `op`'s next copy on the timer, from `now` (`None`: none on a timer).
    /// The timer it is set for is numbered ([`Call::timer`]).
    pub fn next_delay(&mut self, op: u32, client: u32, now: Instant) -> Option<Span> {
        if !self.may_send(op) {
            return None;
        }
        let params = self.params;
        let delay = self.scope(client).delay(&params, now)?;
        let c = self.call(op);
        c.timer = c.timer.wrapping_add(1);
        c.timer_pending = true;
        Some(delay)
    }

    /// Sets a timer for `op`'s next copy (a pushback's), replacing any pending one; returns
    /// its number.
    pub fn timer_in(&mut self, op: u32) -> u32 {
        let c = self.call(op);
        c.timer = c.timer.wrapping_add(1);
        c.timer_pending = true;
        c.timer
    }

    /// Cancels `op`'s pending timer, if any (a stale one is ignored when it fires).
    pub fn drop_timer(&mut self, op: u32) {
        let c = self.call(op);
        c.timer = c.timer.wrapping_add(1);
        c.timer_pending = false;
    }

    /// A hedge of `client` wants to go out: the budget's token.
    pub fn take_token(&mut self, client: u32) -> bool {
        self.scope(client).take_token()
    }

    /// Copy `attempt` of `op` was answered (or abandoned) at `now`: it is no longer out.
    /// `record`: its latency goes into the window (an answer).
    pub fn answered(&mut self, op: u32, client: u32, attempt: u32, now: Instant, record: bool) {
        let c = self.call(op);
        let bit = c.bit(attempt);
        c.out &= !bit;
        c.late &= !bit;
        let i = attempt - c.base - 1;
        let sent_at = c.sent_at[i as usize];
        if record {
            self.scope(client).answered(now, now.since(sent_at));
        }
    }

    /// Copy `attempt`'s per-try timeout fired; it stays out (Envoy's hedge on per-try timeout).
    pub fn mark_late(&mut self, op: u32, attempt: u32) {
        let c = self.call(op);
        c.late |= c.bit(attempt);
    }

    /// Copy `attempt` is cancelled: no longer out.
    pub fn cancel(&mut self, op: u32, attempt: u32) {
        let c = self.call(op);
        let bit = c.bit(attempt);
        c.out &= !bit;
        c.late &= !bit;
        c.cancelled |= bit;
    }
}
