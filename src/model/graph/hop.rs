//! A hop that retries with a client policy: the tries of one call along an edge of the call
//! graph, whether the edge leaves a service ([`super::tables::Ticket`]) or a proxy node
//! ([`super::proxy`]: a strategy's gateway `layers`). One home for what both do: count the
//! attempts, tell when the hop stops waiting for one (its `timeout`, its `deadline` from the
//! first attempt, its route timeout), and decide after a failed one (its router's
//! `honor_overloaded`, then [`Gate::hop_decision`]: `retry_on`, `max_attempts`, the backoff
//! and `honor_dont_retry`, asking the hop's budget and breaker when it has any).
//!
//! What surrounds the tries differs and stays with its owner: a service's call opens its
//! first try as an event and knows its caller's deadline; a proxy forwards at once.

use super::EdgeParams;
use crate::engine::Instant;
use crate::policy::gate::{CostClass, Gate};
use crate::policy::route;
use crate::policy::{BackoffState, Decision, FailedAttempt, RetryPolicy};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::super::server::Reply;

/// The tries of one call along a hop.
#[derive(Clone, Copy, Debug)]
pub struct Tries {
    /// Attempts sent so far.
    pub attempts: u32,
    /// Retries since the backoff last started over.
    pub k: u32,
    /// Waiting for the answer to attempt `attempts` (false while backing off).
    pub waiting: bool,
    /// When the call was made (the policy's deadline counts from it), and when its current
    /// attempt was sent (its latency, for the hop's controls).
    pub first_sent: Instant,
    pub sent_at: Instant,
    /// When the hop's route timeout fails the call ([`Instant::NEVER`]: no route timeout).
    pub route_ends: Instant,
    pub backoff: BackoffState,
    /// The token kind its last retry took from the hop's token bucket, if any.
    pub last_cost: CostClass,
}

/// What a call does after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterFailure {
    /// Its next attempt goes out at this instant (the route's end, when the backoff would run
    /// past it: the send then fails the call 504).
    RetryAt(Instant),
    /// The call fails with this answer.
    Fail(Reply),
}

impl Tries {
    /// A call along `edge` made at `now`, before its first attempt.
    #[inline]
    pub fn new(edge: &EdgeParams, now: Instant) -> Tries {
        Tries {
            attempts: 0,
            k: 0,
            waiting: false,
            first_sent: now,
            sent_at: now,
            route_ends: edge.route.ends(now),
            backoff: edge.retry.backoff.initial_state(),
            last_cost: CostClass::NONE,
        }
    }

    /// The next attempt goes out at `now`: its number, and when the hop stops waiting for it
    /// ([`Instant::NEVER`]: never), before any deadline its caller propagates.
    #[inline]
    pub fn send(&mut self, retry: &RetryPolicy, now: Instant) -> (u32, Instant) {
        self.attempts += 1;
        self.waiting = true;
        self.sent_at = now;
        (self.attempts, retry.gives_up_at(self.first_sent, now).min(self.route_ends))
    }

    /// Whether the call still waits for attempt `attempt` (not after it timed out or failed).
    #[inline]
    pub fn awaits(&self, attempt: u32) -> bool {
        self.waiting && self.attempts == attempt
    }

    /// Whether the route timeout has fired by `now`.
    #[inline]
    pub fn route_expired(&self, now: Instant) -> bool {
        now >= self.route_ends
    }

    /// The current attempt failed with `reply` at `now` (the hop's controls were told):
    /// retry after the backoff, or fail. The backoff's jitter comes from `rng`.
    pub fn failed(
        &mut self,
        edge: &EdgeParams,
        gate: &mut Gate,
        reply: Reply,
        now: Instant,
        rng: &mut Xoshiro256PlusPlus,
    ) -> AfterFailure {
        self.waiting = false;
        if edge.route.stops_on(reply.retry_after.is_overloaded()) {
            return AfterFailure::Fail(reply);
        }
        let failed = FailedAttempt {
            outcome: reply.outcome,
            attempt: self.attempts,
            k: self.k + 1,
            retry_after: reply.retry_after.decode(),
            started: self.first_sent,
            now,
        };
        match gate.hop_decision(&edge.retry, &failed, &mut self.backoff, &mut self.last_cost, rng) {
            Decision::Retry { delay, reset_backoff } => {
                self.k = if reset_backoff { 0 } else { self.k + 1 };
                AfterFailure::RetryAt(route::retry_at(now, delay, self.route_ends))
            }
            Decision::Stop(_) => AfterFailure::Fail(reply),
        }
    }
}
