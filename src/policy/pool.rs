//! A client-side connection pool (DESIGN §4.7): at most `size` connections, requests that find
//! none free wait in a FIFO, a connection is handed to the oldest request still waiting.
//!
//! The model is the Go MongoDB driver's pool as the OSDI '22 retry experiment used it
//! (mongo-go-driver v1.9.0, commit 35f33daefb0efe9f8820500028fb7779b690b9a1, the release its
//! client's `go mod tidy` took in April 2022; docs/overload-and-topology.md §1.12):
//! `checkOut` (`x/mongo/driver/topology/pool.go`) takes an idle connection, or queues for the
//! next idle or new one while the pool holds fewer than `maxPoolSize` (default 100), and
//! fails with `WaitQueueTimeoutError` when the operation's context ends first; `checkIn` hands
//! a returned connection to the oldest waiter. A connection whose read is cut short by the
//! context's deadline is closed (`connection.go`, `readWireMessage`: "we don't know if there
//! is an unread message on the wire"), so its place goes to a new connection, which the next
//! request pays for. Not modelled: the driver opens at most 2 connections at once
//! (`maxConnecting`), and a waiter takes whichever comes first of an idle connection and the
//! one opened for it; here the waiter a connection is opened for waits for that one.
//!
//! This file keeps the counts and the queue only; what a waiter is, when it gave up, and what
//! an opening connection costs are the model's (`crate::model::connections`). Waiters that
//! gave up stay in the queue until they reach its head and are skipped there (the caller says
//! which are still waiting), so giving up costs nothing.

use super::gate::Scope;
use crate::engine::Span;
use std::collections::VecDeque;

/// A strategy's connection pool, as plain parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolParams {
    /// Connections per pool (the Go driver's `maxPoolSize`).
    pub size: u32,
    /// The longest a request waits for a connection (CMAP's `waitQueueTimeoutMS`); `None`: only
    /// the attempt's timeout bounds the wait, as in the Go driver.
    pub max_wait: Option<Span>,
    /// A request the client gave up on closes its connection (the Go driver); otherwise the
    /// connection stays busy until the answer arrives.
    pub close_on_timeout: bool,
    /// What opening a connection takes before the request can be sent on it.
    pub connect_time: Span,
    /// One pool per client process, or one for the fleet.
    pub scope: Scope,
}

impl PoolParams {
    /// The Go driver's `maxPoolSize` default (`clientoptions.go`, `SetMaxPoolSize`: "The
    /// default is 100"; `server_options.go`: `maxConns: 100`).
    pub const GO_DRIVER_SIZE: u32 = 100;
}

/// How a request got (or did not get) a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checkout {
    /// An idle connection, at once.
    Idle,
    /// A new connection, which the request opens before it is sent.
    New,
    /// Every connection is taken: the request waits in the queue.
    Queued,
}

/// One pool: counts of connections and the queue of waiters `W` (the model's ids).
#[derive(Clone, Debug)]
pub struct ConnectionPool<W> {
    size: u32,
    /// Connections open or opening (at most `size`).
    open: u32,
    /// Open connections no request holds.
    idle: u32,
    /// Waiters, oldest first; some may have given up (skipped when they reach the head).
    waiting: VecDeque<W>,
}

impl<W: Copy> ConnectionPool<W> {
    /// An empty pool: connections are opened on demand, as the drivers do with no minimum
    /// pool size.
    pub fn new(size: u32) -> ConnectionPool<W> {
        assert!(size > 0, "a pool holds at least one connection");
        ConnectionPool { size, open: 0, idle: 0, waiting: VecDeque::new() }
    }

    /// A request wants a connection.
    pub fn check_out(&mut self, waiter: W) -> Checkout {
        if self.idle > 0 {
            self.idle -= 1;
            Checkout::Idle
        } else if self.open < self.size {
            self.open += 1;
            Checkout::New
        } else {
            self.waiting.push_back(waiter);
            Checkout::Queued
        }
    }

    /// An open connection comes back (its answer arrived, or it finished opening for a request
    /// that had given up): the oldest waiter for which `still_waiting` holds takes it, else it
    /// idles. `still_waiting` is asked once for each waiter taken off the queue.
    pub fn check_in(&mut self, still_waiting: impl FnMut(W) -> bool) -> Option<W> {
        let next = self.next_waiter(still_waiting);
        if next.is_none() {
            debug_assert!(self.idle < self.open, "more connections came back than were out");
            self.idle += 1;
        }
        next
    }

    /// A connection in use was closed: the oldest waiter still waiting opens a new one in its
    /// place (it is returned), else the pool holds one connection fewer.
    pub fn close(&mut self, still_waiting: impl FnMut(W) -> bool) -> Option<W> {
        let next = self.next_waiter(still_waiting);
        if next.is_none() {
            debug_assert!(self.open > self.idle, "closed a connection nobody held");
            self.open -= 1;
        }
        next
    }

    fn next_waiter(&mut self, mut still_waiting: impl FnMut(W) -> bool) -> Option<W> {
        while let Some(w) = self.waiting.pop_front() {
            if still_waiting(w) {
                return Some(w);
            }
        }
        None
    }

    /// The most connections the pool opens.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Connections open or opening.
    pub fn open(&self) -> u32 {
        self.open
    }

    /// Open connections no request holds.
    pub fn idle(&self) -> u32 {
        self.idle
    }

    /// Entries in the queue, including waiters that gave up and were not reached yet.
    pub fn queued(&self) -> usize {
        self.waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_pool_of_one_serves_its_waiters_in_order() {
        let mut p = ConnectionPool::new(1);
        assert_eq!(p.check_out(1), Checkout::New);
        assert_eq!(p.check_out(2), Checkout::Queued);
        assert_eq!(p.check_out(3), Checkout::Queued);
        assert_eq!((p.open(), p.idle(), p.queued()), (1, 0, 2));
        // The answer to 1 arrives: 2 takes the open connection.
        assert_eq!(p.check_in(|_| true), Some(2));
        assert_eq!((p.open(), p.idle(), p.queued()), (1, 0, 1));
        // 3 gave up waiting: the connection idles when 2's answer arrives.
        assert_eq!(p.check_in(|w| w != 3), None);
        assert_eq!((p.open(), p.idle(), p.queued()), (1, 1, 0));
        assert_eq!(p.check_out(4), Checkout::Idle);
        assert_eq!((p.open(), p.idle()), (1, 0));
    }

    #[test]
    fn a_closed_connection_is_replaced_for_the_next_waiter_or_leaves_the_pool() {
        let mut p = ConnectionPool::new(2);
        assert_eq!(p.check_out('a'), Checkout::New);
        assert_eq!(p.check_out('b'), Checkout::New);
        assert_eq!(p.check_out('c'), Checkout::Queued);
        assert_eq!(p.check_out('d'), Checkout::Queued);
        // a timed out and closed its connection: c, the oldest waiter, opens a new one.
        let mut asked = Vec::new();
        assert_eq!(
            p.close(|w| {
                asked.push(w);
                true
            }),
            Some('c')
        );
        assert_eq!(asked, ['c'], "only the head is asked");
        assert_eq!((p.open(), p.idle(), p.queued()), (2, 0, 1));
        // b's connection closes too; d gave up meanwhile: the pool shrinks.
        assert_eq!(p.close(|w| w != 'd'), None);
        assert_eq!((p.open(), p.idle(), p.queued()), (1, 0, 0));
        // With room in the pool, the next request opens a new connection.
        assert_eq!(p.check_out('e'), Checkout::New);
        assert_eq!((p.open(), p.idle()), (2, 0));
    }

    #[test]
    fn idle_connections_are_reused_before_new_ones_are_opened() {
        let mut p = ConnectionPool::new(3);
        assert_eq!(p.check_out(0), Checkout::New);
        assert_eq!(p.check_in(|_| true), None);
        assert_eq!(p.check_out(1), Checkout::Idle);
        assert_eq!(p.check_out(2), Checkout::New);
        assert_eq!((p.open(), p.idle()), (2, 0));
    }

    /// One step of a random script: a check-out, or the oldest request in use comes back
    /// (check-in) or is closed; the `bool`s say whether each waiter reached is still waiting.
    #[derive(Clone, Debug)]
    enum Step {
        Out,
        In(bool),
        Close(bool),
    }

    proptest! {
        /// Whatever the script: open <= size, idle <= open, requests holding a connection are
        /// open - idle, and a request waits only when every connection is held.
        #[test]
        fn counts_stay_consistent(size in 1..5u32, steps in proptest::collection::vec(
            prop_oneof![Just(Step::Out), any::<bool>().prop_map(Step::In), any::<bool>().prop_map(Step::Close)],
            0..60,
        )) {
            let mut p = ConnectionPool::new(size);
            let mut holding: VecDeque<u32> = VecDeque::new();
            let mut next = 0u32;
            for step in steps {
                match step {
                    Step::Out => {
                        next += 1;
                        match p.check_out(next) {
                            Checkout::Idle | Checkout::New => holding.push_back(next),
                            Checkout::Queued => prop_assert_eq!(p.open() - p.idle(), size),
                        }
                    }
                    Step::In(alive) | Step::Close(alive) => {
                        if holding.pop_front().is_none() {
                            continue;
                        }
                        let got = if matches!(step, Step::In(_)) { p.check_in(|_| alive) } else { p.close(|_| alive) };
                        holding.extend(got);
                    }
                }
                prop_assert!(p.open() <= size && p.idle() <= p.open());
                prop_assert_eq!(p.open() - p.idle(), holding.len() as u32);
                if p.queued() > 0 {
                    prop_assert_eq!((p.open(), p.idle()), (size, 0));
                }
            }
        }
    }
}
