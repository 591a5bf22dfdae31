//! `kind = "gcra"`: the generic cell rate algorithm as redis-cell's `CL.THROTTLE key
//! max_burst count period` runs it (brandur/redis-cell src/cell/mod.rs,
//! docs/overload-and-topology.md §1.4). The emission interval is `T = period / count`
//! (truncated to the nanosecond, as redis-cell does), the tolerance `tau = T x (max_burst +
//! 1)`; the state is the theoretical arrival time `tat` (the arrival time itself before the
//! first request). A request of `quantity` cells computes `new_tat = max(tat, now) +
//! quantity x T`; it is allowed iff `now >= new_tat - tau` (then `tat = new_tat`), and
//! otherwise refused with `retry_after = new_tat - tau - now` (none when the quantity alone
//! exceeds the tolerance: it can never pass). The server sends one cell per request.
//!
//! redis-cell compares `now - allow_at` in whole seconds (`num_seconds() < 0`), so it lets a
//! request that is less than a second early through; retrysim compares to the nanosecond, the
//! algorithm as specified. Its test table does not depend on the difference.

use super::Verdict;
use crate::engine::{Instant, Span};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GcraParams {
    /// Requests allowed at once beyond the steady rate (`max_burst`; the limit is one more).
    pub max_burst: u32,
    /// `count` requests per `period` (the steady rate).
    pub count: u32,
    pub period: Span,
}

/// What redis-cell answers `CL.THROTTLE` with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Throttle {
    pub limited: bool,
    /// `max_burst + 1`.
    pub limit: i64,
    pub remaining: i64,
    /// Until the limiter is back to full (`tat - now`).
    pub reset_after: Span,
    /// Until the request would be allowed; `None` if never (redis-cell's -1).
    pub retry_after: Option<Span>,
}

impl Throttle {
    pub fn verdict(self) -> Verdict {
        if !self.limited {
            return Verdict::Admit;
        }
        Verdict::Reject(self.retry_after.unwrap_or(Span::MAX))
    }
}

pub struct Gcra {
    /// `T` and `tau`, in nanoseconds.
    emission_ns: i128,
    tolerance_ns: i128,
    limit: i64,
    /// The theoretical arrival time; `None` before the first allowed request.
    tat: Option<i128>,
}

impl Gcra {
    pub fn new(params: &GcraParams) -> Gcra {
        // redis-cell's `Rate::per_period`: `(period_ns as f64 / n as f64) as i64`.
        let emission_ns = (params.period.as_ns() as f64 / f64::from(params.count)) as i128;
        Gcra {
            emission_ns,
            tolerance_ns: emission_ns * (i128::from(params.max_burst) + 1),
            limit: i64::from(params.max_burst) + 1,
            tat: None,
        }
    }

    /// `CL.THROTTLE` for `quantity` cells at `now` (0 peeks).
    pub fn decide(&mut self, now: Instant, quantity: u32) -> Throttle {
        let now_ns = i128::from(now.as_ns());
        let increment = self.emission_ns * i128::from(quantity);
        let tat = self.tat.unwrap_or(now_ns);
        let new_tat = tat.max(now_ns) + increment;
        let allow_at = new_tat - self.tolerance_ns;
        let diff = now_ns - allow_at;
        let (limited, ttl, retry_after) = if diff < 0 {
            let retry = (increment <= self.tolerance_ns).then(|| Span::from_ns((-diff) as u64));
            (true, tat - now_ns, retry)
        } else {
            self.tat = Some(new_tat);
            (false, new_tat - now_ns, None)
        };
        let next = self.tolerance_ns - ttl;
        let remaining = if next > -self.emission_ns { (next / self.emission_ns) as i64 } else { 0 };
        Throttle {
            limited,
            limit: self.limit,
            remaining,
            reset_after: Span::from_ns(ttl.max(0) as u64),
            retry_after,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_time::*;
    use super::*;

    #[test]
    fn redis_cells_it_rate_limits_table() {
        // redis-cell src/cell/mod.rs `it_rate_limits` (docs/overload-and-topology.md §2.4):
        // max_burst 4, 1 per second (limit 5). (at ms, quantity, remaining, reset_after ms,
        // retry_after ms or none, limited).
        let mut r = Gcra::new(&GcraParams { max_burst: 4, count: 1, period: Span::from_secs(1) });
        let start = 1_000 * S;
        let cases: [(u64, u32, i64, u64, Option<u64>, bool); 15] = [
            (0, 6, 5, 0, None, true),
            (0, 1, 4, 1000, None, false),
            (0, 1, 3, 2000, None, false),
            (0, 1, 2, 3000, None, false),
            (0, 1, 1, 4000, None, false),
            (0, 1, 0, 5000, None, false),
            (0, 1, 0, 5000, Some(1000), true),
            (3000, 1, 2, 3000, None, false),
            (3100, 1, 1, 3900, None, false),
            (4000, 1, 1, 4000, None, false),
            (8000, 1, 4, 1000, None, false),
            (9500, 1, 4, 1000, None, false),
            (9500, 0, 4, 1000, None, false),
            (9500, 2, 2, 3000, None, false),
            (9500, 5, 2, 3000, Some(3000), true),
        ];
        for (i, (at, qty, remaining, reset, retry, limited)) in cases.into_iter().enumerate() {
            let got = r.decide(t(start + at * MS), qty);
            let want =
                Throttle { limited, limit: 5, remaining, reset_after: ms(reset), retry_after: retry.map(ms) };
            assert_eq!(got, want, "case {i}");
        }
    }

    #[test]
    fn twenty_per_second_spaces_requests_50ms_apart_after_a_1s_burst() {
        // ratelimit_meter's example (§1.4): 20/s -> T 50 ms; max_burst 19 -> tau 1 s.
        let mut r = Gcra::new(&GcraParams { max_burst: 19, count: 20, period: Span::from_secs(1) });
        for _ in 0..20 {
            assert_eq!(r.decide(t(0), 1).verdict(), Verdict::Admit);
        }
        assert_eq!(r.decide(t(0), 1).verdict(), Verdict::Reject(ms(50)));
        assert_eq!(r.decide(t(30 * MS), 1).verdict(), Verdict::Reject(ms(20)));
        assert_eq!(r.decide(t(50 * MS), 1).verdict(), Verdict::Admit);
        assert_eq!(r.decide(t(50 * MS), 1).verdict(), Verdict::Reject(ms(50)));
    }
}
