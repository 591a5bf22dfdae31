//! A client-side bulkhead (DESIGN §4.8): at most `max_in_flight` operations inside the
//! protected section at once; an operation that finds it full waits up to `max_wait` in a FIFO
//! for a permit, or fails at once when `max_wait` is 0.
//!
//! The model is resilience4j's `SemaphoreBulkhead` (resilience4j af9e7c9,
//! `resilience4j-bulkhead/src/main/java/io/github/resilience4j/bulkhead/BulkheadConfig.java`:
//! `maxConcurrentCalls` 25, `maxWaitDuration` 0, fair call handling on, so waiters take permits
//! in arrival order; docs/overload-and-topology.md §1.2). A call over the limit that cannot
//! wait throws `BulkheadFullException`: here the operation ends as `failed_bulkhead`.
//!
//! A permit is a connection of [`ConnectionPool`] that opens at once and never closes: the
//! counts and the FIFO of waiters are the pool's, so there is one copy of the waiting
//! mechanism. What a waiter is, and when it stopped waiting, is the model's
//! (`crate::model::bulkheads`).

use super::gate::Scope;
use super::pool::{Checkout, ConnectionPool};
use crate::engine::Span;

/// A strategy's bulkhead, as plain parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BulkheadParams {
    /// Operations inside at once (resilience4j's `maxConcurrentCalls`).
    pub max_in_flight: u32,
    /// The longest an operation waits for a permit (`maxWaitDuration`); 0: it fails at once.
    pub max_wait: Span,
    /// One bulkhead per client process, or one for the fleet.
    pub scope: Scope,
}

impl BulkheadParams {
    /// resilience4j's `DEFAULT_MAX_CONCURRENT_CALLS` (`BulkheadConfig.java`).
    pub const RESILIENCE4J_MAX_IN_FLIGHT: u32 = 25;
}

/// One bulkhead: its permits and the FIFO of waiters `W` (the model's ids).
#[derive(Clone, Debug)]
pub struct Bulkhead<W> {
    permits: ConnectionPool<W>,
}

impl<W: Copy> Bulkhead<W> {
    pub fn new(max_in_flight: u32) -> Bulkhead<W> {
        Bulkhead { permits: ConnectionPool::new(max_in_flight) }
    }

    /// `waiter` asks for a permit: it gets one (`true`), or it is queued when `queue` holds
    /// (`false` either way when it got none).
    pub fn acquire(&mut self, waiter: W, queue: bool) -> bool {
        if self.is_full() && !queue {
            return false;
        }
        match self.permits.check_out(waiter) {
            Checkout::Idle | Checkout::New => true,
            Checkout::Queued => false,
        }
    }

    /// A holder gave its permit back: the oldest waiter for which `still_waiting` holds takes
    /// it (returned), else it is free. `still_waiting` is asked once for each waiter taken off
    /// the queue.
    pub fn release(&mut self, still_waiting: impl FnMut(W) -> bool) -> Option<W> {
        self.permits.check_in(still_waiting)
    }

    /// Whether every permit is held.
    pub fn is_full(&self) -> bool {
        self.permits.idle() == 0 && self.permits.open() == self.permits.size()
    }

    /// Permits held.
    pub fn in_flight(&self) -> u32 {
        self.permits.open() - self.permits.idle()
    }

    /// Entries in the queue, including waiters that gave up and were not reached yet.
    pub fn queued(&self) -> usize {
        self.permits.queued()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn without_a_wait_the_call_over_the_limit_is_refused() {
        let mut b = Bulkhead::new(2);
        assert!(b.acquire(1, false));
        assert!(b.acquire(2, false));
        assert!(!b.acquire(3, false));
        assert_eq!((b.in_flight(), b.queued()), (2, 0), "a refused call is not queued");
        assert_eq!(b.release(|_| true), None);
        assert!(b.acquire(4, false));
        assert_eq!(b.in_flight(), 2);
    }

    #[test]
    fn waiters_take_permits_in_arrival_order_and_skip_those_that_left() {
        let mut b = Bulkhead::new(1);
        assert!(b.acquire('a', true));
        assert!(!b.acquire('b', true));
        assert!(!b.acquire('c', true));
        assert!(!b.acquire('d', true));
        assert_eq!(b.queued(), 3);
        // b waited too long: c, next in line, takes a's permit.
        assert_eq!(b.release(|w| w != 'b'), Some('c'));
        assert_eq!(b.release(|_| true), Some('d'));
        assert_eq!(b.release(|_| true), None);
        assert_eq!((b.in_flight(), b.queued()), (0, 0));
    }

    proptest! {
        /// Whatever the script: never more than `max_in_flight` holders, and a call waits or is
        /// refused only when every permit is held.
        #[test]
        fn never_more_than_max_in_flight(max in 1..5u32, steps in proptest::collection::vec(
            prop_oneof![any::<bool>().prop_map(Some), Just(None)],
            0..80,
        )) {
            let mut b = Bulkhead::new(max);
            let mut holders = 0u32;
            let mut next = 0u32;
            for step in steps {
                match step {
                    Some(queue) => {
                        next += 1;
                        let full = b.is_full();
                        if b.acquire(next, queue) {
                            prop_assert!(!full);
                            holders += 1;
                        } else {
                            prop_assert!(full);
                        }
                    }
                    // A holder leaves: its permit passes to a waiter (still a holder) or is freed.
                    None if holders > 0 && b.release(|_| true).is_none() => holders -= 1,
                    None => {}
                }
                prop_assert_eq!(b.in_flight(), holders);
                prop_assert!(holders <= max);
            }
        }
    }
}
