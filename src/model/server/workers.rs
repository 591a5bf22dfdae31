//! The last admission stage: `concurrency` workers, a bounded wait queue, rejection when it is
//! full, and `drop_expired` (a queued request whose client already gave up is dropped instead of
//! served). Free workers take the oldest waiting request, unless `discipline` says otherwise
//! ([`super::discipline`]: LIFO, CoDel, folly's CoDel, adaptive LIFO); a request the discipline
//! sheds is answered 503 without Retry-After, a retryable answer.

use super::discipline::Discipline;
use super::priority::PriorityShedding;
use super::{Request, ServerParams};
use crate::engine::{Instant, Span};
use crate::model::dist::Dist;
use crate::policy::Outcome;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::VecDeque;

/// Where an arriving request went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placed {
    Started { worker: u32, service: Span },
    Queued,
    Rejected(Outcome),
}

/// What the queue gave a freed worker.
#[derive(Clone, Copy, Debug)]
pub enum Next {
    /// A worker started the oldest waiting request, which had waited `waited` in the queue.
    Started { worker: u32, service: Span, waited: Span },
    /// A request dropped unserved (`drop_expired`).
    Dropped(Request),
    /// A request the discipline shed: answered [`SHED_STATUS`] without the work.
    Shed(Request),
}

/// The answer to a request the queue discipline sheds: 503 Service Unavailable, as folly's
/// executors reject and Envoy's overload manager sheds; it carries no Retry-After, so clients
/// may retry it.
pub const SHED_STATUS: u16 = 503;

#[derive(Clone, Copy, Debug)]
struct InService {
    req: Request,
    started: Instant,
    /// Its client cancelled it and the worker was given back at once (a hedge's
    /// `cancel_in_service`): its `Done` event, still pending, frees the slot and nothing else.
    stopped: bool,
}

pub struct Workers {
    concurrency: u32,
    service: Dist,
    queue_cap: usize,
    reject: Outcome,
    drop_expired: bool,
    busy: u32,
    /// Waiting requests with the time each was queued.
    waiting: VecDeque<(Request, Instant)>,
    serving: Vec<InService>,
    idle: Vec<u32>,
    rng: Xoshiro256PlusPlus,
    /// `None`: FIFO, the oldest first.
    discipline: Option<Discipline>,
    /// Requests the discipline shed, handed out before the next start.
    shed: Vec<Request>,
    /// Shedding by priority class from a full queue (`[workload] priorities`), if classes are used.
    priorities: Option<PriorityShedding>,
}

impl Workers {
    pub fn new(params: &ServerParams, rng: Xoshiro256PlusPlus) -> Workers {
        let idle_req = Request::new(0, 0, Instant::ZERO);
        Workers {
            concurrency: params.concurrency,
            service: params.service_time.clone(),
            queue_cap: params.queue.map_or(usize::MAX, |q| q as usize),
            reject: Outcome::Status(params.reject_status),
            drop_expired: params.drop_expired,
            busy: 0,
            waiting: VecDeque::new(),
            serving: vec![
                InService { req: idle_req, started: Instant::ZERO, stopped: false };
                params.concurrency as usize
            ],
            // Popped from the back: worker 0 first.
            idle: (0..params.concurrency).rev().collect(),
            rng,
            discipline: Discipline::new(params.discipline),
            shed: Vec::new(),
            priorities: None,
        }
    }

    /// Requests carry priority classes: a full queue makes room for a more critical one
    /// ([`PriorityShedding`]).
    pub fn shed_by_priority(&mut self) {
        self.priorities = Some(PriorityShedding::default());
    }

    /// Whether classes are used.
    #[inline]
    pub fn sheds_by_priority(&self) -> bool {
        self.priorities.is_some()
    }

    /// The shedding by class, if classes are used.
    #[inline]
    pub fn priorities(&mut self) -> Option<&mut PriorityShedding> {
        self.priorities.as_mut()
    }

    /// `req` found the queue full at `now`: the less critical request that makes room for it
    /// ([`PriorityShedding::displace`]), if classes are used and there is one.
    #[cold]
    #[inline(never)]
    pub fn displace(&mut self, req: Request, now: Instant) -> Option<Request> {
        self.priorities.as_mut()?.displace(&mut self.waiting, req, now)
    }

    #[inline]
    pub fn concurrency(&self) -> u32 {
        self.concurrency
    }

    /// Requests being served, and waiting.
    #[inline]
    pub fn levels(&self) -> (u32, usize) {
        (self.busy, self.waiting.len())
    }

    /// Starts `req` if fewer than `capacity` workers are busy, else queues it, else rejects it.
    #[inline]
    pub fn place(&mut self, req: Request, now: Instant, capacity: u32, slowdown: f64) -> Placed {
        if self.busy < capacity {
            let (worker, service) = self.start(req, now, slowdown);
            Placed::Started { worker, service }
        } else if self.waiting.len() < self.queue_cap {
            self.waiting.push_back((req, now));
            Placed::Queued
        } else {
            Placed::Rejected(self.reject)
        }
    }

    /// Worker `worker` finished: its request and when it started.
    #[inline]
    pub fn done(&mut self, worker: u32) -> (Request, Instant) {
        let InService { req, started, .. } = self.serving[worker as usize];
        self.busy -= 1;
        self.idle.push(worker);
        (req, started)
    }

    /// Whether waiting requests are taken in another order than FIFO, or shed (by a discipline
    /// or by priority class).
    pub fn has_discipline(&self) -> bool {
        self.discipline.is_some() || self.priorities.is_some()
    }

    /// The next waiting request, if a worker is free: started, or dropped because its client
    /// gave up (`drop_expired`); or one the discipline shed (`PLAIN`: FIFO, no discipline).
    #[inline]
    pub fn next<const PLAIN: bool>(&mut self, now: Instant, capacity: u32, slowdown: f64) -> Option<Next> {
        if !PLAIN && self.discipline.is_some() {
            return self.next_disciplined(now, capacity, slowdown);
        }
        if self.busy >= capacity {
            return None;
        }
        let (req, queued_at) = self.waiting.pop_front()?;
        self.begin(req, queued_at, now, slowdown)
    }

    /// [`Workers::next`] under a discipline (out of line: FIFO servers do not carry it). The
    /// requests shed while taking one are handed out first, one per call, even with every
    /// worker busy: they are answered at once.
    #[inline(never)]
    fn next_disciplined(&mut self, now: Instant, capacity: u32, slowdown: f64) -> Option<Next> {
        if let Some(req) = self.shed.pop() {
            return Some(Next::Shed(req));
        }
        if self.busy >= capacity {
            return None;
        }
        let discipline = self.discipline.as_mut().expect("checked");
        let shed = &mut self.shed;
        let taken = discipline.take(&mut self.waiting, now, |req| shed.push(req));
        // Handed out in the order they were shed.
        shed.reverse();
        match taken {
            Some((req, queued_at)) => self.begin(req, queued_at, now, slowdown),
            None => self.shed.pop().map(Next::Shed),
        }
    }

    /// Starts `req`, queued at `queued_at`, unless `drop_expired` drops it.
    #[inline]
    fn begin(&mut self, req: Request, queued_at: Instant, now: Instant, slowdown: f64) -> Option<Next> {
        if self.drop_expired && req.gives_up_at <= now {
            return Some(Next::Dropped(req));
        }
        let (worker, service) = self.start(req, now, slowdown);
        Some(Next::Started { worker, service, waited: now.since(queued_at) })
    }

    #[inline]
    pub fn serving(&self, worker: u32) -> &Request {
        &self.serving[worker as usize].req
    }

    #[inline]
    fn start(&mut self, req: Request, now: Instant, slowdown: f64) -> (u32, Span) {
        let worker = self.idle.pop().expect("busy < capacity <= concurrency, so a worker is idle");
        self.busy += 1;
        self.serving[worker as usize] = InService { req, started: now, stopped: false };
        let mut service = self.service.sample(&mut self.rng);
        if slowdown != 1.0 {
            service = service.mul_f64(slowdown);
        }
        (worker, service)
    }
}

/// Cancellation by the client (hedged requests, DESIGN §4.10). Out of line and never called in
/// a run without hedging.
impl Workers {
    /// Removes the waiting request of attempt `attempt` of `op`, if it is queued.
    #[inline(never)]
    pub fn remove_waiting(&mut self, op: u32, attempt: u32) -> Option<Request> {
        let i = self.waiting.iter().position(|(r, _)| r.op == op && r.attempt == attempt)?;
        self.waiting.remove(i).map(|(r, _)| r)
    }

    /// Stops serving attempt `attempt` of `op`, if a worker serves it: the worker is free at
    /// once (another slot stands in for it until its pending `Done` event, [`Workers::reap`]).
    /// Returns the request and when its service started.
    #[inline(never)]
    pub fn stop_serving(&mut self, op: u32, attempt: u32) -> Option<(Request, Instant)> {
        let worker = self.busy_workers().into_iter().find(|&w| {
            let s = &self.serving[w as usize];
            s.req.op == op && s.req.attempt == attempt
        })?;
        Some(self.stop(worker))
    }

    /// Every request held, taken away (a restart): the waiting ones (those a discipline shed
    /// and not yet handed out first), and those in service with when each started, stopped as
    /// [`Workers::stop_serving`] stops one.
    #[inline(never)]
    pub fn drain(&mut self) -> (Vec<Request>, Vec<(Request, Instant)>) {
        let mut waiting: Vec<Request> = self.shed.drain(..).rev().collect();
        waiting.extend(self.waiting.drain(..).map(|(r, _)| r));
        let serving = self.busy_workers().into_iter().map(|w| self.stop(w)).collect();
        (waiting, serving)
    }

    /// The workers serving a request that was not stopped, in order.
    fn busy_workers(&self) -> Vec<u32> {
        let mut busy = vec![true; self.serving.len()];
        for &w in &self.idle {
            busy[w as usize] = false;
        }
        (0..self.serving.len() as u32)
            .filter(|&w| busy[w as usize] && !self.serving[w as usize].stopped)
            .collect()
    }

    /// Stops `worker`'s request: the worker is free at once (another slot stands in for it
    /// until its pending `Done` event, [`Workers::reap`]).
    fn stop(&mut self, worker: u32) -> (Request, Instant) {
        let s = &mut self.serving[worker as usize];
        s.stopped = true;
        let (req, started) = (s.req, s.started);
        self.busy -= 1;
        // A fresh slot takes the stopped worker's place among the idle ones.
        let idle_req = Request::new(0, 0, Instant::ZERO);
        self.serving.push(InService { req: idle_req, started: Instant::ZERO, stopped: false });
        self.idle.push((self.serving.len() - 1) as u32);
        (req, started)
    }

    /// The `Done` event of `worker` fired: whether its request had been stopped (then the event
    /// means nothing more; the slot becomes idle, spare).
    #[inline(never)]
    pub fn reap(&mut self, worker: u32) -> bool {
        let s = &mut self.serving[worker as usize];
        if !s.stopped {
            return false;
        }
        s.stopped = false;
        self.idle.push(worker);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::server::codel::CodelParams;
    use crate::model::server::discipline::DisciplineParams;
    use rand::SeedableRng;

    fn spec(concurrency: u32, queue: Option<u32>, drop_expired: bool) -> ServerParams {
        disciplined(concurrency, queue, drop_expired, DisciplineParams::Fifo)
    }

    fn disciplined(
        concurrency: u32,
        queue: Option<u32>,
        drop_expired: bool,
        discipline: DisciplineParams,
    ) -> ServerParams {
        ServerParams {
            concurrency,
            service_time: Dist::Constant(Span::from_ns(10)),
            queue,
            reject_status: 429,
            reject_dont_retry: false,
            errors: vec![],
            drop_expired,
            faults: vec![],
            rate_limit: None,
            idempotency: None,
            overload: None,
            discipline,
            adaptive_concurrency: None,
        }
    }

    fn req(op: u32, gives_up_at: u64) -> Request {
        Request::new(op, 1, Instant::from_ns(gives_up_at))
    }

    #[test]
    fn start_then_queue_then_reject() {
        let mut w = Workers::new(&spec(2, Some(1), false), Xoshiro256PlusPlus::seed_from_u64(1));
        let t = Instant::ZERO;
        assert_eq!(w.place(req(1, 99), t, 2, 1.0), Placed::Started { worker: 0, service: Span::from_ns(10) });
        assert_eq!(w.place(req(2, 99), t, 2, 1.0), Placed::Started { worker: 1, service: Span::from_ns(10) });
        assert_eq!(w.place(req(3, 99), t, 2, 1.0), Placed::Queued);
        assert_eq!(w.place(req(4, 99), t, 2, 1.0), Placed::Rejected(Outcome::Status(429)));
        // Capacity faults lower the number of usable workers; slowdowns scale service.
        let (done, _) = w.done(1);
        assert_eq!(done.op, 2);
        assert!(w.next::<false>(t, 1, 1.0).is_none(), "one worker busy, capacity 1: no start");
        match w.next::<false>(Instant::from_ns(4), 2, 3.0) {
            Some(Next::Started { worker: 1, service, waited }) => {
                assert_eq!(service, Span::from_ns(30));
                assert_eq!(waited, Span::from_ns(4), "queued at 0, started at 4");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(w.serving(1).op, 3);
    }

    #[test]
    fn drop_expired_skips_abandoned_requests() {
        let mut w = Workers::new(&spec(1, None, true), Xoshiro256PlusPlus::seed_from_u64(1));
        let t = Instant::ZERO;
        w.place(req(1, 99), t, 1, 1.0);
        w.place(req(2, 5), t, 1, 1.0);
        w.place(req(3, 99), t, 1, 1.0);
        w.done(0);
        let later = Instant::from_ns(6);
        assert!(matches!(w.next::<false>(later, 1, 1.0), Some(Next::Dropped(r)) if r.op == 2));
        assert!(matches!(w.next::<false>(later, 1, 1.0), Some(Next::Started { worker: 0, .. })));
        assert_eq!(w.serving(0).op, 3);
    }

    /// One worker busy, four waiting: LIFO starts them newest first; FIFO oldest first.
    #[test]
    fn lifo_starts_the_newest_waiting_request() {
        for (discipline, order) in
            [(DisciplineParams::Lifo, [5, 4, 3, 2]), (DisciplineParams::Fifo, [2, 3, 4, 5])]
        {
            let mut w =
                Workers::new(&disciplined(1, None, false, discipline), Xoshiro256PlusPlus::seed_from_u64(1));
            for op in 1..=5 {
                w.place(req(op, 99), Instant::from_ns(op as u64), 1, 1.0);
            }
            let mut started = Vec::new();
            for t in 10..14 {
                w.done(0);
                match w.next::<false>(Instant::from_ns(t), 1, 1.0) {
                    Some(Next::Started { worker: 0, .. }) => started.push(w.serving(0).op),
                    other => panic!("{other:?}"),
                }
            }
            assert_eq!(started, order, "{discipline:?}");
        }
    }

    /// folly's CoDel through the workers: the stale requests shed while a worker takes one are
    /// handed out (to be answered 503) after the start, even with the worker busy again.
    #[test]
    fn shed_requests_are_handed_out_after_the_start() {
        let ms = Span::from_millis;
        let codel = CodelParams { target: ms(5), interval: ms(100) };
        let mut w = Workers::new(
            &disciplined(1, None, false, DisciplineParams::CodelRpc(codel)),
            Xoshiro256PlusPlus::seed_from_u64(1),
        );
        let at = |m: u64| Instant::ZERO + ms(m);
        w.place(req(1, u64::MAX), at(0), 1, 1.0);
        for op in 2..=5 {
            w.place(req(op, u64::MAX), at(0), 1, 1.0);
        }
        // At 50 ms: op 2 resets the minimum (50 ms); op 3 rolls the interval: overloaded.
        for (t, op) in [(50, 2), (51, 3)] {
            w.done(0);
            assert!(matches!(w.next::<false>(at(t), 1, 1.0), Some(Next::Started { .. })));
            assert_eq!(w.serving(0).op, op);
        }
        // Ops 4 and 5 waited 52 ms > 10 ms: shed; op 6 arrived at 45 ms, waited 7 ms: served.
        w.place(req(6, u64::MAX), at(45), 1, 1.0);
        w.done(0);
        assert!(matches!(w.next::<false>(at(52), 1, 1.0), Some(Next::Started { .. })));
        assert_eq!(w.serving(0).op, 6);
        let shed: Vec<u32> = std::iter::from_fn(|| match w.next::<false>(at(52), 1, 1.0) {
            Some(Next::Shed(r)) => Some(r.op),
            None => None,
            other => panic!("{other:?}"),
        })
        .collect();
        assert_eq!(shed, [4, 5], "in the order they were shed");
        assert_eq!(w.levels(), (1, 0));
    }
}
