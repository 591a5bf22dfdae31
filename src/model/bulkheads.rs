//! The clients' bulkheads (DESIGN §4.8), wired to operations: an operation takes a permit
//! before its first attempt and gives it back when it ends, so it holds the permit across its
//! retries and backoffs, as a bulkhead decorating the retried call does (resilience4j's
//! `Decorators...withRetry(retry).withBulkhead(bulkhead)`; docs/overload-and-topology.md
//! §1.13). The permits and the FIFO are [`crate::policy::bulkhead`]'s; this file keeps which
//! operations still wait.
//!
//! A permit and a queue entry each hold a reference on their operation's slot, so a slot is
//! never reused while a bulkhead names it: a permit's is released when the operation gives it
//! back, a queue entry's when it leaves the queue (taken over by the permit when the waiter
//! gets one).

use super::ops::OpTable;
use crate::engine::Span;
use crate::policy::bulkhead::{Bulkhead, BulkheadParams};
use crate::policy::gate::Scope;
use std::collections::HashSet;

/// What became of an operation that asked for a permit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// It holds a permit: it sends its first attempt now.
    Admitted,
    /// It waits in the bulkhead's FIFO, at most `max_wait`.
    Queued,
    /// Full, and `max_wait` is 0: it fails at once.
    Full,
}

/// Every bulkhead of a run, and the operations waiting in them.
pub struct Bulkheads {
    params: BulkheadParams,
    /// One bulkhead for the fleet, or one per client process.
    heads: Vec<Bulkhead<u32>>,
    /// Operations in a queue that still wait (one whose wait ran out is skipped when reached).
    waiting: HashSet<u32>,
}

impl Bulkheads {
    pub fn new(params: BulkheadParams, clients: u32) -> Bulkheads {
        let n = match params.scope {
            Scope::Shared => 1,
            Scope::Client => clients.max(1) as usize,
        };
        Bulkheads { params, heads: vec![Bulkhead::new(params.max_in_flight); n], waiting: HashSet::new() }
    }

    /// The longest an operation waits for a permit.
    pub fn max_wait(&self) -> Span {
        self.params.max_wait
    }

    /// Operation `op`, just started, asks for a permit.
    pub fn enter(&mut self, op: u32, ops: &mut OpTable) -> Entry {
        let index = self.index(op, ops);
        let queue = self.params.max_wait > Span::ZERO;
        if self.heads[index].acquire(op, queue) {
            ops.get(op).refs += 1;
            Entry::Admitted
        } else if queue {
            ops.get(op).refs += 1;
            self.waiting.insert(op);
            Entry::Queued
        } else {
            Entry::Full
        }
    }

    /// Operation `op` ended holding a permit and gives it back: the oldest operation still
    /// waiting takes it (returned; it sends its first attempt now).
    pub fn leave(&mut self, op: u32, ops: &mut OpTable) -> Option<u32> {
        let index = self.index(op, ops);
        ops.release(op);
        let waiting = &mut self.waiting;
        // The queue entry's reference becomes the permit's for a waiter that takes it.
        self.heads[index].release(|w| {
            let still = waiting.remove(&w);
            if !still {
                ops.release(w);
            }
            still
        })
    }

    /// `op` has waited `max_wait`: whether it was still waiting for a
    /// permit (it then fails without an attempt; its queue entry is skipped when reached).
    pub fn wait_expired(&mut self, op: u32) -> bool {
        self.waiting.remove(&op)
    }

    fn index(&self, op: u32, ops: &mut OpTable) -> usize {
        match self.params.scope {
            Scope::Shared => 0,
            Scope::Client => ops.get(op).client as usize,
        }
    }
}
