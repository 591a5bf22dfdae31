//! The `queue` server (DESIGN §3.3) as an admission pipeline. An arriving request passes the
//! stages in this order, each a small part in its own file:
//!
//! 1. [`faults`]: outages and error answers (DESIGN §3.4);
//! 2. [`rate_limit`]: `[server.rate_limit]`, one of six rate limiters (token bucket, nginx's
//!    leaky bucket, fixed window, sliding window, sliding log, GCRA) answering 429 (or its
//!    kind's status) with Retry-After, or holding a request for a while (nginx's delay, a
//!    reserved permit) before it goes on to the next stage;
//! 3. [`idempotency`]: `[server.idempotency]`, the dedup store for idempotency keys: a repeat
//!    of a finished key is answered from the store, a repeat of a key in progress gets 409 or
//!    waits;
//! 4. [`adaptive_concurrency`]: `[server.adaptive_concurrency]`, Envoy's adaptive concurrency
//!    filter: a request over the gradient controller's limit of requests at the workers is
//!    answered 503;
//! 5. [`workers`]: `concurrency` workers and a bounded queue; a request that finds the
//!    queue full is rejected (with "overloaded; don't retry" when `reject_dont_retry`); free
//!    workers take the oldest waiting request, or as `discipline` says ([`discipline`]: LIFO,
//!    RFC 8289 CoDel, folly's CoDel, adaptive LIFO), which may shed waiting requests (503);
//!    [`overload`] (`[server.overload]`) stretches the service time of each request that
//!    starts.
//!
//! A stage lets the request through ([`Admission::Continue`]), answers it at once, parks it,
//! holds it for a while ([`Admission::Delay`]: the model brings it back through
//! [`Server::resume`], which runs the stages after the rate limit), or drops it without an
//! answer. Adding a stage is a new file, a field in [`Server`] and one
//! line in `Server::screen` (the stages between the faults and the workers) or
//! [`Server::arrive`]; no other stage changes. A stage that is not configured is a `None`, and
//! the stages between faults and workers are skipped with one check when none is configured.

pub mod adaptive_concurrency;
pub mod codel;
pub mod codel_rpc;
pub mod discipline;
pub mod faults;
pub mod idempotency;
pub mod overload;
pub mod priority;
pub mod rate_limit;
pub mod workers;

use crate::engine::rng::{Stream, stream};
use crate::engine::{Instant, Span};
use crate::metrics::recovery::FaultSpan;
use crate::model::dist::Dist;
use crate::policy::limit::envoy_gradient::{GradientParams, Timer};
use crate::policy::{Outcome, RetryAfter};
use adaptive_concurrency::AdaptiveConcurrency;
use discipline::DisciplineParams;
use faults::{ErrorRate, Fault, Faults};
use idempotency::{Completion, Grant, Key, KeyTag, Store, StoreParams};
use overload::{Overload, OverloadParams};
use rate_limit::{RateLimit, RateLimitParams};
use workers::{Next, Placed, Workers};

/// What an answer's headers say about retrying it, packed in 4 bytes so that events stay
/// small: nothing, "don't retry", a Retry-After delay in whole milliseconds, rounded up (up
/// to about 49 days), or a proxy's local overflow (`x-envoy-overloaded`, which carries no
/// Retry-After: [`crate::policy::route`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetryAfterCode(u32);

impl RetryAfterCode {
    pub const NONE: RetryAfterCode = RetryAfterCode(0);
    pub const DONT_RETRY: RetryAfterCode = RetryAfterCode(u32::MAX);
    /// A proxy's own overflow answer: `x-envoy-overloaded: true`, no Retry-After.
    pub const OVERLOADED: RetryAfterCode = RetryAfterCode(u32::MAX - 1);

    /// "Retry after `span`", rounded up to the millisecond.
    pub fn after(span: Span) -> RetryAfterCode {
        let ms = span.as_ns().div_ceil(1_000_000).min(u32::MAX as u64 - 3);
        RetryAfterCode(ms as u32 + 1)
    }

    pub fn decode(self) -> Option<RetryAfter> {
        match self.0 {
            0 => None,
            u32::MAX => Some(RetryAfter::DontRetry),
            v if v == Self::OVERLOADED.0 => None,
            v => Some(RetryAfter::After(Span::from_millis(v as u64 - 1))),
        }
    }

    /// Whether the answer is marked `x-envoy-overloaded`.
    #[inline]
    pub fn is_overloaded(self) -> bool {
        self == Self::OVERLOADED
    }
}

/// What the server answers: an outcome, maybe with a Retry-After.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    pub outcome: Outcome,
    pub retry_after: RetryAfterCode,
}

impl Reply {
    pub const SUCCESS: Reply = Reply { outcome: Outcome::Success, retry_after: RetryAfterCode::NONE };

    /// The reply in 8 bytes, for events ([`Reply::from_bits`] inverts it): the Retry-After
    /// code in the high half; in the low half the outcome, a status as 0x1_0000 + status.
    #[inline(always)]
    pub fn to_bits(self) -> u64 {
        let outcome: u32 = match self.outcome {
            Outcome::Success => 0,
            Outcome::Timeout => 1,
            Outcome::ConnectionError => 2,
            Outcome::Status(s) => 0x1_0000 | s as u32,
        };
        ((self.retry_after.0 as u64) << 32) | outcome as u64
    }

    /// The reply [`Reply::to_bits`] packed.
    #[inline(always)]
    pub fn from_bits(bits: u64) -> Reply {
        let low = bits as u32;
        let outcome = match low {
            0 => Outcome::Success,
            1 => Outcome::Timeout,
            2 => Outcome::ConnectionError,
            _ => Outcome::Status(low as u16),
        };
        Reply { outcome, retry_after: RetryAfterCode((bits >> 32) as u32) }
    }

    /// An answer without Retry-After.
    pub fn of(outcome: Outcome) -> Reply {
        Reply { outcome, retry_after: RetryAfterCode::NONE }
    }
}

/// A request held by the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// The operation's slot in the client's table.
    pub op: u32,
    pub attempt: u32,
    /// When its client stops waiting: work after that is wasted; `drop_expired` drops it.
    pub gives_up_at: Instant,
    /// The answer once the work is done: success, or an `after_effect` error drawn at arrival.
    pub answer: Reply,
    /// Its idempotency key ([`KeyTag::NONE`]: none), see [`Request::key`].
    pub key_tag: KeyTag,
}

// Requests are copied through the stages and held by the queue and the workers: keep them small.
const _: () = assert!(std::mem::size_of::<Request>() == 32);

impl Request {
    pub fn new(op: u32, attempt: u32, gives_up_at: Instant) -> Request {
        Request { op, attempt, gives_up_at, answer: Reply::SUCCESS, key_tag: KeyTag::NONE }
    }

    /// Its idempotency key ([`Key::NONE`]: none).
    #[inline]
    pub fn key(&self) -> Key {
        self.key_tag.key(self.op, self.attempt)
    }
}

/// What one admission stage does with an arriving request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// On to the next stage.
    Continue,
    /// Answer it now, without doing the work.
    Answer(Reply),
    /// Never answer it (the client sees its timeout).
    Silence,
    /// Answer it now from the dedup store: the server handled it, without the work.
    Replay(Reply),
    /// Hold it without the work; it is answered later (a repeat parked on its key).
    Park,
    /// Hold it this long without the work, then let it through (the rate limiter's delay).
    Delay(Span),
}

impl Admission {
    /// What becomes of the request if the stage does not let it through.
    #[inline]
    fn stop(self) -> Option<Arrival> {
        match self {
            Admission::Continue => None,
            Admission::Answer(r) => Some(Arrival::Answered(r)),
            Admission::Silence => Some(Arrival::Silenced),
            Admission::Replay(r) => Some(Arrival::Replayed(r)),
            Admission::Park => Some(Arrival::Parked),
            Admission::Delay(wait) => Some(Arrival::Delayed(wait)),
        }
    }
}

/// What a cancellation found ([`Server::cancel`]).
#[derive(Clone, Copy, Debug)]
pub enum Cancelled {
    /// The request was waiting in the queue: removed.
    Removed(Request),
    /// A worker was serving it since the instant given: stopped, the worker free.
    Stopped(Request, Instant),
    /// The server does not hold it in the queue or (when stopping is asked) in service.
    NotHeld,
}

/// What became of an arriving request. `Answered` and `Silenced` turn it away (the time
/// series' `rejected`); the others take it in (`accepted`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Turned away at once with an error answer, without the work.
    Answered(Reply),
    /// Dropped without an answer.
    Silenced,
    /// Answered at once from the dedup store (a repeat of a finished key), without the work.
    Replayed(Reply),
    /// Parked on its key, in progress: answered when the request executing it finishes
    /// ([`Server::pop_answered`]).
    Parked,
    /// A worker started on it; it is done after `service`.
    Started { worker: u32, service: Span },
    /// It waits in the queue.
    Queued,
    /// The rate limiter holds it this long; then it goes on ([`Server::resume`]).
    Delayed(Span),
    /// It waits in the queue, where it took the place of `evicted`, a less critical request
    /// (priority classes), which is answered `reply` (the full queue's answer).
    Displaced { evicted: Request, reply: Reply },
}

/// The server of one run: its admission stages and its workers.
pub struct Server {
    faults: Faults,
    rate_limit: Option<RateLimit>,
    store: Option<Store>,
    overload: Option<Overload>,
    adaptive: Option<AdaptiveConcurrency>,
    workers: Workers,
    /// Whether a stage between the faults and the workers is configured.
    screens: bool,
    /// The answer to a full-queue rejection: `reject_status`, with "overloaded; don't retry"
    /// or no Retry-After. Kept whole, not put together per rejection: a reply assembled from
    /// two 4-byte stores and read back as 8 bytes stalls the load (store-to-load forwarding;
    /// see benches/README.md).
    reject_reply: Reply,
    drop_expired: bool,
    /// A parked request that now executes its key because the request executing it was
    /// dropped: it takes that request's place at the head of the queue.
    promoted: Option<Request>,
    /// Restarting (a `restart` fault, a rolling deploy): its port is closed, so every request
    /// that reaches it is refused at once with a connection error.
    offline: bool,
}

/// The queue server's parameters in engine units: the assembly layer fills them from the file.
#[derive(Clone, Debug)]
pub struct ServerParams {
    pub concurrency: u32,
    pub service_time: Dist,
    /// The wait queue's room; `None` is unbounded.
    pub queue: Option<u32>,
    /// The status a request that finds the queue full is answered with.
    pub reject_status: u16,
    /// That answer says "overloaded; don't retry".
    pub reject_dont_retry: bool,
    pub drop_expired: bool,
    /// In file order.
    pub faults: Vec<Fault>,
    /// Background errors, outside `errors` faults.
    pub errors: Vec<ErrorRate>,
    pub rate_limit: Option<RateLimitParams>,
    pub idempotency: Option<StoreParams>,
    pub overload: Option<OverloadParams>,
    /// The order free workers take waiting requests in, and what is shed.
    pub discipline: DisciplineParams,
    /// Envoy's adaptive concurrency filter in front of the workers.
    pub adaptive_concurrency: Option<GradientParams>,
}

impl Server {
    pub fn new(params: ServerParams, run_seed: u64) -> Server {
        Server {
            workers: Workers::new(&params, stream(run_seed, Stream::Service)),
            rate_limit: params.rate_limit.as_ref().map(RateLimit::new),
            store: params.idempotency.as_ref().map(Store::new),
            overload: params.overload.as_ref().map(Overload::new),
            adaptive: params.adaptive_concurrency.map(|p| {
                AdaptiveConcurrency::new(p, params.concurrency, stream(run_seed, Stream::ServerLimit))
            }),
            faults: Faults::new(params.faults, params.errors, stream(run_seed, Stream::Faults)),
            screens: params.rate_limit.is_some() || params.idempotency.is_some(),
            reject_reply: Reply {
                outcome: Outcome::Status(params.reject_status),
                retry_after: if params.reject_dont_retry {
                    RetryAfterCode::DONT_RETRY
                } else {
                    RetryAfterCode::NONE
                },
            },
            drop_expired: params.drop_expired,
            promoted: None,
            offline: false,
        }
    }

    /// Whether the server is plain: no faults, no rate limit, no dedup store, no overload, FIFO
    /// without priority classes.
    /// Its methods called with `PLAIN = true` are then compiled without the stages' tests.
    pub fn is_plain(&self) -> bool {
        self.faults.is_empty()
            && self.rate_limit.is_none()
            && self.store.is_none()
            && self.overload.is_none()
            && self.adaptive.is_none()
            && self.promoted.is_none()
            && !self.workers.has_discipline()
    }

    /// Requests carry priority classes (`[workload] priorities`): a full queue turns away the
    /// least critical waiting request to make room for a more critical arrival.
    pub fn shed_by_priority(&mut self) {
        self.workers.shed_by_priority();
    }

    /// The operation in `slot` has priority class `class` (its requests carry it; only with
    /// classes).
    #[inline]
    pub fn classify(&mut self, slot: u32, class: crate::model::priorities::Class) {
        if let Some(p) = self.workers.priorities() {
            p.classify(slot, class);
        }
    }

    /// Whether the server keeps a dedup store (otherwise requests' keys are ignored, and need
    /// not be made).
    #[inline]
    pub fn keeps_keys(&self) -> bool {
        self.store.is_some()
    }

    /// The most idempotency keys the dedup store held at once (0 without a store).
    pub fn keys_peak(&self) -> u64 {
        self.store.as_ref().map_or(0, |s| s.peak() as u64)
    }

    /// The dedup store's lock grants that expired while their request was at the server, and
    /// the completions fencing refused (0 and 0 without a store).
    pub fn lock_counts(&self) -> (u64, u64) {
        self.store.as_ref().map_or((0, 0), |s| (s.locks_expired(), s.fenced()))
    }

    /// The span of the faults that start before `horizon` (for the recovery analysis).
    pub fn fault_span(&self, horizon: Instant) -> Option<FaultSpan> {
        self.faults.span(horizon)
    }

    /// When capacity goes back up (waiting requests may then start).
    pub fn capacity_restorations(&self) -> impl Iterator<Item = Instant> + '_ {
        self.faults.capacity_restorations()
    }

    /// A request arrives at `now` and passes the stages in order (`PLAIN`: the server
    /// [`is_plain`](Server::is_plain), and only the workers are asked).
    #[inline]
    pub fn arrive<const PLAIN: bool>(&mut self, mut req: Request, now: Instant) -> Arrival {
        debug_assert!(!PLAIN || self.is_plain());
        if !PLAIN && self.offline {
            return Arrival::Answered(Reply::of(Outcome::ConnectionError));
        }
        if !PLAIN && let Some(stop) = self.faults.admit(now, &mut req).stop() {
            return stop;
        }
        if !PLAIN
            && self.screens
            && let Some(stop) = self.screen(&mut req, now)
        {
            return stop;
        }
        self.place::<PLAIN>(req, now)
    }

    /// A request the rate limiter held ([`Arrival::Delayed`]) goes on at `now`, through the
    /// stages after the rate limit (never plain: a plain server has no rate limit).
    pub fn resume(&mut self, mut req: Request, now: Instant) -> Arrival {
        if self.offline {
            return Arrival::Answered(Reply::of(Outcome::ConnectionError));
        }
        if let Some(stop) = self.screen_store(&mut req, now) {
            return stop;
        }
        self.place::<false>(req, now)
    }

    /// The last stages: the adaptive concurrency limit, if any; then the workers start the
    /// request, queue it or reject it.
    #[inline(always)]
    fn place<const PLAIN: bool>(&mut self, req: Request, now: Instant) -> Arrival {
        if !PLAIN && self.adaptive.is_some() && !self.forwards() {
            return Arrival::Answered(Reply::of(Outcome::Status(adaptive_concurrency::LIMITED_STATUS)));
        }
        let (capacity, slowdown) = self.conditions::<PLAIN>(now);
        match self.workers.place(req, now, capacity, slowdown) {
            Placed::Started { worker, service } => {
                self.started::<PLAIN>(worker, now, Span::ZERO);
                Arrival::Started { worker, service: self.stretch::<PLAIN>(service) }
            }
            Placed::Queued => Arrival::Queued,
            Placed::Rejected(o) => {
                if !PLAIN
                    && self.workers.sheds_by_priority()
                    && let Some(evicted) = self.workers.displace(req, now)
                {
                    self.abandon(&evicted, now);
                    return Arrival::Displaced { evicted, reply: self.reject_reply };
                }
                debug_assert_eq!(o, self.reject_reply.outcome);
                if !PLAIN && self.store.is_some() {
                    self.rejected_key(req.key(), req.key_tag.grant, now);
                }
                Arrival::Answered(self.reject_reply)
            }
        }
    }

    /// Whether the adaptive concurrency filter forwards a request now (out of line: only runs
    /// with one).
    #[inline(never)]
    fn forwards(&self) -> bool {
        let (busy, queued) = self.workers.levels();
        let outstanding = (busy as u64 + queued as u64).min(u32::MAX as u64) as u32;
        self.adaptive.as_ref().is_none_or(|a| a.admit(outstanding))
    }

    /// Worker `worker` started a request that waited `waited`: the adaptive filter notes when
    /// it was forwarded.
    #[inline(always)]
    fn started<const PLAIN: bool>(&mut self, worker: u32, now: Instant, waited: Span) {
        if !PLAIN && let Some(a) = &mut self.adaptive {
            a.started(worker, now, waited);
        }
    }

    /// The adaptive concurrency filter, if the server has one.
    #[inline]
    pub fn adaptive(&mut self) -> Option<&mut AdaptiveConcurrency> {
        self.adaptive.as_mut()
    }

    /// The adaptive concurrency controller's timer `which` fires at `now`.
    pub fn limit_timer(&mut self, which: Timer, now: Instant) {
        if let Some(a) = &mut self.adaptive {
            a.fire(which, now);
        }
    }

    /// The stages between the faults and the workers, when any is configured (out of line, so
    /// that a server without them runs the event loop it ran before they existed). The dedup
    /// store writes the lock grant a request takes into its key tag.
    #[inline(never)]
    fn screen(&mut self, req: &mut Request, now: Instant) -> Option<Arrival> {
        if let Some(rl) = &mut self.rate_limit
            && let Some(stop) = rl.admit(now).stop()
        {
            return Some(stop);
        }
        self.screen_store(req, now)
    }

    /// The dedup store's stage, if there is one.
    #[inline]
    fn screen_store(&mut self, req: &mut Request, now: Instant) -> Option<Arrival> {
        self.store.as_mut()?.admit(req, now).stop()
    }

    /// The full queue rejected a request that was to execute `key` with `grant`: it had just
    /// taken the key's lock (a key whose lock is held never reaches the workers), so no
    /// request is parked on it: the lock is only released.
    #[cold]
    #[inline(never)]
    fn rejected_key(&mut self, key: Key, grant: Grant, now: Instant) {
        if let Some(store) = &mut self.store {
            let promoted = store.abandon(key, grant, now);
            debug_assert!(promoted.is_none());
        }
    }

    /// Worker `worker` finished at `now`: its request, when it started serving it, and
    /// whether its effect happened. The request's key, if any, is done (the requests parked
    /// on it are then answered, [`Server::pop_answered`]), unless fencing refused the work:
    /// then nothing happened and the request's answer is 409 (or the gateway's
    /// `after_effect` error drawn for it).
    #[inline]
    pub fn done<const PLAIN: bool>(&mut self, worker: u32, now: Instant) -> (Request, Instant, Completion) {
        let (mut req, started) = self.workers.done(worker);
        if !PLAIN && let Some(a) = &mut self.adaptive {
            a.finished(worker, now);
        }
        if !PLAIN
            && let Some(store) = &mut self.store
            && store.complete(req.key(), req.key_tag.grant, now) == Completion::Fenced
        {
            req.answer = idempotency::fenced_answer(&req);
            return (req, started, Completion::Fenced);
        }
        (req, started, Completion::Applied)
    }

    /// A parked request whose key's work completed, with its answer in `answer`.
    #[inline]
    pub fn pop_answered(&mut self) -> Option<Request> {
        self.store.as_mut()?.pop_answered()
    }

    /// Starts the next waiting request if a worker is free; `drop_expired` drops requests
    /// whose client gave up (returned, so their operation's reference can be released). A
    /// dropped request's key passes to the first request parked on it, which starts next.
    #[inline]
    pub fn next_waiting<const PLAIN: bool>(&mut self, now: Instant) -> Option<Next> {
        let (capacity, slowdown) = self.conditions::<PLAIN>(now);
        if !PLAIN && let Some(p) = self.promoted {
            if self.workers.levels().0 >= capacity {
                return None;
            }
            self.promoted = None;
            if self.drop_expired && p.gives_up_at <= now {
                return Some(self.dropped(p, now));
            }
            return match self.workers.place(p, now, capacity, slowdown) {
                // It waited parked on its key, not in the queue (`wait_mean_s` is the queue's).
                Placed::Started { worker, service } => {
                    self.started::<PLAIN>(worker, now, Span::ZERO);
                    Some(Next::Started {
                        worker,
                        service: self.stretch::<PLAIN>(service),
                        waited: Span::ZERO,
                    })
                }
                _ => unreachable!("a worker is free"),
            };
        }
        match self.workers.next::<PLAIN>(now, capacity, slowdown)? {
            Next::Started { worker, service, waited } => {
                self.started::<PLAIN>(worker, now, waited);
                Some(Next::Started { worker, service: self.stretch::<PLAIN>(service), waited })
            }
            Next::Dropped(req) => Some(self.dropped(req, now)),
            Next::Shed(req) => {
                self.abandon(&req, now);
                Some(Next::Shed(req))
            }
        }
    }

    /// `req` was dropped unserved at `now`: its key's lock, if any, is released.
    fn dropped(&mut self, req: Request, now: Instant) -> Next {
        self.abandon(&req, now);
        Next::Dropped(req)
    }

    /// `req` leaves the server unserved at `now` (dropped or shed): its key's lock, if any, is
    /// released, and passes to the first request parked on it.
    fn abandon(&mut self, req: &Request, now: Instant) {
        if let Some(store) = &mut self.store {
            self.promoted = store.abandon(req.key(), req.key_tag.grant, now);
        }
    }

    /// The service time of a request that just started, after `[server.overload]`.
    #[inline]
    fn stretch<const PLAIN: bool>(&self, service: Span) -> Span {
        if PLAIN {
            return service;
        }
        match &self.overload {
            None => service,
            Some(o) => o.stretch(service, self.workers.levels().0),
        }
    }

    /// Requests being served, and waiting.
    #[inline]
    pub fn levels(&self) -> (u32, usize) {
        self.workers.levels()
    }

    /// The client cancels attempt `attempt` of `op` at `now` (a hedge that lost, DESIGN §4.10):
    /// a queued request is removed; one in service is stopped if `in_service` (its worker is
    /// free at once, its effect does not happen), else it finishes. Its key's lock, if any,
    /// is released as for a dropped request.
    #[inline(never)]
    pub fn cancel(&mut self, op: u32, attempt: u32, in_service: bool, now: Instant) -> Cancelled {
        if let Some(req) = self.workers.remove_waiting(op, attempt) {
            self.abandon(&req, now);
            return Cancelled::Removed(req);
        }
        if in_service && let Some((req, started)) = self.workers.stop_serving(op, attempt) {
            self.abandon(&req, now);
            return Cancelled::Stopped(req, started);
        }
        Cancelled::NotHeld
    }

    /// The server goes down (a restart): every request it holds is dropped, the waiting ones
    /// (returned first) and those in service (with when each started; their workers are free
    /// at once, their effects never happen, their `Done` events are reaped), and it refuses
    /// every request until [`Server::restarted`]. Keys' locks are released as for dropped
    /// requests.
    #[inline(never)]
    pub fn go_down(&mut self, now: Instant) -> (Vec<Request>, Vec<(Request, Instant)>) {
        self.offline = true;
        let (waiting, serving) = self.workers.drain();
        for req in waiting.iter().chain(serving.iter().map(|(r, _)| r)) {
            self.abandon(req, now);
        }
        (waiting, serving)
    }

    /// The server is back from a restart: it takes requests again.
    pub fn restarted(&mut self) {
        self.offline = false;
    }

    /// The windows of its `restart` faults, `(start, end)` in file order.
    pub fn restarts(&self) -> impl Iterator<Item = (Instant, Instant)> + '_ {
        self.faults.restarts()
    }

    /// The `Done` event of `worker` fired for a request that was stopped
    /// ([`Server::cancel`]): `true`, and the event means nothing more.
    #[inline(never)]
    pub fn reap_stopped(&mut self, worker: u32) -> bool {
        self.workers.reap(worker)
    }

    /// The request a worker is serving (for prefetching its operation).
    #[inline]
    pub fn serving(&self, worker: u32) -> &Request {
        self.workers.serving(worker)
    }

    /// Workers usable now and the service-time factor (capacity and slowdown faults).
    #[inline]
    fn conditions<const PLAIN: bool>(&self, now: Instant) -> (u32, f64) {
        let concurrency = self.workers.concurrency();
        if PLAIN || self.faults.is_empty() {
            (concurrency, 1.0)
        } else {
            (self.faults.capacity(now, concurrency), self.faults.slowdown(now))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_round_trip_through_their_bits() {
        let outcomes = [
            Outcome::Success,
            Outcome::Timeout,
            Outcome::ConnectionError,
            Outcome::Status(0),
            Outcome::Status(503),
        ];
        let codes = [
            RetryAfterCode::NONE,
            RetryAfterCode::DONT_RETRY,
            RetryAfterCode::after(Span::from_millis(1500)),
        ];
        let mut seen = Vec::new();
        for outcome in outcomes.into_iter().chain([Outcome::Status(u16::MAX)]) {
            for retry_after in codes {
                let r = Reply { outcome, retry_after };
                assert_eq!(Reply::from_bits(r.to_bits()), r);
                seen.push(r.to_bits());
            }
        }
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 6 * 3, "distinct replies have distinct bits");
    }
}
