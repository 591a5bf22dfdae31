//! Event queues. Every implementation pops the smallest `(time, seq)` first; `seq` values are
//! unique and increase with scheduling order, so the order of events is total and the same
//! for every implementation. No event is pushed before the time of the last pop (the
//! [`super::Scheduler`] guarantees it); the radix and calendar queues rely on it.

use super::Nanos;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A priority queue of events keyed by `(time, seq)`.
pub trait EventQueue<E>: Default {
    fn push(&mut self, time: Nanos, seq: u64, event: E);
    /// Removes and returns the smallest entry if its time is `<= horizon`.
    fn pop_if_at_most(&mut self, horizon: Nanos) -> Option<(Nanos, E)>;
    fn len(&self) -> usize;
    /// The next event, when the queue can tell cheaply (a hint: `None` is always allowed).
    /// The engine uses it to let the model prefetch the memory the next event will touch.
    fn peek(&self) -> Option<&E> {
        None
    }
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Removes every event, as if the queue were new (its clock back at 0), so that it can
    /// serve another run. The crate's queues (binary heap, radix heap, calendar queue) keep
    /// their memory, so a worker that reuses one queue for many runs allocates nothing once it
    /// has seen its largest run; the default implementation makes a new queue.
    fn clear(&mut self) {
        *self = Self::default();
    }
}

/// `(time, seq)` packed into one `u128` (time in the high half), so one integer comparison
/// orders entries.
#[inline]
fn key(time: Nanos, seq: u64) -> u128 {
    ((time as u128) << 64) | seq as u128
}

struct HeapEntry<E> {
    key: u128,
    event: E,
}

impl<E> PartialEq for HeapEntry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for HeapEntry<E> {}
impl<E> PartialOrd for HeapEntry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for HeapEntry<E> {
    /// Reversed: `BinaryHeap` is a max-heap and we want the earliest event on top.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

/// The reference queue: a binary heap from the standard library. Simple enough to be
/// obviously right; the test oracle for faster queues.
pub struct HeapQueue<E> {
    heap: BinaryHeap<HeapEntry<E>>,
}

impl<E> Default for HeapQueue<E> {
    fn default() -> Self {
        HeapQueue { heap: BinaryHeap::new() }
    }
}

impl<E> EventQueue<E> for HeapQueue<E> {
    #[inline]
    fn peek(&self) -> Option<&E> {
        self.heap.peek().map(|e| &e.event)
    }

    #[inline]
    fn push(&mut self, time: Nanos, seq: u64, event: E) {
        self.heap.push(HeapEntry { key: key(time, seq), event });
    }

    #[inline]
    fn pop_if_at_most(&mut self, horizon: Nanos) -> Option<(Nanos, E)> {
        let top = self.heap.peek()?;
        if (top.key >> 64) as Nanos > horizon {
            return None;
        }
        let e = self.heap.pop()?;
        Some(((e.key >> 64) as Nanos, e.event))
    }

    #[inline]
    fn len(&self) -> usize {
        self.heap.len()
    }

    fn clear(&mut self) {
        self.heap.clear();
    }
}
