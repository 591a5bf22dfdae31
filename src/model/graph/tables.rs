//! The call graph's two tables: the requests services are working on ([`Call`]) and the calls
//! a service makes along an edge, each with its retries ([`Ticket`]). Slots are reused; a
//! slot's generation changes when it is freed, so that an event or an answer naming an
//! earlier occupant is recognised as stale and ignored.

use super::super::server::Reply;
use super::hop::Tries;
use crate::engine::Instant;

/// The entry call's edge: it comes from the user's client, not along an edge.
pub const NO_EDGE: u32 = u32::MAX;

/// Who is waiting for a call's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// The user's client: attempt `attempt` of its operation in slot `op`.
    Client { op: u32, attempt: u32 },
    /// Attempt `attempt` of the ticket `ticket` (generation `generation`) of the calling service.
    Edge { ticket: u32, generation: u32, attempt: u32 },
}

/// Where a call is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The slot is free.
    Free,
    /// Waiting in its replica's queue (or parked by an admission stage).
    Queued,
    /// Held by the rate limiter (`Delayed`) until its release event.
    Delayed,
    /// A worker does the service's own work.
    Serving,
    /// The service's own work is done; its worker waits for the downstream calls of stage
    /// `stage` (an index into the service's `calls`).
    Calling,
    /// Its replica went down (a restart) and let go of it: it is answered with a connection
    /// reset as soon as the replica's other dropped requests are let go of too.
    Dropped,
}

/// One request a service is working on.
#[derive(Clone, Debug)]
pub struct Call {
    pub generation: u32,
    pub phase: Phase,
    pub service: u32,
    pub replica: u32,
    /// The edge it came along ([`NO_EDGE`]: from the user's client).
    pub edge: u32,
    pub caller: Caller,
    /// The propagated deadline ([`Instant::NEVER`] without deadline propagation).
    pub deadline: Instant,
    /// When its caller stops waiting for it.
    pub waits_until: Instant,
    /// When its result stopped being able to reach the user ([`Instant::NEVER`]: it still can).
    pub abandoned_at: Instant,
    /// Its worker, and when the worker took it (`Serving` and `Calling`).
    pub worker: u32,
    pub started: Instant,
    /// `Calling`: the stage, the tickets of the stage still out, and the copies of a
    /// sequential edge still to make.
    pub stage: u32,
    pub pending: u32,
    pub left: u32,
    /// The tickets out (stage `stage`).
    pub tickets: Vec<u32>,
}

/// One call along an edge, with its retries (the edge's client policy).
#[derive(Clone, Debug)]
pub struct Ticket {
    pub generation: u32,
    pub live: bool,
    /// The calling request, and its generation.
    pub parent: u32,
    pub edge: u32,
    /// Its tries, as any hop's ([`super::hop`]).
    pub tries: Tries,
    /// The request of the current attempt: (call slot, its generation).
    pub current: Option<(u32, u32)>,
    /// A hedged edge's copies out.
    pub copies: Vec<HedgeCopy>,
    /// The valid hedge timer: a pending timer with another number is stale.
    pub timer: u32,
    /// A hedged call's last non-fatal failure (what it fails with when no copy is left).
    pub last_failure: Option<Reply>,
}

/// One copy of a hedged call, out: its request (call slot, generation), its attempt number,
/// and when it was sent.
#[derive(Clone, Copy, Debug)]
pub struct HedgeCopy {
    pub call: u32,
    pub generation: u32,
    pub attempt: u32,
    pub sent: Instant,
}

/// A table of reusable slots.
pub struct Slots<T> {
    pub items: Vec<T>,
    free: Vec<u32>,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Slots { items: Vec::new(), free: Vec::new() }
    }
}

impl<T> Slots<T> {
    /// A free slot, filled by `fill` (given the slot's previous occupant, if it had one, so
    /// that its buffers are reused).
    pub fn take(&mut self, fill: impl FnOnce(Option<&mut T>) -> T) -> u32 {
        if let Some(id) = self.free.pop() {
            let item = &mut self.items[id as usize];
            let new = fill(Some(item));
            *item = new;
            id
        } else {
            self.items.push(fill(None));
            (self.items.len() - 1) as u32
        }
    }

    pub fn put_back(&mut self, id: u32) {
        self.free.push(id);
    }

    #[inline]
    pub fn get(&self, id: u32) -> &T {
        &self.items[id as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, id: u32) -> &mut T {
        &mut self.items[id as usize]
    }
}
