//! A calendar queue: the event queue used by default.
//!
//! Pending events live in four places by how far ahead they are:
//!
//! 1. the *now list*: a FIFO of the events scheduled at the current time (`time == now`, the
//!    time of the last pop): zero-delay hops, a herd's clients all starting at t=0. Such an
//!    event was scheduled after every event already pending, so among the events at `now` it
//!    comes last: it is popped after those still in the window, in scheduling order, without
//!    being sorted or heaped;
//! 2. the *current window* `[.., window_end)`: the entries of one bucket, copied out in
//!    `(time, seq)` order, found by sorting one compact `u64` key per entry (time offset in
//!    the bucket, position) rather than the entries; plus a small binary heap (`late`) for
//!    events scheduled into the window after it was sorted;
//! 3. a *ring* of `RING` buckets of width `2^shift` ns covering `[window_end, overflow_start)`;
//!    when the window runs dry, the next non-empty bucket becomes the window. A push does
//!    not go into its bucket at once: it is written to the back of an `incoming` list, and
//!    the list is spread over the buckets, in scheduling order, just before the window is
//!    refilled (a push then writes to the same few cache lines every time, and the random
//!    buckets' lists are loaded a few dozen at a time, overlapping, rather than one per
//!    event);
//! 4. an unsorted *overflow* list for everything at or after `overflow_start`. When the ring
//!    runs dry, the bucket width is re-chosen from the overflow's span and count (about
//!    `TARGET_PER_BUCKET` events per bucket) and the overflow is spread over a fresh ring.
//!
//! Ring buckets and the overflow are linked lists of fixed-size chunks taken from one pool
//! (`Pool`), and every vector keeps its capacity, so once a run has reached its largest
//! number of pending events the queue allocates nothing; [`EventQueue::clear`] empties it
//! for the next run and keeps all of that memory (`tests/no_alloc.rs`).
//!
//! Exact order without storing sequence numbers: a bucket's (or the overflow's) entries are
//! kept in scheduling order, because a pushed event has a larger sequence number than every
//! pending one and goes to the back, and a rebuild spreads the overflow front to back. Two
//! entries of one bucket with the same time are therefore ordered by position, and sorting
//! by `(time, position)` is sorting by `(time, seq)`. Entries are 8 bytes smaller for it.
//!
//! Sizing buckets from the events waiting can misjudge: a lone timer an hour ahead makes the
//! first ring's buckets an hour wide, and every event scheduled after that lands in `late`.
//! When `late` outgrows `LATE_LIMIT`, the width that the pace of recent pops calls for is
//! used instead and the pending events are re-spread (`rewindow_if_too_wide`).
//!
//! An event is moved a small constant number of times and its key is sorted once in a bucket
//! of a few dozen, so the cost per event stays flat when a million timers are pending, where a
//! binary heap misses the cache on every level. Pops are in exact `(time, seq)` order,
//! identical to [`super::HeapQueue`] (checked by the conformance tests and by
//! `tests/queue_equivalence.rs`). Because the next events sit sorted in the window, `peek`
//! can show the model what comes next, so it can prefetch the memory that event will touch.
//!
//! Like every queue of a discrete-event simulation, it expects events no earlier than the
//! last one popped (the [`super::Scheduler`] guarantees it) and sequence numbers that increase
//! with scheduling order.

use super::Nanos;
use super::queue::EventQueue;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

/// Buckets in the ring (a power of two): 4,096 by measurement (benches/README.md). More
/// buckets would keep them smaller when a million events wait, but the tails that pushes
/// write to would no longer stay in the cache.
const RING_BITS: u32 = 12;
const RING: u64 = 1 << RING_BITS;
/// Words of the ring's occupancy bitmap.
const WORDS: usize = (RING / 64) as usize;
/// Aimed-for events per bucket when the width is chosen: sorting a few dozen is cheap, and
/// fewer, fuller buckets keep the ring scan short and the ring's tails (where pushes write)
/// fewer. 32 by measurement, against 8 to 16 (benches/README.md).
const TARGET_PER_BUCKET: u64 = 32;
/// Pops since the last rebuild needed before their pace is trusted to size the buckets.
const MIN_POPS_FOR_PACE: u64 = 256;
/// Events in the current window's heap beyond which the buckets are reconsidered: a heap of
/// this size is still cheap, a bigger one means the buckets are far too wide.
const LATE_LIMIT: usize = 1024;
/// Entries per chunk of the pool (512 bytes of the queue model's entries): an empty bucket's
/// first push takes a whole chunk, so larger chunks waste memory on sparse rings; smaller
/// ones make more buckets span several chunks, which are slower to sort.
const CHUNK: usize = 16;
/// "No chunk".
const NIL: u32 = u32::MAX;
/// Widest bucket (log2 ns) whose window keys pack into a `u64`: 32 bits of time offset, 32 of
/// position. Wider buckets (over 4.3 s) sort `u128` keys instead.
const NARROW_SHIFT: u32 = 32;

#[derive(Clone, Copy)]
struct Entry<E> {
    time: Nanos,
    event: E,
}

/// An event scheduled into the current window after it was sorted: ordered by `(time, seq)`,
/// reversed so that `BinaryHeap` (a max-heap) pops the earliest.
struct Late<E> {
    key: u128,
    event: E,
}

impl<E> Late<E> {
    #[inline]
    fn time(&self) -> Nanos {
        (self.key >> 64) as Nanos
    }
}
impl<E> PartialEq for Late<E> {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
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
        o.key.cmp(&self.key)
    }
}

/// A list of entries in scheduling order: a chain of pool chunks, all full but the last. The
/// chain is a ring (the last chunk's `next` is the first), so a list is 8 bytes, not 12: the
/// ring of buckets then takes 32 KB, and more of it stays in the cache when the incoming
/// events are spread over it.
#[derive(Clone, Copy)]
struct List {
    tail: u32,
    len: u32,
}

impl List {
    const EMPTY: List = List { tail: NIL, len: 0 };
}

/// Fixed-size chunks of entries, handed out and taken back through a free list. Chunk `c` is
/// `slots[c * CHUNK..][..CHUNK]`; `next[c]` is the chunk after it in its list.
struct Pool<E> {
    slots: Vec<Entry<E>>,
    next: Vec<u32>,
    free: u32,
}

impl<E: Copy> Pool<E> {
    /// A chunk from the free list, or a new one (filled with copies of slot 0, which the pool
    /// has: the slots are plain initialised values, so no unsafe code is needed).
    #[inline]
    fn alloc(&mut self) -> u32 {
        if self.free != NIL {
            let c = self.free;
            self.free = self.next[c as usize];
            return c;
        }
        let c = self.next.len();
        assert!(c < NIL as usize, "calendar queue: too many pending events");
        // Keep a quarter more room than the most chunks used so far: once a run has reached
        // its steady state, its ups and downs stay within it and nothing is allocated.
        let room = c + 1 + c / 4;
        if self.next.capacity() < room {
            self.next.reserve(room - c);
            self.slots.reserve((room - c) * CHUNK);
        }
        self.next.push(NIL);
        let fill = self.slots[0];
        self.slots.extend(std::iter::repeat_n(fill, CHUNK));
        c as u32
    }

    /// Appends `e` at the back of `list`.
    ///
    /// `e` is only ever written into its slot here, never handed to a function that is not
    /// inlined: a value passed to one is put in memory first, on every path, and copying it
    /// from there with wider loads than it was written with stalls (store-to-load
    /// forwarding; see benches/README.md).
    #[inline(always)]
    fn append(&mut self, list: &mut List, e: Entry<E>) {
        let off = list.len as usize % CHUNK;
        let slot = if off != 0 {
            list.tail as usize * CHUNK + off
        } else if !self.slots.is_empty() {
            self.chain_new_chunk(list) as usize * CHUNK
        } else {
            // The pool's very first chunk: its slots are made from `e`, pushed one by one
            // (`alloc`, or `Vec::resize`, would take `e` out of line).
            self.slots.reserve(CHUNK);
            for _ in 0..CHUNK {
                self.slots.push(e);
            }
            self.next.push(NIL);
            self.chain(list, 0);
            0
        };
        self.slots[slot] = e;
        list.len += 1;
    }

    /// Chains a new chunk at the back of `list` (its last chunk is full, or it is empty) and
    /// returns it; its slots are made from copies of slot 0 (the pool has one).
    #[inline(never)]
    fn chain_new_chunk(&mut self, list: &mut List) -> u32 {
        let c = self.alloc();
        self.chain(list, c);
        c
    }

    #[inline]
    fn chain(&mut self, list: &mut List, c: u32) {
        if list.len == 0 {
            self.next[c as usize] = c;
        } else {
            self.next[c as usize] = self.next[list.tail as usize];
            self.next[list.tail as usize] = c;
        }
        list.tail = c;
    }

    /// The first chunk of a list ([`NIL`] for an empty one).
    #[inline]
    fn head(&self, list: List) -> u32 {
        if list.len == 0 { NIL } else { self.next[list.tail as usize] }
    }

    /// Gives every chunk of `list` back, in one step.
    #[inline]
    fn release(&mut self, list: List) {
        if list.len > 0 {
            let head = self.head(list);
            self.next[list.tail as usize] = self.free;
            self.free = head;
        }
    }

    /// Calls `f` on every entry of `list`, front to back, giving each chunk back to the pool
    /// once it has been read (so that `f`, appending to other lists, reuses it at once).
    #[inline]
    fn drain(&mut self, list: List, mut f: impl FnMut(&mut Self, Entry<E>)) {
        let (mut c, mut left) = (self.head(list), list.len as usize);
        while left > 0 {
            let n = left.min(CHUNK);
            let base = c as usize * CHUNK;
            for j in base..base + n {
                let e = self.slots[j];
                f(self, e);
            }
            let after = self.next[c as usize];
            self.next[c as usize] = self.free;
            self.free = c;
            left -= n;
            c = after;
        }
    }

    /// Takes every chunk back (the lists that held them are forgotten), keeping the memory.
    fn reset(&mut self) {
        let n = self.next.len() as u32;
        for (c, next) in self.next.iter_mut().enumerate() {
            *next = if c as u32 + 1 < n { c as u32 + 1 } else { NIL };
        }
        self.free = if n > 0 { 0 } else { NIL };
    }
}

/// The calendar queue. See the module documentation.
pub struct CalendarQueue<E> {
    /// Events at `now`, in scheduling order.
    now_list: VecDeque<E>,
    /// The time of the last pop (0 before the first): every pending event is at or after it.
    now: Nanos,
    /// The current window's entries, sorted by `(time, seq)`; `window[cursor..]` are pending.
    window: Vec<Entry<E>>,
    cursor: usize,
    /// Scratch for sorting a bucket: its keys and the sorts' own buffers.
    keys: Vec<u64>,
    wide_keys: Vec<u128>,
    /// The chunks of a bucket of several, in order.
    chunks: Vec<u32>,
    scratch: Vec<u64>,
    counts: Vec<u32>,
    /// Events scheduled into the current window after it was sorted.
    late: BinaryHeap<Late<E>>,
    /// Events for the ring, in scheduling order, not yet put in their buckets: a push writes
    /// them here, one after another, and they are spread over the ring when the window runs
    /// dry (`spread_incoming`). A push straight into a random bucket waited for that bucket's
    /// list and tail slot to come into the cache, one event at a time; spread together, the
    /// loads of a few dozen buckets overlap.
    incoming: Vec<Entry<E>>,
    /// Every event in the window or `late` is before this time; every event in the ring or
    /// the overflow is at or after it, and after `now`.
    window_end: Nanos,
    /// log2 of the bucket width in ns.
    shift: u32,
    /// `ring[a % RING]` holds the events whose absolute bucket number `time >> shift` is `a`,
    /// for `window_end >> shift <= a < overflow_start >> shift`.
    ring: Box<[List; RING as usize]>,
    /// One bit per ring bucket: set iff it is non-empty.
    occupied: Box<[u64; WORDS]>,
    /// Events at or after this time wait in `overflow`; fixed until the next rebuild, so the
    /// ring and the overflow never hold events of the same bucket.
    overflow_start: Nanos,
    overflow: List,
    /// The chunks of the ring and the overflow.
    pool: Pool<E>,
    len: usize,
    /// (time, pops) since the last rebuild: the queue's pace.
    popped_since: (Nanos, u64),
    /// `late` may grow to this before the bucket width is reconsidered.
    late_limit: usize,
}

impl<E> Default for CalendarQueue<E> {
    fn default() -> Self {
        CalendarQueue {
            now_list: VecDeque::new(),
            now: 0,
            // Room for buckets several times the target, so that only a rare crowded one
            // makes them grow.
            window: Vec::with_capacity(8 * TARGET_PER_BUCKET as usize),
            cursor: 0,
            keys: Vec::with_capacity(8 * TARGET_PER_BUCKET as usize),
            wide_keys: Vec::new(),
            chunks: Vec::with_capacity(8 * TARGET_PER_BUCKET as usize / CHUNK),
            scratch: Vec::with_capacity(8 * TARGET_PER_BUCKET as usize),
            counts: Vec::with_capacity(4 * TARGET_PER_BUCKET as usize + 1),
            late: BinaryHeap::with_capacity(64),
            incoming: Vec::with_capacity(8 * TARGET_PER_BUCKET as usize),
            window_end: 0,
            shift: 0,
            ring: Box::new([List::EMPTY; RING as usize]),
            occupied: Box::new([0; WORDS]),
            overflow_start: 0,
            overflow: List::EMPTY,
            pool: Pool { slots: Vec::new(), next: Vec::new(), free: NIL },
            len: 0,
            popped_since: (0, 0),
            late_limit: LATE_LIMIT,
        }
    }
}

impl<E: Copy> CalendarQueue<E> {
    /// The time of the earliest event in the window or `late`.
    #[inline]
    fn window_time(&self) -> Option<Nanos> {
        match (self.window.get(self.cursor), self.late.peek()) {
            (Some(w), Some(l)) => Some(w.time.min(l.time())),
            (Some(w), None) => Some(w.time),
            (None, Some(l)) => Some(l.time()),
            (None, None) => None,
        }
    }

    /// Removes the earliest event of the window and `late` (one of them is non-empty). On a
    /// tie the window's comes first: an event reached `late` after the window was filled, so
    /// its sequence number is larger.
    #[inline]
    fn pop_window(&mut self) -> Entry<E> {
        match (self.window.get(self.cursor), self.late.peek()) {
            (Some(&w), Some(l)) if w.time <= l.time() => {
                self.cursor += 1;
                w
            }
            (Some(&w), None) => {
                self.cursor += 1;
                w
            }
            _ => {
                let l = self.late.pop().expect("late is not empty");
                Entry { time: l.time(), event: l.event }
            }
        }
    }

    /// [`EventQueue::pop_if_at_most`] when the now list or `late` holds events, or the window
    /// is empty. Out of line, so that the event loop holds only the common case.
    #[inline(never)]
    fn pop_slow(&mut self, horizon: Nanos) -> Option<(Nanos, E)> {
        if !self.now_list.is_empty() {
            if self.now > horizon {
                return None;
            }
            self.len -= 1;
            self.popped_since.1 += 1;
            // An event at `now` still in the window or `late` was scheduled earlier.
            let e = if self.window_time() == Some(self.now) {
                self.pop_window().event
            } else {
                self.now_list.pop_front().expect("the now list is not empty")
            };
            return Some((self.now, e));
        }
        if self.cursor == self.window.len() && self.late.is_empty() {
            self.advance();
        }
        let t = self.window_time()?;
        if t > horizon {
            return None;
        }
        self.len -= 1;
        self.now = t;
        self.popped_since.1 += 1;
        Some((t, self.pop_window().event))
    }

    /// [`EventQueue::peek`] when the now list or `late` holds events.
    fn peek_slow(&self) -> Option<&E> {
        if let Some(front) = self.now_list.front()
            && self.window_time() != Some(self.now)
        {
            return Some(front);
        }
        match (self.window.get(self.cursor), self.late.peek()) {
            (Some(w), Some(l)) => Some(if w.time <= l.time() { &w.event } else { &l.event }),
            (Some(w), None) => Some(&w.event),
            (None, Some(l)) => Some(&l.event),
            (None, None) => None,
        }
    }

    /// Puts the events pushed since the last call into their ring buckets, in scheduling
    /// order (so each bucket stays in scheduling order). Every event in `incoming` was at or
    /// after `window_end` and before `overflow_start` when pushed, and both only move in
    /// `advance` and `rewindow_if_too_wide` (through `take_bucket` and `rebuild`), which
    /// call this first.
    #[inline]
    fn spread_incoming(&mut self) {
        let incoming = std::mem::take(&mut self.incoming);
        for &e in &incoming {
            self.place_in_ring(e);
        }
        self.incoming = incoming;
        self.incoming.clear();
    }

    #[inline(always)]
    fn place_in_ring(&mut self, e: Entry<E>) {
        let i = ((e.time >> self.shift) % RING) as usize;
        self.pool.append(&mut self.ring[i], e);
        self.occupied[i / 64] |= 1 << (i % 64);
    }

    /// [`EventQueue::push`] of an event into the current window (after it was sorted), or
    /// past the ring. (When the ring reaches the end of time, an event at exactly `Nanos::MAX`
    /// waits in the overflow: the rebuild that the ring's running dry brings puts it last.)
    /// Inlined for the reason given at [`Pool::append`]; what is rare is out of line.
    #[inline(always)]
    fn push_late_or_far(&mut self, time: Nanos, seq: u64, event: E) {
        if time >= self.window_end {
            self.pool.append(&mut self.overflow, Entry { time, event });
        } else {
            self.late.push(Late { key: ((time as u128) << 64) | seq as u128, event });
            if self.late.len() > self.late_limit {
                self.rewindow_if_too_wide();
            }
        }
    }

    /// Makes the next non-empty bucket the window (rebuilding the ring from the overflow when
    /// the ring is empty). Called only when the window and `late` are empty.
    #[inline(never)]
    fn advance(&mut self) {
        self.spread_incoming();
        loop {
            if let Some(i) = self.first_occupied() {
                return self.take_bucket(i);
            }
            if self.overflow.len == 0 {
                return;
            }
            self.rebuild(None);
        }
    }

    /// Makes ring bucket `i` the window: sorts one compact key per entry, `(time offset,
    /// position)`, then copies the entries out in that order and gives the chunks back.
    fn take_bucket(&mut self, i: usize) {
        let list = std::mem::replace(&mut self.ring[i], List::EMPTY);
        self.occupied[i / 64] &= !(1 << (i % 64));
        // Absolute bucket number: the first at or after the window end with this index.
        let first = self.window_end >> self.shift;
        let a = first + ((i as u64).wrapping_sub(first) % RING);
        let start = a << self.shift;
        self.window_end = bucket_start(a.saturating_add(1), self.shift);
        self.window.clear();
        self.cursor = 0;
        let head = self.pool.head(list);
        let slots = self.pool.slots.as_slice();
        let n = list.len as usize;
        if n == 1 {
            self.window.push(slots[head as usize * CHUNK]);
        } else if n <= CHUNK && self.shift <= NARROW_SHIFT {
            // One chunk: the common case.
            let chunk = &slots[head as usize * CHUNK..][..n];
            let mut keys = [0u64; CHUNK];
            for (k, (e, p)) in keys.iter_mut().zip(chunk.iter().zip(0u64..)) {
                *k = ((e.time - start) << 32) | p;
            }
            let keys = &mut keys[..n];
            insertion_sort(keys);
            self.window.extend(keys.iter().map(|&k| chunk[k as u32 as usize]));
        } else {
            // Several chunks: note them in order, sort one key per entry (its position counts
            // through the chunks in scheduling order), then gather the entries from the
            // chunks in key order into the window.
            self.chunks.clear();
            let (mut c, mut left) = (head, n);
            while left > 0 {
                self.chunks.push(c);
                left -= left.min(CHUNK);
                c = self.pool.next[c as usize];
            }
            let chunks = &self.chunks;
            let entries =
                || chunks.iter().flat_map(|&c| &slots[c as usize * CHUNK..][..CHUNK]).take(n).zip(0u64..);
            let at = |p: usize| slots[chunks[p / CHUNK] as usize * CHUNK + p % CHUNK];
            if self.shift <= NARROW_SHIFT {
                self.keys.clear();
                self.keys.extend(entries().map(|(e, p)| ((e.time - start) << 32) | p));
                sort_keys(&mut self.keys, &mut self.scratch, &mut self.counts, self.shift);
                self.window.extend(self.keys.iter().map(|&k| at(k as u32 as usize)));
            } else {
                self.wide_keys.clear();
                self.wide_keys.extend(entries().map(|(e, p)| (((e.time - start) as u128) << 32) | p as u128));
                self.wide_keys.sort_unstable();
                self.window.extend(self.wide_keys.iter().map(|&k| at(k as u32 as usize)));
            }
        }
        self.pool.release(list);
    }

    /// The ring index of the earliest non-empty bucket, scanning from the window end.
    fn first_occupied(&self) -> Option<usize> {
        let start = ((self.window_end >> self.shift) % RING) as usize;
        // The first word, masked to the buckets at or after `start`.
        let (w0, b0) = (start / 64, start % 64);
        let masked = self.occupied[w0] & (!0u64 << b0);
        if masked != 0 {
            return Some(w0 * 64 + masked.trailing_zeros() as usize);
        }
        for k in 1..=WORDS {
            let w = (w0 + k) % WORDS;
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
        let waiting = self.overflow.len as u64;
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
        let elapsed = self.now - since;
        (pops >= MIN_POPS_FOR_PACE && elapsed > 0)
            .then(|| (elapsed as u128 * TARGET_PER_BUCKET as u128 / pops as u128).max(1) as Nanos)
    }

    /// log2 of `width` rounded up to a power of two (at most 2^63 ns: a shift of 64 would
    /// not shift at all).
    fn shift_for(width: Nanos) -> u32 {
        if width <= 1 { 0 } else { (64 - (width - 1).leading_zeros()).min(63) }
    }

    /// Called when the current window's heap has grown past `late_limit`: the buckets are too
    /// wide for the pace of events (they were sized before the queue knew it). If the pace
    /// calls for narrower buckets, every pending event but those at `now` goes back to the
    /// overflow and the ring is rebuilt; otherwise the limit doubles, so the check stays rare.
    #[cold]
    #[inline(never)]
    fn rewindow_if_too_wide(&mut self) {
        match self.pace_width() {
            Some(pace) if Self::shift_for(pace) < self.shift => {
                self.spread_incoming();
                // The overflow's list must keep two events of the same time in scheduling
                // order. The tiers hold disjoint times (window and `late` before the ring,
                // the ring's buckets apart, the overflow after), and within each tier the
                // events are taken in (time, seq) or scheduling order, so appending tier
                // after tier keeps it.
                let mut all = std::mem::replace(&mut self.overflow, List::EMPTY);
                for &e in &self.window[self.cursor..] {
                    self.pool.append(&mut all, e);
                }
                self.window.clear();
                self.cursor = 0;
                // The window's events come first at equal times: they were scheduled earlier.
                while let Some(l) = self.late.pop() {
                    self.pool.append(&mut all, Entry { time: l.time(), event: l.event });
                }
                for w in 0..WORDS {
                    while self.occupied[w] != 0 {
                        let i = w * 64 + self.occupied[w].trailing_zeros() as usize;
                        self.occupied[w] &= self.occupied[w] - 1;
                        let bucket = std::mem::replace(&mut self.ring[i], List::EMPTY);
                        self.pool.drain(bucket, |pool, e| pool.append(&mut all, e));
                    }
                }
                self.overflow = all;
                self.rebuild(Some(pace));
                self.late_limit = LATE_LIMIT;
                // The events at `now` must be in the window, ahead of the now list.
                self.advance();
            }
            _ => self.late_limit = self.late_limit.saturating_mul(2),
        }
    }

    /// Spreads the overflow over a fresh ring whose bucket width fits its span and count.
    #[inline(never)]
    fn rebuild(&mut self, pace: Option<Nanos>) {
        let (mut lo, mut hi) = (Nanos::MAX, 0);
        let (mut c, mut left) = (self.pool.head(self.overflow), self.overflow.len as usize);
        while left > 0 {
            let n = left.min(CHUNK);
            for e in &self.pool.slots[c as usize * CHUNK..][..n] {
                lo = lo.min(e.time);
                hi = hi.max(e.time);
            }
            left -= n;
            c = self.pool.next[c as usize];
        }
        // A power of two, so that a bucket number is a shift.
        self.shift = Self::shift_for(self.bucket_width(lo, hi, pace));
        self.window_end = (lo >> self.shift) << self.shift;
        self.overflow_start = bucket_start((lo >> self.shift).saturating_add(RING), self.shift);
        self.popped_since = (self.now, 0);
        // Each chunk of the old overflow goes back to the pool as soon as it is read, so the
        // ring reuses it: the pending events are not held twice.
        let overflow = std::mem::replace(&mut self.overflow, List::EMPTY);
        let (shift, overflow_start) = (self.shift, self.overflow_start);
        let (ring, occupied, new_overflow) = (&mut self.ring, &mut self.occupied, &mut self.overflow);
        self.pool.drain(overflow, |pool, e| {
            if e.time >= overflow_start && overflow_start != Nanos::MAX {
                pool.append(new_overflow, e);
            } else {
                let i = ((e.time >> shift) % RING) as usize;
                pool.append(&mut ring[i], e);
                occupied[i / 64] |= 1 << (i % 64);
            }
        });
    }
}

/// Buckets up to this many keys are sorted directly, by the standard library's unstable sort.
/// Above it the counting sort below (linear, and its insertion sort has next to nothing to
/// do) beat the standard sort by measurement (benches/README.md).
const SMALL_SORT: usize = 16;

/// Sorts a window's keys, `(offset << 32) | position` with `offset < 2^shift`.
///
/// A bucket holds a few dozen events when they are spread evenly, but bursts crowd some
/// buckets with hundreds or thousands (a herd's first retries all fall in the first few
/// milliseconds). Every bucket above `SMALL_SORT` is sorted in linear time: a counting sort
/// on the top bits of the offset, with two to four times as many digits as keys, leaves
/// almost every key in its place (the insertion sort that finishes rarely moves one, so its
/// branches are predicted; with a few keys per digit they were not, and cost more than the
/// counting saved).
fn sort_keys(keys: &mut Vec<u64>, scratch: &mut Vec<u64>, counts: &mut Vec<u32>, shift: u32) {
    let n = keys.len();
    if n <= SMALL_SORT {
        keys.sort_unstable();
        return;
    }
    let bits = (usize::BITS - (n * 2).leading_zeros()).min(shift);
    let low = 32 + shift - bits;
    counts.clear();
    counts.resize((1 << bits) + 1, 0);
    let mut crowded = false;
    for &k in keys.iter() {
        let c = &mut counts[(k >> low) as usize + 1];
        *c += 1;
        crowded |= *c as usize > SMALL_SORT;
    }
    // A running sum, not `counts[d] += counts[d - 1]`: the indexed form kept a bounds check in
    // the loop and lost its unrolling in some builds (benches/README.md).
    let mut running = 0;
    for c in counts.iter_mut() {
        running += *c;
        *c = running;
    }
    scratch.clear();
    scratch.resize(n, 0);
    for &k in keys.iter() {
        let d = &mut counts[(k >> low) as usize];
        scratch[*d as usize] = k;
        *d += 1;
    }
    std::mem::swap(keys, scratch);
    if crowded {
        // Events bunched within one digit (a burst narrower than the bucket / n): sort each
        // such digit on its own, so that the insertion sort stays linear. `counts[d]` is now
        // the end of digit d.
        let mut begin = 0;
        for &end in counts.iter() {
            let end = end as usize;
            if end > begin + SMALL_SORT {
                keys[begin..end].sort_unstable();
            }
            begin = begin.max(end);
        }
    }
    insertion_sort(keys);
}

/// Sorts keys that are already nearly in order.
fn insertion_sort(keys: &mut [u64]) {
    for i in 1..keys.len() {
        let k = keys[i];
        let mut j = i;
        while j > 0 && keys[j - 1] > k {
            keys[j] = keys[j - 1];
            j -= 1;
        }
        keys[j] = k;
    }
}

/// The start of absolute bucket `a`, saturating at the end of time.
#[inline]
fn bucket_start(a: u64, shift: u32) -> Nanos {
    if a > (Nanos::MAX >> shift) { Nanos::MAX } else { a << shift }
}

impl<E: Copy> EventQueue<E> for CalendarQueue<E> {
    /// The next event, if it is already in the window or the now list (it is, except right
    /// before the window has to be refilled).
    #[inline]
    fn peek(&self) -> Option<&E> {
        if self.now_list.is_empty() && self.late.is_empty() {
            return self.window.get(self.cursor).map(|e| &e.event);
        }
        self.peek_slow()
    }

    // Always inlined into `Scheduler::schedule_at` (and so into the model's handlers): the
    // event goes from registers into its bucket (see there).
    #[inline(always)]
    fn push(&mut self, time: Nanos, seq: u64, event: E) {
        debug_assert!(time >= self.now, "calendar queue: {time} is before the last pop {}", self.now);
        self.len += 1;
        if time == self.now {
            self.now_list.push_back(event);
        } else if time >= self.window_end && time < self.overflow_start {
            self.incoming.push(Entry { time, event });
        } else {
            self.push_late_or_far(time, seq, event);
        }
    }

    #[inline]
    fn pop_if_at_most(&mut self, horizon: Nanos) -> Option<(Nanos, E)> {
        // The common case: the next event is the window's.
        if self.now_list.is_empty()
            && self.late.is_empty()
            && let Some(&e) = self.window.get(self.cursor)
        {
            if e.time > horizon {
                return None;
            }
            self.cursor += 1;
            self.len -= 1;
            self.now = e.time;
            self.popped_since.1 += 1;
            return Some((e.time, e.event));
        }
        self.pop_slow(horizon)
    }

    #[inline]
    fn len(&self) -> usize {
        self.len
    }

    /// Empties the queue and sets its clock back to 0, keeping every buffer and pool chunk,
    /// so the next run allocates nothing until it has more events pending than this one had.
    fn clear(&mut self) {
        self.now_list.clear();
        self.now = 0;
        self.window.clear();
        self.cursor = 0;
        self.late.clear();
        self.incoming.clear();
        self.window_end = 0;
        self.shift = 0;
        for (w, word) in self.occupied.iter_mut().enumerate() {
            while *word != 0 {
                self.ring[w * 64 + word.trailing_zeros() as usize] = List::EMPTY;
                *word &= *word - 1;
            }
        }
        self.overflow_start = 0;
        self.overflow = List::EMPTY;
        self.pool.reset();
        self.len = 0;
        self.popped_since = (0, 0);
        self.late_limit = LATE_LIMIT;
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
    fn a_tight_burst_in_a_wide_bucket() {
        use super::super::HeapQueue;
        use rand::{Rng, SeedableRng};
        // A few far-off timers make the buckets wide; then 100,000 events land within one
        // microsecond, in random order, ties included: one bucket, one counting-sort digit.
        let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(3);
        let (mut q, mut heap) = (CalendarQueue::default(), HeapQueue::default());
        let times = (0..10)
            .map(|i| 1_000_000_000_000 * (i + 1))
            .chain((0..100_000).map(|_| 5_000_000 + r.next_u64() % 1_000));
        for (s, t) in times.enumerate() {
            q.push(t, s as u64, s as u64);
            heap.push(t, s as u64, s as u64);
        }
        while let Some(e) = heap.pop_if_at_most(u64::MAX) {
            assert_eq!(q.pop_if_at_most(u64::MAX), Some(e));
        }
        assert!(q.is_empty());
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
