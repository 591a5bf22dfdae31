//! The discrete-event engine: simulated time, the event queue and seeded random streams. It
//! knows nothing about retries, clients or servers; a model brings its own event type.
//!
//! Time is an integer count of nanoseconds, as an [`Instant`] or a [`Span`] (`time.rs`).
//! Events are ordered by `(time, sequence number)`: the sequence number is the order in which
//! they were scheduled, so two events at the same instant run in scheduling order, whatever
//! the queue implementation, thread or platform.

pub mod calendar;
#[cfg(test)]
mod conformance;
pub mod queue;
pub mod radix;
pub mod rng;
pub mod time;

pub use calendar::CalendarQueue;
pub use queue::{EventQueue, HeapQueue};
pub use radix::RadixQueue;
pub use time::{Instant, NS_PER_S, Span};

/// An event queue's key: an instant as raw nanoseconds (queues are plain data structures).
pub type Nanos = u64;

/// The clock and the pending events of one run.
///
/// `Q` is the event queue; every implementation pops in the same `(time, seq)` order, so the
/// choice changes speed, never results.
pub struct Scheduler<E, Q: EventQueue<E> = HeapQueue<E>> {
    now: Instant,
    next_seq: u64,
    processed: u64,
    queue: Q,
    _event: std::marker::PhantomData<E>,
}

impl<E, Q: EventQueue<E>> Default for Scheduler<E, Q> {
    fn default() -> Self {
        Scheduler::new(Q::default())
    }
}

impl<E, Q: EventQueue<E>> Scheduler<E, Q> {
    pub fn new(queue: Q) -> Self {
        Scheduler { now: Instant::ZERO, next_seq: 0, processed: 0, queue, _event: std::marker::PhantomData }
    }

    /// Makes the scheduler as good as new for another run (clock, sequence numbers and event
    /// count back to zero, no event pending) while keeping its queue's memory: a worker that
    /// runs many replications with one scheduler allocates nothing in the queue once it has
    /// seen its largest run (`tests/no_alloc.rs`). A run that follows gives the same results
    /// as on a new scheduler.
    pub fn reset(&mut self) {
        self.now = Instant::ZERO;
        self.next_seq = 0;
        self.processed = 0;
        self.queue.clear();
    }

    /// The queue, for handing it to another scheduler (`Scheduler::new(s.into_queue())`).
    pub fn into_queue(self) -> Q {
        self.queue
    }

    /// The current simulated time: the time of the event being handled.
    #[inline]
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Events popped so far.
    #[inline]
    pub fn processed(&self) -> u64 {
        self.processed
    }

    /// Events still pending.
    #[inline]
    pub fn pending(&self) -> usize {
        self.queue.len()
    }

    /// Schedules `event` at absolute time `at`. Scheduling in the past is a model bug, and
    /// stops the program in every build (one well-predicted comparison per event) rather than
    /// quietly bending time.
    // Always inlined: the event is then written straight from registers into its bucket. An
    // out-of-line call receives it by reference from the caller's frame and reads it back with
    // wider loads than it was written with, which stalls (store-to-load forwarding).
    #[inline(always)]
    pub fn schedule_at(&mut self, at: Instant, event: E) {
        assert!(at >= self.now, "model bug: event scheduled in the past ({at:?} < now {:?})", self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.queue.push(at.as_ns(), seq, event);
    }

    /// Schedules `event` after `delay` (saturating at the end of time).
    #[inline(always)]
    pub fn schedule_in(&mut self, delay: Span, event: E) {
        self.schedule_at(self.now + delay, event);
    }

    /// The event that will be handled next, when the queue can tell cheaply.
    #[inline]
    pub fn peek(&self) -> Option<&E> {
        self.queue.peek()
    }

    /// Pops the next event if it happens no later than `horizon`, advancing the clock to it.
    /// Events after the horizon stay pending and are never handled.
    #[inline]
    pub fn pop_until(&mut self, horizon: Instant) -> Option<E> {
        let (t, event) = self.queue.pop_if_at_most(horizon.as_ns())?;
        let t = Instant::from_ns(t);
        debug_assert!(t >= self.now, "time ran backwards: {t:?} < {:?}", self.now);
        self.now = t;
        self.processed += 1;
        Some(event)
    }
}

/// A simulation model: it handles its own events, scheduling new ones.
pub trait Model {
    type Event;

    /// Handles `event` at `s.now()`.
    fn handle<Q: EventQueue<Self::Event>>(&mut self, event: Self::Event, s: &mut Scheduler<Self::Event, Q>);

    /// Told the event that comes after the one about to be handled (when the queue knows it),
    /// so the model can start loading the memory it will touch. Only a hint.
    #[inline]
    fn prefetch(&self, _next: &Self::Event) {}
}

/// Runs `model` until no event is left at or before `horizon`.
// Never inlined: the loop is the run's one hot function and is compiled best on its own.
// Inlined into its caller (the compiler chose to for the OCC model), the AWS sweep was slower
// (benches/README.md).
#[inline(never)]
pub fn run<M: Model, Q: EventQueue<M::Event>>(
    model: &mut M,
    s: &mut Scheduler<M::Event, Q>,
    horizon: Instant,
) {
    while let Some(event) = s.pop_until(horizon) {
        if let Some(next) = s.peek() {
            model.prefetch(next);
        }
        model.handle(event, s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ns: u64) -> Instant {
        Instant::from_ns(ns)
    }

    #[test]
    fn events_come_out_in_time_then_scheduling_order() {
        let mut s: Scheduler<&str> = Scheduler::new(HeapQueue::default());
        s.schedule_at(t(20), "c");
        s.schedule_at(t(10), "a");
        s.schedule_at(t(20), "d");
        s.schedule_at(t(10), "b");
        s.schedule_at(t(99), "late");
        let mut out = vec![];
        while let Some(e) = s.pop_until(t(50)) {
            out.push((s.now().as_ns(), e));
        }
        assert_eq!(out, vec![(10, "a"), (10, "b"), (20, "c"), (20, "d")]);
        assert_eq!(s.processed(), 4);
        assert_eq!(s.pending(), 1, "the event after the horizon stays pending");
    }

    #[test]
    fn schedule_in_is_relative_and_saturates() {
        let mut s: Scheduler<u8> = Scheduler::new(HeapQueue::default());
        s.schedule_at(t(5), 1);
        s.pop_until(Instant::NEVER);
        s.schedule_in(Span::from_ns(7), 2);
        s.schedule_in(Span::MAX, 3);
        assert_eq!(s.pop_until(Instant::NEVER), Some(2));
        assert_eq!(s.now(), t(12));
        assert_eq!(s.pop_until(Instant::NEVER), Some(3));
        assert_eq!(s.now(), Instant::NEVER);
    }
}
