//! Replaying a run's event-queue traffic without its model: the engine's share of a run.
//!
//! [`record`] runs one replication on a calendar queue that logs every call the run makes to
//! it (pushes with their times, pops with their horizons, peeks). [`replay`] makes exactly
//! those calls again on a [`Scheduler`] with a 24-byte payload (the size of the queue model's
//! events), with no model at all: its cost is what the engine (scheduler + queue) costs that
//! run, and the rest of a real run's cost is the model's.

// Shared by the `engine` and `engine_share` benches, each using part of it.
#![allow(dead_code)]

use retrysim::assembly::simulate_with;
use retrysim::engine::rng::run_seed;
use retrysim::engine::{CalendarQueue, EventQueue, HeapQueue, Instant, Nanos, Scheduler};
use retrysim::experiment::Experiment;
use retrysim::model::{QueueChoice, occ_model, queue_model};
use std::cell::RefCell;

/// One call a run made to its event queue.
#[derive(Clone, Copy, Debug)]
pub enum Call {
    Push(Nanos),
    Pop(Nanos),
    Peek,
}

/// A replayed event: as big as the queue model's `Ev` (24 bytes).
#[derive(Clone, Copy)]
pub struct Payload(#[allow(dead_code)] [u64; 3]);

thread_local! {
    static TRACE: RefCell<Vec<Call>> = const { RefCell::new(Vec::new()) };
}

/// A calendar queue that logs the calls made to it.
pub struct Logged<E>(CalendarQueue<E>);

impl<E> Default for Logged<E> {
    fn default() -> Self {
        Logged(CalendarQueue::default())
    }
}

impl<E: Copy> EventQueue<E> for Logged<E> {
    fn push(&mut self, time: Nanos, seq: u64, event: E) {
        TRACE.with(|t| t.borrow_mut().push(Call::Push(time)));
        self.0.push(time, seq, event);
    }
    fn pop_if_at_most(&mut self, horizon: Nanos) -> Option<(Nanos, E)> {
        TRACE.with(|t| t.borrow_mut().push(Call::Pop(horizon)));
        self.0.pop_if_at_most(horizon)
    }
    fn peek(&self) -> Option<&E> {
        TRACE.with(|t| t.borrow_mut().push(Call::Peek));
        self.0.peek()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
}

struct Logging;
impl QueueChoice for Logging {
    type Occ = Logged<occ_model::Ev>;
    type Queue = Logged<queue_model::Ev>;
}

/// The queue calls of run 0 of the experiment's first point and strategy, and its events.
pub fn record(exp: &Experiment) -> (Vec<Call>, u64) {
    let point = &exp.points[0];
    let seed = run_seed(exp.seed, 0);
    TRACE.with(|t| t.borrow_mut().clear());
    let events = simulate_with::<Logging>(&point.spec, &point.strategies[0], seed).events;
    (TRACE.with(|t| std::mem::take(&mut *t.borrow_mut())), events)
}

/// Makes the recorded calls on `s` (reset first); returns a checksum of what came out.
#[inline(always)]
pub fn replay<Q: EventQueue<Payload>>(calls: &[Call], s: &mut Scheduler<Payload, Q>) -> u64 {
    s.reset();
    let mut sum = 0u64;
    for &call in calls {
        match call {
            Call::Push(t) => s.schedule_at(Instant::from_ns(t), Payload([t; 3])),
            Call::Pop(h) => {
                if s.pop_until(Instant::from_ns(h)).is_some() {
                    sum = sum.wrapping_add(s.now().as_ns());
                }
            }
            Call::Peek => {
                if s.peek().is_some() {
                    sum = sum.wrapping_add(1);
                }
            }
        }
    }
    sum
}

/// [`replay`] on a calendar queue: a named function, for `valgrind --toggle-collect`.
#[inline(never)]
pub fn replay_calendar(calls: &[Call], s: &mut Scheduler<Payload, CalendarQueue<Payload>>) -> u64 {
    replay(calls, s)
}

/// [`replay`] on the binary heap.
#[inline(never)]
pub fn replay_heap(calls: &[Call], s: &mut Scheduler<Payload, HeapQueue<Payload>>) -> u64 {
    replay(calls, s)
}

/// The cheapest possible "queue" (a stack that says every event is at time 0): replaying on
/// it measures the replay loop and the scheduler's own bookkeeping, to subtract.
pub struct Stack<E>(Vec<E>);

impl<E> Default for Stack<E> {
    fn default() -> Self {
        Stack(Vec::new())
    }
}

impl<E: Copy> EventQueue<E> for Stack<E> {
    #[inline]
    fn push(&mut self, _time: Nanos, _seq: u64, event: E) {
        self.0.push(event);
    }
    #[inline]
    fn pop_if_at_most(&mut self, _horizon: Nanos) -> Option<(Nanos, E)> {
        self.0.pop().map(|e| (0, e))
    }
    #[inline]
    fn peek(&self) -> Option<&E> {
        self.0.last()
    }
    #[inline]
    fn len(&self) -> usize {
        self.0.len()
    }
    fn clear(&mut self) {
        self.0.clear();
    }
}

/// [`replay`] on [`Stack`].
#[inline(never)]
pub fn replay_stack(calls: &[Call], s: &mut Scheduler<Payload, Stack<Payload>>) -> u64 {
    replay(calls, s)
}
