//! `kind = "fixed-window"`: resilience4j's `AtomicRateLimiter`
//! (resilience4j-ratelimiter/.../internal/AtomicRateLimiter.java, docs/overload-and-topology.md
//! §1.4). Time since the limiter started is cut into cycles of `window`
//! (`limitRefreshPeriod`); at the first arrival of a new cycle the permissions become
//! `min(permissions + elapsed cycles x limit, limit)` (no carry above `limit`,
//! `limitForPeriod`). A request that finds a permission takes it. Otherwise the wait for a
//! permission is the time to the next cycle plus the whole cycles the reservations already
//! made take (`nanosToWaitForPermission`); if it is at most `max_wait` (`timeoutDuration`) the
//! request reserves that permission (permissions go negative) and is held that long,
//! otherwise it is refused with that wait: the end of the current window when nothing is
//! reserved. Every request refused in a window is told the same instant, the next window's
//! start, so clients that obey Retry-After exactly come back together.

use super::Verdict;
use crate::engine::{Instant, Span};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FixedWindowParams {
    /// Permissions per window (`limitForPeriod`).
    pub limit: u32,
    /// The cycle (`limitRefreshPeriod`).
    pub window: Span,
    /// The longest a request may be held for a reserved permission (`timeoutDuration`); zero:
    /// refuse at once.
    pub max_wait: Span,
}

pub struct FixedWindow {
    limit: i64,
    window_ns: u64,
    max_wait: Span,
    /// The cycle of the last arrival (`activeCycle`) and its permissions (`activePermissions`,
    /// negative while permissions of future cycles are reserved).
    cycle: u64,
    permissions: i64,
}

impl FixedWindow {
    pub fn new(params: &FixedWindowParams) -> FixedWindow {
        FixedWindow {
            limit: i64::from(params.limit),
            window_ns: params.window.as_ns(),
            max_wait: params.max_wait,
            cycle: 0,
            permissions: i64::from(params.limit),
        }
    }

    #[inline]
    pub fn decide(&mut self, now: Instant) -> Verdict {
        let cycle = now.as_ns() / self.window_ns;
        if cycle != self.cycle {
            let accumulated = (cycle - self.cycle).saturating_mul(self.limit as u64);
            self.permissions = (self.permissions.saturating_add(accumulated as i64)).min(self.limit);
            self.cycle = cycle;
        }
        if self.permissions >= 1 {
            self.permissions -= 1;
            return Verdict::Admit;
        }
        let wait = self.wait_for_permission(now, cycle);
        if wait <= self.max_wait {
            self.permissions -= 1;
            return Verdict::Delay(wait);
        }
        Verdict::Reject(wait)
    }

    /// `nanosToWaitForPermission` for one permit: to the next cycle, plus the whole cycles
    /// the permissions already reserved use up.
    fn wait_for_permission(&self, now: Instant, cycle: u64) -> Span {
        let to_next_cycle = Instant::from_ns((cycle + 1) * self.window_ns).since(now);
        let at_next_cycle = self.permissions + self.limit;
        let full_cycles = ((1 - at_next_cycle).max(0) as u64).div_ceil(self.limit as u64);
        Span::from_ns(full_cycles * self.window_ns) + to_next_cycle
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_time::*;
    use super::*;

    fn window(limit: u32, window: Span, max_wait: Span) -> FixedWindow {
        FixedWindow::new(&FixedWindowParams { limit, window, max_wait })
    }

    #[test]
    fn refused_requests_are_all_sent_to_the_windows_end() {
        // 3 per second: the 4th and later in [0, 1 s) are told to come back at exactly 1 s.
        let mut r = window(3, Span::from_secs(1), Span::ZERO);
        for at in [0, 100 * MS, 200 * MS] {
            assert_eq!(r.decide(t(at)), Verdict::Admit);
        }
        for at in [200 * MS, 500 * MS, 999 * MS] {
            assert_eq!(r.decide(t(at)), Verdict::Reject(t(S).since(t(at))));
        }
        // At the boundary: 3 fresh permissions, no carry of unused ones.
        for _ in 0..3 {
            assert_eq!(r.decide(t(S)), Verdict::Admit);
        }
        assert_eq!(r.decide(t(S)), Verdict::Reject(Span::from_secs(1)));
        // Idle for 10 windows: still only 3.
        for _ in 0..3 {
            assert_eq!(r.decide(t(12 * S)), Verdict::Admit);
        }
        assert_eq!(r.decide(t(12 * S + 250 * MS)), Verdict::Reject(ms(750)));
    }

    #[test]
    fn a_reservation_waits_for_its_cycle() {
        // resilience4j with timeoutDuration: 2 per 100 ms, wait up to 250 ms.
        let mut r = window(2, ms(100), ms(250));
        assert_eq!(r.decide(t(10 * MS)), Verdict::Admit);
        assert_eq!(r.decide(t(10 * MS)), Verdict::Admit);
        // The 3rd and 4th reserve the next cycle's two (90 ms), the 5th and 6th the one after
        // (190 ms); the 7th would wait 290 ms > 250 ms: refused with that wait.
        assert_eq!(r.decide(t(10 * MS)), Verdict::Delay(ms(90)));
        assert_eq!(r.decide(t(10 * MS)), Verdict::Delay(ms(90)));
        assert_eq!(r.decide(t(10 * MS)), Verdict::Delay(ms(190)));
        assert_eq!(r.decide(t(10 * MS)), Verdict::Delay(ms(190)));
        assert_eq!(r.decide(t(10 * MS)), Verdict::Reject(ms(290)));
        // In the next cycle the reservations hold its permissions: -4 + 2 = -2.
        assert_eq!(r.decide(t(150 * MS)), Verdict::Delay(ms(150)));
    }
}
