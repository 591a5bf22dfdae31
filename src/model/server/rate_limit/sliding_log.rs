//! `kind = "sliding-log"`: the log of admission times, as the Redis sorted-set limiter keeps
//! it (`ZREMRANGEBYSCORE key 0 now-window`, `ZCARD key`, `ZADD key now` only if under the
//! limit; docs/overload-and-topology.md §1.4). An arriving request first forgets the
//! admissions older than `window`; it is admitted (and logged) if fewer than `limit` remain,
//! so no `window` ever holds more than `limit` admissions. A refused request is not logged;
//! its Retry-After is the time until the oldest admission leaves the window.

use super::Verdict;
use crate::engine::{Instant, Span};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlidingLogParams {
    /// Admissions per window.
    pub limit: u32,
    pub window: Span,
}

pub struct SlidingLog {
    limit: usize,
    window: Span,
    /// The admissions of the last `window`, oldest first (at most `limit`).
    log: VecDeque<Instant>,
}

impl SlidingLog {
    pub fn new(params: &SlidingLogParams) -> SlidingLog {
        let limit = params.limit as usize;
        SlidingLog { limit, window: params.window, log: VecDeque::with_capacity(limit) }
    }

    #[inline]
    pub fn decide(&mut self, now: Instant) -> Verdict {
        // An admission exactly `window` old has left the window `(now - window, now]`.
        while let Some(&oldest) = self.log.front()
            && oldest + self.window <= now
        {
            self.log.pop_front();
        }
        if self.log.len() < self.limit {
            self.log.push_back(now);
            return Verdict::Admit;
        }
        let oldest = *self.log.front().expect("a full log is not empty");
        Verdict::Reject((oldest + self.window).since(now))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_time::*;
    use super::*;

    fn log(limit: u32, window: Span) -> SlidingLog {
        SlidingLog::new(&SlidingLogParams { limit, window })
    }

    #[test]
    fn each_admission_frees_its_place_a_window_later() {
        // 3 per second, admitted at 0, 200 and 700 ms.
        let mut r = log(3, Span::from_secs(1));
        for at in [0, 200 * MS, 700 * MS] {
            assert_eq!(r.decide(t(at)), Verdict::Admit);
        }
        // Full until the admission at 0 leaves, at 1 s; refusals are not logged.
        assert_eq!(r.decide(t(800 * MS)), Verdict::Reject(ms(200)));
        assert_eq!(r.decide(t(S)), Verdict::Admit);
        // Next place: the admission at 200 ms leaves at 1.2 s.
        assert_eq!(r.decide(t(S + 50 * MS)), Verdict::Reject(ms(150)));
        assert_eq!(r.decide(t(S + 200 * MS)), Verdict::Admit);
    }

    #[test]
    fn no_window_ever_holds_more_than_limit() {
        // Bursts of 7 arrivals every 13 ms for 3 s against 20 per 100 ms.
        let mut r = log(20, ms(100));
        let mut admitted = Vec::new();
        for k in 0..231u64 {
            for _ in 0..7 {
                if r.decide(t(k * 13 * MS)) == Verdict::Admit {
                    admitted.push(k * 13 * MS);
                }
            }
        }
        for w in admitted.windows(21) {
            assert!(w[20] - w[0] >= 100 * MS, "21 admissions within 100 ms");
        }
        // 3 s at 20 per 100 ms: about 600 (the window's phase against the 13 ms grid).
        assert!((560..=620).contains(&admitted.len()), "{}", admitted.len());
    }
}
