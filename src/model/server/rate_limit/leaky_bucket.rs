//! `kind = "leaky-bucket"`: nginx's `limit_req` (src/http/modules/ngx_http_limit_req_module.c,
//! docs/overload-and-topology.md §1.4), with its integer arithmetic: the state is an `excess`
//! in milli-requests and the millisecond of the last admitted request; the rate is kept in
//! milli-requests per second (`rate=1r/s` is 1000). A request arriving `ms` milliseconds
//! after the last admitted one computes
//!
//! ```text
//! excess = max(0, excess_then - rate x ms / 1000 + 1000)
//! ```
//!
//! and is refused (nginx's `limit_req_status`, 503 by default) if `excess > burst x 1000`;
//! otherwise the excess is kept and the request is **delayed** `excess x 1000 / rate`
//! milliseconds at the server before it goes on (`nodelay`: not delayed). The first request
//! nginx sees finds no entry for its key and is admitted with an excess of 0 (its own 1000
//! is not counted), as in `ngx_http_limit_req_lookup`. Time is nginx's cached clock, in whole
//! milliseconds.
//!
//! The Retry-After of a refusal (nginx sends none: `retry_after = "none"` reproduces it) is
//! the time until the excess, leaking at `rate`, leaves room for one more request.

use super::Verdict;
use crate::engine::{Instant, Span};

const NS_PER_MS: u64 = 1_000_000;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LeakyBucketParams {
    /// Requests per second (nginx `rate=`; kept to the milli-request per second).
    pub rate_per_s: f64,
    /// Requests beyond the rate that are delayed (or, with `nodelay`, let through at once).
    pub burst: u32,
    /// Excess requests within the burst are not delayed.
    pub nodelay: bool,
}

pub struct LeakyBucket {
    /// Milli-requests per second (nginx `ctx->rate`).
    rate: i64,
    /// `burst x 1000` (nginx `limit->burst`).
    burst: i64,
    nodelay: bool,
    /// Milli-requests (nginx `lr->excess`).
    excess: i64,
    /// The millisecond of the last admitted request (nginx `lr->last`); `None` before the first.
    last_ms: Option<u64>,
}

impl LeakyBucket {
    pub fn new(params: &LeakyBucketParams) -> LeakyBucket {
        LeakyBucket {
            rate: milli_requests_per_s(params.rate_per_s),
            burst: i64::from(params.burst) * 1000,
            nodelay: params.nodelay,
            excess: 0,
            last_ms: None,
        }
    }

    #[inline]
    pub fn decide(&mut self, now: Instant) -> Verdict {
        let now_ms = now.as_ns() / NS_PER_MS;
        let Some(last_ms) = self.last_ms else {
            // No entry for the key yet: admitted with excess 0.
            self.last_ms = Some(now_ms);
            return Verdict::Admit;
        };
        let ms = (now_ms - last_ms) as i64;
        let excess = (self.excess - self.rate * ms / 1000 + 1000).max(0);
        if excess > self.burst {
            return Verdict::Reject(self.until_room(last_ms, now));
        }
        self.excess = excess;
        self.last_ms = Some(now_ms);
        if excess == 0 || self.nodelay {
            return Verdict::Admit;
        }
        Verdict::Delay(Span::from_millis((excess * 1000 / self.rate) as u64))
    }

    /// The time from `now` to the first millisecond at which a request would be admitted:
    /// the first `ms` after `last_ms` with `excess - rate x ms / 1000 + 1000 <= burst`.
    fn until_room(&self, last_ms: u64, now: Instant) -> Span {
        let leak_needed = self.excess + 1000 - self.burst;
        // Smallest ms with rate x ms / 1000 (integer division) >= leak_needed.
        let ms = ((leak_needed * 1000) as u64).div_ceil(self.rate as u64);
        Instant::from_ns((last_ms + ms) * NS_PER_MS).since(now)
    }
}

/// nginx keeps the rate as whole milli-requests per second (`rate * 1000 / scale`).
pub fn milli_requests_per_s(rate_per_s: f64) -> i64 {
    (rate_per_s * 1000.0).round() as i64
}

#[cfg(test)]
mod tests {
    use super::super::test_time::*;
    use super::*;

    fn nginx(rate_per_s: f64, burst: u32, nodelay: bool) -> LeakyBucket {
        LeakyBucket::new(&LeakyBucketParams { rate_per_s, burst, nodelay })
    }

    #[test]
    fn seven_simultaneous_requests_at_1r_s_burst_5() {
        // docs/overload-and-topology.md §2.4: #1 passes, #2-#6 wait 1-5 s, #7 is refused.
        let mut r = nginx(1.0, 5, false);
        let verdicts: Vec<Verdict> = (0..7).map(|_| r.decide(t(0))).collect();
        let mut expected = vec![Verdict::Admit];
        expected.extend((1..=5).map(|s| Verdict::Delay(Span::from_secs(s))));
        expected.push(Verdict::Reject(Span::from_secs(1)));
        assert_eq!(verdicts, expected);
    }

    #[test]
    fn with_nodelay_the_burst_passes_at_once() {
        let mut r = nginx(1.0, 5, true);
        let verdicts: Vec<Verdict> = (0..7).map(|_| r.decide(t(0))).collect();
        let mut expected = vec![Verdict::Admit; 6];
        expected.push(Verdict::Reject(Span::from_secs(1)));
        assert_eq!(verdicts, expected);
    }

    #[test]
    fn the_excess_leaks_at_the_rate_in_whole_milliseconds() {
        // 10 r/s, burst 2: the excess leaks 10 milli-requests per ms.
        let mut r = nginx(10.0, 2, false);
        assert_eq!(r.decide(t(0)), Verdict::Admit);
        // excess 1000 -> 100 ms delay; 2000 -> 200 ms.
        assert_eq!(r.decide(t(0)), Verdict::Delay(ms(100)));
        assert_eq!(r.decide(t(0)), Verdict::Delay(ms(200)));
        // 3000 > 2000: refused; room once 1000 milli-requests leaked: 100 ms.
        assert_eq!(r.decide(t(0)), Verdict::Reject(ms(100)));
        // 30.9 ms later nginx's clock says 30 ms: leaked 300, excess 2700 > 2000.
        assert_eq!(r.decide(t(30 * MS + 900_000)), Verdict::Reject(t(100 * MS).since(t(30 * MS + 900_000))));
        // At 100 ms: 2000 - 1000 + 1000 = 2000 <= 2000: delayed 200 ms.
        assert_eq!(r.decide(t(100 * MS)), Verdict::Delay(ms(200)));
        // Idle for 10 s: max(0, 2000 - 99000 + 1000) = 0: the next passes at once, the one
        // after it is the excess again.
        assert_eq!(r.decide(t(10 * S)), Verdict::Admit);
        assert_eq!(r.decide(t(10 * S)), Verdict::Delay(ms(100)));
    }

    #[test]
    fn burst_zero_refuses_anything_faster_than_the_rate() {
        // rate 2 r/s, burst 0: the second request must come 500 ms after the first.
        let mut r = nginx(2.0, 0, false);
        assert_eq!(r.decide(t(0)), Verdict::Admit);
        // excess 0 - 0 + 1000 > 0: refused, room after 500 ms.
        assert_eq!(r.decide(t(0)), Verdict::Reject(ms(500)));
        assert_eq!(r.decide(t(499 * MS)), Verdict::Reject(ms(1)));
        // At 500 ms: max(0, 0 - 1000 + 1000) = 0: admitted; the next at the same instant is
        // refused until 1 s.
        assert_eq!(r.decide(t(500 * MS)), Verdict::Admit);
        assert_eq!(r.decide(t(500 * MS)), Verdict::Reject(ms(500)));
    }
}
