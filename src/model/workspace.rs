//! The buffers a worker thread reuses from one run to the next: the event queue, the table of
//! operations and the latency histogram. A sweep runs thousands of replications per thread;
//! making these afresh for each cost page faults and regrowth (the queue's chunk pool and the
//! op table are copied every time they grow) on every run. A run hands them back when it ends
//! and the next run on the same thread takes them, emptied: results are the same as with new
//! ones (`tests/queue_equivalence.rs` runs every queue both ways, and the shipped experiments'
//! results did not change by a byte).
//!
//! The spare set lives in a thread-local slot, so every caller of [`super::simulate_with`] (`run`,
//! `tune`, benchmarks) reuses without passing anything around. A run that finds the slot
//! holding another queue type (another [`QueueChoice`]) starts from new buffers and leaves its
//! own.

use super::QueueChoice;
use super::ops::OpTable;
use crate::engine::EventQueue;
use crate::metrics::Latencies;
use std::any::Any;
use std::cell::RefCell;

thread_local! {
    /// The thread's spare [`Workspace`], type-erased because [`QueueChoice`] is generic.
    static SPARE: RefCell<Option<Box<dyn Any>>> = const { RefCell::new(None) };
}

/// One thread's reusable buffers (each `None` until a run has left one).
pub struct Workspace<C: QueueChoice> {
    queue: Option<C::Queue>,
    occ_queue: Option<C::Occ>,
    ops: Option<OpTable>,
    latency: Option<Latencies>,
}

impl<C: QueueChoice> Workspace<C> {
    /// The thread's spare buffers, or none.
    pub fn take() -> Workspace<C> {
        SPARE
            .with(|s| s.borrow_mut().take())
            .and_then(|b| b.downcast::<Workspace<C>>().ok())
            .map_or(Workspace { queue: None, occ_queue: None, ops: None, latency: None }, |b| *b)
    }

    /// Leaves the buffers for the thread's next run.
    pub fn give_back(self) {
        SPARE.with(|s| *s.borrow_mut() = Some(Box::new(self)));
    }

    /// An empty queue-model event queue.
    pub fn queue(&mut self) -> C::Queue {
        empty_queue(self.queue.take())
    }

    /// An empty OCC-model event queue.
    pub fn occ_queue(&mut self) -> C::Occ {
        empty_queue(self.occ_queue.take())
    }

    /// An op table to reuse ([`OpTable::reset`] empties it), or a new empty one.
    pub fn ops(&mut self) -> OpTable {
        self.ops.take().unwrap_or_default()
    }

    /// Empty latency histograms ([`Latencies`]).
    pub fn latency(&mut self) -> Latencies {
        match self.latency.take() {
            Some(mut h) => {
                h.reset();
                h
            }
            None => Latencies::new(),
        }
    }

    /// Keeps what a run used, for the next one.
    pub fn keep(&mut self, left: Leftovers) {
        self.ops = Some(left.ops);
        self.latency = Some(left.latency);
    }

    pub fn keep_queue(&mut self, q: C::Queue) {
        self.queue = Some(q);
    }

    pub fn keep_occ_queue(&mut self, q: C::Occ) {
        self.occ_queue = Some(q);
    }
}

/// What a finished run hands back besides its metrics.
pub struct Leftovers {
    pub ops: OpTable,
    pub latency: Latencies,
}

fn empty_queue<E, Q: EventQueue<E>>(q: Option<Q>) -> Q {
    match q {
        Some(mut q) => {
            q.clear();
            q
        }
        None => Q::default(),
    }
}
