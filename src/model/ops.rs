//! The table of live operations: a slab whose slots are reused, so memory follows what is in
//! flight, not how many operations a run has had.

use crate::engine::Instant;
use crate::policy::BackoffState;
use crate::policy::gate::CostClass;
use rand_xoshiro::SplitMix64;

/// One logical operation in flight: 48 bytes, so that every event touches one cache line and
/// a million-client herd stays small. What only some features need lives in [`OpExtra`].
#[derive(Clone, Debug)]
pub struct Op {
    pub started: Instant,
    pub backoff: BackoffState,
    /// This operation's jitter stream.
    pub jitter: SplitMix64,
    /// The client process the operation belongs to (its jitter stream, its controls).
    pub client: u32,
    /// Attempts sent so far.
    pub attempts: u32,
    /// Times a server executed this operation's side effect.
    pub executions: u32,
    /// Events and server-held requests that still point at this slot; the slot is freed when
    /// the operation has ended and nothing points at it.
    pub refs: u32,
    /// When the latest attempt was sent, in microseconds after `started` (saturating at about
    /// 71 minutes): the attempt's latency for breakers' slow calls, at microsecond precision.
    /// Kept only when the client has controls (the only readers).
    pub sent_us: u32,
    pub ended: bool,
    /// The client waits for the answer to attempt number `attempts` (not: backing off, or
    /// ended).
    pub waiting: bool,
    /// The client-side rate limiter already delayed the next attempt: do not charge it again.
    pub wait_paid: bool,
    /// The kind of tokens the operation's last retry took from a token bucket: refunded on
    /// success.
    pub last_cost: CostClass,
}

// Every event touches one operation: keep it to one cache line, and small.
const _: () = assert!(std::mem::size_of::<Op>() == 48);

/// What only some runs need per operation, in a side table that is empty otherwise.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpExtra {
    /// How many operations this slot held before this one: with the slot, the operation's
    /// unique id ([`OpTable::id`], idempotency keys).
    generation: u32,
    /// Attempts before the backoff was last reset (a gRPC pushback, or a re-drive): the next
    /// retry is number `attempts - backoff_from` for the backoff's formula.
    pub backoff_from: u32,
    /// Attempts before the current pass of the retry loop (its re-drive, if any): the pass's
    /// attempt numbers count from it, while attempt numbers keep increasing over the
    /// operation's life (answers are matched by them).
    pub attempt_base: u32,
    /// The operation was dead-lettered: it is counted so, whatever its re-drive does.
    pub dead_lettered: bool,
    /// How many times it was given a new idempotency key, by a re-drive or a new pass of the
    /// application's loop (part of the key).
    pub new_keys: u8,
    /// Passes of the library's retry loop the application started (`app_retry`; 1 from the
    /// operation's start).
    pub passes: u8,
    /// The application's next pass begins with the next send ([`super::clients::Clients`]).
    pub pass_pending: bool,
    /// When the operation's first pass began (`app_retry`: the operation's own `started` is
    /// its current pass's, from which the library's deadline counts).
    pub first_started: Instant,
    /// The application's backoff memory (`app_retry`, the stateful kinds).
    pub app_backoff: crate::policy::BackoffState,
    /// Its priority class (`[workload] priorities`; 0 without classes).
    pub priority: crate::model::priorities::Class,
    /// The attempt whose visibility timer runs (a queue workload: the timer starts when a
    /// consumer takes the message, once per attempt).
    pub visible_attempt: u32,
    /// Calls in flight under the client's concurrency limit when the latest attempt was
    /// admitted (the limit's sample reports it).
    pub limit_inflight: u32,
}

impl Op {
    pub fn new(started: Instant, client: u32, backoff: BackoffState, jitter: SplitMix64) -> Op {
        Op {
            started,
            backoff,
            jitter,
            client,
            attempts: 0,
            executions: 0,
            refs: 0,
            sent_us: 0,
            ended: false,
            waiting: false,
            wait_paid: false,
            last_cost: CostClass::NONE,
        }
    }

    /// Records when the attempt just counted in `attempts` was sent (`now`).
    #[inline]
    pub fn note_sent(&mut self, now: Instant) {
        self.sent_us = (now.since(self.started).as_ns() / 1_000).min(u32::MAX as u64) as u32;
    }

    /// When the latest attempt was sent (at microsecond precision).
    #[inline]
    pub fn sent_at(&self) -> Instant {
        self.started + crate::engine::Span::from_ns(self.sent_us as u64 * 1_000)
    }
}

/// Slab of [`Op`]s with a free list. Slot numbers are `u32` to keep events small.
#[derive(Default)]
pub struct OpTable {
    slots: Vec<Op>,
    /// One [`OpExtra`] per slot when the run needs them, else empty.
    extra: Vec<OpExtra>,
    with_extra: bool,
    free: Vec<u32>,
}

impl OpTable {
    /// Empties the table (a new one, or one a run used before: its memory is kept) for a run
    /// with about `n` live operations; `with_extra`: keep an [`OpExtra`] per slot (operation
    /// ids for idempotency keys, backoff resets). Slots are then handed out as by a new table.
    pub fn reset(&mut self, n: usize, with_extra: bool) {
        self.slots.clear();
        self.slots.reserve(n);
        self.extra.clear();
        self.with_extra = with_extra;
        self.free.clear();
    }

    /// Keeps an [`OpExtra`] per slot from now on (called on an empty table).
    pub fn keep_extra(&mut self) {
        debug_assert!(self.slots.is_empty(), "side data is kept from the first operation");
        self.with_extra = true;
    }

    /// Stores a new operation and returns its slot.
    #[inline]
    pub fn insert(&mut self, op: Op) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = op;
                if self.with_extra {
                    let e = &mut self.extra[i as usize];
                    *e = OpExtra { generation: e.generation.wrapping_add(1), ..OpExtra::default() };
                }
                i
            }
            None => {
                self.slots.push(op);
                if self.with_extra {
                    self.extra.push(OpExtra::default());
                }
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// The side data of `slot` (a table made `with_extra`).
    #[inline]
    pub fn extra(&mut self, slot: u32) -> &mut OpExtra {
        &mut self.extra[slot as usize]
    }

    /// Whether the table keeps [`OpExtra`]s.
    #[inline]
    pub fn has_extra(&self) -> bool {
        self.with_extra
    }

    /// The unique id of the operation in `slot` within its run (for idempotency keys): the
    /// slot and how many operations it held before, so ids are never reused while the event
    /// that carries the slot stays 4 bytes. Unique only in a table made `with_extra`.
    #[inline]
    pub fn id(&self, slot: u32) -> u64 {
        let generation = self.extra.get(slot as usize).map_or(0, |e| e.generation);
        ((generation as u64) << 32) | slot as u64
    }

    #[inline]
    pub fn get(&mut self, slot: u32) -> &mut Op {
        &mut self.slots[slot as usize]
    }

    /// Hints the processor to load the slot's cache line: the event loop calls it for the
    /// next event while it handles the current one, hiding most of the memory latency of
    /// touching a random operation among millions.
    #[inline]
    pub fn prefetch(&self, slot: u32) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            let p = self.slots.as_ptr().wrapping_add(slot as usize) as *const i8;
            // SAFETY: SSE is part of the x86_64 baseline, and a prefetch is only a hint: it
            // reads nothing and never faults, even for an address out of bounds.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = slot;
    }

    /// Drops one reference; frees the slot if the operation has ended and nothing else points
    /// at it.
    #[inline]
    pub fn release(&mut self, slot: u32) {
        let op = &mut self.slots[slot as usize];
        op.refs -= 1;
        if op.ended && op.refs == 0 {
            self.free.push(slot);
        }
    }

    /// Marks the operation ended; frees it at once if nothing points at it.
    #[inline]
    pub fn end(&mut self, slot: u32) {
        let op = &mut self.slots[slot as usize];
        op.ended = true;
        op.waiting = false;
        if op.refs == 0 {
            self.free.push(slot);
        }
    }

    /// Operations that have started and not ended (for the horizon's `unfinished`), in slot
    /// order (deterministic). A dead-lettered operation's re-drive is not listed: the
    /// operation ended when it was dead-lettered.
    /// Each comes with its side data, if the table keeps any.
    pub fn pending(&self) -> impl Iterator<Item = (&Op, Option<&OpExtra>)> {
        // Freed slots always hold an ended operation, so they are not listed.
        self.slots
            .iter()
            .enumerate()
            .map(|(i, op)| (op, self.extra.get(i)))
            .filter(|(op, extra)| !op.ended && !extra.is_some_and(|e| e.dead_lettered))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op() -> Op {
        Op::new(Instant::ZERO, 0, BackoffState::default(), rand::SeedableRng::seed_from_u64(0))
    }

    #[test]
    fn slots_are_reused_only_when_nothing_points_at_them() {
        let mut t = OpTable::default();
        let a = t.insert(op());
        t.get(a).refs = 1;
        t.end(a);
        let b = t.insert(op());
        assert_ne!(a, b, "a referenced slot is not reused");
        t.release(a);
        let c = t.insert(op());
        assert_eq!(a, c, "a freed slot is reused");
        assert_eq!(t.pending().count(), 2);
        t.end(b);
        assert_eq!(t.pending().count(), 1);
    }

    #[test]
    fn ids_are_unique_across_slot_reuse() {
        let mut t = OpTable::default();
        t.reset(1, true);
        let mut ids = Vec::new();
        for _ in 0..100 {
            let s = t.insert(op());
            ids.push(t.id(s));
            t.end(s);
        }
        assert_eq!(t.slots.len(), 1, "one slot, reused");
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 100);
    }
}
