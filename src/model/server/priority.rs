//! Shedding by priority class (`[workload] priorities`, DESIGN §3.3): when a request finds the
//! wait queue full, the server makes room for it by turning away the least critical request
//! waiting, if that one is of a less critical class than the arrival (the Google SRE book,
//! ch. 21: "requests are shed from the lowest criticality first"). Among the waiting requests
//! of that class, the one that arrived last goes: it has waited least. The turned-away request
//! gets the full queue's answer (`reject_status`); an arrival of a class no less critical than
//! every waiting request is rejected as before.
//!
//! The server learns each request's class from the model ([`PriorityShedding::classify`], by
//! operation slot: a slot is not reused while a request of its operation is at the server).
//! Which waiting request a free worker takes is left to the `discipline`: classes decide only
//! what is shed from a full queue.

use super::Request;
use crate::engine::Instant;
use crate::model::priorities::Class;
use std::collections::VecDeque;

/// The class of each operation slot with a request at the server.
#[derive(Default)]
pub struct PriorityShedding {
    class_of: Vec<Class>,
    /// Requests turned away to make room, per class.
    displaced: [u64; 4],
}

impl PriorityShedding {
    /// The operation in `slot` has class `class`.
    #[inline]
    pub fn classify(&mut self, slot: u32, class: Class) {
        let i = slot as usize;
        if i >= self.class_of.len() {
            self.class_of.resize(i + 1, 0);
        }
        self.class_of[i] = class;
    }

    fn class(&self, req: &Request) -> Class {
        self.class_of[req.op as usize]
    }

    /// `arrival` found the queue full: if a waiting request is of a less critical class, the
    /// newest of the least critical ones leaves the queue, `arrival` joins its end, and the one
    /// that left is returned (to be answered as rejected); else `None` (reject `arrival`).
    pub fn displace(
        &mut self,
        waiting: &mut VecDeque<(Request, Instant)>,
        arrival: Request,
        now: Instant,
    ) -> Option<Request> {
        let mine = self.class(&arrival);
        let mut victim: Option<(usize, Class)> = None;
        // From the newest: the first request of each less critical class found is its newest.
        for (i, (req, _)) in waiting.iter().enumerate().rev() {
            let c = self.class(req);
            if c > mine && victim.is_none_or(|(_, worst)| c > worst) {
                victim = Some((i, c));
                if c == 3 {
                    break;
                }
            }
        }
        let (i, c) = victim?;
        let (evicted, _) = waiting.remove(i).expect("an index found in the queue");
        waiting.push_back((arrival, now));
        self.displaced[c as usize] += 1;
        Some(evicted)
    }

    /// Requests turned away to make room, per class.
    pub fn displaced(&self) -> [u64; 4] {
        self.displaced
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(op: u32) -> Request {
        Request::new(op, 1, Instant::NEVER)
    }

    /// Slots 0-5 with classes [3, 1, 3, 2, 0, 1]; a queue holding 0, 1, 2, 3 (full).
    fn setup() -> (PriorityShedding, VecDeque<(Request, Instant)>) {
        let mut p = PriorityShedding::default();
        for (slot, class) in [3, 1, 3, 2, 0, 1].into_iter().enumerate() {
            p.classify(slot as u32, class);
        }
        let queue = (0..4).map(|op| (req(op), Instant::from_ns(op as u64))).collect();
        (p, queue)
    }

    fn ops(q: &VecDeque<(Request, Instant)>) -> Vec<u32> {
        q.iter().map(|(r, _)| r.op).collect()
    }

    #[test]
    fn the_newest_of_the_least_critical_makes_room() {
        let (mut p, mut q) = setup();
        // A critical_plus arrival (slot 4): the sheddable ones are 0 and 2; 2 is the newer.
        assert_eq!(p.displace(&mut q, req(4), Instant::from_ns(9)).map(|r| r.op), Some(2));
        assert_eq!(ops(&q), [0, 1, 3, 4]);
        // A critical arrival (slot 5): sheddable 0 goes next, before sheddable_plus 3.
        assert_eq!(p.displace(&mut q, req(5), Instant::from_ns(10)).map(|r| r.op), Some(0));
        assert_eq!(ops(&q), [1, 3, 4, 5]);
        assert_eq!(p.displaced(), [0, 0, 0, 2]);
    }

    #[test]
    fn an_arrival_no_more_critical_than_every_waiting_request_is_rejected() {
        let (mut p, mut q) = setup();
        // Sheddable (slot 2 again, as a retry): nothing less critical waits.
        assert_eq!(p.displace(&mut q, req(2), Instant::from_ns(9)), None);
        assert_eq!(ops(&q), [0, 1, 2, 3], "unchanged");
        // Sheddable_plus (slot 3's class): the sheddable 2 makes room.
        p.classify(6, 2);
        assert_eq!(p.displace(&mut q, req(6), Instant::from_ns(9)).map(|r| r.op), Some(2));
        // A queue of critical_plus only turns away even a critical_plus arrival.
        let mut full: VecDeque<(Request, Instant)> = [(req(4), Instant::ZERO)].into();
        assert_eq!(p.displace(&mut full, req(4), Instant::from_ns(1)), None);
    }
}

#[cfg(test)]
mod through_the_server {
    use super::super::{Arrival, Server, ServerParams};
    use super::*;
    use crate::engine::Span;
    use crate::model::dist::Dist;
    use crate::model::server::discipline::DisciplineParams;
    use crate::policy::Outcome;

    /// One worker, a queue of 2, 10 ms of work each; the server sheds by class.
    fn server() -> Server {
        let params = ServerParams {
            concurrency: 1,
            service_time: Dist::Constant(Span::from_millis(10)),
            queue: Some(2),
            reject_status: 503,
            reject_dont_retry: false,
            errors: vec![],
            drop_expired: false,
            faults: vec![],
            rate_limit: None,
            idempotency: None,
            overload: None,
            discipline: DisciplineParams::Fifo,
            adaptive_concurrency: None,
        };
        let mut s = Server::new(params, 1);
        s.shed_by_priority();
        assert!(!s.is_plain(), "classes are not the plain path");
        s
    }

    /// A scripted burst at one instant: ops 0-6 with classes sheddable, sheddable, critical,
    /// sheddable_plus, critical_plus, critical, sheddable. 0 starts; 1 and 2 fill the queue;
    /// 3 (sheddable_plus) displaces 1 (sheddable); 4 (critical_plus) displaces 3, the least
    /// critical left; 5 (critical) finds only critical and critical_plus waiting: rejected; 6
    /// (sheddable) rejected. Then the worker serves 2 and 4, in arrival order.
    #[test]
    fn a_full_queue_turns_away_the_least_critical() {
        let mut s = server();
        let classes = [3, 3, 1, 2, 0, 1, 3];
        let t = Instant::ZERO;
        let mut got = Vec::new();
        for (op, class) in classes.into_iter().enumerate() {
            s.classify(op as u32, class);
            let arrival = s.arrive::<false>(Request::new(op as u32, 1, Instant::NEVER), t);
            got.push(match arrival {
                Arrival::Started { .. } => "started".to_string(),
                Arrival::Queued => "queued".to_string(),
                Arrival::Displaced { evicted, reply } => {
                    assert_eq!(reply.outcome, Outcome::Status(503));
                    format!("displaced {}", evicted.op)
                }
                Arrival::Answered(r) => format!("rejected {:?}", r.outcome),
                other => panic!("{other:?}"),
            });
        }
        assert_eq!(
            got,
            [
                "started",
                "queued",
                "queued",
                "displaced 1",
                "displaced 3",
                "rejected Status(503)",
                "rejected Status(503)"
            ]
        );
        let mut served = Vec::new();
        for ms in [10, 20, 30] {
            let now = Instant::ZERO + Span::from_millis(ms);
            let (req, _, _) = s.done::<false>(0, now);
            served.push(req.op);
            s.next_waiting::<false>(now);
        }
        assert_eq!(served, [0, 2, 4]);
        assert_eq!(s.levels(), (0, 0));
    }
}
