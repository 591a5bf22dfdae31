//! A radix heap: a monotone priority queue for event times.
//!
//! A discrete-event simulation never schedules before the current time, so every key pushed
//! is >= the last key popped. A radix heap exploits this: an entry lives in bucket
//! `bit_length(time ^ last)`, where `last` is the time of the last pop. Entries in bucket `b`
//! agree with `last` on every bit above `b - 1`, so all of bucket `b` comes before all of
//! bucket `b + 1`. Popping takes the front of bucket 0 (entries at exactly `last`); when it is
//! empty, the lowest non-empty bucket is scanned for its minimum time, which becomes `last`,
//! and its entries are redistributed to lower buckets. Each entry moves down at most 64 times
//! and every move is a sequential scan, so it stays fast when a million timers are pending,
//! where a binary heap's pointer-chasing misses the cache on every level.
//!
//! Ties: bucket 0 holds the entries at time `last` in sequence order (a `VecDeque`): entries
//! redistributed into it are sorted by `seq`, and an entry pushed at time `last` has a larger
//! `seq` than any pending one, so it goes to the back. Pops are therefore in exact
//! `(time, seq)` order, identical to [`super::HeapQueue`].

use super::Nanos;
use super::queue::EventQueue;
use std::collections::VecDeque;

struct Entry<E> {
    time: Nanos,
    seq: u64,
    event: E,
}

/// The radix heap. See the module documentation.
pub struct RadixQueue<E> {
    /// Entries at exactly `last`, in `seq` order.
    now: VecDeque<Entry<E>>,
    /// `buckets[b - 1]` holds the entries with `bit_length(time ^ last) == b`, unordered.
    buckets: Vec<Vec<Entry<E>>>,
    /// Bit `b - 1` set iff `buckets[b - 1]` is non-empty: finds the lowest one in one step.
    occupied: u64,
    last: Nanos,
    len: usize,
}

impl<E> Default for RadixQueue<E> {
    fn default() -> Self {
        RadixQueue {
            now: VecDeque::new(),
            buckets: (0..64).map(|_| Vec::new()).collect(),
            occupied: 0,
            last: 0,
            len: 0,
        }
    }
}

impl<E> RadixQueue<E> {
    #[inline]
    fn place(&mut self, e: Entry<E>) {
        let x = e.time ^ self.last;
        if x == 0 {
            self.now.push_back(e);
        } else {
            // bit_length(x) in 1..=64 -> bucket index 0..=63.
            let b = 63 - x.leading_zeros() as usize;
            self.buckets[b].push(e);
            self.occupied |= 1 << b;
        }
    }

    /// Moves the lowest non-empty bucket down: its minimum time becomes `last`.
    fn refill(&mut self) {
        if self.occupied == 0 {
            return;
        }
        let b = self.occupied.trailing_zeros() as usize;
        let mut bucket = std::mem::take(&mut self.buckets[b]);
        self.occupied &= !(1 << b);
        self.last = bucket.iter().map(|e| e.time).min().unwrap_or(self.last);
        for e in bucket.drain(..) {
            self.place(e);
        }
        // Hand the allocation back so steady state allocates nothing.
        self.buckets[b] = bucket;
        self.now.make_contiguous().sort_unstable_by_key(|e| e.seq);
    }
}

impl<E> EventQueue<E> for RadixQueue<E> {
    #[inline]
    fn push(&mut self, time: Nanos, seq: u64, event: E) {
        debug_assert!(time >= self.last, "radix heap: key {time} below the last popped {}", self.last);
        self.len += 1;
        self.place(Entry { time, seq, event });
    }

    #[inline]
    fn pop_if_at_most(&mut self, horizon: Nanos) -> Option<(Nanos, E)> {
        if self.now.is_empty() {
            // Peek without committing: if the next time is past the horizon, leave it.
            if self.occupied == 0 {
                return None;
            }
            let b = self.occupied.trailing_zeros() as usize;
            let next = self.buckets[b].iter().map(|e| e.time).min()?;
            if next > horizon {
                return None;
            }
            self.refill();
        } else if self.last > horizon {
            return None;
        }
        let e = self.now.pop_front()?;
        self.len -= 1;
        Some((e.time, e.event))
    }

    #[inline]
    fn len(&self) -> usize {
        self.len
    }

    fn clear(&mut self) {
        self.now.clear();
        for b in &mut self.buckets {
            b.clear();
        }
        self.occupied = 0;
        self.last = 0;
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meets_the_event_queue_contract() {
        super::super::conformance::check::<RadixQueue<u64>>();
    }
}
