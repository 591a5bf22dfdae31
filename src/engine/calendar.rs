//! A calendar queue: the event queue used by default.
//!
//! Pending events live in three tiers by how far ahead they are:
//!
//! 1. the *current window* `[.., window_end)`: a vector sorted in descending `(time, seq)`
//!    order, popped from the back, plus a small binary heap (`late`) for events scheduled into
//!    the window after it was sorted;
//! 2. a *ring* of `RING` buckets of width `2^shift` ns covering `[window_end, overflow_start)`,
//!    each an unsorted vector; when the window runs dry the next non-empty bucket is sorted
//!    and becomes the window;
//! 3. an unsorted *overflow* vector for everything at or after `overflow_start`. When the
//!    ring runs dry, the bucket width is re-chosen from the overflow's span and count (about
//!    `TARGET_PER_BUCKET` events per bucket) and the overflow is spread over a fresh ring.
//!
//! Sizing buckets from the events waiting can misjudge: a lone timer an hour ahead makes the
//! first ring's buckets an hour wide, and every event scheduled after that lands in `late`.
//! When `late` outgrows `LATE_LIMIT`, the width that the pace of recent pops calls for is
//! used instead and the pending events are re-spread (`rewindow_if_too_wide`).
//!
//! An event is moved a small constant number of times and is sorted once in a bucket of a few
//! dozen, so the cost per event stays flat when a million timers are pending, where a binary
//! heap misses the cache on every level. Pops are in exact `(time, seq)` order, identical to
//! [`super::HeapQueue`] (checked by the tests below and by `tests/queue_equivalence.rs`).
//! Because the next events sit sorted at the back of the window, `peek` can
//! show the model what comes next, so it can prefetch the memory that event will touch.

use super::Nanos;
use super::queue::EventQueue;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Buckets in the ring (a power of two): 4,096 by measurement (README, Performance).
const RING_BITS: u32 = 12;
const RING: u64 = 1 << RING_BITS;
/// Aimed-for events per bucket when the width is chosen: sorting a few dozen is cheap, and
/// fewer, fuller buckets keep the ring scan short.
const TARGET_PER_BUCKET: u64 = 16;
/// Pops since the last rebuild needed before their pace is trusted to size the buckets.
const MIN_POPS_FOR_PACE: u64 = 256;
/// Events in the current window's heap beyond which the buckets are reconsidered: a heap of
/// this size is still cheap, a bigger one means the buckets are far too wide.
const LATE_LIMIT: usize = 1024;

struct Entry<E> {
    time: Nanos,
    seq: u64,
    event: E,
}

impl<E> Entry<E> {
    #[inline]
    fn key(&self) -> (Nanos, u64) {
        (self.time, self.seq)
    }
}

/// Orders `late` as a min-heap on `(time, seq)`.
struct Late<E>(Entry<E>);
impl<E> PartialEq for Late<E> {
    fn eq(&self, o: &Self) -> bool {
        self.0.key() == o.0.key()
    }
}
impl<E> Eq for Late<E> {}
impl<E> PartialOrd for Late<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Late<E> {
    fn cmp(&self, o: &Self) -> Ordering {
        o.0.key().cmp(&self.0.key())
    }
}

/// The calendar queue. See the module documentation.
pub struct CalendarQueue<E> {
    /// The current window, sorted descending: the next event is at the back.
    window: Vec<Entry<E>>,
    /// Events scheduled into the current window after it was sorted.
    late: BinaryHeap<Late<E>>,
    /// Every event in `window` or `late` is before this time.
    window_end: Nanos,
    /// log2 of the bucket width in ns.
    shift: u32,
    /// `ring[a % RING]` holds the events whose absolute bucket number `time >> shift` is `a`,
    /// for `window_end >> shift <= a < overflow_start >> shift`.
    ring: Vec<Vec<Entry<E>>>,
    /// One bit per ring bucket: set iff it is non-empty.
    occupied: Vec<u64>,
    /// Events at or after this time wait in `overflow`; fixed until the next rebuild, so the
    /// ring and the overflow never hold events of the same bucket.
    overflow_start: Nanos,
    overflow: Vec<Entry<E>>,
    len: usize,
    /// Time of the last pop, and (time, pops) since the last rebuild: the queue's pace.
    last_popped: Nanos,
    popped_since: (Nanos, u64),
    /// `late` may grow to this before the bucket width is reconsidered.
    late_limit: usize,
}

impl<E> Default for CalendarQueue<E> {
    fn default() -> Self {
        CalendarQueue {
            window: Vec::new(),
            late: BinaryHeap::new(),
            window_end: 0,
            shift: 0,
            ring: (0..RING).map(|_| Vec::new()).collect(),
            occupied: vec![0; (RING / 64) as usize],
            overflow_start: 0,
            overflow: Vec::new(),
            len: 0,
            last_popped: 0,
            popped_since: (0, 0),
            late_limit: LATE_LIMIT,
        }
    }
}

impl<E> CalendarQueue<E> {
    #[inline]
    fn next_time(&self) -> Option<Nanos> {
        match (self.window.last(), self.late.peek()) {
            (Some(w), Some(l)) => Some(w.time.min(l.0.time)),
            (Some(w), None) => Some(w.time),
            (None, Some(l)) => Some(l.0.time),
            (None, None) => None,
        }
    }

    #[inline]
    fn place_in_ring(&mut self, e: Entry<E>) {
        let i = ((e.time >> self.shift) % RING) as usize;
        self.ring[i].push(e);
        self.occupied[i / 64] |= 1 << (i % 64);
    }

    /// Makes the next non-empty bucket the window (rebuilding the ring from the overflow when
    /// the ring is empty). Called only when the window and `late` are empty.
    fn advance(&mut self) {
        loop {
            if let Some(i) = self.first_occupied() {
                let mut bucket = std::mem::take(&mut self.ring[i]);
                self.occupied[i / 64] &= !(1 << (i % 64));
                // Absolute bucket number: the first at or after the window end with this index.
                let start = self.window_end >> self.shift;
                let a = start + ((i as u64).wrapping_sub(start) % RING);
                bucket.sort_unstable_by_key(|e| Reverse(e.key()));
                // Swap allocations: the old window's (empty) vector becomes the bucket's. A
                // vector much larger than a bucket needs is dropped instead, so that a burst
                // does not leave every bucket holding the capacity of its fullest moment.
                std::mem::swap(&mut self.window, &mut bucket);
                if bucket.capacity() > 4 * TARGET_PER_BUCKET as usize {
                    bucket = Vec::new();
                }
                self.ring[i] = bucket;
                self.window_end = (a + 1) << self.shift;
                return;
            }
            if self.overflow.is_empty() {
                return;
            }
            self.rebuild(None);
        }
    }

    /// The ring index of the earliest non-empty bucket, scanning from the window end.
    fn first_occupied(&self) -> Option<usize> {
        let start = ((self.window_end >> self.shift) % RING) as usize;
        let words = self.occupied.len();
        // The first word, masked to the buckets at or after `start`.
        let (w0, b0) = (start / 64, start % 64);
        let masked = self.occupied[w0] & (!0u64 << b0);
        if masked != 0 {
            return Some(w0 * 64 + masked.trailing_zeros() as usize);
        }
        for k in 1..=words {
            let w = (w0 + k) % words;
            let bits = if w == w0 { self.occupied[w] & !(!0u64 << b0) } else { self.occupied[w] };
            if bits != 0 {
                return Some(w * 64 + bits.trailing_zeros() as usize);
            }
        }
        None
    }

    /// The bucket width for a ring over the overflow's events, from `lo` to `hi`: their span
    /// cut into buckets of `TARGET_PER_BUCKET` events (at most `RING` buckets).
    ///
    /// That counts only the events waiting now, not those that will be scheduled into a
    /// bucket later. On open workloads a few far-off timers can make the buckets seconds wide,
    /// and every short-delay event then lands in the current window's heap; when that heap
    /// outgrows `late_limit`, [`Self::rewindow_if_too_wide`] rebuilds with `pace` = the width
    /// that the pace of recent pops calls for (target x mean gap between pops). With many
    /// events waiting the ring still spans all of them, so rebuilds (which scan the overflow)
    /// stay rare.
    fn bucket_width(&self, lo: Nanos, hi: Nanos, pace: Option<Nanos>) -> Nanos {
        let span = hi - lo;
        let waiting = self.overflow.len() as u64;
        match pace {
            Some(pace) if waiting > RING * TARGET_PER_BUCKET => pace.max(span / RING),
            Some(pace) => pace,
            None => span / (waiting / TARGET_PER_BUCKET).clamp(1, RING),
        }
    }

    /// Target x the mean gap between the pops since the last rebuild, once there are enough
    /// of them over a positive time.
    fn pace_width(&self) -> Option<Nanos> {
        let (since, pops) = self.popped_since;
        let elapsed = self.last_popped - since;
        (pops >= MIN_POPS_FOR_PACE && elapsed > 0)
            .then(|| (elapsed as u128 * TARGET_PER_BUCKET as u128 / pops as u128).max(1) as Nanos)
    }

    /// log2 of `width` rounded up to a power of two.
    fn shift_for(width: Nanos) -> u32 {
        if width <= 1 { 0 } else { 64 - (width - 1).leading_zeros() }
    }

    /// Called when the current window's heap has grown past `late_limit`: the buckets are too
    /// wide for the pace of events (they were sized before the queue knew it). If the pace
    /// calls for narrower buckets, every pending event goes back to the overflow and the ring
    /// is rebuilt; otherwise the limit doubles, so the check stays rare.
    fn rewindow_if_too_wide(&mut self) {
        match self.pace_width() {
            Some(pace) if Self::shift_for(pace) < self.shift => {
                self.overflow.append(&mut self.window);
                self.overflow.extend(self.late.drain().map(|l| l.0));
                for i in 0..RING as usize {
                    self.overflow.append(&mut self.ring[i]);
                }
                self.occupied.fill(0);
                self.rebuild(Some(pace));
                self.late_limit = LATE_LIMIT;
            }
            _ => self.late_limit = self.late_limit.saturating_mul(2),
        }
    }

    /// Spreads the overflow over a fresh ring whose bucket width fits its span and count.
    fn rebuild(&mut self, pace: Option<Nanos>) {
        let (mut lo, mut hi) = (Nanos::MAX, 0);
        for e in &self.overflow {
            lo = lo.min(e.time);
            hi = hi.max(e.time);
        }
        // A power of two, so that a bucket number is a shift.
        self.shift = Self::shift_for(self.bucket_width(lo, hi, pace));
        self.window_end = (lo >> self.shift) << self.shift;
        self.overflow_start = ((lo >> self.shift) + RING).saturating_mul(1 << self.shift);
        if (lo >> self.shift) + RING > (Nanos::MAX >> self.shift) {
            self.overflow_start = Nanos::MAX;
        }
        self.popped_since = (self.last_popped, 0);
        // The old overflow's buffer is freed once spread: keeping it would hold the memory of
        // every pending event twice (once in the ring, once as spare capacity).
        let overflow = std::mem::take(&mut self.overflow);
        for e in overflow {
            if e.time >= self.overflow_start && self.overflow_start != Nanos::MAX {
                self.overflow.push(e);
            } else {
                self.place_in_ring(e);
            }
        }
    }
}

impl<E> EventQueue<E> for CalendarQueue<E> {
    /// The next event, if it is already in the current window (it is, except right before the
    /// window has to be refilled).
    #[inline]
    fn peek(&self) -> Option<&E> {
        match (self.window.last(), self.late.peek()) {
            (Some(w), Some(l)) => Some(if w.key() < l.0.key() { &w.event } else { &l.0.event }),
            (Some(w), None) => Some(&w.event),
            (None, Some(l)) => Some(&l.0.event),
            (None, None) => None,
        }
    }

    #[inline]
    fn push(&mut self, time: Nanos, seq: u64, event: E) {
        self.len += 1;
        let e = Entry { time, seq, event };
        if time < self.window_end {
            self.late.push(Late(e));
            if self.late.len() > self.late_limit {
                self.rewindow_if_too_wide();
            }
        } else if time < self.overflow_start || self.overflow_start == Nanos::MAX {
            self.place_in_ring(e);
        } else {
            self.overflow.push(e);
        }
    }

    #[inline]
    fn pop_if_at_most(&mut self, horizon: Nanos) -> Option<(Nanos, E)> {
        if self.window.is_empty() && self.late.is_empty() {
            self.advance();
        }
        let t = self.next_time()?;
        if t > horizon {
            return None;
        }
        self.len -= 1;
        self.last_popped = t;
        self.popped_since.1 += 1;
        let from_window = match (self.window.last(), self.late.peek()) {
            (Some(w), Some(l)) => w.key() < l.0.key(),
            (Some(_), None) => true,
            _ => false,
        };
        let e = if from_window { self.window.pop() } else { self.late.pop().map(|l| l.0) }?;
        Some((e.time, e.event))
    }

    #[inline]
    fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meets_the_event_queue_contract() {
        super::super::conformance::check::<CalendarQueue<u64>>();
    }

    #[test]
    fn a_far_timer_does_not_leave_the_window_too_wide() {
        use super::super::HeapQueue;
        // One timer an hour ahead and one event now: the first ring is sized from these two,
        // so its buckets are an hour wide. Then a dense stream of short delays, as an open
        // workload makes, with ten thousand pending.
        let mut q = CalendarQueue::default();
        let mut heap = HeapQueue::default();
        for (t, s) in [(3_600_000_000_000u64, 0u64), (0, 1)] {
            q.push(t, s, s);
            heap.push(t, s, s);
        }
        let (mut seq, mut max_late) = (2u64, 0usize);
        for step in 0..200_000u64 {
            let expected = heap.pop_if_at_most(u64::MAX);
            let (now, _) = expected.expect("never empty");
            assert_eq!(q.pop_if_at_most(u64::MAX), expected);
            let pushes = if step < 10_000 { 2 } else { 1 };
            for _ in 0..pushes {
                let t = now + 1_000 + (seq * 7919) % 100_000;
                q.push(t, seq, seq);
                heap.push(t, seq, seq);
                seq += 1;
            }
            max_late = max_late.max(q.late.len());
        }
        assert!(max_late <= 2 * LATE_LIMIT, "the window's heap grew to {max_late}");
    }

    #[test]
    fn a_million_pending_timers() {
        use rand::{Rng, SeedableRng};
        let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
        let mut q = CalendarQueue::default();
        for s in 0..1_000_000u64 {
            q.push(r.next_u64() % 1_000_000_000, s, s);
        }
        let mut last = None;
        let mut n = 0;
        while let Some((t, s)) = q.pop_if_at_most(u64::MAX) {
            assert!(last < Some((t, s)));
            last = Some((t, s));
            n += 1;
        }
        assert_eq!(n, 1_000_000);
    }
}
