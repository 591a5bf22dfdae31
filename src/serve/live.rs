//! The model's queue server ([`Server`]) driven by the wall clock: the same admission stages
//! and workers that `retrysim run` simulates, with the events the simulation's loop would
//! schedule (a worker done, a rate-limited request released, capacity restored) kept in a
//! timer heap of their own and played when the wall clock reaches them. Nothing of the model
//! changes: it is asked exactly what the simulation asks it, in time order.
//!
//! **Time.** An instant is the wall-clock time since serve started. The model requires time
//! to never go back, and a timer fires a little after its instant: before a request is
//! admitted at `now`, every timer due by `now` is played at its own instant, so events reach
//! the model in the order of their instants, as in the simulation; the clock given to the
//! model never decreases. The log's `answered_s` is when the answer was actually sent (the
//! timer's lag included), what the client sees.
//!
//! **Identity.** A request's attempt field carries its serial number (how its answer finds
//! its HTTP connection). A request with an idempotency key is a request of the operation
//! numbered for that key, with a `per-op` key (the same key on every attempt): the dedup store
//! sees exactly the keys the client sent.

use super::log::{Fate, RequestLog, Row};
use super::response::{Answer, RetryAfterStyle, answer};
use super::summary::Tally;
use crate::engine::{Instant, Span};
use crate::model::server::idempotency::{Completion, KeyMode, KeyTag};
use crate::model::server::workers::{Next, SHED_STATUS};
use crate::model::server::{Arrival, Reply, Request, Server, ServerParams};
use crate::policy::Outcome;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::SystemTime;
use tokio::sync::oneshot;

/// What a timer does when it fires.
#[derive(Clone, Copy, Debug)]
enum Wake {
    /// A worker finished its request.
    Done(u32),
    /// The rate limiter's hold on a request is over.
    Release(Request),
    /// A capacity fault ended: waiting requests may start.
    Restored,
}

#[derive(Clone, Copy, Debug)]
struct Timer {
    at: Instant,
    /// Ties in time fire in the order set, as the engine's calendar does.
    order: u64,
    wake: Wake,
}

impl PartialEq for Timer {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.order) == (other.at, other.order)
    }
}
impl Eq for Timer {}
impl PartialOrd for Timer {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Timer {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.order).cmp(&(other.at, other.order))
    }
}

/// A request at the server.
struct Pending {
    row: Row,
    /// Where its answer goes.
    reply_to: Option<oneshot::Sender<Answer>>,
    /// When it passed the rate limiter (its arrival, or the end of its hold).
    ready: Instant,
    /// When a worker started it.
    started: Option<Instant>,
}

/// The server's state, behind the front's lock.
pub struct Live {
    server: Server,
    /// The latest instant given to the model.
    clock: Instant,
    /// The latest reading of the wall clock: a timer is played at its own instant, a little
    /// after it (the answer is sent now, and `answered_s` says when).
    wall: Instant,
    timers: BinaryHeap<Reverse<Timer>>,
    timer_order: u64,
    pending: HashMap<u32, Pending>,
    next_serial: u32,
    next_seq: u64,
    /// Idempotency keys, numbered in the order first seen.
    keys: HashMap<String, u64>,
    style: RetryAfterStyle,
    log: RequestLog,
    tally: Tally,
}

/// What a stopped server leaves: its log and its counts.
pub struct Stopped {
    pub log: RequestLog,
    pub tally: Tally,
    pub keys_peak: u64,
}

impl Live {
    pub fn new(
        params: ServerParams,
        run_seed: u64,
        style: RetryAfterStyle,
        log: RequestLog,
        tally: Tally,
    ) -> Live {
        let server = Server::new(params, run_seed);
        let mut live = Live {
            clock: Instant::ZERO,
            wall: Instant::ZERO,
            timers: BinaryHeap::new(),
            timer_order: 0,
            pending: HashMap::new(),
            next_serial: 0,
            next_seq: 0,
            keys: HashMap::new(),
            style,
            log,
            tally,
            server,
        };
        let restorations: Vec<Instant> = live.server.capacity_restorations().collect();
        for at in restorations {
            live.set(at, Wake::Restored);
        }
        live
    }

    /// The next arrival's sequence number (its row's `seq`).
    pub fn next_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    /// When the next timer is due.
    pub fn next_timer(&self) -> Option<Instant> {
        self.timers.peek().map(|t| t.0.at)
    }

    /// Plays every timer due by `now`, each at its own instant.
    pub fn advance(&mut self, now: Instant) {
        self.wall = self.wall.max(now);
        while let Some(Reverse(t)) = self.timers.peek().copied()
            && t.at <= now
        {
            self.timers.pop();
            self.clock = self.clock.max(t.at);
            let at = self.clock;
            match t.wake {
                Wake::Done(worker) => self.done(worker, at),
                Wake::Release(req) => {
                    if let Some(p) = self.pending.get_mut(&req.attempt) {
                        p.ready = at;
                    }
                    let arrival = self.server.resume(req, at);
                    self.admitted(req, arrival, at);
                }
                Wake::Restored => self.start_waiting(at),
            }
        }
        self.clock = self.clock.max(now);
    }

    /// A request arrives at `now` (its row holds what the front read); its answer, now or
    /// later, goes to `reply_to`.
    pub fn arrive(&mut self, now: Instant, mut row: Row, reply_to: oneshot::Sender<Answer>) {
        self.advance(now);
        let now = self.clock;
        row.arrival_s = now.as_secs_f64();
        let serial = self.next_serial;
        self.next_serial = self.next_serial.wrapping_add(1);
        let mut req = Request::new(0, serial, Instant::NEVER);
        if row.keyed
            && let Some(id) = &row.op_id
        {
            let fresh = self.keys.len() as u64;
            let key = *self.keys.entry(id.clone()).or_insert(fresh);
            req.op = key as u32;
            req.key_tag = KeyTag::new(KeyMode::PerOp, key, 0);
        }
        self.pending.insert(serial, Pending { row, reply_to: Some(reply_to), ready: now, started: None });
        let arrival = self.server.arrive::<false>(req, now);
        self.admitted(req, arrival, now);
    }

    /// What the admission stages did with `req` at `now`, followed up as the simulation does
    /// (`model/queue_model.rs` `admitted`).
    fn admitted(&mut self, req: Request, arrival: Arrival, now: Instant) {
        let serial = req.attempt;
        match arrival {
            Arrival::Answered(reply) => self.finish(serial, Fate::Refused, reply, false, now),
            Arrival::Silenced => self.finish(serial, Fate::Silenced, Reply::of(Outcome::Timeout), false, now),
            Arrival::Replayed(reply) => self.finish(serial, Fate::Replayed, reply, false, now),
            Arrival::Parked | Arrival::Queued => {}
            // The arrival is queued; a less critical request leaves with the full queue's answer.
            Arrival::Displaced { evicted, reply } => {
                self.finish(evicted.attempt, Fate::Shed, reply, false, now)
            }
            Arrival::Started { worker, service } => self.started(serial, worker, service, now),
            Arrival::Delayed(wait) => {
                if let Some(p) = self.pending.get_mut(&serial) {
                    p.row.held_s += wait.as_secs_f64();
                }
                // As in the simulation, the held request goes on as it was built at arrival
                // (`req` is that copy: the stages changed only the server's).
                self.set(now + wait, Wake::Release(req));
            }
        }
    }

    /// A worker started request `serial` at `now`; it is done after `service`.
    fn started(&mut self, serial: u32, worker: u32, service: Span, now: Instant) {
        if let Some(p) = self.pending.get_mut(&serial) {
            p.started = Some(now);
            p.row.queue_wait_s = now.since(p.ready).as_secs_f64();
            p.row.service_s = service.as_secs_f64();
        }
        self.set(now + service, Wake::Done(worker));
    }

    /// A worker finished at `now`: its answer goes back, then those of the requests parked on
    /// its key, and the next waiting request starts.
    fn done(&mut self, worker: u32, now: Instant) {
        let (req, _, completion) = self.server.done::<false>(worker, now);
        self.finish(req.attempt, Fate::Served, req.answer, completion == Completion::Applied, now);
        while let Some(parked) = self.server.pop_answered() {
            if let Some(p) = self.pending.get_mut(&parked.attempt) {
                p.row.queue_wait_s = now.since(p.ready).as_secs_f64();
            }
            self.finish(parked.attempt, Fate::Parked, parked.answer, false, now);
        }
        self.start_waiting(now);
    }

    /// Starts waiting requests while workers are free (`queue_model.rs` `start_waiting`).
    fn start_waiting(&mut self, now: Instant) {
        while let Some(next) = self.server.next_waiting::<false>(now) {
            match next {
                Next::Started { worker, service, .. } => {
                    let serial = self.server.serving(worker).attempt;
                    self.started(serial, worker, service, now);
                }
                Next::Dropped(req) => {
                    self.finish(req.attempt, Fate::Silenced, Reply::of(Outcome::Timeout), false, now)
                }
                Next::Shed(req) => {
                    self.finish(req.attempt, Fate::Shed, Reply::of(Outcome::Status(SHED_STATUS)), false, now)
                }
            }
        }
    }

    /// Request `serial` is answered `reply` at `now`: sent, logged and counted.
    fn finish(&mut self, serial: u32, fate: Fate, reply: Reply, effect: bool, now: Instant) {
        let Some(mut p) = self.pending.remove(&serial) else { return };
        let sent = answer(reply, self.style, SystemTime::now());
        let fate = match sent {
            Answer::Silence if fate != Fate::Silenced => Fate::Silenced,
            Answer::Reset => Fate::Reset,
            _ => fate,
        };
        let row = &mut p.row;
        row.fate = Some(fate);
        row.effect = effect;
        if let Some(started) = p.started {
            row.service_s = now.since(started).as_secs_f64();
        }
        if let Answer::Http(h) = &sent {
            row.status = Some(h.status);
            row.retry_after = h.retry_after.clone();
            row.answered_s = Some(self.wall.max(now).as_secs_f64());
        }
        // A silenced request's connection stays open: it is told to wait for nothing.
        row.delivered = p.reply_to.take().is_some_and(|to| to.send(sent).is_ok()) && fate != Fate::Silenced;
        self.record(&p.row);
    }

    /// A request the front refused as unreadable (answered 400 there).
    pub fn bad_request(&mut self, mut row: Row, now: Instant) {
        self.advance(now);
        row.arrival_s = self.clock.as_secs_f64();
        row.answered_s = Some(row.arrival_s);
        row.fate = Some(Fate::BadRequest);
        row.status = Some(400);
        row.delivered = true;
        self.record(&row);
    }

    fn record(&mut self, row: &Row) {
        self.log.write(row);
        self.tally.add(row);
    }

    fn set(&mut self, at: Instant, wake: Wake) {
        self.timer_order += 1;
        self.timers.push(Reverse(Timer { at, order: self.timer_order, wake }));
    }

    /// Stops at `now`: the timers due by then are played, and the requests still at the server
    /// are logged as pending, in arrival order (their connections are closed unanswered).
    pub fn stop(mut self, now: Instant) -> Stopped {
        self.advance(now);
        let mut left: Vec<Pending> = self.pending.drain().map(|(_, p)| p).collect();
        left.sort_by_key(|p| p.row.seq);
        for mut p in left {
            p.row.fate = Some(Fate::Pending);
            if let Some(started) = p.started {
                p.row.service_s = self.clock.since(started).as_secs_f64();
            }
            self.log.write(&p.row);
            self.tally.add(&p.row);
        }
        Stopped { keys_peak: self.server.keys_peak(), log: self.log, tally: self.tally }
    }
}
