//! `[server] discipline`: the order in which free workers take waiting requests, and which
//! waiting requests the server sheds (DESIGN §3.3). `fifo` (the default) is not represented
//! here: the workers take the oldest request without asking ([`super::workers`]).
//!
//! - `lifo`: the newest request first (Netflix's `LifoBlockingLimiter` backlog, .NET's
//!   `QueueProcessingOrder.NewestFirst`): under overload fresh requests, whose clients still
//!   wait, are served, and the old ones age out.
//! - `codel`: RFC 8289 CoDel ([`super::codel`]), shedding by its drop schedule.
//! - `codel-rpc`: folly's RPC variant ([`super::codel_rpc`]): while the last interval's
//!   minimum queueing delay exceeded `target`, requests that waited over `2 x target` are shed.
//! - `adaptive-lifo`: Facebook's adaptive LIFO ("Fail at Scale", ACM Queue 13(8), 2015,
//!   queue.acm.org/detail.cfm?id=2839461): FIFO until a standing queue forms, LIFO while it
//!   stands. The standing queue is folly's overload condition ([`super::codel_rpc`]) measured on
//!   the oldest waiting request's age each time a worker takes one: its minimum over the last
//!   interval exceeded `target`. It sheds nothing: pair it with `drop_expired` to drop what
//!   ages out.

use super::codel::{Codel, CodelParams};
use super::codel_rpc::CodelRpc;
use crate::engine::Instant;
use std::collections::VecDeque;

/// `discipline`, in engine units.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum DisciplineParams {
    #[default]
    Fifo,
    Lifo,
    Codel(CodelParams),
    CodelRpc(CodelParams),
    AdaptiveLifo(CodelParams),
}

/// A discipline other than FIFO, with its state.
pub enum Discipline {
    Lifo,
    Codel(Codel),
    CodelRpc(CodelRpc),
    AdaptiveLifo(CodelRpc),
}

impl Discipline {
    /// `None` for FIFO (the workers' plain path).
    pub fn new(params: DisciplineParams) -> Option<Discipline> {
        match params {
            DisciplineParams::Fifo => None,
            DisciplineParams::Lifo => Some(Discipline::Lifo),
            DisciplineParams::Codel(p) => Some(Discipline::Codel(Codel::new(p))),
            DisciplineParams::CodelRpc(p) => Some(Discipline::CodelRpc(CodelRpc::new(p))),
            DisciplineParams::AdaptiveLifo(p) => Some(Discipline::AdaptiveLifo(CodelRpc::new(p))),
        }
    }

    /// The request a free worker takes at `now` (and when it was queued); the requests shed on
    /// the way are passed to `shed`.
    pub fn take<T>(
        &mut self,
        queue: &mut VecDeque<(T, Instant)>,
        now: Instant,
        mut shed: impl FnMut(T),
    ) -> Option<(T, Instant)> {
        match self {
            Discipline::Lifo => queue.pop_back(),
            Discipline::Codel(codel) => codel.dequeue(queue, now, shed),
            Discipline::CodelRpc(detector) => {
                while let Some((item, queued_at)) = queue.pop_front() {
                    if !detector.reject(now.since(queued_at), now) {
                        return Some((item, queued_at));
                    }
                    shed(item);
                }
                None
            }
            Discipline::AdaptiveLifo(detector) => {
                let oldest = queue.front()?.1;
                // Only the overload state is used: nothing is rejected.
                detector.reject(now.since(oldest), now);
                if detector.overloaded() { queue.pop_back() } else { queue.pop_front() }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Span;

    const DEFAULTS: CodelParams =
        CodelParams { target: Span::from_millis(5), interval: Span::from_millis(100) };

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Span::from_millis(ms)
    }

    fn drain(d: &mut Discipline, queue: &mut VecDeque<(u32, Instant)>, now: Instant) -> (Vec<u32>, Vec<u32>) {
        let (mut served, mut shed) = (Vec::new(), Vec::new());
        while let Some((r, _)) = d.take(queue, now, |r| shed.push(r)) {
            served.push(r);
        }
        (served, shed)
    }

    #[test]
    fn lifo_serves_the_newest_first() {
        let mut d = Discipline::new(DisciplineParams::Lifo).unwrap();
        let mut queue: VecDeque<(u32, Instant)> = (1..=4).map(|i| (i, at(i as u64))).collect();
        assert_eq!(d.take(&mut queue, at(5), |_| panic!("LIFO sheds nothing")), Some((4, at(4))));
        queue.push_back((5, at(6)));
        assert_eq!(drain(&mut d, &mut queue, at(7)), (vec![5, 3, 2, 1], vec![]));
        assert!(Discipline::new(DisciplineParams::Fifo).is_none(), "FIFO is the workers' own path");
    }

    #[test]
    fn codel_rpc_sheds_the_stale_while_overloaded() {
        let mut d = Discipline::new(DisciplineParams::CodelRpc(DEFAULTS)).unwrap();
        let mut queue: VecDeque<(u32, Instant)> = [(1, at(0)), (2, at(0))].into();
        // At 50 ms: the first (a reset, min 50 ms) and the second (rolls the interval: overloaded).
        assert_eq!(drain(&mut d, &mut queue, at(50)).0, vec![1, 2]);
        // Overloaded: waited 60 ms and 20 ms are shed, 9 ms is served.
        queue.extend([(3, at(0)), (4, at(40)), (5, at(51))]);
        assert_eq!(drain(&mut d, &mut queue, at(60)), (vec![5], vec![3, 4]));
    }

    #[test]
    fn adaptive_lifo_turns_lifo_while_a_queue_stands() {
        let mut d = Discipline::new(DisciplineParams::AdaptiveLifo(DEFAULTS)).unwrap();
        let mut queue: VecDeque<(u32, Instant)> = (1..=3).map(|i| (i, at(0))).collect();
        // Not yet overloaded: FIFO (the first take resets, the second rolls the interval over
        // and finds the standing queue: 20 ms > 5 ms).
        assert_eq!(d.take(&mut queue, at(20), |_| unreachable!()), Some((1, at(0))));
        queue.extend([(4, at(25)), (5, at(26))]);
        assert_eq!(
            d.take(&mut queue, at(30), |_| unreachable!()),
            Some((5, at(26))),
            "overloaded: newest first"
        );
        assert_eq!(drain(&mut d, &mut queue, at(31)), (vec![4, 3, 2], vec![]));
        // The decision made at a roll-over holds for an interval, even after a quiet spell.
        queue.extend([(6, at(200)), (7, at(201))]);
        assert_eq!(
            d.take(&mut queue, at(202), |_| unreachable!()),
            Some((7, at(201))),
            "the last interval stood"
        );
        assert_eq!(d.take(&mut queue, at(203), |_| unreachable!()), Some((6, at(200))));
        // That interval's oldest waits were 2-3 ms: FIFO again at the next roll-over.
        queue.extend([(8, at(400)), (9, at(401))]);
        assert_eq!(drain(&mut d, &mut queue, at(402)), (vec![8, 9], vec![]));
    }
}
