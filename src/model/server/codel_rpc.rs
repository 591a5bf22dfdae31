//! `discipline = "codel-rpc"`: the CoDel variant for RPC servers in folly
//! (`folly/executors/Codel.cpp`, Meta), and the overload detector `adaptive-lifo` switches on.
//!
//! Every `interval` the server decides whether it is overloaded: it is if the *smallest*
//! queueing delay of the requests taken from the queue during the last interval exceeded
//! `target` (a standing queue, not a burst: some request got through quickly otherwise). While
//! it is overloaded, a request that waited longer than `2 x target` (folly's "slough timeout")
//! is rejected instead of served. Unlike RFC 8289 there is no drop schedule: the cut-off is
//! fixed. The first request of each interval starts that interval's minimum and is never
//! rejected ("more than one request must come in during an interval before codel starts
//! dropping requests"). folly's flags `codel_interval` 100 ms and `codel_target_delay` 5 ms are
//! the defaults, so requests are sloughed at 10 ms.
//!
//! The interval rolls over at the first request after it ends (folly checks the clock when a
//! request is dequeued, and there is no timer); the state starts as folly's constructor leaves
//! it: minimum 0, an interval ending now (the server's start), a reset pending.

use super::codel::CodelParams;
use crate::engine::{Instant, Span};

pub struct CodelRpc {
    target: Span,
    interval: Span,
    /// When the current interval ends.
    interval_end: Instant,
    /// The smallest queueing delay seen since the last reset.
    min_delay: Span,
    /// The next request resets `min_delay` (the first of an interval).
    reset_pending: bool,
    overloaded: bool,
}

impl CodelRpc {
    pub fn new(params: CodelParams) -> CodelRpc {
        CodelRpc {
            target: params.target,
            interval: params.interval,
            interval_end: Instant::ZERO,
            min_delay: Span::ZERO,
            reset_pending: true,
            overloaded: false,
        }
    }

    /// A request that waited `delay` leaves the queue at `now`: whether to reject it (folly's
    /// `Codel::overloaded`).
    pub fn reject(&mut self, delay: Span, now: Instant) -> bool {
        if now > self.interval_end && !self.reset_pending {
            self.reset_pending = true;
            self.interval_end = now + self.interval;
            self.overloaded = self.min_delay > self.target;
        }
        if self.reset_pending {
            self.reset_pending = false;
            self.min_delay = delay;
            return false;
        }
        self.min_delay = self.min_delay.min(delay);
        self.overloaded && delay > self.target * 2
    }

    /// Whether the last completed interval saw a standing queue.
    pub fn overloaded(&self) -> bool {
        self.overloaded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOLLY: CodelParams = CodelParams { target: Span::from_millis(5), interval: Span::from_millis(100) };

    fn ms(x: u64) -> Span {
        Span::from_millis(x)
    }

    /// folly's rule (issue 26's vector): a request is rejected only if the previous 100 ms
    /// interval's minimum queueing delay exceeded 5 ms *and* its own delay exceeds 10 ms.
    #[test]
    fn rejects_only_past_twice_target_after_an_interval_above_target() {
        let mut c = CodelRpc::new(FOLLY);
        let at = |t: u64| Instant::ZERO + ms(t);
        // The first request (a reset) and the one rolling the first interval are never rejected.
        assert!(!c.reject(ms(50), at(1)));
        assert!(!c.reject(ms(50), at(2)), "rolls the interval over: overloaded := 50 > 5; a reset");
        assert!(c.overloaded());
        // Interval (2, 102]: overloaded since its start (the minimum 50 ms before it).
        assert!(!c.reject(ms(10), at(10)), "10 ms is not > 2 x target");
        assert!(c.reject(ms(11), at(20)), "overloaded and 11 ms > 10 ms");
        assert!(!c.reject(ms(4), at(30)), "a quick one is served; the interval's minimum is now 4 ms");
        assert!(c.reject(ms(30), at(40)), "the decision holds until the interval ends");
        // Rolled over at 103: the minimum was 4 ms <= 5 ms, not overloaded.
        assert!(!c.reject(ms(30), at(103)));
        assert!(!c.overloaded());
        assert!(!c.reject(ms(30), at(150)), "not overloaded: even a 30 ms delay is served");
        // Rolled over at 204: the minimum was 30 ms > 5 ms: overloaded, the roll-over request spared.
        assert!(!c.reject(ms(6), at(204)));
        assert!(c.overloaded());
        assert!(c.reject(ms(12), at(210)));
        assert!(!c.reject(ms(6), at(220)), "6 ms: above target but within the slough timeout");
        // Minimum 6 ms exactly over target at the next roll-over: still overloaded.
        assert!(!c.reject(ms(5), at(305)));
        assert!(c.overloaded());
        // Minimum 5 ms is not > target: the next interval is not overloaded.
        assert!(!c.reject(ms(20), at(406)));
        assert!(!c.overloaded());
        assert!(!c.reject(ms(20), at(410)));
    }
}
