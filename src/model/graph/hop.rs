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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Span;
    use crate::engine::rng::{Stream, stream};
    use crate::model::server::RetryAfterCode;
    use crate::policy::route::Route;
    use crate::policy::{Backoff, Outcome, RetryAfterMode, RetryAfterPolicy, RetryOn};

    /// An edge with a 50 ms constant backoff, 3 attempts, an 80 ms try timeout and a 200 ms
    /// route timeout that honours `x-envoy-overloaded`.
    fn edge() -> EdgeParams {
        EdgeParams {
            to: 1,
            count: 1,
            parallel: false,
            optional: false,
            retry: RetryPolicy {
                backoff: Backoff::Constant { base_ns: 50e6 },
                retry_on: RetryOn::default(),
                max_attempts: 3,
                timeout: Some(Span::from_millis(80)),
                deadline: None,
                retry_after: RetryAfterPolicy { honor: false, cap: None, mode: RetryAfterMode::Replace },
                honor_dont_retry: false,
            },
            gate: Default::default(),
            route: Route { timeout: Some(Span::from_millis(200)), honor_overloaded: true },
            hedge: None,
            reselects: None,
        }
    }

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Span::from_millis(ms)
    }

    const FAIL: Reply = Reply { outcome: Outcome::Status(503), retry_after: RetryAfterCode::NONE };

    #[test]
    fn the_route_timeout_cuts_a_tries_wait_and_its_backoff() {
        let (e, mut gate, mut rng) = (edge(), Gate::none(), stream(1, Stream::Graph));
        let mut t = Tries::new(&e, Instant::ZERO);
        assert_eq!(t.send(&e.retry, Instant::ZERO), (1, at(80)), "its own timeout first");
        assert!(t.awaits(1) && !t.awaits(2));
        assert_eq!(t.failed(&e, &mut gate, FAIL, at(80), &mut rng), AfterFailure::RetryAt(at(130)));
        assert!(!t.awaits(1), "not after it failed");
        // The second try's timeout (210 ms) is cut to the route's end.
        assert_eq!(t.send(&e.retry, at(130)), (2, at(200)));
        // Its backoff would end at 250 ms: the next send is at the route's end, which fails it.
        assert_eq!(t.failed(&e, &mut gate, FAIL, at(200), &mut rng), AfterFailure::RetryAt(at(200)));
        assert!(t.route_expired(at(200)) && !t.route_expired(at(199)));
    }

    #[test]
    fn an_overloaded_answer_is_not_retried_where_the_mark_is_honoured() {
        let (e, mut gate, mut rng) = (edge(), Gate::none(), stream(1, Stream::Graph));
        let overloaded = Reply { outcome: Outcome::Status(503), retry_after: RetryAfterCode::OVERLOADED };
        let mut t = Tries::new(&e, Instant::ZERO);
        t.send(&e.retry, Instant::ZERO);
        assert_eq!(t.failed(&e, &mut gate, overloaded, at(1), &mut rng), AfterFailure::Fail(overloaded));
        let unmarked = EdgeParams { route: Route { honor_overloaded: false, ..e.route }, ..e.clone() };
        let mut t = Tries::new(&unmarked, Instant::ZERO);
        t.send(&unmarked.retry, Instant::ZERO);
        assert_eq!(
            t.failed(&unmarked, &mut gate, overloaded, at(1), &mut rng),
            AfterFailure::RetryAt(at(51))
        );
    }

    #[test]
    fn the_last_attempt_fails_the_call() {
        let (e, mut gate, mut rng) = (edge(), Gate::none(), stream(1, Stream::Graph));
        let e = EdgeParams { route: Route::default(), ..e };
        let mut t = Tries::new(&e, Instant::ZERO);
        let mut now = Instant::ZERO;
        for n in 1..=3 {
            t.send(&e.retry, now);
            match t.failed(&e, &mut gate, FAIL, now, &mut rng) {
                AfterFailure::RetryAt(next) if n < 3 => now = next,
                AfterFailure::Fail(r) if n == 3 => assert_eq!(r, FAIL),
                other => panic!("attempt {n}: {other:?}"),
            }
        }
        assert_eq!((t.attempts, t.k), (3, 2));
    }
}
