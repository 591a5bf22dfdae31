//! The clients' connection pools (DESIGN §4.7), wired to attempts: which attempt holds which
//! pool's connection, and what becomes of it when the attempt waits, is sent, is answered, is
//! given up on, or will never be answered. The pool's own counts and queue are
//! [`crate::policy::pool`]'s; this file keeps one lease per attempt that asked for a
//! connection, and says what the model must do next ([`Grant`]).
//!
//! An attempt is named by its operation's slot and its number ([`Attempt`]). A slot is reused
//! only when nothing points at it, so every lease is kept alive by a reference on its slot: a
//! queued attempt's entry in the pool's queue holds one (released when the entry leaves the
//! queue), an opening connection's `Connected` event holds one, and a sent request holds one
//! until it is answered. Two live leases therefore never share a name.

use super::ops::OpTable;
use crate::engine::{Instant, Span};
use crate::policy::gate::Scope;
use crate::policy::pool::{Checkout, ConnectionPool, PoolParams};
use std::collections::HashMap;

/// An attempt: its operation's slot and its 1-based number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Attempt {
    pub op: u32,
    pub number: u32,
}

/// Where an attempt is with its connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lease {
    /// In the pool's queue; the client stops waiting at `gives_up_at`.
    Waiting { gives_up_at: Instant },
    /// A new connection is opening for it.
    Connecting { gives_up_at: Instant },
    /// Sent on its connection; the client waits for the answer.
    Sent,
    /// The client gave up; the connection stays busy until the answer arrives
    /// (`close_on_timeout = false`).
    Abandoned,
    /// The server will never answer it: its connection closes when the client gives up.
    Unanswered,
}

/// What the model does for an attempt that asked for a connection, or that a connection coming
/// free went to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grant {
    /// Send it now on its connection; the client stops waiting at `gives_up_at`.
    Send { attempt: Attempt, gives_up_at: Instant },
    /// A new connection opens for it: the model calls [`Connections::connected`] after this
    /// time (its event holds a reference on the operation).
    Open { attempt: Attempt, after: Span },
    /// It waits in the pool's queue (which holds a reference on the operation).
    Queued,
}

/// Every pool of a run, and the leases of the attempts that use them.
pub struct Connections {
    params: PoolParams,
    /// One pool for the fleet, or one per client process.
    pools: Vec<ConnectionPool<Attempt>>,
    leases: HashMap<Attempt, Lease>,
}

impl Connections {
    pub fn new(params: PoolParams, clients: u32) -> Connections {
        let n = match params.scope {
            Scope::Shared => 1,
            Scope::Client => clients.max(1) as usize,
        };
        Connections { params, pools: vec![ConnectionPool::new(params.size); n], leases: HashMap::new() }
    }

    /// The longest an attempt waits for a connection, if the pool sets one.
    pub fn max_wait(&self) -> Option<Span> {
        self.params.max_wait
    }

    /// `attempt` was just sent by its client and needs a connection.
    pub fn check_out(&mut self, attempt: Attempt, gives_up_at: Instant, ops: &mut OpTable) -> Grant {
        let index = self.pool_index(attempt.op, ops);
        match self.pools[index].check_out(attempt) {
            Checkout::Idle => self.lease(Grant::Send { attempt, gives_up_at }, gives_up_at),
            Checkout::New => self.opened(attempt, gives_up_at),
            Checkout::Queued => {
                ops.get(attempt.op).refs += 1;
                self.leases.insert(attempt, Lease::Waiting { gives_up_at });
                Grant::Queued
            }
        }
    }

    /// The connection opened for `attempt` is ready: `attempt` is sent on it if its client
    /// still waits, else the connection goes to the next waiter, or idles.
    pub fn connected(&mut self, attempt: Attempt, ops: &mut OpTable) -> Option<Grant> {
        match self.leases.get(&attempt) {
            Some(&Lease::Connecting { gives_up_at }) => {
                Some(self.lease(Grant::Send { attempt, gives_up_at }, gives_up_at))
            }
            _ => self.check_in(attempt.op, ops),
        }
    }

    /// The answer to `attempt` reached its client (waiting for it or not): its connection goes
    /// back to the pool, unless it was closed when the client gave up.
    pub fn answered(&mut self, attempt: Attempt, ops: &mut OpTable) -> Option<Grant> {
        match self.leases.remove(&attempt) {
            Some(Lease::Sent | Lease::Abandoned) => self.check_in(attempt.op, ops),
            Some(other) => unreachable!("an answer to an attempt that was never sent ({other:?})"),
            None => None,
        }
    }

    /// The client gave up on `attempt` (its timeout, or its deadline). Returns whether it was
    /// still waiting for a connection (so it never reached the server), and what a connection
    /// that came free went to.
    pub fn gave_up(&mut self, attempt: Attempt, ops: &mut OpTable) -> (bool, Option<Grant>) {
        let Some(lease) = self.leases.remove(&attempt) else { return (false, None) };
        match lease {
            // Its queue entry is skipped when reached; an opening connection is handed on
            // when it is ready (`connected`).
            Lease::Waiting { .. } | Lease::Connecting { .. } => (true, None),
            Lease::Sent if !self.params.close_on_timeout => {
                self.leases.insert(attempt, Lease::Abandoned);
                (false, None)
            }
            Lease::Sent | Lease::Unanswered => (false, self.close(attempt.op, ops)),
            Lease::Abandoned => unreachable!("a client gave up twice on one attempt"),
        }
    }

    /// `attempt` waited `max_wait` without a connection: it fails (`true`), if it was still
    /// waiting for one.
    pub fn wait_expired(&mut self, attempt: Attempt) -> bool {
        match self.leases.get(&attempt) {
            Some(Lease::Waiting { .. } | Lease::Connecting { .. }) => {
                self.leases.remove(&attempt);
                true
            }
            _ => false,
        }
    }

    /// The server will never answer `attempt` (it dropped or silenced the request): a
    /// connection nobody waits on any more is closed now, else when the client gives up.
    pub fn unanswered(&mut self, attempt: Attempt, ops: &mut OpTable) -> Option<Grant> {
        match self.leases.get(&attempt) {
            Some(Lease::Sent) => {
                self.leases.insert(attempt, Lease::Unanswered);
                None
            }
            Some(Lease::Abandoned) => {
                self.leases.remove(&attempt);
                self.close(attempt.op, ops)
            }
            _ => None,
        }
    }

    /// An open connection of `op`'s pool came free: the oldest waiter takes it.
    fn check_in(&mut self, op: u32, ops: &mut OpTable) -> Option<Grant> {
        let index = self.pool_index(op, ops);
        let leases = &self.leases;
        let next = self.pools[index].check_in(|w| still_waiting(leases, ops, w))?;
        let gives_up_at = self.deadline_of(next);
        Some(self.lease(Grant::Send { attempt: next, gives_up_at }, gives_up_at))
    }

    /// A connection of `op`'s pool was closed: the oldest waiter opens a new one in its place.
    fn close(&mut self, op: u32, ops: &mut OpTable) -> Option<Grant> {
        let index = self.pool_index(op, ops);
        let leases = &self.leases;
        let next = self.pools[index].close(|w| still_waiting(leases, ops, w))?;
        let gives_up_at = self.deadline_of(next);
        Some(self.opened(next, gives_up_at))
    }

    /// A new connection opens for `attempt`: at once when opening takes no time.
    fn opened(&mut self, attempt: Attempt, gives_up_at: Instant) -> Grant {
        let connect = self.params.connect_time;
        let grant = if connect == Span::ZERO {
            Grant::Send { attempt, gives_up_at }
        } else {
            Grant::Open { attempt, after: connect }
        };
        self.lease(grant, gives_up_at)
    }

    /// When the client of a waiter taken off the queue stops waiting.
    fn deadline_of(&self, waiter: Attempt) -> Instant {
        match self.leases.get(&waiter) {
            Some(Lease::Waiting { gives_up_at }) => *gives_up_at,
            other => unreachable!("a waiter that still waits has a waiting lease, not {other:?}"),
        }
    }

    /// Records the lease `grant` leaves its attempt with.
    fn lease(&mut self, grant: Grant, gives_up_at: Instant) -> Grant {
        match grant {
            Grant::Send { attempt, .. } => self.leases.insert(attempt, Lease::Sent),
            Grant::Open { attempt, .. } => self.leases.insert(attempt, Lease::Connecting { gives_up_at }),
            Grant::Queued => None,
        };
        grant
    }

    fn pool_index(&self, op: u32, ops: &mut OpTable) -> usize {
        match self.params.scope {
            Scope::Shared => 0,
            Scope::Client => ops.get(op).client as usize,
        }
    }
}

/// Whether a waiter taken off a pool's queue still waits; the queue's reference on its
/// operation is let go either way.
fn still_waiting(leases: &HashMap<Attempt, Lease>, ops: &mut OpTable, w: Attempt) -> bool {
    ops.release(w.op);
    matches!(leases.get(&w), Some(Lease::Waiting { .. }))
}
