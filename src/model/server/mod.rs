//! The `queue` server (DESIGN §3.3) as an admission pipeline. An arriving request passes the
//! stages in this order, each a small part in its own file:
//!
//! 1. [`faults`]: outages and error answers (DESIGN §3.4);
//! 2. [`workers`]: `concurrency` workers and a bounded FIFO queue; a request that finds the
//!    queue full is rejected.
//!
//! A stage lets the request through ([`Admission::Continue`]), answers it at once, or drops
//! it without an answer. Adding a stage is a new file, a field in [`Server`] and one line in
//! [`Server::arrive`]; no other stage changes.

pub mod faults;
pub mod workers;

use crate::engine::rng::{Stream, stream};
use crate::engine::{Instant, Span};
use crate::experiment::QueueServerSpec;
use crate::metrics::recovery::FaultSpan;
use crate::policy::{Outcome, RetryAfter};
use faults::Faults;
use workers::{Placed, Workers};

/// A Retry-After as an answer carries it, packed in 4 bytes so that events stay small: none,
/// "don't retry", or a delay in whole milliseconds, rounded up (up to about 49 days).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetryAfterCode(u32);

impl RetryAfterCode {
    pub const NONE: RetryAfterCode = RetryAfterCode(0);
    pub const DONT_RETRY: RetryAfterCode = RetryAfterCode(u32::MAX);

    /// "Retry after `span`", rounded up to the millisecond.
    pub fn after(span: Span) -> RetryAfterCode {
        let ms = span.as_ns().div_ceil(1_000_000).min(u32::MAX as u64 - 2);
        RetryAfterCode(ms as u32 + 1)
    }

    pub fn decode(self) -> Option<RetryAfter> {
        match self.0 {
            0 => None,
            u32::MAX => Some(RetryAfter::DontRetry),
            v => Some(RetryAfter::After(Span::from_millis(v as u64 - 1))),
        }
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

    /// An answer without Retry-After.
    pub fn of(outcome: Outcome) -> Reply {
        Reply { outcome, retry_after: RetryAfterCode::NONE }
    }
}

/// A request held by the server.
#[derive(Clone, Copy, Debug)]
pub struct Request {
    /// The operation's slot in the client's table.
    pub op: u32,
    pub attempt: u32,
    /// When its client stops waiting: work after that is wasted; `drop_expired` drops it.
    pub gives_up_at: Instant,
    /// The answer once the work is done: success, or an `after_effect` error drawn at arrival.
    pub answer: Reply,
}

impl Request {
    pub fn new(op: u32, attempt: u32, gives_up_at: Instant) -> Request {
        Request { op, attempt, gives_up_at, answer: Reply::SUCCESS }
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
}

/// What became of an arriving request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Answered at once, without the work.
    Answered(Reply),
    /// Dropped without an answer.
    Silenced,
    /// A worker started on it; it is done after `service`.
    Started { worker: u32, service: Span },
    /// It waits in the queue.
    Queued,
}

/// The server of one run: its admission stages and its workers.
pub struct Server {
    faults: Faults,
    workers: Workers,
}

impl Server {
    pub fn new(spec: &QueueServerSpec, run_seed: u64) -> Server {
        Server {
            faults: Faults::new(&spec.faults, &spec.errors, stream(run_seed, Stream::Faults)),
            workers: Workers::new(spec, stream(run_seed, Stream::Service)),
        }
    }

    /// The span of the faults that start before `horizon` (for the recovery analysis).
    pub fn fault_span(&self, horizon: Instant) -> Option<FaultSpan> {
        self.faults.span(horizon)
    }

    /// When capacity goes back up (waiting requests may then start).
    pub fn capacity_restorations(&self) -> impl Iterator<Item = Instant> + '_ {
        self.faults.capacity_restorations()
    }

    /// A request arrives at `now` and passes the stages in order.
    #[inline]
    pub fn arrive(&mut self, mut req: Request, now: Instant) -> Arrival {
        match self.faults.admit(now, &mut req) {
            Admission::Continue => {}
            Admission::Answer(o) => return Arrival::Answered(o),
            Admission::Silence => return Arrival::Silenced,
        }
        let (capacity, slowdown) = self.conditions(now);
        match self.workers.place(req, now, capacity, slowdown) {
            Placed::Started { worker, service } => Arrival::Started { worker, service },
            Placed::Queued => Arrival::Queued,
            Placed::Rejected(o) => Arrival::Answered(Reply::of(o)),
        }
    }

    /// Worker `worker` finished: its request and when it started serving it.
    #[inline]
    pub fn done(&mut self, worker: u32) -> (Request, Instant) {
        self.workers.done(worker)
    }

    /// Starts the next waiting request if a worker is free; `drop_expired` drops requests
    /// whose client gave up (returned, so their operation's reference can be released).
    #[inline]
    pub fn next_waiting(&mut self, now: Instant) -> Option<workers::Next> {
        let (capacity, slowdown) = self.conditions(now);
        self.workers.next(now, capacity, slowdown)
    }

    /// Requests being served, and waiting.
    #[inline]
    pub fn levels(&self) -> (u32, usize) {
        self.workers.levels()
    }

    /// The request a worker is serving (for prefetching its operation).
    #[inline]
    pub fn serving(&self, worker: u32) -> &Request {
        self.workers.serving(worker)
    }

    /// Workers usable now and the service-time factor (capacity and slowdown faults).
    #[inline]
    fn conditions(&self, now: Instant) -> (u32, f64) {
        let concurrency = self.workers.concurrency();
        if self.faults.is_empty() {
            (concurrency, 1.0)
        } else {
            (self.faults.capacity(now, concurrency), self.faults.slowdown(now))
        }
    }
}
